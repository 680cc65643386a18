//! The election's rules over one storage shared by two candidates (as two servers share etcd).

use super::*;

fn election() -> Election {
    Election {
        // A Lease records whole seconds.
        lease_duration: Duration::from_secs(1),
        renew_deadline: Duration::from_millis(700),
        retry_period: Duration::from_millis(200),
        ..Election::default()
    }
}

fn storage() -> StorageClient {
    let mut c = StorageClient::new(
        7,
        kubeplane_api::Clock::new(jiff::Timestamp::UNIX_EPOCH),
        1000,
    );
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}});
    c.create(Object::from_json(&ns).unwrap()).unwrap();
    c
}

fn observed() -> Observed {
    Observed {
        record: None,
        at: Instant::now(),
    }
}

fn holder(c: &mut StorageClient) -> (String, u64) {
    let key = ObjectKey::new(Kind::Lease, "kube-system", "kubeplane-control-plane");
    let lease = c.get(&key).unwrap().to_json();
    (
        lease["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        lease["spec"]["leaseTransitions"].as_u64().unwrap(),
    )
}

#[test]
fn a_held_lease_is_taken_over_only_after_it_went_unrenewed_for_the_lease_duration() {
    let mut a = storage();
    let mut b = a.handle();
    let (la, lb) = (Leadership::new(election()), Leadership::new(election()));
    let (mut oa, mut ob) = (observed(), observed());
    assert_eq!(
        try_acquire_or_renew(&mut a, &la, &mut oa),
        Ok(true),
        "the first candidate creates the lease"
    );
    assert_eq!(holder(&mut a), (la.identity().to_string(), 0));
    assert_eq!(
        try_acquire_or_renew(&mut b, &lb, &mut ob),
        Ok(false),
        "a held lease is not taken"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        try_acquire_or_renew(&mut a, &la, &mut oa),
        Ok(true),
        "the holder renews"
    );
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        try_acquire_or_renew(&mut b, &lb, &mut ob),
        Ok(false),
        "1.1 s after the first read, but the renewal is seen now: not expired"
    );
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(
        try_acquire_or_renew(&mut b, &lb, &mut ob),
        Ok(true),
        "expired: taken over"
    );
    assert_eq!(
        holder(&mut b),
        (lb.identity().to_string(), 1),
        "one more transition"
    );
    assert_eq!(
        try_acquire_or_renew(&mut a, &la, &mut oa),
        Ok(false),
        "the old holder finds the new one and does not take the lease back"
    );
}

#[test]
fn the_gate_closes_once_the_leader_has_not_renewed_within_the_renew_deadline() {
    let le = Leadership::new(election());
    let gate = le.gate();
    assert!(gate().is_err(), "not leading before the first acquisition");
    *le.renewed() = Some(Instant::now());
    assert!(le.leading() && gate().is_ok());
    std::thread::sleep(Duration::from_millis(750));
    assert!(!le.leading());
    assert_eq!(
        gate(),
        Err("this server does not hold the lease kube-system/kubeplane-control-plane".into())
    );
}

#[test]
fn a_gated_client_writes_nothing_once_the_gate_closes() {
    let mut c = storage();
    let le = Leadership::new(election());
    c.write_gate = Some(le.gate());
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "kube-system"}});
    let before = c.storage().current_revision();
    let refused = c.create(Object::from_json(&cm).unwrap());
    assert!(
        matches!(refused, Err(ApiError::Unavailable { .. })),
        "{refused:?}"
    );
    assert_eq!(c.storage().current_revision(), before, "nothing written");
    *le.renewed() = Some(Instant::now());
    c.create(Object::from_json(&cm).unwrap()).unwrap();
}

#[test]
fn the_election_flags_follow_upstreams_validation() {
    let cases = [
        ("the defaults are valid", Election::default(), true),
        ("the tests' short durations are valid", election(), true),
        (
            "a lease no longer than the renew deadline is refused",
            Election {
                lease_duration: Duration::from_secs(10),
                ..Election::default()
            },
            false,
        ),
        (
            "a renew deadline within 1.2 retry periods is refused",
            Election {
                retry_period: Duration::from_secs(9),
                ..Election::default()
            },
            false,
        ),
    ];
    for (name, e, valid) in cases {
        assert_eq!(e.validate().is_ok(), valid, "{name}");
    }
}

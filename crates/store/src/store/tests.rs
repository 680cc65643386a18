//! The store's unit tests: resource versions and events per write, conflicts, reused slots,
//! quiet writes and slot hints.

use super::*;

fn store() -> Store {
    Store::new(7, "2025-01-01T00:00:00Z".parse().unwrap())
}

fn pod(name: &str) -> Object {
    let mut p = kubeplane_api::StoredPod::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some("default".into());
    Object::Pod(Arc::new(p))
}

fn keep(_: &Object, _: &mut Object) -> Result<Prepared, ApiError> {
    Ok(Prepared::Write)
}

#[test]
fn every_write_bumps_a_strictly_increasing_resource_version_and_appends_one_event() {
    let mut s = store();
    let a = s.create(pod("a")).unwrap();
    let b = s.update(a.clone(), keep).unwrap();
    s.delete(&b.key()).unwrap();
    let rvs: Vec<u64> = [&a, &b]
        .iter()
        .map(|o| o.resource_version().parse().unwrap())
        .collect();
    assert_eq!(rvs, [1, 2]);
    let events = s.take_events();
    let types: Vec<EventType> = events.iter().map(|e| e.type_).collect();
    assert_eq!(
        types,
        [EventType::Added, EventType::Modified, EventType::Deleted]
    );
    assert!(events
        .windows(2)
        .all(|w| w[0].resource_version < w[1].resource_version));
}

#[test]
fn an_update_with_a_stale_resource_version_or_another_uid_is_a_conflict() {
    let mut s = store();
    let a = s.create_with(pod("a"), |o, names| o.meta_mut().uid = Some(names.uid()));
    let a = a.unwrap();
    s.update(a.clone(), keep).unwrap();
    let stale = s.update(a.clone(), |_, _| panic!("not prepared"));
    assert!(matches!(stale, Err(ApiError::Conflict { .. })));
    let mut other = pod("a");
    other.meta_mut().uid = Some("another".into());
    assert!(matches!(
        s.update(other, keep),
        Err(ApiError::Conflict { .. })
    ));
    // Without a resourceVersion the update is unconditional.
    assert!(s.update(pod("a"), keep).is_ok());
}

#[test]
fn a_create_of_a_taken_key_fails_without_drawing_from_the_seeded_source() {
    let mut s = store();
    s.create(pod("a")).unwrap();
    let err = s.create_with(pod("a"), |_, _| panic!("not filled"));
    assert!(matches!(err, Err(ApiError::AlreadyExists { .. })));
    assert_eq!(s.resource_version(), 1);
}

#[test]
fn writes_to_a_missing_object_are_not_found() {
    let mut s = store();
    assert!(s.update(pod("a"), keep).unwrap_err().is_not_found());
    let err = s.update_with(Kind::Pod, "default", "a", |o| Ok(o.clone()));
    assert!(err.unwrap_err().is_not_found());
    let key = ObjectKey::new(Kind::Pod, "default", "a");
    assert!(s.delete(&key).unwrap_err().is_not_found());
    assert!(!s.has_events());
}

#[test]
fn lookups_and_listings_stay_right_when_removed_slots_are_reused() {
    let mut s = store();
    for name in ["c", "a", "b"] {
        s.create(pod(name)).unwrap();
    }
    let mut other = kubeplane_api::StoredPod::default();
    other.metadata.name = Some("a".into());
    other.metadata.namespace = Some("kube-system".into());
    s.create(Object::Pod(Arc::new(other))).unwrap();
    s.delete(&ObjectKey::new(Kind::Pod, "default", "a"))
        .unwrap();
    // The freed slot goes to a new object, which lists in its own place.
    s.create(pod("d")).unwrap();
    let listed: Vec<(&str, &str)> = s
        .list(Kind::Pod)
        .map(|o| (o.namespace(), o.name()))
        .collect();
    assert_eq!(
        listed,
        [
            ("default", "b"),
            ("default", "c"),
            ("default", "d"),
            ("kube-system", "a")
        ]
    );
    assert!(s.get_pod("default", "a").is_none());
    assert_eq!(
        s.get_pod("default", "d").unwrap().metadata.name.as_deref(),
        Some("d")
    );
    assert_eq!(
        s.get_pod("kube-system", "a")
            .unwrap()
            .metadata
            .namespace
            .as_deref(),
        Some("kube-system")
    );
    assert_eq!(s.count(Kind::Pod), 4);
    let names: Vec<&str> = s
        .list_namespace(Kind::Pod, "default")
        .map(Object::name)
        .collect();
    assert_eq!(names, ["b", "c", "d"]);
    // The last object of a namespace takes the namespace with it.
    s.delete(&ObjectKey::new(Kind::Pod, "kube-system", "a"))
        .unwrap();
    assert_eq!(s.list_namespace(Kind::Pod, "kube-system").count(), 0);
    assert_eq!(s.count(Kind::Pod), 3);
}

/// A quiet write's `f` for a pod: a label and the write's resourceVersion text.
fn label_quietly(o: &mut Object, rv: &str) -> Result<(), ApiError> {
    let Object::Pod(p) = o else {
        return Err(ApiError::Conflict { key: o.key() });
    };
    let p = Arc::make_mut(p);
    p.set_labels(Some([("k".to_string(), "v".to_string())].into()));
    p.metadata.resource_version = Some(rv.to_string());
    Ok(())
}

#[test]
fn a_quiet_write_takes_the_next_resource_version_without_a_watch_event() {
    let mut s = store();
    let a = s.create(pod("a")).unwrap();
    s.take_events();
    let mut hint = SlotHint::default();
    let rv = s
        .write_quietly(Kind::Pod, "default", "a", &mut hint, 1, label_quietly)
        .unwrap();
    assert_eq!(rv, 2);
    assert!(!s.has_events(), "no watch event");
    let stored = s.get_pod("default", "a").unwrap();
    assert_eq!(stored.metadata.resource_version.as_deref(), Some("2"));
    assert!(stored.labels().is_some());
    assert_eq!(
        a.resource_version(),
        "1",
        "the earlier version is untouched"
    );
    // The next write continues from it; a refused or missing one writes nothing.
    let refused = s.write_quietly(Kind::Pod, "default", "a", &mut hint, 2, |o, _| {
        Err(ApiError::Conflict { key: o.key() })
    });
    assert!(refused.unwrap_err().is_conflict());
    let missing = s.write_quietly(
        Kind::Pod,
        "default",
        "b",
        &mut SlotHint::default(),
        2,
        label_quietly,
    );
    assert!(missing.unwrap_err().is_not_found());
    assert_eq!(s.create(pod("c")).unwrap().resource_version(), "3");
}

#[test]
fn a_quiet_write_at_another_version_than_the_stored_one_is_a_conflict() {
    let mut s = store();
    s.create(pod("a")).unwrap();
    let mut hint = SlotHint::default();
    // At version 1: an older or newer number is refused, and nothing is written.
    for stale in [0, 2, 11] {
        let e = s.write_quietly(Kind::Pod, "default", "a", &mut hint, stale, label_quietly);
        assert!(e.unwrap_err().is_conflict(), "version {stale}");
    }
    assert_eq!(s.resource_version(), 1);
    // An update (by key, and through update_with) moves the version the write must name.
    s.update(pod("a"), keep).unwrap();
    let stale = s.write_quietly(Kind::Pod, "default", "a", &mut hint, 1, label_quietly);
    assert!(stale.unwrap_err().is_conflict());
    s.update_with(Kind::Pod, "default", "a", |o| Ok(o.clone()))
        .unwrap();
    let stale = s.write_quietly(Kind::Pod, "default", "a", &mut hint, 2, label_quietly);
    assert!(stale.unwrap_err().is_conflict());
    assert_eq!(
        s.write_quietly(Kind::Pod, "default", "a", &mut hint, 3, label_quietly),
        Ok(4)
    );
    // Deleted and created again in the same slot: the new object's version counts.
    s.delete(&ObjectKey::new(Kind::Pod, "default", "a"))
        .unwrap();
    s.create(pod("a")).unwrap();
    let stale = s.write_quietly(Kind::Pod, "default", "a", &mut hint, 4, label_quietly);
    assert!(stale.unwrap_err().is_conflict());
    assert_eq!(
        s.write_quietly(Kind::Pod, "default", "a", &mut hint, 6, label_quietly),
        Ok(7)
    );
}

#[test]
fn resource_versions_keep_their_decimal_text_past_each_power_of_ten() {
    let mut s = store();
    let mut hint = SlotHint::default();
    s.create(pod("a")).unwrap();
    for rv in 2..=1001u64 {
        let text = if rv % 2 == 0 {
            let written = s.update(pod("a"), keep).unwrap();
            written.resource_version().to_string()
        } else {
            s.write_quietly(Kind::Pod, "default", "a", &mut hint, rv - 1, label_quietly)
                .unwrap();
            s.get_pod("default", "a")
                .unwrap()
                .metadata
                .resource_version
                .clone()
                .unwrap()
        };
        assert_eq!(text, rv.to_string());
    }
    let mut t = "99999".to_string();
    increment(&mut t);
    assert_eq!(t, "100000");
}

/// The resourceVersion text's increment (a fast path when the last digit is not a 9, the
/// carry otherwise) counts as the numbers do, across every carry up to 100,001.
#[test]
fn the_version_text_counts_as_the_numbers_do() {
    let mut t = "0".to_string();
    for n in 1..=100_001u64 {
        increment(&mut t);
        assert_eq!(t, n.to_string());
    }
    let mut t = "18446744073709551608".to_string();
    increment(&mut t);
    assert_eq!(t, "18446744073709551609");
    increment(&mut t);
    assert_eq!(t, "18446744073709551610");
}

#[test]
fn a_hint_finds_its_key_and_stops_matching_once_the_slot_is_emptied() {
    let mut s = store();
    s.create(pod("a")).unwrap();
    s.create(pod("b")).unwrap();
    let mut hint = SlotHint::default();
    let found = s.get_hinted(Kind::Pod, "default", "b", &mut hint);
    assert_eq!(found.map(Object::name), Some("b"));
    assert!(hint.0.is_some());
    // "b" removed and "c" in its slot: the hint taken for "b" must not find "c".
    s.delete(&ObjectKey::new(Kind::Pod, "default", "b"))
        .unwrap();
    s.create(pod("c")).unwrap();
    assert!(s.get_hinted(Kind::Pod, "default", "b", &mut hint).is_none());
    let missing = s.write_quietly(Kind::Pod, "default", "b", &mut hint, 2, label_quietly);
    assert!(missing.unwrap_err().is_not_found());
    // "b" again, in another slot: found by its key, and the hint follows it.
    s.create(pod("b")).unwrap();
    let again = s.get_hinted(Kind::Pod, "default", "b", &mut hint);
    assert_eq!(again.map(Object::name), Some("b"));
    assert_eq!(
        s.get_hinted(Kind::Pod, "default", "c", &mut SlotHint::default())
            .map(Object::name),
        Some("c")
    );
}

fn lease(ns: &str, name: &str) -> Object {
    let mut l = k8s_openapi::api::coordination::v1::Lease::default();
    l.metadata.name = Some(name.into());
    l.metadata.namespace = Some(ns.into());
    Object::Lease(Arc::new(l))
}

#[test]
fn the_typed_lease_read_answers_as_the_hinted_read_across_namespaces_and_reused_slots() {
    let mut s = store();
    s.create(pod("n1")).unwrap();
    s.create(lease("kube-node-lease", "n0")).unwrap();
    s.create(lease("kube-node-lease", "n1")).unwrap();
    s.create(lease("other", "n1")).unwrap();
    let cache: &dyn Cache = &s;
    let (mut typed, mut generic) = (SlotHint::default(), SlotHint::default());
    for (ns, name) in [
        ("kube-node-lease", "n1"),
        ("other", "n1"),
        ("default", "n1"),
    ] {
        let mut hint = SlotHint::default();
        let got = cache.get_lease_hinted(ns, name, &mut hint);
        let want = s.get_hinted(Kind::Lease, ns, name, &mut SlotHint::default());
        assert_eq!(
            got.map(|l| l.metadata.namespace.as_deref()),
            want.map(|o| Some(o.namespace())),
            "{ns}/{name}"
        );
    }
    // The pod named n1 is not a Lease.
    assert!(cache
        .get_lease_hinted("default", "n1", &mut typed)
        .is_none());
    let found = s.get_lease_hinted("kube-node-lease", "n1", &mut typed);
    assert_eq!(found.and_then(|l| l.metadata.name.as_deref()), Some("n1"));
    s.get_hinted(Kind::Lease, "kube-node-lease", "n1", &mut generic);
    assert_eq!(typed, generic);
    // n1's Lease removed and n2's in its slot: the hint must not find n2's.
    s.delete(&ObjectKey::new(Kind::Lease, "kube-node-lease", "n1"))
        .unwrap();
    s.create(lease("kube-node-lease", "n2")).unwrap();
    assert!(s
        .get_lease_hinted("kube-node-lease", "n1", &mut typed)
        .is_none());
    s.create(lease("kube-node-lease", "n1")).unwrap();
    let again = s.get_lease_hinted("kube-node-lease", "n1", &mut typed);
    assert_eq!(again.and_then(|l| l.metadata.name.as_deref()), Some("n1"));
    assert!(s
        .get_lease_hinted("kube-node-lease", "n3", &mut SlotHint::default())
        .is_none());
}

#[test]
fn a_deleted_event_shares_the_last_state_and_has_its_own_version() {
    let mut s = store();
    let created = s.create(pod("a")).unwrap();
    let removed = s.delete(&created.key()).unwrap();
    assert_eq!(removed, created);
    let events = s.take_events();
    let last = events.last().unwrap();
    assert_eq!(last.resource_version, 2);
    assert_eq!(last.object.resource_version(), "1");
    assert!(s.get_pod("default", "a").is_none());
}

/// The pods not being deleted, counted by a pass over them (what the kept count replaces).
fn counted_not_deleting(s: &Store) -> usize {
    s.pods()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .count()
}

fn deleting(o: &Object) -> Object {
    let mut o = o.clone();
    o.meta_mut().deletion_timestamp = Some(Time("2025-01-01T00:00:01Z".parse().unwrap()));
    o.meta_mut().resource_version = None;
    o
}

#[test]
fn the_count_of_objects_not_being_deleted_follows_every_kind_of_write() {
    let mut s = store();
    let check = |s: &Store| {
        assert_eq!(s.count_not_deleting(Kind::Pod), counted_not_deleting(s));
    };
    let mut pods: Vec<Object> = (0..6)
        .map(|i| s.create(pod(&format!("p{i}"))).unwrap())
        .collect();
    check(&s);
    assert_eq!(s.count_not_deleting(Kind::Pod), 6);
    assert_eq!(s.count_not_deleting(Kind::Node), 0);
    // update: marked for deletion, and (p1) marked again, which changes nothing.
    pods[0] = s.update(deleting(&pods[0]), keep).unwrap();
    pods[1] = s.update(deleting(&pods[1]), keep).unwrap();
    pods[1] = s.update(deleting(&pods[1]), keep).unwrap();
    check(&s);
    assert_eq!(s.count_not_deleting(Kind::Pod), 4);
    // update_with: one marked, one unmarked (no real strategy does that; the count follows).
    let marked = deleting(&pods[2]);
    s.update_with(Kind::Pod, "default", "p2", |_| Ok(marked))
        .unwrap();
    let unmarked = pod("p1");
    s.update_with(Kind::Pod, "default", "p1", |_| Ok(unmarked))
        .unwrap();
    check(&s);
    assert_eq!(s.count_not_deleting(Kind::Pod), 4);
    // A quiet write that marks it, and one that refuses.
    let rv = s
        .get_pod("default", "p3")
        .unwrap()
        .metadata
        .resource_version
        .clone();
    let rv: u64 = rv.unwrap().parse().unwrap();
    let mut hint = SlotHint::default();
    s.write_quietly(Kind::Pod, "default", "p3", &mut hint, rv, |o, text| {
        o.meta_mut().deletion_timestamp = Some(Time("2025-01-01T00:00:02Z".parse().unwrap()));
        o.meta_mut().resource_version = Some(text.to_string());
        Ok(())
    })
    .unwrap();
    check(&s);
    // Removals of a deleting and of a live pod; the reused slots; an update that removes.
    s.delete(&pods[0].key()).unwrap();
    s.delete(&pods[4].key()).unwrap();
    check(&s);
    s.create(deleting(&pod("q"))).unwrap();
    s.create(pod("r")).unwrap();
    check(&s);
    s.update(pod("p5"), |_, _| Ok(Prepared::Remove)).unwrap();
    check(&s);
    assert_eq!(s.count_not_deleting(Kind::Pod), 2, "p1 and r");
}

/// The general quiet write of a renewal (what the registry did before the Lease's own path):
/// renewTime and the write's version text set in place.
fn renew_generally(
    s: &mut Store,
    name: &str,
    hint: &mut SlotHint,
    rv: u64,
    at: Timestamp,
) -> Result<u64, ApiError> {
    s.write_quietly(
        Kind::Lease,
        "kube-node-lease",
        name,
        hint,
        rv,
        |o, text| match o {
            Object::Lease(l) => {
                let l = Arc::make_mut(l);
                l.spec.get_or_insert_with(Default::default).renew_time = Some(MicroTime(at));
                l.metadata.resource_version = Some(text.to_string());
                Ok(())
            }
            _ => Err(ApiError::Conflict { key: o.key() }),
        },
    )
}

#[test]
fn a_lease_renewal_stores_what_the_general_quiet_write_stores() {
    let lease = |name: &str| {
        let mut l = Lease::default();
        l.metadata.name = Some(name.into());
        l.metadata.namespace = Some("kube-node-lease".into());
        Object::Lease(Arc::new(l))
    };
    let (mut general, mut own) = (store(), store());
    let (mut hints_g, mut hints_o) = ([SlotHint::default(); 3], [SlotHint::default(); 3]);
    for s in [&mut general, &mut own] {
        s.create(lease("n0")).unwrap();
        s.create(lease("n1")).unwrap();
        s.create(pod("p")).unwrap();
    }
    let t0: Timestamp = "2025-01-01T00:00:10Z".parse().unwrap();
    // Renewals at the right version, at a stale one, of a missing Lease, one after a delete.
    let steps: [(&str, u64, usize); 7] = [
        ("n0", 1, 0),
        ("n1", 2, 1),
        ("n0", 4, 0),
        ("n0", 1, 0),
        ("n2", 1, 2),
        ("n0", 6, 0),
        ("n1", 5, 1),
    ];
    for (k, (name, rv, h)) in steps.into_iter().enumerate() {
        let at = t0 + jiff::SignedDuration::from_secs(10 * k as i64);
        if k == 5 {
            for s in [&mut general, &mut own] {
                let key = ObjectKey::new(Kind::Lease, "kube-node-lease", "n0");
                s.delete(&key).unwrap();
            }
        }
        let g = renew_generally(&mut general, name, &mut hints_g[h], rv, at);
        let o = own.renew_lease_quietly("kube-node-lease", name, &mut hints_o[h], rv, at);
        assert_eq!(format!("{g:?}"), format!("{o:?}"), "step {k}");
        assert_eq!(
            general.resource_version(),
            own.resource_version(),
            "step {k}"
        );
        assert_eq!(general.lease_writes(), own.lease_writes(), "step {k}");
        let all = |s: &Store| format!("{:?}", s.all().collect::<Vec<_>>());
        assert_eq!(all(&general), all(&own), "step {k}");
    }
    assert_eq!(
        own.resource_version(),
        8,
        "four renewals and a delete after three creates"
    );
    // The next write's version text follows.
    let next = own.create(pod("q")).unwrap();
    assert_eq!(next.resource_version(), "9");
}

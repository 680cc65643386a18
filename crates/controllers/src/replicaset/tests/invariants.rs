//! Invariants of the ReplicaSet controller over many seeds.

use super::*;
use crate::controller_utils::{pod_controller, pod_labels};

// ----- invariants over many seeds ---------------------------------------------------------------

/// Random scale sequences with pods becoming ready, being deleted by someone else, or losing
/// their labels. After every controller run: no ReplicaSet deleted more pods than its surplus;
/// after the last step it converges to spec.replicas.
#[test]
fn replica_sets_converge_and_never_delete_more_than_the_surplus() {
    for seed in 0..40u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut client = TestClient::new(seed);
        let mut rsc = ReplicaSetController::new();
        let names = ["a", "b", "c"];
        for n in names {
            create(
                &mut client,
                rs_object(replica_set(n, rng.random_range(0..8), n)),
            );
        }
        for step in 0..30 {
            client.now = SimTime::from_secs(step);
            match rng.random_range(0..5) {
                0 | 1 => {
                    let n = names[rng.random_range(0..names.len())];
                    set_replicas(&mut client, n, rng.random_range(0..12));
                }
                2 => {
                    // Someone makes a random pod ready.
                    let pods: Vec<Arc<StoredPod>> = client.store.pods().cloned().collect();
                    if let Some(p) = pods.get(rng.random_range(0..pods.len().max(1))) {
                        let mut p = StoredPod::clone(p);
                        let t = client.store.timestamp(client.now).0;
                        p.set_status(pod_builder("x").ready_since(Some(t)).build().status);
                        client.update_status(Object::Pod(Arc::new(p))).unwrap();
                    }
                }
                3 => {
                    // Someone deletes a random pod.
                    let pods: Vec<Arc<StoredPod>> = client.store.pods().cloned().collect();
                    if let Some(p) = pods.get(rng.random_range(0..pods.len().max(1))) {
                        let key = ObjectKey::new(
                            Kind::Pod,
                            "default",
                            p.metadata.name.as_deref().unwrap(),
                        );
                        let now = client.now;
                        kubeplane_registry::client::delete(
                            &mut client.store,
                            &key,
                            &DeleteOptions::now(),
                            now,
                        )
                        .unwrap();
                    }
                }
                _ => {
                    // An orphan that some ReplicaSet may adopt.
                    let n = names[rng.random_range(0..names.len())];
                    let name = format!("orphan-{seed}-{step}");
                    create(&mut client, pod_builder(&name).label("app", n).object());
                }
            }
            // Settle one round at a time, checking each run of the controller.
            for _ in 0..10_000 {
                client.dispatch(&mut [&mut rsc]);
                if rsc.next_wakeup().is_none_or(|t| t > client.now) {
                    break;
                }
                let surplus: BTreeMap<String, i64> = names
                    .iter()
                    .map(|n| {
                        // Owned active pods plus the orphans it will adopt.
                        let orphans = client
                            .store
                            .pods()
                            .filter(|p| is_pod_active(p) && pod_controller(p).is_none())
                            .filter(|p| pod_labels(p).get("app").map(String::as_str) == Some(*n))
                            .count();
                        let active = (active_pods_of(&client, n).len() + orphans) as i64;
                        (
                            n.to_string(),
                            (active - i64::from(spec_replicas(&get_rs(&client, n)))).max(0),
                        )
                    })
                    .collect();
                let before = client.events.len();
                rsc.run(client.now, &mut client);
                for n in names {
                    let deleted = client.events[before..]
                        .iter()
                        .filter(|e| e.reason() == REASON_SUCCESSFUL_DELETE && e.name() == n)
                        .count() as i64;
                    assert!(
                        deleted <= surplus[n],
                        "seed {seed} step {step}: {n} deleted {deleted} > surplus {}",
                        surplus[n]
                    );
                }
            }
        }
        client.settle(&mut [&mut rsc]);
        for n in names {
            let want = spec_replicas(&get_rs(&client, n)) as usize;
            assert_eq!(
                active_pods_of(&client, n).len(),
                want,
                "seed {seed}: {n} converges"
            );
            assert_eq!(
                get_rs(&client, n).status.as_ref().unwrap().replicas as usize,
                want,
                "seed {seed}: {n} status"
            );
        }
    }
}

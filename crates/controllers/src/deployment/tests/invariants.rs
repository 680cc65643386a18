//! Invariants of a Deployment rollout over many seeds.

use super::*;
use crate::controller_utils::pod_controller;
use kubeplane_api::StoredReplicaSet;

// ----- invariants over many seeds ---------------------------------------------------------------

/// Seeded sequences of rollouts (template changes, some mid-rollout) under random fenceposts and
/// readiness delays. At every instant: available pods >= replicas - maxUnavailable and pods <=
/// replicas + maxSurge. At the end: exactly `replicas` pods of the newest template.
#[test]
fn rolling_updates_respect_max_surge_and_max_unavailable() {
    for seed in 0..30u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let replicas = rng.random_range(1..=12);
        let pick = |rng: &mut ChaCha8Rng| -> IntOrString {
            if rng.random_bool(0.5) {
                IntOrString::Int(rng.random_range(0..=3))
            } else {
                IntOrString::String(format!("{}%", [0, 10, 25, 50, 100][rng.random_range(0..5)]))
            }
        };
        let (mut surge, mut unavailable) = (pick(&mut rng), pick(&mut rng));
        if validate_rolling_update(&deployment(
            replicas,
            rolling(surge.clone(), unavailable.clone()),
            "v0",
        ))
        .is_err()
        {
            surge = IntOrString::Int(1);
            unavailable = IntOrString::Int(0);
        }
        let d = deployment(replicas, rolling(surge.clone(), unavailable.clone()), "v0");
        let (max_s, max_u) = (max_surge(&d), max_unavailable(&d));
        let mut w = World::new(seed, (1, 4));
        w.deployment_first = seed % 2 == 1;
        w.create(d);
        w.run_until(60);
        assert_eq!(
            w.active_pods().len() as i32,
            replicas,
            "seed {seed}: initial rollout"
        );

        let n_rollouts = rng.random_range(1..=4);
        let mut at: Vec<i64> = (0..n_rollouts).map(|_| rng.random_range(61..120)).collect();
        at.sort();
        let mut image = 0;
        let mut next = at.into_iter().peekable();
        let check = |w: &World, ctx: &str| {
            let pods = w.active_pods();
            let ready = pods.iter().filter(|p| is_pod_ready(p)).count() as i32;
            assert!(
                pods.len() as i32 <= replicas + max_s,
                "{ctx}: {} pods > {replicas} + {max_s}",
                pods.len()
            );
            assert!(
                ready >= replicas - max_u,
                "{ctx}: {ready} available < {replicas} - {max_u}"
            );
        };
        loop {
            let wake = w.next_instant();
            let step = next.peek().map(|&s| SimTime::from_secs(s));
            let t = match (wake, step) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => break,
            };
            if t > SimTime::from_secs(600) {
                break;
            }
            w.client.now = t;
            if step == Some(t) {
                next.next();
                image += 1;
                w.set_image(&format!("v{image}"));
            }
            w.settle();
            check(&w, &format!("seed {seed} t={t} surge {surge:?} unavailable {unavailable:?} replicas {replicas}"));
        }
        let newest = w.rs_for_image(&format!("v{image}")).unwrap();
        assert_eq!(rs_replicas(&newest), replicas, "seed {seed}");
        let pods = w.active_pods();
        assert_eq!(pods.len() as i32, replicas, "seed {seed}");
        let new_uid = newest.metadata.uid.clone();
        assert!(
            pods.iter()
                .all(|p| pod_controller(p).map(|r| Some(&r.uid)) == Some(new_uid.as_ref())),
            "seed {seed}"
        );
        for rs in w.replica_sets() {
            if rs.metadata.uid != new_uid {
                assert_eq!(rs_replicas(&rs), 0, "seed {seed}: old {}", name(&rs));
            }
        }
        let status = w.deployment().status.clone().unwrap();
        assert_eq!(status.available_replicas, Some(replicas), "seed {seed}");
        if std::env::var("KUBEPLANE_TEST_VERBOSE").is_ok() {
            eprintln!("seed {seed}: replicas {replicas} surge {max_s} unavailable {max_u} rollouts {n_rollouts} scaling events {}", w.events(REASON_SCALING_REPLICA_SET).len());
        }
    }
}

/// Seeded sequences of scale events and rollouts, in any order and mid-rollout. At every
/// instant the pods stay within replicas + maxSurge (the current values); at the end exactly
/// `replicas` pods of the newest template run and every old ReplicaSet is at zero.
#[test]
fn scaling_during_rollouts_converges_within_the_surge() {
    for seed in 0..30u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(1000 + seed);
        let surge = IntOrString::String("25%".into());
        let unavailable = IntOrString::String(["25%", "0%"][rng.random_range(0..2)].into());
        let mut replicas = rng.random_range(1..=10);
        let mut w = World::new(seed, (1, 6));
        w.deployment_first = seed % 2 == 0;
        w.create(deployment(
            replicas,
            rolling(surge.clone(), unavailable.clone()),
            "v0",
        ));
        let mut steps: Vec<(i64, bool)> = (0..rng.random_range(2..8))
            .map(|_| (rng.random_range(1..90), rng.random_bool(0.5)))
            .collect();
        steps.sort();
        let mut image = 0;
        let mut next = steps.into_iter().peekable();
        loop {
            let wake = w.next_instant();
            let step = next.peek().map(|&(s, _)| SimTime::from_secs(s));
            let t = match (wake, step) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => break,
            };
            if t > SimTime::from_secs(900) {
                break;
            }
            w.client.now = t;
            while next
                .peek()
                .is_some_and(|&(s, _)| SimTime::from_secs(s) == t)
            {
                let (_, is_scale) = next.next().unwrap();
                if is_scale {
                    replicas = rng.random_range(0..=14);
                    w.edit(|d| d.spec.as_mut().unwrap().replicas = Some(replicas));
                } else {
                    image += 1;
                    w.set_image(&format!("v{image}"));
                }
            }
            w.settle();
            let d = w.deployment();
            let bound = replicas + max_surge(&d);
            let pods = w.active_pods().len() as i32;
            assert!(pods <= bound, "seed {seed} t={t}: {pods} pods > {bound}");
        }
        let newest = w.rs_for_image(&format!("v{image}")).unwrap();
        assert_eq!(rs_replicas(&newest), replicas, "seed {seed}");
        assert_eq!(w.active_pods().len() as i32, replicas, "seed {seed}");
        for rs in w.replica_sets() {
            if rs.metadata.uid != newest.metadata.uid {
                assert_eq!(rs_replicas(&rs), 0, "seed {seed}: old {}", name(&rs));
            }
        }
        let status = w.deployment().status.clone().unwrap();
        assert_eq!(
            status.updated_replicas.unwrap_or(0),
            replicas,
            "seed {seed}"
        );
        assert_eq!(
            status.available_replicas.unwrap_or(0),
            replicas,
            "seed {seed}"
        );
    }
}

/// The conformance convention: a paused Recreate Deployment owns the tested ReplicaSet and an
/// auxiliary one (so ranks count both). Scaling the tested ReplicaSet directly must not make
/// the Deployment resize either of them.
#[test]
fn a_paused_recreate_deployment_leaves_its_replica_sets_alone() {
    let mut w = World::new(8, (1, 1));
    w.kubelet.enabled = false;
    let mut d = deployment(3, recreate(), "v0");
    d.spec.as_mut().unwrap().paused = Some(true);
    w.create(d);
    w.settle();
    let owner = w.deployment();
    for (name, role, replicas) in [("web-main", "main", 2), ("web-aux", "aux", 1)] {
        let mut t = template("v-other");
        t.metadata
            .as_mut()
            .unwrap()
            .labels
            .as_mut()
            .unwrap()
            .insert("role".into(), role.into());
        let rs = StoredReplicaSet::from_k8s(ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                labels: t.metadata.as_ref().unwrap().labels.clone(),
                owner_references: Some(vec![new_controller_ref(
                    API_VERSION,
                    KIND,
                    &owner.metadata,
                )]),
                ..Default::default()
            },
            spec: Some(k8s_openapi::api::apps::v1::ReplicaSetSpec {
                replicas: Some(replicas),
                selector: LabelSelector {
                    match_labels: t.metadata.as_ref().unwrap().labels.clone(),
                    ..Default::default()
                },
                template: Some(t),
                ..Default::default()
            }),
            status: None,
        });
        w.client.create(Object::ReplicaSet(Arc::new(rs))).unwrap();
    }
    w.run_until(5);
    let scale = |w: &mut World, replicas: i32| {
        let rs = w
            .replica_sets()
            .into_iter()
            .find(|r| name(r) == "web-main")
            .unwrap();
        let mut rs = StoredReplicaSet::clone(&rs);
        rs.spec.as_mut().unwrap().replicas = Some(replicas);
        w.client.update(Object::ReplicaSet(Arc::new(rs))).unwrap();
    };
    scale(&mut w, 1);
    w.run_until(10);
    assert!(w.events(REASON_SCALING_REPLICA_SET).is_empty());
    let sizes: Vec<(String, i32)> = w
        .replica_sets()
        .iter()
        .map(|rs| (name(rs), rs_replicas(rs)))
        .collect();
    assert_eq!(
        sizes,
        [("web-aux".to_string(), 1), ("web-main".to_string(), 1)]
    );
    assert_eq!(w.active_pods().len(), 2);
    assert_eq!(
        w.condition(CONDITION_PROGRESSING)
            .unwrap()
            .reason
            .as_deref(),
        Some(REASON_PAUSED)
    );
}

//! The informer caches: label sets, cached pods, what syncs compute from them, and the pod
//! index by controller.

use super::*;
use crate::controller_utils::{controller_of, pod_controller, pod_labels};
use kubeplane_api::StoredReplicaSet;

// ----- the cache: label sets, cached pods, and what syncs compute from them ---------------------

fn label_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A cache holding `pods` (all in `default`, with distinct names).
fn cache_of(pods: &[Arc<StoredPod>]) -> Cache {
    let mut cache = Cache::default();
    for p in pods {
        cache.replace_pod(&ns_name(&p.metadata), Some(p));
    }
    cache
}

/// The cached version of the pod `default/name`.
fn cached<'a>(cache: &'a Cache, name: &str) -> &'a CachedPod {
    cache.pods.namespace("default").unwrap().get(name).unwrap()
}

/// The cached versions of `pods`, in their order.
fn cached_all<'a>(cache: &'a Cache, pods: &[Arc<StoredPod>]) -> Vec<&'a CachedPod> {
    pods.iter()
        .map(|p| cached(cache, p.metadata.name.as_deref().unwrap()))
        .collect()
}

#[test]
fn label_sets_share_numbers_free_them_with_the_last_user_and_reuse_them() {
    let mut sets = LabelSets::default();
    let web = label_map(&[("app", "web")]);
    let db = label_map(&[("app", "db")]);
    let a = sets.acquire(&web);
    assert_eq!(sets.acquire(&web.clone()), a, "equal maps share a number");
    let b = sets.acquire(&db);
    assert_ne!(a, b);
    assert_eq!((sets.get(a), sets.get(b)), (Some(&web), Some(&db)));
    sets.release(a);
    assert_eq!(sets.get(a), Some(&web), "one pod still carries it");
    sets.release(a);
    assert_eq!(sets.get(a), None, "freed with the last pod carrying it");
    let cache = label_map(&[("app", "cache")]);
    assert_eq!(sets.acquire(&cache), a, "a free number is reused");
    assert_eq!(sets.get(a), Some(&cache));
    assert_eq!(sets.capacity(), 2);
    // A forgotten map is numbered anew.
    let again = sets.acquire(&web);
    assert_eq!((again, sets.capacity()), (2, 3));
    // Unknown or free numbers are ignored.
    sets.release(again);
    sets.release(again);
    sets.release(99);
    assert_eq!(sets.get(99), None);
    assert_eq!(sets.acquire(&db), b);
    assert_eq!(sets.ids.len(), 2);
}

#[test]
fn pods_with_labels_of_their_own_coming_and_going_do_not_grow_the_label_sets() {
    let mut cache = Cache::default();
    for i in 0..1000 {
        let name = format!("p{i}");
        let pod = pod_builder(&name).label("instance", &i.to_string()).arc();
        let key = ns_name(&pod.metadata);
        cache.replace_pod(&key, Some(&pod));
        let id = cached(&cache, &name).labels;
        // An update with the same labels keeps the number.
        let ready = pod_builder(&name)
            .label("instance", &i.to_string())
            .ready_since(Some(start()))
            .arc();
        cache.replace_pod(&key, Some(&ready));
        assert_eq!(cached(&cache, &name).labels, id);
        assert_eq!(cache.label_sets.slots[id].as_ref().unwrap().users, 1);
        cache.replace_pod(&key, None);
    }
    assert!(cache.label_sets.capacity() <= 2);
    assert!(cache.label_sets.ids.is_empty());
    assert!(cache.pods.is_empty() && cache.orphan_pods.is_empty());
}

/// Every pod of `current` is cached once in `pods` and once in the index of its controller (or
/// among the orphans), with the number of its labels, and the label sets count their pods.
fn assert_cache_holds(cache: &Cache, current: &BTreeMap<String, Arc<StoredPod>>) {
    let cached: Vec<&ByName> = cache
        .pods
        .namespace("default")
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(cached.len(), current.len());
    let mut users: BTreeMap<LabelSetId, usize> = BTreeMap::new();
    for cp in cached {
        let name = cp.name();
        let pod = &current[name];
        assert!(Arc::ptr_eq(&cp.pod, pod), "{name}");
        assert_eq!(cache.label_sets.get(cp.labels), Some(pod_labels(pod)));
        assert_eq!(cp.facts, ranking::SortFacts::of(pod));
        let indexed = match pod_controller(pod) {
            Some(c) => cache
                .pods_by_controller
                .get(&c.uid)
                .and_then(|g| g.0.iter().find(|(k, _)| k.0 == c.kind && k.1 == c.name))
                .map(|(_, pods)| pods),
            None => Some(&cache.orphan_pods),
        };
        let indexed = indexed
            .and_then(|m| m.namespace("default"))
            .and_then(|m| m.get(name));
        assert!(
            indexed.is_some_and(|i| Arc::ptr_eq(&i.0, &cp.0)),
            "{name}: one shared record"
        );
        *users.entry(cp.labels).or_default() += 1;
    }
    let indexed: usize = cache
        .pods_by_controller
        .values()
        .flat_map(|g| g.0.iter().map(|(_, pods)| pods))
        .chain([&cache.orphan_pods])
        .flat_map(|m| m.0.values())
        .map(BTreeSet::len)
        .sum();
    assert_eq!(indexed, current.len());
    assert_eq!(cache.label_sets.ids.len(), users.len());
    for (id, n) in users {
        assert_eq!(cache.label_sets.slots[id].as_ref().unwrap().users, n);
    }
}

#[test]
fn the_cache_indexes_follow_adds_updates_and_deletes() {
    let owner = |uid: &str| {
        let mut rs = replica_set("web", 1, "web");
        rs.metadata.uid = Some(uid.into());
        rs_object(rs)
    };
    let owners = [owner("uid-a"), owner("uid-b")];
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut cache = Cache::default();
    let mut current: BTreeMap<String, Arc<StoredPod>> = BTreeMap::new();
    for _ in 0..3000 {
        let name = format!("p{}", rng.random_range(0..20));
        let key = ("default".to_string(), name.clone());
        let (old, expected) = if rng.random_bool(0.2) {
            (cache.replace_pod(&key, None), current.remove(&name))
        } else {
            let mut b = pod_builder(&name).label("app", ["web", "db"][rng.random_range(0..2)]);
            if let Some(o) = owners.get(rng.random_range(0..3)) {
                b = b.owned_by(o);
            }
            if rng.random_bool(0.5) {
                b = b.ready_since(Some(start()));
            }
            let pod = b.arc();
            (
                cache.replace_pod(&key, Some(&pod)),
                current.insert(name, pod),
            )
        };
        assert_eq!(old.is_some(), expected.is_some());
        assert!(old.zip(expected).is_none_or(|(a, b)| Arc::ptr_eq(&a, &b)));
        assert_cache_holds(&cache, &current);
    }
}

#[test]
fn status_counts_from_the_cache_equal_calculate_status() {
    let now = start();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut pods = Vec::new();
    for i in 0..300 {
        let mut b = pod_builder(&format!("p{i}"));
        match rng.random_range(0..4) {
            0 => b = b.label("tier", "fe"),
            1 => b = b.label("tier", "be"),
            2 => b = b.label("tier", "fe").label("extra", "x"),
            _ => {}
        }
        b = match rng.random_range(0..6) {
            0 => b.not_ready(),
            1 => b.ready_since(None),
            2 => b.ready_since(Some(ago(now, rng.random_range(0..40)))),
            // Ready in the future, as on a clock that went back.
            3 => b.ready_since(Some(ago(now, -5))),
            4 => b.ready_condition("Unknown", Some(ago(now, 100))),
            _ => b,
        };
        pods.push(b.arc());
    }
    let cache = cache_of(&pods);
    let claimed = cached_all(&cache, &pods);
    let mut rs = replica_set("web", 100, "web");
    let template = rs.spec.as_mut().unwrap().template.as_mut().unwrap();
    template.metadata.as_mut().unwrap().labels = Some(label_map(&[("app", "web"), ("tier", "fe")]));
    let mut no_template = rs.clone();
    no_template.spec.as_mut().unwrap().template = None;
    let mut seen_counts = Vec::new();
    for rs in [rs, no_template] {
        for min_ready in [None, Some(-1), Some(0), Some(10), Some(25), Some(3600)] {
            let mut rs = rs.clone();
            rs.spec.as_mut().unwrap().min_ready_seconds = min_ready;
            for manage_err in [None, Some("boom")] {
                let want = calculate_status(&rs, &pods, manage_err, Some(3), &Time(now));
                let counts = StatusCounts::of_cached(&rs, &claimed, &cache.label_sets, now);
                let got = status_with_counts(&rs, counts, manage_err, Some(3), &Time(now));
                assert_eq!(got, want, "minReadySeconds {min_ready:?}");
                seen_counts.push((
                    want.fully_labeled_replicas,
                    want.ready_replicas,
                    want.available_replicas,
                ));
            }
        }
    }
    // The cases tell the counts apart: some but not all pods are fully labeled, ready or
    // available, and minReadySeconds changes the available count.
    assert!(seen_counts.iter().all(|&(f, r, a)| f.is_some() && a <= r));
    assert!(seen_counts.iter().any(|&(_, r, a)| a.is_some() && a < r));
    assert!(seen_counts.iter().any(|&(_, r, a)| a == r));
    seen_counts.sort();
    seen_counts.dedup();
    assert!(seen_counts.len() >= 4, "{seen_counts:?}");
}

/// A pod of a random scale-down: any node (or none), phase, readiness, restarts, deletion cost
/// and creation time.
fn random_ranked_pod(rng: &mut ChaCha8Rng, name: &str, now: Timestamp) -> Arc<StoredPod> {
    let mut b = pod_builder(name)
        .node(["", "n1", "n2", "n3", "n4"][rng.random_range(0..5)])
        .created(Some(ago(now, rng.random_range(0..4 * HOUR_SECS))));
    b = match rng.random_range(0..5) {
        0 => b.not_ready(),
        1 => b.phase("Unknown").not_ready(),
        2 => b.phase("Failed"),
        _ => b.ready_since(Some(ago(now, rng.random_range(0..4 * HOUR_SECS)))),
    };
    if rng.random_bool(0.3) {
        b = b.restarts(rng.random_range(0..3));
    }
    if rng.random_bool(0.3) {
        b = b.cost(["-5", "5", "x"][rng.random_range(0..3)]);
    }
    if rng.random_bool(0.1) {
        b = b.terminating();
    }
    b.arc()
}

#[test]
fn get_pods_to_delete_with_counts_equals_get_pods_to_delete() {
    let now = start();
    let names = |pods: &[&StoredPod]| -> Vec<String> {
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect()
    };
    let keys = |choice: &ranking::ScaleDownChoice| -> Vec<String> {
        choice.ordered().map(|k| format!("{k:?}")).collect()
    };
    for seed in 0..30 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let pods: Vec<Arc<StoredPod>> = (0..40)
            .map(|i| random_ranked_pod(&mut rng, &format!("p{i}"), now))
            .collect();
        let mut related: Vec<Arc<StoredPod>> = pods
            .iter()
            .filter(|_| rng.random_bool(0.7))
            .cloned()
            .collect();
        related.extend((0..10).map(|i| random_ranked_pod(&mut rng, &format!("r{i}"), now)));
        let ctx = RankContext {
            now: [None, Some(now)][rng.random_range(0..2)],
            pod_deletion_cost: rng.random_bool(0.5),
        };
        let diff = rng.random_range(0..pods.len() + 3);
        let want = get_pods_to_delete(&pods, &related, diff, &ctx);
        let counts = ranking::pods_per_node(related.iter().map(|p| p.as_ref()));
        let cache = cache_of(&pods);
        let cached = cached_all(&cache, &pods);
        for got in [
            ranking::get_pods_to_delete_with_counts(&pods, &counts, diff, &ctx),
            ranking::get_pods_to_delete_with_counts(&cached, &counts, diff, &ctx),
        ] {
            assert_eq!(names(&got.victims), names(&want.victims), "seed {seed}");
            assert_eq!(keys(&got), keys(&want), "seed {seed}");
            assert_eq!(got.sorted, want.sorted);
        }
        assert_eq!(want.ordered().count(), pods.len());
    }
}

#[test]
fn related_pod_counts_equal_those_of_the_indirectly_related_pods() {
    // Upstream getIndirectlyRelatedPods, as kubeplane computed it before counting from its
    // cache: every sibling's selected pods of the namespace, in name order, de-duplicated by UID.
    fn related_pods(
        cache: &Cache,
        rs: &StoredReplicaSet,
        pods: &[Arc<StoredPod>],
    ) -> Vec<Arc<StoredPod>> {
        let Some(c) = controller_of(&rs.metadata) else {
            return Vec::new();
        };
        let mut by_name: Vec<&Arc<StoredPod>> = pods.iter().collect();
        by_name.sort_by_key(|p| p.metadata.name.clone());
        let mut seen = std::collections::BTreeSet::new();
        let mut related = Vec::new();
        for key in &cache.rs_by_controller_uid[&c.uid] {
            let selector = rs_selector(&cache.replica_sets[key]).unwrap();
            for pod in &by_name {
                if selector.matches(pod_labels(pod))
                    && seen.insert(pod.metadata.uid.clone().unwrap_or_default())
                {
                    related.push(Arc::clone(pod));
                }
            }
        }
        related
    }
    let deployment = |uid: &str| {
        let meta = ObjectMeta {
            name: Some(uid.into()),
            uid: Some(uid.into()),
            ..Default::default()
        };
        Some(vec![new_controller_ref("apps/v1", "Deployment", &meta)])
    };
    // Two siblings whose selectors overlap, a ReplicaSet of another Deployment, and one
    // without a controller.
    let mut main = replica_set("web-main", 1, "web");
    main.metadata.owner_references = deployment("d1");
    let mut fe = replica_set("web-fe", 1, "web");
    fe.spec.as_mut().unwrap().selector.match_labels = Some(label_map(&[("tier", "fe")]));
    fe.metadata.owner_references = deployment("d1");
    let mut stranger = replica_set("other", 1, "db");
    stranger.metadata.owner_references = deployment("d2");
    let bare = replica_set("bare", 1, "web");
    let now = start();
    let mut deduplicated = false;
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let pods: Vec<Arc<StoredPod>> = (0..60)
            .map(|i| {
                let pod = random_ranked_pod(&mut rng, &format!("p{i:02}"), now);
                let mut b = PodBuilder::from(pod.to_k8s())
                    .label("app", ["web", "db"][rng.random_range(0..2)]);
                if rng.random_bool(0.4) {
                    b = b.label("tier", "fe");
                }
                // Some pods share a UID or have none.
                match rng.random_range(0..8) {
                    0 => b.uid("shared").arc(),
                    1 => b.uid("").arc(),
                    _ => b.arc(),
                }
            })
            .collect();
        let mut cache = cache_of(&pods);
        for rs in [&main, &fe, &stranger, &bare] {
            cache.index_rs(&Arc::new(rs.clone()));
        }
        for rs in [&main, &fe, &stranger, &bare] {
            let related = related_pods(&cache, rs, &pods);
            let want = ranking::pods_per_node(related.iter().map(|p| p.as_ref()));
            assert_eq!(
                cache.related_active_pods_per_node(rs),
                want,
                "seed {seed}: {}",
                rs.metadata.name.as_deref().unwrap()
            );
        }
        // The siblings' active pods, counted without de-duplication.
        let selected = pods
            .iter()
            .filter(|p| is_pod_active(p))
            .filter(|p| {
                let l = pod_labels(p);
                l.get("app").is_some_and(|v| v == "web") || l.contains_key("tier")
            })
            .count();
        let counted: usize = cache.related_active_pods_per_node(&main).values().sum();
        deduplicated |= counted < selected;
    }
    assert!(deduplicated, "some pods were counted once for two reasons");
}

/// The ReplicaSets indexed under `uid` in the cache's index by controller UID.
fn indexed_under(cache: &Cache, uid: &str) -> Vec<NsName> {
    let set = cache.rs_by_controller_uid.get(uid);
    set.into_iter().flatten().cloned().collect()
}

#[test]
fn a_replica_set_version_takes_the_cached_ones_place_unless_its_controller_changed() {
    let owned_by = |uid: &str| {
        let meta = ObjectMeta {
            name: Some(uid.into()),
            uid: Some(uid.into()),
            ..Default::default()
        };
        Some(vec![new_controller_ref("apps/v1", "Deployment", &meta)])
    };
    let mut rs = replica_set("web", 1, "web");
    rs.metadata.uid = Some("rs-uid".into());
    rs.metadata.owner_references = owned_by("d1");
    let key = ns_name(&rs.metadata);
    let mut cache = Cache::default();
    let v1 = Arc::new(rs.clone());
    assert!(cache.replace_rs(&key, Some(&v1)).is_none());
    assert_eq!(indexed_under(&cache, "d1"), vec![key.clone()]);

    // A status write under the same controller: the new version in the old one's place.
    let mut status_write = rs.clone();
    status_write.status = Some(ReplicaSetStatus {
        replicas: 1,
        ..Default::default()
    });
    let v2 = Arc::new(status_write);
    let old = cache.replace_rs(&key, Some(&v2));
    assert!(old.is_some_and(|o| Arc::ptr_eq(&o, &v1)));
    assert!(Arc::ptr_eq(&cache.replica_sets[&key], &v2));
    assert_eq!(indexed_under(&cache, "d1"), vec![key.clone()]);

    // Released, then adopted by another controller: the index follows each time.
    let mut released = rs.clone();
    released.metadata.owner_references = None;
    let v3 = Arc::new(released);
    let old = cache.replace_rs(&key, Some(&v3));
    assert!(old.is_some_and(|o| Arc::ptr_eq(&o, &v2)));
    assert!(cache.rs_by_controller_uid.is_empty());
    let mut adopted = rs.clone();
    adopted.metadata.owner_references = owned_by("d2");
    let v4 = Arc::new(adopted);
    let old = cache.replace_rs(&key, Some(&v4));
    assert!(old.is_some_and(|o| Arc::ptr_eq(&o, &v3)));
    assert!(Arc::ptr_eq(&cache.replica_sets[&key], &v4));
    assert_eq!(indexed_under(&cache, "d2"), vec![key.clone()]);
    assert!(indexed_under(&cache, "d1").is_empty());

    // Deleted: gone from both.
    let old = cache.replace_rs(&key, None);
    assert!(old.is_some_and(|o| Arc::ptr_eq(&o, &v4)));
    assert!(cache.replica_sets.is_empty());
    assert!(cache.rs_by_controller_uid.is_empty());
}

// ----- the pod index by controller (kubernetes#134654, #134658) --------------------------------

/// How one stray pod's controller reference differs from the ReplicaSet `web` it carries the UID
/// of.
struct StrayCase {
    name: &'static str,
    kind: &'static str,
    owner_name: &'static str,
    namespace: &'static str,
    app: &'static str,
    /// Pods `web` (2 replicas) creates at v1.34.1 and at v1.34.2.
    created: [usize; 2],
    /// Whether the stray pod still has a controller at v1.34.1 and at v1.34.2.
    keeps_controller: [bool; 2],
}

#[test]
fn the_pod_index_keys_by_the_whole_controller_reference_from_v1_34_2() {
    use kubeplane_core::version::v1;
    let cases = [
        StrayCase {
            name: "a pod whose reference names the ReplicaSet with its UID is its own in every release",
            kind: KIND,
            owner_name: "web",
            namespace: "default",
            app: "web",
            created: [1, 1],
            keeps_controller: [true, true],
        },
        StrayCase {
            name: "a pod whose reference has the UID but another name counts as a replica only before v1.34.2",
            kind: KIND,
            owner_name: "web-old",
            namespace: "default",
            app: "web",
            created: [1, 2],
            keeps_controller: [true, true],
        },
        StrayCase {
            name: "a pod whose reference has the UID but another kind counts as a replica only before v1.34.2",
            kind: "Deployment",
            owner_name: "web",
            namespace: "default",
            app: "web",
            created: [1, 2],
            keeps_controller: [true, true],
        },
        StrayCase {
            name: "a pod of another namespace whose reference names the ReplicaSet counts only before v1.34.2",
            kind: KIND,
            owner_name: "web",
            namespace: "other",
            app: "web",
            created: [1, 2],
            keeps_controller: [true, true],
        },
        StrayCase {
            name: "a non-matching pod with the UID and another name is released before v1.34.2 and left alone after",
            kind: KIND,
            owner_name: "web-old",
            namespace: "default",
            app: "debug",
            created: [2, 2],
            keeps_controller: [false, true],
        },
    ];
    for case in cases {
        for (i, version) in [v1(34, 1), v1(34, 2)].into_iter().enumerate() {
            let mut client = TestClient::new(1);
            let mut rsc = ReplicaSetController::with_features(FeatureGates::for_version(version));
            let rs = create(&mut client, rs_object(replica_set("web", 2, "web")));
            let mut reference = new_controller_ref(API_VERSION, case.kind, rs.meta());
            reference.name = case.owner_name.into();
            let stray = pod_builder("stray")
                .namespace(case.namespace)
                .label("app", case.app)
                .owner_reference(reference);
            create(&mut client, stray.object());
            settle(&mut client, &mut rsc);
            let what = format!("{} ({version})", case.name);
            assert_eq!(
                client.events_with_reason(REASON_SUCCESSFUL_CREATE).len(),
                case.created[i],
                "{what}"
            );
            let stray = client.store.get_pod(case.namespace, "stray").unwrap();
            assert_eq!(
                pod_controller(stray).is_some(),
                case.keeps_controller[i],
                "{what}"
            );
        }
    }
}

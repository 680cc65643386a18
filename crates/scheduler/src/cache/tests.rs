//! Tests of the scheduler cache: the node list, assumed and confirmed pods, the snapshot
//! and the nodes it is told changed.

use super::*;
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn node(name: &str, zone: &str) -> Arc<StoredNode> {
    let mut labels = std::collections::BTreeMap::new();
    if !zone.is_empty() {
        labels.insert("topology.kubernetes.io/zone".to_string(), zone.to_string());
    }
    Arc::new(
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels),
                ..Default::default()
            },
            ..Default::default()
        }
        .into(),
    )
}

fn pod(uid: &str, node: Option<&str>) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(Arc::new(
        Pod {
            metadata: ObjectMeta {
                name: Some(uid.into()),
                uid: Some(uid.into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        }
        .into(),
    )))
}

#[test]
fn the_node_list_interleaves_zones_round_robin() {
    let mut c = Cache::new();
    for (n, z) in [
        ("a1", "a"),
        ("a2", "a"),
        ("b1", "b"),
        ("a3", "a"),
        ("b2", "b"),
    ] {
        c.add_node(node(n, z));
    }
    let mut s = Snapshot::default();
    c.update_snapshot(&mut s);
    let names: Vec<&str> = s.node_infos.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a1", "b1", "a2", "b2", "a3"]);
}

#[test]
fn a_node_added_again_or_moved_between_zones_is_listed_once() {
    let mut c = Cache::new();
    for (n, z) in [("a1", "a"), ("b1", "b"), ("a2", "a")] {
        c.add_node(node(n, z));
    }
    // Updated in place (same zone), re-added, and moved to the other zone and back.
    c.add_node(node("a1", "a"));
    c.add_node(node("a2", "a"));
    c.add_node(node("a2", "b"));
    c.add_node(node("b1", "a"));
    c.add_node(node("b1", "b"));
    let mut s = Snapshot::default();
    c.update_snapshot(&mut s);
    let names: Vec<&str> = s.node_infos.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a1", "a2", "b1"]);
    assert_eq!(c.tree.num_nodes, 3);
    c.remove_node("a2");
    c.add_node(node("a2", "a"));
    c.update_snapshot(&mut s);
    let names: Vec<&str> = s.node_infos.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a1", "b1", "a2"]);
}

#[test]
fn an_assumed_pod_counts_until_forgotten_and_a_confirmed_one_cannot_be_forgotten() {
    let mut c = Cache::new();
    c.add_node(node("n1", ""));
    c.assume_pod(pod("p", None), "n1").unwrap();
    assert!(c.is_assumed("p"));
    assert_eq!(c.node("n1").unwrap().pods.len(), 1);
    c.forget_pod("p").unwrap();
    assert_eq!(c.node("n1").unwrap().pods.len(), 0);
    c.assume_pod(pod("p", None), "n1").unwrap();
    c.add_pod(pod("p", Some("n1"))).unwrap();
    assert!(!c.is_assumed("p"));
    assert!(c.forget_pod("p").is_err());
}

#[test]
fn a_confirmed_pod_replaces_its_assumed_self_where_a_removal_and_addition_would_leave_it() {
    let mut c = Cache::new();
    c.add_node(node("n1", ""));
    c.add_node(node("n2", ""));
    for p in ["a", "b", "c"] {
        c.assume_pod(pod(p, None), "n1").unwrap();
    }
    c.assume_pod(pod("d", None), "n2").unwrap();
    let generation = c.generation;
    // Confirmed on the node it was assumed on: the last pod takes its place, it goes last.
    let a = pod("a", Some("n1"));
    c.add_pod(Arc::clone(&a)).unwrap();
    let uids = |c: &Cache, n: &str| -> Vec<String> {
        c.node(n)
            .unwrap()
            .pods
            .iter()
            .map(|p| p.uid().to_string())
            .collect()
    };
    assert_eq!(uids(&c, "n1"), ["c", "b", "a"]);
    assert!(Arc::ptr_eq(&c.node("n1").unwrap().pods[2], &a));
    assert!(Arc::ptr_eq(c.pod("a").unwrap(), &a));
    assert!(!c.is_assumed("a"));
    assert_eq!(c.generation, generation + 2);
    assert_eq!(c.node("n1").unwrap().generation, generation + 2);
    assert!(c.add_pod(pod("a", Some("n1"))).is_err());
    // Bound elsewhere than assumed: taken off the one node, added to the other.
    c.add_pod(pod("d", Some("n1"))).unwrap();
    assert_eq!(uids(&c, "n1"), ["c", "b", "a", "d"]);
    assert!(uids(&c, "n2").is_empty());
    assert!(!c.is_assumed("d"));
    // Assumed on a node the cache does not hold: it stays unknown there.
    c.assume_pod(pod("e", None), "ghost").unwrap();
    c.add_pod(pod("e", Some("ghost"))).unwrap();
    assert_eq!(uids(&c, "ghost"), ["e"]);
    assert!(c.node("ghost").unwrap().node.is_none());
}

#[test]
fn changed_nodes_are_listed_once_in_name_order_and_their_strings_kept() {
    let mut d = DirtyNames::default();
    for name in ["n2", "n10", "n1", "n10"] {
        d.push(name);
    }
    let names: Vec<&String> = d.take_sorted().collect();
    assert_eq!(names, ["n1", "n10", "n2"]);
    assert!(d.is_empty());
    d.push("n3");
    assert_eq!((d.len, d.names.len()), (1, 4), "a kept String written over");
    assert_eq!(d.take_sorted().collect::<Vec<_>>(), ["n3"]);
    // Through the cache: nodes changed in any order are replaced in the snapshot in
    // name order (its change log), each once, and flagged until then.
    let mut c = Cache::new();
    for n in ["a", "b", "c", "d"] {
        c.add_node(node(n, ""));
    }
    let mut s = Snapshot::default();
    c.update_snapshot(&mut s);
    let cursor = s.cursor();
    for (p, n) in [("p", "c"), ("q", "a"), ("r", "c"), ("t", "b")] {
        c.assume_pod(pod(p, None), n).unwrap();
    }
    assert_eq!(c.dirty.len, 3);
    assert!(c.nodes["a"].dirty && !c.nodes["d"].dirty);
    c.update_snapshot(&mut s);
    let place = |n: &str| s.index[n];
    let log = s.changed_since(cursor).unwrap();
    assert_eq!(log, [place("a"), place("b"), place("c")]);
    assert!(c.nodes.values().all(|n| !n.dirty));
    assert_eq!(s.get("c").unwrap().pods.len(), 2);
}

#[test]
fn the_snapshot_shares_unchanged_nodes_and_replaces_changed_ones() {
    let mut c = Cache::new();
    c.add_node(node("n1", ""));
    c.add_node(node("n2", ""));
    let mut s = Snapshot::default();
    c.update_snapshot(&mut s);
    let before = s.get("n2").unwrap().clone();
    c.assume_pod(pod("p", None), "n1").unwrap();
    c.update_snapshot(&mut s);
    assert_eq!(s.get("n1").unwrap().pods.len(), 1);
    assert!(Arc::ptr_eq(&before, s.get("n2").unwrap()));
}

/// `n1` with a Ready condition whose heartbeat is `heartbeat` and status `status`.
fn posted(heartbeat: i64, status: &str, rv: &str) -> Arc<StoredNode> {
    let mut n = StoredNode::clone(&node("n1", "a"));
    n.metadata.resource_version = Some(rv.into());
    n.status = Some(k8s_openapi::api::core::v1::NodeStatus {
        conditions: Some(vec![k8s_openapi::api::core::v1::NodeCondition {
            type_: "Ready".into(),
            status: status.into(),
            last_heartbeat_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::from_second(heartbeat).unwrap(),
            )),
            ..Default::default()
        }]),
        ..Default::default()
    });
    Arc::new(n)
}

#[test]
fn a_heartbeat_only_update_leaves_the_node_and_snapshot_alone() {
    let mut c = Cache::new();
    c.add_node(posted(0, "True", "1"));
    let mut s = Snapshot::default();
    c.update_snapshot(&mut s);
    let before = s.get("n1").unwrap().clone();
    let generation = c.generation;
    c.update_node(posted(300, "True", "2"));
    assert_eq!(c.generation, generation);
    assert!(c.dirty.is_empty());
    c.update_snapshot(&mut s);
    assert!(Arc::ptr_eq(&before, s.get("n1").unwrap()));
    // A condition's status is a change: the node is replaced.
    c.update_node(posted(600, "False", "3"));
    assert!(c.generation > generation);
    c.update_snapshot(&mut s);
    let after = s.get("n1").unwrap();
    assert!(!Arc::ptr_eq(&before, after));
    let held = after.node.as_ref().unwrap();
    assert_eq!(held.metadata.resource_version.as_deref(), Some("3"));
}

/// The verdict `update_node` returns is the comparison with the version given before it,
/// over posts that renew heartbeats, change a status, renew again, change back, and after
/// the node's removal (not held: a change).
#[test]
fn update_node_tells_a_heartbeat_only_post_as_the_previous_version_would() {
    let mut c = Cache::new();
    let posts = [
        posted(0, "True", "1"),
        posted(300, "True", "2"),
        posted(600, "True", "3"),
        posted(900, "False", "4"),
        posted(1200, "False", "5"),
        posted(1500, "True", "6"),
        posted(1800, "True", "7"),
    ];
    assert!(!c.update_node(posts[0].clone()), "not held yet");
    for w in posts.windows(2) {
        let expected = kubeplane_api::only_heartbeats_changed(&w[0], &w[1]);
        assert_eq!(c.update_node(w[1].clone()), expected, "{:?}", w[1].metadata);
    }
    let verdicts: Vec<bool> = posts
        .windows(2)
        .map(|w| kubeplane_api::only_heartbeats_changed(&w[0], &w[1]))
        .collect();
    assert_eq!(verdicts, [true, true, false, true, false, true]);
    c.remove_node("n1");
    assert!(
        !c.update_node(posted(2100, "True", "8")),
        "removed: not held"
    );
}

#[test]
fn node_ids_are_distinct_among_known_nodes_kept_across_changes_and_reused_when_freed() {
    let mut c = Cache::new();
    for n in ["n1", "n2", "n3"] {
        c.add_node(node(n, ""));
    }
    let id = |c: &Cache, n: &str| c.node(n).unwrap().id;
    assert_eq!([id(&c, "n1"), id(&c, "n2"), id(&c, "n3")], [0, 1, 2]);
    // A change keeps the id; a node known only through a pod gets one too.
    c.assume_pod(pod("p", None), "n2").unwrap();
    assert_eq!(id(&c, "n2"), 1);
    c.assume_pod(pod("q", None), "ghost").unwrap();
    assert_eq!(id(&c, "ghost"), 3);
    // A node that still has pods keeps its id; one that has none frees it.
    c.remove_node("n2");
    assert_eq!(id(&c, "n2"), 1);
    c.remove_node("n1");
    assert!(c.node("n1").is_none());
    c.forget_pod("p").unwrap();
    assert!(c.node("n2").is_none());
    c.add_node(node("n4", ""));
    c.add_node(node("n5", ""));
    c.add_node(node("n6", ""));
    let ids = ["n4", "n5", "n3", "ghost", "n6"].map(|n| id(&c, n));
    assert_eq!(ids, [1, 0, 2, 3, 4]);
}

#[test]
fn a_released_node_is_changed_in_place_and_put_back_at_the_next_update() {
    let mut c = Cache::new();
    c.add_node(node("n1", ""));
    c.add_node(node("n2", ""));
    c.add_pod(pod("p", Some("n1"))).unwrap();
    let mut s = Snapshot::default();
    c.update_snapshot(&mut s);
    let n2 = s.get("n2").unwrap().clone();
    let bound = Arc::downgrade(&s.get("n1").unwrap().pods[0]);
    // A new version of p between cycles: the snapshot lets go of n1 first.
    c.release_from_snapshot("p", Some("n1"), &mut s);
    c.update_pod(pod("p", Some("n1")));
    assert!(bound.upgrade().is_none(), "the superseded version is kept");
    assert_eq!(Arc::strong_count(c.node("n1").unwrap()), 1);
    assert_eq!(s.vacancies(), 1);
    c.update_snapshot(&mut s);
    assert_eq!(s.vacancies(), 0);
    assert!(Arc::ptr_eq(s.get("n1").unwrap(), c.node("n1").unwrap()));
    assert!(Arc::ptr_eq(s.get("n2").unwrap(), &n2));
    let names: Vec<&str> = s.node_infos.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["n1", "n2"]);
}

#[test]
fn a_pod_moved_between_nodes_releases_both_and_a_stray_vacancy_rebuilds_the_list() {
    let mut c = Cache::new();
    for n in ["n1", "n2", "n3"] {
        c.add_node(node(n, ""));
    }
    c.add_pod(pod("p", Some("n1"))).unwrap();
    let mut s = Snapshot::default();
    c.update_snapshot(&mut s);
    c.release_from_snapshot("p", Some("n2"), &mut s);
    assert_eq!(s.vacancies(), 2);
    c.update_pod(pod("p", Some("n2")));
    c.update_snapshot(&mut s);
    assert_eq!(s.get("n1").unwrap().pods.len(), 0);
    assert_eq!(s.get("n2").unwrap().pods.len(), 1);
    // A place vacated without the cache marking its node changed is rebuilt all the same.
    let cursor = s.cursor();
    assert!(s.vacate(2));
    c.update_snapshot(&mut s);
    assert_eq!(s.vacancies(), 0);
    assert!(Arc::ptr_eq(s.get("n3").unwrap(), c.node("n3").unwrap()));
    assert_eq!(s.changed_since(cursor), None, "a rebuilt list");
}

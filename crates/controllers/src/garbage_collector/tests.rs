//! Tests of the garbage collector on a `TestClient`: cascading background deletion, absent
//! owners verified with a GET, UID mismatches, mixed solid and dangling references, unknown
//! owner kinds and dependents already being deleted.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kubeplane_api::StoredDeployment;
use kubeplane_api::StoredReplicaSet;
use kubeplane_api::{Client, DeleteOptions, EventType, Kind, Object, ObjectKey, PropagationPolicy};
use kubeplane_registry::testing::TestClient;

use super::*;

fn meta(name: &str, uid: &str, owners: &[(&str, &str, &str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        uid: Some(uid.into()),
        owner_references: (!owners.is_empty()).then(|| {
            owners
                .iter()
                .map(|(api_version, kind, name, uid)| OwnerReference {
                    api_version: api_version.to_string(),
                    kind: kind.to_string(),
                    name: name.to_string(),
                    uid: uid.to_string(),
                    controller: Some(true),
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    }
}

fn deployment(name: &str, uid: &str) -> Object {
    Object::Deployment(Arc::new(StoredDeployment::from_k8s(Deployment {
        metadata: meta(name, uid, &[]),
        ..Default::default()
    })))
}

fn replicaset(name: &str, uid: &str, owner: Option<(&str, &str)>) -> Object {
    let owners: Vec<_> = owner
        .map(|(n, u)| ("apps/v1", "Deployment", n, u))
        .into_iter()
        .collect();
    Object::ReplicaSet(Arc::new(StoredReplicaSet::from_k8s(ReplicaSet {
        metadata: meta(name, uid, &owners),
        ..Default::default()
    })))
}

fn pod(name: &str, node: Option<&str>, owners: &[(&str, &str, &str, &str)]) -> Object {
    Object::Pod(Arc::new(
        Pod {
            metadata: meta(name, &format!("uid-{name}"), owners),
            spec: Some(PodSpec {
                node_name: node.map(str::to_string),
                ..Default::default()
            }),
            status: None,
        }
        .into(),
    ))
}

fn rs_owner<'a>(name: &'a str, uid: &'a str) -> (&'a str, &'a str, &'a str, &'a str) {
    ("apps/v1", "ReplicaSet", name, uid)
}

fn exists(tc: &TestClient, kind: Kind, name: &str) -> bool {
    tc.store.get(kind, "default", name).is_some()
}

fn delete(tc: &mut TestClient, kind: Kind, name: &str) {
    let key = ObjectKey::new(kind, "default", name);
    tc.delete(&key, DeleteOptions::default()).unwrap();
}

#[test]
fn deleting_a_deployment_deletes_its_replicasets_then_their_pods() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    tc.create(deployment("web", "d1")).unwrap();
    tc.create(replicaset("web-a", "rs-a", Some(("web", "d1"))))
        .unwrap();
    tc.create(replicaset("web-b", "rs-b", Some(("web", "d1"))))
        .unwrap();
    for (name, rs) in [("p1", "rs-a"), ("p2", "rs-b"), ("p3", "rs-a")] {
        let owner = if rs == "rs-a" { "web-a" } else { "web-b" };
        tc.create(pod(name, None, &[rs_owner(owner, rs)])).unwrap();
    }
    tc.settle(&mut [&mut gc]);
    assert_eq!(gc.deletions, 0, "every owner exists");
    delete(&mut tc, Kind::Deployment, "web");
    let before = tc.store.take_events();
    for ev in &before {
        gc.observe(ev, tc.now);
    }
    // The ReplicaSets go first, each with one delete; the pods after they are gone.
    gc.run(tc.now, &mut tc);
    assert!(!exists(&tc, Kind::ReplicaSet, "web-a") && !exists(&tc, Kind::ReplicaSet, "web-b"));
    assert!(exists(&tc, Kind::Pod, "p1"));
    tc.settle(&mut [&mut gc]);
    for p in ["p1", "p2", "p3"] {
        assert!(!exists(&tc, Kind::Pod, p), "{p}");
    }
    assert_eq!(gc.deletions, 5);
    assert_eq!(gc.next_wakeup(), None);
}

#[test]
fn a_bound_dependent_is_deleted_gracefully_and_not_again() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    tc.create(replicaset("web-a", "rs-a", None)).unwrap();
    tc.create(pod("p1", Some("n1"), &[rs_owner("web-a", "rs-a")]))
        .unwrap();
    tc.settle(&mut [&mut gc]);
    delete(&mut tc, Kind::ReplicaSet, "web-a");
    tc.settle(&mut [&mut gc]);
    let p = tc
        .store
        .get_pod("default", "p1")
        .expect("terminating, not gone");
    assert!(p.metadata.deletion_timestamp.is_some());
    assert_eq!(gc.deletions, 1);
    // Queued again (say, a new dependent of a gone owner): already being deleted, left alone.
    gc.enqueue("uid-p1", ObjectKey::new(Kind::Pod, "default", "p1"));
    tc.settle(&mut [&mut gc]);
    assert_eq!(gc.deletions, 1);
    assert!(tc.store.take_events().is_empty());
}

#[test]
fn an_object_whose_owner_never_existed_is_deleted_after_a_get() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    tc.create(pod("orphan", None, &[rs_owner("gone", "rs-gone")]))
        .unwrap();
    tc.create(pod("kept", None, &[])).unwrap();
    tc.settle(&mut [&mut gc]);
    assert!(!exists(&tc, Kind::Pod, "orphan"));
    assert!(exists(&tc, Kind::Pod, "kept"));
    assert!(gc.absent.contains("rs-gone"));
}

#[test]
fn an_owner_created_later_in_the_same_instant_is_found() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    // The pod is seen first (a virtual owner upstream); the GET at run time finds the owner.
    tc.create(pod("p1", None, &[rs_owner("web-a", "rs-a")]))
        .unwrap();
    tc.create(replicaset("web-a", "rs-a", None)).unwrap();
    tc.settle(&mut [&mut gc]);
    assert!(exists(&tc, Kind::Pod, "p1"));
}

#[test]
fn an_owner_with_the_same_name_and_another_uid_is_absent() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    tc.create(replicaset("web-a", "rs-new", None)).unwrap();
    tc.create(pod("p1", None, &[rs_owner("web-a", "rs-old")]))
        .unwrap();
    tc.settle(&mut [&mut gc]);
    assert!(!exists(&tc, Kind::Pod, "p1"));
    assert!(exists(&tc, Kind::ReplicaSet, "web-a"));
}

#[test]
fn a_solid_owner_keeps_the_object_and_the_dangling_reference_goes() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    tc.create(replicaset("web-a", "rs-a", None)).unwrap();
    let owners = [rs_owner("web-a", "rs-a"), rs_owner("gone", "rs-gone")];
    tc.create(pod("p1", None, &owners)).unwrap();
    tc.settle(&mut [&mut gc]);
    let p = tc.store.get_pod("default", "p1").expect("kept");
    let refs = p.owner_references().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0].uid, "rs-a");
    assert_eq!(gc.deletions, 0);
}

#[test]
fn references_to_kinds_kubeplane_does_not_store_are_not_dangling() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    let owner = ("example.com/v1", "Widget", "w", "w-1");
    tc.create(pod("widget-0", None, &[owner])).unwrap();
    // A known kind under another group version is not that kind either.
    let owner = ("extensions/v1beta1", "ReplicaSet", "old", "rs-old");
    tc.create(pod("legacy", None, &[owner])).unwrap();
    tc.settle(&mut [&mut gc]);
    assert!(exists(&tc, Kind::Pod, "widget-0"));
    assert!(exists(&tc, Kind::Pod, "legacy"));
}

#[test]
fn a_dependent_of_a_missing_built_in_kind_kubeplane_only_stores_is_collected() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    let owner = ("apps/v1", "StatefulSet", "db", "ss-1");
    tc.create(pod("db-0", None, &[owner])).unwrap();
    tc.settle(&mut [&mut gc]);
    assert!(!exists(&tc, Kind::Pod, "db-0"));
}

#[test]
fn observing_a_change_without_new_references_queues_nothing() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    tc.create(replicaset("web-a", "rs-a", None)).unwrap();
    tc.create(pod("p1", None, &[rs_owner("web-a", "rs-a")]))
        .unwrap();
    tc.settle(&mut [&mut gc]);
    let mut p = tc
        .store
        .get_key(&ObjectKey::new(Kind::Pod, "default", "p1"))
        .unwrap()
        .clone();
    p.set_labels(Some([("a".to_string(), "b".to_string())].into()));
    p.meta_mut().resource_version = None;
    tc.update(p).unwrap();
    let events = tc.store.take_events();
    assert_eq!(events[0].type_, EventType::Modified);
    gc.observe(&events[0], tc.now);
    assert_eq!(gc.next_wakeup(), None);
}

fn delete_with(tc: &mut TestClient, kind: Kind, name: &str, policy: PropagationPolicy) {
    let key = ObjectKey::new(kind, "default", name);
    let opts = DeleteOptions {
        propagation_policy: Some(policy),
        ..DeleteOptions::default()
    };
    tc.delete(&key, opts).unwrap();
}

/// A Deployment `web` (d1) with ReplicaSet `web-a` (rs-a) and pods p1 (bound, so it
/// terminates gracefully) and p2, the references blocking their owners' deletion as the
/// controllers set them.
fn blocking_tree(tc: &mut TestClient) {
    let mut block = |obj: Object| {
        let mut obj = obj;
        for r in obj.owner_references_mut().into_iter().flatten() {
            r.block_owner_deletion = Some(true);
        }
        tc.create(obj).unwrap();
    };
    block(deployment("web", "d1"));
    block(replicaset("web-a", "rs-a", Some(("web", "d1"))));
    block(pod("p1", Some("n1"), &[rs_owner("web-a", "rs-a")]));
    block(pod("p2", None, &[rs_owner("web-a", "rs-a")]));
}

fn finalizers(tc: &TestClient, kind: Kind, name: &str) -> Vec<String> {
    let obj = tc.store.get(kind, "default", name).unwrap();
    obj.meta().finalizers.clone().unwrap_or_default()
}

#[test]
fn a_foreground_delete_keeps_the_owner_until_its_blocking_dependents_are_gone() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    blocking_tree(&mut tc);
    tc.settle(&mut [&mut gc]);
    delete_with(
        &mut tc,
        Kind::Deployment,
        "web",
        PropagationPolicy::Foreground,
    );
    tc.settle(&mut [&mut gc]);
    // The ReplicaSet is deleted in the foreground in turn (it has dependents); the unbound pod
    // is gone, the bound one terminating: both owners wait.
    assert_eq!(
        finalizers(&tc, Kind::Deployment, "web"),
        ["foregroundDeletion"]
    );
    assert_eq!(
        finalizers(&tc, Kind::ReplicaSet, "web-a"),
        ["foregroundDeletion"]
    );
    assert!(!exists(&tc, Kind::Pod, "p2"));
    let p1 = tc.store.get_pod("default", "p1").unwrap();
    assert!(p1.metadata.deletion_timestamp.is_some());
    // The kubelet removes the pod: the ReplicaSet's finalizer goes, then the Deployment's.
    tc.delete(
        &ObjectKey::new(Kind::Pod, "default", "p1"),
        DeleteOptions::now(),
    )
    .unwrap();
    tc.settle(&mut [&mut gc]);
    assert!(!exists(&tc, Kind::ReplicaSet, "web-a"));
    assert!(!exists(&tc, Kind::Deployment, "web"));
    assert_eq!(gc.next_wakeup(), None);
    assert!(gc.deleting_dependents.is_empty());
}

#[test]
fn a_dependent_that_stops_blocking_releases_its_waiting_owner() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    blocking_tree(&mut tc);
    // Another party's finalizer keeps the ReplicaSet Terminating for ever.
    let mut rs = tc
        .store
        .get(Kind::ReplicaSet, "default", "web-a")
        .unwrap()
        .clone();
    rs.meta_mut().finalizers = Some(vec!["example.com/keep".into()]);
    tc.update(rs).unwrap();
    tc.settle(&mut [&mut gc]);
    delete_with(
        &mut tc,
        Kind::Deployment,
        "web",
        PropagationPolicy::Foreground,
    );
    tc.delete(
        &ObjectKey::new(Kind::Pod, "default", "p1"),
        DeleteOptions::now(),
    )
    .unwrap();
    tc.settle(&mut [&mut gc]);
    assert!(
        exists(&tc, Kind::Deployment, "web"),
        "blocked by the ReplicaSet"
    );
    assert_eq!(
        finalizers(&tc, Kind::ReplicaSet, "web-a"),
        ["example.com/keep"]
    );
    // The ReplicaSet's reference stops blocking: the Deployment goes.
    let mut rs = tc
        .store
        .get(Kind::ReplicaSet, "default", "web-a")
        .unwrap()
        .clone();
    for r in rs.owner_references_mut().into_iter().flatten() {
        r.block_owner_deletion = Some(false);
    }
    tc.update(rs).unwrap();
    tc.settle(&mut [&mut gc]);
    assert!(!exists(&tc, Kind::Deployment, "web"));
    assert!(
        exists(&tc, Kind::ReplicaSet, "web-a"),
        "its own finalizer is not ours"
    );
}

#[test]
fn an_orphan_delete_removes_the_references_and_keeps_the_dependents() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    blocking_tree(&mut tc);
    tc.create(replicaset("web-b", "rs-b", Some(("web", "d1"))))
        .unwrap();
    tc.settle(&mut [&mut gc]);
    delete_with(&mut tc, Kind::Deployment, "web", PropagationPolicy::Orphan);
    assert_eq!(finalizers(&tc, Kind::Deployment, "web"), ["orphan"]);
    tc.settle(&mut [&mut gc]);
    assert!(!exists(&tc, Kind::Deployment, "web"));
    for rs in ["web-a", "web-b"] {
        let obj = tc.store.get(Kind::ReplicaSet, "default", rs).unwrap();
        assert_eq!(obj.owner_references(), None, "{rs}");
    }
    // The pods keep their ReplicaSet.
    for p in ["p1", "p2"] {
        let pod = tc.store.get_pod("default", p).unwrap();
        assert_eq!(pod.owner_references().unwrap()[0].uid, "rs-a");
    }
    assert_eq!(gc.deletions, 0);
}

#[test]
fn an_object_with_another_partys_finalizer_stays_terminating() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    let mut d = deployment("web", "d1");
    d.meta_mut().finalizers = Some(vec!["example.com/keep".into()]);
    tc.create(d).unwrap();
    tc.create(replicaset("web-a", "rs-a", Some(("web", "d1"))))
        .unwrap();
    tc.settle(&mut [&mut gc]);
    delete(&mut tc, Kind::Deployment, "web");
    tc.settle(&mut [&mut gc]);
    let d = tc.store.get(Kind::Deployment, "default", "web").unwrap();
    assert!(d.meta().deletion_timestamp.is_some());
    assert_eq!(
        finalizers(&tc, Kind::Deployment, "web"),
        ["example.com/keep"]
    );
    // Background: the owner still exists, so its dependent is kept.
    assert!(exists(&tc, Kind::ReplicaSet, "web-a"));
}

#[test]
fn the_graph_holds_a_node_under_both_owners_until_it_is_deleted() {
    let mut tc = TestClient::new(1);
    let mut gc = GarbageCollector::new();
    tc.create(replicaset("web-a", "rs-a", None)).unwrap();
    tc.create(replicaset("web-b", "rs-b", None)).unwrap();
    // Two owners: the node is a dependent of both.
    tc.create(pod(
        "p1",
        None,
        &[rs_owner("web-a", "rs-a"), rs_owner("web-b", "rs-b")],
    ))
    .unwrap();
    tc.settle(&mut [&mut gc]);
    let p1 = gc.graph.find("uid-p1").unwrap();
    let key = ObjectKey::new(Kind::Pod, "default", "p1");
    assert_eq!(gc.graph.key(p1), Some(key.clone()));
    for owner in ["rs-a", "rs-b"] {
        let deps = gc.sorted_dependents(owner);
        assert_eq!(deps, [(key.clone(), "uid-p1".to_string())], "{owner}");
    }
    // A deletion takes the node out of the graph and of its owners' lists.
    delete(&mut tc, Kind::Pod, "p1");
    tc.settle(&mut [&mut gc]);
    assert!(!gc.graph.contains(p1));
    for owner in ["rs-a", "rs-b"] {
        let owner = gc.graph.find(owner).unwrap();
        assert!(!gc.graph.has_dependents(owner));
    }
}

//! Tests of the pod garbage collector on a `TestClient`: the quarantine of missing nodes, the
//! terminated-pod threshold and its order, terminating pods on out-of-service nodes,
//! unscheduled terminating pods, and the ticks it wakes for.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodSpec, PodStatus, Taint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubeplane_api::{Client, DeleteOptions, Kind, Object, ObjectKey};
use kubeplane_core::time::SimDuration;
use kubeplane_registry::testing::TestClient;

use super::*;

fn secs(s: i64) -> SimTime {
    SimTime::ZERO + SimDuration::from_secs(s)
}

fn node(name: &str, ready: bool, out_of_service: bool) -> Object {
    Object::Node(Arc::new(
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: out_of_service.then(|| {
                    vec![Taint {
                        key: TAINT_NODE_OUT_OF_SERVICE.into(),
                        effect: "NoExecute".into(),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
        .into(),
    ))
}

fn pod(name: &str, node: &str, phase: &str, created_secs: i64) -> Pod {
    let start: jiff::Timestamp = "2025-01-01T00:00:00Z".parse().unwrap();
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            creation_timestamp: Some(Time(start + jiff::SignedDuration::from_secs(created_secs))),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: (!node.is_empty()).then(|| node.to_string()),
            termination_grace_period_seconds: Some(30),
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        }),
    }
}

fn create(tc: &mut TestClient, p: Pod) {
    tc.create(Object::Pod(Arc::new(p.into()))).unwrap();
}

fn pod_exists(tc: &TestClient, name: &str) -> bool {
    tc.store.get_pod("default", name).is_some()
}

#[test]
fn pods_of_a_deleted_node_go_after_the_quarantine() {
    let mut tc = TestClient::new(1);
    let mut gc = PodGcController::default();
    tc.create(node("n1", true, false)).unwrap();
    tc.create(node("n2", true, false)).unwrap();
    create(&mut tc, pod("p1", "n1", "Running", 0));
    create(&mut tc, pod("p2", "n2", "Running", 0));
    tc.settle(&mut [&mut gc]);
    assert_eq!(gc.next_wakeup(), None, "nothing to collect: no ticks");
    tc.now = secs(5);
    tc.delete(
        &ObjectKey::new(Kind::Node, "", "n1"),
        DeleteOptions::default(),
    )
    .unwrap();
    tc.settle(&mut [&mut gc]);
    // Seen missing at the tick at 20 s, quarantined until 60 s.
    assert_eq!(gc.next_wakeup(), Some(secs(20)));
    tc.run_until(secs(59), &mut [&mut gc]);
    assert!(pod_exists(&tc, "p1"));
    // Watch the patch before the delete.
    tc.run_until(secs(60), &mut [&mut gc]);
    assert!(!pod_exists(&tc, "p1"));
    assert!(pod_exists(&tc, "p2"));
    assert_eq!(gc.next_wakeup(), None);
    assert_eq!(gc.deleted, 1);
    assert!(tc.events.is_empty(), "PodGC records no events");
}

#[test]
fn an_orphan_is_marked_failed_with_the_disruption_condition_before_its_deletion() {
    let mut tc = TestClient::new(1);
    let mut gc = PodGcController::default();
    create(&mut tc, pod("p1", "gone", "Running", 0));
    tc.settle(&mut [&mut gc]);
    tc.run_until(secs(39), &mut [&mut gc]);
    tc.store.take_events();
    tc.now = secs(40);
    gc.run(tc.now, &mut tc);
    let events = tc.store.take_events();
    assert_eq!(events.len(), 2, "a status patch, then the delete");
    let patched = events[0].object.as_pod().unwrap();
    let status = patched.status_k8s().unwrap();
    assert_eq!(status.phase.as_deref(), Some("Failed"));
    let cond = &status.conditions.as_ref().unwrap()[0];
    assert_eq!(cond.type_, CONDITION_DISRUPTION_TARGET);
    assert_eq!(cond.status, "True");
    assert_eq!(cond.reason.as_deref(), Some(REASON_DELETION_BY_POD_GC));
    assert_eq!(cond.message.as_deref(), Some(MESSAGE_NODE_GONE));
    // Grace period 0: gone at once, though bound.
    assert!(!pod_exists(&tc, "p1"));
}

#[test]
fn a_node_that_comes_back_during_the_quarantine_keeps_its_pods() {
    let mut tc = TestClient::new(1);
    let mut gc = PodGcController::default();
    create(&mut tc, pod("p1", "n1", "Running", 0));
    tc.settle(&mut [&mut gc]);
    tc.now = secs(30);
    tc.create(node("n1", true, false)).unwrap();
    tc.run_until(secs(100), &mut [&mut gc]);
    assert!(pod_exists(&tc, "p1"));
    assert_eq!(gc.deleted, 0);
    assert_eq!(gc.next_wakeup(), None);
}

#[test]
fn terminated_pods_above_the_threshold_go_evicted_first_then_oldest() {
    let mut tc = TestClient::new(1);
    let mut gc = PodGcController::new(2);
    tc.create(node("n1", true, false)).unwrap();
    create(&mut tc, pod("old", "n1", "Succeeded", -100));
    create(&mut tc, pod("young", "n1", "Failed", -10));
    create(&mut tc, pod("b-mid", "n1", "Succeeded", -50));
    create(&mut tc, pod("a-mid", "n1", "Succeeded", -50));
    let mut evicted = pod("evicted", "n1", "Failed", -1);
    evicted.status.as_mut().unwrap().reason = Some("Evicted".into());
    create(&mut tc, evicted);
    create(&mut tc, pod("running", "n1", "Running", -1000));
    tc.run_until(secs(1), &mut [&mut gc]);
    // Five terminated, threshold 2: the evicted one, then the oldest, then by name.
    for (name, kept) in [
        ("evicted", false),
        ("old", false),
        ("a-mid", false),
        ("b-mid", true),
        ("young", true),
        ("running", true),
    ] {
        assert_eq!(pod_exists(&tc, name), kept, "{name}");
    }
    assert_eq!(gc.terminated, 2);
}

#[test]
fn terminating_pods_on_an_out_of_service_node_are_force_deleted() {
    let mut tc = TestClient::new(1);
    let mut gc = PodGcController::default();
    tc.create(node("n1", false, false)).unwrap();
    create(&mut tc, pod("p1", "n1", "Running", 0));
    create(&mut tc, pod("p2", "n1", "Running", 0));
    tc.now = secs(3);
    tc.delete(
        &ObjectKey::new(Kind::Pod, "default", "p1"),
        DeleteOptions::default(),
    )
    .unwrap();
    tc.run_until(secs(30), &mut [&mut gc]);
    assert!(
        pod_exists(&tc, "p1"),
        "terminating, node not out of service"
    );
    let mut n = tc.store.get_node("n1").unwrap().as_ref().clone();
    n.spec = match node("n1", false, true) {
        Object::Node(n) => n.spec.clone(),
        _ => unreachable!(),
    };
    tc.update(Object::Node(Arc::new(n))).unwrap();
    tc.run_until(secs(39), &mut [&mut gc]);
    assert!(pod_exists(&tc, "p1"));
    tc.run_until(secs(40), &mut [&mut gc]);
    assert!(!pod_exists(&tc, "p1"));
    assert!(pod_exists(&tc, "p2"), "not terminating");
}

#[test]
fn an_unscheduled_terminating_pod_is_deleted_at_the_next_tick() {
    let mut tc = TestClient::new(1);
    let mut gc = PodGcController::default();
    let mut p = pod("p1", "", "Pending", 0);
    p.metadata.deletion_timestamp = p.metadata.creation_timestamp.clone();
    create(&mut tc, p);
    tc.now = secs(21);
    tc.settle(&mut [&mut gc]);
    assert_eq!(gc.next_wakeup(), Some(secs(40)));
    tc.run_until(secs(40), &mut [&mut gc]);
    assert!(!pod_exists(&tc, "p1"));
}

#[test]
fn ticks_are_aligned_to_the_period_and_never_repeat_an_instant() {
    let mut gc = PodGcController::default();
    gc.wake(secs(0));
    assert_eq!(gc.due, Some(secs(0)));
    gc.due = None;
    gc.last_tick = Some(secs(20));
    gc.wake(secs(20));
    assert_eq!(gc.due, Some(secs(40)));
    gc.due = None;
    gc.wake(secs(41));
    assert_eq!(gc.due, Some(secs(60)));
}

//! Tests of the ReplicaSet controller: the upstream cases of `controller_utils_test.go`
//! (sorting), `replica_set_test.go` (getPodsToDelete, expectations, slow start, adoption) and
//! `replica_set_utils_test.go` (status), plus invariants over many seeds.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use kubeplane_api::StoredReplicaSet;
use kubeplane_api::{
    ApiError, Client, Component, DeleteOptions, Kind, Object, ObjectKey, StoredPod,
};
use kubeplane_core::features::FeatureGates;
use kubeplane_core::{EventRecord, SimTime};
use kubeplane_registry::testing::TestClient;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::cache::{ByName, LabelSetId, LabelSets};
use super::ranking::{compare, get_pods_to_delete, less, log2_bucket, PodSortKey, RankContext};
use super::*;
use crate::controller_utils::POD_DELETION_COST_ANNOTATION;
use crate::controller_utils::{is_pod_active, new_controller_ref, pod_controller};
use k8s_openapi::api::apps::v1::ReplicaSetCondition;
use kubeplane_core::testing::PodBuilder;

mod cache;
mod invariants;
mod scale_down;
mod sharing;
mod status_writes;

// ----- builders ---------------------------------------------------------------------------------

fn start() -> Timestamp {
    "2025-01-01T00:00:00Z".parse().unwrap()
}

fn ago(t: Timestamp, secs: i64) -> Timestamp {
    t.checked_sub(SignedDuration::from_secs(secs)).unwrap()
}

const MONTH_SECS: i64 = 31 * 24 * 3600;
const HOUR_SECS: i64 = 3600;

/// A pending pod of the `app=web` set created at [`start`], with one container.
fn pod_builder(name: &str) -> PodBuilder {
    PodBuilder::new(name)
        .label("app", "web")
        .created(Some(start()))
        .phase("Pending")
        .image("registry.k8s.io/pause:3.9")
}

/// What only these tests build from a pod.
trait ReplicaSetPod {
    fn cost(self, cost: &str) -> Self;
    fn owned_by(self, rs: &Object) -> Self;
    fn terminating(self) -> Self;
    fn build(self) -> Pod;
    fn arc(self) -> Arc<StoredPod>;
    fn object(self) -> Object;
}

impl ReplicaSetPod for PodBuilder {
    fn cost(self, cost: &str) -> Self {
        self.annotation(POD_DELETION_COST_ANNOTATION, cost)
    }
    fn owned_by(self, rs: &Object) -> Self {
        self.owner_reference(new_controller_ref(API_VERSION, KIND, rs.meta()))
    }
    fn terminating(self) -> Self {
        self.deleted_at(start())
    }
    fn build(self) -> Pod {
        self.obj()
    }
    fn arc(self) -> Arc<StoredPod> {
        Arc::new(self.obj().into())
    }
    fn object(self) -> Object {
        Object::Pod(Arc::new(self.obj().into()))
    }
}

fn replica_set(name: &str, replicas: i32, app: &str) -> StoredReplicaSet {
    let labels: BTreeMap<String, String> = [("app".to_string(), app.to_string())].into();
    StoredReplicaSet::from_k8s(ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "c0".into(),
                        image: Some("registry.k8s.io/pause:3.9".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: None,
    })
}

fn create(client: &mut TestClient, obj: impl Into<Object>) -> Object {
    client.create(obj.into()).expect("create")
}

fn rs_object(rs: StoredReplicaSet) -> Object {
    Object::ReplicaSet(Arc::new(rs))
}

fn get_rs(client: &TestClient, name: &str) -> Arc<StoredReplicaSet> {
    match client.store.get(Kind::ReplicaSet, "default", name) {
        Some(Object::ReplicaSet(rs)) => rs.clone(),
        other => panic!("no ReplicaSet {name}: {other:?}"),
    }
}

fn set_replicas(client: &mut TestClient, name: &str, replicas: i32) {
    let mut rs = StoredReplicaSet::clone(&get_rs(client, name));
    rs.spec.as_mut().unwrap().replicas = Some(replicas);
    client.update(rs_object(rs)).unwrap();
}

fn pods_of(client: &TestClient, rs_name: &str) -> Vec<Arc<StoredPod>> {
    let uid = get_rs(client, rs_name).metadata.uid.clone();
    client
        .store
        .pods()
        .filter(|p| pod_controller(p).map(|r| Some(&r.uid)) == Some(uid.as_ref()))
        .cloned()
        .collect()
}

fn active_pods_of(client: &TestClient, rs_name: &str) -> Vec<Arc<StoredPod>> {
    pods_of(client, rs_name)
        .into_iter()
        .filter(|p| is_pod_active(p))
        .collect()
}

fn deleted_names(events: &[EventRecord]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.reason() == REASON_SUCCESSFUL_DELETE)
        .map(|e| e.message().trim_start_matches("Deleted pod: ").to_string())
        .collect()
}

fn settle(client: &mut TestClient, rsc: &mut ReplicaSetController) {
    client.settle(&mut [rsc]);
}

fn ctx_at(now: Timestamp) -> RankContext {
    RankContext {
        now: Some(now),
        pod_deletion_cost: true,
    }
}

// ----- the controller ---------------------------------------------------------------------------

/// A ReplicaSet with `costs.len()` Running+Ready pods on distinct nodes, ready and created at the
/// same instant; returns the client and controller after the initial settle.
fn ready_pods_with_costs(
    costs: &[&str],
    features: FeatureGates,
) -> (TestClient, ReplicaSetController) {
    let mut client = TestClient::new(1);
    let mut rsc = ReplicaSetController::with_features(features);
    let rs = create(
        &mut client,
        rs_object(replica_set("web", costs.len() as i32, "web")),
    );
    for (i, c) in costs.iter().enumerate() {
        let mut b = pod_builder(&format!("web-{i}"))
            .node(&format!("n{i}"))
            .ready_since(Some(ago(start(), 60)))
            .owned_by(&rs);
        if !c.is_empty() {
            b = b.cost(c);
        }
        create(&mut client, b.object());
    }
    settle(&mut client, &mut rsc);
    assert!(
        client.events.is_empty(),
        "nothing to do at first: {:?}",
        client.events
    );
    (client, rsc)
}

#[test]
fn scaling_three_ready_pods_to_two_deletes_the_lowest_deletion_cost() {
    let (mut client, mut rsc) =
        ready_pods_with_costs(&["100", "-100", "100"], FeatureGates::default());
    client.now = SimTime::from_secs(10);
    set_replicas(&mut client, "web", 2);
    settle(&mut client, &mut rsc);
    assert_eq!(deleted_names(&client.events), ["web-1"]);
    let ev = &client.events[0];
    assert_eq!(
        (ev.type_(), ev.kind(), ev.name(), ev.source(), ev.time()),
        (
            "Normal",
            "ReplicaSet",
            "web",
            CONTROLLER_NAME,
            SimTime::from_secs(10)
        )
    );
    // The explanation names the deciding rule against the first survivor.
    let rec = client
        .records
        .iter()
        .find(|r| r["kind"] == "ScaleDownDecision")
        .unwrap();
    assert_eq!(rec["victims"], serde_json::json!(["default/web-1"]));
    assert_eq!(rec["why"]["default/web-1"], "pod-deletion-cost -100 < 100");
    assert_eq!(rec["candidates"].as_array().unwrap().len(), 3);
    assert_eq!(rec["time"], 10.0);
    assert_eq!(get_rs(&client, "web").status.as_ref().unwrap().replicas, 2);
}

#[test]
fn without_the_pod_deletion_cost_gate_costs_are_ignored() {
    let mut gates = FeatureGates::default();
    gates.set("PodDeletionCost", false).unwrap();
    let (mut client, mut rsc) = ready_pods_with_costs(&["100", "-100", "100"], gates);
    set_replicas(&mut client, "web", 2);
    settle(&mut client, &mut rsc);
    // All else equal (same bucket), the smallest UID goes: uid-web-0.
    assert_eq!(deleted_names(&client.events), ["web-0"]);
}

#[test]
fn a_pending_pod_goes_before_a_low_cost_ready_one() {
    let mut client = TestClient::new(1);
    let mut rsc = ReplicaSetController::new();
    let rs = create(&mut client, rs_object(replica_set("web", 2, "web")));
    create(
        &mut client,
        pod_builder("cheap-ready")
            .node("n1")
            .ready_since(Some(start()))
            .cost("-1000")
            .owned_by(&rs)
            .object(),
    );
    create(
        &mut client,
        pod_builder("pending")
            .node("n2")
            .not_ready()
            .cost("1000")
            .owned_by(&rs)
            .object(),
    );
    settle(&mut client, &mut rsc);
    set_replicas(&mut client, "web", 1);
    settle(&mut client, &mut rsc);
    assert_eq!(deleted_names(&client.events), ["pending"]);
    let rec = client.records.last().unwrap();
    assert_eq!(rec["why"]["default/pending"], "phase Pending < Running");
}

#[test]
fn missing_pods_are_created_from_the_template_with_a_controller_reference() {
    let mut client = TestClient::new(3);
    let mut rsc = ReplicaSetController::new();
    let mut rs = replica_set("web", 10, "web");
    let tmeta = rs
        .spec
        .as_mut()
        .unwrap()
        .template
        .as_mut()
        .unwrap()
        .metadata
        .as_mut()
        .unwrap();
    tmeta.annotations = Some([("a".to_string(), "b".to_string())].into());
    let rs = create(&mut client, rs_object(rs));
    settle(&mut client, &mut rsc);
    let created: Vec<&EventRecord> = client.events_with_reason(REASON_SUCCESSFUL_CREATE);
    assert_eq!(created.len(), 10);
    let pods = pods_of(&client, "web");
    assert_eq!(pods.len(), 10);
    for (ev, pod) in created.iter().zip(&pods) {
        assert!(
            ev.message().starts_with("Created pod: web-"),
            "{}",
            ev.message()
        );
        assert_eq!(ev.source(), CONTROLLER_NAME);
        let _ = pod;
    }
    let pod = &pods[0];
    assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
    assert_eq!(pod.labels().unwrap()["app"], "web");
    assert_eq!(pod.metadata.annotations.as_ref().unwrap()["a"], "b");
    let owner = pod_controller(pod).unwrap();
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.uid.as_str(),
            owner.block_owner_deletion
        ),
        ("ReplicaSet", "web", rs.uid(), Some(true))
    );
    let status = get_rs(&client, "web").status.clone().unwrap();
    assert_eq!(status.replicas, 10);
    assert_eq!(status.fully_labeled_replicas, Some(10));
    assert_eq!(status.observed_generation, Some(1));
}

#[test]
fn creates_go_in_bursts_of_at_most_500_and_wait_for_their_watch_events() {
    let mut client = TestClient::new(3);
    let mut rsc = ReplicaSetController::new();
    create(&mut client, rs_object(replica_set("web", 1200, "web")));
    client.dispatch(&mut [&mut rsc]);
    rsc.run(client.now, &mut client);
    assert_eq!(client.store.count(Kind::Pod), 500);
    // Expectations: a second sync before the creates are observed does nothing more.
    rsc.queue.add(("default".into(), "web".into()));
    rsc.run(client.now, &mut client);
    assert_eq!(client.store.count(Kind::Pod), 500);
    let key = ("default".to_string(), "web".to_string());
    assert!(!rsc.expectations().satisfied(&key, client.now));
    settle(&mut client, &mut rsc);
    assert_eq!(client.store.count(Kind::Pod), 1200);
    assert!(rsc.expectations().satisfied(&key, client.now));
}

/// A client whose pod creates fail after `allowed` successes.
struct FailingCreates {
    inner: TestClient,
    allowed: usize,
    attempts: usize,
}

impl Client for FailingCreates {
    fn create(&mut self, obj: Object) -> Result<Object, ApiError> {
        if obj.kind() == Kind::Pod {
            self.attempts += 1;
            if self.allowed == 0 {
                return Err(ApiError::Invalid {
                    key: obj.key(),
                    message: "exceeded quota: pods".into(),
                });
            }
            self.allowed -= 1;
        }
        self.inner.create(obj)
    }
    fn explain(&self) -> bool {
        false
    }
    kubeplane_api::delegate_client!(inner: cache, clock, get, update, update_status,
        patch_pod_status, delete, evict, bind, update_scale, record_event, emit_record);
}

#[test]
fn create_failures_stop_the_slow_start_and_set_replica_failure() {
    // Upstream TestSyncReplicaSetCreateFailures: desired 100, 10 creates allowed.
    let mut inner = TestClient::new(1);
    create(&mut inner, rs_object(replica_set("web", 100, "web")));
    let mut rsc = ReplicaSetController::new();
    let events = inner.store.take_events();
    for ev in &events {
        rsc.observe(ev, SimTime::ZERO);
    }
    let mut client = FailingCreates {
        inner,
        allowed: 10,
        attempts: 0,
    };
    rsc.run(SimTime::ZERO, &mut client);
    assert_eq!(client.inner.store.count(Kind::Pod), 10);
    assert_eq!(client.attempts, 15, "batches 1+2+4+8");
    let failed = client.inner.events_with_reason(REASON_FAILED_CREATE);
    assert_eq!(failed.len(), 5);
    assert_eq!(failed[0].type_(), "Warning");
    assert!(
        failed[0].message().starts_with("Error creating: "),
        "{}",
        failed[0].message()
    );
    let status = get_rs(&client.inner, "web").status.clone().unwrap();
    let cond = get_condition(&status, CONDITION_REPLICA_FAILURE).unwrap();
    assert_eq!(cond.reason.as_deref(), Some(REASON_FAILED_CREATE));
    assert_eq!(cond.status, "True");
    // The failed key is retried after a backoff.
    assert_eq!(rsc.next_wakeup(), Some(SimTime::from_millis(5)));
    // Once creates succeed again, the condition goes away.
    client.allowed = usize::MAX;
    let mut t = SimTime::ZERO;
    for _ in 0..50 {
        let evs = client.inner.store.take_events();
        for ev in &evs {
            rsc.observe(ev, t);
        }
        match rsc.next_wakeup() {
            Some(w) => {
                t = t.max(w);
                client.inner.now = t;
                rsc.run(t, &mut client);
            }
            None => break,
        }
    }
    assert_eq!(client.inner.store.count(Kind::Pod), 100);
    let status = get_rs(&client.inner, "web").status.clone().unwrap();
    assert!(get_condition(&status, CONDITION_REPLICA_FAILURE).is_none());
}

#[test]
fn orphans_are_adopted_and_non_matching_pods_released() {
    let mut client = TestClient::new(1);
    let mut rsc = ReplicaSetController::new();
    let rs = create(&mut client, rs_object(replica_set("web", 2, "web")));
    create(&mut client, pod_builder("orphan").object());
    create(&mut client, pod_builder("owned").owned_by(&rs).object());
    settle(&mut client, &mut rsc);
    assert!(
        client.events.is_empty(),
        "the orphan is adopted instead of creating: {:?}",
        client.events
    );
    let orphan = client.store.get_pod("default", "orphan").unwrap();
    assert_eq!(pod_controller(orphan).unwrap().uid, rs.uid());

    // Relabelling a pod releases it and a replacement is created.
    let mut p = StoredPod::clone(client.store.get_pod("default", "owned").unwrap());
    p.set_labels(Some([("app".to_string(), "debug".to_string())].into()));
    client.update(Object::Pod(Arc::new(p))).unwrap();
    settle(&mut client, &mut rsc);
    let released = client.store.get_pod("default", "owned").unwrap();
    assert!(pod_controller(released).is_none());
    assert_eq!(client.events_with_reason(REASON_SUCCESSFUL_CREATE).len(), 1);
    assert_eq!(active_pods_of(&client, "web").len(), 2);
}

#[test]
fn a_replica_set_being_deleted_neither_adopts_nor_creates() {
    // Upstream TestDoNotAdoptOrCreateIfBeingDeleted.
    let mut client = TestClient::new(1);
    let mut rsc = ReplicaSetController::new();
    let mut rs = replica_set("web", 3, "web");
    rs.metadata.deletion_timestamp = Some(Time(start()));
    create(&mut client, rs_object(rs));
    create(&mut client, pod_builder("orphan").object());
    settle(&mut client, &mut rsc);
    assert!(client.events.is_empty());
    assert!(pod_controller(client.store.get_pod("default", "orphan").unwrap()).is_none());
}

#[test]
fn terminating_pods_do_not_count_and_are_replaced_at_once() {
    let mut client = TestClient::new(1);
    let mut rsc = ReplicaSetController::new();
    let rs = create(&mut client, rs_object(replica_set("web", 2, "web")));
    for i in 0..2 {
        create(
            &mut client,
            pod_builder(&format!("p{i}"))
                .node("n1")
                .ready_since(Some(start()))
                .owned_by(&rs)
                .object(),
        );
    }
    settle(&mut client, &mut rsc);
    // A graceful delete of a bound pod leaves it Terminating for 30 s.
    kubeplane_registry::client::delete(
        &mut client.store,
        &ObjectKey::new(Kind::Pod, "default", "p0"),
        &DeleteOptions::default(),
        SimTime::ZERO,
    )
    .unwrap();
    settle(&mut client, &mut rsc);
    assert!(client.store.get_pod("default", "p0").is_some());
    assert_eq!(client.events_with_reason(REASON_SUCCESSFUL_CREATE).len(), 1);
    assert_eq!(active_pods_of(&client, "web").len(), 2);
    assert_eq!(get_rs(&client, "web").status.as_ref().unwrap().replicas, 2);
}

#[test]
fn scale_down_never_touches_terminating_pods_and_counts_them_once() {
    let mut client = TestClient::new(1);
    let mut rsc = ReplicaSetController::new();
    let rs = create(&mut client, rs_object(replica_set("web", 3, "web")));
    for i in 0..3 {
        create(
            &mut client,
            pod_builder(&format!("p{i}"))
                .node("n1")
                .ready_since(Some(start()))
                .owned_by(&rs)
                .object(),
        );
    }
    create(
        &mut client,
        pod_builder("gone")
            .node("n1")
            .ready_since(Some(start()))
            .owned_by(&rs)
            .terminating()
            .object(),
    );
    settle(&mut client, &mut rsc);
    set_replicas(&mut client, "web", 1);
    settle(&mut client, &mut rsc);
    let deleted = deleted_names(&client.events);
    assert_eq!(deleted.len(), 2);
    assert!(!deleted.contains(&"gone".to_string()));
    // The deleted pods are Terminating (bound): the expectations were met by their updates.
    let key = ("default".to_string(), "web".to_string());
    assert!(rsc.expectations().satisfied(&key, client.now));
}

#[test]
fn available_replicas_wait_for_min_ready_seconds() {
    let mut client = TestClient::new(1);
    let mut rsc = ReplicaSetController::new();
    let mut rs = replica_set("web", 1, "web");
    rs.spec.as_mut().unwrap().min_ready_seconds = Some(10);
    let rs = create(&mut client, rs_object(rs));
    // Ready at t=5 s.
    create(
        &mut client,
        pod_builder("p")
            .ready_since(Some(
                start().checked_add(SignedDuration::from_secs(5)).unwrap(),
            ))
            .owned_by(&rs)
            .object(),
    );
    client.now = SimTime::from_secs(5);
    settle(&mut client, &mut rsc);
    let status = get_rs(&client, "web").status.clone().unwrap();
    assert_eq!(
        (status.ready_replicas, status.available_replicas),
        (Some(1), None)
    );
    assert_eq!(rsc.next_wakeup(), Some(SimTime::from_secs(15)));
    client.run_until(SimTime::from_secs(20), &mut [&mut rsc]);
    let status = get_rs(&client, "web").status.clone().unwrap();
    assert_eq!(status.available_replicas, Some(1));
}

#[test]
fn calculate_status_counts_labels_readiness_and_availability() {
    // Upstream TestCalculateStatus.
    let now = Time(start());
    let mut rs = replica_set("web", 1, "web");
    rs.spec
        .as_mut()
        .unwrap()
        .template
        .as_mut()
        .unwrap()
        .metadata
        .as_mut()
        .unwrap()
        .labels = Some(
        [
            ("app".to_string(), "web".to_string()),
            ("tier".to_string(), "fe".to_string()),
        ]
        .into(),
    );
    let full = pod_builder("p")
        .label("tier", "fe")
        .ready_since(Some(start()))
        .arc();
    let partial = pod_builder("p").ready_since(Some(start())).arc();
    let not_ready = pod_builder("p").label("tier", "fe").not_ready().arc();
    let s = calculate_status(&rs, std::slice::from_ref(&full), None, None, &now);
    assert_eq!(
        (
            s.replicas,
            s.fully_labeled_replicas,
            s.ready_replicas,
            s.available_replicas
        ),
        (1, Some(1), Some(1), Some(1))
    );
    let s = calculate_status(&rs, &[partial], None, None, &now);
    assert_eq!(s.fully_labeled_replicas, None);
    let s = calculate_status(&rs, &[not_ready], None, None, &now);
    assert_eq!((s.ready_replicas, s.available_replicas), (None, None));
    rs.spec.as_mut().unwrap().min_ready_seconds = Some(3600);
    let s = calculate_status(&rs, std::slice::from_ref(&full), None, None, &now);
    assert_eq!((s.ready_replicas, s.available_replicas), (Some(1), None));
    let s = calculate_status(&rs, &[full], None, Some(2), &now);
    assert_eq!(s.terminating_replicas, Some(2));
}

#[test]
fn status_conditions_follow_manage_errors() {
    // Upstream TestCalculateStatusConditions.
    let now = Time(start());
    let rs2 = replica_set("web", 2, "web");
    let one = vec![pod_builder("p").arc()];
    let three = vec![
        pod_builder("a").arc(),
        pod_builder("b").arc(),
        pod_builder("c").arc(),
    ];
    let s = calculate_status(&rs2, &one, Some("boom"), None, &now);
    assert_eq!(
        get_condition(&s, CONDITION_REPLICA_FAILURE)
            .unwrap()
            .reason
            .as_deref(),
        Some(REASON_FAILED_CREATE)
    );
    let s = calculate_status(&rs2, &three, Some("boom"), None, &now);
    let cond = get_condition(&s, CONDITION_REPLICA_FAILURE)
        .unwrap()
        .clone();
    assert_eq!(cond.reason.as_deref(), Some(REASON_FAILED_DELETE));
    assert_eq!(cond.message.as_deref(), Some("boom"));
    // An existing condition is kept as it is, and removed once there is no error.
    let mut with_cond = rs2.clone();
    with_cond.status = Some(ReplicaSetStatus {
        conditions: Some(vec![cond.clone()]),
        ..Default::default()
    });
    let s = calculate_status(&with_cond, &one, Some("other"), None, &now);
    assert_eq!(get_condition(&s, CONDITION_REPLICA_FAILURE), Some(&cond));
    let s = calculate_status(&with_cond, &one, None, None, &now);
    assert!(s.conditions.is_none());
    let s = calculate_status(&rs2, &one, None, None, &now);
    assert!(s.conditions.is_none());
}

#[test]
fn set_condition_appends_replaces_and_keeps_same_reason() {
    // Upstream TestSetCondition / TestRemoveCondition.
    let cond = |t: &str, reason: &str| ReplicaSetCondition {
        type_: t.into(),
        status: "True".into(),
        reason: Some(reason.into()),
        ..Default::default()
    };
    let mut s = ReplicaSetStatus::default();
    set_condition(&mut s, cond(CONDITION_REPLICA_FAILURE, "OtherFailure"));
    assert_eq!(s.conditions.as_ref().unwrap().len(), 1);
    set_condition(&mut s, cond("ImagePullBackOff", "x"));
    assert_eq!(s.conditions.as_ref().unwrap().len(), 2);
    set_condition(&mut s, cond(CONDITION_REPLICA_FAILURE, "AnotherFailure"));
    let cs = s.conditions.as_ref().unwrap();
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[1].reason.as_deref(), Some("AnotherFailure"));
    remove_condition(&mut s, "Absent");
    assert_eq!(s.conditions.as_ref().unwrap().len(), 2);
}

#[test]
fn related_pods_of_sibling_replica_sets_raise_the_rank() {
    // Upstream TestRelatedPodsLookup / getIndirectlyRelatedPods: siblings with the same owner
    // count, others do not, and a bare ReplicaSet has no related pods.
    let mut client = TestClient::new(1);
    let mut rsc = ReplicaSetController::new();
    let owner = ObjectMeta {
        name: Some("web".into()),
        uid: Some("owner-uid".into()),
        ..Default::default()
    };
    let mut main = replica_set("web-main", 2, "main");
    main.metadata.owner_references =
        Some(vec![new_controller_ref("apps/v1", "Deployment", &owner)]);
    let mut aux = replica_set("web-aux", 1, "aux");
    aux.metadata.owner_references = main.metadata.owner_references.clone();
    let mut stranger = replica_set("other", 2, "other");
    stranger.metadata.owner_references = Some(vec![new_controller_ref(
        "apps/v1",
        "Deployment",
        &ObjectMeta {
            name: Some("other".into()),
            uid: Some("other-uid".into()),
            ..Default::default()
        },
    )]);
    let main = create(&mut client, rs_object(main));
    let aux = create(&mut client, rs_object(aux));
    let stranger = create(&mut client, rs_object(stranger));
    let since = Some(start());
    create(
        &mut client,
        pod_builder("main-a")
            .label("app", "main")
            .node("n1")
            .ready_since(since)
            .owned_by(&main)
            .object(),
    );
    create(
        &mut client,
        pod_builder("main-b")
            .label("app", "main")
            .node("n2")
            .ready_since(since)
            .owned_by(&main)
            .object(),
    );
    create(
        &mut client,
        pod_builder("aux-a")
            .label("app", "aux")
            .node("n2")
            .ready_since(since)
            .owned_by(&aux)
            .object(),
    );
    for i in 0..2 {
        create(
            &mut client,
            pod_builder(&format!("other-{i}"))
                .label("app", "other")
                .node("n1")
                .ready_since(since)
                .owned_by(&stranger)
                .object(),
        );
    }
    settle(&mut client, &mut rsc);
    set_replicas(&mut client, "web-main", 1);
    settle(&mut client, &mut rsc);
    // main-b shares n2 with a sibling's pod (rank 2); the stranger's pods on n1 do not count.
    assert_eq!(deleted_names(&client.events), ["main-b"]);
    let rec = client.records.last().unwrap();
    assert_eq!(
        rec["why"]["default/main-b"],
        "more related pods on its node (2 > 1)"
    );
}

#[test]
fn the_pods_of_one_template_version_share_one_spec_after_creation_and_binding() {
    let mut client = TestClient::new(1);
    let mut rsc = ReplicaSetController::new();
    create(&mut client, rs_object(replica_set("web", 3, "web")));
    settle(&mut client, &mut rsc);
    let spec = |p: &Arc<StoredPod>| Arc::clone(p.spec.as_ref().expect("a spec"));
    let pods = pods_of(&client, "web");
    assert_eq!(pods.len(), 3);
    let first = spec(&pods[0]);
    assert!(pods.iter().all(|p| Arc::ptr_eq(&spec(p), &first)));
    for (i, p) in pods.iter().enumerate() {
        let (ns, name) = (
            p.metadata.namespace.as_deref().unwrap(),
            p.metadata.name.as_deref().unwrap(),
        );
        let uid = p.metadata.uid.as_deref().unwrap();
        let bound = client.bind(ns, name, uid, &format!("n{i}")).unwrap();
        let bound = bound.as_pod().unwrap();
        assert_eq!(
            kubeplane_api::PodExt::node_name(&**bound),
            Some(format!("n{i}").as_str())
        );
        assert!(
            Arc::ptr_eq(bound.spec.as_ref().unwrap(), &first),
            "binding keeps it"
        );
    }
    // A new template version gets a spec of its own, shared by its pods.
    let mut rs = StoredReplicaSet::clone(&get_rs(&client, "web"));
    let template = rs.spec.as_mut().unwrap().template.as_mut().unwrap();
    template.spec_mut().containers[0].image = Some("busybox".into());
    rs.spec.as_mut().unwrap().replicas = Some(5);
    client.update(rs_object(rs)).unwrap();
    settle(&mut client, &mut rsc);
    let pods = pods_of(&client, "web");
    assert_eq!(pods.len(), 5);
    let new: Vec<Arc<PodSpec>> = pods
        .iter()
        .map(spec)
        .filter(|s| !Arc::ptr_eq(s, &first))
        .collect();
    assert_eq!(new.len(), 2);
    assert!(Arc::ptr_eq(&new[0], &new[1]));
    assert_eq!(new[0].containers[0].image.as_deref(), Some("busybox"));
}

//! Tests of the ReplicaSet controller: the upstream cases of `controller_utils_test.go`
//! (sorting), `replica_set_test.go` (getPodsToDelete, expectations, slow start, adoption) and
//! `replica_set_utils_test.go` (status), plus invariants over many seeds.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use kubeplane_api::{ApiError, Client, Component, DeleteOptions, Kind, Object, ObjectKey};
use kubeplane_core::features::FeatureGates;
use kubeplane_core::{EventRecord, SimTime};
use kubeplane_registry::testing::TestClient;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::cache::{LabelSetId, LabelSets};
use super::ranking::{compare, get_pods_to_delete, less, log2_bucket, PodSortKey, RankContext};
use super::*;
use crate::controller_utils::POD_DELETION_COST_ANNOTATION;
use crate::controller_utils::{is_pod_active, labels, new_controller_ref};
use k8s_openapi::api::apps::v1::ReplicaSetCondition;
use kubeplane_core::testing::PodBuilder;

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
    fn arc(self) -> Arc<Pod>;
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
    fn arc(self) -> Arc<Pod> {
        Arc::new(self.obj())
    }
    fn object(self) -> Object {
        Object::Pod(Arc::new(self.obj()))
    }
}

fn replica_set(name: &str, replicas: i32, app: &str) -> ReplicaSet {
    let labels: BTreeMap<String, String> = [("app".to_string(), app.to_string())].into();
    ReplicaSet {
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
    }
}

fn create(client: &mut TestClient, obj: impl Into<Object>) -> Object {
    let now = client.now;
    client.store.create(obj.into(), now).expect("create")
}

fn rs_object(rs: ReplicaSet) -> Object {
    Object::ReplicaSet(Arc::new(rs))
}

fn get_rs(client: &TestClient, name: &str) -> Arc<ReplicaSet> {
    match client.store.get(Kind::ReplicaSet, "default", name) {
        Some(Object::ReplicaSet(rs)) => rs.clone(),
        other => panic!("no ReplicaSet {name}: {other:?}"),
    }
}

fn set_replicas(client: &mut TestClient, name: &str, replicas: i32) {
    let mut rs = ReplicaSet::clone(&get_rs(client, name));
    rs.spec.as_mut().unwrap().replicas = Some(replicas);
    let now = client.now;
    client.store.update(rs_object(rs), now).unwrap();
}

fn pods_of(client: &TestClient, rs_name: &str) -> Vec<Arc<Pod>> {
    let uid = get_rs(client, rs_name).metadata.uid.clone();
    client
        .store
        .pods()
        .filter(|p| controller_of(&p.metadata).map(|r| Some(&r.uid)) == Some(uid.as_ref()))
        .cloned()
        .collect()
}

fn active_pods_of(client: &TestClient, rs_name: &str) -> Vec<Arc<Pod>> {
    pods_of(client, rs_name)
        .into_iter()
        .filter(|p| is_pod_active(p))
        .collect()
}

fn deleted_names(events: &[EventRecord]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.reason == REASON_SUCCESSFUL_DELETE)
        .map(|e| e.message.trim_start_matches("Deleted pod: ").to_string())
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

// ----- the comparator (controller_utils_test.go) ------------------------------------------------

#[test]
fn active_pods_sort_in_the_full_upstream_order_whatever_the_input_order() {
    // Upstream TestSortingActivePods, with the ranked comparator at equal ranks.
    let now = start();
    let then = ago(now, MONTH_SECS);
    let expected = [
        pod_builder("unscheduled").not_ready(),
        pod_builder("scheduled-but-pending")
            .node("node")
            .not_ready(),
        pod_builder("unknown-phase")
            .node("node")
            .phase("Unknown")
            .not_ready(),
        pod_builder("running-but-not-ready")
            .node("node")
            .phase("Running")
            .not_ready(),
        pod_builder("running-no-last-transition-time")
            .node("node")
            .ready_since(None),
        pod_builder("running-with-last-transition-time")
            .node("node")
            .ready_since(Some(now)),
        pod_builder("running-longer-time")
            .node("node")
            .ready_since(Some(then))
            .restarts(3),
        pod_builder("lower-container-restart-count")
            .node("node")
            .ready_since(Some(then))
            .restarts(2)
            .created(Some(now)),
        pod_builder("oldest")
            .node("node")
            .ready_since(Some(then))
            .restarts(2)
            .created(Some(then)),
    ];
    let names: Vec<String> = expected
        .iter()
        .map(|b| b.as_pod().metadata.name.clone().unwrap())
        .collect();
    let pods: Vec<Arc<Pod>> = expected.into_iter().map(PodBuilder::arc).collect();
    let ctx = ctx_at(now);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for _ in 0..50 {
        let mut shuffled = pods.clone();
        shuffled.shuffle(&mut rng);
        let choice = get_pods_to_delete(&shuffled, &[], pods.len() - 1, &ctx);
        let order: Vec<String> = choice.ordered().map(|k| k.name.to_string()).collect();
        assert_eq!(order, names);
    }
}

fn key(b: &PodBuilder, rank: usize) -> PodSortKey<'_> {
    PodSortKey::new(b.as_pod(), rank)
}

#[test]
fn ranked_pairs_follow_the_upstream_table() {
    // Upstream TestSortingActivePodsWithRanks (LogarithmicScaleDown and PodDeletionCost on).
    let now = start();
    let month = ago(now, MONTH_SECS);
    let h2 = ago(now, 2 * HOUR_SECS);
    let h5 = ago(now, 5 * HOUR_SECS);
    let h8 = ago(now, 8 * HOUR_SECS);
    // Upstream's test pods have no UIDs.
    let p = |name: &str| pod_builder(name).uid("").created(None);
    let unscheduled = p("unscheduled").not_ready();
    let pending = p("pending").node("node").not_ready();
    let unknown = p("unknown-phase").node("node").phase("Unknown").not_ready();
    let not_ready = p("not-ready").node("node").phase("Running").not_ready();
    let ready_no_ltt = p("ready-no-ltt").node("node").ready_since(None);
    let ready_now = p("ready-now")
        .node("node")
        .ready_since(Some(now))
        .created(Some(now));
    let ready_then = p("ready-then")
        .node("node")
        .ready_since(Some(month))
        .created(Some(month));
    let high_restarts = p("ready-high-restarts")
        .node("node")
        .ready_since(Some(now))
        .created(Some(now))
        .restarts(9001);
    let created_then = p("ready-now-created-then")
        .node("node")
        .ready_since(Some(now))
        .created(Some(month));
    let low_cost = created_then.clone().cost("10");
    let high_cost = created_then.clone().cost("100");
    let unscheduled_5h = p("unscheduled-5h").not_ready().created(Some(h5));
    let unscheduled_8h = p("unscheduled-8h").not_ready().created(Some(h8));
    let ready_2h = p("ready-2h").ready_since(Some(h2)).created(Some(month));
    let ready_5h = p("ready-5h").ready_since(Some(h5)).created(Some(month));
    let ready_8h = p("ready-8h").ready_since(Some(h8)).created(Some(month));

    let on = ctx_at(now);
    let off = RankContext {
        pod_deletion_cost: false,
        ..on
    };
    let equivalent = [
        (&ready_now, 1, &ready_now, 1),
        (&unscheduled_5h, 1, &unscheduled_8h, 1),
        (&ready_5h, 1, &ready_8h, 1),
    ];
    for (a, ra, b, rb) in equivalent {
        let (ka, kb) = (key(a, ra), key(b, rb));
        assert!(
            !less(&ka, &kb, &on) && !less(&kb, &ka, &on),
            "{} ~ {}",
            ka.name,
            kb.name
        );
    }
    let strict = [
        (
            &unscheduled,
            1,
            &pending,
            2,
            "unscheduled(1) < pending(2)",
            on,
        ),
        (&unscheduled, 2, &pending, 1, "assignment beats rank", on),
        (&pending, 1, &unknown, 2, "pending(1) < unknown(2)", on),
        (&unknown, 1, &not_ready, 2, "unknown(1) < notReady(2)", on),
        (&not_ready, 1, &ready_no_ltt, 1, "notReady < ready", on),
        (
            &ready_no_ltt,
            1,
            &ready_now,
            1,
            "no transition time first",
            on,
        ),
        (&ready_now, 2, &ready_no_ltt, 1, "rank beats ready time", on),
        (&ready_now, 1, &ready_then, 1, "ready more recently", on),
        (
            &ready_now,
            2,
            &ready_then,
            1,
            "rank and ready time agree",
            on,
        ),
        (&high_restarts, 1, &ready_now, 1, "more restarts", on),
        (&ready_now, 2, &high_restarts, 1, "rank beats restarts", on),
        (&ready_now, 1, &created_then, 1, "newer first", on),
        (&created_then, 2, &ready_now, 1, "rank beats age", on),
        (&low_cost, 2, &high_cost, 1, "cost beats rank", on),
        (
            &high_cost,
            2,
            &low_cost,
            1,
            "without the gate rank decides",
            off,
        ),
        (&ready_2h, 1, &ready_5h, 1, "log2 buckets 42 < 44", on),
    ];
    for (a, ra, b, rb, why, ctx) in strict {
        let (ka, kb) = (key(a, ra), key(b, rb));
        assert!(less(&ka, &kb, &ctx), "{why}: {} < {}", ka.name, kb.name);
        assert!(
            !less(&kb, &ka, &ctx),
            "{why}: not {} < {}",
            kb.name,
            ka.name
        );
    }
}

#[test]
fn log2_buckets_match_the_reference_values() {
    let now = start();
    for (secs, bucket) in [
        (1, 29),
        (2 * 3600, 42),
        (5 * 3600, 44),
        (8 * 3600, 44),
        (30 * 86400, 51),
    ] {
        assert_eq!(log2_bucket(ago(now, secs), now), bucket, "{secs}s");
    }
    assert_eq!(log2_bucket(now, now), -1);
}

#[test]
fn a_same_bucket_tie_is_decided_by_uid_and_stops_there() {
    // Ready 5 h (uid b) and 8 h (uid a) ago share bucket 44: the smaller UID goes first even
    // though the other pod has more restarts.
    let now = start();
    let a = pod_builder("eight")
        .uid("a")
        .ready_since(Some(ago(now, 8 * HOUR_SECS)));
    let b = pod_builder("five")
        .uid("b")
        .ready_since(Some(ago(now, 5 * HOUR_SECS)))
        .restarts(5);
    let (ka, kb) = (key(&a, 1), key(&b, 1));
    let (ord, rule) = compare(&ka, &kb, &ctx_at(now));
    assert_eq!(ord, std::cmp::Ordering::Less);
    assert_eq!(
        rule.unwrap().to_string(),
        "same ready-time log2 bucket 44, uid a < b"
    );
}

// ----- getPodsToDelete (replica_set_test.go) ----------------------------------------------------

#[test]
fn get_pods_to_delete_follows_the_upstream_cases() {
    let now = start();
    let unscheduled_pending = pod_builder("unscheduled-pending").not_ready().arc();
    let scheduled_pending = pod_builder("scheduled-pending")
        .node("fake-node")
        .not_ready()
        .arc();
    let not_ready = pod_builder("not-ready")
        .node("fake-node")
        .phase("Running")
        .not_ready()
        .arc();
    let not_ready_2 = pod_builder("not-ready-2")
        .node("fake-node")
        .phase("Running")
        .not_ready()
        .arc();
    let ready_n1 = pod_builder("ready-n1")
        .node("fake-node-1")
        .ready_since(Some(now))
        .arc();
    let ready_n2 = pod_builder("ready-n2")
        .node("fake-node-2")
        .ready_since(Some(now))
        .arc();
    let ready_n2_other = pod_builder("ready-n2-other")
        .node("fake-node-2")
        .ready_since(Some(now))
        .arc();
    let ctx = ctx_at(now);
    let names = |pods: &[Arc<Pod>], related: Option<&[Arc<Pod>]>, diff: usize| -> Vec<String> {
        get_pods_to_delete(pods, related.unwrap_or(pods), diff, &ctx)
            .victims
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect()
    };
    assert!(names(&[], None, 0).is_empty(), "no pods, diff 0");
    assert_eq!(
        names(&[ready_n1.clone(), not_ready.clone()], None, 2),
        ["ready-n1", "not-ready"],
        "diff == len keeps the input order"
    );
    assert_eq!(
        names(&[ready_n1.clone(), not_ready.clone()], None, 1),
        ["not-ready"]
    );
    assert_eq!(
        names(
            &[scheduled_pending.clone(), unscheduled_pending.clone()],
            None,
            1
        ),
        ["unscheduled-pending"]
    );
    assert_eq!(
        names(
            &[ready_n1.clone(), not_ready.clone(), not_ready_2.clone()],
            None,
            2
        ),
        ["not-ready", "not-ready-2"]
    );
    assert_eq!(
        names(
            &[ready_n1.clone(), ready_n2.clone()],
            Some(&[ready_n1.clone(), ready_n2.clone(), ready_n2_other]),
            1
        ),
        ["ready-n2"],
        "rank 2 beats rank 1"
    );
    assert_eq!(
        names(&[scheduled_pending.clone(), not_ready.clone()], None, 1),
        ["scheduled-pending"]
    );
    assert_eq!(
        names(
            &[
                ready_n1,
                ready_n2,
                not_ready,
                scheduled_pending,
                unscheduled_pending
            ],
            None,
            3
        ),
        ["unscheduled-pending", "scheduled-pending", "not-ready"]
    );
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
        (ev.type_, ev.kind, ev.name.as_str(), ev.source, ev.time),
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
            ev.message.starts_with("Created pod: web-"),
            "{}",
            ev.message
        );
        assert_eq!(ev.source, CONTROLLER_NAME);
        let _ = pod;
    }
    let pod = &pods[0];
    assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
    assert_eq!(pod.metadata.labels.as_ref().unwrap()["app"], "web");
    assert_eq!(pod.metadata.annotations.as_ref().unwrap()["a"], "b");
    let owner = controller_of(&pod.metadata).unwrap();
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
    fn cache(&self) -> &dyn kubeplane_api::Cache {
        self.inner.cache()
    }
    fn clock(&self) -> kubeplane_api::Clock {
        self.inner.clock()
    }
    fn get(&mut self, key: &ObjectKey) -> Result<Object, ApiError> {
        self.inner.get(key)
    }
    fn update_status(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.inner.update_status(obj)
    }
    fn patch_pod_status(
        &mut self,
        ns: &str,
        name: &str,
        uid: &str,
        patch: &mut dyn FnMut(&mut k8s_openapi::api::core::v1::PodStatus),
    ) -> Result<Object, ApiError> {
        self.inner.patch_pod_status(ns, name, uid, patch)
    }
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
    fn update(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.inner.update(obj)
    }
    fn delete(&mut self, key: &ObjectKey, opts: DeleteOptions) -> Result<Option<Object>, ApiError> {
        self.inner.delete(key, opts)
    }
    fn evict(&mut self, ns: &str, name: &str, opts: DeleteOptions) -> Result<(), ApiError> {
        self.inner.evict(ns, name, opts)
    }
    fn bind(&mut self, ns: &str, name: &str, uid: &str, node: &str) -> Result<Object, ApiError> {
        self.inner.bind(ns, name, uid, node)
    }
    fn record_event(&mut self, ev: EventRecord) {
        self.inner.record_event(ev)
    }
    fn explain(&self) -> bool {
        false
    }
    fn emit_record(&mut self, record: serde_json::Value) {
        self.inner.emit_record(record)
    }
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
    assert_eq!(failed[0].type_, "Warning");
    assert!(
        failed[0].message.starts_with("Error creating: "),
        "{}",
        failed[0].message
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
    assert_eq!(controller_of(&orphan.metadata).unwrap().uid, rs.uid());

    // Relabelling a pod releases it and a replacement is created.
    let mut p = Pod::clone(client.store.get_pod("default", "owned").unwrap());
    p.metadata.labels = Some([("app".to_string(), "debug".to_string())].into());
    let now = client.now;
    client.store.update(Object::Pod(Arc::new(p)), now).unwrap();
    settle(&mut client, &mut rsc);
    let released = client.store.get_pod("default", "owned").unwrap();
    assert!(controller_of(&released.metadata).is_none());
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
    assert!(controller_of(&client.store.get_pod("default", "orphan").unwrap().metadata).is_none());
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
    client
        .store
        .delete(
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

// ----- the cache: label sets, cached pods, and what syncs compute from them ---------------------

fn label_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A cache holding `pods` (all in `default`, with distinct names).
fn cache_of(pods: &[Arc<Pod>]) -> Cache {
    let mut cache = Cache::default();
    for p in pods {
        cache.replace_pod(&ns_name(&p.metadata), Some(p));
    }
    cache
}

/// The cached version of the pod `default/name`.
fn cached<'a>(cache: &'a Cache, name: &str) -> &'a CachedPod {
    &cache.pods.namespace("default").unwrap()[name]
}

/// The cached versions of `pods`, in their order.
fn cached_all<'a>(cache: &'a Cache, pods: &[Arc<Pod>]) -> Vec<&'a CachedPod> {
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
fn assert_cache_holds(cache: &Cache, current: &BTreeMap<String, Arc<Pod>>) {
    let cached: Vec<(&String, &CachedPod)> = cache
        .pods
        .namespace("default")
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(cached.len(), current.len());
    let mut users: BTreeMap<LabelSetId, usize> = BTreeMap::new();
    for (name, cp) in cached {
        let pod = &current[name];
        assert!(Arc::ptr_eq(&cp.pod, pod), "{name}");
        assert_eq!(cache.label_sets.get(cp.labels), Some(labels(&pod.metadata)));
        assert_eq!(cp.facts, ranking::SortFacts::of(pod));
        let indexed = match controller_of(&pod.metadata) {
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
        assert!(indexed.is_some_and(|i| Arc::ptr_eq(&i.pod, pod)), "{name}");
        *users.entry(cp.labels).or_default() += 1;
    }
    let indexed: usize = cache
        .pods_by_controller
        .values()
        .flat_map(|g| g.0.iter().map(|(_, pods)| pods))
        .chain([&cache.orphan_pods])
        .flat_map(|m| m.0.values())
        .map(BTreeMap::len)
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
    let mut current: BTreeMap<String, Arc<Pod>> = BTreeMap::new();
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
fn random_ranked_pod(rng: &mut ChaCha8Rng, name: &str, now: Timestamp) -> Arc<Pod> {
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
    let names = |pods: &[&Pod]| -> Vec<String> {
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect()
    };
    let keys = |choice: &ranking::ScaleDownChoice| -> Vec<String> {
        choice.ordered().map(|k| format!("{k:?}")).collect()
    };
    for seed in 0..30 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let pods: Vec<Arc<Pod>> = (0..40)
            .map(|i| random_ranked_pod(&mut rng, &format!("p{i}"), now))
            .collect();
        let mut related: Vec<Arc<Pod>> = pods
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
    fn related_pods(cache: &Cache, rs: &ReplicaSet, pods: &[Arc<Pod>]) -> Vec<Arc<Pod>> {
        let Some(c) = controller_of(&rs.metadata) else {
            return Vec::new();
        };
        let mut by_name: Vec<&Arc<Pod>> = pods.iter().collect();
        by_name.sort_by_key(|p| p.metadata.name.clone());
        let mut seen = std::collections::BTreeSet::new();
        let mut related = Vec::new();
        for key in &cache.rs_by_controller_uid[&c.uid] {
            let selector = rs_selector(&cache.replica_sets[key]).unwrap();
            for pod in &by_name {
                if selector.matches(labels(&pod.metadata))
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
        let pods: Vec<Arc<Pod>> = (0..60)
            .map(|i| {
                let pod = random_ranked_pod(&mut rng, &format!("p{i:02}"), now);
                let mut b = PodBuilder::from(Pod::clone(&pod))
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
                let l = labels(&p.metadata);
                l.get("app").is_some_and(|v| v == "web") || l.contains_key("tier")
            })
            .count();
        let counted: usize = cache.related_active_pods_per_node(&main).values().sum();
        deduplicated |= counted < selected;
    }
    assert!(deduplicated, "some pods were counted once for two reasons");
}

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
                    let pods: Vec<Arc<Pod>> = client.store.pods().cloned().collect();
                    if let Some(p) = pods.get(rng.random_range(0..pods.len().max(1))) {
                        let mut p = Pod::clone(p);
                        let t = client.store.timestamp(client.now).0;
                        p.status = pod_builder("x").ready_since(Some(t)).build().status;
                        let now = client.now;
                        client
                            .store
                            .update_status(Object::Pod(Arc::new(p)), now)
                            .unwrap();
                    }
                }
                3 => {
                    // Someone deletes a random pod.
                    let pods: Vec<Arc<Pod>> = client.store.pods().cloned().collect();
                    if let Some(p) = pods.get(rng.random_range(0..pods.len().max(1))) {
                        let key = ObjectKey::new(
                            Kind::Pod,
                            "default",
                            p.metadata.name.as_deref().unwrap(),
                        );
                        let now = client.now;
                        client
                            .store
                            .delete(&key, &DeleteOptions::now(), now)
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
                            .filter(|p| is_pod_active(p) && controller_of(&p.metadata).is_none())
                            .filter(|p| {
                                labels(&p.metadata).get("app").map(String::as_str) == Some(*n)
                            })
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
                        .filter(|e| e.reason == REASON_SUCCESSFUL_DELETE && e.name == n)
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
                controller_of(&stray.metadata).is_some(),
                case.keeps_controller[i],
                "{what}"
            );
        }
    }
}

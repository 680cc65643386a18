//! Tests of the Job controller over the registry's test client, with the facts of upstream's
//! `job_controller_test.go` (`TestControllerSyncJob`, `TestSyncJobPastDeadline`,
//! `TestJobPodFailurePolicy`, `TestJobBackoffForOnFailure`, ...) and of the TTL-after-finished
//! controller's tests.

use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStatus, PodCondition, PodStatus,
};
use kubeplane_api::{Client, DynamicObject, Kind, Object, StoredPod};
use kubeplane_core::time::SimDuration;
use kubeplane_registry::testing::TestClient;
use serde_json::{json, Value};

use super::indexed_job_utils::COMPLETION_INDEX_ANNOTATION;
use super::util::*;
use super::*;
use crate::ttl_after_finished::TtlAfterFinishedController;

fn job_type() -> &'static kubeplane_api::types::ResourceType {
    kubeplane_api::types::builtin("batch/v1", "Job").unwrap()
}

struct Harness {
    client: TestClient,
    jc: JobController,
    ttl: TtlAfterFinishedController,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            client: TestClient::new(7),
            jc: JobController::new(),
            ttl: TtlAfterFinishedController::new(),
        }
    }

    /// Creates Job `j` with this spec (its template gets one container).
    fn create_job(&mut self, mut spec: Value) {
        let template = spec
            .as_object_mut()
            .unwrap()
            .entry("template")
            .or_insert(json!({}));
        let t = template.as_object_mut().unwrap();
        let pod_spec = t.entry("spec").or_insert(json!({}));
        pod_spec["containers"] = json!([{"name": "main", "image": "busybox"}]);
        if pod_spec.get("restartPolicy").is_none() {
            pod_spec["restartPolicy"] = json!("Never");
        }
        let manifest = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "default"},
            "spec": spec,
        });
        let obj = DynamicObject::from_value(job_type(), &manifest).unwrap();
        self.client.create(Object::Other(Arc::new(obj))).unwrap();
        self.settle();
    }

    fn settle(&mut self) {
        self.client.settle(&mut [&mut self.jc, &mut self.ttl]);
    }

    /// Moves the clock `secs` on, running every wakeup on the way.
    fn advance(&mut self, secs: i64) {
        let until = self.client.now + SimDuration::from_secs(secs);
        self.client
            .run_until(until, &mut [&mut self.jc, &mut self.ttl]);
    }

    fn job(&self) -> Option<Job> {
        let obj = self
            .client
            .store
            .get(Kind::Other(job_type()), "default", "j")?;
        job_from_object(obj)
    }

    fn status_of(&self) -> k8s_openapi::api::batch::v1::JobStatus {
        self.job().unwrap().status.unwrap_or_default()
    }

    fn pods(&self) -> Vec<Arc<StoredPod>> {
        let mut pods: Vec<Arc<StoredPod>> = self.client.store.pods().cloned().collect();
        pods.sort_by_key(|p| p.metadata.name.clone());
        pods
    }

    fn active_pods(&self) -> Vec<Arc<StoredPod>> {
        self.pods()
            .into_iter()
            .filter(|p| crate::controller_utils::is_pod_active(p))
            .collect()
    }

    /// Ends a pod as the kubelet would: phase and one terminated container.
    fn end_pod(&mut self, pod: &StoredPod, exit_code: i32) {
        let mut p = StoredPod::clone(pod);
        let ts = self.client.clock().timestamp(self.client.now);
        p.set_status(Some(PodStatus {
            phase: Some(
                if exit_code == 0 {
                    "Succeeded"
                } else {
                    "Failed"
                }
                .into(),
            ),
            container_statuses: Some(vec![ContainerStatus {
                name: "main".into(),
                state: Some(ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        exit_code,
                        finished_at: Some(ts.clone()),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "False".into(),
                last_transition_time: Some(ts),
                ..Default::default()
            }]),
            ..Default::default()
        }));
        p.metadata.resource_version = None;
        self.client.update_status(Object::Pod(Arc::new(p))).unwrap();
    }

    fn end_active(&mut self, n: usize, exit_code: i32) {
        for pod in self.active_pods().into_iter().take(n) {
            self.end_pod(&pod, exit_code);
        }
    }

    fn condition_types(&self) -> Vec<(String, String)> {
        self.status_of()
            .conditions
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.type_, c.reason.unwrap_or_default()))
            .collect()
    }

    fn reasons(&self) -> Vec<&str> {
        self.client.events.iter().map(|e| e.reason()).collect()
    }
}

fn pair(t: &str, r: &str) -> (String, String) {
    (t.to_string(), r.to_string())
}

#[test]
fn a_new_job_creates_parallelism_pods_with_the_tracking_finalizer() {
    let cases: &[(&str, Value, usize)] = &[
        (
            "Parallelism below completions",
            json!({"parallelism": 2, "completions": 5}),
            2,
        ),
        (
            "Completions below parallelism",
            json!({"parallelism": 5, "completions": 3}),
            3,
        ),
        ("Neither set runs one pod", json!({}), 1),
        (
            "A work queue runs parallelism pods",
            json!({"parallelism": 4}),
            4,
        ),
        (
            "A suspended job runs none",
            json!({"parallelism": 2, "suspend": true}),
            0,
        ),
    ];
    for (name, spec, want) in cases {
        let mut h = Harness::new();
        h.create_job(spec.clone());
        let pods = h.active_pods();
        assert_eq!(pods.len(), *want, "{name}");
        for p in &pods {
            assert!(has_tracking_finalizer(p), "{name}");
            assert_eq!(
                crate::controller_utils::pod_labels(p)[JOB_NAME_LABEL],
                "j",
                "{name}"
            );
        }
        assert_eq!(h.status_of().active.unwrap_or(0), *want as i32, "{name}");
    }
}

#[test]
fn succeeded_pods_are_counted_and_the_job_completes_at_completions() {
    let mut h = Harness::new();
    h.create_job(json!({"parallelism": 2, "completions": 3}));
    h.end_active(2, 0);
    h.advance(1);
    let s = h.status_of();
    assert_eq!(s.succeeded, Some(2));
    assert_eq!(h.active_pods().len(), 1);
    assert!(h
        .pods()
        .iter()
        .filter(|p| !crate::controller_utils::is_pod_active(p))
        .all(|p| !has_tracking_finalizer(p)));
    h.end_active(1, 0);
    h.advance(1);
    let s = h.status_of();
    assert_eq!(s.succeeded, Some(3));
    assert!(s.completion_time.is_some());
    assert_eq!(
        h.condition_types(),
        [
            pair("SuccessCriteriaMet", "CompletionsReached"),
            pair("Complete", "CompletionsReached")
        ]
    );
    assert_eq!(h.reasons().iter().filter(|r| **r == "Completed").count(), 1);
}

#[test]
fn a_work_queue_job_completes_once_a_pod_succeeded_and_none_runs() {
    let mut h = Harness::new();
    h.create_job(json!({"parallelism": 2}));
    h.end_active(1, 0);
    h.advance(1);
    // No replacement after a success, and not complete while one pod runs.
    assert_eq!(h.active_pods().len(), 1);
    assert!(!is_job_finished(&h.job().unwrap()));
    h.end_active(1, 0);
    h.advance(1);
    assert!(is_job_finished(&h.job().unwrap()));
    assert_eq!(h.status_of().succeeded, Some(2));
}

#[test]
fn failed_pods_are_replaced_after_the_backoff_and_the_limit_fails_the_job() {
    let mut h = Harness::new();
    h.create_job(json!({"backoffLimit": 1}));
    h.end_active(1, 1);
    h.advance(1);
    assert_eq!(h.status_of().failed, Some(1));
    // 10 s after the failure, not before.
    assert!(h.active_pods().is_empty());
    h.advance(8);
    assert!(h.active_pods().is_empty());
    h.advance(1);
    assert_eq!(h.active_pods().len(), 1);
    h.end_active(1, 1);
    h.advance(1);
    assert_eq!(
        h.condition_types(),
        [
            pair("FailureTarget", "BackoffLimitExceeded"),
            pair("Failed", "BackoffLimitExceeded")
        ]
    );
    let ev = h.client.events_with_reason("BackoffLimitExceeded");
    assert_eq!(
        ev[0].message(),
        "Job has reached the specified backoff limit"
    );
    assert_eq!(ev[0].type_(), "Warning");
}

#[test]
fn the_active_deadline_deletes_pods_and_fails_the_job_once_they_are_gone() {
    let mut h = Harness::new();
    h.create_job(json!({"activeDeadlineSeconds": 10, "parallelism": 2, "completions": 2}));
    h.advance(10);
    let deleted = h.client.events_with_reason("SuccessfulDelete").len();
    assert_eq!(deleted, 2);
    // The pods are terminating: FailureTarget now, Failed after they are gone.
    assert_eq!(
        h.condition_types(),
        [pair("FailureTarget", "DeadlineExceeded")]
    );
    assert_eq!(h.status_of().terminating, Some(2));
    for p in h.pods() {
        let key = kubeplane_api::ObjectKey::new(
            Kind::Pod,
            "default",
            p.metadata.name.as_deref().unwrap(),
        );
        h.client
            .delete(&key, kubeplane_api::DeleteOptions::now())
            .unwrap();
    }
    h.advance(1);
    assert_eq!(
        h.condition_types(),
        [
            pair("FailureTarget", "DeadlineExceeded"),
            pair("Failed", "DeadlineExceeded")
        ]
    );
    assert_eq!(h.status_of().failed, Some(2));
}

#[test]
fn a_fail_job_rule_fails_the_job_at_the_first_matching_pod() {
    let mut h = Harness::new();
    h.create_job(json!({
        "parallelism": 2, "completions": 2,
        "podFailurePolicy": {"rules": [
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [5]}}
        ]}
    }));
    let pods = h.active_pods();
    h.end_pod(&pods[0], 3);
    h.advance(1);
    // Ignored: not counted, and the Job goes on.
    assert_eq!(h.status_of().failed, None);
    assert!(!is_job_finished(&h.job().unwrap()));
    h.end_pod(&pods[1], 5);
    h.advance(1);
    let msg = format!(
        "Container main for pod default/{} failed with exit code 5 matching FailJob rule at index 1",
        pods[1].metadata.name.as_deref().unwrap()
    );
    let conds = h.status_of().conditions.unwrap();
    assert_eq!(conds.last().unwrap().type_, "Failed");
    assert_eq!(conds.last().unwrap().message.as_deref(), Some(msg.as_str()));
    assert_eq!(
        h.client.events_with_reason("PodFailurePolicy")[0].message(),
        msg
    );
}

#[test]
fn suspending_deletes_active_pods_and_resuming_restarts_them() {
    let mut h = Harness::new();
    h.create_job(json!({"parallelism": 2, "completions": 4, "suspend": true}));
    assert!(h.active_pods().is_empty());
    assert_eq!(h.condition_types(), [pair("Suspended", "JobSuspended")]);
    assert!(h.status_of().start_time.is_none());
    assert_eq!(
        h.client.events_with_reason("Suspended")[0].message(),
        "Job suspended"
    );
    // Resume: the spec changes (a new generation).
    let obj = h
        .client
        .store
        .get(Kind::Other(job_type()), "default", "j")
        .unwrap()
        .clone();
    let mut v = obj.to_json();
    v["spec"]["suspend"] = json!(false);
    v["metadata"]["generation"] = json!(2);
    let o = DynamicObject::from_value(job_type(), &v).unwrap();
    h.client.update(Object::Other(Arc::new(o))).unwrap();
    h.settle();
    assert_eq!(h.active_pods().len(), 2);
    assert_eq!(h.condition_types(), [pair("Suspended", "JobResumed")]);
    assert!(h.status_of().start_time.is_some());
    assert_eq!(h.client.events_with_reason("Resumed").len(), 1);
}

#[test]
fn an_indexed_job_gives_each_pod_its_index_and_reports_completed_indexes() {
    let mut h = Harness::new();
    h.create_job(json!({"parallelism": 2, "completions": 3, "completionMode": "Indexed"}));
    let pods = h.active_pods();
    let mut indexes: Vec<String> = pods
        .iter()
        .map(|p| p.metadata.annotations.as_ref().unwrap()[COMPLETION_INDEX_ANNOTATION].clone())
        .collect();
    indexes.sort();
    assert_eq!(indexes, ["0", "1"]);
    let p0 = pods
        .iter()
        .find(|p| p.metadata.annotations.as_ref().unwrap()[COMPLETION_INDEX_ANNOTATION] == "0")
        .unwrap()
        .clone();
    assert_eq!(p0.spec.as_ref().unwrap().hostname.as_deref(), Some("j-0"));
    assert!(p0.metadata.name.as_deref().unwrap().starts_with("j-0-"));
    h.end_pod(&p0, 0);
    h.advance(1);
    assert_eq!(h.status_of().completed_indexes.as_deref(), Some("0"));
    // Index 2 is the next pending one.
    let created: Vec<_> = h
        .active_pods()
        .iter()
        .map(|p| p.metadata.annotations.as_ref().unwrap()[COMPLETION_INDEX_ANNOTATION].clone())
        .collect();
    assert!(created.contains(&"2".to_string()));
    h.end_active(2, 0);
    h.advance(1);
    assert_eq!(h.status_of().completed_indexes.as_deref(), Some("0-2"));
    assert!(is_job_finished(&h.job().unwrap()));
}

#[test]
fn a_success_policy_completes_an_indexed_job_early() {
    let mut h = Harness::new();
    h.create_job(json!({
        "parallelism": 3, "completions": 3, "completionMode": "Indexed",
        "successPolicy": {"rules": [{"succeededIndexes": "0"}]}
    }));
    let p0 = h
        .active_pods()
        .into_iter()
        .find(|p| p.metadata.annotations.as_ref().unwrap()[COMPLETION_INDEX_ANNOTATION] == "0")
        .unwrap();
    h.end_pod(&p0, 0);
    h.advance(1);
    // The other pods are deleted; Complete waits until they are gone.
    assert_eq!(
        h.condition_types(),
        [pair("SuccessCriteriaMet", "SuccessPolicy")]
    );
    for p in h
        .pods()
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
    {
        let key = kubeplane_api::ObjectKey::new(
            Kind::Pod,
            "default",
            p.metadata.name.as_deref().unwrap(),
        );
        h.client
            .delete(&key, kubeplane_api::DeleteOptions::now())
            .unwrap();
    }
    h.advance(1);
    let conds = h.status_of().conditions.unwrap();
    assert_eq!(conds[1].type_, "Complete");
    assert_eq!(
        conds[1].message.as_deref(),
        Some("Matched rules at index 0")
    );
}

#[test]
fn a_finished_job_with_a_ttl_is_deleted_when_it_expires() {
    let mut h = Harness::new();
    h.create_job(json!({"ttlSecondsAfterFinished": 30}));
    h.end_active(1, 0);
    h.advance(1);
    assert!(is_job_finished(&h.job().unwrap()));
    h.advance(29);
    assert!(h.job().is_some());
    h.advance(1);
    let job = h.client.store.get(Kind::Other(job_type()), "default", "j");
    // Foreground deletion: marked, kept for the garbage collector.
    assert!(job.is_none_or(|j| j.meta().deletion_timestamp.is_some()));
    let why = h.decisions("Delete");
    assert_eq!(why.len(), 1);
    assert_eq!(why[0]["reason"], "TTLAfterFinished");
    assert_eq!(why[0]["ttlSecondsAfterFinished"], 30);
}

fn index_of(p: &StoredPod) -> String {
    p.metadata.annotations.as_ref().unwrap()[COMPLETION_INDEX_ANNOTATION].clone()
}

fn failure_count_of(p: &StoredPod) -> Option<String> {
    let a = p.metadata.annotations.as_ref().unwrap();
    a.get(indexed_job_utils::INDEX_FAILURE_COUNT_ANNOTATION)
        .cloned()
}

impl Harness {
    fn active_of_index(&self, ix: &str) -> Vec<Arc<StoredPod>> {
        self.active_pods()
            .into_iter()
            .filter(|p| index_of(p) == ix)
            .collect()
    }

    /// The `JobDecision` records with this decision.
    fn decisions(&self, decision: &str) -> Vec<&Value> {
        self.client
            .records
            .iter()
            .filter(|r| r["kind"] == "JobDecision" && r["decision"] == decision)
            .collect()
    }
}

#[test]
fn backoff_limit_per_index_retries_an_index_after_its_own_backoff_then_fails_it() {
    let mut h = Harness::new();
    h.create_job(json!({
        "parallelism": 2, "completions": 2, "completionMode": "Indexed",
        "backoffLimitPerIndex": 1
    }));
    let first = h.active_of_index("0").remove(0);
    assert_eq!(failure_count_of(&first).as_deref(), Some("0"));
    let start = h.client.now;
    h.end_pod(&first, 1);
    h.advance(1);
    // Not replaced during the index's backoff; the failed pod keeps its finalizer until then.
    assert!(h.active_of_index("0").is_empty());
    let kept = h
        .client
        .store
        .get_pod("default", first.metadata.name.as_deref().unwrap());
    assert!(kept.is_some_and(|p| has_tracking_finalizer(p)));
    assert_eq!(h.status_of().failed_indexes.as_deref(), Some(""));
    let wait = h.decisions("WaitBackoff");
    assert_eq!(wait.len(), 1);
    assert_eq!(wait[0]["index"], 0);
    assert_eq!(
        wait[0]["at"],
        (start + SimDuration::from_secs(10)).as_secs_f64()
    );
    h.advance(9);
    let second = h.active_of_index("0").remove(0);
    assert_eq!(failure_count_of(&second).as_deref(), Some("1"));
    h.advance(1);
    assert_eq!(h.status_of().failed, Some(1));
    // Its second failure is one more than backoffLimitPerIndex: the index fails, the Job goes on.
    h.end_pod(&second, 1);
    h.advance(1);
    assert_eq!(h.status_of().failed_indexes.as_deref(), Some("0"));
    assert!(!is_job_finished(&h.job().unwrap()));
    let failed = h.decisions("IndexFailed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["reason"], "BackoffLimitPerIndexExceeded");
    h.end_active(1, 0);
    h.advance(1);
    let status = h.status_of();
    assert_eq!(status.completed_indexes.as_deref(), Some("1"));
    assert_eq!(
        h.condition_types(),
        [
            pair("FailureTarget", "FailedIndexes"),
            pair("Failed", "FailedIndexes")
        ]
    );
    assert_eq!(h.client.events_with_reason("FailedIndexes").len(), 1);
    let why = h.decisions("Failed");
    assert_eq!(why[0]["reason"], "FailedIndexes");
    assert_eq!(why[0]["failedIndexes"], "0");
}

#[test]
fn more_failed_indexes_than_max_failed_indexes_fail_the_job() {
    let mut h = Harness::new();
    h.create_job(json!({
        "parallelism": 4, "completions": 4, "completionMode": "Indexed",
        "backoffLimitPerIndex": 0, "maxFailedIndexes": 1
    }));
    h.end_active(1, 1);
    h.advance(1);
    assert_eq!(h.status_of().failed_indexes.as_deref(), Some("0"));
    assert!(h.condition_types().is_empty());
    assert_eq!(h.active_pods().len(), 3);
    h.end_active(1, 1);
    h.advance(1);
    assert_eq!(h.status_of().failed_indexes.as_deref(), Some("0,1"));
    assert_eq!(
        h.condition_types(),
        [pair("FailureTarget", "MaxFailedIndexesExceeded")]
    );
    let message = h.status_of().conditions.unwrap()[0].message.clone();
    assert_eq!(
        message.as_deref(),
        Some("Job has exceeded the specified maximal number of failed indexes")
    );
}

#[test]
fn a_fail_index_rule_fails_the_index_at_its_first_failure() {
    let mut h = Harness::new();
    h.create_job(json!({
        "parallelism": 2, "completions": 2, "completionMode": "Indexed",
        "backoffLimitPerIndex": 3,
        "podFailurePolicy": {"rules": [
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}}
        ]}
    }));
    let p0 = h.active_of_index("0").remove(0);
    h.end_pod(&p0, 42);
    h.advance(30);
    assert_eq!(h.status_of().failed_indexes.as_deref(), Some("0"));
    assert!(h.active_of_index("0").is_empty());
    let failed = h.decisions("IndexFailed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["reason"], "FailIndex");
    // Another exit code counts against backoffLimitPerIndex: that index is retried.
    let p1 = h.active_of_index("1").remove(0);
    h.end_pod(&p1, 1);
    h.advance(11);
    let retry = h.active_of_index("1");
    assert_eq!(retry.len(), 1);
    assert_eq!(failure_count_of(&retry[0]).as_deref(), Some("1"));
}

#[test]
fn a_job_failure_and_a_backoff_wait_are_explained() {
    let mut h = Harness::new();
    h.create_job(json!({"backoffLimit": 1}));
    h.end_active(1, 1);
    h.advance(1);
    let wait = h.decisions("WaitBackoff");
    assert_eq!(wait.len(), 1);
    assert_eq!(wait[0]["reason"], "PodFailureBackoff");
    assert_eq!(wait[0]["failures"], 1);
    h.advance(10);
    h.end_active(1, 1);
    h.advance(1);
    let why = h.decisions("Failed");
    assert_eq!(why.len(), 1);
    assert_eq!(why[0]["reason"], "BackoffLimitExceeded");
    assert_eq!(
        why[0]["message"],
        "Job has reached the specified backoff limit: 2 failed pod(s), more than backoffLimit 1"
    );
}

/// A bare pod with `labels`, controlled by `controller` (kind, UID) when given.
fn foreign_pod(name: &str, labels: Value, controller: Option<(&str, &str)>) -> Object {
    let mut meta = json!({"name": name, "namespace": "default", "labels": labels});
    if let Some((kind, uid)) = controller {
        meta["ownerReferences"] = json!([{
            "apiVersion": "apps/v1", "kind": kind, "name": "owner", "uid": uid,
            "controller": true,
        }]);
    }
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    });
    Object::Pod(Arc::new(
        serde_json::from_value::<kubeplane_api::StoredPod>(pod).unwrap(),
    ))
}

#[test]
fn pods_of_other_controllers_are_not_filed_until_they_are_orphaned_and_then_adopted() {
    let mut h = Harness::new();
    let labels = json!({"app": "batch"});
    let rs_pod = foreign_pod("rs-pod", labels.clone(), Some(("ReplicaSet", "rs-uid")));
    h.client.create(rs_pod).unwrap();
    h.client
        .create(foreign_pod("bare", json!({"app": "other"}), None))
        .unwrap();
    h.settle();
    assert!(
        h.jc.pods_by_owner.is_empty(),
        "a ReplicaSet's pod is not filed"
    );
    let orphans: Vec<&String> = h.jc.orphans.values().flat_map(|m| m.keys()).collect();
    assert_eq!(
        orphans,
        ["bare"],
        "only the bare pod is an adoption candidate"
    );
    // The ReplicaSet lets the pod go: it becomes an orphan the Job adopts.
    let mut p = StoredPod::clone(h.client.store.get_pod("default", "rs-pod").unwrap());
    p.set_owner_references(None);
    p.metadata.resource_version = None;
    h.client.update(Object::Pod(Arc::new(p))).unwrap();
    h.settle();
    assert!(h.jc.orphans["default"].contains_key("rs-pod"));
    h.create_job(json!({
        "parallelism": 1, "completions": 1, "manualSelector": true,
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}},
    }));
    let adopted = h.client.store.get_pod("default", "rs-pod").unwrap();
    let r = crate::controller_utils::pod_controller(adopted).unwrap();
    assert_eq!((r.kind.as_str(), r.name.as_str()), ("Job", "j"));
    assert!(has_tracking_finalizer(adopted));
    assert_eq!(
        h.active_pods().len(),
        2,
        "the bare pod and the adopted one: none created"
    );
    assert_eq!(h.status_of().active, Some(1));
    assert!(
        !h.jc.orphans["default"].contains_key("rs-pod"),
        "filed under the Job"
    );
    let uid = h.job().unwrap().metadata.uid.unwrap();
    assert_eq!(h.jc.pods_by_owner[&uid].len(), 1, "the adopted pod");
}

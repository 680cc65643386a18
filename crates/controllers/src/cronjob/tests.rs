//! Tests of the CronJob controller over the registry's test client, with the facts of
//! upstream's `cronjob_controllerv2_test.go` (`TestControllerV2SyncCronJob`: concurrency
//! policies, suspend, starting deadlines, time zones) and `utils_test.go`.

use std::sync::Arc;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use kubeplane_api::{Client, DynamicObject, Kind, Object};
use kubeplane_core::time::SimDuration;
use kubeplane_registry::testing::TestClient;
use serde_json::{json, Value};

use super::*;

fn ty(kind: &str) -> &'static kubeplane_api::types::ResourceType {
    kubeplane_api::types::builtin("batch/v1", kind).unwrap()
}

struct Harness {
    client: TestClient,
    cc: CronJobController,
}

impl Harness {
    /// A CronJob `cj` with this spec (a job template is added), created at 2025-01-01 00:00:00.
    fn new(mut spec: Value) -> Harness {
        spec["jobTemplate"] = json!({"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
        let manifest = json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "cj", "namespace": "default"}, "spec": spec});
        let mut h = Harness {
            client: TestClient::new(3),
            cc: CronJobController::new(),
        };
        let obj = DynamicObject::from_value(ty("CronJob"), &manifest).unwrap();
        h.client.create(Object::Other(Arc::new(obj))).unwrap();
        h.client.settle(&mut [&mut h.cc]);
        h
    }

    fn advance(&mut self, secs: i64) {
        let until = self.client.now + SimDuration::from_secs(secs);
        self.client.run_until(until, &mut [&mut self.cc]);
    }

    fn jobs(&self) -> Vec<Job> {
        let mut v: Vec<Job> = self
            .client
            .store
            .list(Kind::Other(ty("Job")))
            .filter_map(crate::job::util::job_from_object)
            .collect();
        v.sort_by_key(|j| j.metadata.name.clone());
        v
    }

    fn cronjob(&self) -> CronJob {
        let o = self
            .client
            .store
            .get(Kind::Other(ty("CronJob")), "default", "cj")
            .unwrap();
        cronjob_from_object(o).unwrap()
    }

    /// Marks a Job finished with a Complete or Failed condition at the current instant.
    fn finish(&mut self, name: &str, complete: bool) {
        let o = self
            .client
            .store
            .get(Kind::Other(ty("Job")), "default", name)
            .unwrap()
            .clone();
        let mut v = o.to_json();
        let now = self.client.clock().timestamp(self.client.now);
        let t = serde_json::to_value(&now).unwrap();
        let type_ = if complete { "Complete" } else { "Failed" };
        v["status"] = json!({"conditions": [{"type": type_, "status": "True", "lastTransitionTime": t}],
            "startTime": t});
        if complete {
            v["status"]["completionTime"] = t;
        }
        let d = DynamicObject::from_value(ty("Job"), &v).unwrap();
        self.client
            .update_status(Object::Other(Arc::new(d)))
            .unwrap();
        self.client.settle(&mut [&mut self.cc]);
    }

    fn reasons(&self) -> Vec<String> {
        self.client
            .events
            .iter()
            .map(|e| e.reason().to_string())
            .collect()
    }
}

#[test]
fn a_job_is_created_at_each_scheduled_time_and_listed_as_active() {
    let mut h = Harness::new(json!({"schedule": "* * * * *"}));
    assert!(h.jobs().is_empty());
    h.advance(60);
    // The requeue lands 100 ms after the scheduled minute.
    assert!(h.jobs().is_empty());
    h.advance(1);
    let jobs = h.jobs();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].metadata.name.as_deref(), Some("cj-28928161"));
    let ann = jobs[0].metadata.annotations.as_ref().unwrap();
    assert_eq!(ann[SCHEDULED_TIMESTAMP_ANNOTATION], "2025-01-01T00:01:00Z");
    let status = h.cronjob().status.unwrap();
    assert_eq!(
        status.active.unwrap()[0].name.as_deref(),
        Some("cj-28928161")
    );
    assert_eq!(
        status.last_schedule_time.unwrap().0.to_string(),
        "2025-01-01T00:01:00Z"
    );
    let ev = h.client.events_with_reason("SuccessfulCreate");
    assert_eq!(ev[0].message(), "Created job cj-28928161");
    assert_eq!(
        ev[0].time(),
        kubeplane_core::SimTime::ZERO + SimDuration::from_millis(60_100)
    );
}

#[test]
fn concurrency_policies_decide_what_happens_to_a_running_job() {
    let cases: &[(&str, &str, usize, &str)] = &[
        ("Allow runs both", "Allow", 2, "SuccessfulCreate"),
        ("Forbid skips the second", "Forbid", 1, "JobAlreadyActive"),
        (
            "Replace deletes the first",
            "Replace",
            1,
            "SuccessfulDelete",
        ),
    ];
    for (name, policy, jobs, reason) in cases {
        let mut h = Harness::new(json!({"schedule": "* * * * *", "concurrencyPolicy": policy}));
        h.advance(121);
        assert_eq!(h.jobs().len(), *jobs, "{name}");
        assert!(h.reasons().iter().any(|r| r == reason), "{name}");
        let active = h.cronjob().status.unwrap().active.unwrap_or_default();
        assert_eq!(active.len(), *jobs, "{name}");
    }
}

#[test]
fn a_finished_job_leaves_the_active_list_and_sets_the_last_successful_time() {
    let mut h = Harness::new(json!({"schedule": "* * * * *", "concurrencyPolicy": "Forbid"}));
    h.advance(61);
    h.finish("cj-28928161", true);
    let status = h.cronjob().status.unwrap();
    assert!(status.active.is_none());
    assert!(status.last_successful_time.is_some());
    let saw = h.client.events_with_reason("SawCompletedJob");
    assert_eq!(
        saw[0].message(),
        "Saw completed job: cj-28928161, condition: Complete"
    );
}

#[test]
fn history_limits_delete_the_oldest_finished_jobs() {
    let mut h = Harness::new(json!({"schedule": "* * * * *",
        "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1}));
    h.advance(61);
    h.finish("cj-28928161", true);
    h.advance(60);
    h.finish("cj-28928162", true);
    let names: Vec<_> = h
        .jobs()
        .into_iter()
        .map(|j| j.metadata.name.unwrap())
        .collect();
    assert_eq!(names, ["cj-28928162"]);
    assert_eq!(
        h.client.events_with_reason("SuccessfulDelete")[0].message(),
        "Deleted job cj-28928161"
    );
}

#[test]
fn schedules_that_cannot_run_are_reported_and_create_nothing() {
    let cases: &[(&str, Value, &str, &str)] = &[
        ("Suspended", json!({"schedule": "* * * * *", "suspend": true}), "", ""),
        (
            "A TZ prefix is refused",
            json!({"schedule": "TZ=UTC * * * * *"}),
            "UnsupportedSchedule",
            "CRON_TZ or TZ used in schedule \"TZ=UTC * * * * *\" is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
        ),
        (
            "An unknown time zone",
            json!({"schedule": "* * * * *", "timeZone": "Mars/Olympus"}),
            "UnknownTimeZone",
            "invalid timeZone: \"Mars/Olympus\": unknown time zone Mars/Olympus",
        ),
        (
            "An unparseable schedule",
            json!({"schedule": "61 * * * *"}),
            "UnparseableSchedule",
            "unparseable schedule: \"61 * * * *\" : end of range (61) above maximum (59): 61",
        ),
        (
            // Unmet times older than now - startingDeadlineSeconds are not looked at, and with 0
            // none is left by the time the sync runs (100 ms later).
            "A starting deadline of zero never starts a job",
            json!({"schedule": "* * * * *", "startingDeadlineSeconds": 0}),
            "",
            "",
        ),
    ];
    for (name, spec, reason, message) in cases {
        let mut h = Harness::new(spec.clone());
        h.advance(61);
        assert!(h.jobs().is_empty(), "{name}");
        if !reason.is_empty() {
            let ev = h.client.events_with_reason(reason);
            assert_eq!(ev[0].message(), *message, "{name}");
        }
    }
}

#[test]
fn a_time_zone_moves_the_activations() {
    // 09:00 in Tokyo is 00:00 UTC: the first run of "0 9 * * *" is at 2025-01-02T00:00:00Z.
    let mut h = Harness::new(json!({"schedule": "0 9 * * *", "timeZone": "Asia/Tokyo"}));
    h.advance(24 * 3600 - 1);
    assert!(h.jobs().is_empty());
    h.advance(2);
    let jobs = h.jobs();
    assert_eq!(jobs.len(), 1);
    let ann = jobs[0].metadata.annotations.as_ref().unwrap();
    assert_eq!(
        ann[SCHEDULED_TIMESTAMP_ANNOTATION],
        "2025-01-02T09:00:00+09:00"
    );
}

#[test]
fn skipped_runs_and_deleted_jobs_are_explained() {
    let decisions = |h: &Harness| -> Vec<(String, String)> {
        h.client
            .records
            .iter()
            .filter(|r| r["kind"] == "CronJobDecision")
            .map(|r| {
                (
                    r["decision"].as_str().unwrap().to_string(),
                    r["reason"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let pair = |d: &str, r: &str| (d.to_string(), r.to_string());
    let cases: &[(&str, &str, (String, String))] = &[
        (
            "Forbid skips a run",
            "Forbid",
            pair("Skip", "ConcurrencyPolicyForbid"),
        ),
        (
            "Replace deletes the active Job",
            "Replace",
            pair("Replace", "ConcurrencyPolicyReplace"),
        ),
    ];
    for (name, policy, want) in cases {
        let mut h = Harness::new(json!({"schedule": "* * * * *", "concurrencyPolicy": policy}));
        h.advance(121);
        assert_eq!(decisions(&h), std::slice::from_ref(want), "{name}");
    }
    let h = Harness::new(json!({"schedule": "* * * * *", "concurrencyPolicy": "Forbid"}));
    assert!(decisions(&h).is_empty(), "Nothing to explain before a run");
    let mut h = Harness::new(json!({"schedule": "* * * * *",
        "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1}));
    h.advance(61);
    h.finish("cj-28928161", true);
    h.advance(60);
    h.finish("cj-28928162", true);
    let history: Vec<_> = h
        .client
        .records
        .iter()
        .filter(|r| r["reason"] == "HistoryLimit")
        .collect();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0]["job"], "cj-28928161");
    assert_eq!(history[0]["successfulJobsHistoryLimit"], 1);
}

#[test]
fn a_run_missed_past_the_starting_deadline_is_explained() {
    let mut h = Harness::new(json!({"schedule": "* * * * *", "suspend": true,
        "startingDeadlineSeconds": 10}));
    h.advance(150);
    let stored = h
        .client
        .store
        .get(Kind::Other(ty("CronJob")), "default", "cj")
        .unwrap();
    let Object::Other(o) = stored else {
        panic!("a CronJob is stored as Other")
    };
    let mut o = DynamicObject::clone(o);
    o.fields.get_mut("spec").unwrap()["suspend"] = json!(false);
    h.client.update(Object::Other(Arc::new(o))).unwrap();
    h.advance(1);
    // 00:02:00 is 30 s late at 00:02:30: past the deadline, skipped; nothing was created.
    assert!(h.jobs().is_empty());
    let skipped: Vec<_> = h
        .client
        .records
        .iter()
        .filter(|r| r["reason"] == "MissedStartingDeadline")
        .collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0]["scheduled"], "2025-01-01T00:02:00Z");
    h.advance(30);
    assert_eq!(h.jobs().len(), 1, "the next run starts on time");
}

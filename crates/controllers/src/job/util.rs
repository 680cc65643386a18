//! Job helpers (upstream `pkg/controller/job/util/utils.go` and the Job's API defaults from
//! `pkg/apis/batch/v1/defaults.go`): reading a stored Job, whether it finished, its conditions.
//!
//! kubeplane's registry stores Jobs as written (they are [`Kind::Other`]), so the API server's
//! defaults and its generated selector are applied here, when the controller reads a Job.
//!
//! [`Kind::Other`]: kubeplane_api::Kind::Other

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kubeplane_api::{DynamicObject, Object};

/// The label the API server's generated selector matches (`batch.kubernetes.io/controller-uid`).
pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
/// The label with the Job's name that the API server adds to the pod template.
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// The legacy forms of both labels, still added by the API server.
pub const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
pub const LEGACY_JOB_NAME_LABEL: &str = "job-name";

/// The `batch.kubernetes.io/job-tracking` finalizer on every pod a Job controller tracks.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

pub const COND_COMPLETE: &str = "Complete";
pub const COND_FAILED: &str = "Failed";
pub const COND_SUSPENDED: &str = "Suspended";
pub const COND_FAILURE_TARGET: &str = "FailureTarget";
pub const COND_SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";

pub const REASON_BACKOFF_LIMIT_EXCEEDED: &str = "BackoffLimitExceeded";
pub const REASON_DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
pub const REASON_POD_FAILURE_POLICY: &str = "PodFailurePolicy";
pub const REASON_SUCCESS_POLICY: &str = "SuccessPolicy";
pub const REASON_COMPLETIONS_REACHED: &str = "CompletionsReached";
pub const REASON_FAILED_INDEXES: &str = "FailedIndexes";
pub const REASON_MAX_FAILED_INDEXES_EXCEEDED: &str = "MaxFailedIndexesExceeded";

/// Reads a stored Job (a [`DynamicObject`]) into the typed Job with the API server's defaults.
pub fn job_from_object(obj: &Object) -> Option<Job> {
    let Object::Other(o) = obj else {
        return None;
    };
    if o.type_.kind != "Job" || o.type_.group != "batch" {
        return None;
    }
    let mut job: Job = serde_json::from_value(obj.to_json()).ok()?;
    set_defaults(&mut job);
    Some(job)
}

/// Upstream `SetDefaults_Job` and the strategy's generated selector (`manualSelector` unset):
/// parallelism and completions 1 when both are unset, parallelism 1, backoffLimit 6,
/// completionMode NonIndexed, suspend false, podReplacementPolicy Failed with a pod failure
/// policy and TerminatingOrFailed without, onPodConditions status True.
pub fn set_defaults(job: &mut Job) {
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let spec = job.spec.get_or_insert_with(JobSpec::default);
    if spec.completions.is_none() && spec.parallelism.is_none() {
        spec.completions = Some(1);
    }
    spec.parallelism.get_or_insert(1);
    if spec.backoff_limit.is_none() {
        spec.backoff_limit = Some(if spec.backoff_limit_per_index.is_some() {
            i32::MAX
        } else {
            6
        });
    }
    spec.completion_mode
        .get_or_insert_with(|| "NonIndexed".to_string());
    spec.suspend.get_or_insert(false);
    if spec.pod_replacement_policy.is_none() {
        spec.pod_replacement_policy = Some(if spec.pod_failure_policy.is_some() {
            "Failed".into()
        } else {
            "TerminatingOrFailed".into()
        });
    }
    if let Some(pfp) = spec.pod_failure_policy.as_mut() {
        for rule in &mut pfp.rules {
            for pattern in rule.on_pod_conditions.iter_mut().flatten() {
                if pattern.status.is_empty() {
                    pattern.status = "True".into();
                }
            }
        }
    }
    if spec.manual_selector != Some(true) {
        let labels = generated_labels(&uid, &name);
        let meta = spec.template.metadata.get_or_insert_with(Default::default);
        let template_labels = meta.labels.get_or_insert_with(BTreeMap::new);
        for (k, v) in &labels {
            template_labels
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        if spec.selector.is_none() {
            spec.selector = Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    CONTROLLER_UID_LABEL.to_string(),
                    uid.clone(),
                )])),
                ..Default::default()
            });
        }
    }
}

/// The labels the API server adds to a Job's pod template.
fn generated_labels(uid: &str, name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (CONTROLLER_UID_LABEL.to_string(), uid.to_string()),
        (JOB_NAME_LABEL.to_string(), name.to_string()),
        (LEGACY_CONTROLLER_UID_LABEL.to_string(), uid.to_string()),
        (LEGACY_JOB_NAME_LABEL.to_string(), name.to_string()),
    ])
}

/// The stored object with its `status` replaced by the Job's.
pub fn with_status(stored: &DynamicObject, job: &Job) -> Object {
    let mut o = stored.clone();
    match job
        .status
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
    {
        Some(v) => o.fields.insert("status".into(), v),
        None => o.fields.remove("status"),
    };
    o.metadata.resource_version = stored.metadata.resource_version.clone();
    Object::Other(Arc::new(o))
}

pub fn conditions(job: &Job) -> &[JobCondition] {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[])
}

/// The condition of a type, if the Job has it.
pub fn find_condition<'a>(job: &'a Job, type_: &str) -> Option<&'a JobCondition> {
    conditions(job).iter().find(|c| c.type_ == type_)
}

fn has_true(job: &Job, type_: &str) -> bool {
    find_condition(job, type_).is_some_and(|c| c.status == "True")
}

/// Upstream `IsJobFinished`: a true Complete or Failed condition.
pub fn is_job_finished(job: &Job) -> bool {
    finished_condition(job).is_some()
}

/// The true Complete or Failed condition (upstream `FinishedCondition`).
pub fn finished_condition(job: &Job) -> Option<&JobCondition> {
    conditions(job)
        .iter()
        .find(|c| (c.type_ == COND_COMPLETE || c.type_ == COND_FAILED) && c.status == "True")
}

/// A true SuccessCriteriaMet condition.
pub fn success_criteria_met(job: &Job) -> Option<&JobCondition> {
    find_condition(job, COND_SUCCESS_CRITERIA_MET).filter(|c| c.status == "True")
}

pub fn failure_target(job: &Job) -> bool {
    has_true(job, COND_FAILURE_TARGET)
}

pub fn spec(job: &Job) -> &JobSpec {
    job.spec.as_ref().expect("defaulted Job has a spec")
}

pub fn is_suspended(job: &Job) -> bool {
    spec(job).suspend == Some(true)
}

pub fn is_indexed(job: &Job) -> bool {
    spec(job).completion_mode.as_deref() == Some("Indexed")
}

/// Failed pods only are replaced (`podReplacementPolicy: Failed`, the default with a pod
/// failure policy); otherwise terminating pods are replaced at once.
pub fn only_replace_failed_pods(job: &Job) -> bool {
    spec(job).pod_replacement_policy.as_deref() == Some("Failed")
        || spec(job).pod_failure_policy.is_some()
}

/// A new condition at `now` (upstream `newCondition`).
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &Time,
) -> JobCondition {
    JobCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()).filter(|r: &String| !r.is_empty()),
        message: Some(message.into()).filter(|m: &String| !m.is_empty()),
        last_probe_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    }
}

/// Upstream `ensureJobConditionStatus`: updates a condition of the type when its status,
/// reason or message differ, adds one unless the new status is False. Whether it changed.
pub fn ensure_condition(
    list: &mut Vec<JobCondition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &Time,
) -> bool {
    if let Some(c) = list.iter_mut().find(|c| c.type_ == type_) {
        let same = c.status == status
            && c.reason.as_deref().unwrap_or("") == reason
            && c.message.as_deref().unwrap_or("") == message;
        if same {
            return false;
        }
        *c = new_condition(type_, status, reason, message, now);
        return true;
    }
    if status == "False" {
        return false;
    }
    list.push(new_condition(type_, status, reason, message, now));
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobStatus;

    /// Conditions as (type, status) pairs.
    type Conds<'a> = &'a [(&'a str, &'a str)];

    fn job_with(conds: Conds) -> Job {
        Job {
            status: Some(JobStatus {
                conditions: Some(
                    conds
                        .iter()
                        .map(|(t, s)| JobCondition {
                            type_: t.to_string(),
                            status: s.to_string(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_job_is_finished_only_with_a_true_complete_or_failed_condition() {
        let cases: &[(&str, Conds, bool)] = &[
            ("No conditions", &[], false),
            ("Complete true", &[("Complete", "True")], true),
            ("Failed true", &[("Failed", "True")], true),
            ("Complete false", &[("Complete", "False")], false),
            ("Failed unknown", &[("Failed", "Unknown")], false),
            ("Only a failure target", &[("FailureTarget", "True")], false),
            (
                "Suspended then complete",
                &[("Suspended", "False"), ("Complete", "True")],
                true,
            ),
        ];
        for (name, conds, want) in cases {
            assert_eq!(is_job_finished(&job_with(conds)), *want, "{name}");
        }
    }

    #[test]
    fn defaults_follow_the_api_server() {
        let mut job = Job::default();
        job.metadata.uid = Some("u1".into());
        job.metadata.name = Some("pi".into());
        set_defaults(&mut job);
        let s = spec(&job);
        assert_eq!(s.completions, Some(1));
        assert_eq!(s.parallelism, Some(1));
        assert_eq!(s.backoff_limit, Some(6));
        assert_eq!(s.completion_mode.as_deref(), Some("NonIndexed"));
        assert_eq!(
            s.pod_replacement_policy.as_deref(),
            Some("TerminatingOrFailed")
        );
        let labels = s
            .template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .as_ref()
            .unwrap();
        assert_eq!(labels[CONTROLLER_UID_LABEL], "u1");
        assert_eq!(labels[JOB_NAME_LABEL], "pi");
        // Parallelism alone leaves completions unset (a work queue Job).
        let mut job = Job {
            spec: Some(JobSpec {
                parallelism: Some(3),
                ..Default::default()
            }),
            ..Default::default()
        };
        set_defaults(&mut job);
        assert_eq!(spec(&job).completions, None);
    }

    #[test]
    fn ensure_condition_adds_updates_and_never_adds_a_false_one() {
        let now = Time(jiff::Timestamp::UNIX_EPOCH);
        let mut list = Vec::new();
        assert!(!ensure_condition(
            &mut list,
            "Suspended",
            "False",
            "JobResumed",
            "Job resumed",
            &now
        ));
        assert!(list.is_empty());
        assert!(ensure_condition(
            &mut list,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
            &now
        ));
        assert!(!ensure_condition(
            &mut list,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
            &now
        ));
        assert!(ensure_condition(
            &mut list,
            "Suspended",
            "False",
            "JobResumed",
            "Job resumed",
            &now
        ));
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].status, "False");
    }
}

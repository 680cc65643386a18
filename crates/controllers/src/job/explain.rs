//! The Job controller's explanation records (`--explain`): one `JobDecision` record where a
//! user asks "why" about a Job: why it failed (`Failed`, with the failure condition's reason
//! and what reached the limit), why failed pods are not replaced yet (`WaitBackoff`, until
//! when), and why an index of an Indexed Job with `backoffLimitPerIndex` failed
//! (`IndexFailed`). The TTL-after-finished controller writes the same kind of record when it
//! deletes a Job ([`ttl_deleted`]).
//!
//! The shape is the one of the other controllers' records: `time`, `kind`, the object's
//! `namespace` and `name`, `decision`, `reason`, a one-line `message` (the table prints it),
//! `at` when the decision names an instant, and the facts behind it.

use k8s_openapi::api::batch::v1::Job;
use kubeplane_api::Clock;
use kubeplane_api::StoredPod;
use kubeplane_core::SimTime;
use serde_json::{json, Value};

use super::indexed_job_utils::{index_failure_count, IndexFailure};
use super::sync::JobCtx;
use super::util::*;
use super::CONTROLLER_NAME;
use crate::controller_utils::ns_name;

/// The record's kind.
pub const KIND: &str = "JobDecision";

fn record(ctx: &JobCtx, decision: &str, reason: &str, message: String) -> Value {
    crate::explain::record(
        KIND,
        CONTROLLER_NAME,
        ctx.now,
        &ctx.key,
        decision,
        reason,
        message,
    )
}

fn pod_name(pod: &StoredPod) -> String {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    format!("{ns}/{}", pod.metadata.name.as_deref().unwrap_or(""))
}

/// Why no pod is created before `until`: the pod failure backoff of the Job, or of `index`.
pub(super) fn backoff(ctx: &JobCtx, until: SimTime, index: Option<i64>) -> Value {
    let (message, failures, last_pod) = match index {
        None => {
            let n = ctx.new_backoff.failures_after_last_success;
            let message = format!(
                "failed pods are not replaced before {until}: {n} pod failure(s) since the last \
                 success, and the backoff is 10s after the first failure, doubled for each \
                 further one (at most 10m0s), counted from the last"
            );
            (message, n, None)
        }
        Some(ix) => {
            let last = ctx.delayed_deletion.get(&ix);
            let n = last.map_or(0, |p| {
                super::indexed_job_utils::index_absolute_failure_count(p) + 1
            });
            let message = format!(
                "index {ix} is not retried before {until}: it failed {n} time(s) (the last \
                 failed pod is {}), and each index backs off on its own: 10s after its first \
                 failure, doubled for each further one (at most 10m0s)",
                last.map(|p| pod_name(p)).unwrap_or_default()
            );
            (message, n, last.map(|p| pod_name(p)))
        }
    };
    let mut r = record(ctx, "WaitBackoff", "PodFailureBackoff", message);
    r["at"] = json!(until.as_secs_f64());
    r["failures"] = json!(failures);
    if let Some(ix) = index {
        r["index"] = json!(ix);
        r["pod"] = json!(last_pod);
    }
    r
}

/// Why an index failed: a FailIndex rule, or more failures than `backoffLimitPerIndex`.
pub(super) fn index_failed(ctx: &JobCtx, index: i64, pod: &StoredPod, why: IndexFailure) -> Value {
    let failures = index_failure_count(pod) + 1;
    let limit = spec(&ctx.job).backoff_limit_per_index.unwrap_or(0);
    let (reason, message) = match why {
        IndexFailure::FailIndexRule => (
            "FailIndex",
            format!(
                "index {index} failed and is not retried: pod {} matched a FailIndex rule of the \
                 pod failure policy",
                pod_name(pod)
            ),
        ),
        IndexFailure::BackoffLimit => (
            "BackoffLimitPerIndexExceeded",
            format!(
                "index {index} failed and is not retried: pod {} was its failure number \
                 {failures}, more than backoffLimitPerIndex {limit}",
                pod_name(pod)
            ),
        ),
    };
    let mut r = record(ctx, "IndexFailed", reason, message);
    r["index"] = json!(index);
    r["pod"] = json!(pod_name(pod));
    r["failures"] = json!(failures);
    r["backoffLimitPerIndex"] = json!(limit);
    r
}

/// Why the Job failed: its Failed condition, and what reached which limit.
pub(super) fn failed(ctx: &JobCtx, reason: &str, message: &str, clock: &Clock) -> Value {
    let job = &ctx.job;
    let status = job.status.clone().unwrap_or_default();
    let s = spec(job);
    let mut r = record(ctx, "Failed", reason, String::new());
    let detail = match reason {
        REASON_BACKOFF_LIMIT_EXCEEDED => {
            let failed = status.failed.unwrap_or(0);
            let limit = s.backoff_limit.unwrap_or(6);
            r["failed"] = json!(failed);
            r["backoffLimit"] = json!(limit);
            if failed > limit {
                format!("{failed} failed pod(s), more than backoffLimit {limit}")
            } else {
                format!(
                    "the container restarts of its pods reached backoffLimit {limit} \
                     (restartPolicy OnFailure)"
                )
            }
        }
        REASON_DEADLINE_EXCEEDED => deadline_detail(job, clock, &mut r),
        REASON_POD_FAILURE_POLICY => {
            "a rule of the pod failure policy with action FailJob matched a failed pod".into()
        }
        REASON_FAILED_INDEXES | REASON_MAX_FAILED_INDEXES_EXCEEDED => {
            indexes_detail(reason, job, &mut r)
        }
        _ => String::new(),
    };
    r["message"] = json!(if detail.is_empty() {
        message.to_string()
    } else {
        format!("{message}: {detail}")
    });
    r
}

fn deadline_detail(job: &Job, clock: &Clock, r: &mut Value) -> String {
    let secs = spec(job).active_deadline_seconds.unwrap_or(0);
    r["activeDeadlineSeconds"] = json!(secs);
    let start = job.status.as_ref().and_then(|s| s.start_time.as_ref());
    match start.map(|t| clock.instant(t)) {
        Some(start) => {
            r["startTime"] = json!(start.as_secs_f64());
            let deadline = start + kubeplane_core::time::SimDuration::from_secs(secs);
            r["at"] = json!(deadline.as_secs_f64());
            format!("active since {start}, its activeDeadlineSeconds {secs} ran out at {deadline}")
        }
        None => format!("activeDeadlineSeconds {secs}"),
    }
}

fn indexes_detail(reason: &str, job: &Job, r: &mut Value) -> String {
    let status = job.status.clone().unwrap_or_default();
    let failed = status.failed_indexes.unwrap_or_default();
    let completed = status.completed_indexes.unwrap_or_default();
    let completions = spec(job).completions.unwrap_or(0);
    let n_failed =
        super::indexed_job_utils::OrderedIntervals::parse(&failed, completions.into()).total();
    r["failedIndexes"] = json!(failed);
    r["completedIndexes"] = json!(completed);
    if reason == REASON_MAX_FAILED_INDEXES_EXCEEDED {
        let max = spec(job).max_failed_indexes.unwrap_or(0);
        r["maxFailedIndexes"] = json!(max);
        return format!("{n_failed} failed index(es) ({failed}), more than maxFailedIndexes {max}");
    }
    let succeeded = if completed.is_empty() {
        "no index succeeded".to_string()
    } else {
        format!("indexes {completed} succeeded")
    };
    format!(
        "every one of its {completions} indexes finished: indexes {failed} failed (each \
         reached backoffLimitPerIndex or a FailIndex rule) and {succeeded}"
    )
}

/// Why the TTL-after-finished controller deleted a finished Job.
pub(crate) fn ttl_deleted(
    now: SimTime,
    job: &Job,
    finished: SimTime,
    ttl: i32,
    controller: &str,
) -> Value {
    let cond = finished_condition(job);
    let type_ = cond.map_or("", |c| c.type_.as_str());
    let expired = finished + kubeplane_core::time::SimDuration::from_secs(i64::from(ttl));
    let message = format!(
        "the Job finished ({type_}) at {finished} and its ttlSecondsAfterFinished {ttl} ran out \
         at {expired}: deleted with its pods (foreground propagation)"
    );
    let key = ns_name(&job.metadata);
    let mut r = crate::explain::record(
        KIND,
        controller,
        now,
        &key,
        "Delete",
        "TTLAfterFinished",
        message,
    );
    r["finished"] = json!(finished.as_secs_f64());
    r["ttlSecondsAfterFinished"] = json!(ttl);
    r
}

//! Counting finished pods (upstream `trackJobStatusAndRemoveFinalizers` and its helpers in
//! `job_controller.go`): a finished pod's UID goes to `status.uncountedTerminatedPods`, that
//! status is written, the pod's tracking finalizer is removed, and only then is it counted in
//! `succeeded` or `failed` and dropped from the uncounted list. The terminal condition is added
//! once nothing is uncounted and no pod is terminating.

use kubeplane_api::StoredPod;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kubeplane_api::{ApiError, Client, Object};
use kubeplane_core::EventRecord;

use super::indexed_job_utils::{
    add_index_failure_count_annotations, generate_name_with_index, has_backoff_limit_per_index,
    indexed_template,
};
use super::pod_failure_policy::match_pod_failure_policy;
use super::sync::{pod_phase_is, JobCtx};
use super::util::*;
use super::{has_tracking_finalizer, JobController, CONTROLLER_NAME, KIND, MAX_UNCOUNTED_PODS};
use crate::controller_utils::{new_controller_ref, ns_name};

/// Upstream `isPodFailed`: Failed, or (unless only failed pods are replaced) being deleted
/// without having succeeded.
pub(super) fn is_pod_failed(p: &StoredPod, job: &Job) -> bool {
    if pod_phase_is(p, "Failed") {
        return true;
    }
    if only_replace_failed_pods(job) {
        return false;
    }
    p.metadata.deletion_timestamp.is_some() && !pod_phase_is(p, "Succeeded")
}

/// Removes the tracking finalizer from the current version of a pod (upstream's patch). A pod
/// that is gone counts as done.
pub(super) fn remove_tracking_finalizer(
    client: &mut dyn Client,
    pod: &StoredPod,
) -> Result<(), ApiError> {
    let (ns, name) = ns_name(&pod.metadata);
    let Some(fresh) = client.cache().get_pod(&ns, &name).cloned() else {
        return Ok(());
    };
    if fresh.metadata.uid != pod.metadata.uid || !has_tracking_finalizer(&fresh) {
        return Ok(());
    }
    let mut p = StoredPod::clone(&fresh);
    if let Some(f) = p.metadata.finalizers.as_mut() {
        f.retain(|f| f != JOB_TRACKING_FINALIZER);
        if f.is_empty() {
            p.metadata.finalizers = None;
        }
    }
    p.metadata.resource_version = None;
    match client.update(Object::Pod(Arc::new(p))) {
        Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates one pod from the Job's template (upstream `CreatePodsWithGenerateName` with the
/// tracking finalizer, and for Indexed Jobs the index annotation, label, hostname and
/// environment), with `SuccessfulCreate`/`FailedCreate` events.
pub(super) fn create_pod(
    ctx: &JobCtx,
    index: Option<i64>,
    client: &mut dyn Client,
) -> Result<(), String> {
    let (ns, name) = ctx.key.clone();
    let mut template = spec(&ctx.job).template.clone();
    let generate_name = match index {
        Some(ix) => {
            indexed_template(&mut template, &name, ix);
            if has_backoff_limit_per_index(&ctx.job) {
                let replaced = ctx.delayed_deletion.get(&ix).map(|p| p.as_ref());
                add_index_failure_count_annotations(&mut template, &ctx.job, replaced);
            }
            generate_name_with_index(&name, ix)
        }
        None => format!("{name}-"),
    };
    let meta = template.metadata.unwrap_or_default();
    let mut finalizers = meta.finalizers.unwrap_or_default();
    if !finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER) {
        finalizers.push(JOB_TRACKING_FINALIZER.into());
    }
    let pod = Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            generate_name: Some(generate_name),
            namespace: Some(ns.clone()),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: Some(finalizers),
            owner_references: Some(vec![new_controller_ref(
                super::API_VERSION,
                KIND,
                &ctx.job.metadata,
            )]),
            ..Default::default()
        },
        spec: template.spec,
        status: None,
    };
    let (reason, message, result) = match client.create(Object::Pod(Arc::new(pod.into()))) {
        Ok(created) => (
            "SuccessfulCreate",
            format!("Created pod: {}", created.name()),
            Ok(()),
        ),
        Err(e) => (
            "FailedCreate",
            format!("Error creating: {e}"),
            Err(e.to_string()),
        ),
    };
    let ev = if result.is_ok() {
        EventRecord::normal(ctx.now, CONTROLLER_NAME, KIND, &ns, &name, reason, message)
    } else {
        EventRecord::warning(ctx.now, CONTROLLER_NAME, KIND, &ns, &name, reason, message)
    };
    client.record_event(ev);
    result
}

/// Moves the UIDs of pods whose finalizer is gone from the uncounted lists to the counters
/// (upstream `cleanUncountedPodsWithoutFinalizers`). Whether anything moved.
fn clean_uncounted(ctx: &mut JobCtx, with_finalizer: &BTreeSet<String>) -> bool {
    let status = ctx.job.status.get_or_insert_with(Default::default);
    let uncounted = status
        .uncounted_terminated_pods
        .get_or_insert_with(Default::default);
    let mut changed = false;
    for (list, counter) in [
        (&mut uncounted.succeeded, &mut status.succeeded),
        (&mut uncounted.failed, &mut status.failed),
    ] {
        let Some(uids) = list.as_mut() else {
            continue;
        };
        let before = uids.len();
        uids.retain(|u| with_finalizer.contains(u));
        let moved = (before - uids.len()) as i32;
        if moved > 0 {
            changed = true;
            let n = counter.unwrap_or(0) + moved;
            *counter = (n != 0).then_some(n);
        }
        if uids.is_empty() {
            *list = None;
        }
    }
    changed
}

impl JobController {
    /// Upstream `trackJobStatusAndRemoveFinalizers`.
    pub(super) fn track_status(
        &mut self,
        ctx: &mut JobCtx,
        mut needs_flush: bool,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let indexed = is_indexed(&ctx.job);
        let mut with_finalizer: BTreeSet<String> = ctx
            .pods
            .iter()
            .filter(|p| has_tracking_finalizer(p))
            .map(|p| p.metadata.uid.clone().unwrap_or_default())
            .collect();
        needs_flush |= clean_uncounted(ctx, &with_finalizer);
        let (to_remove, new_indexes, reached_max, flush) = self.classify_finished(ctx);
        needs_flush |= flush;
        if indexed {
            ctx.succeeded_indexes = ctx.succeeded_indexes.with_ordered_indexes(&new_indexes);
            let s = ctx.succeeded_indexes.to_string();
            let total = ctx.succeeded_indexes.total() as i32;
            let status = ctx.status();
            if status.completed_indexes.as_deref().unwrap_or("") != s {
                needs_flush = true;
            }
            status.succeeded = (total != 0).then_some(total);
            status.completed_indexes = (!s.is_empty()).then_some(s);
            let failed = ctx.failed_indexes.as_ref().map(ToString::to_string);
            let status = ctx.job.status.get_or_insert_with(Default::default);
            if status.failed_indexes != failed {
                status.failed_indexes = failed;
                needs_flush = true;
            }
        }
        needs_flush |= interim_conditions(ctx);
        // Flush the uncounted pods, then remove their finalizers.
        if needs_flush {
            self.write_status(ctx, client)?;
            self.backoff.insert(ctx.key.clone(), ctx.new_backoff);
            needs_flush = false;
        }
        let mut rm_err = None;
        for pod in &to_remove {
            match remove_tracking_finalizer(client, pod) {
                Ok(()) => {
                    with_finalizer.remove(pod.metadata.uid.as_deref().unwrap_or(""));
                }
                Err(e) => {
                    rm_err.get_or_insert(format!("removing tracking finalizer: {e}"));
                }
            }
        }
        needs_flush |= clean_uncounted(ctx, &with_finalizer);
        if let Some(e) = rm_err {
            if needs_flush {
                self.write_status(ctx, client)?;
            }
            return Err(e);
        }
        let finished = !reached_max && enact_job_finished(ctx);
        if needs_flush || finished {
            self.write_status(ctx, client)?;
            if finished {
                record_job_finished(ctx, client);
            }
        }
        Ok(())
    }

    /// The pods whose finalizer can go, with the newly succeeded indexes, whether the uncounted
    /// lists reached their size limit, and whether status changed; finished pods are added to
    /// the uncounted lists.
    fn classify_finished(&self, ctx: &mut JobCtx) -> (Vec<Arc<StoredPod>>, Vec<i64>, bool, bool) {
        let indexed = is_indexed(&ctx.job);
        let mut pods: Vec<Arc<StoredPod>> = ctx
            .pods
            .iter()
            .filter(|p| has_tracking_finalizer(p))
            .cloned()
            .collect();
        if indexed {
            pods.sort_by_key(|p| super::indexed_job_utils::completion_index(p));
        }
        let finished_failing = ctx
            .finished
            .as_ref()
            .is_some_and(|c| c.type_ != COND_SUCCESS_CRITERIA_MET);
        let (mut to_remove, mut new_indexes) = (Vec::new(), Vec::new());
        let (mut flush, mut reached) = (false, false);
        let mut add_s: Vec<String> = Vec::new();
        let mut add_f: Vec<String> = Vec::new();
        for pod in pods {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            match classify_pod(ctx, &pod, finished_failing) {
                None => continue,
                Some(Finished::Other) => {}
                Some(Finished::SucceededIndex(ix)) => {
                    new_indexes.push(ix);
                    flush = true;
                }
                Some(Finished::Succeeded) => {
                    flush = true;
                    add_s.push(uid);
                }
                Some(Finished::Failed) => {
                    flush = true;
                    add_f.push(uid);
                }
            }
            to_remove.push(pod);
            let n_uncounted = ctx.uncounted_succeeded.len() + ctx.uncounted_failed.len();
            if new_indexes.len() + add_s.len() + add_f.len() + n_uncounted >= MAX_UNCOUNTED_PODS {
                reached = true;
                break;
            }
        }
        new_indexes.sort_unstable();
        new_indexes.dedup();
        let status = ctx.job.status.get_or_insert_with(Default::default);
        let uncounted = status
            .uncounted_terminated_pods
            .get_or_insert_with(Default::default);
        if !add_s.is_empty() {
            uncounted
                .succeeded
                .get_or_insert_with(Vec::new)
                .extend(add_s);
        }
        if !add_f.is_empty() {
            uncounted.failed.get_or_insert_with(Vec::new).extend(add_f);
        }
        (to_remove, new_indexes, reached, flush)
    }

    /// Writes the Job's status through the status subresource and keeps the stored version
    /// it returns for the next write of this sync.
    fn write_status(&mut self, ctx: &mut JobCtx, client: &mut dyn Client) -> Result<(), String> {
        let obj = with_status(&ctx.stored, &ctx.job);
        match client.update_status(obj) {
            Ok(Object::Other(o)) => {
                ctx.job.metadata.resource_version = o.metadata.resource_version.clone();
                ctx.stored = o;
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The interim condition of a terminal decision (FailureTarget, or SuccessCriteriaMet if not
/// there yet) goes into status before the finalizers are removed, and the decision becomes the
/// final Failed or Complete condition. Whether status changed.
fn interim_conditions(ctx: &mut JobCtx) -> bool {
    let Some(fin) = ctx.finished.clone() else {
        return false;
    };
    let reason = fin.reason.clone().unwrap_or_default();
    let message = fin.message.clone().unwrap_or_default();
    let now = ctx.now_ts.clone();
    let mut changed = false;
    if fin.type_ == COND_FAILURE_TARGET {
        ctx.status()
            .conditions
            .get_or_insert_with(Vec::new)
            .push(fin);
        changed = true;
        ctx.finished = Some(new_condition(COND_FAILED, "True", &reason, &message, &now));
    } else if fin.type_ == COND_SUCCESS_CRITERIA_MET {
        if success_criteria_met(&ctx.job).is_none() {
            ctx.status()
                .conditions
                .get_or_insert_with(Vec::new)
                .push(fin);
            changed = true;
        }
        ctx.finished = Some(new_condition(
            COND_COMPLETE,
            "True",
            &reason,
            &message,
            &now,
        ));
    }
    changed
}

/// What counting does with one pod that still has the tracking finalizer.
enum Finished {
    /// A newly succeeded index of an Indexed Job.
    SucceededIndex(i64),
    /// A newly succeeded pod of a NonIndexed Job.
    Succeeded,
    /// A newly failed pod (counted towards the backoff limit).
    Failed,
    /// The finalizer goes, nothing is counted.
    Other,
}

/// Upstream's per-pod step of `trackJobStatusAndRemoveFinalizers`: `None` when the finalizer
/// must stay (the pod runs and the Job goes on).
fn classify_pod(ctx: &JobCtx, pod: &StoredPod, finished_failing: bool) -> Option<Finished> {
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let failed = is_pod_failed(pod, &ctx.job);
    if !can_remove_finalizer(ctx, pod, failed) {
        return None;
    }
    let indexed = is_indexed(&ctx.job);
    if pod_phase_is(pod, "Succeeded") && !ctx.uncounted_failed.contains(&uid) {
        if indexed {
            return Some(match ctx.valid_index(pod) {
                Some(ix) if !ctx.prev_succeeded_indexes.has(ix) => Finished::SucceededIndex(ix),
                _ => Finished::Other,
            });
        }
        if !ctx.uncounted_succeeded.contains(&uid) {
            return Some(Finished::Succeeded);
        }
        return Some(Finished::Other);
    }
    let counts = (failed || finished_failing)
        && !ctx.uncounted_failed.contains(&uid)
        && (!indexed || ctx.valid_index(pod).is_some())
        && match_pod_failure_policy(spec(&ctx.job).pod_failure_policy.as_ref(), pod).count_failed;
    Some(if counts {
        Finished::Failed
    } else {
        Finished::Other
    })
}

/// Upstream `canRemoveFinalizer`: the Job is being deleted or finishes, the pod succeeded, or
/// it failed and is not the failed pod its index's replacement waits for (with
/// `backoffLimitPerIndex` that pod keeps its finalizer until the replacement exists, so the
/// replacement can carry the index's failure count).
fn can_remove_finalizer(ctx: &JobCtx, pod: &StoredPod, failed: bool) -> bool {
    if ctx.job.metadata.deletion_timestamp.is_some()
        || ctx.finished.is_some()
        || pod_phase_is(pod, "Succeeded")
    {
        return true;
    }
    if !failed {
        return false;
    }
    let delayed = super::indexed_job_utils::completion_index(pod)
        .and_then(|ix| ctx.delayed_deletion.get(&ix))
        .is_some_and(|p| p.metadata.uid == pod.metadata.uid);
    !delayed
}

/// Upstream `enactJobFinished`: once nothing is uncounted and no pod is terminating, the
/// terminal condition is set (and `completionTime` for Complete). Whether it was.
fn enact_job_finished(ctx: &mut JobCtx) -> bool {
    let Some(fin) = ctx.finished.clone() else {
        return false;
    };
    let uncounted = ctx
        .job
        .status
        .as_ref()
        .and_then(|s| s.uncounted_terminated_pods.as_ref())
        .map_or(0, |u| {
            u.succeeded.as_ref().map_or(0, Vec::len) + u.failed.as_ref().map_or(0, Vec::len)
        });
    if uncounted > 0 || ctx.terminating > 0 {
        return false;
    }
    let now = ctx.now_ts.clone();
    let reason = fin.reason.clone().unwrap_or_default();
    let message = fin.message.clone().unwrap_or_default();
    let conditions = ctx.status().conditions.get_or_insert_with(Vec::new);
    ensure_condition(conditions, &fin.type_, &fin.status, &reason, &message, &now);
    if fin.type_ == COND_COMPLETE {
        ctx.status().completion_time = Some(now);
    }
    true
}

/// Upstream `recordJobFinished`: `Completed` (and `TooManySucceededPods` when more pods
/// succeeded than completions), or a warning with the failure's reason and message.
fn record_job_finished(ctx: &JobCtx, client: &mut dyn Client) {
    let Some(fin) = ctx.finished.as_ref() else {
        return;
    };
    let (ns, name) = &ctx.key;
    let ev = |warning: bool, reason: Cow<'static, str>, message: &str| {
        let f = if warning {
            EventRecord::warning
        } else {
            EventRecord::normal
        };
        f(
            ctx.now,
            CONTROLLER_NAME,
            KIND,
            ns,
            name,
            reason,
            message.to_string(),
        )
    };
    if fin.type_ == COND_COMPLETE {
        let succeeded = ctx
            .job
            .status
            .as_ref()
            .and_then(|s| s.succeeded)
            .unwrap_or(0);
        if ctx.completions().is_some_and(|c| succeeded > c) {
            client.record_event(ev(
                true,
                "TooManySucceededPods".into(),
                "Too many succeeded pods running after completion count reached",
            ));
        }
        client.record_event(ev(false, "Completed".into(), "Job completed"));
    } else {
        let reason = fin.reason.clone().unwrap_or_default();
        let message = fin.message.clone().unwrap_or_default();
        // The condition's reason is the object's text (normally one of this controller's
        // constants, but a status writer may have set any).
        client.record_event(ev(true, Cow::Owned(reason.clone()), &message));
        if client.explain() {
            let clock = client.clock();
            client.emit_record(super::explain::failed(ctx, &reason, &message, &clock));
        }
    }
}

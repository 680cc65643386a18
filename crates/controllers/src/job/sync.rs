//! `syncJob` (upstream `job_controller.go`): one Job's pods claimed, its finished pods
//! counted, the terminal decision (failure policy, backoff limit, deadline, failed indexes,
//! success policy, completions), then `manageJob` (`manage.rs`) and the status written.

use kubeplane_api::StoredPod;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jiff::SignedDuration;
use k8s_openapi::api::batch::v1::{Job, JobCondition, UncountedTerminatedPods};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::{ApiError, Client, DeleteOptions, Kind, Object, ObjectKey};
use kubeplane_core::labels::from_label_selector;
use kubeplane_core::time::SimDuration;
use kubeplane_core::{EventRecord, SimTime};

use super::backoff_utils::BackoffRecord;
use super::indexed_job_utils::{
    completion_index, failed_indexes, has_backoff_limit_per_index, pods_with_delayed_deletion,
    IndexFailure, OrderedIntervals,
};
use super::pod_failure_policy::match_pod_failure_policy;
use super::success_policy::match_success_policy;
use super::tracking::is_pod_failed;
use super::util::*;
use super::{has_tracking_finalizer, JobController, CONTROLLER_NAME, KIND};
use crate::controller_utils::{is_pod_active, is_pod_ready, ns_name, pod_controller, NsName};

/// The controller name a Job may name in `spec.managedBy` and still be synced here.
const JOB_CONTROLLER_MANAGER: &str = "kubernetes.io/job-controller";

/// One sync's view of a Job (upstream `syncJobCtx`).
pub(super) struct JobCtx {
    pub key: NsName,
    pub job: Job,
    pub stored: Arc<kubeplane_api::DynamicObject>,
    pub pods: Vec<Arc<StoredPod>>,
    pub active: Vec<Arc<StoredPod>>,
    pub finished: Option<JobCondition>,
    pub succeeded: i32,
    pub failed: i32,
    pub prev_succeeded_indexes: OrderedIntervals,
    pub succeeded_indexes: OrderedIntervals,
    /// With `backoffLimitPerIndex`: the failed indexes, those that failed in this sync (with
    /// the pod and why), and the last failed pod of each index waiting for its replacement.
    pub failed_indexes: Option<OrderedIntervals>,
    pub newly_failed_indexes: Vec<(i64, Arc<StoredPod>, IndexFailure)>,
    pub delayed_deletion: BTreeMap<i64, Arc<StoredPod>>,
    pub new_backoff: BackoffRecord,
    pub uncounted_succeeded: BTreeSet<String>,
    pub uncounted_failed: BTreeSet<String>,
    pub terminating: i32,
    pub ready: i32,
    pub now: SimTime,
    pub now_ts: Time,
}

impl JobCtx {
    pub fn status(&mut self) -> &mut k8s_openapi::api::batch::v1::JobStatus {
        self.job.status.get_or_insert_with(Default::default)
    }

    pub fn completions(&self) -> Option<i32> {
        spec(&self.job).completions
    }

    /// A valid completion index of this Job (below completions).
    pub fn valid_index(&self, pod: &StoredPod) -> Option<i64> {
        let completions = i64::from(self.completions().unwrap_or(0));
        completion_index(pod).filter(|&ix| ix < completions)
    }
}

fn uid_of(p: &StoredPod) -> String {
    p.metadata.uid.clone().unwrap_or_default()
}

pub(super) fn event(
    ctx: &JobCtx,
    warning: bool,
    reason: &'static str,
    message: String,
) -> EventRecord {
    let (ns, name) = &ctx.key;
    let f = if warning {
        EventRecord::warning
    } else {
        EventRecord::normal
    };
    f(ctx.now, CONTROLLER_NAME, KIND, ns, name, reason, message)
}

impl JobController {
    /// Upstream `syncJob`.
    pub(super) fn sync_job(
        &mut self,
        key: &NsName,
        now: SimTime,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let Some(cached) = self.jobs.get(key).cloned() else {
            self.expectations.delete(key);
            self.backoff.remove(key);
            return Ok(());
        };
        let job = Job::clone(&cached.job);
        let managed_by = spec(&job).managed_by.as_deref();
        if managed_by.is_some_and(|m| m != JOB_CONTROLLER_MANAGER) {
            return Ok(());
        }
        if is_job_finished(&job) {
            self.backoff.remove(key);
            return Ok(());
        }
        let mode = spec(&job)
            .completion_mode
            .as_deref()
            .unwrap_or("NonIndexed");
        if mode != "NonIndexed" && mode != "Indexed" {
            let (ns, name) = key;
            client.record_event(EventRecord::warning(
                now,
                CONTROLLER_NAME,
                KIND,
                ns,
                name,
                "UnknownCompletionMode",
                "Skipped Job sync because completion mode is unknown".into(),
            ));
            return Ok(());
        }
        let satisfied = self.expectations.satisfied(key, now);
        let pods = self.claim_pods(&cached, client)?;
        let mut ctx = self.new_ctx(key, cached, job, pods, now, client);
        self.decide_terminal(&mut ctx);
        if client.explain() {
            for (ix, pod, why) in &ctx.newly_failed_indexes {
                client.emit_record(super::explain::index_failed(&ctx, *ix, pod, *why));
            }
        }
        let (active, suspend_changed, manage_err) = self.act(&mut ctx, satisfied, client);
        let (ready, terminating) = (ctx.ready, ctx.terminating);
        let status = ctx.status();
        let needs_update = suspend_changed
            || active != status.active.unwrap_or(0)
            || Some(ready) != status.ready
            || Some(terminating) != status.terminating;
        let status = ctx.status();
        status.active = (active != 0).then_some(active);
        status.ready = Some(ready);
        status.terminating = Some(terminating);
        self.track_status(&mut ctx, needs_update, client)
            .map_err(|e| format!("tracking status: {e}"))?;
        manage_err
    }

    /// What a sync does about pods: a Job that reached a terminal decision has its active
    /// pods deleted; otherwise `manageJob` runs (when expectations are met) and the Job may
    /// complete or change its Suspended condition. Returns (active, Suspended changed, error).
    fn act(
        &mut self,
        ctx: &mut JobCtx,
        satisfied: bool,
        client: &mut dyn Client,
    ) -> (i32, bool, Result<(), String>) {
        let mut active = ctx.active.len() as i32;
        if ctx.finished.is_some() {
            let active_pods = ctx.active.clone();
            let (deleted_ready, deleted, err) = delete_active_pods(ctx, &active_pods, client);
            if deleted != active || !satisfied {
                // Pods not in the cache yet, or left: not finished yet.
                ctx.finished = None;
            }
            ctx.terminating += deleted;
            ctx.ready -= deleted_ready;
            return (active - deleted, false, err);
        }
        let mut manage_err = Ok(());
        let manage_called = satisfied && ctx.job.metadata.deletion_timestamp.is_none();
        if manage_called {
            (active, manage_err) = self.manage_job(ctx, client);
        }
        let complete = match ctx.completions() {
            None => ctx.succeeded > 0 && active == 0,
            Some(c) => ctx.succeeded >= c && active == 0,
        };
        let mut suspend_changed = false;
        if complete {
            ctx.finished = Some(new_condition(
                COND_SUCCESS_CRITERIA_MET,
                "True",
                REASON_COMPLETIONS_REACHED,
                "Reached expected number of succeeded pods",
                &ctx.now_ts,
            ));
        } else if manage_called {
            suspend_changed = update_suspended_condition(ctx, client);
        }
        (active, suspend_changed, manage_err)
    }

    /// The sync context: pods, counts of newly finished pods, the start time and the backoff.
    fn new_ctx(
        &self,
        key: &NsName,
        cached: super::CachedJob,
        mut job: Job,
        pods: Vec<Arc<StoredPod>>,
        now: SimTime,
        client: &mut dyn Client,
    ) -> JobCtx {
        let now_ts = client.clock().timestamp(now);
        let status = job.status.get_or_insert_with(Default::default);
        let uncounted = status
            .uncounted_terminated_pods
            .get_or_insert_with(UncountedTerminatedPods::default)
            .clone();
        let set = |v: Option<Vec<String>>| v.unwrap_or_default().into_iter().collect();
        let mut ctx = JobCtx {
            key: key.clone(),
            active: pods.iter().filter(|p| is_pod_active(p)).cloned().collect(),
            ready: 0,
            terminating: pods
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_some() && !is_terminal(p))
                .count() as i32,
            pods,
            job,
            stored: cached.stored,
            finished: None,
            succeeded: 0,
            failed: 0,
            prev_succeeded_indexes: OrderedIntervals::default(),
            succeeded_indexes: OrderedIntervals::default(),
            failed_indexes: None,
            newly_failed_indexes: Vec::new(),
            delayed_deletion: BTreeMap::new(),
            new_backoff: BackoffRecord::default(),
            uncounted_succeeded: set(uncounted.succeeded),
            uncounted_failed: set(uncounted.failed),
            now,
            now_ts,
        };
        ctx.ready = ctx.active.iter().filter(|p| is_pod_ready(p)).count() as i32;
        let (new_succeeded, new_failed) = new_finished_pods(&ctx);
        let pfp = spec(&ctx.job).pod_failure_policy.as_ref();
        let counted_failed = new_failed
            .iter()
            .filter(|p| match_pod_failure_policy(pfp, p).count_failed)
            .count() as i32;
        let status = ctx.job.status.as_ref().expect("set above");
        let succeeded = status.succeeded.unwrap_or(0)
            + new_succeeded.len() as i32
            + ctx.uncounted_succeeded.len() as i32;
        let failed =
            status.failed.unwrap_or(0) + counted_failed + ctx.uncounted_failed.len() as i32;
        let start = status.start_time.is_none() && !is_suspended(&ctx.job);
        let record = self.backoff.get(key).copied().unwrap_or_default();
        let new_backoff = record.with_finished(&new_succeeded, &new_failed);
        ctx.succeeded = succeeded;
        ctx.failed = failed;
        ctx.new_backoff = new_backoff;
        if start {
            ctx.status().start_time = Some(ctx.now_ts.clone());
        }
        ctx
    }

    /// The failure or success decided before pods are managed: a FailureTarget condition
    /// already set, a FailJob rule, the backoff limit, the active deadline (queuing a sync for
    /// it), then for Indexed Jobs the succeeded indexes and the success policy.
    fn decide_terminal(&mut self, ctx: &mut JobCtx) {
        let job = &ctx.job;
        let s = spec(job);
        ctx.finished = success_criteria_met(job).cloned();
        if ctx.finished.is_none() {
            if let Some(ft) =
                find_condition(job, COND_FAILURE_TARGET).filter(|c| c.status == "True")
            {
                let reason = ft.reason.clone().unwrap_or_default();
                let message = ft.message.clone().unwrap_or_default();
                ctx.finished = Some(new_condition(
                    COND_FAILED,
                    "True",
                    &reason,
                    &message,
                    &ctx.now_ts,
                ));
            } else if let Some(msg) = fail_job_message(job, &ctx.pods) {
                ctx.finished = Some(new_condition(
                    COND_FAILURE_TARGET,
                    "True",
                    REASON_POD_FAILURE_POLICY,
                    &msg,
                    &ctx.now_ts,
                ));
            }
        }
        if ctx.finished.is_none() {
            let exceeds = ctx.failed > s.backoff_limit.unwrap_or(6);
            let failure = |reason: &str, message: &str| {
                Some(new_condition(
                    COND_FAILURE_TARGET,
                    "True",
                    reason,
                    message,
                    &ctx.now_ts,
                ))
            };
            if exceeds || past_backoff_limit_on_failure(job, &ctx.pods) {
                ctx.finished = failure(
                    REASON_BACKOFF_LIMIT_EXCEEDED,
                    "Job has reached the specified backoff limit",
                );
            } else if let Some(deadline) = active_deadline(job) {
                if ctx.now_ts.0 >= deadline {
                    ctx.finished = failure(
                        REASON_DEADLINE_EXCEEDED,
                        "Job was active longer than specified deadline",
                    );
                } else {
                    let wait = ctx.now_ts.0.duration_until(deadline);
                    let at = ctx.now + SimDuration(wait.as_nanos() as i64);
                    self.queue.add_after(ctx.key.clone(), at);
                }
            }
        }
        if is_indexed(&ctx.job) {
            indexed_terminal(ctx);
        }
    }
}

/// For Indexed Jobs: the succeeded indexes (the completed ones and those of succeeded pods
/// not counted yet), which are the succeeded count, and the success policy.
fn indexed_terminal(ctx: &mut JobCtx) {
    let completions = i64::from(ctx.completions().unwrap_or(0));
    let completed = ctx
        .job
        .status
        .as_ref()
        .and_then(|s| s.completed_indexes.clone())
        .unwrap_or_default();
    ctx.prev_succeeded_indexes = OrderedIntervals::parse(&completed, completions);
    let mut new: Vec<i64> = ctx
        .pods
        .iter()
        .filter(|p| pod_phase_is(p, "Succeeded") && has_tracking_finalizer(p))
        .filter_map(|p| ctx.valid_index(p))
        .collect();
    new.sort_unstable();
    new.dedup();
    ctx.succeeded_indexes = ctx.prev_succeeded_indexes.with_ordered_indexes(&new);
    ctx.succeeded = ctx.succeeded_indexes.total() as i32;
    if has_backoff_limit_per_index(&ctx.job) {
        per_index_terminal(ctx, completions);
    }
    if ctx.finished.is_none() {
        let policy = spec(&ctx.job).success_policy.as_ref();
        if let Some(msg) = match_success_policy(policy, completions, &ctx.succeeded_indexes) {
            ctx.finished = Some(new_condition(
                COND_SUCCESS_CRITERIA_MET,
                "True",
                REASON_SUCCESS_POLICY,
                &msg,
                &ctx.now_ts,
            ));
        }
    }
}

/// With `backoffLimitPerIndex`: the failed indexes, the Job failing when more than
/// `maxFailedIndexes` failed (MaxFailedIndexesExceeded) or when every index succeeded or failed
/// and one failed (FailedIndexes), and the failed pods kept for their replacement.
fn per_index_terminal(ctx: &mut JobCtx, completions: i64) {
    let (failed, fresh) = failed_indexes(&ctx.job, &ctx.pods, completions, has_tracking_finalizer);
    if ctx.finished.is_none() {
        let total = failed.total();
        let max = spec(&ctx.job).max_failed_indexes.map(i64::from);
        let reason = if max.is_some_and(|m| total > m) {
            Some((
                REASON_MAX_FAILED_INDEXES_EXCEEDED,
                "Job has exceeded the specified maximal number of failed indexes",
            ))
        } else if total > 0 && total + ctx.succeeded_indexes.total() >= completions {
            Some((REASON_FAILED_INDEXES, "Job has failed indexes"))
        } else {
            None
        };
        if let Some((reason, message)) = reason {
            ctx.finished = Some(new_condition(
                COND_FAILURE_TARGET,
                "True",
                reason,
                message,
                &ctx.now_ts,
            ));
        }
    }
    let valid: Vec<&Arc<StoredPod>> = ctx
        .pods
        .iter()
        .filter(|p| has_tracking_finalizer(p) && ctx.valid_index(p).is_some())
        .collect();
    ctx.delayed_deletion = pods_with_delayed_deletion(
        &ctx.job,
        &valid,
        &ctx.active,
        &ctx.succeeded_indexes,
        &failed,
    );
    ctx.failed_indexes = Some(failed);
    ctx.newly_failed_indexes = fresh;
}

pub(super) fn pod_phase_is(p: &StoredPod, phase: &str) -> bool {
    crate::controller_utils::pod_phase(p) == phase
}

pub(super) fn is_terminal(p: &StoredPod) -> bool {
    pod_phase_is(p, "Succeeded") || pod_phase_is(p, "Failed")
}

/// When the active deadline passes (not while suspended or before the start).
fn active_deadline(job: &Job) -> Option<jiff::Timestamp> {
    let secs = spec(job).active_deadline_seconds?;
    if is_suspended(job) {
        return None;
    }
    let start = job.status.as_ref()?.start_time.as_ref()?;
    Some(start.0 + SignedDuration::from_secs(secs))
}

/// The newly finished pods not yet counted (upstream `getNewFinishedPods`): they still have
/// the finalizer, are not in the uncounted lists and, for Indexed Jobs, have a valid index.
fn new_finished_pods(ctx: &JobCtx) -> (Vec<&StoredPod>, Vec<&StoredPod>) {
    let valid = |p: &&Arc<StoredPod>, uncounted: &BTreeSet<String>| {
        has_tracking_finalizer(p)
            && !uncounted.contains(&uid_of(p))
            && (!is_indexed(&ctx.job) || ctx.valid_index(p).is_some())
    };
    let succeeded = ctx
        .pods
        .iter()
        .filter(|p| valid(p, &ctx.uncounted_succeeded) && pod_phase_is(p, "Succeeded"))
        .map(|p| p.as_ref())
        .collect();
    let failed = ctx
        .pods
        .iter()
        .filter(|p| valid(p, &ctx.uncounted_failed) && is_pod_failed(p, &ctx.job))
        .map(|p| p.as_ref())
        .collect();
    (succeeded, failed)
}

/// The message of the first failed pod that matches a FailJob rule.
fn fail_job_message(job: &Job, pods: &[Arc<StoredPod>]) -> Option<String> {
    let policy = spec(job).pod_failure_policy.as_ref()?;
    pods.iter()
        .filter(|p| is_pod_failed(p, job))
        .find_map(|p| match_pod_failure_policy(Some(policy), p).fail_job_message)
}

/// With `restartPolicy: OnFailure`, the container restarts of running and pending pods reach
/// the backoff limit (more than none when the limit is 0).
fn past_backoff_limit_on_failure(job: &Job, pods: &[Arc<StoredPod>]) -> bool {
    let restart = spec(job)
        .template
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref());
    if restart != Some("OnFailure") {
        return false;
    }
    let restarts: i32 = pods
        .iter()
        .filter(|p| pod_phase_is(p, "Running") || pod_phase_is(p, "Pending"))
        .filter_map(|p| p.status_k8s())
        .map(|s| {
            s.init_container_statuses
                .iter()
                .flatten()
                .chain(s.container_statuses.iter().flatten())
                .map(|c| c.restart_count)
                .sum::<i32>()
        })
        .sum();
    match spec(job).backoff_limit.unwrap_or(6) {
        0 => restarts > 0,
        limit => restarts >= limit,
    }
}

/// The Suspended condition after `manageJob` ran: True while suspended, False (and a new
/// start time) once resumed. Whether it changed.
fn update_suspended_condition(ctx: &mut JobCtx, client: &mut dyn Client) -> bool {
    let suspended = is_suspended(&ctx.job);
    let now_ts = ctx.now_ts.clone();
    let (status, reason, message, event_reason) = if suspended {
        ("True", "JobSuspended", "Job suspended", "Suspended")
    } else {
        ("False", "JobResumed", "Job resumed", "Resumed")
    };
    let conditions = ctx.status().conditions.get_or_insert_with(Vec::new);
    let changed = ensure_condition(conditions, COND_SUSPENDED, status, reason, message, &now_ts);
    if ctx.status().conditions.as_ref().is_some_and(Vec::is_empty) {
        ctx.status().conditions = None;
    }
    if changed {
        client.record_event(event(ctx, false, event_reason, message.to_string()));
        if !suspended {
            // ActiveDeadlineSeconds counts the time the Job is continuously active.
            ctx.status().start_time = Some(now_ts);
        }
    }
    changed
}

/// Deletes the active pods of a finished Job, keeping their finalizers (upstream
/// `deleteActivePods`). Returns (ready deleted, deleted, first error).
fn delete_active_pods(
    ctx: &JobCtx,
    pods: &[Arc<StoredPod>],
    client: &mut dyn Client,
) -> (i32, i32, Result<(), String>) {
    let (mut ready, mut deleted, mut err) = (0, 0, Ok(()));
    for pod in pods {
        match delete_pod(ctx, pod, client) {
            Ok(()) => deleted += 1,
            Err(e) => {
                err = Err(e);
            }
        }
        if is_pod_ready(pod) {
            ready += 1;
        }
    }
    (ready, deleted, err)
}

/// Deletes one pod with upstream `RealPodControl.DeletePod`'s events; a pod already gone
/// counts as deleted.
pub(super) fn delete_pod(
    ctx: &JobCtx,
    pod: &StoredPod,
    client: &mut dyn Client,
) -> Result<(), String> {
    let (ns, name) = ns_name(&pod.metadata);
    let key = ObjectKey::new(Kind::Pod, &ns, &name);
    match client.delete(&key, DeleteOptions::default()) {
        Ok(_) => {
            client.record_event(event(
                ctx,
                false,
                "SuccessfulDelete",
                format!("Deleted pod: {name}"),
            ));
            Ok(())
        }
        Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => {
            client.record_event(event(
                ctx,
                true,
                "FailedDelete",
                format!("Error deleting: {e}"),
            ));
            Err(e.to_string())
        }
    }
}

impl JobController {
    /// Upstream `getPodsForJob` with the ControllerRefManager: the Job's own pods that still
    /// match (the others are released), and matching orphans adopted with the tracking
    /// finalizer, after an uncached check that the Job still exists.
    fn claim_pods(
        &mut self,
        cached: &super::CachedJob,
        client: &mut dyn Client,
    ) -> Result<Vec<Arc<StoredPod>>, String> {
        let job = &cached.job;
        let (ns, name) = ns_name(&job.metadata);
        let uid = job.metadata.uid.clone().unwrap_or_default();
        let selector = spec(job)
            .selector
            .as_ref()
            .map(from_label_selector)
            .transpose()
            .map_err(|e| format!("couldn't convert Job selector: {e}"))?;
        let matches = |p: &StoredPod| {
            selector
                .as_ref()
                .is_some_and(|s| !s.is_empty() && s.matches(crate::controller_utils::pod_labels(p)))
        };
        let deleting = job.metadata.deletion_timestamp.is_some();
        let mut claimed = Vec::new();
        let owned: Vec<Arc<StoredPod>> = self
            .pods_by_owner
            .get(&uid)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        for pod in owned {
            if matches(&pod) || deleting {
                claimed.push(pod);
            } else {
                release_pod(client, &uid, &pod);
            }
        }
        if deleting {
            return Ok(claimed);
        }
        let mut orphans: Vec<Arc<StoredPod>> = (self.orphans.get(&ns).into_iter())
            .flat_map(|m| m.values().cloned())
            .filter(|p| p.metadata.deletion_timestamp.is_none() && matches(p))
            .collect();
        orphans.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        if orphans.is_empty() {
            return Ok(claimed);
        }
        let fresh = client.get(&ObjectKey::new(
            Kind::Other(cached.stored.type_),
            &ns,
            &name,
        ));
        match fresh {
            Ok(f) if f.uid() == uid && f.meta().deletion_timestamp.is_none() => {}
            _ => return Ok(claimed),
        }
        for pod in orphans {
            if let Some(adopted) = adopt_pod(client, job, &pod) {
                claimed.push(adopted);
            }
        }
        Ok(claimed)
    }
}

/// Adds the Job's controller reference and the tracking finalizer to an orphan.
fn adopt_pod(client: &mut dyn Client, job: &Job, pod: &StoredPod) -> Option<Arc<StoredPod>> {
    let (ns, name) = ns_name(&pod.metadata);
    let fresh = client.cache().get_pod(&ns, &name).cloned()?;
    if fresh.metadata.uid != pod.metadata.uid || pod_controller(&fresh).is_some() {
        return None;
    }
    let mut p = StoredPod::clone(&fresh);
    let r = crate::controller_utils::new_controller_ref(super::API_VERSION, KIND, &job.metadata);
    crate::controller_utils::add_pod_owner_reference(&mut p, r);
    let finalizers = p.metadata.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER) {
        finalizers.push(JOB_TRACKING_FINALIZER.into());
    }
    p.metadata.resource_version = None;
    match client.update(Object::Pod(Arc::new(p))) {
        Ok(Object::Pod(p)) => Some(p),
        _ => None,
    }
}

/// Removes the Job's reference and the tracking finalizer from a pod that stopped matching.
fn release_pod(client: &mut dyn Client, uid: &str, pod: &StoredPod) {
    let (ns, name) = ns_name(&pod.metadata);
    let Some(fresh) = client.cache().get_pod(&ns, &name).cloned() else {
        return;
    };
    let mut p = StoredPod::clone(&fresh);
    crate::controller_utils::remove_pod_owner_reference(&mut p, uid);
    if let Some(f) = p.metadata.finalizers.as_mut() {
        f.retain(|f| f != JOB_TRACKING_FINALIZER);
    }
    p.metadata.resource_version = None;
    let _ = client.update(Object::Pod(Arc::new(p)));
}

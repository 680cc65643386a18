//! The CronJob controller (upstream `pkg/controller/cronjob`, `cronjob_controllerv2.go`):
//! creates a Job named `<cronjob>-<minutes since the epoch>` at each scheduled time, on the
//! virtual clock, with `concurrencyPolicy` Allow, Forbid or Replace, `startingDeadlineSeconds`,
//! `suspend`, `timeZone`, and removes finished Jobs beyond the history limits. With `--explain`
//! a `CronJobDecision` record says why a run was skipped (Forbid, a missed starting deadline)
//! and why a Job was deleted (Replace, a history limit).
//!
//! Files follow upstream's: `mod.rs` is the controller, its handlers, `sync` and
//! `syncCronJob`; `utils.rs` is `utils.go`; `cron.rs` is the part of `robfig/cron` upstream
//! uses. CronJobs and Jobs are stored as `Kind::Other` objects: each change is read once into
//! the typed objects (with the API defaults) and kept here.

pub mod cron;
pub mod utils;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::{
    ApiError, Client, Component, DeleteOptions, DynamicObject, EventType, Kind, Object, ObjectKey,
    PropagationPolicy, WatchEvent,
};
use kubeplane_core::time::SimDuration;
use kubeplane_core::{EventRecord, SimTime};
use serde_json::{json, Value};

use crate::controller_utils::{controller_of, ns_name, NsName, WorkQueue};
use crate::job::util::{finished_condition, job_from_object, COND_COMPLETE};
use cron::{parse_standard, time_zone, Schedule};
use utils::*;

pub const CONTROLLER_NAME: &str = "cronjob-controller";
pub const KIND: &str = "CronJob";

/// A CronJob as cached: the stored object and its typed, defaulted form.
#[derive(Clone, Debug)]
struct CachedCronJob {
    stored: Arc<DynamicObject>,
    cj: Arc<CronJob>,
}

/// The CronJob controller. See the module documentation.
#[derive(Default)]
pub struct CronJobController {
    cronjobs: BTreeMap<NsName, CachedCronJob>,
    /// Jobs with a CronJob controller reference, by key.
    jobs: BTreeMap<NsName, Arc<Job>>,
    queue: WorkQueue,
}

fn cronjob_from_object(obj: &Object) -> Option<CronJob> {
    let mut cj: CronJob = serde_json::from_value(obj.to_json()).ok()?;
    set_defaults(&mut cj);
    Some(cj)
}

fn is_batch(o: &DynamicObject, kind: &str) -> bool {
    o.type_.kind == kind && o.type_.group == "batch"
}

/// The schedule with the CronJob's time zone; `TZ=`/`CRON_TZ=` in the schedule is refused.
fn schedule_of(cj: &CronJob) -> Result<Schedule, String> {
    let s = spec(cj);
    let tz = time_zone(s.time_zone.as_deref().unwrap_or(""))?;
    parse_standard(&s.schedule, tz)
}

impl CronJobController {
    pub fn new() -> CronJobController {
        CronJobController::default()
    }

    fn observe_cronjob(&mut self, ev: &WatchEvent, o: &Arc<DynamicObject>, now: SimTime) {
        let key = ns_name(&o.metadata);
        if ev.type_ == EventType::Deleted {
            self.cronjobs.remove(&key);
            return;
        }
        let Some(cj) = cronjob_from_object(&ev.object) else {
            return;
        };
        self.cronjobs.insert(
            key.clone(),
            CachedCronJob {
                stored: o.clone(),
                cj: Arc::new(cj),
            },
        );
        // A changed schedule is handled by the sync of the moment (upstream requeues at the
        // next activation; the sync now finds nothing unmet and requeues the same way).
        self.queue.add_after(key, now);
    }

    fn observe_job(&mut self, ev: &WatchEvent, o: &Arc<DynamicObject>, now: SimTime) {
        let key = ns_name(&o.metadata);
        let owner = controller_of(&o.metadata)
            .filter(|r| r.kind == KIND)
            .cloned();
        let old_owner = ev
            .old
            .as_ref()
            .and_then(|old| controller_of(old.meta()).cloned())
            .filter(|r| r.kind == KIND);
        for r in [old_owner, owner.clone()].into_iter().flatten() {
            let cj_key = (key.0.clone(), r.name.clone());
            if self
                .cronjobs
                .get(&cj_key)
                .is_some_and(|c| c.cj.metadata.uid.as_deref() == Some(r.uid.as_str()))
            {
                self.queue.add_after(cj_key, now);
            }
        }
        match (ev.type_, owner) {
            (EventType::Deleted, _) | (_, None) => {
                self.jobs.remove(&key);
            }
            (_, Some(_)) => {
                if let Some(job) = job_from_object(&ev.object) {
                    self.jobs.insert(key, Arc::new(job));
                }
            }
        }
    }

    /// Upstream `sync`: history cleanup, `syncCronJob`, one status write, the requeue.
    fn sync(&mut self, key: &NsName, now: SimTime, client: &mut dyn Client) -> Result<(), String> {
        let Some(cached) = self.cronjobs.get(key).cloned() else {
            return Ok(());
        };
        let mut cj = CronJob::clone(&cached.cj);
        let jobs: Vec<Arc<Job>> = crate::controller_utils::in_namespace(&self.jobs, &key.0)
            .map(|(_, j)| j.clone())
            .filter(|j| {
                controller_of(&j.metadata).is_some_and(|r| r.kind == KIND && r.name == key.1)
            })
            .collect();
        let mut cx = SyncCx {
            key: key.clone(),
            now,
            now_ts: client.clock().timestamp(now).0,
            client,
        };
        let cleaned = cx.cleanup_finished_jobs(&mut cj, &jobs);
        let (requeue, synced, err) = cx.sync_cron_job(&mut cj, &jobs);
        if cleaned || synced {
            let mut o = DynamicObject::clone(&cached.stored);
            match cj
                .status
                .as_ref()
                .and_then(|s| serde_json::to_value(s).ok())
            {
                Some(v) => o.fields.insert("status".into(), v),
                None => o.fields.remove("status"),
            };
            cx.client
                .update_status(Object::Other(Arc::new(o)))
                .map_err(|e| e.to_string())?;
        }
        if let Some(d) = requeue {
            let at = now + SimDuration(d.as_nanos().max(0) as i64);
            self.queue.add_after(key.clone(), at);
            return Ok(());
        }
        err
    }
}

/// One sync: the CronJob's key, the instant, and the client.
struct SyncCx<'c> {
    key: NsName,
    now: SimTime,
    now_ts: Timestamp,
    client: &'c mut dyn Client,
}

impl SyncCx<'_> {
    fn event(&mut self, warning: bool, reason: &'static str, message: String) {
        let (ns, name) = &self.key;
        let ev = if warning {
            EventRecord::warning(self.now, CONTROLLER_NAME, KIND, ns, name, reason, message)
        } else {
            EventRecord::normal(self.now, CONTROLLER_NAME, KIND, ns, name, reason, message)
        };
        self.client.record_event(ev);
    }

    /// Emits a `CronJobDecision` record (with `--explain`): why a run was skipped or a Job
    /// deleted.
    fn explain(&mut self, decision: &str, reason: &str, message: String, extra: Value) {
        if !self.client.explain() {
            return;
        }
        let mut r = crate::explain::record(
            "CronJobDecision",
            CONTROLLER_NAME,
            self.now,
            &self.key,
            decision,
            reason,
            message,
        );
        if let (Some(r), Value::Object(extra)) = (r.as_object_mut(), extra) {
            r.extend(extra);
        }
        self.client.emit_record(r);
    }

    /// Why a finished Job went: more finished Jobs of its outcome than the history limit.
    fn explain_history(&mut self, job: &Job, total: usize, limit: i32) {
        let name = job.metadata.name.clone().unwrap_or_default();
        let (outcome, field) = match finished_condition(job).map(|c| c.type_.as_str()) {
            Some(COND_COMPLETE) => ("successful", "successfulJobsHistoryLimit"),
            _ => ("failed", "failedJobsHistoryLimit"),
        };
        let why = format!(
            "Job {name} was deleted: {total} {outcome} finished Jobs, more than {field} {limit} \
             (the oldest go first)"
        );
        self.explain(
            "Delete",
            "HistoryLimit",
            why,
            json!({"job": name, (field): limit}),
        );
    }

    /// Deletes a Job (background propagation) and drops it from the active list (upstream
    /// `deleteJob`). Whether it was deleted.
    fn delete_job(&mut self, cj: &mut CronJob, job: &Job) -> bool {
        let name = job.metadata.name.clone().unwrap_or_default();
        let key = ObjectKey::new(Kind::Other(job_type()), &self.key.0, &name);
        let opts = DeleteOptions {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteOptions::default()
        };
        if let Err(e) = self.client.delete(&key, opts) {
            self.event(true, "FailedDelete", format!("Deleted job: {e}"));
            return false;
        }
        delete_from_active_list(cj, job.metadata.uid.as_deref().unwrap_or(""));
        self.event(false, "SuccessfulDelete", format!("Deleted job {name}"));
        true
    }

    /// Upstream `cleanupFinishedJobs`: the oldest finished Jobs beyond each history limit go.
    fn cleanup_finished_jobs(&mut self, cj: &mut CronJob, jobs: &[Arc<Job>]) -> bool {
        let s = spec(cj);
        let (ok_limit, failed_limit) =
            (s.successful_jobs_history_limit, s.failed_jobs_history_limit);
        let mut succeeded: Vec<&Job> = Vec::new();
        let mut failed: Vec<&Job> = Vec::new();
        for j in jobs {
            match finished_condition(j).map(|c| c.type_.as_str()) {
                Some(COND_COMPLETE) => succeeded.push(j),
                Some(_) => failed.push(j),
                None => {}
            }
        }
        let mut changed = false;
        for (mut list, limit) in [(succeeded, ok_limit), (failed, failed_limit)] {
            let Some(limit) = limit else {
                continue;
            };
            let n = list.len() as i64 - i64::from(limit);
            if n <= 0 {
                continue;
            }
            list.sort_by(|a, b| by_job_start_time(a, b));
            let total = list.len();
            for j in list.into_iter().take(n as usize) {
                let deleted = self.delete_job(cj, j);
                changed |= deleted;
                if deleted {
                    self.explain_history(j, total, limit);
                }
            }
        }
        changed
    }

    /// Upstream `syncCronJob`: the active list reconciled with the Jobs, then at most one Job
    /// created for the most recent unmet schedule time. Returns (requeue after, status changed,
    /// error).
    fn sync_cron_job(
        &mut self,
        cj: &mut CronJob,
        jobs: &[Arc<Job>],
    ) -> (Option<SignedDuration>, bool, Result<(), String>) {
        let mut update = self.reconcile_active(cj, jobs);
        if cj.metadata.deletion_timestamp.is_some() {
            return (None, update, Ok(()));
        }
        let Some(sched) = self.runnable_schedule(cj) else {
            return (None, update, Ok(()));
        };
        let scheduled = match self.unmet_time(cj, &sched) {
            Ok(t) => t,
            Err(requeue) => return (requeue, update, Ok(())),
        };
        if spec(cj).concurrency_policy.as_deref() == Some("Replace") {
            match self.replace_active(cj, scheduled) {
                Ok(replaced) => update |= replaced,
                Err(e) => return (None, update, Err(e)),
            }
        }
        match self.create_job(cj, scheduled) {
            Ok(Some(job)) => {
                let status = cj.status.get_or_insert_with(Default::default);
                status
                    .active
                    .get_or_insert_with(Vec::new)
                    .push(job_ref(&job));
                status.last_schedule_time = Some(Time(scheduled));
                (next_schedule_delay(cj, self.now_ts, &sched), true, Ok(()))
            }
            Ok(None) => (None, update, Ok(())),
            Err(e) => (None, update, Err(e)),
        }
    }

    /// The schedule, unless the CronJob cannot run: an unknown time zone, suspended, a `TZ=`
    /// prefix, or a schedule that does not parse (each but suspend with its warning).
    fn runnable_schedule(&mut self, cj: &CronJob) -> Option<Schedule> {
        let s = spec(cj);
        if let Some(tz) = s.time_zone.as_deref() {
            if let Err(e) = time_zone(tz) {
                self.event(
                    true,
                    "UnknownTimeZone",
                    format!("invalid timeZone: {tz:?}: {e}"),
                );
                return None;
            }
        }
        if s.suspend == Some(true) {
            return None;
        }
        if s.schedule.contains("TZ") {
            // The API server refuses such a schedule on create; kubeplane stores CronJobs as
            // written, so the controller refuses to run it.
            let msg = format!("CRON_TZ or TZ used in schedule {:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", s.schedule);
            self.event(true, "UnsupportedSchedule", msg);
            return None;
        }
        match schedule_of(cj) {
            Ok(sched) => Some(sched),
            Err(e) => {
                let msg = format!("unparseable schedule: {:?} : {e}", s.schedule);
                self.event(true, "UnparseableSchedule", msg);
                None
            }
        }
    }

    /// The scheduled time to start a Job for now, or the requeue when there is none: nothing
    /// unmet, too late for the starting deadline, already processed, or Forbid with an active
    /// Job (`None` after an invalid schedule).
    fn unmet_time(
        &mut self,
        cj: &CronJob,
        sched: &Schedule,
    ) -> Result<Timestamp, Option<SignedDuration>> {
        let s = spec(cj);
        let now_ts = self.now_ts;
        let requeue = || next_schedule_delay(cj, now_ts, sched);
        let scheduled = match most_recent_schedule_time(cj, self.now_ts, sched, true) {
            Err((_, e)) => {
                let msg = format!("invalid schedule: {} : {e}", s.schedule);
                self.event(true, "InvalidSchedule", msg);
                return Err(None);
            }
            Ok((_, None, _)) => {
                self.explain_missed(cj, sched);
                return Err(requeue());
            }
            Ok((_, Some(t), _)) if t > self.now_ts => return Err(requeue()),
            Ok((_, Some(t), missed)) => {
                if missed == Missed::Many {
                    self.event(true, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew".into());
                }
                t
            }
        };
        if let Some(secs) = s.starting_deadline_seconds {
            if scheduled + SignedDuration::from_secs(secs) < self.now_ts {
                let when = scheduled.strftime("%a, %d %b %Y %H:%M:%S %z").to_string();
                let msg = format!("Missed scheduled time to start a job: {when}");
                self.event(true, "MissSchedule", msg);
                let late = self.now_ts.duration_since(scheduled).as_secs();
                let why = format!(
                    "the run scheduled at {scheduled} was not started: it is {late}s late, past \
                     startingDeadlineSeconds {secs}"
                );
                let extra =
                    json!({"scheduled": scheduled.to_string(), "startingDeadlineSeconds": secs});
                self.explain("Skip", "MissedStartingDeadline", why, extra);
                return Err(requeue());
            }
        }
        let name = job_name(&self.key.1, scheduled);
        let last = cj
            .status
            .as_ref()
            .and_then(|s| s.last_schedule_time.as_ref());
        let processed = active(cj)
            .iter()
            .any(|r| r.name.as_deref() == Some(name.as_str()))
            || last.map(|t| t.0) == Some(scheduled);
        if processed {
            return Err(requeue());
        }
        if s.concurrency_policy.as_deref() == Some("Forbid") && !active(cj).is_empty() {
            self.event(false, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid".into());
            let names: Vec<String> = active(cj).iter().filter_map(|r| r.name.clone()).collect();
            let why = format!(
                "the run scheduled at {scheduled} was not started: concurrencyPolicy is Forbid \
                 and Job {} is still active",
                names.join(", ")
            );
            let extra = json!({"scheduled": scheduled.to_string(), "active": names});
            self.explain("Skip", "ConcurrencyPolicyForbid", why, extra);
            return Err(requeue());
        }
        Ok(scheduled)
    }

    /// With `startingDeadlineSeconds`, a scheduled time earlier than the deadline allows is
    /// never considered (upstream skips it without an event): says so when one was missed.
    fn explain_missed(&mut self, cj: &CronJob, sched: &Schedule) {
        let Some(secs) = spec(cj).starting_deadline_seconds else {
            return;
        };
        if !self.client.explain() {
            return;
        }
        let Ok((_, Some(missed), _)) = most_recent_schedule_time(cj, self.now_ts, sched, false)
        else {
            return;
        };
        let late = self.now_ts.duration_since(missed).as_secs();
        let why = format!(
            "the run scheduled at {missed} was not started: it is {late}s late, past \
             startingDeadlineSeconds {secs}"
        );
        let extra = json!({"scheduled": missed.to_string(), "startingDeadlineSeconds": secs});
        self.explain("Skip", "MissedStartingDeadline", why, extra);
    }

    /// Replace: deletes every active Job before the new one starts. Whether any was.
    fn replace_active(&mut self, cj: &mut CronJob, scheduled: Timestamp) -> Result<bool, String> {
        let mut replaced = false;
        for r in active(cj).to_vec() {
            let rname = r.name.clone().unwrap_or_default();
            let key = ObjectKey::new(Kind::Other(job_type()), &self.key.0, &rname);
            let Some(job) = self.client.get(&key).ok().and_then(|o| job_from_object(&o)) else {
                let msg = format!("Get job: jobs.batch \"{rname}\" not found");
                self.event(true, "FailedGet", msg.clone());
                return Err(msg);
            };
            if !self.delete_job(cj, &job) {
                return Err(format!("could not replace job {}/{rname}", self.key.0));
            }
            let msg = format!(
                "Job {rname} was deleted to start the run scheduled at {scheduled}: \
                 concurrencyPolicy is Replace"
            );
            let extra = json!({"scheduled": scheduled.to_string(), "job": rname});
            self.explain("Replace", "ConcurrencyPolicyReplace", msg, extra);
            replaced = true;
        }
        Ok(replaced)
    }

    /// Creates the Job of a scheduled time. `Ok(None)` when a Job of that name exists that
    /// this CronJob does not control or already lists.
    fn create_job(&mut self, cj: &CronJob, scheduled: Timestamp) -> Result<Option<Job>, String> {
        let manifest = job_from_template(cj, scheduled)?;
        let obj = DynamicObject::from_value(job_type(), &manifest).map_err(|e| e.to_string())?;
        match self.client.create(Object::Other(Arc::new(obj))) {
            Ok(created) => {
                self.event(
                    false,
                    "SuccessfulCreate",
                    format!("Created job {}", created.name()),
                );
                Ok(job_from_object(&created))
            }
            Err(ApiError::AlreadyExists { key }) => {
                let existing = self.client.get(&key).map_err(|e| e.to_string())?;
                let job = job_from_object(&existing).ok_or("not a Job")?;
                let controlled = controller_of(&job.metadata)
                    .is_some_and(|r| Some(r.uid.as_str()) == cj.metadata.uid.as_deref());
                let uid = job.metadata.uid.clone().unwrap_or_default();
                if !controlled || in_active_list(cj, &uid) {
                    return Ok(None);
                }
                Ok(Some(job))
            }
            Err(e) => {
                self.event(true, "FailedCreate", format!("Error creating job: {e}"));
                Err(e.to_string())
            }
        }
    }

    /// The first part of `syncCronJob`: finished Jobs leave the active list (`SawCompletedJob`)
    /// and set `lastSuccessfulTime`; unknown unfinished ones are reported (`UnexpectedJob`);
    /// listed Jobs that are gone leave it (`MissingJob`). Whether status changed.
    fn reconcile_active(&mut self, cj: &mut CronJob, jobs: &[Arc<Job>]) -> bool {
        let mut update = false;
        for j in jobs {
            let uid = j.metadata.uid.clone().unwrap_or_default();
            let name = j.metadata.name.clone().unwrap_or_default();
            let found = in_active_list(cj, &uid);
            let Some(cond) = finished_condition(j) else {
                if !found {
                    self.event(
                        true,
                        "UnexpectedJob",
                        format!("Saw a job that the controller did not create or forgot: {name}"),
                    );
                }
                continue;
            };
            if found {
                delete_from_active_list(cj, &uid);
                self.event(
                    false,
                    "SawCompletedJob",
                    format!("Saw completed job: {name}, condition: {}", cond.type_),
                );
                update = true;
            }
            if cond.type_ == COND_COMPLETE {
                let completed = j.status.as_ref().and_then(|s| s.completion_time.clone());
                let status = cj.status.get_or_insert_with(Default::default);
                let later = match (&status.last_successful_time, &completed) {
                    (None, _) => true,
                    (Some(last), Some(c)) => c.0 > last.0,
                    (Some(_), None) => false,
                };
                if later && (completed.is_some() || status.last_successful_time.is_none()) {
                    status.last_successful_time = completed;
                    update = true;
                }
            }
        }
        let known: Vec<String> = jobs.iter().filter_map(|j| j.metadata.uid.clone()).collect();
        for r in active(cj).to_vec() {
            let uid = r.uid.clone().unwrap_or_default();
            if known.contains(&uid) {
                continue;
            }
            let name = r.name.clone().unwrap_or_default();
            let key = ObjectKey::new(Kind::Other(job_type()), &self.key.0, &name);
            if let Err(ApiError::NotFound { .. }) = self.client.get(&key) {
                self.event(
                    false,
                    "MissingJob",
                    format!("Active job went missing: {name}"),
                );
                delete_from_active_list(cj, &uid);
                update = true;
            }
        }
        update
    }
}

fn job_type() -> &'static kubeplane_api::types::ResourceType {
    kubeplane_api::types::builtin("batch/v1", "Job").expect("Job is a built-in kind")
}

impl Component for CronJobController {
    fn name(&self) -> &'static str {
        CONTROLLER_NAME
    }

    /// Only CronJobs and Jobs.
    fn observes(&self, kind: kubeplane_api::Kind) -> bool {
        matches!(kind, kubeplane_api::Kind::Other(_))
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        self.queue.last_seen = self.queue.last_seen.max(now);
        let Object::Other(o) = &ev.object else {
            return;
        };
        if is_batch(o, KIND) {
            let o = o.clone();
            self.observe_cronjob(ev, &o, now);
        } else if is_batch(o, "Job") {
            let o = o.clone();
            self.observe_job(ev, &o, now);
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        for key in self.queue.take_due(now) {
            match self.sync(&key, now, client) {
                Ok(()) => self.queue.forget(&key),
                Err(_) => self.queue.add_rate_limited(key, now),
            }
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        self.queue.next_wakeup()
    }
}

//! The Job controller (upstream `pkg/controller/job`): runs pods until a Job's completions
//! succeed or it fails, with parallelism, NonIndexed and Indexed completion, the pod failure
//! backoff, `backoffLimit`, `activeDeadlineSeconds`, the pod failure and success policies and
//! `suspend`, and tracks finished pods with the `batch.kubernetes.io/job-tracking` finalizer.
//!
//! Files follow upstream's: `mod.rs` is the controller and its event handlers
//! (`job_controller.go`), `sync.rs` is `syncJob`, `manage.rs` is `manageJob`, `tracking.rs` is
//! `trackJobStatusAndRemoveFinalizers` with its helpers, then `backoff_utils.rs`,
//! `indexed_job_utils.rs`, `pod_failure_policy.rs`, `success_policy.rs` and `util.rs`;
//! `explain.rs` builds the `JobDecision` explanation records (why a Job failed, why a failed
//! pod is not replaced yet, why an index failed).
//!
//! Jobs are stored as [`Object::Other`]: the controller reads each change into a typed
//! [`Job`] once, with the API server's defaults ([`util::set_defaults`]), and writes status
//! back through `update_status` as the stored object with a new `status`.

pub mod backoff_utils;
pub(crate) mod explain;
pub mod indexed_job_utils;
mod manage;
pub mod pod_failure_policy;
pub mod success_policy;
mod sync;
mod tracking;
pub mod util;

#[cfg(test)]
mod tests;

use kubeplane_api::StoredPod;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use kubeplane_api::{Client, Component, DynamicObject, EventType, Object, WatchEvent};
use kubeplane_core::labels::from_label_selector;
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;
use rustc_hash::FxHashMap;

use crate::controller_utils::{ns_name, pod_controller, Expectations, NsName, WorkQueue};
use crate::pod_filing::{filed_under, put_hashed, put_nested, take_hashed, take_nested};
use backoff_utils::BackoffRecord;
use util::{job_from_object, JOB_TRACKING_FINALIZER};

/// The event source of everything this controller records.
pub const CONTROLLER_NAME: &str = "job-controller";
pub const KIND: &str = "Job";
pub const API_VERSION: &str = "batch/v1";
/// Upstream `syncJobBatchPeriod`: pod events and status updates sync a Job a second later.
pub const SYNC_JOB_BATCH_PERIOD: SimDuration = SimDuration(1_000_000_000);
/// Upstream `MaxPodCreateDeletePerSync`.
pub const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;
/// Upstream `MaxUncountedPods`: finished pods taken per status write.
pub const MAX_UNCOUNTED_PODS: usize = 500;

/// A Job as the controller caches it: the stored object (to write status back) and its typed,
/// defaulted form.
#[derive(Clone, Debug)]
pub struct CachedJob {
    pub stored: Arc<DynamicObject>,
    pub job: Arc<Job>,
}

/// The Job controller. See the module documentation.
#[derive(Default)]
pub struct JobController {
    jobs: BTreeMap<NsName, CachedJob>,
    /// Job UID → key.
    job_by_uid: HashMap<String, NsName>,
    /// Pods with a controller reference to a Job, by that UID, by name.
    pods_by_owner: BTreeMap<String, BTreeMap<String, Arc<StoredPod>>>,
    /// Pods without a controller reference (adoption candidates), by namespace, by name.
    /// Pods of other kinds' controllers are not filed: where a pod was filed before an event
    /// follows from the event's old version (what every handler saw last).
    /// Hashed: most events replace a pod in place; a claim sorts the few that match by name.
    orphans: FxHashMap<String, FxHashMap<String, Arc<StoredPod>>>,
    queue: WorkQueue,
    /// Orphaned pods whose tracking finalizer should go (upstream `orphanQueue`).
    orphan_queue: BTreeSet<NsName>,
    expectations: Expectations,
    backoff: HashMap<NsName, BackoffRecord>,
    /// The end of the last pod failure backoff explained per Job (one record per wait).
    explained_backoff: HashMap<NsName, SimTime>,
    last_seen: SimTime,
}

impl JobController {
    pub fn new() -> JobController {
        JobController::default()
    }

    fn enqueue_batched(&mut self, key: NsName, now: SimTime) {
        self.queue.add_after(key, now + SYNC_JOB_BATCH_PERIOD);
    }

    /// The cached Job a controller reference names (same kind, name and UID).
    fn resolve(&self, namespace: &str, pod: &StoredPod) -> Option<&CachedJob> {
        let r = pod_controller(pod)?;
        if r.kind != KIND {
            return None;
        }
        let key = self.job_by_uid.get(&r.uid)?;
        (key.0 == namespace).then(|| self.jobs.get(key)).flatten()
    }

    /// Jobs of the pod's namespace whose selector matches its labels (upstream `GetPodJobs`).
    fn selecting_jobs(&self, pod: &StoredPod) -> Vec<NsName> {
        if self.jobs.is_empty() {
            return Vec::new();
        }
        let (ns, _) = ns_name(&pod.metadata);
        let labels = crate::controller_utils::pod_labels(pod);
        crate::controller_utils::in_namespace(&self.jobs, &ns)
            .filter(|(_, j)| {
                let sel = util::spec(&j.job).selector.as_ref();
                sel.and_then(|s| from_label_selector(s).ok())
                    .is_some_and(|s| !s.is_empty() && s.matches(labels))
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn observe_job(&mut self, ev: &WatchEvent, obj: &Arc<DynamicObject>, now: SimTime) {
        let key = ns_name(&obj.metadata);
        let uid = obj.metadata.uid.clone().unwrap_or_default();
        if ev.type_ == EventType::Deleted {
            if let Some(old) = self.jobs.remove(&key) {
                self.job_by_uid
                    .remove(old.job.metadata.uid.as_deref().unwrap_or(""));
            }
            self.expectations.delete(&key);
            self.backoff.remove(&key);
            self.explained_backoff.remove(&key);
            // Upstream `cleanupPodFinalizers`: the pods lose their tracking finalizer.
            let pods: Vec<NsName> = self
                .pods_by_owner
                .get(&uid)
                .into_iter()
                .flat_map(|m| m.values())
                .filter(|p| has_tracking_finalizer(p))
                .map(|p| ns_name(&p.metadata))
                .collect();
            self.orphan_queue.extend(pods);
            self.queue.add(key);
            return;
        }
        let Some(job) = job_from_object(&ev.object) else {
            return;
        };
        let old = self.jobs.get(&key).cloned();
        if let Some(old) = &old {
            if old.job.metadata.uid != job.metadata.uid {
                self.job_by_uid
                    .remove(old.job.metadata.uid.as_deref().unwrap_or(""));
                self.expectations.delete(&key);
                self.backoff.remove(&key);
            }
        }
        let job = Arc::new(job);
        self.job_by_uid.insert(uid, key.clone());
        self.jobs.insert(
            key.clone(),
            CachedJob {
                stored: obj.clone(),
                job: job.clone(),
            },
        );
        match old {
            Some(old) if old.job.metadata.generation == job.metadata.generation => {
                self.enqueue_batched(key.clone(), now)
            }
            _ => self.queue.add(key.clone()),
        }
        if util::is_job_finished(&job) {
            self.cleanup_pod_finalizers(&job);
        }
    }

    /// Queues the Job's pods that still carry the tracking finalizer for its removal.
    fn cleanup_pod_finalizers(&mut self, job: &Job) {
        let uid = job.metadata.uid.as_deref().unwrap_or("");
        let pods: Vec<NsName> = self
            .pods_by_owner
            .get(uid)
            .into_iter()
            .flat_map(|m| m.values())
            .filter(|p| has_tracking_finalizer(p))
            .map(|p| ns_name(&p.metadata))
            .collect();
        self.orphan_queue.extend(pods);
    }

    /// Moves a pod's filing from where it was (`prev`) to where it is (`cur`): under the UID
    /// of its Job, among the orphans, or nowhere.
    fn file_pod(
        &mut self,
        pod: &Arc<StoredPod>,
        prev: Option<Option<&str>>,
        cur: Option<Option<&str>>,
    ) {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        if prev != cur {
            match prev {
                Some(Some(uid)) => drop(take_nested(&mut self.pods_by_owner, uid, name)),
                Some(None) => drop(take_hashed(&mut self.orphans, ns, name)),
                None => {}
            }
        }
        match cur {
            Some(Some(uid)) => drop(put_nested(&mut self.pods_by_owner, uid, name, pod.clone())),
            Some(None) => drop(put_hashed(&mut self.orphans, ns, name, pod.clone())),
            None => {}
        }
    }

    fn observe_pod(&mut self, ev: &WatchEvent, pod: &Arc<StoredPod>, now: SimTime) {
        let deleted = ev.type_ == EventType::Deleted;
        let old = ev.old.as_ref().and_then(Object::as_pod);
        // Where the pod was filed: by its old version (a deleted pod's own, without one).
        let prev = if deleted { old.or(Some(pod)) } else { old };
        let prev_at = prev.and_then(|p| filed_under(p, KIND));
        let cur_at = filed_under(pod, KIND);
        if prev_at.is_none() && cur_at.is_none() {
            // Another kind's controller before and after (upstream: `resolveControllerRef`
            // finds no Job, and a pod with a controller is never an adoption candidate).
            return;
        }
        self.file_pod(pod, prev_at, cur_at.filter(|_| !deleted));
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        // The old controller, if the reference changed.
        if let Some(old) = old {
            if pod_controller(old) != pod_controller(pod) {
                if let Some(j) = self.resolve(ns, old) {
                    let k = ns_name(&j.job.metadata);
                    self.enqueue_batched(k, now);
                }
            }
        }
        if pod_controller(pod).is_none() {
            if has_tracking_finalizer(pod) && !deleted {
                self.orphan_queue.insert(ns_name(&pod.metadata));
            }
            let labels_changed = old.is_none_or(|o| o.labels() != pod.labels());
            if !deleted && labels_changed {
                for k in self.selecting_jobs(pod) {
                    self.enqueue_batched(k, now);
                }
            }
            return;
        }
        let Some(job) = self.resolve(ns, pod) else {
            return;
        };
        let job_key = ns_name(&job.job.metadata);
        let finished = util::is_job_finished(&job.job);
        let terminating = deleted || pod.metadata.deletion_timestamp.is_some();
        if terminating {
            if finished {
                if has_tracking_finalizer(pod) && !deleted {
                    self.orphan_queue.insert(ns_name(&pod.metadata));
                }
                return;
            }
            let key = crate::controller_utils::key_string(&ns_name(&pod.metadata));
            self.expectations.deletion_observed(&job_key, &key);
        } else if ev.type_ == EventType::Added {
            self.expectations.creation_observed(&job_key);
        }
        self.enqueue_batched(job_key, now);
    }

    /// Upstream `syncOrphanPod`: removes the tracking finalizer from a pod whose Job is gone or
    /// finished (a pod of another kind's controller keeps it).
    fn sync_orphan_pod(&mut self, key: &NsName, client: &mut dyn Client) {
        let Some(pod) = client.cache().get_pod(&key.0, &key.1).cloned() else {
            return;
        };
        if let Some(r) = pod_controller(&pod) {
            if r.kind != KIND || r.api_version != API_VERSION {
                return;
            }
            if self
                .resolve(&key.0, &pod)
                .is_some_and(|j| !util::is_job_finished(&j.job))
            {
                return;
            }
        }
        let _ = tracking::remove_tracking_finalizer(client, &pod);
    }
}

pub fn has_tracking_finalizer(pod: &StoredPod) -> bool {
    pod.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == JOB_TRACKING_FINALIZER))
}

impl Component for JobController {
    fn name(&self) -> &'static str {
        CONTROLLER_NAME
    }

    /// Only Jobs and pods.
    fn observes(&self, kind: kubeplane_api::Kind) -> bool {
        matches!(
            kind,
            kubeplane_api::Kind::Other(_) | kubeplane_api::Kind::Pod
        )
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        self.last_seen = self.last_seen.max(now);
        self.queue.last_seen = self.last_seen;
        match &ev.object {
            Object::Other(o) if o.type_.kind == KIND && o.type_.group == "batch" => {
                let o = o.clone();
                self.observe_job(ev, &o, now)
            }
            Object::Pod(p) => self.observe_pod(ev, p, now),
            _ => {}
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        for key in std::mem::take(&mut self.orphan_queue) {
            self.sync_orphan_pod(&key, client);
        }
        for key in self.queue.take_due(now) {
            match self.sync_job(&key, now, client) {
                Ok(()) => self.queue.forget(&key),
                Err(_) => self.queue.add_rate_limited(key, now),
            }
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        if !self.orphan_queue.is_empty() {
            return Some(self.last_seen);
        }
        self.queue.next_wakeup()
    }
}

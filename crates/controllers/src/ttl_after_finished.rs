//! The TTL-after-finished controller (upstream `pkg/controller/ttlafterfinished`): a finished
//! Job with `ttlSecondsAfterFinished` is deleted, with foreground propagation, that many
//! seconds after the transition of its Complete or Failed condition. It records no events; with
//! `--explain` a `JobDecision` record says why a Job was deleted.

use std::collections::{BTreeMap, BTreeSet};

use kubeplane_api::{
    Client, Component, DeleteOptions, EventType, Kind, Object, ObjectKey, PropagationPolicy,
    WatchEvent,
};
use kubeplane_core::SimTime;

use crate::controller_utils::{ns_name, NsName};
use crate::job::util::{finished_condition, job_from_object};

/// The component's name.
const NAME: &str = "ttl-after-finished-controller";

/// The TTL-after-finished controller.
#[derive(Default)]
pub struct TtlAfterFinishedController {
    /// Jobs to look at, by the instant they are due.
    due: BTreeSet<(SimTime, NsName)>,
    due_by_key: BTreeMap<NsName, SimTime>,
    last_seen: SimTime,
}

impl TtlAfterFinishedController {
    pub fn new() -> Self {
        Self::default()
    }

    fn schedule(&mut self, key: NsName, at: SimTime) {
        if let Some(old) = self.due_by_key.insert(key.clone(), at) {
            self.due.remove(&(old, key.clone()));
        }
        self.due.insert((at, key));
    }

    fn unschedule(&mut self, key: &NsName) {
        if let Some(old) = self.due_by_key.remove(key) {
            self.due.remove(&(old, key.clone()));
        }
    }

    /// Upstream `processJob`: re-reads the Job, and deletes it when its TTL has expired.
    fn process(&mut self, key: &NsName, now: SimTime, client: &mut dyn Client) {
        let Some(cached) = client
            .cache()
            .get(Kind::Other(job_type()), &key.0, &key.1)
            .cloned()
        else {
            return;
        };
        let Ok(fresh) = client.get(&cached.key()) else {
            return;
        };
        match expire_at(&fresh, client) {
            Some(at) if at > now => self.schedule(key.clone(), at),
            Some(_) => {
                let opts = DeleteOptions {
                    precondition_resource_version: Some(fresh.resource_version().to_string()),
                    propagation_policy: Some(PropagationPolicy::Foreground),
                    ..DeleteOptions::default()
                };
                let deleted = client.delete(&ObjectKey::new(fresh.kind(), &key.0, &key.1), opts);
                if deleted.is_ok() && client.explain() {
                    explain_deletion(&fresh, now, client);
                }
            }
            None => {}
        }
    }
}

fn job_type() -> &'static kubeplane_api::types::ResourceType {
    kubeplane_api::types::builtin("batch/v1", "Job").expect("Job is a built-in kind")
}

/// The `JobDecision` record of a deletion: when the Job finished and its TTL.
fn explain_deletion(obj: &Object, now: SimTime, client: &mut dyn Client) {
    let Some(job) = job_from_object(obj) else {
        return;
    };
    let ttl = job.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished);
    let finished = finished_condition(&job).and_then(|c| c.last_transition_time.as_ref());
    if let (Some(ttl), Some(finished)) = (ttl, finished) {
        let finished = client.clock().instant(finished);
        let record = crate::job::explain::ttl_deleted(now, &job, finished, ttl, NAME);
        client.emit_record(record);
    }
}

/// When a finished Job with a TTL expires: its finish condition's transition plus the TTL.
fn expire_at(obj: &Object, client: &dyn Client) -> Option<SimTime> {
    let job = job_from_object(obj)?;
    let ttl = job.spec.as_ref()?.ttl_seconds_after_finished?;
    if job.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let finished = finished_condition(&job)?.last_transition_time.as_ref()?;
    Some(
        client.clock().instant(finished)
            + kubeplane_core::time::SimDuration::from_secs(i64::from(ttl)),
    )
}

impl Component for TtlAfterFinishedController {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Only Jobs.
    fn observes(&self, kind: kubeplane_api::Kind) -> bool {
        matches!(kind, kubeplane_api::Kind::Other(_))
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        self.last_seen = self.last_seen.max(now);
        let Object::Other(o) = &ev.object else {
            return;
        };
        if o.type_.kind != "Job" || o.type_.group != "batch" {
            return;
        }
        let key = ns_name(&o.metadata);
        if ev.type_ == EventType::Deleted {
            self.unschedule(&key);
            return;
        }
        let Some(job) = job_from_object(&ev.object) else {
            return;
        };
        let needs_cleanup = job
            .spec
            .as_ref()
            .is_some_and(|s| s.ttl_seconds_after_finished.is_some())
            && finished_condition(&job).is_some()
            && job.metadata.deletion_timestamp.is_none();
        if needs_cleanup {
            self.schedule(key, now);
        } else {
            self.unschedule(&key);
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        while let Some((at, key)) = self.due.first().cloned() {
            if at > now {
                break;
            }
            self.unschedule(&key);
            self.process(&key, now, client);
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        self.due.first().map(|(t, _)| (*t).max(SimTime::ZERO))
    }
}

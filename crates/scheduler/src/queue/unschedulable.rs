//! unschedulablePods (upstream `UnschedulablePods`): parked pods by `namespace/name`, with an
//! index by the time each was parked, so that the next leftover flush that would move a pod
//! is found without visiting every parked pod (a scale-up can park 100,000 pods, and the
//! engine asks for the next timer after every scheduling cycle). Also the queue's leftover
//! flush, which retries pods parked longer than five minutes.

use std::collections::{BTreeMap, BTreeSet};

use kubeplane_core::SimTime;

use crate::framework::QueuedPodInfo;

use super::*;

#[derive(Default)]
pub(crate) struct UnschedulablePods {
    /// Each parked pod with its scheduler name, read once when it is parked: a cluster event
    /// asks the hints of every parked pod's profile, and reading the name from the pod's spec
    /// each time would visit every pod's API object.
    pods: BTreeMap<String, (QueuedPodInfo, Box<str>)>,
    /// `(timestamp, key)` of every parked pod that no PreEnqueue plugin gates.
    ungated_by_time: BTreeSet<(SimTime, String)>,
    /// `(timestamp, key)` of every gated pod.
    gated_by_time: BTreeSet<(SimTime, String)>,
}

impl UnschedulablePods {
    fn index(&mut self, p: &QueuedPodInfo) -> &mut BTreeSet<(SimTime, String)> {
        if p.gated() {
            &mut self.gated_by_time
        } else {
            &mut self.ungated_by_time
        }
    }

    /// Parks the pod, replacing (and returning) the pod parked under the same key.
    pub(crate) fn insert(&mut self, key: String, p: QueuedPodInfo) -> Option<QueuedPodInfo> {
        let old = self.remove(&key);
        let entry = (p.timestamp, key.clone());
        self.index(&p).insert(entry);
        let scheduler_name = p.pod_info.scheduler_name().into();
        self.pods.insert(key, (p, scheduler_name));
        old
    }

    /// Parks the pod unless one is already parked under the key.
    pub(crate) fn insert_if_absent(&mut self, key: String, p: QueuedPodInfo) {
        if !self.pods.contains_key(&key) {
            self.insert(key, p);
        }
    }

    pub(crate) fn remove(&mut self, key: &str) -> Option<QueuedPodInfo> {
        let (p, _) = self.pods.remove(key)?;
        let entry = (p.timestamp, key.to_string());
        self.index(&p).remove(&entry);
        Some(p)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.pods.get(key).map(|(p, _)| p)
    }

    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.pods.contains_key(key)
    }

    pub(crate) fn len(&self) -> usize {
        self.pods.len()
    }

    pub(crate) fn n_gated(&self) -> usize {
        self.gated_by_time.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// Every parked pod with its key, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &QueuedPodInfo)> {
        self.pods.iter().map(|(k, (p, _))| (k, p))
    }

    /// Every parked pod with its key and its scheduler name, in key order.
    pub(crate) fn iter_with_scheduler_name(
        &self,
    ) -> impl Iterator<Item = (&String, &QueuedPodInfo, &str)> {
        self.pods.iter().map(|(k, (p, name))| (k, p, &**name))
    }

    /// The earliest time at which a pod no plugin gates was parked.
    pub(crate) fn earliest_ungated(&self) -> Option<SimTime> {
        self.ungated_by_time.first().map(|(t, _)| *t)
    }

    /// The gated pods, earliest parked first.
    pub(crate) fn gated_by_time(&self) -> impl Iterator<Item = &QueuedPodInfo> {
        self.gated_by_time
            .iter()
            .filter_map(|(_, key)| self.get(key))
    }
}

impl SchedulingQueue {
    /// Retries every pod parked in unschedulablePods for more than 5 minutes (the wildcard
    /// UnschedulableTimeout event).
    pub fn flush_unschedulable_pods_leftover(&mut self, now: SimTime) {
        let keys: Vec<String> = self
            .unschedulable_pods
            .iter()
            .filter(|(_, p)| now - p.timestamp > POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION)
            .map(|(k, _)| k.clone())
            .collect();
        if !keys.is_empty() {
            self.move_pods_to_active_or_backoff_queue(
                &keys,
                labels::UNSCHEDULABLE_TIMEOUT,
                None,
                None,
                now,
            );
        }
    }

    /// Whether the leftover flush at `tick` would take the pod out of unschedulablePods.
    pub(super) fn leftover_would_move(&self, p: &QueuedPodInfo, tick: SimTime) -> bool {
        if !p.gated() {
            return true;
        }
        if !self.gating_plugin_interested(p, &labels::UNSCHEDULABLE_TIMEOUT) {
            return false;
        }
        let backing_off = self.expiry_backing_off(self.compute_backoff_time(p), tick);
        (backing_off && !self.pop_from_backoff_q) || self.pre_enqueue_would_pass(p)
    }
}

//! unschedulablePods (upstream `UnschedulablePods`): parked pods by `namespace/name`, with an
//! index by the time each was parked, so that the next leftover flush that would move a pod
//! is found without visiting every parked pod (a scale-up can park 100,000 pods, and the
//! engine asks for the next timer after every scheduling cycle).

use std::collections::btree_map::{BTreeMap, Values};
use std::collections::BTreeSet;

use kubeplane_core::SimTime;

use crate::framework::QueuedPodInfo;

#[derive(Default)]
pub(crate) struct UnschedulablePods {
    pods: BTreeMap<String, QueuedPodInfo>,
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
        self.pods.insert(key, p);
        old
    }

    /// Parks the pod unless one is already parked under the key.
    pub(crate) fn insert_if_absent(&mut self, key: String, p: QueuedPodInfo) {
        if !self.pods.contains_key(&key) {
            self.insert(key, p);
        }
    }

    pub(crate) fn remove(&mut self, key: &str) -> Option<QueuedPodInfo> {
        let p = self.pods.remove(key)?;
        let entry = (p.timestamp, key.to_string());
        self.index(&p).remove(&entry);
        Some(p)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.pods.get(key)
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
        self.pods.iter()
    }

    /// Every parked pod, in key order.
    pub(crate) fn values(&self) -> Values<'_, String, QueuedPodInfo> {
        self.pods.values()
    }

    /// The earliest time at which a pod no plugin gates was parked.
    pub(crate) fn earliest_ungated(&self) -> Option<SimTime> {
        self.ungated_by_time.first().map(|(t, _)| *t)
    }

    /// The gated pods, earliest parked first.
    pub(crate) fn gated_by_time(&self) -> impl Iterator<Item = &QueuedPodInfo> {
        self.gated_by_time
            .iter()
            .filter_map(|(_, key)| self.pods.get(key))
    }
}

//! The DaemonSet controller (upstream `pkg/controller/daemon`): one pod of each DaemonSet on
//! every node the pod fits, created unbound with a node affinity naming its node and left to
//! the scheduler; pods on nodes that no longer fit are deleted, failed pods are deleted and
//! recreated with a per-node backoff, and templates roll out with RollingUpdate (maxUnavailable,
//! maxSurge) or OnDelete, tracked by ControllerRevisions.
//!
//! Files follow upstream's: this module is `daemon_controller.go`'s controller and event
//! handlers, [`sync`] its `syncDaemonSet`, `manage`, `syncNodes` and status, [`update`] is
//! `update.go` (rolling update and revision history), [`util`] is `util/daemonset_util.go`.
//!
//! DaemonSets and ControllerRevisions are stored as [`Object::Other`]; the controller reads each
//! observed version once into its k8s-openapi type ([`cache::CachedDs`]). Pods are indexed by
//! the DaemonSet controlling them, so a sync over 5,000 nodes reads its own pods once and each
//! node once.

mod backoff;
mod cache;
pub(crate) mod explain;
pub mod pod_control;
mod sync;
pub mod update;
pub mod util;

#[cfg(test)]
mod tests;

use kubeplane_api::StoredPod;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::Node;
use kubeplane_api::object::DynamicObject;
use kubeplane_api::types::ResourceType;
use kubeplane_api::{Client, Component, EventType, Object, StoredNode, WatchEvent};
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;

use crate::controller_utils::{
    controller_of, is_pod_ready, key_string, ns_name, pod_controller, Expectations, NsName,
    WorkQueue,
};
use backoff::Backoff;
pub use cache::DaemonPodView;
use cache::{Cache, CachedDs};

/// The event source of everything this controller records.
pub const CONTROLLER_NAME: &str = "daemonset-controller";
pub const KIND: &str = "DaemonSet";
pub const API_VERSION: &str = "apps/v1";
/// At most this many pods are created, and this many deleted, per sync (upstream
/// `BurstReplicas`).
pub const BURST_REPLICAS: usize = 250;

pub const REASON_SELECTING_ALL: &str = "SelectingAll";
pub const REASON_FAILED_DAEMON_POD: &str = "FailedDaemonPod";
pub const REASON_SUCCEEDED_DAEMON_POD: &str = "SucceededDaemonPod";
pub const REASON_SUCCESSFUL_CREATE: &str = "SuccessfulCreate";
pub const REASON_FAILED_CREATE: &str = "FailedCreate";
pub const REASON_SUCCESSFUL_DELETE: &str = "SuccessfulDelete";
pub const REASON_FAILED_DELETE: &str = "FailedDelete";

/// The stored type of DaemonSets.
pub fn daemon_set_type() -> &'static ResourceType {
    kubeplane_api::types::builtin(API_VERSION, KIND).expect("DaemonSet is a built-in type")
}

/// The stored type of ControllerRevisions.
pub fn controller_revision_type() -> &'static ResourceType {
    kubeplane_api::types::builtin(API_VERSION, "ControllerRevision")
        .expect("ControllerRevision is a built-in type")
}

fn is_type(o: &DynamicObject, kind: &str) -> bool {
    o.type_.group == "apps" && o.type_.kind == kind
}

/// Counters reported at the end of a run.
#[derive(Clone, Debug, Default)]
struct Metrics {
    syncs: u64,
    retries: u64,
    pods_created: u64,
    pods_deleted: u64,
}

/// The DaemonSet controller. See the module documentation.
#[derive(Default)]
pub struct DaemonSetsController {
    cache: Cache,
    queue: WorkQueue,
    expectations: Expectations,
    failed_pods_backoff: Backoff,
    metrics: Metrics,
    /// The explanation records written so far, so that each is written once.
    explained: crate::explain::Explained,
}

impl DaemonSetsController {
    pub fn new() -> Self {
        Self::default()
    }

    /// The expectations of a DaemonSet key (for tests and diagnostics).
    pub fn expectations(&self) -> &Expectations {
        &self.expectations
    }

    fn min_ready_seconds(&self, key: &NsName) -> i32 {
        self.cache
            .daemon_sets
            .get(key)
            .and_then(|d| d.ds.spec.as_ref())
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0)
    }

    // ----- DaemonSet handlers ----------------------------------------------------------------

    fn observe_daemon_set(&mut self, ev: &WatchEvent, obj: &Arc<DynamicObject>) {
        let key = ns_name(&obj.metadata);
        if ev.type_ == EventType::Deleted {
            self.cache.daemon_sets.remove(&key);
            self.expectations.delete(&key);
            self.explained.forget(&key);
            self.queue.add(key);
            return;
        }
        let Ok(ds) =
            serde_json::from_value::<DaemonSet>(serde_json::to_value(&**obj).unwrap_or_default())
        else {
            return;
        };
        let old_uid = self
            .cache
            .daemon_sets
            .get(&key)
            .map(|c| c.uid().to_string());
        if old_uid.is_some_and(|u| Some(u.as_str()) != ds.metadata.uid.as_deref()) {
            // Re-created under the same name: the old one's expectations go (upstream
            // `updateDaemonset` calls `deleteDaemonset` for the old UID).
            self.expectations.delete(&key);
        }
        self.cache
            .daemon_sets
            .insert(key.clone(), CachedDs::new(obj.clone(), ds));
        self.queue.add(key);
    }

    // ----- ControllerRevision handlers --------------------------------------------------------

    fn observe_history(&mut self, ev: &WatchEvent, obj: &Arc<DynamicObject>) {
        let key = ns_name(&obj.metadata);
        let old = if ev.type_ == EventType::Deleted {
            self.cache.revisions.remove(&key)
        } else {
            let Ok(cr) = serde_json::from_value::<ControllerRevision>(
                serde_json::to_value(&**obj).unwrap_or_default(),
            ) else {
                return;
            };
            self.cache.revisions.insert(key.clone(), Arc::new(cr))
        };
        // Upstream's `addHistory` only logs; an update or a delete wakes the owner.
        if ev.type_ == EventType::Added {
            return;
        }
        let refs = [
            controller_of(&obj.metadata).cloned(),
            old.and_then(|o| controller_of(&o.metadata).cloned()),
        ];
        for r in refs.iter().flatten() {
            if let Some(ds) = self.cache.resolve_controller_ref(&key.0, r) {
                self.queue.add(ds);
            }
        }
    }

    // ----- pod handlers ----------------------------------------------------------------------

    fn add_pod(&mut self, pod: &StoredPod) {
        if pod.metadata.deletion_timestamp.is_some() {
            self.delete_pod(pod);
            return;
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        if let Some(r) = pod_controller(pod) {
            if let Some(key) = self.cache.resolve_controller_ref(ns, r) {
                self.expectations.creation_observed(&key);
                self.queue.add(key);
            }
            return;
        }
        for key in self.cache.pod_daemon_sets(pod) {
            self.queue.add(key);
        }
    }

    fn update_pod(&mut self, old: &StoredPod, cur: &StoredPod, now: SimTime) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            return;
        }
        if !sync_relevant_change(old, cur) {
            // Upstream syncs on every pod update; a sync after a binding to the node the pod
            // was made for finds nothing to do, and with 5,000 nodes one sync per binding is
            // quadratic work. kubeplane skips it, as the ReplicaSet controller does.
            return;
        }
        if cur.metadata.deletion_timestamp.is_some() {
            self.delete_pod(cur);
            return;
        }
        let ns = cur.metadata.namespace.as_deref().unwrap_or("default");
        let cur_ref = pod_controller(cur);
        let old_ref = pod_controller(old);
        let ref_changed = cur_ref != old_ref;
        if ref_changed {
            if let Some(key) = old_ref.and_then(|r| self.cache.resolve_controller_ref(ns, r)) {
                self.queue.add(key);
            }
        }
        if let Some(r) = cur_ref {
            let Some(key) = self.cache.resolve_controller_ref(ns, r) else {
                return;
            };
            let min_ready = self.min_ready_seconds(&key);
            if min_ready > 0 && !is_pod_ready(old) && is_pod_ready(cur) {
                // Upstream adds a second against clock skew.
                let after = SimDuration::from_secs(i64::from(min_ready) + 1);
                self.queue.add_after(key.clone(), now + after);
            }
            self.queue.add(key);
            return;
        }
        if old.labels() != cur.labels() || ref_changed {
            for key in self.cache.pod_daemon_sets(cur) {
                self.queue.add(key);
            }
        }
    }

    fn delete_pod(&mut self, pod: &StoredPod) {
        let Some(r) = pod_controller(pod) else {
            return;
        };
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let Some(key) = self.cache.resolve_controller_ref(ns, r) else {
            return;
        };
        self.expectations
            .deletion_observed(&key, &key_string(&ns_name(&pod.metadata)));
        self.queue.add(key);
    }

    // ----- node handlers ---------------------------------------------------------------------

    /// Upstream `addNode`: every DaemonSet that should run on the new node.
    fn add_node(&mut self, node: &Node) {
        for (key, ds) in &self.cache.daemon_sets {
            if ds.view.node_should_run_daemon_pod(node).0 {
                self.queue.add(key.clone());
            }
        }
    }

    /// Upstream `updateNode`: every DaemonSet whose verdict on the node changed. (Upstream
    /// first skips updates that change only the node's heartbeat; the verdicts below do not
    /// read conditions, so the outcome is the same.)
    fn update_node(&mut self, old: &Node, cur: &Node) {
        if old.metadata.labels == cur.metadata.labels && old.spec == cur.spec {
            return;
        }
        for (key, ds) in &self.cache.daemon_sets {
            if ds.view.node_should_run_daemon_pod(old) != ds.view.node_should_run_daemon_pod(cur) {
                self.queue.add(key.clone());
            }
        }
    }

    fn observe_node(&mut self, ev: &WatchEvent, node: &Arc<StoredNode>) {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        match ev.type_ {
            EventType::Added => {
                self.cache.nodes.insert(name.to_string(), node.clone());
                self.add_node(node);
            }
            EventType::Modified => {
                // A known node is replaced in place (every status post lands here).
                let old = match self.cache.nodes.get_mut(name) {
                    Some(held) => Some(std::mem::replace(held, node.clone())),
                    None => self.cache.nodes.insert(name.to_string(), node.clone()),
                };
                match old.or_else(|| ev.old.as_ref().and_then(|o| o.as_node().cloned())) {
                    Some(old) => self.update_node(&old, node),
                    None => self.add_node(node),
                }
            }
            // Upstream has no node delete handler: the pods of a deleted node go with PodGC,
            // and their deletion wakes the DaemonSet.
            EventType::Deleted => {
                self.cache.nodes.remove(name);
            }
        }
    }

    fn observe_pod(&mut self, ev: &WatchEvent, pod: &Arc<StoredPod>, now: SimTime) {
        let old = ev.old.as_ref().and_then(Object::as_pod);
        if !cache::is_filed(pod) && old.is_none_or(|o| !cache::is_filed(o)) {
            // Another kind's controller before and after: no DaemonSet resolves from it and
            // it is no adoption candidate, so every handler below would return at once.
            return;
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let current = (ev.type_ != EventType::Deleted).then_some(pod);
        let cached = self.cache.replace_pod(ns, name, current);
        let orphan = |p: &StoredPod| pod_controller(p).is_none();
        let before = cached.as_deref().or(old.map(|o| &**o));
        if self.cache.daemon_sets.is_empty() && orphan(pod) && before.is_none_or(orphan) {
            // An orphan, kept for adoption, concerns no DaemonSet while there is none.
            return;
        }
        match ev.type_ {
            EventType::Added => self.add_pod(pod),
            EventType::Modified => {
                let old = cached.or_else(|| ev.old.as_ref().and_then(|o| o.as_pod().cloned()));
                match old {
                    Some(old) => self.update_pod(&old, pod, now),
                    None => self.add_pod(pod),
                }
            }
            EventType::Deleted => self.delete_pod(pod),
        }
    }
}

/// Whether a pod update can change what a sync of its DaemonSet does: which DaemonSet claims
/// it, whether it is active or terminal, its readiness, or the node it counts for.
fn sync_relevant_change(old: &StoredPod, cur: &StoredPod) -> bool {
    let ready = |p: &StoredPod| {
        crate::controller_utils::pod_ready_condition(p).map(|(status, t)| (status.to_string(), t))
    };
    let target = |p: &StoredPod| util::get_target_node_name(p).ok().map(str::to_string);
    old.labels() != cur.labels()
        || old.owner_references() != cur.owner_references()
        || old.metadata.deletion_timestamp != cur.metadata.deletion_timestamp
        || crate::controller_utils::pod_phase(old) != crate::controller_utils::pod_phase(cur)
        || ready(old) != ready(cur)
        || target(old) != target(cur)
}

impl Component for DaemonSetsController {
    fn name(&self) -> &'static str {
        CONTROLLER_NAME
    }

    /// Only DaemonSets, ControllerRevisions, pods and nodes.
    fn observes(&self, kind: kubeplane_api::Kind) -> bool {
        matches!(
            kind,
            kubeplane_api::Kind::Other(_) | kubeplane_api::Kind::Pod | kubeplane_api::Kind::Node
        )
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        self.queue.last_seen = self.queue.last_seen.max(now);
        match &ev.object {
            Object::Other(o) if is_type(o, KIND) => self.observe_daemon_set(ev, o),
            Object::Other(o) if is_type(o, "ControllerRevision") => self.observe_history(ev, o),
            Object::Pod(pod) => self.observe_pod(ev, pod, now),
            Object::Node(node) => self.observe_node(ev, node),
            _ => {}
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        self.failed_pods_backoff.gc(now);
        for key in self.queue.take_due(now) {
            match self.sync(&key, now, client) {
                Ok(()) => self.queue.forget(&key),
                Err(_) => {
                    self.metrics.retries += 1;
                    self.queue.add_rate_limited(key, now);
                }
            }
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        self.queue.next_wakeup()
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        vec![
            (
                "workqueue_adds_total{name=\"daemonset\"}".into(),
                self.metrics.syncs,
            ),
            (
                "workqueue_retries_total{name=\"daemonset\"}".into(),
                self.metrics.retries,
            ),
            (
                "kubeplane_daemonset_pods_created_total".into(),
                self.metrics.pods_created,
            ),
            (
                "kubeplane_daemonset_pods_deleted_total".into(),
                self.metrics.pods_deleted,
            ),
        ]
    }
}

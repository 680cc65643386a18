//! The pod garbage collector (upstream `pkg/controller/podgc`). Every 20 s (`gcCheckPeriod`,
//! ticks aligned to t=0) it looks at every pod and force-deletes, in this order:
//!
//! 1. **terminated pods** (phase neither Pending, Running nor Unknown) above the
//!    `terminated-pod-gc-threshold` (12,500 by default), evicted ones first, then the oldest,
//!    then by name;
//! 2. **terminating pods on out-of-service nodes**: pods with a `deletionTimestamp` on a node
//!    that is not Ready and has the `node.kubernetes.io/out-of-service` taint (same order);
//! 3. **orphaned pods**, bound to a node that does not exist: a missing node is quarantined for
//!    40 s (`quarantineTime`, upstream's delaying queue); at the first tick after that, if it is
//!    still missing from the lister and an uncached GET does not find it, its pods get the
//!    condition `DisruptionTarget=True` (reason `DeletionByPodGC`, "PodGC: node no longer
//!    exists") and are deleted;
//! 4. **unscheduled terminating pods**: a `deletionTimestamp` and no node.
//!
//! Each deletion first patches the pod's status to phase Failed (with the condition, for
//! orphans) unless it is already Succeeded or Failed, then deletes it with grace period 0 and no
//! precondition, as upstream's `markFailedAndDeletePodWithCondition`. PodGC records no events.
//!
//! Upstream's ticks run for ever; a tick with nothing to collect changes nothing, so here the
//! controller wakes at the next tick only when something may be collectable (an observed pod on
//! a missing node, a deleted node, a terminating pod without a node or on an out-of-service
//! node, more terminated pods than the threshold) or a quarantined node is waiting. It is
//! therefore listed with the controllers whose timers are pending work: a run without
//! `duration` waits for a deleted node's pods to be collected. The API server defaults a new
//! pod's phase to Pending; a pod without a phase is taken as Pending (upstream's check would
//! count it terminated).

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, PodCondition};
use kubeplane_api::{ApiError, Client, Component, DeleteOptions, EventType, Kind, Object};
use kubeplane_api::{ObjectKey, WatchEvent};
use kubeplane_core::taints::TAINT_NODE_OUT_OF_SERVICE;
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;
use rustc_hash::FxHashSet;

use crate::node_util::update_pod_condition;

/// How often the collector runs (upstream `gcCheckPeriod`).
pub const GC_CHECK_PERIOD: SimDuration = SimDuration(20 * 1_000_000_000);
/// How long a missing node is waited for before its pods are collected (`quarantineTime`).
pub const QUARANTINE_TIME: SimDuration = SimDuration(40 * 1_000_000_000);
/// The default `--terminated-pod-gc-threshold`.
pub const DEFAULT_TERMINATED_POD_THRESHOLD: usize = 12_500;

pub const CONDITION_DISRUPTION_TARGET: &str = "DisruptionTarget";
pub const REASON_DELETION_BY_POD_GC: &str = "DeletionByPodGC";
pub const MESSAGE_NODE_GONE: &str = "PodGC: node no longer exists";

/// The pod garbage collector.
pub struct PodGcController {
    /// Terminated pods above this many are collected; 0 turns that off.
    threshold: usize,
    /// The names of the nodes seen and not deleted.
    nodes: FxHashSet<String>,
    /// Nodes with the out-of-service taint.
    out_of_service: FxHashSet<String>,
    /// Missing nodes and the instant their quarantine ends (upstream's delaying queue).
    quarantine: BTreeMap<String, SimTime>,
    /// How many terminated pods exist.
    terminated: usize,
    /// The next tick, when one is due.
    due: Option<SimTime>,
    /// The last tick that ran.
    last_tick: Option<SimTime>,
    /// Pods whose deletion was attempted, and the attempts that failed (upstream's
    /// `pod_gc_collector_force_delete_pods_total` and `..._errors_total`, without labels).
    deleted: u64,
    errors: u64,
}

impl Default for PodGcController {
    fn default() -> Self {
        PodGcController::new(DEFAULT_TERMINATED_POD_THRESHOLD)
    }
}

fn phase(pod: &StoredPod) -> &str {
    pod.phase().unwrap_or("Pending")
}

/// Upstream `isPodTerminated`.
fn is_terminated(pod: &StoredPod) -> bool {
    !matches!(phase(pod), "Pending" | "Running" | "Unknown")
}

fn node_name(pod: &StoredPod) -> &str {
    pod.node_name().unwrap_or("")
}

fn is_evicted(pod: &StoredPod) -> bool {
    let reason = pod.status().and_then(|s| s.reason());
    phase(pod) == "Failed" && reason == Some("Evicted")
}

fn has_out_of_service_taint(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| t.key == TAINT_NODE_OUT_OF_SERVICE))
}

fn is_node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

/// Upstream `byEvictionAndCreationTimestamp`: evicted pods first, then by creation time, then
/// by name.
fn sort_for_deletion(pods: &mut [Arc<StoredPod>]) {
    pods.sort_by(|a, b| {
        is_evicted(b)
            .cmp(&is_evicted(a))
            .then_with(|| {
                let t = |p: &StoredPod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
                t(a).cmp(&t(b))
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

impl PodGcController {
    /// A collector with a `terminated-pod-gc-threshold` (0: terminated pods are kept).
    pub fn new(threshold: usize) -> PodGcController {
        PodGcController {
            threshold,
            nodes: FxHashSet::default(),
            out_of_service: FxHashSet::default(),
            quarantine: BTreeMap::new(),
            terminated: 0,
            due: None,
            last_tick: None,
            deleted: 0,
            errors: 0,
        }
    }

    /// Schedules the first tick at or after `now` that has not run yet.
    fn wake(&mut self, now: SimTime) {
        if self.due.is_some() {
            return;
        }
        let period = GC_CHECK_PERIOD.0;
        let n = now.0.max(0);
        let mut t = SimTime((n + period - 1) / period * period);
        if self.last_tick.is_some_and(|l| l >= t) {
            t = SimTime(t.0 + period);
        }
        self.due = Some(t);
    }

    fn observe_node(&mut self, ev: &WatchEvent, node: &Node, now: SimTime) {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        if ev.type_ == EventType::Deleted {
            self.nodes.remove(name);
            self.out_of_service.remove(name);
            self.wake(now);
            return;
        }
        if has_out_of_service_taint(node) {
            let newly = !self.out_of_service.contains(name);
            if newly {
                self.out_of_service.insert(name.to_string());
            }
            if newly || !is_node_ready(node) {
                self.wake(now);
            }
        } else if !self.out_of_service.is_empty() {
            self.out_of_service.remove(name);
        }
        // Names are allocated only for nodes not seen before (every status post lands here).
        if !self.nodes.contains(name) {
            self.nodes.insert(name.to_string());
        }
    }

    fn observe_pod(&mut self, ev: &WatchEvent, pod: &StoredPod, now: SimTime) {
        let old = ev.old.as_ref().and_then(Object::as_pod);
        if old.is_some_and(|o| is_terminated(o)) {
            self.terminated -= 1;
        }
        if ev.type_ == EventType::Deleted {
            return;
        }
        if is_terminated(pod) {
            self.terminated += 1;
            if self.terminated > self.threshold && self.threshold > 0 {
                self.wake(now);
            }
        }
        // Only news wakes the collector: a pod newly bound or newly terminating (a node's
        // deletion or taint wakes it for the pods already there; its own status patches don't).
        let node = node_name(pod);
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let news = old.is_none_or(|o| {
            node_name(o) != node || o.metadata.deletion_timestamp.is_some() != terminating
        });
        let orphan = !node.is_empty() && !self.nodes.contains(node);
        let terminating = terminating && (node.is_empty() || self.out_of_service.contains(node));
        if news && (orphan || terminating) {
            self.wake(now);
        }
    }
}

impl PodGcController {
    /// One pass of upstream's `gc`, over the pods and nodes in the cache.
    fn gc(&mut self, now: SimTime, client: &mut dyn Client) {
        let pods: Vec<Arc<StoredPod>> = client
            .cache()
            .list(Kind::Pod)
            .filter_map(Object::as_pod)
            .cloned()
            .collect();
        if self.threshold > 0 {
            self.gc_terminated(&pods, now, client);
        }
        self.gc_terminating(&pods, now, client);
        self.gc_orphaned(&pods, now, client);
        for pod in pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_some())
        {
            if node_name(pod).is_empty() {
                self.mark_failed_and_delete(pod, None, now, client);
            }
        }
    }

    fn gc_terminated(&mut self, pods: &[Arc<StoredPod>], now: SimTime, client: &mut dyn Client) {
        let mut terminated: Vec<Arc<StoredPod>> =
            pods.iter().filter(|p| is_terminated(p)).cloned().collect();
        let count = terminated.len().saturating_sub(self.threshold);
        if count == 0 {
            return;
        }
        sort_for_deletion(&mut terminated);
        for pod in &terminated[..count] {
            self.mark_failed_and_delete(pod, None, now, client);
        }
    }

    fn gc_terminating(&mut self, pods: &[Arc<StoredPod>], now: SimTime, client: &mut dyn Client) {
        let mut terminating: Vec<Arc<StoredPod>> = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_some())
            .filter(|p| {
                client
                    .cache()
                    .get_node(node_name(p))
                    .is_some_and(|n| !is_node_ready(n) && has_out_of_service_taint(n))
            })
            .cloned()
            .collect();
        sort_for_deletion(&mut terminating);
        for pod in &terminating {
            self.mark_failed_and_delete(pod, None, now, client);
        }
    }

    fn gc_orphaned(&mut self, pods: &[Arc<StoredPod>], now: SimTime, client: &mut dyn Client) {
        let cache = client.cache();
        for pod in pods {
            let node = node_name(pod);
            if !node.is_empty() && cache.get_node(node).is_none() {
                self.quarantine
                    .entry(node.to_string())
                    .or_insert(now + QUARANTINE_TIME);
            }
        }
        let ready: Vec<String> = self
            .quarantine
            .iter()
            .filter(|(_, &t)| t <= now)
            .map(|(n, _)| n.clone())
            .collect();
        let mut deleted_nodes = FxHashSet::default();
        for node in ready {
            self.quarantine.remove(&node);
            if client.cache().get_node(&node).is_some() {
                continue;
            }
            if let Err(ApiError::NotFound { .. }) =
                client.get(&ObjectKey::new(Kind::Node, "", &node))
            {
                deleted_nodes.insert(node);
            }
        }
        let cond = PodCondition {
            type_: CONDITION_DISRUPTION_TARGET.into(),
            status: "True".into(),
            reason: Some(REASON_DELETION_BY_POD_GC.into()),
            message: Some(MESSAGE_NODE_GONE.into()),
            ..Default::default()
        };
        for pod in pods {
            if deleted_nodes.contains(node_name(pod)) {
                self.mark_failed_and_delete(pod, Some(&cond), now, client);
            }
        }
    }

    /// Upstream `markFailedAndDeletePodWithCondition`: phase Failed (and the condition) through
    /// PatchPodStatus unless the pod already succeeded or failed, then a delete with grace 0.
    fn mark_failed_and_delete(
        &mut self,
        pod: &StoredPod,
        cond: Option<&PodCondition>,
        now: SimTime,
        client: &mut dyn Client,
    ) {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let uid = pod.metadata.uid.as_deref().unwrap_or("");
        let ts = client.clock().timestamp(now);
        let mut result = Ok(());
        if !matches!(phase(pod), "Succeeded" | "Failed") {
            result = client
                .patch_pod_status(ns, name, uid, &mut |st| {
                    st.phase = Some("Failed".into());
                    if let Some(c) = cond {
                        update_pod_condition(st, c.clone(), ts.clone());
                    }
                })
                .map(|_| ());
        }
        let key = ObjectKey::new(Kind::Pod, ns, name);
        let result = result.and_then(|()| client.delete(&key, DeleteOptions::now()).map(|_| ()));
        self.deleted += 1;
        if result.is_err() {
            self.errors += 1;
        }
    }
}

impl Component for PodGcController {
    fn name(&self) -> &'static str {
        "pod-garbage-collector"
    }

    /// Only pods and nodes.
    fn observes(&self, kind: kubeplane_api::Kind) -> bool {
        matches!(kind, kubeplane_api::Kind::Pod | kubeplane_api::Kind::Node)
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        match &ev.object {
            Object::Pod(pod) => self.observe_pod(ev, pod, now),
            Object::Node(node) => self.observe_node(ev, node, now),
            _ => {}
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        if self.due.is_none_or(|t| t > now) {
            return;
        }
        self.due = None;
        self.last_tick = Some(now);
        self.gc(now, client);
        if !self.quarantine.is_empty() {
            self.wake(now);
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        self.due
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        vec![
            (
                "pod_gc_collector_force_delete_pods_total".into(),
                self.deleted,
            ),
            (
                "pod_gc_collector_force_delete_pod_errors_total".into(),
                self.errors,
            ),
        ]
    }
}

#[cfg(test)]
mod tests;

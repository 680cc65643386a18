//! Taint-based eviction (upstream `TaintEvictionController`, `taint-eviction-controller` in
//! kube-controller-manager, formerly the `NoExecuteTaintManager`).
//!
//! Only `NoExecute` taints matter. For every pod bound to a node with NoExecute taints:
//!
//! * some taint is not tolerated → the pod is deleted at once;
//! * every taint is tolerated, all without `tolerationSeconds` → the pod stays (a pending
//!   deletion is cancelled);
//! * otherwise → the pod is deleted `min(tolerationSeconds)` of the tolerations used after the
//!   controller first saw the taints. Once scheduled, the deletion keeps its instant: changes
//!   at later instants that are still all tolerated neither postpone nor advance it (upstream
//!   issues 102993 and 108982, kept on purpose). A re-evaluation at the instant the deletion
//!   was scheduled replaces it (upstream keeps work only when created strictly before now), so
//!   the changes of one instant count as one.
//!
//! A scheduled deletion is cancelled (with a `Cancelling deletion` event) when the node loses
//! all its NoExecute taints, when the pod's tolerations come to tolerate them all forever, and
//! when the pod is deleted. Deleting the node does not cancel it, as upstream: the pod's own
//! deletion (PodGC in a real cluster) does.
//!
//! Before deleting, the controller records `TaintManagerEviction` "Marking for deletion Pod
//! ns/name" and sets the pod condition `DisruptionTarget=True` (reason `DeletionByTaintManager`).
//!
//! Timers are virtual: [`Component::next_wakeup`] is the earliest pending deletion. Node work
//! is done before pod work of the same instant, as upstream's workers prefer node updates.

mod timed_workers;

#[cfg(test)]
mod tests;

use kubeplane_api::StoredPod;
use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PodCondition, Taint, Toleration};
use kubeplane_api::{
    ApiError, Client, Component, DeleteOptions, EventType, Kind, Object, ObjectKey, WatchEvent,
};
use kubeplane_core::taints::{matching_tolerations, tolerates_any, EFFECT_NO_EXECUTE};
use kubeplane_core::time::SimDuration;
use kubeplane_core::{EventRecord, SimTime};
use serde_json::json;

pub use timed_workers::{TimedWorker, TimedWorkerQueue};

use crate::node_util::{
    format_taint, format_toleration, pod_node_name, pod_tolerations, update_pod_condition,
    PodsByNode, UniqueQueue,
};

/// The controller's name, also the source of its events.
pub const CONTROLLER_NAME: &str = "taint-eviction-controller";
/// Reason of both the eviction and the cancellation event.
pub const REASON_TAINT_MANAGER_EVICTION: &str = "TaintManagerEviction";
/// The pod condition written before deleting.
pub const CONDITION_DISRUPTION_TARGET: &str = "DisruptionTarget";
pub const DISRUPTION_REASON: &str = "DeletionByTaintManager";
pub const DISRUPTION_MESSAGE: &str = "Taint manager: deleting due to NoExecute taint";
/// Upstream retries a failed delete this many times.
const DELETE_RETRIES: usize = 5;

/// Metric names (subsystem `taint_eviction_controller`, ALPHA).
pub const METRIC_POD_DELETIONS_TOTAL: &str = "taint_eviction_controller_pod_deletions_total";
pub const METRIC_POD_DELETION_DURATION_COUNT: &str =
    "taint_eviction_controller_pod_deletion_duration_seconds_count";

/// The NoExecute taints of a list, order kept (upstream `getNoExecuteTaints`).
pub fn no_execute_taints(taints: &[Taint]) -> Vec<Taint> {
    taints
        .iter()
        .filter(|t| t.effect == EFFECT_NO_EXECUTE)
        .cloned()
        .collect()
}

/// How long a pod may stay, from the tolerations used for a node's NoExecute taints
/// (upstream `getMinTolerationTime`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MinToleration {
    /// Evict after this long (zero: at once).
    After(SimDuration),
    /// Every used toleration lacks tolerationSeconds.
    Forever,
}

/// The minimum tolerationSeconds over the used tolerations: any value `<= 0` means at once, no
/// value means forever, an empty list means at once (callers never pass one).
pub fn min_toleration_time(used: &[&Toleration]) -> MinToleration {
    if used.is_empty() {
        return MinToleration::After(SimDuration::ZERO);
    }
    let mut min: Option<i64> = None;
    for t in used {
        if let Some(secs) = t.toleration_seconds {
            if secs <= 0 {
                return MinToleration::After(SimDuration::ZERO);
            }
            min = Some(min.map_or(secs, |m| m.min(secs)));
        }
    }
    match min {
        Some(secs) => MinToleration::After(SimDuration::from_secs(secs)),
        None => MinToleration::Forever,
    }
}

/// A pod event as the controller queues it (upstream `podUpdateItem`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PodItem {
    namespace: String,
    name: String,
    node_name: String,
}

/// The outcome recorded in an `EvictionDecision` explanation record.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    EvictNow,
    EvictAt,
    TolerateForever,
    Cancelled,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::EvictNow => "EvictNow",
            Decision::EvictAt => "EvictAt",
            Decision::TolerateForever => "TolerateForever",
            Decision::Cancelled => "Cancelled",
        }
    }
}

/// Upstream `TaintEvictionController` on the virtual clock.
#[derive(Debug, Default)]
pub struct TaintEvictionController {
    /// Nodes with at least one NoExecute taint, and only those taints.
    tainted_nodes: HashMap<String, Arc<Vec<Taint>>>,
    pods_by_node: PodsByNode,
    node_queue: UniqueQueue<String>,
    pod_queue: UniqueQueue<PodItem>,
    evictions: TimedWorkerQueue,
    /// The instant at which queued node or pod work arrived (work to do "now").
    work_since: Option<SimTime>,
    pod_deletions_total: u64,
    pod_deletion_duration_count: u64,
}

struct DecisionRecord<'a> {
    namespace: &'a str,
    name: &'a str,
    node: &'a str,
    taints: &'a [Taint],
    used: &'a [&'a Toleration],
    decision: Decision,
    at: Option<SimTime>,
    reason: String,
}

impl TaintEvictionController {
    pub fn new() -> Self {
        Self::default()
    }

    /// The pending deletion of a pod ("ns/name"), if one is scheduled.
    pub fn scheduled_eviction(&self, namespace: &str, name: &str) -> Option<&TimedWorker> {
        self.evictions.get_worker(&format!("{namespace}/{name}"))
    }

    /// Number of pending deletions (scheduled or immediate).
    pub fn pending_evictions(&self) -> usize {
        self.evictions.len()
    }

    /// Whether the controller currently knows `node` as NoExecute-tainted.
    pub fn is_node_tainted(&self, node: &str) -> bool {
        self.tainted_nodes.contains_key(node)
    }

    fn pod_updated(
        &mut self,
        old: Option<&StoredPod>,
        new: Option<&StoredPod>,
        namespace: &str,
        name: &str,
    ) {
        let node_name = new.or(old).map(pod_node_name).unwrap_or("");
        if new.is_some() && node_name.is_empty() {
            // Upstream queues this too, and its handler does nothing for a pod without a node
            // unless the pod is gone by then: it cancels the pod's pending deletion. A pod is
            // gone only after its deletion event, which queues an item of its own; a pending
            // deletion under its name belongs to an earlier, bound pod of that name, whose
            // deletion queued an item (with its node) ahead of this one. So the item could only
            // repeat what another one does; skipping it spares every pod created unbound.
            return;
        }
        if let (Some(o), Some(n)) = (old, new) {
            // Semantic equality: nil and empty toleration lists are equal.
            if pod_tolerations(o) == pod_tolerations(n) && pod_node_name(o) == pod_node_name(n) {
                return;
            }
        }
        self.pod_queue.push(PodItem {
            namespace: namespace.to_string(),
            name: name.to_string(),
            node_name: node_name.to_string(),
        });
    }

    fn node_updated(&mut self, old: Option<&[Taint]>, new: Option<&[Taint]>, name: &str) {
        if let (Some(o), Some(n)) = (old, new) {
            let no_exec = |t: &&Taint| t.effect == EFFECT_NO_EXECUTE;
            if o.iter().filter(no_exec).eq(n.iter().filter(no_exec)) {
                return;
            }
        }
        self.node_queue.push(name.to_string());
    }

    fn emit_event(
        client: &mut dyn Client,
        now: SimTime,
        namespace: &str,
        name: &str,
        message: String,
    ) {
        client.record_event(EventRecord::normal(
            now,
            CONTROLLER_NAME,
            "Pod",
            namespace,
            name,
            REASON_TAINT_MANAGER_EVICTION,
            message,
        ));
    }

    /// Cancels timer-backed work for the pod; records the cancel event when it did.
    fn cancel_work_with_event(
        &mut self,
        namespace: &str,
        name: &str,
        now: SimTime,
        client: &mut dyn Client,
    ) -> Option<SimTime> {
        let key = format!("{namespace}/{name}");
        let fire_at = self.evictions.get_worker(&key).map(|w| w.fire_at);
        if self.evictions.cancel_work(&key) {
            Self::emit_event(
                client,
                now,
                namespace,
                name,
                format!("Cancelling deletion of Pod {namespace}/{name}"),
            );
            fire_at
        } else {
            None
        }
    }

    fn explain(client: &mut dyn Client, now: SimTime, r: DecisionRecord<'_>) {
        if !client.explain() {
            return;
        }
        let taints: Vec<String> = r.taints.iter().map(format_taint).collect();
        let used: Vec<String> = r.used.iter().map(|t| format_toleration(t)).collect();
        client.emit_record(json!({
            "time": now.as_secs_f64(),
            "kind": "EvictionDecision",
            "namespace": r.namespace,
            "name": r.name,
            "node": r.node,
            "taints": taints,
            "tolerationsUsed": used,
            "decision": r.decision.as_str(),
            "at": r.at.map(SimTime::as_secs_f64),
            "reason": r.reason,
        }));
    }

    /// Upstream `processPodOnNode`, with `taints` non-empty.
    #[allow(clippy::too_many_arguments)]
    fn process_pod_on_node(
        &mut self,
        namespace: &str,
        name: &str,
        node: &str,
        tolerations: &[Toleration],
        taints: &[Taint],
        now: SimTime,
        client: &mut dyn Client,
    ) {
        let key = format!("{namespace}/{name}");
        let Some(used) = matching_tolerations(taints, tolerations) else {
            self.cancel_work_with_event(namespace, name, now, client);
            self.evictions.add_work(&key, now, now);
            let untolerated = taints
                .iter()
                .find(|t| !tolerates_any(tolerations, t))
                .map(format_taint)
                .unwrap_or_default();
            let rec = DecisionRecord {
                namespace,
                name,
                node,
                taints,
                used: &[],
                decision: Decision::EvictNow,
                at: Some(now),
                reason: format!("the pod does not tolerate the taint {untolerated}"),
            };
            Self::explain(client, now, rec);
            return;
        };
        let (decision, at, reason) = match min_toleration_time(&used) {
            MinToleration::Forever => {
                let reason = match self.cancel_work_with_event(namespace, name, now, client) {
                    Some(was) => format!(
                        "every NoExecute taint is tolerated without tolerationSeconds; the deletion scheduled for {} is cancelled",
                        was
                    ),
                    None => "every NoExecute taint is tolerated without tolerationSeconds".to_string(),
                };
                (Decision::TolerateForever, None, reason)
            }
            MinToleration::After(min) => self.schedule_eviction(&key, min, now),
        };
        let rec = DecisionRecord {
            namespace,
            name,
            node,
            taints,
            used: &used,
            decision,
            at,
            reason,
        };
        Self::explain(client, now, rec);
    }

    /// The finite-toleration branch of upstream `processPodOnNode`: existing scheduled work is
    /// kept only when `createdAt + min` is strictly before `now + min` (upstream's `Before`),
    /// that is when it was created before this instant; work created at this instant is
    /// replaced by the deadline the current taints and tolerations give, so every change of one
    /// instant counts as one (docs/taint-eviction.md §2 rule 4). Upstream replaces through
    /// `cancelWorkWithEvent`, whose "Cancelling deletion" event a real clock never reaches on
    /// this path (two evaluations never share an instant); kubeplane replaces silently.
    fn schedule_eviction(
        &mut self,
        key: &str,
        min: SimDuration,
        now: SimTime,
    ) -> (Decision, Option<SimTime>, String) {
        let trigger = now + min;
        let mut replaced = None;
        if let Some(w) = self.evictions.get_worker(key) {
            if w.created_at + min < trigger {
                let reason = format!(
                    "a deletion scheduled at {} for {} is kept: a scheduled eviction is never moved by later taint or toleration changes",
                    w.created_at, w.fire_at
                );
                return (Decision::EvictAt, Some(w.fire_at), reason);
            }
            replaced = Some(w.fire_at);
            self.evictions.cancel_work(key);
        } else if self.evictions.contains(key) {
            let reason = "a deletion of the pod is already under way".to_string();
            return (Decision::EvictNow, Some(now), reason);
        }
        self.evictions.add_work(key, now, trigger);
        let replacing = replaced.map_or(String::new(), |was| {
            format!("; it replaces the deletion for {was} scheduled earlier at this instant")
        });
        if trigger <= now {
            let reason = format!("a toleration used has tolerationSeconds <= 0{replacing}");
            return (Decision::EvictNow, Some(now), reason);
        }
        let reason = format!(
            "every NoExecute taint is tolerated; the shortest tolerationSeconds used is {}s, counted from now{replacing}",
            min.whole_secs()
        );
        (Decision::EvictAt, Some(trigger), reason)
    }

    /// Upstream `handleNodeUpdate`.
    fn handle_node_update(&mut self, node_name: &str, now: SimTime, client: &mut dyn Client) {
        let Some(node) = client.cache().get_node(node_name).cloned() else {
            // Scheduled deletions are not cancelled: the pods' own deletions cancel them.
            self.tainted_nodes.remove(node_name);
            return;
        };
        let taints = no_execute_taints(
            node.spec
                .as_ref()
                .and_then(|s| s.taints.as_deref())
                .unwrap_or(&[]),
        );
        let taints = Arc::new(taints);
        if taints.is_empty() {
            self.tainted_nodes.remove(node_name);
        } else {
            self.tainted_nodes
                .insert(node_name.to_string(), Arc::clone(&taints));
        }
        let pods = self.pods_by_node.pods_on(node_name);
        if pods.is_empty() {
            return;
        }
        if taints.is_empty() {
            for (ns, name) in &pods {
                if let Some(was) = self.cancel_work_with_event(ns, name, now, client) {
                    let rec = DecisionRecord {
                        namespace: ns,
                        name,
                        node: node_name,
                        taints: &[],
                        used: &[],
                        decision: Decision::Cancelled,
                        at: None,
                        reason: format!(
                            "the node has no NoExecute taints any more; the deletion scheduled for {was} is cancelled"
                        ),
                    };
                    Self::explain(client, now, rec);
                }
            }
            return;
        }
        for (ns, name) in &pods {
            let Some(pod) = client.cache().get_pod(ns, name).cloned() else {
                continue;
            };
            self.process_pod_on_node(
                ns,
                name,
                node_name,
                pod_tolerations(&pod),
                &taints,
                now,
                client,
            );
        }
    }

    /// Upstream `handlePodUpdate`.
    fn handle_pod_update(&mut self, item: &PodItem, now: SimTime, client: &mut dyn Client) {
        let Some(pod) = client.cache().get_pod(&item.namespace, &item.name).cloned() else {
            if let Some(was) = self.cancel_work_with_event(&item.namespace, &item.name, now, client)
            {
                let rec = DecisionRecord {
                    namespace: &item.namespace,
                    name: &item.name,
                    node: &item.node_name,
                    taints: &[],
                    used: &[],
                    decision: Decision::Cancelled,
                    at: None,
                    reason: format!(
                        "the pod was deleted; the deletion scheduled for {was} is cancelled"
                    ),
                };
                Self::explain(client, now, rec);
            }
            return;
        };
        let node_name = pod_node_name(&pod);
        if node_name != item.node_name || node_name.is_empty() {
            return;
        }
        let Some(taints) = self.tainted_nodes.get(node_name).cloned() else {
            return;
        };
        self.process_pod_on_node(
            &item.namespace,
            &item.name,
            node_name,
            pod_tolerations(&pod),
            &taints,
            now,
            client,
        );
    }

    /// The deletion handler: event, DisruptionTarget condition, graceful delete.
    fn fire(&mut self, key: &str, now: SimTime, client: &mut dyn Client) {
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        Self::emit_event(
            client,
            now,
            namespace,
            name,
            format!("Marking for deletion Pod {namespace}/{name}"),
        );
        for _ in 0..DELETE_RETRIES {
            match add_condition_and_delete_pod(namespace, name, now, client) {
                Ok(()) => {
                    self.pod_deletions_total += 1;
                    // Seconds from fireAt to deletion: always zero on the virtual clock.
                    self.pod_deletion_duration_count += 1;
                    return;
                }
                // Retrying a missing pod gives the same answer on a store that does not move
                // while we run; upstream would fail all five attempts the same way.
                Err(ApiError::NotFound { .. }) => return,
                Err(_) => continue,
            }
        }
    }
}

/// Sets `DisruptionTarget=True` on the pod (when not already so) and deletes it gracefully.
fn add_condition_and_delete_pod(
    namespace: &str,
    name: &str,
    now: SimTime,
    client: &mut dyn Client,
) -> Result<(), ApiError> {
    // Upstream reads the pod with an uncached GET, patches its status with the UID as the
    // precondition, then deletes it.
    let key = ObjectKey::new(Kind::Pod, namespace, name);
    let pod = client.get(&key)?;
    let uid = pod.uid().to_string();
    let cond = PodCondition {
        type_: CONDITION_DISRUPTION_TARGET.to_string(),
        status: "True".to_string(),
        reason: Some(DISRUPTION_REASON.to_string()),
        message: Some(DISRUPTION_MESSAGE.to_string()),
        ..Default::default()
    };
    let mut status = pod
        .as_pod()
        .and_then(|p| p.status_k8s())
        .unwrap_or_default();
    let ts = client.clock().timestamp(now);
    if update_pod_condition(&mut status, cond.clone(), ts.clone()) {
        client.patch_pod_status(namespace, name, &uid, &mut |st| {
            update_pod_condition(st, cond.clone(), ts.clone());
        })?;
    }
    let opts = DeleteOptions {
        precondition_uid: Some(uid),
        ..DeleteOptions::default()
    };
    client.delete(&key, opts)?;
    Ok(())
}

impl Component for TaintEvictionController {
    fn name(&self) -> &'static str {
        CONTROLLER_NAME
    }

    /// Only pods and nodes.
    fn observes(&self, kind: kubeplane_api::Kind) -> bool {
        matches!(kind, kubeplane_api::Kind::Pod | kubeplane_api::Kind::Node)
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        match ev.object.kind() {
            Kind::Pod => {
                self.pods_by_node.observe(ev);
                let old = ev.old.as_ref().and_then(Object::as_pod).map(|p| p.as_ref());
                let new = match ev.type_ {
                    EventType::Deleted => None,
                    _ => ev.object.as_pod().map(|p| p.as_ref()),
                };
                let (ns, name) = (ev.object.namespace(), ev.object.name());
                match ev.type_ {
                    EventType::Added => self.pod_updated(None, new, ns, name),
                    EventType::Modified => self.pod_updated(old, new, ns, name),
                    EventType::Deleted => {
                        let gone = ev.object.as_pod().map(|p| p.as_ref());
                        self.pod_updated(gone, None, ns, name)
                    }
                }
            }
            Kind::Node => {
                fn taints_of(o: &Object) -> &[Taint] {
                    o.as_node()
                        .and_then(|n| n.spec.as_ref())
                        .and_then(|s| s.taints.as_deref())
                        .unwrap_or(&[])
                }
                let name = ev.object.name();
                match ev.type_ {
                    EventType::Added => self.node_updated(None, Some(taints_of(&ev.object)), name),
                    EventType::Modified => {
                        let old = ev.old.as_ref().map_or(&[][..], taints_of);
                        self.node_updated(Some(old), Some(taints_of(&ev.object)), name)
                    }
                    EventType::Deleted => {
                        self.node_updated(Some(taints_of(&ev.object)), None, name)
                    }
                }
            }
            _ => return,
        }
        if (!self.node_queue.is_empty() || !self.pod_queue.is_empty()) && self.work_since.is_none()
        {
            self.work_since = Some(now);
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        self.work_since = None;
        while let Some(node) = self.node_queue.pop() {
            self.handle_node_update(&node, now, client);
        }
        while let Some(item) = self.pod_queue.pop() {
            self.handle_pod_update(&item, now, client);
        }
        while let Some((key, _)) = self.evictions.pop_due(now) {
            self.fire(&key, now, client);
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        match (self.work_since, self.evictions.next_fire_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        vec![
            (
                METRIC_POD_DELETIONS_TOTAL.to_string(),
                self.pod_deletions_total,
            ),
            (
                METRIC_POD_DELETION_DURATION_COUNT.to_string(),
                self.pod_deletion_duration_count,
            ),
        ]
    }
}

//! The scheduler as a [`Component`]: informer event routing (upstream `eventhandlers.go`), the
//! queue's timers, and one scheduling cycle per run.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kubeplane_api::{Client, Component, EventType, Object, WatchEvent};
use kubeplane_core::SimTime;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;

use crate::cache::{Cache, Snapshot};
use crate::framework::events::labels as ev;
use crate::framework::{EventObject, Framework, PodInfo};
use crate::queue::{node_update_events, pod_update_events, SchedulingQueue};

/// Counters the scheduler keeps (upstream `scheduler_schedule_attempts_total` by result).
#[derive(Clone, Debug, Default)]
pub struct SchedulerMetrics {
    pub scheduled: u64,
    pub unschedulable: u64,
    pub errors: u64,
}

pub struct Scheduler {
    pub(crate) profiles: BTreeMap<String, Arc<Framework>>,
    pub(crate) queue: SchedulingQueue,
    pub(crate) cache: Cache,
    pub(crate) snapshot: Snapshot,
    pub(crate) next_start_node_index: usize,
    pub(crate) percentage_of_nodes_to_score: i32,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) metrics: SchedulerMetrics,
    /// The event source (reporting controller) name.
    pub(crate) source: &'static str,
    /// Node-local Filter and Score results kept for the next identical pod.
    pub(crate) node_local: crate::node_local::NodeLocalMemo,
    /// Whether `node_local` is used (tests compare with and without it).
    pub(crate) reuse_node_local: bool,
    /// The API-call dispatcher, with `SchedulerAsyncAPICalls` (none: calls are made at once).
    pub(crate) api_dispatcher: Option<crate::api_dispatcher::ApiDispatcher>,
    /// Binding cycles waiting for their queued binding call, by pod UID.
    pub(crate) binding_cycles: FxHashMap<String, crate::binding_cycle::BindingCycle>,
    /// Whether a failed scheduling or binding cycle leaves the pod's nomination alone instead
    /// of clearing it (v1.34: kubernetes#133276; v1.35 clears again, #135007).
    pub(crate) keeps_nomination_on_failure: bool,
}

fn is_assigned(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

impl Scheduler {
    /// A scheduler with these profiles and queue; tie-breaks derive from `seed`.
    pub fn new(
        profiles: Vec<Framework>,
        queue: SchedulingQueue,
        percentage_of_nodes_to_score: i32,
        seed: u64,
    ) -> Scheduler {
        Scheduler {
            profiles: profiles
                .into_iter()
                .map(|f| (f.profile_name.clone(), Arc::new(f)))
                .collect(),
            queue,
            cache: Cache::new(),
            snapshot: Snapshot::default(),
            next_start_node_index: 0,
            percentage_of_nodes_to_score,
            // A stream of its own, so adding objects elsewhere does not shift tie-breaks.
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5343_4845_4455_4c45),
            metrics: SchedulerMetrics::default(),
            source: crate::DEFAULT_SCHEDULER_NAME,
            node_local: Default::default(),
            reuse_node_local: true,
            api_dispatcher: None,
            binding_cycles: FxHashMap::default(),
            keeps_nomination_on_failure: false,
        }
    }

    /// Whether failed scheduling and binding cycles keep the pod's `nominatedNodeName`
    /// (`changes::SCHEDULER_KEEPS_NOMINATION_ON_FAILURE`) rather than clear it (off by
    /// default: the scheduler clears it, as v1.33 and v1.35 and later do).
    pub fn set_keeps_nomination_on_failure(&mut self, keep: bool) {
        self.keeps_nomination_on_failure = keep;
    }

    /// What a failed cycle does to the pod's nomination where upstream passes
    /// `clearNominatedNode`: clears it, or, in the releases that stopped clearing it, nothing.
    pub(crate) fn failure_nominating(&self) -> crate::framework::NominatingMode {
        if self.keeps_nomination_on_failure {
            crate::framework::NominatingMode::Noop
        } else {
            crate::framework::NominatingMode::Override(String::new())
        }
    }

    /// Whether node-local Filter and Score results are reused for identical pods (on by
    /// default; the results are the same either way, see [`crate::node_local`]).
    pub fn set_reuse_node_local(&mut self, on: bool) {
        self.reuse_node_local = on;
        self.node_local = Default::default();
    }

    pub fn queue(&self) -> &SchedulingQueue {
        &self.queue
    }

    fn responsible_for(&self, pod: &Pod) -> bool {
        let name = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .filter(|s| !s.is_empty())
            .unwrap_or(crate::DEFAULT_SCHEDULER_NAME);
        self.profiles.contains_key(name)
    }

    fn on_pod(&mut self, ev: &WatchEvent, pod: &Arc<Pod>, now: SimTime) {
        let old = ev.old.as_ref().and_then(Object::as_pod);
        match ev.type_ {
            EventType::Added => {
                if is_assigned(pod) {
                    let info = Arc::new(PodInfo::new(pod.clone()));
                    let _ = self.cache.add_pod(info);
                    self.queue.move_all_to_active_or_backoff_queue(
                        ev::ASSIGNED_POD_ADD,
                        None,
                        Some(EventObject::Pod(pod)),
                        None,
                        now,
                    );
                } else if self.responsible_for(pod) {
                    self.queue.add(Arc::new(PodInfo::new(pod.clone())), now);
                }
            }
            EventType::Modified => {
                let old = old.expect("a Modified event carries the old object");
                self.sync_with_api_dispatcher(pod);
                match (is_assigned(old), is_assigned(pod)) {
                    (true, true) => {
                        let uid = pod.metadata.uid.as_deref().unwrap_or("");
                        let info = match self.cache.pod(uid) {
                            Some(known) => known.updated(pod.clone()),
                            None => PodInfo::new(pod.clone()),
                        };
                        self.cache.update_pod(Arc::new(info));
                        if !self.queue.wants_cluster_events() {
                            return;
                        }
                        for e in pod_update_events(old, pod) {
                            self.queue.move_all_to_active_or_backoff_queue(
                                e,
                                Some(EventObject::Pod(old)),
                                Some(EventObject::Pod(pod)),
                                None,
                                now,
                            );
                        }
                    }
                    (false, true) => {
                        // Bound: it leaves the unscheduled informer and enters the cache.
                        let uid = pod.metadata.uid.as_deref().unwrap_or("");
                        let info = Arc::new(match self.cache.pod(uid) {
                            Some(assumed) => assumed.updated(pod.clone()),
                            None => PodInfo::new(pod.clone()),
                        });
                        self.queue.delete(&info);
                        let _ = self.cache.add_pod(info);
                        self.queue.move_all_to_active_or_backoff_queue(
                            ev::ASSIGNED_POD_ADD,
                            None,
                            Some(EventObject::Pod(pod)),
                            None,
                            now,
                        );
                    }
                    (false, false) => {
                        if !self.responsible_for(pod) {
                            return;
                        }
                        let uid = pod.metadata.uid.as_deref().unwrap_or("");
                        if self.cache.is_assumed(uid) {
                            return;
                        }
                        let info = Arc::new(PodInfo::new(pod.clone()));
                        self.queue.update(old, info, now);
                        let old_nnn = old
                            .status
                            .as_ref()
                            .and_then(|s| s.nominated_node_name.as_deref())
                            .unwrap_or("");
                        let new_nnn = pod
                            .status
                            .as_ref()
                            .and_then(|s| s.nominated_node_name.as_deref())
                            .unwrap_or("");
                        if !old_nnn.is_empty() && old_nnn != new_nnn {
                            let prio = old.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
                            let check = move |p: &PodInfo| p.priority <= prio;
                            self.queue.move_all_to_active_or_backoff_queue(
                                ev::ASSIGNED_POD_DELETE,
                                Some(EventObject::Pod(old)),
                                None,
                                Some(&check),
                                now,
                            );
                        }
                    }
                    (true, false) => {}
                }
            }
            EventType::Deleted => {
                if is_assigned(pod) {
                    self.cache
                        .remove_pod(pod.metadata.uid.as_deref().unwrap_or_default());
                    self.queue.move_all_to_active_or_backoff_queue(
                        ev::ASSIGNED_POD_DELETE,
                        Some(EventObject::Pod(pod)),
                        None,
                        None,
                        now,
                    );
                } else {
                    let info = PodInfo::new(pod.clone());
                    self.queue.delete(&info);
                    if info.nominated_node_name().is_some() {
                        let prio = info.priority;
                        let check = move |p: &PodInfo| p.priority <= prio;
                        self.queue.move_all_to_active_or_backoff_queue(
                            ev::ASSIGNED_POD_DELETE,
                            Some(EventObject::Pod(pod)),
                            None,
                            Some(&check),
                            now,
                        );
                    }
                }
            }
        }
    }

    /// Upstream `syncPodWithDispatcher` on a pod update: a call queued for the pod compares
    /// with the newer pod from now on (and is dropped when it has nothing left to change).
    /// As in v1.34, the pod with the call's changes applied is not used further.
    fn sync_with_api_dispatcher(&mut self, pod: &Pod) {
        if let Some(d) = self.api_dispatcher.as_mut().filter(|d| !d.queue.is_empty()) {
            let _ = d.queue.sync_object(pod);
        }
    }

    fn on_node(
        &mut self,
        ev: &WatchEvent,
        node: &Arc<k8s_openapi::api::core::v1::Node>,
        now: SimTime,
    ) {
        match ev.type_ {
            EventType::Added => {
                self.cache.add_node(node.clone());
                self.queue.move_all_to_active_or_backoff_queue(
                    ev::NODE_ADD,
                    None,
                    Some(EventObject::Node(node)),
                    None,
                    now,
                );
            }
            EventType::Modified => {
                let old = ev
                    .old
                    .as_ref()
                    .and_then(Object::as_node)
                    .expect("a Modified event carries the old object");
                self.cache.update_node(node.clone());
                if !self.queue.wants_cluster_events() {
                    return;
                }
                for e in node_update_events(old, node) {
                    self.queue.move_all_to_active_or_backoff_queue(
                        e,
                        Some(EventObject::Node(old)),
                        Some(EventObject::Node(node)),
                        None,
                        now,
                    );
                }
            }
            EventType::Deleted => {
                self.queue.move_all_to_active_or_backoff_queue(
                    ev::NODE_DELETE,
                    Some(EventObject::Node(node)),
                    None,
                    None,
                    now,
                );
                self.cache
                    .remove_node(node.metadata.name.as_deref().unwrap_or(""));
            }
        }
    }
}

impl Component for Scheduler {
    fn name(&self) -> &'static str {
        "scheduler"
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        match &ev.object {
            Object::Pod(pod) => {
                let pod = pod.clone();
                self.on_pod(ev, &pod, now);
            }
            Object::Node(node) => {
                let node = node.clone();
                self.on_node(ev, &node, now);
            }
            // Namespace labels (InterPodAffinity's namespaceSelector) and ReplicaSet selectors
            // (PodTopologySpread's default constraints), as upstream's listers.
            Object::Namespace(ns) => {
                let name = ns.metadata.name.as_deref().unwrap_or("");
                if ev.type_ == EventType::Deleted {
                    self.cache.remove_namespace(name);
                } else {
                    self.cache
                        .update_namespace(name, ns.metadata.labels.as_ref());
                }
            }
            Object::ReplicaSet(rs) => {
                let key = format!(
                    "{}/{}",
                    rs.metadata.namespace.as_deref().unwrap_or("default"),
                    rs.metadata.name.as_deref().unwrap_or("")
                );
                if ev.type_ == EventType::Deleted {
                    self.cache.remove_replica_set(&key);
                } else {
                    let selector = rs.spec.as_ref().and_then(|s| {
                        kubeplane_core::labels::from_label_selector(&s.selector).ok()
                    });
                    self.cache.update_replica_set(&key, selector);
                }
            }
            _ => {}
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        if self.queue.next_timer().is_some_and(|t| t <= now) {
            self.queue.run_timers(now);
        }
        if self.queue.has_poppable() {
            self.schedule_one(now, client);
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        if self.queue.has_poppable() {
            return Some(SimTime(i64::MIN));
        }
        self.queue.next_timer()
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        let mut out = vec![
            (
                "scheduler_schedule_attempts_total{result=\"scheduled\"}".into(),
                self.metrics.scheduled,
            ),
            (
                "scheduler_schedule_attempts_total{result=\"unschedulable\"}".into(),
                self.metrics.unschedulable,
            ),
            (
                "scheduler_schedule_attempts_total{result=\"error\"}".into(),
                self.metrics.errors,
            ),
        ];
        // Upstream's gauge of the pods waiting in each queue.
        let pending = self.queue.pending_pods();
        for (queue, n) in [
            ("active", pending.active),
            ("backoff", pending.backoff),
            ("unschedulable", pending.unschedulable),
            ("gated", pending.gated),
        ] {
            out.push((
                format!("scheduler_pending_pods{{queue=\"{queue}\"}}"),
                n as u64,
            ));
        }
        out.extend([
            (
                "kubeplane_scheduler_node_local_filters_reused_total".into(),
                self.node_local.filters_reused,
            ),
            (
                "kubeplane_scheduler_node_local_scores_reused_total".into(),
                self.node_local.scores_reused,
            ),
        ]);
        out
    }
}

impl Scheduler {
    /// Whether pods are waiting to be scheduled soon (activeQ or backoffQ); pods parked in
    /// unschedulablePods wait for a cluster event and do not count.
    pub fn has_pending_work(&self) -> bool {
        let counts = self.queue.pending_pods();
        self.queue.has_poppable() || counts.backoff > 0
    }
}

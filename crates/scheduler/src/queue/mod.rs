//! The scheduling queue (upstream `PriorityQueue`, v1.34 with QueueingHints, which are GA):
//! activeQ, backoffQ (two heaps: pods rejected by plugins, and pods that failed with an error),
//! unschedulablePods (with gated pods), in-flight event tracking and the nominator.
//!
//! A pod is in at most one of activeQ, backoffQ, unschedulablePods, or in flight (popped and not
//! yet back). Queues are keyed by `namespace/name`; in-flight tracking and the nominator by UID.
//! Time is a parameter: the queue never reads a clock. The two periodic flushes of upstream
//! (backoffQ every second, unschedulablePods leftovers every 30 s) are driven by
//! [`SchedulingQueue::run_timers`], and [`SchedulingQueue::next_timer`] says when they would next
//! change anything.
//!
//! Files follow upstream's `backend/queue`: this one is `scheduling_queue.go` (the queue's
//! state, PreEnqueue, the public operations, cluster-event moves, timers, introspection);
//! `active.rs` activeQ, popping and in-flight tracking; `backoff.rs` backoffQ; `hints.rs`
//! the queueing hints; `unschedulable.rs` unschedulablePods; `nominator.rs` the nominator;
//! `heap.rs` the heaps; `events.rs` the queue's cluster events.

mod active;
mod backoff;
mod events;
mod heap;
mod hints;
mod nominator;
#[cfg(test)]
mod tests;
mod unschedulable;

use kubeplane_api::StoredPod;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::StoredNode;
use kubeplane_core::time::{SimDuration, NANOS_PER_SEC};
use kubeplane_core::SimTime;

use crate::framework::events::{labels, QueueingHintFn};
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, EventObject, EventResource, Plugin, PodInfo,
    QueuedPodInfo, QueueingHint,
};

use active::InFlightPod;
pub use events::{
    event_matches, node_update_events, pod_update_events, ASSIGNED_POD_UPDATE,
    NODE_UPDATE_ALLOCATABLE, NODE_UPDATE_ANNOTATION, NODE_UPDATE_CONDITION,
    NODE_UPDATE_DECLARED_FEATURE, NODE_UPDATE_LABEL, NODE_UPDATE_TAINT, UNSCHEDULED_POD_UPDATE,
};
use heap::{Order, PodHeap};
pub(crate) use nominator::NominatedPods;
use nominator::Nominator;
use unschedulable::UnschedulablePods;

/// `podMaxInUnschedulablePodsDuration`: a pod parked longer than this is retried anyway.
pub const POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION: SimDuration = SimDuration(300 * NANOS_PER_SEC);
/// Period of the backoffQ flush, and the backoffQ ordering window (`backoffQOrderingWindowDuration`).
pub const BACKOFF_FLUSH_PERIOD: SimDuration = SimDuration(NANOS_PER_SEC);
/// Period of the unschedulablePods leftover flush.
pub const LEFTOVER_FLUSH_PERIOD: SimDuration = SimDuration(30 * NANOS_PER_SEC);

/// Labels of the queue's own moves (upstream special event labels).
pub mod move_labels {
    pub const SCHEDULE_ATTEMPT_FAILURE: &str = "ScheduleAttemptFailure";
    pub const BACKOFF_COMPLETE: &str = "BackoffComplete";
    pub const POP_FROM_BACKOFF_Q: &str = "PopFromBackoffQ";
    pub const FORCE_ACTIVATE: &str = "ForceActivate";
    pub const UNSCHEDULABLE_TIMEOUT: &str = "UnschedulableTimeout";
}

/// The queue's configuration.
pub struct QueueConfig {
    /// `podInitialBackoffSeconds` (default 1 s).
    pub initial_backoff: SimDuration,
    /// `podMaxBackoffSeconds` (default 10 s).
    pub max_backoff: SimDuration,
    /// Feature gate `SchedulerPopFromBackoffQ` (beta, on by default in v1.33+).
    pub pop_from_backoff_q: bool,
    /// The QueueSort plugin (its `as_queue_sort()` is `Some`).
    pub queue_sort: Arc<dyn Plugin>,
    /// Per profile (`schedulerName`).
    pub profiles: BTreeMap<String, ProfileQueueConfig>,
}

impl QueueConfig {
    /// Upstream defaults: 1 s initial and 10 s maximum backoff, PopFromBackoffQ on.
    pub fn with_defaults(
        queue_sort: Arc<dyn Plugin>,
        profiles: BTreeMap<String, ProfileQueueConfig>,
    ) -> QueueConfig {
        QueueConfig {
            initial_backoff: SimDuration::from_secs(1),
            max_backoff: SimDuration::from_secs(10),
            pop_from_backoff_q: true,
            queue_sort,
            profiles,
        }
    }
}

/// What the queue needs from one profile.
#[derive(Clone, Default)]
pub struct ProfileQueueConfig {
    /// PreEnqueue plugins, in order.
    pub pre_enqueue: Vec<Arc<dyn Plugin>>,
    /// The registered events of every plugin of the profile, with their hints.
    pub events: Vec<(&'static str, ClusterEventWithHint)>,
}

impl ProfileQueueConfig {
    /// Builds the queue configuration of a profile from all its enabled plugins, as upstream's
    /// framework does: PreEnqueue plugins in order; each plugin's `events_to_register()`, where a
    /// plugin that does not say (`None`) gets every resource with action `All` (upstream
    /// `UnrollWildCardResource`, deliberately not the wildcard event).
    pub fn from_plugins(plugins: &[Arc<dyn Plugin>]) -> ProfileQueueConfig {
        let mut out = ProfileQueueConfig::default();
        for pl in plugins {
            if pl.as_pre_enqueue().is_some() {
                out.pre_enqueue.push(pl.clone());
            }
            let events = pl.events_to_register().unwrap_or_else(|| {
                ALL_RESOURCES
                    .iter()
                    .map(|&e| ClusterEventWithHint::new(e))
                    .collect()
            });
            out.events
                .extend(events.into_iter().map(|e| (pl.name(), e)));
        }
        out
    }
}

/// Every resource with action All (upstream `UnrollWildCardResource`, for the resources
/// kubeplane models).
const ALL_RESOURCES: [ClusterEvent; 6] = [
    ClusterEvent::new(EventResource::Pod, ActionType::ALL, "PodAll"),
    ClusterEvent::new(EventResource::Node, ActionType::ALL, "NodeAll"),
    ClusterEvent::new(
        EventResource::PersistentVolume,
        ActionType::ALL,
        "PersistentVolumeAll",
    ),
    ClusterEvent::new(
        EventResource::PersistentVolumeClaim,
        ActionType::ALL,
        "PersistentVolumeClaimAll",
    ),
    ClusterEvent::new(EventResource::CsiNode, ActionType::ALL, "CSINodeAll"),
    ClusterEvent::new(
        EventResource::StorageClass,
        ActionType::ALL,
        "StorageClassAll",
    ),
];

/// Pods per sub-queue. Gated pods live in unschedulablePods but are counted apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PendingCounts {
    pub active: usize,
    /// Both backoff heaps.
    pub backoff: usize,
    /// unschedulablePods without the gated ones.
    pub unschedulable: usize,
    pub gated: usize,
}

/// Where a pending pod is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueName {
    /// Entered by Add, by a move whose backoff is over, by ForceActivate; left by Pop.
    Active,
    /// Entered after a rejection or an error while the pod is still backing off; left at the
    /// backoff flush, by Pop (PopFromBackoffQ) or by ForceActivate.
    Backoff,
    /// Entered when no event recorded during the attempt may help, or when a PreEnqueue plugin
    /// gates the pod; left by a helpful event, the leftover flush or ForceActivate.
    Unschedulable,
}

/// How a pod leaves unschedulablePods (upstream `queueingStrategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Strategy {
    Skip,
    AfterBackoff,
    Immediately,
}

/// An event object kept while pods are in flight.
enum OwnedObject {
    Pod(Arc<StoredPod>),
    Node(Arc<StoredNode>),
}

impl OwnedObject {
    fn of(o: EventObject<'_>) -> OwnedObject {
        match o {
            EventObject::Pod(p) => OwnedObject::Pod(Arc::new(p.clone())),
            EventObject::Node(n) => OwnedObject::Node(Arc::new(n.clone())),
        }
    }
    fn get(&self) -> EventObject<'_> {
        match self {
            OwnedObject::Pod(p) => EventObject::Pod(p),
            OwnedObject::Node(n) => EventObject::Node(n),
        }
    }
}

/// An entry of the in-flight list: a popped pod, or an event received after it.
enum InFlightEntry {
    Pod,
    Event {
        event: ClusterEvent,
        old: Option<OwnedObject>,
        new: Option<OwnedObject>,
    },
}

struct HintEntry {
    plugin: &'static str,
    event: ClusterEvent,
    hint: Option<QueueingHintFn>,
}

struct Profile {
    pre_enqueue: Vec<Arc<dyn Plugin>>,
    hints: Vec<HintEntry>,
}

/// The scheduling queue.
pub struct SchedulingQueue {
    initial_backoff: SimDuration,
    max_backoff: SimDuration,
    pop_from_backoff_q: bool,
    profiles: BTreeMap<String, Profile>,
    /// plugin → its registered events, over all profiles (upstream `pluginToEventsMap`).
    plugin_events: BTreeMap<&'static str, Vec<ClusterEvent>>,
    active_q: PodHeap,
    /// podBackoffQ: pods rejected by plugins.
    backoff_q: PodHeap,
    /// podErrorBackoffQ: pods that failed with an error; never popped before their backoff ends.
    error_backoff_q: PodHeap,
    unschedulable_pods: UnschedulablePods,
    /// Sequence for heap ties and the in-flight list.
    seq: u64,
    scheduling_cycle: i64,
    /// The pods popped and not yet done, by UID.
    in_flight_pods: BTreeSet<InFlightPod>,
    in_flight_events: BTreeMap<u64, InFlightEntry>,
    nominator: Nominator,
    /// Whether adding a pod records its nomination before PreEnqueue, so that a gated pod's
    /// `status.nominatedNodeName` holds its room (kubernetes#139057, v1.37.0); before, only a
    /// pod reaching activeQ was recorded. Set by `Scheduler::follow_version`.
    records_nomination_on_add: bool,
    /// The last whole-second tick at which the backoffQ flush ran.
    last_backoff_flush: SimTime,
    /// The last 30 s tick at which the leftover flush ran.
    last_leftover_flush: SimTime,
}

fn key_of(p: &QueuedPodInfo) -> String {
    p.pod_info.key()
}

fn pod_uid(p: &StoredPod) -> &str {
    p.metadata.uid.as_deref().unwrap_or("")
}

/// The smallest multiple of `period` strictly greater than `t`.
fn next_tick_after(t: SimTime, period: SimDuration) -> SimTime {
    SimTime(
        t.0.div_euclid(period.0)
            .saturating_add(1)
            .saturating_mul(period.0),
    )
}

fn floor_to(t: SimTime, period: SimDuration) -> SimTime {
    SimTime(t.0.div_euclid(period.0).saturating_mul(period.0))
}

impl SchedulingQueue {
    pub fn new(config: QueueConfig) -> SchedulingQueue {
        let mut profiles = BTreeMap::new();
        let mut plugin_events: BTreeMap<&'static str, Vec<ClusterEvent>> = BTreeMap::new();
        for (name, pc) in config.profiles {
            let mut hints: Vec<HintEntry> = pc
                .events
                .iter()
                .map(|(plugin, e)| HintEntry {
                    plugin,
                    event: e.event,
                    hint: e.hint.clone(),
                })
                .collect();
            // Upstream registers Node/UpdateNodeTaint (always Queue) for a plugin that registers
            // Node/Add without it, because the legacy preCheck may hide node additions.
            let mut plugins: Vec<&'static str> = Vec::new();
            for (plugin, _) in &pc.events {
                if !plugins.contains(plugin) {
                    plugins.push(plugin);
                }
            }
            for plugin in plugins {
                let node_events = || {
                    hints.iter().filter(move |h| {
                        h.plugin == plugin && h.event.resource == EventResource::Node
                    })
                };
                let node_add = node_events().any(|h| h.event.action.intersects(ActionType::ADD));
                let node_taint =
                    node_events().any(|h| h.event.action.intersects(ActionType::UPDATE_NODE_TAINT));
                if node_add && !node_taint {
                    hints.push(HintEntry {
                        plugin,
                        event: NODE_UPDATE_TAINT,
                        hint: None,
                    });
                }
            }
            for h in &hints {
                plugin_events.entry(h.plugin).or_default().push(h.event);
            }
            profiles.insert(
                name,
                Profile {
                    pre_enqueue: pc.pre_enqueue,
                    hints,
                },
            );
        }
        let backoff_order = if config.pop_from_backoff_q {
            Order::ExpiryThenQueueSort(config.queue_sort.clone())
        } else {
            Order::Expiry
        };
        SchedulingQueue {
            initial_backoff: config.initial_backoff,
            max_backoff: config.max_backoff,
            pop_from_backoff_q: config.pop_from_backoff_q,
            profiles,
            plugin_events,
            active_q: PodHeap::new(Order::QueueSort(config.queue_sort)),
            backoff_q: PodHeap::new(backoff_order),
            error_backoff_q: PodHeap::new(Order::Expiry),
            unschedulable_pods: UnschedulablePods::default(),
            seq: 0,
            scheduling_cycle: 0,
            in_flight_pods: BTreeSet::new(),
            in_flight_events: BTreeMap::new(),
            nominator: Nominator::default(),
            records_nomination_on_add: false,
            last_backoff_flush: SimTime::ZERO,
            last_leftover_flush: SimTime::ZERO,
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    // ---- PreEnqueue ----

    fn run_pre_enqueue(&self, p: &mut QueuedPodInfo) {
        let Some(profile) = self.profiles.get(p.pod_info.scheduler_name()) else {
            p.gating_plugin = None;
            return;
        };
        let gating = p.gating_plugin;
        if let Some(g) = gating {
            if let Some(pl) = profile.pre_enqueue.iter().find(|pl| pl.name() == g) {
                if !run_pre_enqueue_plugin(&**pl, p) {
                    return;
                }
            }
        }
        for pl in &profile.pre_enqueue {
            if Some(pl.name()) == gating {
                continue;
            }
            if !run_pre_enqueue_plugin(&**pl, p) {
                return;
            }
        }
        p.gating_plugin = None;
    }

    fn pre_enqueue_would_pass(&self, p: &QueuedPodInfo) -> bool {
        let mut c = p.clone();
        self.run_pre_enqueue(&mut c);
        !c.gated()
    }

    // ---- Moves between sub-queues ----

    /// Requeues a pod taken out of (or about to enter) unschedulablePods per the strategy.
    fn requeue(
        &mut self,
        mut p: QueuedPodInfo,
        strategy: Strategy,
        event: &str,
        now: SimTime,
    ) -> QueueName {
        if strategy == Strategy::Skip {
            self.unschedulable_pods.insert(key_of(&p), p);
            return QueueName::Unschedulable;
        }
        if strategy == Strategy::AfterBackoff && self.is_backing_off(&mut p, now) {
            return if self.move_to_backoff_q(p) {
                QueueName::Backoff
            } else {
                QueueName::Unschedulable
            };
        }
        if self.move_to_active_q(p, event, false, now) {
            QueueName::Active
        } else {
            QueueName::Unschedulable
        }
    }

    // ---- Public operations (spec 2.4) ----

    /// A new unscheduled pod (informer add): PreEnqueue, then activeQ, or unschedulablePods
    /// when gated. Also records the pod's `status.nominatedNodeName` in the nominator: from
    /// v1.37 first, whether or not the pod is gated (upstream `addPod` since #139057); before,
    /// only when the pod reaches activeQ, so a gated pod's nomination held no room.
    pub fn add(&mut self, pod: Arc<PodInfo>, now: SimTime) {
        let p = QueuedPodInfo::new(Arc::clone(&pod), now);
        if self.records_nomination_on_add {
            self.nominator.add(&p.pod_info, None);
        }
        self.move_to_active_q(p, labels::UNSCHEDULED_POD_ADD.label, false, now);
        self.refresh_nominated(&pod);
    }

    /// Whether [`SchedulingQueue::add`] (and an update of a pod in no queue) records the pod's
    /// nomination even when the pod is gated (kubernetes#139057, v1.37.0).
    pub fn set_records_nomination_on_add(&mut self, on: bool) {
        self.records_nomination_on_add = on;
    }

    /// An unscheduled pod changed (informer update).
    ///
    /// In flight: the derived update events are recorded for it. In activeQ or backoffQ: the
    /// pod is replaced in place. In unschedulablePods: each derived event goes through the
    /// hints of the rejecting (or gating) plugins and may move the pod. In no queue: added as
    /// new.
    pub fn update(&mut self, old: &StoredPod, new: Arc<PodInfo>, now: SimTime) {
        let pod = Arc::clone(&new);
        self.update_queued(old, new, now);
        self.refresh_nominated(&pod);
    }

    fn update_queued(&mut self, old: &StoredPod, new: Arc<PodInfo>, now: SimTime) {
        let events = pod_update_events(old, &new.pod);
        if self.record_events_if_pod_in_flight(new.uid(), &events, Some(old), &new.pod) {
            return;
        }
        let key = new.key();
        let replace = |p: &mut QueuedPodInfo| p.pod_info = new.clone();
        if self.active_q.update(&key, replace)
            || self.backoff_q.update(&key, replace)
            || self.error_backoff_q.update(&key, replace)
        {
            self.nominator.update(old, &new);
            return;
        }
        if let Some(mut p) = self.unschedulable_pods.remove(&key) {
            p.pod_info = new.clone();
            self.nominator.update(old, &new);
            let mut held = Some(p);
            for event in &events {
                let Some(p) = held.take() else { break };
                let strategy = self.worth_requeuing(
                    &p,
                    event,
                    Some(EventObject::Pod(old)),
                    Some(EventObject::Pod(&new.pod)),
                );
                match self.requeue(p, strategy, event.label, now) {
                    // Still parked (hint said skip, or still gated): try the next event.
                    QueueName::Unschedulable => held = self.unschedulable_pods.remove(&key),
                    // Upstream keeps looping over the remaining events when the pod went to
                    // backoffQ without PopFromBackoffQ, which could park it twice; stop instead.
                    QueueName::Active | QueueName::Backoff => break,
                }
            }
            if let Some(p) = held {
                self.unschedulable_pods.insert(key, p);
            }
            return;
        }
        let p = QueuedPodInfo::new(new, now);
        if self.records_nomination_on_add {
            // Upstream v1.37 adds such a pod through `addPod`, which records the nomination.
            self.nominator.add(&p.pod_info, None);
        }
        self.move_to_active_q(p, UNSCHEDULED_POD_UPDATE.label, false, now);
    }

    /// An unscheduled pod was deleted: drops its nomination and removes it from every queue.
    pub fn delete(&mut self, pod: &PodInfo) {
        self.nominator.delete(pod.uid());
        let key = pod.key();
        if self.active_q.remove(&key).is_none()
            && self.backoff_q.remove(&key).is_none()
            && self.error_backoff_q.remove(&key).is_none()
        {
            self.unschedulable_pods.remove(&key);
        }
        self.refresh_nominated(pod);
    }

    /// The failure handler's entry: puts a pod whose attempt failed back. Replays the events
    /// recorded while it was in flight through the hints: a helpful one sends it to backoffQ
    /// (or activeQ if its backoff is already over, or at once for a Pending plugin), otherwise
    /// it is parked in unschedulablePods. A pod that failed with an error (no rejecting plugin)
    /// always goes to backoffQ. Always ends the pod's in-flight tracking.
    pub fn add_unschedulable_if_not_present(
        &mut self,
        mut pinfo: QueuedPodInfo,
        _pod_scheduling_cycle: i64,
        now: SimTime,
    ) -> Result<(), String> {
        let pod = Arc::clone(&pinfo.pod_info);
        let key = key_of(&pinfo);
        let err = if self.unschedulable_pods.contains_key(&key) {
            Some("unschedulable queue")
        } else if self.active_q.contains(&key) {
            Some("active queue")
        } else if self.backoff_contains(&key) {
            Some("backoff queue")
        } else {
            None
        };
        if let Some(q) = err {
            self.done(pod.uid());
            self.refresh_nominated(&pod);
            return Err(format!("Pod {key} is already present in the {q}"));
        }
        if pinfo.unschedulable_plugins.is_empty() && pinfo.pending_plugins.is_empty() {
            pinfo.consecutive_errors_count += 1;
        } else {
            pinfo.unschedulable_count += 1;
            pinfo.consecutive_errors_count = 0;
        }
        pinfo.timestamp = now;
        pinfo.backoff_expiration = None;
        let strategy = self.hint_for_in_flight_pod(&pinfo);
        self.requeue(pinfo, strategy, move_labels::SCHEDULE_ATTEMPT_FAILURE, now);
        self.done(pod.uid());
        self.refresh_nominated(&pod);
        Ok(())
    }

    /// A cluster event: moves the unschedulable pods (passing `pre_check`) that the event may
    /// help, per the hints, and records the event for in-flight pods. An event no plugin
    /// registered for does nothing.
    /// Whether a cluster event can change anything: some pod waits in unschedulablePods or
    /// is in flight (its events are recorded). When not, callers may skip working out which
    /// events an update is (a scale-up binds and starts thousands of pods, each an update).
    pub fn wants_cluster_events(&self) -> bool {
        !self.unschedulable_pods.is_empty() || !self.in_flight_pods.is_empty()
    }

    pub fn move_all_to_active_or_backoff_queue(
        &mut self,
        event: ClusterEvent,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
        pre_check: Option<&dyn Fn(&PodInfo) -> bool>,
        now: SimTime,
    ) {
        if !self.is_event_of_interest(&event) {
            return;
        }
        if self.unschedulable_pods.is_empty() {
            // Nothing parked to move (the event of every pod bound while none waits): the
            // hints are not gathered.
            self.record_event_if_any_in_flight(event, old, new);
            return;
        }
        // Hints are pure functions of the pod and the event, and requeueing one pod changes no
        // other parked pod: deciding for every pod first, then moving those that go, gives the
        // same result as deciding pod by pod without copying every parked pod's key (a node
        // event with 100,000 parked pods would otherwise copy and look up 100,000 keys).
        let hints = self.hints_for(&event);
        let moving: Vec<(String, Strategy)> = self
            .unschedulable_pods
            .iter_with_scheduler_name()
            .filter(|(_, p, _)| pre_check.is_none_or(|f| f(&p.pod_info)))
            .filter(|(_, p, _)| !p.gated() || self.gating_plugin_interested(p, &event))
            .filter_map(|(key, p, scheduler_name)| {
                match self.worth_requeuing_with(p, scheduler_name, &event, &hints, old, new) {
                    Strategy::Skip => None,
                    strategy => Some((key.clone(), strategy)),
                }
            })
            .collect();
        for (key, strategy) in moving {
            let p = self.unschedulable_pods.remove(&key).expect("present");
            self.requeue(p, strategy, event.label, now);
        }
        self.record_event_if_any_in_flight(event, old, new);
    }

    fn move_pods_to_active_or_backoff_queue(
        &mut self,
        keys: &[String],
        event: ClusterEvent,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
        now: SimTime,
    ) {
        if !self.is_event_of_interest(&event) {
            return;
        }
        // As in `move_all_to_active_or_backoff_queue`: decide for every pod, then move.
        let hints = self.hints_for(&event);
        let moving: Vec<(String, Strategy)> = keys
            .iter()
            .filter_map(|key| {
                let p = self.unschedulable_pods.get(key)?;
                if p.gated() && !self.gating_plugin_interested(p, &event) {
                    return None;
                }
                match self.worth_requeuing_with(
                    p,
                    p.pod_info.scheduler_name(),
                    &event,
                    &hints,
                    old,
                    new,
                ) {
                    Strategy::Skip => None,
                    strategy => Some((key.clone(), strategy)),
                }
            })
            .collect();
        for (key, strategy) in moving {
            let p = self.unschedulable_pods.remove(&key).expect("present");
            self.requeue(p, strategy, event.label, now);
        }
        self.record_event_if_any_in_flight(event, old, new);
    }

    /// ForceActivate: moves each pod (by `namespace/name`) found in unschedulablePods or
    /// backoffQ to activeQ (PreEnqueue permitting). For a pod in flight, a ForceActivate event
    /// targeted at it is recorded so that it is requeued when it comes back.
    pub fn activate(&mut self, keys: &[String], now: SimTime) {
        for key in keys {
            if let Some(p) = self.unschedulable_pods.remove(key) {
                self.move_to_active_q(p, move_labels::FORCE_ACTIVATE, false, now);
                continue;
            }
            if let Some(p) = self
                .backoff_q
                .remove(key)
                .or_else(|| self.error_backoff_q.remove(key))
            {
                self.move_to_active_q(p, move_labels::FORCE_ACTIVATE, true, now);
                continue;
            }
            let in_flight = self
                .in_flight_pods
                .iter()
                .find(|f| &f.pod.key() == key)
                .map(|f| f.pod.clone());
            if let Some(pod) = in_flight {
                self.record_events_if_pod_in_flight(
                    pod.uid(),
                    &[labels::FORCE_ACTIVATE],
                    None,
                    &pod.pod,
                );
            }
        }
    }

    // ---- Timers ----

    /// Runs each flush whose tick (whole seconds for backoffQ, multiples of 30 s for the
    /// leftovers) has come since it last ran, as of that tick (the latest one at or before
    /// `now`; missed earlier ticks are folded into it).
    pub fn run_timers(&mut self, now: SimTime) {
        let tick = floor_to(now, BACKOFF_FLUSH_PERIOD);
        if tick > self.last_backoff_flush {
            self.last_backoff_flush = tick;
            self.flush_backoff_q_completed(tick);
        }
        let tick = floor_to(now, LEFTOVER_FLUSH_PERIOD);
        if tick > self.last_leftover_flush {
            self.last_leftover_flush = tick;
            self.flush_unschedulable_pods_leftover(tick);
        }
    }

    /// The first tick at which a flush would move some pod, or `None`. The backoffQ flush moves
    /// a pod at the first whole second after its expiry; the leftover flush at the first
    /// multiple of 30 s more than 5 minutes after the pod was parked (a pod parked at t=0 at
    /// 330 s). Ticks already run are never returned again.
    pub fn next_timer(&self) -> Option<SimTime> {
        let mut best: Option<SimTime> = None;
        let min_expiry = [self.backoff_q.peek(), self.error_backoff_q.peek()]
            .into_iter()
            .flatten()
            .map(|p| p.backoff_expiration.unwrap_or(SimTime::ZERO))
            .min();
        if let Some(e) = min_expiry {
            let tick = next_tick_after(e, BACKOFF_FLUSH_PERIOD)
                .max(self.last_backoff_flush + BACKOFF_FLUSH_PERIOD);
            best = Some(tick);
        }
        // A pod's leftover tick only grows with the time it was parked, and the leftover flush
        // moves every pod no plugin gates: the earliest such pod gives their earliest tick.
        let leftover_tick = |timestamp: SimTime| {
            next_tick_after(
                timestamp + POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
                LEFTOVER_FLUSH_PERIOD,
            )
            .max(self.last_leftover_flush + LEFTOVER_FLUSH_PERIOD)
        };
        if let Some(tick) = self
            .unschedulable_pods
            .earliest_ungated()
            .map(leftover_tick)
        {
            if best.is_none_or(|b| tick < b) {
                best = Some(tick);
            }
        }
        // Gated pods move only if their gating plugin lets them: the first one that would, in
        // the order they were parked, has the earliest tick among them.
        for p in self.unschedulable_pods.gated_by_time() {
            let tick = leftover_tick(p.timestamp);
            if best.is_some_and(|b| tick >= b) {
                break;
            }
            if self.leftover_would_move(p, tick) {
                best = Some(tick);
                break;
            }
        }
        best
    }

    // ---- Introspection ----

    pub fn pending_pods(&self) -> PendingCounts {
        let gated = self.unschedulable_pods.n_gated();
        PendingCounts {
            active: self.active_q.len(),
            backoff: self.backoff_q.len() + self.error_backoff_q.len(),
            unschedulable: self.unschedulable_pods.len() - gated,
            gated,
        }
    }

    /// A pending pod by `namespace/name`, with where it is.
    pub fn get(&self, key: &str) -> Option<(QueueName, &QueuedPodInfo)> {
        if let Some(p) = self.active_q.get(key) {
            return Some((QueueName::Active, p));
        }
        if let Some(p) = self.backoff_get(key) {
            return Some((QueueName::Backoff, p));
        }
        self.unschedulable_pods
            .get(key)
            .map(|p| (QueueName::Unschedulable, p))
    }
}

fn run_pre_enqueue_plugin(pl: &dyn Plugin, p: &mut QueuedPodInfo) -> bool {
    let Some(pe) = pl.as_pre_enqueue() else {
        return true;
    };
    if pe.pre_enqueue(&p.pod_info).is_success() {
        return true;
    }
    p.unschedulable_plugins.insert(pl.name());
    p.gating_plugin = Some(pl.name());
    false
}

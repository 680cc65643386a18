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

mod events;
mod heap;
mod nominator;
#[cfg(test)]
mod tests;
mod unschedulable;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_core::time::{SimDuration, NANOS_PER_SEC};
use kubeplane_core::SimTime;

use crate::framework::events::{labels, QueueingHintFn};
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, EventObject, EventResource, Plugin, PodInfo,
    QueuedPodInfo, QueueingHint,
};

pub use events::{
    event_matches, node_update_events, pod_update_events, ASSIGNED_POD_UPDATE,
    NODE_UPDATE_ALLOCATABLE, NODE_UPDATE_ANNOTATION, NODE_UPDATE_CONDITION, NODE_UPDATE_LABEL,
    NODE_UPDATE_TAINT, UNSCHEDULED_POD_UPDATE,
};
use heap::{Order, PodHeap};
use nominator::{Nominator, PodRef};
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
    Pod(Arc<Pod>),
    Node(Arc<Node>),
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
    /// uid → (its entry in `in_flight_events`, the pod as popped).
    in_flight_pods: BTreeMap<String, (u64, Arc<PodInfo>)>,
    in_flight_events: BTreeMap<u64, InFlightEntry>,
    nominator: Nominator,
    /// The last whole-second tick at which the backoffQ flush ran.
    last_backoff_flush: SimTime,
    /// The last 30 s tick at which the leftover flush ran.
    last_leftover_flush: SimTime,
}

fn key_of(p: &QueuedPodInfo) -> String {
    p.pod_info.key()
}

fn pod_uid(p: &Pod) -> &str {
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
            in_flight_pods: BTreeMap::new(),
            in_flight_events: BTreeMap::new(),
            nominator: Nominator::default(),
            last_backoff_flush: SimTime::ZERO,
            last_leftover_flush: SimTime::ZERO,
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    // ---- Backoff (spec 2.3) ----

    /// The backoff of a pod after `attempts` attempts: 0 for none, else
    /// `initial × 2^(attempts−1)` capped at the maximum, computed without overflow.
    pub fn backoff_duration(&self, pinfo: &QueuedPodInfo) -> SimDuration {
        if pinfo.attempts == 0 {
            return SimDuration::ZERO;
        }
        let shift = pinfo.attempts - 1;
        let (initial, max) = (self.initial_backoff.0, self.max_backoff.0);
        if initial > max.checked_shr(shift).unwrap_or(0) {
            return self.max_backoff;
        }
        SimDuration(initial.checked_shl(shift).unwrap_or(0))
    }

    /// Truncates to the backoffQ ordering window when PopFromBackoffQ is on.
    fn align(&self, t: SimTime) -> SimTime {
        if self.pop_from_backoff_q {
            floor_to(t, BACKOFF_FLUSH_PERIOD)
        } else {
            t
        }
    }

    /// The backoff expiry, `None` for a pod never attempted (no backoff at all).
    fn compute_backoff_time(&self, p: &QueuedPodInfo) -> Option<SimTime> {
        if p.attempts == 0 {
            return None;
        }
        if let Some(t) = p.backoff_expiration {
            return Some(t);
        }
        Some(self.align(p.timestamp + self.backoff_duration(p)))
    }

    /// Like [`Self::compute_backoff_time`], caching the result in the pod (upstream
    /// `getBackoffTime`); the cache is cleared on Pop and when the pod comes back.
    fn backoff_time(&self, p: &mut QueuedPodInfo) -> Option<SimTime> {
        let t = self.compute_backoff_time(p);
        if t.is_some() {
            p.backoff_expiration = t;
        }
        t
    }

    /// Whether the pod is still backing off at `now`: with PopFromBackoffQ, while its expiry is
    /// not before the start of the current 1-second window; without, while it is not before
    /// `now` (an expiry equal to `now` still backs off, as upstream's `!Before`).
    fn expiry_backing_off(&self, expiry: Option<SimTime>, now: SimTime) -> bool {
        expiry.is_some_and(|t| t >= self.align(now))
    }

    fn is_backing_off(&self, p: &mut QueuedPodInfo, now: SimTime) -> bool {
        let t = self.backoff_time(p);
        self.expiry_backing_off(t, now)
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

    /// Puts the pod into activeQ after re-running PreEnqueue (skipped for a pod coming straight
    /// from backoffQ with PopFromBackoffQ: it passed PreEnqueue on entering backoffQ). A gated
    /// pod goes to unschedulablePods instead. Returns whether it reached activeQ.
    fn move_to_active_q(
        &mut self,
        mut p: QueuedPodInfo,
        event: &str,
        moves_from_backoff_q: bool,
        now: SimTime,
    ) -> bool {
        if !(self.pop_from_backoff_q && moves_from_backoff_q) {
            self.run_pre_enqueue(&mut p);
        }
        let key = key_of(&p);
        if p.gated() {
            if !self.active_q.contains(&key) && !self.backoff_contains(&key) {
                self.unschedulable_pods.insert_if_absent(key, p);
            }
            return false;
        }
        if p.initial_attempt_timestamp.is_none() {
            p.initial_attempt_timestamp = Some(now);
        }
        self.unschedulable_pods.remove(&key);
        self.backoff_q.remove(&key);
        self.error_backoff_q.remove(&key);
        if event == labels::UNSCHEDULED_POD_ADD.label || event == UNSCHEDULED_POD_UPDATE.label {
            self.nominator.add(&p.pod_info, None);
        }
        let seq = self.next_seq();
        self.active_q.add_or_update(seq, p);
        true
    }

    /// Puts the pod into backoffQ (the error heap when no plugin rejected it). With
    /// PopFromBackoffQ, PreEnqueue runs first and a gated pod goes to unschedulablePods instead.
    /// Returns whether it reached backoffQ.
    fn move_to_backoff_q(&mut self, mut p: QueuedPodInfo) -> bool {
        let key = key_of(&p);
        if self.pop_from_backoff_q {
            self.run_pre_enqueue(&mut p);
            if p.gated() {
                self.unschedulable_pods.insert_if_absent(key, p);
                return false;
            }
        }
        self.unschedulable_pods.remove(&key);
        self.backoff_time(&mut p);
        let seq = self.next_seq();
        if p.unschedulable_plugins.is_empty() && p.pending_plugins.is_empty() {
            self.backoff_q.remove(&key);
            self.error_backoff_q.add_or_update(seq, p);
        } else {
            self.error_backoff_q.remove(&key);
            self.backoff_q.add_or_update(seq, p);
        }
        true
    }

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

    fn backoff_contains(&self, key: &str) -> bool {
        self.backoff_q.contains(key) || self.error_backoff_q.contains(key)
    }

    fn backoff_get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.backoff_q
            .get(key)
            .or_else(|| self.error_backoff_q.get(key))
    }

    // ---- Queueing hints (spec 2.6) ----

    fn is_event_of_interest(&self, event: &ClusterEvent) -> bool {
        event.is_wildcard()
            || self
                .profiles
                .values()
                .any(|p| p.hints.iter().any(|h| event_matches(&h.event, event)))
    }

    /// Whether the gating plugin of a gated pod registered an event matching `event`.
    fn gating_plugin_interested(&self, p: &QueuedPodInfo, event: &ClusterEvent) -> bool {
        p.gating_plugin
            .and_then(|g| self.plugin_events.get(g))
            .is_some_and(|evs| evs.iter().any(|r| event_matches(r, event)))
    }

    /// upstream `isPodWorthRequeuing`: asks the hints of the plugins that rejected the pod.
    fn worth_requeuing(
        &self,
        p: &QueuedPodInfo,
        event: &ClusterEvent,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
    ) -> Strategy {
        let hints = self.hints_for(event);
        self.worth_requeuing_with(p, p.pod_info.scheduler_name(), event, &hints, old, new)
    }

    /// Each profile's hints registered for an event matching `event`, in registration order
    /// (what [`SchedulingQueue::worth_requeuing`] asks), worked out once for many pods.
    fn hints_for(&self, event: &ClusterEvent) -> BTreeMap<&str, Vec<&HintEntry>> {
        self.profiles
            .iter()
            .map(|(name, profile)| {
                let hints = profile
                    .hints
                    .iter()
                    .filter(|h| event_matches(&h.event, event))
                    .collect();
                (name.as_str(), hints)
            })
            .collect()
    }

    /// [`SchedulingQueue::worth_requeuing`] with the hints of [`SchedulingQueue::hints_for`].
    fn worth_requeuing_with(
        &self,
        p: &QueuedPodInfo,
        scheduler_name: &str,
        event: &ClusterEvent,
        hints: &BTreeMap<&str, Vec<&HintEntry>>,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
    ) -> Strategy {
        if p.unschedulable_plugins.is_empty() && p.pending_plugins.is_empty() {
            return Strategy::AfterBackoff;
        }
        if event.is_wildcard() {
            // A wildcard event carrying a pod is meant for that pod only (ForceActivate).
            if let Some(obj) = new {
                match obj.as_pod() {
                    Some(pod) if pod_uid(pod) == p.pod_info.uid => {}
                    _ => return Strategy::Skip,
                }
            }
            return Strategy::AfterBackoff;
        }
        let Some(hints) = hints.get(scheduler_name) else {
            return Strategy::AfterBackoff;
        };
        let mut strategy = Strategy::Skip;
        for h in hints {
            let pending = p.pending_plugins.contains(h.plugin);
            if !pending && !p.unschedulable_plugins.contains(h.plugin) {
                continue;
            }
            // A hint error counts as Queue so that the pod cannot get stuck.
            let hint = match &h.hint {
                None => QueueingHint::Queue,
                Some(f) => f(&p.pod_info.pod, old, new).unwrap_or(QueueingHint::Queue),
            };
            if hint == QueueingHint::QueueSkip {
                continue;
            }
            if pending {
                return Strategy::Immediately;
            }
            if p.pending_plugins.is_empty() {
                return Strategy::AfterBackoff;
            }
            strategy = Strategy::AfterBackoff;
        }
        strategy
    }

    /// Replays the events recorded while the pod was in flight (upstream
    /// `determineSchedulingHintForInFlightPod`).
    fn hint_for_in_flight_pod(&self, p: &QueuedPodInfo) -> Strategy {
        if p.unschedulable_plugins.is_empty() && p.pending_plugins.is_empty() {
            return Strategy::AfterBackoff;
        }
        let Some(&(seq, _)) = self.in_flight_pods.get(&p.pod_info.uid) else {
            return Strategy::AfterBackoff;
        };
        let mut strategy = Strategy::Skip;
        for entry in self.in_flight_events.range(seq + 1..).map(|(_, e)| e) {
            let InFlightEntry::Event { event, old, new } = entry else {
                continue;
            };
            let old = old.as_ref().map(OwnedObject::get);
            let new = new.as_ref().map(OwnedObject::get);
            match self.worth_requeuing(p, event, old, new) {
                Strategy::Skip => {}
                Strategy::Immediately => return Strategy::Immediately,
                Strategy::AfterBackoff => {
                    strategy = Strategy::AfterBackoff;
                    if p.pending_plugins.is_empty() {
                        return strategy;
                    }
                }
            }
        }
        strategy
    }

    // ---- In-flight tracking ----

    fn record_event_if_any_in_flight(
        &mut self,
        event: ClusterEvent,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
    ) {
        if self.in_flight_pods.is_empty() {
            return;
        }
        let seq = self.next_seq();
        self.in_flight_events.insert(
            seq,
            InFlightEntry::Event {
                event,
                old: old.map(OwnedObject::of),
                new: new.map(OwnedObject::of),
            },
        );
    }

    fn record_events_if_pod_in_flight(
        &mut self,
        uid: &str,
        events: &[ClusterEvent],
        old: Option<&Pod>,
        new: &Arc<Pod>,
    ) -> bool {
        if !self.in_flight_pods.contains_key(uid) {
            return false;
        }
        for &event in events {
            let seq = self.next_seq();
            self.in_flight_events.insert(
                seq,
                InFlightEntry::Event {
                    event,
                    old: old.map(|o| OwnedObject::Pod(Arc::new(o.clone()))),
                    new: Some(OwnedObject::Pod(new.clone())),
                },
            );
        }
        true
    }

    pub fn is_in_flight(&self, uid: &str) -> bool {
        self.in_flight_pods.contains_key(uid)
    }

    /// The pods popped and not yet done, by UID.
    pub fn in_flight_pods(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.in_flight_pods.values().map(|(_, p)| p)
    }

    // ---- Public operations (spec 2.4) ----

    /// A new unscheduled pod (informer add): PreEnqueue, then activeQ, or unschedulablePods
    /// when gated. Also records the pod's `status.nominatedNodeName` in the nominator.
    pub fn add(&mut self, pod: Arc<PodInfo>, now: SimTime) {
        let p = QueuedPodInfo::new(pod, now);
        self.move_to_active_q(p, labels::UNSCHEDULED_POD_ADD.label, false, now);
    }

    /// An unscheduled pod changed (informer update).
    ///
    /// In flight: the derived update events are recorded for it. In activeQ or backoffQ: the
    /// pod is replaced in place. In unschedulablePods: each derived event goes through the
    /// hints of the rejecting (or gating) plugins and may move the pod. In no queue: added as
    /// new.
    pub fn update(&mut self, old: &Pod, new: Arc<PodInfo>, now: SimTime) {
        let events = pod_update_events(old, &new.pod);
        if self.record_events_if_pod_in_flight(&new.uid.clone(), &events, Some(old), &new.pod) {
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
        self.move_to_active_q(p, UNSCHEDULED_POD_UPDATE.label, false, now);
    }

    /// An unscheduled pod was deleted: drops its nomination and removes it from every queue.
    pub fn delete(&mut self, pod: &PodInfo) {
        self.nominator.delete(&pod.uid);
        let key = pod.key();
        if self.active_q.remove(&key).is_some() {
            return;
        }
        if self.backoff_q.remove(&key).is_some() || self.error_backoff_q.remove(&key).is_some() {
            return;
        }
        self.unschedulable_pods.remove(&key);
    }

    /// Pops the next pod: the head of activeQ by QueueSort, else (PopFromBackoffQ) the head of
    /// the plugin-rejected backoff heap even if its backoff is not over. Counts the attempt,
    /// advances the scheduling cycle, clears the rejecting plugins and marks the pod in flight.
    pub fn pop(&mut self, _now: SimTime) -> Option<QueuedPodInfo> {
        loop {
            let mut p = match self.active_q.pop() {
                Some(p) => p,
                None if self.pop_from_backoff_q => self.backoff_q.pop()?,
                None => return None,
            };
            let uid = p.pod_info.uid.clone();
            if self.in_flight_pods.contains_key(&uid) {
                // The same pod tracked twice: discard this copy, as upstream does.
                continue;
            }
            p.attempts += 1;
            p.backoff_expiration = None;
            p.unschedulable_plugins.clear();
            p.pending_plugins.clear();
            self.scheduling_cycle += 1;
            let seq = self.next_seq();
            self.in_flight_events.insert(seq, InFlightEntry::Pod);
            self.in_flight_pods.insert(uid, (seq, p.pod_info.clone()));
            return Some(p);
        }
    }

    /// The pod's attempt is over: it is no longer in flight, and events no remaining in-flight
    /// pod needs are dropped.
    pub fn done(&mut self, uid: &str) {
        let Some((seq, _)) = self.in_flight_pods.remove(uid) else {
            return;
        };
        self.in_flight_events.remove(&seq);
        while let Some(entry) = self.in_flight_events.first_entry() {
            if matches!(entry.get(), InFlightEntry::Pod) {
                break;
            }
            entry.remove();
        }
    }

    pub fn scheduling_cycle(&self) -> i64 {
        self.scheduling_cycle
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
        let uid = pinfo.pod_info.uid.clone();
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
            self.done(&uid);
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
        self.done(&uid);
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
                .values()
                .find(|(_, p)| &p.key() == key)
                .map(|(_, p)| p.clone());
            if let Some(pod) = in_flight {
                self.record_events_if_pod_in_flight(
                    &pod.uid,
                    &[labels::FORCE_ACTIVATE],
                    None,
                    &pod.pod,
                );
            }
        }
    }

    // ---- Timers ----

    /// Moves every pod whose backoff is over (both heaps) to activeQ.
    pub fn flush_backoff_q_completed(&mut self, now: SimTime) {
        let window_start = self.align(now);
        let mut done = Vec::new();
        for heap in [&mut self.backoff_q, &mut self.error_backoff_q] {
            while let Some(head) = heap.peek() {
                // Same rule as `expiry_backing_off`.
                if head.backoff_expiration.is_some_and(|t| t >= window_start) {
                    break;
                }
                done.push(heap.pop().expect("peeked"));
            }
        }
        for p in done {
            self.move_to_active_q(p, move_labels::BACKOFF_COMPLETE, true, now);
        }
    }

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

    /// Whether the leftover flush at `tick` would take the pod out of unschedulablePods.
    fn leftover_would_move(&self, p: &QueuedPodInfo, tick: SimTime) -> bool {
        if !p.gated() {
            return true;
        }
        if !self.gating_plugin_interested(p, &labels::UNSCHEDULABLE_TIMEOUT) {
            return false;
        }
        let backing_off = self.expiry_backing_off(self.compute_backoff_time(p), tick);
        (backing_off && !self.pop_from_backoff_q) || self.pre_enqueue_would_pass(p)
    }

    /// Whether activeQ (or, with PopFromBackoffQ, the plugin-rejected backoff heap) has a pod.
    pub fn has_poppable(&self) -> bool {
        !self.active_q.is_empty() || (self.pop_from_backoff_q && !self.backoff_q.is_empty())
    }

    // ---- Nominator (spec 2.5) ----

    /// Nominates the pod to `nominated_node` (Override; an empty name clears), or with `None`
    /// to its `status.nominatedNodeName` (Noop). A pod with `spec.nodeName` is not nominated.
    /// Upstream also skips pods missing from the informer; the caller checks that.
    pub fn add_nominated_pod(&mut self, pod: Arc<PodInfo>, nominated_node: Option<String>) {
        self.nominator.add(&pod, nominated_node.as_deref());
    }

    pub fn delete_nominated_pod_if_exists(&mut self, pod: &PodInfo) {
        self.nominator.delete(&pod.uid);
    }

    /// Whether any pod is nominated to any node.
    pub fn has_nominated_pods(&self) -> bool {
        self.nominator.has_any()
    }

    /// The nodes that have nominated pods.
    pub fn nominated_node_names(&self) -> impl Iterator<Item = &str> {
        self.nominator.node_names()
    }

    /// The node a pod is nominated to, by UID.
    pub fn nominated_node_of(&self, uid: &str) -> Option<&str> {
        self.nominator.node_of(uid)
    }

    /// The pods nominated to `node`, in nomination order, each as its latest queued version. A
    /// pod in no queue (in flight) is returned as upstream does: a bare pod with only its name,
    /// namespace and UID (so no requests and priority 0).
    pub fn nominated_pods_for_node(&self, node: &str) -> Vec<Arc<PodInfo>> {
        self.nominator
            .pods_for_node(node)
            .iter()
            .map(|r| {
                let key = r.key();
                self.active_q
                    .get(&key)
                    .or_else(|| self.unschedulable_pods.get(&key))
                    .or_else(|| self.backoff_get(&key))
                    .map(|p| p.pod_info.clone())
                    .unwrap_or_else(|| bare_pod_info(r))
            })
            .collect()
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

    /// Every pending pod with where it is, sorted by key.
    pub fn pending_pod_list(&self) -> Vec<(QueueName, &QueuedPodInfo)> {
        let mut out: Vec<(QueueName, &QueuedPodInfo)> = self
            .active_q
            .iter()
            .map(|p| (QueueName::Active, p))
            .chain(
                self.backoff_q
                    .iter()
                    .chain(self.error_backoff_q.iter())
                    .map(|p| (QueueName::Backoff, p)),
            )
            .chain(
                self.unschedulable_pods
                    .values()
                    .map(|p| (QueueName::Unschedulable, p)),
            )
            .collect();
        out.sort_by_key(|(_, p)| key_of(p));
        out
    }

    /// The plugins that rejected or gate a parked pod (for explain output).
    pub fn rejector_plugins(&self, key: &str) -> BTreeSet<&'static str> {
        self.get(key)
            .map(|(_, p)| {
                p.unschedulable_plugins
                    .union(&p.pending_plugins)
                    .copied()
                    .collect()
            })
            .unwrap_or_default()
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

fn bare_pod_info(r: &PodRef) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(r.name.clone()),
            namespace: Some(r.namespace.clone()),
            uid: Some(r.uid.clone()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    })))
}

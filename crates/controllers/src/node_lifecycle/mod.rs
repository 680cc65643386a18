//! The node lifecycle controller (upstream `nodelifecycle.Controller`, events from
//! `node-controller`): turns missing heartbeats into node conditions and taints.
//!
//! Every `node-monitor-period` (5 s, from t=0) it checks each node's health signals: the node's
//! Ready condition (`lastHeartbeatTime`, posted by the node agent on change or every 5 minutes)
//! and the node's Lease in `kube-node-lease` (renewed every 10 s). Staleness is measured on the
//! controller's own clock: the last pass that saw a new heartbeat or renewal is the node's
//! probe time. When a pass finds `now > probe + grace` (50 s; 60 s while the node has never
//! posted a Ready condition) it sets Ready, MemoryPressure, DiskPressure and PIDPressure to
//! Unknown ("NodeStatusUnknown", "Kubelet stopped posting node status."), records
//! `NodeNotReady` on the node and marks the node's pods not ready.
//!
//! NoExecute taints follow the Ready status *observed at the start of a pass*: Unknown gives
//! `node.kubernetes.io/unreachable:NoExecute`, False gives `node.kubernetes.io/not-ready:NoExecute`
//! (a node flipped to Unknown by one pass is tainted by the next). Adding them is paced per
//! zone by a token bucket (`--node-eviction-rate` 0.1/s, burst 1), checked every 100 ms; a zone
//! that is partially disrupted uses `--secondary-node-eviction-rate` (0.01/s) when larger than
//! `--large-cluster-size-threshold` nodes and stops otherwise; when every zone is fully
//! disrupted all NoExecute taints are removed and tainting stops. Ready=True removes them.
//!
//! On every node add or update it reconciles the NoSchedule taints of TaintNodesByCondition:
//! not-ready / unreachable (Ready False / Unknown), memory-, disk- and pid-pressure,
//! network-unavailable, and unschedulable (`spec.unschedulable`).
//!
//! Cost: a pass touches only a compact per-node record fed by watch events, and looks each
//! node's Lease up in the cache (as upstream's lister; `simulate`'s Lease renewals are quiet
//! writes without watch events); it reads and clones a Node from the store only to write it.

mod health;
mod node_table;
mod rate_limited_queue;
mod tainting;
mod zones;

use node_table::NodeTable;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeCondition, PodCondition, Taint};
use kubeplane_api::{
    ApiError, Client, Component, EventType, Kind, Object, SlotHint, StoredNode, WatchEvent,
};
use kubeplane_core::time::SimDuration;
use kubeplane_core::{EventRecord, SimTime};

pub use rate_limited_queue::{
    Limiter, RateLimitedTimedQueue, TimedValue, EVICTION_RATE_LIMITER_BURST,
};

use crate::node_util::{pod_node_name, update_pod_condition, PodRef, PodsByNode, UniqueQueue};

/// The controller's name in kube-controller-manager.
pub const CONTROLLER_NAME: &str = "node-lifecycle-controller";
/// The source of the controller's events.
pub const EVENT_SOURCE: &str = "node-controller";

pub use kubeplane_core::taints::{
    TAINT_NODE_DISK_PRESSURE, TAINT_NODE_MEMORY_PRESSURE, TAINT_NODE_NETWORK_UNAVAILABLE,
    TAINT_NODE_NOT_READY, TAINT_NODE_PID_PRESSURE, TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
};

/// Nodes with this label (any value) do not count in their zone's disruption state.
pub const LABEL_EXCLUDE_DISRUPTION: &str = "node.kubernetes.io/exclude-disruption";
/// Where node agents keep their heartbeat Leases, named after the node.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

pub const LABEL_ZONE_BETA: &str = "failure-domain.beta.kubernetes.io/zone";
pub const LABEL_REGION_BETA: &str = "failure-domain.beta.kubernetes.io/region";
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
pub const LABEL_REGION: &str = "topology.kubernetes.io/region";

pub const REASON_NODE_STATUS_UNKNOWN: &str = "NodeStatusUnknown";
pub const MESSAGE_NODE_STATUS_UNKNOWN: &str = "Kubelet stopped posting node status.";
pub const REASON_NODE_STATUS_NEVER_UPDATED: &str = "NodeStatusNeverUpdated";
pub const MESSAGE_NODE_STATUS_NEVER_UPDATED: &str = "Kubelet never posted node status.";

/// How often the NoExecute tainting pass runs (upstream `NodeEvictionPeriod`).
pub const NODE_EVICTION_PERIOD: SimDuration = SimDuration(100_000_000);
/// Wait before retrying a node without a Ready condition in the tainting queue.
const TAINT_RETRY_NO_CONDITION: SimDuration = SimDuration(50_000_000);
/// Upstream retries a failed health update within 100 ms (5 × 20 ms); the store does not move
/// while a pass runs, so a retry only helps when the compact record was stale.
const NODE_HEALTH_UPDATE_RETRY: usize = 5;

/// The conditions set to Unknown when a node stops reporting (never NetworkUnavailable).
const CONDITIONS_SET_UNKNOWN: [&str; 4] =
    ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// The controller's flags (kube-controller-manager), with upstream v1.34 defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeLifecycleConfig {
    /// `--node-monitor-period`.
    pub node_monitor_period: SimDuration,
    /// `--node-monitor-grace-period`: 50 s since v1.32 (40 s before).
    pub node_monitor_grace_period: SimDuration,
    /// `--node-startup-grace-period`: used while a node has no Ready condition.
    pub node_startup_grace_period: SimDuration,
    /// `--node-eviction-rate`: NoExecute taints per second per zone.
    pub node_eviction_rate: f32,
    /// `--secondary-node-eviction-rate`: for partially disrupted large zones.
    pub secondary_node_eviction_rate: f32,
    /// `--unhealthy-zone-threshold`: not-ready fraction making a zone partially disrupted.
    pub unhealthy_zone_threshold: f32,
    /// `--large-cluster-size-threshold`.
    pub large_cluster_size_threshold: i32,
}

impl Default for NodeLifecycleConfig {
    fn default() -> Self {
        NodeLifecycleConfig {
            node_monitor_period: SimDuration::from_secs(5),
            node_monitor_grace_period: SimDuration::from_secs(50),
            node_startup_grace_period: SimDuration::from_secs(60),
            node_eviction_rate: 0.1,
            secondary_node_eviction_rate: 0.01,
            unhealthy_zone_threshold: 0.55,
            large_cluster_size_threshold: 50,
        }
    }
}

/// A zone's disruption state (upstream `ZoneState`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ZoneState {
    /// A zone seen for the first time; left at the end of the pass.
    Initial,
    /// Fewer than 3 nodes, or fewer than the threshold fraction, are not ready.
    Normal,
    /// At least 3 nodes and at least the threshold fraction are not ready.
    PartialDisruption,
    /// No node is ready.
    FullDisruption,
}

impl ZoneState {
    pub fn as_str(self) -> &'static str {
        match self {
            ZoneState::Initial => "Initial",
            ZoneState::Normal => "Normal",
            ZoneState::PartialDisruption => "PartialDisruption",
            ZoneState::FullDisruption => "FullDisruption",
        }
    }
}

/// Upstream `ComputeZoneState`: nodes without a Ready condition count as not ready.
pub fn compute_zone_state(n_ready: u32, n_not_ready: u32, unhealthy_threshold: f32) -> ZoneState {
    if n_ready == 0 && n_not_ready > 0 {
        ZoneState::FullDisruption
    } else if n_not_ready > 2
        && (n_not_ready as f32) / ((n_not_ready + n_ready) as f32) >= unhealthy_threshold
    {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    }
}

/// Upstream `GetZoneKey`: `region + ":\0:" + zone` from the beta failure-domain labels, falling
/// back to the topology labels; `""` when both are empty.
pub fn zone_key(labels: Option<&BTreeMap<String, String>>) -> String {
    let Some(labels) = labels else {
        return String::new();
    };
    let zone = labels
        .get(LABEL_ZONE_BETA)
        .or_else(|| labels.get(LABEL_ZONE))
        .map(String::as_str)
        .unwrap_or("");
    let region = labels
        .get(LABEL_REGION_BETA)
        .or_else(|| labels.get(LABEL_REGION))
        .map(String::as_str)
        .unwrap_or("");
    if region.is_empty() && zone.is_empty() {
        String::new()
    } else {
        format!("{region}:\u{0}:{zone}")
    }
}

/// A condition status as the controller compares it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum CondStatus {
    True,
    False,
    Unknown,
    /// Any other string: neither ready nor handled by the tainting rules.
    Other,
}

impl CondStatus {
    fn parse(s: &str) -> CondStatus {
        match s {
            "True" => CondStatus::True,
            "False" => CondStatus::False,
            "Unknown" => CondStatus::Unknown,
            _ => CondStatus::Other,
        }
    }
}

/// The parts of a Ready condition the health check compares.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct ReadySnapshot {
    status: CondStatus,
    heartbeat: Option<Timestamp>,
    transition: Option<Timestamp>,
}

/// Upstream `nodeHealthData`: what the last pass saw, on the controller's clock.
#[derive(Clone, Debug)]
struct Health {
    /// The last instant a new heartbeat or lease renewal was seen.
    probe: SimTime,
    ready_transition: SimTime,
    /// The Ready condition as of the last change seen.
    saved_ready: Option<ReadySnapshot>,
    /// The lease renewal last seen: `None` no lease stored; `Some(renewTime)`.
    saved_lease: Option<Option<Timestamp>>,
}

/// The controller's compact view of one node, fed by watch events.
#[derive(Clone, Debug)]
struct NodeEntry {
    uid: String,
    creation: Option<Timestamp>,
    zone: usize,
    excluded: bool,
    /// False after a Deleted event, until the next pass forgets the node.
    exists: bool,
    /// Known to the controller (upstream `knownNodeSet`): registered by a pass.
    known: bool,
    resource_version: u64,
    ready: Option<ReadySnapshot>,
    has_unreachable_no_execute: bool,
    has_not_ready_no_execute: bool,
    /// The node's Lease: `None` none; `Some(renewTime)`.
    lease: Option<Option<Timestamp>>,
    /// Where the cache keeps the node's Lease (each pass reads it).
    lease_slot: SlotHint,
    /// The cache's count of Lease writes ([`kubeplane_api::Cache::lease_writes`]) when
    /// `lease` was last set from the cache: while the count is the same, a read would set it
    /// alike. `None`: not read since `lease` was last set otherwise (or the cache keeps no
    /// count).
    lease_read: Option<u64>,
    health: Option<Health>,
    /// Upstream `nodesToRetry`: marking pods not ready failed.
    retry: bool,
    /// The monitor's steady mark: the controller's `steady_epoch` when the last pass found the
    /// node in the common case (see `health::quick_pass`) and nothing changed the record
    /// since; 0 when anything did (a watch event, a write of this controller, a general
    /// step). While it holds, a pass only refreshes the Lease and checks `steady_until`.
    steady: u64,
    /// With `steady`: the mark is the not-ready one (see `health::marks_steady_down`): the
    /// last pass found the node Unknown, tainted unreachable and in its zone's tainting set,
    /// with nothing to retry. While it holds and the Lease is not renewed, a pass only counts
    /// the node not ready.
    steady_down: bool,
    /// While steady: the probe time plus the grace period (the last instant the node stays
    /// within it).
    steady_until: SimTime,
    /// The resourceVersion of the node's last version in which the NoSchedule taint and label
    /// reconciliation found nothing to change (`None`: none, or not since it last did).
    reconciled: Option<u64>,
}

impl NodeEntry {
    fn new() -> NodeEntry {
        NodeEntry {
            uid: String::new(),
            creation: None,
            zone: 0,
            excluded: false,
            exists: true,
            known: false,
            resource_version: 0,
            ready: None,
            has_unreachable_no_execute: false,
            has_not_ready_no_execute: false,
            lease: None,
            lease_slot: SlotHint::default(),
            lease_read: None,
            health: None,
            retry: false,
            reconciled: None,
            steady: 0,
            steady_down: false,
            steady_until: SimTime::ZERO,
        }
    }

    /// Refreshes what can change by a write of this controller (status and taints).
    fn refresh_status(&mut self, node: &Node) {
        self.steady = 0;
        self.resource_version = node
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok())
            .unwrap_or(self.resource_version);
        self.ready = ready_snapshot(node);
        let taints = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or(&[]);
        let has = |key: &str| {
            taints
                .iter()
                .any(|t| t.key == key && t.effect == "NoExecute")
        };
        self.has_unreachable_no_execute = has(TAINT_NODE_UNREACHABLE);
        self.has_not_ready_no_execute = has(TAINT_NODE_NOT_READY);
    }
}

/// The node's Ready condition as the health check compares it.
fn ready_snapshot(node: &Node) -> Option<ReadySnapshot> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .map(|c| ReadySnapshot {
            status: CondStatus::parse(&c.status),
            heartbeat: c.last_heartbeat_time.as_ref().map(|t| t.0),
            transition: c.last_transition_time.as_ref().map(|t| t.0),
        })
}

/// A resourceVersion as the store writes it (decimal); 0 when absent or not a number.
fn parse_resource_version(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

/// One zone: its state, its NoExecute tainting queue and its metrics.
#[derive(Clone, Debug)]
struct Zone {
    key: String,
    /// `None`: not in upstream's `zoneStates` (never seen, or empty at the last pass).
    state: Option<ZoneState>,
    tainter: Option<RateLimitedTimedQueue>,
    evictions_total: Option<u64>,
    size: u64,
    unhealthy: u64,
    n_ready: u32,
    n_not_ready: u32,
}

impl NodeEntry {
    /// Marks the node steady at `epoch` (`down`: a silent node tainted unreachable).
    fn mark_steady(&mut self, epoch: u64, down: bool) {
        self.steady = epoch;
        self.steady_down = down;
    }
}

impl Zone {
    /// Counts one node of the zone's at a monitor pass, ready or not.
    fn count(&mut self, ready: bool) {
        if ready {
            self.n_ready += 1;
        } else {
            self.n_not_ready += 1;
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Zones {
    list: Vec<Zone>,
    index: HashMap<String, usize>,
}

impl Zones {
    fn intern(&mut self, key: String) -> usize {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.list.len();
        self.list.push(Zone {
            key: key.clone(),
            state: None,
            tainter: None,
            evictions_total: None,
            size: 0,
            unhealthy: 0,
            n_ready: 0,
            n_not_ready: 0,
        });
        self.index.insert(key, i);
        i
    }

    /// Upstream `addPodEvictorForNewZone`: a zone without a state gets state Initial and a
    /// fresh tainting queue.
    fn ensure_evictor(&mut self, zone: usize, rate: f32) {
        let z = &mut self.list[zone];
        if z.state.is_none() {
            z.state = Some(ZoneState::Initial);
            z.tainter = Some(RateLimitedTimedQueue::new(Limiter::new(rate)));
            z.evictions_total.get_or_insert(0);
        }
    }

    #[inline]
    fn tainter(&mut self, zone: usize, rate: f32) -> &mut RateLimitedTimedQueue {
        self.list[zone]
            .tainter
            .get_or_insert_with(|| RateLimitedTimedQueue::new(Limiter::new(rate)))
    }
}

/// Upstream node lifecycle controller on the virtual clock.
#[derive(Debug)]
pub struct NodeLifecycleController {
    config: NodeLifecycleConfig,
    nodes: NodeTable,
    /// Leases whose node is not (yet) known.
    pending_leases: HashMap<String, Option<Timestamp>>,
    zones: Zones,
    pods: PodsByNode,
    /// Nodes to reconcile NoSchedule taints and labels for (every node add and update).
    node_queue: UniqueQueue<String>,
    /// Pods newly bound to a node.
    pod_queue: UniqueQueue<PodRef>,
    next_monitor: SimTime,
    last_taint_pass: Option<SimTime>,
    work_since: Option<SimTime>,
    /// A node was added or deleted since the last pass.
    classify_dirty: bool,
    monitor_passes: u64,
    /// Lease reads from the cache by the monitor (the passes skip those whose answer is
    /// known: see [`NodeEntry::lease_read`]).
    lease_reads: u64,
    /// Moves when something changes many records or the zones at once (classification, the
    /// disruption modes, a zone losing its state): every steady mark ([`NodeEntry::steady`])
    /// from before is void. Starts at 1.
    steady_epoch: u64,
    /// Node visits the monitor passed as steady, without the common case's checks.
    steady_visits: u64,
    /// Node visits the monitor passed as steady and not ready (a silent, tainted node).
    steady_down_visits: u64,
    /// Passes in which every node was steady without a Lease read (`pass_all_steady`).
    all_steady_passes: u64,
}

impl NodeLifecycleController {
    pub fn new(config: NodeLifecycleConfig) -> Self {
        NodeLifecycleController {
            config,
            nodes: NodeTable::default(),
            pending_leases: HashMap::new(),
            zones: Zones::default(),
            pods: PodsByNode::default(),
            node_queue: UniqueQueue::default(),
            pod_queue: UniqueQueue::default(),
            next_monitor: SimTime::ZERO,
            last_taint_pass: None,
            work_since: None,
            classify_dirty: false,
            monitor_passes: 0,
            lease_reads: 0,
            steady_epoch: 1,
            steady_visits: 0,
            steady_down_visits: 0,
            all_steady_passes: 0,
        }
    }

    pub fn config(&self) -> &NodeLifecycleConfig {
        &self.config
    }

    /// A zone's state, by zone key (see [`zone_key`]); `None` if not tracked.
    pub fn zone_state(&self, zone_key: &str) -> Option<ZoneState> {
        self.zones
            .index
            .get(zone_key)
            .and_then(|&i| self.zones.list[i].state)
    }

    /// The number of health-monitor passes run so far.
    pub fn monitor_passes(&self) -> u64 {
        self.monitor_passes
    }

    /// How many Leases the monitor read from the cache so far.
    pub fn lease_reads(&self) -> u64 {
        self.lease_reads
    }

    /// How many node visits the monitor passed as steady so far.
    pub fn steady_visits(&self) -> u64 {
        self.steady_visits
    }

    /// How many node visits the monitor passed as steady and not ready so far (counted in
    /// neither [`Self::steady_visits`] nor the passes without visits).
    pub fn steady_down_visits(&self) -> u64 {
        self.steady_down_visits
    }

    /// How many monitor passes found every node steady without a Lease read (counted
    /// without visiting them one by one).
    pub fn all_steady_passes(&self) -> u64 {
        self.all_steady_passes
    }

    /// The probe time of a node's health record (the last instant a fresh signal was seen).
    pub fn probe_time(&self, node: &str) -> Option<SimTime> {
        self.nodes.get(node)?.health.as_ref().map(|h| h.probe)
    }

    /// Runs one health-monitor pass now, whatever the schedule (for tests and tools).
    pub fn monitor_now(&mut self, now: SimTime, client: &mut dyn Client) {
        self.monitor_node_health(now, client);
    }

    fn note_work(&mut self, now: SimTime) {
        if self.work_since.is_none() {
            self.work_since = Some(now);
        }
    }

    fn observe_node(&mut self, ev: &WatchEvent) {
        let Some(node) = ev.object.as_node() else {
            return;
        };
        if ev.type_ == EventType::Modified && self.observe_heartbeat(ev, node) {
            return;
        }
        let name = ev.object.name().to_string();
        if ev.type_ == EventType::Deleted {
            if let Some(e) = self.nodes.get_mut(&name) {
                e.exists = false;
                e.retry = false;
                e.steady = 0;
                self.classify_dirty = true;
            }
            return;
        }
        let pending = &mut self.pending_leases;
        let entry = self.nodes.get_or_insert_with(&name, || {
            let mut e = NodeEntry::new();
            e.lease = pending.remove(&name);
            e
        });
        if !entry.exists || !entry.known {
            self.classify_dirty = true;
        }
        entry.exists = true;
        entry.steady = 0;
        if ev.resource_version >= entry.resource_version {
            entry.refresh_status(node);
            entry.resource_version = ev.resource_version;
            entry.uid = ev.object.uid().to_string();
            entry.creation = node.metadata.creation_timestamp.as_ref().map(|t| t.0);
            let labels = node.metadata.labels.as_ref();
            entry.excluded = labels.is_some_and(|l| l.contains_key(LABEL_EXCLUDE_DISRUPTION));
            entry.zone = self.zones.intern(zone_key(labels));
        }
        self.node_queue.push(name);
    }

    /// A node agent's periodic status post that renews only the conditions' heartbeats, for a
    /// node whose record was taken from the version before it: only the Ready heartbeat and
    /// the resourceVersion move. The NoSchedule taint and label reconciliation, which read
    /// neither, is queued again only if it did not find the previous version clean (it would
    /// find this one clean too: upstream queues every update, and that work is a no-op).
    /// Whether the event was handled here.
    fn observe_heartbeat(&mut self, ev: &WatchEvent, node: &StoredNode) -> bool {
        let Some(old) = ev.old.as_ref().and_then(Object::as_node) else {
            return false;
        };
        let Some(entry) = self.nodes.get_mut(ev.object.name()) else {
            return false;
        };
        if !entry.exists || !entry.known {
            return false;
        }
        let old_rv = parse_resource_version(&old.metadata);
        if entry.resource_version != old_rv || !kubeplane_api::only_heartbeats_changed(old, node) {
            return false;
        }
        entry.resource_version = ev.resource_version;
        entry.ready = ready_snapshot(node);
        entry.steady = 0;
        if entry.reconciled == Some(old_rv) {
            entry.reconciled = Some(ev.resource_version);
        } else {
            self.node_queue.push(ev.object.name().to_string());
        }
        true
    }

    fn observe_lease(&mut self, ev: &WatchEvent) {
        if ev.object.namespace() != NODE_LEASE_NAMESPACE {
            return;
        }
        let Object::Lease(lease) = &ev.object else {
            return;
        };
        let name = ev.object.name();
        let renew = if ev.type_ == EventType::Deleted {
            None
        } else {
            Some(
                lease
                    .spec
                    .as_ref()
                    .and_then(|s| s.renew_time.as_ref())
                    .map(|t| t.0),
            )
        };
        match self.nodes.get_mut(name) {
            Some(e) => {
                e.lease = renew;
                e.lease_read = None;
                e.steady = 0;
            }
            None => match renew {
                Some(r) => {
                    self.pending_leases.insert(name.to_string(), r);
                }
                None => {
                    self.pending_leases.remove(name);
                }
            },
        }
    }

    fn observe_pod(&mut self, ev: &WatchEvent) {
        self.pods.observe(ev);
        if ev.type_ == EventType::Deleted {
            return;
        }
        let Some(pod) = ev.object.as_pod() else {
            return;
        };
        let node = pod_node_name(pod);
        let old_node = ev
            .old
            .as_ref()
            .and_then(Object::as_pod)
            .map(|p| pod_node_name(p));
        if !node.is_empty() && old_node != Some(node) {
            self.pod_queue.push((
                ev.object.namespace().to_string(),
                ev.object.name().to_string(),
            ));
        }
    }
}

/// A zone key as a metric label (the NUL separator written as `\x00`).
fn zone_label(key: &str) -> String {
    key.replace('\u{0}', "\\x00")
}

impl Component for NodeLifecycleController {
    fn name(&self) -> &'static str {
        CONTROLLER_NAME
    }

    /// Only nodes, Leases and pods.
    fn observes(&self, kind: kubeplane_api::Kind) -> bool {
        matches!(
            kind,
            kubeplane_api::Kind::Node | kubeplane_api::Kind::Lease | kubeplane_api::Kind::Pod
        )
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        match ev.object.kind() {
            Kind::Node => self.observe_node(ev),
            Kind::Lease => self.observe_lease(ev),
            Kind::Pod => self.observe_pod(ev),
            _ => return,
        }
        if !self.node_queue.is_empty() || !self.pod_queue.is_empty() {
            self.note_work(now);
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        self.work_since = None;
        if now >= self.next_monitor {
            self.monitor_node_health(now, client);
            let period = SimDuration(self.config.node_monitor_period.0.max(1));
            while self.next_monitor <= now {
                self.next_monitor = self.next_monitor + period;
            }
        }
        while let Some(name) = self.node_queue.pop() {
            self.process_node_update(&name, now, client);
        }
        while let Some(pod) = self.pod_queue.pop() {
            self.process_pod(&pod, now, client);
        }
        let on_grid = now.0 >= 0 && now.0 % NODE_EVICTION_PERIOD.0 == 0;
        if on_grid && self.last_taint_pass != Some(now) {
            self.do_no_execute_tainting_pass(now, client);
            self.last_taint_pass = Some(now);
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        let mut t = self.next_monitor;
        if let Some(w) = self.work_since {
            t = t.min(w);
        }
        if let Some(taint) = self.next_taint_pass() {
            t = t.min(taint);
        }
        Some(t)
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for z in &self.zones.list {
            let label = zone_label(&z.key);
            if let Some(n) = z.evictions_total {
                out.push((
                    format!("node_collector_evictions_total{{zone=\"{label}\"}}"),
                    n,
                ));
            }
            if z.state.is_some() {
                out.push((
                    format!("node_collector_zone_size{{zone=\"{label}\"}}"),
                    z.size,
                ));
                out.push((
                    format!("node_collector_unhealthy_nodes_in_zone{{zone=\"{label}\"}}"),
                    z.unhealthy,
                ));
            }
        }
        out
    }
}

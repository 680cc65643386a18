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
//! Cost: a pass touches only a compact per-node record fed by watch events; it reads and
//! clones a Node from the store only to write it.

mod rate_limited_queue;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod, PodCondition, Taint};
use kubeplane_api::{ApiError, Client, Component, EventType, Kind, Object, WatchEvent};
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
    health: Option<Health>,
    /// Upstream `nodesToRetry`: marking pods not ready failed.
    retry: bool,
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
            health: None,
            retry: false,
        }
    }

    /// Refreshes what can change by a write of this controller (status and taints).
    fn refresh_status(&mut self, node: &Node) {
        self.resource_version = node
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok())
            .unwrap_or(self.resource_version);
        self.ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .map(|c| ReadySnapshot {
                status: CondStatus::parse(&c.status),
                heartbeat: c.last_heartbeat_time.as_ref().map(|t| t.0),
                transition: c.last_transition_time.as_ref().map(|t| t.0),
            });
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

/// FNV-1a, for the node-name index: short keys hashed millions of times a simulated day.
#[derive(Default)]
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }
}

type FnvBuild = std::hash::BuildHasherDefault<Fnv>;

/// The node records, kept in name order for deterministic passes, with a name index.
#[derive(Debug, Default)]
struct NodeTable {
    names: Vec<String>,
    entries: Vec<NodeEntry>,
    index: HashMap<String, usize, FnvBuild>,
    /// Entries were appended or moved since the last sort.
    unsorted: bool,
}

impl NodeTable {
    fn get(&self, name: &str) -> Option<&NodeEntry> {
        self.index.get(name).map(|&i| &self.entries[i])
    }

    fn get_mut(&mut self, name: &str) -> Option<&mut NodeEntry> {
        self.index.get(name).map(|&i| &mut self.entries[i])
    }

    fn get_or_insert_with(
        &mut self,
        name: &str,
        make: impl FnOnce() -> NodeEntry,
    ) -> &mut NodeEntry {
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => {
                let i = self.entries.len();
                self.names.push(name.to_string());
                self.entries.push(make());
                self.index.insert(name.to_string(), i);
                self.unsorted = true;
                i
            }
        };
        &mut self.entries[i]
    }

    fn remove(&mut self, name: &str) -> Option<NodeEntry> {
        let i = self.index.remove(name)?;
        self.names.swap_remove(i);
        let entry = self.entries.swap_remove(i);
        if i < self.entries.len() {
            self.index.insert(self.names[i].clone(), i);
            self.unsorted = true;
        }
        Some(entry)
    }

    fn sort(&mut self) {
        if !self.unsorted {
            return;
        }
        let mut order: Vec<usize> = (0..self.names.len()).collect();
        order.sort_by(|&a, &b| self.names[a].cmp(&self.names[b]));
        let mut names = Vec::with_capacity(order.len());
        let mut entries = Vec::with_capacity(order.len());
        let mut old_names: Vec<Option<String>> = std::mem::take(&mut self.names)
            .into_iter()
            .map(Some)
            .collect();
        let mut old_entries: Vec<Option<NodeEntry>> = std::mem::take(&mut self.entries)
            .into_iter()
            .map(Some)
            .collect();
        for i in order {
            names.push(old_names[i].take().expect("each once"));
            entries.push(old_entries[i].take().expect("each once"));
        }
        self.index = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        self.names = names;
        self.entries = entries;
        self.unsorted = false;
    }

    /// (name, entry) pairs in name order (after [`NodeTable::sort`]).
    fn iter(&self) -> impl Iterator<Item = (&String, &NodeEntry)> {
        self.names.iter().zip(self.entries.iter())
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut NodeEntry)> {
        self.sort();
        self.names.iter().zip(self.entries.iter_mut())
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut NodeEntry> {
        self.entries.iter_mut()
    }
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

    /// The probe time of a node's health record (the last instant a fresh signal was seen).
    pub fn probe_time(&self, node: &str) -> Option<SimTime> {
        self.nodes.get(node)?.health.as_ref().map(|h| h.probe)
    }

    /// Runs one health-monitor pass now, whatever the schedule (for tests and tools).
    pub fn monitor_now(&mut self, now: SimTime, client: &mut dyn Client) {
        self.monitor_node_health(now, client);
    }

    /// Runs one NoExecute tainting pass now (for tests and tools).
    pub fn taint_pass_now(&mut self, now: SimTime, client: &mut dyn Client) {
        self.do_no_execute_tainting_pass(now, client);
        self.last_taint_pass = Some(now);
    }

    fn note_work(&mut self, now: SimTime) {
        if self.work_since.is_none() {
            self.work_since = Some(now);
        }
    }

    fn observe_node(&mut self, ev: &WatchEvent) {
        let name = ev.object.name().to_string();
        let Some(node) = ev.object.as_node() else {
            return;
        };
        if ev.type_ == EventType::Deleted {
            if let Some(e) = self.nodes.get_mut(&name) {
                e.exists = false;
                e.retry = false;
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
            Some(e) => e.lease = renew,
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

    /// Upstream `monitorNodeHealth`.
    fn monitor_node_health(&mut self, now: SimTime, client: &mut dyn Client) {
        self.monitor_passes += 1;
        let rate = self.config.node_eviction_rate;
        self.nodes.sort();
        if self.classify_dirty {
            self.classify_dirty = false;
            self.classify_nodes(now, client);
        }
        for z in &mut self.zones.list {
            z.n_ready = 0;
            z.n_not_ready = 0;
        }
        let start = client.clock().start();
        let Self {
            nodes,
            zones,
            pods,
            config,
            ..
        } = self;
        for (name, entry) in nodes.iter_mut() {
            if !entry.exists {
                continue;
            }
            // A known node in a zone that lost its state (it was empty at some pass).
            if zones.list[entry.zone].state.is_none() {
                zones.ensure_evictor(entry.zone, rate);
            }
            let mut outcome = None;
            for _ in 0..NODE_HEALTH_UPDATE_RETRY {
                match try_update_node_health(name, entry, config, start, now, client) {
                    Ok(o) => {
                        outcome = Some(o);
                        break;
                    }
                    Err(HealthError::Stale(node)) => {
                        entry.refresh_status(&node);
                    }
                    Err(HealthError::Failed) => break,
                }
            }
            // A node whose health could not be updated is skipped: not counted, no decisions.
            let Some((observed, current)) = outcome else {
                continue;
            };
            if !entry.excluded {
                let z = &mut zones.list[entry.zone];
                if current == Some(CondStatus::True) {
                    z.n_ready += 1;
                } else {
                    z.n_not_ready += 1;
                }
            }
            let Some(current) = current else {
                entry.retry = false;
                continue;
            };
            process_taint_base_eviction(name, entry, observed, zones, rate, now, client);
            let mark = if current != CondStatus::True && observed == CondStatus::True {
                client.record_event(EventRecord::normal(
                    now,
                    EVENT_SOURCE,
                    "Node",
                    "",
                    name,
                    "NodeNotReady",
                    format!("Node {name} status is now: NodeNotReady"),
                ));
                true
            } else {
                entry.retry && observed != CondStatus::True
            };
            if mark && mark_pods_not_ready(&pods.pods_on(name), name, now, client).is_err() {
                entry.retry = true;
                continue;
            }
            entry.retry = false;
        }
        self.handle_disruption(now, client);
    }

    /// Upstream `classifyNodes` and its handling: new nodes are registered (event, zone
    /// evictor, NoExecute taints removed); deleted nodes are forgotten.
    fn classify_nodes(&mut self, now: SimTime, client: &mut dyn Client) {
        let rate = self.config.node_eviction_rate;
        let added: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, e)| e.exists && !e.known)
            .map(|(n, _)| n.clone())
            .collect();
        let gone: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, e)| !e.exists)
            .map(|(n, _)| n.clone())
            .collect();
        for name in &added {
            client.record_event(EventRecord::normal(
                now,
                EVENT_SOURCE,
                "Node",
                "",
                name,
                "RegisteredNode",
                format!("Node {name} event: Registered Node {name} in Controller"),
            ));
            let entry = self.nodes.get_mut(name).expect("listed");
            entry.known = true;
            self.zones.ensure_evictor(entry.zone, rate);
            mark_node_as_reachable(name, entry, &mut self.zones, rate, now, client);
        }
        for name in &gone {
            let entry = self.nodes.remove(name).expect("listed");
            if entry.known {
                client.record_event(EventRecord::normal(
                    now,
                    EVENT_SOURCE,
                    "Node",
                    "",
                    name,
                    "RemovingNode",
                    format!("Node {name} event: Removing Node {name} from Controller"),
                ));
            }
            if let Some(lease) = entry.lease {
                self.pending_leases.insert(name.clone(), lease);
            }
        }
    }

    /// Upstream `handleDisruption`.
    fn handle_disruption(&mut self, now: SimTime, client: &mut dyn Client) {
        let threshold = self.config.unhealthy_zone_threshold;
        let mut new_states: Vec<Option<ZoneState>> = vec![None; self.zones.list.len()];
        let mut all_are_fully_disrupted = true;
        for (i, z) in self.zones.list.iter_mut().enumerate() {
            let size = z.n_ready + z.n_not_ready;
            if size == 0 {
                continue;
            }
            z.size = u64::from(size);
            z.unhealthy = u64::from(z.n_not_ready);
            let state = compute_zone_state(z.n_ready, z.n_not_ready, threshold);
            if state != ZoneState::FullDisruption {
                all_are_fully_disrupted = false;
            }
            new_states[i] = Some(state);
            if z.state.is_none() {
                z.state = Some(ZoneState::Initial);
            }
        }
        // Upstream stops this walk at the first zone that was not fully disrupted, in random
        // map order, so some empty zones survive a pass longer; here every empty zone is
        // forgotten at once, which gives the same flag deterministically.
        let mut all_was_fully_disrupted = true;
        for (i, z) in self.zones.list.iter_mut().enumerate() {
            let Some(state) = z.state else {
                continue;
            };
            if new_states[i].is_none() {
                z.state = None;
                z.size = 0;
                z.unhealthy = 0;
                continue;
            }
            if state != ZoneState::FullDisruption {
                all_was_fully_disrupted = false;
            }
        }
        if all_are_fully_disrupted && all_was_fully_disrupted {
            return;
        }
        let rate = self.config.node_eviction_rate;
        if all_are_fully_disrupted {
            // "All Nodes are not-Ready. Entering master disruption mode": stop tainting and
            // remove the NoExecute taints everywhere.
            let Self { nodes, zones, .. } = self;
            for (name, entry) in nodes.iter_mut() {
                if entry.exists {
                    mark_node_as_reachable(name, entry, zones, rate, now, client);
                }
            }
            for z in &mut self.zones.list {
                if z.state.is_some() {
                    if let Some(t) = z.tainter.as_mut() {
                        t.swap_limiter(0.0, now);
                    }
                    z.state = Some(ZoneState::FullDisruption);
                }
            }
            return;
        }
        if all_was_fully_disrupted {
            // "Some Nodes are Ready. Exiting master disruption mode": every node gets a fresh
            // grace period.
            for entry in self.nodes.values_mut() {
                if let Some(h) = entry.health.as_mut() {
                    h.probe = now;
                    h.ready_transition = now;
                }
            }
            for (i, new) in new_states.iter().enumerate() {
                if let (Some(_), Some(state)) = (self.zones.list[i].state, *new) {
                    self.set_limiter_in_zone(i, state, now);
                    self.zones.list[i].state = Some(state);
                }
            }
            return;
        }
        for (i, new) in new_states.iter().enumerate() {
            let (Some(old), Some(new)) = (self.zones.list[i].state, *new) else {
                continue;
            };
            if old != new {
                self.set_limiter_in_zone(i, new, now);
                self.zones.list[i].state = Some(new);
            }
        }
    }

    /// Upstream `setLimiterInZone`.
    fn set_limiter_in_zone(&mut self, zone: usize, state: ZoneState, now: SimTime) {
        let size = self.zones.list[zone].size;
        let qps = match state {
            ZoneState::Normal | ZoneState::FullDisruption => self.config.node_eviction_rate,
            ZoneState::PartialDisruption => {
                if size > self.config.large_cluster_size_threshold.max(0) as u64 {
                    self.config.secondary_node_eviction_rate
                } else {
                    0.0
                }
            }
            ZoneState::Initial => return,
        };
        let rate = self.config.node_eviction_rate;
        self.zones.tainter(zone, rate).swap_limiter(qps, now);
    }

    /// Upstream `doNoExecuteTaintingPass`.
    fn do_no_execute_tainting_pass(&mut self, now: SimTime, client: &mut dyn Client) {
        let Self { nodes, zones, .. } = self;
        let mut tainted_zones: Vec<usize> = Vec::new();
        for z in &mut zones.list {
            let Some(tainter) = z.tainter.as_mut() else {
                continue;
            };
            if tainter.is_empty() {
                continue;
            }
            tainter.try_process(now, |v| {
                let Some(entry) = nodes.get_mut(&v.value).filter(|e| e.exists) else {
                    return (true, SimDuration::ZERO);
                };
                let Some(ready) = entry.ready else {
                    return (false, TAINT_RETRY_NO_CONDITION);
                };
                // "unreachable" and "not-ready" mirror Ready and exclude each other.
                let (add, remove) = match ready.status {
                    CondStatus::False => (TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE),
                    CondStatus::Unknown => (TAINT_NODE_UNREACHABLE, TAINT_NODE_NOT_READY),
                    _ => return (true, SimDuration::ZERO),
                };
                match swap_node_taints(
                    client,
                    &v.value,
                    &[(add, "NoExecute")],
                    &[(remove, "NoExecute")],
                    now,
                ) {
                    Ok(node) => {
                        entry.refresh_status(&node);
                        tainted_zones.push(entry.zone);
                        (true, SimDuration::ZERO)
                    }
                    Err(_) => (false, SimDuration::ZERO),
                }
            });
        }
        for zone in tainted_zones {
            *zones.list[zone].evictions_total.get_or_insert(0) += 1;
        }
    }

    /// Upstream `doNoScheduleTaintingPass` and `reconcileNodeLabels` for one node.
    fn process_node_update(&mut self, name: &str, now: SimTime, client: &mut dyn Client) {
        let Some(node) = client.cache().get_node(name).cloned() else {
            return;
        };
        let (to_add, to_remove) = no_schedule_taint_diff(&node);
        if !to_add.is_empty() || !to_remove.is_empty() {
            let add: Vec<(&str, &str)> = to_add.iter().map(|k| (*k, "NoSchedule")).collect();
            let remove: Vec<(&str, &str)> = to_remove
                .iter()
                .map(|k| (k.as_str(), "NoSchedule"))
                .collect();
            if let Ok(n) = swap_node_taints(client, name, &add, &remove, now) {
                if let Some(e) = self.nodes.get_mut(name) {
                    e.refresh_status(&n);
                }
            }
        }
        let Some(node) = client.cache().get_node(name).cloned() else {
            return;
        };
        let updates = label_reconciliation(&node);
        if !updates.is_empty() {
            let mut n = Node::clone(&node);
            let labels = n.metadata.labels.get_or_insert_with(BTreeMap::new);
            for (k, v) in updates {
                labels.insert(k.to_string(), v);
            }
            if let Ok(Object::Node(n)) = client.update(Object::Node(Arc::new(n))) {
                if let Some(e) = self.nodes.get_mut(name) {
                    e.refresh_status(&n);
                }
            }
        }
    }

    /// Upstream `processPod`: a pod newly bound to a node that was not ready at the last pass
    /// is marked not ready.
    fn process_pod(&mut self, pod: &PodRef, now: SimTime, client: &mut dyn Client) {
        let Some(p) = client.cache().get_pod(&pod.0, &pod.1).cloned() else {
            return;
        };
        let node_name = pod_node_name(&p);
        let Some(entry) = self.nodes.get(node_name) else {
            return;
        };
        let Some(health) = entry.health.as_ref() else {
            return;
        };
        if !entry.exists {
            // Upstream requeues with a rate limit until the node is listed again.
            return;
        }
        let Some(saved) = health.saved_ready else {
            return;
        };
        if saved.status != CondStatus::True {
            let node_name = node_name.to_string();
            let _ = mark_pods_not_ready(std::slice::from_ref(pod), &node_name, now, client);
        }
    }

    fn next_taint_pass(&self) -> Option<SimTime> {
        let earliest = self
            .zones
            .list
            .iter()
            .filter_map(|z| z.tainter.as_ref()?.next_attempt_at())
            .min()?;
        let mut t = ceil_to_period(earliest.max(SimTime::ZERO), NODE_EVICTION_PERIOD);
        if let Some(last) = self.last_taint_pass {
            if t <= last {
                t = last + NODE_EVICTION_PERIOD;
            }
        }
        Some(t)
    }
}

/// The first multiple of `period` at or after `t` (t >= 0).
fn ceil_to_period(t: SimTime, period: SimDuration) -> SimTime {
    let p = period.0.max(1);
    SimTime(t.0.div_euclid(p) * p + if t.0.rem_euclid(p) == 0 { 0 } else { p })
}

enum HealthError {
    /// The store holds a newer version of the node than the controller's record.
    Stale(Arc<Node>),
    /// The node is gone or the write failed.
    Failed,
}

/// Upstream `tryUpdateNodeHealth`: refreshes the health record from the node's Ready condition
/// and Lease and, past the grace period, sets the node's conditions to Unknown. Returns the
/// Ready status observed at the start and the current one (`None`: no Ready condition).
fn try_update_node_health(
    name: &str,
    entry: &mut NodeEntry,
    config: &NodeLifecycleConfig,
    start: Timestamp,
    now: SimTime,
    client: &mut dyn Client,
) -> Result<(CondStatus, Option<CondStatus>), HealthError> {
    let (observed, grace) = match entry.ready {
        Some(r) => (r.status, config.node_monitor_grace_period),
        // Never posted: a synthetic Unknown dated at creation, with the startup grace.
        None => (CondStatus::Unknown, config.node_startup_grace_period),
    };
    let fresh = |saved_ready| Health {
        probe: now,
        ready_transition: now,
        saved_ready,
        saved_lease: None,
    };
    match (&mut entry.health, entry.ready) {
        (Some(h), None) => h.saved_ready = None,
        (None, None) => {
            let c = entry
                .creation
                .map(|t| SimTime::from_timestamp(t, start))
                .unwrap_or(SimTime::ZERO);
            entry.health = Some(Health {
                probe: c,
                ready_transition: c,
                saved_ready: None,
                saved_lease: None,
            });
        }
        (None, Some(r)) => entry.health = Some(fresh(Some(r))),
        (Some(h), Some(r)) => match h.saved_ready {
            None => *h = fresh(Some(r)),
            Some(saved) if saved.heartbeat != r.heartbeat => {
                let transition = if saved.transition != r.transition {
                    now
                } else {
                    h.ready_transition
                };
                *h = Health {
                    probe: now,
                    ready_transition: transition,
                    saved_ready: Some(r),
                    saved_lease: None,
                };
            }
            Some(_) => {}
        },
    }
    let health = entry.health.as_mut().expect("set above");
    // A renewed lease always counts as a heartbeat.
    if let Some(renew) = entry.lease {
        let newer = match health.saved_lease {
            None => true,
            Some(saved) => matches!((saved, renew), (Some(s), Some(o)) if s < o),
        };
        if newer {
            health.saved_lease = Some(renew);
            health.probe = now;
        }
    }
    let current = entry.ready.map(|r| r.status);
    let probe = health.probe;
    if now <= probe + grace {
        return Ok((observed, current));
    }
    // Past the grace period. Only a change of Ready is written, as upstream.
    if current == Some(CondStatus::Unknown) {
        return Ok((observed, current));
    }
    let node = client
        .cache()
        .get_node(name)
        .cloned()
        .ok_or(HealthError::Failed)?;
    let rv: u64 = node
        .metadata
        .resource_version
        .as_deref()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if rv != entry.resource_version {
        return Err(HealthError::Stale(node));
    }
    let mut updated = Node::clone(&node);
    let ts = client.clock().timestamp(now);
    let conditions = updated
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    for type_ in CONDITIONS_SET_UNKNOWN {
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            None => conditions.push(NodeCondition {
                type_: type_.to_string(),
                status: "Unknown".to_string(),
                reason: Some(REASON_NODE_STATUS_NEVER_UPDATED.to_string()),
                message: Some(MESSAGE_NODE_STATUS_NEVER_UPDATED.to_string()),
                last_heartbeat_time: node.metadata.creation_timestamp.clone(),
                last_transition_time: Some(ts.clone()),
            }),
            Some(c) => {
                if c.status != "Unknown" {
                    c.status = "Unknown".to_string();
                    c.reason = Some(REASON_NODE_STATUS_UNKNOWN.to_string());
                    c.message = Some(MESSAGE_NODE_STATUS_UNKNOWN.to_string());
                    c.last_transition_time = Some(ts.clone());
                }
            }
        }
    }
    let written = client
        .update_status(Object::Node(Arc::new(updated)))
        .map_err(|_| HealthError::Failed)?;
    if let Some(n) = written.as_node() {
        entry.refresh_status(n);
    }
    entry.health = Some(Health {
        probe,
        ready_transition: now,
        saved_ready: entry.ready,
        saved_lease: entry.lease,
    });
    Ok((observed, entry.ready.map(|r| r.status)))
}

/// Upstream `processTaintBaseEviction`, on the Ready status observed before this pass.
fn process_taint_base_eviction(
    name: &str,
    entry: &mut NodeEntry,
    observed: CondStatus,
    zones: &mut Zones,
    rate: f32,
    now: SimTime,
    client: &mut dyn Client,
) {
    match observed {
        CondStatus::False => {
            if entry.has_unreachable_no_execute {
                // Swapped at once, without waiting for a token.
                swap_and_refresh(
                    client,
                    name,
                    entry,
                    (TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE),
                    now,
                );
            } else {
                mark_node_for_tainting(name, entry, CondStatus::False, zones, rate, now);
            }
        }
        CondStatus::Unknown => {
            if entry.has_not_ready_no_execute {
                swap_and_refresh(
                    client,
                    name,
                    entry,
                    (TAINT_NODE_UNREACHABLE, TAINT_NODE_NOT_READY),
                    now,
                );
            } else {
                mark_node_for_tainting(name, entry, CondStatus::Unknown, zones, rate, now);
            }
        }
        CondStatus::True => mark_node_as_reachable(name, entry, zones, rate, now, client),
        CondStatus::Other => {}
    }
}

fn swap_and_refresh(
    client: &mut dyn Client,
    name: &str,
    entry: &mut NodeEntry,
    (add, remove): (&str, &str),
    now: SimTime,
) {
    if let Ok(n) = swap_node_taints(
        client,
        name,
        &[(add, "NoExecute")],
        &[(remove, "NoExecute")],
        now,
    ) {
        entry.refresh_status(&n);
    }
}

/// Upstream `markNodeForTainting`: queue the node in its zone (re-queue it if it lacks the
/// taint its status calls for, so a node that changed from False to Unknown is re-tainted).
fn mark_node_for_tainting(
    name: &str,
    entry: &NodeEntry,
    status: CondStatus,
    zones: &mut Zones,
    rate: f32,
    now: SimTime,
) -> bool {
    let tainter = zones.tainter(entry.zone, rate);
    let lacks = match status {
        CondStatus::False => !entry.has_not_ready_no_execute,
        CondStatus::Unknown => !entry.has_unreachable_no_execute,
        _ => false,
    };
    if lacks {
        tainter.remove(name);
    }
    tainter.add(name, &entry.uid, now)
}

/// Upstream `markNodeAsReachable`: remove both NoExecute taints and leave the zone queue.
fn mark_node_as_reachable(
    name: &str,
    entry: &mut NodeEntry,
    zones: &mut Zones,
    rate: f32,
    now: SimTime,
    client: &mut dyn Client,
) {
    if entry.has_unreachable_no_execute || entry.has_not_ready_no_execute {
        let remove = [
            (TAINT_NODE_UNREACHABLE, "NoExecute"),
            (TAINT_NODE_NOT_READY, "NoExecute"),
        ];
        match swap_node_taints(client, name, &[], &remove, now) {
            Ok(n) => entry.refresh_status(&n),
            // Retried at the next pass.
            Err(_) => return,
        }
    }
    zones.tainter(entry.zone, rate).remove(name);
}

/// Upstream `SwapNodeControllerTaint`: adds (or refreshes) the taints `add` with timeAdded
/// = now, then removes the taints matching `remove` (key and effect). Writes only on change.
fn swap_node_taints(
    client: &mut dyn Client,
    name: &str,
    add: &[(&str, &str)],
    remove: &[(&str, &str)],
    now: SimTime,
) -> Result<Arc<Node>, ApiError> {
    let node = client
        .cache()
        .get_node(name)
        .cloned()
        .ok_or_else(|| ApiError::NotFound {
            key: kubeplane_api::ObjectKey::new(Kind::Node, "", name),
        })?;
    let ts = client.clock().timestamp(now);
    let mut updated = Node::clone(&node);
    let spec = updated.spec.get_or_insert_with(Default::default);
    let mut taints = spec.taints.take().unwrap_or_default();
    let mut changed = false;
    for &(key, effect) in add {
        let t = Taint {
            key: key.to_string(),
            effect: effect.to_string(),
            value: None,
            time_added: Some(ts.clone()),
        };
        match taints
            .iter_mut()
            .find(|x| x.key == key && x.effect == effect)
        {
            Some(existing) => {
                if *existing != t {
                    *existing = t;
                    changed = true;
                }
            }
            None => {
                taints.push(t);
                changed = true;
            }
        }
    }
    let before = taints.len();
    taints.retain(|x| !remove.iter().any(|&(k, e)| x.key == k && x.effect == e));
    changed |= taints.len() != before;
    if !changed {
        return Ok(node);
    }
    spec.taints = (!taints.is_empty()).then_some(taints);
    match client.update(Object::Node(Arc::new(updated)))? {
        Object::Node(n) => Ok(n),
        _ => Ok(node),
    }
}

/// The NoSchedule taints TaintNodesByCondition wants, by key, in condition order.
fn desired_no_schedule_taints(node: &Node) -> Vec<&'static str> {
    let mut keys = Vec::new();
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[]);
    for c in conditions {
        let key = match (c.type_.as_str(), c.status.as_str()) {
            ("Ready", "False") => TAINT_NODE_NOT_READY,
            ("Ready", "Unknown") => TAINT_NODE_UNREACHABLE,
            ("MemoryPressure", "True") => TAINT_NODE_MEMORY_PRESSURE,
            ("DiskPressure", "True") => TAINT_NODE_DISK_PRESSURE,
            ("NetworkUnavailable", "True") => TAINT_NODE_NETWORK_UNAVAILABLE,
            ("PIDPressure", "True") => TAINT_NODE_PID_PRESSURE,
            _ => continue,
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
        && !keys.contains(&TAINT_NODE_UNSCHEDULABLE)
    {
        keys.push(TAINT_NODE_UNSCHEDULABLE);
    }
    keys
}

/// The NoSchedule condition taints to add and to remove (upstream `TaintSetDiff` on the
/// NoSchedule taints whose key is one of the condition keys or unschedulable).
fn no_schedule_taint_diff(node: &Node) -> (Vec<&'static str>, Vec<String>) {
    const MANAGED: [&str; 7] = [
        TAINT_NODE_NOT_READY,
        TAINT_NODE_UNREACHABLE,
        TAINT_NODE_MEMORY_PRESSURE,
        TAINT_NODE_DISK_PRESSURE,
        TAINT_NODE_NETWORK_UNAVAILABLE,
        TAINT_NODE_PID_PRESSURE,
        TAINT_NODE_UNSCHEDULABLE,
    ];
    let desired = desired_no_schedule_taints(node);
    let current: Vec<&str> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
        .iter()
        .filter(|t| t.effect == "NoSchedule" && MANAGED.contains(&t.key.as_str()))
        .map(|t| t.key.as_str())
        .collect();
    let add = desired
        .iter()
        .copied()
        .filter(|k| !current.contains(k))
        .collect();
    let remove = current
        .iter()
        .filter(|k| !desired.contains(k))
        .map(|k| k.to_string())
        .collect();
    (add, remove)
}

/// Upstream `reconcileNodeLabels`: the beta OS and arch labels follow the stable ones.
fn label_reconciliation(node: &Node) -> Vec<(&'static str, String)> {
    const PAIRS: [(&str, &str); 2] = [
        ("kubernetes.io/os", "beta.kubernetes.io/os"),
        ("kubernetes.io/arch", "beta.kubernetes.io/arch"),
    ];
    let Some(labels) = node.metadata.labels.as_ref() else {
        return Vec::new();
    };
    PAIRS
        .iter()
        .filter_map(|&(primary, secondary)| {
            let value = labels.get(primary)?;
            match labels.get(secondary) {
                Some(v) if v == value => None,
                _ => Some((secondary, value.clone())),
            }
        })
        .collect()
}

/// Upstream `MarkPodsNotReady`: sets each pod's Ready condition (if it has one) to False and
/// records `NodeNotReady` on it. Errors other than a vanished pod fail the call.
fn mark_pods_not_ready(
    pods: &[PodRef],
    node_name: &str,
    now: SimTime,
    client: &mut dyn Client,
) -> Result<(), ()> {
    let mut failed = false;
    for (ns, name) in pods {
        let Some(pod) = client.cache().get_pod(ns, name).cloned() else {
            continue;
        };
        if pod_node_name(&pod) != node_name {
            continue;
        }
        let Some(ready) = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        else {
            continue;
        };
        let cond = PodCondition {
            status: "False".to_string(),
            ..ready.clone()
        };
        let mut updated = Pod::clone(&pod);
        let status = updated.status.get_or_insert_with(Default::default);
        if !update_pod_condition(status, cond, client.clock().timestamp(now)) {
            continue;
        }
        // Upstream `UpdatePodStatus`: the status subresource, at the version read.
        match client.update_status(Object::Pod(Arc::new(updated))) {
            Err(ApiError::NotFound { .. }) => continue,
            Err(_) => failed = true,
            Ok(_) => {}
        }
        client.record_event(EventRecord::warning(
            now,
            EVENT_SOURCE,
            "Pod",
            ns,
            name,
            "NodeNotReady",
            "Node is not ready".to_string(),
        ));
    }
    if failed {
        Err(())
    } else {
        Ok(())
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

//! Samples of the store during a run, for the report's time series: pods, requested CPU and
//! memory and allocatable per node, node states and pending pods. Memory stays bounded: a
//! sample is taken at most every `interval` seconds of virtual time (a 500th of the run when
//! it has a duration, else from 1s), and when the samples outgrow their budget every other one
//! is dropped and the interval doubles. Node state,
//! cordon and taint changes are checked at every instant (cheap: one pass over the nodes) and
//! kept as markers, up to a cap.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kubeplane_api::PodExt;
use kubeplane_core::resources::{node_allocatable, pod_requests};
use kubeplane_core::SimTime;
use kubeplane_store::Store;

/// Node cells (samples × nodes) the samples may hold.
const CELL_BUDGET: usize = 2_000_000;
/// Samples kept at most, whatever the number of nodes.
const MAX_SAMPLES: usize = 1_000;
/// Node markers (taint, cordon and readiness changes) kept at most.
const MAX_MARKERS: usize = 2_000;

/// A node's readiness as its Ready condition says.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NodeState {
    Ready,
    NotReady,
    /// The Ready condition is Unknown: the node controller lost its heartbeats.
    Unreachable,
}

/// One node at one sample.
#[derive(Clone, Copy, Debug)]
pub struct NodeCell {
    pub pods: u32,
    pub cpu_milli: i64,
    pub memory: i64,
    pub alloc_cpu_milli: i64,
    pub alloc_memory: i64,
    pub state: NodeState,
    pub cordoned: bool,
}

/// One sample: its virtual time, the pending pods and a cell per known node (None: the node
/// did not exist then).
pub struct Sample {
    pub time: f64,
    pub pending: u32,
    pub nodes: Vec<Option<NodeCell>>,
}

/// A change of one node seen between two instants.
pub struct Marker {
    pub time: f64,
    pub node: String,
    pub what: String,
}

/// The samples of a run.
#[derive(Default)]
pub struct Samples {
    /// Every node seen, in order of first appearance; the index of `Sample::nodes`.
    pub names: Vec<String>,
    index: BTreeMap<String, usize>,
    pub samples: Vec<Sample>,
    pub markers: Vec<Marker>,
    /// Markers not kept because of the cap.
    pub markers_dropped: usize,
    interval: f64,
    last_nodes: BTreeMap<String, (NodeState, bool, String)>,
    /// The node versions of the last check.
    last_arcs: Vec<Arc<kubeplane_api::StoredNode>>,
}

fn secs(t: SimTime) -> f64 {
    (t - SimTime::ZERO).as_secs_f64()
}

fn state_of(node: &Node) -> NodeState {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    match ready.map(|c| c.status.as_str()) {
        Some("True") => NodeState::Ready,
        Some("Unknown") => NodeState::Unreachable,
        _ => NodeState::NotReady,
    }
}

fn taints_of(node: &Node) -> String {
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_ref());
    let mut all: Vec<String> = taints
        .into_iter()
        .flatten()
        .map(|t| {
            let value = t
                .value
                .as_deref()
                .map(|v| format!("={v}"))
                .unwrap_or_default();
            format!("{}{value}:{}", t.key, t.effect)
        })
        .collect();
    all.sort();
    all.join(", ")
}

impl Samples {
    pub fn new() -> Samples {
        Samples {
            interval: 1.0,
            ..Samples::default()
        }
    }

    /// Called with the settled store after every instant; `end` is the end of the run when
    /// it has one (then the first sample sets the interval to spread about half of the
    /// samples budget over the run, so they rarely need thinning).
    pub fn observe(&mut self, store: &Store, now: SimTime, end: Option<SimTime>) {
        let t = secs(now);
        if let (None, Some(end)) = (self.samples.first(), end) {
            let span = secs(end) - t;
            self.interval = (span / (MAX_SAMPLES / 2) as f64).max(1.0);
        }
        self.check_markers(store, t);
        let due = self
            .samples
            .last()
            .is_none_or(|last| t >= last.time + self.interval);
        if due {
            self.take(store, t);
        }
    }

    /// The last sample, at the end of the run (replaces one taken at the same time).
    pub fn finish(&mut self, store: &Store, now: SimTime) {
        let t = secs(now);
        self.check_markers(store, t);
        if self.samples.last().is_some_and(|s| s.time == t) {
            self.samples.pop();
        }
        self.take(store, t);
    }

    fn node_index(&mut self, name: &str) -> usize {
        if let Some(i) = self.index.get(name) {
            return *i;
        }
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    fn check_markers(&mut self, store: &Store, t: f64) {
        // Most instants change no node: the same stored versions as at the last check.
        let same = store.nodes().count() == self.last_arcs.len()
            && store
                .nodes()
                .zip(&self.last_arcs)
                .all(|(a, b)| Arc::ptr_eq(a, b));
        if same {
            return;
        }
        self.last_arcs = store.nodes().cloned().collect();
        let mut seen = BTreeMap::new();
        for node in store.nodes() {
            let name = node.metadata.name.clone().unwrap_or_default();
            let cordoned = node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
            let now = (state_of(node), cordoned, taints_of(node));
            let what = match self.last_nodes.get(&name) {
                None => Some("added".to_string()),
                Some(before) => describe_change(before, &now),
            };
            if let Some(what) = what {
                self.mark(t, &name, what);
            }
            seen.insert(name, now);
        }
        let gone: Vec<String> = (self.last_nodes.keys())
            .filter(|n| !seen.contains_key(*n))
            .cloned()
            .collect();
        for name in gone {
            self.mark(t, &name, "removed".into());
        }
        self.last_nodes = seen;
    }

    fn mark(&mut self, time: f64, node: &str, what: String) {
        if self.markers.len() < MAX_MARKERS {
            let node = node.to_string();
            self.markers.push(Marker { time, node, what });
        } else {
            self.markers_dropped += 1;
        }
    }

    fn take(&mut self, store: &Store, t: f64) {
        let mut cells: Vec<Option<NodeCell>> = vec![None; self.names.len()];
        for node in store.nodes() {
            let i = self.node_index(node.metadata.name.as_deref().unwrap_or(""));
            if cells.len() <= i {
                cells.resize(i + 1, None);
            }
            let alloc = node_allocatable(node).unwrap_or_default();
            cells[i] = Some(NodeCell {
                pods: 0,
                cpu_milli: 0,
                memory: 0,
                alloc_cpu_milli: alloc.milli_cpu,
                alloc_memory: alloc.memory,
                state: state_of(node),
                cordoned: node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true),
            });
        }
        let mut pending = 0;
        for pod in store.pods() {
            let Some(spec) = pod.spec.as_ref() else {
                continue;
            };
            let terminal = matches!(pod.phase(), Some("Succeeded" | "Failed"));
            match pod.node_name() {
                None if pod.metadata.deletion_timestamp.is_none() => pending += 1,
                Some(n) if !terminal => {
                    let cell = self.index.get(n).and_then(|i| cells[*i].as_mut());
                    if let Some(cell) = cell {
                        let req = pod_requests(spec).unwrap_or_default();
                        cell.pods += 1;
                        cell.cpu_milli += req.milli_cpu;
                        cell.memory += req.memory;
                    }
                }
                _ => {}
            }
        }
        self.samples.push(Sample {
            time: t,
            pending,
            nodes: cells,
        });
        self.thin();
    }

    /// Drops every other sample (keeping the first and the last) and doubles the interval when
    /// the samples outgrow their budget.
    fn thin(&mut self) {
        let cap = (CELL_BUDGET / self.names.len().max(1)).clamp(16, MAX_SAMPLES);
        if self.samples.len() <= cap {
            return;
        }
        let last = self.samples.len() - 1;
        let mut i = 0;
        self.samples.retain(|_| {
            let keep = i % 2 == 0 || i == last;
            i += 1;
            keep
        });
        self.interval *= 2.0;
    }

    /// The cell of node `i` in sample `s`.
    pub fn cell(&self, s: &Sample, i: usize) -> Option<NodeCell> {
        s.nodes.get(i).copied().flatten()
    }
}

fn describe_change(
    before: &(NodeState, bool, String),
    now: &(NodeState, bool, String),
) -> Option<String> {
    let mut parts = Vec::new();
    if before.0 != now.0 {
        parts.push(format!("{:?} → {:?}", before.0, now.0));
    }
    if before.1 != now.1 {
        parts.push(if now.1 { "cordoned" } else { "uncordoned" }.to_string());
    }
    if before.2 != now.2 {
        let taints = if now.2.is_empty() { "none" } else { &now.2 };
        parts.push(format!("taints: {taints}"));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_names_readiness_cordon_and_taints() {
        let before = (NodeState::Ready, false, String::new());
        let now = (NodeState::Unreachable, true, "k:NoExecute".to_string());
        assert_eq!(
            describe_change(&before, &now).as_deref(),
            Some("Ready → Unreachable; cordoned; taints: k:NoExecute")
        );
        assert_eq!(describe_change(&before, &before), None);
    }

    #[test]
    fn thinning_keeps_the_samples_within_their_cap_and_the_last_one() {
        let mut s = Samples::new();
        s.names = vec!["n".into()];
        for i in 0..=MAX_SAMPLES {
            s.samples.push(Sample {
                time: i as f64,
                pending: 0,
                nodes: vec![None],
            });
        }
        s.thin();
        assert!(s.samples.len() <= MAX_SAMPLES / 2 + 2);
        assert_eq!(s.samples.last().map(|x| x.time), Some(MAX_SAMPLES as f64));
        assert_eq!(s.interval, 2.0);
    }
}

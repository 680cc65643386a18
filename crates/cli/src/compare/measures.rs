//! What `compare` measures of one finished run, from its records and the state at its end.
//!
//! - Pods scheduled: pods bound to a node at the end and not finished (phase neither Succeeded
//!   nor Failed); pending: pods bound to no node and not being deleted (as `simulate`'s summary).
//! - Utilisation of a node: the requests (`kubeplane_core::resources::pod_requests`) of its
//!   unfinished bound pods over its allocatable, in percent; mean, population standard
//!   deviation and max − min over the nodes (a node with no allocatable cpu, or memory, is left
//!   out of that resource's figures). Nodes used: nodes with at least one such pod.
//! - Pods per zone (`topology.kubernetes.io/zone` of the node): every zone of a node is listed,
//!   with 0 when it has no pod; nodes without the label are not counted.
//! - Preemptions and evictions: `Preempted` events and `TaintManagerEviction` events that mark
//!   a pod for deletion, counted as `simulate`'s summary counts them.
//! - Moved: pods placed differently (another node, or bound in one run and not in the other)
//!   than under the first configuration. Pods are matched by namespace and name; the pods left
//!   over that have a generated name are matched by their controller (namespace, kind, name)
//!   and their ordinal in name order within it. Pods matched in neither way are "unmatched".

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::BTreeMap;

use kubeplane_core::resources::{node_allocatable, pod_requests};
use kubeplane_sim::{Record, Simulation};

use crate::summary::Summary;

/// The zone label.
const ZONE: &str = "topology.kubernetes.io/zone";

/// Mean, population standard deviation and max − min of per-node percentages.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub std_dev: f64,
    pub range: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        let min = values.iter().copied().fold(f64::MAX, f64::min);
        Spread {
            mean,
            std_dev: var.sqrt(),
            range: max - min,
        }
    }
}

/// One pod at the end of a run, for matching it with the other runs.
#[derive(Clone, Debug)]
pub struct Placement {
    pub namespace: String,
    pub name: String,
    /// The controller (kind, name) of a pod with a generated name.
    pub generated_by: Option<(String, String)>,
    pub node: Option<String>,
}

/// The measures of one run.
#[derive(Clone, Debug)]
pub struct Run {
    /// The column's name.
    pub name: String,
    /// `--config` as given.
    pub config: String,
    pub scheduled: usize,
    pub pending: usize,
    pub nodes: usize,
    pub nodes_used: usize,
    pub cpu: Spread,
    pub memory: Spread,
    pub pods_per_zone: BTreeMap<String, usize>,
    /// Events counted as `simulate`'s summary counts them (preemptions, evictions,
    /// expectations, failed steps) and the virtual time at the end.
    pub summary: Summary,
    /// Pods placed differently than under the first configuration (`None` for the first).
    pub moved: Option<usize>,
    /// Pods of either run without a counterpart in the other (0 for the first).
    pub unmatched: usize,
    /// The simulation's error, when it stopped on one.
    pub error: Option<String>,
    pub placements: Vec<Placement>,
}

impl Run {
    /// No error, no failed expectation, no failed step.
    pub fn succeeded(&self) -> bool {
        self.error.is_none()
            && self.summary.expectations_failed == 0
            && self.summary.steps_failed == 0
    }

    /// Pods per zone, max − min (`None` without zones).
    pub fn zone_range(&self) -> Option<usize> {
        let max = self.pods_per_zone.values().max()?;
        let min = self.pods_per_zone.values().min()?;
        Some(max - min)
    }
}

fn finished(p: &StoredPod) -> bool {
    let phase = p.phase();
    matches!(phase, Some("Succeeded" | "Failed"))
}

fn placement(p: &StoredPod) -> Placement {
    let m = &p.metadata;
    let generated_by = m.generate_name.as_ref().and_then(|_| {
        let owners = p.owner_references().map_or(&[][..], Vec::as_slice);
        let c = owners.iter().find(|o| o.controller == Some(true))?;
        Some((c.kind.clone(), c.name.clone()))
    });
    Placement {
        namespace: m.namespace.clone().unwrap_or_default(),
        name: m.name.clone().unwrap_or_default(),
        generated_by,
        node: p.node_name().map(str::to_string),
    }
}

/// Requested cpu (milli) and memory per node name, of the unfinished bound pods.
fn requests_per_node(sim: &Simulation) -> BTreeMap<String, (i64, i64)> {
    let mut out: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for p in sim.store.pods().filter(|p| !finished(p)) {
        let Some(spec) = p.spec.as_ref() else {
            continue;
        };
        let Some(node) = p.node_name().map(str::to_string) else {
            continue;
        };
        let r = pod_requests(spec).unwrap_or_default();
        let e = out.entry(node).or_default();
        e.0 += r.milli_cpu;
        e.1 += r.memory;
    }
    out
}

/// Fills the node measures: utilisation, nodes used, pods per zone.
fn measure_nodes(sim: &Simulation, run: &mut Run) {
    let requests = requests_per_node(sim);
    let mut pods_on: BTreeMap<&str, usize> = BTreeMap::new();
    for p in &run.placements {
        if let Some(n) = &p.node {
            *pods_on.entry(n.as_str()).or_default() += 1;
        }
    }
    let (mut cpu, mut memory) = (Vec::new(), Vec::new());
    for node in sim.store.nodes() {
        let name = node.metadata.name.clone().unwrap_or_default();
        let (req_cpu, req_mem) = requests.get(&name).copied().unwrap_or_default();
        let alloc = node_allocatable(node).unwrap_or_default();
        if alloc.milli_cpu > 0 {
            cpu.push(100.0 * req_cpu as f64 / alloc.milli_cpu as f64);
        }
        if alloc.memory > 0 {
            memory.push(100.0 * req_mem as f64 / alloc.memory as f64);
        }
        run.nodes += 1;
        run.nodes_used += usize::from(requests.contains_key(&name));
        let labels = node.metadata.labels.as_ref();
        if let Some(zone) = labels.and_then(|l| l.get(ZONE)) {
            *run.pods_per_zone.entry(zone.clone()).or_default() +=
                pods_on.get(name.as_str()).copied().unwrap_or(0);
        }
    }
    run.cpu = Spread::of(&cpu);
    run.memory = Spread::of(&memory);
}

/// The measures of a finished run.
pub fn measure(
    name: String,
    config: String,
    sim: &Simulation,
    records: &[Record],
    error: Option<String>,
) -> Run {
    let mut summary = Summary {
        end_secs: (sim.now - kubeplane_core::SimTime::ZERO).as_secs_f64(),
        ..Summary::default()
    };
    for r in records {
        summary.count(&r.to_json());
    }
    let mut run = Run {
        name,
        config,
        scheduled: 0,
        pending: 0,
        nodes: 0,
        nodes_used: 0,
        cpu: Spread::default(),
        memory: Spread::default(),
        pods_per_zone: BTreeMap::new(),
        summary,
        moved: None,
        unmatched: 0,
        error,
        placements: Vec::new(),
    };
    for p in sim.store.pods() {
        let bound = p.node_name().is_some();
        if bound && !finished(p) {
            run.scheduled += 1;
            run.placements.push(placement(p));
        } else if !bound && p.metadata.deletion_timestamp.is_none() {
            run.pending += 1;
            run.placements.push(placement(p));
        }
    }
    measure_nodes(sim, &mut run);
    run
}

/// A controller of pods with generated names: namespace, kind, name.
type Controller<'a> = (&'a str, &'a str, &'a str);
/// The pods of a controller that no pod of the other run matches by name: of `a`, of `b`.
type Leftovers<'a> = (Vec<&'a Placement>, Vec<&'a Placement>);

/// Matched pairs' placements differing, and the pods without a counterpart, of `b` against `a`.
pub fn moved(a: &[Placement], b: &[Placement]) -> (usize, usize) {
    type Key<'a> = (&'a str, &'a str);
    let by_name: BTreeMap<Key, &Placement> = a
        .iter()
        .map(|p| ((p.namespace.as_str(), p.name.as_str()), p))
        .collect();
    let b_names: std::collections::BTreeSet<Key> = b
        .iter()
        .map(|p| (p.namespace.as_str(), p.name.as_str()))
        .collect();
    let (mut moved, mut unmatched) = (0, 0);
    let mut groups: BTreeMap<Controller, Leftovers> = BTreeMap::new();
    for p in b {
        match by_name.get(&(p.namespace.as_str(), p.name.as_str())) {
            Some(q) => moved += usize::from(q.node != p.node),
            None => match &p.generated_by {
                Some((k, n)) => groups.entry((&p.namespace, k, n)).or_default().1.push(p),
                None => unmatched += 1,
            },
        }
    }
    for p in a
        .iter()
        .filter(|p| !b_names.contains(&(p.namespace.as_str(), p.name.as_str())))
    {
        match &p.generated_by {
            Some((k, n)) => groups.entry((&p.namespace, k, n)).or_default().0.push(p),
            None => unmatched += 1,
        }
    }
    for (mut xs, mut ys) in groups.into_values() {
        xs.sort_by(|x, y| x.name.cmp(&y.name));
        ys.sort_by(|x, y| x.name.cmp(&y.name));
        moved += xs.iter().zip(&ys).filter(|(x, y)| x.node != y.node).count();
        unmatched += xs.len().abs_diff(ys.len());
    }
    (moved, unmatched)
}

/// Fills `moved` and `unmatched` of every run after the first against the first.
pub fn compare_placements(runs: &mut [Run]) {
    let Some((first, rest)) = runs.split_first_mut() else {
        return;
    };
    for run in rest {
        let (moved, unmatched) = moved(&first.placements, &run.placements);
        run.moved = Some(moved);
        run.unmatched = unmatched;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, owner: Option<&str>, node: Option<&str>) -> Placement {
        Placement {
            namespace: "default".into(),
            name: name.into(),
            generated_by: owner.map(|o| ("ReplicaSet".into(), o.into())),
            node: node.map(String::from),
        }
    }

    #[test]
    fn pods_are_matched_by_name_then_generated_ones_by_owner_and_ordinal() {
        let a = [
            pod("batch", None, Some("n1")),
            pod("web-x", Some("web"), Some("n1")),
            pod("web-a", Some("web"), Some("n2")),
            pod("db-q", Some("db"), Some("n3")),
            pod("solo", None, Some("n1")),
        ];
        let b = [
            pod("batch", None, Some("n2")),
            // Same names: matched by name, whatever their order.
            pod("web-a", Some("web"), Some("n2")),
            // Renamed: web-x (a's first leftover of web) pairs with web-b (b's first).
            pod("web-b", Some("web"), None),
            pod("db-r", Some("db"), Some("n3")),
            pod("db-s", Some("db"), Some("n3")),
        ];
        // Moved: batch (n1 → n2), web-x/web-b (n1 → pending). Unmatched: solo, one db pod.
        assert_eq!(moved(&a, &b), (2, 2));
        assert_eq!(moved(&a, &a), (0, 0));
    }

    #[test]
    fn the_spread_is_the_mean_the_population_deviation_and_the_range() {
        let s = Spread::of(&[100.0, 100.0, 0.0]);
        assert!((s.mean - 200.0 / 3.0).abs() < 1e-9);
        assert!((s.std_dev - (20000.0f64 / 9.0).sqrt()).abs() < 1e-9);
        assert_eq!(s.range, 100.0);
        assert_eq!(Spread::of(&[]), Spread::default());
    }
}

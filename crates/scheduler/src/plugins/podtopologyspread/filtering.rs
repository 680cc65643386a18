//! PodTopologySpread PreFilter (with AddPod/RemovePod) and Filter (upstream
//! `podtopologyspread/filtering.go`).

use std::sync::Arc;

use kubeplane_core::nodeaffinity::RequiredNodeAffinity;

use crate::cache::Snapshot;
use crate::framework::topology;
use crate::framework::{
    mark_all_failed, mark_failures, CycleState, FilterPlugin, NodeInfo, PodInfo, PreFilterPlugin,
    PreFilterResult, Status,
};
use crate::plugins::helper::FxHashMap;
use crate::plugins::memo::NodeMemo;

use super::{
    count_pods_match_selector, node_labels_match_constraints, Constraint, PodTopologySpread,
    DO_NOT_SCHEDULE, NAME, REASON_CONSTRAINTS_NOT_MATCH, REASON_NODE_LABEL_NOT_MATCH,
};

pub(crate) static PRE_FILTER_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreFilterPodTopologySpread");

/// A topology value and how many matching pods it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CriticalPath {
    pub topology_value: String,
    pub match_num: i32,
}

/// The two domains with the fewest matching pods, smallest first (upstream `criticalPaths`).
/// Kept up to date incrementally as upstream v1.34 does: a domain that is neither of the two is
/// only considered when its count drops below theirs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CriticalPaths(pub [CriticalPath; 2]);

impl CriticalPaths {
    fn new() -> CriticalPaths {
        let p = || CriticalPath {
            topology_value: String::new(),
            match_num: i32::MAX,
        };
        CriticalPaths([p(), p()])
    }

    /// The critical paths of these domain counts: the two smallest counts, as upstream's
    /// `update` over the map gives in any order; among equal counts upstream keeps whichever
    /// it saw first (map order), kubeplane the smaller value, so that runs repeat.
    pub fn of(counts: &FxHashMap<String, i32>) -> CriticalPaths {
        let mut p = CriticalPaths::new();
        let mut best: [Option<(i32, &str)>; 2] = [None, None];
        for (v, &n) in counts {
            let cand = (n, v.as_str());
            if best[0].is_none_or(|b| cand < b) {
                best[1] = best[0];
                best[0] = Some(cand);
            } else if best[1].is_none_or(|b| cand < b) {
                best[1] = Some(cand);
            }
        }
        for (slot, b) in p.0.iter_mut().zip(best) {
            if let Some((n, v)) = b {
                *slot = CriticalPath {
                    topology_value: v.to_string(),
                    match_num: n,
                };
            }
        }
        p
    }

    pub fn update(&mut self, value: &str, num: i32) {
        let p = &mut self.0;
        let i = if value == p[0].topology_value {
            Some(0)
        } else if value == p[1].topology_value {
            Some(1)
        } else {
            None
        };
        match i {
            Some(i) => {
                p[i].match_num = num;
                if p[0].match_num > p[1].match_num {
                    p.swap(0, 1);
                }
            }
            None => {
                if num < p[0].match_num {
                    p[1] = p[0].clone();
                    p[0] = CriticalPath {
                        topology_value: value.to_string(),
                        match_num: num,
                    };
                } else if num < p[1].match_num {
                    p[1] = CriticalPath {
                        topology_value: value.to_string(),
                        match_num: num,
                    };
                }
            }
        }
    }
}

/// What PreFilter computes for Filter.
#[derive(Clone, Debug)]
pub(crate) struct PreFilterState {
    pub constraints: Arc<Vec<Constraint>>,
    /// Per constraint: the critical paths.
    pub critical_paths: Vec<CriticalPaths>,
    /// Per constraint: topology value → matching pods, over the eligible nodes.
    pub tp_value_to_match_num: Vec<Arc<FxHashMap<String, i32>>>,
    /// The same by the pair id of (topology key, value) (see [`crate::framework::topology`]),
    /// which Filter reads.
    pub match_num_by_pair: Vec<Arc<FxHashMap<u32, i32>>>,
    /// Per constraint: the id of its topology key (`None`: no node has it).
    pub key_ids: Vec<Option<u32>>,
    /// The incoming pod's required node affinity (for the inclusion policies).
    pub required: Arc<RequiredNodeAffinity>,
    /// Per constraint: 1 when the incoming pod matches its selector (counted once, not per
    /// node).
    pub self_match: Vec<i32>,
    /// Per constraint with few domains: the verdict of each domain, computed once per cycle
    /// (and again when AddPod/RemovePod change the counts).
    pub verdicts: Vec<Option<Verdicts>>,
}

/// Whether a node in each domain passes one constraint's skew check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Verdicts {
    /// `(pair id, passes)` per domain with a count.
    by_pair: Vec<(u32, bool)>,
    /// The verdict of a domain without a count (no matching pod, no eligible node).
    otherwise: bool,
}

impl Verdicts {
    /// At most this many domains get verdicts; more are checked per node.
    const MAX_DOMAINS: usize = 8;

    #[inline]
    fn passes(&self, pair: u32) -> bool {
        self.by_pair
            .iter()
            .find(|(p, _)| *p == pair)
            .map_or(self.otherwise, |&(_, ok)| ok)
    }
}

impl PreFilterState {
    /// Whether a node whose domain holds `match_num` matching pods passes constraint `i`.
    fn skew_ok(&self, i: usize, match_num: i32) -> bool {
        let c = &self.constraints[i];
        let min_match = self.min_match_num(i, c.min_domains);
        let skew = match_num as i64 + self.self_match[i] as i64 - min_match as i64;
        skew <= c.max_skew as i64
    }

    /// The verdicts of constraint `i`'s domains, when it has few.
    fn verdicts_of(&self, i: usize) -> Option<Verdicts> {
        let counts = &self.match_num_by_pair[i];
        (counts.len() <= Verdicts::MAX_DOMAINS).then(|| Verdicts {
            by_pair: counts
                .iter()
                .map(|(&p, &n)| (p, self.skew_ok(i, n)))
                .collect(),
            otherwise: self.skew_ok(i, 0),
        })
    }

    fn compute_verdicts(&mut self) {
        self.verdicts = (0..self.constraints.len())
            .map(|i| self.verdicts_of(i))
            .collect();
    }

    /// The global minimum for the skew: 0 when there are fewer domains than minDomains.
    pub fn min_match_num(&self, i: usize, min_domains: i32) -> i32 {
        if (self.tp_value_to_match_num[i].len() as i64) < min_domains as i64 {
            return 0;
        }
        self.critical_paths[i].0[0].match_num
    }

    /// Accounts `other` being added (`delta` 1) or removed (-1) on `node` (upstream
    /// `updateWithPod`).
    fn update_with_pod(&mut self, pod: &PodInfo, other: &PodInfo, node: &NodeInfo, delta: i32) {
        if other.namespace() != pod.namespace() {
            return;
        }
        let Some(n) = node.node.as_ref() else { return };
        let labels = node.labels();
        if !node_labels_match_constraints(labels, &self.constraints) {
            return;
        }
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selector.matches(other.labels()) {
                continue;
            }
            if !c.matches_node_inclusion_policies(pod.spec(), n, &self.required) {
                continue;
            }
            let v = &labels[&c.topology_key];
            let count = Arc::make_mut(&mut self.tp_value_to_match_num[i])
                .entry(v.clone())
                .or_insert(0);
            *count += delta;
            let count = *count;
            if let Some(pair) = node.label_pair(self.key_ids[i]) {
                *Arc::make_mut(&mut self.match_num_by_pair[i])
                    .entry(pair)
                    .or_insert(0) += delta;
            }
            self.critical_paths[i].update(v, count);
        }
        self.compute_verdicts();
    }
}

/// What the PreFilter memo is valid for: everything the per-node counts depend on besides
/// the node itself.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FilterMemoKey {
    namespace: String,
    constraints: Vec<Constraint>,
    required: RequiredNodeAffinity,
    /// Only when some constraint honors taints.
    tolerations: Vec<k8s_openapi::api::core::v1::Toleration>,
}

/// One node's contribution: per eligible constraint, its domain (value and pair id) and
/// matching pods.
pub(crate) type NodeCounts = Vec<(usize, String, u32, i32)>;

/// Per constraint: the domains' totals, and the domains that have an eligible node with their
/// counts, by value and by pair id (shared with the cycle state).
#[derive(Default)]
pub(crate) struct DomainCounts(Vec<ConstraintDomains>);

#[derive(Default)]
struct ConstraintDomains {
    totals: DomainTotals,
    by_value: Arc<FxHashMap<String, i32>>,
    by_pair: Arc<FxHashMap<u32, i32>>,
}

/// Domain (pair id) → (matching pods, eligible nodes).
type DomainTotals = FxHashMap<u32, (i32, u32)>;

impl DomainCounts {
    fn apply(&mut self, c: &NodeCounts, sign: i64) {
        for (i, value, pair, count) in c {
            if self.0.len() <= *i {
                self.0.resize_with(i + 1, Default::default);
            }
            let d = &mut self.0[*i];
            let t = d.totals.entry(*pair).or_insert((0, 0));
            t.0 += sign as i32 * count;
            t.1 = (t.1 as i64 + sign) as u32;
            let (total, nodes) = *t;
            let (by_value, by_pair) = (
                Arc::make_mut(&mut d.by_value),
                Arc::make_mut(&mut d.by_pair),
            );
            if nodes == 0 {
                d.totals.remove(pair);
                by_value.remove(value.as_str());
                by_pair.remove(pair);
                continue;
            }
            by_pair.insert(*pair, total);
            if let Some(m) = by_value.get_mut(value.as_str()) {
                *m = total;
            } else {
                by_value.insert(value.clone(), total);
            }
        }
    }
}

pub(crate) type FilterMemo = NodeMemo<FilterMemoKey, NodeCounts, DomainCounts>;

/// One node's counts: none unless it has every topology key; per constraint whose inclusion
/// policies it passes, its domain and the matching pods on it.
fn node_counts(
    pod: &PodInfo,
    constraints: &[Constraint],
    key_ids: &[Option<u32>],
    required: &RequiredNodeAffinity,
    node: &NodeInfo,
) -> NodeCounts {
    let mut out = Vec::new();
    let Some(n) = node.node.as_ref() else {
        return out;
    };
    let labels = node.labels();
    if !node_labels_match_constraints(labels, constraints) {
        return out;
    }
    for (i, c) in constraints.iter().enumerate() {
        if !c.matches_node_inclusion_policies(pod.spec(), n, required) {
            continue;
        }
        let value = labels[&c.topology_key].clone();
        let pair = node
            .label_pair(key_ids[i])
            .expect("a node's interned labels are its labels");
        let count = count_pods_match_selector(&node.pods, &c.selector, pod.namespace());
        out.push((i, value, pair, count));
    }
    out
}

impl PodTopologySpread {
    /// Counts the matching pods per domain over the nodes that have every topology key and
    /// pass each constraint's inclusion policies (upstream `calPreFilterState`), reusing the
    /// counts of unchanged nodes from earlier cycles.
    pub(crate) fn pre_filter_state(
        &self,
        pod: &PodInfo,
        constraints: Vec<Constraint>,
        snapshot: &Snapshot,
    ) -> PreFilterState {
        let required = Arc::new(RequiredNodeAffinity::from_pod(pod.spec()));
        let key = FilterMemoKey {
            namespace: pod.namespace().to_string(),
            tolerations: if constraints.iter().any(|c| c.honor_node_taints) {
                pod.tolerations().to_vec()
            } else {
                Vec::new()
            },
            constraints,
            required: RequiredNodeAffinity::clone(&required),
        };
        let mut memo = self.filter_memo.lock().expect("memo lock");
        let constraints = key.constraints.clone();
        let key_ids = topology::key_ids(constraints.iter().map(|c| c.topology_key.as_str()));
        memo.update(
            key,
            snapshot,
            |n| node_counts(pod, &constraints, &key_ids, &required, n),
            |agg, c, sign| agg.apply(c, sign),
        );
        let (counts, by_pair): (Vec<_>, Vec<_>) = (0..constraints.len())
            .map(|i| {
                memo.agg
                    .0
                    .get(i)
                    .map(|d| (d.by_value.clone(), d.by_pair.clone()))
                    .unwrap_or_default()
            })
            .unzip();
        drop(memo);
        let critical_paths = counts.iter().map(|m| CriticalPaths::of(m)).collect();
        let self_match = constraints
            .iter()
            .map(|c| i32::from(c.selector.matches(pod.labels())))
            .collect();
        let mut s = PreFilterState {
            constraints: Arc::new(constraints),
            critical_paths,
            tp_value_to_match_num: counts,
            match_num_by_pair: by_pair,
            key_ids,
            required,
            self_match,
            verdicts: Vec::new(),
        };
        s.compute_verdicts();
        s
    }
}

impl PreFilterPlugin for PodTopologySpread {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let constraints = match self.constraints(&pod.pod, DO_NOT_SCHEDULE, Some(snapshot)) {
            Ok(c) => c,
            Err(e) => {
                return (
                    None,
                    Status::error(format!("get constraints from pod: {e}")),
                )
            }
        };
        if constraints.is_empty() {
            return (None, Status::skip());
        }
        state.write(
            &PRE_FILTER_KEY,
            self.pre_filter_state(pod, constraints, snapshot),
        );
        (None, Status::success())
    }

    fn has_extensions(&self) -> bool {
        true
    }

    fn add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        update_state(state, pod, to_add, node, 1)
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        update_state(state, pod, to_remove, node, -1)
    }
}

/// Counts `other` in (+1) or out (-1) of the PreFilter state as running on `node`.
fn update_state(
    state: &mut CycleState,
    pod: &PodInfo,
    other: &PodInfo,
    node: &NodeInfo,
    delta: i32,
) -> Status {
    match state.read_mut::<PreFilterState>(&PRE_FILTER_KEY) {
        Some(s) => {
            s.update_with_pod(pod, other, node, delta);
            Status::success()
        }
        None => missing_state(),
    }
}

fn missing_state() -> Status {
    Status::error(format!(
        "reading {PRE_FILTER_KEY:?} from cycleState: not found ({NAME} PreFilter did not run)"
    ))
}

/// Why a node fails a hard constraint.
#[derive(Clone, Copy)]
enum Failure {
    /// The node lacks a constraint's key.
    NoLabel,
    /// The node's domain would exceed a constraint's maxSkew.
    Skew,
}

impl Failure {
    /// The one failure whose bit (`1 << f as u8`) is set in `seen`, if only one is.
    fn only(seen: u8) -> Option<Failure> {
        [Failure::NoLabel, Failure::Skew]
            .into_iter()
            .find(|&f| seen == 1 << f as u8)
    }

    fn status(self) -> Status {
        match self {
            Failure::NoLabel => Status::unresolvable(REASON_NODE_LABEL_NOT_MATCH),
            Failure::Skew => Status::unschedulable(REASON_CONSTRAINTS_NOT_MATCH),
        }
    }
}

impl PreFilterState {
    /// Filter's verdict on one node: `None` when it passes every hard constraint.
    #[inline(always)]
    fn node_failure(&self, node: &NodeInfo) -> Option<Failure> {
        // One entry per constraint: a state whose verdicts were never computed would pass
        // every node silently.
        debug_assert_eq!(self.verdicts.len(), self.constraints.len());
        for (i, verdicts) in self.verdicts.iter().enumerate() {
            let Some(pair) = node.label_pair(self.key_ids[i]) else {
                return Some(Failure::NoLabel);
            };
            let ok = match verdicts {
                Some(v) => v.passes(pair),
                None => self.skew_ok(
                    i,
                    self.match_num_by_pair[i].get(&pair).copied().unwrap_or(0),
                ),
            };
            if !ok {
                return Some(Failure::Skew);
            }
        }
        None
    }
}

impl FilterPlugin for PodTopologySpread {
    /// For each hard constraint: the node must have the key, and
    /// `matching pods in its domain + self-match − global minimum` must not exceed maxSkew.
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(&PRE_FILTER_KEY) else {
            return missing_state();
        };
        s.node_failure(node)
            .map_or_else(Status::success, Failure::status)
    }

    /// The same per node, the cycle state read once.
    fn filter_failures(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        places: &[usize],
        failed: &mut [u64],
    ) -> Option<Status> {
        let Some(s) = state.read::<PreFilterState>(&PRE_FILTER_KEY) else {
            mark_all_failed(places.len(), failed);
            return None;
        };
        // Bit `f as u8` set: some node failed with `f`.
        let seen = mark_failures(places, failed, |place| {
            s.node_failure(&nodes[place]).map(|f| f as u8)
        });
        Failure::only(seen).map(Failure::status)
    }
}

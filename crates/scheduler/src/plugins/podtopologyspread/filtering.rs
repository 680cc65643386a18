//! PodTopologySpread PreFilter (with AddPod/RemovePod) and Filter (upstream
//! `podtopologyspread/filtering.go`).

use std::sync::Arc;

use kubeplane_core::nodeaffinity::RequiredNodeAffinity;

use crate::cache::Snapshot;
use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, PodInfo, PreFilterPlugin, PreFilterResult, Status,
};
use crate::plugins::helper::FxHashMap;

use super::{
    count_pods_match_selector, node_labels_match_constraints, Constraint, PodTopologySpread,
    DO_NOT_SCHEDULE, NAME, REASON_CONSTRAINTS_NOT_MATCH, REASON_NODE_LABEL_NOT_MATCH,
};

pub(crate) const PRE_FILTER_KEY: &str = "PreFilterPodTopologySpread";

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
    pub tp_value_to_match_num: Vec<FxHashMap<String, i32>>,
    /// The incoming pod's required node affinity (for the inclusion policies).
    pub required: Arc<RequiredNodeAffinity>,
}

impl PreFilterState {
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
        if other.namespace != pod.namespace {
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
            let count = self.tp_value_to_match_num[i].entry(v.clone()).or_insert(0);
            *count += delta;
            let count = *count;
            self.critical_paths[i].update(v, count);
        }
    }
}

/// Counts the matching pods per domain over the nodes that have every topology key and pass
/// each constraint's inclusion policies (upstream `calPreFilterState`).
pub(crate) fn pre_filter_state(
    pod: &PodInfo,
    constraints: Vec<Constraint>,
    snapshot: &Snapshot,
) -> PreFilterState {
    let required = Arc::new(RequiredNodeAffinity::from_pod(pod.spec()));
    let mut counts: Vec<FxHashMap<String, i32>> = vec![FxHashMap::default(); constraints.len()];
    for node in &snapshot.node_infos {
        let Some(n) = node.node.as_ref() else { continue };
        let labels = node.labels();
        if !node_labels_match_constraints(labels, &constraints) {
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if !c.matches_node_inclusion_policies(pod.spec(), n, &required) {
                continue;
            }
            let value = &labels[&c.topology_key];
            let count = count_pods_match_selector(&node.pods, &c.selector, &pod.namespace);
            match counts[i].get_mut(value.as_str()) {
                Some(v) => *v += count,
                None => {
                    counts[i].insert(value.clone(), count);
                }
            }
        }
    }
    let mut critical_paths = Vec::with_capacity(constraints.len());
    for m in &counts {
        let mut p = CriticalPaths::new();
        // Sorted, so that which of several equal domains becomes a critical path does not
        // depend on map order.
        let mut entries: Vec<(&String, &i32)> = m.iter().collect();
        entries.sort();
        for (value, &num) in entries {
            p.update(value, num);
        }
        critical_paths.push(p);
    }
    PreFilterState {
        constraints: Arc::new(constraints),
        critical_paths,
        tp_value_to_match_num: counts,
        required,
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
        state.write(PRE_FILTER_KEY, pre_filter_state(pod, constraints, snapshot));
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
        match state.read_mut::<PreFilterState>(PRE_FILTER_KEY) {
            Some(s) => {
                s.update_with_pod(pod, to_add, node, 1);
                Status::success()
            }
            None => missing_state(),
        }
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        match state.read_mut::<PreFilterState>(PRE_FILTER_KEY) {
            Some(s) => {
                s.update_with_pod(pod, to_remove, node, -1);
                Status::success()
            }
            None => missing_state(),
        }
    }
}

fn missing_state() -> Status {
    Status::error(format!(
        "reading {PRE_FILTER_KEY:?} from cycleState: not found ({NAME} PreFilter did not run)"
    ))
}

impl FilterPlugin for PodTopologySpread {
    /// For each hard constraint: the node must have the key, and
    /// `matching pods in its domain + self-match − global minimum` must not exceed maxSkew.
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_KEY) else {
            return missing_state();
        };
        let labels = node.labels();
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = labels.get(&c.topology_key) else {
                return Status::unresolvable(REASON_NODE_LABEL_NOT_MATCH);
            };
            let min_match = s.min_match_num(i, c.min_domains);
            let self_match = i32::from(c.selector.matches(pod.labels()));
            let match_num = s.tp_value_to_match_num[i]
                .get(value.as_str())
                .copied()
                .unwrap_or(0);
            let skew = match_num as i64 + self_match as i64 - min_match as i64;
            if skew > c.max_skew as i64 {
                return Status::unschedulable(REASON_CONSTRAINTS_NOT_MATCH);
            }
        }
        Status::success()
    }
}

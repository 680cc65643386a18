//! PodTopologySpread PreScore, Score and NormalizeScore (upstream
//! `podtopologyspread/scoring.go`).

use kubeplane_core::nodeaffinity::RequiredNodeAffinity;

use crate::cache::Snapshot;
use crate::framework::{
    CycleState, NodeInfo, PodInfo, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::plugins::helper::FxHashMap;

use super::{
    count_pods_match_selector, node_labels_match_constraints, Constraint, PodTopologySpread,
    LABEL_HOSTNAME, SCHEDULE_ANYWAY,
};

pub(crate) const PRE_SCORE_KEY: &str = "PreScorePodTopologySpread";

/// What PreScore computes for Score.
#[derive(Clone, Debug, Default)]
pub(crate) struct PreScoreState {
    pub constraints: Vec<Constraint>,
    /// Whether nodes must have every topology key (else they are ignored: score 0).
    pub require_all: bool,
    /// Per filtered node, in the order PreScore saw them (the order of Score and
    /// NormalizeScore): whether it is ignored.
    pub ignored: Vec<bool>,
    /// Per constraint (hostname constraints excluded): topology value → matching pods.
    pub topology_value_to_pod_counts: Vec<FxHashMap<String, i64>>,
    /// Per constraint: `ln(number of domains among the filtered nodes + 2)`.
    pub topology_normalizing_weight: Vec<f64>,
}

/// The weight of a topology with `size` domains.
pub(crate) fn topology_normalizing_weight(size: usize) -> f64 {
    ((size + 2) as f64).ln()
}

/// A domain's contribution: `count × weight + (maxSkew − 1)`.
fn score_for_count(count: i64, max_skew: i32, weight: f64) -> f64 {
    count as f64 * weight + (max_skew - 1) as f64
}

impl PreScorePlugin for PodTopologySpread {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        if snapshot.node_infos.is_empty() {
            return Status::skip();
        }
        let has_own = pod
            .spec()
            .topology_spread_constraints
            .as_ref()
            .is_some_and(|c| !c.is_empty());
        let constraints = match self.constraints(&pod.pod, SCHEDULE_ANYWAY, Some(snapshot)) {
            Ok(c) => c,
            Err(e) => {
                let what = if has_own {
                    "obtaining pod's soft topology spread constraints"
                } else {
                    "setting default soft topology spread constraints"
                };
                return Status::error(format!("calculating preScoreState: {what}: {e}"));
            }
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        // Only user-given or non-system constraints require nodes to have every key, so nodes
        // without a zone label still spread by hostname under the system defaults.
        let require_all = has_own || !self.system_defaulted;
        let mut s = PreScoreState {
            topology_value_to_pod_counts: vec![FxHashMap::default(); constraints.len()],
            require_all,
            ignored: Vec::with_capacity(nodes.len()),
            ..Default::default()
        };
        let mut topo_size = vec![0usize; constraints.len()];
        let mut n_ignored = 0;
        for node in nodes {
            let labels = node.labels();
            let ignored = require_all && !node_labels_match_constraints(labels, &constraints);
            s.ignored.push(ignored);
            if ignored {
                n_ignored += 1;
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key == LABEL_HOSTNAME {
                    continue;
                }
                let value = labels.get(&c.topology_key).map_or("", String::as_str);
                if !s.topology_value_to_pod_counts[i].contains_key(value) {
                    s.topology_value_to_pod_counts[i].insert(value.to_string(), 0);
                    topo_size[i] += 1;
                }
            }
        }
        s.topology_normalizing_weight = constraints
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let size = if c.topology_key == LABEL_HOSTNAME {
                    nodes.len() - n_ignored
                } else {
                    topo_size[i]
                };
                topology_normalizing_weight(size)
            })
            .collect();
        let required = RequiredNodeAffinity::from_pod(pod.spec());
        for node in &snapshot.node_infos {
            let Some(n) = node.node.as_ref() else {
                continue;
            };
            let labels = node.labels();
            if require_all && !node_labels_match_constraints(labels, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !c.matches_node_inclusion_policies(pod.spec(), n, &required) {
                    continue;
                }
                let value = labels.get(&c.topology_key).map_or("", String::as_str);
                // Domains of no filtered node do not matter; hostname counts are per node.
                let Some(count) = s.topology_value_to_pod_counts[i].get_mut(value) else {
                    continue;
                };
                *count += count_pods_match_selector(&node.pods, &c.selector, &pod.namespace) as i64;
            }
        }
        s.constraints = constraints;
        state.write(PRE_SCORE_KEY, s);
        Status::success()
    }
}

impl ScorePlugin for PodTopologySpread {
    /// The sum over constraints of the node's domain score, rounded; ignored nodes score 0.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_KEY) else {
            return Err(Status::error(format!(
                "error reading {PRE_SCORE_KEY:?} from cycleState"
            )));
        };
        let labels = node.labels();
        if s.require_all && !node_labels_match_constraints(labels, &s.constraints) {
            return Ok(0);
        }
        let mut score = 0.0;
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = labels.get(&c.topology_key) else {
                continue;
            };
            let count = if c.topology_key == LABEL_HOSTNAME {
                count_pods_match_selector(&node.pods, &c.selector, &pod.namespace) as i64
            } else {
                s.topology_value_to_pod_counts[i]
                    .get(value.as_str())
                    .copied()
                    .unwrap_or(0)
            };
            score += score_for_count(count, c.max_skew, s.topology_normalizing_weight[i]);
        }
        Ok(score.round() as i64)
    }

    /// Fewer matching pods is better: `100 × (max + min − score) / max` over the nodes that
    /// are not ignored; ignored nodes get 0; all 100 when the highest score is 0.
    fn normalize_score(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) -> Status {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_KEY) else {
            return Status::error(format!("error reading {PRE_SCORE_KEY:?} from cycleState"));
        };
        let ignored = &s.ignored;
        let mut min = i64::MAX;
        let mut max = 0;
        for (i, &score) in scores.iter().enumerate() {
            if ignored.get(i).copied().unwrap_or(false) {
                continue;
            }
            min = min.min(score);
            max = max.max(score);
        }
        for (i, score) in scores.iter_mut().enumerate() {
            if ignored.get(i).copied().unwrap_or(false) {
                *score = 0;
                continue;
            }
            if max == 0 {
                *score = MAX_NODE_SCORE;
                continue;
            }
            *score = MAX_NODE_SCORE * (max + min - *score) / max;
        }
        Status::success()
    }
}

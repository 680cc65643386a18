//! InterPodAffinity PreScore, Score and NormalizeScore (upstream
//! `interpodaffinity/scoring.go`).

use std::collections::BTreeMap;

use crate::cache::Snapshot;
use crate::framework::{
    AffinityTerm, CycleState, NodeInfo, PodInfo, PreScorePlugin, ScorePlugin, Status,
    WeightedAffinityTerm, MAX_NODE_SCORE,
};

use super::{merge_namespaces, namespace_labels, InterPodAffinity};
use crate::plugins::helper::FxHashMap;

pub(crate) const PRE_SCORE_KEY: &str = "PreScoreInterPodAffinity";

/// topology key → value → score.
#[derive(Clone, Debug, Default)]
pub(crate) struct TopologyScore(FxHashMap<String, FxHashMap<String, i64>>);

impl TopologyScore {
    /// Adds `weight * multiplier` to the node's pair of the term's key when the term selects
    /// the pod; returns whether anything was recorded.
    #[allow(clippy::too_many_arguments)]
    fn process_term(
        &mut self,
        term: &AffinityTerm,
        weight: i64,
        namespace: &str,
        labels: &BTreeMap<String, String>,
        ns_labels: Option<&BTreeMap<String, String>>,
        node_labels: &BTreeMap<String, String>,
        multiplier: i64,
    ) -> bool {
        if !term.matches(namespace, labels, ns_labels) {
            return false;
        }
        let Some(v) = node_labels.get(&term.topology_key) else {
            return false;
        };
        let values = match self.0.get_mut(&term.topology_key) {
            Some(m) => m,
            None => self.0.entry(term.topology_key.clone()).or_default(),
        };
        match values.get_mut(v) {
            Some(s) => *s += weight * multiplier,
            None => {
                values.insert(v.clone(), weight * multiplier);
            }
        }
        true
    }

    fn process_terms(
        &mut self,
        terms: &[WeightedAffinityTerm],
        namespace: &str,
        labels: &BTreeMap<String, String>,
        ns_labels: Option<&BTreeMap<String, String>>,
        node_labels: &BTreeMap<String, String>,
        multiplier: i64,
    ) -> bool {
        let mut any = false;
        for w in terms {
            any |= self.process_term(
                &w.term,
                w.weight as i64,
                namespace,
                labels,
                ns_labels,
                node_labels,
                multiplier,
            );
        }
        any
    }

    fn score(&self, node_labels: &BTreeMap<String, String>) -> i64 {
        let mut score = 0;
        for (key, values) in &self.0 {
            if let Some(v) = node_labels.get(key) {
                score += values.get(v).copied().unwrap_or(0);
            }
        }
        score
    }
}

impl PreScorePlugin for InterPodAffinity {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        let own = pod.affinity_terms.clone().unwrap_or_default();
        let has_constraints =
            !own.preferred_affinity.is_empty() || !own.preferred_anti_affinity.is_empty();
        if self.ignore_preferred_terms_of_existing_pods && !has_constraints {
            return Status::skip();
        }
        if let Some(e) = &own.parse_error {
            return Status::error(format!("failed to parse pod: {e}"));
        }
        let terms = merge_namespaces(&own, snapshot);
        let ns_labels = namespace_labels(snapshot, &pod.namespace);
        let mut topology_score = TopologyScore::default();
        let mut any = false;
        for node in &snapshot.node_infos {
            // Unless the pod has preferred terms, only pods with affinity can contribute.
            if !has_constraints && node.n_pods_with_affinity == 0 {
                continue;
            }
            let Some(n) = node.node.as_ref() else { continue };
            let Some(node_labels) = n.metadata.labels.as_ref().filter(|l| !l.is_empty()) else {
                continue;
            };
            for existing in &node.pods {
                if !has_constraints && !existing.has_affinity {
                    continue;
                }
                let (ens, elabels) = (&existing.namespace, existing.labels());
                any |= topology_score.process_terms(
                    &terms.preferred_affinity,
                    ens,
                    elabels,
                    None,
                    node_labels,
                    1,
                );
                any |= topology_score.process_terms(
                    &terms.preferred_anti_affinity,
                    ens,
                    elabels,
                    None,
                    node_labels,
                    -1,
                );
                let Some(et) = &existing.affinity_terms else {
                    continue;
                };
                if self.hard_pod_affinity_weight > 0 {
                    for term in &et.required_affinity {
                        any |= topology_score.process_term(
                            term,
                            self.hard_pod_affinity_weight as i64,
                            &pod.namespace,
                            pod.labels(),
                            ns_labels.as_ref(),
                            node_labels,
                            1,
                        );
                    }
                }
                any |= topology_score.process_terms(
                    &et.preferred_affinity,
                    &pod.namespace,
                    pod.labels(),
                    ns_labels.as_ref(),
                    node_labels,
                    1,
                );
                any |= topology_score.process_terms(
                    &et.preferred_anti_affinity,
                    &pod.namespace,
                    pod.labels(),
                    ns_labels.as_ref(),
                    node_labels,
                    -1,
                );
            }
        }
        if !any {
            return Status::skip();
        }
        state.write(PRE_SCORE_KEY, topology_score);
        Status::success()
    }
}

impl ScorePlugin for InterPodAffinity {
    /// The sum of the scores of the node's topology pairs (negative for anti-affinity).
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<TopologyScore>(PRE_SCORE_KEY) else {
            return Err(Status::error(format!(
                "failed to read {PRE_SCORE_KEY:?} from cycleState"
            )));
        };
        Ok(s.score(node.labels()))
    }

    /// Min-max normalization to [0, 100]: `100 * (s - min) / (max - min)` in floating point,
    /// truncated; all 0 when every node scores the same.
    fn normalize_score(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) -> Status {
        let Some(s) = state.read::<TopologyScore>(PRE_SCORE_KEY) else {
            return Status::error(format!("failed to read {PRE_SCORE_KEY:?} from cycleState"));
        };
        if s.0.is_empty() {
            return Status::success();
        }
        let min = scores.iter().copied().min().unwrap_or(0);
        let max = scores.iter().copied().max().unwrap_or(0);
        let diff = max - min;
        for score in scores.iter_mut() {
            let f = if diff > 0 {
                MAX_NODE_SCORE as f64 * ((*score - min) as f64 / diff as f64)
            } else {
                0.0
            };
            *score = f as i64;
        }
        Status::success()
    }
}

//! InterPodAffinity PreScore, Score and NormalizeScore (upstream
//! `interpodaffinity/scoring.go`).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cache::Snapshot;
use crate::framework::topology;
use crate::framework::{
    AffinityTerm, CycleState, NodeInfo, PodInfo, PreScorePlugin, ScorePlugin, Status,
    WeightedAffinityTerm, MAX_NODE_SCORE,
};

use super::{merge_namespaces, namespace_labels, InterPodAffinity};
use crate::plugins::helper::FxHashMap;
use crate::plugins::memo::NodeMemo;

pub(crate) static PRE_SCORE_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreScoreInterPodAffinity");

/// Topology pair (by id, see [`crate::framework::topology`]) → score. A pair once recorded
/// stays, at 0 too, as upstream's nested map keeps it; so does its key in `keys`.
#[derive(Clone, Debug, Default)]
pub(crate) struct TopologyScore {
    pairs: FxHashMap<u32, i64>,
    /// The keys of the recorded pairs (by id), each once: a pair id stands for one key and
    /// value, and a node has one value per key, so a node's score is the sum over these keys
    /// of its pair's score.
    keys: Vec<u32>,
}

impl TopologyScore {
    /// Adds (`sign` 1) or takes away (-1) one node's contribution.
    fn apply(&mut self, c: &ScoredPairs, sign: i64) {
        for &(key, pair, n) in c {
            *self.pairs.entry(pair).or_insert(0) += sign * n;
            if !self.keys.contains(&key) {
                self.keys.push(key);
            }
        }
    }

    /// The sum of the scores of the node's pairs of the recorded keys (upstream's sum over
    /// the recorded keys of the node's value's score).
    fn score(&self, node: &NodeInfo) -> i64 {
        self.keys
            .iter()
            .filter_map(|&key| node.label_pair(Some(key)))
            .map(|pair| self.pairs.get(&pair).copied().unwrap_or(0))
            .sum()
    }
}

/// One node's scored pairs: `(key id, pair id, score)`, a pair once.
pub(crate) type ScoredPairs = Vec<(u32, u32, i64)>;

/// Adds `n` to the node's pair of `key`, if it has one.
fn push_scored(out: &mut ScoredPairs, node: &NodeInfo, key: Option<u32>, n: i64) {
    let (Some(k), Some(pair)) = (key, node.label_pair(key)) else {
        return;
    };
    match out.iter_mut().find(|e| e.1 == pair) {
        Some(e) => e.2 += n,
        None => out.push((k, pair, n)),
    }
}

/// Adds `weight * multiplier` to the node's pair of the term's key when the term selects the
/// pod; returns whether anything was recorded.
#[allow(clippy::too_many_arguments)]
fn process_term(
    out: &mut ScoredPairs,
    term: &AffinityTerm,
    weight: i64,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    ns_labels: Option<&BTreeMap<String, String>>,
    node: &NodeInfo,
    multiplier: i64,
) -> bool {
    if !term.matches(namespace, labels, ns_labels) {
        return false;
    }
    let key = topology::key_id(&term.topology_key);
    if node.label_pair(key).is_none() {
        return false;
    }
    push_scored(out, node, key, weight * multiplier);
    true
}

fn process_terms(
    out: &mut ScoredPairs,
    terms: &[WeightedAffinityTerm],
    namespace: &str,
    labels: &BTreeMap<String, String>,
    ns_labels: Option<&BTreeMap<String, String>>,
    node: &NodeInfo,
    multiplier: i64,
) -> u32 {
    let mut n = 0;
    for w in terms {
        n += u32::from(process_term(
            out,
            &w.term,
            w.weight as i64,
            namespace,
            labels,
            ns_labels,
            node,
            multiplier,
        ));
    }
    n
}

/// What the scores depend on besides the nodes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ScoreKey {
    preferred_affinity: Vec<WeightedAffinityTerm>,
    preferred_anti_affinity: Vec<WeightedAffinityTerm>,
    namespace: String,
    labels: BTreeMap<String, String>,
    namespace_labels: Option<BTreeMap<String, String>>,
    has_constraints: bool,
}

/// One node's contribution: per pair, the score; and how many terms matched.
pub(crate) type NodeScore = (ScoredPairs, u32);

pub(crate) type ScoreMemo = NodeMemo<ScoreKey, NodeScore, (Arc<TopologyScore>, i64)>;

impl InterPodAffinity {
    /// One node's contribution (upstream `processExistingPod` over the node's pods).
    fn node_score(&self, key: &ScoreKey, pod: &PodInfo, node: &NodeInfo) -> NodeScore {
        let mut out = Vec::new();
        let mut matched = 0;
        // Unless the pod has preferred terms, only pods with affinity can contribute.
        if !key.has_constraints && node.n_pods_with_affinity == 0 {
            return (out, matched);
        }
        if node.label_ids.is_empty() {
            return (out, matched);
        }
        let ns_labels = key.namespace_labels.as_ref();
        for existing in &node.pods {
            if !key.has_constraints && !existing.has_affinity {
                continue;
            }
            let (ens, elabels) = (existing.namespace(), existing.labels());
            matched += process_terms(
                &mut out,
                &key.preferred_affinity,
                ens,
                elabels,
                None,
                node,
                1,
            );
            matched += process_terms(
                &mut out,
                &key.preferred_anti_affinity,
                ens,
                elabels,
                None,
                node,
                -1,
            );
            let Some(et) = &existing.affinity_terms else {
                continue;
            };
            if self.hard_pod_affinity_weight > 0 {
                for term in &et.required_affinity {
                    matched += u32::from(process_term(
                        &mut out,
                        term,
                        self.hard_pod_affinity_weight as i64,
                        pod.namespace(),
                        pod.labels(),
                        ns_labels,
                        node,
                        1,
                    ));
                }
            }
            matched += process_terms(
                &mut out,
                &et.preferred_affinity,
                pod.namespace(),
                pod.labels(),
                ns_labels,
                node,
                1,
            );
            matched += process_terms(
                &mut out,
                &et.preferred_anti_affinity,
                pod.namespace(),
                pod.labels(),
                ns_labels,
                node,
                -1,
            );
        }
        (out, matched)
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
        // Without preferred terms of its own, only pods with affinity can score the pod.
        if !has_constraints && snapshot.n_nodes_with_affinity_pods == 0 {
            return Status::skip();
        }
        let terms = merge_namespaces(&own, snapshot);
        let key = ScoreKey {
            preferred_affinity: terms.preferred_affinity.clone(),
            preferred_anti_affinity: terms.preferred_anti_affinity.clone(),
            namespace: pod.namespace().to_string(),
            labels: pod.labels().clone(),
            namespace_labels: namespace_labels(snapshot, pod.namespace()),
            has_constraints,
        };
        let mut memos = self.memos.lock().expect("memo lock");
        let memo = &mut memos.score;
        let k = key.clone();
        memo.update(
            key,
            snapshot,
            |n| self.node_score(&k, pod, n),
            |agg, (c, matched), sign| {
                Arc::make_mut(&mut agg.0).apply(c, sign);
                agg.1 += sign * *matched as i64;
            },
        );
        if memo.agg.1 == 0 {
            return Status::skip();
        }
        let topology_score = memo.agg.0.clone();
        drop(memos);
        state.write(&PRE_SCORE_KEY, topology_score);
        Status::success()
    }
}

fn read_state(state: &CycleState) -> Result<&TopologyScore, Status> {
    state
        .read::<Arc<TopologyScore>>(&PRE_SCORE_KEY)
        .map(|s| &**s)
        .ok_or_else(|| Status::error(format!("failed to read {PRE_SCORE_KEY:?} from cycleState")))
}

/// At most this many scored pairs are searched in a list rather than the map.
const SHORT_LIST: usize = 8;

/// [`ScorePlugin::score_nodes`] with one recorded key and its pairs' scores in `list`: each
/// node's pair of `key` is looked for first where the previous node had it (nodes carry the
/// same labels, sorted by key), and a node in the previous node's pair scores as it did.
fn one_key(key: u32, list: &[(u32, i64)], nodes: &[&NodeInfo], out: &mut [i64]) {
    let mut at = 0;
    let mut last: Option<(u32, i64)> = None;
    for (node, cell) in nodes.iter().zip(out.iter_mut()) {
        let ids = &node.label_ids;
        let pair = match ids.get(at) {
            Some(&(k, pair)) if k == key => Some(pair),
            _ => ids.iter().position(|e| e.0 == key).map(|i| {
                at = i;
                ids[i].1
            }),
        };
        *cell = match (pair, last) {
            (None, _) => 0,
            (Some(pair), Some((p, score))) if p == pair => score,
            (Some(pair), _) => {
                let score = list.iter().find(|e| e.0 == pair).map_or(0, |e| e.1);
                last = Some((pair, score));
                score
            }
        };
    }
}

impl ScorePlugin for InterPodAffinity {
    /// The sum of the scores of the node's topology pairs (negative for anti-affinity).
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(read_state(state)?.score(node))
    }

    /// [`Self::score`] for a run of nodes, the state read once. With few scored pairs (a few
    /// zones), each node's pair of each recorded key is looked up in a short list of them.
    fn score_nodes(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        nodes: &[&NodeInfo],
        _first: usize,
        out: &mut [i64],
    ) -> Result<(), (usize, Status)> {
        let s = read_state(state).map_err(|e| (0, e))?;
        if s.pairs.len() > SHORT_LIST {
            for (node, cell) in nodes.iter().zip(out.iter_mut()) {
                *cell = s.score(node);
            }
            return Ok(());
        }
        let list: Vec<(u32, i64)> = s.pairs.iter().map(|(&p, &n)| (p, n)).collect();
        if let [key] = s.keys[..] {
            one_key(key, &list, nodes, out);
            return Ok(());
        }
        for (node, cell) in nodes.iter().zip(out.iter_mut()) {
            *cell = s
                .keys
                .iter()
                .filter_map(|&key| node.label_pair(Some(key)))
                .filter_map(|pair| list.iter().find(|e| e.0 == pair).map(|e| e.1))
                .sum();
        }
        Ok(())
    }

    /// Min-max normalization to [0, 100]: `100 * (s - min) / (max - min)` in floating point,
    /// truncated; all 0 when every node scores the same.
    fn normalize_score(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) -> Status {
        let Some(s) = state.read::<Arc<TopologyScore>>(&PRE_SCORE_KEY) else {
            return Status::error(format!("failed to read {PRE_SCORE_KEY:?} from cycleState"));
        };
        if s.pairs.is_empty() {
            return Status::success();
        }
        let Some(&first) = scores.first() else {
            return Status::success();
        };
        let (min, max) = scores
            .iter()
            .fold((first, first), |(lo, hi), &s| (lo.min(s), hi.max(s)));
        let diff = max - min;
        if diff <= 0 {
            // Every node scores the same (one domain, as in SchedulingPodAffinity): all 0.
            scores.fill(0);
            return Status::success();
        }
        for score in scores.iter_mut() {
            let f = MAX_NODE_SCORE as f64 * ((*score - min) as f64 / diff as f64);
            *score = f as i64;
        }
        Status::success()
    }
}

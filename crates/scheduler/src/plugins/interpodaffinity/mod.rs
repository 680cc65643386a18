//! InterPodAffinity (PreFilter with AddPod/RemovePod, Filter, PreScore, Score): a pod's required
//! pod affinity must be satisfied by pods already in the node's topology domain, its required
//! anti-affinity must not match any of them, and no existing pod's required anti-affinity may
//! match it; preferred terms (and existing pods' terms) score nodes (upstream
//! `plugins/interpodaffinity/`).

mod filtering;
mod scoring;
#[cfg(test)]
mod tests;

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::cache::Snapshot;
use crate::framework::affinity::matches_all_terms;
use crate::framework::topology;
use crate::framework::{
    ActionType, AffinityTerm, ClusterEvent, ClusterEventWithHint, EventObject, EventResource,
    FilterPlugin, NodeInfo, Plugin, PodAffinityTerms, PreFilterPlugin, PreScorePlugin,
    QueueingHint, ScorePlugin,
};
use crate::plugins::args::{parse_args, PluginArgsError};
use crate::plugins::helper::{node_event, pod_event, FxHashMap};

pub const NAME: &str = "InterPodAffinity";

/// Filter reason: an existing pod's required anti-affinity matches the incoming pod.
pub const REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
/// Filter reason: the incoming pod's required affinity is not satisfied.
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
/// Filter reason: the incoming pod's required anti-affinity matches a pod in the domain.
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";

/// The highest `hardPodAffinityWeight` accepted.
pub const MAX_HARD_POD_AFFINITY_WEIGHT: i32 = 100;

/// `InterPodAffinityArgs` (kubescheduler.config.k8s.io/v1).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InterPodAffinityArgs {
    /// The score an existing pod's required affinity term adds when the incoming pod matches
    /// it; default 1.
    #[serde(default)]
    pub hard_pod_affinity_weight: Option<i32>,
    /// Skip scoring with existing pods' preferred terms when the incoming pod has no preferred
    /// terms of its own.
    #[serde(default)]
    pub ignore_preferred_terms_of_existing_pods: Option<bool>,
}

pub struct InterPodAffinity {
    hard_pod_affinity_weight: i32,
    ignore_preferred_terms_of_existing_pods: bool,
    /// Per-node results kept across cycles (see [`crate::plugins::memo`]).
    memos: Mutex<Memos>,
}

#[derive(Default)]
struct Memos {
    existing_anti_affinity: filtering::ExistingAntiAffinityMemo,
    incoming: filtering::IncomingMemo,
    score: scoring::ScoreMemo,
}

impl Default for InterPodAffinity {
    fn default() -> Self {
        InterPodAffinity {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
            memos: Mutex::default(),
        }
    }
}

impl std::fmt::Debug for InterPodAffinity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterPodAffinity")
            .field("hard_pod_affinity_weight", &self.hard_pod_affinity_weight)
            .field(
                "ignore_preferred_terms_of_existing_pods",
                &self.ignore_preferred_terms_of_existing_pods,
            )
            .finish_non_exhaustive()
    }
}

impl InterPodAffinity {
    /// Builds the plugin from its args, defaulted and validated as upstream
    /// (`ValidateInterPodAffinityArgs`: the weight must be in [0, 100]).
    pub fn new(args: Option<&serde_json::Value>) -> Result<InterPodAffinity, PluginArgsError> {
        let args: InterPodAffinityArgs = parse_args(args)?;
        let w = args.hard_pod_affinity_weight.unwrap_or(1);
        if !(0..=MAX_HARD_POD_AFFINITY_WEIGHT).contains(&w) {
            return Err(PluginArgsError::new(
                "hardPodAffinityWeight",
                format!(
                    "Invalid value: {w}: not in valid range [0, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
                ),
            ));
        }
        Ok(InterPodAffinity {
            hard_pod_affinity_weight: w,
            ignore_preferred_terms_of_existing_pods: args
                .ignore_preferred_terms_of_existing_pods
                .unwrap_or(false),
            memos: Mutex::default(),
        })
    }
}

/// Counts per topology pair `(key, value)`, by pair id (see [`crate::framework::topology`]);
/// a pair whose count drops to 0 is removed, so the number of pairs says whether anything
/// matched (upstream `topologyToMatchedTermCount`). Beside the map, a bit per pair id says
/// whether its count is positive, kept with every change: Filter asks only that, for every
/// node it checks, with a bit test instead of a hashed lookup.
#[derive(Clone, Debug, Default)]
pub(crate) struct TopologyCounts {
    counts: FxHashMap<u32, i64>,
    /// Bit `pair % 64` of word `pair / 64`: the pair's count is above 0.
    positive: Vec<u64>,
}

impl TopologyCounts {
    fn add(&mut self, pair: u32, delta: i64) {
        let count = match self.counts.get_mut(&pair) {
            Some(c) => {
                *c += delta;
                let c = *c;
                if c == 0 {
                    self.counts.remove(&pair);
                }
                c
            }
            None if delta != 0 => {
                self.counts.insert(pair, delta);
                delta
            }
            None => return,
        };
        self.set_positive(pair, count > 0);
    }

    fn set_positive(&mut self, pair: u32, positive: bool) {
        let (word, bit) = ((pair / 64) as usize, 1u64 << (pair % 64));
        if word >= self.positive.len() {
            if !positive {
                return;
            }
            self.positive.resize(word + 1, 0);
        }
        if positive {
            self.positive[word] |= bit;
        } else {
            self.positive[word] &= !bit;
        }
    }

    /// Adds `delta` to the pair of `key` (a key id) and the node's value of that label, if it
    /// has one.
    fn add_for_node(&mut self, node: &NodeInfo, key: Option<u32>, delta: i64) {
        if let Some(pair) = node.label_pair(key) {
            self.add(pair, delta);
        }
    }

    /// The pair's count (0 when it has none).
    #[cfg(test)]
    fn get(&self, pair: u32) -> i64 {
        self.counts.get(&pair).copied().unwrap_or(0)
    }

    /// Whether the pair's count is above 0 (`get(pair) > 0`, without hashing).
    #[inline]
    fn positive(&self, pair: u32) -> bool {
        self.positive
            .get((pair / 64) as usize)
            .is_some_and(|w| w & (1u64 << (pair % 64)) != 0)
    }

    /// Whether any pair of the node's labels has a count above 0.
    #[inline]
    fn any_positive(&self, node: &NodeInfo) -> bool {
        node.label_ids.iter().any(|&(_, pair)| self.positive(pair))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Adds (`sign` 1) or takes away (-1) one node's contribution.
    pub(crate) fn apply(&mut self, c: &PairCounts, sign: i64) {
        for &(pair, n) in c {
            self.add(pair, sign * n);
        }
    }
}

/// Counts per topology pair of one node: `(pair id, count)`.
pub(crate) type PairCounts = Vec<(u32, i64)>;

/// Adds `n` to the pair of `key` (a key id) and the node's value for it, if the node has that
/// label.
pub(crate) fn push_pair(out: &mut PairCounts, node: &NodeInfo, key: Option<u32>, n: i64) {
    let Some(pair) = node.label_pair(key) else {
        return;
    };
    match out.iter_mut().find(|(p, _)| *p == pair) {
        Some(e) => e.1 += n,
        None => out.push((pair, n)),
    }
}

/// The key ids of the terms' topology keys.
pub(crate) fn term_key_ids<'a>(
    terms: impl IntoIterator<Item = &'a AffinityTerm>,
) -> Vec<Option<u32>> {
    topology::key_ids(terms.into_iter().map(|t| t.topology_key.as_str()))
}

/// The incoming pod's terms with each term's namespace selector replaced by the namespaces it
/// selects now (upstream `mergeAffinityTermNamespacesIfNotEmpty`), so matching existing pods
/// needs no namespace lookup. An empty selector (all namespaces) is kept as it is.
fn merge_namespaces(terms: &Arc<PodAffinityTerms>, snapshot: &Snapshot) -> Arc<PodAffinityTerms> {
    let needs = |t: &AffinityTerm| {
        !t.namespace_selector.is_empty() && !t.namespace_selector.matches_nothing()
    };
    let any = terms.required_affinity.iter().any(needs)
        || terms.required_anti_affinity.iter().any(needs)
        || terms.preferred_affinity.iter().any(|w| needs(&w.term))
        || terms.preferred_anti_affinity.iter().any(|w| needs(&w.term));
    if !any {
        return terms.clone();
    }
    let merge = |t: &mut AffinityTerm| {
        if !needs(t) {
            return;
        }
        for (name, labels) in snapshot.namespace_labels.iter() {
            if t.namespace_selector.matches(labels) {
                t.namespaces.insert(name.clone());
            }
        }
        t.namespace_selector = kubeplane_core::labels::Selector::nothing();
    };
    let mut out = PodAffinityTerms::clone(terms);
    out.required_affinity.iter_mut().for_each(merge);
    out.required_anti_affinity.iter_mut().for_each(merge);
    out.preferred_affinity
        .iter_mut()
        .for_each(|w| merge(&mut w.term));
    out.preferred_anti_affinity
        .iter_mut()
        .for_each(|w| merge(&mut w.term));
    Arc::new(out)
}

fn namespace_labels(snapshot: &Snapshot, namespace: &str) -> Option<BTreeMap<String, String>> {
    snapshot.namespace_labels.get(namespace).cloned()
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        // With queueing hints (GA in v1.34): Pod Add|UpdatePodLabel|Delete and
        // Node Add|UpdateNodeLabel.
        Some(vec![
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(
                    EventResource::Pod,
                    ActionType::ADD | ActionType::UPDATE_POD_LABEL | ActionType::DELETE,
                    "PodAdd|UpdatePodLabel|Delete",
                ),
                is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
                    "NodeAdd|UpdateNodeLabel",
                ),
                is_schedulable_after_node_change,
            ),
        ])
    }
}

fn terms_of(pod: &StoredPod) -> PodAffinityTerms {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    PodAffinityTerms::parse(ns, pod.spec.as_ref().and_then(|s| s.affinity.as_ref()))
        .unwrap_or_default()
}

fn matches_all(terms: &[AffinityTerm], pod: &StoredPod) -> bool {
    static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
    matches_all_terms(
        terms,
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        pod.labels().unwrap_or(&NO_LABELS),
    )
}

fn is_assigned(p: &StoredPod) -> bool {
    p.node_name().is_some_and(|n| !n.is_empty())
}

/// Queue when an assigned pod starts matching all the pod's affinity terms (added, or updated
/// to match), stops matching its anti-affinity terms (updated), or was deleted while matching
/// them. Changes of unscheduled pods never help.
fn is_schedulable_after_pod_change(
    pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (old, new) = pod_event(old, new)?;
    if new.is_some_and(|p| !is_assigned(p)) || old.is_some_and(|p| !is_assigned(p)) {
        return Ok(QueueingHint::QueueSkip);
    }
    if let Some(e) = terms_of(pod).parse_error {
        return Err(e);
    }
    let terms = terms_of(pod);
    let (affinity, anti) = (&terms.required_affinity, &terms.required_anti_affinity);
    let hint = match (old, new) {
        (Some(old), Some(new)) => {
            // Now matching the affinity, or no longer matching the anti-affinity.
            let helps = (!matches_all(affinity, old) && matches_all(affinity, new))
                || (matches_all(anti, old) && !matches_all(anti, new));
            if helps {
                QueueingHint::Queue
            } else {
                QueueingHint::QueueSkip
            }
        }
        (None, Some(new)) => {
            if matches_all(affinity, new) {
                QueueingHint::Queue
            } else {
                QueueingHint::QueueSkip
            }
        }
        (Some(old), None) => {
            if matches_all(anti, old) {
                QueueingHint::Queue
            } else {
                QueueingHint::QueueSkip
            }
        }
        (None, None) => QueueingHint::Queue,
    };
    Ok(hint)
}

/// Queue when the added or updated node has the topology key of one of the pod's required
/// (anti-)affinity terms.
fn is_schedulable_after_node_change(
    pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (_, node) = node_event(old, new)?;
    let terms = terms_of(pod);
    if let Some(e) = terms.parse_error {
        return Err(e);
    }
    let labels = node.metadata.labels.as_ref();
    let has_key = |t: &AffinityTerm| labels.is_some_and(|l| l.contains_key(&t.topology_key));
    if terms.required_affinity.iter().any(has_key)
        || terms.required_anti_affinity.iter().any(has_key)
    {
        return Ok(QueueingHint::Queue);
    }
    Ok(QueueingHint::QueueSkip)
}

//! InterPodAffinity PreFilter (with the AddPod/RemovePod extensions) and Filter (upstream
//! `interpodaffinity/filtering.go`).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cache::Snapshot;
use crate::framework::affinity::matches_all_terms;
use crate::framework::{
    mark_all_failed, mark_failures, CycleState, FilterPlugin, NodeInfo, PodAffinityTerms, PodInfo,
    PreFilterPlugin, PreFilterResult, Status,
};

use super::{
    merge_namespaces, namespace_labels, push_pair, term_key_ids, InterPodAffinity, PairCounts,
    TopologyCounts, NAME, REASON_AFFINITY, REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY,
};
use crate::framework::topology;
use crate::framework::AffinityTerm;
use crate::plugins::memo::NodeMemo;

pub(crate) static PRE_FILTER_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreFilterInterPodAffinity");

/// What PreFilter computes for Filter. The counts are shared with the plugin's memo and
/// copied only when AddPod/RemovePod change them.
#[derive(Clone, Debug)]
pub(crate) struct PreFilterState {
    /// Pairs where existing pods have a required anti-affinity term matching the incoming pod.
    pub existing_anti_affinity_counts: Arc<TopologyCounts>,
    /// Pairs holding pods that match all of the incoming pod's required affinity terms.
    pub affinity_counts: Arc<TopologyCounts>,
    /// Pairs holding pods that match one of the incoming pod's required anti-affinity terms.
    pub anti_affinity_counts: Arc<TopologyCounts>,
    /// The incoming pod's terms, namespace selectors merged into namespaces.
    pub terms: Arc<PodAffinityTerms>,
    /// The labels of the incoming pod's namespace.
    pub namespace_labels: Option<BTreeMap<String, String>>,
    /// The key ids of the topology keys of `terms`' required affinity and anti-affinity terms.
    pub affinity_keys: Vec<Option<u32>>,
    pub anti_affinity_keys: Vec<Option<u32>>,
}

impl PreFilterState {
    /// Accounts `other` (added with `multiplier` 1, removed with -1) on `node` (upstream
    /// `updateWithPod`).
    fn update_with_pod(
        &mut self,
        pod: &PodInfo,
        other: &PodInfo,
        node: &NodeInfo,
        multiplier: i64,
    ) {
        if node.node.is_none() {
            return;
        }
        if let Some(t) = &other.affinity_terms {
            for term in &t.required_anti_affinity {
                if term.matches(
                    pod.namespace(),
                    pod.labels(),
                    self.namespace_labels.as_ref(),
                ) {
                    Arc::make_mut(&mut self.existing_anti_affinity_counts).add_for_node(
                        node,
                        topology::key_id(&term.topology_key),
                        multiplier,
                    );
                }
            }
        }
        if matches_all_terms(
            &self.terms.required_affinity,
            other.namespace(),
            other.labels(),
        ) {
            for &key in &self.affinity_keys {
                Arc::make_mut(&mut self.affinity_counts).add_for_node(node, key, multiplier);
            }
        }
        for (term, &key) in self
            .terms
            .required_anti_affinity
            .iter()
            .zip(&self.anti_affinity_keys)
        {
            if term.matches(other.namespace(), other.labels(), None) {
                Arc::make_mut(&mut self.anti_affinity_counts).add_for_node(node, key, multiplier);
            }
        }
    }
}

/// What the existing-anti-affinity counts depend on besides the nodes: the incoming pod's
/// namespace, labels and namespace labels.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ExistingKey {
    namespace: String,
    labels: BTreeMap<String, String>,
    namespace_labels: Option<BTreeMap<String, String>>,
}

pub(crate) type ExistingAntiAffinityMemo = NodeMemo<ExistingKey, PairCounts, Arc<TopologyCounts>>;

/// What the incoming pod's counts depend on besides the nodes: its required terms.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IncomingKey {
    affinity: Vec<AffinityTerm>,
    anti_affinity: Vec<AffinityTerm>,
}

pub(crate) type IncomingMemo =
    NodeMemo<IncomingKey, (PairCounts, PairCounts), (Arc<TopologyCounts>, Arc<TopologyCounts>)>;

/// One node's existing pods with a required anti-affinity term matching the incoming pod.
fn existing_anti_affinity_of_node(
    pod: &PodInfo,
    ns_labels: Option<&BTreeMap<String, String>>,
    node: &NodeInfo,
) -> PairCounts {
    let mut out = Vec::new();
    if node.n_pods_with_required_anti_affinity == 0 || node.label_ids.is_empty() {
        return out;
    }
    for existing in &node.pods {
        if !existing.has_required_anti_affinity {
            continue;
        }
        let Some(t) = &existing.affinity_terms else {
            continue;
        };
        for term in &t.required_anti_affinity {
            if term.matches(pod.namespace(), pod.labels(), ns_labels) {
                push_pair(&mut out, node, topology::key_id(&term.topology_key), 1);
            }
        }
    }
    out
}

/// One node's pods matching all the incoming pod's required affinity terms (counted per
/// term's pair), and each of its anti-affinity terms.
fn incoming_of_node(
    terms: &PodAffinityTerms,
    (affinity_keys, anti_keys): (&[Option<u32>], &[Option<u32>]),
    node: &NodeInfo,
) -> (PairCounts, PairCounts) {
    let mut affinity = Vec::new();
    let mut anti = Vec::new();
    if node.label_ids.is_empty() {
        return (affinity, anti);
    }
    let mut n_affinity = 0;
    let mut n_anti = vec![0i64; terms.required_anti_affinity.len()];
    for existing in &node.pods {
        if matches_all_terms(
            &terms.required_affinity,
            existing.namespace(),
            existing.labels(),
        ) {
            n_affinity += 1;
        }
        for (i, term) in terms.required_anti_affinity.iter().enumerate() {
            if term.matches(existing.namespace(), existing.labels(), None) {
                n_anti[i] += 1;
            }
        }
    }
    if n_affinity > 0 {
        for &key in affinity_keys {
            push_pair(&mut affinity, node, key, n_affinity);
        }
    }
    for (i, &key) in anti_keys.iter().enumerate() {
        if n_anti[i] > 0 {
            push_pair(&mut anti, node, key, n_anti[i]);
        }
    }
    (affinity, anti)
}

impl InterPodAffinity {
    /// Existing pods' required anti-affinity terms that match the incoming pod, counted per
    /// pair over the nodes that host pods with required anti-affinity.
    fn existing_anti_affinity_counts(
        &self,
        pod: &PodInfo,
        ns_labels: Option<&BTreeMap<String, String>>,
        snapshot: &Snapshot,
    ) -> Arc<TopologyCounts> {
        let key = ExistingKey {
            namespace: pod.namespace().to_string(),
            labels: pod.labels().clone(),
            namespace_labels: ns_labels.cloned(),
        };
        let mut memos = self.memos.lock().expect("memo lock");
        let memo = &mut memos.existing_anti_affinity;
        memo.update(
            key,
            snapshot,
            |n| existing_anti_affinity_of_node(pod, ns_labels, n),
            |agg, c, sign| Arc::make_mut(agg).apply(c, sign),
        );
        memo.agg.clone()
    }

    /// Existing pods matching the incoming pod's required affinity (all terms) and
    /// anti-affinity (each term), counted per pair over all nodes.
    fn incoming_counts(
        &self,
        terms: &PodAffinityTerms,
        keys: (&[Option<u32>], &[Option<u32>]),
        snapshot: &Snapshot,
    ) -> (Arc<TopologyCounts>, Arc<TopologyCounts>) {
        if !terms.has_required() {
            return Default::default();
        }
        let key = IncomingKey {
            affinity: terms.required_affinity.clone(),
            anti_affinity: terms.required_anti_affinity.clone(),
        };
        let mut memos = self.memos.lock().expect("memo lock");
        let memo = &mut memos.incoming;
        memo.update(
            key,
            snapshot,
            |n| incoming_of_node(terms, keys, n),
            |agg, (a, b), sign| {
                Arc::make_mut(&mut agg.0).apply(a, sign);
                Arc::make_mut(&mut agg.1).apply(b, sign);
            },
        );
        memo.agg.clone()
    }
}

impl PreFilterPlugin for InterPodAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let own = pod.affinity_terms.clone().unwrap_or_default();
        if let Some(e) = &own.parse_error {
            return (None, Status::unresolvable(format!("parsing pod: {e}")));
        }
        // Nothing to check: no required terms, and no pod anywhere with required anti-affinity.
        if !own.has_required() && snapshot.n_nodes_with_required_anti_affinity_pods == 0 {
            return (None, Status::skip());
        }
        let terms = merge_namespaces(&own, snapshot);
        let ns_labels = namespace_labels(snapshot, pod.namespace());
        let existing = self.existing_anti_affinity_counts(pod, ns_labels.as_ref(), snapshot);
        if existing.is_empty() && !terms.has_required() {
            return (None, Status::skip());
        }
        let affinity_keys = term_key_ids(&terms.required_affinity);
        let anti_affinity_keys = term_key_ids(&terms.required_anti_affinity);
        let (affinity, anti) =
            self.incoming_counts(&terms, (&affinity_keys, &anti_affinity_keys), snapshot);
        state.write(
            &PRE_FILTER_KEY,
            PreFilterState {
                existing_anti_affinity_counts: existing,
                affinity_counts: affinity,
                anti_affinity_counts: anti,
                terms,
                namespace_labels: ns_labels,
                affinity_keys,
                anti_affinity_keys,
            },
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
    delta: i64,
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
        "error reading {PRE_FILTER_KEY:?} from cycleState: not found ({NAME} PreFilter did not run)"
    ))
}

/// The node must have every required affinity term's key, and each pair must hold a matching
/// pod, unless no pod matches anywhere and the pod matches its own terms (the first pod of a
/// group with affinity to itself).
fn satisfies_pod_affinity(s: &PreFilterState, pod: &PodInfo, node: &NodeInfo) -> bool {
    let mut pods_exist = true;
    for &key in &s.affinity_keys {
        let Some(pair) = node.label_pair(key) else {
            return false;
        };
        if !s.affinity_counts.positive(pair) {
            pods_exist = false;
        }
    }
    if pods_exist {
        return true;
    }
    s.affinity_counts.is_empty()
        && matches_all_terms(&s.terms.required_affinity, pod.namespace(), pod.labels())
}

fn satisfies_pod_anti_affinity(s: &PreFilterState, node: &NodeInfo) -> bool {
    if s.anti_affinity_counts.is_empty() {
        return true;
    }
    !s.anti_affinity_keys.iter().any(|&key| {
        node.label_pair(key)
            .is_some_and(|pair| s.anti_affinity_counts.positive(pair))
    })
}

/// No pair of the node's labels may hold an existing pod whose anti-affinity matches.
fn satisfies_existing_pods_anti_affinity(s: &PreFilterState, node: &NodeInfo) -> bool {
    if s.existing_anti_affinity_counts.is_empty() {
        return true;
    }
    !s.existing_anti_affinity_counts.any_positive(node)
}

/// Which of Filter's checks a node fails.
#[derive(Clone, Copy)]
enum Failure {
    Affinity,
    AntiAffinity,
    ExistingAntiAffinity,
}

impl Failure {
    /// The one failure whose bit (`1 << f as u8`) is set in `seen`, if only one is.
    fn only(seen: u8) -> Option<Failure> {
        [
            Failure::Affinity,
            Failure::AntiAffinity,
            Failure::ExistingAntiAffinity,
        ]
        .into_iter()
        .find(|&f| seen == 1 << f as u8)
    }

    fn status(self) -> Status {
        match self {
            Failure::Affinity => Status::unresolvable(REASON_AFFINITY),
            Failure::AntiAffinity => Status::unschedulable(REASON_ANTI_AFFINITY),
            Failure::ExistingAntiAffinity => Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY),
        }
    }
}

/// Filter's verdict on one node: `None` when it passes.
#[inline(always)]
fn node_failure(s: &PreFilterState, pod: &PodInfo, node: &NodeInfo) -> Option<Failure> {
    if !satisfies_pod_affinity(s, pod, node) {
        return Some(Failure::Affinity);
    }
    if !satisfies_pod_anti_affinity(s, node) {
        return Some(Failure::AntiAffinity);
    }
    if !satisfies_existing_pods_anti_affinity(s, node) {
        return Some(Failure::ExistingAntiAffinity);
    }
    None
}

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(&PRE_FILTER_KEY) else {
            return missing_state();
        };
        node_failure(s, pod, node).map_or_else(Status::success, Failure::status)
    }

    /// The same per node, the cycle state read once.
    fn filter_failures(
        &self,
        state: &CycleState,
        pod: &PodInfo,
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
            node_failure(s, pod, &nodes[place]).map(|f| f as u8)
        });
        Failure::only(seen).map(Failure::status)
    }
}

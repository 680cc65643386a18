//! InterPodAffinity PreFilter (with the AddPod/RemovePod extensions) and Filter (upstream
//! `interpodaffinity/filtering.go`).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cache::Snapshot;
use crate::framework::affinity::matches_all_terms;
use crate::framework::{
    CycleState, FilterPlugin, NodeInfo, PodAffinityTerms, PodInfo, PreFilterPlugin,
    PreFilterResult, Status,
};

use super::{
    merge_namespaces, namespace_labels, InterPodAffinity, TopologyCounts, NAME, REASON_AFFINITY,
    REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY,
};

pub(crate) const PRE_FILTER_KEY: &str = "PreFilterInterPodAffinity";

/// What PreFilter computes for Filter.
#[derive(Clone, Debug)]
pub(crate) struct PreFilterState {
    /// Pairs where existing pods have a required anti-affinity term matching the incoming pod.
    pub existing_anti_affinity_counts: TopologyCounts,
    /// Pairs holding pods that match all of the incoming pod's required affinity terms.
    pub affinity_counts: TopologyCounts,
    /// Pairs holding pods that match one of the incoming pod's required anti-affinity terms.
    pub anti_affinity_counts: TopologyCounts,
    /// The incoming pod's terms, namespace selectors merged into namespaces.
    pub terms: Arc<PodAffinityTerms>,
    /// The labels of the incoming pod's namespace.
    pub namespace_labels: Option<BTreeMap<String, String>>,
}

impl PreFilterState {
    /// Accounts `other` (added with `multiplier` 1, removed with -1) on `node` (upstream
    /// `updateWithPod`).
    fn update_with_pod(&mut self, pod: &PodInfo, other: &PodInfo, node: &NodeInfo, multiplier: i64) {
        let Some(n) = node.node.as_ref() else { return };
        static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
        let labels = n.metadata.labels.as_ref().unwrap_or(&NO_LABELS);
        if let Some(t) = &other.affinity_terms {
            for term in &t.required_anti_affinity {
                if term.matches(&pod.namespace, pod.labels(), self.namespace_labels.as_ref()) {
                    self.existing_anti_affinity_counts
                        .add_for_node(labels, &term.topology_key, multiplier);
                }
            }
        }
        if matches_all_terms(&self.terms.required_affinity, &other.namespace, other.labels()) {
            for term in &self.terms.required_affinity {
                self.affinity_counts
                    .add_for_node(labels, &term.topology_key, multiplier);
            }
        }
        for term in &self.terms.required_anti_affinity {
            if term.matches(&other.namespace, other.labels(), None) {
                self.anti_affinity_counts
                    .add_for_node(labels, &term.topology_key, multiplier);
            }
        }
    }
}

/// Existing pods' required anti-affinity terms that match the incoming pod, counted per pair
/// over the nodes that host pods with required anti-affinity.
fn existing_anti_affinity_counts(
    pod: &PodInfo,
    ns_labels: Option<&BTreeMap<String, String>>,
    snapshot: &Snapshot,
) -> TopologyCounts {
    let mut counts = TopologyCounts::default();
    for node in &snapshot.node_infos {
        if node.n_pods_with_required_anti_affinity == 0 {
            continue;
        }
        let Some(n) = node.node.as_ref() else { continue };
        let Some(labels) = n.metadata.labels.as_ref() else {
            continue;
        };
        for existing in &node.pods {
            if !existing.has_required_anti_affinity {
                continue;
            }
            let Some(t) = &existing.affinity_terms else {
                continue;
            };
            for term in &t.required_anti_affinity {
                if term.matches(&pod.namespace, pod.labels(), ns_labels) {
                    counts.add_for_node(labels, &term.topology_key, 1);
                }
            }
        }
    }
    counts
}

/// Existing pods matching the incoming pod's required affinity (all terms) and anti-affinity
/// (each term), counted per pair over all nodes.
fn incoming_counts(terms: &PodAffinityTerms, snapshot: &Snapshot) -> (TopologyCounts, TopologyCounts) {
    let mut affinity = TopologyCounts::default();
    let mut anti = TopologyCounts::default();
    if !terms.has_required() {
        return (affinity, anti);
    }
    for node in &snapshot.node_infos {
        let Some(n) = node.node.as_ref() else { continue };
        let Some(labels) = n.metadata.labels.as_ref() else {
            continue;
        };
        for existing in &node.pods {
            if matches_all_terms(&terms.required_affinity, &existing.namespace, existing.labels()) {
                for term in &terms.required_affinity {
                    affinity.add_for_node(labels, &term.topology_key, 1);
                }
            }
            for term in &terms.required_anti_affinity {
                if term.matches(&existing.namespace, existing.labels(), None) {
                    anti.add_for_node(labels, &term.topology_key, 1);
                }
            }
        }
    }
    (affinity, anti)
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
        let terms = merge_namespaces(&own, snapshot);
        let ns_labels = namespace_labels(snapshot, &pod.namespace);
        let existing = existing_anti_affinity_counts(pod, ns_labels.as_ref(), snapshot);
        if existing.is_empty() && !terms.has_required() {
            return (None, Status::skip());
        }
        let (affinity, anti) = incoming_counts(&terms, snapshot);
        state.write(
            PRE_FILTER_KEY,
            PreFilterState {
                existing_anti_affinity_counts: existing,
                affinity_counts: affinity,
                anti_affinity_counts: anti,
                terms,
                namespace_labels: ns_labels,
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
        "error reading {PRE_FILTER_KEY:?} from cycleState: not found ({NAME} PreFilter did not run)"
    ))
}

/// The node must have every required affinity term's key, and each pair must hold a matching
/// pod, unless no pod matches anywhere and the pod matches its own terms (the first pod of a
/// group with affinity to itself).
fn satisfies_pod_affinity(s: &PreFilterState, pod: &PodInfo, labels: &BTreeMap<String, String>) -> bool {
    let mut pods_exist = true;
    for term in &s.terms.required_affinity {
        let Some(v) = labels.get(&term.topology_key) else {
            return false;
        };
        if s.affinity_counts.get(&term.topology_key, v) <= 0 {
            pods_exist = false;
        }
    }
    if pods_exist {
        return true;
    }
    s.affinity_counts.is_empty()
        && matches_all_terms(&s.terms.required_affinity, &pod.namespace, pod.labels())
}

fn satisfies_pod_anti_affinity(s: &PreFilterState, labels: &BTreeMap<String, String>) -> bool {
    if s.anti_affinity_counts.is_empty() {
        return true;
    }
    !s.terms.required_anti_affinity.iter().any(|term| {
        labels
            .get(&term.topology_key)
            .is_some_and(|v| s.anti_affinity_counts.get(&term.topology_key, v) > 0)
    })
}

fn satisfies_existing_pods_anti_affinity(s: &PreFilterState, labels: &BTreeMap<String, String>) -> bool {
    if s.existing_anti_affinity_counts.is_empty() {
        return true;
    }
    !labels
        .iter()
        .any(|(k, v)| s.existing_anti_affinity_counts.get(k, v) > 0)
}

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_KEY) else {
            return missing_state();
        };
        let labels = node.labels();
        if !satisfies_pod_affinity(s, pod, labels) {
            return Status::unresolvable(REASON_AFFINITY);
        }
        if !satisfies_pod_anti_affinity(s, labels) {
            return Status::unschedulable(REASON_ANTI_AFFINITY);
        }
        if !satisfies_existing_pods_anti_affinity(s, labels) {
            return Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY);
        }
        Status::success()
    }
}

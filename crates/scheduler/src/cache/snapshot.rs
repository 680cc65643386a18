//! A consistent view of the cache for one scheduling cycle (upstream `Snapshot`).

use std::collections::BTreeMap;
use std::sync::Arc;

use kubeplane_core::labels::Selector;

use crate::framework::NodeInfo;
use crate::plugins::helper::FxHashMap;

/// Namespace name → its labels (InterPodAffinity's namespaceSelector).
pub type NamespaceLabels = BTreeMap<String, BTreeMap<String, String>>;

/// `namespace/name` → the ReplicaSet's selector, `None` when it does not parse
/// (PodTopologySpread's system default constraints).
pub type ReplicaSetSelectors = FxHashMap<String, Option<Selector>>;

/// The nodes in upstream's nodeTree order (zones round-robin), shared copy-on-write with the
/// cache: updating the snapshot replaces only the nodes that changed.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub node_infos: Vec<Arc<NodeInfo>>,
    /// Node name → index in `node_infos`.
    pub index: FxHashMap<String, usize>,
    /// Normalized image name → number of nodes that have it.
    pub image_num_nodes: FxHashMap<String, usize>,
    /// Bumped whenever `image_num_nodes` changes.
    pub image_generation: u64,
    pub generation: u64,
    /// The labels of every namespace the scheduler has seen.
    pub namespace_labels: Arc<NamespaceLabels>,
    /// The selector of every ReplicaSet.
    pub replica_sets: Arc<ReplicaSetSelectors>,
    /// How many nodes host a pod with pod (anti-)affinity (upstream
    /// `HavePodsWithAffinityList`'s length).
    pub n_nodes_with_affinity_pods: usize,
    /// How many nodes host a pod with required pod anti-affinity (upstream
    /// `HavePodsWithRequiredAntiAffinityList`'s length).
    pub n_nodes_with_required_anti_affinity_pods: usize,
}

impl Snapshot {
    /// Recounts the nodes hosting pods with affinity.
    pub fn count_affinity_nodes(&mut self) {
        self.n_nodes_with_affinity_pods = self
            .node_infos
            .iter()
            .filter(|n| n.n_pods_with_affinity > 0)
            .count();
        self.n_nodes_with_required_anti_affinity_pods = self
            .node_infos
            .iter()
            .filter(|n| n.n_pods_with_required_anti_affinity > 0)
            .count();
    }

    /// Replaces the node at index `i`, keeping the affinity counts up to date.
    pub fn replace_node(&mut self, i: usize, info: Arc<NodeInfo>) {
        let old = &self.node_infos[i];
        self.n_nodes_with_affinity_pods -= usize::from(old.n_pods_with_affinity > 0);
        self.n_nodes_with_required_anti_affinity_pods -=
            usize::from(old.n_pods_with_required_anti_affinity > 0);
        self.n_nodes_with_affinity_pods += usize::from(info.n_pods_with_affinity > 0);
        self.n_nodes_with_required_anti_affinity_pods +=
            usize::from(info.n_pods_with_required_anti_affinity > 0);
        self.node_infos[i] = info;
    }

    pub fn num_nodes(&self) -> usize {
        self.node_infos.len()
    }

    pub fn get(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.index.get(name).map(|&i| &self.node_infos[i])
    }

    /// Builds a snapshot from nodes in order (tests and benchmarks).
    pub fn from_nodes(nodes: Vec<NodeInfo>) -> Snapshot {
        let mut image_num_nodes: FxHashMap<String, usize> = FxHashMap::default();
        for n in &nodes {
            for img in &n.images {
                *image_num_nodes.entry(img.name.clone()).or_default() += 1;
            }
        }
        let index = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        let mut s = Snapshot {
            node_infos: nodes.into_iter().map(Arc::new).collect(),
            index,
            image_num_nodes,
            image_generation: 0,
            generation: 0,
            namespace_labels: Arc::default(),
            replica_sets: Arc::default(),
            n_nodes_with_affinity_pods: 0,
            n_nodes_with_required_anti_affinity_pods: 0,
        };
        s.count_affinity_nodes();
        s
    }
}

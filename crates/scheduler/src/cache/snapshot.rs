//! A consistent view of the cache for one scheduling cycle (upstream `Snapshot`).

use std::collections::HashMap;
use std::sync::Arc;

use crate::framework::NodeInfo;

/// The nodes in upstream's nodeTree order (zones round-robin), shared copy-on-write with the
/// cache: updating the snapshot replaces only the nodes that changed.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub node_infos: Vec<Arc<NodeInfo>>,
    /// Node name → index in `node_infos`.
    pub index: HashMap<String, usize>,
    /// Normalized image name → number of nodes that have it.
    pub image_num_nodes: HashMap<String, usize>,
    pub generation: u64,
}

impl Snapshot {
    pub fn num_nodes(&self) -> usize {
        self.node_infos.len()
    }

    pub fn get(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.index.get(name).map(|&i| &self.node_infos[i])
    }

    /// Builds a snapshot from nodes in order (tests and benchmarks).
    pub fn from_nodes(nodes: Vec<NodeInfo>) -> Snapshot {
        let mut image_num_nodes: HashMap<String, usize> = HashMap::new();
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
        Snapshot {
            node_infos: nodes.into_iter().map(Arc::new).collect(),
            index,
            image_num_nodes,
            generation: 0,
        }
    }
}

//! A consistent view of the cache for one scheduling cycle (upstream `Snapshot`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kubeplane_core::labels::Selector;

use crate::framework::NodeInfo;
use crate::plugins::helper::FxHashMap;

/// Namespace name → its labels (InterPodAffinity's namespaceSelector).
pub type NamespaceLabels = BTreeMap<String, BTreeMap<String, String>>;

/// `namespace/name` → the ReplicaSet's selector, `None` when it does not parse
/// (PodTopologySpread's system default constraints).
pub type ReplicaSetSelectors = FxHashMap<String, Option<Selector>>;

/// Where a [`NodeMemo`](crate::plugins::memo::NodeMemo) last read a snapshot's node list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotCursor {
    epoch: u64,
    pos: u64,
}

/// Numbers of node lists, unique in the process, so that a cursor never matches another list.
static EPOCHS: AtomicU64 = AtomicU64::new(1);

/// Which places of a snapshot's node list were replaced since the list was built, so that
/// per-node memos revisit only those places instead of comparing every node. Only lists built
/// by the cache are tracked (epoch 0 is untracked); a copy of a snapshot is untracked, since
/// its later changes are its own.
#[derive(Debug, Default)]
struct ChangeLog {
    epoch: u64,
    /// How many places were dropped from the front of `places` (to bound its length).
    start: u64,
    places: Vec<usize>,
}

impl Clone for ChangeLog {
    fn clone(&self) -> Self {
        ChangeLog::default()
    }
}

impl ChangeLog {
    /// Past this many entries the log starts over; cursors older than that see `None`.
    const LIMIT: usize = 1 << 16;

    fn record(&mut self, place: usize) {
        if self.epoch == 0 {
            return;
        }
        if self.places.len() >= Self::LIMIT {
            self.start += self.places.len() as u64;
            self.places.clear();
        }
        self.places.push(place);
    }
}

/// The nodes in upstream's nodeTree order (zones round-robin), shared copy-on-write with the
/// cache: updating the snapshot replaces only the nodes that changed.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Replace entries with [`Snapshot::replace_node`] and the whole list with
    /// [`Snapshot::set_nodes`], which keep the change log; writing it directly leaves per-node
    /// memos with outdated results unless the snapshot is untracked (built by hand).
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
    changes: ChangeLog,
    /// The empty NodeInfo in the places of vacated nodes (see [`Snapshot::vacate`]).
    vacant: Arc<NodeInfo>,
    /// How many places hold `vacant`.
    n_vacant: usize,
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
        self.put(i, info);
        self.changes.record(i);
    }

    /// [`Self::replace_node`] without the change log.
    fn put(&mut self, i: usize, info: Arc<NodeInfo>) {
        let old = &self.node_infos[i];
        self.n_vacant -= usize::from(Arc::ptr_eq(old, &self.vacant));
        self.n_vacant += usize::from(Arc::ptr_eq(&info, &self.vacant));
        self.n_nodes_with_affinity_pods -= usize::from(old.n_pods_with_affinity > 0);
        self.n_nodes_with_required_anti_affinity_pods -=
            usize::from(old.n_pods_with_required_anti_affinity > 0);
        self.n_nodes_with_affinity_pods += usize::from(info.n_pods_with_affinity > 0);
        self.n_nodes_with_required_anti_affinity_pods +=
            usize::from(info.n_pods_with_required_anti_affinity > 0);
        self.node_infos[i] = info;
    }

    /// Lets go of the node at place `i` until the cache replaces it: between two cycles
    /// nothing reads the snapshot, and a NodeInfo the snapshot still shares when the cache
    /// changes the node is copied by the cache and kept here, with the superseded versions
    /// of its pods, until the next cycle. The caller sees that the cache replaces the place
    /// before the next cycle reads it ([`super::Cache::release_from_snapshot`]). Not logged:
    /// the replacement is. Returns whether the place held a node.
    pub(crate) fn vacate(&mut self, i: usize) -> bool {
        if i >= self.node_infos.len() || Arc::ptr_eq(&self.node_infos[i], &self.vacant) {
            return false;
        }
        self.put(i, self.vacant.clone());
        true
    }

    /// How many places were vacated and not replaced since.
    pub(crate) fn vacancies(&self) -> usize {
        self.n_vacant
    }

    /// Replaces the whole node list (a node was added or removed): a new tracked list.
    pub fn set_nodes(&mut self, nodes: Vec<Arc<NodeInfo>>) {
        self.node_infos = nodes;
        self.n_vacant = 0;
        self.changes = ChangeLog {
            epoch: EPOCHS.fetch_add(1, Ordering::Relaxed),
            ..ChangeLog::default()
        };
    }

    /// The current position in the change log (`None` for an untracked snapshot).
    pub fn cursor(&self) -> Option<SnapshotCursor> {
        (self.changes.epoch != 0).then(|| SnapshotCursor {
            epoch: self.changes.epoch,
            pos: self.changes.start + self.changes.places.len() as u64,
        })
    }

    /// The places replaced since `cursor` (possibly repeated), or `None` when that is not
    /// known: another or a rebuilt list, an untracked snapshot, or a log that started over.
    pub fn changed_since(&self, cursor: Option<SnapshotCursor>) -> Option<&[usize]> {
        let c = cursor?;
        let log = &self.changes;
        if log.epoch == 0 || c.epoch != log.epoch || c.pos < log.start {
            return None;
        }
        log.places.get((c.pos - log.start) as usize..)
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
            changes: ChangeLog::default(),
            vacant: Arc::default(),
            n_vacant: 0,
        };
        s.count_affinity_nodes();
        s
    }
}

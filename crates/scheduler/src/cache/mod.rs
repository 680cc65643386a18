//! The scheduler cache (upstream `backend/cache`): nodes with their bound and assumed pods,
//! the zone-interleaved node order, and the incremental snapshot.

pub mod snapshot;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kubeplane_api::StoredNode;
use kubeplane_core::labels::Selector;

use crate::framework::{NodeInfo, PodInfo};
use crate::plugins::helper::FxHashMap;
use rustc_hash::FxHashSet;
pub use snapshot::{NamespaceLabels, ReplicaSetSelectors, Snapshot, SnapshotCursor};

const ZONE_LABELS: [&str; 2] = [
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/zone",
];
const REGION_LABELS: [&str; 2] = [
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/region",
];

/// The zone key of a node: region and zone labels (new names first, legacy fallback).
pub fn zone_key(node: &Node) -> String {
    let labels = node.metadata.labels.as_ref();
    let get = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| labels.and_then(|l| l.get(*k)))
            .cloned()
            .unwrap_or_default()
    };
    let (region, zone) = (get(&REGION_LABELS), get(&ZONE_LABELS));
    if region.is_empty() && zone.is_empty() {
        String::new()
    } else {
        format!("{region}:\x00:{zone}")
    }
}

/// How the cache knows a pod (upstream `podState`), found in the cache's set by the pod's
/// UID (the set holds no key of its own: one per bound pod, for as long as it runs).
#[derive(Clone, Debug)]
struct PodState {
    pod: Arc<PodInfo>,
    /// The node the pod is accounted to, when it is not the pod's own `spec.nodeName` (an
    /// assumed pod's copy names its host, a bound pod its node: `None`, no name kept).
    node: Option<Box<str>>,
    /// Assumed by the scheduler, not yet confirmed by a watch event.
    assumed: bool,
}

impl PodState {
    fn new(pod: Arc<PodInfo>, node: &str, assumed: bool) -> PodState {
        let node = (pod.node_name().unwrap_or_default() != node).then(|| node.into());
        PodState { pod, node, assumed }
    }

    fn node(&self) -> &str {
        match &self.node {
            Some(node) => node,
            None => self.pod.node_name().unwrap_or_default(),
        }
    }
}

// The cache's pods are a set found by UID (the same hash as a map keyed by the UID string).
crate::framework::types::keyed_by_pod_uid!(PodState, pod);

/// Nodes grouped by zone in insertion order (upstream `nodeTree`).
#[derive(Clone, Debug, Default)]
struct NodeTree {
    zones: Vec<(String, Vec<String>)>,
    num_nodes: usize,
}

impl NodeTree {
    /// Adds a node the tree does not hold (the cache's zone map says which it holds: a
    /// search of the zone's names for it would make adding n nodes quadratic).
    fn add(&mut self, zone: &str, name: &str) {
        if let Some((_, names)) = self.zones.iter_mut().find(|(z, _)| z == zone) {
            debug_assert!(!names.iter().any(|n| n == name), "{name} added twice");
            names.push(name.to_string());
        } else {
            self.zones.push((zone.to_string(), vec![name.to_string()]));
        }
        self.num_nodes += 1;
    }

    fn remove(&mut self, zone: &str, name: &str) {
        if let Some(zi) = self.zones.iter().position(|(z, _)| z == zone) {
            let names = &mut self.zones[zi].1;
            if let Some(i) = names.iter().position(|n| n == name) {
                names.remove(i);
                self.num_nodes -= 1;
                if names.is_empty() {
                    self.zones.remove(zi);
                }
            }
        }
    }

    /// Round-robin over zones: the first node of each zone, then the second, ...
    fn list(&self) -> Vec<&str> {
        let mut out = Vec::with_capacity(self.num_nodes);
        let mut i = 0;
        while out.len() < self.num_nodes {
            for (_, names) in &self.zones {
                if let Some(n) = names.get(i) {
                    out.push(n.as_str());
                }
            }
            i += 1;
        }
        out
    }
}

/// Errors of cache operations (they indicate a bookkeeping bug or a race, never bad input).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    #[error("pod {0} is in the cache, so can't be assumed")]
    AlreadyAssumed(String),
    #[error("pod {0} wasn't assumed so cannot be forgotten")]
    NotAssumed(String),
    #[error("pod {0} was already in added state")]
    AlreadyAdded(String),
}

/// A node the cache holds, and whether its name is in the cache's [`DirtyNames`].
#[derive(Clone, Debug)]
struct CachedNode {
    info: Arc<NodeInfo>,
    dirty: bool,
}

/// The names of the nodes changed since the last snapshot update, in the order they were
/// first changed; a name may be listed twice when its node was forgotten and known again.
/// The Strings past `len` are kept to be written over, so that marking a node allocates
/// nothing once the list has been that long.
#[derive(Default)]
struct DirtyNames {
    names: Vec<String>,
    len: usize,
}

impl DirtyNames {
    fn push(&mut self, name: &str) {
        match self.names.get_mut(self.len) {
            Some(kept) => {
                kept.clear();
                kept.push_str(name);
            }
            None => self.names.push(name.to_string()),
        }
        self.len += 1;
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The names in order (byte order, as a `BTreeSet` of them iterates: the snapshot's
    /// change log follows it), each once; the list is empty afterwards.
    fn take_sorted(&mut self) -> impl Iterator<Item = &String> {
        let names = &mut self.names[..std::mem::take(&mut self.len)];
        names.sort_unstable();
        let names = &*names;
        names
            .iter()
            .enumerate()
            .filter(move |&(j, name)| j == 0 || names[j - 1] != *name)
            .map(|(_, name)| name)
    }
}

/// Marks `name`'s node changed: listed in `dirty` unless its flag says it is already (a node
/// the cache does not hold is listed every time).
fn mark_dirty(nodes: &mut FxHashMap<String, CachedNode>, dirty: &mut DirtyNames, name: &str) {
    if let Some(node) = nodes.get_mut(name) {
        if std::mem::replace(&mut node.dirty, true) {
            return;
        }
    }
    dirty.push(name);
}

#[derive(Default)]
pub struct Cache {
    /// By name (hashed: looked up several times per pod event, never iterated; the node order
    /// is `tree`'s), with whether each is in `dirty`.
    nodes: FxHashMap<String, CachedNode>,
    zones: FxHashMap<String, String>,
    tree: NodeTree,
    pods: FxHashSet<PodState>,
    image_num_nodes: FxHashMap<String, usize>,
    generation: u64,
    /// Nodes changed since the last snapshot update (each flagged in `nodes`, so that a node
    /// changed again is found listed by the lookup `touch` makes anyway).
    dirty: DirtyNames,
    /// The node list itself changed (a node added, removed or re-zoned).
    list_changed: bool,
    /// Namespace labels and ReplicaSet selectors, shared with the snapshot copy-on-write.
    namespace_labels: Arc<NamespaceLabels>,
    replica_sets: Arc<ReplicaSetSelectors>,
    /// Node ids ([`NodeInfo::id`]) free for reuse, and the next never-used one.
    free_ids: Vec<u32>,
    next_id: u32,
}

impl Cache {
    pub fn new() -> Cache {
        Cache::default()
    }

    fn touch(&mut self, name: &str) -> &mut NodeInfo {
        self.generation += 1;
        let generation = self.generation;
        // Names are allocated only for nodes not seen before (touched for every pod bound).
        if !self.nodes.contains_key(name) {
            let mut info = NodeInfo::new(name);
            info.id = self.free_ids.pop().unwrap_or_else(|| {
                self.next_id += 1;
                self.next_id - 1
            });
            let node = CachedNode {
                info: Arc::new(info),
                dirty: false,
            };
            self.nodes.insert(name.to_string(), node);
        }
        let entry = self.nodes.get_mut(name).expect("inserted above");
        if !std::mem::replace(&mut entry.dirty, true) {
            self.dirty.push(name);
        }
        let info = Arc::make_mut(&mut entry.info);
        info.generation = generation;
        info
    }

    fn images_changed(
        &mut self,
        old: &[crate::framework::types::NodeImage],
        new: &[crate::framework::types::NodeImage],
    ) {
        for img in old {
            if let Some(c) = self.image_num_nodes.get_mut(&img.name) {
                *c -= 1;
                if *c == 0 {
                    self.image_num_nodes.remove(&img.name);
                }
            }
        }
        for img in new {
            *self.image_num_nodes.entry(img.name.clone()).or_default() += 1;
        }
    }

    pub fn add_node(&mut self, node: Arc<StoredNode>) {
        self.update_node(node);
    }

    /// Upstream `UpdateNode`. A node whose update renews only its conditions' heartbeats (a
    /// node agent's periodic status post) is left as it is, generation included: nothing the
    /// cache derives or the plugins read changed, so the snapshot keeps its NodeInfo.
    /// Whether that was so (the cache held the node, and `node` differs from it only in
    /// heartbeats): the held version differs from the last one given here only in heartbeats
    /// (any other change replaces it), so the verdict is also the one against that version.
    pub fn update_node(&mut self, node: Arc<StoredNode>) -> bool {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        if self.only_heartbeats_changed(name, &node) {
            return true;
        }
        let name = name.to_string();
        let zone = zone_key(&node);
        let old_images = self
            .nodes
            .get(&name)
            .filter(|n| n.info.node.is_some())
            .map(|n| n.info.images.clone())
            .unwrap_or_default();
        let info = self.touch(&name);
        info.set_node(node);
        let new_images = info.images.clone();
        self.images_changed(&old_images, &new_images);
        match self.zones.get(&name) {
            Some(z) if *z == zone => {}
            Some(z) => {
                let z = z.clone();
                self.tree.remove(&z, &name);
                self.tree.add(&zone, &name);
                self.zones.insert(name, zone);
                self.list_changed = true;
            }
            None => {
                self.tree.add(&zone, &name);
                self.zones.insert(name, zone);
                self.list_changed = true;
            }
        }
        false
    }

    /// Whether the cache holds `name`'s node and `node` differs from it only in heartbeats.
    fn only_heartbeats_changed(&self, name: &str, node: &StoredNode) -> bool {
        self.nodes
            .get(name)
            .and_then(|n| n.info.node.as_deref())
            .is_some_and(|held| kubeplane_api::only_heartbeats_changed(held, node))
    }

    pub fn remove_node(&mut self, name: &str) {
        let Some(zone) = self.zones.remove(name) else {
            return;
        };
        self.tree.remove(&zone, name);
        self.list_changed = true;
        let old_images = self
            .nodes
            .get(name)
            .map(|n| n.info.images.clone())
            .unwrap_or_default();
        self.images_changed(&old_images, &[]);
        let info = self.touch(name);
        info.node = None;
        info.label_ids = Default::default();
        info.images.clear();
        if info.pods.is_empty() {
            self.forget_node(name);
        }
    }

    fn add_to_node(&mut self, pod: Arc<PodInfo>, node: &str) {
        self.touch(node).add_pod(pod);
    }

    /// Takes the pod the cache's entry `held` names off `node`: found by the address of the
    /// very PodInfo the node was given (a pointer compare per pod of the node, where the UID
    /// compare reads each pod's UID), else by UID.
    fn remove_from_node(&mut self, held: &PodState) {
        let node = held.node();
        if !self.nodes.contains_key(node) {
            return;
        }
        let info = self.touch(node);
        info.remove_pod_held(Arc::as_ptr(&held.pod), held.pod.uid());
        if info.node.is_none() && info.pods.is_empty() {
            self.forget_node(node);
        }
    }

    /// Drops a node's NodeInfo, freeing its id.
    fn forget_node(&mut self, name: &str) {
        if let Some(node) = self.nodes.remove(name) {
            self.free_ids.push(node.info.id);
        }
    }

    /// Accounts a pod to the node the scheduler chose, before binding is confirmed.
    pub fn assume_pod(&mut self, pod: Arc<PodInfo>, node: &str) -> Result<(), CacheError> {
        if self.pods.contains(pod.uid()) {
            return Err(CacheError::AlreadyAssumed(pod.key()));
        }
        self.pods.insert(PodState::new(pod.clone(), node, true));
        self.add_to_node(pod, node);
        Ok(())
    }

    /// Undoes an assumption (binding failed).
    pub fn forget_pod(&mut self, uid: &str) -> Result<(), CacheError> {
        match self.pods.get(uid) {
            Some(s) if s.assumed => {
                let s = self.pods.take(uid).expect("found above");
                self.remove_from_node(&s);
                Ok(())
            }
            Some(s) => Err(CacheError::NotAssumed(s.pod.key())),
            None => Err(CacheError::NotAssumed(uid.to_string())),
        }
    }

    /// The pod as the cache knows it (assumed or added).
    pub fn pod(&self, uid: &str) -> Option<&Arc<PodInfo>> {
        self.pods.get(uid).map(|s| &s.pod)
    }

    pub fn is_assumed(&self, uid: &str) -> bool {
        self.pods.get(uid).is_some_and(|s| s.assumed)
    }

    /// A bound pod seen through the watch: confirms an assumed pod or adds it.
    pub fn add_pod(&mut self, pod: Arc<PodInfo>) -> Result<(), CacheError> {
        let node = pod.node_name().unwrap_or_default();
        // Whether the pod was assumed, and then on this node; the assumed PodInfo's address
        // (the node holds that very PodInfo).
        let (assumed_on, held) = match self.pods.get(pod.uid()) {
            Some(s) if s.assumed => (Some(s.node() == node), Arc::as_ptr(&s.pod)),
            Some(_) => return Err(CacheError::AlreadyAdded(pod.key())),
            None => (None, std::ptr::null()),
        };
        let confirmed = match assumed_on {
            Some(true) => self.nodes.get_mut(node).filter(|n| n.info.node.is_some()),
            _ => None,
        };
        if let Some(entry) = confirmed {
            // Confirmed on the node it was assumed on: one touch of the node (as `touch`, by
            // the entry just found), as many generations as a removal and an addition take
            // (the NodeInfo ends the same).
            self.generation += 2;
            if !std::mem::replace(&mut entry.dirty, true) {
                self.dirty.push(node);
            }
            let info = Arc::make_mut(&mut entry.info);
            info.generation = self.generation;
            info.remove_pod_held(held, pod.uid());
            info.add_pod(pod.clone());
        } else {
            // An assumed pod leaves the node it was assumed on (its entry is put back below).
            if let Some(s) = assumed_on.and_then(|_| self.pods.take(pod.uid())) {
                self.remove_from_node(&s);
            }
            self.add_to_node(pod.clone(), node);
        }
        // The assumed pod's entry is replaced where it is; the pod names its own node.
        self.pods.replace(PodState {
            pod,
            node: None,
            assumed: false,
        });
        Ok(())
    }

    pub fn update_pod(&mut self, pod: Arc<PodInfo>) {
        if let Some(s) = self.pods.take(pod.uid()) {
            self.remove_from_node(&s);
        }
        let _ = self.add_pod(pod);
    }

    pub fn remove_pod(&mut self, uid: &str) {
        if let Some(s) = self.pods.take(uid) {
            self.remove_from_node(&s);
        }
    }

    /// A namespace was added or changed: remembers its labels (if they changed).
    pub fn update_namespace(&mut self, name: &str, labels: Option<&BTreeMap<String, String>>) {
        let labels = labels.cloned().unwrap_or_default();
        if self.namespace_labels.get(name) != Some(&labels) {
            Arc::make_mut(&mut self.namespace_labels).insert(name.to_string(), labels);
        }
    }

    pub fn remove_namespace(&mut self, name: &str) {
        if self.namespace_labels.contains_key(name) {
            Arc::make_mut(&mut self.namespace_labels).remove(name);
        }
    }

    /// A ReplicaSet was added or changed: remembers its selector (if it changed).
    pub fn update_replica_set(&mut self, key: &str, selector: Option<Selector>) {
        if self.replica_sets.get(key) != Some(&selector) {
            Arc::make_mut(&mut self.replica_sets).insert(key.to_string(), selector);
        }
    }

    pub fn remove_replica_set(&mut self, key: &str) {
        if self.replica_sets.contains_key(key) {
            Arc::make_mut(&mut self.replica_sets).remove(key);
        }
    }

    pub fn node(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.nodes.get(name).map(|n| &n.info)
    }

    /// Brings `snapshot` up to date: replaces the nodes that changed, and rebuilds the ordered
    /// list only when nodes were added, removed or moved between zones.
    pub fn update_snapshot(&mut self, snapshot: &mut Snapshot) {
        for name in self.dirty.take_sorted() {
            let Some(node) = self.nodes.get_mut(name) else {
                continue;
            };
            node.dirty = false;
            if let (false, Some(&i)) = (self.list_changed, snapshot.index.get(name)) {
                snapshot.replace_node(i, node.info.clone());
            }
        }
        if !self.list_changed {
            // A place vacated for a node the cache no longer has (not expected: the cache
            // forgets a node only after its removal changed the list) is filled by a rebuild.
            self.list_changed = snapshot.vacancies() > 0;
        }
        if self.list_changed {
            let order: Vec<String> = self.tree.list().into_iter().map(str::to_string).collect();
            snapshot.set_nodes(
                order
                    .iter()
                    .filter_map(|n| self.nodes.get(n).map(|n| n.info.clone()))
                    .collect(),
            );
            snapshot.index = snapshot
                .node_infos
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name.clone(), i))
                .collect();
            snapshot.count_affinity_nodes();
            self.list_changed = false;
        }
        if snapshot.image_num_nodes != self.image_num_nodes {
            snapshot.image_num_nodes = self.image_num_nodes.clone();
            snapshot.image_generation += 1;
        }
        snapshot.generation = self.generation;
        if !Arc::ptr_eq(&snapshot.namespace_labels, &self.namespace_labels) {
            snapshot.namespace_labels = self.namespace_labels.clone();
        }
        if !Arc::ptr_eq(&snapshot.replica_sets, &self.replica_sets) {
            snapshot.replica_sets = self.replica_sets.clone();
        }
    }

    /// Lets `snapshot` go of the nodes a change of pod `uid` is about to touch (where the
    /// cache has it, and `node`, where it is now), before the cache changes them: the cache
    /// then changes its NodeInfos in place instead of copying them, and the snapshot keeps
    /// neither a second copy of their pod lists nor the pods' superseded versions until the
    /// next cycle. The nodes are marked changed, so [`Self::update_snapshot`] puts them back.
    /// Only between cycles (nothing may read the snapshot before it is updated again).
    pub fn release_from_snapshot(&mut self, uid: &str, node: Option<&str>, snap: &mut Snapshot) {
        let known = self.pods.get(uid).map(PodState::node);
        let also = node.filter(|n| !n.is_empty() && Some(*n) != known);
        for name in known.into_iter().chain(also) {
            let Some(&place) = snap.index.get(name) else {
                continue;
            };
            if snap.vacate(place) {
                mark_dirty(&mut self.nodes, &mut self.dirty, name);
            }
        }
    }
}

#[cfg(test)]
mod tests;

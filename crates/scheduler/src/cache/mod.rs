//! The scheduler cache (upstream `backend/cache`): nodes with their bound and assumed pods,
//! the zone-interleaved node order, and the incremental snapshot.

pub mod snapshot;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kubeplane_api::StoredNode;
use kubeplane_core::labels::Selector;

use crate::framework::{NodeInfo, PodInfo};
use crate::plugins::helper::FxHashMap;
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

/// How the cache knows a pod (upstream `podState`).
#[derive(Clone, Debug)]
struct PodState {
    pod: Arc<PodInfo>,
    node: String,
    /// Assumed by the scheduler, not yet confirmed by a watch event.
    assumed: bool,
}

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

#[derive(Default)]
pub struct Cache {
    /// By name (hashed: looked up several times per pod event, never iterated; the node order
    /// is `tree`'s).
    nodes: FxHashMap<String, Arc<NodeInfo>>,
    zones: FxHashMap<String, String>,
    tree: NodeTree,
    pods: FxHashMap<String, PodState>,
    image_num_nodes: FxHashMap<String, usize>,
    generation: u64,
    /// Nodes changed since the last snapshot update.
    dirty: BTreeSet<String>,
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
        if !self.dirty.contains(name) {
            self.dirty.insert(name.to_string());
        }
        if !self.nodes.contains_key(name) {
            let mut info = NodeInfo::new(name);
            info.id = self.free_ids.pop().unwrap_or_else(|| {
                self.next_id += 1;
                self.next_id - 1
            });
            self.nodes.insert(name.to_string(), Arc::new(info));
        }
        let entry = self.nodes.get_mut(name).expect("inserted above");
        let info = Arc::make_mut(entry);
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
            .filter(|n| n.node.is_some())
            .map(|n| n.images.clone())
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
            .and_then(|info| info.node.as_deref())
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
            .map(|n| n.images.clone())
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

    fn remove_from_node(&mut self, uid: &str, node: &str) {
        if !self.nodes.contains_key(node) {
            return;
        }
        let info = self.touch(node);
        info.remove_pod(uid);
        if info.node.is_none() && info.pods.is_empty() {
            self.forget_node(node);
        }
    }

    /// Drops a node's NodeInfo, freeing its id.
    fn forget_node(&mut self, name: &str) {
        if let Some(info) = self.nodes.remove(name) {
            self.free_ids.push(info.id);
        }
    }

    /// Accounts a pod to the node the scheduler chose, before binding is confirmed.
    pub fn assume_pod(&mut self, pod: Arc<PodInfo>, node: &str) -> Result<(), CacheError> {
        if self.pods.contains_key(&pod.uid) {
            return Err(CacheError::AlreadyAssumed(pod.key()));
        }
        self.add_to_node(pod.clone(), node);
        self.pods.insert(
            pod.uid.clone(),
            PodState {
                pod,
                node: node.to_string(),
                assumed: true,
            },
        );
        Ok(())
    }

    /// Undoes an assumption (binding failed).
    pub fn forget_pod(&mut self, uid: &str) -> Result<(), CacheError> {
        match self.pods.get(uid) {
            Some(s) if s.assumed => {
                let node = s.node.clone();
                self.pods.remove(uid);
                self.remove_from_node(uid, &node);
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
        // Whether the pod was assumed, and then on this node.
        let assumed_on = match self.pods.get(&pod.uid) {
            Some(s) if s.assumed => Some(s.node.as_str() == node),
            Some(_) => return Err(CacheError::AlreadyAdded(pod.key())),
            None => None,
        };
        if assumed_on == Some(true) && self.nodes.get(node).is_some_and(|n| n.node.is_some()) {
            // Confirmed on the node it was assumed on: one touch of the node, as many
            // generations as a removal and an addition take (the NodeInfo ends the same).
            self.generation += 1;
            let info = self.touch(node);
            info.remove_pod(&pod.uid);
            info.add_pod(pod.clone());
        } else {
            if let Some(old) = assumed_on
                .is_some()
                .then(|| self.pods[&pod.uid].node.clone())
            {
                self.remove_from_node(&pod.uid, &old);
            }
            self.add_to_node(pod.clone(), node);
        }
        let state = PodState {
            node: node.to_string(),
            pod,
            assumed: false,
        };
        // The assumed pod's entry is updated where it is.
        match assumed_on.and_then(|_| self.pods.get_mut(&state.pod.uid)) {
            Some(s) => *s = state,
            None => {
                self.pods.insert(state.pod.uid.clone(), state);
            }
        }
        Ok(())
    }

    pub fn update_pod(&mut self, pod: Arc<PodInfo>) {
        if let Some(s) = self.pods.get(&pod.uid) {
            let node = s.node.clone();
            self.remove_from_node(&pod.uid, &node);
        }
        self.pods.remove(&pod.uid);
        let _ = self.add_pod(pod);
    }

    pub fn remove_pod(&mut self, uid: &str) {
        if let Some(s) = self.pods.remove(uid) {
            self.remove_from_node(uid, &s.node);
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
        self.nodes.get(name)
    }

    /// Brings `snapshot` up to date: replaces the nodes that changed, and rebuilds the ordered
    /// list only when nodes were added, removed or moved between zones.
    pub fn update_snapshot(&mut self, snapshot: &mut Snapshot) {
        if !self.list_changed {
            for name in &self.dirty {
                if let (Some(&i), Some(info)) = (snapshot.index.get(name), self.nodes.get(name)) {
                    snapshot.replace_node(i, info.clone());
                }
            }
            // A place vacated for a node the cache no longer has (not expected: the cache
            // forgets a node only after its removal changed the list) is filled by a rebuild.
            self.list_changed = snapshot.vacancies() > 0;
        }
        if self.list_changed {
            let order: Vec<String> = self.tree.list().into_iter().map(str::to_string).collect();
            snapshot.set_nodes(
                order
                    .iter()
                    .filter_map(|n| self.nodes.get(n).cloned())
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
        self.dirty.clear();
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
        let known = self.pods.get(uid).map(|s| s.node.as_str());
        let also = node.filter(|n| !n.is_empty() && Some(*n) != known);
        for name in known.into_iter().chain(also) {
            let Some(&place) = snap.index.get(name) else {
                continue;
            };
            if snap.vacate(place) && !self.dirty.contains(name) {
                self.dirty.insert(name.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Pod, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node(name: &str, zone: &str) -> Arc<StoredNode> {
        let mut labels = std::collections::BTreeMap::new();
        if !zone.is_empty() {
            labels.insert("topology.kubernetes.io/zone".to_string(), zone.to_string());
        }
        Arc::new(
            Node {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    labels: Some(labels),
                    ..Default::default()
                },
                ..Default::default()
            }
            .into(),
        )
    }

    fn pod(uid: &str, node: Option<&str>) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(uid.into()),
                uid: Some(uid.into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        })))
    }

    #[test]
    fn the_node_list_interleaves_zones_round_robin() {
        let mut c = Cache::new();
        for (n, z) in [
            ("a1", "a"),
            ("a2", "a"),
            ("b1", "b"),
            ("a3", "a"),
            ("b2", "b"),
        ] {
            c.add_node(node(n, z));
        }
        let mut s = Snapshot::default();
        c.update_snapshot(&mut s);
        let names: Vec<&str> = s.node_infos.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["a1", "b1", "a2", "b2", "a3"]);
    }

    #[test]
    fn a_node_added_again_or_moved_between_zones_is_listed_once() {
        let mut c = Cache::new();
        for (n, z) in [("a1", "a"), ("b1", "b"), ("a2", "a")] {
            c.add_node(node(n, z));
        }
        // Updated in place (same zone), re-added, and moved to the other zone and back.
        c.add_node(node("a1", "a"));
        c.add_node(node("a2", "a"));
        c.add_node(node("a2", "b"));
        c.add_node(node("b1", "a"));
        c.add_node(node("b1", "b"));
        let mut s = Snapshot::default();
        c.update_snapshot(&mut s);
        let names: Vec<&str> = s.node_infos.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["a1", "a2", "b1"]);
        assert_eq!(c.tree.num_nodes, 3);
        c.remove_node("a2");
        c.add_node(node("a2", "a"));
        c.update_snapshot(&mut s);
        let names: Vec<&str> = s.node_infos.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["a1", "b1", "a2"]);
    }

    #[test]
    fn an_assumed_pod_counts_until_forgotten_and_a_confirmed_one_cannot_be_forgotten() {
        let mut c = Cache::new();
        c.add_node(node("n1", ""));
        c.assume_pod(pod("p", None), "n1").unwrap();
        assert!(c.is_assumed("p"));
        assert_eq!(c.node("n1").unwrap().pods.len(), 1);
        c.forget_pod("p").unwrap();
        assert_eq!(c.node("n1").unwrap().pods.len(), 0);
        c.assume_pod(pod("p", None), "n1").unwrap();
        c.add_pod(pod("p", Some("n1"))).unwrap();
        assert!(!c.is_assumed("p"));
        assert!(c.forget_pod("p").is_err());
    }

    #[test]
    fn a_confirmed_pod_replaces_its_assumed_self_where_a_removal_and_addition_would_leave_it() {
        let mut c = Cache::new();
        c.add_node(node("n1", ""));
        c.add_node(node("n2", ""));
        for p in ["a", "b", "c"] {
            c.assume_pod(pod(p, None), "n1").unwrap();
        }
        c.assume_pod(pod("d", None), "n2").unwrap();
        let generation = c.generation;
        // Confirmed on the node it was assumed on: the last pod takes its place, it goes last.
        let a = pod("a", Some("n1"));
        c.add_pod(Arc::clone(&a)).unwrap();
        let uids = |c: &Cache, n: &str| -> Vec<String> {
            c.node(n)
                .unwrap()
                .pods
                .iter()
                .map(|p| p.uid.clone())
                .collect()
        };
        assert_eq!(uids(&c, "n1"), ["c", "b", "a"]);
        assert!(Arc::ptr_eq(&c.node("n1").unwrap().pods[2], &a));
        assert!(Arc::ptr_eq(c.pod("a").unwrap(), &a));
        assert!(!c.is_assumed("a"));
        assert_eq!(c.generation, generation + 2);
        assert_eq!(c.node("n1").unwrap().generation, generation + 2);
        assert!(c.add_pod(pod("a", Some("n1"))).is_err());
        // Bound elsewhere than assumed: taken off the one node, added to the other.
        c.add_pod(pod("d", Some("n1"))).unwrap();
        assert_eq!(uids(&c, "n1"), ["c", "b", "a", "d"]);
        assert!(uids(&c, "n2").is_empty());
        assert!(!c.is_assumed("d"));
        // Assumed on a node the cache does not hold: it stays unknown there.
        c.assume_pod(pod("e", None), "ghost").unwrap();
        c.add_pod(pod("e", Some("ghost"))).unwrap();
        assert_eq!(uids(&c, "ghost"), ["e"]);
        assert!(c.node("ghost").unwrap().node.is_none());
    }

    #[test]
    fn the_snapshot_shares_unchanged_nodes_and_replaces_changed_ones() {
        let mut c = Cache::new();
        c.add_node(node("n1", ""));
        c.add_node(node("n2", ""));
        let mut s = Snapshot::default();
        c.update_snapshot(&mut s);
        let before = s.get("n2").unwrap().clone();
        c.assume_pod(pod("p", None), "n1").unwrap();
        c.update_snapshot(&mut s);
        assert_eq!(s.get("n1").unwrap().pods.len(), 1);
        assert!(Arc::ptr_eq(&before, s.get("n2").unwrap()));
    }

    /// `n1` with a Ready condition whose heartbeat is `heartbeat` and status `status`.
    fn posted(heartbeat: i64, status: &str, rv: &str) -> Arc<StoredNode> {
        let mut n = StoredNode::clone(&node("n1", "a"));
        n.metadata.resource_version = Some(rv.into());
        n.status = Some(k8s_openapi::api::core::v1::NodeStatus {
            conditions: Some(vec![k8s_openapi::api::core::v1::NodeCondition {
                type_: "Ready".into(),
                status: status.into(),
                last_heartbeat_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    jiff::Timestamp::from_second(heartbeat).unwrap(),
                )),
                ..Default::default()
            }]),
            ..Default::default()
        });
        Arc::new(n)
    }

    #[test]
    fn a_heartbeat_only_update_leaves_the_node_and_snapshot_alone() {
        let mut c = Cache::new();
        c.add_node(posted(0, "True", "1"));
        let mut s = Snapshot::default();
        c.update_snapshot(&mut s);
        let before = s.get("n1").unwrap().clone();
        let generation = c.generation;
        c.update_node(posted(300, "True", "2"));
        assert_eq!(c.generation, generation);
        assert!(c.dirty.is_empty());
        c.update_snapshot(&mut s);
        assert!(Arc::ptr_eq(&before, s.get("n1").unwrap()));
        // A condition's status is a change: the node is replaced.
        c.update_node(posted(600, "False", "3"));
        assert!(c.generation > generation);
        c.update_snapshot(&mut s);
        let after = s.get("n1").unwrap();
        assert!(!Arc::ptr_eq(&before, after));
        let held = after.node.as_ref().unwrap();
        assert_eq!(held.metadata.resource_version.as_deref(), Some("3"));
    }

    /// The verdict `update_node` returns is the comparison with the version given before it,
    /// over posts that renew heartbeats, change a status, renew again, change back, and after
    /// the node's removal (not held: a change).
    #[test]
    fn update_node_tells_a_heartbeat_only_post_as_the_previous_version_would() {
        let mut c = Cache::new();
        let posts = [
            posted(0, "True", "1"),
            posted(300, "True", "2"),
            posted(600, "True", "3"),
            posted(900, "False", "4"),
            posted(1200, "False", "5"),
            posted(1500, "True", "6"),
            posted(1800, "True", "7"),
        ];
        assert!(!c.update_node(posts[0].clone()), "not held yet");
        for w in posts.windows(2) {
            let expected = kubeplane_api::only_heartbeats_changed(&w[0], &w[1]);
            assert_eq!(c.update_node(w[1].clone()), expected, "{:?}", w[1].metadata);
        }
        let verdicts: Vec<bool> = posts
            .windows(2)
            .map(|w| kubeplane_api::only_heartbeats_changed(&w[0], &w[1]))
            .collect();
        assert_eq!(verdicts, [true, true, false, true, false, true]);
        c.remove_node("n1");
        assert!(
            !c.update_node(posted(2100, "True", "8")),
            "removed: not held"
        );
    }

    #[test]
    fn node_ids_are_distinct_among_known_nodes_kept_across_changes_and_reused_when_freed() {
        let mut c = Cache::new();
        for n in ["n1", "n2", "n3"] {
            c.add_node(node(n, ""));
        }
        let id = |c: &Cache, n: &str| c.node(n).unwrap().id;
        assert_eq!([id(&c, "n1"), id(&c, "n2"), id(&c, "n3")], [0, 1, 2]);
        // A change keeps the id; a node known only through a pod gets one too.
        c.assume_pod(pod("p", None), "n2").unwrap();
        assert_eq!(id(&c, "n2"), 1);
        c.assume_pod(pod("q", None), "ghost").unwrap();
        assert_eq!(id(&c, "ghost"), 3);
        // A node that still has pods keeps its id; one that has none frees it.
        c.remove_node("n2");
        assert_eq!(id(&c, "n2"), 1);
        c.remove_node("n1");
        assert!(c.node("n1").is_none());
        c.forget_pod("p").unwrap();
        assert!(c.node("n2").is_none());
        c.add_node(node("n4", ""));
        c.add_node(node("n5", ""));
        c.add_node(node("n6", ""));
        let ids = ["n4", "n5", "n3", "ghost", "n6"].map(|n| id(&c, n));
        assert_eq!(ids, [1, 0, 2, 3, 4]);
    }

    #[test]
    fn a_released_node_is_changed_in_place_and_put_back_at_the_next_update() {
        let mut c = Cache::new();
        c.add_node(node("n1", ""));
        c.add_node(node("n2", ""));
        c.add_pod(pod("p", Some("n1"))).unwrap();
        let mut s = Snapshot::default();
        c.update_snapshot(&mut s);
        let n2 = s.get("n2").unwrap().clone();
        let bound = Arc::downgrade(&s.get("n1").unwrap().pods[0]);
        // A new version of p between cycles: the snapshot lets go of n1 first.
        c.release_from_snapshot("p", Some("n1"), &mut s);
        c.update_pod(pod("p", Some("n1")));
        assert!(bound.upgrade().is_none(), "the superseded version is kept");
        assert_eq!(Arc::strong_count(c.node("n1").unwrap()), 1);
        assert_eq!(s.vacancies(), 1);
        c.update_snapshot(&mut s);
        assert_eq!(s.vacancies(), 0);
        assert!(Arc::ptr_eq(s.get("n1").unwrap(), c.node("n1").unwrap()));
        assert!(Arc::ptr_eq(s.get("n2").unwrap(), &n2));
        let names: Vec<&str> = s.node_infos.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["n1", "n2"]);
    }

    #[test]
    fn a_pod_moved_between_nodes_releases_both_and_a_stray_vacancy_rebuilds_the_list() {
        let mut c = Cache::new();
        for n in ["n1", "n2", "n3"] {
            c.add_node(node(n, ""));
        }
        c.add_pod(pod("p", Some("n1"))).unwrap();
        let mut s = Snapshot::default();
        c.update_snapshot(&mut s);
        c.release_from_snapshot("p", Some("n2"), &mut s);
        assert_eq!(s.vacancies(), 2);
        c.update_pod(pod("p", Some("n2")));
        c.update_snapshot(&mut s);
        assert_eq!(s.get("n1").unwrap().pods.len(), 0);
        assert_eq!(s.get("n2").unwrap().pods.len(), 1);
        // A place vacated without the cache marking its node changed is rebuilt all the same.
        let cursor = s.cursor();
        assert!(s.vacate(2));
        c.update_snapshot(&mut s);
        assert_eq!(s.vacancies(), 0);
        assert!(Arc::ptr_eq(s.get("n3").unwrap(), c.node("n3").unwrap()));
        assert_eq!(s.changed_since(cursor), None, "a rebuilt list");
    }
}

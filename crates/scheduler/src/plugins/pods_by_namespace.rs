//! The snapshot's pods by namespace, kept across scheduling cycles (upstream has no
//! equivalent; this is how kubeplane keeps PodTopologySpread's PreScore off the whole-cluster
//! scan when consecutive pods come from different namespaces).
//!
//! Upstream's PreScore counts, on every node of the snapshot, the pods that match a
//! constraint's selector in the incoming pod's namespace (`countPodsMatchSelector`): a pass
//! over every pod of the cluster for each pod scheduled. Only pods of that namespace can
//! count, so an index of the snapshot's pods by namespace, each with the place of its node in
//! the snapshot's node list, gives the same counts from the namespace's pods alone. The index
//! is brought up to date like a [`NodeMemo`](crate::plugins::memo::NodeMemo): only the places
//! the snapshot's change log names (every place when it cannot tell) are compared, and a
//! replaced NodeInfo's pods are compared with its predecessor's by pointer, so that a node
//! that gained or lost one pod costs one entry.

use std::sync::Arc;

use crate::cache::{Snapshot, SnapshotCursor};
use crate::framework::{NodeInfo, PodInfo};
use crate::plugins::helper::FxHashMap;

/// One pod of the index: the place of its node in the snapshot's node list, and the pod.
pub(crate) type PlacedPod = (u32, Arc<PodInfo>);

/// The pods of the snapshot's nodes, by namespace.
#[derive(Default)]
pub(crate) struct PodsByNamespace {
    /// The NodeInfo indexed at each place (the snapshot's node list at the last update).
    nodes: Vec<Arc<NodeInfo>>,
    /// Namespace → its pods, in no particular order; no empty lists.
    by_namespace: FxHashMap<String, Vec<PlacedPod>>,
    /// Where the last update read the snapshot's change log.
    seen: Option<SnapshotCursor>,
    /// Scratch: pod addresses of a node's old and new versions.
    old: Vec<usize>,
    new: Vec<usize>,
}

fn address(p: &Arc<PodInfo>) -> usize {
    Arc::as_ptr(p) as usize
}

impl PodsByNamespace {
    /// The pods in `namespace` on the nodes of the last update, with their nodes' places.
    pub(crate) fn pods_in(&self, namespace: &str) -> &[PlacedPod] {
        self.by_namespace
            .get(namespace)
            .map_or(&[][..], |v| v.as_slice())
    }

    /// The NodeInfo at `place` in the last update.
    pub(crate) fn node_at(&self, place: usize) -> Option<&Arc<NodeInfo>> {
        self.nodes.get(place)
    }

    /// Brings the index up to date with the snapshot's node list.
    pub(crate) fn update(&mut self, snapshot: &Snapshot) {
        let nodes = &snapshot.node_infos;
        let since = match self.nodes.len() == nodes.len() {
            true => snapshot.changed_since(self.seen),
            false => None,
        };
        while self.nodes.len() > nodes.len() {
            let place = self.nodes.len() - 1;
            let gone = self.nodes.pop().expect("longer");
            for p in &gone.pods {
                self.remove(place, p);
            }
        }
        match since {
            Some(places) => {
                for &i in places {
                    self.sync(i, &nodes[i]);
                }
            }
            None => {
                for (i, n) in nodes.iter().enumerate() {
                    self.sync(i, n);
                }
            }
        }
        self.seen = snapshot.cursor();
    }

    /// Indexes the NodeInfo now at `place` (places past the end are reached in order).
    fn sync(&mut self, place: usize, node: &Arc<NodeInfo>) {
        let Some(old) = self.nodes.get(place) else {
            debug_assert_eq!(place, self.nodes.len());
            for p in &node.pods {
                self.add(place, p);
            }
            self.nodes.push(node.clone());
            return;
        };
        if Arc::ptr_eq(old, node) {
            return;
        }
        let old = std::mem::replace(&mut self.nodes[place], node.clone());
        let (mut was, mut now) = (std::mem::take(&mut self.old), std::mem::take(&mut self.new));
        was.clear();
        was.extend(old.pods.iter().map(address));
        was.sort_unstable();
        now.clear();
        now.extend(node.pods.iter().map(address));
        now.sort_unstable();
        // A pod in both versions is the same live PodInfo (both versions hold it), so it
        // stays; the others go or come.
        for p in &old.pods {
            if now.binary_search(&address(p)).is_err() {
                self.remove(place, p);
            }
        }
        for p in &node.pods {
            if was.binary_search(&address(p)).is_err() {
                self.add(place, p);
            }
        }
        (self.old, self.new) = (was, now);
    }

    fn add(&mut self, place: usize, p: &Arc<PodInfo>) {
        let entry = (place as u32, p.clone());
        match self.by_namespace.get_mut(&p.namespace) {
            Some(list) => list.push(entry),
            None => {
                self.by_namespace.insert(p.namespace.clone(), vec![entry]);
            }
        }
    }

    fn remove(&mut self, place: usize, p: &Arc<PodInfo>) {
        let Some(list) = self.by_namespace.get_mut(&p.namespace) else {
            debug_assert!(false, "an indexed pod's namespace is indexed");
            return;
        };
        let at = list
            .iter()
            .position(|(q, e)| *q as usize == place && Arc::ptr_eq(e, p));
        debug_assert!(at.is_some(), "an indexed pod is in its namespace's list");
        if let Some(at) = at {
            list.swap_remove(at);
        }
        if list.is_empty() {
            self.by_namespace.remove(&p.namespace);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{snapshot, NodeBuilder, PodBuilder, PodBuilderExt};

    /// What the index must hold: every (namespace, place, pod name) of the snapshot, sorted.
    fn expected(snap: &Snapshot) -> Vec<(String, u32, String)> {
        let mut out: Vec<_> = snap
            .node_infos
            .iter()
            .enumerate()
            .flat_map(|(i, n)| {
                n.pods
                    .iter()
                    .map(move |p| (p.namespace.clone(), i as u32, p.name.clone()))
            })
            .collect();
        out.sort();
        out
    }

    fn held(index: &PodsByNamespace) -> Vec<(String, u32, String)> {
        let mut out: Vec<_> = index
            .by_namespace
            .iter()
            .flat_map(|(ns, list)| {
                list.iter()
                    .map(move |(q, p)| (ns.clone(), *q, p.name.clone()))
            })
            .collect();
        out.sort();
        out
    }

    fn pod(ns: &str, name: &str, node: &str) -> Arc<PodInfo> {
        Arc::new(PodBuilder::new(name).namespace(ns).node(node).info())
    }

    /// The NodeInfo of `old` with `pods` added and the pods named in `gone` removed, keeping
    /// the other PodInfos (as the cache does).
    fn changed(old: &Arc<NodeInfo>, pods: &[Arc<PodInfo>], gone: &[&str]) -> Arc<NodeInfo> {
        let mut n = (**old).clone();
        n.pods.retain(|p| !gone.contains(&p.name.as_str()));
        n.pods.extend(pods.iter().cloned());
        Arc::new(n)
    }

    #[test]
    fn the_index_follows_tracked_and_untracked_snapshots() {
        let mut snap = snapshot(vec![
            NodeBuilder::new("a").info(),
            NodeBuilder::new("b").info(),
            NodeBuilder::new("c").info(),
        ]);
        snap.set_nodes(snap.node_infos.clone());
        let mut index = PodsByNamespace::default();
        index.update(&snap);
        assert!(held(&index).is_empty());
        // Tracked replacements: pods of two namespaces come and go.
        let n0 = changed(
            &snap.node_infos[0],
            &[pod("x", "x1", "a"), pod("y", "y1", "a")],
            &[],
        );
        snap.replace_node(0, n0);
        let n2 = changed(&snap.node_infos[2], &[pod("x", "x2", "c")], &[]);
        snap.replace_node(2, n2);
        index.update(&snap);
        assert_eq!(held(&index), expected(&snap));
        assert_eq!(index.pods_in("x").len(), 2);
        let n0 = changed(&snap.node_infos[0], &[pod("y", "y2", "a")], &["x1"]);
        snap.replace_node(0, n0.clone());
        snap.replace_node(0, changed(&n0, &[], &["y1"]));
        index.update(&snap);
        assert_eq!(held(&index), expected(&snap));
        assert_eq!(index.pods_in("x").len(), 1);
        // A rebuilt list: nodes move, one leaves; then an untracked copy that grows.
        let moved = vec![snap.node_infos[2].clone(), snap.node_infos[0].clone()];
        snap.set_nodes(moved);
        index.update(&snap);
        assert_eq!(held(&index), expected(&snap));
        let mut copy = snap.clone();
        copy.node_infos
            .push(Arc::new(NodeBuilder::new("d").info_with_pods(vec![
                PodBuilder::new("z1").namespace("z").node("d").obj(),
            ])));
        copy.node_infos[0] = changed(&copy.node_infos[0], &[], &["x2"]);
        index.update(&copy);
        assert_eq!(held(&index), expected(&copy));
        assert!(index.pods_in("x").is_empty());
        assert!(!index.by_namespace.contains_key("x"), "no empty lists");
        assert_eq!(index.node_at(2).map(|n| n.name.as_str()), Some("d"));
    }
}

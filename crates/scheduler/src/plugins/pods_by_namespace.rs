//! The snapshot's pods by namespace, brought up to date only when asked (upstream has no
//! equivalent; this is how kubeplane starts PodTopologySpread's PreScore counts for a new
//! namespace without a pass over every pod of the cluster).
//!
//! Upstream's PreScore counts, on every node of the snapshot, the pods that match a
//! constraint's selector in the incoming pod's namespace (`countPodsMatchSelector`). Only pods
//! of that namespace can count, so an index of the snapshot's pods by namespace, each with the
//! place of its node in the snapshot's node list, gives the same counts from the namespace's
//! pods alone. The index is brought up to date like a [`NodeMemo`](crate::plugins::memo::NodeMemo):
//! only the places the snapshot's change log names since the last update (every place when it
//! cannot tell) are compared with the NodeInfo seen there, and a replaced NodeInfo's pods are
//! compared with the pods indexed at that place by address, so that a node that gained or
//! lost one pod costs one entry. Each place keeps the pods it indexed (not its NodeInfo, which
//! would keep the NodeInfo's superseded pods alive) in the NodeInfo's order and a `Weak` of
//! the NodeInfo, so that the address is not reused meanwhile. The cache changes a node's list
//! by pushes and swap-removes, so a replaced NodeInfo holds most of its pods where the last
//! one held them: those are compared in place, and only the others are matched by address.

use std::sync::{Arc, Weak};

use crate::cache::{Snapshot, SnapshotCursor};
use crate::framework::{NodeInfo, PodInfo};
use crate::plugins::helper::FxHashMap;

/// A pod's address: what tells two PodInfos apart (the cache replaces a changed pod's `Arc`).
fn address(p: &Arc<PodInfo>) -> usize {
    Arc::as_ptr(p) as usize
}

/// One indexed pod: its address, its namespace's id, and the pod. A `Weak`, so that the index
/// keeps no superseded pod's contents alive between updates, only its allocation (whose
/// address is then not reused meanwhile).
type Indexed = (usize, u32, Weak<PodInfo>);

/// A cell of [`Place::pods`] between its pod leaving and the pod now there being found.
const UNSET: Indexed = (0, 0, Weak::new());

/// The pods of one place, as last indexed.
#[derive(Default)]
struct Place {
    node: Weak<NodeInfo>,
    /// In the order of the NodeInfo's `pods`.
    pods: Vec<Indexed>,
}

/// The pods of the snapshot's nodes, by namespace.
#[derive(Default)]
pub(crate) struct PodsByNamespace {
    places: Vec<Place>,
    /// Namespace → its id.
    ids: FxHashMap<String, u32>,
    /// By namespace id: (pod address, place) → pod.
    by_namespace: Vec<FxHashMap<(usize, u32), Weak<PodInfo>>>,
    /// Where the last update read the snapshot's change log.
    seen: Option<SnapshotCursor>,
    /// Scratch of a sync: the indexed pods no longer in their cells, and the (address,
    /// position) of the node's pods not in theirs, each to be sorted by address.
    left: Vec<Indexed>,
    arrived: Vec<(usize, u32)>,
}

impl PodsByNamespace {
    /// The pods in `namespace` with their nodes' places, as of the last update, in no
    /// particular order.
    pub(crate) fn pods_in<'a>(
        &'a self,
        namespace: &str,
    ) -> impl Iterator<Item = (usize, Arc<PodInfo>)> + 'a {
        let map = self
            .ids
            .get(namespace)
            .map(|&id| &self.by_namespace[id as usize]);
        map.into_iter().flat_map(|m| {
            m.iter().map(|(&(_, place), p)| {
                let p = p.upgrade().expect("an indexed pod is in the snapshot");
                (place as usize, p)
            })
        })
    }

    /// Brings the index up to date with the snapshot's node list.
    pub(crate) fn update(&mut self, snapshot: &Snapshot) {
        let nodes = &snapshot.node_infos;
        let since = match self.places.len() == nodes.len() {
            true => snapshot.changed_since(self.seen),
            false => None,
        };
        while self.places.len() > nodes.len() {
            let place = self.places.len() - 1;
            let gone = self.places.pop().expect("longer");
            for p in &gone.pods {
                self.remove(place, p);
            }
        }
        match since {
            Some(places) => places.iter().for_each(|&i| self.sync(i, &nodes[i])),
            None => nodes.iter().enumerate().for_each(|(i, n)| self.sync(i, n)),
        }
        self.seen = snapshot.cursor();
    }

    /// Indexes the NodeInfo now at `place` (places past the end are reached in order).
    fn sync(&mut self, place: usize, node: &Arc<NodeInfo>) {
        if self.places.len() == place {
            self.places.push(Place::default());
        }
        if std::ptr::eq(self.places[place].node.as_ptr(), Arc::as_ptr(node)) {
            return;
        }
        let now = &node.pods;
        let mut pods = std::mem::take(&mut self.places[place].pods);
        let (mut left, mut arrived) = (
            std::mem::take(&mut self.left),
            std::mem::take(&mut self.arrived),
        );
        // A cell that holds the pod it held is kept without a look at the namespace maps.
        for (j, (cell, p)) in pods.iter_mut().zip(now).enumerate() {
            if cell.0 != address(p) {
                left.push(std::mem::replace(cell, UNSET));
                arrived.push((address(p), j as u32));
            }
        }
        let common = pods.len().min(now.len());
        left.extend(pods.drain(common..));
        arrived.extend((common..now.len()).map(|j| (address(&now[j]), j as u32)));
        pods.resize(now.len(), UNSET);
        // A merge of the two lists by address: a pod in both is the same live PodInfo, moved.
        left.sort_unstable_by_key(|e| e.0);
        arrived.sort_unstable_by_key(|e| e.0);
        let mut gone = left.drain(..).peekable();
        let mut came = arrived.iter().peekable();
        loop {
            let a = gone.peek().map_or(usize::MAX, |e| e.0);
            let b = came.peek().map_or(usize::MAX, |e| e.0);
            if a < b {
                let e = gone.next().expect("peeked");
                self.remove(place, &e);
            } else if b < a {
                let j = came.next().expect("peeked").1 as usize;
                pods[j] = self.add(place, &now[j]);
            } else if a == usize::MAX {
                break;
            } else {
                let j = came.next().expect("peeked").1 as usize;
                pods[j] = gone.next().expect("peeked");
            }
        }
        drop(gone);
        arrived.clear();
        (self.left, self.arrived) = (left, arrived);
        self.places[place] = Place {
            node: Arc::downgrade(node),
            pods,
        };
    }

    fn add(&mut self, place: usize, p: &Arc<PodInfo>) -> Indexed {
        let id = match self.ids.get(p.namespace()) {
            Some(&id) => id,
            None => {
                let id = self.by_namespace.len() as u32;
                self.ids.insert(p.namespace().to_string(), id);
                self.by_namespace.push(FxHashMap::default());
                id
            }
        };
        let weak = Arc::downgrade(p);
        let map = &mut self.by_namespace[id as usize];
        map.insert((address(p), place as u32), weak.clone());
        (address(p), id, weak)
    }

    fn remove(&mut self, place: usize, p: &Indexed) {
        let gone = self.by_namespace[p.1 as usize].remove(&(p.0, place as u32));
        debug_assert!(gone.is_some(), "an indexed pod is in its namespace's map");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{snapshot, NodeBuilder, PodBuilder, PodBuilderExt};

    /// What the index must hold: every (namespace, place, pod name) of the snapshot, sorted.
    fn expected(snap: &Snapshot) -> Vec<(String, usize, String)> {
        let mut out: Vec<_> = snap
            .node_infos
            .iter()
            .enumerate()
            .flat_map(|(i, n)| {
                n.pods
                    .iter()
                    .map(move |p| (p.namespace().to_string(), i, p.name().to_string()))
            })
            .collect();
        out.sort();
        out
    }

    fn held(index: &PodsByNamespace) -> Vec<(String, usize, String)> {
        let mut out: Vec<_> = index
            .ids
            .keys()
            .flat_map(|ns| {
                index
                    .pods_in(ns)
                    .map(move |(q, p)| (ns.clone(), q, p.name().to_string()))
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
        n.pods.retain(|p| !gone.contains(&p.name()));
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
        assert_eq!(index.pods_in("x").count(), 2);
        let n0 = changed(&snap.node_infos[0], &[pod("y", "y2", "a")], &["x1"]);
        snap.replace_node(0, n0.clone());
        snap.replace_node(0, changed(&n0, &[], &["y1"]));
        index.update(&snap);
        assert_eq!(held(&index), expected(&snap));
        assert_eq!(index.pods_in("x").count(), 1);
        // A rebuilt list: nodes move (the same PodInfos at other places), one leaves; then an
        // untracked copy that grows.
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
        assert_eq!(index.pods_in("x").count(), 0);
        // The index keeps no removed pod alive.
        let gone = Arc::downgrade(&copy.node_infos[1].pods[0]);
        let mut emptied = copy.clone();
        emptied.node_infos[1] = changed(&copy.node_infos[1], &[], &["y2"]);
        index.update(&emptied);
        assert_eq!(held(&index), expected(&emptied));
        drop((copy, snap, n0));
        assert!(
            gone.upgrade().is_none(),
            "the index kept a removed pod alive"
        );
        assert_eq!(index.pods_in("z").map(|(q, _)| q).collect::<Vec<_>>(), [2]);
    }

    /// A node whose list was reordered (the cache swap-removes: the last pod takes the place
    /// of the one that left) and whose pods change at once in several cells.
    #[test]
    fn the_index_follows_reordered_pods() {
        let mut snap = snapshot(vec![NodeBuilder::new("a").info()]);
        snap.set_nodes(snap.node_infos.clone());
        let mut index = PodsByNamespace::default();
        let pods: Vec<_> = (0..5).map(|k| pod("x", &format!("x{k}"), "a")).collect();
        snap.replace_node(0, changed(&snap.node_infos[0], &pods, &[]));
        index.update(&snap);
        assert_eq!(held(&index), expected(&snap));
        // x1 leaves by swap-remove, y1 arrives at the end.
        let mut n = (*snap.node_infos[0]).clone();
        n.pods.swap_remove(1);
        n.pods.push(pod("y", "y1", "a"));
        snap.replace_node(0, Arc::new(n));
        index.update(&snap);
        assert_eq!(held(&index), expected(&snap));
        // Reversed, two gone from the middle, one new in front.
        let mut n = (*snap.node_infos[0]).clone();
        n.pods.reverse();
        n.pods.retain(|p| p.name() != "x2" && p.name() != "x3");
        n.pods.insert(0, pod("x", "x9", "a"));
        snap.replace_node(0, Arc::new(n));
        index.update(&snap);
        assert_eq!(held(&index), expected(&snap));
        assert_eq!(index.pods_in("x").count(), 3);
        // Emptied.
        let mut n = (*snap.node_infos[0]).clone();
        n.pods.clear();
        snap.replace_node(0, Arc::new(n));
        index.update(&snap);
        assert!(held(&index).is_empty());
    }
}

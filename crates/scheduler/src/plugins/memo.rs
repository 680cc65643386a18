//! Per-node results kept across scheduling cycles (upstream has no equivalent; this is how
//! kubeplane keeps the topology plugins' PreFilter/PreScore off the whole-cluster scan).
//!
//! InterPodAffinity and PodTopologySpread aggregate something over every node of the snapshot
//! for each pod (matching pods per topology domain). Consecutive pods usually share what that
//! depends on (the replicas of one workload), and between two cycles only the nodes the
//! previous pod was bound to change. A [`NodeMemo`] remembers each node's contribution and
//! the NodeInfo it was computed from; a cycle with the same key recomputes only the nodes whose
//! NodeInfo is a different `Arc` (the cache replaces a node's `Arc` whenever it changes) and
//! applies the difference to the aggregate. The result is the same as a full recount.
//!
//! The memo holds each NodeInfo by a `Weak`: that keeps the allocation, so its address is not
//! reused for another NodeInfo while the memo compares against it (and a cache that changes a
//! node the memo has seen moves it to a new one), but not its contents: a node's superseded
//! pods are freed once the cache and the snapshot have let go of them.

use std::sync::{Arc, Weak};

use crate::cache::{Snapshot, SnapshotCursor};
use crate::framework::NodeInfo;

/// Per-node contributions `C` to an aggregate `A`, valid for one key `K`.
pub struct NodeMemo<K, C, A> {
    key: Option<K>,
    nodes: Vec<(Weak<NodeInfo>, C)>,
    pub agg: A,
    /// The places whose NodeInfo was recomputed in the last update.
    changed: Vec<usize>,
    /// How many times the memo started over for a new key.
    restarts: u64,
    /// Where the last update read the snapshot's change log.
    seen: Option<SnapshotCursor>,
}

impl<K, C, A: Default> Default for NodeMemo<K, C, A> {
    fn default() -> Self {
        NodeMemo {
            key: None,
            nodes: Vec::new(),
            agg: A::default(),
            changed: Vec::new(),
            restarts: 0,
            seen: None,
        }
    }
}

impl<K: PartialEq, C, A: Default> NodeMemo<K, C, A> {
    /// Brings the aggregate up to date with the snapshot's node list for `key`: a new key starts
    /// over from an empty aggregate; otherwise only changed nodes are recomputed, and only the
    /// places the snapshot's change log names are compared when it can tell.
    pub fn update(
        &mut self,
        key: K,
        snapshot: &Snapshot,
        compute: impl FnMut(&Arc<NodeInfo>) -> C,
        apply: impl FnMut(&mut A, &C, i64),
    ) {
        let since = snapshot.changed_since(self.seen);
        self.update_nodes(key, &snapshot.node_infos, since, compute, apply);
        self.seen = snapshot.cursor();
    }

    /// The contribution of the node at `place` in the list of the last update, and the
    /// address of that node.
    pub fn contribution(&self, place: usize) -> Option<(*const NodeInfo, &C)> {
        self.nodes.get(place).map(|(n, c)| (n.as_ptr(), c))
    }

    /// The places recomputed by the last update (all of them when it started over), in the
    /// order they were recomputed, and how many times the memo has started over for a new
    /// key: what a memo that follows this one's updates needs to follow them.
    pub fn last_update(&self) -> (&[usize], u64) {
        (&self.changed, self.restarts)
    }

    /// [`Self::update`] with a node list and, when known, the only places that may have changed
    /// since the last update (`None`: compare every place). `apply(agg, c, sign)` adds one
    /// node's contribution when `sign` is 1 and takes it away when it is -1. Every outdated
    /// contribution is taken away before any new one is added, so a NodeInfo that moved to
    /// another place in the list is added after its old place is taken away. The memo then
    /// knows no snapshot cursor: [`Self::update`] records one after calling this.
    fn update_nodes(
        &mut self,
        key: K,
        nodes: &[Arc<NodeInfo>],
        maybe_changed: Option<&[usize]>,
        mut compute: impl FnMut(&Arc<NodeInfo>) -> C,
        mut apply: impl FnMut(&mut A, &C, i64),
    ) {
        let mut maybe_changed = maybe_changed;
        self.seen = None;
        if self.key.as_ref() != Some(&key) {
            self.key = Some(key);
            self.nodes.clear();
            self.agg = A::default();
            self.restarts += 1;
            maybe_changed = None;
        }
        if self.nodes.len() != nodes.len() {
            maybe_changed = None;
        }
        while self.nodes.len() > nodes.len() {
            let (_, c) = self.nodes.pop().expect("longer");
            apply(&mut self.agg, &c, -1);
        }
        let mut changed = std::mem::take(&mut self.changed);
        changed.clear();
        let mut visit = |i: usize, changed: &mut Vec<usize>| match self.nodes.get(i) {
            Some(slot) if std::ptr::eq(slot.0.as_ptr(), Arc::as_ptr(&nodes[i])) => {}
            Some(slot) => {
                apply(&mut self.agg, &slot.1, -1);
                changed.push(i);
            }
            None => changed.push(i),
        };
        match maybe_changed {
            Some(places) => {
                // A place may be logged more than once; it is taken away once.
                let mut places = places.to_vec();
                places.sort_unstable();
                places.dedup();
                for i in places {
                    visit(i, &mut changed);
                }
            }
            None => (0..nodes.len()).for_each(|i| visit(i, &mut changed)),
        }
        for &i in &changed {
            let n = &nodes[i];
            let c = compute(n);
            apply(&mut self.agg, &c, 1);
            if let Some(slot) = self.nodes.get_mut(i) {
                *slot = (Arc::downgrade(n), c);
            } else {
                self.nodes.push((Arc::downgrade(n), c));
            }
        }
        self.changed = changed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, pods: i64) -> Arc<NodeInfo> {
        let mut n = NodeInfo::new(name);
        n.generation = pods as u64;
        Arc::new(n)
    }

    #[test]
    fn only_changed_nodes_are_recomputed_and_the_aggregate_matches_a_recount() {
        let mut memo: NodeMemo<&str, i64, i64> = NodeMemo::default();
        let mut computed = 0;
        let nodes = vec![node("a", 1), node("b", 2), node("c", 3)];
        let mut run = |memo: &mut NodeMemo<&str, i64, i64>, key, nodes: &[Arc<NodeInfo>]| {
            memo.update_nodes(
                key,
                nodes,
                None,
                |n| {
                    computed += 1;
                    n.generation as i64
                },
                |agg, c, sign| *agg += c * sign,
            );
            memo.agg
        };
        assert_eq!(run(&mut memo, "k", &nodes), 6);
        let mut changed = nodes.clone();
        changed[1] = node("b", 5);
        assert_eq!(run(&mut memo, "k", &changed), 9);
        // Fewer nodes, then a new key.
        assert_eq!(run(&mut memo, "k", &changed[..2]), 6);
        assert_eq!(run(&mut memo, "other", &nodes), 6);
        assert_eq!(computed, 3 + 1 + 3);
    }

    #[test]
    fn the_memo_keeps_no_node_alive_and_still_sees_a_replaced_one() {
        let mut memo: NodeMemo<&str, i64, i64> = NodeMemo::default();
        let run = |memo: &mut NodeMemo<&str, i64, i64>, nodes: &[Arc<NodeInfo>]| {
            let apply = |agg: &mut i64, c: &i64, sign| *agg += c * sign;
            memo.update_nodes("k", nodes, None, |n| n.generation as i64, apply);
            memo.agg
        };
        let nodes = vec![node("a", 1), node("b", 2)];
        assert_eq!(run(&mut memo, &nodes), 3);
        assert_eq!(Arc::strong_count(&nodes[1]), 1);
        let old_b = Arc::downgrade(&nodes[1]);
        let mut next = nodes.clone();
        next[1] = node("b", 5);
        drop(nodes);
        assert!(
            old_b.upgrade().is_none(),
            "the memo kept a superseded NodeInfo"
        );
        assert_eq!(run(&mut memo, &next), 6);
    }

    #[test]
    fn a_node_that_moves_in_the_list_is_taken_away_before_it_is_added_again() {
        // The aggregate: the names present; adding one already present is a bug.
        let mut memo: NodeMemo<&str, String, Vec<String>> = NodeMemo::default();
        let run = |memo: &mut NodeMemo<&str, String, Vec<String>>, nodes: &[Arc<NodeInfo>]| {
            memo.update_nodes(
                "k",
                nodes,
                None,
                |n| n.name.clone(),
                |agg, c, sign| {
                    if sign > 0 {
                        assert!(!agg.contains(c), "{c} added twice");
                        agg.push(c.clone());
                    } else {
                        agg.retain(|x| x != c);
                    }
                },
            );
            let mut names = memo.agg.clone();
            names.sort();
            names
        };
        let nodes = vec![node("a", 1), node("b", 2), node("c", 3)];
        assert_eq!(run(&mut memo, &nodes), ["a", "b", "c"]);
        let moved = vec![nodes[2].clone(), nodes[0].clone(), nodes[1].clone()];
        assert_eq!(run(&mut memo, &moved), ["a", "b", "c"]);
    }

    #[test]
    fn with_a_tracked_snapshot_only_the_logged_places_are_compared() {
        let mut snap = Snapshot::default();
        snap.set_nodes(vec![node("a", 1), node("b", 2), node("c", 3)]);
        let mut memo: NodeMemo<&str, i64, i64> = NodeMemo::default();
        let mut computed = Vec::new();
        let mut run = |memo: &mut NodeMemo<&str, i64, i64>, snap: &Snapshot| {
            memo.update(
                "k",
                snap,
                |n| {
                    computed.push(n.name.clone());
                    n.generation as i64
                },
                |agg, c, sign| *agg += c * sign,
            );
            memo.agg
        };
        assert_eq!(run(&mut memo, &snap), 6);
        // The same place replaced twice: its old contribution goes once.
        snap.replace_node(1, node("b", 5));
        snap.replace_node(1, node("b", 7));
        assert_eq!(run(&mut memo, &snap), 11);
        // Nothing changed: nothing recomputed.
        assert_eq!(run(&mut memo, &snap), 11);
        // A copy is untracked: every place is compared, and still only changes recomputed.
        let mut copy = snap.clone();
        assert_eq!(copy.cursor(), None);
        copy.node_infos[2] = node("c", 1);
        assert_eq!(run(&mut memo, &copy), 9);
        // A rebuilt list: a new epoch, compared in full.
        let rebuilt = vec![node("x", 10), copy.node_infos[0].clone()];
        snap.set_nodes(rebuilt);
        assert_eq!(run(&mut memo, &snap), 11);
        // "a" moved to place 1, so it is recomputed there.
        assert_eq!(computed, ["a", "b", "c", "b", "c", "x", "a"]);
    }

    #[test]
    fn a_cursor_of_another_list_or_before_the_log_started_over_tells_nothing() {
        let mut a = Snapshot::default();
        a.set_nodes(vec![node("a", 1)]);
        let mut b = Snapshot::default();
        b.set_nodes(vec![node("a", 1)]);
        let at_a = a.cursor();
        assert_eq!(a.changed_since(at_a), Some(&[][..]));
        assert_eq!(b.changed_since(at_a), None);
        assert_eq!(a.changed_since(None), None);
        a.replace_node(0, node("a", 2));
        assert_eq!(a.changed_since(at_a), Some(&[0][..]));
        assert_eq!(Snapshot::default().cursor(), None);
    }
}

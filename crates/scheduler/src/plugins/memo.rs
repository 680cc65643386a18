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

use std::sync::Arc;

use crate::framework::NodeInfo;

/// Per-node contributions `C` to an aggregate `A`, valid for one key `K`.
pub struct NodeMemo<K, C, A> {
    key: Option<K>,
    nodes: Vec<(Arc<NodeInfo>, C)>,
    pub agg: A,
    /// Scratch: the places whose NodeInfo changed in this update.
    changed: Vec<usize>,
}

impl<K, C, A: Default> Default for NodeMemo<K, C, A> {
    fn default() -> Self {
        NodeMemo {
            key: None,
            nodes: Vec::new(),
            agg: A::default(),
            changed: Vec::new(),
        }
    }
}

impl<K: PartialEq, C, A: Default> NodeMemo<K, C, A> {
    /// Brings the aggregate up to date with `nodes` for `key`: a new key starts over from an
    /// empty aggregate; otherwise only changed nodes are recomputed. `apply(agg, c, sign)`
    /// adds (`sign` 1) or takes away (-1) one node's contribution. Every outdated
    /// contribution is taken away before any new one is added, so a NodeInfo that moved to
    /// another place in the list is added after its old place is taken away.
    pub fn update(
        &mut self,
        key: K,
        nodes: &[Arc<NodeInfo>],
        mut compute: impl FnMut(&Arc<NodeInfo>) -> C,
        mut apply: impl FnMut(&mut A, &C, i64),
    ) {
        if self.key.as_ref() != Some(&key) {
            self.key = Some(key);
            self.nodes.clear();
            self.agg = A::default();
        }
        while self.nodes.len() > nodes.len() {
            let (_, c) = self.nodes.pop().expect("longer");
            apply(&mut self.agg, &c, -1);
        }
        let mut changed = std::mem::take(&mut self.changed);
        for (i, n) in nodes.iter().enumerate() {
            match self.nodes.get(i) {
                Some(slot) if Arc::ptr_eq(&slot.0, n) => {}
                Some(slot) => {
                    apply(&mut self.agg, &slot.1, -1);
                    changed.push(i);
                }
                None => changed.push(i),
            }
        }
        for &i in &changed {
            let n = &nodes[i];
            let c = compute(n);
            apply(&mut self.agg, &c, 1);
            if let Some(slot) = self.nodes.get_mut(i) {
                *slot = (n.clone(), c);
            } else {
                self.nodes.push((n.clone(), c));
            }
        }
        changed.clear();
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
            memo.update(
                key,
                nodes,
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
    fn a_node_that_moves_in_the_list_is_taken_away_before_it_is_added_again() {
        // The aggregate: the names present; adding one already present is a bug.
        let mut memo: NodeMemo<&str, String, Vec<String>> = NodeMemo::default();
        let run = |memo: &mut NodeMemo<&str, String, Vec<String>>, nodes: &[Arc<NodeInfo>]| {
            memo.update(
                "k",
                nodes,
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
}

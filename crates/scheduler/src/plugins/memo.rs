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
}

impl<K, C, A: Default> Default for NodeMemo<K, C, A> {
    fn default() -> Self {
        NodeMemo {
            key: None,
            nodes: Vec::new(),
            agg: A::default(),
        }
    }
}

impl<K: PartialEq, C, A: Default> NodeMemo<K, C, A> {
    /// Brings the aggregate up to date with `nodes` for `key`: a new key starts over from an
    /// empty aggregate; otherwise only changed nodes are recomputed. `apply(agg, c, sign)`
    /// adds (`sign` 1) or takes away (-1) one node's contribution. A node's contribution is
    /// taken away before its replacement's is added.
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
        for (i, n) in nodes.iter().enumerate() {
            if let Some(slot) = self.nodes.get_mut(i) {
                if Arc::ptr_eq(&slot.0, n) {
                    continue;
                }
                let c = compute(n);
                apply(&mut self.agg, &slot.1, -1);
                apply(&mut self.agg, &c, 1);
                *slot = (n.clone(), c);
            } else {
                let c = compute(n);
                apply(&mut self.agg, &c, 1);
                self.nodes.push((n.clone(), c));
            }
        }
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
}

//! Node-local Filter and Score results kept across scheduling cycles (kubeplane's own;
//! upstream recomputes them every cycle, which gives the same results).
//!
//! The replicas of a workload reach the scheduler one after another with identical specs,
//! and between two cycles only the nodes the previous pods went to change. Most Filter and
//! Score plugins look at nothing but the pod's spec and one node (see
//! [`FilterPlugin::node_local`](crate::framework::FilterPlugin::node_local) and
//! [`ScorePlugin::node_local`](crate::framework::ScorePlugin::node_local)), so for the next
//! identical pod their verdicts and raw scores on an unchanged node are known. A
//! [`NodeLocalMemo`] keeps them per place in the snapshot's node list, with the NodeInfo they
//! were computed from: the cache replaces a node's NodeInfo whenever it changes, so a
//! different NodeInfo at a place means "compute again".
//!
//! Only successes are reused for Filter (a failure is computed again, with its message). No
//! verdict is reused for a pod when a filter that is not node-local runs (PodTopologySpread
//! or InterPodAffinity with constraints to check), nor on a node with nominated pods. The
//! plugins that are not node-local always run as usual.
//!
//! The NodeInfos are held weakly: their addresses stay reserved, so a comparison cannot be
//! fooled by a reused address, but their pods are not kept alive.

use std::sync::{Arc, Weak};

use k8s_openapi::api::core::v1::PodSpec;

use crate::cache::Snapshot;
use crate::framework::{NodeInfo, PodInfo, ReusedScores};

/// What every kept result depends on besides the node.
#[derive(Debug, PartialEq)]
struct Key {
    spec: PodSpec,
    /// The snapshot's node count and image counts (ImageLocality weighs by them).
    num_nodes: usize,
    image_generation: u64,
}

/// What is known of one place in the snapshot's node list.
#[derive(Clone, Debug, Default)]
struct Entry {
    /// The NodeInfo the results were computed from.
    node: Weak<NodeInfo>,
    /// The node-local filters all passed.
    passed: bool,
    /// The node's row of raw scores is known.
    scored: bool,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct NodeLocalMemo {
    key: Option<Key>,
    /// By place in the snapshot's node list.
    entries: Vec<Entry>,
    /// The Score plugins whose raw scores `scores` holds, in order.
    score_plugins: Vec<&'static str>,
    /// Per place, one raw score per plugin of `score_plugins`.
    scores: Vec<i64>,
    /// How many filter verdicts (one per node) and rows of raw scores were reused.
    pub filters_reused: u64,
    pub scores_reused: u64,
}

impl NodeLocalMemo {
    /// Starts a cycle for `pod` on `snapshot`: everything is forgotten unless the pod's spec
    /// and the snapshot's node and image counts are those of the previous cycle.
    pub fn begin(&mut self, pod: &PodInfo, snapshot: &Snapshot) {
        let num_nodes = snapshot.num_nodes();
        let same = self.key.as_ref().is_some_and(|k| {
            k.num_nodes == num_nodes
                && k.image_generation == snapshot.image_generation
                && k.spec == *pod.spec()
        });
        if !same {
            self.key = Some(Key {
                spec: pod.spec().clone(),
                num_nodes,
                image_generation: snapshot.image_generation,
            });
            self.entries.clear();
            self.score_plugins.clear();
            self.scores.clear();
        }
        self.entries.resize_with(num_nodes, Entry::default);
    }

    /// The entry at `place` if it was computed from `node`.
    fn entry(&self, place: usize, node: &Arc<NodeInfo>) -> Option<&Entry> {
        self.entries
            .get(place)
            .filter(|e| std::ptr::eq(e.node.as_ptr(), Arc::as_ptr(node)))
    }

    /// Whether the node-local filters are known to pass `node` at `place`.
    pub fn passed(&self, place: usize, node: &Arc<NodeInfo>) -> bool {
        self.entry(place, node).is_some_and(|e| e.passed)
    }

    /// Records the node-local filters' verdict on `node` at `place`.
    pub fn record_filter(&mut self, place: usize, node: &Arc<NodeInfo>, passed: bool) {
        let known = self.entry(place, node).is_some();
        let Some(e) = self.entries.get_mut(place) else {
            return;
        };
        if !known {
            *e = Entry {
                node: Arc::downgrade(node),
                passed,
                scored: false,
            };
        } else {
            e.passed = passed;
        }
    }

    /// What is known of the raw scores of the nodes at `places` (the list about to be
    /// scored, `nodes` being the snapshot's node list).
    pub fn reused_scores(&mut self, places: &[usize], nodes: &[Arc<NodeInfo>]) -> ReusedScores {
        let stride = self.score_plugins.len();
        let mut r = ReusedScores {
            plugins: self.score_plugins.clone(),
            known: vec![false; places.len()],
            scores: vec![0; places.len() * stride],
        };
        for (j, &place) in places.iter().enumerate() {
            if self.entry(place, &nodes[place]).is_some_and(|e| e.scored) {
                r.known[j] = true;
                self.scores_reused += 1;
                r.scores[j * stride..(j + 1) * stride]
                    .copy_from_slice(&self.scores[place * stride..(place + 1) * stride]);
            }
        }
        r
    }

    /// Keeps the raw scores of the nodes at `places` that `reused` knows.
    pub fn record_scores(&mut self, places: &[usize], nodes: &[Arc<NodeInfo>], r: &ReusedScores) {
        let stride = r.plugins.len();
        if r.plugins != self.score_plugins {
            self.score_plugins = r.plugins.clone();
            self.entries.iter_mut().for_each(|e| e.scored = false);
        }
        self.scores.resize(self.entries.len() * stride, 0);
        for (j, &place) in places.iter().enumerate() {
            if !r.known.get(j).copied().unwrap_or(false) {
                continue;
            }
            let node = &nodes[place];
            match self.entry(place, node).map(|e| e.scored) {
                // Reused in this cycle: the same scores are kept already.
                Some(true) => continue,
                Some(false) => {}
                None => {
                    // Scored without a filter verdict kept (filters that are not node-local ran).
                    let Some(e) = self.entries.get_mut(place) else {
                        continue;
                    };
                    *e = Entry {
                        node: Arc::downgrade(node),
                        passed: false,
                        scored: false,
                    };
                }
            }
            self.entries[place].scored = true;
            self.scores[place * stride..(place + 1) * stride]
                .copy_from_slice(&r.scores[j * stride..(j + 1) * stride]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{snapshot, NodeBuilder, PodBuilder, PodBuilderExt};

    fn snap(n: usize) -> Snapshot {
        snapshot(
            (0..n)
                .map(|i| NodeBuilder::new(&format!("n{i}")).info())
                .collect(),
        )
    }

    #[test]
    fn a_verdict_holds_for_the_same_nodeinfo_at_the_same_place_and_an_identical_spec() {
        let mut s = snap(3);
        let web = PodBuilder::new("web-1").label("app", "web").info();
        let mut memo = NodeLocalMemo::default();
        memo.begin(&web, &s);
        let n0 = s.node_infos[0].clone();
        assert!(!memo.passed(0, &n0));
        memo.record_filter(0, &n0, true);
        memo.record_filter(1, &s.node_infos[1].clone(), false);
        assert!(memo.passed(0, &n0));
        assert!(!memo.passed(1, &s.node_infos[1]));
        assert!(!memo.passed(2, &n0), "another place");
        // Another replica (same spec, other name and labels): still known.
        let web2 = PodBuilder::new("web-2").label("app", "other").info();
        memo.begin(&web2, &s);
        assert!(memo.passed(0, &n0));
        // The node changed: a new NodeInfo at the same place.
        s.node_infos[0] = Arc::new((*n0).clone());
        assert!(!memo.passed(0, &s.node_infos[0]));
        memo.record_filter(0, &s.node_infos[0].clone(), true);
        // A different spec, or other image counts, start over.
        let big = PodBuilder::new("big").req(&[("cpu", "2")]).info();
        memo.begin(&big, &s);
        assert!(!memo.passed(0, &s.node_infos[0]));
        memo.record_filter(0, &s.node_infos[0].clone(), true);
        s.image_generation += 1;
        memo.begin(&big, &s);
        assert!(!memo.passed(0, &s.node_infos[0]));
    }

    #[test]
    fn raw_scores_are_kept_per_place_and_dropped_for_changed_nodes_or_other_plugins() {
        let mut s = snap(4);
        let pod = PodBuilder::new("p").info();
        let mut memo = NodeLocalMemo::default();
        memo.begin(&pod, &s);
        let places = [2, 0, 3];
        let r = memo.reused_scores(&places, &s.node_infos);
        assert_eq!(r.known, [false, false, false]);
        let scored = ReusedScores {
            plugins: vec!["A", "B"],
            known: vec![true, true, true],
            scores: vec![20, 21, 0, 1, 30, 31],
        };
        memo.record_scores(&places, &s.node_infos, &scored);
        let r = memo.reused_scores(&[0, 1, 3], &s.node_infos);
        assert_eq!(r.plugins, ["A", "B"]);
        assert_eq!(r.known, [true, false, true]);
        assert_eq!(
            (&r.scores[..2], &r.scores[4..]),
            (&[0, 1][..], &[30, 31][..])
        );
        assert_eq!(memo.scores_reused, 2);
        // Node 3 changes; another plugin list replaces what was kept.
        s.node_infos[3] = Arc::new((*s.node_infos[3]).clone());
        let r = memo.reused_scores(&[3, 2], &s.node_infos);
        assert_eq!(r.known, [false, true]);
        let other = ReusedScores {
            plugins: vec!["A"],
            known: vec![true],
            scores: vec![7],
        };
        memo.record_scores(&[1], &s.node_infos, &other);
        let r = memo.reused_scores(&[1, 2], &s.node_infos);
        assert_eq!(
            (r.plugins, r.known, r.scores),
            (vec!["A"], vec![true, false], vec![7, 0])
        );
    }
}

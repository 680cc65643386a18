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
//! Filter verdicts are kept with their status: a node-local filter's failure (its code,
//! reasons and plugin) depends on nothing else either, so a node that failed the previous
//! identical pod fails the next one with the same status (the preemptors of one workload each
//! fail on every full node before PostFilter). Errors are not kept. When filters that are not
//! node-local run too (PodTopologySpread or InterPodAffinity with constraints to check), the
//! kept verdict is still that of the node-local filters alone, and a [`FilterRun`] uses it:
//! where they are known to pass, only the others run; where one is known to fail, only the
//! others placed before it run; either way in their order, so that the first one failing
//! decides the node's status as in a full run. On a node with nominated pods the verdict is
//! the second of upstream's two passes, the one without them (see
//! `schedule_one/nominated_filter.rs`). The plugins that are not node-local always run as usual.
//!
//! The NodeInfos are held weakly: their addresses stay reserved, so a comparison cannot be
//! fooled by a reused address, but their pods are not kept alive.

use std::sync::{Arc, Weak};

use k8s_openapi::api::core::v1::PodSpec;

use crate::cache::{Snapshot, SnapshotCursor};
use crate::framework::{
    run_filters, CycleState, FilterPlugin, NodeInfo, NodeToStatus, PodInfo, ReusedScores, Status,
    StatusId,
};

/// A Filter plugin of a cycle, with its name.
pub type NamedFilter<'a> = (&'static str, &'a dyn FilterPlugin);

/// The Filter plugins of one cycle, in order, split for a memo of the node-local ones'
/// verdicts (see the module documentation).
pub struct FilterRun<'a> {
    /// Every filter that runs, in order.
    pub all: Vec<NamedFilter<'a>>,
    /// Those that are not node-local, in order, with their positions in `all`.
    others: Vec<(usize, NamedFilter<'a>)>,
    /// Every node-local filter comes before every other one (the default profile's order):
    /// a node-local failure is then the node's status.
    locals_first: bool,
}

/// What a full run notes of the node-local filters besides the node's status.
#[derive(Debug, PartialEq)]
pub enum LocalVerdict {
    /// The node's status is theirs: a success, a node-local filter's rejection, or an error.
    AsNode,
    /// A filter that is not node-local rejected the node, and the node-local ones pass.
    Passed,
    /// ... and the first node-local one to reject the node gives this status.
    Failed(Status),
    /// ... and a node-local one gave an error: nothing to keep.
    Unknown,
}

impl<'a> FilterRun<'a> {
    pub fn new(all: Vec<NamedFilter<'a>>) -> FilterRun<'a> {
        let others: Vec<_> = all
            .iter()
            .enumerate()
            .filter(|(_, (_, f))| !f.node_local())
            .map(|(k, &nf)| (k, nf))
            .collect();
        let last_local = all.iter().rposition(|(_, f)| f.node_local());
        let locals_first = match (others.first(), last_local) {
            (Some(&(first_other, _)), Some(last_local)) => last_local < first_other,
            _ => true,
        };
        FilterRun {
            all,
            others,
            locals_first,
        }
    }

    /// Every filter is node-local: a kept verdict is the node's whole verdict.
    pub fn all_local(&self) -> bool {
        self.others.is_empty()
    }

    /// The node's status when its node-local filters are known to pass: that of the others
    /// (the tests' question; the filter pass asks [`Self::others_failure`]).
    #[cfg(test)]
    pub fn others_only(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        self.others_failure(state, pod, node).unwrap_or_default()
    }

    /// [`Self::others_only`] as the first failure of the others, `None` when they all pass.
    #[inline]
    pub fn others_failure(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Option<Status> {
        for &(_, (name, f)) in &self.others {
            let s = f.filter(state, pod, node);
            if !s.is_success() {
                return Some(s.of_filter(name));
            }
        }
        None
    }

    /// The node's status when its node-local filters are known to fail with `failure`: that
    /// of the first filter placed before the failing one that does not pass, else `None`
    /// (the node's status is `failure`).
    pub fn before_local_failure(
        &self,
        failure: &Status,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Option<Status> {
        if self.locals_first {
            return None;
        }
        let end = self
            .all
            .iter()
            .position(|(name, _)| *name == failure.plugin)
            .unwrap_or(self.all.len());
        self.others_before(end, state, pod, node)
    }

    /// The status of the first filter that is not node-local, placed before `end`, that does
    /// not pass the node.
    fn others_before(
        &self,
        end: usize,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Option<Status> {
        self.others
            .iter()
            .take_while(|(k, _)| *k < end)
            .find_map(|&(_, (name, f))| {
                let s = f.filter(state, pod, node);
                (!s.is_success()).then(|| s.of_filter(name))
            })
    }

    /// The node's status (every filter in order, the first failing one deciding), and what it
    /// says of the node-local filters: when a filter that is not node-local decides, the
    /// node-local ones after it are run for their verdict alone.
    pub fn noting_local(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> (Status, LocalVerdict) {
        for (k, &(name, f)) in self.all.iter().enumerate() {
            let s = f.filter(state, pod, node);
            if s.is_success() {
                continue;
            }
            if f.node_local() {
                return (s.of_filter(name), LocalVerdict::AsNode);
            }
            let local = self.all[k + 1..]
                .iter()
                .filter(|(_, g)| g.node_local())
                .find_map(|&(name, g)| {
                    let s = g.filter(state, pod, node);
                    (!s.is_success()).then(|| s.of_filter(name))
                });
            let local = match local {
                None => LocalVerdict::Passed,
                Some(s) if s.is_rejected() => LocalVerdict::Failed(s),
                Some(_) => LocalVerdict::Unknown,
            };
            return (s.of_filter(name), local);
        }
        (Status::success(), LocalVerdict::AsNode)
    }

    /// Every filter in order, as `run_filters`.
    pub fn full(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        run_filters(&self.all, state, pod, node)
    }
}

/// What every kept result depends on besides the node.
#[derive(Debug, PartialEq)]
struct Key {
    spec: PodSpec,
    /// The snapshot's node count and image counts (ImageLocality weighs by them).
    num_nodes: usize,
    image_generation: u64,
}

/// The node-local filters' verdict on a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FilterVerdict {
    #[default]
    Unknown,
    Passed,
    /// Failed with the memo's status of this id ([`NodeLocalMemo::failure`]).
    Failed(StatusId),
}

/// What is known of one place in the snapshot's node list.
#[derive(Clone, Debug, Default)]
struct Entry {
    /// The NodeInfo the results were computed from.
    node: Weak<NodeInfo>,
    filter: FilterVerdict,
}

impl Entry {
    /// Whether a filter verdict is kept.
    fn is_known(&self) -> bool {
        self.filter != FilterVerdict::Unknown
    }
}

/// Past this many distinct failure statuses for one key, the failures are forgotten at the
/// start of the next cycle (the successes are kept).
const MAX_FAILURES: usize = 1024;

/// See the module documentation.
#[derive(Debug, Default)]
pub struct NodeLocalMemo {
    key: Option<Key>,
    /// By place in the snapshot's node list.
    entries: Vec<Entry>,
    /// By place, a bit per entry: the node's row of raw scores is known (bit `place % 64` of
    /// word `place / 64`; a word for every 64 entries).
    scored: Vec<u64>,
    /// The Score plugins whose raw scores `scores` holds, in order.
    score_plugins: Vec<&'static str>,
    /// Per plugin of `score_plugins`, a column of one raw score per place (lent to the
    /// cycle's [`ReusedScores`] while it scores).
    scores: Vec<i64>,
    /// The buffers of the last [`ReusedScores`] lent, kept for the next.
    spare: ReusedScores,
    /// The distinct statuses of the kept failures (by place: [`FilterVerdict::Failed`]).
    failures: NodeToStatus,
    /// Where the last [`Self::begin`] read the snapshot's change log.
    seen: Option<SnapshotCursor>,
    /// Set by [`Self::begin`] when the snapshot is tracked: every entry's `scored` bit is then
    /// true only for the NodeInfo now at its place (the places the change log names were
    /// cleared), so [`Self::reused_scores`] reads the flags without comparing NodeInfos.
    /// The snapshot must not change between `begin` and [`Self::record_scores`].
    scored_current: bool,
    /// How many entries hold a filter verdict (not [`FilterVerdict::Unknown`]): after
    /// [`Self::begin`], each for the NodeInfo now at its place (see [`Self::unknown_count`]).
    known_filters: usize,
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
            self.scored.clear();
            self.known_filters = 0;
            self.score_plugins.clear();
            self.scores.clear();
            self.spare.forget_partials();
            self.failures = NodeToStatus::default();
        }
        if self.failures.distinct_len() > MAX_FAILURES {
            self.failures = NodeToStatus::default();
            for e in &mut self.entries {
                if matches!(e.filter, FilterVerdict::Failed(_)) {
                    e.filter = FilterVerdict::Unknown;
                }
            }
            self.known_filters = self.entries.iter().filter(|e| e.is_known()).count();
        }
        self.entries.resize_with(num_nodes, Entry::default);
        self.scored.resize(num_nodes.div_ceil(64), 0);
        self.follow_changes(snapshot);
    }

    /// At most how many places of the snapshot given to [`Self::begin`] have no known filter
    /// verdict (exact unless a NodeInfo was replaced without the change log saying so; the
    /// filter pass takes it as a hint, its outcome does not depend on it).
    pub fn unknown_count(&self) -> usize {
        self.entries.len().saturating_sub(self.known_filters)
    }

    /// Forgets what the memo knows of every entry whose place the snapshot replaced since the
    /// last cycle (by its change log, else by comparing every entry's NodeInfo): its filter
    /// verdict, so that `known_filters` counts the verdicts known for the NodeInfos now at
    /// their places, and its `scored` bit, so that a set bit means "scored from the NodeInfo
    /// now at this place" (see `scored_current`; an untracked snapshot leaves the scored
    /// comparisons to each cycle).
    fn follow_changes(&mut self, snapshot: &Snapshot) {
        let since = snapshot.changed_since(self.seen);
        self.seen = snapshot.cursor();
        self.scored_current = self.seen.is_some();
        match since {
            Some(places) => {
                for &place in places {
                    match self.entries.get_mut(place) {
                        Some(e) if e.is_known() => {
                            e.filter = FilterVerdict::Unknown;
                            self.known_filters -= 1;
                        }
                        _ => {}
                    }
                    self.set_scored(place, false);
                }
            }
            None => {
                let nodes = self.entries.iter_mut().zip(&snapshot.node_infos);
                for (place, (e, node)) in nodes.enumerate() {
                    if !std::ptr::eq(e.node.as_ptr(), Arc::as_ptr(node)) {
                        e.filter = FilterVerdict::Unknown;
                        if self.scored_current {
                            self.scored[place / 64] &= !(1 << (place % 64));
                        }
                    }
                }
                self.known_filters = self.entries.iter().filter(|e| e.is_known()).count();
            }
        }
    }

    /// Whether the row of raw scores of the entry at `place` is known.
    fn is_scored(&self, place: usize) -> bool {
        self.scored
            .get(place / 64)
            .is_some_and(|&w| (w >> (place % 64)) & 1 == 1)
    }

    /// Sets or clears the `scored` bit of the entry at `place` (none past the entries).
    fn set_scored(&mut self, place: usize, scored: bool) {
        if place < self.entries.len() {
            let (word, bit) = (&mut self.scored[place / 64], 1u64 << (place % 64));
            *word = if scored { *word | bit } else { *word & !bit };
        }
    }

    /// The entry at `place` if it was computed from `node`.
    fn entry(&self, place: usize, node: &Arc<NodeInfo>) -> Option<&Entry> {
        self.entries
            .get(place)
            .filter(|e| std::ptr::eq(e.node.as_ptr(), Arc::as_ptr(node)))
    }

    /// Whether the node-local filters are known to pass `node` at `place` (the tests' question;
    /// the scheduler asks [`Self::verdict`]).
    #[cfg(test)]
    pub fn passed(&self, place: usize, node: &Arc<NodeInfo>) -> bool {
        self.verdict(place, node) == FilterVerdict::Passed
    }

    /// The node-local filters' verdict on `node` at `place`, as far as it is known.
    pub fn verdict(&self, place: usize, node: &Arc<NodeInfo>) -> FilterVerdict {
        self.entry(place, node)
            .map_or(FilterVerdict::Unknown, |e| e.filter)
    }

    /// How many distinct failure statuses are kept (their ids are below this).
    pub fn failure_count(&self) -> usize {
        self.failures.distinct_len()
    }

    /// The status of a kept failure.
    pub fn failure(&self, id: StatusId) -> &Status {
        self.failures.status(id)
    }

    /// The id under which the failure `status` is kept, to record with
    /// [`Self::record_filter`].
    pub fn intern_failure(&mut self, status: &Status) -> StatusId {
        self.failures.intern(status.clone())
    }

    /// Records the node-local filters' verdict on `node` at `place`.
    pub fn record_filter(&mut self, place: usize, node: &Arc<NodeInfo>, verdict: FilterVerdict) {
        let known = self.entry(place, node).is_some();
        let Some(e) = self.entries.get_mut(place) else {
            return;
        };
        let now_known = verdict != FilterVerdict::Unknown;
        match (e.is_known(), now_known) {
            (false, true) => self.known_filters += 1,
            (true, false) => self.known_filters -= 1,
            _ => {}
        }
        if !known {
            *e = Entry {
                node: Arc::downgrade(node),
                filter: verdict,
            };
            self.set_scored(place, false);
        } else {
            e.filter = verdict;
        }
    }

    /// What is known of the raw scores of the nodes at `places` (the list about to be
    /// scored, `nodes` being the snapshot's node list). The kept scores are lent, not copied:
    /// node `j` of the list reads row `places[j]`. Hand them back with
    /// [`Self::record_scores`], whatever the outcome of the cycle.
    pub fn reused_scores(&mut self, places: &[usize], nodes: &[Arc<NodeInfo>]) -> ReusedScores {
        let mut r = std::mem::take(&mut self.spare);
        r.plugins.clone_from(&self.score_plugins);
        r.rows.clear();
        r.rows.extend_from_slice(places);
        r.places = self.entries.len();
        // `known` and its segments in one pass (the list is cut as `prepare` would cut it).
        let reused = match self.scored_current {
            true => r.set_known_from_bits(&self.scored),
            false => r.set_known(|place| {
                self.is_scored(place) && self.entry(place, &nodes[place]).is_some()
            }),
        };
        self.scores_reused += reused;
        r.scores = std::mem::take(&mut self.scores);
        r.filled = false;
        r
    }

    /// Takes back what [`Self::reused_scores`] lent for the nodes at `places`, and keeps the
    /// raw scores the cycle filled in.
    pub fn record_scores(
        &mut self,
        places: &[usize],
        nodes: &[Arc<NodeInfo>],
        mut r: ReusedScores,
    ) {
        let stride = r.plugins.len();
        if r.plugins != self.score_plugins {
            self.score_plugins.clone_from(&r.plugins);
            self.scored.fill(0);
        }
        self.scores = std::mem::take(&mut r.scores);
        if r.places != self.entries.len() {
            // Columns of another length (not lent by this memo): nothing is kept.
            self.scored.fill(0);
            self.scores.clear();
            r.forget_partials();
            r.filled = false;
        }
        self.scores.resize(self.entries.len() * stride, 0);
        if r.filled {
            // A known row was reused in this cycle: its scores are kept already.
            for j in r.unknown_nodes() {
                let place = places[j];
                let node = &nodes[place];
                if self.entry(place, node).is_none() {
                    // Scored without a filter verdict kept (filters that are not node-local ran).
                    let Some(e) = self.entries.get_mut(place) else {
                        continue;
                    };
                    *e = Entry {
                        node: Arc::downgrade(node),
                        filter: FilterVerdict::Unknown,
                    };
                }
                self.set_scored(place, true);
            }
        }
        self.spare = r;
    }
}

#[cfg(test)]
mod tests;

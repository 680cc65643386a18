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
        self.forget_replaced(snapshot);
        self.follow_changes(snapshot);
    }

    /// Forgets the filter verdict of every entry whose place the snapshot replaced since the
    /// last cycle (by its change log, else by comparing every known entry's NodeInfo), so that
    /// `known_filters` counts the verdicts known for the NodeInfos now at their places.
    fn forget_replaced(&mut self, snapshot: &Snapshot) {
        match snapshot.changed_since(self.seen) {
            Some(places) => {
                for &place in places {
                    match self.entries.get_mut(place) {
                        Some(e) if e.is_known() => {
                            e.filter = FilterVerdict::Unknown;
                            self.known_filters -= 1;
                        }
                        _ => {}
                    }
                }
            }
            None => {
                let nodes = &snapshot.node_infos;
                for (e, node) in self.entries.iter_mut().zip(nodes) {
                    if e.is_known() && !std::ptr::eq(e.node.as_ptr(), Arc::as_ptr(node)) {
                        e.filter = FilterVerdict::Unknown;
                    }
                }
                self.known_filters = self.entries.iter().filter(|e| e.is_known()).count();
            }
        }
    }

    /// At most how many places of the snapshot given to [`Self::begin`] have no known filter
    /// verdict (exact unless a NodeInfo was replaced without the change log saying so; the
    /// filter pass takes it as a hint, its outcome does not depend on it).
    pub fn unknown_count(&self) -> usize {
        self.entries.len().saturating_sub(self.known_filters)
    }

    /// Clears the `scored` bit of every entry whose place the snapshot replaced since the
    /// last cycle (by its change log, else by comparing every scored entry's NodeInfo), so
    /// that a set flag means "scored from the NodeInfo now at this place" (see
    /// `scored_current`); an untracked snapshot leaves the comparisons to each cycle.
    fn follow_changes(&mut self, snapshot: &Snapshot) {
        let since = snapshot.changed_since(self.seen);
        self.seen = snapshot.cursor();
        self.scored_current = self.seen.is_some();
        match since {
            Some(places) => {
                for &place in places {
                    self.set_scored(place, false);
                }
            }
            None if self.scored_current => {
                let nodes = self.entries.iter().zip(&snapshot.node_infos);
                for (place, (e, node)) in nodes.enumerate() {
                    if !std::ptr::eq(e.node.as_ptr(), Arc::as_ptr(node)) {
                        self.scored[place / 64] &= !(1 << (place % 64));
                    }
                }
            }
            None => {}
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
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::framework::Code;
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
        memo.record_filter(0, &n0, FilterVerdict::Passed);
        memo.record_filter(1, &s.node_infos[1].clone(), FilterVerdict::Unknown);
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
        memo.record_filter(0, &s.node_infos[0].clone(), FilterVerdict::Passed);
        // A different spec, or other image counts, start over.
        let big = PodBuilder::new("big").req(&[("cpu", "2")]).info();
        memo.begin(&big, &s);
        assert!(!memo.passed(0, &s.node_infos[0]));
        memo.record_filter(0, &s.node_infos[0].clone(), FilterVerdict::Passed);
        s.image_generation += 1;
        memo.begin(&big, &s);
        assert!(!memo.passed(0, &s.node_infos[0]));
    }

    #[test]
    fn a_failure_is_kept_with_its_status_for_the_same_nodeinfo() {
        let mut s = snap(2);
        let mut memo = NodeLocalMemo::default();
        memo.begin(&PodBuilder::new("p").info(), &s);
        let cpu = Status::unschedulable("Insufficient cpu").plugin("NodeResourcesFit");
        let id = memo.intern_failure(&cpu);
        assert_eq!(memo.intern_failure(&cpu.clone()), id);
        let n0 = s.node_infos[0].clone();
        memo.record_filter(0, &n0, FilterVerdict::Failed(id));
        assert_eq!(memo.verdict(0, &n0), FilterVerdict::Failed(id));
        assert!(!memo.passed(0, &n0));
        assert_eq!(*memo.failure(id), cpu);
        // Another replica: still known. The node changes: unknown.
        memo.begin(&PodBuilder::new("q").info(), &s);
        assert_eq!(memo.verdict(0, &n0), FilterVerdict::Failed(id));
        s.node_infos[0] = Arc::new((*n0).clone());
        assert_eq!(memo.verdict(0, &s.node_infos[0]), FilterVerdict::Unknown);
        // Another spec forgets the failures.
        let big = PodBuilder::new("big").req(&[("cpu", "2")]).info();
        memo.begin(&big, &s);
        assert_eq!(memo.failure_count(), 0);
        // Too many distinct failures: forgotten at the next cycle, successes kept.
        let n1 = s.node_infos[1].clone();
        memo.record_filter(1, &n1, FilterVerdict::Passed);
        for i in 0..=MAX_FAILURES {
            memo.intern_failure(&Status::unresolvable(format!("reason {i}")));
        }
        memo.record_filter(0, &s.node_infos[0].clone(), FilterVerdict::Failed(3));
        memo.begin(&big, &s);
        assert_eq!(memo.failure_count(), 0);
        assert_eq!(memo.verdict(0, &s.node_infos[0]), FilterVerdict::Unknown);
        assert!(memo.passed(1, &n1));
    }

    #[test]
    fn the_unknown_count_follows_the_verdicts_and_the_replaced_places() {
        let mut s = snap(5);
        let nodes = s.node_infos.clone();
        s.set_nodes(nodes);
        let pod = PodBuilder::new("p").info();
        let mut memo = NodeLocalMemo::default();
        memo.begin(&pod, &s);
        assert_eq!(memo.unknown_count(), 5);
        let cpu = memo.intern_failure(&Status::unschedulable("Insufficient cpu"));
        for place in 0..4 {
            let verdict = match place % 2 {
                0 => FilterVerdict::Passed,
                _ => FilterVerdict::Failed(cpu),
            };
            memo.record_filter(place, &s.node_infos[place].clone(), verdict);
        }
        memo.record_filter(1, &s.node_infos[1].clone(), FilterVerdict::Failed(cpu));
        memo.begin(&pod, &s);
        assert_eq!(memo.unknown_count(), 1);
        // Places 0 and 4 replaced through the log (4 twice): 0's verdict is forgotten.
        for place in [0, 4, 4] {
            s.replace_node(place, Arc::new((*s.node_infos[place]).clone()));
        }
        memo.begin(&pod, &s);
        assert_eq!(memo.unknown_count(), 2);
        assert_eq!(memo.verdict(0, &s.node_infos[0]), FilterVerdict::Unknown);
        assert_eq!(
            memo.verdict(1, &s.node_infos[1]),
            FilterVerdict::Failed(cpu)
        );
        memo.record_filter(4, &s.node_infos[4].clone(), FilterVerdict::Passed);
        memo.begin(&pod, &s);
        assert_eq!(memo.unknown_count(), 1);
        // A new list (no log to read) with place 2 replaced: found by comparing NodeInfos.
        let mut nodes = s.node_infos.clone();
        nodes[2] = Arc::new((*nodes[2]).clone());
        s.set_nodes(nodes);
        memo.begin(&pod, &s);
        assert_eq!(memo.unknown_count(), 2);
        // Another spec knows nothing.
        memo.begin(&PodBuilder::new("big").req(&[("cpu", "2")]).info(), &s);
        assert_eq!(memo.unknown_count(), 5);
    }

    /// Rejects the nodes whose names are listed (with `code`), counting its calls.
    struct Rejecting {
        local: bool,
        code: Code,
        nodes: &'static [&'static str],
        calls: AtomicUsize,
    }

    fn rejecting(local: bool, code: Code, nodes: &'static [&'static str]) -> Rejecting {
        Rejecting {
            local,
            code,
            nodes,
            calls: AtomicUsize::new(0),
        }
    }

    impl FilterPlugin for Rejecting {
        fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
            self.calls.fetch_add(1, Ordering::Relaxed);
            if self.nodes.contains(&node.name.as_str()) {
                Status::new(self.code, format!("no {}", node.name))
            } else {
                Status::success()
            }
        }
        fn node_local(&self) -> bool {
            self.local
        }
    }

    #[test]
    fn a_filter_run_notes_the_node_local_verdict_and_runs_only_what_is_not_known() {
        let first = rejecting(true, Code::UnschedulableAndUnresolvable, &["a", "f"]);
        let spread = rejecting(false, Code::Unschedulable, &["b", "c", "f"]);
        let last = rejecting(true, Code::Unschedulable, &["c", "d", "g"]);
        let failing = rejecting(false, Code::Error, &["e", "g"]);
        let broken = rejecting(true, Code::Error, &["h"]);
        let run = FilterRun::new(vec![
            ("First", &first),
            ("Spread", &spread),
            ("Last", &last),
            ("Failing", &failing),
            ("Broken", &broken),
        ]);
        assert!(!run.all_local() && !run.locals_first);
        let (state, pod) = (CycleState::new(), PodBuilder::new("p").info());
        let node = |name: &str| NodeBuilder::new(name).info();
        let check = |name: &str| {
            let (s, local) = run.noting_local(&state, &pod, &node(name));
            // The full run in order gives the same status.
            assert_eq!(s, run.full(&state, &pod, &node(name)), "{name}");
            (s.plugin, s.message(), local)
        };
        let no =
            |plugin: &'static str, m: &str| Status::unschedulable(m.to_string()).plugin(plugin);
        assert_eq!(check("ok"), ("", String::new(), LocalVerdict::AsNode));
        assert_eq!(check("a"), ("First", "no a".into(), LocalVerdict::AsNode));
        // A filter that is not node-local decides; the node-local ones after it still tell.
        assert_eq!(check("b"), ("Spread", "no b".into(), LocalVerdict::Passed));
        let c = LocalVerdict::Failed(no("Last", "no c"));
        assert_eq!(check("c"), ("Spread", "no c".into(), c));
        assert_eq!(check("d"), ("Last", "no d".into(), LocalVerdict::AsNode));
        let e = "running \"Failing\" filter plugin: no e";
        assert_eq!(check("e"), ("Failing", e.into(), LocalVerdict::Passed));
        assert_eq!(
            check("h"),
            (
                "Broken",
                "running \"Broken\" filter plugin: no h".into(),
                LocalVerdict::AsNode
            )
        );
        // Node-local filters known to pass: only the others run, with the full run's status.
        // Known to fail: the others placed before the failing one decide if they reject.
        let full: Vec<Status> = ["ok", "b", "e", "c"]
            .iter()
            .map(|name| run.full(&state, &pod, &node(name)))
            .collect();
        let calls = || {
            (
                first.calls.load(Ordering::Relaxed),
                last.calls.load(Ordering::Relaxed),
            )
        };
        let before = calls();
        for (name, full) in ["ok", "b", "e"].iter().zip(&full) {
            assert_eq!(run.others_only(&state, &pod, &node(name)), *full, "{name}");
            let failure = run.others_failure(&state, &pod, &node(name));
            assert_eq!(failure.is_none(), full.is_success(), "{name}");
        }
        let known = |failure: Status, name: &str| {
            run.before_local_failure(&failure, &state, &pod, &node(name))
        };
        assert_eq!(known(no("Last", "no d"), "d"), None);
        assert_eq!(known(no("First", "no f"), "f"), None);
        assert_eq!(known(no("Last", "no g"), "g"), None);
        assert_eq!(known(no("Last", "no c"), "c"), Some(full[3].clone()));
        assert_eq!(calls(), before, "no node-local filter ran");
        // Node-local filters first (the default order): their failure is the node's.
        let ordered = FilterRun::new(vec![
            ("First", &first),
            ("Last", &last),
            ("Spread", &spread),
        ]);
        assert!(ordered.locals_first);
        let spread_calls = spread.calls.load(Ordering::Relaxed);
        let c_local = no("Last", "no c");
        assert_eq!(
            ordered.before_local_failure(&c_local, &state, &pod, &node("c")),
            None
        );
        assert_eq!(spread.calls.load(Ordering::Relaxed), spread_calls);
        assert!(FilterRun::new(vec![("First", &first)]).all_local());
    }

    /// What the scoring does with lent scores: the rows of the nodes not known are written
    /// (`rows[j]` is node `j`'s scores).
    fn score(r: &mut ReusedScores, plugins: &[&'static str], rows: &[&[i64]]) {
        r.prepare(plugins, rows.len());
        for (j, row) in rows.iter().enumerate() {
            if !r.known[j] {
                for (m, &v) in row.iter().enumerate() {
                    r.set(j, m, v);
                }
            }
        }
        r.filled = true;
    }

    /// The known rows of raw scores of the nodes at `places`.
    fn known(memo: &mut NodeLocalMemo, places: &[usize], s: &Snapshot) -> Vec<Option<Vec<i64>>> {
        let r = memo.reused_scores(places, &s.node_infos);
        let m = r.plugins.len();
        let rows = (0..places.len())
            .map(|j| r.known[j].then(|| (0..m).map(|k| r.get(j, k)).collect()))
            .collect();
        memo.record_scores(places, &s.node_infos, r);
        rows
    }

    #[test]
    fn raw_scores_are_kept_per_place_and_dropped_for_changed_nodes_or_other_plugins() {
        let mut s = snap(4);
        let pod = PodBuilder::new("p").info();
        let mut memo = NodeLocalMemo::default();
        memo.begin(&pod, &s);
        let places = [2, 0, 3];
        let mut r = memo.reused_scores(&places, &s.node_infos);
        assert_eq!(r.known, [false, false, false]);
        score(&mut r, &["A", "B"], &[&[20, 21], &[0, 1], &[30, 31]]);
        memo.record_scores(&places, &s.node_infos, r);
        assert_eq!(
            known(&mut memo, &[0, 1, 3], &s),
            [Some(vec![0, 1]), None, Some(vec![30, 31])]
        );
        assert_eq!(memo.scores_reused, 2);
        // Scores not filled in (the cycle failed) are not kept.
        let mut r = memo.reused_scores(&[1], &s.node_infos);
        score(&mut r, &["A", "B"], &[&[10, 11]]);
        r.filled = false;
        memo.record_scores(&[1], &s.node_infos, r);
        assert_eq!(known(&mut memo, &[1], &s), [None]);
        // Node 3 changes; another plugin list replaces what was kept.
        s.node_infos[3] = Arc::new((*s.node_infos[3]).clone());
        assert_eq!(known(&mut memo, &[3, 2], &s), [None, Some(vec![20, 21])]);
        let mut r = memo.reused_scores(&[1], &s.node_infos);
        score(&mut r, &["A"], &[&[7]]);
        memo.record_scores(&[1], &s.node_infos, r);
        assert_eq!(known(&mut memo, &[1, 2], &s), [Some(vec![7]), None]);
    }

    #[test]
    fn the_scored_bits_of_places_in_several_words_follow_the_change_log() {
        // 150 places (three words of bits), a list wrapping around and crossing words.
        let mut s = snap(150);
        let nodes = s.node_infos.clone();
        s.set_nodes(nodes);
        let pod = PodBuilder::new("p").info();
        let mut memo = NodeLocalMemo::default();
        memo.begin(&pod, &s);
        let first: Vec<usize> = (60..140).chain(0..10).collect();
        let mut r = memo.reused_scores(&first, &s.node_infos);
        let rows: Vec<[i64; 1]> = first.iter().map(|&p| [p as i64]).collect();
        let rows: Vec<&[i64]> = rows.iter().map(|r| r.as_slice()).collect();
        score(&mut r, &["A"], &rows);
        memo.record_scores(&first, &s.node_infos, r);
        let replaced = [63, 64, 127];
        for place in replaced {
            s.replace_node(place, Arc::new((*s.node_infos[place]).clone()));
        }
        memo.begin(&pod, &s);
        assert!(memo.scored_current);
        let all: Vec<usize> = (0..150).collect();
        for (place, row) in known(&mut memo, &all, &s).into_iter().enumerate() {
            let kept = first.contains(&place) && !replaced.contains(&place);
            assert_eq!(row, kept.then(|| vec![place as i64]), "{place}");
        }
        // A filter verdict recorded for a new NodeInfo at a scored place clears its bit.
        memo.begin(&pod, &s);
        let fresh = Arc::new((*s.node_infos[65]).clone());
        memo.record_filter(65, &fresh, FilterVerdict::Passed);
        assert_eq!(known(&mut memo, &[64, 65, 66], &s)[1], None);
    }

    #[test]
    fn on_a_tracked_snapshot_the_places_its_change_log_names_lose_their_scores() {
        // A tracked list (as the cache builds it): the memo reads the change log.
        let mut s = snap(4);
        let nodes = s.node_infos.clone();
        s.set_nodes(nodes);
        let pod = PodBuilder::new("p").info();
        let mut memo = NodeLocalMemo::default();
        let all = [0, 1, 2, 3];
        memo.begin(&pod, &s);
        let mut r = memo.reused_scores(&all, &s.node_infos);
        score(&mut r, &["A"], &[&[10], &[11], &[12], &[13]]);
        memo.record_scores(&all, &s.node_infos, r);
        memo.begin(&pod, &s);
        assert!(memo.scored_current);
        let every = |v: &[i64]| v.iter().map(|&x| Some(vec![x])).collect::<Vec<_>>();
        assert_eq!(known(&mut memo, &all, &s), every(&[10, 11, 12, 13]));
        // Place 1 replaced through the log (with the same contents): its row is not known.
        s.replace_node(1, Arc::new((*s.node_infos[1]).clone()));
        memo.begin(&pod, &s);
        let rows = known(&mut memo, &all, &s);
        assert_eq!(rows[1], None);
        assert_eq!(rows[3], Some(vec![13]));
        // A new list (another epoch) with place 2 replaced: found by comparing NodeInfos.
        let mut nodes = s.node_infos.clone();
        nodes[2] = Arc::new((*nodes[2]).clone());
        s.set_nodes(nodes);
        memo.begin(&pod, &s);
        assert!(memo.scored_current);
        let rows = known(&mut memo, &all, &s);
        assert_eq!((rows[0].is_some(), rows[2].is_some()), (true, false));
        // An untracked snapshot: each cycle compares (a node replaced after `begin` counts).
        let mut copy = Snapshot::from_nodes(s.node_infos.iter().map(|n| (**n).clone()).collect());
        memo.begin(&pod, &copy);
        assert!(!memo.scored_current);
        let mut r = memo.reused_scores(&all, &copy.node_infos);
        score(&mut r, &["A"], &[&[20], &[21], &[22], &[23]]);
        memo.record_scores(&all, &copy.node_infos, r);
        memo.begin(&pod, &copy);
        copy.node_infos[3] = Arc::new((*copy.node_infos[3]).clone());
        let rows = known(&mut memo, &all, &copy);
        assert_eq!((rows[0].clone(), rows[3].clone()), (Some(vec![20]), None));
    }
}

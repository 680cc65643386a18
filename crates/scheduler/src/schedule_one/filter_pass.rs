//! One filter pass over the candidate nodes (the loop of upstream `findNodesThatPassFilters`):
//! what a node's check reads ([`FilterPass`]: the filters, the node-local memo, the nominated
//! nodes) and what taking its outcome, in node order, writes ([`Taken`]: the feasible nodes,
//! the failing nodes' statuses, the verdicts for the memo to keep).

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use super::nominated_filter::{FirstPass, Own};
use super::nominated_places::NominatedPlaces;
use super::ScheduleError;
use crate::cache::Snapshot;
use crate::framework::runtime::{use_parallel, PARALLEL_CHUNK_NODES};
use crate::framework::{
    Code, CycleState, Framework, NodeInfo, NodeToStatus, PodInfo, Status, StatusId,
};
use crate::node_local::{FilterRun, FilterVerdict, LocalVerdict, NamedFilter, NodeLocalMemo};
use crate::queue::SchedulingQueue;

/// The most nodes [`FilterPass::runs`] gives the filters at once (one word of failure bits).
const RUN: usize = 64;

/// Passing nodes up to this many in a row are pushed one by one rather than copied.
const SHORT_STRETCH: usize = 8;

/// One node's outcome in the filter pass.
pub(super) enum Outcome {
    /// The node passes, its node-local filters' verdict taken from the memo (and the filters
    /// that are not node-local, if any, passing now): nothing else to note.
    Passed,
    /// A status computed now.
    Ran(Status, Verdict),
    /// A failure taken from the memo: its id there.
    ReusedFailure(StatusId),
}

/// How a node's filter verdict came about, for the node-local memo.
pub(super) enum Verdict {
    /// Taken from the memo (with filters that are not node-local, those ran).
    Reused,
    /// Computed by the filters alone, the node's status being the node-local filters'
    /// verdict: the memo may keep it.
    Computed,
    /// A filter that is not node-local decided the node's status: the node-local filters'
    /// verdict besides, which the memo may keep.
    Local(LocalVerdict),
    /// Computed with the node's nominated pods (the first pass's failure, or the framework's
    /// two passes on copies): not the node's own verdict, not for the memo.
    WithNominatedPods,
}

/// A node-local filter verdict for the memo to keep.
pub(super) enum Keep {
    Passed,
    /// Failed with the node's status in the diagnosis, of this id there.
    AsNode(StatusId),
    /// Failed with this status (the node's is that of a filter that is not node-local).
    Failed(Status),
}

/// A run of up to [`RUN`] nodes checked at once, the `o`th being bit `o` of each word.
struct Run {
    len: usize,
    /// The nodes whose node-local filters the memo knows to pass (without nominated pods).
    known: u64,
    /// Those of them that no filter that is not node-local rejects: they pass.
    passed: u64,
    /// The status of every other known node, when one filter that is not node-local runs
    /// and gives every node it rejects the same status.
    constant: Option<Status>,
}

impl Run {
    /// The nodes whose outcome the run's bits do not give (bit `o` for the run's `o`th).
    fn rest(&self) -> u64 {
        let given = match self.constant {
            Some(_) => self.known,
            None => self.passed,
        };
        !given & (u64::MAX >> (RUN - self.len))
    }
}

/// What checking a node reads.
pub(super) struct FilterPass<'a> {
    pub fwk: &'a Framework,
    pub state: &'a CycleState,
    pub pod: &'a PodInfo,
    pub filters: &'a FilterRun<'a>,
    /// The filters that are not node-local, in order (those of `filters` the memo cannot
    /// spare), asked for a run of nodes at once where the memo knows the others pass.
    pub others: &'a [NamedFilter<'a>],
    /// Whether the memo is used at all, and whether its verdict is the node's whole verdict
    /// (every filter that runs is node-local).
    pub memoize: bool,
    pub reuse: bool,
    pub memo: &'a NodeLocalMemo,
    pub snapshot: &'a Snapshot,
    pub queue: &'a SchedulingQueue,
    pub nominated: &'a NominatedPlaces<'a>,
    /// The first of the two passes on a node with nominated pods (see `nominated_filter`).
    pub first_pass: &'a FirstPass<'a>,
    pub candidates: &'a [usize],
    /// The rotating start among the candidates.
    pub start: usize,
}

impl FilterPass<'_> {
    /// The place of the `j`th node checked in this cycle.
    #[inline]
    fn place(&self, j: usize) -> usize {
        let n = self.candidates.len();
        let k = self.start + j;
        self.candidates[if k >= n { k - n } else { k }]
    }

    /// A node with nominated pods: the first pass with them, then the node's own verdict
    /// (see `nominated_filter`).
    fn with_nominated(&self, place: usize, node: &Arc<NodeInfo>) -> Outcome {
        let pods = self.queue.nominated_pods_for_node(&node.name);
        match self.first_pass.status(self.state, self.pod, node, &pods) {
            Some(s) if s.is_success() => self.known_or_run(place, node),
            Some(s) => Outcome::Ran(s, Verdict::WithNominatedPods),
            None => Outcome::Ran(
                self.fwk
                    .run_filter_plugins_with_nominated_pods(self.state, self.pod, node, &pods),
                Verdict::WithNominatedPods,
            ),
        }
    }

    /// The outcome of the `j`th node checked.
    fn check(&self, j: usize) -> Outcome {
        let place = self.place(j);
        let node = &self.snapshot.node_infos[place];
        if self.nominated.has(place) {
            self.with_nominated(place, node)
        } else {
            self.known_or_run(place, node)
        }
    }

    /// The verdict of the memo, or of the filters, on the node at `place`.
    fn known_or_run(&self, place: usize, node: &Arc<NodeInfo>) -> Outcome {
        let (filters, state, pod) = (self.filters, self.state, self.pod);
        let known = match self.memoize {
            true => self.memo.verdict(place, node),
            false => FilterVerdict::Unknown,
        };
        match known {
            FilterVerdict::Passed if self.reuse => Outcome::Passed,
            FilterVerdict::Failed(m) if self.reuse => Outcome::ReusedFailure(m),
            // Filters that are not node-local run too: only they, as far as they decide.
            FilterVerdict::Passed => match filters.others_failure(state, pod, node) {
                None => Outcome::Passed,
                Some(status) => Outcome::Ran(status, Verdict::Reused),
            },
            FilterVerdict::Failed(m) => {
                match filters.before_local_failure(self.memo.failure(m), state, pod, node) {
                    None => Outcome::ReusedFailure(m),
                    Some(status) => Outcome::Ran(status, Verdict::Reused),
                }
            }
            FilterVerdict::Unknown if self.memoize && !self.reuse => {
                match filters.noting_local(state, pod, node) {
                    (status, LocalVerdict::AsNode) => Outcome::Ran(status, Verdict::Computed),
                    (status, local) => Outcome::Ran(status, Verdict::Local(local)),
                }
            }
            FilterVerdict::Unknown => {
                Outcome::Ran(filters.full(state, pod, node), Verdict::Computed)
            }
        }
    }

    /// A window of nodes when filters that are not node-local run (or the memo is off):
    /// every node is checked, in parallel when the window is large, and taken in order.
    pub fn window(
        &self,
        range: Range<usize>,
        to_find: usize,
        taken: &mut Taken<'_>,
        feasible: &mut Vec<usize>,
    ) -> Result<(), ScheduleError> {
        if use_parallel(range.len()) && self.memoize {
            self.parallel_runs(range, to_find, taken, feasible)?;
        } else if use_parallel(range.len()) {
            let first = range.start;
            let outcomes: Vec<Outcome> = range
                .into_par_iter()
                .with_min_len(PARALLEL_CHUNK_NODES)
                .map(|j| self.check(j))
                .collect();
            for (offset, outcome) in outcomes.into_iter().enumerate() {
                if taken.take(self.place(first + offset), outcome, feasible)? >= to_find {
                    break;
                }
            }
        } else if self.memoize {
            self.runs(range, to_find, taken, feasible)?;
        } else {
            for j in range {
                let found = match self.check(j) {
                    Outcome::Passed => taken.passed(self.place(j), feasible),
                    outcome => taken.take(self.place(j), outcome, feasible)?,
                };
                if found >= to_find {
                    break;
                }
            }
        }
        Ok(())
    }

    /// [`Self::window`] on one thread with the memo: the nodes taken in runs of up to 64,
    /// never more than can still be taken (each adds at most one feasible node). The nodes of
    /// a run whose node-local filters the memo knows to pass (and without nominated pods) go
    /// to each filter that is not node-local at once
    /// ([`FilterPlugin::filter_failures`](crate::framework::FilterPlugin)): those none of them
    /// rejects pass; the others' statuses are the filter's constant when it has one, else
    /// built node by node as before, and so is every other node's outcome, all taken in node
    /// order.
    fn runs(
        &self,
        range: Range<usize>,
        to_find: usize,
        taken: &mut Taken<'_>,
        feasible: &mut Vec<usize>,
    ) -> Result<(), ScheduleError> {
        let mut j = range.start;
        while j < range.end {
            let len = (to_find - feasible.len()).min(RUN).min(range.end - j);
            let run = self.run(j, len);
            let known = run.known;
            let rest = |o: usize| self.rest(j + o, known >> o & 1 == 1);
            if self.take_run(j, run, rest, to_find, taken, feasible)? {
                break;
            }
            j += len;
        }
        Ok(())
    }

    /// [`Self::window`] on the thread pool with the memo: the window checked in runs of
    /// [`RUN`] nodes in parallel, each run's outcomes kept as bits (the nodes that pass, those
    /// with the run's constant failure) and a short vector of the others' outcomes in node
    /// order, then taken in node order exactly as [`Self::runs`] takes them.
    fn parallel_runs(
        &self,
        range: Range<usize>,
        to_find: usize,
        taken: &mut Taken<'_>,
        feasible: &mut Vec<usize>,
    ) -> Result<(), ScheduleError> {
        let (first, end) = (range.start, range.end);
        let checked: Vec<(Run, Vec<Outcome>)> = (0..range.len().div_ceil(RUN))
            .into_par_iter()
            .map(|c| {
                let j = first + c * RUN;
                let run = self.run(j, RUN.min(end - j));
                let mut rest = Vec::new();
                let mut bits = run.rest();
                while bits != 0 {
                    let o = bits.trailing_zeros() as usize;
                    rest.push(self.rest(j + o, run.known >> o & 1 == 1));
                    bits &= bits - 1;
                }
                (run, rest)
            })
            .collect();
        for (c, (run, rest)) in checked.into_iter().enumerate() {
            let mut rest = rest.into_iter();
            let next = |_| rest.next().expect("an outcome per node of the run's rest");
            if self.take_run(first + c * RUN, run, next, to_find, taken, feasible)? {
                break;
            }
        }
        Ok(())
    }

    /// The run of the `len` (at most [`RUN`]) nodes checked `j`th on: those whose node-local
    /// filters the memo knows to pass (and without nominated pods) given to the filters that
    /// are not node-local at once.
    fn run(&self, j: usize, len: usize) -> Run {
        let nodes = &self.snapshot.node_infos;
        let mut places = [0usize; RUN];
        let (mut known, mut count) = (0u64, 0);
        for o in 0..len {
            let p = self.place(j + o);
            if !self.nominated.has(p) && self.memo.verdict(p, &nodes[p]) == FilterVerdict::Passed {
                known |= 1 << o;
                places[count] = p;
                count += 1;
            }
        }
        let (failed, constant) = self.run_failures(&places[..count]);
        // Bit `k` of `failed` is the `k`th known node's: spread over the run's bits.
        let (mut passed, mut bits, mut k) = (0u64, known, 0);
        if failed == 0 {
            (passed, bits) = (known, 0);
        }
        while bits != 0 {
            if failed >> k & 1 == 0 {
                passed |= bits & bits.wrapping_neg();
            }
            bits &= bits - 1;
            k += 1;
        }
        Run {
            len,
            known,
            passed,
            constant,
        }
    }

    /// The outcome of the `j`th node checked when a run does not give it: `known` when the
    /// memo knows its node-local filters pass (a filter that is not node-local rejected it).
    fn rest(&self, j: usize, known: bool) -> Outcome {
        if !known {
            return self.check(j);
        }
        let node = &self.snapshot.node_infos[self.place(j)];
        match self.filters.others_failure(self.state, self.pod, node) {
            None => Outcome::Passed,
            Some(status) => Outcome::Ran(status, Verdict::Reused),
        }
    }

    /// Takes the run of nodes checked from the `j`th on, in node order, the outcomes it does
    /// not give from `rest` (called with the node's offset in the run, in order): whether
    /// enough feasible nodes are found. Each stretch of passing nodes is taken at once; the
    /// run's constant failure is interned where its first node is taken (so the diagnosis's
    /// distinct statuses keep their order), and every further node with it is a slot write.
    #[inline(always)]
    fn take_run(
        &self,
        j: usize,
        run: Run,
        mut rest: impl FnMut(usize) -> Outcome,
        to_find: usize,
        taken: &mut Taken<'_>,
        feasible: &mut Vec<usize>,
    ) -> Result<bool, ScheduleError> {
        let constant_bits = match run.constant {
            Some(_) => run.known & !run.passed,
            None => 0,
        };
        let mut constant = run.constant.map(Err::<StatusId, Status>);
        let mut o = 0;
        while o < run.len {
            if run.passed >> o & 1 == 1 {
                let stretch = ((!(run.passed >> o)).trailing_zeros() as usize).min(run.len - o);
                if self.take_passed(j + o, stretch, to_find, taken, feasible) {
                    return Ok(true);
                }
                o += stretch;
                continue;
            }
            let idx = self.place(j + o);
            if constant_bits >> o & 1 == 1 {
                let id = match constant.take() {
                    Some(Ok(id)) => id,
                    Some(Err(status)) => taken.intern(status),
                    None => unreachable!("a constant failure while its bits are set"),
                };
                constant = Some(Ok(id));
                taken.failed(idx, id);
            } else if taken.take(idx, rest(o), feasible)? >= to_find {
                return Ok(true);
            }
            o += 1;
        }
        Ok(false)
    }

    /// Takes the `n` nodes checked from the `j`th on, which pass (as [`Taken::passed`] each,
    /// up to the last one needed): whether enough feasible nodes are found.
    #[inline]
    fn take_passed(
        &self,
        j: usize,
        n: usize,
        to_find: usize,
        taken: &mut Taken<'_>,
        feasible: &mut Vec<usize>,
    ) -> bool {
        let n = n.min(to_find - feasible.len());
        let all = self.candidates.len();
        let k = self.start + j;
        let a = if k >= all { k - all } else { k };
        // The candidates from `a` on, wrapping around to the first ones.
        let first = n.min(all - a);
        taken.passed_many(&self.candidates[a..a + first], feasible);
        taken.passed_many(&self.candidates[..n - first], feasible);
        feasible.len() >= to_find
    }

    /// The nodes `places` (at most [`RUN`]) whose node-local filters are known to pass, given
    /// to the filters that are not node-local at once: bit `k` set when `places[k]` fails one
    /// of them; and, when one such filter alone runs and gives every node it rejects the same
    /// status, that status (plugin set).
    fn run_failures(&self, places: &[usize]) -> (u64, Option<Status>) {
        let nodes = &self.snapshot.node_infos;
        let mut failed = [0u64];
        if places.is_empty() {
            return (0, None);
        }
        match self.others {
            &[(name, f)] => {
                let constant = f
                    .filter_failures(self.state, self.pod, nodes, places, &mut failed)
                    .filter(Status::is_rejected)
                    .map(|s| s.of_filter(name));
                (failed[0], constant)
            }
            others => {
                for (_, f) in others {
                    f.filter_failures(self.state, self.pod, nodes, places, &mut failed);
                }
                (failed[0], None)
            }
        }
    }

    /// A window of nodes when every filter is node-local. When the window is large enough for
    /// the thread pool, the memo's verdicts are read for the whole window first into a word per
    /// run of up to [`RUN`] nodes (bit `o` for a node that passes and has no nominated pods),
    /// and the nodes the memo does not know (the first pod of a spec, or after the node list
    /// changed) are filtered there, if there are enough of them; then each stretch of passing
    /// nodes is taken at once, and every other node node by node ([`Self::quick_check`]).
    /// Otherwise (one thread, a small window, or a memo that knows all but too few nodes to
    /// filter on the pool: a full cluster's preemptors) the nodes are checked one by one, each
    /// verdict read once ([`Self::quick_nodes`]); the outcome is the same either way.
    pub fn quick_window(
        &self,
        range: Range<usize>,
        to_find: usize,
        taken: &mut Taken<'_>,
        feasible: &mut Vec<usize>,
    ) -> Result<(), ScheduleError> {
        if !use_parallel(range.len()) || !use_parallel(self.memo.unknown_count()) {
            return self.quick_nodes(range, to_find, taken, feasible);
        }
        let (words, computed) = self.known_in_parallel(range.clone());
        let mut computed = computed.into_iter().peekable();
        let (mut j, mut w) = (range.start, 0);
        while j < range.end {
            let len = RUN.min(range.end - j);
            let passed = words[w];
            w += 1;
            let mut o = 0;
            while o < len {
                if passed >> o & 1 == 1 {
                    let stretch = ((!(passed >> o)).trailing_zeros() as usize).min(len - o);
                    if self.take_passed(j + o, stretch, to_find, taken, feasible) {
                        return Ok(());
                    }
                    o += stretch;
                    continue;
                }
                let outcome = match computed.next_if(|(c, _)| *c == j + o) {
                    Some((_, status)) => Outcome::Ran(status, Verdict::Computed),
                    None => self.quick_check(j + o),
                };
                if taken.take(self.place(j + o), outcome, feasible)? >= to_find {
                    return Ok(());
                }
                o += 1;
            }
            j += len;
        }
        Ok(())
    }

    /// The outcome of the `j`th node checked when every filter is node-local and the memo
    /// does not know it to pass (or it has nominated pods).
    fn quick_check(&self, j: usize) -> Outcome {
        let idx = self.place(j);
        let node = &self.snapshot.node_infos[idx];
        let verdict = self.memo.verdict(idx, node);
        if self.nominated.has(idx) {
            return self.quick_nominated(idx, node, verdict);
        }
        self.quick_own(node, verdict)
    }

    /// The outcome of a node without nominated pods (or whose nominated pods passed) when
    /// every filter is node-local: the memo's `verdict`, or the filters' when it is unknown.
    #[inline(always)]
    fn quick_own(&self, node: &NodeInfo, verdict: FilterVerdict) -> Outcome {
        match verdict {
            FilterVerdict::Passed => Outcome::Passed,
            FilterVerdict::Failed(m) => Outcome::ReusedFailure(m),
            FilterVerdict::Unknown => Outcome::Ran(
                self.filters.full(self.state, self.pod, node),
                Verdict::Computed,
            ),
        }
    }

    /// A node with nominated pods (at `place`, its pods as marked there) when every filter is
    /// node-local ([`Self::with_nominated`] with the memo's `verdict` on the node, which is
    /// then the node's own): the first pass need not run the pod-independent filters that come
    /// before the one that failed the node (every one when it passed), as they pass with the
    /// nominated pods too.
    fn quick_nominated(&self, place: usize, node: &NodeInfo, verdict: FilterVerdict) -> Outcome {
        let pods = self.nominated.pods(place).iter();
        let own = match verdict {
            FilterVerdict::Passed => Own::Passed,
            FilterVerdict::Failed(m) => Own::Failed(self.memo.failure(m)),
            FilterVerdict::Unknown => Own::Unknown,
        };
        match (self.first_pass).status_knowing(self.state, self.pod, node, pods.clone(), own) {
            Some(s) if s.is_success() => self.quick_own(node, verdict),
            Some(s) => Outcome::Ran(s, Verdict::WithNominatedPods),
            None => {
                let pods: Vec<Arc<PodInfo>> = pods.cloned().collect();
                let fwk = self.fwk;
                let s =
                    fwk.run_filter_plugins_with_nominated_pods(self.state, self.pod, node, &pods);
                Outcome::Ran(s, Verdict::WithNominatedPods)
            }
        }
    }

    /// The nodes of `range` checked one by one when every filter is node-local (one thread, or
    /// a window too small for the pool): the memo's verdict on each node is read once (on a
    /// full cluster nearly every node fails, from the memo), and a stretch of passing nodes
    /// without nominated pods is taken at once where a node that does not pass ends it, or
    /// where it holds enough nodes.
    fn quick_nodes(
        &self,
        range: Range<usize>,
        to_find: usize,
        taken: &mut Taken<'_>,
        feasible: &mut Vec<usize>,
    ) -> Result<(), ScheduleError> {
        // The stretch of passing nodes not taken yet starts at the `from`th node checked; it
        // ends the search once it holds `room` nodes.
        let mut from = range.start;
        let mut room = to_find - feasible.len();
        for j in range.clone() {
            let idx = self.place(j);
            let node = &self.snapshot.node_infos[idx];
            let verdict = self.memo.verdict(idx, node);
            let outcome = if self.nominated.has(idx) {
                self.quick_nominated(idx, node, verdict)
            } else {
                match verdict {
                    FilterVerdict::Passed if j - from + 1 < room => continue,
                    FilterVerdict::Passed => {
                        self.take_passed(from, room, to_find, taken, feasible);
                        return Ok(());
                    }
                    verdict => self.quick_own(node, verdict),
                }
            };
            // The stretch before this node holds fewer than `room` nodes: it cannot end the
            // search.
            if j > from {
                self.take_passed(from, j - from, to_find, taken, feasible);
            }
            if taken.take(idx, outcome, feasible)? >= to_find {
                return Ok(());
            }
            from = j + 1;
            room = to_find - feasible.len();
        }
        self.take_passed(from, range.end - from, to_find, taken, feasible);
        Ok(())
    }

    /// When the window is large enough for the thread pool: its words (a word per run of
    /// [`RUN`] nodes, bit `o` for a node that passes and has no nominated pods), and the statuses
    /// of the nodes the memo does not know, computed on the pool when they are many enough
    /// (else none). Both empty for a smaller window.
    fn known_in_parallel(&self, range: Range<usize>) -> (Vec<u64>, Vec<(usize, Status)>) {
        let mut computed: Vec<(usize, Status)> = Vec::new();
        if !use_parallel(range.len()) {
            return (Vec::new(), computed);
        }
        let mut words = vec![0u64; range.len().div_ceil(RUN)];
        let mut unknown: Vec<usize> = Vec::new();
        for (i, j) in range.enumerate() {
            let p = self.place(j);
            if self.nominated.has(p) {
                continue;
            }
            match self.memo.verdict(p, &self.snapshot.node_infos[p]) {
                FilterVerdict::Passed => words[i / RUN] |= 1 << (i % RUN),
                FilterVerdict::Unknown => unknown.push(j),
                FilterVerdict::Failed(_) => {}
            }
        }
        if use_parallel(unknown.len()) {
            unknown
                .par_iter()
                .with_min_len(PARALLEL_CHUNK_NODES)
                .map(|&j| {
                    let node = &self.snapshot.node_infos[self.place(j)];
                    (j, self.filters.full(self.state, self.pod, node))
                })
                .collect_into_vec(&mut computed);
        }
        (words, computed)
    }
}

/// What taking the nodes' outcomes in order writes.
pub(super) struct Taken<'a> {
    memo: &'a NodeLocalMemo,
    statuses: &'a mut NodeToStatus,
    memoize: bool,
    /// How many nodes were taken; how many of them had their verdict from the memo.
    pub processed: usize,
    pub reused: u64,
    /// The places whose node-local verdict to keep.
    pub verdicts: Vec<(usize, Keep)>,
    /// Per failure the memo keeps: its id in the diagnosis, once it was used.
    from_memo: Vec<Option<StatusId>>,
}

impl<'a> Taken<'a> {
    /// For the filter pass `pass`, the failing nodes' statuses going to `statuses`.
    pub fn new(pass: &FilterPass<'a>, statuses: &'a mut NodeToStatus) -> Self {
        let memo = pass.memo;
        statuses.size_for(pass.snapshot.num_nodes());
        Taken {
            memo,
            statuses,
            memoize: pass.memoize,
            processed: 0,
            reused: 0,
            verdicts: Vec::new(),
            from_memo: vec![None; memo.failure_count()],
        }
    }

    /// Takes a node that passes with its node-local verdict from the memo ([`Outcome::Passed`]
    /// without moving an outcome): how many feasible nodes are found now.
    #[inline(always)]
    pub fn passed(&mut self, idx: usize, feasible: &mut Vec<usize>) -> usize {
        self.processed += 1;
        self.reused += 1;
        feasible.push(idx);
        feasible.len()
    }

    /// Takes nodes that pass as [`Self::passed`] does, `places` in node order (a few one by
    /// one: a copy of a short slice costs more than the pushes).
    #[inline(always)]
    pub fn passed_many(&mut self, places: &[usize], feasible: &mut Vec<usize>) {
        self.processed += places.len();
        self.reused += places.len() as u64;
        if places.len() <= SHORT_STRETCH {
            places.iter().for_each(|&p| feasible.push(p));
        } else {
            feasible.extend_from_slice(places);
        }
    }

    /// The id of a failing status in the diagnosis (interned now if new).
    pub fn intern(&mut self, status: Status) -> StatusId {
        self.statuses.intern(status)
    }

    /// Takes a node whose node-local filters the memo knows to pass and that a filter that is
    /// not node-local rejects with the status `id` (as [`Outcome::Ran`] with
    /// [`Verdict::Reused`] would).
    #[inline(always)]
    pub fn failed(&mut self, idx: usize, id: StatusId) {
        self.processed += 1;
        self.reused += 1;
        self.statuses.set(idx, id);
    }

    /// Takes the outcome of the node at `idx`, in node order: how many feasible nodes are
    /// found now. An error ends the search.
    #[inline(always)]
    pub fn take(
        &mut self,
        idx: usize,
        outcome: Outcome,
        feasible: &mut Vec<usize>,
    ) -> Result<usize, ScheduleError> {
        match outcome {
            Outcome::Passed => return Ok(self.passed(idx, feasible)),
            Outcome::ReusedFailure(m) => {
                self.processed += 1;
                self.reused += 1;
                let (memo, statuses) = (self.memo, &mut *self.statuses);
                let id = *self.from_memo[m as usize]
                    .get_or_insert_with(|| statuses.intern(memo.failure(m).clone()));
                self.statuses.set(idx, id);
            }
            Outcome::Ran(status, verdict) => {
                self.processed += 1;
                self.ran(idx, status, verdict, feasible)?;
            }
        }
        Ok(feasible.len())
    }

    /// A status computed now.
    #[inline(never)]
    fn ran(
        &mut self,
        idx: usize,
        status: Status,
        verdict: Verdict,
        feasible: &mut Vec<usize>,
    ) -> Result<(), ScheduleError> {
        if status.code == Code::Error {
            return Err(ScheduleError::Internal(status));
        }
        let failed = if status.is_success() {
            feasible.push(idx);
            None
        } else {
            let id = self.statuses.intern(status);
            self.statuses.set(idx, id);
            Some(id)
        };
        match verdict {
            Verdict::Reused => self.reused += 1,
            Verdict::Computed if self.memoize => self
                .verdicts
                .push((idx, failed.map_or(Keep::Passed, Keep::AsNode))),
            Verdict::Local(LocalVerdict::Passed) => self.verdicts.push((idx, Keep::Passed)),
            Verdict::Local(LocalVerdict::Failed(s)) => self.verdicts.push((idx, Keep::Failed(s))),
            _ => {}
        }
        Ok(())
    }
}

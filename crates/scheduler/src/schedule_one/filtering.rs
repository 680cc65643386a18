//! SchedulePod's filter half (upstream `findNodesThatFitPod` and `findNodesThatPassFilters`
//! in `schedule_one.go`): PreFilter, the nominated node, then Filter over the nodes from the
//! rotating start, node-local verdicts kept and reused through the memo (`node_local.rs`),
//! until enough feasible nodes are found.

use std::sync::Arc;

use rayon::prelude::*;

use super::{Diagnosis, ScheduleError};
use crate::attempt_record::AttemptTrace;
use crate::framework::runtime::{use_parallel, PARALLEL_CHUNK_NODES};
use crate::framework::{Code, CycleState, Framework, NodeInfo, PodInfo, Status, StatusId};
use crate::node_local::{FilterRun, FilterVerdict, LocalVerdict};
use crate::scheduler::Scheduler;

use super::nominated_filter::FirstPass;
use super::nominated_places::NominatedPlaces;

/// Upstream `minFeasibleNodesToFind`.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream `minFeasibleNodesPercentageToFind`.
const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

/// One node's outcome in the filter pass.
enum Outcome {
    /// A status computed now, or a success taken from the memo.
    Ran(Status, Verdict),
    /// A failure taken from the memo: its id there.
    ReusedFailure(StatusId),
}

/// How a node's filter verdict came about, for the node-local memo.
enum Verdict {
    /// Taken from the memo (with filters that are not node-local, those ran).
    Reused,
    /// Computed by the filters alone, the node's status being the node-local filters'
    /// verdict: the memo may keep it.
    Computed,
    /// A filter that is not node-local decided the node's status: the node-local filters'
    /// verdict besides, which the memo may keep.
    Local(LocalVerdict),
    /// The first pass with the node's nominated pods failed: not the node's own verdict.
    WithNominatedPods,
}

/// A node-local filter verdict for the memo to keep.
enum Keep {
    Passed,
    /// Failed with the node's status in the diagnosis, of this id there.
    AsNode(StatusId),
    /// Failed with this status (the node's is that of a filter that is not node-local).
    Failed(Status),
}

/// Upstream `numFeasibleNodesToFind`.
pub fn num_feasible_nodes_to_find(percentage: i32, num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_all_nodes;
    }
    let n = num_all_nodes as i64;
    let mut p = percentage as i64;
    if p == 0 {
        p = 50 - n / 125;
        if p < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND {
            p = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND;
        }
    }
    let found = (n * p / 100) as usize;
    found.max(MIN_FEASIBLE_NODES_TO_FIND)
}

impl Scheduler {
    /// Returns indexes into the snapshot's node list of the feasible nodes.
    pub(super) fn find_nodes_that_fit_pod(
        &mut self,
        fwk: &Framework,
        state: &mut CycleState,
        pod: &PodInfo,
        _trace: Option<&mut AttemptTrace>,
    ) -> Result<(Vec<usize>, Diagnosis), ScheduleError> {
        let mut diagnosis = Diagnosis::default();
        let pre = fwk.run_pre_filter_plugins(state, pod, &self.snapshot);
        if !pre.status.is_success() {
            if !pre.status.is_rejected() {
                return Err(ScheduleError::Internal(pre.status));
            }
            diagnosis.pre_filter_msg = pre.status.message();
            if !pre.status.plugin.is_empty() {
                diagnosis.unschedulable_plugins.insert(pre.status.plugin);
            }
            diagnosis.absent_status = Some(pre.status);
            return Ok((Vec::new(), diagnosis));
        }
        // The nominated node, if it still fits, is the only candidate.
        if let Some(nominated) = pod.nominated_node_name() {
            if let Some(&i) = self.snapshot.index.get(nominated) {
                let node = self.snapshot.node_infos[i].clone();
                let nominated_pods = self.queue.nominated_pods_for_node(&node.name);
                let s =
                    fwk.run_filter_plugins_with_nominated_pods(state, pod, &node, &nominated_pods);
                if s.is_success() {
                    return Ok((vec![i], diagnosis));
                }
                if matches!(s.code, Code::Error) {
                    return Err(ScheduleError::Internal(s));
                }
            }
        }
        let all = self.snapshot.num_nodes();
        let restricted = pre.result.as_ref().and_then(|r| r.node_names.as_ref());
        let every = restricted.is_none();
        let candidates: Vec<usize> = match restricted {
            Some(names) => {
                let names_list: Vec<&str> = pre.restricting_plugins.iter().copied().collect();
                diagnosis.absent_status = Some(Status::unresolvable(format!(
                    "node(s) didn't satisfy plugin(s) [{}]",
                    names_list.join(" ")
                )));
                let mut idx: Vec<usize> = names
                    .iter()
                    .filter_map(|n| self.snapshot.index.get(n).copied())
                    .collect();
                idx.sort_unstable();
                idx
            }
            None => {
                // Every place: the list is kept between cycles.
                let mut every = std::mem::take(&mut self.every_place);
                if every.len() != all {
                    every.clear();
                    every.extend(0..all);
                }
                every
            }
        };
        let feasible =
            self.find_nodes_that_pass_filters(fwk, state, pod, &candidates, &mut diagnosis);
        if every {
            self.every_place = candidates;
        }
        Ok((feasible?, diagnosis))
    }

    fn find_nodes_that_pass_filters(
        &mut self,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        candidates: &[usize],
        diagnosis: &mut Diagnosis,
    ) -> Result<Vec<usize>, ScheduleError> {
        let n = candidates.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let percentage = fwk
            .percentage_of_nodes_to_score
            .unwrap_or(self.percentage_of_nodes_to_score);
        let mut to_find = num_feasible_nodes_to_find(percentage, n);
        if !fwk.has_score_plugins() {
            to_find = 1;
        }
        let start = self.next_start_node_index % n;
        let mut feasible = Vec::with_capacity(to_find.min(n));
        let mut processed = 0;
        let filters = FilterRun::new(fwk.active_filters(state));
        // A kept verdict is the node's whole verdict when every filter that runs is
        // node-local; otherwise it spares the node-local filters (see `node_local`).
        let memoize = self.reuse_node_local;
        let reuse = memoize && filters.all_local();
        let memo = &self.node_local;
        // The places whose node-local verdict to keep; how many verdicts were reused.
        let mut verdicts: Vec<(usize, Keep)> = Vec::new();
        let mut reused = 0;
        // Per failure the memo keeps: its id in the diagnosis, once it was used.
        let mut from_memo: Vec<Option<StatusId>> = vec![None; memo.failure_count()];
        // The places of the nodes with nominated pods, marked once per cycle: usually few nodes
        // have any, and the others take the plain filter path. A marked node's nominated pods
        // are resolved when it is checked (each node is checked at most once per cycle).
        let nominated = NominatedPlaces::mark(&self.snapshot, self.queue.nominated_node_names());
        let queue = &self.queue;
        let snapshot = &self.snapshot;
        // The verdict of the memo, or of the filters, on the node at `place`.
        let known_or_run = |place: usize, node: &Arc<NodeInfo>| {
            let known = match memoize {
                true => memo.verdict(place, node),
                false => FilterVerdict::Unknown,
            };
            match known {
                FilterVerdict::Passed if reuse => Outcome::Ran(Status::success(), Verdict::Reused),
                FilterVerdict::Failed(m) if reuse => Outcome::ReusedFailure(m),
                // Filters that are not node-local run too: only they, as far as they decide.
                FilterVerdict::Passed => {
                    Outcome::Ran(filters.others_only(state, pod, node), Verdict::Reused)
                }
                FilterVerdict::Failed(m) => {
                    match filters.before_local_failure(memo.failure(m), state, pod, node) {
                        None => Outcome::ReusedFailure(m),
                        Some(status) => Outcome::Ran(status, Verdict::Reused),
                    }
                }
                FilterVerdict::Unknown if memoize && !reuse => {
                    match filters.noting_local(state, pod, node) {
                        (status, LocalVerdict::AsNode) => Outcome::Ran(status, Verdict::Computed),
                        (status, local) => Outcome::Ran(status, Verdict::Local(local)),
                    }
                }
                FilterVerdict::Unknown => {
                    Outcome::Ran(filters.full(state, pod, node), Verdict::Computed)
                }
            }
        };
        // A node with nominated pods: the first pass with them, then the node's own verdict
        // (see `nominated_filter`).
        let first_pass = match nominated.is_empty() {
            true => FirstPass::default(),
            false => FirstPass::new(fwk, state, &filters.all),
        };
        let with_nominated = |place: usize, node: &Arc<NodeInfo>| {
            let pods = queue.nominated_pods_for_node(&node.name);
            match first_pass.status(state, pod, node, &pods) {
                Some(s) if s.is_success() => known_or_run(place, node),
                Some(s) => Outcome::Ran(s, Verdict::WithNominatedPods),
                None => Outcome::Ran(
                    fwk.run_filter_plugins_with_nominated_pods(state, pod, node, &pods),
                    Verdict::WithNominatedPods,
                ),
            }
        };
        // The place of the `j`th node checked in this cycle.
        let place = |j: usize| {
            let k = start + j;
            candidates[if k >= n { k - n } else { k }]
        };
        let check = |j: usize| {
            let place = place(j);
            let node = &snapshot.node_infos[place];
            if nominated.has(place) {
                with_nominated(place, node)
            } else {
                known_or_run(place, node)
            }
        };
        let statuses = &mut diagnosis.node_to_status;
        // Takes one node's result, in node order: how many feasible nodes are found now. An
        // error ends the search.
        let mut take = |idx: usize,
                        outcome: Outcome,
                        feasible: &mut Vec<usize>|
         -> Result<usize, ScheduleError> {
            processed += 1;
            let (status, verdict) = match outcome {
                Outcome::Ran(status, verdict) => (status, verdict),
                Outcome::ReusedFailure(m) => {
                    reused += 1;
                    let id = *from_memo[m as usize]
                        .get_or_insert_with(|| statuses.intern(memo.failure(m).clone()));
                    statuses.set(idx, id);
                    return Ok(feasible.len());
                }
            };
            if status.code == Code::Error {
                return Err(ScheduleError::Internal(status));
            }
            let failed = if status.is_success() {
                feasible.push(idx);
                None
            } else {
                let id = statuses.intern(status);
                statuses.set(idx, id);
                Some(id)
            };
            match verdict {
                Verdict::Reused => reused += 1,
                Verdict::Computed if memoize => {
                    verdicts.push((idx, failed.map_or(Keep::Passed, Keep::AsNode)))
                }
                Verdict::Local(LocalVerdict::Passed) => verdicts.push((idx, Keep::Passed)),
                Verdict::Local(LocalVerdict::Failed(s)) => verdicts.push((idx, Keep::Failed(s))),
                _ => {}
            }
            Ok(feasible.len())
        };
        // A reused success needs no status: it is counted at once.
        let quick = reuse;
        let any_nominated = !nominated.is_empty();
        let mut quick_passed: usize = 0;
        let mut i = 0;
        while i < n && feasible.len() < to_find {
            // Check a window of nodes (in parallel when it is large), then take the results in
            // node order exactly as a one-by-one scan would: the outcome does not depend on
            // the number of threads. Small windows are checked and taken node by node.
            let window = (to_find - feasible.len())
                .max(PARALLEL_CHUNK_NODES)
                .min(n - i);
            if quick {
                // The memo is asked once per node. When the window is large enough for the
                // thread pool, the nodes the memo does not know (the first pod of a spec, or
                // after the node list changed) are filtered there first, if there are enough
                // of them; a one-thread run never looks ahead.
                let mut computed: Vec<(usize, Status)> = Vec::new();
                if use_parallel(window) {
                    let unknown: Vec<usize> = (i..i + window)
                        .filter(|&j| {
                            let p = place(j);
                            !nominated.has(p)
                                && memo.verdict(p, &snapshot.node_infos[p])
                                    == FilterVerdict::Unknown
                        })
                        .collect();
                    if use_parallel(unknown.len()) {
                        unknown
                            .par_iter()
                            .with_min_len(PARALLEL_CHUNK_NODES)
                            .map(|&j| {
                                let node = &snapshot.node_infos[place(j)];
                                (j, filters.full(state, pod, node))
                            })
                            .collect_into_vec(&mut computed);
                    }
                }
                let mut computed = computed.into_iter();
                let mut next = computed.next();
                for j in i..i + window {
                    let idx = place(j);
                    let outcome = match next.take_if(|(c, _)| *c == j) {
                        Some((_, status)) => {
                            next = computed.next();
                            Outcome::Ran(status, Verdict::Computed)
                        }
                        None if any_nominated && nominated.has(idx) => {
                            with_nominated(idx, &snapshot.node_infos[idx])
                        }
                        // `quick` implies `reuse`: the memo's verdict is the node's.
                        None => {
                            let node = &snapshot.node_infos[idx];
                            match memo.verdict(idx, node) {
                                FilterVerdict::Passed => {
                                    feasible.push(idx);
                                    quick_passed += 1;
                                    if feasible.len() >= to_find {
                                        break;
                                    }
                                    continue;
                                }
                                FilterVerdict::Failed(m) => Outcome::ReusedFailure(m),
                                FilterVerdict::Unknown => {
                                    Outcome::Ran(filters.full(state, pod, node), Verdict::Computed)
                                }
                            }
                        }
                    };
                    if take(idx, outcome, &mut feasible)? >= to_find {
                        break;
                    }
                }
            } else if use_parallel(window) {
                let outcomes: Vec<Outcome> = (i..i + window)
                    .into_par_iter()
                    .with_min_len(PARALLEL_CHUNK_NODES)
                    .map(check)
                    .collect();
                for (offset, outcome) in outcomes.into_iter().enumerate() {
                    if take(place(i + offset), outcome, &mut feasible)? >= to_find {
                        break;
                    }
                }
            } else {
                for j in i..i + window {
                    if take(place(j), check(j), &mut feasible)? >= to_find {
                        break;
                    }
                }
            }
            i += window;
        }
        // The plugins that rejected a node (a set: once per distinct status).
        for (s, _) in diagnosis.node_to_status.counted() {
            if s.code == Code::Pending {
                diagnosis.pending_plugins.insert(s.plugin);
            } else if !s.plugin.is_empty() {
                diagnosis.unschedulable_plugins.insert(s.plugin);
            }
        }
        let (processed, reused) = (processed + quick_passed, reused + quick_passed as u64);
        // Per failure of the diagnosis: its id in the memo, once kept.
        let mut to_memo: Vec<Option<StatusId>> =
            vec![None; diagnosis.node_to_status.distinct_len()];
        for (idx, keep) in verdicts {
            let node = &self.snapshot.node_infos[idx];
            let verdict = match keep {
                Keep::Passed => FilterVerdict::Passed,
                Keep::AsNode(id) => {
                    FilterVerdict::Failed(*to_memo[id as usize].get_or_insert_with(|| {
                        self.node_local
                            .intern_failure(diagnosis.node_to_status.status(id))
                    }))
                }
                Keep::Failed(s) => FilterVerdict::Failed(self.node_local.intern_failure(&s)),
            };
            self.node_local.record_filter(idx, node, verdict);
        }
        self.node_local.filters_reused += reused;
        let all = self.snapshot.num_nodes().max(1);
        self.next_start_node_index = (self.next_start_node_index + processed) % all;
        Ok(feasible)
    }
}

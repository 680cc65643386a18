//! SchedulePod's filter half (upstream `findNodesThatFitPod` and `findNodesThatPassFilters`
//! in `schedule_one.go`): PreFilter, the nominated node, then Filter over the nodes from the
//! rotating start, node-local verdicts kept and reused through the memo (`node_local.rs`),
//! until enough feasible nodes are found.

use super::filter_pass::{FilterPass, Keep, Taken};
use super::nominated_filter::FirstPass;
use super::nominated_places::NominatedPlaces;
use super::{Diagnosis, ScheduleError};
use crate::attempt_record::AttemptTrace;
use crate::framework::runtime::PARALLEL_CHUNK_NODES;
use crate::framework::{Code, CycleState, Framework, PodInfo, Status, StatusId};
use crate::node_local::{FilterRun, FilterVerdict, NamedFilter};
use crate::scheduler::Scheduler;

/// Upstream `minFeasibleNodesToFind`.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream `minFeasibleNodesPercentageToFind`.
const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

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
        let filters = FilterRun::new(fwk.active_filters(state));
        // The places of the nodes with nominated pods, marked once per cycle: usually few nodes
        // have any, and the others take the plain filter path. A marked node's nominated pods
        // are resolved when it is checked (each node is checked at most once per cycle).
        let nominated = NominatedPlaces::mark(&self.snapshot, self.queue.nominated_nodes());
        let memoize = self.reuse_node_local;
        let first_pass = match nominated.is_empty() {
            true => FirstPass::default(),
            false => FirstPass::new(fwk, state, &filters.all),
        };
        let pass = FilterPass {
            fwk,
            state,
            pod,
            // The memo's verdict is the node's when every filter is node-local (`node_local`).
            reuse: memoize && filters.all_local(),
            memoize,
            filters: &filters,
            others: &not_node_local(&filters),
            memo: &self.node_local,
            snapshot: &self.snapshot,
            queue: &self.queue,
            nominated: &nominated,
            first_pass: &first_pass,
            candidates,
            start: self.next_start_node_index % n,
        };
        let mut taken = Taken::new(&pass, &mut diagnosis.node_to_status);
        let mut feasible = Vec::with_capacity(to_find.min(n));
        let mut i = 0;
        while i < n && feasible.len() < to_find {
            // Check a window of nodes (in parallel when it is large), then take the results in
            // node order exactly as a one-by-one scan would: the outcome does not depend on
            // the number of threads. Small windows are checked and taken node by node.
            let window = (to_find - feasible.len())
                .max(PARALLEL_CHUNK_NODES)
                .min(n - i);
            let range = i..i + window;
            if pass.reuse {
                pass.quick_window(range, to_find, &mut taken, &mut feasible)?;
            } else {
                pass.window(range, to_find, &mut taken, &mut feasible)?;
            }
            i += window;
        }
        let (processed, reused, verdicts) = (taken.processed, taken.reused, taken.verdicts);
        self.finish_filter_pass(diagnosis, verdicts, reused);
        let all = self.snapshot.num_nodes().max(1);
        self.next_start_node_index = (self.next_start_node_index + processed) % all;
        Ok(feasible)
    }

    /// After the filter pass: the plugins that rejected a node, and the node-local verdicts
    /// for the memo to keep.
    fn finish_filter_pass(
        &mut self,
        diagnosis: &mut Diagnosis,
        verdicts: Vec<(usize, Keep)>,
        reused: u64,
    ) {
        // The plugins that rejected a node (a set: once per distinct status).
        for (s, _) in diagnosis.node_to_status.counted() {
            if s.code == Code::Pending {
                diagnosis.pending_plugins.insert(s.plugin);
            } else if !s.plugin.is_empty() {
                diagnosis.unschedulable_plugins.insert(s.plugin);
            }
        }
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
    }
}

/// The filters of `filters` that are not node-local, in order (asked for runs of nodes at
/// once by the filter pass).
fn not_node_local<'a>(filters: &FilterRun<'a>) -> Vec<NamedFilter<'a>> {
    filters
        .all
        .iter()
        .filter(|(_, f)| !f.node_local())
        .copied()
        .collect()
}

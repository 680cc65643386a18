//! One scheduling cycle (upstream `schedule_one.go`: `ScheduleOne`, `schedulingCycle`,
//! `SchedulePod`, filtering and scoring, `assume`). The binding cycle is in
//! `binding_cycle.rs`, the failure handler in `failure.rs`, the explain records in
//! `attempt_record.rs`. Scheduling takes no virtual time.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kubeplane_api::Client;
use kubeplane_core::{EventRecord, SimTime};
use rand::Rng;
use rayon::prelude::*;

use crate::attempt_record::{AttemptTrace, PreemptionRecord};
use crate::binding_cycle::BindingCycle;
use crate::framework::runtime::{use_parallel, PARALLEL_CHUNK_NODES};
use crate::framework::{
    run_filters, Code, CycleState, Framework, NodeInfo, NodeToStatus, NominatingMode, PodInfo,
    PostFilterInput, ScoreTable, Status, StatusId,
};
use crate::node_local::FilterVerdict;
use crate::scheduler::Scheduler;

/// Upstream `minFeasibleNodesToFind`.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream `minFeasibleNodesPercentageToFind`.
const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

pub const ERR_NO_NODES_AVAILABLE: &str = "no nodes available to schedule pods";

/// Why no node was chosen: per-node statuses and the plugins that rejected the pod.
#[derive(Clone, Debug, Default)]
pub struct Diagnosis {
    pub node_to_status: NodeToStatus,
    /// The status of nodes not in `node_to_status`.
    pub absent_status: Option<Status>,
    pub unschedulable_plugins: BTreeSet<&'static str>,
    pub pending_plugins: BTreeSet<&'static str>,
    pub pre_filter_msg: String,
    pub post_filter_msg: String,
}

/// A pod that fits no node (upstream `FitError`).
#[derive(Clone, Debug)]
pub struct FitError {
    pub num_all_nodes: usize,
    pub diagnosis: Diagnosis,
}

impl FitError {
    /// `0/N nodes are available: <reasons>.` with the reasons counted and sorted as upstream.
    pub fn message(&self) -> String {
        let d = &self.diagnosis;
        let mut msg = format!("0/{} nodes are available:", self.num_all_nodes);
        if !d.pre_filter_msg.is_empty() {
            msg.push(' ');
            msg.push_str(&d.pre_filter_msg);
            msg.push('.');
        } else {
            let mut histogram: BTreeMap<&str, usize> = BTreeMap::new();
            for (s, count) in d.node_to_status.counted() {
                for r in &s.reasons {
                    *histogram.entry(r.as_ref()).or_default() += count;
                }
            }
            let absent = self.num_all_nodes.saturating_sub(d.node_to_status.len());
            if absent > 0 {
                if let Some(s) = &d.absent_status {
                    for r in &s.reasons {
                        *histogram.entry(r.as_ref()).or_default() += absent;
                    }
                }
            }
            if !histogram.is_empty() {
                let mut parts: Vec<String> =
                    histogram.iter().map(|(r, c)| format!("{c} {r}")).collect();
                parts.sort();
                msg.push(' ');
                msg.push_str(&parts.join(", "));
                msg.push('.');
            }
        }
        if !d.post_filter_msg.is_empty() {
            msg.push(' ');
            msg.push_str(&d.post_filter_msg);
        }
        msg
    }
}

/// How a scheduling attempt failed.
pub enum ScheduleError {
    Fit(Box<FitError>),
    NoNodes,
    Internal(Status),
}

impl ScheduleError {
    pub fn message(&self) -> String {
        match self {
            ScheduleError::Fit(f) => f.message(),
            ScheduleError::NoNodes => ERR_NO_NODES_AVAILABLE.to_string(),
            ScheduleError::Internal(s) => s.message(),
        }
    }
}

/// How a scheduling cycle failed: the error, what becomes of the pod's nomination (upstream
/// `ScheduleResult.nominatingInfo`), and whether PostFilter ran (its asynchronous work follows
/// the failure handler).
pub(crate) struct CycleFailure {
    pub err: ScheduleError,
    pub nominating: NominatingMode,
    pub post_filter_ran: bool,
}

impl CycleFailure {
    /// A failure where upstream passes `clearNominatedNode`: `nominating` is the scheduler's
    /// [`Scheduler::failure_nominating`] (cleared, or kept in v1.34).
    fn clearing(err: ScheduleError, nominating: NominatingMode) -> CycleFailure {
        CycleFailure {
            err,
            nominating,
            post_filter_ran: false,
        }
    }
}

/// The result of SchedulePod.
pub struct ScheduleResult {
    pub suggested_host: String,
    pub evaluated_nodes: usize,
    pub feasible_nodes: usize,
}

/// One node's outcome in the filter pass.
enum Outcome {
    /// A status computed now, or a success taken from the memo.
    Ran(Status, Verdict),
    /// A failure taken from the memo: its id there.
    ReusedFailure(StatusId),
}

/// How a node's filter verdict came about, for the node-local memo.
#[derive(Clone, Copy)]
enum Verdict {
    /// Taken from the memo.
    Reused,
    /// Computed by the filters alone: the memo may keep it.
    Computed,
    /// Computed with the node's nominated pods: not the node's own verdict.
    WithNominatedPods,
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
    /// Pops one pod and runs its scheduling cycle, then its binding cycle or the failure
    /// handler (upstream `ScheduleOne`).
    pub(crate) fn schedule_one(&mut self, now: SimTime, client: &mut dyn Client) {
        let Some(qpi) = self.queue.pop(now) else {
            return;
        };
        let pod = qpi.pod_info.clone();
        let Some(fwk) = self.profiles.get(pod.scheduler_name()).cloned() else {
            self.queue.done(&pod.uid);
            return;
        };
        if self.skip_pod_schedule(now, client, &pod) {
            self.queue.done(&pod.uid);
            return;
        }
        let mut state = CycleState::new();
        let mut trace = client.explain().then(AttemptTrace::default);
        match self.scheduling_cycle(now, client, &fwk, &mut state, &pod, trace.as_mut()) {
            Ok((host, assumed)) => {
                self.emit_attempt_ok(now, client, &fwk, &qpi, &host, trace.take());
                let cycle = BindingCycle {
                    fwk,
                    state,
                    qpi,
                    assumed,
                    host,
                    bind_plugin: "",
                };
                // Upstream runs this in a goroutine; here it runs to its Bind call, which
                // completes now or, behind the dispatcher, when its result comes back.
                self.binding_cycle(now, client, cycle);
                self.settle_api_calls(now, client);
            }
            Err(failure) => {
                self.emit_attempt(now, client, &fwk, &qpi, &failure.err, None, trace.take());
                self.handle_scheduling_failure(now, client, qpi, failure.err, failure.nominating);
                self.settle_api_calls(now, client);
                if failure.post_filter_ran {
                    // What upstream's PostFilter goroutines do after the cycle (async
                    // preemption).
                    let activate = fwk.run_post_filter_async_work(now, client);
                    if !activate.is_empty() {
                        self.queue.activate(&activate, now);
                    }
                }
            }
        }
    }

    /// Upstream `skipPodSchedule`: a pod being deleted, or one already assumed.
    fn skip_pod_schedule(&self, now: SimTime, client: &mut dyn Client, pod: &PodInfo) -> bool {
        if pod.is_terminating() {
            client.record_event(EventRecord::warning(
                now,
                self.source,
                "Pod",
                &pod.namespace,
                &pod.name,
                "FailedScheduling",
                format!("skip schedule deleting pod: {}/{}", pod.namespace, pod.name),
            ));
            return true;
        }
        self.cache.is_assumed(&pod.uid)
    }

    /// Upstream `schedulingCycle`: SchedulePod (and PostFilter when no node fits), assume,
    /// Reserve and Permit. Returns the chosen node and the assumed pod.
    fn scheduling_cycle(
        &mut self,
        now: SimTime,
        client: &mut dyn Client,
        fwk: &Arc<Framework>,
        state: &mut CycleState,
        pod: &Arc<PodInfo>,
        mut trace: Option<&mut AttemptTrace>,
    ) -> Result<(String, Arc<PodInfo>), CycleFailure> {
        let host = match self.schedule_pod(fwk, state, pod, trace.as_deref_mut()) {
            Ok(r) => r.suggested_host,
            Err(mut err) => {
                let mut nominating = self.failure_nominating();
                let mut post_filter_ran = false;
                if let ScheduleError::Fit(fit) = &mut err {
                    if fwk.has_post_filter_plugins() {
                        nominating = self.run_post_filter(now, client, fwk, state, pod, fit, trace);
                        post_filter_ran = true;
                    }
                }
                return Err(CycleFailure {
                    err,
                    nominating,
                    post_filter_ran,
                });
            }
        };
        let assumed = self
            .assume(pod, &host)
            .map_err(|e| CycleFailure::clearing(e, self.failure_nominating()))?;
        let reserve = fwk.run_reserve_plugins_reserve(state, &assumed, &host);
        let permit = if reserve.is_success() {
            fwk.run_permit_plugins(state, &assumed, &host)
        } else {
            reserve
        };
        if !permit.is_success() {
            fwk.run_reserve_plugins_unreserve(state, &assumed, &host);
            let _ = self.cache.forget_pod(&pod.uid);
            return Err(CycleFailure::clearing(
                self.single_node_failure(&host, permit),
                self.failure_nominating(),
            ));
        }
        Ok((host, assumed))
    }

    /// Runs PostFilter (preemption) for a pod that fits no node; returns what becomes of its
    /// nomination, and notes the outcome in the fit error.
    #[allow(clippy::too_many_arguments)]
    fn run_post_filter(
        &mut self,
        now: SimTime,
        client: &mut dyn Client,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        fit: &mut FitError,
        trace: Option<&mut AttemptTrace>,
    ) -> NominatingMode {
        let absent = fit.diagnosis.absent_status.clone().unwrap_or_default();
        let queue = &self.queue;
        let nominated = |node: &str| queue.nominated_pods_for_node(node);
        let random: u64 = self.rng.random();
        let preemption = RefCell::new(None);
        let input = PostFilterInput {
            framework: fwk,
            snapshot: &self.snapshot,
            nominated_pods: &nominated,
            now,
            random,
            statuses: &fit.diagnosis.node_to_status,
            absent_status: &absent,
            preemption_trace: trace.is_some().then_some(&preemption),
        };
        let (r, s) = fwk.run_post_filter_plugins(state, pod, &input, client);
        let nominating = r.map(|r| r.nominating).unwrap_or(NominatingMode::Noop);
        if let Some(t) = trace {
            t.preemption = Some(PreemptionRecord {
                trace: preemption.into_inner().unwrap_or_default(),
                message: s.message(),
                nominated_node: match &nominating {
                    NominatingMode::Override(n) => Some(n.clone()).filter(|n| !n.is_empty()),
                    NominatingMode::Noop => pod.nominated_node_name().map(str::to_string),
                },
            });
        }
        if s.code == Code::Unschedulable || s.is_success() {
            fit.diagnosis.post_filter_msg = s.message();
        }
        if !s.plugin.is_empty() && s.is_rejected() {
            fit.diagnosis.unschedulable_plugins.insert(s.plugin);
        }
        nominating
    }

    /// Upstream `assume`: accounts the pod to the chosen node before binding, and drops its
    /// nomination.
    fn assume(&mut self, pod: &Arc<PodInfo>, host: &str) -> Result<Arc<PodInfo>, ScheduleError> {
        let mut assumed_pod = Pod::clone(&pod.pod);
        assumed_pod
            .spec
            .get_or_insert_with(Default::default)
            .node_name = Some(host.to_string());
        let assumed = Arc::new(PodInfo {
            pod: Arc::new(assumed_pod),
            ..PodInfo::clone(pod)
        });
        if let Err(e) = self.cache.assume_pod(assumed.clone(), host) {
            return Err(ScheduleError::Internal(Status::error(e.to_string())));
        }
        self.queue.delete_nominated_pod_if_exists(pod);
        Ok(assumed)
    }

    fn single_node_failure(&self, host: &str, status: Status) -> ScheduleError {
        if status.is_rejected() {
            let mut d = Diagnosis::default();
            if !status.plugin.is_empty() {
                d.unschedulable_plugins.insert(status.plugin);
            }
            // The host was chosen from this snapshot.
            let place = self.snapshot.index.get(host).copied().unwrap_or_default();
            d.node_to_status.insert(place, status);
            ScheduleError::Fit(Box::new(FitError {
                num_all_nodes: 1,
                diagnosis: d,
            }))
        } else {
            ScheduleError::Internal(status)
        }
    }

    /// SchedulePod: snapshot, filter, score, select.
    fn schedule_pod(
        &mut self,
        fwk: &Framework,
        state: &mut CycleState,
        pod: &PodInfo,
        mut trace: Option<&mut AttemptTrace>,
    ) -> Result<ScheduleResult, ScheduleError> {
        self.cache.update_snapshot(&mut self.snapshot);
        if self.snapshot.num_nodes() == 0 {
            return Err(ScheduleError::NoNodes);
        }
        if self.reuse_node_local {
            self.node_local.begin(pod, &self.snapshot);
        }
        let (feasible, diagnosis) =
            self.find_nodes_that_fit_pod(fwk, state, pod, trace.as_deref_mut())?;
        if let Some(t) = trace.as_deref_mut() {
            let names = &self.snapshot.node_infos;
            t.filter = diagnosis
                .node_to_status
                .iter()
                .map(|(place, s)| (names[place].name.clone(), s.clone()))
                .collect();
            t.absent = diagnosis.absent_status.clone();
            if t.absent.is_some() {
                t.all_nodes = self
                    .snapshot
                    .node_infos
                    .iter()
                    .map(|n| n.name.clone())
                    .collect();
            }
            t.feasible = feasible
                .iter()
                .map(|&i| self.snapshot.node_infos[i].name.clone())
                .collect();
        }
        if feasible.is_empty() {
            return Err(ScheduleError::Fit(Box::new(FitError {
                num_all_nodes: self.snapshot.num_nodes(),
                diagnosis,
            })));
        }
        let evaluated = feasible.len() + diagnosis.node_to_status.len();
        if feasible.len() == 1 {
            return Ok(ScheduleResult {
                suggested_host: self.snapshot.node_infos[feasible[0]].name.clone(),
                evaluated_nodes: evaluated,
                feasible_nodes: 1,
            });
        }
        let snapshot = &self.snapshot;
        let nodes: Vec<&NodeInfo> = feasible
            .iter()
            .map(|&i| snapshot.node_infos[i].as_ref())
            .collect();
        let mut reused = self.reuse_node_local.then(|| {
            self.node_local
                .reused_scores(&feasible, &snapshot.node_infos)
        });
        state.node_places.clone_from(&feasible);
        let mut scores = std::mem::take(&mut self.score_table);
        let scored = prioritize_nodes(
            fwk,
            state,
            pod,
            &nodes,
            snapshot,
            reused.as_mut(),
            &mut scores,
        );
        state.node_places.clear();
        if let Some(r) = reused {
            self.node_local
                .record_scores(&feasible, &snapshot.node_infos, r);
        }
        if let Err(e) = scored {
            self.score_table = scores;
            return Err(e);
        }
        let best = select_host(&scores.totals, &mut self.rng);
        let host = nodes[best].name.clone();
        if let Some(t) = trace {
            t.scored = fwk.has_score_plugins();
            t.scored_nodes = nodes.iter().map(|n| n.name.clone()).collect();
            t.scores = scores;
        } else {
            self.score_table = scores;
        }
        Ok(ScheduleResult {
            suggested_host: host,
            evaluated_nodes: evaluated,
            feasible_nodes: feasible.len(),
        })
    }

    /// Returns indexes into the snapshot's node list of the feasible nodes.
    fn find_nodes_that_fit_pod(
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
        let filters = fwk.active_filters(state);
        // Verdicts are reused only when every filter that runs is node-local.
        let reuse = self.reuse_node_local && filters.iter().all(|(_, f)| f.node_local());
        let memo = &self.node_local;
        // The places whose verdict to keep, with the failure's id in the diagnosis; how many
        // verdicts were reused.
        let mut verdicts: Vec<(usize, Option<StatusId>)> = Vec::new();
        let mut reused = 0;
        // Per failure the memo keeps: its id in the diagnosis, once it was used.
        let mut from_memo: Vec<Option<StatusId>> = vec![None; memo.failure_count()];
        // The pods nominated to each node, looked up once per cycle: usually few nodes have
        // any, and the others take the plain filter path.
        let nominated: BTreeMap<&str, Vec<Arc<PodInfo>>> = self
            .queue
            .nominated_node_names()
            .map(|n| (n, self.queue.nominated_pods_for_node(n)))
            .collect();
        let snapshot = &self.snapshot;
        // The verdict of the memo, or of the filters, on the node at `place`.
        let known_or_run = |place: usize, node: &Arc<NodeInfo>| match memo.verdict(place, node) {
            FilterVerdict::Passed if reuse => Outcome::Ran(Status::success(), Verdict::Reused),
            FilterVerdict::Failed(m) if reuse => Outcome::ReusedFailure(m),
            _ => Outcome::Ran(run_filters(&filters, state, pod, node), Verdict::Computed),
        };
        // The place of the `j`th node checked in this cycle.
        let place = |j: usize| {
            let k = start + j;
            candidates[if k >= n { k - n } else { k }]
        };
        let check = |j: usize| {
            let place = place(j);
            let node = &snapshot.node_infos[place];
            // Without nominated pods the node's name is not read (reused verdicts then read
            // nothing of the NodeInfo).
            let pods = if nominated.is_empty() {
                None
            } else {
                nominated.get(node.name.as_str())
            };
            match pods {
                Some(pods) => Outcome::Ran(
                    fwk.run_filter_plugins_with_nominated_pods(state, pod, node, pods),
                    Verdict::WithNominatedPods,
                ),
                None => known_or_run(place, node),
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
            if status.is_success() {
                match verdict {
                    Verdict::Reused => reused += 1,
                    Verdict::Computed if reuse => verdicts.push((idx, None)),
                    _ => {}
                }
                feasible.push(idx);
            } else if status.code == Code::Error {
                return Err(ScheduleError::Internal(status));
            } else {
                let id = statuses.intern(status);
                statuses.set(idx, id);
                if reuse && matches!(verdict, Verdict::Computed) {
                    verdicts.push((idx, Some(id)));
                }
            }
            Ok(feasible.len())
        };
        // Without nominated pods, a reused success needs no status: it is counted at once.
        let quick = reuse && nominated.is_empty();
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
                            memo.verdict(p, &snapshot.node_infos[p]) == FilterVerdict::Unknown
                        })
                        .collect();
                    if use_parallel(unknown.len()) {
                        unknown
                            .par_iter()
                            .with_min_len(PARALLEL_CHUNK_NODES)
                            .map(|&j| {
                                let node = &snapshot.node_infos[place(j)];
                                (j, run_filters(&filters, state, pod, node))
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
                                FilterVerdict::Unknown => Outcome::Ran(
                                    run_filters(&filters, state, pod, node),
                                    Verdict::Computed,
                                ),
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
        for (idx, failed) in verdicts {
            let node = &self.snapshot.node_infos[idx];
            let verdict = match failed {
                None => FilterVerdict::Passed,
                Some(id) => FilterVerdict::Failed(*to_memo[id as usize].get_or_insert_with(|| {
                    self.node_local
                        .intern_failure(diagnosis.node_to_status.status(id))
                })),
            };
            self.node_local.record_filter(idx, node, verdict);
        }
        self.node_local.filters_reused += reused;
        let all = self.snapshot.num_nodes().max(1);
        self.next_start_node_index = (self.next_start_node_index + processed) % all;
        Ok(feasible)
    }
}

/// Runs PreScore and Score over the feasible nodes into `table` (whose buffers are reused);
/// without score plugins every node scores 1.
pub fn prioritize_nodes(
    fwk: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    nodes: &[&NodeInfo],
    snapshot: &crate::cache::Snapshot,
    reused: Option<&mut crate::framework::ReusedScores>,
    table: &mut ScoreTable,
) -> Result<(), ScheduleError> {
    if !fwk.has_score_plugins() {
        table.plugins.clear();
        table.scores.clear();
        table.totals.clear();
        table.totals.resize(nodes.len(), 1);
        return Ok(());
    }
    let s = fwk.run_pre_score_plugins(state, pod, nodes, snapshot);
    if !s.is_success() {
        return Err(ScheduleError::Internal(s));
    }
    fwk.run_score_plugins_into(state, pod, nodes, reused, table)
        .map_err(ScheduleError::Internal)
}

/// The index of one of the highest totals, chosen uniformly among ties by reservoir sampling
/// with the seeded generator (upstream `selectHost`). `totals` must not be empty.
pub fn select_host(totals: &[i64], rng: &mut impl Rng) -> usize {
    let mut best = 0;
    let mut ties = 0u32;
    for (i, &t) in totals.iter().enumerate() {
        if i == 0 || t > totals[best] {
            best = i;
            ties = 1;
        } else if t == totals[best] {
            ties += 1;
            if rng.random_range(0..ties) == 0 {
                best = i;
            }
        }
    }
    best
}

#[cfg(test)]
mod tests;

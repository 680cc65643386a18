//! One scheduling cycle (upstream `schedule_one.go`: `ScheduleOne`, `schedulingCycle`,
//! `SchedulePod`, filtering and scoring, `assume`). The binding cycle is in
//! `binding_cycle.rs`, the failure handler in `failure.rs`, the explain records in
//! `attempt_record.rs`. Scheduling takes no virtual time.

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kubeplane_api::Client;
use kubeplane_core::{EventRecord, SimTime};
use rand::Rng;

use crate::attempt_record::{AttemptTrace, PreemptionRecord};
use crate::binding_cycle::BindingCycle;
use crate::framework::{
    Code, CycleState, Framework, NodeInfo, NodeToStatus, NominatingMode, PodInfo, PostFilterInput,
    ScoreTable, Status,
};
use crate::scheduler::Scheduler;

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

impl Scheduler {
    /// Pops one pod and runs its scheduling cycle, then its binding cycle or the failure
    /// handler (upstream `ScheduleOne`).
    pub(crate) fn schedule_one(&mut self, now: SimTime, client: &mut dyn Client) {
        let Some(qpi) = self.queue.pop(now) else {
            return;
        };
        let pod = qpi.pod_info.clone();
        let Some(fwk) = self.profiles.get(pod.scheduler_name()).cloned() else {
            self.queue.done(pod.uid());
            return;
        };
        if self.skip_pod_schedule(now, client, &pod) {
            self.queue.done(pod.uid());
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
                pod.namespace(),
                pod.name(),
                "FailedScheduling",
                format!(
                    "skip schedule deleting pod: {}/{}",
                    pod.namespace(),
                    pod.name()
                ),
            ));
            return true;
        }
        self.cache.is_assumed(pod.uid())
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
            let _ = self.cache.forget_pod(pod.uid());
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
        let mut assumed_pod = StoredPod::clone(&pod.pod);
        assumed_pod.set_node_name(Some(host.to_string()));
        let assumed = Arc::new(pod.with_pod(Arc::new(assumed_pod)));
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
        // Without a trace only the totals are read: the score pass may take them straight
        // from the kept raw scores.
        let totals_only = trace.is_none();
        let mut reused = self.reuse_node_local.then(|| {
            let mut r = self
                .node_local
                .reused_scores(&feasible, &snapshot.node_infos);
            r.totals_only = totals_only;
            r
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
    let Some(&first) = totals.first() else {
        return 0;
    };
    let (mut best, mut top) = (0, first);
    let mut ties = 1u32;
    for (i, &t) in totals.iter().enumerate().skip(1) {
        if t > top {
            (best, top) = (i, t);
            ties = 1;
        } else if t == top {
            ties += 1;
            if rng.random_range(0..ties) == 0 {
                best = i;
            }
        }
    }
    best
}

mod filter_pass;
mod filtering;
mod nominated_filter;
mod nominated_places;

pub use filtering::num_feasible_nodes_to_find;

#[cfg(test)]
mod tests;

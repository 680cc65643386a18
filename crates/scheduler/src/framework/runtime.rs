//! The framework runner of one profile (upstream `frameworkImpl`): runs the plugins enabled at
//! each extension point with upstream's semantics for skips, rejections and errors.

use std::collections::BTreeSet;
use std::sync::Arc;

use kubeplane_api::Client;

use crate::cache::Snapshot;
use crate::framework::cycle_state::CycleState;
use crate::framework::interface::*;
use crate::framework::status::{Code, Status};
use crate::framework::types::{NodeInfo, PodInfo};

mod reused;
mod score_pass;

pub use reused::ReusedScores;
use score_pass::{
    add_constant, add_weighted, normalize_and_weigh, out_of_range, totals_plan, ActiveScore,
    ScoreRun,
};

/// Filtering checks nodes in windows of at least this many.
pub const PARALLEL_CHUNK_NODES: usize = 64;
/// Filtering and scoring use the thread pool only from this many nodes to compute on (nodes
/// whose results the node-local memo knows do not count): below it, handing work to another
/// thread and waking it costs more than it saves. On the 2-core development machine,
/// SchedulingBasic at full size (500 nodes per cycle, nearly all known to the memo) used 20%
/// more CPU when every cycle went to the pool (docs/performance/session-13.md, h5).
pub const PARALLEL_MIN_NODES: usize = 500;

/// Whether a pass over `n` nodes is worth running on the thread pool.
pub fn use_parallel(n: usize) -> bool {
    n >= PARALLEL_MIN_NODES && rayon::current_num_threads() > 1
}

/// The plugins of a profile per extension point, in configured order.
#[derive(Clone, Default)]
pub struct PluginSet {
    pub pre_enqueue: Vec<Arc<dyn Plugin>>,
    pub queue_sort: Vec<Arc<dyn Plugin>>,
    pub pre_filter: Vec<Arc<dyn Plugin>>,
    pub filter: Vec<Arc<dyn Plugin>>,
    pub post_filter: Vec<Arc<dyn Plugin>>,
    pub pre_score: Vec<Arc<dyn Plugin>>,
    /// Score plugins with their weights.
    pub score: Vec<(Arc<dyn Plugin>, i64)>,
    pub reserve: Vec<Arc<dyn Plugin>>,
    pub permit: Vec<Arc<dyn Plugin>>,
    pub pre_bind: Vec<Arc<dyn Plugin>>,
    pub bind: Vec<Arc<dyn Plugin>>,
    pub post_bind: Vec<Arc<dyn Plugin>>,
}

/// One scheduling profile.
#[derive(Clone)]
pub struct Framework {
    pub profile_name: String,
    pub plugins: PluginSet,
    /// Every distinct plugin instance of the profile (for event registration).
    pub all_plugins: Vec<Arc<dyn Plugin>>,
    pub percentage_of_nodes_to_score: Option<i32>,
}

/// The normalized scores of one cycle: `scores[k * n + i]` is plugin `k`'s score (before
/// weight) of node `i`, and `totals[i]` the weighted sum.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScoreTable {
    pub plugins: Vec<&'static str>,
    pub scores: Vec<i64>,
    pub totals: Vec<i64>,
}

impl ScoreTable {
    /// Every node scores 1 (no score plugins).
    pub fn uniform(n: usize) -> ScoreTable {
        ScoreTable {
            plugins: Vec::new(),
            scores: Vec::new(),
            totals: vec![1; n],
        }
    }

    /// `(plugin, score)` of node `i`.
    pub fn node_scores(&self, i: usize) -> impl Iterator<Item = (&'static str, i64)> + '_ {
        let n = self.totals.len();
        self.plugins
            .iter()
            .enumerate()
            .map(move |(k, p)| (*p, self.scores[k * n + i]))
    }
}

/// The outcome of PreFilter.
pub struct PreFilterOutcome {
    pub result: Option<PreFilterResult>,
    pub status: Status,
    /// Plugins that returned a node restriction.
    pub restricting_plugins: BTreeSet<&'static str>,
}

impl Framework {
    pub fn has_score_plugins(&self) -> bool {
        !self.plugins.score.is_empty()
    }

    pub fn has_post_filter_plugins(&self) -> bool {
        !self.plugins.post_filter.is_empty()
    }

    /// PreFilter (upstream 5.1): Skip marks the plugin's Filter as skipped;
    /// UnschedulableAndUnresolvable returns at once; Unschedulable is remembered and returned
    /// after the rest ran; other codes are errors; node restrictions are intersected.
    pub fn run_pre_filter_plugins(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> PreFilterOutcome {
        let mut result: Option<PreFilterResult> = None;
        let mut restricting = BTreeSet::new();
        let mut rejected: Option<Status> = None;
        for p in &self.plugins.pre_filter {
            let Some(pf) = p.as_pre_filter() else {
                continue;
            };
            let (r, s) = pf.pre_filter(state, pod, snapshot);
            match s.code {
                Code::Success => {}
                Code::Skip => {
                    state.skip_filter_plugins.insert(p.name());
                    continue;
                }
                Code::UnschedulableAndUnresolvable => {
                    return PreFilterOutcome {
                        result: None,
                        status: s.plugin(p.name()),
                        restricting_plugins: restricting,
                    };
                }
                Code::Unschedulable => {
                    if rejected.is_none() {
                        rejected = Some(s.plugin(p.name()));
                    }
                    continue;
                }
                _ => {
                    let msg = format!("running PreFilter plugin {:?}: {}", p.name(), s.message());
                    return PreFilterOutcome {
                        result: None,
                        status: Status::error(msg).plugin(p.name()),
                        restricting_plugins: restricting,
                    };
                }
            }
            if let Some(r) = r.filter(|r| !r.all_nodes()) {
                restricting.insert(p.name());
                let merged = match &result {
                    Some(prev) => prev.merge(&r),
                    None => r,
                };
                if merged.node_names.as_ref().is_some_and(|n| n.is_empty()) {
                    let msg = if restricting.len() == 1 {
                        format!("node(s) didn't satisfy plugin {}", p.name())
                    } else {
                        let names: Vec<&str> = restricting.iter().copied().collect();
                        format!(
                            "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                            names.join(" ")
                        )
                    };
                    return PreFilterOutcome {
                        result: Some(merged),
                        status: Status::unresolvable(msg).plugin(p.name()),
                        restricting_plugins: restricting,
                    };
                }
                result = Some(merged);
            }
        }
        PreFilterOutcome {
            result,
            status: rejected.unwrap_or_default(),
            restricting_plugins: restricting,
        }
    }

    /// The Filter plugins that run in this cycle (those whose PreFilter did not Skip), computed
    /// once per cycle so the per-node loop does no lookups.
    pub fn active_filters(&self, state: &CycleState) -> Vec<(&'static str, &dyn FilterPlugin)> {
        self.plugins
            .filter
            .iter()
            .filter(|p| !state.skip_filter_plugins.contains(p.name()))
            .filter_map(|p| p.as_filter().map(|f| (p.name(), f)))
            .collect()
    }

    /// Filter: the first plugin that does not succeed decides the node's status.
    pub fn run_filter_plugins(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        run_filters(&self.active_filters(state), state, pod, node)
    }

    /// Filter with the pods nominated to the node (upstream two-pass rule): pass 1 adds the
    /// nominated pods of at least the pod's priority; if any were added and pass 1 succeeded,
    /// pass 2 runs without them.
    pub fn run_filter_plugins_with_nominated_pods(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        nominated: &[Arc<PodInfo>],
    ) -> Status {
        let relevant: Vec<&Arc<PodInfo>> = nominated
            .iter()
            .filter(|np| np.priority >= pod.priority && np.uid() != pod.uid())
            .collect();
        if relevant.is_empty() {
            return self.run_filter_plugins(state, pod, node);
        }
        let mut node_with = node.clone();
        let mut state_with = state.clone();
        for np in &relevant {
            node_with.add_pod(Arc::clone(np));
            let s = self.run_pre_filter_extension_add_pod(&mut state_with, pod, np, &node_with);
            if !s.is_success() {
                return s;
            }
        }
        let s = self.run_filter_plugins(&state_with, pod, &node_with);
        if !s.is_success() {
            return s;
        }
        self.run_filter_plugins(state, pod, node)
    }

    /// Whether a PreFilter plugin with `add_pod`/`remove_pod` extensions runs in this cycle
    /// (its Filter is not skipped): only then can adding or removing a pod change the state.
    pub fn has_active_pre_filter_extensions(&self, state: &CycleState) -> bool {
        self.plugins.pre_filter.iter().any(|p| {
            p.as_pre_filter()
                .is_some_and(PreFilterPlugin::has_extensions)
                && !state.skip_filter_plugins.contains(p.name())
        })
    }

    /// The PreFilter `add_pod` extensions (upstream `RunPreFilterExtensionAddPod`): tells the
    /// plugins whose Filter runs in this cycle that `to_add` now runs on `node`.
    pub fn run_pre_filter_extension_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_extension(state, "AddPod", |pf, state| {
            pf.add_pod(state, pod, to_add, node)
        })
    }

    /// The PreFilter `remove_pod` extensions (upstream `RunPreFilterExtensionRemovePod`).
    pub fn run_pre_filter_extension_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_extension(state, "RemovePod", |pf, state| {
            pf.remove_pod(state, pod, to_remove, node)
        })
    }

    /// Runs one PreFilter extension on every plugin that has extensions and whose Filter runs in
    /// this cycle; the first failure is wrapped as an error naming the extension and plugin.
    fn run_pre_filter_extension(
        &self,
        state: &mut CycleState,
        extension: &str,
        call: impl Fn(&dyn PreFilterPlugin, &mut CycleState) -> Status,
    ) -> Status {
        for p in &self.plugins.pre_filter {
            let Some(pf) = p.as_pre_filter() else {
                continue;
            };
            if !pf.has_extensions() || state.skip_filter_plugins.contains(p.name()) {
                continue;
            }
            let s = call(pf, state);
            if !s.is_success() {
                return Status::error(format!(
                    "running {extension} on PreFilter plugin {:?}: {}",
                    p.name(),
                    s.message()
                ))
                .plugin(p.name());
            }
        }
        Status::success()
    }

    /// Finishes the work PostFilter plugins left for after the cycle (asynchronous
    /// preemption); returns the pods (`namespace/name`) to move to activeQ.
    pub fn run_post_filter_async_work(
        &self,
        now: kubeplane_core::SimTime,
        client: &mut dyn Client,
    ) -> Vec<String> {
        let mut activate = Vec::new();
        for p in &self.plugins.post_filter {
            if let Some(pf) = p.as_post_filter() {
                activate.extend(pf.finish_async_work(now, client));
            }
        }
        activate
    }

    /// PostFilter: plugins in order until one succeeds, is unresolvable or errors.
    pub fn run_post_filter_plugins(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        input: &PostFilterInput<'_>,
        client: &mut dyn Client,
    ) -> (Option<PostFilterResult>, Status) {
        let mut result = None;
        let mut reasons = Vec::new();
        let mut rejector = "";
        for p in &self.plugins.post_filter {
            let Some(pf) = p.as_post_filter() else {
                continue;
            };
            let (r, s) = pf.post_filter(state, pod, input, client);
            if s.is_success() {
                return (r, s.plugin(p.name()));
            }
            if s.code == Code::UnschedulableAndUnresolvable {
                return (r, s.plugin(p.name()));
            }
            if !s.is_rejected() {
                return (None, Status::error(s.message()).plugin(p.name()));
            }
            if r.as_ref()
                .is_some_and(|r| r.nominating != NominatingMode::Noop)
            {
                result = r;
            }
            reasons.extend(s.reasons);
            rejector = p.name();
        }
        (
            result,
            Status::with_reasons(Code::Unschedulable, reasons).plugin(rejector),
        )
    }

    /// PreScore: Skip marks the plugin's Score as skipped; any other failure is an error.
    pub fn run_pre_score_plugins(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        for p in &self.plugins.pre_score {
            let Some(ps) = p.as_pre_score() else { continue };
            let s = ps.pre_score(state, pod, nodes, snapshot);
            if s.is_skip() {
                state.skip_score_plugins.insert(p.name());
            } else if !s.is_success() {
                return Status::error(format!(
                    "running PreScore plugin {:?}: {}",
                    p.name(),
                    s.message()
                ))
                .plugin(p.name());
            }
        }
        Status::success()
    }

    /// Score, NormalizeScore and weights over `nodes`, in that order.
    pub fn run_score_plugins(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
    ) -> Result<ScoreTable, Status> {
        let mut table = ScoreTable::default();
        self.run_score_plugins_into(state, pod, nodes, None, &mut table)?;
        Ok(table)
    }

    /// [`Self::run_score_plugins`] into `table`, whose buffers are reused (the scheduler keeps
    /// one table between cycles: a table of the same size is overwritten, not cleared
    /// first). The raw scores of node-local plugins ([`ScorePlugin::node_local`]) are taken
    /// from `reused` where it knows them, and the others written into it (when every score
    /// succeeded). On failure the table's contents are unspecified.
    pub fn run_score_plugins_into(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        mut reused: Option<&mut ReusedScores>,
        table: &mut ScoreTable,
    ) -> Result<(), Status> {
        let active: Vec<ActiveScore<'_>> = self
            .plugins
            .score
            .iter()
            .filter(|(p, _)| !state.skip_score_plugins.contains(p.name()))
            .filter_map(|(p, w)| p.as_score().map(|s| (p.name(), s, *w)))
            .collect();
        let n = nodes.len();
        // Per active plugin: its column in `reused`, if it is node-local.
        let mut slots: Vec<Option<usize>> = Vec::with_capacity(active.len());
        let mut local: Vec<&'static str> = Vec::new();
        for (name, sp, _) in &active {
            slots.push(sp.node_local().then_some(local.len()));
            if sp.node_local() {
                local.push(name);
            }
        }
        if let Some(r) = reused.as_deref_mut() {
            r.prepare(&local, n);
        }
        table.plugins.clear();
        table
            .plugins
            .extend(active.iter().map(|(name, _, _)| *name));
        // Every cell is written by the raw scores below (by `score_nodes`, which writes every
        // cell of its output, or from `reused`).
        table.scores.resize(active.len() * n, 0);
        // Totals straight from the kept raw scores (the known nodes' are then not copied).
        let from_kept = reused
            .as_deref()
            .and_then(|r| totals_plan(&active, &slots, r));
        let run = ScoreRun {
            active: &active,
            slots: &slots,
            reused: reused.as_deref(),
            copy_known: from_kept.is_none(),
            state,
            pod,
            nodes,
        };
        if let Some((_, status)) = run.all(&mut table.scores) {
            return Err(status);
        }
        if let Some(r) = reused {
            r.fill(&slots, &table.scores);
            if let Some(plan) = from_kept {
                if r.totals_from_kept(&plan, &table.scores, &mut table.totals) {
                    return Ok(());
                }
                r.copy_known(&slots, &mut table.scores);
            }
        }
        normalize_and_weigh(&active, state, pod, n, table)
    }

    /// Reserve in order; the first failure stops.
    pub fn run_reserve_plugins_reserve(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status {
        for p in &self.plugins.reserve {
            if let Some(r) = p.as_reserve() {
                let s = r.reserve(state, pod, node);
                if !s.is_success() {
                    if s.is_rejected() {
                        return s.plugin(p.name());
                    }
                    return Status::error(format!(
                        "running Reserve plugin {:?}: {}",
                        p.name(),
                        s.message()
                    ))
                    .plugin(p.name());
                }
            }
        }
        Status::success()
    }

    /// Unreserve runs every reserve plugin in reverse order.
    pub fn run_reserve_plugins_unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        for p in self.plugins.reserve.iter().rev() {
            if let Some(r) = p.as_reserve() {
                r.unreserve(state, pod, node);
            }
        }
    }

    /// Permit: any rejection stops. `Wait` is not modelled (no in-tree plugin returns it) and is
    /// treated as an error, see docs/compatibility.md.
    pub fn run_permit_plugins(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        for p in &self.plugins.permit {
            if let Some(pp) = p.as_permit() {
                let (s, _) = pp.permit(state, pod, node);
                if s.is_success() {
                    continue;
                }
                if s.is_rejected() {
                    return s.plugin(p.name());
                }
                return Status::error(format!(
                    "running Permit plugin {:?}: {}",
                    p.name(),
                    s.message()
                ))
                .plugin(p.name());
            }
        }
        Status::success()
    }

    pub fn run_pre_bind_plugins(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
        client: &mut dyn Client,
    ) -> Status {
        for p in &self.plugins.pre_bind {
            if let Some(pb) = p.as_pre_bind() {
                let s = pb.pre_bind(state, pod, node, client);
                if !s.is_success() {
                    return s.plugin(p.name());
                }
            }
        }
        Status::success()
    }

    /// Bind: plugins in order until one does not Skip. An error is worded as upstream's
    /// `RunBindPlugins` words it.
    pub fn run_bind_plugins(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
        client: &mut dyn Client,
    ) -> Status {
        for p in &self.plugins.bind {
            if let Some(b) = p.as_bind() {
                let s = b.bind(state, pod, node, client);
                if s.is_skip() {
                    continue;
                }
                if !s.is_success() && !s.is_rejected() {
                    return bind_plugin_failure(p.name(), &s.message());
                }
                return s.plugin(p.name());
            }
        }
        Status::skip()
    }

    pub fn run_post_bind_plugins(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        for p in &self.plugins.post_bind {
            if let Some(pb) = p.as_post_bind() {
                pb.post_bind(state, pod, node);
            }
        }
    }
}

/// A Bind plugin's error as upstream's `RunBindPlugins` words it (`running Bind plugin
/// "DefaultBinder": ...`).
pub fn bind_plugin_failure(plugin: &'static str, message: &str) -> Status {
    Status::error(format!("running Bind plugin {plugin:?}: {message}")).plugin(plugin)
}

/// Runs a precomputed list of Filter plugins on one node; the first that does not succeed
/// decides the node's status.
pub fn run_filters(
    filters: &[(&'static str, &dyn FilterPlugin)],
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
) -> Status {
    for &(name, f) in filters {
        let s = f.filter(state, pod, node);
        if !s.is_success() {
            return s.of_filter(name);
        }
    }
    Status::success()
}

#[cfg(test)]
mod tests;

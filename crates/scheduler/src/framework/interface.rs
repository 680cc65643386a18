//! The plugin contract: one trait per extension point (upstream `framework/interface.go`).
//!
//! A plugin is one struct implementing [`Plugin`] and the extension-point traits it takes part
//! in; its `as_*` methods return itself for those points. The framework calls the points in
//! this order: PreEnqueue (when the pod enters the queue), QueueSort (ordering activeQ), then per
//! scheduling cycle PreFilter, Filter (per node), PostFilter (only when no node fits), PreScore,
//! Score (per feasible node), NormalizeScore, Reserve, Permit, and in the binding cycle PreBind,
//! Bind, PostBind; Unreserve undoes Reserve when a later point fails.
//!
//! Status codes: `Success` lets the pod proceed; `Unschedulable` rejects it where preemption might
//! help; `UnschedulableAndUnresolvable` rejects it where preemption cannot help; `Error` is an
//! internal failure (the pod is retried after backoff); `Skip` from PreFilter or PreScore means
//! the plugin's Filter or Score is not run for this pod; `Wait` from Permit parks the pod;
//! `Pending` means the pod waits for something outside the scheduler.

use std::collections::BTreeSet;

use kubeplane_api::Client;
use kubeplane_core::time::SimDuration;

use crate::cache::Snapshot;
use crate::framework::cycle_state::CycleState;
use crate::framework::events::ClusterEventWithHint;
use crate::framework::status::Status;
use crate::framework::types::{NodeInfo, PodInfo, QueuedPodInfo};

/// The highest score a Score plugin may give after normalization.
pub const MAX_NODE_SCORE: i64 = 100;
/// The lowest score.
pub const MIN_NODE_SCORE: i64 = 0;

/// A scheduler plugin. `as_*` return `Some(self)` for each extension point it implements.
pub trait Plugin: Send + Sync {
    fn name(&self) -> &'static str;

    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        None
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        None
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        None
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        None
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        None
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        None
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        None
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        None
    }
    fn as_permit(&self) -> Option<&dyn PermitPlugin> {
        None
    }
    fn as_pre_bind(&self) -> Option<&dyn PreBindPlugin> {
        None
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        None
    }
    fn as_post_bind(&self) -> Option<&dyn PostBindPlugin> {
        None
    }

    /// The cluster events that may make a pod this plugin rejected schedulable, with queueing
    /// hints (upstream `EnqueueExtensions`). `None`: the plugin does not say, so every event
    /// counts as possibly helpful.
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        None
    }
}

/// Decides whether a pod may enter activeQ at all (e.g. scheduling gates).
pub trait PreEnqueuePlugin: Send + Sync {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status;
}

/// Orders activeQ.
pub trait QueueSortPlugin: Send + Sync {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool;
}

/// The nodes a PreFilter plugin restricts the pod to; `None` means all nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreFilterResult {
    pub node_names: Option<BTreeSet<String>>,
}

impl PreFilterResult {
    pub fn all_nodes(&self) -> bool {
        self.node_names.is_none()
    }
    /// Intersection of two results (upstream `Merge`).
    pub fn merge(&self, other: &PreFilterResult) -> PreFilterResult {
        match (&self.node_names, &other.node_names) {
            (None, None) => PreFilterResult::default(),
            (Some(a), None) | (None, Some(a)) => PreFilterResult {
                node_names: Some(a.clone()),
            },
            (Some(a), Some(b)) => PreFilterResult {
                node_names: Some(a.intersection(b).cloned().collect()),
            },
        }
    }
}

/// Computes per-pod state once per cycle; may restrict the node set or reject the pod outright.
pub trait PreFilterPlugin: Send + Sync {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status);

    /// Whether `add_pod`/`remove_pod` do anything (upstream `PreFilterExtensions() != nil`).
    fn has_extensions(&self) -> bool {
        false
    }
    /// Updates the cycle state as if `to_add` ran on `node` (nominated pods, preemption).
    fn add_pod(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _to_add: &PodInfo,
        _node: &NodeInfo,
    ) -> Status {
        Status::success()
    }
    /// Updates the cycle state as if `to_remove` no longer ran on `node`.
    fn remove_pod(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _to_remove: &PodInfo,
        _node: &NodeInfo,
    ) -> Status {
        Status::success()
    }
}

/// For [`FilterPlugin::filter_failures`]: sets bit `k % 64` of `failed[k / 64]` for each
/// `places[k]` that `failure` rejects, and returns the kinds of failure it gave (bit `kind`
/// set for each, `kind` < 8), so that a plugin can tell whether every rejected node failed
/// alike.
#[inline]
pub fn mark_failures(
    places: &[usize],
    failed: &mut [u64],
    mut failure: impl FnMut(usize) -> Option<u8>,
) -> u8 {
    let mut seen = 0u8;
    for (k, &place) in places.iter().enumerate() {
        if let Some(kind) = failure(place) {
            failed[k / 64] |= 1 << (k % 64);
            seen |= 1 << kind;
        }
    }
    seen
}

/// For [`FilterPlugin::filter_failures`] without the plugin's cycle state: every one of the
/// `n` places fails (as `filter` rejects each node then).
pub fn mark_all_failed(n: usize, failed: &mut [u64]) {
    (0..n).for_each(|k| failed[k / 64] |= 1 << (k % 64));
}

/// Says whether the pod can run on one node.
pub trait FilterPlugin: Send + Sync {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status;
    /// Whether the verdict depends on nothing but the pod's spec (and what this plugin's
    /// PreFilter derived from it), the plugin's arguments and the node's NodeInfo. The
    /// scheduler then reuses a success for the next pod with an identical spec on a node
    /// that has not changed (see `crate::node_local`).
    fn node_local(&self) -> bool {
        false
    }
    /// [`FilterPlugin::filter`]'s verdicts over a run of nodes, `nodes[places[k]]` for each
    /// `k`: sets bit `k % 64` of `failed[k / 64]` for each node on which `filter` would not
    /// return a success, and leaves the other bits alone (`failed` has a bit per place). A
    /// plugin that is not node-local overrides it to read its cycle state once per run. It
    /// may return the status `filter` gives every node it rejected here when that is one and
    /// the same (its plugin not set); else (`None`) the filter pass asks `filter` for each.
    fn filter_failures(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[std::sync::Arc<NodeInfo>],
        places: &[usize],
        failed: &mut [u64],
    ) -> Option<Status> {
        mark_failures(places, failed, |place| {
            (!self.filter(state, pod, &nodes[place]).is_success()).then_some(0)
        });
        None
    }
    /// For a filter whose verdict depends on the node's pods only through the sum of their
    /// requests and their number (NodeResourcesFit): whether `pod` passes on `node` were
    /// those `requested` and `num_pods`. `None` for any other filter. Preemption's dry runs
    /// use it to try victims without changing a NodeInfo.
    fn passes_with_requests(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _node: &NodeInfo,
        _requested: &kubeplane_core::resources::Resources,
        _num_pods: usize,
    ) -> Option<bool> {
        None
    }
    /// For the same filters: the status [`FilterPlugin::filter`] would return on `node` were
    /// its pods' requests `requested` and their number `num_pods`. `None` for any other
    /// filter. The filter pass uses it for a node's nominated pods without copying the node.
    fn filter_with_requests(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _node: &NodeInfo,
        _requested: &kubeplane_core::resources::Resources,
        _num_pods: usize,
    ) -> Option<Status> {
        None
    }
    /// For a filter whose verdict ([`FilterPlugin::passes_with_requests`]) reads the pods'
    /// requests only through their cpu, memory and ephemeral-storage sums for this pod
    /// (NodeResourcesFit when the pod checks no scalar resource): the pod's side of it, read
    /// once per preemption. `None` for any other filter or pod.
    fn sums_check(&self, _state: &CycleState, _pod: &PodInfo) -> Option<SumsCheck> {
        None
    }
}

/// The pod's side of a Filter verdict that depends on a node only through its allocatable,
/// the cpu, memory and ephemeral-storage its pods request, and their number (see
/// [`FilterPlugin::sums_check`]). Preemption's reprieve steps add and remove victims on three
/// `i64`s with it instead of on a `Resources`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SumsCheck {
    /// Only the pod count is checked (the pod requests nothing at all).
    pub count_only: bool,
    /// The pod's cpu (milli), memory and ephemeral-storage requests.
    pub want: [i64; 3],
}

impl SumsCheck {
    /// The sums of `requests` in [`SumsCheck::want`]'s order.
    pub fn sums_of(requests: &kubeplane_core::resources::Resources) -> [i64; 3] {
        [
            requests.milli_cpu,
            requests.memory,
            requests.ephemeral_storage,
        ]
    }

    /// Whether the pod passes on a node with `alloc` whose `num_pods` pods request `used` (in
    /// [`SumsCheck::want`]'s order): a free pod slot, and room for each non-zero request.
    pub fn passes(
        &self,
        alloc: &kubeplane_core::resources::Resources,
        used: &[i64; 3],
        num_pods: usize,
    ) -> bool {
        if num_pods as i64 + 1 > alloc.allowed_pod_number {
            return false;
        }
        if self.count_only {
            return true;
        }
        let have = SumsCheck::sums_of(alloc);
        (0..3).all(|i| !(self.want[i] > 0 && self.want[i] > have[i] - used[i]))
    }
}

/// What a PostFilter plugin asks of the pod's nomination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NominatingMode {
    /// Leave the pod's nominatedNodeName as it is.
    Noop,
    /// Set the pod's nominatedNodeName to this value ("" clears it).
    Override(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostFilterResult {
    pub nominating: NominatingMode,
}

/// What a PostFilter plugin sees: the filter outcome of every node, the profile's framework
/// (to re-run filters in dry runs), the nominated pods, the time and a seeded random number.
pub struct PostFilterInput<'a> {
    pub framework: &'a crate::framework::Framework,
    pub snapshot: &'a Snapshot,
    /// The pods nominated to a node (upstream `NominatedPodsForNode`).
    pub nominated_pods: &'a dyn Fn(&str) -> Vec<std::sync::Arc<PodInfo>>,
    pub now: kubeplane_core::SimTime,
    /// A random number from the scheduler's seeded generator, drawn for this call (e.g. the
    /// preemption candidate offset).
    pub random: u64,
    /// Per place in `snapshot`'s node list, the failing filter status (nodes without one
    /// share `absent_status`).
    pub statuses: &'a crate::framework::NodeToStatus,
    pub absent_status: &'a Status,
    /// Where a preemption plugin reports what it considered (explain output), when wanted.
    pub preemption_trace: Option<&'a std::cell::RefCell<Option<PreemptionTrace>>>,
}

/// What one preemption attempt considered, for the explain record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreemptionTrace {
    /// The candidate nodes the dry runs found, in the order they were found (those that
    /// violate no PodDisruptionBudget first).
    pub candidates: Vec<PreemptionCandidateTrace>,
    /// The node chosen, if any.
    pub chosen: Option<String>,
    /// Why the chosen node won (the pickOneNodeForPreemption criterion that decided).
    pub why: Option<String>,
}

/// One candidate node of a preemption attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreemptionCandidateTrace {
    pub node: String,
    /// `namespace/name` of each victim, most important first.
    pub victims: Vec<String>,
    pub pdb_violations: i64,
}

/// Runs when no node fits (preemption).
pub trait PostFilterPlugin: Send + Sync {
    fn post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        input: &PostFilterInput<'_>,
        client: &mut dyn Client,
    ) -> (Option<PostFilterResult>, Status);

    /// Work started by `post_filter` that upstream finishes in a goroutine after the cycle
    /// (asynchronous preemption). The scheduler runs it once the failure handler has requeued
    /// the pod; it returns the pods (`namespace/name`) to move to activeQ (after an error).
    fn finish_async_work(
        &self,
        _now: kubeplane_core::SimTime,
        _client: &mut dyn Client,
    ) -> Vec<String> {
        Vec::new()
    }
}

/// Computes per-pod scoring state over the feasible nodes.
pub trait PreScorePlugin: Send + Sync {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status;
}

/// Ranks feasible nodes.
pub trait ScorePlugin: Send + Sync {
    /// The raw score of one node (any integer before normalization).
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status>;
    /// Whether the raw score depends on nothing but the pod's spec (and what this plugin's
    /// PreScore derived from it), the plugin's arguments, the node's NodeInfo, and the
    /// snapshot's node count and image counts. The scheduler then reuses it for the next pod
    /// with an identical spec on a node that has not changed (see `crate::node_local`).
    fn node_local(&self) -> bool {
        false
    }
    /// The raw scores of a run of nodes: `nodes` are the nodes `first..first + nodes.len()` of
    /// the list PreScore saw, `out` has a cell per node, and every cell must be written (on
    /// success): it holds a score of an earlier cycle, the table being kept. The same results as [`Self::score`]
    /// per node (the default does just that); a plugin overrides it to read its cycle state
    /// once per run, or to use what PreScore computed per node. On failure: the position in
    /// `nodes` of the first node that failed, and its status.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        first: usize,
        out: &mut [i64],
    ) -> Result<(), (usize, Status)> {
        let _ = first;
        for (i, (node, cell)) in nodes.iter().zip(out.iter_mut()).enumerate() {
            *cell = self.score(state, pod, node).map_err(|s| (i, s))?;
        }
        Ok(())
    }
    /// Rewrites the raw scores of all nodes into [0, 100]; the default leaves them as they are.
    fn normalize_score(&self, _state: &CycleState, _pod: &PodInfo, _scores: &mut [i64]) -> Status {
        Status::success()
    }
    /// What [`Self::normalize_score`] is known to do, so that the framework may leave it out
    /// when it computes totals straight from kept raw scores. The default promises nothing.
    fn normalization(&self) -> Normalization {
        Normalization::Unknown
    }
}

/// What a Score plugin's NormalizeScore does to a column of raw scores, as far as the plugin
/// promises it ([`ScorePlugin::normalization`]); either way it succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Normalization {
    /// Leaves every column as it is (the trait's default NormalizeScore).
    Keeps,
    /// Makes every cell of a column whose raw scores are all zero this score (other columns
    /// depend on the whole column).
    ZeroTo(i64),
    /// Nothing promised: the framework calls NormalizeScore.
    Unknown,
}

/// Reserves resources for a pod on its chosen node before binding.
pub trait ReservePlugin: Send + Sync {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;
    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str);
}

/// Approves, rejects or delays binding.
pub trait PermitPlugin: Send + Sync {
    /// `Wait` with the timeout to wait for.
    fn permit(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> (Status, SimDuration);
}

pub trait PreBindPlugin: Send + Sync {
    fn pre_bind(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
        client: &mut dyn Client,
    ) -> Status;
}

/// Binds the pod; `Skip` hands it to the next bind plugin.
pub trait BindPlugin: Send + Sync {
    fn bind(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
        client: &mut dyn Client,
    ) -> Status;
}

pub trait PostBindPlugin: Send + Sync {
    fn post_bind(&self, state: &mut CycleState, pod: &PodInfo, node: &str);
}

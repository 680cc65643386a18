//! NodeResourcesBalancedAllocation (PreScore, Score): prefers nodes whose resource
//! utilizations stay close to each other once the pod is placed (upstream
//! `balanced_allocation.go`).

use crate::cache::Snapshot;
use crate::framework::{
    CycleState, NodeInfo, Plugin, PodInfo, PreScorePlugin, ScorePlugin, Status,
};
use crate::plugins::args::{parse_args, PluginArgsError};

use super::args::NodeResourcesBalancedAllocationArgs;
use super::resource_allocation::{balanced_score, PodRequestsState, ResourceList};

pub const NAME: &str = "NodeResourcesBalancedAllocation";

const PRE_SCORE_KEY: &str = "PreScoreNodeResourcesBalancedAllocation";

#[derive(Debug)]
pub struct BalancedAllocation {
    resources: ResourceList,
}

impl BalancedAllocation {
    /// Builds the plugin from `NodeResourcesBalancedAllocationArgs` (defaults, validation).
    pub fn new(args: Option<&serde_json::Value>) -> Result<BalancedAllocation, PluginArgsError> {
        let mut args: NodeResourcesBalancedAllocationArgs = parse_args(args)?;
        args.set_defaults();
        if let Some(e) = args.validate().into_iter().next() {
            return Err(e);
        }
        Ok(BalancedAllocation::from_args(&args))
    }

    pub fn from_args(args: &NodeResourcesBalancedAllocationArgs) -> BalancedAllocation {
        BalancedAllocation {
            // Plain requests: a pod without requests does not count 100m/200Mi here.
            resources: ResourceList::new(&args.resources, true),
        }
    }
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreScorePlugin for BalancedAllocation {
    /// Skips best-effort pods (no request for any configured resource), so that they do not
    /// all pile onto one node (upstream issue #129138).
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
        _snapshot: &Snapshot,
    ) -> Status {
        let pod_requests = self.resources.pod_requests(pod);
        if pod_requests.iter().all(|&r| r == 0) {
            return Status::skip();
        }
        state.write(PRE_SCORE_KEY, PodRequestsState { pod_requests });
        Status::success()
    }
}

impl ScorePlugin for BalancedAllocation {
    /// The pod's requests (PreScore) against the NodeInfo's allocatable and requested.
    fn node_local(&self) -> bool {
        true
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let requests = self.resources.requests_in(state, PRE_SCORE_KEY, pod);
        Ok(balanced_score(&self.resources, node, &requests))
    }

    /// As [`Self::score`] per node, with the pod's requests read once.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        _first: usize,
        out: &mut [i64],
    ) -> Result<(), (usize, Status)> {
        let requests = self.resources.requests_in(state, PRE_SCORE_KEY, pod);
        for (node, cell) in nodes.iter().zip(out.iter_mut()) {
            *cell = balanced_score(&self.resources, node, &requests);
        }
        Ok(())
    }
}

//! NodeResourcesBalancedAllocation (PreScore, Score): prefers nodes whose resource
//! utilizations stay close to each other once the pod is placed (upstream
//! `balanced_allocation.go`); from v1.36 it scores how much the pod improves or worsens the
//! node's balance (kubernetes#135573, [`changes::BALANCED_ALLOCATION_WITH_AND_WITHOUT_POD`]).

use kubeplane_core::features::FeatureGates;
use kubeplane_core::version::{changes, KubeVersion};

use crate::cache::Snapshot;
use crate::framework::{
    CycleState, NodeInfo, Plugin, PodInfo, PreScorePlugin, ScorePlugin, Status,
};
use crate::plugins::args::{parse_args, PluginArgsError};

use super::args::NodeResourcesBalancedAllocationArgs;
use super::resource_allocation::{
    balanced_change_score, balanced_score, PodRequestsState, ResourceList,
};

pub const NAME: &str = "NodeResourcesBalancedAllocation";

static PRE_SCORE_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreScoreNodeResourcesBalancedAllocation");

#[derive(Debug)]
pub struct BalancedAllocation {
    resources: ResourceList,
    /// Score the change of balance the pod brings (v1.36 and later) rather than the balance
    /// with the pod.
    score_change: bool,
}

impl BalancedAllocation {
    /// Builds the plugin from `NodeResourcesBalancedAllocationArgs` (defaults, validation), with
    /// the formula of the release the gates are for.
    pub fn new(
        args: Option<&serde_json::Value>,
        features: &FeatureGates,
    ) -> Result<BalancedAllocation, PluginArgsError> {
        let mut args: NodeResourcesBalancedAllocationArgs = parse_args(args)?;
        args.set_defaults();
        if let Some(e) = args.validate().into_iter().next() {
            return Err(e);
        }
        Ok(BalancedAllocation::from_args(&args, features.version()))
    }

    pub fn from_args(
        args: &NodeResourcesBalancedAllocationArgs,
        version: KubeVersion,
    ) -> BalancedAllocation {
        BalancedAllocation {
            // Plain requests: a pod without requests does not count 100m/200Mi here.
            resources: ResourceList::new(&args.resources, true),
            score_change: version.has(changes::BALANCED_ALLOCATION_WITH_AND_WITHOUT_POD),
        }
    }

    fn node_score(&self, node: &NodeInfo, requests: &[i64]) -> i64 {
        if self.score_change {
            balanced_change_score(&self.resources, node, requests)
        } else {
            balanced_score(&self.resources, node, requests)
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
        state.write(&PRE_SCORE_KEY, PodRequestsState { pod_requests });
        Status::success()
    }
}

impl ScorePlugin for BalancedAllocation {
    /// The pod's requests (PreScore) against the NodeInfo's allocatable and requested.
    fn node_local(&self) -> bool {
        true
    }

    /// No NormalizeScore: the raw scores are the scores.
    fn normalization(&self) -> crate::framework::Normalization {
        crate::framework::Normalization::Keeps
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let requests = self.resources.requests_in(state, &PRE_SCORE_KEY, pod);
        Ok(self.node_score(node, &requests))
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
        let requests = self.resources.requests_in(state, &PRE_SCORE_KEY, pod);
        if self.score_change {
            for (node, cell) in nodes.iter().zip(out.iter_mut()) {
                *cell = balanced_change_score(&self.resources, node, &requests);
            }
        } else {
            for (node, cell) in nodes.iter().zip(out.iter_mut()) {
                *cell = balanced_score(&self.resources, node, &requests);
            }
        }
        Ok(())
    }
}

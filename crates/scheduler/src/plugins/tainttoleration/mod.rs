//! TaintToleration (Filter, PreScore, Score): a pod must tolerate a node's NoSchedule and
//! NoExecute taints, and prefers nodes with fewer PreferNoSchedule taints it does not tolerate
//! (upstream `plugins/tainttoleration/taint_toleration.go`).

use k8s_openapi::api::core::v1::{Taint, Toleration};
use kubeplane_api::StoredPod;
use kubeplane_core::features::FeatureGates;
use kubeplane_core::taints::{
    find_untolerated_taint, tolerates_any, EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE,
    EFFECT_PREFER_NO_SCHEDULE,
};
use kubeplane_core::version::changes;

use crate::cache::Snapshot;
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EventObject, EventResource,
    FilterPlugin, NodeInfo, Plugin, PodInfo, PreScorePlugin, QueueingHint, ScorePlugin, Status,
    MAX_NODE_SCORE,
};
use crate::plugins::helper::{default_normalize_score, node_event, pod_event, uid_of};

pub const NAME: &str = "TaintToleration";

/// Filter reason up to v1.34.1: the first untolerated taint, `node(s) had untolerated taint
/// {key: value}`.
pub fn reason_untolerated(taint: &Taint) -> String {
    format!(
        "node(s) had untolerated taint {{{}: {}}}",
        taint.key,
        taint.value.as_deref().unwrap_or("")
    )
}

/// Filter reason from v1.34.2 and v1.35.0 (kubernetes#134740, cherry-picked as #135023): the
/// taint is only logged, so nodes refused for different taints share one reason.
pub const ERR_REASON_UNTOLERATED: &str = "node(s) had untolerated taint(s)";

/// The plugin, with the Filter reason of the Kubernetes release it follows.
#[derive(Debug, Default)]
pub struct TaintToleration {
    generic_reason: bool,
}

impl TaintToleration {
    pub fn new(features: &FeatureGates) -> Self {
        TaintToleration {
            generic_reason: features
                .version()
                .has(changes::GENERIC_UNTOLERATED_TAINT_REASON),
        }
    }
}

fn does_not_schedule(t: &Taint) -> bool {
    t.effect == EFFECT_NO_SCHEDULE || t.effect == EFFECT_NO_EXECUTE
}

fn untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    find_untolerated_taint(taints, tolerations, does_not_schedule)
}

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        // With queueing hints (GA in v1.34): Node Add|UpdateNodeTaint and Pod UpdatePodToleration.
        Some(vec![
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD | ActionType::UPDATE_NODE_TAINT,
                    "NodeAdd|UpdateNodeTaint",
                ),
                is_schedulable_after_node_change,
            ),
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(
                    EventResource::Pod,
                    ActionType::UPDATE_POD_TOLERATION,
                    "PodUpdatePodToleration",
                ),
                is_schedulable_after_pod_toleration_change,
            ),
        ])
    }
}

impl FilterPlugin for TaintToleration {
    /// The pod's tolerations against the node's taints.
    fn node_local(&self) -> bool {
        true
    }

    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        match untolerated(node.taints(), pod.tolerations()) {
            None => Status::success(),
            Some(_) if self.generic_reason => Status::unresolvable(ERR_REASON_UNTOLERATED),
            Some(t) => Status::unresolvable(reason_untolerated(t)),
        }
    }
}

impl PreScorePlugin for TaintToleration {
    /// Upstream keeps the pod's tolerations with an empty or PreferNoSchedule effect. Score
    /// only looks at PreferNoSchedule taints, which no other toleration can tolerate (a
    /// non-empty toleration effect must equal the taint's), so the full list gives the same
    /// counts and nothing needs to be stored.
    fn pre_score(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _nodes: &[&NodeInfo],
        _snapshot: &Snapshot,
    ) -> Status {
        Status::success()
    }
}

impl ScorePlugin for TaintToleration {
    /// The pod's tolerations against the node's PreferNoSchedule taints.
    fn node_local(&self) -> bool {
        true
    }

    /// The number of PreferNoSchedule taints the pod does not tolerate.
    fn score(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let tolerations = pod.tolerations();
        let n = node
            .taints()
            .iter()
            .filter(|t| t.effect == EFFECT_PREFER_NO_SCHEDULE && !tolerates_any(tolerations, t))
            .count();
        Ok(n as i64)
    }

    fn normalize_score(&self, _state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) -> Status {
        default_normalize_score(MAX_NODE_SCORE, true, scores);
        Status::success()
    }
    /// Reversed: a column without intolerable PreferNoSchedule taints becomes all 100.
    fn normalization(&self) -> crate::framework::Normalization {
        crate::framework::Normalization::ZeroTo(MAX_NODE_SCORE)
    }
}

fn node_taints(n: &k8s_openapi::api::core::v1::Node) -> &[Taint] {
    n.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
}

fn pod_tolerations(p: &StoredPod) -> &[Toleration] {
    p.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[])
}

/// Queue when the node had an untolerated NoSchedule/NoExecute taint before (an added node
/// counts as having had one) and has none now.
fn is_schedulable_after_node_change(
    pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (old, new) = node_event(old, new)?;
    let tolerations = pod_tolerations(pod);
    let was_untolerated = old.is_none_or(|o| untolerated(node_taints(o), tolerations).is_some());
    let is_untolerated = untolerated(node_taints(new), tolerations).is_some();
    if was_untolerated && !is_untolerated {
        Ok(QueueingHint::Queue)
    } else {
        Ok(QueueingHint::QueueSkip)
    }
}

/// Queue when the updated pod is the waiting pod itself.
fn is_schedulable_after_pod_toleration_change(
    pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (_, new) = pod_event(old, new)?;
    match new {
        Some(n) if uid_of(n) == uid_of(pod) => Ok(QueueingHint::Queue),
        _ => Ok(QueueingHint::QueueSkip),
    }
}

#[cfg(test)]
mod tests;

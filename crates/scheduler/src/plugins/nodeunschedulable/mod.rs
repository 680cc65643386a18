//! NodeUnschedulable (Filter): a cordoned node (`spec.unschedulable`) only takes pods that
//! tolerate the `node.kubernetes.io/unschedulable:NoSchedule` taint (upstream
//! `plugins/nodeunschedulable/node_unschedulable.go`).

use kubeplane_api::StoredPod;
use std::sync::LazyLock;

use k8s_openapi::api::core::v1::{Node, Taint};
use kubeplane_core::taints::{tolerates_any, EFFECT_NO_SCHEDULE};

use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EventObject, EventResource,
    FilterPlugin, NodeInfo, Plugin, PodInfo, QueueingHint, Status,
};
use crate::plugins::helper::{node_event, pod_event, uid_of};

pub const NAME: &str = "NodeUnschedulable";

/// Filter reason for a cordoned node.
pub const REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";

/// The taint key the node lifecycle controller puts on cordoned nodes.
pub use kubeplane_core::taints::TAINT_NODE_UNSCHEDULABLE;

static UNSCHEDULABLE_TAINT: LazyLock<Taint> = LazyLock::new(|| Taint {
    key: TAINT_NODE_UNSCHEDULABLE.to_string(),
    effect: EFFECT_NO_SCHEDULE.to_string(),
    value: None,
    time_added: None,
});

#[derive(Debug, Default)]
pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        // With queueing hints (GA in v1.34) upstream registers Node Add|UpdateNodeTaint and Pod
        // UpdatePodToleration.
        Some(vec![
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType(ActionType::ADD.0 | ActionType::UPDATE_NODE_TAINT.0),
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

fn tolerates_unschedulable(tolerations: &[k8s_openapi::api::core::v1::Toleration]) -> bool {
    tolerates_any(tolerations, &UNSCHEDULABLE_TAINT)
}

impl FilterPlugin for NodeUnschedulable {
    /// The pod's tolerations against the node's `spec.unschedulable`.
    fn node_local(&self) -> bool {
        true
    }

    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !node.unschedulable() || tolerates_unschedulable(pod.tolerations()) {
            return Status::success();
        }
        Status::unresolvable(REASON_UNSCHEDULABLE)
    }
}

fn node_unschedulable(n: &Node) -> bool {
    n.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

/// Queue when a schedulable node is added or a node stops being unschedulable.
fn is_schedulable_after_node_change(
    _pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (old, new) = node_event(old, new)?;
    let was_unschedulable = old.is_none_or(|n| node_unschedulable(n));
    if was_unschedulable && !node_unschedulable(new) {
        Ok(QueueingHint::Queue)
    } else {
        Ok(QueueingHint::QueueSkip)
    }
}

/// Queue when the waiting pod itself now tolerates the unschedulable taint.
fn is_schedulable_after_pod_toleration_change(
    pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (_, new) = pod_event(old, new)?;
    let Some(new) = new else {
        return Ok(QueueingHint::QueueSkip);
    };
    let tolerations = new
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[]);
    if uid_of(new) == uid_of(pod) && tolerates_unschedulable(tolerations) {
        Ok(QueueingHint::Queue)
    } else {
        Ok(QueueingHint::QueueSkip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{toleration, NodeBuilder, PodBuilder, PodBuilderExt};
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn filter() {
        let tol = toleration(TAINT_NODE_UNSCHEDULABLE, "Exists", "", "NoSchedule");
        let cases = [
            (
                "a schedulable node accepts a pod",
                PodBuilder::new("p"),
                NodeBuilder::new("n"),
                Status::success(),
            ),
            (
                "an explicitly schedulable node accepts a pod",
                PodBuilder::new("p"),
                NodeBuilder::new("n").unschedulable(false),
                Status::success(),
            ),
            (
                "an unschedulable node rejects a pod without the toleration",
                PodBuilder::new("p"),
                NodeBuilder::new("n").unschedulable(true),
                Status::unresolvable(REASON_UNSCHEDULABLE),
            ),
            (
                "an unschedulable node accepts a pod tolerating the unschedulable taint",
                PodBuilder::new("p").toleration(tol.clone()),
                NodeBuilder::new("n").unschedulable(true),
                Status::success(),
            ),
        ];
        for (name, pod, node, want) in cases {
            let got = NodeUnschedulable.filter(&CycleState::new(), &pod.info(), &node.info());
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn node_change_hints() {
        let pod: kubeplane_api::StoredPod = PodBuilder::new("p").obj().into();
        let sched = NodeBuilder::new("n").obj();
        let unsched = NodeBuilder::new("n").unschedulable(true).obj();
        let hint = |old: Option<&Node>, new: &Node| {
            is_schedulable_after_node_change(
                &pod,
                old.cloned()
                    .map(kubeplane_api::StoredNode::from)
                    .as_ref()
                    .map(EventObject::Node),
                Some(EventObject::Node(&new.clone().into())),
            )
            .unwrap()
        };
        assert_eq!(
            hint(None, &sched),
            QueueingHint::Queue,
            "an added schedulable node"
        );
        assert_eq!(
            hint(None, &unsched),
            QueueingHint::QueueSkip,
            "an added cordoned node"
        );
        assert_eq!(
            hint(Some(&unsched), &sched),
            QueueingHint::Queue,
            "an uncordoned node"
        );
        assert_eq!(
            hint(Some(&sched), &sched),
            QueueingHint::QueueSkip,
            "an unrelated update"
        );
    }

    #[test]
    fn pod_toleration_hints() {
        let pod: kubeplane_api::StoredPod = PodBuilder::new("p").obj().into();
        let tol = toleration(TAINT_NODE_UNSCHEDULABLE, "Exists", "", "NoSchedule");
        let same_tolerating = PodBuilder::new("p").toleration(tol.clone()).obj();
        let same_other = PodBuilder::new("p")
            .toleration(toleration("foo", "Exists", "", ""))
            .obj();
        let other = PodBuilder::new("q").toleration(tol).obj();
        let hint = |new: &Pod| {
            is_schedulable_after_pod_toleration_change(
                &pod,
                Some(EventObject::Pod(&pod)),
                Some(EventObject::Pod(&new.clone().into())),
            )
            .unwrap()
        };
        assert_eq!(hint(&same_tolerating), QueueingHint::Queue);
        assert_eq!(hint(&same_other), QueueingHint::QueueSkip);
        assert_eq!(hint(&other), QueueingHint::QueueSkip);
    }
}

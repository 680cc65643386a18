//! NodeName (Filter): a pod with `spec.nodeName` set only fits the node of that name
//! (upstream `plugins/nodename/node_name.go`).

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;

use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EventObject, EventResource,
    FilterPlugin, NodeInfo, Plugin, PodInfo, QueueingHint, Status,
};
use crate::plugins::helper::node_event;

pub const NAME: &str = "NodeName";

/// Filter reason when the pod names another node.
pub const REASON: &str = "node(s) didn't match the requested node name";

#[derive(Debug, Default)]
pub struct NodeName;

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        // With queueing hints upstream registers only Node Add.
        Some(vec![ClusterEventWithHint::with_hint(
            ClusterEvent::new(EventResource::Node, ActionType::ADD, "NodeAdd"),
            is_schedulable_after_node_add,
        )])
    }
}

impl FilterPlugin for NodeName {
    /// The pod's `spec.nodeName` against the node's name.
    fn node_local(&self) -> bool {
        true
    }

    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        match pod.node_name() {
            Some(wanted) if wanted != node.name => Status::unresolvable(REASON),
            _ => Status::success(),
        }
    }
}

/// Queue when the added node is the one the pod names (or the pod names none).
fn is_schedulable_after_node_add(
    pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (_, new) = node_event(old, new)?;
    let wanted = pod.node_name().unwrap_or("");
    if wanted.is_empty() || Some(wanted) == new.metadata.name.as_deref() {
        Ok(QueueingHint::Queue)
    } else {
        Ok(QueueingHint::QueueSkip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{NodeBuilder, PodBuilder, PodBuilderExt};

    #[test]
    fn filter() {
        let cases = [
            (
                "a pod without nodeName fits any node",
                PodBuilder::new("p"),
                Status::success(),
            ),
            (
                "a pod naming this node fits it",
                PodBuilder::new("p").node("foo"),
                Status::success(),
            ),
            (
                "a pod naming another node does not fit",
                PodBuilder::new("p").node("bar"),
                Status::unresolvable(REASON),
            ),
        ];
        for (name, pod, want) in cases {
            let got = NodeName.filter(
                &CycleState::new(),
                &pod.info(),
                &NodeBuilder::new("foo").info(),
            );
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn node_add_hint_queues_only_for_the_named_node() {
        let pod: kubeplane_api::StoredPod = PodBuilder::new("p").node("foo").obj().into();
        let foo: kubeplane_api::StoredNode = NodeBuilder::new("foo").obj().into();
        let bar: kubeplane_api::StoredNode = NodeBuilder::new("bar").obj().into();
        let hint =
            |n| is_schedulable_after_node_add(&pod, None, Some(EventObject::Node(n))).unwrap();
        assert_eq!(hint(&foo), QueueingHint::Queue);
        assert_eq!(hint(&bar), QueueingHint::QueueSkip);
    }
}

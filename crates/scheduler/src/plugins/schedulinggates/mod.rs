//! SchedulingGates (PreEnqueue): a pod with `spec.schedulingGates` stays out of activeQ until
//! every gate is removed (upstream `plugins/schedulinggates/scheduling_gates.go`).

use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, EventObject, EventResource, Plugin, PodInfo,
    PreEnqueuePlugin, QueueingHint, Status,
};
use crate::plugins::helper::{pod_event, uid_of};
use kubeplane_api::StoredPod;

pub const NAME: &str = "SchedulingGates";

/// Prefix of the rejection message; the gate names follow in Go slice form, `[a b]`.
pub const REASON_WAITING_PREFIX: &str = "waiting for scheduling gates: ";

#[derive(Debug, Default)]
pub struct SchedulingGates;

impl Plugin for SchedulingGates {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(vec![ClusterEventWithHint::with_hint(
            ClusterEvent::new(
                EventResource::Pod,
                ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
                "PodUpdatePodSchedulingGatesEliminated",
            ),
            is_schedulable_after_gates_eliminated,
        )])
    }
}

impl PreEnqueuePlugin for SchedulingGates {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let gates = pod.spec().scheduling_gates.as_deref().unwrap_or(&[]);
        if gates.is_empty() {
            return Status::success();
        }
        let names: Vec<&str> = gates.iter().map(|g| g.name.as_str()).collect();
        Status::unresolvable(format!("{REASON_WAITING_PREFIX}[{}]", names.join(" ")))
    }
}

/// Queue only when the pod whose gates were removed is the waiting pod itself.
fn is_schedulable_after_gates_eliminated(
    pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (_, new) = pod_event(old, new)?;
    match new {
        Some(p) if uid_of(p) == uid_of(pod) => Ok(QueueingHint::Queue),
        _ => Ok(QueueingHint::QueueSkip),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::{PodBuilder, PodBuilderExt};
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn pre_enqueue() {
        let cases = [
            (
                "a pod without scheduling gates may enter the queue",
                PodBuilder::new("p"),
                Status::success(),
            ),
            (
                "a pod with gates waits, listing them in Go slice form",
                PodBuilder::new("p")
                    .scheduling_gate("foo")
                    .scheduling_gate("bar"),
                Status::new(
                    Code::UnschedulableAndUnresolvable,
                    "waiting for scheduling gates: [foo bar]",
                ),
            ),
        ];
        for (name, pod, want) in cases {
            assert_eq!(SchedulingGates.pre_enqueue(&pod.info()), want, "{name}");
        }
    }

    #[test]
    fn hint_queues_only_the_pod_whose_gates_were_removed() {
        let pod: kubeplane_api::StoredPod =
            PodBuilder::new("p").scheduling_gate("foo").obj().into();
        let same_new = PodBuilder::new("p").obj();
        let other_new = PodBuilder::new("other").obj();
        let hint = |new: &Pod| {
            is_schedulable_after_gates_eliminated(
                &pod,
                Some(EventObject::Pod(&pod)),
                Some(EventObject::Pod(&new.clone().into())),
            )
            .unwrap()
        };
        assert_eq!(hint(&same_new), QueueingHint::Queue);
        assert_eq!(hint(&other_new), QueueingHint::QueueSkip);
    }
}

//! NodePorts (PreFilter, Filter): a pod's host ports must be free on the node (upstream
//! `plugins/nodeports/node_ports.go`).

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;

use crate::cache::Snapshot;
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EventObject, EventResource,
    FilterPlugin, HostPort, NodeInfo, Plugin, PodInfo, PreFilterPlugin, PreFilterResult,
    QueueingHint, Status,
};
use crate::plugins::helper::pod_event;

pub const NAME: &str = "NodePorts";

/// Filter reason when a wanted host port is taken.
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

static STATE_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreFilterNodePorts");

/// The pod's wanted host ports, computed once per cycle.
#[derive(Clone, Debug)]
struct PreFilterState(Vec<HostPort>);

#[derive(Debug, Default)]
pub struct NodePorts;

/// The host ports a pod uses (upstream `util.GetHostPorts`): ports with hostPort > 0 of the
/// regular containers and of the restartable (sidecar) init containers, which run for the
/// pod's whole life; a plain init container's ports are free again once it finished. Empty IP
/// means 0.0.0.0 and empty protocol TCP.
pub fn host_ports(pod: &StoredPod) -> Vec<HostPort> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    let mut out = Vec::new();
    for c in sidecars.chain(spec.containers.iter()) {
        for p in c.ports.iter().flatten() {
            let Some(port) = p.host_port.filter(|&hp| hp > 0) else {
                continue;
            };
            let ip = p.host_ip.as_deref().filter(|s| !s.is_empty());
            let proto = p.protocol.as_deref().filter(|s| !s.is_empty());
            out.push(HostPort {
                ip: ip.unwrap_or(HostPort::WILDCARD_IP).to_string(),
                protocol: proto.unwrap_or("TCP").to_string(),
                port,
            });
        }
    }
    out
}

/// Whether none of `wanted` conflicts with `used`.
fn fits_ports(wanted: &[HostPort], used: &[HostPort]) -> bool {
    !wanted.iter().any(|w| used.iter().any(|u| w.conflicts(u)))
}

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        // With queueing hints: Pod Delete (hinted) and Node Add (always Queue). Container ports
        // are immutable, so pod updates never matter.
        Some(vec![
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(EventResource::Pod, ActionType::DELETE, "PodDelete"),
                is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint::new(ClusterEvent::new(
                EventResource::Node,
                ActionType::ADD,
                "NodeAdd",
            )),
        ])
    }
}

impl PreFilterPlugin for NodePorts {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let wanted = host_ports(&pod.pod);
        if wanted.is_empty() {
            return (None, Status::skip());
        }
        state.write(&STATE_KEY, PreFilterState(wanted));
        (None, Status::success())
    }
}

impl FilterPlugin for NodePorts {
    /// The pod's host ports (PreFilter) against the NodeInfo's used ports.
    fn node_local(&self) -> bool {
        true
    }

    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(PreFilterState(wanted)) = state.read::<PreFilterState>(&STATE_KEY) else {
            return Status::error(format!("reading {STATE_KEY:?} from cycleState: not found"));
        };
        if fits_ports(wanted, &node.used_ports) {
            Status::success()
        } else {
            Status::unschedulable(REASON)
        }
    }
}

/// Queue when the deleted pod was bound or nominated and used a port the waiting pod wants.
fn is_schedulable_after_pod_deleted(
    pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (deleted, _) = pod_event(old, new)?;
    let Some(deleted) = deleted else {
        return Err("a pod delete event without the deleted pod".to_string());
    };
    let bound = deleted.node_name().is_some_and(|n| !n.is_empty());
    let nominated = deleted
        .status()
        .and_then(|s| s.nominated_node_name())
        .is_some_and(|n| !n.is_empty());
    if !bound && !nominated {
        return Ok(QueueingHint::QueueSkip);
    }
    let freed = host_ports(deleted);
    if freed.is_empty() || fits_ports(&host_ports(pod), &freed) {
        return Ok(QueueingHint::QueueSkip);
    }
    Ok(QueueingHint::Queue)
}

#[cfg(test)]
mod tests;

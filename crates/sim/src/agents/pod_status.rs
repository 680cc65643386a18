//! What a node agent reports about a pod's containers when they end or restart, and the
//! reasons and messages of the node conditions it posts: the kubelet's status manager side,
//! apart from the agent's timers and API writes.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus, NodeCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::StoredPod;
use kubeplane_core::time::SimDuration;

use super::{EXIT_CODE_ANNOTATION, RUN_DURATION_ANNOTATION};

/// The pod's `kubeplane.io/run-duration`, if it has a valid one.
pub(super) fn run_duration(pod: &StoredPod) -> Option<SimDuration> {
    let v = pod
        .metadata
        .annotations
        .as_ref()?
        .get(RUN_DURATION_ANNOTATION)?;
    kubeplane_core::duration::parse_duration(v)
        .ok()
        .filter(|d| d.0 >= 0)
}

/// The pod's `kubeplane.io/exit-code` (0 when absent or not a number).
pub(super) fn exit_code(pod: &StoredPod) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(EXIT_CODE_ANNOTATION))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The terminated state of a container that ran since its running state's start.
fn terminated(cs: &ContainerStatus, code: i32, ts: &Time) -> ContainerStateTerminated {
    let started = cs
        .state
        .as_ref()
        .and_then(|s| s.running.as_ref())
        .and_then(|r| r.started_at.clone());
    ContainerStateTerminated {
        exit_code: code,
        reason: Some(if code == 0 { "Completed" } else { "Error" }.into()),
        started_at: started,
        finished_at: Some(ts.clone()),
        container_id: None,
        ..Default::default()
    }
}

/// The pod as the kubelet reports it once its containers exited for good: Succeeded or
/// Failed, every container terminated, Ready and ContainersReady false (`PodCompleted`).
pub(crate) fn finished_pod(pod: &StoredPod, code: i32, ts: &Time) -> StoredPod {
    let mut np = StoredPod::clone(pod);
    let mut status = np.status_k8s().unwrap_or_default();
    status.phase = Some(if code == 0 { "Succeeded" } else { "Failed" }.into());
    for cs in status.container_statuses.iter_mut().flatten() {
        let t = terminated(cs, code, ts);
        cs.state = Some(ContainerState {
            terminated: Some(t),
            ..Default::default()
        });
        cs.ready = false;
        cs.started = Some(false);
    }
    for c in status.conditions.iter_mut().flatten() {
        if (c.type_ == "Ready" || c.type_ == "ContainersReady") && c.status != "False" {
            c.status = "False".into();
            c.reason = Some("PodCompleted".into());
            c.last_transition_time = Some(ts.clone());
        }
    }
    np.set_status(Some(status));
    np.metadata.resource_version = None;
    np
}

/// The pod after its containers exited and were restarted at once: the last state is the
/// terminated run, the restart count grows.
pub(super) fn restarted_pod(pod: &StoredPod, code: i32, ts: &Time) -> StoredPod {
    let mut np = StoredPod::clone(pod);
    let mut status = np.status_k8s().unwrap_or_default();
    for cs in status.container_statuses.iter_mut().flatten() {
        let t = terminated(cs, code, ts);
        cs.last_state = Some(ContainerState {
            terminated: Some(t),
            ..Default::default()
        });
        cs.state = Some(ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(ts.clone()),
            }),
            ..Default::default()
        });
        cs.restart_count += 1;
    }
    np.set_status(Some(status));
    np.metadata.resource_version = None;
    np
}

pub(super) fn default_reason(type_: &str, status: &str) -> &'static str {
    match (type_, status) {
        ("Ready", "True") => "KubeletReady",
        ("Ready", _) => "KubeletNotReady",
        ("MemoryPressure", "True") => "KubeletHasInsufficientMemory",
        ("MemoryPressure", _) => "KubeletHasSufficientMemory",
        ("DiskPressure", "True") => "KubeletHasDiskPressure",
        ("DiskPressure", _) => "KubeletHasNoDiskPressure",
        ("PIDPressure", "True") => "KubeletHasInsufficientPID",
        ("PIDPressure", _) => "KubeletHasSufficientPID",
        ("NetworkUnavailable", "True") => "NoRouteCreated",
        _ => "RouteCreated",
    }
}

pub(super) fn default_message(type_: &str, status: &str) -> &'static str {
    match (type_, status) {
        ("Ready", "True") => "kubelet is posting ready status",
        ("Ready", _) => "container runtime network not ready",
        ("MemoryPressure", "True") => "kubelet has insufficient memory available",
        ("MemoryPressure", _) => "kubelet has sufficient memory available",
        ("DiskPressure", "True") => "kubelet has disk pressure",
        ("DiskPressure", _) => "kubelet has no disk pressure",
        ("PIDPressure", "True") => "kubelet has insufficient PID available",
        ("PIDPressure", _) => "kubelet has sufficient PID available",
        ("NetworkUnavailable", "True") => "route not created",
        _ => "route created",
    }
}

/// Sets the node condition `type_` as a node agent's status post reports it: its status and
/// reason, a new transition time and message when the status changed, and the heartbeat; a
/// condition the node lacks is added. Strings already equal are kept, not replaced by copies
/// (a post that renews only heartbeats allocates none). Whether anything but the heartbeat
/// changed.
pub(super) fn set_condition(
    conditions: &mut Vec<NodeCondition>,
    type_: &str,
    status: &str,
    reason: &str,
    ts: &Time,
) -> bool {
    let Some(c) = conditions.iter_mut().find(|c| c.type_ == type_) else {
        conditions.push(NodeCondition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: Some(reason.to_string()),
            message: Some(default_message(type_, status).to_string()),
            last_heartbeat_time: Some(ts.clone()),
            last_transition_time: Some(ts.clone()),
        });
        return true;
    };
    let mut changed = false;
    if c.status != status {
        c.last_transition_time = Some(ts.clone());
        c.message = Some(default_message(type_, status).to_string());
        c.status = status.to_string();
        changed = true;
    }
    if c.reason.as_deref() != Some(reason) {
        c.reason = Some(reason.to_string());
        changed = true;
    }
    c.last_heartbeat_time = Some(ts.clone());
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    #[test]
    fn a_post_sets_status_reason_and_heartbeat_and_moves_the_transition_only_on_a_change() {
        let (t0, t1, t2) = (
            at("2025-01-01T00:00:00Z"),
            at("2025-01-01T00:05:00Z"),
            at("2025-01-01T00:10:00Z"),
        );
        let mut cs = Vec::new();
        assert!(set_condition(&mut cs, "Ready", "True", "KubeletReady", &t0));
        let first = cs[0].clone();
        assert_eq!(first.type_, "Ready");
        assert_eq!(first.status, "True");
        assert_eq!(first.reason.as_deref(), Some("KubeletReady"));
        assert_eq!(
            first.message.as_deref(),
            Some("kubelet is posting ready status")
        );
        assert_eq!(first.last_heartbeat_time, Some(t0.clone()));
        assert_eq!(first.last_transition_time, Some(t0.clone()));
        // The same report again: only the heartbeat moves, and the strings are the same
        // allocations (kept, not replaced by copies).
        let reason_ptr = cs[0].reason.as_ref().unwrap().as_ptr();
        assert!(!set_condition(
            &mut cs,
            "Ready",
            "True",
            "KubeletReady",
            &t1
        ));
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].last_heartbeat_time, Some(t1.clone()));
        let mut expected = first.clone();
        expected.last_heartbeat_time = Some(t1.clone());
        assert_eq!(cs[0], expected);
        assert_eq!(cs[0].reason.as_ref().unwrap().as_ptr(), reason_ptr);
        // Another reason with the same status: the reason changes, the transition does not.
        assert!(set_condition(&mut cs, "Ready", "True", "Custom", &t1));
        assert_eq!(cs[0].reason.as_deref(), Some("Custom"));
        assert_eq!(cs[0].last_transition_time, Some(t0.clone()));
        // A status change: transition, message, status, reason and heartbeat.
        assert!(set_condition(
            &mut cs,
            "Ready",
            "False",
            "KubeletNotReady",
            &t2
        ));
        assert_eq!(cs[0].status, "False");
        assert_eq!(cs[0].reason.as_deref(), Some("KubeletNotReady"));
        assert_eq!(
            cs[0].message.as_deref(),
            Some("container runtime network not ready")
        );
        assert_eq!(cs[0].last_transition_time, Some(t2.clone()));
        assert_eq!(cs[0].last_heartbeat_time, Some(t2.clone()));
        // Another type is appended after the existing one.
        assert!(set_condition(
            &mut cs,
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            &t2,
        ));
        let types: Vec<&str> = cs.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "DiskPressure"]);
        assert_eq!(
            cs[1].message.as_deref(),
            Some("kubelet has no disk pressure")
        );
    }
}

//! What a node agent reports about a pod's containers when they end or restart, and the
//! reasons and messages of the node conditions it posts: the kubelet's status manager side,
//! apart from the agent's timers and API writes.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus, Pod,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_core::time::SimDuration;

use super::{EXIT_CODE_ANNOTATION, RUN_DURATION_ANNOTATION};

/// The pod's `kubeplane.io/run-duration`, if it has a valid one.
pub(super) fn run_duration(pod: &Pod) -> Option<SimDuration> {
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
pub(super) fn exit_code(pod: &Pod) -> i32 {
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
pub(crate) fn finished_pod(pod: &Pod, code: i32, ts: &Time) -> Pod {
    let mut np = Pod::clone(pod);
    let status = np.status.get_or_insert_with(Default::default);
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
    np.metadata.resource_version = None;
    np
}

/// The pod after its containers exited and were restarted at once: the last state is the
/// terminated run, the restart count grows.
pub(super) fn restarted_pod(pod: &Pod, code: i32, ts: &Time) -> Pod {
    let mut np = Pod::clone(pod);
    let status = np.status.get_or_insert_with(Default::default);
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

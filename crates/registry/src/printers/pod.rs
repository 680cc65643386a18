//! The Pod's row (upstream `printPod`): READY counts ready containers (sidecars included),
//! STATUS is the pod's aggregate status string (`Running`, `Init:1/3`, `CrashLoopBackOff`,
//! `Completed`, `Terminating`, `Unknown` for a deleting pod on a lost node,
//! `SchedulingGated`, ...), RESTARTS adds how long ago the last restart was (`3 (5m ago)`).

use k8s_openapi::api::core::v1::{Container, ContainerStatus, PodCondition};
use kubeplane_api::Object;
use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use serde_json::{json, Value};

use super::descriptions as d;
use super::{object_age, Column, Row, AGE, NAME};

pub(super) const COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    Column::new(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
    ),
    Column::new(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    Column::new("IP", "string", d::POD_STATUS_POD_IP).wide(),
    Column::new("Node", "string", d::POD_SPEC_NODE_NAME).wide(),
    Column::new("Nominated Node", "string", d::POD_STATUS_NOMINATED_NODE_NAME).wide(),
    Column::new("Readiness Gates", "string", d::POD_SPEC_READINESS_GATES).wide(),
];

/// The reason of a pod whose node stopped reporting (upstream `NodeUnreachablePodReason`).
const NODE_LOST: &str = "NodeLost";

pub(super) fn row(object: &Object, now: jiff::Timestamp) -> Row {
    let Some(pod) = object.as_pod() else {
        return Row::default();
    };
    let summary = summarize(pod);
    let restarts = match summary.last_restart {
        Some(at) if summary.restarts != 0 => {
            format!("{} ({} ago)", summary.restarts, super::since(at, now))
        }
        _ => summary.restarts.to_string(),
    };
    let mut cells = vec![
        object.name().into(),
        format!("{}/{}", summary.ready, summary.total).into(),
        summary.reason.into(),
        restarts.into(),
        object_age(object, now),
    ];
    cells.extend(wide_cells(pod));
    let conditions = match phase(pod) {
        "Succeeded" => Some(completed(
            "Succeeded",
            "The pod has completed successfully.",
        )),
        "Failed" => Some(completed("Failed", "The pod failed.")),
        _ => None,
    };
    Row { cells, conditions }
}

/// Upstream's `podSuccessConditions` / `podFailedConditions`.
fn completed(reason: &str, message: &str) -> Value {
    json!([{ "type": "Completed", "status": "True", "reason": reason, "message": message }])
}

/// What STATUS, READY and RESTARTS say about a pod.
#[derive(Debug, PartialEq)]
pub(super) struct Summary {
    pub reason: String,
    pub ready: usize,
    pub total: usize,
    pub restarts: i64,
    pub last_restart: Option<jiff::Timestamp>,
}

fn phase(pod: &StoredPod) -> &str {
    pod.phase().unwrap_or("")
}

fn conditions(pod: &StoredPod) -> Vec<PodCondition> {
    pod.status_k8s()
        .and_then(|s| s.conditions)
        .unwrap_or_default()
}

fn has_condition(pod: &StoredPod, type_: &str, status: &str) -> bool {
    conditions(pod)
        .iter()
        .any(|c| c.type_ == type_ && c.status == status)
}

fn is_restartable(init: Option<&Container>) -> bool {
    init.and_then(|c| c.restart_policy.as_deref()) == Some("Always")
}

/// The finish time of a container's last termination, if it has one (a termination without
/// one leaves the zero time, which upstream does not print).
fn last_termination(c: &ContainerStatus) -> Option<jiff::Timestamp> {
    let t = c.last_state.as_ref()?.terminated.as_ref()?;
    t.finished_at.as_ref().map(|f| f.0)
}

fn later(a: Option<jiff::Timestamp>, b: Option<jiff::Timestamp>) -> Option<jiff::Timestamp> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// Upstream `printPod`'s status computation.
pub(super) fn summarize(pod: &StoredPod) -> Summary {
    let status = pod.status_k8s();
    let status = status.as_ref();
    let spec = pod.spec.as_ref();
    let inits: &[Container] = spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or(&[]);
    let mut s = Summary {
        reason: status
            .and_then(|s| s.reason.clone())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| phase(pod).to_string()),
        ready: 0,
        total: spec.map_or(0, |s| s.containers.len())
            + inits.iter().filter(|c| is_restartable(Some(c))).count(),
        restarts: 0,
        last_restart: None,
    };
    if conditions(pod)
        .iter()
        .any(|c| c.type_ == "PodScheduled" && c.reason.as_deref() == Some("SchedulingGated"))
    {
        s.reason = "SchedulingGated".to_string();
    }
    let (initializing, sidecar_restarts, sidecar_last) = init_containers(pod, inits, &mut s);
    if !initializing || has_condition(pod, "Initialized", "True") {
        s.restarts = sidecar_restarts;
        s.last_restart = sidecar_last;
        app_containers(pod, &mut s);
    }
    let deleting = pod.metadata.deletion_timestamp.is_some();
    if deleting && status.and_then(|s| s.reason.as_deref()) == Some(NODE_LOST) {
        s.reason = "Unknown".to_string();
    } else if deleting && !matches!(phase(pod), "Succeeded" | "Failed") {
        s.reason = "Terminating".to_string();
    }
    s
}

/// Walks the init containers' statuses up to the first one not done: counts restarts and
/// ready sidecars, and sets `Init:...` while initializing. Returns whether the pod is
/// initializing and the sidecars' own restarts and last restart.
fn init_containers(
    pod: &StoredPod,
    inits: &[Container],
    s: &mut Summary,
) -> (bool, i64, Option<jiff::Timestamp>) {
    let status = pod.status_k8s();
    let statuses = status
        .as_ref()
        .and_then(|st| st.init_container_statuses.as_deref())
        .unwrap_or(&[]);
    let (mut sidecar_restarts, mut sidecar_last) = (0, None);
    for (i, c) in statuses.iter().enumerate() {
        s.restarts += i64::from(c.restart_count);
        s.last_restart = later(s.last_restart, last_termination(c));
        let restartable = is_restartable(inits.iter().find(|ic| ic.name == c.name));
        if restartable {
            sidecar_restarts += i64::from(c.restart_count);
            sidecar_last = later(sidecar_last, last_termination(c));
        }
        let state = c.state.as_ref();
        let terminated = state.and_then(|st| st.terminated.as_ref());
        let waiting_reason = state
            .and_then(|st| st.waiting.as_ref())
            .and_then(|w| w.reason.as_deref())
            .filter(|r| !r.is_empty());
        if terminated.is_some_and(|t| t.exit_code == 0) {
            continue;
        }
        if restartable && c.started == Some(true) {
            if c.ready {
                s.ready += 1;
            }
            continue;
        }
        s.reason = if let Some(t) = terminated {
            match t.reason.as_deref().filter(|r| !r.is_empty()) {
                Some(r) => format!("Init:{r}"),
                None => match t.signal.filter(|&sig| sig != 0) {
                    Some(sig) => format!("Init:Signal:{sig}"),
                    None => format!("Init:ExitCode:{}", t.exit_code),
                },
            }
        } else if let Some(r) = waiting_reason.filter(|&r| r != "PodInitializing") {
            format!("Init:{r}")
        } else {
            format!("Init:{i}/{}", inits.len())
        };
        return (true, sidecar_restarts, sidecar_last);
    }
    (false, sidecar_restarts, sidecar_last)
}

/// The app containers, last to first: the first one's reason wins, restarts add up, and a
/// `Completed` pod with a container still running reads `Running` (or `NotReady`).
fn app_containers(pod: &StoredPod, s: &mut Summary) {
    let status = pod.status_k8s();
    let statuses = status
        .as_ref()
        .and_then(|st| st.container_statuses.as_deref())
        .unwrap_or(&[]);
    let mut has_running = false;
    for c in statuses.iter().rev() {
        s.restarts += i64::from(c.restart_count);
        s.last_restart = later(s.last_restart, last_termination(c));
        let state = c.state.as_ref();
        let waiting = state
            .and_then(|st| st.waiting.as_ref())
            .and_then(|w| w.reason.as_deref())
            .filter(|r| !r.is_empty());
        let terminated = state.and_then(|st| st.terminated.as_ref());
        if let Some(r) = waiting {
            s.reason = r.to_string();
        } else if let Some(t) = terminated {
            s.reason = match t.reason.as_deref().filter(|r| !r.is_empty()) {
                Some(r) => r.to_string(),
                None => match t.signal.filter(|&sig| sig != 0) {
                    Some(sig) => format!("Signal:{sig}"),
                    None => format!("ExitCode:{}", t.exit_code),
                },
            };
        } else if c.ready && state.is_some_and(|st| st.running.is_some()) {
            has_running = true;
            s.ready += 1;
        }
    }
    if s.reason == "Completed" && has_running {
        s.reason = if has_condition(pod, "Ready", "True") {
            "Running".to_string()
        } else {
            "NotReady".to_string()
        };
    }
}

/// IP, NODE, NOMINATED NODE, READINESS GATES.
fn wide_cells(pod: &StoredPod) -> Vec<Value> {
    let status = pod.status_k8s();
    let status = status.as_ref();
    let spec = pod.spec.as_ref();
    let or_none = |s: Option<&str>| -> Value {
        match s.filter(|s| !s.is_empty()) {
            Some(s) => s.into(),
            None => "<none>".into(),
        }
    };
    let ip = status
        .and_then(|s| s.pod_ips.as_ref())
        .and_then(|ips| ips.first())
        .map(|ip| ip.ip.as_str());
    let node = pod.node_name();
    let nominated = status.and_then(|s| s.nominated_node_name.as_deref());
    let gates = spec
        .and_then(|s| s.readiness_gates.as_deref())
        .unwrap_or(&[]);
    let gates_cell = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_ = gates
            .iter()
            .filter(|g| {
                conditions(pod)
                    .iter()
                    .find(|c| c.type_ == g.condition_type)
                    .is_some_and(|c| c.status == "True")
            })
            .count();
        format!("{true_}/{}", gates.len())
    };
    vec![
        or_none(ip),
        or_none(node),
        or_none(nominated),
        gates_cell.into(),
    ]
}

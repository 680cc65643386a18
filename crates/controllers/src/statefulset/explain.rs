//! The StatefulSet controller's explanation records (`--explain`): one `StatefulSetDecision`
//! record where a user asks "why": why the next ordinal is not created yet (`WaitingForPod`:
//! OrderedReady waits for the pod before it to be Running and Ready), why a RollingUpdate
//! does not delete the next outdated pod yet (`RolloutWaiting`: a pod is unavailable, or
//! maxUnavailable is reached), and why an update stopped with outdated pods left
//! (`UpdateStopped`: the partition, or the OnDelete strategy).
//!
//! The shape is the DaemonSet controller's (and every controller's): `time`, `kind`, the set's
//! `namespace` and `name`, `controller`, `decision`, `reason`, `message`, and the facts behind
//! it ([`crate::explain::record`]); each is written once while it holds
//! ([`crate::explain::Explained`]).

use kubeplane_api::StoredPod;
use kubeplane_core::SimTime;
use serde_json::{json, Value};

use super::CONTROLLER_NAME;
use crate::controller_utils::NsName;
use crate::explain::record as shared_record;

/// The record's kind.
pub const KIND: &str = "StatefulSetDecision";

fn record(now: SimTime, key: &NsName, decision: &str, reason: &str, message: String) -> Value {
    shared_record(KIND, CONTROLLER_NAME, now, key, decision, reason, message)
}

fn name(pod: &StoredPod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

/// "Running and Ready", with the minReadySeconds a pod must also have been Ready for.
fn healthy(min_ready_secs: i32) -> String {
    if min_ready_secs > 0 {
        format!("Running and Ready for minReadySeconds {min_ready_secs}")
    } else {
        "Running and Ready".to_string()
    }
}

/// What `pod` is instead of healthy.
fn state(pod: &StoredPod) -> String {
    if pod.metadata.deletion_timestamp.is_some() {
        return "terminating".to_string();
    }
    let phase = pod.phase().unwrap_or("Pending");
    let ready = pod
        .status()
        .and_then(|s| s.condition_status("Ready"))
        .is_some_and(|c| c == "True");
    match (phase, ready) {
        ("Running", true) => "Ready for less than minReadySeconds".to_string(),
        ("Running", false) => "Running, not Ready".to_string(),
        (phase, _) => phase.to_string(),
    }
}

/// OrderedReady: `next` is not created until `blocking` is healthy.
pub(super) fn waiting_for_pod(
    now: SimTime,
    key: &NsName,
    blocking: &StoredPod,
    next: &str,
    min_ready_secs: i32,
) -> Value {
    let message = format!(
        "pod {next} is not created until pod {} is {} (podManagementPolicy OrderedReady); it is {}",
        name(blocking),
        healthy(min_ready_secs),
        state(blocking)
    );
    let mut r = record(now, key, "WaitingForPod", "OrderedReady", message);
    r["pod"] = json!(next);
    r["waitingFor"] = json!(name(blocking));
    r
}

/// RollingUpdate without MaxUnavailableStatefulSet: `next` (outdated) is not deleted until
/// `unavailable`, a higher ordinal, is healthy again.
pub(super) fn rollout_waiting_for_pod(
    now: SimTime,
    key: &NsName,
    unavailable: &StoredPod,
    next: &str,
    min_ready_secs: i32,
) -> Value {
    let message = format!(
        "the rolling update does not replace pod {next} until pod {} is {}; it is {}",
        name(unavailable),
        healthy(min_ready_secs),
        state(unavailable)
    );
    let mut r = record(now, key, "RolloutWaiting", "PodUnavailable", message);
    r["pod"] = json!(next);
    r["waitingFor"] = json!(name(unavailable));
    r
}

/// RollingUpdate with MaxUnavailableStatefulSet: `unavailable` pods exceed `max`.
pub(super) fn rollout_max_unavailable(
    now: SimTime,
    key: &NsName,
    unavailable: i64,
    max: i64,
    outdated: &[String],
) -> Value {
    let message = format!(
        "the rolling update replaces none of {} outdated pod(s): {unavailable} pod(s) are \
         unavailable and maxUnavailable is {max}",
        outdated.len()
    );
    let mut r = record(now, key, "RolloutWaiting", "MaxUnavailable", message);
    r["unavailable"] = json!(unavailable);
    r["maxUnavailable"] = json!(max);
    r["waiting"] = json!(outdated);
    r
}

/// The update is done as far as the strategy goes, and `outdated` keep their revision:
/// their ordinals are below `partition` (`Some`), or the strategy is OnDelete (`None`).
pub(super) fn update_stopped(
    now: SimTime,
    key: &NsName,
    partition: Option<i64>,
    outdated: &[String],
    update_revision: &str,
) -> Value {
    let pods = outdated.join(", ");
    let (reason, message) = match partition {
        Some(p) => (
            "Partition",
            format!(
                "the update stopped at partition {p}: the pods below it keep their revision \
                 instead of {update_revision} ({pods}); lower \
                 spec.updateStrategy.rollingUpdate.partition to go on"
            ),
        ),
        None => (
            "OnDelete",
            format!(
                "the OnDelete strategy updates a pod to {update_revision} only when it is \
                 deleted; not updated: {pods}"
            ),
        ),
    };
    let mut r = record(now, key, "UpdateStopped", reason, message);
    r["partition"] = json!(partition);
    r["outdated"] = json!(outdated);
    r["updateRevision"] = json!(update_revision);
    r
}

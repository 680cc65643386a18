//! The DaemonSet controller's explanation records (`--explain`): one `DaemonSetDecision` record
//! where a user asks "why": why a node has no daemon pod (`NodeSkipped`: the template's
//! `nodeName`, its nodeSelector, its required node affinity, or a taint the pod does not
//! tolerate, named), and why a RollingUpdate does not replace more old pods yet
//! (`RolloutWaiting`: maxUnavailable reached).
//!
//! The shape is the one of the other controllers' records: `time`, `kind`, the set's
//! `namespace` and `name`, `controller`, `decision`, `reason`, a one-line `message`, and the
//! facts behind it ([`crate::explain::record`]). A record is written when a decision first
//! holds and again only when it changes ([`crate::explain::Explained`]), not at every sync.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, PodSpec};
use kubeplane_core::nodeaffinity::RequiredNodeAffinity;
use kubeplane_core::taints::{find_untolerated_taint, EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE};
use kubeplane_core::SimTime;
use serde_json::{json, Value};

use super::util::add_or_update_daemon_pod_tolerations;
use super::CONTROLLER_NAME;
use crate::controller_utils::{labels, NsName};
use crate::explain::record;
use crate::node_util::format_taint;

/// The record's kind.
pub const KIND: &str = "DaemonSetDecision";

/// Why `node` does not run the set's pod (upstream `NodeShouldRunDaemonPod` returned false),
/// as a `NodeSkipped` record; `keeps_pod` when a pod already there may stay (a NoSchedule
/// taint only).
pub(super) fn node_skipped(
    now: SimTime,
    key: &NsName,
    ds: &DaemonSet,
    node: &Node,
    keeps_pod: bool,
) -> Value {
    let name = node.metadata.name.as_deref().unwrap_or("");
    let (reason, message, taint) = skip_reason(ds, node, name, keeps_pod);
    let mut r = record(
        KIND,
        CONTROLLER_NAME,
        now,
        key,
        "NodeSkipped",
        reason,
        message,
    );
    r["node"] = json!(name);
    if let Some(t) = taint {
        r["taint"] = json!(t);
    }
    r
}

/// The first of the checks the node fails, in upstream's order: the template's `nodeName`,
/// the nodeSelector, the required node affinity, the NoSchedule and NoExecute taints.
fn skip_reason(
    ds: &DaemonSet,
    node: &Node,
    name: &str,
    keeps_pod: bool,
) -> (&'static str, String, Option<String>) {
    let mut spec: PodSpec = ds
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.clone())
        .unwrap_or_default();
    add_or_update_daemon_pod_tolerations(&mut spec);
    let node_labels = labels(&node.metadata);
    let selector_only = PodSpec {
        node_selector: spec.node_selector.clone(),
        ..PodSpec::default()
    };
    let no_pod = format!("node {name} gets no daemon pod");
    match spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        // not a stored pod's spec
        Some(other) if other != name => {
            let m = format!("{no_pod}: the pod template's nodeName is {other}");
            return ("NodeName", m, None);
        }
        _ => {}
    }
    if !RequiredNodeAffinity::from_pod(&selector_only).matches(name, node_labels) {
        let m = format!("{no_pod}: its labels do not match the pod template's nodeSelector");
        return ("NodeSelectorMismatch", m, None);
    }
    if !RequiredNodeAffinity::from_pod(&spec).matches(name, node_labels) {
        let m = format!("{no_pod}: it does not match the pod template's required node affinity");
        return ("NodeAffinityMismatch", m, None);
    }
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[]);
    let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
    let untolerated = find_untolerated_taint(taints, tolerations, |t| {
        t.effect == EFFECT_NO_SCHEDULE || t.effect == EFFECT_NO_EXECUTE
    });
    let taint = untolerated.map(format_taint).unwrap_or_default();
    let stays = if keeps_pod {
        " (a daemon pod already there stays: the taint is NoSchedule)"
    } else {
        ""
    };
    let m = format!("{no_pod}: the pod does not tolerate its taint {taint}{stays}");
    ("UntoleratedTaint", m, Some(taint))
}

/// Why a RollingUpdate leaves `waiting` old (available) pods in place: `unavailable` of the
/// `desired` nodes' daemon pods are unavailable, and `maxUnavailable` allows no more.
pub(super) fn rollout_waiting(
    now: SimTime,
    key: &NsName,
    desired: i32,
    unavailable: i32,
    max_unavailable: i32,
    waiting: &[String],
) -> Value {
    let message = format!(
        "{} old pod(s) wait for their replacement: {unavailable} of {desired} node(s) have no \
         available daemon pod and maxUnavailable is {max_unavailable}; an old pod is deleted \
         once a new one is available",
        waiting.len()
    );
    let mut r = record(
        KIND,
        CONTROLLER_NAME,
        now,
        key,
        "RolloutWaiting",
        "MaxUnavailable",
        message,
    );
    r["unavailable"] = json!(unavailable);
    r["maxUnavailable"] = json!(max_unavailable);
    r["desiredNumberScheduled"] = json!(desired);
    r["waiting"] = json!(waiting);
    r
}

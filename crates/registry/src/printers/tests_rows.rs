//! Row tests: the pod's STATUS, READY and RESTARTS rules (cases from upstream's
//! `TestPrintPod` and `TestPrintPodWithRestartableInitContainer`) and one table per kind.

use serde_json::{json, Value};

use super::tests::{ago, cells, now, obj};
use super::*;

/// A pod of `n` app containers with `spec` merged in and the given status.
fn pod(n: usize, spec: Value, status: Value, deleting: bool) -> Value {
    let containers: Vec<Value> = (0..n).map(|i| json!({ "name": format!("c{i}") })).collect();
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "p", "namespace": "default" },
        "spec": { "containers": containers },
        "status": status,
    });
    for (k, v) in spec.as_object().unwrap() {
        p["spec"][k] = v.clone();
    }
    if deleting {
        p["metadata"]["deletionTimestamp"] = ago(10).into();
    }
    p
}

fn inits(names: &[&str], sidecar: bool) -> Value {
    let list: Vec<Value> = names
        .iter()
        .map(|n| {
            if sidecar {
                json!({ "name": n, "restartPolicy": "Always" })
            } else {
                json!({ "name": n })
            }
        })
        .collect();
    json!({ "initContainers": list })
}

fn running() -> Value {
    json!({ "running": {} })
}

fn waiting(reason: &str) -> Value {
    json!({ "waiting": { "reason": reason } })
}

fn terminated(reason: &str, exit_code: i32) -> Value {
    json!({ "terminated": { "reason": reason, "exitCode": exit_code } })
}

/// A last termination `secs` ago.
fn finished(secs: i64) -> Value {
    json!({ "terminated": { "exitCode": 0, "finishedAt": ago(secs) } })
}

/// READY, STATUS, RESTARTS of a pod.
fn summary(p: Value) -> (String, String, String) {
    let c = cells(p);
    let s = |i: usize| c[i].as_str().unwrap().to_string();
    (s(1), s(2), s(3))
}

#[test]
fn pod_status_ready_and_restarts_follow_upstream() {
    let no_spec = json!({});
    let cases: Vec<(&str, Value, (&str, &str, &str))> = vec![
        (
            "the phase is the status when no container says otherwise",
            pod(
                2,
                no_spec.clone(),
                json!({ "phase": "podPhase", "containerStatuses": [
                { "ready": true, "restartCount": 3, "state": running() },
                { "restartCount": 3 }] }),
                false,
            ),
            ("1/2", "podPhase", "6"),
        ),
        (
            "a waiting container's reason overrides the phase",
            pod(
                2,
                no_spec.clone(),
                json!({ "phase": "podPhase", "containerStatuses": [
                { "ready": true, "restartCount": 3, "state": running() },
                { "restartCount": 3, "state": waiting("ContainerWaitingReason") }] }),
                false,
            ),
            ("1/2", "ContainerWaitingReason", "6"),
        ),
        (
            "the first container's reason wins over the later ones",
            pod(
                2,
                no_spec.clone(),
                json!({ "phase": "podPhase", "containerStatuses": [
                { "restartCount": 3, "state": waiting("ContainerWaitingReason") },
                { "restartCount": 3, "state": terminated("ContainerTerminatedReason", 0) }] }),
                false,
            ),
            ("0/2", "ContainerWaitingReason", "6"),
        ),
        (
            "ready without running is not counted ready",
            pod(
                2,
                no_spec.clone(),
                json!({ "phase": "podPhase", "containerStatuses": [
                { "ready": true, "restartCount": 3, "state": running() },
                { "ready": true, "restartCount": 3 }] }),
                false,
            ),
            ("1/2", "podPhase", "6"),
        ),
        (
            "the pod's reason overrides its phase",
            pod(
                2,
                no_spec.clone(),
                json!({ "phase": "podPhase", "reason": "podReason", "containerStatuses": [
                { "ready": true, "restartCount": 3, "state": running() },
                { "ready": true, "restartCount": 3 }] }),
                false,
            ),
            ("1/2", "podReason", "6"),
        ),
        (
            "a completed container beside a running one reads NotReady without the Ready condition",
            pod(
                2,
                no_spec.clone(),
                json!({ "phase": "Running", "containerStatuses": [
                { "ready": true, "restartCount": 3, "state": terminated("Completed", 0) },
                { "ready": true, "restartCount": 3, "state": running() }] }),
                false,
            ),
            ("1/2", "NotReady", "6"),
        ),
        (
            "a completed container beside a running one reads Running with the Ready condition",
            pod(
                2,
                no_spec.clone(),
                json!({ "phase": "Running",
                "conditions": [{ "type": "Ready", "status": "True" }],
                "containerStatuses": [
                { "ready": true, "restartCount": 3, "state": terminated("Completed", 0) },
                { "ready": true, "restartCount": 3, "state": running() }] }),
                false,
            ),
            ("1/2", "Running", "6"),
        ),
        (
            "a restarting init container shows Init:0/1 and when it last restarted",
            pod(
                1,
                inits(&["i0"], false),
                json!({ "phase": "podPhase",
                "initContainerStatuses": [{ "restartCount": 3, "state": running(), "lastState": finished(10) }],
                "containerStatuses": [{ "state": { "waiting": {} } }] }),
                false,
            ),
            ("0/1", "Init:0/1", "3 (10s ago)"),
        ),
        (
            "the init containers count is of the spec's init containers",
            pod(
                1,
                inits(&["i0", "i1"], false),
                json!({ "phase": "podPhase",
                "initContainerStatuses": [
                    { "restartCount": 3, "state": running(), "lastState": finished(10) },
                    { "state": { "waiting": {} } }],
                "containerStatuses": [{ "state": { "waiting": {} } }] }),
                false,
            ),
            ("0/1", "Init:0/2", "3 (10s ago)"),
        ),
        (
            "a completed init container moves the count on",
            pod(
                1,
                inits(&["i0", "i1"], false),
                json!({ "phase": "podPhase",
                "initContainerStatuses": [
                    { "state": { "terminated": {} } },
                    { "restartCount": 3, "state": running(), "lastState": finished(10) }],
                "containerStatuses": [{ "state": { "waiting": {} } }] }),
                false,
            ),
            ("0/1", "Init:1/2", "3 (10s ago)"),
        ),
        (
            "restarts of completed init containers add up while initializing",
            pod(
                1,
                inits(&["i0", "i1"], false),
                json!({ "phase": "podPhase",
                "initContainerStatuses": [
                    { "restartCount": 2, "state": { "terminated": {} }, "lastState": finished(120) },
                    { "restartCount": 3, "state": running(), "lastState": finished(10) }],
                "containerStatuses": [{ "state": { "waiting": {} } }] }),
                false,
            ),
            ("0/1", "Init:1/2", "5 (10s ago)"),
        ),
        (
            "once initialized only the app containers' restarts count",
            pod(
                1,
                inits(&["i0"], false),
                json!({ "phase": "Running",
                "initContainerStatuses": [
                    { "restartCount": 2, "state": { "terminated": {} }, "lastState": finished(120) }],
                "containerStatuses": [{ "restartCount": 4, "state": running(), "lastState": finished(20) }] }),
                false,
            ),
            ("0/1", "Running", "4 (20s ago)"),
        ),
        (
            "the last restart is in days",
            pod(
                1,
                no_spec.clone(),
                json!({ "phase": "Running", "containerStatuses": [
                { "ready": true, "restartCount": 3, "state": running(), "lastState": finished(5 * 86_400) }] }),
                false,
            ),
            ("1/1", "Running", "3 (5d ago)"),
        ),
        (
            "the most recent restart of any container is shown",
            pod(
                2,
                no_spec.clone(),
                json!({ "phase": "Running", "containerStatuses": [
                { "ready": true, "restartCount": 6, "state": running(), "lastState": finished(5 * 86_400) },
                { "ready": true, "restartCount": 3, "state": running(), "lastState": finished(20 * 86_400) }] }),
                false,
            ),
            ("2/2", "Running", "9 (5d ago)"),
        ),
        (
            "a scheduling-gated pod says so",
            pod(
                2,
                no_spec.clone(),
                json!({ "phase": "podPhase", "conditions": [
                { "type": "PodScheduled", "status": "False", "reason": "SchedulingGated" }] }),
                false,
            ),
            ("0/2", "SchedulingGated", "0"),
        ),
        (
            "a succeeded pod reads Completed",
            pod(
                1,
                no_spec.clone(),
                json!({ "phase": "Succeeded", "containerStatuses": [
                { "state": terminated("Completed", 0) }] }),
                false,
            ),
            ("0/1", "Completed", "0"),
        ),
        (
            "a failed pod reads its container's reason",
            pod(
                1,
                no_spec.clone(),
                json!({ "phase": "Failed", "containerStatuses": [
                { "state": terminated("Error", 1) }] }),
                false,
            ),
            ("0/1", "Error", "0"),
        ),
        (
            "a deleted succeeded pod stays Completed",
            pod(
                1,
                no_spec.clone(),
                json!({ "phase": "Succeeded", "containerStatuses": [
                { "state": terminated("Completed", 0) }] }),
                true,
            ),
            ("0/1", "Completed", "0"),
        ),
        (
            "a deleted running pod is Terminating",
            pod(
                1,
                no_spec.clone(),
                json!({ "phase": "Running", "containerStatuses": [
                { "state": running() }] }),
                true,
            ),
            ("0/1", "Terminating", "0"),
        ),
        (
            "a deleted pending pod is Terminating",
            pod(1, no_spec.clone(), json!({ "phase": "Pending" }), true),
            ("0/1", "Terminating", "0"),
        ),
        (
            "a deleted pod on a lost node is Unknown",
            pod(
                1,
                no_spec.clone(),
                json!({ "phase": "Running", "reason": "NodeLost" }),
                true,
            ),
            ("0/1", "Unknown", "0"),
        ),
        (
            "a crash-looping container shows CrashLoopBackOff",
            pod(
                1,
                no_spec.clone(),
                json!({ "phase": "Running", "containerStatuses": [
                { "restartCount": 7, "state": waiting("CrashLoopBackOff"), "lastState": finished(90) }] }),
                false,
            ),
            ("0/1", "CrashLoopBackOff", "7 (90s ago)"),
        ),
        (
            "a container killed by a signal without a reason shows the signal",
            pod(
                1,
                no_spec.clone(),
                json!({ "phase": "Running", "containerStatuses": [
                { "state": { "terminated": { "exitCode": 137, "signal": 9 } } }] }),
                false,
            ),
            ("0/1", "Signal:9", "0"),
        ),
        (
            "a container exiting without a reason shows the exit code",
            pod(
                1,
                no_spec.clone(),
                json!({ "phase": "Running", "containerStatuses": [
                { "state": { "terminated": { "exitCode": 2 } } }] }),
                false,
            ),
            ("0/1", "ExitCode:2", "0"),
        ),
        (
            "a crash-looping init container shows Init:CrashLoopBackOff",
            pod(
                1,
                inits(&["i0"], false),
                json!({ "phase": "Pending", "initContainerStatuses": [
                { "restartCount": 2, "state": waiting("CrashLoopBackOff") }] }),
                false,
            ),
            ("0/1", "Init:CrashLoopBackOff", "2"),
        ),
        (
            "a failed init container shows its reason",
            pod(
                1,
                inits(&["i0"], false),
                json!({ "phase": "Pending", "initContainerStatuses": [
                { "state": terminated("Error", 1) }] }),
                false,
            ),
            ("0/1", "Init:Error", "0"),
        ),
        (
            "an init container killed by a signal without a reason shows the signal",
            pod(
                1,
                inits(&["i0"], false),
                json!({ "phase": "Pending", "initContainerStatuses": [
                { "state": { "terminated": { "exitCode": 137, "signal": 9 } } }] }),
                false,
            ),
            ("0/1", "Init:Signal:9", "0"),
        ),
        (
            "an init container exiting without a reason shows the exit code",
            pod(
                1,
                inits(&["i0"], false),
                json!({ "phase": "Pending", "initContainerStatuses": [
                { "state": { "terminated": { "exitCode": 3 } } }] }),
                false,
            ),
            ("0/1", "Init:ExitCode:3", "0"),
        ),
        (
            "an init container waiting in PodInitializing counts as not done",
            pod(
                1,
                inits(&["i0"], false),
                json!({ "phase": "Pending", "initContainerStatuses": [
                { "state": waiting("PodInitializing") }] }),
                false,
            ),
            ("0/1", "Init:0/1", "0"),
        ),
        (
            "sidecars count in READY's total and a started one lets initialization move on",
            pod(
                1,
                inits(&["s0", "s1"], true),
                json!({ "phase": "Pending",
                "conditions": [{ "type": "Initialized", "status": "False" }],
                "initContainerStatuses": [
                    { "name": "s0", "restartCount": 3, "state": running(), "started": true, "lastState": finished(10) },
                    { "name": "s1", "state": running(), "started": false }],
                "containerStatuses": [{ "state": { "waiting": {} } }] }),
                false,
            ),
            ("0/3", "Init:1/2", "3 (10s ago)"),
        ),
        (
            "a sidecar not yet started holds initialization",
            pod(
                1,
                inits(&["s0", "s1"], true),
                json!({ "phase": "Pending",
                "conditions": [{ "type": "Initialized", "status": "False" }],
                "initContainerStatuses": [
                    { "name": "s0", "restartCount": 3, "state": running(), "started": false, "lastState": finished(10) },
                    { "name": "s1", "state": { "waiting": {} }, "started": false }],
                "containerStatuses": [{ "state": { "waiting": {} } }] }),
                false,
            ),
            ("0/3", "Init:0/2", "3 (10s ago)"),
        ),
        (
            "once initialized the sidecars' restarts add to the app containers'",
            pod(
                1,
                inits(&["s0", "s1"], true),
                json!({ "phase": "Running",
                "conditions": [{ "type": "Initialized", "status": "True" }],
                "initContainerStatuses": [
                    { "name": "s0", "restartCount": 3, "state": running(), "started": true, "lastState": finished(10) },
                    { "name": "s1", "state": running(), "started": true }],
                "containerStatuses": [
                    { "ready": true, "restartCount": 4, "state": running(), "lastState": finished(20) }] }),
                false,
            ),
            ("1/3", "Running", "7 (10s ago)"),
        ),
        (
            "a succeeded pod whose sidecars were killed reads Completed",
            pod(
                1,
                inits(&["s0", "s1"], true),
                json!({ "phase": "Succeeded",
                "conditions": [{ "type": "Initialized", "status": "True" }],
                "initContainerStatuses": [
                    { "name": "s0", "restartCount": 3, "state": terminated("Error", 137), "started": false, "lastState": finished(10) },
                    { "name": "s1", "state": terminated("Error", 137), "started": false }],
                "containerStatuses": [
                    { "restartCount": 4, "state": terminated("Completed", 0), "lastState": finished(20) }] }),
                false,
            ),
            ("0/3", "Completed", "7 (10s ago)"),
        ),
        (
            "statuses of containers the spec does not name do not make sidecars",
            pod(
                1,
                json!({ "initContainers": [{ "name": "init1" }, { "name": "sidecar1", "restartPolicy": "Always" }] }),
                json!({ "phase": "Running",
                    "initContainerStatuses": [{ "name": "initinvalid" }, { "name": "init1" }, { "name": "sidecar1" }],
                    "containerStatuses": [{ "name": "containerinvalid" }, { "name": "container1" }] }),
                false,
            ),
            ("0/2", "Init:0/2", "0"),
        ),
    ];
    for (case, p, (ready, status, restarts)) in cases {
        let got = summary(p);
        assert_eq!(
            (got.0.as_str(), got.1.as_str(), got.2.as_str()),
            (ready, status, restarts),
            "{case}"
        );
    }
}

#[test]
fn finished_pods_carry_a_completed_row_condition() {
    let cases = [
        (
            "Succeeded",
            Some(("Succeeded", "The pod has completed successfully.")),
        ),
        ("Failed", Some(("Failed", "The pod failed."))),
        ("Running", None),
    ];
    for (phase, want) in cases {
        let r = row(
            &obj(pod(1, json!({}), json!({ "phase": phase }), false)),
            now(),
        );
        let want = want.map(|(reason, message)| {
            json!([{ "type": "Completed", "status": "True", "reason": reason, "message": message }])
        });
        assert_eq!(r.conditions, want, "{phase}");
    }
}

#[test]
fn wide_pod_cells_show_ip_node_nomination_and_readiness_gates() {
    let p = pod(
        1,
        json!({ "nodeName": "n1", "readinessGates": [
            { "conditionType": "condition1" }, { "conditionType": "condition2" }] }),
        json!({ "phase": "Running", "podIPs": [{ "ip": "1.1.1.1" }, { "ip": "2001:db8::1" }],
                "nominatedNodeName": "n2",
                "conditions": [{ "type": "condition1", "status": "True" },
                               { "type": "condition2", "status": "False" }] }),
        false,
    );
    assert_eq!(
        cells(p)[5..],
        [json!("1.1.1.1"), json!("n1"), json!("n2"), json!("1/2")]
    );
}

//! A cluster as `kubectl get ... -A -o yaml` dumps it (a `v1 List` with status, uids,
//! resourceVersions, managedFields and past timestamps, a DaemonSet, a Service and a ConfigMap)
//! loads as it is: nothing is created or deleted at t=0 (the DaemonSet's pods carry its
//! template generation, so they are current), the kinds kubeplane only stores are
//! noted once and kept, the clock starts at the dump's latest timestamp, and a one-line
//! what-if answers.

mod support;

use serde_json::Value;
use support::{kubeplane, stderr, stdout};

const DUMP: &str = "crates/cli/tests/fixtures/cluster-dump.yaml";

fn records(out: &std::process::Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_consistent_dump_runs_without_any_change_at_t0_and_keeps_every_object() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let out = kubeplane(&[
        "simulate",
        "--output",
        "jsonl",
        "--final-state",
        state.to_str().unwrap(),
        DUMP,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("note: stored, not simulated: ConfigMap (1), Service (1)"),
        "{}",
        stderr(&out)
    );
    let reasons: Vec<String> = records(&out)
        .iter()
        .map(|r| r["reason"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        reasons.iter().all(|r| r == "RegisteredNode"),
        "the controllers adopt what they own and change nothing: {reasons:?}"
    );
    let objects: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let find = |kind: &str, name: &str| {
        objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{kind} {name} kept"))
            .clone()
    };
    assert_eq!(
        find("ConfigMap", "shop-settings")["data"]["LOG_LEVEL"],
        "info"
    );
    assert_eq!(find("Service", "shop")["spec"]["clusterIP"], "10.96.12.34");
    assert_eq!(find("DaemonSet", "log-agent")["status"]["numberReady"], 2);
    let pod = find("Pod", "shop-7d9c6b8f54-abcde");
    assert_eq!(
        pod["metadata"]["uid"],
        "9e8d7c6b-0000-4000-8000-000000000100"
    );
    assert_eq!(pod["spec"]["nodeName"], "worker-1");
    assert_eq!(pod["status"]["phase"], "Running");
    // The clock starts at the dump's latest timestamp (worker-2's last heartbeat), so the
    // node agents' first Lease renewals carry it.
    let lease = find("Lease", "worker-2");
    assert_eq!(lease["spec"]["renewTime"], "2026-03-02T11:59:35.000000Z");
}

#[test]
fn strict_refuses_the_kinds_kubeplane_only_stores_naming_the_first() {
    let out = kubeplane(&["simulate", "--strict", DUMP]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(err.contains(DUMP), "{err}");
    assert!(
        err.contains("(Service web/shop): --strict: kubeplane stores but does not simulate ConfigMap (1), Service (1)"),
        "{err}"
    );
}

#[test]
fn the_same_dump_as_json_gives_the_same_run() {
    let yaml: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(support::repo_root().join(DUMP)).unwrap())
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("dump.json");
    std::fs::write(&json, serde_json::to_string_pretty(&yaml).unwrap()).unwrap();
    let a = kubeplane(&[
        "simulate",
        "--output",
        "jsonl",
        "--at",
        "1m",
        "--node-down",
        "worker-2",
        DUMP,
    ]);
    let b = kubeplane(&[
        "simulate",
        "--output",
        "jsonl",
        "--at",
        "1m",
        "--node-down",
        "worker-2",
        json.to_str().unwrap(),
    ]);
    assert!(a.status.success() && b.status.success(), "{}", stderr(&b));
    assert_eq!(stdout(&a), stdout(&b));
}

#[test]
fn a_taint_what_if_moves_the_shop_pod_and_keeps_the_agent_that_tolerates_everything() {
    let out = kubeplane(&[
        "simulate",
        "--output",
        "json",
        DUMP,
        "--at",
        "1m",
        "--taint",
        "worker-1:maintenance=true:NoExecute",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        doc["summary"]["nodesChanged"].to_string(),
        r#"[{"node":"worker-1","podsAtStart":2,"podsAtEnd":1},{"node":"worker-2","podsAtStart":2,"podsAtEnd":3}]"#
    );
    let evicted: Vec<&str> = doc["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["reason"] == "TaintManagerEviction")
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(evicted, ["shop-7d9c6b8f54-abcde"]);
}

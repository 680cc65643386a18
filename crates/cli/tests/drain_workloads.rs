//! Issue 16's question end to end: `kubeplane simulate examples/drain-workloads.yaml --at 2m
//! --drain n3 --ignore-daemonsets` on a cluster with a DaemonSet, a StatefulSet behind a
//! PodDisruptionBudget and a Deployment.

use std::process::Command;

use serde_json::Value;

fn records() -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .args([
            "simulate",
            "examples/drain-workloads.yaml",
            "--at",
            "2m",
            "--drain",
            "n3",
        ])
        .args(["--ignore-daemonsets", "--output", "jsonl"])
        .output()
        .expect("kubeplane runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_daemonset_pod_stays_and_the_statefulset_pod_returns_under_its_name_elsewhere() {
    let recs = records();
    let drain = recs
        .iter()
        .find(|r| r["kind"] == "DrainResult")
        .expect("a DrainResult");
    assert_eq!(drain["reason"], "Drained");
    let skipped: Vec<&str> = drain["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["pod"].as_str().unwrap())
        .collect();
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0].starts_with("default/log-agent-"), "{skipped:?}");
    let evicted: Vec<&str> = drain["evicted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["pod"].as_str().unwrap())
        .collect();
    assert_eq!(
        evicted[0], "default/db-2",
        "kubectl evicts in the order it lists: namespace, then name"
    );
    assert!(evicted[1].starts_with("default/web-"), "{evicted:?}");
    let finished = drain["finished"].as_f64().unwrap();
    let back = recs
        .iter()
        .find(|r| {
            r["reason"] == "Scheduled"
                && r["name"] == "db-2"
                && r["time"].as_f64().unwrap() >= finished
        })
        .expect("db-2 scheduled again after the drain");
    let msg = back["message"].as_str().unwrap();
    assert!(
        msg.starts_with("Successfully assigned default/db-2 to "),
        "{msg}"
    );
    assert!(!msg.ends_with(" n3"), "the drained node is cordoned: {msg}");
}

//! `kubeplane compare` as a user meets it: the example configurations side by side on
//! examples/what-if.yaml, the JSON document, a bad configuration, failed expectations and
//! determinism.
//!
//! The numbers asserted come from the input, not from a run: examples/what-if.yaml has three
//! nodes of 4 cpu and 16Gi (n1 and n2 in zone-a, n3 in zone-b), six `web` pods requesting
//! 1 cpu and 1Gi each and a `batch` pod requesting 2 cpu and 2Gi: 8 cpu and 8Gi in all.
//! - Whatever the placement, the mean cpu utilisation is 8/12 = 66.7% and the mean memory
//!   utilisation is 8Gi/48Gi = 16.7%.
//! - The default profile scores LeastAllocated: a pod goes to the least requested node, so no
//!   node stays empty (3 nodes used).
//! - bin-packing.yaml scores MostAllocated alone: each pod goes to the fullest node it fits on,
//!   so two nodes fill to exactly 4 cpu (4 web; batch and 2 web) and one stays empty: cpu per
//!   node 100/100/0 (max − min 100%, standard deviation √(2·33.3² + 66.7²)/3) = 47.1%), memory
//!   4Gi/4Gi/0 of 16Gi = 25/25/0% (max − min 25%, standard deviation 11.8%).

mod support;

use serde_json::Value;
use support::{kubeplane, stderr, stdout};

const BIN_PACKING: &str = "examples/configs/bin-packing.yaml";
const MOST_ALLOCATED: &str = "examples/configs/most-allocated.yaml";
const WHAT_IF: &str = "examples/what-if.yaml";

/// The cells of the table row whose label is `label` (cells are separated by two spaces or more).
fn row(table: &str, label: &str) -> Vec<String> {
    let line = table
        .lines()
        .find(|l| l.starts_with(label) && l[label.len()..].starts_with("  "))
        .unwrap_or_else(|| panic!("no row {label:?} in\n{table}"));
    line[label.len()..]
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn bin_packing_leaves_a_node_empty_that_the_default_profile_uses() {
    let out = kubeplane(&[
        "compare",
        "--config",
        "default",
        "--config",
        BIN_PACKING,
        WHAT_IF,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["default", "bin-packing"]);
    assert_eq!(row(&table, "pods scheduled"), ["7", "7"]);
    assert_eq!(row(&table, "pods pending"), ["0", "0"]);
    assert_eq!(row(&table, "nodes used"), ["3 of 3", "2 of 3"]);
    assert_eq!(row(&table, "cpu per node, mean"), ["66.7%", "66.7%"]);
    assert_eq!(row(&table, "cpu per node, max - min")[1], "100.0%");
    assert_eq!(row(&table, "cpu per node, std dev")[1], "47.1%");
    assert_eq!(row(&table, "memory per node, mean"), ["16.7%", "16.7%"]);
    assert_eq!(row(&table, "memory per node, max - min")[1], "25.0%");
    assert_eq!(row(&table, "memory per node, std dev")[1], "11.8%");
    assert_eq!(row(&table, "preemptions"), ["0", "0"]);
    assert_eq!(row(&table, "evictions"), ["0", "0"]);
    assert_eq!(row(&table, "expectations"), ["0 held, 0 failed"; 2]);
    // The default column is the reference of the placement rows.
    assert_eq!(row(&table, "pods placed unlike default")[0], "-");
    assert_eq!(row(&table, "pods without a match in default"), ["-", "0"]);
}

#[test]
fn json_has_one_entry_per_configuration_in_command_line_order() {
    let out = kubeplane(&[
        "compare",
        "--output",
        "json",
        "--config",
        "default",
        "--config",
        MOST_ALLOCATED,
        "--config",
        BIN_PACKING,
        WHAT_IF,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let entries = doc["configurations"].as_array().unwrap();
    let names: Vec<&str> = entries
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "most-allocated", "bin-packing"]);
    assert_eq!(entries[2]["config"], BIN_PACKING);
    for e in entries {
        assert_eq!(e["pods"]["scheduled"], 7, "{e}");
        let mean = e["utilisationPercent"]["cpu"]["mean"].as_f64().unwrap();
        assert!((mean - 200.0 / 3.0).abs() < 1e-9, "{e}");
        assert_eq!(e["succeeded"], true);
    }
    assert_eq!(entries[0]["nodes"]["used"], 3);
    assert_eq!(entries[2]["nodes"]["used"], 2);
    assert_eq!(
        entries[2]["utilisationPercent"]["cpu"]["maxMinusMin"],
        100.0
    );
    assert_eq!(
        entries[2]["utilisationPercent"]["memory"]["maxMinusMin"],
        25.0
    );
    // Seven pods over the zones in every run.
    for e in entries {
        let zones = e["podsPerZone"].as_object().unwrap();
        let total: u64 = zones.values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(total, 7, "{e}");
        assert_eq!(zones.len(), 2, "{e}");
    }
    assert!(entries[0]["placedUnlikeFirst"].is_null());
    assert!(entries[2]["placedUnlikeFirst"].as_u64().unwrap() > 0);
}

#[test]
fn the_same_configuration_twice_places_every_pod_alike() {
    let out = kubeplane(&[
        "compare",
        "--output",
        "json",
        "--config",
        BIN_PACKING,
        "--config",
        "default",
        "--config",
        "default",
        WHAT_IF,
    ]);
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let entries = doc["configurations"].as_array().unwrap();
    assert_eq!(entries[1]["name"], "default");
    assert!(entries[1]["placedUnlikeFirst"].as_u64().unwrap() > 0);
    // Both default runs are placed alike, so they differ from the first run equally.
    assert_eq!(
        entries[2]["placedUnlikeFirst"],
        entries[1]["placedUnlikeFirst"]
    );
    let out = kubeplane(&[
        "compare", "--output", "json", "--config", "default", "--config", "default", WHAT_IF,
    ]);
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["configurations"][1]["placedUnlikeFirst"], 0);
    assert_eq!(doc["configurations"][1]["unmatchedWithFirst"], 0);
}

#[test]
fn a_bad_configuration_exits_2_naming_its_file_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("unknown-field.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofilez: []\n", "unknown field `profilez`"),
        ("not-yaml.yaml", "profiles: [\n", "not-yaml.yaml"),
        ("bad-strategy.yaml", "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: Random}}\n", "Unsupported value: \"Random\""),
        ("a-pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", "takes a KubeSchedulerConfiguration, not a Pod"),
    ];
    for (name, text, says) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let path = path.display().to_string();
        let out = kubeplane(&["compare", "--config", "default", "--config", &path, WHAT_IF]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(out.stdout.is_empty(), "{name}: nothing may run");
        let err = stderr(&out);
        assert!(err.contains(&path) && err.contains(says), "{name}: {err}");
    }
    let out = kubeplane(&["compare", "--config", "/nonexistent/x.yaml", WHAT_IF]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("/nonexistent/x.yaml: cannot read"),
        "{}",
        stderr(&out)
    );
}

/// Two nodes and two small pods, with a Scenario expecting one pod on each node: the default
/// profile spreads them (LeastAllocated), bin packing puts both on one node, and so fails both
/// expectations (2 pods on one node, 0 on the other).
const ONE_POD_EACH: &str = "\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: '4', memory: 16Gi, pods: '110'}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: '4', memory: 16Gi, pods: '110'}}
---
apiVersion: v1
kind: Pod
metadata: {name: a}
spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: '1', memory: 1Gi}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b}
spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: '1', memory: 1Gi}}}]}
---
apiVersion: kubeplane.io/v1alpha1
kind: Scenario
metadata: {name: one-pod-each}
spec:
  duration: 1m
  steps:
  - at: 30s
    expect:
    - pods: {node: n1}
      count: 1
    - pods: {node: n2}
      count: 1
";

#[test]
fn failed_expectations_of_one_run_are_reported_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("one-pod-each.yaml");
    std::fs::write(&input, ONE_POD_EACH).unwrap();
    let input = input.display().to_string();
    let out = kubeplane(&[
        "compare",
        "--config",
        "default",
        "--config",
        BIN_PACKING,
        &input,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let table = stdout(&out);
    assert_eq!(row(&table, "nodes used"), ["2 of 2", "1 of 2"]);
    assert_eq!(
        row(&table, "expectations"),
        ["2 held, 0 failed", "0 held, 2 failed"]
    );
    let out = kubeplane(&["compare", "--config", "default", &input]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn two_runs_print_the_same_bytes() {
    for format in ["table", "json"] {
        let args = [
            "compare",
            "--output",
            format,
            "--config",
            "default",
            "--config",
            MOST_ALLOCATED,
            "--config",
            BIN_PACKING,
            "examples/zone-spread.yaml",
        ];
        let (a, b) = (kubeplane(&args), kubeplane(&args));
        assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
        assert!(!a.stdout.is_empty());
        assert_eq!(a.stdout, b.stdout, "{format}");
    }
}

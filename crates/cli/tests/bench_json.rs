//! `kubeplane bench --json`, each workload's own peak memory, and the scripts that compare
//! bench documents (`scripts/bench-compare.py`) and gate instruction counts
//! (`scripts/instructions.py`, its logic; CI runs it under valgrind).

mod support;

use std::process::Command;

use serde_json::Value;
use support::{kubeplane, repo_root, stderr, stdout};

fn bench_json(args: &[&str]) -> Value {
    let mut all = vec!["bench", "--json"];
    all.extend_from_slice(args);
    let out = kubeplane(&all);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", stdout(&out)))
}

fn figure<'a>(workload: &'a Value, name: &str) -> &'a Value {
    workload["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no figure {name} in {workload}"))
}

#[test]
fn bench_json_writes_the_machine_and_each_workloads_parameters_figures_and_peak_memory() {
    let doc = bench_json(&["--scale-down", "100", "jobs-1000", "scheduling-basic-10k"]);
    let machine = &doc["machine"];
    assert_eq!(machine["kubeplane_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(machine["kubernetes_version"], "v1.34.1");
    assert_eq!(machine["scale_down"], 100);
    assert!(machine["cores"].as_u64().unwrap() >= 1);
    assert!(machine.get("git_commit").is_some());
    let workloads = doc["workloads"].as_array().unwrap();
    let names: Vec<&str> = workloads
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["scheduling-basic-10k", "jobs-1000"],
        "in bench's order"
    );
    let sched = &workloads[0];
    assert_eq!(sched["ok"], true);
    assert_eq!(sched["labels"][0], "SchedulingBasic/5000Nodes_10000Pods");
    assert_eq!(sched["parameters"]["nodes"], 50);
    assert_eq!(sched["parameters"]["init_pods"], 10);
    assert_eq!(sched["parameters"]["measured_pods"], 100);
    assert_eq!(sched["parameters"]["scale_down"], 100);
    let throughput = figure(sched, "throughput");
    assert_eq!(throughput["unit"], "pods/s");
    assert_eq!(throughput["better"], "higher");
    assert!(throughput["value"].as_f64().unwrap() > 0.0);
    assert_eq!(figure(sched, "wall")["better"], "lower");
    let peak = figure(sched, "peak memory");
    assert_eq!(peak["unit"], "MiB");
    assert_eq!(peak["value"], sched["peak_memory_mib"]);
    let jobs = &workloads[1];
    assert_eq!(jobs["parameters"]["jobs"], 10);
    assert_eq!(figure(jobs, "wall")["unit"], "s");
}

#[test]
fn bench_json_keeps_the_text_on_stderr_and_text_mode_prints_it_on_stdout() {
    let out = kubeplane(&["bench", "--json", "--scale-down", "100", "jobs-1000"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("Jobs10/1Nodes: "), "{}", stderr(&out));
    assert!(stdout(&out).trim_start().starts_with('{'));
    let out = kubeplane(&[
        "bench",
        "--scale-down",
        "100",
        "jobs-1000",
        "scheduling-basic-10k",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("Kubernetes v1.34.1 "), "{text}");
    assert!(
        lines[1].starts_with(
            "SchedulingBasic/5000Nodes_10000Pods: 50 nodes, 10 init pods, 100 measured pods: "
        ),
        "{text}"
    );
    assert!(lines[2].starts_with("Jobs10/1Nodes: "), "{text}");
}

#[test]
fn each_workload_reports_its_own_peak_memory_so_a_small_one_after_a_large_one_reports_less() {
    // scheduling-basic-50k at a tenth (500 nodes, 5500 pods) runs before jobs-1000 at a
    // hundredth (10 Jobs on 1 node); in one process the second would show the first's peak.
    let doc = bench_json(&["--scale-down", "10", "scheduling-basic-50k", "jobs-1000"]);
    let peaks: Vec<f64> = doc["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["peak_memory_mib"].as_f64().unwrap())
        .collect();
    assert!(
        peaks[1] < peaks[0] * 0.8,
        "the small workload's peak {} is not well below the large one's {}",
        peaks[1],
        peaks[0]
    );
}

#[test]
fn the_envelope_readies_every_pod_then_taints_the_downed_zone_and_replaces_its_pods_elsewhere() {
    // A hundredth: 50 nodes over three zones (16 in zone-c), 100 Deployments of 15 pods.
    let doc = bench_json(&["--scale-down", "100", "envelope"]);
    let w = &doc["workloads"][0];
    assert_eq!(w["name"], "envelope");
    assert_eq!(w["ok"], true, "{w}");
    let p = &w["parameters"];
    let n = |key: &str| {
        p[key]
            .as_f64()
            .unwrap_or_else(|| panic!("no parameter {key} in {p}"))
    };
    assert_eq!(
        (n("nodes"), n("namespaces"), n("pods")),
        (50.0, 100.0, 1500.0)
    );
    // Every node of the zone stopped reporting: NotReady and tainted unreachable (NoExecute).
    assert_eq!(n("zone_nodes"), 16.0);
    assert_eq!(n("zone_nodes_not_ready"), 16.0);
    assert_eq!(n("zone_nodes_tainted"), 16.0);
    // Its pods were evicted and stay Terminating (no agent confirms), and the ReplicaSets
    // replaced every one of them in the other zones.
    let evicted = n("pods_evicted");
    assert!(evicted > 0.0, "{p}");
    assert_eq!(n("pods_terminating_in_zone"), evicted);
    assert_eq!(n("pods_rescheduled"), evicted);
    assert_eq!(n("pods_live"), 1500.0);
    assert_eq!(n("pods_live_ready"), 1500.0);
    assert_eq!(n("pods_live_in_zone"), 0.0);
    // The pods tolerate the unreachable taint for 300 s; with the other two zones healthy
    // the fully disrupted zone is tainted at the normal rate, one node every 10 s.
    let (from, to) = (
        n("evictions_from_s_after_outage"),
        n("evictions_to_s_after_outage"),
    );
    assert!(from > 300.0, "{p}");
    assert!((to - from - 150.0).abs() <= 10.0, "{p}");
    for name in [
        "all scheduled and ready",
        "throughput",
        "24 h with a zone outage",
        "peak memory",
    ] {
        assert!(figure(w, name)["value"].as_f64().unwrap() > 0.0, "{name}");
    }
}

#[test]
fn bench_compare_prints_both_values_and_the_change_of_two_bench_documents() {
    let dir = std::env::temp_dir().join(format!("kubeplane-bench-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for run in ["a", "b"] {
        let doc = bench_json(&["--scale-down", "100", "jobs-1000"]);
        let path = dir.join(format!("{run}.json"));
        std::fs::write(&path, doc.to_string()).unwrap();
        files.push(path);
    }
    let out = Command::new("python3")
        .arg(repo_root().join("scripts/bench-compare.py"))
        .args(&files)
        .output()
        .expect("python3 runs");
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let row = text
        .lines()
        .find(|l| l.starts_with("jobs-1000") && l.contains(" wall "))
        .unwrap_or_else(|| panic!("no row for jobs-1000's wall time:\n{text}"));
    assert!(row.contains('%'), "{row}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("jobs-1000") && l.contains("peak memory") && l.contains("MiB")),
        "{text}"
    );
}

#[test]
fn the_bench_scripts_own_tests_pass() {
    let out = Command::new("python3")
        .arg(repo_root().join("scripts/test_bench_scripts.py"))
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
}

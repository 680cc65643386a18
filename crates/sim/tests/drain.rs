//! `drain` steps in whole-simulator runs: a PodDisruptionBudget holding an eviction until the
//! replacement of an evicted pod is ready, the global timeout, kubectl's filters refusing pods
//! before anything is evicted, DaemonSet and mirror pods left alone, `disableEviction`, and a
//! drain the run ends before.

use kubeplane_sim::scenario::parse_files;
use kubeplane_sim::{RunOptions, Simulation};
use serde_json::Value;

/// Two nodes; `web` (2 replicas, a budget of `MIN_AVAILABLE`) lands on n1 because n2 joins
/// only at 30s.
const CLUSTER: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: MIN_AVAILABLE
  selector: {matchLabels: {app: web}}
---
apiVersion: kubeplane.io/v1alpha1
kind: Scenario
spec:
  podStartupLatency: 12s
  steps:
  - at: 30s
    apply: {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, conditions: [{type: Ready, status: "True"}]}}
  - at: 1m
    drain: DRAIN
"#;

/// Runs the input; returns the records as JSON.
fn run(text: &str) -> Vec<Value> {
    run_to_end(text).0
}

/// Runs the input; returns the records and the objects at the end, as JSON.
fn run_to_end(text: &str) -> (Vec<Value>, Vec<Value>) {
    let input = parse_files(&[("drain.yaml".into(), text.into())]).expect("the input parses");
    let mut sim = Simulation::new(input, &RunOptions::default()).expect("the simulation starts");
    sim.run(&mut |_, _| {}).expect("the simulation runs");
    assert_eq!(sim.n_step_errors, 0);
    assert_eq!(sim.n_failed, 0);
    let records = sim.take_records().iter().map(|r| r.to_json()).collect();
    (records, sim.final_state())
}

fn cluster(min_available: u32, drain: &str) -> String {
    CLUSTER
        .replace("MIN_AVAILABLE", &min_available.to_string())
        .replace("DRAIN", drain)
}

/// The one DrainResult record.
fn result(records: &[Value]) -> &Value {
    let mut results = records.iter().filter(|r| r["kind"] == "DrainResult");
    let r = results.next().expect("a DrainResult record");
    assert!(results.next().is_none(), "one DrainResult record");
    r
}

#[test]
fn a_budget_blocks_the_second_eviction_until_the_first_pods_replacement_is_ready() {
    let records = run(&cluster(1, "{node: n1}"));
    let r = result(&records);
    assert_eq!(r["reason"], "Drained", "{r}");
    let evicted = r["evicted"].as_array().unwrap();
    assert_eq!(evicted.len(), 2, "{r}");
    // The first web pod goes at once (the budget allows one disruption); the second is
    // refused with 429 at 60s, 65s and 70s: the replacement created at 60s on n2 is ready at
    // 72s, and the retry at 75s gets through.
    assert_eq!(evicted[0]["at"], 60.0);
    assert_eq!(evicted[0]["attempts"], 1);
    assert_eq!(evicted[1]["at"], 75.0);
    assert_eq!(evicted[1]["attempts"], 4);
    assert_eq!(evicted[1]["blockedSince"], 60.0);
    assert_eq!(evicted[1]["budget"], "web");
    // Each pod has its 30 s grace period; kubectl's poll sees the second gone at 105s.
    assert_eq!(evicted[0]["gone"], 90.0);
    assert_eq!(evicted[1]["gone"], 105.0);
    assert_eq!(r["finished"], 105.0);
    assert_eq!(r["time"], 105.0);
    let replacement_scheduled = records
        .iter()
        .find(|e| {
            e["reason"] == "Scheduled"
                && e["time"] == 60.0
                && e["message"].as_str().unwrap().ends_with(" to n2")
        })
        .is_some();
    assert!(replacement_scheduled, "the replacement lands on n2 at 60s");
    assert!(r["message"]
        .as_str()
        .unwrap()
        .contains("waited 15s for PodDisruptionBudget web"));
}

#[test]
fn the_global_timeout_ends_a_blocked_drain_at_the_first_retry_after_it() {
    // A budget of 2 for 2 pods allows no disruption at all.
    let records = run(&cluster(2, "{node: n1, timeout: 12s}"));
    let r = result(&records);
    assert_eq!(r["reason"], "DrainTimedOut", "{r}");
    // Attempts at 60s, 65s, 70s; the one at 75s finds the deadline (72s) passed.
    assert_eq!(r["finished"], 75.0);
    let blocked = r["blocked"].as_array().unwrap();
    assert_eq!(blocked.len(), 2);
    assert_eq!(blocked[0]["attempts"], 3);
    assert_eq!(blocked[0]["budget"], "web");
    assert_eq!(
        blocked[0]["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    let errors = r["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2);
    let e = errors[0].as_str().unwrap();
    assert!(
        e.starts_with("error when evicting pods/\"web-")
            && e.ends_with("-n \"default\": global timeout reached: 12s"),
        "{e}"
    );
    assert!(r["evicted"].as_array().unwrap().is_empty());
}

#[test]
fn disable_eviction_deletes_the_pods_past_the_budget() {
    let records = run(&cluster(
        2,
        "{node: n1, disableEviction: true, gracePeriodSeconds: 5}",
    ));
    let r = result(&records);
    assert_eq!(r["reason"], "Drained", "{r}");
    let evicted = r["evicted"].as_array().unwrap();
    assert_eq!(evicted.len(), 2);
    assert!(evicted.iter().all(|e| e["at"] == 60.0 && e["gone"] == 65.0));
    assert!(evicted[0].get("attempts").is_none());
}

/// n1 with a bare pod, a DaemonSet's pod, a mirror pod and a pod with an emptyDir volume.
const MIXED: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: logs, namespace: kube-system, uid: 00000000-0000-4000-a000-0000000000d5}
spec:
  selector: {matchLabels: {app: logs}}
  template:
    metadata: {labels: {app: logs}}
    spec:
      containers: [{name: logs, image: fluentd}]
---
apiVersion: v1
kind: Pod
metadata:
  name: logs-x
  namespace: kube-system
  labels: {app: logs}
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: logs, uid: 00000000-0000-4000-a000-0000000000d5, controller: true}]
spec: {nodeName: n1, containers: [{name: logs, image: fluentd}]}
---
apiVersion: v1
kind: Pod
metadata: {name: bare, labels: {app: bare}}
spec: {nodeName: n1, terminationGracePeriodSeconds: 0, containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: static-n1, annotations: {kubernetes.io/config.mirror: abc}}
spec: {nodeName: n1, containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: scratch, labels: {app: scratch}}
spec:
  nodeName: n1
  terminationGracePeriodSeconds: 0
  volumes: [{name: tmp, emptyDir: {}}]
  containers: [{name: c, image: busybox}]
---
apiVersion: kubeplane.io/v1alpha1
kind: Scenario
spec:
  duration: 2m
  steps:
  - at: 10s
    drain: DRAIN
  - at: 1m
    expect:
    - pods: {}
      count: COUNT
"#;

/// The refusals are grouped by message in the order kubectl lists the pods (by namespace,
/// then name); kubectl's own order is a Go map's.
#[test]
fn refused_pods_stop_the_drain_before_anything_is_evicted_but_after_the_cordon() {
    let text = MIXED.replace("DRAIN", "{node: n1}").replace("COUNT", "4");
    let (records, objects) = run_to_end(&text);
    let n1 = objects.iter().find(|o| o["kind"] == "Node").unwrap();
    assert_eq!(n1["spec"]["unschedulable"], true);
    let r = result(&records);
    assert_eq!(r["reason"], "DrainFailed", "{r}");
    assert_eq!(r["finished"], 10.0);
    assert_eq!(
        r["message"],
        "unable to drain node \"n1\" due to error: [\
         cannot delete Pods that declare no controller (use --force to override): default/bare, \
         cannot delete Pods with local storage (use --delete-emptydir-data to override): default/scratch, \
         cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): kube-system/logs-x]"
    );
    assert_eq!(r["skipped"][0]["pod"], "default/static-n1");
    assert!(r["evicted"].as_array().unwrap().is_empty());
}

#[test]
fn with_every_override_only_the_daemonset_and_mirror_pods_stay() {
    let text = MIXED
        .replace(
            "DRAIN",
            "{node: n1, ignoreDaemonSets: true, force: true, deleteEmptyDirData: true}",
        )
        .replace("COUNT", "2");
    let records = run(&text);
    let r = result(&records);
    assert_eq!(r["reason"], "Drained", "{r}");
    let evicted: Vec<&str> = r["evicted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pod"].as_str().unwrap())
        .collect();
    assert_eq!(evicted, ["default/bare", "default/scratch"]);
    assert_eq!(
        r["warnings"],
        "deleting Pods that declare no controller: default/bare, default/scratch; \
         ignoring DaemonSet-managed Pods: kube-system/logs-x"
    );
    assert_eq!(
        r["finished"], 10.0,
        "grace period 0: gone at the first poll"
    );
}

#[test]
fn a_pod_selector_limits_the_drain_to_the_pods_it_selects() {
    let text = MIXED
        .replace(
            "DRAIN",
            "{node: n1, podSelector: app=scratch, deleteEmptyDirData: true, force: true}",
        )
        .replace("COUNT", "3");
    let r = result(&run(&text)).clone();
    assert_eq!(r["reason"], "Drained", "{r}");
    assert_eq!(r["evicted"].as_array().unwrap().len(), 1);
    assert_eq!(r["evicted"][0]["pod"], "default/scratch");
}

#[test]
fn a_drain_the_run_ends_before_says_so_at_the_end() {
    let text = cluster(2, "{node: n1}").replace(
        "  podStartupLatency: 12s\n",
        "  duration: 90s\n  podStartupLatency: 12s\n",
    );
    let records = run(&text);
    let r = result(&records);
    assert_eq!(r["reason"], "DrainNotFinished", "{r}");
    assert_eq!(r["time"], 90.0);
    assert!(r["finished"].is_null());
    assert_eq!(r["pending"].as_array().unwrap().len(), 2);
    assert_eq!(r["blocked"][0]["attempts"], 7, "60s to 90s, every 5 s");
}

#[test]
fn draining_a_node_that_does_not_exist_is_a_failed_step() {
    let text = cluster(1, "{node: n9}");
    let input = parse_files(&[("drain.yaml".into(), text)]).unwrap();
    let mut sim = Simulation::new(input, &RunOptions::default()).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    assert_eq!(sim.n_step_errors, 1);
    let failed: Vec<Value> = sim
        .take_records()
        .iter()
        .map(|r| r.to_json())
        .filter(|r| r["kind"] == "StepFailed")
        .collect();
    assert!(failed[0]["message"]
        .as_str()
        .unwrap()
        .ends_with("(drain) at 1m0s: nodes \"n9\" not found"));
}

//! The node agents' writes are delivered to the other components every so many agent timers
//! (so that a mass pod start does not hold every pod's old version in pending events). How
//! many is an engine detail: the output, the events and the final state must be the same for
//! every chunk size, from one timer per delivery to one delivery per run.

use kubeplane_sim::scenario::parse_files;
use kubeplane_sim::{RunOptions, Simulation};

fn node(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{topology.kubernetes.io/zone: z-{name}}}}}\nstatus:\n  allocatable: {{cpu: \"8\", memory: 16Gi, pods: \"110\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n---\n"
    )
}

/// Two Deployments whose pods all start at one instant and keep ending and restarting (or
/// being replaced), standalone pods that end, and a node that goes NotReady: many agent timers
/// due together, interleaved with controllers' and the scheduler's reactions.
fn input() -> String {
    let mut text: String = (1..=4).map(|i| node(&format!("n{i}"))).collect();
    for (name, replicas, policy) in [("web", 60, "Always"), ("batch", 30, "Always")] {
        text += &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n      annotations: {{kubeplane.io/run-duration: 40s, kubeplane.io/exit-code: \"1\"}}\n    spec:\n      restartPolicy: {policy}\n      containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: 100m}}}}}}]\n---\n"
        );
    }
    for i in 0..20 {
        text += &format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: job-{i}, annotations: {{kubeplane.io/run-duration: 25s}}}}\nspec:\n  restartPolicy: Never\n  containers: [{{name: c, image: busybox}}]\n---\n"
        );
    }
    text += "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {name: chunks}\nspec:\n  duration: 10m\n  podStartupLatency: 2s\n  steps:\n  - at: 1m\n    nodeCondition: {node: n2, type: Ready, status: \"False\"}\n";
    text
}

/// Everything a run shows: its output records, its events, its final state and its counters.
fn run_with(per_delivery: Option<usize>) -> (Vec<String>, usize, Vec<String>, String) {
    let input = parse_files(&[("chunks.yaml".into(), input())]).expect("parses");
    let mut sim = Simulation::new(input, &RunOptions::default()).expect("starts");
    if let Some(n) = per_delivery {
        sim.set_agent_timers_per_delivery(n);
    }
    sim.run(&mut |_, _| {}).expect("runs");
    let records = sim
        .take_records()
        .iter()
        .map(|r| r.to_json().to_string())
        .collect();
    let events = sim.events().len();
    let state = sim.final_state().iter().map(|v| v.to_string()).collect();
    (records, events, state, format!("{:?}", sim.metrics()))
}

#[test]
fn the_output_does_not_depend_on_how_often_agents_writes_are_delivered() {
    let default = run_with(None);
    let (records, events, state, _) = &default;
    assert!(events > &200, "the run should be busy: {events} events");
    assert!(
        records.iter().any(|r| r.contains("TaintManagerEviction")),
        "n2 went NotReady and its pods were evicted"
    );
    assert!(
        state.iter().any(|o| o.contains("\"restartCount\":")),
        "containers restarted"
    );
    for n in [1, 3, 64, usize::MAX] {
        let chunked = run_with(Some(n));
        assert_eq!(chunked.1, default.1, "event count, {n} timers per delivery");
        assert_eq!(chunked.0, default.0, "records, {n} timers per delivery");
        assert_eq!(chunked.2, default.2, "final state, {n} timers per delivery");
        assert_eq!(chunked.3, default.3, "metrics, {n} timers per delivery");
    }
}

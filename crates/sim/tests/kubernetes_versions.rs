//! Behaviour changes keyed to Kubernetes releases, each shown by a scenario of
//! tests/scenarios/ run for the release before the change and the release that brought it.

use std::path::PathBuf;

use kubeplane_core::version::{v1, KubeVersion};
use kubeplane_sim::scenario::parse_files_for;
use kubeplane_sim::{RunOptions, Simulation};

/// A finished run of `file` following `version`.
fn simulate(file: &str, version: KubeVersion) -> Simulation {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let input = parse_files_for(&[(file.to_string(), text)], Some(version)).unwrap();
    let mut sim = Simulation::new(input, &RunOptions::default()).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    sim
}

/// The jsonl records of a run of `file` following `version`, and its failed expectations.
fn run(file: &str, version: KubeVersion) -> (Vec<serde_json::Value>, usize) {
    let mut sim = simulate(file, version);
    let records = sim.take_records().iter().map(|r| r.to_json()).collect();
    (records, sim.n_failed)
}

/// The node of the pod's `Scheduled` event.
fn scheduled_node(records: &[serde_json::Value], pod: &str) -> Option<String> {
    records.iter().find_map(|r| {
        let scheduled = r["reason"] == "Scheduled" && r["name"] == pod;
        let message = r["message"].as_str()?;
        scheduled.then(|| message.rsplit(" to ").next().unwrap().to_string())
    })
}

#[test]
fn balanced_allocation_scores_the_change_of_balance_from_1_36() {
    let file = "balanced-allocation-by-release.yaml";
    for (version, node, failed) in [
        (v1(34, 1), "mixed", 1),
        (v1(35, 4), "mixed", 1),
        (v1(36, 0), "cpu-heavy", 0),
        (v1(37, 0), "cpu-heavy", 0),
    ] {
        let (records, n_failed) = run(file, version);
        assert_eq!(
            scheduled_node(&records, "cache").as_deref(),
            Some(node),
            "{version}"
        );
        assert_eq!(n_failed, failed, "{version}");
    }
}

#[test]
fn a_terminating_victim_gets_api_calls_again_only_from_1_34_2_to_1_34_7() {
    let file = "preemption-terminating-victim-by-release.yaml";
    for (version, preempted_events, failed) in [
        (v1(34, 1), 1, 0),
        (v1(34, 2), 2, 2),
        (v1(34, 7), 2, 2),
        (v1(35, 0), 1, 0),
        (v1(37, 0), 1, 0),
    ] {
        let (records, n_failed) = run(file, version);
        let preempted = records
            .iter()
            .filter(|r| r["reason"] == "Preempted" && r["name"] == "batch")
            .count();
        assert_eq!(preempted, preempted_events, "{version}");
        assert_eq!(
            n_failed, failed,
            "{version}: the count and web's nomination"
        );
        assert_eq!(
            scheduled_node(&records, "critical").as_deref(),
            Some("n1"),
            "{version}"
        );
    }
}

/// The final state of a run of `file` following `version` (every stored object as JSON), and
/// its failed expectations.
fn run_to_final_state(file: &str, version: KubeVersion) -> (Vec<serde_json::Value>, usize) {
    let sim = simulate(file, version);
    (sim.final_state(), sim.n_failed)
}

/// The pod `default/name` of a final state.
fn pod<'a>(state: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    state
        .iter()
        .find(|o| {
            o["kind"] == "Pod"
                && o["metadata"]["name"] == name
                && o["metadata"]["namespace"] == "default"
        })
        .unwrap_or_else(|| panic!("no pod {name}"))
}

#[test]
fn bound_pods_take_the_nodes_zone_and_region_labels_from_1_35() {
    let file = "pod-topology-labels-by-release.yaml";
    let zone = "topology.kubernetes.io/zone";
    let region = "topology.kubernetes.io/region";
    for (version, copied, failed) in [
        (v1(34, 1), false, 2),
        (v1(35, 0), true, 0),
        (v1(37, 0), true, 0),
    ] {
        let (state, n_failed) = run_to_final_state(file, version);
        assert_eq!(n_failed, failed, "{version}");
        for name in ["fixed", "plain", "own"] {
            let labels = &pod(&state, name)["metadata"]["labels"];
            assert_eq!(
                labels[region].as_str(),
                copied.then_some("region-1"),
                "{version} {name}"
            );
            let own_zone = (name == "own").then_some("mine");
            let want_zone = if copied { Some("zone-a") } else { own_zone };
            assert_eq!(labels[zone].as_str(), want_zone, "{version} {name}");
            assert!(
                labels["topology.kubernetes.io/rack"].is_null(),
                "{version} {name}"
            );
        }
        let elsewhere = &pod(&state, "elsewhere")["metadata"];
        assert!(
            elsewhere["labels"][zone].is_null(),
            "{version}: n2 has no zone"
        );
        assert_eq!(
            pod(&state, "elsewhere")["spec"]["nodeName"],
            "n2",
            "{version}"
        );
    }
}

#[test]
fn the_binding_clears_the_nominated_node_from_1_35() {
    let file = "nominated-node-cleared-on-binding-by-release.yaml";
    for (version, kept, failed) in [
        (v1(34, 1), Some("n1"), 1),
        (v1(34, 7), Some("n1"), 1),
        (v1(35, 0), None, 0),
        (v1(37, 0), None, 0),
    ] {
        let (state, n_failed) = run_to_final_state(file, version);
        let web = pod(&state, "web");
        assert_eq!(web["spec"]["nodeName"], "n1", "{version}");
        assert_eq!(
            web["status"]["nominatedNodeName"].as_str(),
            kept,
            "{version}"
        );
        assert_eq!(n_failed, failed, "{version}");
    }
}

#[test]
fn a_failed_cycle_keeps_the_nomination_only_in_v1_34() {
    let file = "nomination-kept-on-failure-by-release.yaml";
    for (version, kept, failed) in [
        (v1(34, 0), Some("n1"), 0),
        (v1(34, 1), Some("n1"), 0),
        (v1(34, 7), Some("n1"), 0),
        (v1(35, 0), None, 1),
        (v1(37, 0), None, 1),
    ] {
        let (state, n_failed) = run_to_final_state(file, version);
        let web = pod(&state, "web");
        assert!(web["spec"]["nodeName"].is_null(), "{version}");
        assert_eq!(
            web["status"]["nominatedNodeName"].as_str(),
            kept,
            "{version}"
        );
        assert_eq!(n_failed, failed, "{version}");
    }
}

#[test]
fn pods_requiring_declared_node_features_go_to_nodes_declaring_them_from_1_36() {
    let file = "node-declared-features-by-release.yaml";
    for (version, restarter, isolated, failed) in [
        (v1(34, 1), "old-kubelet", Some("old-kubelet"), 2),
        (v1(35, 4), "old-kubelet", Some("old-kubelet"), 2),
        (v1(36, 0), "new-kubelet", None, 0),
        (v1(37, 0), "new-kubelet", None, 0),
    ] {
        let (records, n_failed) = run(file, version);
        assert_eq!(
            scheduled_node(&records, "restarter").as_deref(),
            Some(restarter),
            "{version}"
        );
        assert_eq!(
            scheduled_node(&records, "isolated").as_deref(),
            isolated,
            "{version}"
        );
        assert_eq!(n_failed, failed, "{version}");
        if isolated.is_none() {
            let refused = records.iter().any(|r| {
                r["reason"] == "FailedScheduling"
                    && r["name"] == "isolated"
                    && r["message"].as_str().unwrap().starts_with(
                        "0/2 nodes are available: 2 node(s) didn't match Pod's required features.",
                    )
            });
            assert!(refused, "{version}: {records:?}");
        }
    }
    // The declared features are kept on the stored Node.
    let (state, _) = run_to_final_state(file, v1(37, 0));
    let node = state
        .iter()
        .find(|o| o["kind"] == "Node" && o["metadata"]["name"] == "new-kubelet")
        .unwrap();
    assert_eq!(
        node["status"]["declaredFeatures"],
        serde_json::json!([
            "InPlacePodLevelResourcesVerticalScaling",
            "RestartAllContainersOnContainerExits"
        ])
    );
}

#[test]
fn a_gated_pods_nomination_holds_its_room_from_1_37() {
    let file = "gated-pod-nomination-by-release.yaml";
    for (version, filler, failed) in [
        (v1(34, 1), Some("n1"), 1),
        (v1(36, 0), Some("n1"), 1),
        (v1(37, 0), None, 0),
    ] {
        let (records, n_failed) = run(file, version);
        assert_eq!(
            scheduled_node(&records, "filler").as_deref(),
            filler,
            "{version}"
        );
        assert_eq!(n_failed, failed, "{version}");
        assert!(
            scheduled_node(&records, "reserved").is_none(),
            "{version}: reserved stays gated"
        );
    }
}

//! kubernetes#134654 (v1.35.0, cherry-picked to v1.34.2 as #134658) in a whole-simulator run: a
//! pod whose controller reference carries a ReplicaSet's UID but names another object.
//!
//! Up to v1.34.1 kube-controller-manager indexes pods by their controller's UID alone, so the
//! ReplicaSet `api` lists the stray pod as one of its replicas and creates one pod fewer. From
//! v1.34.2 the index key has the namespace, kind and name too: `api` ignores the stray and
//! creates both of its pods. (A real cluster's garbage collector would later delete the stray,
//! whose owner `api-old` does not exist; kubeplane's keeps it, as its graph matches owners by
//! UID alone, so the stray stays in both runs.)

use std::sync::Arc;

use kubeplane_core::EventRecord;
use kubeplane_sim::scenario::parse_files;
use kubeplane_sim::{RunOptions, Simulation};

const SCENARIO: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: api
  uid: 00000000-0000-4000-a000-0000000000a1
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: app, image: nginx}]
---
apiVersion: v1
kind: Pod
metadata:
  name: stray
  uid: 00000000-0000-4000-8000-000000000001
  labels: {app: api}
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: api-old,
     uid: 00000000-0000-4000-a000-0000000000a1, controller: true}
spec: {nodeName: n1, terminationGracePeriodSeconds: 0, containers: [{name: app, image: nginx}]}
status:
  phase: Running
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: kubeplane.io/v1alpha1
kind: Scenario
metadata: {name: owner-reference-uid}
spec:
  kubernetesVersion: "VERSION"
  duration: 2m
"#;

/// The run's events and the number of active pods `api` created and controls at the end; the
/// stray pod is still there.
fn run(version: &str) -> (Vec<Arc<EventRecord>>, usize) {
    let text = SCENARIO.replace("VERSION", version);
    let input = parse_files(&[("owner-reference-uid.yaml".into(), text)]).expect("parses");
    let mut sim = Simulation::new(input, &RunOptions::default()).expect("starts");
    sim.run(&mut |_, _| {}).expect("runs");
    let state = sim.final_state();
    let stray = state.iter().find(|o| o["metadata"]["name"] == "stray");
    assert!(stray.is_some(), "{version}: the stray pod stays");
    let api_pods = state
        .iter()
        .filter(|o| o["kind"] == "Pod" && o["metadata"]["deletionTimestamp"].is_null())
        .filter(|o| o["metadata"]["ownerReferences"][0]["name"] == "api")
        .count();
    (sim.events().to_vec(), api_pods)
}

fn creates(events: &[Arc<EventRecord>]) -> usize {
    events
        .iter()
        .filter(|e| e.source() == "replicaset-controller" && e.reason() == "SuccessfulCreate")
        .count()
}

#[test]
fn a_stray_pod_with_a_replica_sets_uid_counts_as_its_replica_only_before_v1_34_2() {
    let (old, old_pods) = run("1.34.1");
    let (new, new_pods) = run("1.34.2");
    assert_eq!(
        creates(&old),
        1,
        "v1.34.1 counts the stray pod as a replica"
    );
    assert_eq!(
        old_pods, 1,
        "v1.34.1 keeps one pod of its own next to the stray"
    );
    assert_eq!(creates(&new), 2, "v1.34.2 ignores the stray pod");
    assert_eq!(new_pods, 2);
}

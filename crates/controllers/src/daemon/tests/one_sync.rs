//! Upstream's single-sync cases (`expectSyncDaemonSets(creates, deletes, events)`): pods that
//! are already there when the DaemonSet syncs once.

use kubeplane_core::SimTime;

use super::*;
use crate::controller_utils::new_controller_ref;
use crate::deployment::util::hash::compute_hash;

/// `(creates, deletes, other events)` of one sync.
type Outcome = (usize, usize, usize);

/// One sync of `foo` over these nodes and its own pods `(name, node, phase, terminating)`:
/// `(creates, deletes, events other than creates and deletes)`.
fn one_sync(nodes: Vec<Node>, pods: &[(&str, &str, &str, bool)]) -> Outcome {
    let mut client = TestClient::new(1);
    for n in nodes {
        client.create(Object::Node(Arc::new(n.into()))).unwrap();
    }
    let ds = client
        .create(ds_object(&daemon_set_json(json!({}))))
        .unwrap();
    // Upstream's test pods carry the template's hash (its `newPod`).
    let typed: DaemonSet = serde_json::from_value(ds.to_json()).unwrap();
    let hash = compute_hash(&typed.spec.unwrap().template, None);
    for (i, (name, node, phase, terminating)) in pods.iter().enumerate() {
        client.now = SimTime::ZERO + SimDuration::from_secs(i as i64 + 1);
        let mut b = kubeplane_core::testing::PodBuilder::new(name)
            .label("name", "simple-daemon")
            .label(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY, &hash)
            .node(node)
            .phase(phase)
            .owner_reference(new_controller_ref(API_VERSION, KIND, ds.meta()));
        if *terminating {
            b = b.deleted_at(client.clock().timestamp(client.now).0);
        }
        client
            .create(Object::Pod(Arc::new(b.obj().into())))
            .unwrap();
    }
    let mut dsc = DaemonSetsController::new();
    client.dispatch(&mut [&mut dsc]);
    let before = client.events.len();
    dsc.run(client.now, &mut client);
    let events = &client.events[before..];
    let count = |r: &str| events.iter().filter(|e| e.reason() == r).count();
    let creates = count(REASON_SUCCESSFUL_CREATE);
    let deletes = count(REASON_SUCCESSFUL_DELETE);
    (creates, deletes, events.len() - creates - deletes)
}

#[test]
fn failed_pods_are_killed_with_an_event_and_extra_pods_pruned() {
    // Upstream TestDaemonKillFailedPods.
    let cases: [(&str, usize, usize, Outcome); 4] = [
        ("a normal pod: nothing to do", 0, 1, (0, 0, 0)),
        ("no pods: one is created", 0, 0, (1, 0, 0)),
        (
            "one failed pod: it is killed, the replacement comes in the next sync",
            1,
            0,
            (0, 1, 1),
        ),
        (
            "one failed and three normal pods: the failed one and two extra ones are killed",
            1,
            3,
            (0, 3, 1),
        ),
    ];
    for (name, failed, normal, want) in cases {
        let mut pods = Vec::new();
        let names: Vec<String> = (0..failed + normal).map(|i| format!("p{i}")).collect();
        for (i, n) in names.iter().enumerate() {
            let phase = if i < failed { "Failed" } else { "Running" };
            pods.push((n.as_str(), "node-0", phase, false));
        }
        assert_eq!(one_sync(nodes(1), &pods), want, "{name}");
    }
}

#[test]
fn a_terminating_pod_is_neither_replaced_nor_deleted_again() {
    // Upstream TestDaemonSetRespectsTermination.
    let got = one_sync(nodes(1), &[("p0", "node-0", "Running", true)]);
    assert_eq!(got, (0, 0, 0));
}

#[test]
fn a_running_pod_stays_on_a_no_schedule_node_and_goes_from_a_no_execute_node() {
    // Upstream TestNoScheduleTaintedDoesntEvicitRunningIntolerantPod and
    // TestNoExecuteTaintedDoesEvicitRunningIntolerantPod.
    let tainted = |effect| vec![node("tainted", &[], &[("dedicated", effect)])];
    let pod = [("keep-or-stop", "tainted", "Running", false)];
    assert_eq!(one_sync(tainted("NoSchedule"), &pod), (0, 0, 0));
    assert_eq!(one_sync(tainted("NoExecute"), &pod), (0, 1, 0));
}

#[test]
fn not_ready_and_unreachable_nodes_still_get_a_pod() {
    // Upstream TestNotReadyNodeDaemonLaunchesPod and TestUnreachableNodeDaemonLaunchesPod.
    for taint in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let n = vec![node("tainted", &[], &[(taint, "NoExecute")])];
        assert_eq!(one_sync(n, &[]), (1, 0, 0), "{taint}");
    }
}

#[test]
fn a_pod_without_revision_labels_counts_as_current_and_is_not_rolled() {
    let mut client = TestClient::new(1);
    client
        .create(Object::Node(Arc::new(node("node-0", &[], &[]).into())))
        .unwrap();
    let ds = client
        .create(ds_object(&daemon_set_json(json!({}))))
        .unwrap();
    let pod = kubeplane_core::testing::PodBuilder::new("by-hand")
        .label("name", "simple-daemon")
        .node("node-0")
        .ready()
        .owner_reference(new_controller_ref(API_VERSION, KIND, ds.meta()))
        .obj();
    client.create(Object::Pod(Arc::new(pod.into()))).unwrap();
    let mut dsc = DaemonSetsController::new();
    client.settle(&mut [&mut dsc]);
    assert!(client
        .events_with_reason(REASON_SUCCESSFUL_DELETE)
        .is_empty());
    assert!(client
        .events_with_reason(REASON_SUCCESSFUL_CREATE)
        .is_empty());
    let o = client
        .cache()
        .get(Kind::Other(daemon_set_type()), "default", "foo")
        .unwrap();
    let st: DaemonSet = serde_json::from_value(o.to_json()).unwrap();
    assert_eq!(st.status.unwrap().updated_number_scheduled, Some(1));
}

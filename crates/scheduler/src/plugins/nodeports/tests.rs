//! Table tests of NodePorts, with upstream's cases.

use super::*;
use crate::framework::Code;
use crate::plugins::testing::{snapshot, NodeBuilder, PodBuilder, PodBuilderExt};

/// Runs PreFilter then (unless skipped) Filter of `pod` on a node running `existing`.
fn run(pod: PodBuilder, existing: Vec<PodBuilder>) -> Status {
    let pod = pod.info();
    let node =
        NodeBuilder::new("n").info_with_pods(existing.into_iter().map(PodBuilder::obj).collect());
    let mut state = CycleState::new();
    let (_, st) = NodePorts.pre_filter(&mut state, &pod, &snapshot(vec![]));
    if st.is_skip() {
        return st;
    }
    NodePorts.filter(&state, &pod, &node)
}

#[test]
fn node_ports() {
    let fail = Status::new(Code::Unschedulable, REASON);
    let cases = [
        (
            "a pod without host ports skips the filter",
            PodBuilder::new("p"),
            vec![],
            Status::skip(),
        ),
        (
            "the same port on another protocol is free",
            PodBuilder::new("p").host_port("127.0.0.1", "UDP", 8080),
            vec![PodBuilder::new("e").host_port("127.0.0.1", "TCP", 8080)],
            Status::success(),
        ),
        (
            "the same port on another IP is free",
            PodBuilder::new("p").host_port("127.0.0.1", "TCP", 8080),
            vec![PodBuilder::new("e").host_port("127.0.0.2", "TCP", 8080)],
            Status::success(),
        ),
        (
            "the same UDP port on the same IP conflicts",
            PodBuilder::new("p").host_port("127.0.0.1", "UDP", 8080),
            vec![PodBuilder::new("e").host_port("127.0.0.1", "UDP", 8080)],
            fail.clone(),
        ),
        (
            "one conflicting port among several is enough to fail",
            PodBuilder::new("p")
                .host_port("127.0.0.1", "TCP", 8001)
                .host_port("127.0.0.1", "TCP", 8080),
            vec![PodBuilder::new("e").host_port("127.0.0.1", "TCP", 8080)],
            fail.clone(),
        ),
        (
            "a specific IP conflicts with the wildcard IP on the node",
            PodBuilder::new("p").host_port("127.0.0.1", "TCP", 8080),
            vec![PodBuilder::new("e").host_port("0.0.0.0", "TCP", 8080)],
            fail.clone(),
        ),
        (
            "the wildcard IP conflicts with a specific IP on the node",
            PodBuilder::new("p").host_port("", "", 8080),
            vec![PodBuilder::new("e").host_port("127.0.0.1", "TCP", 8080)],
            fail.clone(),
        ),
        (
            "a wildcard port on another protocol is free",
            PodBuilder::new("p").host_port("0.0.0.0", "UDP", 8080),
            vec![PodBuilder::new("e").host_port("127.0.0.1", "TCP", 8080)],
            Status::success(),
        ),
        (
            "a sidecar init container's host port conflicts",
            PodBuilder::new("p").init_host_port("", "TCP", 8080, true),
            vec![PodBuilder::new("e").host_port("127.0.0.1", "TCP", 8080)],
            fail.clone(),
        ),
    ];
    for (name, pod, existing, want) in cases {
        assert_eq!(run(pod, existing), want, "{name}");
    }
}

#[test]
fn host_ports_of_a_pod() {
    let pod: kubeplane_api::StoredPod = PodBuilder::new("p")
        .init_host_port("", "", 80, false)
        .init_host_port("", "UDP", 81, true)
        .host_port("10.0.0.1", "", 82)
        .obj()
        .into();
    let want = vec![
        HostPort {
            ip: "0.0.0.0".into(),
            protocol: "UDP".into(),
            port: 81,
        },
        HostPort {
            ip: "10.0.0.1".into(),
            protocol: "TCP".into(),
            port: 82,
        },
    ];
    assert_eq!(
        host_ports(&pod),
        want,
        "only sidecar init containers' ports count"
    );
}

#[test]
fn pod_deleted_hints() {
    let pod: kubeplane_api::StoredPod =
        PodBuilder::new("p").host_port("", "TCP", 8080).obj().into();
    let cases = [
        (
            "a deleted bound pod using the wanted port queues the pod",
            PodBuilder::new("e")
                .node("n")
                .host_port("", "TCP", 8080)
                .obj(),
            QueueingHint::Queue,
        ),
        (
            "a deleted nominated pod using the wanted port queues the pod",
            PodBuilder::new("e")
                .nominated("n")
                .host_port("", "TCP", 8080)
                .obj(),
            QueueingHint::Queue,
        ),
        (
            "a deleted unscheduled pod does not",
            PodBuilder::new("e").host_port("", "TCP", 8080).obj(),
            QueueingHint::QueueSkip,
        ),
        (
            "a deleted pod without host ports does not",
            PodBuilder::new("e").node("n").obj(),
            QueueingHint::QueueSkip,
        ),
        (
            "a deleted pod using other ports does not",
            PodBuilder::new("e")
                .node("n")
                .host_port("", "TCP", 9090)
                .obj(),
            QueueingHint::QueueSkip,
        ),
    ];
    for (name, deleted, want) in cases {
        let got =
            is_schedulable_after_pod_deleted(&pod, Some(EventObject::Pod(&deleted.into())), None)
                .unwrap();
        assert_eq!(got, want, "{name}");
    }
}

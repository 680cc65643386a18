//! Table tests of TaintToleration filtering and scoring, with upstream's cases.

use k8s_openapi::api::core::v1::Node;

use super::*;
use crate::framework::Code;
use crate::plugins::testing::{
    snapshot, taint, toleration, NodeBuilder, PodBuilder, PodBuilderExt,
};
use k8s_openapi::api::core::v1::Pod;

fn scores(pod: PodBuilder, nodes: Vec<NodeBuilder>) -> Vec<i64> {
    let pod = pod.info();
    let infos: Vec<NodeInfo> = nodes.into_iter().map(NodeBuilder::info).collect();
    let snap = snapshot(infos.clone());
    let refs: Vec<&NodeInfo> = infos.iter().collect();
    let mut state = CycleState::new();
    let pl = TaintToleration::default();
    assert!(pl.pre_score(&mut state, &pod, &refs, &snap).is_success());
    let mut s: Vec<i64> = infos
        .iter()
        .map(|n| pl.score(&state, &pod, n).unwrap())
        .collect();
    assert!(pl.normalize_score(&state, &pod, &mut s).is_success());
    s
}

#[test]
fn score() {
    let prefer = "PreferNoSchedule";
    struct Case {
        name: &'static str,
        pod: PodBuilder,
        nodes: Vec<NodeBuilder>,
        want: Vec<i64>,
    }
    let cases = [
        Case {
            name: "a node whose taints the pod tolerates scores higher than one whose it does not",
            pod: PodBuilder::new("p").toleration(toleration("foo", "Equal", "bar", prefer)),
            nodes: vec![
                NodeBuilder::new("nodeA").taint(taint("foo", "bar", prefer)),
                NodeBuilder::new("nodeB").taint(taint("foo", "blah", prefer)),
            ],
            want: vec![100, 0],
        },
        Case {
            name: "the more intolerable taints a node has, the lower its score",
            pod: PodBuilder::new("p").toleration(toleration("foo", "Equal", "bar", prefer)),
            nodes: vec![
                NodeBuilder::new("nodeA"),
                NodeBuilder::new("nodeB").taint(taint("cpu-type", "arm64", prefer)),
                NodeBuilder::new("nodeC")
                    .taint(taint("cpu-type", "arm64", prefer))
                    .taint(taint("disk-type", "ssd", prefer)),
            ],
            want: vec![100, 50, 0],
        },
        Case {
            name: "only PreferNoSchedule taints count for the score",
            pod: PodBuilder::new("p").toleration(toleration(
                "cpu-type",
                "Equal",
                "arm64",
                "NoSchedule",
            )),
            nodes: vec![
                NodeBuilder::new("nodeA"),
                NodeBuilder::new("nodeB").taint(taint("cpu-type", "arm64", "NoSchedule")),
                NodeBuilder::new("nodeC").taint(taint("cpu-type", "arm64", prefer)),
            ],
            want: vec![100, 100, 0],
        },
        Case {
            name: "a pod without tolerations prefers the node without PreferNoSchedule taints",
            pod: PodBuilder::new("p"),
            nodes: vec![
                NodeBuilder::new("nodeA"),
                NodeBuilder::new("nodeB").taint(taint("cpu-type", "arm64", prefer)),
            ],
            want: vec![100, 0],
        },
    ];
    for c in cases {
        assert_eq!(scores(c.pod, c.nodes), c.want, "{}", c.name);
    }
}

#[test]
fn filter() {
    let untolerated = |k: &str, v: &str| {
        Status::new(
            Code::UnschedulableAndUnresolvable,
            format!("node(s) had untolerated taint {{{k}: {v}}}"),
        )
    };
    let cases = [
        (
            "a pod without tolerations does not fit a node with a NoSchedule taint",
            PodBuilder::new("p"),
            NodeBuilder::new("n").taint(taint("dedicated", "user1", "NoSchedule")),
            untolerated("dedicated", "user1"),
        ),
        (
            "a pod tolerating the taint fits",
            PodBuilder::new("p").toleration(toleration(
                "dedicated",
                "Equal",
                "user1",
                "NoSchedule",
            )),
            NodeBuilder::new("n").taint(taint("dedicated", "user1", "NoSchedule")),
            Status::success(),
        ),
        (
            "a toleration with another value does not tolerate the taint",
            PodBuilder::new("p").toleration(toleration(
                "dedicated",
                "Equal",
                "user2",
                "NoSchedule",
            )),
            NodeBuilder::new("n").taint(taint("dedicated", "user1", "NoSchedule")),
            untolerated("dedicated", "user1"),
        ),
        (
            "a toleration with operator Exists tolerates any value of its key",
            PodBuilder::new("p").toleration(toleration("foo", "Exists", "", "NoSchedule")),
            NodeBuilder::new("n").taint(taint("foo", "bar", "NoSchedule")),
            Status::success(),
        ),
        (
            "every NoSchedule taint must be tolerated",
            PodBuilder::new("p")
                .toleration(toleration("dedicated", "Equal", "user2", "NoSchedule"))
                .toleration(toleration("foo", "Exists", "", "NoSchedule")),
            NodeBuilder::new("n")
                .taint(taint("dedicated", "user2", "NoSchedule"))
                .taint(taint("foo", "bar", "NoSchedule")),
            Status::success(),
        ),
        (
            "a matching key and value with a different non-empty effect does not tolerate",
            PodBuilder::new("p").toleration(toleration("foo", "Equal", "bar", "PreferNoSchedule")),
            NodeBuilder::new("n").taint(taint("foo", "bar", "NoSchedule")),
            untolerated("foo", "bar"),
        ),
        (
            "a toleration with an empty effect tolerates every effect",
            PodBuilder::new("p").toleration(toleration("foo", "Equal", "bar", "")),
            NodeBuilder::new("n").taint(taint("foo", "bar", "NoSchedule")),
            Status::success(),
        ),
        (
            "a PreferNoSchedule taint never blocks a pod",
            PodBuilder::new("p"),
            NodeBuilder::new("n").taint(taint("foo", "bar", "PreferNoSchedule")),
            Status::success(),
        ),
        (
            "an untolerated NoExecute taint blocks a pod",
            PodBuilder::new("p"),
            NodeBuilder::new("n").taint(taint("foo", "", "NoExecute")),
            untolerated("foo", ""),
        ),
        (
            "the message names the first untolerated taint in node order",
            PodBuilder::new("p").toleration(toleration("a", "Exists", "", "")),
            NodeBuilder::new("n")
                .taint(taint("a", "1", "NoSchedule"))
                .taint(taint("b", "2", "NoSchedule"))
                .taint(taint("c", "3", "NoSchedule")),
            untolerated("b", "2"),
        ),
    ];
    for (name, pod, node, want) in cases {
        let (pod, node) = (pod.info(), node.info());
        let filter = |pl: TaintToleration| pl.filter(&CycleState::new(), &pod, &node);
        assert_eq!(filter(TaintToleration::default()), want, "{name}");
        let v1_34_1 = FeatureGates::for_version("1.34.1".parse().unwrap());
        assert_eq!(
            filter(TaintToleration::new(&v1_34_1)),
            want,
            "{name}, 1.34.1"
        );
        // From v1.34.2 and v1.35.0 the reason no longer names the taint.
        for version in ["1.34.2", "1.35.0", "1.37"] {
            let gates = FeatureGates::for_version(version.parse().unwrap());
            let generic = match want.code {
                Code::Success => Status::success(),
                code => Status::new(code, ERR_REASON_UNTOLERATED),
            };
            assert_eq!(
                filter(TaintToleration::new(&gates)),
                generic,
                "{name}, {version}"
            );
        }
    }
}

#[test]
fn node_change_hints() {
    let pod: kubeplane_api::StoredPod = PodBuilder::new("p")
        .toleration(toleration("foo", "Equal", "bar", "NoSchedule"))
        .obj()
        .into();
    let tolerated = NodeBuilder::new("n")
        .taint(taint("foo", "bar", "NoSchedule"))
        .obj();
    let untolerated = NodeBuilder::new("n")
        .taint(taint("baz", "", "NoSchedule"))
        .obj();
    let hint = |old: Option<&Node>, new: &Node| {
        is_schedulable_after_node_change(
            &pod,
            old.cloned()
                .map(kubeplane_api::StoredNode::from)
                .as_ref()
                .map(EventObject::Node),
            Some(EventObject::Node(&new.clone().into())),
        )
        .unwrap()
    };
    let cases = [
        (
            "an added node whose taints are tolerated queues the pod",
            None,
            &tolerated,
            QueueingHint::Queue,
        ),
        (
            "an added node with an untolerated taint does not",
            None,
            &untolerated,
            QueueingHint::QueueSkip,
        ),
        (
            "an update removing the untolerated taint queues the pod",
            Some(&untolerated),
            &tolerated,
            QueueingHint::Queue,
        ),
        (
            "an update adding an untolerated taint does not",
            Some(&tolerated),
            &untolerated,
            QueueingHint::QueueSkip,
        ),
        (
            "an update of an already tolerated node does not",
            Some(&tolerated),
            &tolerated,
            QueueingHint::QueueSkip,
        ),
    ];
    for (name, old, new, want) in cases {
        assert_eq!(hint(old, new), want, "{name}");
    }
}

#[test]
fn pod_toleration_hint_queues_only_the_waiting_pod() {
    let pod: kubeplane_api::StoredPod = PodBuilder::new("p").obj().into();
    let same = PodBuilder::new("p")
        .toleration(toleration("foo", "Exists", "", ""))
        .obj();
    let other = PodBuilder::new("q")
        .toleration(toleration("foo", "Exists", "", ""))
        .obj();
    let hint = |n: &Pod| {
        is_schedulable_after_pod_toleration_change(
            &pod,
            Some(EventObject::Pod(&pod)),
            Some(EventObject::Pod(&n.clone().into())),
        )
        .unwrap()
    };
    assert_eq!(hint(&same), QueueingHint::Queue);
    assert_eq!(hint(&other), QueueingHint::QueueSkip);
}

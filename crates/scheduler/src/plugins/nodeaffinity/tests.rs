//! Table tests of NodeAffinity filtering and scoring, with upstream's cases.

use serde_json::json;

use super::*;
use crate::framework::Code;
use crate::plugins::testing::{req, snapshot, term, NodeBuilder, PodBuilder, PodBuilderExt};

/// PreFilter then (unless skipped) Filter.
fn run_filter(pl: &NodeAffinity, pod: PodBuilder, node: NodeBuilder) -> Status {
    let pod = pod.info();
    let mut state = CycleState::new();
    let (_, st) = pl.pre_filter(&mut state, &pod, &snapshot(vec![]));
    if st.is_skip() {
        return Status::success();
    }
    if !st.is_success() {
        return st;
    }
    pl.filter(&state, &pod, &node.info())
}

#[test]
fn filter() {
    let fail = Status::new(Code::UnschedulableAndUnresolvable, REASON_POD);
    let cases = [
        (
            "a pod without node constraints fits",
            PodBuilder::new("p"),
            NodeBuilder::new("n"),
            Status::success(),
        ),
        (
            "a nodeSelector matching the node labels fits",
            PodBuilder::new("p").node_selector("foo", "bar"),
            NodeBuilder::new("n").label("foo", "bar"),
            Status::success(),
        ),
        (
            "a nodeSelector with another value does not fit",
            PodBuilder::new("p").node_selector("foo", "bar"),
            NodeBuilder::new("n").label("foo", "baz"),
            fail.clone(),
        ),
        (
            "required terms are ORed",
            PodBuilder::new("p")
                .required_term(term(vec![req("foo", "In", &["bar", "value2"])], vec![]))
                .required_term(term(
                    vec![req("diffkey", "In", &["wrong", "value2"])],
                    vec![],
                )),
            NodeBuilder::new("n").label("foo", "bar"),
            Status::success(),
        ),
        (
            "expressions inside a term are ANDed, Gt compares integers",
            PodBuilder::new("p").required_term(term(
                vec![
                    req("foo", "In", &["bar"]),
                    req("kernel-version", "Gt", &["0204"]),
                ],
                vec![],
            )),
            NodeBuilder::new("n")
                .label("foo", "bar")
                .label("kernel-version", "0206"),
            Status::success(),
        ),
        (
            "one failing expression in the only term fails",
            PodBuilder::new("p").required_term(term(
                vec![
                    req("foo", "In", &["bar"]),
                    req("kernel-version", "Gt", &["0208"]),
                ],
                vec![],
            )),
            NodeBuilder::new("n")
                .label("foo", "bar")
                .label("kernel-version", "0206"),
            fail.clone(),
        ),
        (
            "NotIn matches a node without the label",
            PodBuilder::new("p").required_term(term(vec![req("foo", "NotIn", &["bar"])], vec![])),
            NodeBuilder::new("n"),
            Status::success(),
        ),
        (
            "both nodeSelector and affinity must match",
            PodBuilder::new("p")
                .node_selector("foo", "bar")
                .required_term(term(vec![req("foo", "Exists", &[])], vec![])),
            NodeBuilder::new("n").label("foo", "baz"),
            fail.clone(),
        ),
        (
            "an empty term matches no node",
            PodBuilder::new("p").required_term(term(vec![], vec![])),
            NodeBuilder::new("n").label("foo", "bar"),
            fail.clone(),
        ),
        (
            "matchFields metadata.name In selects the named node",
            PodBuilder::new("p")
                .required_term(term(vec![], vec![req("metadata.name", "In", &["node1"])])),
            NodeBuilder::new("node1"),
            Status::success(),
        ),
        (
            "matchFields metadata.name In rejects other nodes",
            PodBuilder::new("p")
                .required_term(term(vec![], vec![req("metadata.name", "In", &["node1"])])),
            NodeBuilder::new("node2"),
            fail.clone(),
        ),
        (
            "a term naming two disjoint node sets conflicts in PreFilter",
            PodBuilder::new("p").required_term(term(
                vec![],
                vec![
                    req("metadata.name", "In", &["node1"]),
                    req("metadata.name", "In", &["node2"]),
                ],
            )),
            NodeBuilder::new("node1"),
            Status::new(Code::UnschedulableAndUnresolvable, REASON_CONFLICT),
        ),
    ];
    let pl = NodeAffinity::default();
    for (name, pod, node, want) in cases {
        assert_eq!(run_filter(&pl, pod, node), want, "{name}");
    }
}

#[test]
fn pre_filter_result() {
    let by_name = |names: &[&str]| {
        Some(PreFilterResult {
            node_names: Some(names.iter().map(|s| s.to_string()).collect()),
        })
    };
    let cases = [
        (
            "a pod without constraints skips",
            PodBuilder::new("p"),
            None,
            Code::Skip,
        ),
        (
            "a name restriction becomes the PreFilter result",
            PodBuilder::new("p")
                .required_term(term(vec![], vec![req("metadata.name", "In", &["node1"])])),
            by_name(&["node1"]),
            Code::Success,
        ),
        (
            "terms naming different nodes give their union",
            PodBuilder::new("p")
                .required_term(term(vec![], vec![req("metadata.name", "In", &["node1"])]))
                .required_term(term(vec![], vec![req("metadata.name", "In", &["node2"])])),
            by_name(&["node1", "node2"]),
            Code::Success,
        ),
        (
            "a term without a name restriction allows every node",
            PodBuilder::new("p")
                .required_term(term(vec![], vec![req("metadata.name", "In", &["node1"])]))
                .required_term(term(vec![req("foo", "Exists", &[])], vec![])),
            None,
            Code::Success,
        ),
    ];
    for (name, pod, want, code) in cases {
        let (got, st) = NodeAffinity::default().pre_filter(
            &mut CycleState::new(),
            &pod.info(),
            &snapshot(vec![]),
        );
        assert_eq!((got, st.code), (want, code), "{name}");
    }
}

#[test]
fn added_affinity_is_enforced_before_the_pod_affinity() {
    let args = json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["foo"]}]}]}}});
    let pl = NodeAffinity::new(Some(&args)).unwrap();
    let cases = [
        (
            "a node outside the added affinity is rejected with the enforced reason",
            PodBuilder::new("p"),
            NodeBuilder::new("n").label("zone", "bar"),
            Status::new(Code::UnschedulableAndUnresolvable, REASON_ENFORCED),
        ),
        (
            "a node matching the added affinity but not the pod's gets the pod reason",
            PodBuilder::new("p").node_selector("foo", "bar"),
            NodeBuilder::new("n").label("zone", "foo"),
            Status::new(Code::UnschedulableAndUnresolvable, REASON_POD),
        ),
        (
            "a node matching both fits",
            PodBuilder::new("p").node_selector("foo", "bar"),
            NodeBuilder::new("n")
                .label("zone", "foo")
                .label("foo", "bar"),
            Status::success(),
        ),
    ];
    for (name, pod, node, want) in cases {
        assert_eq!(run_filter(&pl, pod, node), want, "{name}");
    }
}

fn scores(pl: &NodeAffinity, pod: PodBuilder, nodes: Vec<NodeBuilder>) -> Option<Vec<i64>> {
    let pod = pod.info();
    let infos: Vec<NodeInfo> = nodes.into_iter().map(NodeBuilder::info).collect();
    let refs: Vec<&NodeInfo> = infos.iter().collect();
    let mut state = CycleState::new();
    let st = pl.pre_score(&mut state, &pod, &refs, &snapshot(vec![]));
    if st.is_skip() {
        return None;
    }
    assert!(st.is_success(), "{st:?}");
    let mut s: Vec<i64> = infos
        .iter()
        .map(|n| pl.score(&state, &pod, n).unwrap())
        .collect();
    assert!(pl.normalize_score(&state, &pod, &mut s).is_success());
    Some(s)
}

#[test]
fn score() {
    let pod = PodBuilder::new("p")
        .preferred_term(2, term(vec![req("foo", "In", &["bar"])], vec![]))
        .preferred_term(4, term(vec![req("key", "In", &["value"])], vec![]))
        .preferred_term(
            5,
            term(
                vec![
                    req("foo", "In", &["bar"]),
                    req("key", "In", &["value"]),
                    req("az", "In", &["az1"]),
                ],
                vec![],
            ),
        );
    let nodes = || {
        vec![
            NodeBuilder::new("node1").label("foo", "bar"),
            NodeBuilder::new("node2").label("key", "value"),
            NodeBuilder::new("node5")
                .label("foo", "bar")
                .label("key", "value")
                .label("az", "az1"),
        ]
    };
    let pl = NodeAffinity::default();
    assert_eq!(
        scores(&pl, pod.clone(), nodes()),
        Some(vec![18, 36, 100]),
        "raw scores 2, 4, 11 are normalized to the highest"
    );
    assert_eq!(
        scores(&pl, PodBuilder::new("p"), nodes()),
        None,
        "a pod without preferred terms skips scoring"
    );
    assert_eq!(
        scores(
            &pl,
            PodBuilder::new("p").preferred_term(2, term(vec![req("foo", "In", &["bar"])], vec![])),
            vec![
                NodeBuilder::new("a").label("foo", "baz"),
                NodeBuilder::new("b")
            ]
        ),
        Some(vec![0, 0]),
        "no node matching gives all zeros"
    );

    let args = json!({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 3, "preference": {"matchExpressions": [{"key": "key", "operator": "In", "values": ["value"]}]}}]}});
    let added = NodeAffinity::new(Some(&args)).unwrap();
    let pod =
        PodBuilder::new("p").preferred_term(2, term(vec![req("foo", "In", &["bar"])], vec![]));
    let nodes = vec![
        NodeBuilder::new("node1").label("foo", "bar"),
        NodeBuilder::new("node2").label("key", "value"),
        NodeBuilder::new("node3")
            .label("foo", "bar")
            .label("key", "value"),
    ];
    assert_eq!(
        scores(&added, pod, nodes),
        Some(vec![40, 60, 100]),
        "added preferred terms add to the pod's"
    );
}

#[test]
fn args_validation() {
    let bad = json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Foo", "values": ["x"]}]}]}}});
    let err = NodeAffinity::new(Some(&bad)).unwrap_err();
    assert!(
        err.field
            .starts_with("addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
        "{err:?}"
    );
    let unknown = json!({"addedAffinty": {}});
    assert!(
        NodeAffinity::new(Some(&unknown)).is_err(),
        "unknown fields are rejected"
    );
    let typed = json!({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeAffinityArgs"});
    assert!(
        NodeAffinity::new(Some(&typed)).is_ok(),
        "apiVersion and kind are accepted"
    );
}

#[test]
fn node_change_hints() {
    let pod: kubeplane_api::StoredPod = PodBuilder::new("p")
        .node_selector("foo", "bar")
        .obj()
        .into();
    let matching = NodeBuilder::new("n").label("foo", "bar").obj();
    let other = NodeBuilder::new("n").label("foo", "baz").obj();
    let pl = NodeAffinity::default();
    let events = pl.events_to_register().unwrap();
    let hint = events[0].hint.clone().unwrap();
    let run = |old: Option<&Node>, new: &Node| {
        hint(
            &pod,
            old.cloned()
                .map(kubeplane_api::StoredNode::from)
                .as_ref()
                .map(EventObject::Node),
            Some(EventObject::Node(&new.clone().into())),
        )
        .unwrap()
    };
    assert_eq!(
        run(None, &matching),
        QueueingHint::Queue,
        "an added matching node queues"
    );
    assert_eq!(
        run(None, &other),
        QueueingHint::QueueSkip,
        "an added other node does not"
    );
    assert_eq!(
        run(Some(&other), &matching),
        QueueingHint::Queue,
        "a label update that makes it match queues"
    );
    assert_eq!(
        run(Some(&matching), &matching),
        QueueingHint::QueueSkip,
        "an update of a node that already matched does not"
    );
    assert_eq!(
        run(Some(&matching), &other),
        QueueingHint::QueueSkip,
        "an update that stops matching does not"
    );
}

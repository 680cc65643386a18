//! Table tests of NodeResourcesFit and BalancedAllocation, with upstream's cases.

use k8s_openapi::api::core::v1::{Node, Pod};
use kubeplane_core::features::FeatureGates;
use serde_json::json;

use super::fit::{is_schedulable_after_node_change, is_schedulable_after_pod_event};
use super::*;
use crate::framework::{
    Code, CycleState, EventObject, FilterPlugin, NodeInfo, PreFilterPlugin, PreScorePlugin,
    QueueingHint, ScorePlugin, Status,
};
use crate::plugins::testing::{snapshot, NodeBuilder, PodBuilder, PodBuilderExt};

fn fit(args: serde_json::Value) -> Fit {
    Fit::new(Some(&args), &FeatureGates::default()).unwrap()
}

/// The upstream `TestEnoughRequests` node: 10m cpu, 20 memory, 32 pods, 5 example.com/aaa,
/// 20 ephemeral-storage, 5 hugepages-2Mi.
fn node_10_20() -> NodeBuilder {
    NodeBuilder::new("node1").alloc(&[
        ("cpu", "10m"),
        ("memory", "20"),
        ("pods", "32"),
        ("example.com/aaa", "5"),
        ("ephemeral-storage", "20"),
        ("hugepages-2Mi", "5"),
    ])
}

fn run_filter(pl: &Fit, pod: PodBuilder, node: NodeBuilder, existing: Vec<PodBuilder>) -> Status {
    let pod = pod.info();
    let node = node.info_with_pods(existing.into_iter().map(PodBuilder::obj).collect());
    let mut state = CycleState::new();
    let (_, st) = pl.pre_filter(&mut state, &pod, &snapshot(vec![]));
    assert!(st.is_success());
    pl.filter(&state, &pod, &node)
}

fn reasons(code: Code, reasons: &[&str]) -> Status {
    Status::with_reasons(code, reasons.iter().map(|s| s.to_string()))
}

#[test]
fn enough_requests() {
    use Code::{Unschedulable as U, UnschedulableAndUnresolvable as UU};
    let existing = |cpu: &str, mem: &str| {
        vec![PodBuilder::new("e")
            .node("node1")
            .req(&[("cpu", cpu), ("memory", mem)])]
    };
    let default = fit(json!({}));
    let ignored = fit(json!({"ignoredResources": ["example.com/bbb"]}));
    let ignored_group = fit(json!({"ignoredResourceGroups": ["example.com"]}));
    let cases = [
        (
            "a pod requesting nothing always fits",
            &default,
            PodBuilder::new("p"),
            existing("10m", "20"),
            Status::success(),
        ),
        (
            "a pod over the free cpu and memory gets both reasons",
            &default,
            PodBuilder::new("p").req(&[("cpu", "1m"), ("memory", "1")]),
            existing("10m", "20"),
            reasons(U, &["Insufficient cpu", "Insufficient memory"]),
        ),
        (
            "an init container's larger cpu request counts",
            &default,
            PodBuilder::new("p")
                .req(&[("cpu", "1m"), ("memory", "1")])
                .init_req(&[("cpu", "3m"), ("memory", "1")], false),
            existing("8m", "19"),
            reasons(U, &["Insufficient cpu"]),
        ),
        (
            "the largest of several init containers counts",
            &default,
            PodBuilder::new("p")
                .req(&[("cpu", "1m"), ("memory", "1")])
                .init_req(&[("cpu", "3m"), ("memory", "1")], false)
                .init_req(&[("cpu", "2m"), ("memory", "1")], false),
            existing("8m", "19"),
            reasons(U, &["Insufficient cpu"]),
        ),
        (
            "a sidecar's request adds to the containers'",
            &default,
            PodBuilder::new("p")
                .req(&[("cpu", "1m")])
                .init_req(&[("cpu", "1m")], true),
            existing("9m", "0"),
            reasons(U, &["Insufficient cpu"]),
        ),
        (
            "both resources fit",
            &default,
            PodBuilder::new("p").req(&[("cpu", "1m"), ("memory", "1")]),
            existing("5m", "5"),
            Status::success(),
        ),
        (
            "only cpu lacks room",
            &default,
            PodBuilder::new("p").req(&[("cpu", "2m"), ("memory", "1")]),
            existing("9m", "5"),
            reasons(U, &["Insufficient cpu"]),
        ),
        (
            "only memory lacks room",
            &default,
            PodBuilder::new("p").req(&[("cpu", "1m"), ("memory", "2")]),
            existing("5m", "19"),
            reasons(U, &["Insufficient memory"]),
        ),
        (
            "a request exactly filling the node fits",
            &default,
            PodBuilder::new("p").req(&[("cpu", "5m"), ("memory", "1")]),
            existing("5m", "19"),
            Status::success(),
        ),
        (
            "a request larger than the node's allocatable cannot be helped by preemption",
            &default,
            PodBuilder::new("p").req(&[("cpu", "11m")]),
            existing("0", "0"),
            reasons(UU, &["Insufficient cpu"]),
        ),
        (
            "an extended resource over the node's allocatable is unresolvable",
            &default,
            PodBuilder::new("p").req(&[("example.com/aaa", "10")]),
            vec![],
            reasons(UU, &["Insufficient example.com/aaa"]),
        ),
        (
            "an extended resource the node lacks is insufficient",
            &default,
            PodBuilder::new("p").req(&[("example.com/bbb", "1")]),
            vec![],
            reasons(UU, &["Insufficient example.com/bbb"]),
        ),
        (
            "an ignored extended resource is not checked",
            &ignored,
            PodBuilder::new("p").req(&[("example.com/bbb", "1")]),
            vec![],
            Status::success(),
        ),
        (
            "an extended resource in an ignored group is not checked",
            &ignored_group,
            PodBuilder::new("p").req(&[("example.com/bbb", "1")]),
            vec![],
            Status::success(),
        ),
        (
            "a kubernetes.io resource is never ignored",
            &fit(json!({"ignoredResources": ["kubernetes.io/something"]})),
            PodBuilder::new("p").req(&[("kubernetes.io/something", "1")]),
            vec![],
            reasons(UU, &["Insufficient kubernetes.io/something"]),
        ),
        (
            "hugepages are checked like other scalar resources",
            &default,
            PodBuilder::new("p").req(&[("hugepages-2Mi", "6")]),
            vec![],
            reasons(UU, &["Insufficient hugepages-2Mi"]),
        ),
        (
            "ephemeral storage is checked",
            &default,
            PodBuilder::new("p").req(&[("ephemeral-storage", "25")]),
            vec![],
            reasons(UU, &["Insufficient ephemeral-storage"]),
        ),
    ];
    for (name, pl, pod, existing, want) in cases {
        assert_eq!(run_filter(pl, pod, node_10_20(), existing), want, "{name}");
    }
}

#[test]
fn too_many_pods() {
    let node =
        || NodeBuilder::new("node1").alloc(&[("cpu", "10m"), ("memory", "20"), ("pods", "1")]);
    let existing = || vec![PodBuilder::new("e").node("node1")];
    assert_eq!(
        run_filter(&fit(json!({})), PodBuilder::new("p"), node(), existing()),
        reasons(Code::Unschedulable, &["Too many pods"]),
        "a full node rejects even a pod requesting nothing"
    );
    assert_eq!(
        run_filter(
            &fit(json!({})),
            PodBuilder::new("p").req(&[("cpu", "11m")]),
            node(),
            existing()
        ),
        reasons(
            Code::UnschedulableAndUnresolvable,
            &["Too many pods", "Insufficient cpu"]
        ),
        "every reason is kept"
    );
}

/// Scores of a pod asking 3000m cpu / 5000 memory in two containers on a 4000m/10000 node
/// and a 6000m/10000 node, both empty (upstream scoring tests).
fn fit_scores(args: serde_json::Value) -> Vec<i64> {
    let pl = fit(args);
    let pod = PodBuilder::new("p")
        .req(&[("cpu", "1000m"), ("memory", "2000")])
        .req(&[("cpu", "2000m"), ("memory", "3000")])
        .info();
    let nodes = [
        NodeBuilder::new("node1")
            .alloc(&[("cpu", "4000m"), ("memory", "10000"), ("pods", "110")])
            .info(),
        NodeBuilder::new("node2")
            .alloc(&[("cpu", "6000m"), ("memory", "10000"), ("pods", "110")])
            .info(),
    ];
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    let mut state = CycleState::new();
    assert!(pl
        .pre_score(&mut state, &pod, &refs, &snapshot(vec![]))
        .is_success());
    let per_node: Vec<i64> = nodes
        .iter()
        .map(|n| pl.score(&state, &pod, n).unwrap())
        .collect();
    let mut batch = vec![-1; nodes.len()];
    pl.score_nodes(&state, &pod, &refs, 0, &mut batch).unwrap();
    assert_eq!(batch, per_node, "score_nodes must agree with score");
    per_node
}

#[test]
fn fit_score() {
    let cases = [
        (
            "least allocated prefers the emptier node",
            json!({}),
            vec![37, 50],
        ),
        (
            "most allocated prefers the fuller node",
            json!({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}),
            vec![62, 50],
        ),
        (
            "requested to capacity ratio rounds the weighted mean",
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}}}),
            vec![38, 50],
        ),
        (
            "weights change the mean",
            json!({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}}),
            vec![31, 50],
        ),
        (
            "an extended resource the pod does not request is left out",
            json!({"scoringStrategy": {"type": "LeastAllocated", "resources": [
                {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "example.com/gpu", "weight": 1}]}}),
            vec![37, 50],
        ),
    ];
    for (name, args, want) in cases {
        assert_eq!(fit_scores(args), want, "{name}");
    }
}

#[test]
fn least_allocated_counts_default_requests_for_pods_without_requests() {
    // A pod without requests counts 100m cpu and 200Mi memory: memory is over the node's 10000,
    // so it scores 0, and cpu scores (4000 - 100) * 100 / 4000 = 97.
    let pl = fit(json!({}));
    let pod = PodBuilder::new("p").image("img").info();
    let node = NodeBuilder::new("n")
        .alloc(&[("cpu", "4000m"), ("memory", "10000")])
        .info();
    let mut state = CycleState::new();
    assert!(pl
        .pre_score(&mut state, &pod, &[&node], &snapshot(vec![]))
        .is_success());
    assert_eq!(pl.score(&state, &pod, &node).unwrap(), 48);
}

#[test]
fn broken_linear_function() {
    use super::resource_allocation::broken_linear;
    let shape = [(10, 1), (20, 2), (30, 3)];
    let cases = [(0, 1), (10, 1), (15, 1), (20, 2), (25, 2), (30, 3), (50, 3)];
    for (p, want) in cases {
        assert_eq!(broken_linear(&shape, p), want, "utilization {p}");
    }
    let down = [(0, 100), (100, 0)];
    assert_eq!(broken_linear(&down, 75), 25);
    assert_eq!(broken_linear(&down, 50), 50);
}

/// The gates of v1.35.4, the last release kubeplane knows with the balance-with-the-pod
/// formula of BalancedAllocation.
fn before_1_36() -> FeatureGates {
    FeatureGates::for_version(kubeplane_core::version::v1(35, 4))
}

pub(super) fn balanced_scores(
    pl: &BalancedAllocation,
    pod: PodBuilder,
    nodes: Vec<NodeInfo>,
) -> Option<Vec<i64>> {
    let pod = pod.info();
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    let mut state = CycleState::new();
    let st = pl.pre_score(&mut state, &pod, &refs, &snapshot(vec![]));
    if st.is_skip() {
        return None;
    }
    let per_node: Vec<i64> = nodes
        .iter()
        .map(|n| pl.score(&state, &pod, n).unwrap())
        .collect();
    let mut batch = vec![-1; nodes.len()];
    pl.score_nodes(&state, &pod, &refs, 0, &mut batch).unwrap();
    assert_eq!(batch, per_node, "score_nodes must agree with score");
    Some(per_node)
}

#[test]
fn balanced_allocation() {
    let pl = BalancedAllocation::new(None, &before_1_36()).unwrap();
    let pod = || {
        PodBuilder::new("p")
            .req(&[("cpu", "1000m"), ("memory", "2000")])
            .req(&[("cpu", "2000m"), ("memory", "3000")])
    };
    let empty_nodes = vec![
        NodeBuilder::new("node1")
            .alloc(&[("cpu", "4000m"), ("memory", "10000"), ("pods", "110")])
            .info(),
        NodeBuilder::new("node2")
            .alloc(&[("cpu", "6000m"), ("memory", "10000"), ("pods", "110")])
            .info(),
    ];
    assert_eq!(
        balanced_scores(&pl, pod(), empty_nodes),
        Some(vec![87, 100]),
        "fractions 0.75/0.5 score 87, equal fractions score 100"
    );

    let alloc = [("cpu", "10000m"), ("memory", "20000"), ("pods", "110")];
    let busy_nodes = vec![
        NodeBuilder::new("node1")
            .alloc(&alloc)
            .info_with_pods(vec![PodBuilder::new("e1")
                .node("node1")
                .req(&[("cpu", "3000m")])
                .obj()]),
        NodeBuilder::new("node2")
            .alloc(&alloc)
            .info_with_pods(vec![PodBuilder::new("e2")
                .node("node2")
                .req(&[("cpu", "3000m"), ("memory", "5000")])
                .obj()]),
    ];
    assert_eq!(
        balanced_scores(&pl, pod(), busy_nodes),
        Some(vec![82, 95]),
        "existing requests count without non-zero defaults"
    );

    let nodes = vec![NodeBuilder::new("n").alloc(&alloc).info()];
    assert_eq!(
        balanced_scores(&pl, PodBuilder::new("p").image("img"), nodes),
        None,
        "a best-effort pod skips scoring"
    );
}

#[test]
fn balanced_allocation_with_three_resources() {
    let pl = BalancedAllocation::new(Some(&json!({"resources": [
        {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}]})), &before_1_36())
    .unwrap();
    let pod = PodBuilder::new("p").req(&[
        ("cpu", "3000m"),
        ("memory", "5000"),
        ("nvidia.com/gpu", "1"),
    ]);
    let nodes = vec![
        NodeBuilder::new("with-gpu")
            .alloc(&[
                ("cpu", "4000m"),
                ("memory", "10000"),
                ("nvidia.com/gpu", "4"),
            ])
            .info(),
        NodeBuilder::new("without-gpu")
            .alloc(&[("cpu", "4000m"), ("memory", "10000")])
            .info(),
    ];
    // with-gpu: fractions 0.75, 0.5, 0.25: mean 0.5, std sqrt(0.125/3) = 0.204 → 79.
    // without-gpu: the gpu is skipped, fractions 0.75, 0.5 → 87.
    assert_eq!(balanced_scores(&pl, pod, nodes), Some(vec![79, 87]));
}

#[test]
fn fit_args_validation() {
    let f = FeatureGates::default();
    let err = |args: serde_json::Value| Fit::new(Some(&args), &f).err().map(|e| e.field);
    let cases = [
        ("no args take the defaults", json!({}), None),
        (
            "a negative weight is invalid",
            json!({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}]}}),
            Some("scoringStrategy.resources[0].weight"),
        ),
        (
            "a weight above 100 is invalid",
            json!({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}]}}),
            Some("scoringStrategy.resources[1].weight"),
        ),
        (
            "a zero weight defaults to 1",
            json!({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}),
            None,
        ),
        (
            "an unknown strategy type is unsupported",
            json!({"scoringStrategy": {"type": "Random"}}),
            Some("scoringStrategy.type"),
        ),
        (
            "RequestedToCapacityRatio needs its shape",
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}),
            Some("scoringStrategy.requestedToCapacityRatio"),
        ),
        (
            "a shape must not be given for other strategies",
            json!({"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}]}}}),
            Some("scoringStrategy.requestedToCapacityRatio"),
        ),
        (
            "an empty shape is invalid",
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}}),
            Some("scoringStrategy.requestedToCapacityRatio.shape"),
        ),
        (
            "shape utilizations must increase",
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
                {"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]}}}),
            Some("scoringStrategy.requestedToCapacityRatio.shape[1].utilization"),
        ),
        (
            "shape utilization must be at most 100",
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
                {"utilization": 0, "score": 1}, {"utilization": 110, "score": 2}]}}}),
            Some("scoringStrategy.requestedToCapacityRatio.shape[1].utilization"),
        ),
        (
            "shape scores must be at most 10",
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
                {"utilization": 0, "score": 11}]}}}),
            Some("scoringStrategy.requestedToCapacityRatio.shape[0].score"),
        ),
        (
            "an ignored resource must be a qualified name",
            json!({"ignoredResources": ["-bad-"]}),
            Some("ignoredResources[0]"),
        ),
        (
            "an ignored resource group must not contain a slash",
            json!({"ignoredResourceGroups": ["example.com/foo"]}),
            Some("ignoredResourceGroups[0]"),
        ),
        (
            "an unknown field is rejected",
            json!({"scoringStrategyy": {}}),
            Some("scoringStrategyy"),
        ),
    ];
    for (name, args, want) in cases {
        assert_eq!(err(args).as_deref(), want, "{name}");
    }
    let e = Fit::new(
        Some(&json!({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": -1}]}})),
        &f,
    )
    .err()
    .unwrap();
    assert_eq!(
        e.message,
        "Invalid value: -1: resource weight of memory not in valid range (0, 100]"
    );
}

#[test]
fn balanced_allocation_args_validation() {
    let err = |args: serde_json::Value| {
        BalancedAllocation::new(Some(&args), &before_1_36())
            .err()
            .map(|e| e.field)
    };
    assert_eq!(err(json!({})), None, "no args take the defaults");
    assert_eq!(
        err(json!({"resources": [{"name": "cpu"}, {"name": "memory"}]})),
        None,
        "weights default to 1"
    );
    assert_eq!(
        err(json!({"resources": [{"name": "cpu", "weight": 2}]})).as_deref(),
        Some("resources[0].weight"),
        "every weight must be 1"
    );
    assert_eq!(
        err(json!({"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]}))
            .as_deref(),
        Some("resources[1].name"),
        "duplicate resources are rejected"
    );
}

#[test]
fn node_change_hints() {
    let pod: kubeplane_api::StoredPod = PodBuilder::new("p")
        .req(&[("cpu", "2"), ("memory", "2Gi")])
        .obj()
        .into();
    let small = NodeBuilder::new("n")
        .alloc(&[("cpu", "1"), ("memory", "4Gi"), ("pods", "10")])
        .obj();
    let big = NodeBuilder::new("n")
        .alloc(&[("cpu", "4"), ("memory", "4Gi"), ("pods", "10")])
        .obj();
    let big_more_pods = NodeBuilder::new("n")
        .alloc(&[("cpu", "4"), ("memory", "4Gi"), ("pods", "20")])
        .obj();
    let big_more_storage = NodeBuilder::new("n")
        .alloc(&[
            ("cpu", "4"),
            ("memory", "4Gi"),
            ("pods", "10"),
            ("ephemeral-storage", "1Gi"),
        ])
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
            "an added node the pod fits queues it",
            None,
            &big,
            QueueingHint::Queue,
        ),
        (
            "an added node too small does not",
            None,
            &small,
            QueueingHint::QueueSkip,
        ),
        (
            "growing a requested resource so the pod fits queues it",
            Some(&small),
            &big,
            QueueingHint::Queue,
        ),
        (
            "allowing more pods queues it",
            Some(&big),
            &big_more_pods,
            QueueingHint::Queue,
        ),
        (
            "growing an unrequested resource does not",
            Some(&big),
            &big_more_storage,
            QueueingHint::QueueSkip,
        ),
        (
            "shrinking below the request does not",
            Some(&big),
            &small,
            QueueingHint::QueueSkip,
        ),
    ];
    for (name, old, new, want) in cases {
        assert_eq!(hint(old, new), want, "{name}");
    }
}

#[test]
fn pod_event_hints() {
    let pod: kubeplane_api::StoredPod = PodBuilder::new("p").req(&[("cpu", "2")]).obj().into();
    let deleted = |p: &Pod| {
        is_schedulable_after_pod_event(true, &pod, Some(EventObject::Pod(&p.clone().into())), None)
            .unwrap()
    };
    assert_eq!(
        deleted(&PodBuilder::new("e").node("n").obj()),
        QueueingHint::Queue,
        "deleting a bound pod frees resources"
    );
    assert_eq!(
        deleted(&PodBuilder::new("e").nominated("n").obj()),
        QueueingHint::Queue,
        "deleting a nominated pod frees its reservation"
    );
    assert_eq!(
        deleted(&PodBuilder::new("e").obj()),
        QueueingHint::QueueSkip,
        "deleting an unscheduled pod frees nothing"
    );

    let updated = |old: &Pod, new: &Pod| {
        is_schedulable_after_pod_event(
            true,
            &pod,
            Some(EventObject::Pod(&old.clone().into())),
            Some(EventObject::Pod(&new.clone().into())),
        )
        .unwrap()
    };
    let big = PodBuilder::new("e")
        .node("n")
        .req(&[("cpu", "4"), ("memory", "1Gi")])
        .obj();
    let less_cpu = PodBuilder::new("e")
        .node("n")
        .req(&[("cpu", "1"), ("memory", "1Gi")])
        .obj();
    let less_mem = PodBuilder::new("e")
        .node("n")
        .req(&[("cpu", "4"), ("memory", "0")])
        .obj();
    assert_eq!(
        updated(&big, &less_cpu),
        QueueingHint::Queue,
        "a bound pod shrinking a requested resource"
    );
    assert_eq!(
        updated(&big, &less_mem),
        QueueingHint::QueueSkip,
        "a bound pod shrinking an unrequested resource"
    );
    let me_big = PodBuilder::new("p").req(&[("cpu", "3")]).obj();
    assert_eq!(
        updated(&me_big, &pod.to_k8s()),
        QueueingHint::Queue,
        "the waiting pod itself scaled down"
    );
    assert_eq!(
        is_schedulable_after_pod_event(
            false,
            &pod,
            Some(EventObject::Pod(&big.clone().into())),
            Some(EventObject::Pod(&less_cpu.clone().into()))
        )
        .unwrap(),
        QueueingHint::QueueSkip,
        "without in-place resize updates never help"
    );
}

/// Where [`FilterPlugin::sums_check`] applies (no scalar resource to check), its verdict is
/// [`FilterPlugin::passes_with_requests`]'s on random pods, nodes and sums (seeded), with and
/// without PreFilter's state, with ignored resources.
#[test]
fn the_sums_check_agrees_with_the_requests_verdict() {
    use kubeplane_core::resources::Resources;
    use rand::{Rng, SeedableRng};
    let plugins = [
        fit(json!({})),
        fit(json!({"ignoredResources": ["example.com/bbb"]})),
    ];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(19);
    let (mut applied, mut not_applied, mut passed, mut failed) = (0, 0, 0, 0);
    for _ in 0..4000 {
        let pl = &plugins[rng.random_range(0..2)];
        let mut req: Vec<(&str, String)> = Vec::new();
        for (name, p, unit) in [
            ("cpu", 0.7, "m"),
            ("memory", 0.7, ""),
            ("ephemeral-storage", 0.3, ""),
        ] {
            if rng.random_bool(p) {
                req.push((name, format!("{}{unit}", rng.random_range(0..12))));
            }
        }
        for name in ["example.com/aaa", "example.com/bbb"] {
            if rng.random_bool(0.15) {
                req.push((name, rng.random_range(0..3).to_string()));
            }
        }
        let req: Vec<(&str, &str)> = req.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let pod = PodBuilder::new("p").req(&req).info();
        let mut state = CycleState::new();
        if rng.random_bool(0.7) {
            pl.pre_filter(&mut state, &pod, &snapshot(vec![]));
        }
        let Some(check) = pl.sums_check(&state, &pod) else {
            not_applied += 1;
            continue;
        };
        applied += 1;
        let mut node = NodeInfo::default();
        let amount = |r: &mut rand_chacha::ChaCha8Rng, max| r.random_range(-2..max);
        node.allocatable = Resources {
            milli_cpu: amount(&mut rng, 24),
            memory: amount(&mut rng, 24),
            ephemeral_storage: amount(&mut rng, 24),
            allowed_pod_number: rng.random_range(0..8),
            scalar: vec![("example.com/aaa".into(), 1)],
        };
        let used = Resources {
            milli_cpu: amount(&mut rng, 10),
            memory: amount(&mut rng, 10),
            ephemeral_storage: amount(&mut rng, 10),
            allowed_pod_number: 0,
            scalar: vec![("example.com/bbb".into(), 9)],
        };
        let num_pods = rng.random_range(0..5);
        let want = pl.passes_with_requests(&state, &pod, &node, &used, num_pods);
        let sums = crate::framework::SumsCheck::sums_of(&used);
        let got = check.passes(&node.allocatable, &sums, num_pods);
        assert_eq!(Some(got), want, "{req:?} on {:?}", node.allocatable);
        if got {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    assert!(
        applied > 2000 && not_applied > 200,
        "{applied} / {not_applied}"
    );
    assert!(passed > 300 && failed > 300, "{passed} / {failed}");
}

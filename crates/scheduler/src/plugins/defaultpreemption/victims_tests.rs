//! The direct way of victim selection (with its arithmetic on requests) gives the general
//! way's answer (the victims, or the failure's code, plugin and message): a property test on
//! random small clusters (seeded), node by node, with one search reused across the nodes.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kubeplane_core::features::FeatureGates;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::evaluator::PdbInfo;
use super::victims::{VictimSearch, Victims};
use crate::framework::{CycleState, Framework, NodeInfo, PodInfo};
use crate::plugins::testing::{
    expr, pod_term, snapshot, spread, taint, toleration, NodeBuilder, PodBuilder,
};

fn default_framework() -> Framework {
    crate::config::resolve(None, &FeatureGates::default())
        .unwrap()
        .frameworks
        .remove(0)
}

const START_TIMES: [&str; 3] = [
    "2025-01-01T00:00:00Z",
    "2025-01-01T00:01:00Z",
    "2025-01-01T00:02:00Z",
];

fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> T {
    items[rng.random_range(0..items.len())]
}

/// Random requests: cpu and memory, sometimes ephemeral-storage or a scalar resource.
fn random_requests(rng: &mut ChaCha8Rng, max_cpu: i64) -> Vec<(&'static str, String)> {
    let mut req = vec![
        ("cpu", format!("{}m", rng.random_range(1..max_cpu) * 100)),
        ("memory", format!("{}Mi", rng.random_range(1..8) * 256)),
    ];
    if rng.random_bool(0.2) {
        req.push(("ephemeral-storage", format!("{}Gi", rng.random_range(1..4))));
    }
    if rng.random_bool(0.15) {
        req.push(("example.com/foo", rng.random_range(0..3).to_string()));
    }
    req
}

fn with_requests(p: PodBuilder, req: &[(&'static str, String)]) -> PodBuilder {
    let req: Vec<(&str, &str)> = req.iter().map(|(k, v)| (*k, v.as_str())).collect();
    p.req(&req)
}

/// A pod with random priority, requests, labels, start time and (sometimes) a host port.
fn random_pod(rng: &mut ChaCha8Rng, name: &str) -> PodBuilder {
    let req = random_requests(rng, 16);
    let p = PodBuilder::new(name).priority(pick(rng, &[0, 5, 10, 20]));
    let mut p = with_requests(p, &req)
        .label("app", pick(rng, &["a", "b", "c"]))
        .start_time(pick(rng, &START_TIMES));
    if rng.random_bool(0.15) {
        p = p.host_port("", "TCP", 8080);
    }
    p
}

/// Nodes with their pods, some tainted, some labelled for the preemptor's selector.
fn random_nodes(rng: &mut ChaCha8Rng) -> Vec<NodeInfo> {
    let mut nodes = Vec::new();
    for n in 0..rng.random_range(1..7) {
        let name = format!("node-{n}");
        let pods_allowed = pick(rng, &["3", "5", "110"]);
        let mut node = NodeBuilder::new(&name)
            .label("kubernetes.io/hostname", &name)
            .label("zone", pick(rng, &["z1", "z2"]))
            .alloc(&[
                ("cpu", pick(rng, &["2", "4"])),
                ("memory", "4Gi"),
                ("ephemeral-storage", pick(rng, &["3Gi", "10Gi"])),
                ("example.com/foo", pick(rng, &["2", "4"])),
                ("pods", pods_allowed),
            ]);
        if rng.random_bool(0.2) {
            node = node.taint(taint("dedicated", "x", "NoSchedule"));
        }
        let pods: Vec<Pod> = (0..rng.random_range(0..6))
            .map(|i| random_pod(rng, &format!("p-{n}-{i}")).node(&name).obj())
            .collect();
        nodes.push(node.info_with_pods(pods));
    }
    nodes
}

/// The preemptor: sometimes with a host port, a toleration, a node selector, or a constraint
/// that makes PodTopologySpread or InterPodAffinity run (then only the general way applies).
fn random_preemptor(rng: &mut ChaCha8Rng) -> PodBuilder {
    let req = random_requests(rng, 30);
    let p = PodBuilder::new("preemptor").priority(pick(rng, &[10, 15]));
    let mut p = with_requests(p, &req).label("app", "a");
    if rng.random_bool(0.3) {
        p = p.host_port("", "TCP", 8080);
    }
    if rng.random_bool(0.3) {
        p = p.toleration(toleration("dedicated", "Exists", "", "NoSchedule"));
    }
    if rng.random_bool(0.2) {
        p = p.node_selector("zone", "z1");
    }
    match rng.random_range(0..10) {
        0 => p.spread(spread(
            1,
            "zone",
            "DoNotSchedule",
            vec![expr("app", "In", &["a"])],
        )),
        1 => p.pod_anti_affinity_required(pod_term(
            vec![expr("app", "In", &["b"])],
            "kubernetes.io/hostname",
        )),
        _ => p,
    }
}

/// Pods nominated to some nodes, of random priority.
fn random_nominated(
    rng: &mut ChaCha8Rng,
    nodes: &[NodeInfo],
) -> BTreeMap<String, Vec<Arc<PodInfo>>> {
    let mut nominated = BTreeMap::new();
    for n in nodes {
        if rng.random_bool(0.3) {
            let pods = (0..rng.random_range(1..3))
                .map(|i| random_pod(rng, &format!("nominated-{}-{i}", n.name)).nominated(&n.name))
                .map(|p| Arc::new(PodInfo::new(Arc::new(p.obj().into()))))
                .collect();
            nominated.insert(n.name.clone(), pods);
        }
    }
    nominated
}

fn random_pdbs(rng: &mut ChaCha8Rng) -> Vec<PdbInfo> {
    (0..rng.random_range(0..3))
        .map(|_| PdbInfo {
            namespace: "default".into(),
            selector: kubeplane_core::labels::parse(&format!(
                "app={}",
                pick(rng, &["a", "b", "c"])
            ))
            .ok(),
            disruptions_allowed: rng.random_range(0..3),
            disrupted_pods: Default::default(),
        })
        .collect()
}

/// What is compared: the victims' names and the budget violations, or the failure.
fn outcome(v: Victims) -> Result<(Vec<String>, i64), String> {
    v.map(|(victims, n)| (victims.iter().map(|p| p.key()).collect(), n))
        .map_err(|s| format!("{:?} {:?} {}", s.code, s.plugin, s.message()))
}

#[test]
fn the_direct_way_finds_the_same_victims_as_the_general_way_on_random_clusters() {
    let fwk = default_framework();
    let now = "2025-01-01T00:05:00Z".parse::<jiff::Timestamp>().unwrap();
    let (mut direct_found, mut direct_failed, mut general_only) = (0, 0, 0);
    let (mut by_requests, mut failed_by_requests, mut failed_with_nominated) = (0, 0, 0);
    let mut by_sums = 0;
    for seed in 0..400 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let nodes = random_nodes(&mut rng);
        let pod = PodInfo::new(Arc::new(random_preemptor(&mut rng).obj().into()));
        let nominated = random_nominated(&mut rng, &nodes);
        let pdbs = random_pdbs(&mut rng);
        let snap = snapshot(nodes.clone());
        let mut state = CycleState::new();
        if !fwk
            .run_pre_filter_plugins(&mut state, &pod, &snap)
            .status
            .is_success()
        {
            continue;
        }
        let mut search = VictimSearch::new(&fwk, &state, &pod, &pdbs, now);
        if !search.is_direct() {
            general_only += 1;
        }
        for node in &nodes {
            let nom = nominated.get(&node.name).cloned().unwrap_or_default();
            let mut general = VictimSearch::general(&fwk, &state, &pod, &pdbs, now);
            let want = outcome(general.select_victims(node, &nom, None));
            let failed_before = search.failed_by_requests;
            // As the filter pass would fail the node (its plugins before the failing one pass).
            let own = fwk.run_filter_plugins(&state, &pod, node);
            let failed = (!own.is_success()).then_some(&own);
            let got = outcome(search.select_victims(node, &nom, failed));
            assert_eq!(got, want, "seed {seed}, node {}", node.name);
            let relevant = nom.iter().any(|np| np.priority >= pod.priority);
            if search.failed_by_requests > failed_before && relevant {
                failed_with_nominated += 1;
            }
            if search.is_direct() {
                match got {
                    Ok(_) => direct_found += 1,
                    Err(_) => direct_failed += 1,
                }
            }
        }
        by_requests += search.by_requests;
        by_sums += search.by_sums;
        failed_by_requests += search.failed_by_requests;
    }
    // The cases cover both ways and both outcomes.
    assert!(direct_found > 200, "{direct_found} nodes with victims");
    assert!(direct_failed > 200, "{direct_failed} nodes without");
    assert!(
        general_only > 20,
        "{general_only} cases took the general way"
    );
    // Many of the direct way's nodes were decided by arithmetic on the requests.
    assert!(by_requests > 100, "{by_requests} nodes by requests");
    // Most on three sums; some (a preemptor requesting a scalar resource) on `Resources`.
    assert!(by_sums > 80, "{by_sums} nodes by sums");
    assert!(
        by_requests - by_sums > 10,
        "{} nodes by requests, not sums",
        by_requests - by_sums
    );
    // Many failed by arithmetic (their status compared above), some with relevant nominated
    // pods (the first of the two passes).
    assert!(
        failed_by_requests > 100,
        "{failed_by_requests} failures by requests"
    );
    assert!(
        failed_with_nominated > 20,
        "{failed_with_nominated} failures by requests with nominated pods"
    );
}

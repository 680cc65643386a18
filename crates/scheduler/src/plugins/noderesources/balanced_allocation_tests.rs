//! NodeResourcesBalancedAllocation across releases: the balance with the pod (v1.34, v1.35)
//! and the change of balance the pod brings (v1.36 and later, kubernetes#135573), on the same
//! cases, upstream's among them.

use kubeplane_core::features::FeatureGates;
use kubeplane_core::version::{v1, KubeVersion};
use serde_json::json;

use super::tests::balanced_scores;
use super::*;
use crate::framework::NodeInfo;
use crate::plugins::testing::{NodeBuilder, PodBuilder};

fn node(name: &str, alloc: &[(&str, &str)], existing: &[&[(&str, &str)]]) -> NodeInfo {
    let pods = existing
        .iter()
        .enumerate()
        .map(|(i, req)| {
            PodBuilder::new(&format!("{name}-e{i}"))
                .node(name)
                .req(req)
                .obj()
        })
        .collect();
    NodeBuilder::new(name).alloc(alloc).info_with_pods(pods)
}

struct Case {
    name: &'static str,
    args: Option<serde_json::Value>,
    pod: &'static [(&'static str, &'static str)],
    nodes: fn() -> Vec<NodeInfo>,
    /// Scores in v1.35 (balance with the pod) and in v1.36 (change of balance).
    before: [i64; 2],
    after: [i64; 2],
}

const CPU_MEM_3000_5000: &[(&str, &str)] = &[("cpu", "3000m"), ("memory", "5000")];

fn cases_on_cpu_and_memory() -> Vec<Case> {
    vec![
        Case {
            name: "on empty nodes the pod's own balance decides, and an empty node starts perfectly balanced",
            args: None,
            pod: CPU_MEM_3000_5000,
            nodes: || {
                vec![
                    node("node1", &[("cpu", "4000m"), ("memory", "10000")], &[]),
                    node("node2", &[("cpu", "6000m"), ("memory", "10000")], &[]),
                ]
            },
            // node1: fractions 0.75/0.5 score 87; node2 0.5/0.5 scores 100. From v1.36 both
            // start at 100: 50 + (50 + 87 - 100) / 2 = 68 and 50 + (50 + 100 - 100) / 2 = 75.
            before: [87, 100],
            after: [68, 75],
        },
        Case {
            name: "existing requests count without non-zero defaults, before and after the pod",
            args: None,
            pod: CPU_MEM_3000_5000,
            nodes: || {
                let alloc = [("cpu", "10000m"), ("memory", "20000")];
                vec![
                    node("node1", &alloc, &[&[("cpu", "3000m")]]),
                    node("node2", &alloc, &[&[("cpu", "3000m"), ("memory", "5000")]]),
                ]
            },
            // node1: 0.3/0 (85) becomes 0.6/0.25 (82): 50 + (50 + 82 - 85) / 2 = 73.
            // node2: 0.3/0.25 (97) becomes 0.6/0.5 (95): 50 + (50 + 95 - 97) / 2 = 74.
            before: [82, 95],
            after: [73, 74],
        },
    ]
}

fn cases() -> Vec<Case> {
    let mut all = cases_on_cpu_and_memory();
    all.extend(cases_that_move_the_balance());
    all
}

fn cases_that_move_the_balance() -> Vec<Case> {
    vec![
        Case {
            // Upstream's "resources requested, pods scheduled with resources, nodes to reach
            // min/max score" (#135573): the same scores in both formulas.
            name: "from perfectly imbalanced to balanced scores the maximum, from balanced to imbalanced the minimum",
            args: None,
            pod: &[("memory", "5000")],
            nodes: || {
                let alloc = [("cpu", "3000m"), ("memory", "5000")];
                vec![
                    node("node1", &alloc, &[&[("cpu", "3000m")]]),
                    node("node2", &alloc, &[]),
                ]
            },
            before: [100, 50],
            after: [100, 50],
        },
        Case {
            name: "a pod that repairs an imbalanced node beats a slightly better final balance elsewhere",
            args: None,
            pod: &[("memory", "4000")],
            nodes: || {
                let alloc = [("cpu", "10000m"), ("memory", "10000")];
                vec![
                    node("node1", &alloc, &[&[("cpu", "8000m")]]),
                    node("node2", &alloc, &[&[("cpu", "200m")]]),
                ]
            },
            // node1: 0.8/0 (60) becomes 0.8/0.4 (80): 50 + (50 + 80 - 60) / 2 = 85.
            // node2: 0.02/0 (99) becomes 0.02/0.4 (81): 50 + (50 + 81 - 99) / 2 = 66.
            before: [80, 81],
            after: [85, 66],
        },
        Case {
            name: "three resources use the standard deviation, and a node without the extended resource leaves it out",
            args: Some(json!({"resources": [
                {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
                {"name": "nvidia.com/gpu", "weight": 1}]})),
            pod: &[("cpu", "3000m"), ("memory", "5000"), ("nvidia.com/gpu", "1")],
            nodes: || {
                vec![
                    node(
                        "with-gpu",
                        &[("cpu", "4000m"), ("memory", "10000"), ("nvidia.com/gpu", "4")],
                        &[],
                    ),
                    node("without-gpu", &[("cpu", "4000m"), ("memory", "10000")], &[]),
                ]
            },
            // with-gpu: 0.75/0.5/0.25 (79) from 100: 64; without-gpu: 0.75/0.5 (87) from 100: 68.
            before: [79, 87],
            after: [64, 68],
        },
    ]
}

fn scores(case: &Case, version: KubeVersion) -> Vec<i64> {
    let features = FeatureGates::for_version(version);
    let pl = BalancedAllocation::new(case.args.as_ref(), &features).unwrap();
    let pod = PodBuilder::new("p").req(case.pod);
    balanced_scores(&pl, pod, (case.nodes)()).expect("the pod requests resources")
}

#[test]
fn balanced_allocation_formula_by_release() {
    for case in cases() {
        for version in [v1(34, 0), v1(34, 7), v1(35, 0), v1(35, 4)] {
            assert_eq!(
                scores(&case, version),
                case.before,
                "{} ({version})",
                case.name
            );
        }
        for version in [v1(36, 0), v1(37, 0)] {
            assert_eq!(
                scores(&case, version),
                case.after,
                "{} ({version})",
                case.name
            );
        }
    }
}

#[test]
fn a_best_effort_pod_skips_scoring_in_every_release() {
    for version in [v1(35, 4), v1(36, 0)] {
        let pl = BalancedAllocation::new(None, &FeatureGates::for_version(version)).unwrap();
        let nodes = vec![node("n", &[("cpu", "1000m"), ("memory", "1000")], &[])];
        let pod = PodBuilder::new("p").image("img");
        assert_eq!(balanced_scores(&pl, pod, nodes), None, "{version}");
    }
}

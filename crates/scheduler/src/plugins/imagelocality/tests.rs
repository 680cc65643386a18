//! Table tests of ImageLocality scoring, with upstream's cases.

use super::*;
use crate::plugins::testing::{snapshot, NodeBuilder, PodBuilder, PodBuilderExt};

const MB: i64 = 1024 * 1024;

fn scores(pod: PodBuilder, nodes: Vec<NodeBuilder>) -> Vec<i64> {
    let pod = pod.info();
    let infos: Vec<NodeInfo> = nodes.into_iter().map(NodeBuilder::info).collect();
    let snap = snapshot(infos.clone());
    let refs: Vec<&NodeInfo> = infos.iter().collect();
    let mut state = CycleState::new();
    assert!(ImageLocality
        .pre_score(&mut state, &pod, &refs, &snap)
        .is_success());
    let per_node: Vec<i64> = infos
        .iter()
        .map(|n| ImageLocality.score(&state, &pod, n).unwrap())
        .collect();
    let mut batch = vec![-1; refs.len()];
    ImageLocality
        .score_nodes(&state, &pod, &refs, 0, &mut batch)
        .unwrap();
    assert_eq!(batch, per_node, "score_nodes must agree with score");
    per_node
}

/// node1 has 40 MB, 300 MB and 2000 MB images; node2 has 250 MB and 10 MB ones.
fn nodes_40_300_2000_and_250_10() -> Vec<NodeBuilder> {
    vec![
        NodeBuilder::new("node1")
            .image(&["gcr.io/40:latest", "gcr.io/40:v1"], 40 * MB)
            .image(&["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB)
            .image(&["gcr.io/2000:latest"], 2000 * MB),
        NodeBuilder::new("node2")
            .image(&["gcr.io/250:latest"], 250 * MB)
            .image(&["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB),
    ]
}

#[test]
fn image_locality_priority() {
    let cases = [
        (
            "two images on different nodes: each counts half its size, below or near the threshold",
            PodBuilder::new("p").image("gcr.io/40").image("gcr.io/250"),
            vec![0, 5],
        ),
        (
            "two images on the same node score only that node",
            PodBuilder::new("p").image("gcr.io/40").image("gcr.io/300"),
            vec![7, 0],
        ),
        (
            "a huge image is capped at the per-container maximum",
            PodBuilder::new("p").image("gcr.io/2000").image("gcr.io/10"),
            vec![49, 0],
        ),
        (
            "an image present on no node scores nothing",
            PodBuilder::new("p").image("gcr.io/nothing"),
            vec![0, 0],
        ),
        (
            "init container images count too",
            PodBuilder::new("p")
                .init_image("gcr.io/300")
                .image("gcr.io/40"),
            vec![7, 0],
        ),
    ];
    for (name, pod, want) in cases {
        assert_eq!(scores(pod, nodes_40_300_2000_and_250_10()), want, "{name}");
    }
}

#[test]
fn an_image_on_every_node_counts_fully() {
    let nodes = vec![
        NodeBuilder::new("a").image(&["gcr.io/big:latest"], 3000 * MB),
        NodeBuilder::new("b").image(&["gcr.io/big:latest"], 3000 * MB),
    ];
    assert_eq!(
        scores(PodBuilder::new("p").image("gcr.io/big"), nodes),
        vec![100, 100]
    );
}

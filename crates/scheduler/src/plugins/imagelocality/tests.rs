//! Table tests of ImageLocality scoring, with upstream's cases.

use super::*;
use crate::plugins::testing::{snapshot, NodeBuilder, PodBuilder, PodBuilderExt};

const MB: i64 = 1024 * 1024;

fn scores(pod: PodBuilder, nodes: Vec<NodeBuilder>) -> Vec<i64> {
    scores_with(&ImageLocality::default(), pod, nodes)
}

fn scores_with(pl: &ImageLocality, pod: PodBuilder, nodes: Vec<NodeBuilder>) -> Vec<i64> {
    let pod = pod.info();
    let infos: Vec<NodeInfo> = nodes.into_iter().map(NodeBuilder::info).collect();
    let snap = snapshot(infos.clone());
    let refs: Vec<&NodeInfo> = infos.iter().collect();
    let mut state = CycleState::new();
    assert!(pl.pre_score(&mut state, &pod, &refs, &snap).is_success());
    let per_node: Vec<i64> = infos
        .iter()
        .map(|n| pl.score(&state, &pod, n).unwrap())
        .collect();
    let mut batch = vec![-1; refs.len()];
    pl.score_nodes(&state, &pod, &refs, 0, &mut batch).unwrap();
    assert_eq!(batch, per_node, "score_nodes must agree with score");
    per_node
}

/// `pod` with an `image` volume of `reference`.
fn with_image_volume(pod: PodBuilder, reference: &str) -> PodBuilder {
    use k8s_openapi::api::core::v1::{ImageVolumeSource, Volume};
    let mut pod = pod.obj();
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.volumes.get_or_insert_with(Vec::new).push(Volume {
        name: "artifact".into(),
        image: Some(ImageVolumeSource {
            reference: Some(reference.into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    PodBuilder::from(pod)
}

#[test]
fn image_volumes_count_from_v1_36_and_raise_the_ceiling_from_v1_37() {
    use kubeplane_core::version::v1;
    // A container image of 40 MB and an image volume of 300 MB, both on node1 only (half the
    // nodes): 20 MB and 150 MB once spread.
    let pod = || with_image_volume(PodBuilder::new("p").image("gcr.io/40"), "gcr.io/300");
    let cases = [
        (
            "before v1.36 the volume's image is ignored: 20 MB is below the 23 MB floor",
            vec![v1(34, 0), v1(34, 7), v1(35, 4)],
            vec![0, 0],
        ),
        (
            "v1.36 adds the volume's image to the sum but not to the ceiling of one container: (170 - 23) / (1000 - 23)",
            vec![v1(36, 0)],
            vec![15, 0],
        ),
        (
            "from v1.37 the volume raises the ceiling as a second container would: (170 - 23) / (2000 - 23), the score of the same images as two containers",
            vec![v1(37, 0)],
            vec![7, 0],
        ),
    ];
    for (name, releases, want) in cases {
        for release in releases {
            let pl = ImageLocality::new(release);
            assert_eq!(
                scores_with(&pl, pod(), nodes_40_300_2000_and_250_10()),
                want,
                "{release}: {name}"
            );
        }
    }
    let as_containers = PodBuilder::new("p").image("gcr.io/40").image("gcr.io/300");
    assert_eq!(
        scores(as_containers, nodes_40_300_2000_and_250_10()),
        vec![7, 0]
    );
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

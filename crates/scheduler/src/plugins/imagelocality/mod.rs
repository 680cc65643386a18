//! ImageLocality (PreScore, Score): prefers nodes that already have the pod's container
//! images, weighting each image by how widely it is spread over the cluster so pods do not
//! all pile onto the few nodes that have it (upstream `plugins/imagelocality/image_locality.go`).
//! From v1.36 the images of `image` volumes count too (kubernetes#130231), from v1.37 also in
//! the score's ceiling (#138951, in the v1.37.0-alpha.1 notes).

use kubeplane_core::images::normalized_image_name;
use kubeplane_core::version::{changes, KubeVersion};

use crate::cache::Snapshot;
use crate::framework::{
    CycleState, NodeInfo, Plugin, PodInfo, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE,
};

pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
/// Below this total, images count as absent (pulling them is cheap).
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container, above this total images count as fully present.
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

static PRE_SCORE_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreScoreImageLocality");

/// Per container (init containers first, then the image volumes where they count), its
/// normalized image and the fraction of nodes that have it; upstream reads these from the
/// snapshot in Score. `n_containers` is the number of images the ceiling is scaled by.
#[derive(Clone, Debug)]
struct PreScoreState {
    images: Vec<(String, f64)>,
    n_containers: usize,
}

/// The plugin, for a release: the default follows v1.34 and v1.35 (containers only).
#[derive(Debug, Default)]
pub struct ImageLocality {
    /// Image volumes add their image to the sum (v1.36 and later).
    volumes_in_sum: bool,
    /// Image volumes raise the ceiling as a container does (v1.37 and later).
    volumes_in_ceiling: bool,
}

impl ImageLocality {
    /// The plugin as `version` scores.
    pub fn new(version: KubeVersion) -> ImageLocality {
        ImageLocality {
            volumes_in_sum: version.has(changes::IMAGE_LOCALITY_COUNTS_IMAGE_VOLUMES),
            volumes_in_ceiling: version.has(changes::IMAGE_LOCALITY_CEILING_COUNTS_IMAGE_VOLUMES),
        }
    }
}

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

fn pre_score_state(pl: &ImageLocality, pod: &PodInfo, snapshot: &Snapshot) -> PreScoreState {
    let spec = pod.spec();
    let total = snapshot.num_nodes();
    let spread = |image: &str| {
        let name = normalized_image_name(image);
        let n = snapshot.image_num_nodes.get(&name).copied().unwrap_or(0);
        let spread = if total == 0 {
            0.0
        } else {
            n as f64 / total as f64
        };
        (name, spread)
    };
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter());
    let mut images: Vec<(String, f64)> = containers
        .map(|c| spread(c.image.as_deref().unwrap_or("")))
        .collect();
    let n_containers = images.len();
    let mut n_volumes = 0;
    if pl.volumes_in_sum {
        let volume_images = spec
            .volumes
            .iter()
            .flatten()
            .filter_map(|v| v.image.as_ref());
        for image in volume_images {
            images.push(spread(image.reference.as_deref().unwrap_or("")));
            n_volumes += 1;
        }
    }
    PreScoreState {
        n_containers: n_containers + if pl.volumes_in_ceiling { n_volumes } else { 0 },
        images,
    }
}

fn score_with(state: &PreScoreState, node: &NodeInfo) -> i64 {
    let mut sum: i64 = 0;
    for (name, spread) in &state.images {
        if let Some(img) = node.images.iter().find(|i| i.name == *name) {
            sum += (img.size_bytes as f64 * spread) as i64;
        }
    }
    calculate_priority(sum, state.n_containers)
}

/// Clamps the summed image size to the thresholds and scales it to [0, 100].
fn calculate_priority(sum: i64, n_containers: usize) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD * n_containers as i64;
    let clamped = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else if sum > max_threshold {
        max_threshold
    } else {
        sum
    };
    MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

impl PreScorePlugin for ImageLocality {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        state.write(&PRE_SCORE_KEY, pre_score_state(self, pod, snapshot));
        Status::success()
    }
}

fn read_state(state: &CycleState) -> Result<&PreScoreState, Status> {
    state.read::<PreScoreState>(&PRE_SCORE_KEY).ok_or_else(|| {
        Status::error(format!(
            "reading {PRE_SCORE_KEY:?} from cycleState: not found"
        ))
    })
}

impl ScorePlugin for ImageLocality {
    /// The pod's images against the node's, weighed by the snapshot's image counts over its node count.
    fn node_local(&self) -> bool {
        true
    }

    /// No NormalizeScore: the raw scores are the scores.
    fn normalization(&self) -> crate::framework::Normalization {
        crate::framework::Normalization::Keeps
    }

    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(score_with(read_state(state)?, node))
    }

    /// Reads the cycle state once for the whole run.
    fn score_nodes(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        nodes: &[&NodeInfo],
        _first: usize,
        out: &mut [i64],
    ) -> Result<(), (usize, Status)> {
        let s = read_state(state).map_err(|e| (0, e))?;
        for (node, cell) in nodes.iter().zip(out.iter_mut()) {
            *cell = score_with(s, node);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

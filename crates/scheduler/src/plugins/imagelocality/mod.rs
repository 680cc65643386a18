//! ImageLocality (PreScore, Score): prefers nodes that already have the pod's container
//! images, weighting each image by how widely it is spread over the cluster so pods do not
//! all pile onto the few nodes that have it (upstream `plugins/imagelocality/image_locality.go`).

use kubeplane_core::images::normalized_image_name;

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

const PRE_SCORE_KEY: &str = "PreScoreImageLocality";

/// Per container (init containers first), its normalized image and the fraction of nodes
/// that have it; upstream reads these from the snapshot in Score.
#[derive(Clone, Debug)]
struct PreScoreState {
    images: Vec<(String, f64)>,
    n_containers: usize,
}

#[derive(Debug, Default)]
pub struct ImageLocality;

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

fn pre_score_state(pod: &PodInfo, snapshot: &Snapshot) -> PreScoreState {
    let spec = pod.spec();
    let total = snapshot.num_nodes();
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter());
    let images = containers
        .map(|c| {
            let name = normalized_image_name(c.image.as_deref().unwrap_or(""));
            let n = snapshot.image_num_nodes.get(&name).copied().unwrap_or(0);
            let spread = if total == 0 {
                0.0
            } else {
                n as f64 / total as f64
            };
            (name, spread)
        })
        .collect::<Vec<_>>();
    PreScoreState {
        n_containers: images.len(),
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
        state.write(PRE_SCORE_KEY, pre_score_state(pod, snapshot));
        Status::success()
    }
}

fn read_state(state: &CycleState) -> Result<&PreScoreState, Status> {
    state.read::<PreScoreState>(PRE_SCORE_KEY).ok_or_else(|| {
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

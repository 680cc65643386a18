//! The scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation (upstream
//! `resource_allocation.go`, `least_allocated.go`, `most_allocated.go`,
//! `requested_to_capacity_ratio.go`, `balanced_allocation.go`): per configured resource, the
//! node's allocatable and what would be requested with the pod on it.

use std::borrow::Cow;

use kubeplane_core::resources::{
    is_scalar_resource_name, Resources, CPU, EPHEMERAL_STORAGE, MEMORY,
};

use crate::framework::{CycleState, NodeInfo, PodInfo, MAX_NODE_SCORE};

use super::args::{ResourceSpec, UtilizationShapePoint, MAX_CUSTOM_PRIORITY_SCORE};

/// A configured resource, resolved once so scoring does not compare names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ResourceKey {
    Cpu,
    Memory,
    EphemeralStorage,
    /// Extended resources, hugepages, ...: scored only when the pod requests them.
    Scalar(String),
    /// Any other name (`pods`, typos): never contributes.
    Other,
}

impl ResourceKey {
    fn new(name: &str) -> ResourceKey {
        match name {
            CPU => ResourceKey::Cpu,
            MEMORY => ResourceKey::Memory,
            EPHEMERAL_STORAGE => ResourceKey::EphemeralStorage,
            n if is_scalar_resource_name(n) => ResourceKey::Scalar(n.to_string()),
            _ => ResourceKey::Other,
        }
    }
}

/// The configured resources with their weights.
#[derive(Clone, Debug)]
pub(crate) struct ResourceList {
    pub keys: Vec<(ResourceKey, i64)>,
    /// Whether node and pod amounts are plain requests (BalancedAllocation) or, for cpu and
    /// memory, the non-zero requests that count 100m / 200Mi for containers without requests
    /// (NodeResourcesFit scoring).
    pub use_requested: bool,
}

/// What the PreScore of NodeResourcesFit and of NodeResourcesBalancedAllocation keeps, each
/// under its own key: the pod's request of each configured resource.
#[derive(Clone, Debug)]
pub(crate) struct PodRequestsState {
    pub pod_requests: Vec<i64>,
}

impl ResourceList {
    /// The pod's requests of these resources as the PreScore that wrote `key` stored them, or
    /// computed now when it did not run.
    pub fn requests_in<'a>(
        &self,
        state: &'a CycleState,
        key: &crate::framework::StateKey,
        pod: &PodInfo,
    ) -> Cow<'a, [i64]> {
        match state.read::<PodRequestsState>(key) {
            Some(s) => Cow::Borrowed(&s.pod_requests),
            None => Cow::Owned(self.pod_requests(pod)),
        }
    }

    pub fn new(resources: &[ResourceSpec], use_requested: bool) -> ResourceList {
        ResourceList {
            keys: resources
                .iter()
                .map(|r| (ResourceKey::new(&r.name), r.weight))
                .collect(),
            use_requested,
        }
    }

    /// The pod's request of each configured resource, in order (upstream
    /// `calculatePodResourceRequestList`).
    pub fn pod_requests(&self, pod: &PodInfo) -> Vec<i64> {
        let (cpu_mem, other) = if self.use_requested {
            (pod.requests(), pod.requests())
        } else {
            (pod.non_zero_requests(), pod.requests())
        };
        self.keys
            .iter()
            .map(|(k, _)| match k {
                ResourceKey::Cpu => cpu_mem.milli_cpu,
                ResourceKey::Memory => cpu_mem.memory,
                ResourceKey::EphemeralStorage => other.ephemeral_storage,
                ResourceKey::Scalar(name) => other.scalar(name),
                ResourceKey::Other => 0,
            })
            .collect()
    }

    /// `(allocatable, requested including the pod)` of resource `i` on `node`; allocatable 0
    /// means the resource does not count for this node (upstream
    /// `calculateResourceAllocatableRequest`).
    #[inline]
    pub fn allocatable_requested(&self, i: usize, node: &NodeInfo, pod_request: i64) -> (i64, i64) {
        let requested: &Resources = if self.use_requested {
            &node.requested
        } else {
            &node.non_zero_requested
        };
        let alloc = &node.allocatable;
        match &self.keys[i].0 {
            ResourceKey::Cpu => (alloc.milli_cpu, requested.milli_cpu + pod_request),
            ResourceKey::Memory => (alloc.memory, requested.memory + pod_request),
            ResourceKey::EphemeralStorage => (
                alloc.ephemeral_storage,
                node.requested.ephemeral_storage + pod_request,
            ),
            // An extended resource the pod does not request is left out.
            ResourceKey::Scalar(_) if pod_request == 0 => (0, 0),
            ResourceKey::Scalar(name) => (
                alloc.scalar(name),
                node.requested.scalar(name) + pod_request,
            ),
            ResourceKey::Other => (0, 0),
        }
    }
}

/// How NodeResourcesFit turns utilization into a score.
#[derive(Clone, Debug)]
pub(crate) enum Scorer {
    LeastAllocated,
    MostAllocated,
    /// Shape points with scores scaled to [0, 100].
    RequestedToCapacityRatio(Vec<(i64, i64)>),
}

impl Scorer {
    pub fn requested_to_capacity_ratio(shape: &[UtilizationShapePoint]) -> Scorer {
        let scale = MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE;
        Scorer::RequestedToCapacityRatio(
            shape
                .iter()
                .map(|p| (i64::from(p.utilization), i64::from(p.score) * scale))
                .collect(),
        )
    }

    /// The node score over the configured resources.
    pub fn score(&self, list: &ResourceList, node: &NodeInfo, pod_requests: &[i64]) -> i64 {
        let mut node_score = 0i64;
        let mut weight_sum = 0i64;
        for (i, &(_, weight)) in list.keys.iter().enumerate() {
            let (alloc, req) = list.allocatable_requested(i, node, pod_requests[i]);
            if alloc == 0 {
                continue;
            }
            let s = match self {
                Scorer::LeastAllocated => least_requested_score(req, alloc),
                Scorer::MostAllocated => most_requested_score(req, alloc),
                Scorer::RequestedToCapacityRatio(shape) => {
                    let util = if req > alloc { 100 } else { req * 100 / alloc };
                    let s = broken_linear(shape, util);
                    // Only resources with a positive score count in RequestedToCapacityRatio.
                    if s <= 0 {
                        continue;
                    }
                    s
                }
            };
            node_score += s * weight;
            weight_sum += weight;
        }
        if weight_sum == 0 {
            return 0;
        }
        match self {
            Scorer::RequestedToCapacityRatio(_) => {
                (node_score as f64 / weight_sum as f64).round() as i64
            }
            _ => node_score / weight_sum,
        }
    }
}

/// `(capacity - requested) * 100 / capacity`, 0 when over capacity.
pub(crate) fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

/// `requested * 100 / capacity`, with requested capped at capacity (non-zero defaults can
/// exceed it).
pub(crate) fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

/// Piecewise-linear interpolation through the shape points (upstream
/// `BuildBrokenLinearFunction`): the first point's score below it, the last point's above it,
/// integer arithmetic in between.
pub(crate) fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for (i, &(u, s)) in shape.iter().enumerate() {
        if p <= u {
            if i == 0 {
                return s;
            }
            let (pu, ps) = shape[i - 1];
            return ps + (s - ps) * (p - pu) / (u - pu);
        }
    }
    shape.last().map_or(0, |&(_, s)| s)
}

/// BalancedAllocation before v1.36: `(1 - std) * 100` of the requested fractions (capped at
/// 1) of the resources the node has, with the pod on it; `|f1 - f2| / 2` for two resources.
pub(crate) fn balanced_score(list: &ResourceList, node: &NodeInfo, pod_requests: &[i64]) -> i64 {
    balance(list.keys.len(), |i| {
        let (alloc, req) = list.allocatable_requested(i, node, pod_requests[i]);
        (alloc != 0).then(|| fraction(req, alloc))
    })
}

/// BalancedAllocation from v1.36 (kubernetes#135573): how the pod changes the node's balance.
/// The balance with and without the pod, each `(1 - std) * 100` truncated as above and over
/// the same resources, give `50 + (50 + with - without) / 2`: 75 for no change, 100 from
/// perfectly imbalanced to perfectly balanced, 50 the other way round.
pub(crate) fn balanced_change_score(
    list: &ResourceList,
    node: &NodeInfo,
    pod_requests: &[i64],
) -> i64 {
    let with_pod = balanced_score(list, node, pod_requests);
    let without_pod = balance(list.keys.len(), |i| {
        let (alloc, req) = list.allocatable_requested(i, node, pod_requests[i]);
        (alloc != 0).then(|| fraction(req - pod_requests[i], alloc))
    });
    let half = MAX_NODE_SCORE / 2;
    half + (half + with_pod - without_pod) / 2
}

/// `requested / allocatable`, capped at 1.
#[inline]
fn fraction(requested: i64, allocatable: i64) -> f64 {
    (requested as f64 / allocatable as f64).min(1.0)
}

/// `(1 - std) * 100` of the fractions of resources `0..n_keys` (`None`: the resource does not
/// count), truncated.
#[inline]
fn balance(n_keys: usize, fraction: impl Fn(usize) -> Option<f64>) -> i64 {
    let mut n = 0usize;
    let mut total = 0.0f64;
    let mut first_two = [0.0f64; 2];
    for i in 0..n_keys {
        if let Some(f) = fraction(i) {
            if n < 2 {
                first_two[n] = f;
            }
            n += 1;
            total += f;
        }
    }
    let std = match n {
        0 | 1 => 0.0,
        2 => ((first_two[0] - first_two[1]) / 2.0).abs(),
        _ => {
            let mean = total / n as f64;
            let sum: f64 = (0..n_keys)
                .filter_map(&fraction)
                .map(|f| (f - mean) * (f - mean))
                .sum();
            (sum / n as f64).sqrt()
        }
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

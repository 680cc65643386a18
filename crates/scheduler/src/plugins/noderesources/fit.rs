//! NodeResourcesFit (PreFilter, Filter, PreScore, Score): the node must have room for the
//! pod's requests; nodes are scored by the configured strategy (upstream `fit.go`).

use k8s_openapi::api::core::v1::Node;
use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use kubeplane_core::features::FeatureGates;
use kubeplane_core::resources::{
    is_extended_resource_name, node_allocatable, pod_requests, Resources,
};

use crate::cache::Snapshot;
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EventObject, EventResource,
    FilterPlugin, NodeInfo, Plugin, PodInfo, PreFilterPlugin, PreFilterResult, PreScorePlugin,
    QueueingHint, ScorePlugin, Status, SumsCheck,
};
use crate::plugins::args::{parse_args, PluginArgsError};
use crate::plugins::helper::{node_event, pod_event, uid_of};

use super::args::{NodeResourcesFitArgs, ScoringStrategyType};
use super::resource_allocation::{PodRequestsState, ResourceList, Scorer};

pub const NAME: &str = "NodeResourcesFit";

/// Filter reason when the node already runs as many pods as it allows.
pub const REASON_TOO_MANY_PODS: &str = "Too many pods";
pub const REASON_INSUFFICIENT_CPU: &str = "Insufficient cpu";
pub const REASON_INSUFFICIENT_MEMORY: &str = "Insufficient memory";
pub const REASON_INSUFFICIENT_EPHEMERAL_STORAGE: &str = "Insufficient ephemeral-storage";
/// Prefix of the reason for any other resource: `Insufficient <resource name>`.
pub const REASON_INSUFFICIENT_PREFIX: &str = "Insufficient ";

static PRE_FILTER_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreFilterNodeResourcesFit");
static PRE_SCORE_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreScoreNodeResourcesFit");

#[derive(Debug)]
pub struct Fit {
    ignored_resources: Vec<String>,
    ignored_resource_groups: Vec<String>,
    strategy: ScoringStrategyType,
    resources: ResourceList,
    scorer: Scorer,
    enable_in_place_pod_vertical_scaling: bool,
}

/// The indexes of the pod's scalar requests Filter checks: non-zero, and not ignored.
#[derive(Clone, Debug)]
struct PreFilterState {
    scalars: Vec<usize>,
}

impl Fit {
    /// Builds the plugin from `NodeResourcesFitArgs` (v1 defaults applied, then validated).
    pub fn new(
        args: Option<&serde_json::Value>,
        features: &FeatureGates,
    ) -> Result<Fit, PluginArgsError> {
        let mut args: NodeResourcesFitArgs = parse_args(args)?;
        args.set_defaults();
        if let Some(e) = args.validate().into_iter().next() {
            return Err(e);
        }
        Ok(Fit::from_args(&args, features))
    }

    /// Builds the plugin from defaulted, valid args.
    pub fn from_args(args: &NodeResourcesFitArgs, features: &FeatureGates) -> Fit {
        let strategy = args.scoring_strategy.clone().unwrap_or_default();
        let ty = ScoringStrategyType::parse(&strategy.type_)
            .unwrap_or(ScoringStrategyType::LeastAllocated);
        let scorer = match ty {
            ScoringStrategyType::LeastAllocated => Scorer::LeastAllocated,
            ScoringStrategyType::MostAllocated => Scorer::MostAllocated,
            ScoringStrategyType::RequestedToCapacityRatio => Scorer::requested_to_capacity_ratio(
                &strategy
                    .requested_to_capacity_ratio
                    .unwrap_or_default()
                    .shape,
            ),
        };
        Fit {
            ignored_resources: args.ignored_resources.clone(),
            ignored_resource_groups: args.ignored_resource_groups.clone(),
            strategy: ty,
            resources: ResourceList::new(&strategy.resources, false),
            scorer,
            enable_in_place_pod_vertical_scaling: features.enabled("InPlacePodVerticalScaling"),
        }
    }

    /// The scoring strategy in use.
    pub fn strategy(&self) -> ScoringStrategyType {
        self.strategy
    }

    fn is_ignored(&self, name: &str) -> bool {
        if self.ignored_resources.is_empty() && self.ignored_resource_groups.is_empty() {
            return false;
        }
        if !is_extended_resource_name(name) {
            return false;
        }
        let group = name.split('/').next().unwrap_or("");
        self.ignored_resources.iter().any(|r| r == name)
            || self.ignored_resource_groups.iter().any(|g| g == group)
    }

    fn scalars_to_check(&self, requests: &Resources) -> Vec<usize> {
        requests
            .scalar
            .iter()
            .enumerate()
            .filter(|(_, (name, q))| *q != 0 && !self.is_ignored(name))
            .map(|(i, _)| i)
            .collect()
    }
}

/// Whether the node lacks room for `req`, and which resources (upstream `fitsRequest`): the
/// pod count, then (unless the request is all zero) cpu, memory, ephemeral-storage and each
/// scalar resource in `scalars` (indexes into `req.scalar`), in name order. The node has
/// `alloc`, and pods requesting `used` in all, `num_pods` of them. `on_insufficient` gets the
/// reason (built only when called) and whether the request exceeds the node's allocatable.
/// Allocation-free when the pod fits.
fn fits_request(
    req: &Resources,
    scalars: impl Iterator<Item = usize>,
    (alloc, used, num_pods): (&Resources, &Resources, usize),
    mut on_insufficient: impl FnMut(&dyn Fn() -> crate::framework::Reason, bool),
) {
    if num_pods as i64 + 1 > alloc.allowed_pod_number {
        on_insufficient(&|| REASON_TOO_MANY_PODS.into(), false);
    }
    if req.is_zero_request() {
        return;
    }
    let mut check =
        |want: i64, have: i64, used: i64, reason: &dyn Fn() -> crate::framework::Reason| {
            if want > 0 && want > have - used {
                on_insufficient(reason, want > have);
            }
        };
    check(req.milli_cpu, alloc.milli_cpu, used.milli_cpu, &|| {
        REASON_INSUFFICIENT_CPU.into()
    });
    check(req.memory, alloc.memory, used.memory, &|| {
        REASON_INSUFFICIENT_MEMORY.into()
    });
    check(
        req.ephemeral_storage,
        alloc.ephemeral_storage,
        used.ephemeral_storage,
        &|| REASON_INSUFFICIENT_EPHEMERAL_STORAGE.into(),
    );
    for i in scalars {
        let (name, want) = &req.scalar[i];
        check(*want, alloc.scalar(name), used.scalar(name), &|| {
            format!("{REASON_INSUFFICIENT_PREFIX}{name}").into()
        });
    }
}

impl Fit {
    /// Filter's status on a node with this allocatable, requested and number of pods.
    fn status_on(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        on_node: (&Resources, &Resources, usize),
    ) -> Status {
        let mut reasons = crate::framework::Reasons::default();
        let mut unresolvable = false;
        self.check_fit(state, pod, on_node, |reason, beyond| {
            unresolvable |= beyond;
            reasons.push(reason());
        });
        if reasons.is_empty() {
            return Status::success();
        }
        let code = if unresolvable {
            crate::framework::Code::UnschedulableAndUnresolvable
        } else {
            crate::framework::Code::Unschedulable
        };
        Status {
            code,
            reasons,
            plugin: "",
        }
    }

    /// [`fits_request`] with the scalars PreFilter picked (or picked now without it).
    fn check_fit(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: (&Resources, &Resources, usize),
        on_insufficient: impl FnMut(&dyn Fn() -> crate::framework::Reason, bool),
    ) {
        match state.read::<PreFilterState>(&PRE_FILTER_KEY) {
            Some(s) => fits_request(
                pod.requests(),
                s.scalars.iter().copied(),
                node,
                on_insufficient,
            ),
            None => {
                let scalars = self.scalars_to_check(pod.requests());
                fits_request(pod.requests(), scalars.into_iter(), node, on_insufficient)
            }
        }
    }
}

impl Plugin for Fit {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        // With queueing hints (GA in v1.34): Pod Delete (| UpdatePodScaleDown with in-place
        // resize) and Node Add|UpdateNodeAllocatable.
        let in_place = self.enable_in_place_pod_vertical_scaling;
        let (pod_action, pod_label) = if in_place {
            (
                ActionType::DELETE | ActionType::UPDATE_POD_SCALE_DOWN,
                "PodDelete|UpdatePodScaleDown",
            )
        } else {
            (ActionType::DELETE, "PodDelete")
        };
        Some(vec![
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(EventResource::Pod, pod_action, pod_label),
                move |pod, old, new| is_schedulable_after_pod_event(in_place, pod, old, new),
            ),
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD | ActionType::UPDATE_NODE_ALLOCATABLE,
                    "NodeAdd|UpdateNodeAllocatable",
                ),
                is_schedulable_after_node_change,
            ),
        ])
    }
}

impl PreFilterPlugin for Fit {
    /// The pod's effective request is precomputed in `PodInfo`; here only the scalar
    /// resources Filter must check are picked out (skipping ignored extended resources).
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        state.write(
            &PRE_FILTER_KEY,
            PreFilterState {
                scalars: self.scalars_to_check(pod.requests()),
            },
        );
        (None, Status::success())
    }
}

impl FilterPlugin for Fit {
    /// The pod's requests (PreFilter) against the NodeInfo's allocatable and requested.
    fn node_local(&self) -> bool {
        true
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        self.status_on(
            state,
            pod,
            (&node.allocatable, &node.requested, node.pods.len()),
        )
    }

    /// The status reads the node's pods only through `requested` and their number.
    fn filter_with_requests(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        requested: &Resources,
        num_pods: usize,
    ) -> Option<Status> {
        Some(self.status_on(state, pod, (&node.allocatable, requested, num_pods)))
    }

    /// The verdict reads the node's pods only through `requested` and their number.
    fn passes_with_requests(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        requested: &Resources,
        num_pods: usize,
    ) -> Option<bool> {
        let mut fits = true;
        self.check_fit(
            state,
            pod,
            (&node.allocatable, requested, num_pods),
            |_, _| fits = false,
        );
        Some(fits)
    }

    /// With no scalar resource to check, [`fits_request`] reads the pods' requests only
    /// through their cpu, memory and ephemeral-storage sums.
    fn sums_check(&self, state: &CycleState, pod: &PodInfo) -> Option<SumsCheck> {
        let no_scalars = match state.read::<PreFilterState>(&PRE_FILTER_KEY) {
            Some(s) => s.scalars.is_empty(),
            None => self.scalars_to_check(pod.requests()).is_empty(),
        };
        no_scalars.then(|| SumsCheck {
            count_only: pod.requests().is_zero_request(),
            want: SumsCheck::sums_of(pod.requests()),
        })
    }
}

impl PreScorePlugin for Fit {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
        _snapshot: &Snapshot,
    ) -> Status {
        state.write(
            &PRE_SCORE_KEY,
            PodRequestsState {
                pod_requests: self.resources.pod_requests(pod),
            },
        );
        Status::success()
    }
}

impl ScorePlugin for Fit {
    /// The pod's requests (PreScore) against the NodeInfo's allocatable and requested.
    fn node_local(&self) -> bool {
        true
    }

    /// No NormalizeScore: the raw scores are the scores.
    fn normalization(&self) -> crate::framework::Normalization {
        crate::framework::Normalization::Keeps
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let requests = self.resources.requests_in(state, &PRE_SCORE_KEY, pod);
        Ok(self.scorer.score(&self.resources, node, &requests))
    }

    /// As [`Self::score`] per node, with the pod's requests read once.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        _first: usize,
        out: &mut [i64],
    ) -> Result<(), (usize, Status)> {
        let requests = self.resources.requests_in(state, &PRE_SCORE_KEY, pod);
        for (node, cell) in nodes.iter().zip(out.iter_mut()) {
            *cell = self.scorer.score(&self.resources, node, &requests);
        }
        Ok(())
    }
}

fn requests_of(pod: &StoredPod) -> Result<Resources, String> {
    match pod.spec.as_ref() {
        Some(spec) => pod_requests(spec).map_err(|e| e.to_string()),
        None => Ok(Resources::default()),
    }
}

fn node_name_of(pod: &StoredPod) -> &str {
    pod.node_name().unwrap_or("")
}

/// Queue when a bound or nominated pod is deleted, or (with in-place resize) when the waiting
/// pod itself or a bound pod shrank a resource the waiting pod requests.
pub(super) fn is_schedulable_after_pod_event(
    in_place: bool,
    pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (original, modified) = pod_event(old, new)?;
    let Some(modified) = modified else {
        let deleted = original.ok_or("a pod delete event without the deleted pod")?;
        let nominated = deleted
            .status()
            .and_then(|s| s.nominated_node_name())
            .unwrap_or("");
        if node_name_of(deleted).is_empty() && nominated.is_empty() {
            return Ok(QueueingHint::QueueSkip);
        }
        return Ok(QueueingHint::Queue);
    };
    if !in_place {
        return Ok(QueueingHint::QueueSkip);
    }
    if uid_of(modified) == uid_of(pod) {
        return Ok(QueueingHint::Queue);
    }
    if node_name_of(modified).is_empty() {
        return Ok(QueueingHint::QueueSkip);
    }
    let Some(original) = original else {
        return Ok(QueueingHint::QueueSkip);
    };
    // kubeplane does not model resized status resources, so spec requests are compared.
    let before = requests_of(original)?;
    let after = requests_of(modified)?;
    let target = requests_of(pod)?;
    let shrank = (target.milli_cpu != 0 && before.milli_cpu > after.milli_cpu)
        || (target.memory != 0 && before.memory > after.memory)
        || (target.ephemeral_storage != 0 && before.ephemeral_storage > after.ephemeral_storage)
        || target
            .scalar
            .iter()
            .any(|(name, q)| *q != 0 && before.scalar(name) > after.scalar(name));
    Ok(if shrank {
        QueueingHint::Queue
    } else {
        QueueingHint::QueueSkip
    })
}

/// Queue when the pod fits the (empty) added node, or an update grew a resource the pod
/// requests (or the pod count) on a node it fits.
pub(super) fn is_schedulable_after_node_change(
    pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (old, new) = node_event(old, new)?;
    let req = requests_of(pod)?;
    let alloc_of = |n: &Node| node_allocatable(n).map_err(|e| e.to_string());
    let new_alloc = alloc_of(new)?;
    let all_scalars = 0..req.scalar.len();
    let mut fits = true;
    let nothing = Resources::default();
    fits_request(&req, all_scalars, (&new_alloc, &nothing, 0), |_, _| {
        fits = false
    });
    if !fits {
        return Ok(QueueingHint::QueueSkip);
    }
    let Some(old) = old else {
        return Ok(QueueingHint::Queue);
    };
    let old_alloc = alloc_of(old)?;
    let grew = new_alloc.allowed_pod_number > old_alloc.allowed_pod_number
        || (!req.is_zero_request()
            && ((req.milli_cpu > 0 && new_alloc.milli_cpu > old_alloc.milli_cpu)
                || (req.memory > 0 && new_alloc.memory > old_alloc.memory)
                || (req.ephemeral_storage > 0
                    && new_alloc.ephemeral_storage > old_alloc.ephemeral_storage)
                || req
                    .scalar
                    .iter()
                    .any(|(name, q)| *q != 0 && new_alloc.scalar(name) > old_alloc.scalar(name))));
    Ok(if grew {
        QueueingHint::Queue
    } else {
        QueueingHint::QueueSkip
    })
}

//! The events the queue derives from object updates (upstream `NodeSchedulingPropertiesChange`,
//! `PodSchedulingPropertiesChange`) and the queue's event matching rule
//! (upstream `MatchClusterEvents`).
//!
//! Labels follow upstream's `Label()`: the resource name followed by the action name
//! (`NodeUpdateNodeTaint`, `UnschedulablePodUpdatePodLabel`, `AssignedPodUpdate`).

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubeplane_api::StoredNode;
use kubeplane_core::quantity::parse_quantity;
use kubeplane_core::resources::{self, Resources};

use crate::framework::{ActionType as A, ClusterEvent as E, EventResource as R};

pub const NODE_UPDATE_ALLOCATABLE: E = E::new(
    R::Node,
    A::UPDATE_NODE_ALLOCATABLE,
    "NodeUpdateNodeAllocatable",
);
pub const NODE_UPDATE_LABEL: E = E::new(R::Node, A::UPDATE_NODE_LABEL, "NodeUpdateNodeLabel");
pub const NODE_UPDATE_TAINT: E = E::new(R::Node, A::UPDATE_NODE_TAINT, "NodeUpdateNodeTaint");
pub const NODE_UPDATE_CONDITION: E =
    E::new(R::Node, A::UPDATE_NODE_CONDITION, "NodeUpdateNodeCondition");
pub const NODE_UPDATE_ANNOTATION: E = E::new(
    R::Node,
    A::UPDATE_NODE_ANNOTATION,
    "NodeUpdateNodeAnnotation",
);
pub const NODE_UPDATE_DECLARED_FEATURE: E = E::new(
    R::Node,
    A::UPDATE_NODE_DECLARED_FEATURE,
    "NodeUpdateNodeDeclaredFeature",
);

/// The pod update events of one resource (assigned or unscheduled pod), in extraction order.
struct PodUpdateEvents {
    label: E,
    scale_down: E,
    gates_eliminated: E,
    toleration: E,
    generated_claim: E,
    /// No specific kind applies: the general Update action, which only plugins registering a
    /// general Pod/Update (or All) receive.
    other: E,
}

const ASSIGNED: PodUpdateEvents = PodUpdateEvents {
    label: E::new(
        R::AssignedPod,
        A::UPDATE_POD_LABEL,
        "AssignedPodUpdatePodLabel",
    ),
    scale_down: E::new(
        R::AssignedPod,
        A::UPDATE_POD_SCALE_DOWN,
        "AssignedPodUpdatePodScaleDown",
    ),
    gates_eliminated: E::new(
        R::AssignedPod,
        A::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
        "AssignedPodUpdatePodSchedulingGatesEliminated",
    ),
    toleration: E::new(
        R::AssignedPod,
        A::UPDATE_POD_TOLERATION,
        "AssignedPodUpdatePodToleration",
    ),
    generated_claim: E::new(
        R::AssignedPod,
        A::UPDATE_POD_GENERATED_RESOURCE_CLAIM,
        "AssignedPodUpdatePodGeneratedResourceClaim",
    ),
    other: E::new(R::AssignedPod, A::UPDATE, "AssignedPodUpdate"),
};

const UNSCHEDULED: PodUpdateEvents = PodUpdateEvents {
    label: E::new(
        R::UnscheduledPod,
        A::UPDATE_POD_LABEL,
        "UnschedulablePodUpdatePodLabel",
    ),
    scale_down: E::new(
        R::UnscheduledPod,
        A::UPDATE_POD_SCALE_DOWN,
        "UnschedulablePodUpdatePodScaleDown",
    ),
    gates_eliminated: E::new(
        R::UnscheduledPod,
        A::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
        "UnschedulablePodUpdatePodSchedulingGatesEliminated",
    ),
    toleration: E::new(
        R::UnscheduledPod,
        A::UPDATE_POD_TOLERATION,
        "UnschedulablePodUpdatePodToleration",
    ),
    generated_claim: E::new(
        R::UnscheduledPod,
        A::UPDATE_POD_GENERATED_RESOURCE_CLAIM,
        "UnschedulablePodUpdatePodGeneratedResourceClaim",
    ),
    other: E::new(R::UnscheduledPod, A::UPDATE, "UnschedulablePodUpdate"),
};

/// The general unscheduled-pod update event.
pub const UNSCHEDULED_POD_UPDATE: E = UNSCHEDULED.other;
/// The general assigned-pod update event.
pub const ASSIGNED_POD_UPDATE: E = ASSIGNED.other;

/// Whether an incoming event is one a plugin registered as `registered` wants (upstream
/// `MatchClusterEvents`): the incoming event must be the same as or more specific than the
/// registered one. A registered wildcard matches everything; an incoming wildcard matches only a
/// registered wildcard (the queue handles incoming wildcards before matching); an incoming general
/// Update matches only registrations covering every update kind.
pub fn event_matches(registered: &E, incoming: &E) -> bool {
    if registered.is_wildcard() {
        return true;
    }
    let resource_ok = registered.resource == R::WildCard
        || registered.resource == incoming.resource
        || (registered.resource == R::Pod
            && matches!(incoming.resource, R::AssignedPod | R::UnscheduledPod));
    resource_ok
        && registered.action.intersects(incoming.action)
        && incoming.action.0 <= registered.action.0
}

/// The node update events that may make pods schedulable, in upstream order: spec.unschedulable
/// turned off (reported as a taint change), allocatable, labels, taints, condition statuses,
/// annotations, then `status.declaredFeatures` (v1.35's NodeDeclaredFeatures). Empty when
/// nothing relevant changed.
pub fn node_update_events(old: &StoredNode, new: &StoredNode) -> Vec<E> {
    let mut out = Vec::new();
    let unschedulable = |n: &Node| {
        n.spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false)
    };
    if unschedulable(old) && !unschedulable(new) {
        out.push(NODE_UPDATE_TAINT);
    }
    let allocatable = |n: &Node| {
        n.status
            .as_ref()
            .and_then(|s| s.allocatable.clone())
            .unwrap_or_default()
    };
    if !resource_lists_equal(&allocatable(old), &allocatable(new)) {
        out.push(NODE_UPDATE_ALLOCATABLE);
    }
    if old.metadata.labels.clone().unwrap_or_default()
        != new.metadata.labels.clone().unwrap_or_default()
    {
        out.push(NODE_UPDATE_LABEL);
    }
    let taints = |n: &Node| {
        n.spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
    };
    if taints(old) != taints(new) {
        out.push(NODE_UPDATE_TAINT);
    }
    let conditions = |n: &Node| -> BTreeMap<String, String> {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| (c.type_.clone(), c.status.clone()))
            .collect()
    };
    if conditions(old) != conditions(new) {
        out.push(NODE_UPDATE_CONDITION);
    }
    if old.metadata.annotations.clone().unwrap_or_default()
        != new.metadata.annotations.clone().unwrap_or_default()
    {
        out.push(NODE_UPDATE_ANNOTATION);
    }
    if old.declared_features() != new.declared_features() {
        out.push(NODE_UPDATE_DECLARED_FEATURE);
    }
    out
}

/// The pod update events, in upstream order: labels changed, a resource request went down or
/// away, the scheduling gates were all removed, the number of tolerations changed, the generated
/// resource claim statuses changed; the general Update when none applies. The resource is
/// `AssignedPod` when the new pod has `spec.nodeName`, else `UnscheduledPod`.
pub fn pod_update_events(old: &StoredPod, new: &StoredPod) -> Vec<E> {
    let empty = PodSpec::default();
    let old_spec = old.spec().unwrap_or(&empty);
    let new_spec = new.spec().unwrap_or(&empty);
    let kinds = if new.node_name().is_some_and(|n| !n.is_empty()) {
        &ASSIGNED
    } else {
        &UNSCHEDULED
    };
    let mut out = Vec::new();
    // Unset and empty compare equal, as upstream's label maps do.
    let no_labels = BTreeMap::new();
    if old.labels().unwrap_or(&no_labels) != new.labels().unwrap_or(&no_labels) {
        out.push(kinds.label);
    }
    if scaled_down(
        &resources::pod_requests(old_spec).unwrap_or_default(),
        &resources::pod_requests(new_spec).unwrap_or_default(),
    ) {
        out.push(kinds.scale_down);
    }
    let n_gates = |s: &PodSpec| s.scheduling_gates.as_ref().map_or(0, Vec::len);
    if n_gates(old_spec) != 0 && n_gates(new_spec) == 0 {
        out.push(kinds.gates_eliminated);
    }
    let n_tolerations = |s: &PodSpec| s.tolerations.as_ref().map_or(0, Vec::len);
    if n_tolerations(old_spec) != n_tolerations(new_spec) {
        out.push(kinds.toleration);
    }
    let claims = |p: &StoredPod| {
        let s = match p.status() {
            Some(kubeplane_api::StoredPodStatus::Full(s)) => Some(&**s),
            _ => None,
        };
        (
            s.and_then(|s| s.resource_claim_statuses.clone())
                .unwrap_or_default(),
            s.and_then(|s| s.extended_resource_claim_status.clone()),
        )
    };
    if claims(old) != claims(new) {
        out.push(kinds.generated_claim);
    }
    if out.is_empty() {
        out.push(kinds.other);
    }
    out
}

/// Whether some request of `old` is larger in `new` or gone from it (upstream
/// `extractPodScaleDown`). A request that went from an explicit 0 to absent is not detected,
/// because [`Resources`] does not tell them apart for cpu, memory and ephemeral storage.
fn scaled_down(old: &Resources, new: &Resources) -> bool {
    if old.milli_cpu > new.milli_cpu
        || old.memory > new.memory
        || old.ephemeral_storage > new.ephemeral_storage
    {
        return true;
    }
    old.scalar.iter().any(
        |(name, v)| match new.scalar.iter().find(|(n, _)| n == name) {
            None => true,
            Some((_, nv)) => v > nv,
        },
    )
}

/// Semantic equality of resource lists: same names, equal amounts (`1` equals `1000m`).
fn resource_lists_equal(a: &BTreeMap<String, Quantity>, b: &BTreeMap<String, Quantity>) -> bool {
    a.len() == b.len()
        && a.iter().all(|(name, qa)| {
            b.get(name)
                .is_some_and(|qb| match (parse_quantity(&qa.0), parse_quantity(&qb.0)) {
                    (Ok(x), Ok(y)) => x.as_nanos() == y.as_nanos(),
                    _ => qa.0 == qb.0,
                })
        })
}

//! NodeDeclaredFeatures (PreFilter, Filter): a pod that needs a node feature kubelets declare
//! goes only to nodes that declare it in `status.declaredFeatures` (upstream
//! `plugins/nodedeclaredfeatures/nodedeclaredfeatures.go`, KEP-5328; the registry of features is
//! [`features`]).
//!
//! The plugin exists from v1.35. It is in the default profile there and does nothing unless
//! the NodeDeclaredFeatures gate is on (alpha and off in v1.35, beta and on in v1.36, GA and
//! locked in v1.37): upstream's plugin keeps an `enabled` flag and its PreFilter skips every pod
//! when the gate is off. PreFilter infers the features the pod's spec requires in the release
//! and skips the pod when there are none; Filter refuses a node that does not declare one of
//! them, as UnschedulableAndUnresolvable (preemption cannot help).

pub mod features;

use k8s_openapi::api::core::v1::PodSpec;
use kubeplane_api::StoredPod;
use kubeplane_core::features::FeatureGates;
use kubeplane_core::version::{v1, KubeVersion, Versioned};

use crate::cache::Snapshot;
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EventObject, EventResource,
    FilterPlugin, NodeInfo, Plugin, PodInfo, PreFilterPlugin, PreFilterResult, QueueingHint,
    Status,
};
use crate::plugins::helper::{node_event, pod_event};

pub const NAME: &str = "NodeDeclaredFeatures";

/// The gate that turns the plugin on.
pub const GATE: &str = "NodeDeclaredFeatures";

/// Filter reason from v1.36 (upstream `errReasonUnsatisfiedRequirements`).
pub const REASON: &str = "node(s) didn't match Pod's required features";

/// The v1.35 Filter message names the features the node lacks (upstream's alpha plugin, with
/// `MatchNodeFeatureSet` of component-helpers v0.35.0).
pub const REASON_V1_35_PREFIX: &str =
    "node declared features check failed - unsatisfied requirements: ";

/// The release whose registry holds the plugin (upstream adds it with the alpha gate).
pub const FIRST_RELEASE: KubeVersion = v1(35, 0);

/// Whether the Filter reason is the generic [`REASON`] rather than the v1.35 message naming
/// the missing features (the bitmap feature sets of kubernetes#136185, v1.36 milestone, made
/// the plugin test `IsSubset` without computing the difference).
const GENERIC_REASON: Versioned<bool> = &[(v1(35, 0), false), (v1(36, 0), true)];

static STATE_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreFilterNodeDeclaredFeatures");

/// The features the pod requires, computed once per cycle.
#[derive(Clone, Debug)]
struct PreFilterState(Vec<&'static str>);

#[derive(Clone, Debug)]
pub struct NodeDeclaredFeatures {
    /// The gate's value: when off the plugin skips every pod and registers no events.
    enabled: bool,
    /// The release whose registry of features and whose messages the plugin follows.
    version: KubeVersion,
}

impl NodeDeclaredFeatures {
    pub fn new(features: &FeatureGates) -> Self {
        NodeDeclaredFeatures {
            enabled: features.enabled(GATE),
            version: features.version(),
        }
    }

    /// The features a pod's spec requires in the plugin's release.
    pub fn required(&self, spec: &PodSpec) -> Vec<&'static str> {
        features::infer_for_scheduling(spec, self.version)
    }

    fn required_by(&self, pod: &StoredPod) -> Vec<&'static str> {
        pod.spec
            .as_ref()
            .map(|s| self.required(s))
            .unwrap_or_default()
    }

    /// The Filter verdict for the pod's requirements against a node's declared features.
    pub fn check(&self, required: &[&str], declared: &[String]) -> Status {
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|r| !declared.iter().any(|d| d == r))
            .collect();
        if missing.is_empty() {
            Status::success()
        } else if self.version.has(GENERIC_REASON) {
            Status::unresolvable(REASON)
        } else {
            Status::unresolvable(format!("{REASON_V1_35_PREFIX}{}", missing.join(", ")))
        }
    }
}

impl Plugin for NodeDeclaredFeatures {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        if !self.enabled {
            return Some(Vec::new());
        }
        // A node added or its declared features changed; the pod itself updated (upstream
        // v1.36 registers Pod/Update and skips other pods by UID, v1.37 the TargetPod
        // resource: the same pods are requeued).
        let node = self.clone();
        let pod = self.clone();
        Some(vec![
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType(ActionType::ADD.0 | ActionType::UPDATE_NODE_DECLARED_FEATURE.0),
                    "NodeAddOrUpdateNodeDeclaredFeature",
                ),
                move |p, old, new| node.is_schedulable_after_node_change(p, old, new),
            ),
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(EventResource::Pod, ActionType::UPDATE, "PodUpdate"),
                move |p, old, new| pod.is_schedulable_after_pod_update(p, old, new),
            ),
        ])
    }
}

impl PreFilterPlugin for NodeDeclaredFeatures {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        if !self.enabled {
            return (None, Status::skip());
        }
        let required = self.required_by(&pod.pod);
        if required.is_empty() {
            return (None, Status::skip());
        }
        state.write(&STATE_KEY, PreFilterState(required));
        (None, Status::success())
    }
}

impl FilterPlugin for NodeDeclaredFeatures {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        if !self.enabled {
            return Status::success();
        }
        let Some(PreFilterState(required)) = state.read::<PreFilterState>(&STATE_KEY) else {
            return Status::error(format!(
                "error reading {STATE_KEY:?} from cycle-state: not found"
            ));
        };
        let declared = node
            .node
            .as_ref()
            .map(|n| n.declared_features())
            .unwrap_or(&[]);
        self.check(required, declared)
    }
}

impl NodeDeclaredFeatures {
    /// Queue on a node add, or when a node's declared features changed.
    fn is_schedulable_after_node_change(
        &self,
        _pod: &StoredPod,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
    ) -> Result<QueueingHint, String> {
        let (old, new) = node_event(old, new)?;
        match old {
            Some(old) if old.declared_features() == new.declared_features() => {
                Ok(QueueingHint::QueueSkip)
            }
            _ => Ok(QueueingHint::Queue),
        }
    }

    /// Queue when the waiting pod itself was updated and now requires other features.
    fn is_schedulable_after_pod_update(
        &self,
        pod: &StoredPod,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
    ) -> Result<QueueingHint, String> {
        let (old, new) = pod_event(old, new)?;
        let (Some(old), Some(new)) = (old, new) else {
            return Err("a pod update event without both versions".to_string());
        };
        if pod.metadata.uid != new.metadata.uid {
            return Ok(QueueingHint::QueueSkip);
        }
        if self.required_by(old) == self.required_by(new) {
            Ok(QueueingHint::QueueSkip)
        } else {
            Ok(QueueingHint::Queue)
        }
    }
}

#[cfg(test)]
mod tests;

//! Kubernetes feature gates that change the behaviour of what kubeplane implements, with their
//! v1.34 defaults. A version bump changes `GATES_V1_34`'s successor, not the code that reads it.

use std::collections::BTreeMap;

use thiserror::Error;

/// One gate: its name, v1.34 default, and whether v1.34 locks it to the default.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GateSpec {
    pub name: &'static str,
    pub default: bool,
    pub locked: bool,
    /// Maturity in v1.34 (Alpha, Beta, GA, Deprecated).
    pub stage: &'static str,
}

const fn gate(name: &'static str, default: bool, locked: bool, stage: &'static str) -> GateSpec {
    GateSpec {
        name,
        default,
        locked,
        stage,
    }
}

/// The gates of v1.34 that kubeplane models (pkg/features/kube_features.go at v1.34).
pub const GATES_V1_34: &[GateSpec] = &[
    gate(
        "DeploymentReplicaSetTerminatingReplicas",
        false,
        false,
        "Alpha",
    ),
    gate("DynamicResourceAllocation", true, false, "GA"),
    gate("InPlacePodVerticalScaling", true, false, "Beta"),
    gate("MatchLabelKeysInPodAffinity", true, true, "GA"),
    gate("MatchLabelKeysInPodTopologySpread", true, false, "Beta"),
    gate("MinDomainsInPodTopologySpread", true, true, "GA"),
    gate("NodeInclusionPolicyInPodTopologySpread", true, true, "GA"),
    gate("PodDeletionCost", true, false, "Beta"),
    gate("PodDisruptionConditions", true, true, "GA"),
    gate("PodLevelResources", true, false, "Beta"),
    gate("PodSchedulingReadiness", true, true, "GA"),
    gate("SchedulerAsyncAPICalls", true, false, "Beta"),
    gate("SchedulerAsyncPreemption", true, false, "Beta"),
    gate("SchedulerPopFromBackoffQ", true, false, "Beta"),
    gate("SchedulerQueueingHints", true, true, "GA"),
    gate("SeparateTaintEvictionController", true, false, "Beta"),
    gate("SidecarContainers", true, true, "GA"),
];

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum FeatureGateError {
    #[error("unrecognized feature gate: {0} (kubeplane models these v1.34 gates: {1})")]
    Unknown(String, String),
    #[error("cannot set feature gate {0} to {1}, feature is locked to {2}")]
    Locked(String, bool, bool),
}

/// The effective gate values of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureGates {
    values: BTreeMap<&'static str, bool>,
}

impl Default for FeatureGates {
    fn default() -> Self {
        FeatureGates {
            values: GATES_V1_34.iter().map(|g| (g.name, g.default)).collect(),
        }
    }
}

impl FeatureGates {
    /// Applies user overrides, rejecting unknown gates and changes to locked ones.
    pub fn with_overrides(overrides: &BTreeMap<String, bool>) -> Result<Self, FeatureGateError> {
        let mut gates = FeatureGates::default();
        for (name, &value) in overrides {
            gates.set(name, value)?;
        }
        Ok(gates)
    }

    pub fn set(&mut self, name: &str, value: bool) -> Result<(), FeatureGateError> {
        let Some(spec) = GATES_V1_34.iter().find(|g| g.name == name) else {
            let known: Vec<&str> = GATES_V1_34.iter().map(|g| g.name).collect();
            return Err(FeatureGateError::Unknown(
                name.to_string(),
                known.join(", "),
            ));
        };
        if spec.locked && value != spec.default {
            return Err(FeatureGateError::Locked(
                name.to_string(),
                value,
                spec.default,
            ));
        }
        self.values.insert(spec.name, value);
        Ok(())
    }

    /// Whether a gate is on. Unknown names are off.
    pub fn enabled(&self, name: &str) -> bool {
        self.values.get(name).copied().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_gate_cannot_be_turned_off() {
        let overrides = [("SchedulerQueueingHints".to_string(), false)].into();
        assert!(matches!(
            FeatureGates::with_overrides(&overrides),
            Err(FeatureGateError::Locked(..))
        ));
    }

    #[test]
    fn an_unknown_gate_is_an_error_and_a_beta_gate_can_be_turned_off() {
        let unknown = [("NoSuchGate".to_string(), true)].into();
        assert!(matches!(
            FeatureGates::with_overrides(&unknown),
            Err(FeatureGateError::Unknown(..))
        ));
        let off = [("SchedulerPopFromBackoffQ".to_string(), false)].into();
        let gates = FeatureGates::with_overrides(&off).unwrap();
        assert!(!gates.enabled("SchedulerPopFromBackoffQ"));
        assert!(gates.enabled("SchedulerQueueingHints"));
    }
}

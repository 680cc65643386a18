//! Kubernetes feature gates that change the behaviour of what kubeplane implements, or that
//! upstream turned on in the releases kubeplane accepts, with their defaults, stages and locks
//! per release ([`GATES`], keyed like upstream's versioned feature-gate specs by the release
//! where each default changed, patch releases included).

use std::collections::BTreeMap;

use thiserror::Error;

use crate::version::{v1, KubeVersion, Versioned};

/// A gate's state from a release on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GateState {
    pub default: bool,
    /// Locked to the default (`LockToDefault`): setting the other value is an error.
    pub locked: bool,
    /// Alpha, Beta, GA.
    pub stage: &'static str,
}

/// One gate: its name and its states by release. Before the first entry the gate does not
/// exist (setting it is an error).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GateSpec {
    pub name: &'static str,
    pub history: Versioned<GateState>,
    /// Whether kubeplane simulates what the gate switches, for every value the release allows
    /// (a locked gate has one). Otherwise the gate is accepted with upstream's defaults and
    /// locks, kubeplane behaves as documented in docs/compatibility.md whatever its value.
    pub modelled: bool,
}

impl GateSpec {
    /// The gate's state in a release, `None` if the gate does not exist there.
    pub fn at(&self, version: KubeVersion) -> Option<GateState> {
        version.pick(self.history)
    }
}

const ALPHA_OFF: GateState = GateState {
    default: false,
    locked: false,
    stage: "Alpha",
};
const BETA_OFF: GateState = GateState {
    default: false,
    locked: false,
    stage: "Beta",
};
const BETA_ON: GateState = GateState {
    default: true,
    locked: false,
    stage: "Beta",
};
const GA_ON: GateState = GateState {
    default: true,
    locked: false,
    stage: "GA",
};
const GA_LOCKED: GateState = GateState {
    default: true,
    locked: true,
    stage: "GA",
};

const fn gate(name: &'static str, history: Versioned<GateState>, modelled: bool) -> GateSpec {
    GateSpec {
        name,
        history,
        modelled,
    }
}

/// The gates kubeplane knows, by release (v1.34.0 is the first release kubeplane simulates, so
/// an entry there stands for the state the gate had reached by then). Sources: upstream's
/// versioned specs (`pkg/features/kube_features.go` and the scheduler's gate file), the
/// CHANGELOG-1.34/1.35/1.36 release notes for the patch-release changes; see
/// docs/compatibility.md for what each entry was checked against.
pub const GATES: &[GateSpec] = &[
    gate(
        "ClearingNominatedNodeNameAfterBinding",
        &[(v1(34, 0), ALPHA_OFF), (v1(35, 0), BETA_ON)],
        true,
    ),
    gate(
        "DeploymentReplicaSetTerminatingReplicas",
        &[(v1(34, 0), ALPHA_OFF), (v1(35, 0), BETA_ON)],
        true,
    ),
    gate(
        "DynamicResourceAllocation",
        &[(v1(34, 0), GA_ON), (v1(35, 0), GA_LOCKED)],
        false,
    ),
    gate(
        "InPlacePodVerticalScaling",
        &[(v1(34, 0), BETA_ON), (v1(35, 0), GA_LOCKED)],
        true,
    ),
    gate(
        "MatchLabelKeysInPodAffinity",
        &[(v1(34, 0), GA_LOCKED)],
        true,
    ),
    gate(
        "MatchLabelKeysInPodTopologySpread",
        &[(v1(34, 0), BETA_ON)],
        true,
    ),
    gate(
        "MaxUnavailableStatefulSet",
        &[(v1(34, 0), ALPHA_OFF), (v1(35, 0), BETA_ON)],
        true,
    ),
    gate(
        "MinDomainsInPodTopologySpread",
        &[(v1(34, 0), GA_LOCKED)],
        true,
    ),
    gate(
        "NodeDeclaredFeatures",
        &[
            (v1(35, 0), ALPHA_OFF),
            (v1(36, 0), BETA_ON),
            (v1(37, 0), GA_LOCKED),
        ],
        true,
    ),
    gate(
        "NodeInclusionPolicyInPodTopologySpread",
        &[(v1(34, 0), GA_LOCKED)],
        true,
    ),
    gate(
        "NominatedNodeNameForExpectation",
        &[(v1(34, 0), ALPHA_OFF), (v1(35, 0), BETA_ON)],
        false,
    ),
    gate("OpportunisticBatching", &[(v1(35, 0), BETA_ON)], false),
    gate("PodDeletionCost", &[(v1(34, 0), BETA_ON)], true),
    gate("PodDisruptionConditions", &[(v1(34, 0), GA_LOCKED)], true),
    gate("PodLevelResources", &[(v1(34, 0), BETA_ON)], false),
    gate("PodSchedulingReadiness", &[(v1(34, 0), GA_LOCKED)], true),
    gate(
        "PodTopologyLabelsAdmission",
        &[(v1(34, 0), ALPHA_OFF), (v1(35, 0), BETA_ON)],
        true,
    ),
    // On in v1.34.0; off from v1.34.2 (#134401, the cherry-pick of #134400); on again in
    // v1.35.0 (#135059); off from v1.35.1 (#135904) and in v1.36.0 (#135903).
    gate(
        "SchedulerAsyncAPICalls",
        &[
            (v1(34, 0), BETA_ON),
            (v1(34, 2), BETA_OFF),
            (v1(35, 0), BETA_ON),
            (v1(35, 1), BETA_OFF),
        ],
        false,
    ),
    gate("SchedulerAsyncPreemption", &[(v1(34, 0), BETA_ON)], true),
    gate("SchedulerPopFromBackoffQ", &[(v1(34, 0), BETA_ON)], true),
    gate("SchedulerQueueingHints", &[(v1(34, 0), GA_LOCKED)], true),
    gate(
        "SeparateTaintEvictionController",
        &[(v1(34, 0), GA_LOCKED)],
        true,
    ),
    gate("SidecarContainers", &[(v1(34, 0), GA_LOCKED)], true),
    gate(
        "StaleControllerConsistencyReplicaSet",
        &[(v1(36, 0), BETA_ON)],
        false,
    ),
    gate(
        "TaintTolerationComparisonOperators",
        &[(v1(35, 0), ALPHA_OFF)],
        false,
    ),
];

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum FeatureGateError {
    #[error("unrecognized feature gate: {0} (the Kubernetes {1} gates kubeplane knows: {2})")]
    Unknown(String, KubeVersion, String),
    #[error("cannot set feature gate {0} to {1}, feature is locked to {2} in Kubernetes {3}")]
    Locked(String, bool, bool, KubeVersion),
}

/// The effective gate values of a run, for the Kubernetes release it follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureGates {
    version: KubeVersion,
    values: BTreeMap<&'static str, bool>,
}

impl Default for FeatureGates {
    /// The defaults of [`crate::version::DEFAULT`].
    fn default() -> Self {
        FeatureGates::for_version(KubeVersion::default())
    }
}

impl FeatureGates {
    /// The defaults of a release.
    pub fn for_version(version: KubeVersion) -> Self {
        let values = GATES
            .iter()
            .filter_map(|g| g.at(version).map(|s| (g.name, s.default)))
            .collect();
        FeatureGates { version, values }
    }

    /// The defaults of [`crate::version::DEFAULT`] with user overrides, rejecting unknown
    /// gates and changes to locked ones.
    pub fn with_overrides(overrides: &BTreeMap<String, bool>) -> Result<Self, FeatureGateError> {
        Self::for_version_with_overrides(KubeVersion::default(), overrides)
    }

    /// A release's defaults with user overrides, rejecting gates that release does not have
    /// and changes to the gates it locks.
    pub fn for_version_with_overrides(
        version: KubeVersion,
        overrides: &BTreeMap<String, bool>,
    ) -> Result<Self, FeatureGateError> {
        let mut gates = FeatureGates::for_version(version);
        for (name, &value) in overrides {
            gates.set(name, value)?;
        }
        Ok(gates)
    }

    pub fn set(&mut self, name: &str, value: bool) -> Result<(), FeatureGateError> {
        let version = self.version;
        let Some((spec, state)) = GATES
            .iter()
            .find(|g| g.name == name)
            .and_then(|g| g.at(version).map(|s| (g, s)))
        else {
            let known: Vec<&str> = self.values.keys().copied().collect();
            return Err(FeatureGateError::Unknown(
                name.to_string(),
                version,
                known.join(", "),
            ));
        };
        if state.locked && value != state.default {
            return Err(FeatureGateError::Locked(
                name.to_string(),
                value,
                state.default,
                version,
            ));
        }
        self.values.insert(spec.name, value);
        Ok(())
    }

    /// Whether a gate is on. Unknown names are off.
    pub fn enabled(&self, name: &str) -> bool {
        self.values.get(name).copied().unwrap_or(false)
    }

    /// The Kubernetes release these gates are for; components key behaviour changes that are
    /// not gates to it (see [`crate::version::changes`]).
    pub fn version(&self) -> KubeVersion {
        self.version
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

    fn at(minor: u32, patch: u32) -> FeatureGates {
        FeatureGates::for_version(v1(minor, patch))
    }

    #[test]
    fn scheduler_async_api_calls_follows_its_patch_releases() {
        let on = |g: FeatureGates| g.enabled("SchedulerAsyncAPICalls");
        assert!(on(at(34, 0)));
        assert!(on(at(34, 1)));
        assert!(!on(at(34, 2)));
        assert!(!on(at(34, 7)));
        assert!(on(at(35, 0)));
        assert!(!on(at(35, 1)));
        assert!(!on(at(35, 4)));
        assert!(!on(at(36, 0)));
        assert!(!on(at(37, 0)));
    }

    #[test]
    fn defaults_that_changed_in_1_35_and_1_36() {
        for gate in [
            "OpportunisticBatching",
            "NominatedNodeNameForExpectation",
            "ClearingNominatedNodeNameAfterBinding",
            "DeploymentReplicaSetTerminatingReplicas",
            "PodTopologyLabelsAdmission",
        ] {
            assert!(!at(34, 7).enabled(gate), "{gate} in v1.34.7");
            assert!(at(35, 0).enabled(gate), "{gate} in v1.35.0");
            assert!(at(37, 0).enabled(gate), "{gate} in v1.37.0");
        }
        for gate in [
            "StaleControllerConsistencyReplicaSet",
            "NodeDeclaredFeatures",
        ] {
            assert!(!at(35, 4).enabled(gate), "{gate} in v1.35.4");
            assert!(at(36, 0).enabled(gate), "{gate} in v1.36.0");
        }
    }

    #[test]
    fn a_gate_is_unknown_before_its_first_release_and_locks_follow_the_release() {
        let batching = [("OpportunisticBatching".to_string(), false)].into();
        let err = FeatureGates::for_version_with_overrides(v1(34, 0), &batching).unwrap_err();
        assert!(matches!(err, FeatureGateError::Unknown(..)), "{err}");
        assert!(err.to_string().contains("Kubernetes v1.34.0"), "{err}");
        assert!(FeatureGates::for_version_with_overrides(v1(35, 0), &batching).is_ok());

        let ndf_off = [("NodeDeclaredFeatures".to_string(), false)].into();
        assert!(FeatureGates::for_version_with_overrides(v1(36, 0), &ndf_off).is_ok());
        let err = FeatureGates::for_version_with_overrides(v1(37, 0), &ndf_off).unwrap_err();
        assert!(matches!(err, FeatureGateError::Locked(..)), "{err}");

        let ipvs_off = [("InPlacePodVerticalScaling".to_string(), false)].into();
        assert!(FeatureGates::for_version_with_overrides(v1(34, 7), &ipvs_off).is_ok());
        assert!(FeatureGates::for_version_with_overrides(v1(35, 0), &ipvs_off).is_err());
    }

    #[test]
    fn separate_taint_eviction_controller_is_locked_from_1_34() {
        let off = [("SeparateTaintEvictionController".to_string(), false)].into();
        assert!(matches!(
            FeatureGates::with_overrides(&off),
            Err(FeatureGateError::Locked(..))
        ));
    }

    #[test]
    fn the_default_gates_are_those_of_the_default_version() {
        assert_eq!(
            FeatureGates::default(),
            FeatureGates::for_version(crate::version::DEFAULT)
        );
        assert_eq!(FeatureGates::default().version(), crate::version::DEFAULT);
    }
}

//! The registry of node declared features, by release (upstream
//! `k8s.io/component-helpers/nodedeclaredfeatures/features/registry.go` and one package per
//! feature): each feature's name, the releases whose registry holds it, and how a pod's spec
//! requires it at scheduling time (`InferForScheduling`; most features matter only for pod
//! updates and never make a pod require them at scheduling).
//!
//! Read in the kubernetes/component-helpers repository (the published copy of the staging
//! directory): tag v0.35.0 for v1.35, tag v0.36.0 for v1.36 (v0.36.3 has the same registry), and
//! for v1.37 the newest stored commit `1961876b` (2026-07-24, after v0.37.0-beta.0, whose
//! registry is still v1.36's). No feature of these registries sets a `MaxVersion`, so the
//! scheduler's own version never drops a requirement.

use k8s_openapi::api::core::v1::{Container, PodSpec};
use kubeplane_core::version::{v1, KubeVersion, Versioned};

/// One registered feature.
pub struct DeclaredFeature {
    /// The name a node declares in `status.declaredFeatures`.
    pub name: &'static str,
    /// Whether the release's registry holds the feature.
    pub registered: Versioned<bool>,
    /// Whether a pod's spec requires the feature at scheduling time; `None` for the features
    /// that only pod updates require.
    pub infer_for_scheduling: Option<fn(&PodSpec) -> bool>,
}

const FROM_1_35: Versioned<bool> = &[(v1(35, 0), true)];
const ONLY_1_35: Versioned<bool> = &[(v1(35, 0), true), (v1(36, 0), false)];
const FROM_1_36: Versioned<bool> = &[(v1(36, 0), true)];
const FROM_1_37: Versioned<bool> = &[(v1(37, 0), true)];

/// Every feature of the registries of v1.35 to v1.37.
pub const FEATURES: &[DeclaredFeature] = &[
    // restartallcontainers: a container or init container with a restart rule whose action is
    // RestartAllContainers.
    DeclaredFeature {
        name: "RestartAllContainersOnContainerExits",
        registered: FROM_1_35,
        infer_for_scheduling: Some(restarts_all_containers),
    },
    // inplacepodresize, GuaranteedQoSPodCPUResize: removed before v1.36 (component-helpers
    // b0c3944, "Remove GuaranteedQoSPodCPUResize declared feature").
    DeclaredFeature {
        name: "GuaranteedQoSPodCPUResize",
        registered: ONLY_1_35,
        infer_for_scheduling: None,
    },
    DeclaredFeature {
        name: "InPlacePodLevelResourcesVerticalScaling",
        registered: FROM_1_35,
        infer_for_scheduling: None,
    },
    DeclaredFeature {
        name: "ExtendWebSocketsToKubelet",
        registered: FROM_1_36,
        infer_for_scheduling: None,
    },
    DeclaredFeature {
        name: "InPlacePodVerticalScalingInitContainers",
        registered: FROM_1_36,
        infer_for_scheduling: None,
    },
    // usernamespaceshostnetwork: host networking with user namespaces (`hostUsers: false`).
    DeclaredFeature {
        name: "UserNamespacesHostNetworkSupport",
        registered: FROM_1_36,
        infer_for_scheduling: Some(host_network_in_user_namespace),
    },
    DeclaredFeature {
        name: "InPlacePodVerticalScalingMemoryBackedVolumes",
        registered: FROM_1_37,
        infer_for_scheduling: None,
    },
    DeclaredFeature {
        name: "DRANodeAllocatableResources",
        registered: FROM_1_37,
        infer_for_scheduling: None,
    },
    // volumebindmountoptions: a volume mount of a container, init container or ephemeral
    // container with `bindMountOptions`. That field (v1.37) is not in k8s-openapi's v1.34
    // `VolumeMount`, which kubeplane reads pods into, so no pod requires the feature here.
    DeclaredFeature {
        name: "VolumeBindMountOptions",
        registered: FROM_1_37,
        infer_for_scheduling: Some(never),
    },
    DeclaredFeature {
        name: "DRAOptionalNodeOperations",
        registered: FROM_1_37,
        infer_for_scheduling: None,
    },
];

/// The features a pod's spec requires at scheduling time in a release (upstream
/// `Framework.InferForPodScheduling`), sorted by name as upstream's registry is.
pub fn infer_for_scheduling(spec: &PodSpec, version: KubeVersion) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = FEATURES
        .iter()
        .filter(|f| version.has(f.registered))
        .filter(|f| f.infer_for_scheduling.is_some_and(|infer| infer(spec)))
        .map(|f| f.name)
        .collect();
    out.sort_unstable();
    out
}

fn restarts_all_containers(spec: &PodSpec) -> bool {
    let has_rule = |c: &Container| {
        c.restart_policy_rules
            .iter()
            .flatten()
            .any(|rule| rule.action == "RestartAllContainers")
    };
    spec.containers.iter().any(has_rule) || spec.init_containers.iter().flatten().any(has_rule)
}

fn host_network_in_user_namespace(spec: &PodSpec) -> bool {
    spec.host_network == Some(true) && spec.host_users == Some(false)
}

fn never(_: &PodSpec) -> bool {
    false
}

//! DaemonSet helpers (upstream `pkg/controller/daemon/util/daemonset_util.go`): the tolerations
//! every daemon pod gets, the template a pod is created from, surge and unavailability counts,
//! whether a pod is of the current revision, and the node affinity that pins a pod to its node.

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodSpec,
    PodTemplateSpec, Toleration,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubeplane_core::taints::{
    EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, OPERATOR_EXISTS, TAINT_NODE_DISK_PRESSURE,
    TAINT_NODE_MEMORY_PRESSURE, TAINT_NODE_NETWORK_UNAVAILABLE, TAINT_NODE_NOT_READY,
    TAINT_NODE_PID_PRESSURE, TAINT_NODE_UNREACHABLE, TAINT_NODE_UNSCHEDULABLE,
};

use crate::deployment::util::scaled_value;

/// The label carrying the hash of the revision a daemon pod (and a ControllerRevision) belongs
/// to (upstream `apps.DefaultDaemonSetUniqueLabelKey`, `controller-revision-hash`).
pub const DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY: &str = "controller-revision-hash";
/// The label of the deprecated template generation (upstream `DaemonSetTemplateGenerationKey`).
pub const DAEMON_SET_TEMPLATE_GENERATION_KEY: &str = "pod-template-generation";
/// The DaemonSet annotation holding that generation (upstream `DeprecatedTemplateGeneration`).
pub const DEPRECATED_TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";
/// The node field a daemon pod's node affinity selects (upstream `metav1.ObjectNameField`).
pub const OBJECT_NAME_FIELD: &str = "metadata.name";

pub const STRATEGY_ROLLING_UPDATE: &str = "RollingUpdate";
pub const STRATEGY_ON_DELETE: &str = "OnDelete";

/// The template generation of the deprecated annotation (upstream `GetTemplateGeneration`):
/// `Ok(None)` without the annotation, an error when it does not parse.
pub fn get_template_generation(ds: &DaemonSet) -> Result<Option<i64>, String> {
    let Some(value) = ds
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DEPRECATED_TEMPLATE_GENERATION))
    else {
        return Ok(None);
    };
    value
        .parse::<i64>()
        .map(Some)
        .map_err(|e| format!("strconv.ParseInt: parsing {value:?}: {e}"))
}

fn toleration(key: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.to_string()),
        operator: Some(OPERATOR_EXISTS.to_string()),
        effect: Some(effect.to_string()),
        ..Default::default()
    }
}

/// Upstream `AddOrUpdateTolerationInPodSpec`: a toleration with the same key, operator, value
/// and effect is replaced (unless it is already equal), any other is appended.
pub fn add_or_update_toleration(spec: &mut PodSpec, t: Toleration) {
    let tols = spec.tolerations.get_or_insert_with(Vec::new);
    let same = |o: &Toleration| {
        o.key == t.key && o.operator == t.operator && o.value == t.value && o.effect == t.effect
    };
    match tols.iter_mut().find(|o| same(o)) {
        Some(existing) => *existing = t,
        None => tols.push(t),
    }
}

/// Upstream `AddOrUpdateDaemonPodTolerations`: daemon pods tolerate the not-ready and
/// unreachable NoExecute taints forever (no `tolerationSeconds`), the pressure and
/// unschedulable NoSchedule taints, and, with `hostNetwork`, the network-unavailable one.
pub fn add_or_update_daemon_pod_tolerations(spec: &mut PodSpec) {
    add_or_update_toleration(spec, toleration(TAINT_NODE_NOT_READY, EFFECT_NO_EXECUTE));
    add_or_update_toleration(spec, toleration(TAINT_NODE_UNREACHABLE, EFFECT_NO_EXECUTE));
    for key in [
        TAINT_NODE_DISK_PRESSURE,
        TAINT_NODE_MEMORY_PRESSURE,
        TAINT_NODE_PID_PRESSURE,
        TAINT_NODE_UNSCHEDULABLE,
    ] {
        add_or_update_toleration(spec, toleration(key, EFFECT_NO_SCHEDULE));
    }
    if spec.host_network == Some(true) {
        add_or_update_toleration(
            spec,
            toleration(TAINT_NODE_NETWORK_UNAVAILABLE, EFFECT_NO_SCHEDULE),
        );
    }
}

/// Upstream `CreatePodTemplate`: the template with the daemon tolerations, the generation label
/// (when the DaemonSet has one) and the revision hash label.
pub fn create_pod_template(
    template: &PodTemplateSpec,
    generation: Option<i64>,
    hash: &str,
) -> PodTemplateSpec {
    let mut t = template.clone();
    add_or_update_daemon_pod_tolerations(t.spec.get_or_insert_with(Default::default));
    let labels = t
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(BTreeMap::new);
    if let Some(g) = generation {
        labels.insert(
            DAEMON_SET_TEMPLATE_GENERATION_KEY.to_string(),
            g.to_string(),
        );
    }
    if !hash.is_empty() {
        labels.insert(
            DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY.to_string(),
            hash.to_string(),
        );
    }
    t
}

/// The update strategy type, `RollingUpdate` when unset (the API server's default).
pub fn strategy_type(ds: &DaemonSet) -> &str {
    ds.spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|u| u.type_.as_deref())
        .unwrap_or(STRATEGY_ROLLING_UPDATE)
}

/// `maxUnavailable` and `maxSurge` of a RollingUpdate strategy, with the API server's defaults
/// (1 and 0) for what is unset.
fn rolling_params(ds: &DaemonSet) -> (IntOrString, IntOrString) {
    let ru = ds
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|u| u.rolling_update.as_ref());
    (
        ru.and_then(|r| r.max_unavailable.clone())
            .unwrap_or(IntOrString::Int(1)),
        ru.and_then(|r| r.max_surge.clone())
            .unwrap_or(IntOrString::Int(0)),
    )
}

/// Upstream `SurgeCount`: 0 unless the strategy is RollingUpdate, else `maxSurge` of
/// `number_to_schedule`, rounded up.
pub fn surge_count(ds: &DaemonSet, number_to_schedule: i32) -> Result<i32, String> {
    if strategy_type(ds) != STRATEGY_ROLLING_UPDATE {
        return Ok(0);
    }
    scaled_value(&rolling_params(ds).1, number_to_schedule, true)
}

/// Upstream `UnavailableCount`: 0 unless the strategy is RollingUpdate, else `maxUnavailable`
/// of `number_to_schedule`, rounded up.
pub fn unavailable_count(ds: &DaemonSet, number_to_schedule: i32) -> Result<i32, String> {
    if strategy_type(ds) != STRATEGY_ROLLING_UPDATE {
        return Ok(0);
    }
    scaled_value(&rolling_params(ds).0, number_to_schedule, true)
}

/// Upstream `AllowsSurge`: the DaemonSet may run more than one pod on a node.
pub fn allows_surge(ds: &DaemonSet) -> bool {
    surge_count(ds, 1).is_ok_and(|s| s > 0)
}

/// Upstream `IsPodUpdated`: the pod carries the current hash, or the current template
/// generation. A pod carrying neither label (one written into a scenario by hand: the
/// controller's own pods always have the hash) counts as current, where upstream would replace
/// it (docs/daemonset.md §5).
pub fn is_pod_updated(pod: &StoredPod, hash: &str, generation: Option<i64>) -> bool {
    let labels = crate::controller_utils::pod_labels(pod);
    if !labels.contains_key(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY)
        && !labels.contains_key(DAEMON_SET_TEMPLATE_GENERATION_KEY)
    {
        return true;
    }
    let template_matches = generation.is_some_and(|g| {
        labels
            .get(DAEMON_SET_TEMPLATE_GENERATION_KEY)
            .map(String::as_str)
            == Some(&g.to_string())
    });
    let hash_matches = !hash.is_empty()
        && labels
            .get(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY)
            .map(String::as_str)
            == Some(hash);
    hash_matches || template_matches
}

/// Upstream `ReplaceDaemonSetPodNodeNameNodeAffinity`: the required node affinity becomes the
/// single term `matchFields: metadata.name In [node]`; preferred terms and pod (anti-)affinity
/// are kept.
pub fn replace_daemon_set_pod_node_name_node_affinity(
    affinity: Option<Affinity>,
    node_name: &str,
) -> Affinity {
    let selector = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: OBJECT_NAME_FIELD.to_string(),
                operator: "In".to_string(),
                values: Some(vec![node_name.to_string()]),
            }]),
            match_expressions: None,
        }],
    };
    let mut affinity = affinity.unwrap_or_default();
    affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default)
        .required_during_scheduling_ignored_during_execution = Some(selector);
    affinity
}

/// Upstream `GetTargetNodeName`: the pod's node, or for a pod not yet bound the node its
/// `metadata.name In [node]` affinity term names.
pub fn get_target_node_name(pod: &StoredPod) -> Result<&str, String> {
    let spec = pod.spec.as_ref();
    if let Some(n) = pod.node_name() {
        if !n.is_empty() {
            return Ok(n);
        }
    }
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let Some(required) = spec
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
    else {
        return Err(format!(
            "no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution for pod {ns}/{name}"
        ));
    };
    if required.node_selector_terms.is_empty() {
        return Err(format!(
            "no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuringExecution of pod {ns}/{name}"
        ));
    }
    for term in &required.node_selector_terms {
        for exp in term.match_fields.iter().flatten() {
            if exp.key == OBJECT_NAME_FIELD && exp.operator == "In" {
                return match exp.values.as_deref() {
                    Some([only]) => Ok(only.as_str()),
                    _ => Err(format!(
                        "the matchFields value of '{OBJECT_NAME_FIELD}' is not unique for pod {ns}/{name}"
                    )),
                };
            }
        }
    }
    Err(format!("no node name found for pod {ns}/{name}"))
}

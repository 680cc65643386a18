//! The Priority admission plugin (priorityClassName → spec.priority and preemptionPolicy), and
//! the pod strategy's copying of matchLabelKeys into topology spread selectors.

use kubeplane_api::StoredPod;
use kubeplane_api::{Cache, Kind, Object};

/// The built-in system priority classes (upstream `scheduling.SystemPriorityClasses`).
pub const SYSTEM_PRIORITY_CLASSES: [(&str, i32); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// Resolves the pod's priority as upstream's Priority admission plugin does. Returns the
/// API server's error message when the class does not exist or the given priority differs.
pub fn admit_priority(pod: &mut StoredPod, store: &dyn Cache) -> Result<(), String> {
    let spec = pod.spec();
    let name = spec
        .and_then(|s| s.priority_class_name.clone())
        .filter(|n| !n.is_empty());
    let given = spec.and_then(|s| s.priority);
    let has_policy = spec.is_some_and(|s| s.preemption_policy.is_some());
    let mut default_name = None;
    let (value, policy) = match &name {
        Some(n) => {
            if let Some((_, v)) = SYSTEM_PRIORITY_CLASSES.iter().find(|(s, _)| s == n) {
                (*v, Some("PreemptLowerPriority".to_string()))
            } else {
                match store.get(Kind::PriorityClass, "", n) {
                    Some(Object::PriorityClass(pc)) => (
                        pc.value,
                        Some(
                            pc.preemption_policy
                                .clone()
                                .unwrap_or_else(|| "PreemptLowerPriority".into()),
                        ),
                    ),
                    _ => return Err(format!("no PriorityClass with name {n} was found")),
                }
            }
        }
        None => {
            // The globalDefault class with the highest value, else 0.
            let default = store
                .list(Kind::PriorityClass)
                .filter_map(|o| match o {
                    Object::PriorityClass(pc) if pc.global_default == Some(true) => {
                        Some(pc.clone())
                    }
                    _ => None,
                })
                .max_by_key(|pc| pc.value);
            match default {
                Some(pc) => {
                    default_name = Some(pc.metadata.name.clone());
                    (
                        pc.value,
                        Some(
                            pc.preemption_policy
                                .clone()
                                .unwrap_or_else(|| "PreemptLowerPriority".into()),
                        ),
                    )
                }
                None => (0, None),
            }
        }
    };
    if let Some(given) = given {
        if given != value {
            return Err("the integer value of priority must not be provided in pod spec; priority admission controller computed ".to_string()
                + &format!("{value} from the given PriorityClass name"));
        }
    }
    // Written only when something changes, so that an admitted pod's spec stays shared.
    let changes = default_name.is_some() || given != Some(value) || !has_policy && policy.is_some();
    if changes || pod.spec.is_none() {
        write_priority(pod, default_name, value, policy);
    }
    Ok(())
}

/// The Priority plugin's writes: the default class's name (when one was taken), the value, and
/// the preemption policy unless the pod names one.
fn write_priority(
    pod: &mut StoredPod,
    default_name: Option<Option<String>>,
    value: i32,
    policy: Option<String>,
) {
    let spec = pod.spec_mut();
    if let Some(name) = default_name {
        spec.priority_class_name = name;
    }
    spec.priority = Some(value);
    if spec.preemption_policy.is_none() {
        spec.preemption_policy = policy;
    }
}

/// What the API server does on pod creation for `matchLabelKeys` / `mismatchLabelKeys` of pod
/// (anti-)affinity terms (upstream pod strategy `mutatePodAffinity`, gate
/// MatchLabelKeysInPodAffinity, locked on since v1.33): for each key the pod has a label for,
/// `key in (value)` (resp. `key notin (value)`) is added to the term's `labelSelector`. A term
/// without a selector is left alone (it selects nothing anyway).
pub fn apply_match_label_keys(pod: &mut StoredPod) {
    use k8s_openapi::api::core::v1::PodAffinityTerm;
    let affinity = pod.spec().and_then(|s| s.affinity.as_ref());
    if !affinity.is_some_and(has_label_keys) {
        // Nothing to add: the spec is not copied (it may be shared), nor the labels.
        return;
    }
    let labels = pod.labels().cloned().unwrap_or_default();
    let apply = |term: &mut PodAffinityTerm| add_label_key_requirements(term, &labels);
    let Some(affinity) = pod.spec_mut().affinity.as_mut() else {
        return;
    };
    if let Some(a) = affinity.pod_affinity.as_mut() {
        for t in a
            .preferred_during_scheduling_ignored_during_execution
            .iter_mut()
            .flatten()
        {
            apply(&mut t.pod_affinity_term);
        }
        for t in a
            .required_during_scheduling_ignored_during_execution
            .iter_mut()
            .flatten()
        {
            apply(t);
        }
    }
    if let Some(a) = affinity.pod_anti_affinity.as_mut() {
        for t in a
            .preferred_during_scheduling_ignored_during_execution
            .iter_mut()
            .flatten()
        {
            apply(&mut t.pod_affinity_term);
        }
        for t in a
            .required_during_scheduling_ignored_during_execution
            .iter_mut()
            .flatten()
        {
            apply(t);
        }
    }
}

/// One term's matchLabelKeys and mismatchLabelKeys as `In` and `NotIn` requirements on the
/// pod's own label values, added to its selector (a term without keys or selector is left).
fn add_label_key_requirements(
    term: &mut k8s_openapi::api::core::v1::PodAffinityTerm,
    labels: &std::collections::BTreeMap<String, String>,
) {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    let keys_given = term
        .match_label_keys
        .as_ref()
        .is_some_and(|k| !k.is_empty())
        || term
            .mismatch_label_keys
            .as_ref()
            .is_some_and(|k| !k.is_empty());
    let Some(sel) = term.label_selector.as_mut().filter(|_| keys_given) else {
        return;
    };
    let exprs = sel.match_expressions.get_or_insert_with(Vec::new);
    for (keys, op) in [
        (&term.match_label_keys, "In"),
        (&term.mismatch_label_keys, "NotIn"),
    ] {
        for key in keys.iter().flatten() {
            if let Some(v) = labels.get(key) {
                exprs.push(LabelSelectorRequirement {
                    key: key.clone(),
                    operator: op.to_string(),
                    values: Some(vec![v.clone()]),
                });
            }
        }
    }
}

/// Whether a pod (anti-)affinity term of `affinity` has a selector and matchLabelKeys or
/// mismatchLabelKeys (what [`apply_match_label_keys`] changes).
fn has_label_keys(affinity: &k8s_openapi::api::core::v1::Affinity) -> bool {
    use k8s_openapi::api::core::v1::PodAffinityTerm;
    let given = |t: &PodAffinityTerm| {
        t.label_selector.is_some()
            && (t.match_label_keys.as_ref().is_some_and(|k| !k.is_empty())
                || t.mismatch_label_keys
                    .as_ref()
                    .is_some_and(|k| !k.is_empty()))
    };
    let terms = |preferred: Option<&Vec<k8s_openapi::api::core::v1::WeightedPodAffinityTerm>>,
                 required: Option<&Vec<PodAffinityTerm>>| {
        preferred
            .into_iter()
            .flatten()
            .any(|t| given(&t.pod_affinity_term))
            || required.into_iter().flatten().any(given)
    };
    affinity.pod_affinity.as_ref().is_some_and(|a| {
        terms(
            a.preferred_during_scheduling_ignored_during_execution
                .as_ref(),
            a.required_during_scheduling_ignored_during_execution
                .as_ref(),
        )
    }) || affinity.pod_anti_affinity.as_ref().is_some_and(|a| {
        terms(
            a.preferred_during_scheduling_ignored_during_execution
                .as_ref(),
            a.required_during_scheduling_ignored_during_execution
                .as_ref(),
        )
    })
}

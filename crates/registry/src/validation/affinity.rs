//! Node affinity and pod (anti-)affinity (upstream `validateAffinity`,
//! `ValidateNodeSelectorTerm`, `validatePodAffinityTerm` in `pkg/apis/core/validation`).

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelectorTerm, PodAffinityTerm, WeightedPodAffinityTerm,
};
use kubeplane_core::labels::is_qualified_name;

use super::meta::validate_selector;
use super::{join, quote, Check, FieldError};

/// Upstream `validateAffinity`.
pub fn validate_affinity(a: &Affinity, path: &str) -> Check {
    if let Some(na) = &a.node_affinity {
        validate_node_affinity(na, &join(path, "nodeAffinity"))?;
    }
    if let Some(pa) = &a.pod_affinity {
        validate_pod_affinity(
            pa.required_during_scheduling_ignored_during_execution
                .as_deref(),
            pa.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            &join(path, "podAffinity"),
        )?;
    }
    if let Some(pa) = &a.pod_anti_affinity {
        validate_pod_affinity(
            pa.required_during_scheduling_ignored_during_execution
                .as_deref(),
            pa.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            &join(path, "podAntiAffinity"),
        )?;
    }
    Ok(())
}

fn validate_node_affinity(na: &NodeAffinity, p: &str) -> Check {
    if let Some(req) = &na.required_during_scheduling_ignored_during_execution {
        let rp = join(p, "requiredDuringSchedulingIgnoredDuringExecution");
        if req.node_selector_terms.is_empty() {
            return Err(FieldError::required(
                join(&rp, "nodeSelectorTerms"),
                "must have at least one node selector term",
            ));
        }
        for (i, t) in req.node_selector_terms.iter().enumerate() {
            validate_node_selector_term(t, &format!("{rp}.nodeSelectorTerms[{i}]"))?;
        }
    }
    for (i, t) in na
        .preferred_during_scheduling_ignored_during_execution
        .iter()
        .flatten()
        .enumerate()
    {
        let tp = format!("{p}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        check_weight(t.weight, &tp)?;
        validate_node_selector_term(&t.preference, &join(&tp, "preference"))?;
    }
    Ok(())
}

fn validate_pod_affinity(
    required: Option<&[PodAffinityTerm]>,
    preferred: Option<&[WeightedPodAffinityTerm]>,
    p: &str,
) -> Check {
    for (i, t) in required.into_iter().flatten().enumerate() {
        validate_pod_affinity_term(
            t,
            &format!("{p}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"),
        )?;
    }
    for (i, w) in preferred.into_iter().flatten().enumerate() {
        let wp = format!("{p}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        check_weight(w.weight, &wp)?;
        validate_pod_affinity_term(&w.pod_affinity_term, &join(&wp, "podAffinityTerm"))?;
    }
    Ok(())
}

/// Upstream `ValidateNodeSelectorTerm`: match expressions on labels and match fields on
/// `metadata.name`.
pub fn validate_node_selector_term(t: &NodeSelectorTerm, path: &str) -> Check {
    for (i, r) in t.match_expressions.iter().flatten().enumerate() {
        let p = format!("{path}.matchExpressions[{i}]");
        is_qualified_name(&r.key)
            .map_err(|e| FieldError::invalid(join(&p, "key"), quote(&r.key), &e))?;
        let n = r.values.as_ref().map_or(0, Vec::len);
        let values = join(&p, "values");
        match r.operator.as_str() {
            "In" | "NotIn" if n == 0 => {
                return Err(FieldError::required(
                    values,
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ))
            }
            "Exists" | "DoesNotExist" if n > 0 => {
                return Err(FieldError::forbidden(
                    values,
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ))
            }
            "Gt" | "Lt" if n != 1 => {
                return Err(FieldError::required(
                    values,
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ))
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            other => {
                return Err(FieldError::not_supported(
                    join(&p, "operator"),
                    other,
                    &["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"],
                ))
            }
        }
    }
    for (i, r) in t.match_fields.iter().flatten().enumerate() {
        let p = format!("{path}.matchFields[{i}]");
        if r.key != "metadata.name" {
            return Err(FieldError::not_supported(
                join(&p, "key"),
                &r.key,
                &["metadata.name"],
            ));
        }
        if !matches!(r.operator.as_str(), "In" | "NotIn") {
            return Err(FieldError::not_supported(
                join(&p, "operator"),
                &r.operator,
                &["In", "NotIn"],
            ));
        }
        if r.values.as_ref().map_or(0, Vec::len) != 1 {
            return Err(FieldError::required(
                join(&p, "values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            ));
        }
    }
    Ok(())
}

/// Upstream `validatePodAffinityTerm`.
fn validate_pod_affinity_term(t: &PodAffinityTerm, path: &str) -> Check {
    if t.topology_key.is_empty() {
        return Err(FieldError::required(
            join(path, "topologyKey"),
            "can not be empty",
        ));
    }
    is_qualified_name(&t.topology_key)
        .map_err(|e| FieldError::invalid(join(path, "topologyKey"), quote(&t.topology_key), &e))?;
    if let Some(s) = &t.label_selector {
        validate_selector(s, &join(path, "labelSelector"))?;
    }
    if let Some(s) = &t.namespace_selector {
        validate_selector(s, &join(path, "namespaceSelector"))?;
    }
    Ok(())
}

/// A preference weight: 1 to 100.
fn check_weight(weight: i32, path: &str) -> Check {
    if !(1..=100).contains(&weight) {
        return Err(FieldError::invalid(
            join(path, "weight"),
            weight.to_string(),
            "must be in the range 1-100",
        ));
    }
    Ok(())
}

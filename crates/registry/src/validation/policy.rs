//! PodDisruptionBudgets (upstream `pkg/apis/policy/validation`:
//! `ValidatePodDisruptionBudget`, `ValidatePodDisruptionBudgetSpec`).

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::apps::int_or_percent;
use super::meta::{validate_meta, validate_selector, NameRule};
use super::{Check, FieldError};

/// Upstream `ValidatePodDisruptionBudget`. policy/v1 lets every spec field change in an
/// update, so updates are checked as creates.
pub fn validate_pdb(pdb: &PodDisruptionBudget) -> Check {
    validate_meta(&pdb.metadata, "metadata", NameRule::PathSegment, true)?;
    let Some(spec) = &pdb.spec else {
        return Ok(());
    };
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        return Err(FieldError::invalid_omitted(
            "spec",
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (field, v) in [
        ("spec.minAvailable", &spec.min_available),
        ("spec.maxUnavailable", &spec.max_unavailable),
    ] {
        if let Some(n) = int_or_percent(v.as_ref(), field)? {
            if matches!(v, Some(IntOrString::String(_))) && n > 100 {
                return Err(FieldError::invalid_omitted(
                    field,
                    "must not be greater than 100%",
                ));
            }
        }
    }
    if let Some(s) = &spec.selector {
        validate_selector(s, "spec.selector")?;
    }
    if let Some(p) = spec.unhealthy_pod_eviction_policy.as_deref() {
        if !matches!(p, "IfHealthyBudget" | "AlwaysAllow") {
            return Err(FieldError::not_supported(
                "spec.unhealthyPodEvictionPolicy",
                p,
                &["AlwaysAllow", "IfHealthyBudget"],
            ));
        }
    }
    Ok(())
}

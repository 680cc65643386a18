//! PriorityClasses (upstream `pkg/apis/scheduling/validation`: `ValidatePriorityClass`,
//! `ValidatePriorityClassUpdate`).

use k8s_openapi::api::scheduling::v1::PriorityClass;

use super::meta::{immutable, validate_meta, NameRule};
use super::{quote, Check, FieldError};

/// Upstream `HighestUserDefinablePriority`.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i32 = 1_000_000_000;

/// The preemption policy of a class that names none (upstream's defaulting).
const DEFAULT_PREEMPTION_POLICY: &str = "PreemptLowerPriority";

/// Upstream `ValidatePriorityClass`: user-defined classes stay at or below
/// [`HIGHEST_USER_DEFINABLE_PRIORITY`]; a known preemption policy.
pub fn validate_priority_class(pc: &PriorityClass) -> Check {
    validate_meta(&pc.metadata, "metadata", NameRule::PathSegment, false)?;
    let system = pc
        .metadata
        .name
        .as_deref()
        .is_some_and(|n| n.starts_with("system-"));
    if !system && pc.value > HIGHEST_USER_DEFINABLE_PRIORITY {
        return Err(FieldError::forbidden(
            "value",
            &format!(
                "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    if let Some(p) = pc.preemption_policy.as_deref() {
        if !matches!(p, "Never" | "PreemptLowerPriority") {
            return Err(FieldError::not_supported(
                "preemptionPolicy",
                p,
                &["Never", "PreemptLowerPriority"],
            ));
        }
    }
    Ok(())
}

/// Upstream `ValidatePriorityClassUpdate`: the value and the preemption policy may not
/// change (the rest of the new object is not validated again, as upstream).
pub fn validate_priority_class_update(old: &PriorityClass, new: &PriorityClass) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if new.value != old.value {
        errs.push(FieldError::forbidden(
            "value",
            "may not be changed in an update.",
        ));
    }
    // Both sides as upstream's defaulting leaves them.
    let policy = |pc: &PriorityClass| {
        pc.preemption_policy
            .clone()
            .unwrap_or_else(|| DEFAULT_PREEMPTION_POLICY.to_string())
    };
    if policy(new) != policy(old) {
        errs.push(immutable(
            "preemptionPolicy".to_string(),
            quote(&policy(new)),
        ));
    }
    errs
}

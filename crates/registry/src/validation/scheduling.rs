//! PriorityClasses (upstream `pkg/apis/scheduling/validation`: `ValidatePriorityClass`,
//! `ValidatePriorityClassUpdate`).

use k8s_openapi::api::scheduling::v1::PriorityClass;

use super::meta::{immutable, validate_meta, NameRule};
use super::{quote, Check, FieldError};
use crate::admission::priority::SYSTEM_PRIORITY_CLASSES;

/// Upstream `HighestUserDefinablePriority`.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i32 = 1_000_000_000;

/// The preemption policy of a class that names none (upstream's defaulting).
const DEFAULT_PREEMPTION_POLICY: &str = "PreemptLowerPriority";

/// Upstream `ValidatePriorityClass`: a `system-` class is one of the built-in ones as upstream
/// defines them; user-defined classes stay at or below
/// [`HIGHEST_USER_DEFINABLE_PRIORITY`]; a known preemption policy.
pub fn validate_priority_class(pc: &PriorityClass) -> Check {
    validate_meta(&pc.metadata, "metadata", NameRule::PathSegment, false)?;
    let name = pc.metadata.name.as_deref().unwrap_or_default();
    if name.starts_with("system-") {
        if let Err(e) = known_system_class(name, pc.value, pc.global_default.unwrap_or(false)) {
            return Err(FieldError::forbidden(
                "metadata.name",
                &format!(
                    "priority class names with 'system-' prefix are reserved for system use \
                     only. error: {e}"
                ),
            ));
        }
    } else if pc.value > HIGHEST_USER_DEFINABLE_PRIORITY {
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

/// Upstream `IsKnownSystemPriorityClass`: a `system-` class must be one of the built-in ones,
/// with its value and `globalDefault: false`.
fn known_system_class(name: &str, value: i32, global_default: bool) -> Result<(), String> {
    let Some((_, known)) = SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) else {
        return Err(format!("{name} is not a known system priority class"));
    };
    if value != *known {
        return Err(format!("value of {name} PriorityClass must be {known}"));
    }
    if global_default {
        return Err(format!(
            "globalDefault of {name} PriorityClass must be false"
        ));
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

//! Nodes and taints (upstream `ValidateNode`, `validateNodeTaints` in
//! `pkg/apis/core/validation`).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Node;
use kubeplane_core::labels::{is_qualified_name, is_valid_label_value};

use super::meta::{validate_meta, NameRule};
use super::resources::resource_list;
use super::{join, quote, Check, FieldError};

/// The taint effects, in upstream's order.
pub const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// Whether a taint effect is one of the three.
pub fn check_taint_effect(effect: &str, path: &str) -> Check {
    if effect.is_empty() {
        return Err(FieldError::required(path, ""));
    }
    if !TAINT_EFFECTS.contains(&effect) {
        return Err(FieldError::not_supported(path, effect, &TAINT_EFFECTS));
    }
    Ok(())
}

/// Upstream `validateTaints` for one taint's key, value and effect.
pub fn check_taint(key: &str, value: Option<&str>, effect: &str, path: &str) -> Check {
    if key.is_empty() {
        return Err(FieldError::required(join(path, "key"), ""));
    }
    is_qualified_name(key).map_err(|e| FieldError::invalid(join(path, "key"), quote(key), &e))?;
    if let Some(v) = value {
        is_valid_label_value(v)
            .map_err(|e| FieldError::invalid(join(path, "value"), quote(v), &e))?;
    }
    check_taint_effect(effect, &join(path, "effect"))
}

/// Upstream `ValidateNode`: metadata, taints unique by key and effect, and readable capacity
/// and allocatable quantities.
pub fn validate_node(n: &Node) -> Check {
    validate_meta(&n.metadata, "metadata", NameRule::PathSegment, false)?;
    let mut seen = BTreeSet::new();
    for (i, t) in n
        .spec
        .iter()
        .flat_map(|s| s.taints.iter().flatten())
        .enumerate()
    {
        let p = format!("spec.taints[{i}]");
        check_taint(&t.key, t.value.as_deref(), &t.effect, &p)?;
        if !seen.insert((t.key.as_str(), t.effect.as_str())) {
            return Err(FieldError::duplicate(
                p,
                quote(&t.key),
                "taints must be unique by key and effect pair",
            ));
        }
    }
    if let Some(status) = &n.status {
        resource_list(status.capacity.as_ref(), "status.capacity")?;
        resource_list(status.allocatable.as_ref(), "status.allocatable")?;
    }
    Ok(())
}

//! Quantities and container resources (upstream `ValidateResourceRequirements`,
//! `ValidateResourceQuantityValue`, `IsOvercommitAllowed` in `pkg/apis/core/validation`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubeplane_core::labels::is_qualified_name;
use kubeplane_core::quantity::{parse_quantity, ParsedQuantity};
use kubeplane_core::resources::is_extended_resource_name;

use super::{join, quote, Check, FieldError};

/// Every quantity of a resource list, parsed; names must be non-empty.
pub fn resource_list<'a>(
    list: Option<&'a BTreeMap<String, Quantity>>,
    path: &str,
) -> Result<Parsed<'a>, FieldError> {
    parse_list(list, &|| path.to_string())
}

/// The quantities of a resource list in name order (as the list holds them): a container has a
/// handful, so a vector searched in place beats a map built for every pod.
pub type Parsed<'a> = Vec<(&'a str, ParsedQuantity)>;

/// [`resource_list`] with the path built by `path` only when an error needs it (every pod the
/// controllers create passes through here).
fn parse_list<'a>(
    list: Option<&'a BTreeMap<String, Quantity>>,
    path: &dyn Fn() -> String,
) -> Result<Parsed<'a>, FieldError> {
    let mut out = Vec::with_capacity(list.map_or(0, BTreeMap::len));
    for (name, q) in list.into_iter().flatten() {
        if name.is_empty() {
            return Err(FieldError::required(path(), "resource name"));
        }
        let p = parse_quantity(&q.0)
            .map_err(|e| FieldError::malformed(join(&path(), name), &e.to_string()))?;
        if p.signum() < 0 {
            return Err(FieldError::invalid(
                join(&path(), name),
                quote(&q.0),
                "must be greater than or equal to 0",
            ));
        }
        out.push((name.as_str(), p));
    }
    Ok(out)
}

/// Upstream `IsOvercommitAllowed`: native resources other than hugepages may have requests
/// below limits; extended resources and hugepages need request == limit.
fn overcommit_allowed(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    native && !name.starts_with("hugepages-")
}

fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// The quantity of `name` in a list as written.
fn written<'a>(list: Option<&'a BTreeMap<String, Quantity>>, name: &str) -> &'a str {
    list.and_then(|m| m.get(name)).map_or("", |q| q.0.as_str())
}

/// Resource names of a container: standard ones, extended ones, or qualified names with a
/// prefix.
fn check_resource_names(list: &Parsed<'_>, path: &dyn Fn() -> String) -> Check {
    for &(name, _) in list {
        if is_standard_container_resource(name) || is_extended_resource_name(name) {
            continue;
        }
        if !name.contains('/') {
            return Err(FieldError::invalid(
                join(&path(), name),
                quote(name),
                "must be a standard resource for containers",
            ));
        }
        is_qualified_name(name)
            .map_err(|e| FieldError::invalid(join(&path(), name), quote(name), &e))?;
    }
    Ok(())
}

/// Upstream `ValidateResourceRequirements` for a container.
pub fn validate_container_resources(
    r: &ResourceRequirements,
    path: &dyn std::fmt::Display,
) -> Check {
    if r.limits.is_none() && r.requests.is_none() {
        return Ok(());
    }
    let limits_path = || format!("{path}.limits");
    let requests_path = || format!("{path}.requests");
    let limits = parse_list(r.limits.as_ref(), &limits_path)?;
    let requests = parse_list(r.requests.as_ref(), &requests_path)?;
    check_resource_names(&limits, &limits_path)?;
    check_resource_names(&requests, &requests_path)?;
    for (name, req) in &requests {
        let name = *name;
        let req_text = || quote(written(r.requests.as_ref(), name));
        match limits.iter().find(|(n, _)| *n == name).map(|(_, q)| q) {
            Some(lim) => {
                let lim_text = written(r.limits.as_ref(), name);
                if req != lim && !overcommit_allowed(name) {
                    return Err(FieldError::invalid(
                        join(&requests_path(), name),
                        req_text(),
                        &format!("must be equal to {name} limit of {lim_text}"),
                    ));
                }
                if req > lim {
                    return Err(FieldError::invalid(
                        join(&requests_path(), name),
                        req_text(),
                        &format!("must be less than or equal to {name} limit of {lim_text}"),
                    ));
                }
            }
            None if !overcommit_allowed(name) => {
                return Err(FieldError::required(
                    join(&limits_path(), name),
                    "Limit must be set for non overcommitable resources",
                ));
            }
            None => {}
        }
    }
    Ok(())
}

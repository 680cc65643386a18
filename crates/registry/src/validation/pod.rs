//! Pods and pod templates (upstream `ValidatePodCreate`, `ValidatePodSpec`, `validateContainers`,
//! `ValidateTolerations`, `validateTopologySpreadConstraints` in `pkg/apis/core/validation`).

use kubeplane_api::{PodExt, StoredPod};
use std::fmt::Display;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, PodSpec, Toleration, TopologySpreadConstraint,
};
use kubeplane_core::labels::{is_qualified_name, is_valid_label_value};

use super::affinity::validate_affinity;
use super::meta::{
    check_labels, is_dns1123_label, is_path_segment_name, validate_meta_labelled,
    validate_selector, NameRule,
};
use super::node::TAINT_EFFECTS;
use super::resources::{resource_list, validate_container_resources};
use super::{quote, Check, FieldError};

/// Upstream `ValidatePodCreate`: metadata and a spec.
pub fn validate_pod(p: &StoredPod) -> Check {
    validate_meta_labelled(
        &p.metadata,
        p.labels(),
        "metadata",
        NameRule::PathSegment,
        true,
    )?;
    let Some(spec) = &p.spec else {
        return Err(FieldError::required("spec", ""));
    };
    validate_pod_spec(spec, "spec", false)?;
    // A stored pod's nodeName is kept outside its spec, where validate_pod_spec looks.
    if let Some(n) = p.node_name().filter(|n| !n.is_empty()) {
        is_path_segment_name(n)
            .map_err(|e| FieldError::invalid(join("spec", "nodeName"), quote(n), &e))?;
    }
    Ok(())
}

/// Upstream `ValidatePodSpec` at `path`; a template's pods restart `Always`.
pub fn validate_pod_spec(spec: &PodSpec, path: &str, template: bool) -> Check {
    if spec.containers.is_empty() {
        return Err(FieldError::required(
            join(path, "containers"),
            "a pod needs at least one container",
        ));
    }
    let mut names = Vec::new();
    if let Some(init) = &spec.init_containers {
        validate_containers(init, &Field(&path, "initContainers"), &mut names, true)?;
    }
    validate_containers(
        &spec.containers,
        &Field(&path, "containers"),
        &mut names,
        false,
    )?;
    if spec.overhead.is_some() {
        resource_list(spec.overhead.as_ref(), &join(path, "overhead"))?;
    }
    if let Some(r) = &spec.resources {
        let rp = join(path, "resources");
        resource_list(r.limits.as_ref(), &join(&rp, "limits"))?;
        resource_list(r.requests.as_ref(), &join(&rp, "requests"))?;
    }
    if let Some(tols) = spec.tolerations.as_deref().filter(|t| !t.is_empty()) {
        validate_toleration_list(tols, &Field(&path, "tolerations"))?;
    }
    if spec.node_selector.is_some() {
        check_labels(spec.node_selector.as_ref(), &|| join(path, "nodeSelector"))?;
    }
    if let Some(a) = &spec.affinity {
        validate_affinity(a, &join(path, "affinity"))?;
    }
    for (i, c) in spec
        .topology_spread_constraints
        .iter()
        .flatten()
        .enumerate()
    {
        validate_spread_constraint(c, &format!("{path}.topologySpreadConstraints[{i}]"))?;
    }
    if let Some(g) = spec.termination_grace_period_seconds {
        if g < 0 {
            return Err(FieldError::invalid(
                join(path, "terminationGracePeriodSeconds"),
                g.to_string(),
                "must be greater than or equal to 0",
            ));
        }
    }
    validate_restart_policy(spec.restart_policy.as_deref(), path, template)?;
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        // not a stored pod's spec
        is_path_segment_name(n)
            .map_err(|e| FieldError::invalid(join(path, "nodeName"), quote(n), &e))?;
    }
    Ok(())
}

/// `restartPolicy`: one of the three, and `Always` in a template.
fn validate_restart_policy(policy: Option<&str>, path: &str, template: bool) -> Check {
    let field = || join(path, "restartPolicy");
    match policy {
        None | Some("Always") => Ok(()),
        Some(rp) if template => Err(FieldError::not_supported(field(), rp, &["Always"])),
        Some("OnFailure" | "Never") => Ok(()),
        Some(rp) => Err(FieldError::not_supported(
            field(),
            rp,
            &["Always", "Never", "OnFailure"],
        )),
    }
}

/// Upstream `validateTopologySpreadConstraints` for one constraint.
fn validate_spread_constraint(c: &TopologySpreadConstraint, p: &str) -> Check {
    if c.max_skew <= 0 {
        return Err(FieldError::invalid(
            join(p, "maxSkew"),
            c.max_skew.to_string(),
            "must be greater than zero",
        ));
    }
    if c.topology_key.is_empty() {
        return Err(FieldError::required(
            join(p, "topologyKey"),
            "can not be empty",
        ));
    }
    match c.when_unsatisfiable.as_str() {
        "DoNotSchedule" | "ScheduleAnyway" => {}
        other => {
            return Err(FieldError::not_supported(
                join(p, "whenUnsatisfiable"),
                other,
                &["DoNotSchedule", "ScheduleAnyway"],
            ))
        }
    }
    if let Some(md) = c.min_domains {
        if md <= 0 {
            return Err(FieldError::invalid(
                join(p, "minDomains"),
                md.to_string(),
                "must be greater than zero",
            ));
        }
        if c.when_unsatisfiable != "DoNotSchedule" {
            return Err(FieldError::invalid(
                join(p, "minDomains"),
                md.to_string(),
                &format!(
                    "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {}",
                    c.when_unsatisfiable
                ),
            ));
        }
    }
    for (field, v) in [
        ("nodeAffinityPolicy", &c.node_affinity_policy),
        ("nodeTaintsPolicy", &c.node_taints_policy),
    ] {
        if let Some(v) = v.as_deref() {
            if !matches!(v, "Honor" | "Ignore") {
                return Err(FieldError::not_supported(
                    join(p, field),
                    v,
                    &["Honor", "Ignore"],
                ));
            }
        }
    }
    if let Some(s) = &c.label_selector {
        validate_selector(s, &join(p, "labelSelector"))?;
    }
    Ok(())
}

/// Upstream `ValidateTolerations`.
pub fn validate_tolerations(tols: &[Toleration], path: &str) -> Check {
    validate_toleration_list(tols, &path)
}

/// [`validate_tolerations`] at a path rendered only for an error.
fn validate_toleration_list(tols: &[Toleration], path: &dyn Display) -> Check {
    for (i, t) in tols.iter().enumerate() {
        validate_toleration(t, path, i)?;
    }
    Ok(())
}

/// One toleration, `path[i]` (whose path is built only for an error).
fn validate_toleration(t: &Toleration, path: &dyn Display, i: usize) -> Check {
    let p = &Lazy(path, i);
    let key = t.key.as_deref().unwrap_or("");
    let operator = t.operator.as_deref().unwrap_or("");
    let value = t.value.as_deref().unwrap_or("");
    let effect = t.effect.as_deref().unwrap_or("");
    if !key.is_empty() {
        is_qualified_name(key).map_err(|e| FieldError::invalid(join(p, "key"), quote(key), &e))?;
    }
    if key.is_empty() && operator != "Exists" {
        return Err(FieldError::invalid(
            join(p, "operator"),
            quote(operator),
            "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        ));
    }
    match operator {
        "" | "Equal" => is_valid_label_value(value)
            .map_err(|e| FieldError::invalid(join(p, "value"), quote(value), &e))?,
        "Exists" => {
            if !value.is_empty() {
                return Err(FieldError::invalid(
                    join(p, "operator"),
                    quote(value),
                    "value must be empty when `operator` is 'Exists'",
                ));
            }
        }
        other => {
            return Err(FieldError::not_supported(
                join(p, "operator"),
                other,
                &["Equal", "Exists"],
            ))
        }
    }
    if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
        return Err(FieldError::not_supported(
            join(p, "effect"),
            effect,
            &TAINT_EFFECTS,
        ));
    }
    if t.toleration_seconds.is_some() && effect != "NoExecute" {
        return Err(FieldError::invalid(
            join(p, "effect"),
            quote(effect),
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ));
    }
    Ok(())
}

/// Upstream `validateContainers` and `validateInitContainers`: names unique across both
/// lists (`names`), an image, resources, ports, and a restart policy only on init containers.
fn validate_containers<'a>(
    containers: &'a [Container],
    path: &dyn Display,
    names: &mut Vec<&'a str>,
    init: bool,
) -> Check {
    for (i, c) in containers.iter().enumerate() {
        let p = &Lazy(path, i);
        if c.name.is_empty() {
            return Err(FieldError::required(join(&p, "name"), ""));
        }
        is_dns1123_label(&c.name)
            .map_err(|e| FieldError::invalid(join(&p, "name"), quote(&c.name), &e))?;
        if names.contains(&c.name.as_str()) {
            return Err(FieldError::duplicate(join(&p, "name"), quote(&c.name), ""));
        }
        names.push(&c.name);
        if c.image.as_deref().is_none_or(|s| s.trim().is_empty()) {
            return Err(FieldError::required(join(&p, "image"), ""));
        }
        if let Some(r) = c
            .resources
            .as_ref()
            .filter(|r| r.limits.is_some() || r.requests.is_some())
        {
            validate_container_resources(r, &Field(p, "resources"))?;
        }
        for (j, port) in c.ports.iter().flatten().enumerate() {
            validate_port(port, &Lazy(&Field(p, "ports"), j))?;
        }
        if let Some(rp) = c.restart_policy.as_deref() {
            if !init {
                return Err(FieldError::forbidden(
                    join(&p, "restartPolicy"),
                    "may not be set for non-init containers",
                ));
            }
            if rp != "Always" {
                return Err(FieldError::not_supported(
                    join(&p, "restartPolicy"),
                    rp,
                    &["Always"],
                ));
            }
        }
    }
    Ok(())
}

/// `path[i]`, rendered only when an error needs it.
struct Lazy<'a>(&'a dyn Display, usize);

/// `path.field`, rendered only when an error needs it.
struct Field<'a>(&'a dyn Display, &'static str);

impl Display for Field<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

impl Display for Lazy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}[{}]", self.0, self.1)
    }
}

/// `path.field` of a lazy path.
fn join(p: &(impl Display + ?Sized), field: &str) -> String {
    format!("{p}.{field}")
}

/// Upstream `validateContainerPorts` for one port.
fn validate_port(port: &ContainerPort, pp: &dyn Display) -> Check {
    if !(1..=65535).contains(&port.container_port) {
        return Err(FieldError::invalid(
            join(pp, "containerPort"),
            port.container_port.to_string(),
            "must be between 1 and 65535, inclusive",
        ));
    }
    if let Some(hp) = port.host_port {
        if !(0..=65535).contains(&hp) {
            return Err(FieldError::invalid(
                join(pp, "hostPort"),
                hp.to_string(),
                "must be between 1 and 65535, inclusive",
            ));
        }
    }
    if let Some(proto) = port.protocol.as_deref() {
        if !["TCP", "UDP", "SCTP"].contains(&proto) {
            return Err(FieldError::not_supported(
                join(pp, "protocol"),
                proto,
                &["SCTP", "TCP", "UDP"],
            ));
        }
    }
    Ok(())
}

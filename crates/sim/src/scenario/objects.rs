//! Kubernetes manifests: from a YAML document to a stored [`Object`], rejecting what the API
//! server would reject (upstream `pkg/apis/*/validation`, the parts that matter to what
//! kubeplane simulates) and what would otherwise break the simulation.
//!
//! Messages follow upstream's wording where it exists (`Required value`, `Unsupported value`,
//! `must be less than or equal to cpu limit of 1`), prefixed by the field path.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{
    Affinity, Container, Namespace, Node, NodeSelectorTerm, Pod, PodAffinityTerm, PodSpec,
    PodTemplateSpec, ResourceRequirements, Toleration,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubeplane_core::labels::{from_label_selector, is_qualified_name, is_valid_label_value};
use kubeplane_core::quantity::{parse_quantity, ParsedQuantity};
use kubeplane_core::resources::is_extended_resource_name;
use kubeplane_store::{Kind, Object};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// A problem at a field of a document: the path (`None` for the document as a whole) and what
/// is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldError {
    pub field: Option<String>,
    pub message: String,
}

impl FieldError {
    pub(crate) fn at(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// The same error seen from a containing document: `prefix.field`.
    pub(crate) fn within(mut self, prefix: &str) -> FieldError {
        self.field = Some(match self.field.take() {
            Some(f) if f.starts_with('[') => format!("{prefix}{f}"),
            Some(f) => join(prefix, &f),
            None => prefix.to_string(),
        });
        self
    }
}

type Check = Result<(), FieldError>;

/// `a.b` (or `b` when `a` is empty).
pub(crate) fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// What `Display` of a serde_path_to_error path gives for the root.
pub(crate) fn path_string(path: &serde_path_to_error::Path) -> Option<String> {
    let p = path.to_string();
    (p != "." && !p.is_empty()).then_some(p)
}

/// The kinds a manifest may have, with their apiVersion, as listed in messages.
pub(crate) const SUPPORTED: &str = "v1 Node, Pod, Namespace or List; apps/v1 ReplicaSet or \
     Deployment; scheduling.k8s.io/v1 PriorityClass; policy/v1 PodDisruptionBudget; \
     kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration; kubeplane.io/v1alpha1 Scenario";

/// The stored kind of a manifest `apiVersion`/`kind`, or why it is not one kubeplane takes.
pub(crate) fn manifest_kind(api_version: &str, kind: &str) -> Result<Kind, FieldError> {
    let k = match kind {
        "Node" => Kind::Node,
        "Pod" => Kind::Pod,
        "Namespace" => Kind::Namespace,
        "ReplicaSet" => Kind::ReplicaSet,
        "Deployment" => Kind::Deployment,
        "PriorityClass" => Kind::PriorityClass,
        "PodDisruptionBudget" => Kind::PodDisruptionBudget,
        _ => {
            return Err(FieldError::at(
                "kind",
                format!("unsupported kind {kind:?} (expected one of: {SUPPORTED})"),
            ))
        }
    };
    if api_version != k.api_version() {
        return Err(FieldError::at(
            "apiVersion",
            format!(
                "unsupported apiVersion {api_version:?} for {kind} (expected {:?})",
                k.api_version()
            ),
        ));
    }
    Ok(k)
}

/// Reads one manifest (a mapping whose `apiVersion` and `kind` name a supported kind) and
/// validates it.
pub(crate) fn parse_object(value: &Value) -> Result<Object, FieldError> {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let kind = manifest_kind(api_version, kind)?;
    let obj = match kind {
        Kind::Node => {
            let n: Node = typed(value)?;
            validate_node(&n)?;
            Object::Node(Arc::new(n))
        }
        Kind::Pod => {
            let p: Pod = typed(value)?;
            validate_pod(&p)?;
            Object::Pod(Arc::new(p))
        }
        Kind::Namespace => {
            let n: Namespace = typed(value)?;
            validate_meta(&n.metadata, "metadata", NameRule::Dns1123Label, false)?;
            Object::Namespace(Arc::new(n))
        }
        Kind::ReplicaSet => {
            let rs: ReplicaSet = typed(value)?;
            validate_replica_set(&rs)?;
            Object::ReplicaSet(Arc::new(rs))
        }
        Kind::Deployment => {
            let d: Deployment = typed(value)?;
            validate_deployment(&d)?;
            Object::Deployment(Arc::new(d))
        }
        Kind::PriorityClass => {
            let pc: PriorityClass = typed(value)?;
            validate_priority_class(&pc)?;
            Object::PriorityClass(Arc::new(pc))
        }
        Kind::PodDisruptionBudget => {
            let pdb: PodDisruptionBudget = typed(value)?;
            validate_pdb(&pdb)?;
            Object::PodDisruptionBudget(Arc::new(pdb))
        }
        Kind::Lease | Kind::Other(_) => {
            return Err(FieldError::at(
                "kind",
                format!(
                    "unsupported kind {kind:?} (expected one of: {SUPPORTED})",
                    kind = kind.as_str()
                ),
            ))
        }
    };
    Ok(obj)
}

/// Deserializes with the path of a type error, then rejects fields the type does not have, as
/// `kubectl` does with strict field validation (a typo like `resource:` would otherwise be
/// silently ignored).
fn typed<T: DeserializeOwned + Serialize>(value: &Value) -> Result<T, FieldError> {
    let t: T = serde_path_to_error::deserialize(value.clone()).map_err(|e| FieldError {
        field: path_string(e.path()),
        message: e.inner().to_string(),
    })?;
    let back = serde_json::to_value(&t).map_err(|e| FieldError {
        field: None,
        message: e.to_string(),
    })?;
    if let Some((path, key)) = first_unknown(value, &back, "") {
        return Err(FieldError::at(path, format!("unknown field {key:?}")));
    }
    Ok(t)
}

/// The path and key of the first non-null input field that the typed round trip dropped.
fn first_unknown(input: &Value, known: &Value, path: &str) -> Option<(String, String)> {
    match (input, known) {
        (Value::Object(i), Value::Object(k)) => {
            for (key, v) in i {
                if v.is_null() {
                    continue;
                }
                let p = join(path, key);
                match k.get(key) {
                    None => return Some((p, key.clone())),
                    Some(kv) => {
                        if let Some(found) = first_unknown(v, kv, &p) {
                            return Some(found);
                        }
                    }
                }
            }
            None
        }
        (Value::Array(i), Value::Array(k)) => i
            .iter()
            .zip(k)
            .enumerate()
            .find_map(|(idx, (iv, kv))| first_unknown(iv, kv, &format!("{path}[{idx}]"))),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// metadata

/// How strictly an object name is checked.
#[derive(Copy, Clone, PartialEq, Eq)]
enum NameRule {
    /// Upstream's path-segment rule (no `/` or `%`, not `.` or `..`), which every name must
    /// meet. Upstream also requires DNS-1123 subdomains for most kinds; kubeplane does not,
    /// because scenarios derived from upstream unit tests use names like `nodeA`.
    PathSegment,
    /// Namespaces: a DNS-1123 label, as upstream (namespaces appear in `ns/name` references).
    Dns1123Label,
}

fn is_dns1123_label(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    if b.len() > 63 {
        return Err("must be no more than 63 characters".into());
    }
    if b.is_empty()
        || !b.first().is_some_and(alnum)
        || !b.last().is_some_and(alnum)
        || !b.iter().all(|c| alnum(c) || *c == b'-')
    {
        return Err(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric \
             characters or '-', and must start and end with an alphanumeric character (e.g. \
             'my-name', or '123-abc')"
                .into(),
        );
    }
    Ok(())
}

/// Upstream `IsValidPathSegmentName`, plus no whitespace or control characters and at most
/// 253 characters.
fn is_path_segment_name(s: &str) -> Result<(), String> {
    if s == "." || s == ".." {
        return Err(format!("may not be '{s}'"));
    }
    if let Some(c) = s.chars().find(|c| matches!(c, '/' | '%')) {
        return Err(format!("may not contain '{c}'"));
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("may not contain whitespace or control characters".into());
    }
    if s.len() > 253 {
        return Err("must be no more than 253 characters".into());
    }
    Ok(())
}

fn check_name(rule: NameRule, name: &str) -> Result<(), String> {
    match rule {
        NameRule::PathSegment => is_path_segment_name(name),
        NameRule::Dns1123Label => is_dns1123_label(name),
    }
}

fn validate_meta(m: &ObjectMeta, path: &str, rule: NameRule, namespaced: bool) -> Check {
    match (m.name.as_deref(), m.generate_name.as_deref()) {
        (Some(name), _) if !name.is_empty() => check_name(rule, name).map_err(|e| {
            FieldError::at(join(path, "name"), format!("Invalid value: {name:?}: {e}"))
        })?,
        (_, Some(g)) if !g.is_empty() => {}
        _ => {
            return Err(FieldError::at(
                join(path, "name"),
                "Required value: name or generateName is required",
            ))
        }
    }
    if namespaced {
        if let Some(ns) = m.namespace.as_deref().filter(|ns| !ns.is_empty()) {
            is_dns1123_label(ns).map_err(|e| {
                FieldError::at(
                    join(path, "namespace"),
                    format!("Invalid value: {ns:?}: {e}"),
                )
            })?;
        }
    }
    validate_labels(m.labels.as_ref(), &join(path, "labels"))?;
    for key in m.annotations.iter().flatten().map(|(k, _)| k) {
        is_qualified_name(&key.to_ascii_lowercase()).map_err(|e| {
            FieldError::at(
                join(path, "annotations"),
                format!("Invalid value: {key:?}: {e}"),
            )
        })?;
    }
    validate_annotations_size(m.annotations.as_ref(), &join(path, "annotations"))
}

/// Upstream `TotalAnnotationSizeLimitB`: the keys and values of an object's annotations hold
/// at most 256 KiB in all.
pub(crate) const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;

/// Upstream `ValidateAnnotationsSize`, with its message (`field.TooLong`).
pub(crate) fn validate_annotations_size(
    annotations: Option<&BTreeMap<String, String>>,
    path: &str,
) -> Check {
    let total: usize = annotations
        .into_iter()
        .flatten()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        return Err(FieldError::at(
            path,
            format!("Too long: must have at most {TOTAL_ANNOTATION_SIZE_LIMIT_BYTES} bytes"),
        ));
    }
    Ok(())
}

/// Label keys must be qualified names and values valid label values.
pub(crate) fn validate_labels(labels: Option<&BTreeMap<String, String>>, path: &str) -> Check {
    for (k, v) in labels.into_iter().flatten() {
        is_qualified_name(k)
            .map_err(|e| FieldError::at(path, format!("Invalid value: {k:?}: {e}")))?;
        is_valid_label_value(v)
            .map_err(|e| FieldError::at(path, format!("Invalid value: {v:?} (key {k:?}): {e}")))?;
    }
    Ok(())
}

fn validate_selector(sel: &LabelSelector, path: &str) -> Check {
    from_label_selector(sel)
        .map(|_| ())
        .map_err(|e| FieldError::at(path, format!("Invalid value: {e}")))
}

fn unsupported(path: &str, value: &str, supported: &[&str]) -> FieldError {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    FieldError::at(
        path,
        format!(
            "Unsupported value: {value:?}: supported values: {}",
            list.join(", ")
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// quantities

/// Parses a quantity and requires it to be non-negative.
fn quantity(q: &Quantity, path: &str) -> Result<ParsedQuantity, FieldError> {
    let p = parse_quantity(&q.0).map_err(|e| FieldError::at(path, e.to_string()))?;
    if p.signum() < 0 {
        return Err(FieldError::at(
            path,
            format!(
                "Invalid value: {:?}: must be greater than or equal to 0",
                q.0
            ),
        ));
    }
    Ok(p)
}

fn resource_list(
    list: Option<&BTreeMap<String, Quantity>>,
    path: &str,
) -> Result<BTreeMap<String, ParsedQuantity>, FieldError> {
    let mut out = BTreeMap::new();
    for (name, q) in list.into_iter().flatten() {
        let p = join(path, name);
        if name.is_empty() {
            return Err(FieldError::at(path, "Required value: resource name"));
        }
        out.insert(name.clone(), quantity(q, &p)?);
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

/// Upstream `ValidateResourceRequirements` for a container.
fn validate_container_resources(r: &ResourceRequirements, path: &str) -> Check {
    let limits_path = join(path, "limits");
    let requests_path = join(path, "requests");
    let limits = resource_list(r.limits.as_ref(), &limits_path)?;
    let requests = resource_list(r.requests.as_ref(), &requests_path)?;
    for (list, lpath) in [(&limits, &limits_path), (&requests, &requests_path)] {
        for name in list.keys() {
            if !is_standard_container_resource(name) && !is_extended_resource_name(name) {
                if !name.contains('/') {
                    return Err(FieldError::at(
                        join(lpath, name),
                        format!(
                            "Invalid value: {name:?}: must be a standard resource for containers"
                        ),
                    ));
                }
                is_qualified_name(name).map_err(|e| {
                    FieldError::at(join(lpath, name), format!("Invalid value: {name:?}: {e}"))
                })?;
            }
        }
    }
    for (name, req) in &requests {
        let req_text = r
            .requests
            .as_ref()
            .and_then(|m| m.get(name))
            .map(|q| q.0.as_str())
            .unwrap_or("");
        match limits.get(name) {
            Some(lim) => {
                let lim_text = r
                    .limits
                    .as_ref()
                    .and_then(|m| m.get(name))
                    .map(|q| q.0.as_str())
                    .unwrap_or("");
                if req != lim && !overcommit_allowed(name) {
                    return Err(FieldError::at(
                        join(&requests_path, name),
                        format!(
                            "Invalid value: {req_text:?}: must be equal to {name} limit of {lim_text}"
                        ),
                    ));
                }
                if req > lim {
                    return Err(FieldError::at(
                        join(&requests_path, name),
                        format!(
                            "Invalid value: {req_text:?}: must be less than or equal to {name} limit of {lim_text}"
                        ),
                    ));
                }
            }
            None if !overcommit_allowed(name) => {
                return Err(FieldError::at(
                    join(&limits_path, name),
                    "Required value: Limit must be set for non overcommitable resources",
                ));
            }
            None => {}
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// pods

const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// Whether a taint effect is one of the three.
pub(crate) fn check_taint_effect(effect: &str, path: &str) -> Check {
    if effect.is_empty() {
        return Err(FieldError::at(path, "Required value"));
    }
    if !TAINT_EFFECTS.contains(&effect) {
        return Err(unsupported(path, effect, &TAINT_EFFECTS));
    }
    Ok(())
}

/// Upstream `validateTaints` for one taint's key, value and effect.
pub(crate) fn check_taint(key: &str, value: Option<&str>, effect: &str, path: &str) -> Check {
    if key.is_empty() {
        return Err(FieldError::at(join(path, "key"), "Required value"));
    }
    is_qualified_name(key)
        .map_err(|e| FieldError::at(join(path, "key"), format!("Invalid value: {key:?}: {e}")))?;
    if let Some(v) = value {
        is_valid_label_value(v).map_err(|e| {
            FieldError::at(join(path, "value"), format!("Invalid value: {v:?}: {e}"))
        })?;
    }
    check_taint_effect(effect, &join(path, "effect"))
}

fn validate_tolerations(tols: &[Toleration], path: &str) -> Check {
    for (i, t) in tols.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let key = t.key.as_deref().unwrap_or("");
        let operator = t.operator.as_deref().unwrap_or("");
        let value = t.value.as_deref().unwrap_or("");
        let effect = t.effect.as_deref().unwrap_or("");
        if !key.is_empty() {
            is_qualified_name(key).map_err(|e| {
                FieldError::at(join(&p, "key"), format!("Invalid value: {key:?}: {e}"))
            })?;
        }
        if key.is_empty() && operator != "Exists" {
            return Err(FieldError::at(
                join(&p, "operator"),
                format!(
                    "Invalid value: {operator:?}: operator must be Exists when `key` is empty, \
                     which means \"match all values and all keys\""
                ),
            ));
        }
        match operator {
            "" | "Equal" => is_valid_label_value(value).map_err(|e| {
                FieldError::at(join(&p, "value"), format!("Invalid value: {value:?}: {e}"))
            })?,
            "Exists" => {
                if !value.is_empty() {
                    return Err(FieldError::at(
                        join(&p, "operator"),
                        format!(
                            "Invalid value: {value:?}: value must be empty when `operator` is 'Exists'"
                        ),
                    ));
                }
            }
            other => {
                return Err(unsupported(
                    &join(&p, "operator"),
                    other,
                    &["Equal", "Exists"],
                ))
            }
        }
        if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
            return Err(unsupported(&join(&p, "effect"), effect, &TAINT_EFFECTS));
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            return Err(FieldError::at(
                join(&p, "effect"),
                format!(
                    "Invalid value: {effect:?}: effect must be 'NoExecute' when `tolerationSeconds` is set"
                ),
            ));
        }
    }
    Ok(())
}

fn validate_containers(
    containers: &[Container],
    path: &str,
    names: &mut BTreeSet<String>,
    init: bool,
) -> Check {
    for (i, c) in containers.iter().enumerate() {
        let p = format!("{path}[{i}]");
        if c.name.is_empty() {
            return Err(FieldError::at(join(&p, "name"), "Required value"));
        }
        is_dns1123_label(&c.name).map_err(|e| {
            FieldError::at(
                join(&p, "name"),
                format!("Invalid value: {:?}: {e}", c.name),
            )
        })?;
        if !names.insert(c.name.clone()) {
            return Err(FieldError::at(
                join(&p, "name"),
                format!("Duplicate value: {:?}", c.name),
            ));
        }
        if c.image.as_deref().is_none_or(|s| s.trim().is_empty()) {
            return Err(FieldError::at(join(&p, "image"), "Required value"));
        }
        if let Some(r) = &c.resources {
            validate_container_resources(r, &join(&p, "resources"))?;
        }
        for (j, port) in c.ports.iter().flatten().enumerate() {
            let pp = format!("{p}.ports[{j}]");
            if !(1..=65535).contains(&port.container_port) {
                return Err(FieldError::at(
                    join(&pp, "containerPort"),
                    format!(
                        "Invalid value: {}: must be between 1 and 65535, inclusive",
                        port.container_port
                    ),
                ));
            }
            if let Some(hp) = port.host_port {
                if !(0..=65535).contains(&hp) {
                    return Err(FieldError::at(
                        join(&pp, "hostPort"),
                        format!("Invalid value: {hp}: must be between 1 and 65535, inclusive"),
                    ));
                }
            }
            if let Some(proto) = port.protocol.as_deref() {
                if !["TCP", "UDP", "SCTP"].contains(&proto) {
                    return Err(unsupported(
                        &join(&pp, "protocol"),
                        proto,
                        &["SCTP", "TCP", "UDP"],
                    ));
                }
            }
        }
        if let Some(rp) = c.restart_policy.as_deref() {
            if !init {
                return Err(FieldError::at(
                    join(&p, "restartPolicy"),
                    "Forbidden: may not be set for non-init containers",
                ));
            }
            if rp != "Always" {
                return Err(unsupported(&join(&p, "restartPolicy"), rp, &["Always"]));
            }
        }
    }
    Ok(())
}

fn validate_node_selector_term(t: &NodeSelectorTerm, path: &str) -> Check {
    for (i, r) in t.match_expressions.iter().flatten().enumerate() {
        let p = format!("{path}.matchExpressions[{i}]");
        is_qualified_name(&r.key).map_err(|e| {
            FieldError::at(join(&p, "key"), format!("Invalid value: {:?}: {e}", r.key))
        })?;
        let n = r.values.as_ref().map_or(0, Vec::len);
        match r.operator.as_str() {
            "In" | "NotIn" if n == 0 => {
                return Err(FieldError::at(
                    join(&p, "values"),
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                ))
            }
            "Exists" | "DoesNotExist" if n > 0 => {
                return Err(FieldError::at(
                    join(&p, "values"),
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ))
            }
            "Gt" | "Lt" if n != 1 => return Err(FieldError::at(
                join(&p, "values"),
                "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            other => {
                return Err(unsupported(
                    &join(&p, "operator"),
                    other,
                    &["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"],
                ))
            }
        }
    }
    for (i, r) in t.match_fields.iter().flatten().enumerate() {
        let p = format!("{path}.matchFields[{i}]");
        if r.key != "metadata.name" {
            return Err(unsupported(&join(&p, "key"), &r.key, &["metadata.name"]));
        }
        if !matches!(r.operator.as_str(), "In" | "NotIn") {
            return Err(unsupported(
                &join(&p, "operator"),
                &r.operator,
                &["In", "NotIn"],
            ));
        }
        if r.values.as_ref().map_or(0, Vec::len) != 1 {
            return Err(FieldError::at(
                join(&p, "values"),
                "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            ));
        }
    }
    Ok(())
}

fn validate_pod_affinity_term(t: &PodAffinityTerm, path: &str) -> Check {
    if t.topology_key.is_empty() {
        return Err(FieldError::at(
            join(path, "topologyKey"),
            "Required value: can not be empty",
        ));
    }
    is_qualified_name(&t.topology_key).map_err(|e| {
        FieldError::at(
            join(path, "topologyKey"),
            format!("Invalid value: {:?}: {e}", t.topology_key),
        )
    })?;
    if let Some(s) = &t.label_selector {
        validate_selector(s, &join(path, "labelSelector"))?;
    }
    if let Some(s) = &t.namespace_selector {
        validate_selector(s, &join(path, "namespaceSelector"))?;
    }
    Ok(())
}

fn validate_affinity(a: &Affinity, path: &str) -> Check {
    if let Some(na) = &a.node_affinity {
        let p = join(path, "nodeAffinity");
        if let Some(req) = &na.required_during_scheduling_ignored_during_execution {
            let rp = join(&p, "requiredDuringSchedulingIgnoredDuringExecution");
            if req.node_selector_terms.is_empty() {
                return Err(FieldError::at(
                    join(&rp, "nodeSelectorTerms"),
                    "Required value: must have at least one node selector term",
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
    }
    for (name, pa) in [
        (
            "podAffinity",
            a.pod_affinity.as_ref().map(|x| {
                (
                    &x.required_during_scheduling_ignored_during_execution,
                    &x.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
        (
            "podAntiAffinity",
            a.pod_anti_affinity.as_ref().map(|x| {
                (
                    &x.required_during_scheduling_ignored_during_execution,
                    &x.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
    ] {
        let Some((required, preferred)) = pa else {
            continue;
        };
        let p = join(path, name);
        for (i, t) in required.iter().flatten().enumerate() {
            validate_pod_affinity_term(
                t,
                &format!("{p}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"),
            )?;
        }
        for (i, w) in preferred.iter().flatten().enumerate() {
            let wp = format!("{p}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
            check_weight(w.weight, &wp)?;
            validate_pod_affinity_term(&w.pod_affinity_term, &join(&wp, "podAffinityTerm"))?;
        }
    }
    Ok(())
}

fn check_weight(weight: i32, path: &str) -> Check {
    if !(1..=100).contains(&weight) {
        return Err(FieldError::at(
            join(path, "weight"),
            format!("Invalid value: {weight}: must be in the range 1-100"),
        ));
    }
    Ok(())
}

fn validate_pod_spec(spec: &PodSpec, path: &str, template: bool) -> Check {
    if spec.containers.is_empty() {
        return Err(FieldError::at(
            join(path, "containers"),
            "Required value: a pod needs at least one container",
        ));
    }
    let mut names = BTreeSet::new();
    if let Some(init) = &spec.init_containers {
        validate_containers(init, &join(path, "initContainers"), &mut names, true)?;
    }
    validate_containers(
        &spec.containers,
        &join(path, "containers"),
        &mut names,
        false,
    )?;
    resource_list(spec.overhead.as_ref(), &join(path, "overhead"))?;
    if let Some(r) = &spec.resources {
        let rp = join(path, "resources");
        resource_list(r.limits.as_ref(), &join(&rp, "limits"))?;
        resource_list(r.requests.as_ref(), &join(&rp, "requests"))?;
    }
    validate_tolerations(
        spec.tolerations.as_deref().unwrap_or_default(),
        &join(path, "tolerations"),
    )?;
    validate_labels(spec.node_selector.as_ref(), &join(path, "nodeSelector"))?;
    if let Some(a) = &spec.affinity {
        validate_affinity(a, &join(path, "affinity"))?;
    }
    for (i, c) in spec
        .topology_spread_constraints
        .iter()
        .flatten()
        .enumerate()
    {
        let p = format!("{path}.topologySpreadConstraints[{i}]");
        if c.max_skew <= 0 {
            return Err(FieldError::at(
                join(&p, "maxSkew"),
                format!("Invalid value: {}: must be greater than zero", c.max_skew),
            ));
        }
        if c.topology_key.is_empty() {
            return Err(FieldError::at(
                join(&p, "topologyKey"),
                "Required value: can not be empty",
            ));
        }
        match c.when_unsatisfiable.as_str() {
            "DoNotSchedule" | "ScheduleAnyway" => {}
            other => {
                return Err(unsupported(
                    &join(&p, "whenUnsatisfiable"),
                    other,
                    &["DoNotSchedule", "ScheduleAnyway"],
                ))
            }
        }
        if let Some(md) = c.min_domains {
            if md <= 0 {
                return Err(FieldError::at(
                    join(&p, "minDomains"),
                    format!("Invalid value: {md}: must be greater than zero"),
                ));
            }
            if c.when_unsatisfiable != "DoNotSchedule" {
                return Err(FieldError::at(
                    join(&p, "minDomains"),
                    format!(
                        "Invalid value: {md}: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {}",
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
                    return Err(unsupported(&join(&p, field), v, &["Honor", "Ignore"]));
                }
            }
        }
        if let Some(s) = &c.label_selector {
            validate_selector(s, &join(&p, "labelSelector"))?;
        }
    }
    if let Some(g) = spec.termination_grace_period_seconds {
        if g < 0 {
            return Err(FieldError::at(
                join(path, "terminationGracePeriodSeconds"),
                format!("Invalid value: {g}: must be greater than or equal to 0"),
            ));
        }
    }
    match spec.restart_policy.as_deref() {
        None | Some("Always") => {}
        Some(rp) if template => {
            return Err(unsupported(&join(path, "restartPolicy"), rp, &["Always"]));
        }
        Some("OnFailure" | "Never") => {}
        Some(rp) => {
            return Err(unsupported(
                &join(path, "restartPolicy"),
                rp,
                &["Always", "Never", "OnFailure"],
            ))
        }
    }
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        is_path_segment_name(n).map_err(|e| {
            FieldError::at(join(path, "nodeName"), format!("Invalid value: {n:?}: {e}"))
        })?;
    }
    Ok(())
}

fn validate_pod(p: &Pod) -> Check {
    validate_meta(&p.metadata, "metadata", NameRule::PathSegment, true)?;
    let Some(spec) = &p.spec else {
        return Err(FieldError::at("spec", "Required value"));
    };
    validate_pod_spec(spec, "spec", false)
}

// ---------------------------------------------------------------------------------------------
// nodes

fn validate_node(n: &Node) -> Check {
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
            return Err(FieldError::at(
                p,
                format!(
                    "Duplicate value: {:?}: taints must be unique by key and effect pair",
                    t.key
                ),
            ));
        }
    }
    if let Some(status) = &n.status {
        resource_list(status.capacity.as_ref(), "status.capacity")?;
        resource_list(status.allocatable.as_ref(), "status.allocatable")?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// workloads

/// The most replicas one ReplicaSet or Deployment may ask for, and the most the workloads of
/// the initial state may ask for in all: upstream's scalability threshold of 150,000 pods per
/// cluster. Upstream accepts any `int32`; kubeplane keeps every pod in memory (about 11 KB
/// each), so a count beyond any real cluster is an input error rather than a run that takes
/// gigabytes (docs/compatibility.md).
pub(crate) const MAX_REPLICAS: i32 = 150_000;

/// `replicas`: non-negative and at most [`MAX_REPLICAS`].
pub(crate) fn check_replicas(v: Option<i32>, path: &str) -> Check {
    non_negative(v, path)?;
    match v {
        Some(v) if v > MAX_REPLICAS => Err(FieldError::at(
            path,
            format!(
                "Invalid value: {v}: must be less than or equal to {MAX_REPLICAS} (kubeplane simulates clusters of at most 150,000 pods, upstream's scalability threshold)"
            ),
        )),
        _ => Ok(()),
    }
}

fn non_negative(v: Option<i32>, path: &str) -> Check {
    match v {
        Some(v) if v < 0 => Err(FieldError::at(
            path,
            format!("Invalid value: {v}: must be greater than or equal to 0"),
        )),
        _ => Ok(()),
    }
}

/// A workload's selector must be valid, non-empty and match its template's labels.
fn validate_workload(
    selector: &LabelSelector,
    template: Option<&PodTemplateSpec>,
    what: &str,
) -> Check {
    let compiled = from_label_selector(selector)
        .map_err(|e| FieldError::at("spec.selector", format!("Invalid value: {e}")))?;
    if compiled.is_empty() {
        return Err(FieldError::at(
            "spec.selector",
            format!("Invalid value: empty selector is invalid for {what}"),
        ));
    }
    let Some(template) = template else {
        return Err(FieldError::at("spec.template", "Required value"));
    };
    let empty = BTreeMap::new();
    let labels = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref())
        .unwrap_or(&empty);
    if let Some(m) = &template.metadata {
        validate_labels(m.labels.as_ref(), "spec.template.metadata.labels")?;
        validate_annotations_size(m.annotations.as_ref(), "spec.template.metadata.annotations")?;
    }
    if !compiled.matches(labels) {
        return Err(FieldError::at(
            "spec.template.metadata.labels",
            format!(
                "Invalid value: {:?}: `selector` does not match template `labels`",
                labels_string(labels)
            ),
        ));
    }
    let Some(spec) = &template.spec else {
        return Err(FieldError::at("spec.template.spec", "Required value"));
    };
    validate_pod_spec(spec, "spec.template.spec", true)
}

fn labels_string(labels: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.join(",")
}

fn validate_replica_set(rs: &ReplicaSet) -> Check {
    validate_meta(&rs.metadata, "metadata", NameRule::PathSegment, true)?;
    let Some(spec) = &rs.spec else {
        return Err(FieldError::at("spec", "Required value"));
    };
    check_replicas(spec.replicas, "spec.replicas")?;
    non_negative(spec.min_ready_seconds, "spec.minReadySeconds")?;
    validate_workload(&spec.selector, spec.template.as_ref(), "replicaset")
}

fn validate_deployment(d: &Deployment) -> Check {
    validate_meta(&d.metadata, "metadata", NameRule::PathSegment, true)?;
    let Some(spec) = &d.spec else {
        return Err(FieldError::at("spec", "Required value"));
    };
    check_replicas(spec.replicas, "spec.replicas")?;
    non_negative(spec.min_ready_seconds, "spec.minReadySeconds")?;
    non_negative(spec.revision_history_limit, "spec.revisionHistoryLimit")?;
    if let Some(pd) = spec.progress_deadline_seconds {
        if pd <= spec.min_ready_seconds.unwrap_or(0) {
            return Err(FieldError::at(
                "spec.progressDeadlineSeconds",
                format!("Invalid value: {pd}: must be greater than minReadySeconds"),
            ));
        }
    }
    if let Some(strategy) = &spec.strategy {
        match strategy.type_.as_deref() {
            None | Some("RollingUpdate") => {
                if let Some(ru) = &strategy.rolling_update {
                    let surge = int_or_percent(
                        ru.max_surge.as_ref(),
                        "spec.strategy.rollingUpdate.maxSurge",
                    )?;
                    let unavailable = int_or_percent(
                        ru.max_unavailable.as_ref(),
                        "spec.strategy.rollingUpdate.maxUnavailable",
                    )?;
                    if surge == Some(0) && unavailable == Some(0) {
                        return Err(FieldError::at(
                            "spec.strategy.rollingUpdate.maxUnavailable",
                            "Invalid value: 0: may not be 0 when `maxSurge` is 0",
                        ));
                    }
                    if let Some(IntOrString::String(_)) = &ru.max_unavailable {
                        if unavailable.is_some_and(|u| u > 100) {
                            return Err(FieldError::at(
                                "spec.strategy.rollingUpdate.maxUnavailable",
                                "Invalid value: must not be greater than 100%",
                            ));
                        }
                    }
                }
            }
            Some("Recreate") => {
                if strategy.rolling_update.is_some() {
                    return Err(FieldError::at(
                        "spec.strategy.rollingUpdate",
                        "Forbidden: may not be specified when strategy `type` is 'Recreate'",
                    ));
                }
            }
            Some(other) => {
                return Err(unsupported(
                    "spec.strategy.type",
                    other,
                    &["Recreate", "RollingUpdate"],
                ))
            }
        }
    }
    validate_workload(&spec.selector, Some(&spec.template), "deployment")
}

/// An IntOrString that is a non-negative integer or a percentage `N%`; returns the number.
fn int_or_percent(v: Option<&IntOrString>, path: &str) -> Result<Option<i64>, FieldError> {
    match v {
        None => Ok(None),
        Some(IntOrString::Int(i)) => {
            if *i < 0 {
                return Err(FieldError::at(
                    path,
                    format!("Invalid value: {i}: must be greater than or equal to 0"),
                ));
            }
            Ok(Some(i64::from(*i)))
        }
        Some(IntOrString::String(s)) => {
            let n = s
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<i64>().ok())
                .ok_or_else(|| {
                    FieldError::at(
                        path,
                        format!(
                            "Invalid value: {s:?}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%')"
                        ),
                    )
                })?;
            Ok(Some(n))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// scheduling and policy

/// Upstream `HighestUserDefinablePriority`.
const HIGHEST_USER_DEFINABLE_PRIORITY: i32 = 1_000_000_000;

fn validate_priority_class(pc: &PriorityClass) -> Check {
    validate_meta(&pc.metadata, "metadata", NameRule::PathSegment, false)?;
    let system = pc
        .metadata
        .name
        .as_deref()
        .is_some_and(|n| n.starts_with("system-"));
    if !system && pc.value > HIGHEST_USER_DEFINABLE_PRIORITY {
        return Err(FieldError::at(
            "value",
            format!(
                "Forbidden: maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    if let Some(p) = pc.preemption_policy.as_deref() {
        if !matches!(p, "Never" | "PreemptLowerPriority") {
            return Err(unsupported(
                "preemptionPolicy",
                p,
                &["Never", "PreemptLowerPriority"],
            ));
        }
    }
    Ok(())
}

fn validate_pdb(pdb: &PodDisruptionBudget) -> Check {
    validate_meta(&pdb.metadata, "metadata", NameRule::PathSegment, true)?;
    let Some(spec) = &pdb.spec else {
        return Ok(());
    };
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        return Err(FieldError::at(
            "spec",
            "Invalid value: minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (field, v) in [
        ("spec.minAvailable", &spec.min_available),
        ("spec.maxUnavailable", &spec.max_unavailable),
    ] {
        if let Some(n) = int_or_percent(v.as_ref(), field)? {
            if matches!(v, Some(IntOrString::String(_))) && n > 100 {
                return Err(FieldError::at(
                    field,
                    "Invalid value: must not be greater than 100%",
                ));
            }
        }
    }
    if let Some(s) = &spec.selector {
        validate_selector(s, "spec.selector")?;
    }
    if let Some(p) = spec.unhealthy_pod_eviction_policy.as_deref() {
        if !matches!(p, "IfHealthyBudget" | "AlwaysAllow") {
            return Err(unsupported(
                "spec.unhealthyPodEvictionPolicy",
                p,
                &["AlwaysAllow", "IfHealthyBudget"],
            ));
        }
    }
    Ok(())
}

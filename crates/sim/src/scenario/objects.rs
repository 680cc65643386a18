//! Kubernetes manifests: from a YAML document to an [`Object`]. This module reads (the kind,
//! typed decoding, unknown fields); the API server's validation of the object is the
//! registry's ([`kubeplane_registry::validation`]), whose first error names the field.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kubeplane_api::{DynamicObject, StoredNode};
use kubeplane_registry::validation::{self, validate_create};
use kubeplane_store::{Kind, Object};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::crds::{Crds, Lookup};

/// A problem at a field of a document: the path (`None` for the document as a whole) and what
/// is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
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

impl From<validation::FieldError> for FieldError {
    fn from(e: validation::FieldError) -> Self {
        FieldError {
            message: e.body(),
            field: Some(e.field),
        }
    }
}

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
     coordination.k8s.io/v1 Lease; any other built-in kind of Kubernetes v1.34 or a custom \
     resource whose CustomResourceDefinition is in the input (stored, not simulated); kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration; \
     kubeplane.io/v1alpha1 Scenario";

/// The stored kind of a manifest `apiVersion`/`kind`, or why it is not one kubeplane takes:
/// the kinds it simulates, every other built-in kind of Kubernetes v1.34, and the custom
/// resources a CustomResourceDefinition of the input defines (stored, not simulated).
pub(crate) fn manifest_kind(
    api_version: &str,
    kind: &str,
    crds: &Crds,
) -> Result<Kind, FieldError> {
    if let Some(k) = Kind::from_manifest(api_version, kind) {
        return Ok(k);
    }
    if let Some(k) = Kind::ALL.into_iter().find(|k| k.as_str() == kind) {
        return Err(FieldError::at(
            "apiVersion",
            format!(
                "unsupported apiVersion {api_version:?} for {kind} (expected {:?})",
                k.api_version()
            ),
        ));
    }
    match crds.lookup(api_version, kind) {
        Lookup::Served(t) => Ok(Kind::Other(t)),
        Lookup::NotServed { served, crd } => Err(FieldError::at(
            "apiVersion",
            format!(
                "no matches for kind {kind:?} in version {api_version:?} (the \
                 CustomResourceDefinition {crd} serves {})",
                match served.as_slice() {
                    [] => "no version".to_string(),
                    versions => versions.join(", "),
                }
            ),
        )),
        Lookup::Unknown => Err(FieldError::at(
            "kind",
            format!(
                "unsupported kind {kind:?} of apiVersion {api_version:?}: not a built-in kind of \
                 Kubernetes v1.34, and no CustomResourceDefinition in the input defines it \
                 (expected one of: {SUPPORTED})"
            ),
        )),
    }
}

/// Reads one manifest (a mapping whose `apiVersion` and `kind` name a supported kind) and
/// validates it as the API server would on create.
pub(crate) fn parse_object(value: &Value, crds: &Crds) -> Result<Object, FieldError> {
    decode_with(value, true, crds).map(|(obj, _)| obj)
}

/// Decodes one object as the API server decodes a request body, and validates it as on create.
/// With `strict` (`fieldValidation=Strict`) a field the kind does not have is an error; without,
/// it is dropped and named in the returned warnings (`unknown field "spec.foo"`), as
/// `fieldValidation=Warn` does. Custom resources are not known here (no definitions).
pub fn decode_object(value: &Value, strict: bool) -> Result<(Object, Vec<String>), FieldError> {
    decode_with(value, strict, &Crds::default())
}

/// [`decode_object`] with the custom resource types of an input.
fn decode_with(
    value: &Value,
    strict: bool,
    crds: &Crds,
) -> Result<(Object, Vec<String>), FieldError> {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let kind = manifest_kind(api_version, kind, crds)?;
    let mut warnings = Vec::new();
    let w = &mut warnings;
    let obj = match kind {
        Kind::Node => Object::Node(Arc::new(typed_node(value, strict, w)?)),
        Kind::Pod => Object::Pod(Arc::new(typed::<Pod>(value, strict, w)?.into())),
        Kind::Namespace => Object::Namespace(Arc::new(typed::<Namespace>(value, strict, w)?)),
        Kind::ReplicaSet => {
            Object::ReplicaSet(Arc::new(typed::<ReplicaSet>(value, strict, w)?.into()))
        }
        Kind::Deployment => {
            Object::Deployment(Arc::new(typed::<Deployment>(value, strict, w)?.into()))
        }
        Kind::PriorityClass => {
            Object::PriorityClass(Arc::new(typed::<PriorityClass>(value, strict, w)?))
        }
        Kind::PodDisruptionBudget => {
            Object::PodDisruptionBudget(Arc::new(typed::<PodDisruptionBudget>(value, strict, w)?))
        }
        Kind::Lease => Object::Lease(Arc::new(typed::<Lease>(value, strict, w)?)),
        Kind::Other(t) => Object::Other(Arc::new(
            DynamicObject::from_value(t, value)
                .map_err(|e| FieldError::at("metadata", format!("invalid metadata: {e}")))?,
        )),
    };
    if let Err(errs) = validate_create(&obj) {
        if let Some(first) = errs.0.into_iter().next() {
            return Err(first.into());
        }
    }
    Ok((obj, warnings))
}

/// Deserializes with the path of a type error, then looks for fields the type does not have:
/// an error when `strict`, as `kubectl` does with strict field validation (a typo like
/// `resource:` would otherwise be silently ignored), else a warning.
fn typed<T: DeserializeOwned + Serialize>(
    value: &Value,
    strict: bool,
    warnings: &mut Vec<String>,
) -> Result<T, FieldError> {
    let t: T = serde_path_to_error::deserialize(value.clone()).map_err(|e| FieldError {
        field: path_string(e.path()),
        message: e.inner().to_string(),
    })?;
    let back = serde_json::to_value(&t).map_err(|e| FieldError {
        field: None,
        message: e.to_string(),
    })?;
    if let Some((path, key)) = first_unknown(value, &back, "") {
        if strict {
            return Err(FieldError::at(path, format!("unknown field {key:?}")));
        }
        warnings.push(format!("unknown field {path:?}"));
    }
    Ok(t)
}

/// A Node manifest: k8s-openapi's v1.34 `Node`, plus `status.declaredFeatures` (v1.35), which
/// that type lacks ([`StoredNode`]). The other fields are read, and checked for unknown ones, as
/// every typed kind's.
fn typed_node(
    value: &Value,
    strict: bool,
    warnings: &mut Vec<String>,
) -> Result<StoredNode, FieldError> {
    let mut rest = value.clone();
    let declared = rest
        .get_mut("status")
        .and_then(Value::as_object_mut)
        .and_then(|status| status.remove("declaredFeatures"));
    let declared_features = match declared {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            serde_json::from_value::<Vec<String>>(v)
                .map_err(|e| FieldError::at("status.declaredFeatures", e.to_string()))?,
        ),
    };
    Ok(StoredNode {
        node: typed::<Node>(&rest, strict, warnings)?,
        declared_features,
        heartbeats_of: None,
    })
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

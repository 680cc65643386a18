//! What the verbs do differently for a custom resource: a body is decoded at any served
//! version and stored at the storage version, pruned and validated against the version's
//! schema (with `fieldValidation`'s warnings or errors for pruned fields), and the `scale`
//! subresource reads and writes the paths the definition names.

use std::sync::Arc;

use kubeplane_api::{ApiError, Client, DynamicObject, Object, ObjectKey};
use kubeplane_registry::validation::FieldError;
use kubeplane_registry::StorageClient;
use serde_json::{json, Value};

use super::{columns, schema, Served};
use crate::request::{Query, ResourceRequest};
use crate::status::StatusError;

/// Upstream's `NewInvalid` for a custom resource: `Widget.example.com "w" is invalid: ...`,
/// each error a cause.
fn invalid(s: &Served, name: &str, errs: &[FieldError]) -> StatusError {
    let errors = kubeplane_registry::validation::FieldErrors(errs.to_vec());
    let causes: Vec<Value> = errs
        .iter()
        .map(|e| json!({"reason": e.type_.cause_type(), "message": e.body(), "field": e.field}))
        .collect();
    let t = &s.def.type_;
    StatusError {
        details: Some(json!({"name": name, "group": t.group, "kind": t.kind, "causes": causes})),
        ..StatusError::new(
            422,
            "Invalid",
            format!("{}.{} {name:?} is invalid: {errors}", t.kind, t.group),
        )
    }
}

/// Decodes a custom resource's body (JSON as the client sent it, or a patched object):
/// the version must be served, the object is stored at the storage version, pruned and
/// validated against the schema of the version it was written at.
pub fn decode(
    req: &ResourceRequest,
    s: &Served,
    body: &Value,
    q: &Query,
) -> Result<(Object, Vec<String>), StatusError> {
    let t = &s.def.type_;
    let mut body = body.clone();
    let Some(m) = body.as_object_mut() else {
        return Err(StatusError::bad_request("the body is not a JSON object"));
    };
    for (field, value) in [("apiVersion", req.api_version()), ("kind", t.kind.clone())] {
        if m.get(field)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            m.insert(field.to_string(), value.into());
        }
    }
    let kind_in_body = m.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind_in_body != t.kind {
        return Err(StatusError::bad_request(format!(
            "the kind in the data ({kind_in_body}) does not match the expected kind ({})",
            t.kind
        )));
    }
    let api_version = m.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let version = api_version
        .strip_prefix(&format!("{}/", t.group))
        .filter(|v| s.def.served.iter().any(|s| s == v))
        .map(str::to_string)
        .ok_or_else(|| {
            StatusError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                req.api_version()
            ))
        })?;
    m.insert("apiVersion".into(), s.type_.api_version.into());
    let name = body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let warnings = check_schema(s, &version, &mut body, q, &name)?;
    let mut obj = DynamicObject::from_value(s.type_, &body)
        .map_err(|e| StatusError::bad_request(format!("invalid metadata: {e}")))?;
    if t.namespaced {
        match obj.metadata.namespace.as_deref() {
            None | Some("") => obj.metadata.namespace = Some(req.namespace.clone()),
            Some(ns) if !req.namespace.is_empty() && ns != req.namespace => {
                return Err(StatusError::bad_request("the namespace of the provided object does not match the namespace sent on the request"));
            }
            Some(_) => {}
        }
    } else {
        obj.metadata.namespace = None;
    }
    Ok((Object::Other(Arc::new(obj)), warnings))
}

/// Prunes a body with the schema of the version it was written at and validates it; the
/// `fieldValidation` warnings of the pruned fields (Strict: a 400 instead).
fn check_schema(
    s: &Served,
    version: &str,
    body: &mut Value,
    q: &Query,
    name: &str,
) -> Result<Vec<String>, StatusError> {
    let Some(schema) = s.schema(version) else {
        return Ok(Vec::new());
    };
    let unknown = schema::prune(schema, body);
    let fields: Vec<String> = unknown
        .iter()
        .map(|p| format!("unknown field {p:?}"))
        .collect();
    let kind = &s.def.type_.kind;
    let warnings = match q.get("fieldValidation") {
        Some("Strict") if !fields.is_empty() => {
            return Err(StatusError::bad_request(format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
                fields.join(", ")
            )));
        }
        Some("Ignore") => Vec::new(),
        _ => fields,
    };
    let errs = schema::validate(schema, body, "");
    if !errs.is_empty() {
        return Err(invalid(s, name, &errs));
    }
    Ok(warnings)
}

/// The scale subresource's settings at the request's version, or 404.
pub fn scale_spec(req: &ResourceRequest, s: &Served) -> Result<Value, StatusError> {
    columns::scale_spec(s, &req.version).ok_or_else(StatusError::not_found_path)
}

/// A status subresource request of a type whose definition has none is not found.
pub fn check_subresource(req: &ResourceRequest, s: &Served) -> Result<(), StatusError> {
    match req.subresource.as_deref() {
        None => Ok(()),
        Some(sub @ ("status" | "scale")) if s.subresource(&req.version, sub).is_some() => Ok(()),
        Some(_) => Err(StatusError::not_found_path()),
    }
}

/// Writes `replicas` at the definition's `specReplicasPath` of the current object (with the
/// Scale's resourceVersion as precondition when it names one); the Scale after the write.
pub fn update_scale(
    c: &mut StorageClient,
    spec: &Value,
    s: &Served,
    key: &ObjectKey,
    replicas: i64,
    rv: Option<&str>,
) -> Result<Value, ApiError> {
    let current = c.get(key)?;
    let mut v = columns::with_replicas(spec, &current.to_json(), replicas);
    if let Some(rv) = rv {
        v["metadata"]["resourceVersion"] = rv.into();
    }
    let obj = DynamicObject::from_value(s.type_, &v).map_err(|e| ApiError::Internal {
        message: e.to_string(),
    })?;
    let updated = c.update(Object::Other(Arc::new(obj)))?;
    Ok(columns::scale_of(spec, &updated))
}

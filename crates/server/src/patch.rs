//! PATCH: the patch is applied to the current object and the result written as an update of
//! the main resource or the subresource, with the current resourceVersion as precondition and
//! a fresh read and retry on conflict (upstream's GuaranteedUpdate).

use kubeplane_api::{Client, Kind, Object};
use kubeplane_registry::patch::PatchType;
use serde_json::Value;

use crate::handlers::{decode, read, Reply};
use crate::request::{Query, ResourceRequest};
use crate::state::State;
use crate::status::StatusError;

/// The patched JSON of `current`: JSON patch, JSON merge patch and strategic merge patch by
/// the registry's patch library; server-side apply is not served yet (a 415 naming it).
pub fn apply_patch(
    kind: Kind,
    current: &Value,
    patch_type: PatchType,
    body: &[u8],
) -> Result<Value, StatusError> {
    if patch_type == PatchType::Apply {
        return Err(StatusError::new(
            415,
            "UnsupportedMediaType",
            "server-side apply (application/apply-patch+yaml) is not supported by kubeplane serve yet; use client-side kubectl apply",
        ));
    }
    kubeplane_registry::patch::apply(kind, current, patch_type, body).map_err(StatusError::from)
}

/// PATCH of the `scale` subresource of a Deployment or ReplicaSet.
fn patch_scale(
    state: &State,
    req: &ResourceRequest,
    q: &Query,
    patch_type: PatchType,
    body: &[u8],
) -> Result<Reply, StatusError> {
    let key = crate::handlers::key_of(req)?;
    for _ in 0..5 {
        let rv = read(state, &key)?.resource_version().to_string();
        let scale = crate::handlers::get(state, req)?;
        let scale: Value = serde_json::from_slice(&scale.body).unwrap_or_default();
        let patched = apply_patch(req.kind, &scale, patch_type, body)?;
        let replicas = patched
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0) as i32;
        if q.dry_run()? {
            return Ok(Reply::json(200, &patched));
        }
        match state.write(|c| c.update_scale(&key, replicas, Some(&rv))) {
            Err(kubeplane_api::ApiError::Conflict { .. }) => continue,
            Err(e) => return Err(e.into()),
            Ok(s) => return Ok(Reply::json(200, &crate::handlers::scale_value(s))),
        }
    }
    Err(kubeplane_api::ApiError::Conflict { key }.into())
}

/// PATCH of an object or its `status` or `scale` subresource.
pub fn patch(
    state: &State,
    req: &ResourceRequest,
    q: &Query,
    content_type: &str,
    body: &[u8],
) -> Result<Reply, StatusError> {
    let patch_type = PatchType::from_content_type(content_type).map_err(StatusError::from)?;
    if req.subresource.as_deref() == Some("scale") {
        return patch_scale(state, req, q, patch_type, body);
    }
    let key = crate::handlers::key_of(req)?;
    let status = req.subresource.as_deref() == Some("status");
    for _ in 0..5 {
        let current = read(state, &key)?;
        let rv = current.resource_version().to_string();
        let patched = apply_patch(req.kind, &current.to_json(), patch_type, body)?;
        // A patch that names a resourceVersion makes it a precondition; otherwise the version
        // read here is, and a conflict means a fresh read and another try.
        let pinned = patched
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            != Some(rv.as_str());
        let (mut obj, warnings): (Object, Vec<String>) = decode(req, &patched, q)?;
        crate::handlers::check_name(&obj, &key.name)?;
        if obj.resource_version().is_empty() {
            obj.meta_mut().resource_version = Some(rv.clone());
        }
        if q.dry_run()? {
            let body = obj.to_json().to_string().into_bytes();
            return Ok(Reply {
                code: 200,
                body,
                warnings,
            });
        }
        let result = state.write(|c| {
            if status {
                c.update_status(obj)
            } else {
                c.update(obj)
            }
        });
        match result {
            Err(kubeplane_api::ApiError::Conflict { .. }) if !pinned => continue,
            Err(e) => return Err(e.into()),
            Ok(o) => {
                let mut body = Vec::new();
                let _ = o.to_writer(&mut body);
                return Ok(Reply {
                    code: 200,
                    body,
                    warnings,
                });
            }
        }
    }
    Err(kubeplane_api::ApiError::Conflict { key }.into())
}

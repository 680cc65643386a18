//! PATCH: the patch is applied to the current object and the result written as an update of
//! the main resource or the subresource, with the current resourceVersion as precondition and
//! a fresh read and retry on conflict (upstream's GuaranteedUpdate).

use kubeplane_api::{ApiError, Client, Kind, Object};
use kubeplane_registry::patch::PatchType;
use kubeplane_registry::strategy::scale::scale_of;
use kubeplane_registry::StorageClient;
use serde_json::Value;

use crate::handlers::{decode, Reply};
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

/// How often a patch is applied again to a fresh read when another writer got in between
/// (upstream's GuaranteedUpdate retries until it wins; a patch that names a resourceVersion
/// fails at once).
const MAX_TRIES: usize = 100;

/// One attempt at a patch, under the server's write lock: `None` when another writer changed
/// the object between this attempt's read and its write.
type Attempt = Result<Option<Reply>, StatusError>;

fn try_scale(
    c: &mut StorageClient,
    req: &ResourceRequest,
    q: &Query,
    t: PatchType,
    body: &[u8],
) -> Attempt {
    let key = crate::handlers::key_of(req)?;
    let current = c.get(&key).map_err(StatusError::from)?;
    let scale = scale_of(&current).ok_or_else(StatusError::not_found_path)?;
    let patched = apply_patch(req.kind, &crate::handlers::scale_value(scale), t, body)?;
    let replicas = patched
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0) as i32;
    if q.dry_run()? {
        return Ok(Some(Reply::json(200, &patched)));
    }
    match c.update_scale(&key, replicas, Some(current.resource_version())) {
        Err(ApiError::Conflict { .. }) => Ok(None),
        Err(e) => Err(e.into()),
        Ok(s) => Ok(Some(Reply::json(200, &crate::handlers::scale_value(s)))),
    }
}

fn try_patch(
    c: &mut StorageClient,
    req: &ResourceRequest,
    q: &Query,
    t: PatchType,
    body: &[u8],
) -> Attempt {
    let key = crate::handlers::key_of(req)?;
    let current = c.get(&key).map_err(StatusError::from)?;
    let rv = current.resource_version().to_string();
    let patched = apply_patch(req.kind, &current.to_json(), t, body)?;
    // A patch that names a resourceVersion makes it a precondition; otherwise the version read
    // here is, and a conflict means a fresh read and another try.
    let pinned = patched
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        != Some(rv.as_str());
    let (mut obj, warnings): (Object, Vec<String>) = decode(req, &patched, q)?;
    crate::handlers::check_name(&obj, &key.name)?;
    if obj.resource_version().is_empty() {
        obj.meta_mut().resource_version = Some(rv);
    }
    if q.dry_run()? {
        let body = obj.to_json().to_string().into_bytes();
        return Ok(Some(Reply {
            code: 200,
            body,
            warnings,
        }));
    }
    let result = match req.subresource.as_deref() {
        Some("status") => c.update_status(obj),
        _ => c.update(obj),
    };
    match result {
        Err(ApiError::Conflict { .. }) if !pinned => Ok(None),
        Err(e) => Err(e.into()),
        Ok(o) => {
            let mut body = Vec::new();
            let _ = o.to_writer(&mut body);
            Ok(Some(Reply {
                code: 200,
                body,
                warnings,
            }))
        }
    }
}

/// PATCH of an object or its `status` or `scale` subresource: the patch is applied to the
/// current object and written under the server's write lock, again on a fresh read when
/// another writer (the control plane) got in between.
pub fn patch(
    state: &State,
    req: &ResourceRequest,
    q: &Query,
    content_type: &str,
    body: &[u8],
) -> Result<Reply, StatusError> {
    let patch_type = PatchType::from_content_type(content_type).map_err(StatusError::from)?;
    let key = crate::handlers::key_of(req)?;
    for _ in 0..MAX_TRIES {
        let attempt = state.write(|c| match req.subresource.as_deref() {
            Some("scale") => try_scale(c, req, q, patch_type, body),
            None | Some("status") => try_patch(c, req, q, patch_type, body),
            Some(_) => Err(StatusError::method_not_allowed("PATCH", req.kind.as_str())),
        });
        if let Some(reply) = attempt? {
            return Ok(reply);
        }
    }
    Err(ApiError::Conflict { key }.into())
}

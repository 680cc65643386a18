//! PATCH: the patch is applied to the current object and the result written as an update of
//! the main resource or the subresource, with the current resourceVersion as precondition and
//! a fresh read and retry on conflict (upstream's GuaranteedUpdate). Server-side apply
//! (`application/apply-patch+yaml`, with `fieldManager` and `force`) goes through the
//! registry's apply library and creates the object when it does not exist; every other patch
//! records its field manager's `Update` in managedFields.

use kubeplane_api::{ApiError, Client, Kind, Object};
use kubeplane_registry::apply::{self, ApplyError};
use kubeplane_registry::patch::{meta, PatchType};
use kubeplane_registry::strategy::scale::scale_of;
use kubeplane_registry::StorageClient;
use serde_json::{json, Value};

use crate::handlers::{decode, Reply};
use crate::request::{Query, ResourceRequest};
use crate::state::State;
use crate::status::StatusError;

/// The patched JSON of `current`: JSON patch, JSON merge patch and strategic merge patch by
/// the registry's patch library (server-side apply is [`try_apply`]).
pub fn apply_patch(
    kind: Kind,
    current: &Value,
    patch_type: PatchType,
    body: &[u8],
) -> Result<Value, StatusError> {
    kubeplane_registry::patch::apply(kind, current, patch_type, body).map_err(StatusError::from)
}

/// Upstream's `ValidatePatchOptions`: apply needs a `fieldManager`, only apply takes `force`
/// (422 on `PatchOptions`).
fn check_options(patch_type: PatchType, q: &Query) -> Result<(), StatusError> {
    let (field, reason, detail) = if patch_type == PatchType::Apply {
        if q.get("fieldManager").is_some() {
            return Ok(());
        }
        (
            "fieldManager",
            "FieldValueRequired",
            "Required value: is required for apply patch",
        )
    } else {
        if q.get("force").is_none() {
            return Ok(());
        }
        (
            "force",
            "FieldValueForbidden",
            "Forbidden: may not be specified for non-apply patch",
        )
    };
    Err(StatusError {
        details: Some(json!({"group": "meta.k8s.io", "kind": "PatchOptions",
            "causes": [{"reason": reason, "message": detail, "field": field}]})),
        ..StatusError::new(
            422,
            "Invalid",
            format!("PatchOptions.meta.k8s.io \"\" is invalid: {field}: {detail}"),
        )
    })
}

/// An apply's conflicts as upstream answers them: 409 Conflict, each conflicting field a
/// `FieldManagerConflict` cause.
fn apply_error(e: ApplyError) -> StatusError {
    match e {
        ApplyError::BadRequest(message) => StatusError::bad_request(message),
        ApplyError::Conflicts(conflicts) => {
            let causes: Vec<Value> = conflicts
                .iter()
                .map(|c| json!({"type": "FieldManagerConflict", "message": format!("conflict with {}", c.manager), "field": c.field}))
                .collect();
            StatusError {
                details: Some(json!({"causes": causes})),
                ..StatusError::new(409, "Conflict", apply::conflict_message(&conflicts))
            }
        }
    }
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
    if let Some(s) = &req.custom {
        let spec = crate::crds::requests::scale_spec(req, s)?;
        let scale = crate::crds::columns::scale_of(&spec, &current);
        let patched = apply_patch(req.kind, &scale, t, body)?;
        let replicas = patched
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if q.dry_run()? {
            return Ok(Some(Reply::json(200, &patched)));
        }
        let rv = current.resource_version();
        return match crate::crds::requests::update_scale(c, &spec, s, &key, replicas, Some(rv)) {
            Err(ApiError::Conflict { .. }) => Ok(None),
            Err(e) => Err(e.into()),
            Ok(s) => Ok(Some(Reply::json(200, &s))),
        };
    }
    let scale = scale_of(&current).ok_or_else(StatusError::not_found_path)?;
    let patched = apply_patch(req.kind, &crate::handlers::scale_value(scale), t, body)?;
    let replicas = patched
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0) as i32;
    if q.dry_run()? {
        return Ok(Some(Reply::json(200, &patched)));
    }
    // A resourceVersion the patch names is a precondition (409 when stale, no retry), as for
    // the object itself; otherwise the version read is, and a conflict means another try.
    let rv = patched
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
        .unwrap_or(current.resource_version());
    let pinned = rv != current.resource_version();
    let manager = crate::handlers::field_manager(q);
    let scaled =
        crate::handlers::as_manager(c, &manager, |c| c.update_scale(&key, replicas, Some(rv)));
    match scaled {
        Err(ApiError::Conflict { .. }) if !pinned => Ok(None),
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
    let live = current.to_json();
    let patched = apply_patch(req.kind, &live, t, body)?;
    let patched = crate::handlers::track(c, req, q, Some(&live), patched);
    write(c, req, q, current.resource_version(), &patched)
}

/// Server-side apply: the applied configuration merged into the current object (or, for the
/// main resource of an object that does not exist, the object it creates) by the request's
/// field manager, conflicts refused unless `force`.
fn try_apply(c: &mut StorageClient, req: &ResourceRequest, q: &Query, body: &[u8]) -> Attempt {
    let key = crate::handlers::key_of(req)?;
    let config = crate::handlers::parse_body(body, PatchType::Apply.content_type())?;
    let current = match c.get(&key) {
        Ok(o) => Some(o),
        Err(ApiError::NotFound { .. }) if req.subresource.is_none() => None,
        Err(e) => return Err(e.into()),
    };
    let live = current.as_ref().map(Object::to_json);
    let manager = q.get("fieldManager").unwrap_or("");
    let ty = meta::for_kind(req.kind);
    let applied = crate::handlers::with_writer(c, req, manager, |writer| {
        apply::apply(ty, live.as_ref(), &config, writer, q.flag("force"))
    })
    .map_err(apply_error)?;
    match current {
        Some(cur) => write(c, req, q, cur.resource_version(), &applied),
        None => create(c, req, q, &applied),
    }
}

/// An apply that creates the object (201).
fn create(c: &mut StorageClient, req: &ResourceRequest, q: &Query, applied: &Value) -> Attempt {
    let (obj, warnings): (Object, Vec<String>) = decode(req, applied, q)?;
    crate::handlers::check_name(&obj, req.name.as_deref().unwrap_or(""))?;
    let created = if q.dry_run()? {
        crate::handlers::dry_run_create(c, obj)
    } else {
        c.create(obj)
    };
    match created {
        Err(ApiError::AlreadyExists { .. }) => Ok(None),
        Err(e) => Err(e.into()),
        Ok(o) => Ok(Some(Reply {
            code: 201,
            body: o.to_json().to_string().into_bytes(),
            warnings,
        })),
    }
}

/// Writes a patched object read at `rv` (the main resource or `status`): a patch that names a
/// resourceVersion makes it a precondition; otherwise the version read is, and a conflict
/// means a fresh read and another try.
fn write(
    c: &mut StorageClient,
    req: &ResourceRequest,
    q: &Query,
    rv: &str,
    patched: &Value,
) -> Attempt {
    let key = crate::handlers::key_of(req)?;
    let pinned = patched
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        != Some(rv);
    let (mut obj, warnings): (Object, Vec<String>) = decode(req, patched, q)?;
    crate::handlers::check_name(&obj, &key.name)?;
    if obj.resource_version().is_empty() {
        obj.meta_mut().resource_version = Some(rv.to_string());
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
    check_options(patch_type, q)?;
    let key = crate::handlers::key_of(req)?;
    let apply = patch_type == PatchType::Apply;
    if let Some(s) = &req.custom {
        crate::crds::requests::check_subresource(req, s)?;
    }
    for _ in 0..MAX_TRIES {
        let attempt = state.write(|c| match req.subresource.as_deref() {
            Some("scale") if apply => Err(StatusError::new(
                415,
                "UnsupportedMediaType",
                "server-side apply of the scale subresource is not supported by kubeplane serve; apply the object itself",
            )),
            Some("scale") => try_scale(c, req, q, patch_type, body),
            None | Some("status") if apply => try_apply(c, req, q, body),
            None | Some("status") => try_patch(c, req, q, patch_type, body),
            Some(_) => Err(StatusError::method_not_allowed("PATCH", req.kind.as_str())),
        });
        if let Some(reply) = attempt? {
            return Ok(reply);
        }
    }
    Err(ApiError::Conflict { key }.into())
}

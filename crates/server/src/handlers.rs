//! The verbs on resources: get, list, create, update, delete, deletecollection and the
//! subresources (`status`, `scale`, `binding`, `eviction`), each through the registry's
//! [`kubeplane_api::Client`] operations so the server applies exactly the rules the simulator
//! applies. Watches are in [`crate::watch`], patches in [`crate::patch`].

use std::sync::Arc;

use kubeplane_api::{ApiError, Client, DeleteOptions, Kind, Object, ObjectKey, PropagationPolicy};
use kubeplane_registry::apply::{self, Writer};
use kubeplane_registry::patch::meta;
use kubeplane_registry::storage_client::storage_key;
use kubeplane_registry::strategy::scale::scale_of;
use kubeplane_registry::StorageClient;
use serde_json::{json, Value};

use crate::list;
use crate::request::{Query, ResourceRequest};
use crate::state::State;
use crate::status::StatusError;

/// A response: the HTTP code, the JSON body and `Warning` headers.
pub struct Reply {
    pub code: u16,
    pub body: Vec<u8>,
    pub warnings: Vec<String>,
}

impl Reply {
    pub fn json(code: u16, v: &Value) -> Reply {
        Reply {
            code,
            body: v.to_string().into_bytes(),
            warnings: Vec::new(),
        }
    }

    fn object(code: u16, o: &Object) -> Reply {
        let mut body = Vec::with_capacity(1024);
        let _ = o.to_writer(&mut body);
        Reply {
            code,
            body,
            warnings: Vec::new(),
        }
    }
}

type Result<T> = std::result::Result<T, StatusError>;

pub fn key_of(req: &ResourceRequest) -> Result<ObjectKey> {
    let name = req
        .name
        .as_deref()
        .ok_or_else(|| StatusError::method_not_allowed("this verb", req.kind.as_str()))?;
    Ok(ObjectKey::new(req.kind, &req.namespace, name))
}

/// Reads the current stored object.
pub fn read(state: &State, key: &ObjectKey) -> Result<Object> {
    match state
        .storage()
        .get(&storage_key(key.kind, &key.namespace, &key.name), None)
    {
        Ok(Some(v)) => Ok(v.value),
        Ok(None) => Err(kubeplane_api::ApiError::NotFound { key: key.clone() }.into()),
        Err(e) => Err(StatusError::from(e)),
    }
}

fn scale_json(obj: &Object) -> Result<Value> {
    Ok(scale_value(
        scale_of(obj).ok_or_else(StatusError::not_found_path)?,
    ))
}

/// The JSON of a Scale, with its apiVersion and kind.
pub fn scale_value(scale: k8s_openapi::api::autoscaling::v1::Scale) -> Value {
    let mut v = serde_json::to_value(scale).unwrap_or_default();
    v["apiVersion"] = "autoscaling/v1".into();
    v["kind"] = "Scale".into();
    v
}

/// GET of an object or one of its subresources.
pub fn get(state: &State, req: &ResourceRequest) -> Result<Reply> {
    let key = key_of(req)?;
    if let Some(s) = &req.custom {
        crate::crds::requests::check_subresource(req, s)?;
    }
    let obj = read(state, &key)?;
    match req.subresource.as_deref() {
        None | Some("status") => Ok(Reply::object(200, &obj)),
        Some("scale") if req.custom.is_some() => {
            let spec = crate::crds::requests::scale_spec(req, req.custom.as_ref().unwrap())?;
            Ok(Reply::json(
                200,
                &crate::crds::columns::scale_of(&spec, &obj),
            ))
        }
        Some("scale") => Ok(Reply::json(200, &scale_json(&obj)?)),
        Some(_) => Err(StatusError::not_found_path()),
    }
}

/// LIST of a collection.
pub fn list(state: &State, req: &ResourceRequest, q: &Query) -> Result<Reply> {
    let page = list::list(state, req, q)?;
    Ok(Reply {
        code: 200,
        body: list::body(req.kind, &page),
        warnings: Vec::new(),
    })
}

/// Reads a request body (JSON, or YAML as kubectl can send) into a JSON value.
pub fn parse_body(body: &[u8], content_type: &str) -> Result<Value> {
    if content_type.contains("protobuf") {
        return crate::proto::decode(body)
            .ok_or_else(|| StatusError::unsupported_media_type(content_type));
    }
    if content_type.contains("yaml") {
        let text =
            std::str::from_utf8(body).map_err(|e| StatusError::bad_request(e.to_string()))?;
        return serde_yaml_ng::from_str(text)
            .map_err(|e| StatusError::bad_request(format!("error converting YAML to JSON: {e}")));
    }
    serde_json::from_slice(body).map_err(|e| StatusError::bad_request(format!("json: {e}")))
}

/// Decodes a body into an object of the request's kind, with `fieldValidation` (Strict: an
/// unknown field is an error; Warn, the default, and Ignore: it is dropped).
pub fn decode(req: &ResourceRequest, body: &Value, q: &Query) -> Result<(Object, Vec<String>)> {
    if let Some(s) = &req.custom {
        return crate::crds::requests::decode(req, s, body, q);
    }
    let strict = q.get("fieldValidation") == Some("Strict");
    let mut body = body.clone();
    // As upstream's decoder: a body without apiVersion or kind takes the request's.
    if let Some(m) = body.as_object_mut() {
        for (field, value) in [
            ("apiVersion", req.kind.api_version()),
            ("kind", req.kind.as_str()),
        ] {
            if m.get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                m.insert(field.to_string(), value.into());
            }
        }
    }
    let kind_in_body = body.get("kind").and_then(Value::as_str).unwrap_or("");
    let version_in_body = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if kind_in_body != req.kind.as_str() {
        return Err(StatusError::bad_request(format!(
            "the kind in the data ({kind_in_body}) does not match the expected kind ({})",
            req.kind.as_str()
        )));
    }
    if version_in_body != req.kind.api_version() {
        return Err(StatusError::bad_request(format!(
            "the API version in the data ({version_in_body}) does not match the expected API version ({})",
            req.kind.api_version()
        )));
    }
    let body = &body;
    let name = body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (mut obj, warnings) =
        kubeplane_sim::scenario::decode_object(body, strict).map_err(|e| match e.field {
            Some(f) if e.message.starts_with("unknown field") => {
                StatusError::bad_request(format!("strict decoding error: unknown field {f:?}"))
            }
            f => StatusError::invalid(req.kind, name, f.as_deref(), &e.message),
        })?;
    if req.kind.is_namespaced() {
        let ns = obj.meta().namespace.clone().unwrap_or_default();
        if ns.is_empty() {
            obj.meta_mut().namespace = Some(req.namespace.clone());
        } else if !req.namespace.is_empty() && ns != req.namespace {
            return Err(StatusError::bad_request("the namespace of the provided object does not match the namespace sent on the request"));
        }
    } else {
        obj.meta_mut().namespace = None;
    }
    Ok((obj, warnings))
}

/// An update or patch may not rename the object (upstream's `checkName`).
pub fn check_name(obj: &Object, name: &str) -> Result<()> {
    if obj.name() != name {
        return Err(StatusError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            obj.name()
        )));
    }
    Ok(())
}

/// The field manager of a write: `fieldManager`, else upstream's default from the request's
/// User-Agent (`kubectl-client-side-apply/v1.34.1 (linux/amd64) ...` gives
/// `kubectl-client-side-apply`).
pub fn field_manager(q: &Query) -> String {
    apply::manager_or_user_agent(q.get("fieldManager"), q.user_agent())
}

/// The time managedFields record for a write: the server's clock, in seconds.
pub fn write_time(c: &StorageClient) -> String {
    kubeplane_registry::field_manager::write_time(c.clock(), c.now)
}

/// Runs `f` with the client recording `manager` in managedFields (a `scale` write, whose
/// entries the registry moves between the object and its Scale), then without one again.
pub fn as_manager<T>(
    c: &mut StorageClient,
    manager: &str,
    f: impl FnOnce(&mut StorageClient) -> T,
) -> T {
    c.set_field_manager(Some(manager));
    let out = f(c);
    c.set_field_manager(None);
    out
}

/// `new` (JSON) with the managedFields a write of it over `live` by the request's field manager
/// leaves (upstream's field manager on create, update and non-apply patch).
pub fn track(
    c: &StorageClient,
    req: &ResourceRequest,
    q: &Query,
    live: Option<&Value>,
    new: Value,
) -> Value {
    with_writer(c, req, &field_manager(q), |writer| {
        apply::update(meta::for_kind(req.kind), live, new, writer)
    })
}

/// Runs `f` with the writer managedFields record for the request's write by `manager`: the
/// request's API version and subresource, at the server's clock ([`write_time`]).
pub fn with_writer<T>(
    c: &StorageClient,
    req: &ResourceRequest,
    manager: &str,
    f: impl FnOnce(&Writer) -> T,
) -> T {
    let time = write_time(c);
    f(&Writer {
        manager,
        api_version: req.kind.api_version(),
        subresource: req.subresource.as_deref(),
        time: &time,
    })
}

/// The object with the managedFields [`track`] gives it.
fn tracked(
    c: &StorageClient,
    req: &ResourceRequest,
    q: &Query,
    live: Option<&Object>,
    mut obj: Object,
) -> Result<Object> {
    let out = track(c, req, q, live.map(Object::to_json).as_ref(), obj.to_json());
    let entries = match out.pointer("/metadata/managedFields") {
        None => None,
        Some(v) => Some(
            serde_json::from_value(v.clone())
                .map_err(|e| StatusError::new(500, "InternalError", e.to_string()))?,
        ),
    };
    obj.meta_mut().managed_fields = entries;
    Ok(obj)
}

/// A dry-run create: everything a create does but the write (the name must be free, then
/// [`StorageClient::admit_create`], the start of the registry's own create).
pub fn dry_run_create(c: &mut StorageClient, obj: Object) -> std::result::Result<Object, ApiError> {
    c.sync();
    if !obj.name().is_empty() && c.cache().get_key(&obj.key()).is_some() {
        return Err(ApiError::AlreadyExists { key: obj.key() });
    }
    c.admit_create(obj)
}

/// POST to a collection (create), or to `pods/{name}/binding` and `pods/{name}/eviction`.
pub fn create(state: &State, req: &ResourceRequest, q: &Query, body: &Value) -> Result<Reply> {
    match (req.kind, req.subresource.as_deref()) {
        (Kind::Pod, Some("binding")) if q.dry_run()? => {
            read(state, &key_of(req)?)?;
            return Ok(Reply::json(201, &success(json!({"kind": "pods"}))));
        }
        (Kind::Pod, Some("binding")) => return bind(state, req, body),
        (Kind::Pod, Some("eviction")) => return evict(state, req, q, body),
        (_, Some(_)) => return Err(StatusError::method_not_allowed("POST", req.kind.as_str())),
        _ => {}
    }
    if req.name.is_some() {
        return Err(StatusError::method_not_allowed("POST", req.kind.as_str()));
    }
    let (obj, warnings) = decode(req, body, q)?;
    if q.dry_run()? {
        let admitted = state.write(|c| -> Result<Object> {
            let obj = tracked(c, req, q, None, obj)?;
            Ok(dry_run_create(c, obj)?)
        })?;
        let mut r = Reply::object(201, &admitted);
        r.warnings = warnings;
        return Ok(r);
    }
    let created =
        state.write(|c| -> Result<Object> { Ok(c.create(tracked(c, req, q, None, obj)?)?) })?;
    let mut r = Reply::object(201, &created);
    r.warnings = warnings;
    Ok(r)
}

fn success(details: Value) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

fn bind(state: &State, req: &ResourceRequest, body: &Value) -> Result<Reply> {
    let key = key_of(req)?;
    let node = body
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return Err(StatusError::invalid(
            Kind::Pod,
            &key.name,
            Some("target.name"),
            "\"\": must be set",
        ));
    }
    let uid = match body.pointer("/metadata/uid").and_then(Value::as_str) {
        Some(u) if !u.is_empty() => u.to_string(),
        _ => read(state, &key)?.uid().to_string(),
    };
    state.write(|c| c.bind(&key.namespace, &key.name, &uid, node))?;
    Ok(Reply::json(
        201,
        &success(json!({"name": key.name, "kind": "pods"})),
    ))
}

fn evict(state: &State, req: &ResourceRequest, q: &Query, body: &Value) -> Result<Reply> {
    let key = key_of(req)?;
    if is_dry_run(body.get("deleteOptions"), q)? {
        read(state, &key)?;
        return Ok(Reply::json(
            201,
            &success(json!({"name": key.name, "kind": "pods"})),
        ));
    }
    let opts = delete_options(
        Some(body.get("deleteOptions").unwrap_or(&Value::Null)),
        &Query::default(),
    )?;
    state.write(|c| c.evict(&key.namespace, &key.name, opts))?;
    Ok(Reply::json(
        201,
        &success(json!({"name": key.name, "kind": "pods"})),
    ))
}

/// PUT of an object or its `status` or `scale` subresource.
pub fn update(state: &State, req: &ResourceRequest, q: &Query, body: &Value) -> Result<Reply> {
    let key = key_of(req)?;
    if let Some(s) = &req.custom {
        crate::crds::requests::check_subresource(req, s)?;
        if req.subresource.as_deref() == Some("scale") {
            return update_custom_scale(state, req, s, q, body);
        }
    }
    if req.subresource.as_deref() == Some("scale") {
        let replicas = body
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0) as i32;
        let rv = body
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        if q.dry_run()? {
            return Ok(Reply::json(200, body));
        }
        let manager = field_manager(q);
        let scale =
            state.write(|c| as_manager(c, &manager, |c| c.update_scale(&key, replicas, rv)))?;
        return Ok(Reply::json(200, &scale_value(scale)));
    }
    let (obj, warnings) = decode(req, body, q)?;
    check_name(&obj, &key.name)?;
    let status = match req.subresource.as_deref() {
        None => false,
        Some("status") => true,
        Some(_) => return Err(StatusError::method_not_allowed("PUT", req.kind.as_str())),
    };
    if q.dry_run()? {
        let current = read(state, &key)?;
        let rv = obj.resource_version();
        if !rv.is_empty() && rv != current.resource_version() {
            return Err(kubeplane_api::ApiError::Conflict { key }.into());
        }
        let obj = state.write(|c| tracked(c, req, q, Some(&current), obj))?;
        return Ok(Reply::object(200, &obj));
    }
    let updated = state.write(|c| -> Result<Object> {
        let live = c.get(&key).ok();
        let obj = tracked(c, req, q, live.as_ref(), obj)?;
        Ok(if status {
            c.update_status(obj)?
        } else {
            c.update(obj)?
        })
    })?;
    let mut r = Reply::object(200, &updated);
    r.warnings = warnings;
    Ok(r)
}

/// PUT of a custom resource's scale subresource.
fn update_custom_scale(
    state: &State,
    req: &ResourceRequest,
    s: &crate::crds::Served,
    q: &Query,
    body: &Value,
) -> Result<Reply> {
    let key = key_of(req)?;
    let spec = crate::crds::requests::scale_spec(req, s)?;
    let replicas = body
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let rv = body
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    if q.dry_run()? {
        return Ok(Reply::json(200, body));
    }
    let scale =
        state.write(|c| crate::crds::requests::update_scale(c, &spec, s, &key, replicas, rv))?;
    Ok(Reply::json(200, &scale))
}

/// Whether a request is a dry run: `?dryRun=All`, or `dryRun: [All]` in a DeleteOptions body
/// (client-go's typed Delete and Evict send it there; kubectl drain --dry-run=server does).
pub fn is_dry_run(body: Option<&Value>, q: &Query) -> Result<bool> {
    let in_body = body
        .and_then(|b| b.get("dryRun"))
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == "All"));
    Ok(in_body || q.dry_run()?)
}

/// DeleteOptions from the body (JSON) and the query (`gracePeriodSeconds`,
/// `propagationPolicy`).
pub fn delete_options(body: Option<&Value>, q: &Query) -> Result<DeleteOptions> {
    let body = body.filter(|b| !b.is_null());
    let field = |name: &str| body.and_then(|b| b.get(name)).filter(|v| !v.is_null());
    let grace = match field("gracePeriodSeconds").and_then(Value::as_i64) {
        Some(g) => Some(g),
        None => q.number("gracePeriodSeconds")?,
    };
    let policy = field("propagationPolicy")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| q.get("propagationPolicy").map(str::to_string));
    let propagation_policy = match policy {
        None => None,
        Some(p) => Some(PropagationPolicy::parse(&p).ok_or_else(|| {
            StatusError::new(422, "Invalid", format!("DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""))
        })?),
    };
    let propagation_policy = match (
        propagation_policy,
        field("orphanDependents").and_then(Value::as_bool),
    ) {
        (Some(p), _) => Some(p),
        (None, Some(true)) => Some(PropagationPolicy::Orphan),
        (None, Some(false)) => Some(PropagationPolicy::Background),
        (None, None) => None,
    };
    let pre = |name: &str| {
        field("preconditions")
            .and_then(|p| p.get(name))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    Ok(DeleteOptions {
        grace_period_secs: grace,
        precondition_uid: pre("uid"),
        precondition_resource_version: pre("resourceVersion"),
        propagation_policy,
    })
}

/// DELETE of an object: the object as it is after the call (with its deletionTimestamp when
/// graceful deletion or finalizers keep it), or, once it is gone, its last state.
pub fn delete(
    state: &State,
    req: &ResourceRequest,
    q: &Query,
    body: Option<&Value>,
) -> Result<Reply> {
    let key = key_of(req)?;
    if req.subresource.is_some() {
        return Err(StatusError::method_not_allowed("DELETE", req.kind.as_str()));
    }
    let opts = delete_options(body, q)?;
    let before = read(state, &key)?;
    if is_dry_run(body, q)? {
        return Ok(Reply::object(200, &before));
    }
    let after = state.write(|c| c.delete(&key, opts))?;
    match after {
        Some(o) => Ok(Reply::object(200, &o)),
        None if key.kind == Kind::Pod => Ok(Reply::object(200, &before)),
        None => Ok(Reply::json(
            200,
            &success(
                json!({"name": key.name, "group": key.kind.group(), "kind": key.kind.plural(), "uid": before.uid()}),
            ),
        )),
    }
}

/// DELETE of a collection: every object the selectors match, each as a DELETE would.
pub fn delete_collection(
    state: &State,
    req: &ResourceRequest,
    q: &Query,
    body: Option<&Value>,
) -> Result<Reply> {
    let opts = delete_options(body, q)?;
    let mut all = Query::default();
    all.copy_selectors(q);
    let page = list::list(state, req, &all)?;
    let dry = is_dry_run(body, q)?;
    let mut deleted = Vec::new();
    for obj in page.items {
        if !dry && req.kind == crate::crds::crd_kind() {
            crate::crds::before_delete(state, &obj.key())?;
        }
        if !dry {
            match state.write(|c| c.delete(&obj.key(), opts.clone())) {
                Ok(_) | Err(kubeplane_api::ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        deleted.push(obj);
    }
    let out = list::Page {
        items: deleted,
        revision: state.current_revision(),
        continue_token: None,
    };
    Ok(Reply {
        code: 200,
        body: list::body(req.kind, &out),
        warnings: Vec::new(),
    })
}

/// The shared state handle type handlers run with.
pub type Shared = Arc<State>;

#[cfg(test)]
mod tests;

//! managedFields of the writes a client makes as a field manager (the API server's field
//! manager, `k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager`, for clients that call the
//! registry directly: `kubeplane serve`'s scheduler, controllers and node agents, each with
//! the manager upstream's component gets from its User-Agent).
//!
//! As upstream's handlers: a create records an `Update` entry for everything the object sets;
//! an update of the main resource or of `status` records what it changed
//! ([`crate::apply::update`]); a write through `scale` moves the ownership of the replicas
//! ([`crate::apply::scale`]); a binding, a delete and an eviction record nothing (upstream's
//! binding writes the pod through the storage, past the field manager).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kubeplane_api::{Clock, Object};
use kubeplane_core::SimTime;
use serde_json::{Map, Value};

use crate::apply::{self, managed, Writer};
use crate::patch::meta;

/// The time managedFields record for a write at `now` (RFC 3339, in seconds, as metav1.Time
/// writes it).
pub fn write_time(clock: Clock, now: SimTime) -> String {
    clock
        .timestamp(now)
        .0
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Whether an object carries managedFields entries.
fn tracked(obj: &Object) -> bool {
    obj.meta()
        .managed_fields
        .as_ref()
        .is_some_and(|m| !m.is_empty())
}

/// Whether an entry owns a field under `status`: of an object's entries only those take part
/// in a `status` write (it owns and changes nothing else), the others stay as they are.
fn owns_status(e: &ManagedFieldsEntry) -> bool {
    e.fields_v1
        .as_ref()
        .is_some_and(|f| f.0.get("f:status").is_some())
}

/// What the field manager compares for a `status` write: the object's status and the
/// entries that own part of it (no `uid`: the object is known to be tracked, so the write
/// records its entry even when no entry owns status yet).
fn status_view(obj: &Object, entries: &[&ManagedFieldsEntry]) -> Value {
    let status = match obj {
        Object::Pod(p) => serde_json::to_value(p.status_k8s()).unwrap_or_default(),
        Object::Node(n) => serde_json::to_value(&n.status).unwrap_or_default(),
        _ => obj.to_json().get("status").cloned().unwrap_or_default(),
    };
    let mut meta = Map::new();
    meta.insert(
        "managedFields".into(),
        serde_json::to_value(entries).unwrap_or_default(),
    );
    let mut out = Map::new();
    out.insert("metadata".into(), Value::Object(meta));
    if !status.is_null() {
        out.insert("status".into(), status);
    }
    Value::Object(out)
}

/// The entries a JSON object's `metadata.managedFields` holds, typed.
fn entries_of(v: &Value) -> Vec<ManagedFieldsEntry> {
    v.pointer("/metadata/managedFields")
        .and_then(|m| serde_json::from_value(m.clone()).ok())
        .unwrap_or_default()
}

/// Entries in upstream's order (operation, Apply first; time in seconds; manager; API version;
/// subresource), as [`managed::encode`] writes them.
fn sort(entries: &mut [ManagedFieldsEntry]) {
    entries.sort_by(|a, b| {
        let key = |e: &ManagedFieldsEntry| {
            (
                e.operation.clone(),
                e.time.as_ref().map(|t| t.0.as_second()).unwrap_or(0),
                e.manager.clone(),
                e.api_version.clone(),
                e.subresource.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
}

/// `new` with the managedFields a write of it over `live` (`None`: a create) by `manager`
/// leaves; `subresource` is `None` or `status`.
pub fn track(
    live: Option<&Object>,
    mut new: Object,
    manager: &str,
    subresource: Option<&str>,
    time: &str,
) -> Object {
    let status_only = subresource == Some("status");
    // An existing object nobody tracks stays untracked (upstream starts tracking at a create
    // or the first apply); only a main-resource update may bring entries of its own.
    if live.is_some_and(|l| !tracked(l)) && (status_only || !tracked(&new)) {
        new.meta_mut().managed_fields = None;
        return new;
    }
    let kind = new.kind();
    let writer = Writer {
        manager,
        api_version: kind.api_version(),
        subresource,
        time,
    };
    let ty = meta::for_kind(kind);
    if let (true, Some(live)) = (status_only, live) {
        let all = live.meta().managed_fields.clone().unwrap_or_default();
        let (involved, mut kept): (Vec<_>, Vec<_>) = all.into_iter().partition(owns_status);
        let involved: Vec<&ManagedFieldsEntry> = involved.iter().collect();
        let out = apply::update(
            ty,
            Some(&status_view(live, &involved)),
            status_view(&new, &[]),
            &writer,
        );
        kept.extend(entries_of(&out));
        sort(&mut kept);
        new.meta_mut().managed_fields = (!kept.is_empty()).then_some(kept);
        return new;
    }
    let live = live.map(Object::to_json);
    let out = apply::update(ty, live.as_ref(), new.to_json(), &writer);
    let entries = entries_of(&out);
    new.meta_mut().managed_fields = (!entries.is_empty()).then_some(entries);
    new
}

/// `new`, written from `old` through the scale subresource by `manager`, with the
/// managedFields [`apply::scale::update`] gives it.
pub fn track_scale(old: &Object, mut new: Object, manager: &str, time: &str) -> Object {
    if !tracked(old) {
        return new;
    }
    let mf = |o: &Object| {
        let v = serde_json::to_value(&o.meta().managed_fields).unwrap_or_default();
        managed::read(&serde_json::json!({"metadata": {"managedFields": v}})).unwrap_or_default()
    };
    let replicas = |o: &Object| {
        crate::strategy::scale::scale_of(o).and_then(|s| s.spec.and_then(|s| s.replicas))
    };
    let writer = Writer {
        manager,
        api_version: new.kind().api_version(),
        subresource: Some("scale"),
        time,
    };
    let entries = apply::scale::update(
        mf(old),
        &apply::scale::replicas_path(),
        replicas(old) != replicas(&new),
        &writer,
    );
    let mut v = serde_json::json!({"metadata": {}});
    managed::write(&mut v, &entries);
    let entries = entries_of(&v);
    new.meta_mut().managed_fields = (!entries.is_empty()).then_some(entries);
    new
}

#[cfg(test)]
mod tests;

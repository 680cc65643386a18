//! Server-side apply and `managedFields`, as pure functions over JSON objects: a hand-written
//! Rust take on upstream's structured-merge-diff (`sigs.k8s.io/structured-merge-diff`) and the
//! API server's field manager (`k8s.io/apiserver/.../fieldmanager`); no maintained Rust crate
//! implements them.
//!
//! - [`update`]: a create, update or non-apply patch by a manager records an `Update` entry
//!   for it owning what it added or changed; what it changed is taken from every other
//!   manager, what it removed is taken from everyone.
//! - [`apply`]: the applied configuration is the manager's intent. Its fields are merged into
//!   the live object and become the manager's `Apply` entry; fields the manager applied before
//!   and leaves out now are removed unless another manager owns them; a field another manager
//!   owns that the apply would change is a conflict, unless `force` takes it over.
//!
//! As upstream: an object's `apiVersion`, `kind` and its identity and bookkeeping metadata
//! (`name`, `namespace`, `uid`, `resourceVersion`, `generation`, `creationTimestamp`,
//! `managedFields`, ...) are owned by nobody; a write of the main resource owns nothing of
//! `status`, a write of the `status` subresource nothing else; an existing object that has no
//! managedFields gets none from an update (upstream tracks an object from its create or its
//! first apply) and its fields are owned by `before-first-apply` when it is first applied.
//! Schema facts come from [`crate::patch::meta`] through [`schema`].

pub mod fieldpath;
pub mod managed;
pub mod scale;
pub mod schema;
pub mod typed;

#[cfg(test)]
mod tests;

use serde_json::{json, Value};

use crate::patch::meta::TypeDef;
use fieldpath::{Path, PathElement, Set};
use managed::{Entry, Operation};
use schema::Node;

/// The manager that owns an object's fields from before its first apply.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The longest field manager name (upstream's `FieldManagerMaxLength`).
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// Who writes, at which version and time.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    /// The field manager.
    pub manager: &'a str,
    /// The object's `apiVersion` (`apps/v1`).
    pub api_version: &'a str,
    /// `status` or `scale` for a subresource write.
    pub subresource: Option<&'a str>,
    /// The time of the write (RFC 3339, seconds).
    pub time: &'a str,
}

/// One field another manager owns that an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The manager as upstream prints it (`"kubectl-client-side-apply" using apps/v1`).
    pub manager: String,
    /// The field as upstream prints it (`.spec.replicas`).
    pub field: String,
}

/// Why an apply fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplyError {
    /// 409: fields owned by other managers.
    Conflicts(Vec<Conflict>),
    /// 400: a configuration apply does not take.
    BadRequest(String),
}

/// Upstream's conflict message: `Apply failed with 1 conflict: conflict with "m" using v1:
/// .spec.x`, or for several, the fields grouped by manager (managers sorted).
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [one] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            one.manager, one.field
        );
    }
    let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
    managers.sort();
    managers.dedup();
    let mut lines = Vec::new();
    for m in managers {
        lines.push(format!("conflicts with {m}:"));
        for c in conflicts.iter().filter(|c| c.manager == m) {
            lines.push(format!("- {}", c.field));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// The field manager of a request without `fieldManager`: its User-Agent up to the first `/`,
/// without unprintable characters, at most [`FIELD_MANAGER_MAX_LENGTH`] bytes (upstream's
/// `prefixFromUserAgent`).
pub fn manager_or_user_agent(manager: Option<&str>, user_agent: &str) -> String {
    if let Some(m) = manager.filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let mut out = String::new();
    for ch in user_agent.split('/').next().unwrap_or("").chars() {
        if ch.is_control() {
            continue;
        }
        if out.len() + ch.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(ch);
    }
    out
}

/// The fields nobody owns (upstream's `stripMeta` set); `managedFields` with all it holds.
fn unowned(path: &Path) -> bool {
    const META: [&str; 9] = [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ];
    let field = |i: usize| match path.get(i) {
        Some(PathElement::Field(f)) => Some(f.as_str()),
        _ => None,
    };
    match (field(0), path.len()) {
        (Some("apiVersion" | "kind"), 1) | (Some("metadata"), 1) => true,
        (Some("metadata"), 2) => field(1).is_some_and(|f| META.contains(&f)),
        (Some("metadata"), _) => field(1) == Some("managedFields"),
        _ => false,
    }
}

/// Whether a write of `subresource` owns the field at `path`: the main resource owns nothing
/// of `status`, the `status` subresource only `status`.
fn in_scope(path: &Path, subresource: Option<&str>) -> bool {
    let status = path.first() == Some(&PathElement::Field("status".into()));
    match subresource {
        None => !status,
        Some("status") => status,
        Some(_) => true,
    }
}

fn scoped(set: Set, subresource: Option<&str>) -> Set {
    set.into_iter()
        .filter(|p| !unowned(p) && in_scope(p, subresource))
        .collect()
}

fn root(ty: Option<&'static TypeDef>) -> Node {
    Node::Granular(ty)
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.shift_remove("managedFields");
    }
    v
}

fn entry(writer: &Writer, operation: Operation, fields: Set) -> Entry {
    Entry {
        manager: writer.manager.to_string(),
        operation,
        api_version: writer.api_version.to_string(),
        time: Some(writer.time.to_string()),
        subresource: writer.subresource.unwrap_or("").to_string(),
        fields,
    }
}

/// The managers of an update: the new object's when it carries a valid non-empty list (an
/// explicit empty list resets them), else the live object's; a subresource write always keeps
/// the live ones.
fn managers_of_update(live: Option<&Value>, new: &Value, subresource: bool) -> Vec<Entry> {
    let live_entries = || live.and_then(managed::read).unwrap_or_default();
    if subresource {
        return live_entries();
    }
    match (new.pointer("/metadata/managedFields"), managed::read(new)) {
        (Some(Value::Array(l)), _) if l.is_empty() => Vec::new(),
        (_, Some(entries)) if !entries.is_empty() => entries,
        _ => live_entries(),
    }
}

/// Takes from every manager but `acting` the fields in `taken` (changed by the acting
/// manager) and in `removed`; managers left owning nothing are dropped.
fn take_from_others(managers: &mut Vec<Entry>, acting: &Entry, taken: &Set, removed: &Set) {
    for m in managers.iter_mut().filter(|m| !m.same_manager(acting)) {
        m.fields
            .retain(|p| !taken.contains(p) && !removed.contains(p));
    }
    managers.retain(|m| !m.fields.is_empty());
}

fn put(managers: &mut Vec<Entry>, e: Entry) {
    managers.retain(|m| !m.same_manager(&e));
    if !e.fields.is_empty() {
        managers.push(e);
    }
}

/// A create (`live` is `None`), update or non-apply patch of `new` over `live` by `writer`:
/// `new` with its managedFields maintained.
pub fn update(
    ty: Option<&'static TypeDef>,
    live: Option<&Value>,
    mut new: Value,
    writer: &Writer,
) -> Value {
    let mut managers = managers_of_update(live, &new, writer.subresource.is_some());
    let existing = live.is_some_and(|l| l.pointer("/metadata/uid").is_some());
    if existing && managers.is_empty() {
        managed::write(&mut new, &[]);
        return new;
    }
    record_update(ty, live, &mut managers, &new, writer);
    managed::write(&mut new, &managers);
    new
}

fn record_update(
    ty: Option<&'static TypeDef>,
    live: Option<&Value>,
    managers: &mut Vec<Entry>,
    new: &Value,
    writer: &Writer,
) {
    // managedFields need not be removed first: `scoped` drops every path under them.
    let empty = json!({});
    let cmp = typed::compare(live.unwrap_or(&empty), new, root(ty));
    let sub = writer.subresource;
    let changed: Set = scoped(cmp.added.union(&cmp.modified).cloned().collect(), sub);
    let removed = scoped(cmp.removed, sub);
    let mut acting = entry(writer, Operation::Update, Set::new());
    let before = managers.iter().find(|m| m.same_manager(&acting));
    let kept = before.map(|m| m.fields.clone()).unwrap_or_default();
    take_from_others(managers, &acting, &changed, &removed);
    acting.fields = kept.difference(&removed).chain(&changed).cloned().collect();
    put(managers, acting);
}

/// Server-side apply of `config` by `writer` to `live` (`None`: the object does not exist and
/// the apply creates it): the new object with its managedFields, or the conflicts with other
/// managers (`force` takes their fields instead).
pub fn apply(
    ty: Option<&'static TypeDef>,
    live: Option<&Value>,
    config: &Value,
    writer: &Writer,
    force: bool,
) -> Result<Value, ApplyError> {
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    if !config.is_object() {
        return Err(ApplyError::BadRequest(
            "error decoding YAML: the applied configuration is not an object".into(),
        ));
    }
    let empty = json!({});
    let old = without_managed_fields(live.unwrap_or(&empty));
    let mut managers = live.and_then(managed::read).unwrap_or_default();
    if live.is_some() && managers.is_empty() {
        let first = Writer {
            manager: BEFORE_FIRST_APPLY,
            ..*writer
        };
        record_update(ty, None, &mut managers, &old, &first);
    }
    let mut merged = typed::merge(&old, config, root(ty));
    let applier = entry(
        writer,
        Operation::Apply,
        scoped(typed::field_set(config, root(ty)), writer.subresource),
    );
    let last = managers
        .iter()
        .find(|m| m.same_manager(&applier))
        .map(|m| m.fields.clone());
    put(&mut managers, applier.clone());
    if let Some(last) = last {
        prune(&mut merged, &last, &managers, ty);
    }
    let cmp = typed::compare(&old, &merged, root(ty));
    let changed: Set = cmp.added.union(&cmp.modified).cloned().collect();
    let conflicts = conflicts(&managers, &applier, &changed);
    if !force && !conflicts.is_empty() {
        return Err(ApplyError::Conflicts(conflicts));
    }
    take_from_others(&mut managers, &applier, &changed, &cmp.removed);
    put(&mut managers, applier);
    managed::write(&mut merged, &managers);
    Ok(merged)
}

/// Removes what the applier applied last time and leaves out now, unless a manager (the
/// applier included) owns it or something below it; a list item that stays keeps its keys.
fn prune(merged: &mut Value, last: &Set, managers: &[Entry], ty: Option<&'static TypeDef>) {
    let owned: Set = managers
        .iter()
        .flat_map(|m| m.fields.iter().cloned())
        .collect();
    for path in last {
        if !fieldpath::has_prefix(&owned, path) && !is_item_key(path) {
            typed::remove(merged, path, root(ty));
        }
    }
}

/// Whether the path is a key field of an associative list item (`[name="c"].name`).
fn is_item_key(path: &Path) -> bool {
    match path.as_slice() {
        [.., PathElement::Key(k), PathElement::Field(f)] => {
            serde_json::from_str::<serde_json::Map<String, Value>>(k)
                .is_ok_and(|m| m.contains_key(f))
        }
        _ => false,
    }
}

/// The fields of other managers the applier would change, by manager and field.
fn conflicts(managers: &[Entry], applier: &Entry, changed: &Set) -> Vec<Conflict> {
    let mut out: Vec<Conflict> = managers
        .iter()
        .filter(|m| !m.same_manager(applier))
        .flat_map(|m| {
            m.fields.intersection(changed).map(|p| Conflict {
                manager: m.describe(),
                field: fieldpath::path_string(p),
            })
        })
        .collect();
    out.sort_by(|a, b| a.manager.cmp(&b.manager));
    out
}

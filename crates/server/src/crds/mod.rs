//! Custom resources, as kube-apiserver's apiextensions-apiserver serves them: the resource
//! types of the stored CustomResourceDefinitions, served at
//! `/apis/{group}/{version}/[namespaces/{ns}/]{plural}` for every served version (stored at the
//! storage version; another served version is the same object with its `apiVersion`
//! rewritten, upstream's `None` conversion strategy), listed by discovery, with the `status`
//! and `scale` subresources their definitions enable.
//!
//! The table of served resources is rebuilt from the storage ([`refresh`]) at start, after
//! every write of a definition or a custom resource, and when a path names nothing known (so
//! servers sharing one etcd learn each other's definitions). A refresh also does what
//! upstream's controllers do for definitions: the `NamesAccepted` and `Established`
//! conditions and `acceptedNames` (the naming and establishing controllers, at once), and for
//! a definition being deleted the `customresourcecleanup.apiextensions.k8s.io` finalizer's
//! work (its custom resources deleted, then the finalizer removed).
//!
//! `schema.rs` is the structural schema's validation and pruning, `columns.rs` the
//! `additionalPrinterColumns` Tables and the `scale` subresource, `openapi.rs` their
//! `/openapi/v3` documents.

pub mod columns;
pub mod openapi;
pub mod requests;
pub mod schema;

use std::sync::{Arc, RwLock};

use kubeplane_api::types::{self, ResourceType};
use kubeplane_api::{ApiError, Client, DeleteOptions, DynamicObject, Kind, Object, ObjectKey};
use kubeplane_registry::storage_client::resource;
use kubeplane_registry::validation::apiextensions::{definition, Definition};
use kubeplane_storage::{ListOptions, Prefix};
use serde_json::{json, Value};

use crate::state::State;

/// The finalizer upstream's CRD deletion adds: the definition stays until its custom resources
/// are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The CustomResourceDefinition kind.
pub fn crd_kind() -> Kind {
    Kind::Other(
        types::builtin("apiextensions.k8s.io/v1", "CustomResourceDefinition")
            .expect("a built-in kind"),
    )
}

/// Whether a kind is a custom resource's (not one of the built-in table).
pub fn is_custom(kind: Kind) -> bool {
    matches!(kind, Kind::Other(t) if types::builtin_index(t).is_none())
}

/// One served custom resource type: its definition as stored.
#[derive(Debug, PartialEq, Eq)]
pub struct Served {
    /// The definition's name (`plural.group`).
    pub name: String,
    pub def: Definition,
    /// The resource at its storage version.
    pub type_: &'static ResourceType,
    /// The definition's `spec`.
    pub spec: Value,
    /// The definition is being deleted: no new custom resources.
    pub terminating: bool,
}

impl Served {
    pub fn kind(&self) -> Kind {
        Kind::Other(self.type_)
    }

    /// The `spec.versions` entry of a version.
    pub fn version(&self, version: &str) -> Option<&Value> {
        self.spec
            .get("versions")?
            .as_array()?
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
    }

    /// `group/version`.
    pub fn api_version(&self, version: &str) -> String {
        format!("{}/{version}", self.def.type_.group)
    }

    /// A version's subresources (`status`, `scale`) as the definition enables them.
    pub fn subresource(&self, version: &str, name: &str) -> Option<&Value> {
        self.version(version)?
            .pointer(&format!("/subresources/{name}"))
            .filter(|v| !v.is_null())
    }

    /// A version's `openAPIV3Schema`.
    pub fn schema(&self, version: &str) -> Option<&Value> {
        self.version(version)?.pointer("/schema/openAPIV3Schema")
    }

    /// The singular name (the lowercased kind when the definition gives none).
    pub fn singular(&self) -> String {
        if self.def.singular.is_empty() {
            self.def.type_.kind.to_lowercase()
        } else {
            self.def.singular.clone()
        }
    }
}

/// The custom resource types a server serves.
#[derive(Default)]
pub struct CustomResources {
    served: RwLock<Arc<Vec<Arc<Served>>>>,
}

impl CustomResources {
    /// Every served type, in the definitions' name order.
    pub fn all(&self) -> Arc<Vec<Arc<Served>>> {
        match self.served.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn set(&self, served: Vec<Arc<Served>>) {
        let mut g = match self.served.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *g = Arc::new(served);
    }

    /// The type served at `group`/`version`/`plural`.
    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Served>> {
        self.all()
            .iter()
            .find(|s| {
                s.def.type_.group == group
                    && s.def.type_.plural == plural
                    && s.def.served.iter().any(|v| v == version)
            })
            .cloned()
    }

    /// The served type of a kind.
    pub fn of(&self, kind: Kind) -> Option<Arc<Served>> {
        let Kind::Other(t) = kind else { return None };
        self.all()
            .iter()
            .find(|s| s.def.type_.group == t.group && s.def.type_.plural == t.plural)
            .cloned()
    }
}

/// The stored CustomResourceDefinitions.
fn stored_definitions(state: &State) -> Vec<Arc<DynamicObject>> {
    let prefix = Prefix::resource(resource(crd_kind()));
    let Ok(page) = state.storage().list(&prefix, &ListOptions::default()) else {
        return Vec::new();
    };
    page.items
        .into_iter()
        .filter_map(|(_, v)| match v.value {
            Object::Other(o) => Some(o),
            _ => None,
        })
        .collect()
}

/// Rebuilds the served types from the stored definitions, then sets the conditions of new
/// definitions and finishes the deletion of terminating ones.
pub fn refresh(state: &State) {
    if reconcile(state) {
        // A definition's cleanup finished: it is gone now.
        reconcile(state);
    }
}

/// One rebuild and the writes it calls for; whether a definition's deletion finished.
fn reconcile(state: &State) -> bool {
    let crds = stored_definitions(state);
    let mut served = Vec::new();
    for crd in &crds {
        let Ok(def) = definition(crd) else { continue };
        let type_ = types::intern(&def.type_);
        served.push(Arc::new(Served {
            name: crd.metadata.name.clone().unwrap_or_default(),
            def,
            type_,
            spec: crd.field("spec").cloned().unwrap_or(Value::Null),
            terminating: crd.metadata.deletion_timestamp.is_some(),
        }));
    }
    state.crds.set(served.clone());
    let mut removed = false;
    for (crd, s) in crds.iter().zip(served.iter()) {
        if s.terminating {
            removed |= cleanup(state, crd, s);
        } else if let Some(status) = wanted_status(crd, s, state) {
            let mut o = (**crd).clone();
            o.fields.insert("status".into(), status);
            // A conflict means another writer got in first; the next refresh sees it.
            let _ = state.write(|c| c.update_status(Object::Other(Arc::new(o))));
        }
    }
    removed
}

/// The status upstream's naming and establishing controllers give a definition, when the
/// stored one differs: the names accepted (no conflicts are checked), `NamesAccepted` and
/// `Established` true, the storage version among `storedVersions`.
fn wanted_status(crd: &DynamicObject, s: &Served, state: &State) -> Option<Value> {
    let current = crd.field("status").cloned().unwrap_or(json!({}));
    let names = s.spec.get("names").cloned().unwrap_or(json!({}));
    let mut accepted = names.clone();
    accepted["singular"] = s.singular().into();
    if accepted.get("listKind").is_none() {
        accepted["listKind"] = format!("{}List", s.def.type_.kind).into();
    }
    let mut stored: Vec<Value> = current
        .get("storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage = Value::from(s.def.type_.version.clone());
    if !stored.contains(&storage) {
        stored.push(storage);
    }
    let established = current
        .get("conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
    if established
        && current.get("acceptedNames") == Some(&accepted)
        && current.get("storedVersions") == Some(&Value::Array(stored.clone()))
    {
        return None;
    }
    let now = state
        .clock
        .timestamp()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let condition = |type_: &str, reason: &str, message: &str| {
        json!({"type": type_, "status": "True", "lastTransitionTime": now,
               "reason": reason, "message": message})
    };
    Some(json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": accepted,
        "storedVersions": stored,
    }))
}

/// The custom resources of a type, as stored.
fn instances(state: &State, s: &Served) -> Vec<Object> {
    let prefix = Prefix::resource(resource(s.kind()));
    match state.storage().list(&prefix, &ListOptions::default()) {
        Ok(page) => page.items.into_iter().map(|(_, v)| v.value).collect(),
        Err(_) => Vec::new(),
    }
}

/// The cleanup finalizer's work for a terminating definition: delete its custom resources;
/// once none is left, remove the finalizer (which removes the definition). Whether it did.
fn cleanup(state: &State, crd: &DynamicObject, s: &Served) -> bool {
    let left = instances(state, s);
    for o in &left {
        if o.meta().deletion_timestamp.is_none() {
            let _ = state.write(|c| c.delete(&o.key(), DeleteOptions::default()));
        }
    }
    if !instances(state, s).is_empty() {
        return false;
    }
    let finalizers = crd.metadata.finalizers.clone().unwrap_or_default();
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        return false;
    }
    let mut o = crd.clone();
    o.metadata.finalizers = Some(
        finalizers
            .into_iter()
            .filter(|f| f != CLEANUP_FINALIZER)
            .collect(),
    );
    state
        .write(|c| c.update(Object::Other(Arc::new(o))))
        .is_ok()
}

/// Before a definition is deleted: upstream's deletion adds the cleanup finalizer, so the
/// definition stays (terminating) until its custom resources are gone.
pub fn before_delete(state: &State, key: &ObjectKey) -> Result<(), ApiError> {
    state.write(|c| {
        let current = c.get(key)?;
        let Object::Other(o) = &current else {
            return Ok(());
        };
        let finalizers = o.metadata.finalizers.clone().unwrap_or_default();
        if o.metadata.deletion_timestamp.is_some()
            || finalizers.iter().any(|f| f == CLEANUP_FINALIZER)
        {
            return Ok(());
        }
        let mut o = (**o).clone();
        let mut finalizers = finalizers;
        finalizers.push(CLEANUP_FINALIZER.to_string());
        o.metadata.finalizers = Some(finalizers);
        c.update(Object::Other(Arc::new(o))).map(|_| ())
    })
}

/// The JSON of a stored custom resource (or a list of them) as a client of another served
/// version reads it: the `apiVersion`s rewritten.
pub fn convert_value(v: &mut Value, from: &str, to: &str) {
    if v.get("apiVersion").and_then(Value::as_str) == Some(from) {
        v["apiVersion"] = to.into();
    }
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            convert_value(item, from, to);
        }
    }
    if let Some(object) = v.get_mut("object") {
        convert_value(object, from, to);
    }
}

/// [`convert_value`] of a serialized body.
pub fn convert_body(body: Vec<u8>, from: &str, to: &str) -> Vec<u8> {
    match serde_json::from_slice::<Value>(&body) {
        Ok(mut v) => {
            convert_value(&mut v, from, to);
            v.to_string().into_bytes()
        }
        Err(_) => body,
    }
}

//! What a [`crate::StorageClient`] stores into: the in-memory storage, the durable one
//! journaled to redb (`kubeplane serve --data-dir`), or etcd (`kubeplane serve
//! --etcd-servers`), with objects encoded as their JSON.
//!
//! The durable storage acknowledges a write once it is on disk and shares each sync among the
//! writes queued meanwhile. The registry serializes its writes under its write lock (the
//! revision of a write is known before it is made), so it submits a write under that lock and
//! waits for it to be durable after releasing it: the next writer does not wait for the disk,
//! and the writes of concurrent clients commit in groups.

use std::sync::Arc;

use kubeplane_api::types;
use kubeplane_api::{DynamicObject, Object};
use kubeplane_storage::{
    Codec, DurableStorage, EtcdStorage, Event, Key, MemoryStorage, Prefix, Revision, Storage,
    StorageError, Versioned, Watcher,
};
use serde_json::Value;

/// Objects as the JSON a client reads (`Object::to_json`), apiVersion and kind first.
pub struct ObjectJson;

impl Codec<Object> for ObjectJson {
    fn encode(&self, value: &Object, out: &mut Vec<u8>) {
        serde_json::to_writer(out, &value.to_json()).expect("an object serializes to JSON");
    }

    /// A custom resource is read as the type its definition was interned as (the definitions
    /// read back are interned as they are read).
    fn decode(&self, bytes: &[u8]) -> Result<Object, String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let field = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or("");
        let obj = match Object::from_json(&value) {
            Ok(o) => o,
            Err(e) => {
                let (api_version, kind) = (field("apiVersion"), field("kind"));
                let t = match types::interned(api_version, kind) {
                    Some(t) => t,
                    None => provisional(&value, api_version, kind).ok_or(e)?,
                };
                Object::Other(Arc::new(
                    DynamicObject::from_value(t, &value).map_err(|e| e.to_string())?,
                ))
            }
        };
        if let Object::Other(o) = &obj {
            if o.type_.kind == "CustomResourceDefinition" && o.type_.group == "apiextensions.k8s.io"
            {
                if let Ok(def) = crate::validation::apiextensions::definition(o) {
                    types::intern(&def.type_);
                }
            }
        }
        Ok(obj)
    }

    /// The object's resourceVersion is the revision that wrote it (etcd's mod revision, which
    /// another server's write got too).
    fn stamp(&self, value: &mut Object, revision: Revision) {
        value.meta_mut().resource_version = Some(revision.to_string());
    }
}

/// A custom resource read back before its definition (a durable storage recovers in key
/// order): a type guessed from the object alone (plural: the lowercased kind plus `s`; scope:
/// whether it has a namespace), so that the storage opens; the object gets its definition's
/// type when it is next written.
fn provisional(
    value: &Value,
    api_version: &str,
    kind: &str,
) -> Option<&'static types::ResourceType> {
    let (group, version) = api_version.split_once('/')?;
    if !group.contains('.') || kind.is_empty() {
        return None;
    }
    let namespaced = value
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    Some(types::intern(&types::CustomType {
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_string(),
        plural: format!("{}s", kind.to_lowercase()),
        namespaced,
        short_names: Vec::new(),
        status_subresource: false,
    }))
}

/// The storage under a client.
pub(crate) enum Backing {
    Memory(MemoryStorage<Object>),
    Durable(DurableStorage<Object>),
    /// etcd: a write returns once etcd has committed it, so it is durable when it returns.
    Etcd(Box<EtcdStorage<Object>>),
}

impl Backing {
    pub(crate) fn storage(&self) -> &dyn Storage<Object> {
        match self {
            Backing::Memory(s) => s,
            Backing::Durable(s) => s,
            Backing::Etcd(s) => s.as_ref(),
        }
    }

    pub(crate) fn cursor(
        &self,
        prefix: &Prefix,
        from: Option<Revision>,
    ) -> Result<Box<dyn Watcher<Object> + Sync>, StorageError> {
        Ok(match self {
            Backing::Memory(s) => Box::new(s.cursor(prefix, from)?),
            Backing::Durable(s) => Box::new(s.cursor(prefix, from)?),
            Backing::Etcd(s) => Box::new(s.cursor(prefix, from)?),
        })
    }

    pub(crate) fn wait_for_revision(
        &self,
        revision: Revision,
        timeout: std::time::Duration,
    ) -> bool {
        match self {
            Backing::Memory(s) => s.wait_for_revision(revision, timeout),
            Backing::Durable(s) => s.wait_for_revision(revision, timeout),
            Backing::Etcd(s) => s.wait_for_revision(revision, timeout),
        }
    }

    /// On etcd, waits until the storage's watch has every write acknowledged so far (the
    /// writes of other servers too) and says whether it has; in process there is nothing to
    /// wait for (`false`).
    pub(crate) fn catch_up(&self, timeout: std::time::Duration) -> bool {
        match self {
            Backing::Etcd(s) => s.catch_up(timeout),
            _ => false,
        }
    }

    /// The key's latest version, including writes submitted and not yet durable; an error
    /// when the storage cannot be read (etcd without quorum).
    pub(crate) fn latest(&self, key: &Key) -> Result<Option<Versioned<Object>>, StorageError> {
        match self {
            Backing::Durable(s) => Ok(s.latest(key)),
            _ => self.storage().get(key, None),
        }
    }

    /// The revision of the latest write, durable or not.
    pub(crate) fn latest_revision(&self) -> Revision {
        match self {
            Backing::Durable(s) => s.latest_revision(),
            _ => self.storage().current_revision(),
        }
    }

    /// A create that is acknowledged once [`Backing::wait_durable`] of its revision returns.
    pub(crate) fn create(
        &self,
        key: &Key,
        obj: Object,
    ) -> Result<Arc<Event<Object>>, StorageError> {
        match self {
            Backing::Durable(s) => s.submit_create(key, obj),
            _ => self.storage().create(key, obj),
        }
    }

    pub(crate) fn update(
        &self,
        key: &Key,
        obj: Object,
        expected: Option<Revision>,
    ) -> Result<Arc<Event<Object>>, StorageError> {
        match self {
            Backing::Durable(s) => s.submit_update(key, obj, expected),
            _ => self.storage().update(key, obj, expected),
        }
    }

    pub(crate) fn delete(
        &self,
        key: &Key,
        expected: Option<Revision>,
    ) -> Result<Arc<Event<Object>>, StorageError> {
        match self {
            Backing::Durable(s) => s.submit_delete(key, expected),
            _ => self.storage().delete(key, expected),
        }
    }

    /// Waits until the writes up to `revision` are durable (at once in memory).
    pub(crate) fn wait_durable(&self, revision: Revision) -> Result<(), StorageError> {
        match self {
            Backing::Memory(_) | Backing::Etcd(_) => Ok(()),
            Backing::Durable(s) => s.wait_durable(revision),
        }
    }
}

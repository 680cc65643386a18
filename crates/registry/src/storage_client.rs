//! [`StorageClient`]: the registry's rules over `kubeplane-storage`, the storage the coming
//! HTTP API server runs on. The same strategies, admission and subresources as
//! [`crate::ApiClient`] (both run the generic operations of [`crate::client`] over a
//! [`Backend`]); a resourceVersion is the storage revision of the write that produced it.
//!
//! Several clients share one storage, each from its own thread: [`StorageClient::handle`]
//! makes another client over the same storage, name source and clock, with its own cache.
//! The registry's writes are serialized by one write lock, which also guards the seeded
//! source of UIDs and generated names: a write's revision is therefore known before it is
//! made (the current revision plus one), and the stored object carries it as its
//! resourceVersion. Reads (`get`, the cache's sync) do not take the write lock. Every write
//! to the storage must go through a `StorageClient`.
//!
//! The cache is what a client's informers would hold: the objects of every kind as a watch
//! over the whole storage last delivered them. It catches up at every call of the client
//! (before admission reads it, and after each write, so a client sees its own writes at once)
//! and on [`StorageClient::sync`]; a cursor that falls behind the storage's window lists again.
//!
//! [`StorageClient::etcd`] runs it over an [`EtcdStorage`] (`kubeplane serve --etcd-servers`):
//! kube-apiserver's key layout and transactions, the resourceVersion being etcd's mod revision.
//! The registry still computes a write's revision before making it (the current one plus one),
//! but with several servers on one etcd the guess may be wrong: etcd's mod revision is the
//! resourceVersion (the storage stamps every object it reads or writes with it, as
//! kube-apiserver sets it on decode), and a write answers with the revision etcd gave it.
//!
//! A client may carry a write gate ([`StorageClient::write_gate`]): a write it refuses fails
//! with 503 before it reaches the storage (the control plane of a server that lost its
//! leader lease writes nothing more).
//!
//! [`StorageClient::open`] runs the same client over a [`DurableStorage`] in a directory
//! (`kubeplane serve --data-dir`): a write returns once it is durable, the writes of
//! concurrent clients share syncs (see [`crate::backing`]), and opening the directory again
//! recovers every acknowledged object and the revision counter. The name source then starts a
//! stream of its own, derived from the seed and the recovered revision, so UIDs and generated
//! names do not repeat the ones drawn before the restart.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::PodStatus;
use kubeplane_api::{ApiError, Cache, Client, Clock, DeleteOptions, Kind, Object, ObjectKey};
use kubeplane_core::{EventRecord, SimTime};
use kubeplane_storage::{
    DurableError, DurableStorage, EtcdConfig, EtcdStorage, Key, ListOptions, MemoryStorage, Prefix,
    Revision, Storage, StorageError, Versioned, Watcher,
};
use kubeplane_store::{NameSource, Prepared};

use crate::backing::{Backing, ObjectJson};
use crate::client::{self, Backend};
use crate::field_manager;

/// How many revisions the storage keeps for watches and reads in the past unless told.
pub const DEFAULT_WINDOW: usize = 100_000;

/// The storage resource of a kind (its key prefix), as kube-apiserver names them in etcd
/// (`/registry/<resource>/...`, `SpecialDefaultResourcePrefixes` and `PrefixFromGR` of its
/// storage factory): the plural resource name with no group segment for the built-in groups,
/// but Nodes under `minions`, Services under `services/specs`, Endpoints under
/// `services/endpoints`, ReplicationControllers under `controllers`, Ingresses under `ingress`,
/// and the group first for `apiextensions.k8s.io`, `apiregistration.k8s.io` and custom resources.
/// kube-apiserver stores `events.k8s.io` Events as core Events; kubeplane converts no versions
/// and keeps them apart under `events.k8s.io/events`.
pub fn resource(kind: Kind) -> &'static str {
    match kind {
        Kind::Node => "minions",
        Kind::Other(t) => match (t.group, t.plural) {
            ("", "services") => "services/specs",
            ("", "endpoints") => "services/endpoints",
            ("", "replicationcontrollers") => "controllers",
            ("networking.k8s.io" | "extensions", "ingresses") => "ingress",
            ("events.k8s.io", _) => "events.k8s.io/events",
            ("apiextensions.k8s.io", "customresourcedefinitions") => {
                "apiextensions.k8s.io/customresourcedefinitions"
            }
            ("apiregistration.k8s.io", "apiservices") => "apiregistration.k8s.io/apiservices",
            _ if !t.storage_resource.is_empty() => t.storage_resource,
            _ => t.plural,
        },
        kind => kind.plural(),
    }
}

/// The storage key of an object.
pub fn storage_key(kind: Kind, namespace: &str, name: &str) -> Key {
    if kind.is_namespaced() {
        Key::new(resource(kind), namespace, name)
    } else {
        Key::cluster(resource(kind), name)
    }
}

/// The API error of a storage error on `key`.
fn api_error(err: StorageError, key: ObjectKey) -> ApiError {
    match err {
        StorageError::NotFound { .. } => ApiError::NotFound { key },
        StorageError::AlreadyExists { .. } => ApiError::AlreadyExists { key },
        StorageError::Conflict { .. } => ApiError::Conflict { key },
        StorageError::Gone { requested, oldest } => ApiError::Gone { requested, oldest },
        StorageError::Unreachable { message } => ApiError::Unavailable { message },
        StorageError::Timeout { message } => ApiError::Timeout { message },
        StorageError::FutureRevision { .. } | StorageError::Unavailable { .. } => {
            ApiError::Internal {
                message: err.to_string(),
            }
        }
    }
}

/// What the clients over one storage share.
struct Shared {
    storage: Backing,
    /// The write lock, and the seeded source of UIDs and generated names it guards.
    names: Mutex<NameSource>,
    clock: Clock,
}

/// The registry's backend while a write holds the write lock.
struct Writer<'a> {
    storage: &'a Backing,
    names: MutexGuard<'a, NameSource>,
    clock: Clock,
    /// The revision of the last write made, which must be durable before the call returns.
    written: Option<Revision>,
    /// The error of the first read that failed (etcd without quorum): the registry's reads
    /// cannot fail, so a failed one reads as a missing object, and an operation that then
    /// fails answers with this error instead (not a NotFound that is not true).
    failed: RefCell<Option<ApiError>>,
}

impl Writer<'_> {
    /// The object's latest version, including writes not yet durable (a durable storage's
    /// preconditions check against those).
    fn read(&self, kind: Kind, namespace: &str, name: &str) -> Option<Versioned<Object>> {
        if self.failed.borrow().is_some() {
            // The operation fails with that error anyway: do not wait for the storage again.
            return None;
        }
        match self.storage.latest(&storage_key(kind, namespace, name)) {
            Ok(v) => v,
            Err(e) => {
                let key = ObjectKey::new(kind, namespace, name);
                self.failed
                    .borrow_mut()
                    .get_or_insert_with(|| api_error(e, key));
                None
            }
        }
    }

    /// Fails with the error of a failed read, before a write that would wait for the same
    /// unavailable storage again.
    fn check_reads(&self) -> Result<(), ApiError> {
        match self.failed.borrow().as_ref() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// The revision the next write gets: writes are serialized by the lock this writer holds.
    fn next_revision(&self) -> u64 {
        self.storage.latest_revision() + 1
    }

    fn wrote(&mut self, revision: Revision) {
        self.written = Some(revision);
    }

    /// Stamps `obj` with the next revision and replaces the stored version `old` with it.
    fn replace(&mut self, mut obj: Object, old: &Versioned<Object>) -> Result<Object, ApiError> {
        self.check_reads()?;
        obj.meta_mut().resource_version = Some(self.next_revision().to_string());
        let key = storage_key(obj.kind(), obj.namespace(), obj.name());
        let event = self
            .storage
            .update(&key, obj.clone(), Some(old.mod_revision))
            .map_err(|e| api_error(e, obj.key()))?;
        self.wrote(event.revision);
        // The write's own revision: another server may have written since the guess.
        obj.meta_mut().resource_version = Some(event.revision.to_string());
        Ok(obj)
    }
}

impl Backend for Writer<'_> {
    fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<Object> {
        self.read(kind, namespace, name).map(|v| v.value)
    }

    fn clock(&self) -> Clock {
        self.clock
    }

    fn draw_name(&mut self, prefix: &str) -> String {
        self.names.generate_name(prefix)
    }

    fn draw(&mut self) -> u64 {
        self.names.draw()
    }

    fn list(&self, kind: Kind) -> Vec<Object> {
        let prefix = Prefix::resource(resource(kind));
        match self
            .storage
            .storage()
            .list(&prefix, &ListOptions::default())
        {
            Ok(page) => page.items.into_iter().map(|(_, v)| v.value).collect(),
            Err(e) => {
                let key = ObjectKey::new(kind, "", "");
                self.failed
                    .borrow_mut()
                    .get_or_insert_with(|| api_error(e, key));
                Vec::new()
            }
        }
    }

    fn create_with(
        &mut self,
        mut obj: Object,
        fill: impl FnOnce(&mut Object, &mut NameSource),
    ) -> Result<Object, ApiError> {
        let key = storage_key(obj.kind(), obj.namespace(), obj.name());
        if self.read(obj.kind(), obj.namespace(), obj.name()).is_some() {
            return Err(ApiError::AlreadyExists { key: obj.key() });
        }
        self.check_reads()?;
        fill(&mut obj, &mut self.names);
        obj.meta_mut().resource_version = Some(self.next_revision().to_string());
        let event = self
            .storage
            .create(&key, obj.clone())
            .map_err(|e| api_error(e, obj.key()))?;
        self.wrote(event.revision);
        obj.meta_mut().resource_version = Some(event.revision.to_string());
        Ok(obj)
    }

    fn update(
        &mut self,
        mut obj: Object,
        prepare: impl FnOnce(&Object, &mut Object) -> Result<Prepared, ApiError>,
    ) -> Result<Object, ApiError> {
        let Some(old) = self.read(obj.kind(), obj.namespace(), obj.name()) else {
            return Err(ApiError::NotFound { key: obj.key() });
        };
        let given_rv = obj.resource_version();
        let stale = !given_rv.is_empty() && given_rv != old.value.resource_version();
        if stale || (!obj.uid().is_empty() && obj.uid() != old.value.uid()) {
            return Err(ApiError::Conflict { key: obj.key() });
        }
        if prepare(&old.value, &mut obj)? == Prepared::Remove {
            return Backend::delete(self, &obj.key());
        }
        self.replace(obj, &old)
    }

    fn update_with(
        &mut self,
        kind: Kind,
        namespace: &str,
        name: &str,
        f: impl FnOnce(&Object) -> Result<Object, ApiError>,
    ) -> Result<Object, ApiError> {
        let Some(old) = self.read(kind, namespace, name) else {
            return Err(ApiError::NotFound {
                key: ObjectKey::new(kind, namespace, name),
            });
        };
        let obj = f(&old.value)?;
        self.replace(obj, &old)
    }

    fn delete(&mut self, key: &ObjectKey) -> Result<Object, ApiError> {
        self.check_reads()?;
        let event = self
            .storage
            .delete(&storage_key(key.kind, &key.namespace, &key.name), None)
            .map_err(|e| api_error(e, key.clone()))?;
        self.wrote(event.revision);
        Ok(event.object().value.clone())
    }
}

/// How many times a write without a resourceVersion is tried when the storage refuses it as a
/// conflict (see `StorageClient::retried`).
const UNCONDITIONAL_TRIES: usize = 50;

/// How many times an eviction that meets a conflict is tried (upstream's `EvictionsRetry`).
const EVICTION_TRIES: usize = 20;

/// The objects of each kind as the client's watch last delivered them: namespace → name →
/// object, so lists come in namespace and name order, as the store's do.
struct StorageCache {
    kinds: Vec<Objects>,
    /// The custom resource types' objects (their types are made at run time).
    custom: BTreeMap<Kind, Objects>,
    cursor: Box<dyn Watcher<Object> + Sync>,
}

/// One kind's objects: namespace → name → object.
type Objects = BTreeMap<String, BTreeMap<String, Object>>;

impl StorageCache {
    /// A cache listed from the storage's current state, watching from there.
    fn list(storage: &Backing) -> StorageCache {
        loop {
            let Ok(page) = storage
                .storage()
                .list(&Prefix::All, &ListOptions::default())
            else {
                // Only etcd fails a list of the current state (unreachable): try again soon.
                std::thread::sleep(Duration::from_millis(100));
                continue;
            };
            let Ok(cursor) = storage.cursor(&Prefix::All, Some(page.revision)) else {
                // Compacted between the list and the watch: list again.
                continue;
            };
            let mut cache = StorageCache {
                kinds: vec![BTreeMap::new(); Kind::count()],
                custom: BTreeMap::new(),
                cursor,
            };
            for (_, v) in page.items {
                cache.put(v.value);
            }
            return cache;
        }
    }

    fn objects(&self, kind: Kind) -> Option<&Objects> {
        match kind.index() {
            Some(i) => Some(&self.kinds[i]),
            None => self.custom.get(&kind),
        }
    }

    fn objects_mut(&mut self, kind: Kind) -> &mut Objects {
        match kind.index() {
            Some(i) => &mut self.kinds[i],
            None => self.custom.entry(kind).or_default(),
        }
    }

    fn put(&mut self, obj: Object) {
        let names = self
            .objects_mut(obj.kind())
            .entry(obj.namespace().to_string())
            .or_default();
        names.insert(obj.name().to_string(), obj);
    }

    fn remove(&mut self, obj: &Object) {
        let namespaces = self.objects_mut(obj.kind());
        if let Some(names) = namespaces.get_mut(obj.namespace()) {
            names.remove(obj.name());
            if names.is_empty() {
                namespaces.remove(obj.namespace());
            }
        }
    }

    /// Applies every event written since the last sync; lists again if the cursor fell
    /// behind the storage's window.
    fn sync(&mut self, storage: &Backing) {
        let mut batch = Vec::new();
        loop {
            batch.clear();
            match self.cursor.try_next_batch(&mut batch, 1024) {
                Ok(0) => return,
                Ok(_) => {
                    for event in &batch {
                        match &event.current {
                            Some(v) => self.put(v.value.clone()),
                            None => self.remove(&event.object().value),
                        }
                    }
                }
                Err(_) => *self = StorageCache::list(storage),
            }
        }
    }
}

impl Cache for StorageCache {
    fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<&Object> {
        let namespace = if kind.is_namespaced() { namespace } else { "" };
        self.objects(kind)?.get(namespace)?.get(name)
    }

    fn list<'a>(&'a self, kind: Kind) -> Box<dyn Iterator<Item = &'a Object> + 'a> {
        Box::new(
            self.objects(kind)
                .into_iter()
                .flat_map(|k| k.values().flat_map(|m| m.values())),
        )
    }
}

/// A [`Client`] over a [`MemoryStorage`] or a [`DurableStorage`] of objects, with admission,
/// at the instant `now`.
pub struct StorageClient {
    shared: Arc<Shared>,
    cache: StorageCache,
    pub now: SimTime,
    /// Every event recorded through this client.
    pub events: Vec<EventRecord>,
    /// Every explanation record emitted through this client.
    pub records: Vec<serde_json::Value>,
    pub explain: bool,
    /// What a binding does besides setting the node, by the feature gates (the v1.34 binding
    /// unless set).
    pub binding: crate::strategy::pod::BindFeatures,
    /// Checked under the write lock before each write: `Err(message)` refuses it (a
    /// `ServiceUnavailable`); not inherited by [`StorageClient::handle`].
    pub write_gate: Option<WriteGate>,
    /// The field manager this client's writes record in managedFields (`kube-scheduler`,
    /// `kubelet`, ...: [`crate::field_manager`]); `None` records nothing (the API server's
    /// handlers record the request's own). Not inherited by [`StorageClient::handle`].
    pub field_manager: Option<String>,
}

/// See [`StorageClient::write_gate`].
pub type WriteGate = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

impl StorageClient {
    /// A client over a new, empty storage that keeps `window` revisions, whose UIDs and
    /// generated names derive from `seed`, and whose timestamps follow `clock`.
    pub fn new(seed: u64, clock: Clock, window: usize) -> StorageClient {
        StorageClient::over(Backing::Memory(MemoryStorage::new(window)), seed, clock)
    }

    /// A client over the durable storage in `dir` (created if missing; what it holds is
    /// recovered), keeping `window` revisions, otherwise as [`StorageClient::new`]. UIDs and
    /// generated names derive from `seed` and the recovered revision: a new directory gives
    /// the names [`StorageClient::new`] gives.
    pub fn open(
        dir: impl AsRef<Path>,
        seed: u64,
        clock: Clock,
        window: usize,
    ) -> Result<StorageClient, DurableError> {
        let storage = DurableStorage::open(dir, window, ObjectJson)?;
        Ok(StorageClient::over(Backing::Durable(storage), seed, clock))
    }

    /// A client over etcd (`kubeplane serve --etcd-servers`), otherwise as
    /// [`StorageClient::open`]: what etcd holds under the configuration's prefix is the state,
    /// and a write returns once etcd has committed it.
    pub fn etcd(
        config: &EtcdConfig,
        seed: u64,
        clock: Clock,
    ) -> Result<StorageClient, StorageError> {
        let storage = EtcdStorage::connect(config, ObjectJson)?;
        Ok(StorageClient::over(
            Backing::Etcd(Box::new(storage)),
            seed,
            clock,
        ))
    }

    fn over(storage: Backing, seed: u64, clock: Clock) -> StorageClient {
        let cache = StorageCache::list(&storage);
        // A distinct stream per revision the storage starts from (the plain seed at 0).
        let revision = storage.storage().current_revision();
        let names = NameSource::new(seed ^ revision.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        StorageClient {
            shared: Arc::new(Shared {
                storage,
                names: Mutex::new(names),
                clock,
            }),
            cache,
            now: SimTime::ZERO,
            events: Vec::new(),
            records: Vec::new(),
            explain: false,
            binding: Default::default(),
            write_gate: None,
            field_manager: None,
        }
    }

    /// Another client over the same storage, name source and clock (for another thread),
    /// with its own cache and the same instant.
    pub fn handle(&self) -> StorageClient {
        StorageClient {
            shared: self.shared.clone(),
            cache: StorageCache::list(&self.shared.storage),
            now: self.now,
            events: Vec::new(),
            records: Vec::new(),
            explain: self.explain,
            binding: self.binding,
            write_gate: None,
            field_manager: None,
        }
    }

    /// The storage (for reads and watches; writes go through a client). It shows the writes
    /// that are durable: a durable storage's write is visible once it is on disk.
    pub fn storage(&self) -> &dyn Storage<Object> {
        self.shared.storage.storage()
    }

    /// Waits up to `timeout` until the storage reaches `revision`; returns whether it has
    /// ([`MemoryStorage::wait_for_revision`]).
    pub fn wait_for_revision(&self, revision: Revision, timeout: Duration) -> bool {
        self.shared.storage.wait_for_revision(revision, timeout)
    }

    /// On etcd, waits (each step up to `timeout`) until the storage's watch, and so the cache
    /// at its next sync, has every write acknowledged so far, another server's included;
    /// returns whether it has (`false` in process, where the cache misses nothing).
    pub fn catch_up(&self, timeout: Duration) -> bool {
        self.shared.storage.catch_up(timeout)
    }

    /// Brings the cache up to the storage's current revision.
    pub fn sync(&mut self) {
        self.cache.sync(&self.shared.storage);
    }

    /// What a create does before its write (a server's dry-run create stops here): the cache
    /// brought up to date, then admission and validation against it. On etcd a refusal is
    /// checked again once the cache has every write acknowledged so far (another server's
    /// included: a Namespace created through it a moment ago), as upstream's
    /// NamespaceLifecycle looks a namespace up live when its informer lacks it.
    pub fn admit_create(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.sync();
        match crate::validation::admit_and_validate_create(obj.clone(), &self.cache) {
            Err(_) if self.catch_up(Duration::from_secs(2)) => {
                self.sync();
                crate::validation::admit_and_validate_create(obj, &self.cache)
            }
            answer => answer,
        }
    }

    /// Sets the field manager ([`StorageClient::field_manager`]) when it is another.
    pub fn set_field_manager(&mut self, manager: Option<&str>) {
        if self.field_manager.as_deref() != manager {
            self.field_manager = manager.map(str::to_string);
        }
    }

    /// The field manager and the time its writes record now.
    fn manager_and_time(&self) -> Option<(String, String)> {
        let m = self.field_manager.clone()?;
        Some((m, field_manager::write_time(self.shared.clock, self.now)))
    }

    /// An update of the main resource (`status` false) or of `status`, with the managedFields
    /// of this client's field manager recorded against the stored object under the lock.
    fn update_tracked(&mut self, obj: Object, status: bool) -> Result<Object, ApiError> {
        let unconditional = obj.resource_version().is_empty();
        let manager = self.manager_and_time();
        self.retried(unconditional, |w| {
            let obj = match &manager {
                Some((m, time)) => {
                    let live = w.get(obj.kind(), obj.namespace(), obj.name());
                    let sub = status.then_some("status");
                    field_manager::track(live.as_ref(), obj.clone(), m, sub, time)
                }
                None => obj.clone(),
            };
            if status {
                client::update_status(w, obj)
            } else {
                client::update_validated(w, obj)
            }
        })
    }

    /// [`StorageClient::write`] of a write that names no resourceVersion, tried again (up to
    /// [`UNCONDITIONAL_TRIES`] times) when the storage refuses it as a conflict: another server
    /// on the same etcd changed the object between this one's read and its write, and
    /// upstream's `GuaranteedUpdate` reads again and retries such a write instead of answering
    /// 409. One that names a resourceVersion is written once (`unconditional` false).
    fn retried<T>(
        &mut self,
        unconditional: bool,
        mut f: impl FnMut(&mut Writer<'_>) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let mut tries = 1;
        loop {
            let result = self.write(&mut f);
            // The read came from the storage's watch of etcd, behind the other server's
            // write: try again once the watch has caught up (in process there is no other
            // writer, nothing to catch up with, and no retry).
            let again = matches!(result, Err(ApiError::Conflict { .. }))
                && unconditional
                && tries < UNCONDITIONAL_TRIES
                && self.catch_up(Duration::from_secs(2));
            if !again {
                return result;
            }
            tries += 1;
        }
    }

    /// Runs one registry operation under the write lock, waits (without the lock) until its
    /// write is durable, then catches the cache up.
    fn write<T>(
        &mut self,
        f: impl FnOnce(&mut Writer<'_>) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let (result, written) = {
            let names = match self.shared.names.lock() {
                Ok(guard) => guard,
                // A panicking writer changed nothing half-way: each write is one storage call.
                Err(poisoned) => poisoned.into_inner(),
            };
            if let Some(refused) = self.write_gate.as_ref().and_then(|g| g().err()) {
                return Err(ApiError::Unavailable { message: refused });
            }
            let mut writer = Writer {
                storage: &self.shared.storage,
                names,
                clock: self.shared.clock,
                written: None,
                failed: RefCell::new(None),
            };
            let result = match (f(&mut writer), writer.failed.take()) {
                (Err(_), Some(failed)) => Err(failed),
                (result, _) => result,
            };
            (result, writer.written)
        };
        if let Some(revision) = written {
            self.shared
                .storage
                .wait_durable(revision)
                .map_err(|e| ApiError::Internal {
                    message: e.to_string(),
                })?;
        }
        self.sync();
        result
    }
}

impl Client for StorageClient {
    fn cache(&self) -> &dyn Cache {
        &self.cache
    }

    fn clock(&self) -> Clock {
        self.shared.clock
    }

    fn get(&mut self, key: &ObjectKey) -> Result<Object, ApiError> {
        let k = storage_key(key.kind, &key.namespace, &key.name);
        match self.storage().get(&k, None) {
            Ok(Some(v)) => Ok(v.value),
            Ok(None) => Err(ApiError::NotFound { key: key.clone() }),
            Err(e) => Err(api_error(e, key.clone())),
        }
    }

    fn create(&mut self, obj: Object) -> Result<Object, ApiError> {
        let obj = match self.manager_and_time() {
            Some((m, time)) => field_manager::track(None, obj, &m, None, &time),
            None => obj,
        };
        let obj = self.admit_create(obj)?;
        let now = self.now;
        let topology_labels = self.binding.topology_labels;
        self.write(|w| {
            let obj = if topology_labels {
                crate::admission::pod_topology_labels::admit_created_pod(w, obj)
            } else {
                obj
            };
            client::create(w, obj, now)
        })
    }

    fn update(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.update_tracked(obj, false)
    }

    fn update_status(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.update_tracked(obj, true)
    }

    fn patch_pod_status(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        patch: &mut dyn FnMut(&mut PodStatus),
    ) -> Result<Object, ApiError> {
        let manager = self.manager_and_time();
        self.retried(true, |w| {
            client::patch_pod_status_then(w, namespace, name, uid, &mut *patch, |old, new| {
                match &manager {
                    Some((m, time)) => {
                        field_manager::track(Some(old), new, m, Some("status"), time)
                    }
                    None => new,
                }
            })
        })
    }

    fn delete(&mut self, key: &ObjectKey, opts: DeleteOptions) -> Result<Option<Object>, ApiError> {
        crate::admission::namespace_lifecycle::check_delete(key)?;
        let now = self.now;
        let unconditional = opts.precondition_resource_version.is_none();
        self.retried(unconditional, |w| client::delete(w, key, &opts, now))
    }

    /// An eviction, tried again with fresh reads when a write of it meets a conflict (another
    /// eviction spent the same disruption budget between this one's read and its write), as
    /// upstream's eviction REST retries conflicts (`EvictionsRetry`, up to 20 tries).
    fn evict(&mut self, namespace: &str, name: &str, opts: DeleteOptions) -> Result<(), ApiError> {
        let now = self.now;
        let mut tries = 1;
        loop {
            self.sync();
            match crate::eviction::evict(self, now, namespace, name, opts.clone()) {
                Err(ApiError::Conflict { .. }) if tries < EVICTION_TRIES => {
                    self.catch_up(Duration::from_secs(2));
                    tries += 1;
                }
                result => return result,
            }
        }
    }

    fn bind(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
    ) -> Result<Object, ApiError> {
        let now = self.now;
        let features = self.binding;
        self.write(|w| client::bind(w, namespace, name, uid, node, now, features))
    }

    fn update_scale(
        &mut self,
        key: &ObjectKey,
        replicas: i32,
        resource_version: Option<&str>,
    ) -> Result<Scale, ApiError> {
        let manager = self.manager_and_time();
        self.write(|w| {
            client::update_scale_then(
                w,
                key,
                replicas,
                resource_version,
                |old, new| match &manager {
                    Some((m, time)) => field_manager::track_scale(old, new, m, time),
                    None => new,
                },
            )
        })
    }

    fn record_event(&mut self, ev: EventRecord) {
        self.events.push(ev);
    }

    fn explain(&self) -> bool {
        self.explain
    }

    fn emit_record(&mut self, record: serde_json::Value) {
        self.records.push(record);
    }
}

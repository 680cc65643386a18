//! The in-process versioned object store: indexes by kind, namespace and name, one strictly
//! increasing resourceVersion, optimistic concurrency, the watch log, and the seeded source of
//! UIDs and generated names. The API server's rules (defaults, what an update keeps, graceful
//! deletion, binding) are the registry's; the store stores what it is given.

use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use kubeplane_api::{
    ApiError, Cache, Clock, EventType, Kind, Object, ObjectKey, SlotHint, StoredNode, WatchEvent,
};
use kubeplane_core::SimTime;
use rustc_hash::FxHashMap;

use crate::names::NameSource;

/// Objects of one kind ("" namespace for cluster-scoped kinds), in slots: a hashed index
/// namespace → name → slot for lookups (every write and every cache read looks an object
/// up, and a tree walk compares strings at every level), and the same keys in nested trees
/// for listing in namespace and name order. Nested maps let lookups borrow `&str` keys
/// without allocating. The two maps share one string per name (every pod is in both).
#[derive(Default)]
struct Bucket {
    index: FxHashMap<String, FxHashMap<Arc<str>, usize>>,
    order: BTreeMap<String, BTreeMap<Arc<str>, usize>>,
    slots: Vec<Option<Object>>,
    /// Per slot, how many times it was emptied: a [`SlotHint`] names a slot and this count,
    /// so a hint taken before the slot changed hands no longer matches.
    gens: Vec<u64>,
    /// Per slot, the resourceVersion of the object in it as a number (its text is in the
    /// object): a quiet write checks its precondition with one comparison.
    rvs: Vec<u64>,
    /// Slots emptied by removals, reused first.
    free: Vec<usize>,
    /// How many of the stored objects carry a deletionTimestamp (the simulator's livelock
    /// budget counts the pods not being deleted without a pass over them).
    deleting: usize,
    /// Writes to the bucket's objects (inserts, removals, writes in place, counted when the
    /// slot is taken for one): see [`Cache::lease_writes`].
    writes: u64,
}

/// Whether an object is being deleted (has a deletionTimestamp).
fn is_deleting(o: &Object) -> bool {
    o.meta().deletion_timestamp.is_some()
}

/// The names map of namespace `$ns` in `$map` (a map namespace → names), made empty when
/// absent; allocates the namespace's key only then.
macro_rules! names_in {
    ($map:expr, $ns:expr) => {
        match $map.get_mut($ns) {
            Some(m) => m,
            None => $map.entry($ns.to_string()).or_default(),
        }
    };
}

impl Bucket {
    fn slot(&self, ns: &str, name: &str) -> Option<usize> {
        self.index.get(ns)?.get(name).copied()
    }

    /// The slot of a key, trying `hint` first and remembering the slot found. A hint matches
    /// while its slot has not been emptied since it was taken: the slot still holds the key
    /// it was taken for (a slot's key changes only by a removal and a new insert).
    #[inline]
    fn slot_hinted(&self, ns: &str, name: &str, hint: &mut SlotHint) -> Option<usize> {
        if let Some((i, gen)) = hint.0 {
            if self.gens.get(i) == Some(&gen) && self.slots[i].is_some() {
                debug_assert!(self.slots[i]
                    .as_ref()
                    .is_some_and(|o| o.name() == name && o.namespace() == ns));
                return Some(i);
            }
        }
        let i = self.slot(ns, name);
        hint.0 = i.map(|i| (i, self.gens[i]));
        i
    }

    fn get(&self, ns: &str, name: &str) -> Option<&Object> {
        self.slots[self.slot(ns, name)?].as_ref()
    }

    /// The stored object of a key and its slot's resourceVersion number.
    fn get_mut(&mut self, ns: &str, name: &str) -> Option<(&mut Object, &mut u64)> {
        let i = self.slot(ns, name)?;
        self.writes += 1;
        Some((self.slots[i].as_mut()?, &mut self.rvs[i]))
    }

    fn contains(&self, ns: &str, name: &str) -> bool {
        self.slot(ns, name).is_some()
    }

    /// The number of objects: the slots less the emptied ones.
    fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Inserts or replaces an object whose resourceVersion is `rv`; returns whether the
    /// object is new.
    fn insert(&mut self, ns: &str, name: &str, obj: Object, rv: u64) -> bool {
        self.writes += 1;
        self.deleting += usize::from(is_deleting(&obj));
        if let Some(i) = self.slot(ns, name) {
            let old = self.slots[i].replace(obj);
            self.count_gone(old.as_ref());
            self.rvs[i] = rv;
            return false;
        }
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(obj);
                self.rvs[i] = rv;
                i
            }
            None => {
                self.slots.push(Some(obj));
                self.gens.push(0);
                self.rvs.push(rv);
                self.slots.len() - 1
            }
        };
        let name: Arc<str> = Arc::from(name);
        names_in!(self.index, ns).insert(name.clone(), i);
        names_in!(self.order, ns).insert(name, i);
        true
    }

    fn remove(&mut self, ns: &str, name: &str) -> Option<Object> {
        let names = self.index.get_mut(ns)?;
        let i = names.remove(name)?;
        if names.is_empty() {
            self.index.remove(ns);
        }
        if let Some(names) = self.order.get_mut(ns) {
            names.remove(name);
            if names.is_empty() {
                self.order.remove(ns);
            }
        }
        self.free.push(i);
        self.writes += 1;
        self.gens[i] += 1;
        let old = self.slots[i].take();
        self.count_gone(old.as_ref());
        old
    }

    /// Takes an object that left its slot (removed or replaced) out of the count of objects
    /// being deleted.
    fn count_gone(&mut self, old: Option<&Object>) {
        self.deleting -= usize::from(old.is_some_and(is_deleting));
    }

    /// A stored object replaced in place by `new`: the count of objects being deleted
    /// follows.
    fn count_replaced(&mut self, old: &Object, new: &Object) {
        self.deleting =
            self.deleting + usize::from(is_deleting(new)) - usize::from(is_deleting(old));
    }

    /// The objects of the slots `names` lists, in its order.
    fn in_order<'a>(
        &'a self,
        names: &'a BTreeMap<Arc<str>, usize>,
    ) -> impl Iterator<Item = &'a Object> + 'a {
        names.values().filter_map(|&i| self.slots[i].as_ref())
    }

    fn values(&self) -> impl Iterator<Item = &Object> {
        self.order.values().flat_map(|m| self.in_order(m))
    }

    fn namespace_values<'a>(&'a self, ns: &str) -> impl Iterator<Item = &'a Object> + 'a {
        self.order
            .get(ns)
            .into_iter()
            .flat_map(|m| self.in_order(m))
    }
}

/// What an update's prepare step decided: write the prepared object, or remove the stored one
/// instead (upstream's `ShouldDeleteDuringUpdate`: the last finalizer of a deleting object
/// removed).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Prepared {
    Write,
    Remove,
}

/// The versioned object store. Objects of each kind are kept sorted by namespace and name, so
/// listing order is deterministic.
pub struct Store {
    buckets: Vec<Bucket>,
    /// The buckets of custom resource types, ordered by the type (group, version, kind), so
    /// listing order does not depend on when a type was first seen.
    custom: BTreeMap<Kind, Bucket>,
    resource_version: u64,
    /// The decimal text of the next resourceVersion (`resource_version + 1`), kept by adding
    /// one in place: a write copies it instead of formatting its number.
    next_text: String,
    log: Vec<WatchEvent>,
    names: NameSource,
    start: Timestamp,
}

impl Store {
    /// A store whose UIDs and generated names derive from `seed`, and whose timestamps are
    /// `start` plus the virtual time of each write.
    pub fn new(seed: u64, start: Timestamp) -> Store {
        Store {
            buckets: (0..Kind::count()).map(|_| Bucket::default()).collect(),
            custom: BTreeMap::new(),
            resource_version: 0,
            next_text: "1".to_string(),
            log: Vec::new(),
            names: NameSource::new(seed),
            start,
        }
    }

    /// The bucket of a kind: the simulated kinds first, in [`Kind::ALL`] order, then one per
    /// entry of the built-in table, then the custom resource types'.
    fn bucket(&self, kind: Kind) -> Option<&Bucket> {
        match kind.index() {
            Some(i) => Some(&self.buckets[i]),
            None => self.custom.get(&kind),
        }
    }

    /// The bucket of a kind, when there is one (see [`Store::bucket`]).
    fn bucket_mut(&mut self, kind: Kind) -> Option<&mut Bucket> {
        match kind.index() {
            Some(i) => Some(&mut self.buckets[i]),
            None => self.custom.get_mut(&kind),
        }
    }

    /// The stored object of a key and its slot's resourceVersion number, NotFound when
    /// absent: the lookup every write in place shares.
    fn slot_mut(
        &mut self,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Result<(&mut Object, &mut u64), ApiError> {
        self.bucket_mut(kind)
            .and_then(|b| b.get_mut(namespace, name))
            .ok_or_else(|| ApiError::NotFound {
                key: ObjectKey::new(kind, namespace, name),
            })
    }

    /// The bucket of a kind, made empty the first time a custom resource type is stored.
    fn bucket_or_new(&mut self, kind: Kind) -> &mut Bucket {
        match kind.index() {
            Some(i) => &mut self.buckets[i],
            None => self.custom.entry(kind).or_default(),
        }
    }

    pub fn start_time(&self) -> Timestamp {
        self.start
    }

    /// The clock whose instant zero is the store's start time.
    pub fn clock(&self) -> Clock {
        Clock::new(self.start)
    }

    /// The wall-clock timestamp of a virtual instant.
    pub fn timestamp(&self, now: SimTime) -> Time {
        Time(now.to_timestamp(self.start))
    }

    /// The virtual instant of an object timestamp.
    pub fn instant(&self, t: &Time) -> SimTime {
        SimTime::from_timestamp(t.0, self.start)
    }

    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    pub fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<&Object> {
        let ns = if kind.is_namespaced() { namespace } else { "" };
        self.bucket(kind)?.get(ns, name)
    }

    /// [`Store::get`] trying the slot `hint` names first (see [`Cache::get_hinted`]).
    pub fn get_hinted(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
        hint: &mut SlotHint,
    ) -> Option<&Object> {
        let ns = if kind.is_namespaced() { namespace } else { "" };
        let b = self.bucket(kind)?;
        b.slots[b.slot_hinted(ns, name, hint)?].as_ref()
    }

    /// [`Store::get_hinted`] for a Lease (see [`Cache::get_lease_hinted`]): its bucket is
    /// known without the kind's match, and the slot's object without the caller's. Inlined
    /// into the cache's method (the monitor reads every Lease at every renewal round).
    #[inline]
    pub fn get_lease_hinted(
        &self,
        namespace: &str,
        name: &str,
        hint: &mut SlotHint,
    ) -> Option<&Arc<Lease>> {
        let b = &self.buckets[Kind::Lease.index()?];
        match b.slots[b.slot_hinted(namespace, name, hint)?].as_ref()? {
            Object::Lease(l) => Some(l),
            _ => None,
        }
    }

    /// [`Cache::lease_writes`]: the writes to the Lease bucket.
    pub fn lease_writes(&self) -> u64 {
        Kind::Lease.index().map_or(0, |i| self.buckets[i].writes)
    }

    pub fn get_key(&self, key: &ObjectKey) -> Option<&Object> {
        self.bucket(key.kind)?.get(&key.namespace, &key.name)
    }

    pub fn get_pod(&self, namespace: &str, name: &str) -> Option<&Arc<StoredPod>> {
        self.get(Kind::Pod, namespace, name)
            .and_then(Object::as_pod)
    }

    pub fn get_node(&self, name: &str) -> Option<&Arc<StoredNode>> {
        self.get(Kind::Node, "", name).and_then(Object::as_node)
    }

    /// Every object of a kind, ordered by namespace then name.
    pub fn list(&self, kind: Kind) -> impl Iterator<Item = &Object> {
        self.bucket(kind).into_iter().flat_map(Bucket::values)
    }

    /// The objects of a kind in one namespace, ordered by name.
    pub fn list_namespace<'a>(
        &'a self,
        kind: Kind,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a Object> + 'a {
        self.bucket(kind)
            .into_iter()
            .flat_map(move |b| b.namespace_values(namespace))
    }

    /// Every stored object: the simulated kinds in [`Kind::ALL`] order, then the other kinds in
    /// the built-in table's order, then the custom resource types by group, version and kind;
    /// each kind by namespace and name.
    pub fn all(&self) -> impl Iterator<Item = &Object> {
        self.every_bucket().flat_map(Bucket::values)
    }

    fn every_bucket(&self) -> impl Iterator<Item = &Bucket> {
        self.buckets.iter().chain(self.custom.values())
    }

    /// The kinds that have at least one stored object, in [`Store::all`]'s order.
    pub fn stored_kinds(&self) -> impl Iterator<Item = Kind> + '_ {
        self.every_bucket()
            .filter_map(|b| b.values().next().map(Object::kind))
    }

    pub fn count(&self, kind: Kind) -> usize {
        self.bucket(kind).map_or(0, Bucket::len)
    }

    /// The stored objects of a kind that are not being deleted (no deletionTimestamp), kept
    /// as the objects are written: no pass over them.
    pub fn count_not_deleting(&self, kind: Kind) -> usize {
        self.bucket(kind).map_or(0, |b| b.len() - b.deleting)
    }

    pub fn pods(&self) -> impl Iterator<Item = &Arc<StoredPod>> {
        self.list(Kind::Pod).filter_map(Object::as_pod)
    }

    pub fn nodes(&self) -> impl Iterator<Item = &Arc<StoredNode>> {
        self.list(Kind::Node).filter_map(Object::as_node)
    }

    /// Takes the watch events appended since the last call, in resourceVersion order.
    pub fn take_events(&mut self) -> Vec<WatchEvent> {
        std::mem::take(&mut self.log)
    }

    /// Moves the pending watch events into `buf` (cleared first), keeping both allocations.
    pub fn swap_events(&mut self, buf: &mut Vec<WatchEvent>) {
        buf.clear();
        std::mem::swap(&mut self.log, buf);
    }

    pub fn has_events(&self) -> bool {
        !self.log.is_empty()
    }

    /// The store's seeded source of UIDs and generated names.
    pub fn names(&mut self) -> &mut NameSource {
        &mut self.names
    }

    /// Takes the next resourceVersion (its text was `next_text`).
    #[inline]
    fn next_rv(&mut self) -> u64 {
        self.resource_version += 1;
        increment(&mut self.next_text);
        self.resource_version
    }

    fn push(&mut self, type_: EventType, object: Object, old: Option<Object>, rv: u64) {
        self.log.push(WatchEvent {
            type_,
            object,
            old,
            resource_version: rv,
        });
    }

    /// Stores a new object as given, with the write's resourceVersion; AlreadyExists when its
    /// key is taken. `fill` runs after that check and before the object is stored, with the
    /// store's seeded source (the registry fills in the UID there), so a failed create draws
    /// nothing from it; it must not change the object's namespace or name.
    pub fn create_with(
        &mut self,
        mut obj: Object,
        fill: impl FnOnce(&mut Object, &mut NameSource),
    ) -> Result<Object, ApiError> {
        let kind = obj.kind();
        let key = obj.key();
        if self
            .bucket(kind)
            .is_some_and(|b| b.contains(&key.namespace, &key.name))
        {
            return Err(ApiError::AlreadyExists { key });
        }
        fill(&mut obj, &mut self.names);
        obj.meta_mut().resource_version = Some(self.next_text.clone());
        let rv = self.next_rv();
        self.bucket_or_new(kind)
            .insert(&key.namespace, &key.name, obj.clone(), rv);
        self.push(EventType::Added, obj.clone(), None, rv);
        Ok(obj)
    }

    /// Stores a new object as given (see [`Store::create_with`]).
    pub fn create(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.create_with(obj, |_, _| {})
    }

    /// Replaces the stored object of `obj`'s key with `obj` after `prepare` has adjusted it
    /// against the stored one (the registry's strategies). Optimistic concurrency: a non-empty
    /// resourceVersion or UID on `obj` that is not the stored one is a Conflict, checked
    /// before `prepare` runs. The object stored gets the write's resourceVersion. When
    /// `prepare` answers [`Prepared::Remove`], the stored object is removed instead (the call
    /// returns its last state). One lookup.
    pub fn update(
        &mut self,
        mut obj: Object,
        prepare: impl FnOnce(&Object, &mut Object) -> Result<Prepared, ApiError>,
    ) -> Result<Object, ApiError> {
        let kind = obj.kind();
        let text = self.next_text.clone();
        let next = self.resource_version + 1;
        let (slot, slot_rv) = self.slot_mut(kind, obj.namespace(), obj.name())?;
        let given_rv = obj.resource_version();
        if !given_rv.is_empty() && given_rv != slot.resource_version() {
            return Err(ApiError::Conflict { key: obj.key() });
        }
        if !obj.uid().is_empty() && obj.uid() != slot.uid() {
            return Err(ApiError::Conflict { key: obj.key() });
        }
        if prepare(slot, &mut obj)? == Prepared::Remove {
            return self.delete(&obj.key());
        }
        obj.meta_mut().resource_version = Some(text);
        let old = std::mem::replace(slot, obj.clone());
        *slot_rv = next;
        if let Some(b) = self.bucket_mut(kind) {
            b.count_replaced(&old, &obj);
        }
        let rv = self.next_rv();
        self.push(EventType::Modified, obj.clone(), Some(old), rv);
        Ok(obj)
    }

    /// Replaces a stored object with what `f` makes of it (upstream's GuaranteedUpdate with
    /// the current object): NotFound when absent. `f` checks its own preconditions; the object
    /// stored gets the write's resourceVersion. One lookup.
    pub fn update_with(
        &mut self,
        kind: Kind,
        namespace: &str,
        name: &str,
        f: impl FnOnce(&Object) -> Result<Object, ApiError>,
    ) -> Result<Object, ApiError> {
        let text = self.next_text.clone();
        let next = self.resource_version + 1;
        let (slot, slot_rv) = self.slot_mut(kind, namespace, name)?;
        let mut obj = f(slot)?;
        obj.meta_mut().resource_version = Some(text);
        let old = std::mem::replace(slot, obj.clone());
        *slot_rv = next;
        if let Some(b) = self.bucket_mut(kind) {
            b.count_replaced(&old, &obj);
        }
        let rv = self.next_rv();
        self.push(EventType::Modified, obj.clone(), Some(old), rv);
        Ok(obj)
    }

    /// Changes a stored object in place with `f`, giving it the write's resourceVersion
    /// (returned) but appending no watch event: a write only readers of the store see. Only
    /// `simulate`'s quiet Lease renewals use it (nothing in a simulation watches them), so a
    /// run's resourceVersions stay those of the writes it replaces. Conflict unless the
    /// stored object is at `resource_version` (one comparison of the slot's number); NotFound
    /// when absent. `f` gets the object and the text of the write's resourceVersion, which it
    /// must set as the object's `metadata.resourceVersion` (the caller knows the object's
    /// type, so no dynamic dispatch finds the metadata); it may refuse, and must then leave
    /// the object as it was (the store keeps it, and no version is drawn). `hint` as for [`Store::get_hinted`] (the writer renews the same Lease every 10 s).
    pub fn write_quietly(
        &mut self,
        kind: Kind,
        namespace: &str,
        name: &str,
        hint: &mut SlotHint,
        resource_version: u64,
        f: impl FnOnce(&mut Object, &str) -> Result<(), ApiError>,
    ) -> Result<u64, ApiError> {
        let not_found = || ApiError::NotFound {
            key: ObjectKey::new(kind, namespace, name),
        };
        let Store {
            buckets,
            custom,
            next_text,
            ..
        } = self;
        let bucket = match kind.index() {
            Some(i) => buckets.get_mut(i),
            None => custom.get_mut(&kind),
        };
        let bucket = bucket.ok_or_else(not_found)?;
        let i = bucket
            .slot_hinted(namespace, name, hint)
            .ok_or_else(not_found)?;
        let slot = bucket.slots[i].as_mut().ok_or_else(not_found)?;
        if bucket.rvs[i] != resource_version {
            return Err(ApiError::Conflict { key: slot.key() });
        }
        let was_deleting = is_deleting(slot);
        f(slot, next_text)?;
        debug_assert_eq!(slot.resource_version(), next_text.as_str());
        let now_deleting = is_deleting(slot);
        bucket.deleting = bucket.deleting + usize::from(now_deleting) - usize::from(was_deleting);
        bucket.rvs[i] = self.resource_version + 1;
        bucket.writes += 1;
        Ok(self.next_rv())
    }

    /// [`Store::write_quietly`] of a Lease's renewal, as `simulate`'s agents renew (every node
    /// every 10 s): the stored Lease, if at `resource_version`, gets `renew` as its
    /// `spec.renewTime` and the write's resourceVersion (returned), without a watch event.
    /// The same checks in the same order as the general write with the registry's renewal (NotFound
    /// when absent, Conflict at another version or for an object that is not a Lease), the
    /// same stored object and version, without the kind's dispatch and the deletion count (a
    /// renewal keeps the deletionTimestamp).
    pub fn renew_lease_quietly(
        &mut self,
        namespace: &str,
        name: &str,
        hint: &mut SlotHint,
        resource_version: u64,
        renew: Timestamp,
    ) -> Result<u64, ApiError> {
        let Some(b) = Kind::Lease.index() else {
            return Err(lease_not_found(namespace, name));
        };
        let Store {
            buckets,
            next_text,
            resource_version: counter,
            ..
        } = self;
        let bucket = &mut buckets[b];
        let Some(i) = bucket.slot_hinted(namespace, name, hint) else {
            return Err(lease_not_found(namespace, name));
        };
        let at_version = bucket.rvs[i] == resource_version;
        let l = match &mut bucket.slots[i] {
            Some(Object::Lease(l)) if at_version => Arc::make_mut(l),
            Some(other) => return Err(conflict(other)),
            None => return Err(lease_not_found(namespace, name)),
        };
        l.spec.get_or_insert_with(Default::default).renew_time = Some(MicroTime(renew));
        // `clear` and `push_str` inline into a copy where `clone_from` is a call (the texts
        // are a few digits, within the old text's capacity).
        match &mut l.metadata.resource_version {
            Some(s) => {
                s.clear();
                s.push_str(next_text);
            }
            None => l.metadata.resource_version = Some(next_text.clone()),
        }
        bucket.rvs[i] = *counter + 1;
        bucket.writes += 1;
        Ok(self.next_rv())
    }

    /// Removes an object; returns its last state, which the Deleted event shares (the event's
    /// own version is its `resource_version`). NotFound when absent.
    pub fn delete(&mut self, key: &ObjectKey) -> Result<Object, ApiError> {
        let Some(old) = self
            .bucket_mut(key.kind)
            .and_then(|b| b.remove(&key.namespace, &key.name))
        else {
            return Err(ApiError::NotFound { key: key.clone() });
        };
        let rv = self.next_rv();
        self.push(EventType::Deleted, old.clone(), Some(old.clone()), rv);
        Ok(old)
    }
}

/// [`Store::renew_lease_quietly`]'s NotFound, out of line (the renewal's path builds no
/// error).
#[cold]
#[inline(never)]
fn lease_not_found(namespace: &str, name: &str) -> ApiError {
    ApiError::NotFound {
        key: ObjectKey::new(Kind::Lease, namespace, name),
    }
}

/// [`Store::renew_lease_quietly`]'s Conflict, out of line.
#[cold]
#[inline(never)]
fn conflict(stored: &Object) -> ApiError {
    ApiError::Conflict { key: stored.key() }
}

/// Adds one to a decimal number in place (the next resourceVersion's text). Inlined into
/// every write: nine times in ten the last digit is 0 to 8 and it alone changes, which takes
/// a few instructions without a call (the carry is out of line, so the callers keep no
/// registers for it; `truncate` rather than `pop`, which decodes the char it removes).
#[inline]
fn increment(digits: &mut String) {
    match digits.as_bytes().last() {
        Some(&d) if (b'0'..=b'8').contains(&d) => {
            digits.truncate(digits.len() - 1);
            digits.push(char::from(d + 1));
        }
        _ => increment_carry(digits),
    }
}

/// [`increment`] when the last digit is a 9 (or the text is empty).
#[cold]
#[inline(never)]
fn increment_carry(digits: &mut String) {
    let bytes = digits.as_bytes();
    let Some(last) = bytes.iter().rposition(|&d| d != b'9') else {
        // All nines (or empty): one more digit.
        let n = digits.len();
        digits.clear();
        digits.push('1');
        digits.extend(std::iter::repeat_n('0', n));
        return;
    };
    let nines = bytes.len() - last - 1;
    let bumped = char::from(bytes[last] + 1);
    digits.truncate(last);
    digits.push(bumped);
    for _ in 0..nines {
        digits.push('0');
    }
}

impl Cache for Store {
    fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<&Object> {
        Store::get(self, kind, namespace, name)
    }

    fn get_hinted(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
        hint: &mut SlotHint,
    ) -> Option<&Object> {
        Store::get_hinted(self, kind, namespace, name, hint)
    }

    fn get_lease_hinted(
        &self,
        namespace: &str,
        name: &str,
        hint: &mut SlotHint,
    ) -> Option<&Arc<Lease>> {
        Store::get_lease_hinted(self, namespace, name, hint)
    }

    fn lease_writes(&self) -> Option<u64> {
        Some(Store::lease_writes(self))
    }

    fn list<'a>(&'a self, kind: Kind) -> Box<dyn Iterator<Item = &'a Object> + 'a> {
        Box::new(Store::list(self, kind))
    }
}

#[cfg(test)]
mod tests;

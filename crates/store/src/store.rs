//! The in-process versioned object store.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubeplane_api::{
    ApiError, Cache, Clock, DeleteOptions, EventType, Kind, Object, ObjectKey, WatchEvent,
};
use kubeplane_core::SimTime;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The default grace period of a pod without terminationGracePeriodSeconds.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECS: i64 = 30;

/// The characters upstream uses for generated name suffixes (no vowels, no confusable digits).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Objects of one kind: namespace → name → object ("" namespace for cluster-scoped kinds).
/// Nested maps let lookups borrow `&str` keys without allocating.
#[derive(Default)]
struct Bucket {
    namespaces: BTreeMap<String, BTreeMap<String, Object>>,
    len: usize,
}

impl Bucket {
    fn get(&self, ns: &str, name: &str) -> Option<&Object> {
        self.namespaces.get(ns).and_then(|m| m.get(name))
    }

    fn get_mut(&mut self, ns: &str, name: &str) -> Option<&mut Object> {
        self.namespaces.get_mut(ns).and_then(|m| m.get_mut(name))
    }

    fn contains(&self, ns: &str, name: &str) -> bool {
        self.get(ns, name).is_some()
    }

    /// Inserts or replaces; returns whether the object is new.
    fn insert(&mut self, ns: &str, name: &str, obj: Object) -> bool {
        let names = match self.namespaces.get_mut(ns) {
            Some(m) => m,
            None => self.namespaces.entry(ns.to_string()).or_default(),
        };
        match names.get_mut(name) {
            Some(slot) => {
                *slot = obj;
                false
            }
            None => {
                names.insert(name.to_string(), obj);
                self.len += 1;
                true
            }
        }
    }

    fn remove(&mut self, ns: &str, name: &str) -> Option<Object> {
        let names = self.namespaces.get_mut(ns)?;
        let removed = names.remove(name)?;
        if names.is_empty() {
            self.namespaces.remove(ns);
        }
        self.len -= 1;
        Some(removed)
    }

    fn values(&self) -> impl Iterator<Item = &Object> {
        self.namespaces.values().flat_map(|m| m.values())
    }
}

/// The versioned object store. Objects of each kind are kept sorted by namespace and name, so
/// listing order is deterministic.
pub struct Store {
    buckets: Vec<Bucket>,
    resource_version: u64,
    log: Vec<WatchEvent>,
    rng: ChaCha8Rng,
    start: Timestamp,
}

/// The bucket of a kind: the simulated kinds first, in [`Kind::ALL`] order, then one per entry
/// of the built-in table.
fn idx(kind: Kind) -> usize {
    match kind {
        Kind::Namespace => 0,
        Kind::Node => 1,
        Kind::PriorityClass => 2,
        Kind::Deployment => 3,
        Kind::ReplicaSet => 4,
        Kind::PodDisruptionBudget => 5,
        Kind::Pod => 6,
        Kind::Lease => 7,
        Kind::Other(t) => {
            let i = kubeplane_api::types::BUILTIN
                .iter()
                .position(|b| std::ptr::eq(b, t))
                .expect("every stored type is in the built-in table");
            Kind::ALL.len() + i
        }
    }
}

impl Store {
    /// A store whose UIDs and generated names derive from `seed`, and whose timestamps are
    /// `start` plus the virtual time of each write.
    pub fn new(seed: u64, start: Timestamp) -> Store {
        Store {
            buckets: (0..Kind::ALL.len() + kubeplane_api::types::BUILTIN.len())
                .map(|_| Bucket::default())
                .collect(),
            resource_version: 0,
            log: Vec::new(),
            // A distinct stream from the other seeded sources of the run.
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5354_4f52_4555_4944),
            start,
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
        self.buckets[idx(kind)].get(ns, name)
    }

    pub fn get_key(&self, key: &ObjectKey) -> Option<&Object> {
        self.buckets[idx(key.kind)].get(&key.namespace, &key.name)
    }

    pub fn get_pod(&self, namespace: &str, name: &str) -> Option<&Arc<Pod>> {
        self.get(Kind::Pod, namespace, name)
            .and_then(Object::as_pod)
    }

    pub fn get_node(&self, name: &str) -> Option<&Arc<Node>> {
        self.get(Kind::Node, "", name).and_then(Object::as_node)
    }

    /// Every object of a kind, ordered by namespace then name.
    pub fn list(&self, kind: Kind) -> impl Iterator<Item = &Object> {
        self.buckets[idx(kind)].values()
    }

    /// The objects of a kind in one namespace, ordered by name.
    pub fn list_namespace<'a>(
        &'a self,
        kind: Kind,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a Object> + 'a {
        self.buckets[idx(kind)]
            .namespaces
            .get(namespace)
            .into_iter()
            .flat_map(|m| m.values())
    }

    /// Every stored object: the simulated kinds in [`Kind::ALL`] order, then the other kinds in
    /// the built-in table's order; each kind by namespace and name.
    pub fn all(&self) -> impl Iterator<Item = &Object> {
        self.buckets.iter().flat_map(Bucket::values)
    }

    /// The kinds that have at least one stored object, in [`Store::all`]'s order.
    pub fn stored_kinds(&self) -> impl Iterator<Item = Kind> + '_ {
        self.buckets
            .iter()
            .filter_map(|b| b.values().next().map(Object::kind))
    }

    pub fn count(&self, kind: Kind) -> usize {
        self.buckets[idx(kind)].len
    }

    pub fn pods(&self) -> impl Iterator<Item = &Arc<Pod>> {
        self.list(Kind::Pod).filter_map(Object::as_pod)
    }

    pub fn nodes(&self) -> impl Iterator<Item = &Arc<Node>> {
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

    /// A random UID in the canonical 8-4-4-4-12 form, from the store's seeded source.
    pub fn new_uid(&mut self) -> String {
        let a: u128 = self.rng.random();
        let h = format!("{a:032x}");
        format!(
            "{}-{}-4{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[13..16],
            &h[16..20],
            &h[20..32]
        )
    }

    fn generated_name(&mut self, prefix: &str) -> String {
        let mut name = String::with_capacity(prefix.len() + 5);
        name.push_str(prefix);
        for _ in 0..5 {
            let i = self.rng.random_range(0..NAME_ALPHABET.len());
            name.push(NAME_ALPHABET[i] as char);
        }
        name
    }

    fn next_rv(&mut self) -> u64 {
        self.resource_version += 1;
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

    /// Creates an object. Fills in what the API server fills in: namespace `default`, a name
    /// from generateName, uid, resourceVersion, creationTimestamp, generation. Namespaces are
    /// created implicitly when first used.
    pub fn create(&mut self, mut obj: Object, now: SimTime) -> Result<Object, ApiError> {
        let kind = obj.kind();
        if obj.name().is_empty() {
            let prefix = obj.meta().generate_name.clone().unwrap_or_default();
            if prefix.is_empty() {
                return Err(ApiError::Invalid {
                    key: obj.key(),
                    message: "metadata.name: Required value: name or generateName is required"
                        .into(),
                });
            }
            let mut name = self.generated_name(&prefix);
            while self.get(kind, obj.namespace(), &name).is_some() {
                name = self.generated_name(&prefix);
            }
            obj.meta_mut().name = Some(name);
        }
        if kind.is_namespaced() {
            let ns = obj.namespace().to_string();
            obj.meta_mut().namespace = Some(ns.clone());
            if self.get(Kind::Namespace, "", &ns).is_none() {
                let namespace = Namespace {
                    metadata: ObjectMeta {
                        name: Some(ns.clone()),
                        labels: Some(
                            [("kubernetes.io/metadata.name".to_string(), ns.clone())].into(),
                        ),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                self.create(Object::Namespace(Arc::new(namespace)), now)?;
            }
        } else {
            obj.meta_mut().namespace = None;
        }
        let key = obj.key();
        if self.buckets[idx(kind)].contains(&key.namespace, &key.name) {
            return Err(ApiError::AlreadyExists { key });
        }
        let rv = self.next_rv();
        let uid_missing = obj.uid().is_empty();
        let uid = if uid_missing {
            Some(self.new_uid())
        } else {
            None
        };
        let ts = self.timestamp(now);
        let meta = obj.meta_mut();
        if let Some(uid) = uid {
            meta.uid = Some(uid);
        }
        meta.resource_version = Some(rv.to_string());
        if meta.creation_timestamp.is_none() {
            meta.creation_timestamp = Some(ts);
        }
        if matches!(
            kind,
            Kind::Deployment | Kind::ReplicaSet | Kind::PodDisruptionBudget
        ) && meta.generation.is_none()
        {
            meta.generation = Some(1);
        }
        if kind == Kind::Namespace {
            let name = meta.name.clone().unwrap_or_default();
            meta.labels
                .get_or_insert_with(Default::default)
                .entry("kubernetes.io/metadata.name".into())
                .or_insert(name);
        }
        self.buckets[idx(kind)].insert(&key.namespace, &key.name, obj.clone());
        self.push(EventType::Added, obj.clone(), None, rv);
        Ok(obj)
    }

    /// Replaces the main resource, as a PUT does. A non-empty resourceVersion on `obj` must
    /// equal the stored one. uid and creationTimestamp are kept, and so is the stored status of
    /// a kind with a status subresource (upstream's strategies reset it); a spec change of a
    /// Deployment, ReplicaSet or PodDisruptionBudget bumps metadata.generation, and so does an
    /// annotation change of a Deployment.
    pub fn update(&mut self, obj: Object, now: SimTime) -> Result<Object, ApiError> {
        self.replace(obj, Subresource::Main, now)
    }

    /// Replaces the status subresource: only `.status` of `obj` is written, the rest of the
    /// stored object is kept (upstream's status strategies). A non-empty resourceVersion on
    /// `obj` must equal the stored one.
    pub fn update_status(&mut self, obj: Object, now: SimTime) -> Result<Object, ApiError> {
        self.replace(obj, Subresource::Status, now)
    }

    fn replace(
        &mut self,
        mut obj: Object,
        part: Subresource,
        _now: SimTime,
    ) -> Result<Object, ApiError> {
        let kind = obj.kind();
        let rv = self.resource_version + 1;
        // One lookup: check against the stored version and replace it in place.
        let bucket = &mut self.buckets[idx(kind)];
        let (ns, name) = (obj.namespace(), obj.name());
        let Some(slot) = bucket.get_mut(ns, name) else {
            return Err(ApiError::NotFound { key: obj.key() });
        };
        let old = &*slot;
        let given_rv = obj.resource_version();
        if !given_rv.is_empty() && given_rv != old.resource_version() {
            return Err(ApiError::Conflict { key: obj.key() });
        }
        if !obj.uid().is_empty() && obj.uid() != old.uid() {
            return Err(ApiError::Conflict { key: obj.key() });
        }
        match part {
            Subresource::Main => copy_status(old, &mut obj),
            Subresource::Status => keep_for_status_update(old, &mut obj),
            Subresource::Whole => {}
        }
        check_node_name_unchanged(old, &obj)?;
        let generation_bump = match (&obj, old) {
            // Upstream's Deployment strategy also bumps it for an annotation change on the main
            // resource ("annotations are copied from deployments to their replica sets").
            (Object::Deployment(n), Object::Deployment(o)) => {
                n.spec != o.spec
                    || (part == Subresource::Main
                        && n.metadata.annotations != o.metadata.annotations)
            }
            (Object::ReplicaSet(n), Object::ReplicaSet(o)) => n.spec != o.spec,
            (Object::PodDisruptionBudget(n), Object::PodDisruptionBudget(o)) => n.spec != o.spec,
            _ => false,
        };
        let old_meta = old.meta();
        let meta = obj.meta_mut();
        if meta.uid != old_meta.uid {
            meta.uid.clone_from(&old_meta.uid);
        }
        if meta.creation_timestamp != old_meta.creation_timestamp {
            meta.creation_timestamp
                .clone_from(&old_meta.creation_timestamp);
        }
        // An update can never clear or move a deletionTimestamp (upstream `BeforeUpdate`); only
        // the registry's own writes (`Whole`) do.
        let keep_deletion = meta.deletion_timestamp.is_none()
            || (part != Subresource::Whole && old_meta.deletion_timestamp.is_some());
        if keep_deletion {
            meta.deletion_timestamp
                .clone_from(&old_meta.deletion_timestamp);
            meta.deletion_grace_period_seconds = old_meta.deletion_grace_period_seconds;
        }
        meta.resource_version = Some(rv.to_string());
        let old_gen = old_meta.generation;
        if generation_bump {
            meta.generation = Some(old_gen.unwrap_or(1) + 1);
        } else if meta.generation.is_none() {
            meta.generation = old_gen;
        }
        let old = std::mem::replace(slot, obj.clone());
        self.resource_version = rv;
        self.push(EventType::Modified, obj.clone(), Some(old), rv);
        Ok(obj)
    }

    /// Deletes an object. A pod bound to a node with a non-zero grace period becomes
    /// Terminating (deletionTimestamp = now + grace, a Modified event) and stays until deleted
    /// again with grace 0 (its node agent does this). Anything else is removed at once.
    /// Returns the object as it is after the call (`None` when it is gone).
    pub fn delete(
        &mut self,
        key: &ObjectKey,
        opts: &DeleteOptions,
        now: SimTime,
    ) -> Result<Option<Object>, ApiError> {
        let Some(old) = self.buckets[idx(key.kind)]
            .get(&key.namespace, &key.name)
            .cloned()
        else {
            return Err(ApiError::NotFound { key: key.clone() });
        };
        if let Some(uid) = &opts.precondition_uid {
            if uid != old.uid() {
                return Err(ApiError::Conflict { key: key.clone() });
            }
        }
        if let Some(rv) = &opts.precondition_resource_version {
            if rv != old.resource_version() {
                return Err(ApiError::Conflict { key: key.clone() });
            }
        }
        if let Object::Pod(pod) = &old {
            let bound = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| !n.is_empty());
            let grace = opts.grace_period_secs.unwrap_or_else(|| {
                pod.spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
                    .unwrap_or(DEFAULT_TERMINATION_GRACE_PERIOD_SECS)
            });
            if bound && grace > 0 {
                let current = pod.metadata.deletion_grace_period_seconds;
                if pod.metadata.deletion_timestamp.is_some() && current.is_some_and(|c| c <= grace)
                {
                    // Already terminating with a grace period at least as short.
                    return Ok(Some(old));
                }
                let mut p = Pod::clone(pod);
                let deadline = now + kubeplane_core::time::SimDuration::from_secs(grace);
                p.metadata.deletion_timestamp = Some(self.timestamp(deadline));
                p.metadata.deletion_grace_period_seconds = Some(grace);
                let rv = self.next_rv();
                p.metadata.resource_version = Some(rv.to_string());
                let obj = Object::Pod(Arc::new(p));
                self.buckets[idx(key.kind)].insert(&key.namespace, &key.name, obj.clone());
                self.push(EventType::Modified, obj.clone(), Some(old), rv);
                return Ok(Some(obj));
            }
        }
        self.buckets[idx(key.kind)].remove(&key.namespace, &key.name);
        let rv = self.next_rv();
        self.push(EventType::Deleted, old.clone(), Some(old), rv);
        Ok(None)
    }

    /// Removes an object whatever its state (the last step of every deletion; the registry's
    /// rules, `kubeplane_registry::deletion`, decide when). The Deleted event carries the last
    /// stored state.
    pub fn remove(&mut self, key: &ObjectKey) -> Result<Object, ApiError> {
        let Some(old) = self.buckets[idx(key.kind)].remove(&key.namespace, &key.name) else {
            return Err(ApiError::NotFound { key: key.clone() });
        };
        let rv = self.next_rv();
        self.push(EventType::Deleted, old.clone(), Some(old.clone()), rv);
        Ok(old)
    }

    /// Replaces the whole object, spec, status and metadata (the registry's own writes, such as
    /// marking an object as being deleted). A non-empty resourceVersion on `obj` must equal the
    /// stored one.
    pub fn write(&mut self, obj: Object, now: SimTime) -> Result<Object, ApiError> {
        self.replace(obj, Subresource::Whole, now)
    }

    /// The pods/binding subresource: binds an unbound pod to a node and sets its PodScheduled
    /// condition to True.
    pub fn bind(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
        now: SimTime,
    ) -> Result<Object, ApiError> {
        let key = ObjectKey::new(Kind::Pod, namespace, name);
        let Some(pod) = self.get_pod(namespace, name).cloned() else {
            return Err(ApiError::NotFound { key });
        };
        if !uid.is_empty() && pod.metadata.uid.as_deref() != Some(uid) {
            return Err(ApiError::Conflict { key });
        }
        if pod.metadata.deletion_timestamp.is_some() {
            return Err(ApiError::Invalid {
                key,
                message: "pod is being deleted, cannot be assigned to a host".into(),
            });
        }
        if let Some(current) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
            if !current.is_empty() {
                return Err(ApiError::Conflict { key });
            }
        }
        let mut p = Pod::clone(&pod);
        p.spec.get_or_insert_with(Default::default).node_name = Some(node.to_string());
        let ts = self.timestamp(now);
        let status = p.status.get_or_insert_with(Default::default);
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        conditions.retain(|c| c.type_ != "PodScheduled");
        conditions.push(PodCondition {
            type_: "PodScheduled".into(),
            status: "True".into(),
            last_transition_time: Some(ts),
            ..Default::default()
        });
        self.replace(Object::Pod(Arc::new(p)), Subresource::Whole, now)
    }
}

/// A bound pod's node may not change (upstream's pod update validation).
fn check_node_name_unchanged(old: &Object, new: &Object) -> Result<(), ApiError> {
    let (Object::Pod(new_pod), Object::Pod(old_pod)) = (new, old) else {
        return Ok(());
    };
    let old_node = old_pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    let new_node = new_pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    if old_node.is_some() && old_node != new_node {
        return Err(ApiError::Invalid {
            key: new.key(),
            message: "spec.nodeName: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.schedulingGates` and `spec.terminationGracePeriodSeconds`".into(),
        });
    }
    Ok(())
}

/// Which part of an object a replacement writes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Subresource {
    /// The main resource: the stored status is kept.
    Main,
    /// The status subresource: only the status is written.
    Status,
    /// Both (the store's own writes, such as a binding).
    Whole,
}

/// Sets `to`'s status to `from`'s, for the kinds with a status subresource (upstream's
/// strategies reset it on a main-resource update). Copies only when they differ, so an
/// unchanged status stays shared.
fn copy_status(from: &Object, to: &mut Object) {
    macro_rules! keep {
        ($($variant:ident),*) => {
            match (from, to) {
                $((Object::$variant(f), Object::$variant(t)) if t.status != f.status => {
                    Arc::make_mut(t).status.clone_from(&f.status);
                })*
                // PriorityClasses and Leases have no status.
                _ => {}
            }
        };
    }
    keep!(
        Pod,
        Node,
        Namespace,
        Deployment,
        ReplicaSet,
        PodDisruptionBudget
    );
}

/// What upstream's status strategies keep from the stored object on an update of the status
/// subresource: the spec of every kind, a pod's ownerReferences and a Deployment's labels. The
/// rest of the metadata (annotations, say) may change, as upstream's Deployment controller
/// relies on when it writes the revision annotation with UpdateStatus.
fn keep_for_status_update(old: &Object, new: &mut Object) {
    macro_rules! keep_spec {
        ($($variant:ident),*) => {
            match (old, &mut *new) {
                $((Object::$variant(o), Object::$variant(n)) if n.spec != o.spec => {
                    Arc::make_mut(n).spec.clone_from(&o.spec);
                })*
                _ => {}
            }
        };
    }
    keep_spec!(
        Pod,
        Node,
        Namespace,
        Deployment,
        ReplicaSet,
        PodDisruptionBudget
    );
    match (old, new) {
        (Object::Pod(o), Object::Pod(n))
            if n.metadata.owner_references != o.metadata.owner_references =>
        {
            Arc::make_mut(n)
                .metadata
                .owner_references
                .clone_from(&o.metadata.owner_references);
        }
        (Object::Deployment(o), Object::Deployment(n))
            if n.metadata.labels != o.metadata.labels =>
        {
            Arc::make_mut(n)
                .metadata
                .labels
                .clone_from(&o.metadata.labels);
        }
        _ => {}
    }
}

impl Cache for Store {
    fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<&Object> {
        Store::get(self, kind, namespace, name)
    }

    fn list<'a>(&'a self, kind: Kind) -> Box<dyn Iterator<Item = &'a Object> + 'a> {
        Box::new(Store::list(self, kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodSpec;

    fn store() -> Store {
        Store::new(7, "2025-01-01T00:00:00Z".parse().unwrap())
    }

    fn pod(name: &str, node: Option<&str>) -> Object {
        Object::Pod(Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    #[test]
    fn every_write_bumps_a_strictly_increasing_resource_version() {
        let mut s = store();
        let a = s.create(pod("a", None), SimTime::ZERO).unwrap();
        let b = s.update(a.clone(), SimTime::ZERO).unwrap();
        let rvs: Vec<u64> = [a, b]
            .iter()
            .map(|o| o.resource_version().parse().unwrap())
            .collect();
        assert!(rvs[0] < rvs[1]);
        let events = s.take_events();
        // Namespace "default" is created implicitly before the pod.
        assert_eq!(events.len(), 3);
        assert_eq!(events[0].object.kind(), Kind::Namespace);
        assert!(events
            .windows(2)
            .all(|w| w[0].resource_version < w[1].resource_version));
    }

    #[test]
    fn an_update_with_a_stale_resource_version_is_a_conflict() {
        let mut s = store();
        let a = s.create(pod("a", None), SimTime::ZERO).unwrap();
        s.update(a.clone(), SimTime::ZERO).unwrap();
        let err = s.update(a, SimTime::ZERO).unwrap_err();
        assert!(matches!(err, ApiError::Conflict { .. }));
    }

    #[test]
    fn deleting_a_bound_pod_makes_it_terminating_until_a_forced_delete() {
        let mut s = store();
        s.create(pod("a", Some("n1")), SimTime::ZERO).unwrap();
        let key = ObjectKey::new(Kind::Pod, "default", "a");
        let after = s
            .delete(&key, &DeleteOptions::default(), SimTime::from_secs(5))
            .unwrap()
            .unwrap();
        let p = after.as_pod().unwrap();
        assert_eq!(p.metadata.deletion_grace_period_seconds, Some(30));
        assert_eq!(
            s.instant(p.metadata.deletion_timestamp.as_ref().unwrap()),
            SimTime::from_secs(35)
        );
        assert!(s
            .delete(&key, &DeleteOptions::now(), SimTime::from_secs(35))
            .unwrap()
            .is_none());
        assert!(s.get_pod("default", "a").is_none());
    }

    #[test]
    fn deleting_an_unbound_pod_removes_it_at_once() {
        let mut s = store();
        s.create(pod("a", None), SimTime::ZERO).unwrap();
        let key = ObjectKey::new(Kind::Pod, "default", "a");
        assert!(s
            .delete(&key, &DeleteOptions::default(), SimTime::ZERO)
            .unwrap()
            .is_none());
        let events = s.take_events();
        let last = events.last().unwrap();
        assert_eq!(last.type_, EventType::Deleted);
        // The deletion has its own version, after the creation's; the object is the last state.
        let created = events
            .iter()
            .find(|e| e.type_ == EventType::Added && e.object.kind() == Kind::Pod)
            .unwrap();
        assert!(last.resource_version > created.resource_version);
        assert_eq!(
            last.object.resource_version(),
            created.object.resource_version()
        );
    }

    #[test]
    fn uids_and_generated_names_derive_from_the_seed() {
        let gen = |seed| {
            let mut s = Store::new(seed, Timestamp::UNIX_EPOCH);
            let mut o = pod("", None);
            o.meta_mut().generate_name = Some("web-".into());
            let o = s.create(o, SimTime::ZERO).unwrap();
            (o.name().to_string(), o.uid().to_string())
        };
        assert_eq!(gen(1), gen(1));
        assert_ne!(gen(1), gen(2));
        assert!(gen(1).0.starts_with("web-") && gen(1).0.len() == 9);
    }

    #[test]
    fn binding_sets_the_node_and_the_pod_scheduled_condition() {
        let mut s = store();
        let p = s.create(pod("a", None), SimTime::ZERO).unwrap();
        let bound = s
            .bind("default", "a", p.uid(), "n1", SimTime::ZERO)
            .unwrap();
        let bound = bound.as_pod().unwrap();
        assert_eq!(
            bound.spec.as_ref().unwrap().node_name.as_deref(),
            Some("n1")
        );
        // A second bind fails: the pod is already assigned.
        assert!(s.bind("default", "a", "", "n2", SimTime::ZERO).is_err());
    }

    #[test]
    fn pod_disruption_budgets_get_a_generation_bumped_by_spec_changes() {
        use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
        use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
        let mut s = store();
        let pdb = |min: i32| {
            Object::PodDisruptionBudget(Arc::new(PodDisruptionBudget {
                metadata: ObjectMeta {
                    name: Some("web".into()),
                    namespace: Some("default".into()),
                    ..Default::default()
                },
                spec: Some(PodDisruptionBudgetSpec {
                    min_available: Some(IntOrString::Int(min)),
                    ..Default::default()
                }),
                ..Default::default()
            }))
        };
        let generation = |o: &Object| o.meta().generation;
        let created = s.create(pdb(1), SimTime::ZERO).unwrap();
        assert_eq!(generation(&created), Some(1));
        // The same spec (a status-only write, say) keeps the generation.
        let same = s.update(pdb(1), SimTime::ZERO).unwrap();
        assert_eq!(generation(&same), Some(1));
        let changed = s.update(pdb(2), SimTime::ZERO).unwrap();
        assert_eq!(generation(&changed), Some(2));
        let again = s.update(pdb(3), SimTime::ZERO).unwrap();
        assert_eq!(generation(&again), Some(3));
    }

    fn running(obj: &Object) -> Object {
        let mut p = Pod::clone(obj.as_pod().unwrap());
        p.status = Some(k8s_openapi::api::core::v1::PodStatus {
            phase: Some("Running".into()),
            ..Default::default()
        });
        Object::Pod(Arc::new(p))
    }

    fn phase(o: &Object) -> Option<&str> {
        o.as_pod()?.status.as_ref()?.phase.as_deref()
    }

    #[test]
    fn a_main_resource_update_keeps_the_stored_status() {
        let mut s = store();
        let created = s.create(pod("a", Some("n1")), SimTime::ZERO).unwrap();
        let running = s.update_status(running(&created), SimTime::ZERO).unwrap();
        assert_eq!(phase(&running), Some("Running"));
        // A PUT of the main resource with no status (as `kubectl apply` sends) keeps it.
        let mut relabelled = pod("a", Some("n1"));
        relabelled.meta_mut().labels = Some([("x".to_string(), "y".to_string())].into());
        let after = s.update(relabelled, SimTime::ZERO).unwrap();
        assert_eq!(phase(&after), Some("Running"));
        assert_eq!(after.meta().labels.as_ref().unwrap()["x"], "y");
    }

    #[test]
    fn a_status_update_keeps_the_spec_and_a_pods_owner_references() {
        let mut s = store();
        let created = s.create(pod("a", None), SimTime::ZERO).unwrap();
        let mut p = Pod::clone(running(&created).as_pod().unwrap());
        p.spec.as_mut().unwrap().node_name = Some("elsewhere".into());
        p.metadata.owner_references = Some(vec![Default::default()]);
        p.metadata.annotations = Some([("a".to_string(), "b".to_string())].into());
        let after = s
            .update_status(Object::Pod(Arc::new(p)), SimTime::ZERO)
            .unwrap();
        let after = after.as_pod().unwrap();
        assert_eq!(
            after.status.as_ref().unwrap().phase.as_deref(),
            Some("Running")
        );
        assert_eq!(after.spec.as_ref().unwrap().node_name, None);
        assert_eq!(after.metadata.owner_references, None);
        // Upstream's pod status strategy lets annotations through.
        assert_eq!(after.metadata.annotations.as_ref().unwrap()["a"], "b");
    }

    #[test]
    fn a_status_update_with_a_stale_resource_version_is_a_conflict() {
        let mut s = store();
        let created = s.create(pod("a", None), SimTime::ZERO).unwrap();
        s.update(created.clone(), SimTime::ZERO).unwrap();
        let err = s
            .update_status(running(&created), SimTime::ZERO)
            .unwrap_err();
        assert!(matches!(err, ApiError::Conflict { .. }));
    }

    #[test]
    fn a_delete_with_a_stale_resource_version_precondition_is_a_conflict() {
        let mut s = store();
        let created = s.create(pod("a", None), SimTime::ZERO).unwrap();
        let current = s.update(created.clone(), SimTime::ZERO).unwrap();
        let key = created.key();
        let stale = DeleteOptions::exactly(&created);
        assert!(matches!(
            s.delete(&key, &stale, SimTime::ZERO),
            Err(ApiError::Conflict { .. })
        ));
        assert!(s
            .delete(&key, &DeleteOptions::exactly(&current), SimTime::ZERO)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_deployment_annotation_change_bumps_the_generation_on_the_main_resource_only() {
        use k8s_openapi::api::apps::v1::Deployment;
        let mut s = store();
        let d = |annotation: &str| {
            let mut d = Deployment::default();
            d.metadata.name = Some("web".into());
            d.metadata.namespace = Some("default".into());
            d.metadata.annotations = Some([("a".to_string(), annotation.to_string())].into());
            Object::Deployment(Arc::new(d))
        };
        let generation = |o: &Object| o.meta().generation;
        assert_eq!(
            generation(&s.create(d("1"), SimTime::ZERO).unwrap()),
            Some(1)
        );
        assert_eq!(
            generation(&s.update(d("2"), SimTime::ZERO).unwrap()),
            Some(2)
        );
        // The controller's revision annotation goes through the status subresource: no bump.
        assert_eq!(
            generation(&s.update_status(d("3"), SimTime::ZERO).unwrap()),
            Some(2)
        );
        assert_eq!(
            generation(&s.update(d("3"), SimTime::ZERO).unwrap()),
            Some(2)
        );
    }
}

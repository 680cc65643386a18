//! The garbage collector (upstream `pkg/controller/garbagecollector`): deletes the objects
//! whose owners are gone, following `metadata.ownerReferences`.
//!
//! Like upstream's graph builder, it watches every kind and keeps a graph by UID: every object
//! it has seen, and for every owner UID the UIDs of the objects that name it. When an owner is
//! deleted, its dependents go to the attempt-to-delete queue; so does an object that names an
//! owner UID the graph does not hold (upstream's "virtual" owner node). Processing an item
//! follows `attemptToDeleteItem`:
//!
//! - an item already being deleted (`deletionTimestamp` set) is left alone;
//! - the item is read again with an uncached GET (gone, or another UID: nothing to do);
//! - each owner reference is classified: *dangling* when the owner's UID is in the absent-owner
//!   cache, or an uncached GET of the owner (by kind and name, in the dependent's namespace for
//!   a namespaced owner) finds nothing or an object with another UID; *solid* otherwise;
//! - with at least one solid owner, the dangling references are removed from the item (upstream
//!   patches them away) and the item stays;
//! - with none, the item is deleted with background propagation, with its UID and
//!   resourceVersion as preconditions; on a conflict it is read again and, if its owner
//!   references did not change, deleted with the UID precondition only (as upstream).
//!
//! Items are processed one after another in the order they were queued (upstream runs 20
//! workers concurrently); the dependents of one owner are queued in kind, namespace, name
//! order. A dependent's own deletion then queues its dependents in turn (a Deployment's
//! ReplicaSets, then their pods), after the owner is gone: background propagation.
//!
//! Not done, because the store has no finalizers and no `propagationPolicy`: foreground
//! deletion (the `foregroundDeletion` finalizer, the owner kept until the dependents with
//! `blockOwnerDeletion` are gone) and orphan propagation (the `orphan` finalizer, the
//! references removed from the dependents). Every deletion is background. References whose
//! owner kind kubeplane does not store (upstream: resolved through discovery, an error when
//! unknown) are never treated as dangling, and a cluster-scoped object naming a namespaced
//! owner is left alone without upstream's `OwnerRefInvalidNamespace` event.

use std::collections::VecDeque;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubeplane_api::{ApiError, WatchEvent};
use kubeplane_api::{Client, Component, DeleteOptions, EventType, Kind, Object, ObjectKey};
use kubeplane_core::SimTime;
use rustc_hash::{FxHashMap, FxHashSet};

/// The garbage collector.
#[derive(Default)]
pub struct GarbageCollector {
    /// Every object seen and not deleted: UID → key.
    nodes: FxHashMap<String, ObjectKey>,
    /// Owner UID → the UIDs of the objects that name it.
    dependents: FxHashMap<String, FxHashSet<String>>,
    /// The attempt-to-delete queue: UIDs of dependents to check, and the set of them queued.
    queue: VecDeque<(String, ObjectKey)>,
    queued: FxHashSet<String>,
    /// Owner UIDs verified absent (upstream's absentOwnerCache).
    absent: FxHashSet<String>,
    deletions: u64,
}

/// How one owner reference of an item stands.
#[derive(Debug, PartialEq, Eq)]
enum Owner {
    /// The owner exists (or cannot be checked).
    Solid,
    /// The owner is gone.
    Dangling,
}

impl GarbageCollector {
    pub fn new() -> GarbageCollector {
        GarbageCollector::default()
    }

    fn enqueue(&mut self, uid: &str, key: ObjectKey) {
        if self.queued.insert(uid.to_string()) {
            self.queue.push_back((uid.to_string(), key));
        }
    }

    /// Adds an object to the graph; queues it when it names an owner the graph does not hold.
    fn added(&mut self, obj: &Object, old_refs: Option<&[OwnerReference]>) {
        let uid = obj.uid();
        if uid.is_empty() {
            return;
        }
        if !self.nodes.contains_key(uid) {
            self.nodes.insert(uid.to_string(), obj.key());
        }
        let refs = obj.meta().owner_references.as_deref().unwrap_or(&[]);
        if old_refs == Some(refs) {
            return;
        }
        for r in old_refs.unwrap_or(&[]) {
            if !refs.iter().any(|n| n.uid == r.uid) {
                if let Some(deps) = self.dependents.get_mut(&r.uid) {
                    deps.remove(uid);
                }
            }
        }
        let mut unknown_owner = false;
        for r in refs {
            self.dependents
                .entry(r.uid.clone())
                .or_default()
                .insert(uid.to_string());
            unknown_owner |= !self.nodes.contains_key(&r.uid);
        }
        if unknown_owner {
            self.enqueue(uid, obj.key());
        }
    }

    /// Removes an object from the graph and queues its dependents.
    fn deleted(&mut self, obj: &Object) {
        let uid = obj.uid();
        self.nodes.remove(uid);
        for r in obj.meta().owner_references.iter().flatten() {
            if let Some(deps) = self.dependents.get_mut(&r.uid) {
                deps.remove(uid);
                if deps.is_empty() {
                    self.dependents.remove(&r.uid);
                }
            }
        }
        let Some(deps) = self.dependents.remove(uid) else {
            return;
        };
        let mut keyed: Vec<(ObjectKey, String)> = deps
            .into_iter()
            .filter_map(|d| self.nodes.get(&d).map(|k| (k.clone(), d)))
            .collect();
        keyed.sort();
        for (key, dep) in keyed {
            self.enqueue(&dep, key);
        }
    }

    /// Whether an owner reference of the object at `dependent` is dangling (upstream
    /// `isDangling`), reading the owner with an uncached GET.
    fn classify(
        &mut self,
        r: &OwnerReference,
        dependent: &ObjectKey,
        client: &mut dyn Client,
    ) -> Owner {
        if self.absent.contains(&r.uid) {
            return Owner::Dangling;
        }
        let Some(kind) = Kind::parse(&r.kind).filter(|k| k.api_version() == r.api_version) else {
            return Owner::Solid;
        };
        if kind.is_namespaced() && dependent.namespace.is_empty() {
            return Owner::Solid;
        }
        let key = ObjectKey::new(kind, &dependent.namespace, &r.name);
        match client.get(&key) {
            Ok(owner) if owner.uid() == r.uid => Owner::Solid,
            Ok(_) | Err(ApiError::NotFound { .. }) => {
                self.absent.insert(r.uid.clone());
                Owner::Dangling
            }
            Err(_) => Owner::Solid,
        }
    }

    /// Processes one queued item (upstream `attemptToDeleteItem`).
    fn attempt_to_delete(&mut self, uid: &str, key: &ObjectKey, client: &mut dyn Client) {
        let being_deleted = client
            .cache()
            .get_key(key)
            .is_some_and(|o| o.uid() == uid && o.meta().deletion_timestamp.is_some());
        if being_deleted {
            return;
        }
        let latest = match client.get(key) {
            Ok(o) if o.uid() == uid => o,
            _ => return,
        };
        let refs = latest.meta().owner_references.clone().unwrap_or_default();
        if refs.is_empty() {
            return;
        }
        let dangling: Vec<&OwnerReference> = refs
            .iter()
            .filter(|r| self.classify(r, key, client) == Owner::Dangling)
            .collect();
        if dangling.is_empty() {
            return;
        }
        if dangling.len() < refs.len() {
            remove_references(latest, &dangling, client);
            return;
        }
        self.delete(key, &latest, client);
    }

    /// Deletes an item with background propagation (upstream `deleteObject`): UID and
    /// resourceVersion preconditions; on a conflict, again with the UID only if the item's
    /// owner references are unchanged.
    fn delete(&mut self, key: &ObjectKey, latest: &Object, client: &mut dyn Client) {
        match client.delete(key, DeleteOptions::exactly(latest)) {
            Ok(_) => self.deletions += 1,
            Err(ApiError::Conflict { .. }) => {
                let Ok(live) = client.get(key) else { return };
                let unchanged = live.uid() == latest.uid()
                    && live.meta().owner_references == latest.meta().owner_references;
                if unchanged {
                    let opts = DeleteOptions {
                        precondition_uid: Some(latest.uid().to_string()),
                        ..DeleteOptions::default()
                    };
                    if client.delete(key, opts).is_ok() {
                        self.deletions += 1;
                    }
                }
            }
            Err(_) => {}
        }
    }
}

/// Removes the dangling owner references from an item that keeps a solid owner (upstream
/// patches them away, with the item's UID as precondition).
fn remove_references(latest: Object, dangling: &[&OwnerReference], client: &mut dyn Client) {
    let mut obj = latest;
    let meta = obj.meta_mut();
    if let Some(refs) = meta.owner_references.as_mut() {
        refs.retain(|r| !dangling.iter().any(|d| d.uid == r.uid));
    }
    // A failed write is retried when the item is queued again.
    let _ = client.update(obj);
}

impl Component for GarbageCollector {
    fn name(&self) -> &'static str {
        "garbage-collector"
    }

    fn observe(&mut self, ev: &WatchEvent, _now: SimTime) {
        match ev.type_ {
            EventType::Added => self.added(&ev.object, None),
            EventType::Modified => {
                let old = ev
                    .old
                    .as_ref()
                    .map(|o| o.meta().owner_references.as_deref().unwrap_or(&[]));
                self.added(&ev.object, Some(old.unwrap_or(&[])));
            }
            EventType::Deleted => self.deleted(&ev.object),
        }
    }

    fn run(&mut self, _now: SimTime, client: &mut dyn Client) {
        while let Some((uid, key)) = self.queue.pop_front() {
            self.queued.remove(&uid);
            self.attempt_to_delete(&uid, &key, client);
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        (!self.queue.is_empty()).then_some(SimTime(i64::MIN))
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        vec![(
            "kubeplane_garbagecollector_deletions_total".into(),
            self.deletions,
        )]
    }
}

#[cfg(test)]
mod tests;

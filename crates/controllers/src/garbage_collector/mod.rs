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
//! Foreground and orphan deletion (the registry gives a deleted object the `foregroundDeletion`
//! or `orphan` finalizer, `kubeplane_registry::deletion`):
//!
//! - an object that starts being deleted with `foregroundDeletion` is marked *deleting
//!   dependents*: its dependents and itself are queued. A dependent whose owners are all
//!   dangling or waiting for their dependents is deleted in the foreground too when it has
//!   dependents of its own (after unblocking its dependents that are themselves deleting
//!   dependents, to avoid a deadlock), otherwise with the policy its own finalizers say
//!   (background by default); a dependent that keeps a solid owner only loses the references
//!   to the waiting owners. The owner itself (`processDeletingDependentsItem`) waits while a
//!   dependent with `blockOwnerDeletion: true` exists, queuing those not yet deleting theirs;
//!   with none left it removes `foregroundDeletion`, and the registry then removes it. The
//!   deletion of a blocking dependent, or a reference that stops blocking, queues the owner.
//! - an object that starts being deleted with `orphan` goes to the attempt-to-orphan queue:
//!   the reference to it is removed from every dependent (`orphanDependents`), then the
//!   `orphan` finalizer.
//! - finalizers of other parties are left alone: an object with one stays Terminating until
//!   someone removes it, as upstream. Upstream records no events for any of this.
//!
//! References whose owner kind kubeplane does not store (upstream: resolved through discovery,
//! an error when unknown) are never treated as dangling, and a cluster-scoped object naming a
//! namespaced owner is left alone without upstream's `OwnerRefInvalidNamespace` event.

use std::collections::VecDeque;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubeplane_api::{ApiError, PropagationPolicy, WatchEvent};
use kubeplane_api::{Client, Component, DeleteOptions, EventType, Kind, Object, ObjectKey};
use kubeplane_core::SimTime;
use rustc_hash::FxHashSet;

use graph::Graph;

/// The garbage collector.
#[derive(Default)]
pub struct GarbageCollector {
    /// Every object seen and not deleted, by UID, and the objects that name each owner UID.
    graph: Graph,
    /// The attempt-to-delete queue: UIDs of dependents to check, and the set of them queued.
    queue: VecDeque<(String, ObjectKey)>,
    queued: FxHashSet<String>,
    /// The attempt-to-orphan queue: owners deleted with the `orphan` finalizer.
    orphan_queue: VecDeque<(String, ObjectKey)>,
    /// Owner UIDs verified absent (upstream's absentOwnerCache).
    absent: FxHashSet<String>,
    /// UIDs of the objects deleted in the foreground (upstream's `deletingDependents` mark):
    /// queued again when a dependent goes or stops blocking them.
    deleting_dependents: FxHashSet<String>,
    deletions: u64,
}

/// How one owner reference of an item stands.
#[derive(Debug, PartialEq, Eq)]
enum Owner {
    /// The owner exists (or cannot be checked).
    Solid,
    /// The owner is gone.
    Dangling,
    /// The owner is being deleted in the foreground, waiting for its dependents.
    Waiting,
}

/// The finalizer of an object deleted in the foreground (upstream
/// `metav1.FinalizerDeleteDependents`).
const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";
/// The finalizer of an object whose dependents are orphaned (upstream
/// `metav1.FinalizerOrphanDependents`).
const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";

fn has_finalizer(obj: &Object, finalizer: &str) -> bool {
    obj.meta()
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer)
}

/// Whether the object is being deleted with `finalizer` (upstream `deletionStartsWithFinalizer`
/// for the new state).
fn deleting_with(obj: &Object, finalizer: &str) -> bool {
    obj.meta().deletion_timestamp.is_some() && has_finalizer(obj, finalizer)
}

/// Whether an object is waiting for its dependents' deletion (upstream
/// `isDeletingDependents`).
fn is_deleting_dependents(obj: &Object) -> bool {
    deleting_with(obj, FINALIZER_DELETE_DEPENDENTS)
}

/// Whether this change starts a deletion with `finalizer` (upstream
/// `deletionStartsWithFinalizer`).
fn starts_deletion_with(old: Option<&Object>, new: &Object, finalizer: &str) -> bool {
    deleting_with(new, finalizer) && !old.is_some_and(|o| deleting_with(o, finalizer))
}

/// Whether `dependent`'s reference to `owner_uid` blocks the owner's deletion.
fn blocks(dependent: &Object, owner_uid: &str) -> bool {
    dependent
        .owner_references()
        .into_iter()
        .flatten()
        .any(|r| r.uid == owner_uid && r.block_owner_deletion == Some(true))
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
        let id = self.graph.intern(uid);
        let kind = obj.kind();
        let namespace = if kind.is_namespaced() {
            obj.namespace()
        } else {
            ""
        };
        self.graph.add_node(id, kind, namespace, obj.name());
        let refs = obj.owner_references().map_or(&[][..], Vec::as_slice);
        if old_refs == Some(refs) {
            return;
        }
        for r in old_refs.unwrap_or(&[]) {
            if !refs.iter().any(|n| n.uid == r.uid) {
                if let Some(owner) = self.graph.find(&r.uid) {
                    self.graph.remove_dependent(owner, id);
                }
            }
        }
        let mut unknown_owner = false;
        for r in refs {
            let owner = self.graph.intern(&r.uid);
            self.graph.add_dependent(owner, id);
            unknown_owner |= !self.graph.contains(owner);
        }
        if unknown_owner {
            self.enqueue(uid, obj.key());
        }
    }

    /// Queues the owners a change stops blocking while they wait for their dependents
    /// (upstream `addUnblockedOwnersToDeleteQueue`): a blocking reference removed, or no
    /// longer blocking.
    fn unblocked_owners(&mut self, old: &Object, new: &Object) {
        for r in old.owner_references().into_iter().flatten() {
            let unblocked = r.block_owner_deletion == Some(true) && !blocks(new, &r.uid);
            if unblocked && self.deleting_dependents.contains(&r.uid) {
                if let Some(key) = self.key_of(&r.uid) {
                    self.enqueue(&r.uid, key);
                }
            }
        }
    }

    /// Upstream `processTransitions`: an object that starts being deleted with the `orphan`
    /// finalizer goes to the attempt-to-orphan queue; one that starts being deleted with
    /// `foregroundDeletion` is marked deleting dependents and queued with its dependents.
    fn transitions(&mut self, old: Option<&Object>, new: &Object) {
        let uid = new.uid();
        if starts_deletion_with(old, new, FINALIZER_ORPHAN_DEPENDENTS) {
            self.orphan_queue.push_back((uid.to_string(), new.key()));
            return;
        }
        if !starts_deletion_with(old, new, FINALIZER_DELETE_DEPENDENTS) {
            return;
        }
        self.deleting_dependents.insert(uid.to_string());
        for (key, dep) in self.sorted_dependents(uid) {
            self.enqueue(&dep, key);
        }
        self.enqueue(uid, new.key());
    }

    /// The key of the graph's object with UID `uid`.
    fn key_of(&self, uid: &str) -> Option<ObjectKey> {
        self.graph.key(self.graph.find(uid)?)
    }

    /// The dependents of `uid` in the graph, in kind, namespace, name order (then UID).
    fn sorted_dependents(&mut self, uid: &str) -> Vec<(ObjectKey, String)> {
        match self.graph.find(uid) {
            Some(owner) => self.graph.sorted_dependents(owner, false),
            None => Vec::new(),
        }
    }

    /// Removes an object from the graph and queues its dependents, and the owners waiting
    /// for their dependents' deletion.
    fn deleted(&mut self, obj: &Object) {
        let uid = obj.uid();
        self.deleting_dependents.remove(uid);
        let waiting: Vec<(String, ObjectKey)> = obj
            .owner_references()
            .into_iter()
            .flatten()
            .filter(|r| self.deleting_dependents.contains(&r.uid))
            .filter_map(|r| Some((r.uid.clone(), self.key_of(&r.uid)?)))
            .collect();
        self.deleted_node(obj);
        for (owner, key) in waiting {
            self.enqueue(&owner, key);
        }
    }

    /// Removes an object from the graph and queues its dependents.
    fn deleted_node(&mut self, obj: &Object) {
        let Some(id) = self.graph.find(obj.uid()) else {
            return;
        };
        self.graph.remove_node(id);
        for r in obj.owner_references().into_iter().flatten() {
            if let Some(owner) = self.graph.find(&r.uid) {
                self.graph.remove_dependent(owner, id);
            }
        }
        for (key, dep) in self.graph.sorted_dependents(id, true) {
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
            Ok(owner) if owner.uid() == r.uid && is_deleting_dependents(&owner) => Owner::Waiting,
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
        let being_deleted = client.cache().get_key(key).is_some_and(|o| {
            o.uid() == uid && o.meta().deletion_timestamp.is_some() && !is_deleting_dependents(o)
        });
        if being_deleted {
            return;
        }
        let latest = match client.get(key) {
            Ok(o) if o.uid() == uid => o,
            _ => return,
        };
        if is_deleting_dependents(&latest) {
            self.process_deleting_dependents(uid, key, client);
            return;
        }
        let refs = latest.owner_references().cloned().unwrap_or_default();
        if refs.is_empty() {
            return;
        }
        let classes: Vec<Owner> = refs.iter().map(|r| self.classify(r, key, client)).collect();
        let count = |c: Owner| classes.iter().filter(|x| **x == c).count();
        let (solid, waiting) = (count(Owner::Solid), count(Owner::Waiting));
        if solid == refs.len() {
            return;
        }
        if solid > 0 {
            let gone: Vec<&OwnerReference> = refs
                .iter()
                .zip(&classes)
                .filter(|(_, c)| **c != Owner::Solid)
                .map(|(r, _)| r)
                .collect();
            remove_references(latest, &gone, client);
            return;
        }
        let has_dependents = self
            .graph
            .find(uid)
            .is_some_and(|u| self.graph.has_dependents(u));
        let policy = if waiting > 0 && has_dependents {
            self.unblock_deleting_dependents(uid, client);
            PropagationPolicy::Foreground
        } else if has_finalizer(&latest, FINALIZER_ORPHAN_DEPENDENTS) {
            PropagationPolicy::Orphan
        } else if has_finalizer(&latest, FINALIZER_DELETE_DEPENDENTS) {
            PropagationPolicy::Foreground
        } else {
            PropagationPolicy::Background
        };
        self.delete(key, &latest, policy, client);
    }

    /// An owner deleted in the foreground (upstream `processDeletingDependentsItem`): with no
    /// dependent blocking it left, its `foregroundDeletion` finalizer goes; otherwise the
    /// blocking dependents not yet deleting theirs are queued.
    fn process_deleting_dependents(&mut self, uid: &str, key: &ObjectKey, client: &mut dyn Client) {
        let blocking: Vec<(ObjectKey, String)> = self
            .sorted_dependents(uid)
            .into_iter()
            .filter(|(k, _)| client.cache().get_key(k).is_some_and(|d| blocks(d, uid)))
            .collect();
        if blocking.is_empty() {
            finalizers::remove_finalizer(key, uid, FINALIZER_DELETE_DEPENDENTS, client);
            return;
        }
        for (dep_key, dep) in blocking {
            let deleting = client
                .cache()
                .get_key(&dep_key)
                .is_some_and(is_deleting_dependents);
            if !deleting {
                self.enqueue(&dep, dep_key);
            }
        }
    }

    /// Before an item is deleted in the foreground because its owner waits for it: its
    /// dependents that are themselves deleting dependents stop blocking it, which would
    /// otherwise deadlock (upstream `unblockOwnerReferences`).
    fn unblock_deleting_dependents(&mut self, uid: &str, client: &mut dyn Client) {
        for (dep_key, _) in self.sorted_dependents(uid) {
            let deleting = client
                .cache()
                .get_key(&dep_key)
                .is_some_and(|d| is_deleting_dependents(d) && blocks(d, uid));
            if deleting {
                finalizers::patch_references(&dep_key, client, &mut |refs| {
                    for r in refs.iter_mut().filter(|r| r.uid == uid) {
                        r.block_owner_deletion = Some(false);
                    }
                });
            }
        }
    }

    /// Upstream `attemptToOrphanWorker`: removes the reference to the owner from every
    /// dependent, then the owner's `orphan` finalizer. When a dependent cannot be written
    /// (other than a conflict, retried, or its absence) the owner keeps its finalizer; upstream
    /// retries with a backoff, kubeplane when the owner is deleted again.
    fn attempt_to_orphan(&mut self, uid: &str, key: &ObjectKey, client: &mut dyn Client) {
        let mut failed = false;
        for (dep_key, _) in self.sorted_dependents(uid) {
            failed |= !finalizers::patch_references(&dep_key, client, &mut |refs| {
                refs.retain(|r| r.uid != uid)
            });
        }
        if !failed {
            finalizers::remove_finalizer(key, uid, FINALIZER_ORPHAN_DEPENDENTS, client);
        }
    }

    /// Deletes an item with a propagation policy (upstream `deleteObject`): UID and
    /// resourceVersion preconditions; on a conflict, again with the UID only if the item's
    /// owner references are unchanged.
    fn delete(
        &mut self,
        key: &ObjectKey,
        latest: &Object,
        policy: PropagationPolicy,
        client: &mut dyn Client,
    ) {
        let exactly = DeleteOptions {
            propagation_policy: Some(policy),
            ..DeleteOptions::exactly(latest)
        };
        match client.delete(key, exactly) {
            Ok(_) => self.deletions += 1,
            Err(ApiError::Conflict { .. }) => {
                let Ok(live) = client.get(key) else { return };
                let unchanged = live.uid() == latest.uid()
                    && live.owner_references() == latest.owner_references();
                if unchanged {
                    let opts = DeleteOptions {
                        precondition_uid: Some(latest.uid().to_string()),
                        propagation_policy: Some(policy),
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
    if let Some(refs) = obj.owner_references_mut() {
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
            EventType::Added => {
                self.added(&ev.object, None);
                self.transitions(None, &ev.object);
            }
            EventType::Modified => {
                if let Some(old) = &ev.old {
                    self.unblocked_owners(old, &ev.object);
                }
                let old = ev
                    .old
                    .as_ref()
                    .map(|o| o.owner_references().map_or(&[][..], Vec::as_slice));
                self.added(&ev.object, Some(old.unwrap_or(&[])));
                self.transitions(ev.old.as_ref(), &ev.object);
            }
            EventType::Deleted => self.deleted(&ev.object),
        }
    }

    fn run(&mut self, _now: SimTime, client: &mut dyn Client) {
        let orphans = std::mem::take(&mut self.orphan_queue);
        for (uid, key) in orphans {
            self.attempt_to_orphan(&uid, &key, client);
        }
        while let Some((uid, key)) = self.queue.pop_front() {
            self.queued.remove(&uid);
            self.attempt_to_delete(&uid, &key, client);
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        (!self.queue.is_empty() || !self.orphan_queue.is_empty()).then_some(SimTime(i64::MIN))
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        vec![(
            "kubeplane_garbagecollector_deletions_total".into(),
            self.deletions,
        )]
    }
}

mod finalizers;
mod graph;

#[cfg(test)]
mod tests;

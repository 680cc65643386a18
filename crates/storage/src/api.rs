//! The storage contract: the [`Storage`] and [`Watcher`] traits and the values they exchange.
//!
//! Every implementation (in memory, journaled to redb; etcd-backed later) follows the rules
//! the crate documentation states; the model-based test in `tests/model.rs` checks them.

use std::sync::Arc;
use std::time::Duration;

use crate::key::{Key, Prefix};

/// A point in the storage's history. Revision 0 is the empty initial state; every successful
/// write makes the next one.
pub type Revision = u64;

/// One version of a stored value, as a read or an event reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned<V> {
    pub value: V,
    /// The revision that created the key in its current life (a key deleted and created again
    /// starts a new life).
    pub create_revision: Revision,
    /// The revision of the write that produced this version: what Kubernetes calls the object's
    /// resourceVersion, and what an update or delete names as the expected revision.
    pub mod_revision: Revision,
}

/// What a write did to its key.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    Added,
    Modified,
    Deleted,
}

/// One write, as the event log records it and watchers receive it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event<V> {
    pub kind: EventKind,
    pub key: Key,
    /// The write's revision.
    pub revision: Revision,
    /// The version the write produced: set for Added and Modified, `None` for Deleted.
    pub current: Option<Versioned<V>>,
    /// The version the write replaced or removed: set for Modified and Deleted, `None` for
    /// Added.
    pub prev: Option<Versioned<V>>,
}

impl<V> Event<V> {
    /// The object a Kubernetes watch event carries: the new version, or for Deleted the last
    /// version before the delete (whose resourceVersion a server replaces by the event's).
    pub fn object(&self) -> &Versioned<V> {
        match (&self.current, &self.prev) {
            (Some(v), _) | (None, Some(v)) => v,
            (None, None) => unreachable!("an event has a current or a previous version"),
        }
    }
}

/// What a list reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// The revision to read at; `None` reads the current state.
    pub at: Option<Revision>,
    /// The most items to return; 0 returns them all (Kubernetes' `limit` reads the same way).
    pub limit: usize,
    /// Return only keys after this one: the previous page's `continue_after`.
    pub continue_after: Option<Key>,
}

/// One page of a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListPage<V> {
    /// The live keys of the prefix at `revision`, in key order. The contract needs only an
    /// order that every page follows: [`Key`]'s (resource, namespace, name) order in memory; an
    /// etcd-backed implementation on Kubernetes' `/registry/<resource>/<namespace>/<name>`
    /// layout lists in the byte order of those paths, which differs (`a-b/` sorts before `a/`).
    pub items: Vec<(Key, Versioned<V>)>,
    /// The revision the page was read at. The next page must be read at this same revision for
    /// the pages to form one consistent snapshot (a server's `continue` token carries it).
    pub revision: Revision,
    /// The last key of this page when more items follow it; `None` on the last page.
    pub continue_after: Option<Key>,
}

/// Why a storage operation failed. A failed operation changes nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// Update or delete of a key that does not exist (HTTP 404).
    #[error("{key} not found")]
    NotFound { key: Key },
    /// Create of a key that exists (HTTP 409 AlreadyExists).
    #[error("{key} already exists")]
    AlreadyExists { key: Key },
    /// Update or delete whose expected revision is not the key's mod revision (HTTP 409
    /// Conflict: "the object has been modified").
    #[error("conflict on {key}: expected revision {expected}, the current one is {actual}")]
    Conflict {
        key: Key,
        expected: Revision,
        actual: Revision,
    },
    /// A read or watch at a revision older than the oldest retained one (HTTP 410 Gone, "too
    /// old resource version").
    #[error("revision {requested} has been compacted; the oldest available revision is {oldest}")]
    Gone {
        requested: Revision,
        oldest: Revision,
    },
    /// A read, watch or compaction at a revision the storage has not reached yet (Kubernetes:
    /// "Too large resource version", after waiting for it a while).
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },
    /// The write could not be made durable (the disk failed): it is not acknowledged, and the
    /// durable storage refuses every later write (HTTP 500; the server must be restarted).
    #[error("storage unavailable: {message}")]
    Unavailable { message: String },
    /// The storage cannot serve requests now but may later: etcd is unreachable or has no
    /// quorum (HTTP 503 ServiceUnavailable). A write that got this was not acknowledged; if it
    /// reached a member it may still be applied once the cluster recovers.
    #[error("{message}")]
    Unreachable { message: String },
    /// The storage gave no answer in time (HTTP 504 Timeout). The operation may have been
    /// applied or not: a write that got this has an unknown outcome.
    #[error("{message}")]
    Timeout { message: String },
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Revisioned key-value storage. Object-safe: a server holds an `Arc<dyn Storage<V>>`.
/// Every method is atomic and may be called from any thread.
pub trait Storage<V>: Send + Sync {
    /// The revision of the latest write (0 before the first).
    fn current_revision(&self) -> Revision;

    /// The oldest revision still readable and watchable from: reads at an older revision, and
    /// watches from an older one, are [`StorageError::Gone`].
    fn oldest_revision(&self) -> Revision;

    /// The key's version at revision `at` (the current one when `None`); `Ok(None)` when the
    /// key did not exist then.
    fn get(&self, key: &Key, at: Option<Revision>) -> Result<Option<Versioned<V>>>;

    /// A page of the live keys in `prefix` at one revision.
    fn list(&self, prefix: &Prefix, options: &ListOptions) -> Result<ListPage<V>>;

    /// Creates `key`; [`StorageError::AlreadyExists`] if it exists. Returns the appended event.
    fn create(&self, key: &Key, value: V) -> Result<Arc<Event<V>>>;

    /// Replaces the value of `key`; [`StorageError::NotFound`] if it does not exist, and
    /// [`StorageError::Conflict`] if `expected` is given and is not its mod revision.
    fn update(&self, key: &Key, value: V, expected: Option<Revision>) -> Result<Arc<Event<V>>>;

    /// Deletes `key`, with the same preconditions as [`Storage::update`].
    fn delete(&self, key: &Key, expected: Option<Revision>) -> Result<Arc<Event<V>>>;

    /// A cursor over the events in `prefix` with revisions strictly after `from` (after the
    /// current revision when `None`): Kubernetes' watch from a resourceVersion.
    fn watch(&self, prefix: &Prefix, from: Option<Revision>) -> Result<Box<dyn Watcher<V>>>;

    /// Forgets the history before `revision`: afterwards `oldest_revision() >= revision`.
    /// Compacting at or below the oldest revision does nothing; above the current one it is
    /// [`StorageError::FutureRevision`].
    fn compact(&self, revision: Revision) -> Result<()>;
}

/// A position in the event log and a prefix filter: each call yields the next matching event
/// after the position and moves past it. A cursor whose next events have been compacted away
/// fails with [`StorageError::Gone`] from then on.
pub trait Watcher<V>: Send {
    /// The revision up to which this cursor has looked: every matching event up to it has been
    /// yielded. A server may send it as a Kubernetes BOOKMARK.
    fn position(&self) -> Revision;

    /// The next matching event if there is one now.
    fn try_next(&mut self) -> Result<Option<Arc<Event<V>>>>;

    /// The next matching event, waiting up to `timeout` for one to be written.
    fn wait_next(&mut self, timeout: Duration) -> Result<Option<Arc<Event<V>>>>;

    /// Appends up to `max` matching events available now to `out` and returns how many; one
    /// lock acquisition for the whole batch.
    fn try_next_batch(&mut self, out: &mut Vec<Arc<Event<V>>>, max: usize) -> Result<usize>;
}

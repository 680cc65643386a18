//! Revisioned key-value storage for a Kubernetes-style API server, with the semantics of etcd
//! as the API server uses it.
//!
//! # Revisions
//!
//! One global revision counter starts at 0 (the empty state). Every successful write (create,
//! update, delete) increments it by exactly one and is that revision's only change; a failed
//! write changes nothing and consumes no revision. Each stored version records its
//! `create_revision` (the write that created the key in its current life) and its
//! `mod_revision` (the write that produced it, Kubernetes' resourceVersion).
//!
//! # Reads
//!
//! [`Storage::get`] and [`Storage::list`] read the state at a revision: the current one, or any
//! revision `r` with `oldest <= r <= current`. Older is [`StorageError::Gone`] (HTTP 410), newer
//! is [`StorageError::FutureRevision`]. Like etcd (and unlike Kubernetes' watch cache, which
//! waits up to 3 s first), storage never blocks a read on a future revision; a server that
//! wants Kubernetes' behaviour waits with [`MemoryStorage::wait_for_revision`] and then answers
//! "Too large resource version". A list returns the prefix's live keys in key order and the
//! revision it read at; with a `limit` it returns a page and the key to continue after, and the
//! next page must be read at the same revision (the server's `continue` token carries both), so
//! the pages form one snapshot; if that revision is compacted meanwhile the next page is `Gone`,
//! which is Kubernetes' expired continue token.
//!
//! # Writes
//!
//! Create fails with [`StorageError::AlreadyExists`] on a live key. Update and delete fail with
//! [`StorageError::NotFound`] on a missing key and, when given an expected revision, with
//! [`StorageError::Conflict`] unless it is the key's current `mod_revision` (optimistic
//! concurrency). A create after a delete starts a new life with a new `create_revision`.
//! Every write returns the event it appended.
//!
//! # Watches
//!
//! [`Storage::watch`] opens a cursor at revision `from` over one prefix; it yields every event
//! of the prefix with a revision strictly after `from`, in revision order, each exactly once:
//! Added, Modified (with the previous version) and Deleted (with the deleted version). A watch
//! from a revision older than `oldest` is `Gone`, from one newer than `current` is
//! `FutureRevision`. All cursors follow one shared event log; a cursor is only a position. A
//! cursor that falls so far behind that the events after its position are forgotten fails
//! with `Gone` from then on: Kubernetes' "too old resource version", after which a client lists
//! again and watches from the list's revision.
//!
//! # Retention and compaction
//!
//! History is kept for the revisions `(oldest, current]`: the in-memory storage keeps a window
//! of the last `window` revisions (every write beyond it advances `oldest`), and
//! [`Storage::compact`] advances `oldest` further, as Kubernetes compacts etcd every five
//! minutes. Reads and watches share this one bound, as with etcd.
//!
//! # The in-memory implementation
//!
//! [`MemoryStorage`] keeps an ordered map from key to the key's versions since `oldest`, and
//! the event log as a ring of shared events (see `memory.rs` for the invariant that lets the
//! log double as the compaction queue). Costs: a write is two ordered-map lookups (its key, and
//! the key of the event it pushes out of the window) and at most two clones of a value (for the
//! event's new and previous versions; cheap when values are `Arc`s); a get is a lookup and a binary search in the key's history; a list is a range of the
//! map, with a binary search per key when it reads the past; a cursor step is an index into the
//! log, so a cursor with a narrow prefix still walks every event (Kubernetes keeps one watch
//! cache per resource for that reason; a server may do the same with one storage per
//! resource). Memory is the live versions plus one event and one version per revision in the
//! window. A lock guards the state, so it is usable from many threads; reads share it. The API
//! is synchronous: an async server calls [`Watcher::wait_next`] on a blocking thread or polls
//! [`Watcher::try_next_batch`], and does its I/O outside the lock.
//!
//! # The durable implementation
//!
//! [`DurableStorage`] is the in-memory storage journaled to a redb database in a directory,
//! values encoded by a [`Codec`]. A write returns once it is durable and only then is visible
//! to reads, cursors and [`Storage::current_revision`]; concurrent writes share one sync
//! (group commit). [`DurableStorage::open`] recovers the state, the revision counter, the
//! retained events and the compaction point of the last committed write. A failed sync is
//! [`StorageError::Unavailable`] for that write and every later one.
//!
//! # Example
//!
//! ```
//! use kubeplane_storage::{EventKind, Key, MemoryStorage, Prefix, Storage, StorageError};
//!
//! let storage = MemoryStorage::new(1000);
//! let key = Key::new("pods", "default", "web");
//! let created = storage.create(&key, "v1").unwrap();
//! let mut watch = storage.watch(&Prefix::resource("pods"), Some(created.revision)).unwrap();
//! storage.update(&key, "v2", Some(created.revision)).unwrap();
//! // The revision the update expected is stale now.
//! let stale = storage.update(&key, "v3", Some(created.revision));
//! assert!(matches!(stale, Err(StorageError::Conflict { expected: 1, actual: 2, .. })));
//! let event = watch.try_next().unwrap().unwrap();
//! assert_eq!(event.kind, EventKind::Modified);
//! assert_eq!(event.prev.as_ref().unwrap().value, "v1");
//! assert_eq!(storage.get(&key, Some(1)).unwrap().unwrap().value, "v1");
//! ```

mod api;
mod durable;
mod etcd;
mod etcd_compact;
mod etcd_health;
mod etcd_list;
mod etcd_log;
#[cfg(any(test, feature = "testing"))]
pub mod etcd_testing;
mod etcd_txn;
mod journal;
mod key;
mod memory;
mod watch;

pub use api::{
    Event, EventKind, ListOptions, ListPage, Result, Revision, Storage, StorageError, Versioned,
    Watcher,
};
pub use durable::{DurableError, DurableStorage, DATABASE_FILE};
pub use etcd::{EtcdConfig, EtcdStorage, EtcdTls};
pub use etcd_log::EtcdWatcher;
pub use journal::Codec;
pub use key::{Key, Prefix};
pub use memory::MemoryStorage;
pub use watch::MemoryWatcher;

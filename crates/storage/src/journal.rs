//! The redb journal of [`crate::DurableStorage`]: its tables, the byte layout of keys, versions
//! and events, and the committer thread that makes queued writes durable in groups.
//!
//! Tables: `kv` maps each live key to its current version, `events` maps each retained
//! revision to its event (kind, key, new and previous versions), `meta` holds the `revision`
//! counter and the `oldest` retained revision. Every committed transaction leaves them
//! consistent: the events of exactly the revisions `(oldest, revision]` and the state at
//! `revision`. A transaction torn by a crash is absent after a restart (redb commits
//! atomically), so a restart recovers the last committed one.
//!
//! Group commit: a write is applied in memory and queued under the storage's lock (so the queue
//! is in revision order); the committer thread takes everything queued, writes it in one
//! transaction committed with [`Durability::Immediate`] (one fsync for the whole group), then
//! makes the group visible to readers and cursors and wakes its writers. While it syncs, new
//! writes queue up for the next group, so concurrent writers share fsyncs.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use redb::{Database, Durability, TableDefinition};

use crate::api::{Event, EventKind, Revision, StorageError, Versioned};
use crate::key::Key;
use crate::memory::Shared;

pub(crate) const KV: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");
pub(crate) const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// How a [`crate::DurableStorage`] turns its values into bytes and back.
pub trait Codec<V>: Send + Sync + 'static {
    /// Appends the bytes of `value` to `out`.
    fn encode(&self, value: &V, out: &mut Vec<u8>);

    /// The value `bytes` encode; an error when they are not one.
    fn decode(&self, bytes: &[u8]) -> Result<V, String>;

    /// Records in `value` the revision that produced it, for values that carry their own
    /// (a Kubernetes object's resourceVersion is its etcd mod revision, which kube-apiserver
    /// sets on every object it reads from etcd rather than storing it). The etcd-backed
    /// storage calls it on every value it reads or writes, so that values written by other
    /// processes carry the revision etcd gave them. Nothing by default.
    fn stamp(&self, _value: &mut V, _revision: crate::api::Revision) {}
}

/// The bytes of a key: its resource, namespace and name separated by NUL, which none of them
/// contains.
pub(crate) fn key_bytes(key: &Key, out: &mut Vec<u8>) {
    out.extend_from_slice(key.resource().as_bytes());
    out.push(0);
    out.extend_from_slice(key.namespace().as_bytes());
    out.push(0);
    out.extend_from_slice(key.name().as_bytes());
}

pub(crate) fn key_from_bytes(bytes: &[u8]) -> Result<Key, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("key: {e}"))?;
    let mut parts = text.split('\0');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(r), Some(ns), Some(name), None) => Ok(Key::new(r, ns, name)),
        _ => Err(format!("malformed key {text:?}")),
    }
}

/// A version: create revision, mod revision (little-endian u64s), then the value's bytes.
pub(crate) fn version_bytes<V: 'static>(v: &Versioned<V>, codec: &dyn Codec<V>, out: &mut Vec<u8>) {
    out.extend_from_slice(&v.create_revision.to_le_bytes());
    out.extend_from_slice(&v.mod_revision.to_le_bytes());
    codec.encode(&v.value, out);
}

pub(crate) fn version_from_bytes<V: 'static>(
    bytes: &[u8],
    codec: &dyn Codec<V>,
) -> Result<Versioned<V>, String> {
    let mut r = Reader(bytes);
    let create_revision = r.u64()?;
    let mod_revision = r.u64()?;
    Ok(Versioned {
        value: codec.decode(r.0)?,
        create_revision,
        mod_revision,
    })
}

/// An event: its kind (a byte), the key's length (u32) and bytes, then the new and the previous
/// version, each as its length (u32, 0 for none) and [`version_bytes`].
fn event_bytes<V: 'static>(e: &Event<V>, codec: &dyn Codec<V>, out: &mut Vec<u8>) {
    out.push(match e.kind {
        EventKind::Added => 0,
        EventKind::Modified => 1,
        EventKind::Deleted => 2,
    });
    let mut scratch = Vec::new();
    key_bytes(&e.key, &mut scratch);
    put_chunk(out, &scratch);
    for v in [&e.current, &e.prev] {
        scratch.clear();
        if let Some(v) = v {
            version_bytes(v, codec, &mut scratch);
        }
        put_chunk(out, &scratch);
    }
}

fn put_chunk(out: &mut Vec<u8>, chunk: &[u8]) {
    let len = u32::try_from(chunk.len()).expect("a stored value is smaller than 4 GiB");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(chunk);
}

pub(crate) fn event_from_bytes<V: 'static>(
    revision: Revision,
    bytes: &[u8],
    codec: &dyn Codec<V>,
) -> Result<Event<V>, String> {
    let mut r = Reader(bytes);
    let kind = match r.take(1)?[0] {
        0 => EventKind::Added,
        1 => EventKind::Modified,
        2 => EventKind::Deleted,
        k => return Err(format!("event {revision}: unknown kind {k}")),
    };
    let key = key_from_bytes(r.chunk()?)?;
    let version = |r: &mut Reader| -> Result<Option<Versioned<V>>, String> {
        let chunk = r.chunk()?;
        if chunk.is_empty() {
            return Ok(None);
        }
        version_from_bytes(chunk, codec).map(Some)
    };
    let current = version(&mut r)?;
    let prev = version(&mut r)?;
    let consistent = match kind {
        EventKind::Added => current.is_some() && prev.is_none(),
        EventKind::Modified => current.is_some() && prev.is_some(),
        EventKind::Deleted => current.is_none() && prev.is_some(),
    };
    if !consistent {
        return Err(format!("event {revision}: versions do not match its kind"));
    }
    Ok(Event {
        kind,
        key,
        revision,
        current,
        prev,
    })
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("truncated record".to_string());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn chunk(&mut self) -> Result<&'a [u8], String> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
        self.take(len as usize)
    }
}

/// What the committer journals.
pub(crate) enum Item<V> {
    Write(Arc<Event<V>>),
    /// Forget the events up to this revision.
    Compact(Revision),
}

struct Queue<V> {
    items: Vec<Item<V>>,
    /// How many items were ever queued, and how many of those are committed: the item queued
    /// `n`-th is durable once `committed >= n`.
    queued: u64,
    committed: u64,
    /// The revision of the last committed write.
    durable: Revision,
    /// Why the journal failed, after which nothing more is committed.
    failed: Option<String>,
    closing: bool,
}

/// The queue between the writers and the committer thread.
pub(crate) struct Journal<V> {
    queue: Mutex<Queue<V>>,
    /// Signalled when items are queued or the storage closes.
    work: Condvar,
    /// Signalled when a group is committed or the journal fails.
    done: Condvar,
}

impl<V> Journal<V> {
    pub(crate) fn new(durable: Revision) -> Journal<V> {
        Journal {
            queue: Mutex::new(Queue {
                items: Vec::new(),
                queued: 0,
                committed: 0,
                durable,
                failed: None,
                closing: false,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue<V>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the journal still takes writes.
    pub(crate) fn check(&self) -> Result<(), StorageError> {
        match &self.lock().failed {
            Some(message) => Err(unavailable(message)),
            None => Ok(()),
        }
    }

    /// Queues an item; returns its sequence number for [`Journal::wait`].
    pub(crate) fn push(&self, item: Item<V>) -> u64 {
        let mut q = self.lock();
        q.items.push(item);
        q.queued += 1;
        self.work.notify_one();
        q.queued
    }

    /// Waits until the item with sequence number `seq` is committed.
    pub(crate) fn wait(&self, seq: u64) -> Result<(), StorageError> {
        self.wait_until(|q| q.committed >= seq)
    }

    /// Waits until the writes up to `revision` are committed.
    pub(crate) fn wait_revision(&self, revision: Revision) -> Result<(), StorageError> {
        self.wait_until(|q| q.durable >= revision)
    }

    fn wait_until(&self, done: impl Fn(&Queue<V>) -> bool) -> Result<(), StorageError> {
        let mut q = self.lock();
        loop {
            if done(&q) {
                return Ok(());
            }
            if let Some(message) = &q.failed {
                return Err(unavailable(message));
            }
            q = self.done.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Tells the committer to commit what is queued and stop.
    pub(crate) fn close(&self) {
        self.lock().closing = true;
        self.work.notify_all();
    }

    /// Everything queued and the sequence number of its last item; waits for an item, and
    /// answers `None` once the storage closes with nothing queued.
    fn take(&self) -> Option<(Vec<Item<V>>, u64)> {
        let mut q = self.lock();
        while q.items.is_empty() && !q.closing {
            q = self.work.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
        if q.items.is_empty() {
            return None;
        }
        Some((std::mem::take(&mut q.items), q.queued))
    }
}

fn unavailable(message: &str) -> StorageError {
    StorageError::Unavailable {
        message: message.to_string(),
    }
}

/// Fails the journal if the committer thread panics (a codec that panics), so that writers
/// waiting for it get [`StorageError::Unavailable`] instead of waiting forever.
struct FailOnPanic<V>(Arc<Journal<V>>);

impl<V> Drop for FailOnPanic<V> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut q = self.0.lock();
            q.failed = Some("the storage's committer thread panicked".to_string());
            self.0.done.notify_all();
        }
    }
}

/// The committer thread's state: the database and what the last transaction left in `meta`.
pub(crate) struct Committer<V> {
    pub(crate) db: Database,
    pub(crate) codec: Arc<dyn Codec<V>>,
    pub(crate) journal: Arc<Journal<V>>,
    pub(crate) memory: Arc<Shared<V>>,
    pub(crate) window: u64,
    pub(crate) revision: Revision,
    pub(crate) oldest: Revision,
}

impl<V: Clone + Send + Sync + 'static> Committer<V> {
    /// Commits groups until the storage closes or the disk fails.
    pub(crate) fn run(mut self) {
        let _guard = FailOnPanic(self.journal.clone());
        while let Some((items, seq)) = self.journal.take() {
            let last_write = items.iter().rev().find_map(|item| match item {
                Item::Write(e) => Some(e.revision),
                Item::Compact(_) => None,
            });
            if let Err(message) = self.commit(&items) {
                let mut q = self.journal.lock();
                q.failed = Some(message);
                self.journal.done.notify_all();
                return;
            }
            if let Some(revision) = last_write {
                // Visible only now that it is durable; then acknowledged.
                let mut state = self.memory.write();
                state.make_visible(revision);
                self.memory.notifier.publish(state.visible());
                drop(state);
                self.memory.notifier.wake();
            }
            let mut q = self.journal.lock();
            q.committed = seq;
            q.durable = q.durable.max(last_write.unwrap_or(0));
            self.journal.done.notify_all();
        }
    }

    /// Writes one group in one transaction and syncs it.
    fn commit(&mut self, items: &[Item<V>]) -> Result<(), String> {
        let (mut revision, mut oldest) = (self.revision, self.oldest);
        let mut txn = self.db.begin_write().map_err(|e| e.to_string())?;
        txn.set_durability(Durability::Immediate);
        {
            let mut kv = txn.open_table(KV).map_err(|e| e.to_string())?;
            let mut events = txn.open_table(EVENTS).map_err(|e| e.to_string())?;
            let mut meta = txn.open_table(META).map_err(|e| e.to_string())?;
            let (mut key, mut buf) = (Vec::new(), Vec::new());
            for item in items {
                let event = match item {
                    Item::Write(event) => event,
                    Item::Compact(r) => {
                        oldest = oldest.max(*r);
                        continue;
                    }
                };
                key.clear();
                key_bytes(&event.key, &mut key);
                buf.clear();
                match &event.current {
                    Some(v) => {
                        version_bytes(v, &*self.codec, &mut buf);
                        kv.insert(key.as_slice(), buf.as_slice())
                    }
                    None => kv.remove(key.as_slice()),
                }
                .map_err(|e| e.to_string())?;
                buf.clear();
                event_bytes(event, &*self.codec, &mut buf);
                events
                    .insert(event.revision, buf.as_slice())
                    .map_err(|e| e.to_string())?;
                revision = event.revision;
            }
            oldest = oldest.max(revision.saturating_sub(self.window));
            events
                .retain_in(..=oldest, |_, _| false)
                .map_err(|e| e.to_string())?;
            meta.insert("revision", revision)
                .map_err(|e| e.to_string())?;
            meta.insert("oldest", oldest).map_err(|e| e.to_string())?;
        }
        txn.commit().map_err(|e| e.to_string())?;
        (self.revision, self.oldest) = (revision, oldest);
        Ok(())
    }
}

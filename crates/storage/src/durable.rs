//! [`DurableStorage`]: the in-memory storage with every write journaled to a redb database in
//! a directory before it is acknowledged, recovered when the directory is opened again.
//!
//! Reads, lists and cursors are the in-memory storage's (the same state, log and cursors).
//! A write is applied in memory under the lock, which checks its preconditions against every
//! earlier write, and queued for the committer thread (see `journal.rs`); it becomes visible
//! to reads, cursors and [`Storage::current_revision`] only once its group is committed, and
//! the call returns after that. So nothing a reader or a watcher saw, and nothing a writer was
//! told, can be lost by a crash: after `kill -9` the directory opens at the last committed
//! group, which holds every acknowledged write, with the same revisions.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use redb::{Database, ReadableTable};

use crate::api::{Event, ListOptions, ListPage, Result, Revision, Storage, Versioned, Watcher};
use crate::journal::{self, Codec, Committer, Item, Journal, EVENTS, KV, META};
use crate::key::{Key, Prefix};
use crate::memory::{MemoryStorage, State};
use crate::watch::MemoryWatcher;

/// The database file in a storage's directory.
pub const DATABASE_FILE: &str = "storage.redb";

/// Why a directory could not be opened as a [`DurableStorage`].
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct DurableError {
    pub path: PathBuf,
    pub message: String,
}

/// Storage whose writes survive a crash: [`MemoryStorage`]'s state and event window in memory,
/// journaled to `<dir>/storage.redb` with group commit. One process opens a directory at a
/// time (redb locks the file). Dropping it commits what is queued and stops the committer.
pub struct DurableStorage<V> {
    memory: MemoryStorage<V>,
    journal: Arc<Journal<V>>,
    committer: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl<V> std::fmt::Debug for DurableStorage<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableStorage")
            .field("path", &self.path)
            .field("memory", &self.memory)
            .finish()
    }
}

impl<V: Clone + Send + Sync + 'static> DurableStorage<V> {
    /// Opens the storage in `dir` (created if missing), keeping the last `window` revisions:
    /// the state, the revision counter, the retained events and the compaction point as the
    /// last committed write left them.
    pub fn open(
        dir: impl AsRef<Path>,
        window: usize,
        codec: impl Codec<V>,
    ) -> std::result::Result<DurableStorage<V>, DurableError> {
        let path = dir.as_ref().join(DATABASE_FILE);
        let fail = |message: String| DurableError {
            path: path.clone(),
            message,
        };
        std::fs::create_dir_all(dir.as_ref()).map_err(|e| fail(e.to_string()))?;
        let db = Database::create(&path).map_err(|e| fail(e.to_string()))?;
        let codec: Arc<dyn Codec<V>> = Arc::new(codec);
        let (state, oldest) = recover(&db, window, &*codec).map_err(fail)?;
        let revision = state.head();
        let memory = MemoryStorage::from_state(state);
        let journal = Arc::new(Journal::new(revision));
        let committer = Committer {
            db,
            codec,
            journal: journal.clone(),
            memory: memory.shared.clone(),
            window: window.max(1) as u64,
            revision,
            oldest,
        };
        let committer = std::thread::Builder::new()
            .name("storage-committer".into())
            .spawn(move || committer.run())
            .map_err(|e| fail(e.to_string()))?;
        Ok(DurableStorage {
            memory,
            journal,
            committer: Some(committer),
            path,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many revisions the log keeps.
    pub fn window(&self) -> usize {
        self.memory.window()
    }

    /// [`MemoryStorage::wait_for_revision`]: waits until a revision is visible.
    pub fn wait_for_revision(&self, revision: Revision, timeout: Duration) -> bool {
        self.memory.wait_for_revision(revision, timeout)
    }

    /// [`Storage::watch`] without the box: the concrete cursor.
    pub fn cursor(&self, prefix: &Prefix, from: Option<Revision>) -> Result<MemoryWatcher<V>> {
        self.memory.cursor(prefix, from)
    }

    /// The key's latest version including writes not yet durable (what the next write's
    /// preconditions see); for a writer that serializes its own writes, as the registry does.
    pub fn latest(&self, key: &Key) -> Option<Versioned<V>> {
        self.memory.shared.read().latest(key)
    }

    /// The latest revision written, durable or not: the next write gets this plus one.
    pub fn latest_revision(&self) -> Revision {
        self.memory.shared.read().head()
    }

    /// Applies a create and queues it for the disk without waiting: the write is neither
    /// visible nor acknowledged until [`DurableStorage::wait_durable`] of its revision returns
    /// `Ok`. [`Storage::create`] is this and that wait.
    pub fn submit_create(&self, key: &Key, value: V) -> Result<Arc<Event<V>>> {
        self.submit(|s| s.create(key, value)).map(|(e, _)| e)
    }

    /// [`DurableStorage::submit_create`] for an update.
    pub fn submit_update(
        &self,
        key: &Key,
        value: V,
        expected: Option<Revision>,
    ) -> Result<Arc<Event<V>>> {
        self.submit(|s| s.update(key, value, expected))
            .map(|(e, _)| e)
    }

    /// [`DurableStorage::submit_create`] for a delete.
    pub fn submit_delete(&self, key: &Key, expected: Option<Revision>) -> Result<Arc<Event<V>>> {
        self.submit(|s| s.delete(key, expected)).map(|(e, _)| e)
    }

    /// Waits until the writes up to `revision` are durable (and visible);
    /// [`crate::StorageError::Unavailable`] if the disk failed first.
    pub fn wait_durable(&self, revision: Revision) -> Result<()> {
        self.journal.wait_revision(revision)
    }

    fn submit(
        &self,
        f: impl FnOnce(&mut State<V>) -> Result<Arc<Event<V>>>,
    ) -> Result<(Arc<Event<V>>, u64)> {
        let mut state = self.memory.shared.write();
        self.journal.check()?;
        let event = f(&mut state)?;
        // Queued under the lock: the queue is in revision order.
        let seq = self.journal.push(Item::Write(event.clone()));
        Ok((event, seq))
    }

    fn write(
        &self,
        f: impl FnOnce(&mut State<V>) -> Result<Arc<Event<V>>>,
    ) -> Result<Arc<Event<V>>> {
        let (event, seq) = self.submit(f)?;
        self.journal.wait(seq)?;
        Ok(event)
    }
}

/// The state the database holds, and its compaction point.
fn recover<V: Clone + 'static>(
    db: &Database,
    window: usize,
    codec: &dyn Codec<V>,
) -> std::result::Result<(State<V>, Revision), String> {
    // Creates the tables of a new database.
    let txn = db.begin_write().map_err(|e| e.to_string())?;
    txn.open_table(KV).map_err(|e| e.to_string())?;
    txn.open_table(EVENTS).map_err(|e| e.to_string())?;
    txn.open_table(META).map_err(|e| e.to_string())?;
    txn.commit().map_err(|e| e.to_string())?;

    let txn = db.begin_read().map_err(|e| e.to_string())?;
    let meta = txn.open_table(META).map_err(|e| e.to_string())?;
    let read = |name: &str| -> std::result::Result<u64, String> {
        let v = meta.get(name).map_err(|e| e.to_string())?;
        Ok(v.map(|v| v.value()).unwrap_or(0))
    };
    let (current, oldest) = (read("revision")?, read("oldest")?);
    let mut live = Vec::new();
    let kv = txn.open_table(KV).map_err(|e| e.to_string())?;
    for entry in kv.iter().map_err(|e| e.to_string())? {
        let (k, v) = entry.map_err(|e| e.to_string())?;
        let key = journal::key_from_bytes(k.value())?;
        live.push((key, journal::version_from_bytes(v.value(), codec)?));
    }
    let mut events = Vec::new();
    let log = txn.open_table(EVENTS).map_err(|e| e.to_string())?;
    for entry in log.iter().map_err(|e| e.to_string())? {
        let (r, bytes) = entry.map_err(|e| e.to_string())?;
        events.push(journal::event_from_bytes(r.value(), bytes.value(), codec)?);
    }
    let state = State::restore(window, oldest, current, live, events)?;
    Ok((state, oldest))
}

impl<V> Drop for DurableStorage<V> {
    fn drop(&mut self) {
        self.journal.close();
        if let Some(committer) = self.committer.take() {
            let _ = committer.join();
        }
    }
}

impl<V: Clone + Send + Sync + 'static> Storage<V> for DurableStorage<V> {
    fn current_revision(&self) -> Revision {
        self.memory.current_revision()
    }

    fn oldest_revision(&self) -> Revision {
        self.memory.oldest_revision()
    }

    fn get(&self, key: &Key, at: Option<Revision>) -> Result<Option<Versioned<V>>> {
        self.memory.get(key, at)
    }

    fn list(&self, prefix: &Prefix, options: &ListOptions) -> Result<ListPage<V>> {
        self.memory.list(prefix, options)
    }

    fn create(&self, key: &Key, value: V) -> Result<Arc<Event<V>>> {
        self.write(|s| s.create(key, value))
    }

    fn update(&self, key: &Key, value: V, expected: Option<Revision>) -> Result<Arc<Event<V>>> {
        self.write(|s| s.update(key, value, expected))
    }

    fn delete(&self, key: &Key, expected: Option<Revision>) -> Result<Arc<Event<V>>> {
        self.write(|s| s.delete(key, expected))
    }

    fn watch(&self, prefix: &Prefix, from: Option<Revision>) -> Result<Box<dyn Watcher<V>>> {
        Ok(Box::new(self.cursor(prefix, from)?))
    }

    /// Compacts in memory, then journals the compaction point (deleting the journaled events
    /// up to it) before it returns.
    fn compact(&self, revision: Revision) -> Result<()> {
        let seq = {
            let mut state = self.memory.shared.write();
            self.journal.check()?;
            state.compact(revision)?;
            self.journal.push(Item::Compact(revision))
        };
        self.journal.wait(seq)
    }
}

//! Cursors over the in-memory event log, and how they wait for new events.
//!
//! A cursor is a revision and a prefix; the log is shared, so any number of cursors on any
//! threads cost nothing but their own positions. A cursor that has seen everything answers
//! "nothing new" from one atomic load, without the lock. Waiting uses a condition variable
//! that writers signal only while somebody waits, so writes without waiting watchers make no
//! system call.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::api::{Event, Result, Revision, Watcher};
use crate::key::Prefix;
use crate::memory::Shared;

/// The latest revision, published for lock-free checks, and the wake-up of waiting cursors
/// (of the in-memory storage and of the etcd storage's log).
#[derive(Default)]
pub(crate) struct Notifier {
    published: AtomicU64,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wakeup: Condvar,
}

impl Notifier {
    pub(crate) fn published(&self) -> Revision {
        self.published.load(SeqCst)
    }

    /// Called with the storage's write lock held, so revisions are published in order.
    pub(crate) fn publish(&self, revision: Revision) {
        self.published.store(revision, SeqCst);
    }

    /// Wakes the sleeping cursors, if any. A waiter registers (`sleepers`) before it checks
    /// the published revision, and a writer publishes before it takes the registrations; with
    /// sequentially consistent operations on both sides, either the waiter sees the new
    /// revision or the writer sees the waiter. The waiter holds `lock` from its check until it
    /// sleeps, so the notification cannot fall between the two. The writer takes (zeroes) the
    /// registrations: a woken waiter registers again before it sleeps again, so the writes
    /// made while the woken cursors catch up make no system call.
    pub(crate) fn wake(&self) {
        if self.sleepers.swap(0, SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.wakeup.notify_all();
        }
    }

    /// Waits until a revision after `revision` is published or `deadline` passes (never, when
    /// `None`); returns whether one was.
    pub(crate) fn wait_past(&self, revision: Revision, deadline: Option<Instant>) -> bool {
        let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let reached = || self.published.load(SeqCst) > revision;
        loop {
            if reached() {
                return true;
            }
            // Register, then look again (see `wake`). A registration left behind, when the
            // second look succeeds or the wait times out, costs the next writer one spare
            // notification, nothing more.
            self.sleepers.fetch_add(1, SeqCst);
            if reached() {
                return true;
            }
            guard = match deadline {
                None => self
                    .wakeup
                    .wait(guard)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return false;
                    }
                    self.wakeup
                        .wait_timeout(guard, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }
}

/// A cursor over a [`crate::MemoryStorage`]'s event log; see [`Watcher`].
pub struct MemoryWatcher<V> {
    shared: Arc<Shared<V>>,
    prefix: Prefix,
    position: Revision,
}

impl<V> std::fmt::Debug for MemoryWatcher<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryWatcher")
            .field("prefix", &self.prefix)
            .field("position", &self.position)
            .finish()
    }
}

impl<V: Clone> MemoryWatcher<V> {
    pub(crate) fn new(shared: Arc<Shared<V>>, prefix: Prefix, position: Revision) -> Self {
        MemoryWatcher {
            shared,
            prefix,
            position,
        }
    }

    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    fn batch(&mut self, out: &mut Vec<Arc<Event<V>>>, max: usize) -> Result<usize> {
        // Nothing was written past the position: the log cannot have lost events after it
        // either, since the oldest revision never passes the current one.
        if self.shared.notifier.published() <= self.position {
            return Ok(0);
        }
        let state = self.shared.read();
        state.advance(&self.prefix, &mut self.position, out, max)
    }

    fn next_now(&mut self) -> Result<Option<Arc<Event<V>>>> {
        let mut one = Vec::with_capacity(1);
        self.batch(&mut one, 1)?;
        Ok(one.pop())
    }
}

impl<V: Clone + Send + Sync> Watcher<V> for MemoryWatcher<V> {
    fn position(&self) -> Revision {
        self.position
    }

    fn try_next(&mut self) -> Result<Option<Arc<Event<V>>>> {
        self.next_now()
    }

    fn wait_next(&mut self, timeout: Duration) -> Result<Option<Arc<Event<V>>>> {
        // A timeout too long to represent (`Duration::MAX`) waits forever.
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if let Some(event) = self.next_now()? {
                return Ok(Some(event));
            }
            // The position is now the latest revision this cursor has looked at; wait for a
            // later one, then look again (it may not match the prefix).
            if !self.shared.notifier.wait_past(self.position, deadline) {
                return Ok(None);
            }
        }
    }

    fn try_next_batch(&mut self, out: &mut Vec<Arc<Event<V>>>, max: usize) -> Result<usize> {
        self.batch(out, max)
    }
}

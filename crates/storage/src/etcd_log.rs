//! The watch log of [`crate::EtcdStorage`]: one etcd watch over the whole keyspace, from the
//! oldest retained revision, turned into the events of the storage's prefix, and the cursors
//! that read them.
//!
//! Why one watch of every key rather than one etcd watch per cursor: every etcd revision after
//! the first is made by a write, so a watch of every key sees an event at every revision, and
//! "the log has seen revision `r`" is exact. A watch of one prefix sees nothing for the
//! revisions other keys made, and only a progress notification tells it that it has caught
//! up; etcd before 3.5.8 may send that notification ahead of the events of a watch that is
//! still replaying history (etcd issue 15220), and the etcd of the tests is 3.5.1. Cursors are
//! then positions over one shared log, as in memory: a cursor answers from the log at once,
//! and a write returns once the log has its event, so a cursor sees its own process's writes.
//!
//! The log keeps the prefix's events after `trimmed`: compaction forgets the events up to the
//! compacted revision, and the log keeps at most `window` events. A cursor whose next events
//! are forgotten is `Gone`, as in memory.

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use etcd_client::{Client, EventType, KeyValue, WatchOptions};

use crate::api::{Event, EventKind, Result, Revision, StorageError, Versioned, Watcher};
use crate::etcd::Layout;
use crate::journal::Codec;
use crate::key::{Key, Prefix};
use crate::watch::Notifier;

/// What the watch has delivered.
pub(crate) struct LogState<V> {
    /// The prefix's events with revisions after `trimmed`, in revision order.
    events: VecDeque<Arc<Event<V>>>,
    /// The revision up to which events were forgotten.
    pub(crate) trimmed: Revision,
    /// The latest revision the watch has delivered (every event up to it is in the log).
    pub(crate) seen: Revision,
    /// etcd's compaction point as far as this process knows it.
    compacted: Revision,
    window: usize,
}

impl<V> LogState<V> {
    /// The oldest revision reads and watches may use: etcd's compaction point, or the log's
    /// start when the log forgot more.
    pub(crate) fn oldest(&self) -> Revision {
        self.compacted.max(self.trimmed)
    }

    /// Forgets the events up to `revision` (a compaction).
    fn compact(&mut self, revision: Revision) {
        self.compacted = self.compacted.max(revision);
        while self.events.front().is_some_and(|e| e.revision <= revision) {
            self.events.pop_front();
        }
    }

    /// The logged event of `key` at `revision`, if the log holds it.
    pub(crate) fn event_at(&self, revision: Revision, key: &Key) -> Option<Arc<Event<V>>> {
        let i = self.events.partition_point(|e| e.revision < revision);
        self.events
            .range(i..)
            .take_while(|e| e.revision == revision)
            .find(|e| e.key == *key)
            .cloned()
    }

    fn push(&mut self, event: Event<V>) {
        self.events.push_back(Arc::new(event));
        while self.events.len() > self.window {
            if let Some(e) = self.events.pop_front() {
                self.trimmed = e.revision;
            }
        }
    }

    /// Moves a cursor at `*position` forward, appending the events in `prefix` to `out` until
    /// it holds `max` more or the log ends (then the position is the latest revision seen).
    fn advance(
        &self,
        prefix: &Prefix,
        position: &mut Revision,
        out: &mut Vec<Arc<Event<V>>>,
        max: usize,
    ) -> Result<usize> {
        let oldest = self.oldest();
        if *position < oldest {
            return Err(StorageError::Gone {
                requested: *position,
                oldest,
            });
        }
        if max == 0 {
            return Ok(0);
        }
        let start = self.events.partition_point(|e| e.revision <= *position);
        let mut taken = 0;
        for event in self.events.range(start..) {
            *position = event.revision;
            if prefix.contains(&event.key) {
                out.push(event.clone());
                taken += 1;
                if taken == max {
                    return Ok(taken);
                }
            }
        }
        *position = (*position).max(self.seen);
        Ok(taken)
    }
}

/// The log, its latest revision seen published for lock-free checks, and the wake-up of the
/// cursors that wait for it to grow (the [`Notifier`] of the in-memory storage).
pub(crate) struct Log<V> {
    state: Mutex<LogState<V>>,
    /// Publishes `seen`, under the state's lock.
    notifier: Notifier,
    /// The state's `compacted`, stored under its lock: a compaction through
    /// [`Log::compact`] may pass `seen` (the writes of other clients not delivered yet), and
    /// then a cursor at `seen` is `Gone` although nothing new was seen.
    compacted_to: AtomicU64,
}

impl<V> Log<V> {
    pub(crate) fn new(window: usize, seen: Revision) -> Log<V> {
        // etcd's first revision: nothing older can be read.
        let compacted = 1;
        let notifier = Notifier::default();
        notifier.publish(seen);
        Log {
            state: Mutex::new(LogState {
                events: VecDeque::new(),
                trimmed: 0,
                seen,
                compacted,
                window: window.max(1),
            }),
            notifier,
            compacted_to: AtomicU64::new(compacted),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, LogState<V>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits up to `timeout` until the log has seen `revision`; returns whether it has.
    pub(crate) fn wait_seen(&self, revision: Revision, timeout: Duration) -> bool {
        revision <= self.notifier.published()
            || self
                .notifier
                .wait_past(revision - 1, Instant::now().checked_add(timeout))
    }

    /// Forgets the events up to `revision` (a compaction this process made).
    pub(crate) fn compact(&self, revision: Revision) {
        let mut state = self.lock();
        state.compact(revision);
        self.compacted_to.store(state.compacted, SeqCst);
    }

    /// Records a compaction the watch was told of: the events up to `revision` are gone, and
    /// the watch starts again after it.
    fn compacted(&self, revision: Revision) {
        let mut state = self.lock();
        state.compact(revision);
        self.compacted_to.store(state.compacted, SeqCst);
        state.seen = state.seen.max(revision);
        self.notifier.publish(state.seen);
        drop(state);
        self.notifier.wake();
    }
}

/// The event of the storage's prefix that a watch event of `layout`'s keys is, if any.
fn convert<V: 'static>(
    layout: &Layout,
    codec: &dyn Codec<V>,
    event: &etcd_client::Event,
) -> Option<Event<V>> {
    let kv = event.kv()?;
    let key = layout.parse(kv.key())?;
    let revision = kv.mod_revision() as Revision;
    let prev = event.prev_kv().and_then(|p| version(codec, p).ok());
    match event.event_type() {
        EventType::Put => {
            let current = version(codec, kv).ok()?;
            let kind = if kv.version() == 1 {
                EventKind::Added
            } else {
                EventKind::Modified
            };
            let prev = if kind == EventKind::Added { None } else { prev };
            Some(Event {
                kind,
                key,
                revision,
                current: Some(current),
                prev,
            })
        }
        // A delete whose previous value was compacted away carries no object: it is left out.
        EventType::Delete => prev.map(|prev| Event {
            kind: EventKind::Deleted,
            key,
            revision,
            current: None,
            prev: Some(prev),
        }),
    }
}

/// A stored version of an etcd key-value, stamped with its mod revision ([`Codec::stamp`]).
pub(crate) fn version<V: 'static>(
    codec: &dyn Codec<V>,
    kv: &KeyValue,
) -> std::result::Result<Versioned<V>, String> {
    let mut value = codec.decode(kv.value())?;
    codec.stamp(&mut value, kv.mod_revision() as Revision);
    Ok(Versioned {
        value,
        create_revision: kv.create_revision() as Revision,
        mod_revision: kv.mod_revision() as Revision,
    })
}

/// What feeds the log: the client, the layout and the codec.
pub(crate) struct Feeder<V> {
    pub(crate) client: Client,
    pub(crate) layout: Layout,
    pub(crate) codec: Arc<dyn Codec<V>>,
    pub(crate) log: Arc<Log<V>>,
}

impl<V: Send + Sync + 'static> Feeder<V> {
    /// Watches every key, forever: first from revision 1, which etcd cancels at once if it
    /// compacted past it (telling its compaction point: the log's oldest revision), then from
    /// the revision after the log's latest, again after a compaction or a lost connection.
    /// While etcd cannot be watched (no member reachable), it tries again 200 ms after the
    /// first failure, doubling the wait up to 5 s, and reports the first failure of a streak
    /// and then every tenth.
    pub(crate) async fn run(mut self) {
        let mut from = 1;
        let mut failures: u32 = 0;
        loop {
            match self.watch_from(from).await {
                Ok(()) => failures = 0,
                Err(e) => {
                    if failures.is_multiple_of(10) {
                        eprintln!(
                            "kubeplane storage: etcd watch from revision {from}: {e}; watching again"
                        );
                    }
                    let wait = 200u64 << failures.min(5);
                    failures += 1;
                    tokio::time::sleep(Duration::from_millis(wait.min(5000))).await;
                }
            }
            let seen = self.log.lock().seen;
            if seen + 1 > from {
                // The last watch delivered events: the stream worked, a new streak starts.
                failures = 0;
            }
            from = seen + 1;
        }
    }

    /// One watch, until it ends; `Ok` when etcd cancelled it for a compaction.
    async fn watch_from(&mut self, from: Revision) -> std::result::Result<(), String> {
        let options = WatchOptions::new()
            .with_all_keys()
            .with_start_revision(from as i64)
            .with_prev_key();
        let mut stream = self
            .client
            .watch("", Some(options))
            .await
            .map_err(|e| e.to_string())?;
        loop {
            let Some(response) = stream.message().await.map_err(|e| e.to_string())? else {
                return Err("the watch stream ended".into());
            };
            if response.canceled() {
                if response.compact_revision() > 0 {
                    self.log.compacted(response.compact_revision() as Revision);
                    return Ok(());
                }
                return Err(format!("cancelled: {}", response.cancel_reason()));
            }
            self.deliver(response.events());
        }
    }

    fn deliver(&self, events: &[etcd_client::Event]) {
        if events.is_empty() {
            return;
        }
        let mut state = self.log.lock();
        // A watch started again may repeat revisions the log has; the events of one revision
        // (a transaction's several keys) come in one response.
        let floor = state.seen;
        for event in events {
            let Some(kv) = event.kv() else { continue };
            let revision = kv.mod_revision() as Revision;
            if revision <= floor {
                continue;
            }
            if let Some(e) = convert(&self.layout, &*self.codec, event) {
                state.push(e);
            }
            state.seen = revision;
        }
        self.log.notifier.publish(state.seen);
        drop(state);
        self.log.notifier.wake();
    }
}

/// A cursor over an [`crate::EtcdStorage`]'s log; see [`Watcher`].
pub struct EtcdWatcher<V> {
    log: Arc<Log<V>>,
    prefix: Prefix,
    position: Revision,
}

impl<V> EtcdWatcher<V> {
    pub(crate) fn new(log: Arc<Log<V>>, prefix: Prefix, position: Revision) -> EtcdWatcher<V> {
        EtcdWatcher {
            log,
            prefix,
            position,
        }
    }
}

impl<V: Send + Sync> Watcher<V> for EtcdWatcher<V> {
    fn position(&self) -> Revision {
        self.position
    }

    fn try_next(&mut self) -> Result<Option<Arc<Event<V>>>> {
        let mut one = Vec::with_capacity(1);
        self.try_next_batch(&mut one, 1)?;
        Ok(one.pop())
    }

    fn wait_next(&mut self, timeout: Duration) -> Result<Option<Arc<Event<V>>>> {
        // A timeout too long to represent (`Duration::MAX`) waits forever.
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if let Some(event) = self.try_next()? {
                return Ok(Some(event));
            }
            if !self.log.notifier.wait_past(self.position, deadline) {
                return Ok(None);
            }
        }
    }

    fn try_next_batch(&mut self, out: &mut Vec<Arc<Event<V>>>, max: usize) -> Result<usize> {
        // Nothing seen past the position, and no compaction past it: nothing to answer, and
        // nothing gone (the log forgets no event it has not seen but by a compaction).
        if self.log.notifier.published() <= self.position
            && self.log.compacted_to.load(SeqCst) <= self.position
        {
            return Ok(0);
        }
        let state = self.log.lock();
        state.advance(&self.prefix, &mut self.position, out, max)
    }
}

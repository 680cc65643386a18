//! The in-memory implementation: one MVCC map and one bounded event log behind a lock.
//!
//! The log is the history index. It holds the events with revisions in `(oldest, current]`,
//! one per revision, so the event at revision `r` sits at index `r - oldest - 1`. Each key keeps
//! its versions from the one visible at `oldest` onwards: at most one version older than the
//! log (the key's state at `oldest`) plus one version per event of the key still in the log.
//! Forgetting the oldest event (when the log outgrows its window, or on compaction) therefore
//! trims exactly one key's history, in constant time, and memory stays proportional to the live
//! keys plus the window.
//!
//! Writes can be applied before they are visible: the durable storage applies a write here
//! under the lock (so the next write's preconditions see it) and makes it visible only once it
//! is on disk. `current` is the latest applied revision and `visible` the latest one readers,
//! cursors and compaction see; reads at `None` read at `visible`, and only events up to it are
//! forgotten, so the log holds the window plus the writes not yet visible. The in-memory
//! storage makes each write visible at once.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use crate::api::{
    Event, EventKind, ListOptions, ListPage, Result, Revision, Storage, StorageError, Versioned,
    Watcher,
};
use crate::key::{Key, Prefix};
use crate::watch::{MemoryWatcher, Notifier};

/// One version in a key's history; `value` is `None` for the tombstone a delete leaves.
struct Ver<V> {
    mod_revision: Revision,
    create_revision: Revision,
    value: Option<V>,
}

impl<V: Clone> Ver<V> {
    fn of(v: &Versioned<V>) -> Ver<V> {
        Ver {
            mod_revision: v.mod_revision,
            create_revision: v.create_revision,
            value: Some(v.value.clone()),
        }
    }

    fn live(&self) -> Option<Versioned<V>> {
        self.value.as_ref().map(|value| Versioned {
            value: value.clone(),
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
        })
    }
}

/// The key's version at revision `at` (a tombstone when it was deleted then), if any. Versions
/// are in revision order: the last one answers reads of the current state at once, and a
/// binary search answers reads of the past.
fn ver_at<V>(history: &VecDeque<Ver<V>>, at: Revision) -> Option<&Ver<V>> {
    match history.back() {
        Some(last) if last.mod_revision <= at => Some(last),
        _ => {
            let i = history.partition_point(|v| v.mod_revision <= at);
            i.checked_sub(1).map(|i| &history[i])
        }
    }
}

fn live_last<V>(history: &VecDeque<Ver<V>>) -> Option<&Ver<V>> {
    history.back().filter(|v| v.value.is_some())
}

pub(crate) struct State<V> {
    /// The latest applied revision.
    current: Revision,
    /// The latest revision readers see (`oldest <= visible <= current`).
    visible: Revision,
    oldest: Revision,
    window: usize,
    log: VecDeque<Arc<Event<V>>>,
    keys: BTreeMap<Key, VecDeque<Ver<V>>>,
}

impl<V: Clone> State<V> {
    /// The empty state at revision 0 that keeps the last `window` revisions (at least one,
    /// so that a cursor at the current revision survives the next write).
    pub(crate) fn empty(window: usize) -> State<V> {
        State {
            current: 0,
            visible: 0,
            oldest: 0,
            window: window.max(1),
            log: VecDeque::new(),
            keys: BTreeMap::new(),
        }
    }

    /// The state at revision `current` rebuilt from its live versions (`live`) and the events
    /// of the revisions `(oldest, current]`, in order: a key's history is the version its first
    /// event replaced (its state at `oldest`), then one version per event, as the writes left
    /// it. Fails when the events are not exactly those revisions.
    pub(crate) fn restore(
        window: usize,
        oldest: Revision,
        current: Revision,
        live: Vec<(Key, Versioned<V>)>,
        events: Vec<Event<V>>,
    ) -> std::result::Result<State<V>, String> {
        let mut state = State::empty(window);
        (state.oldest, state.current, state.visible) = (oldest, current, current);
        for (i, mut event) in events.into_iter().enumerate() {
            if event.revision != oldest + 1 + i as Revision {
                return Err(format!(
                    "event log is not contiguous: expected revision {}, found {}",
                    oldest + 1 + i as Revision,
                    event.revision
                ));
            }
            let history = state
                .keys
                .entry(event.key.clone())
                .or_insert_with(|| event.prev.iter().map(Ver::of).collect::<VecDeque<_>>());
            // The previous version is the history's last one: share its value (one copy per
            // version, as the writes left them, rather than one per event).
            if let (Some(prev), Some(last)) = (&mut event.prev, history.back()) {
                if last.mod_revision == prev.mod_revision {
                    if let Some(value) = &last.value {
                        prev.value = value.clone();
                    }
                }
            }
            history.push_back(match &event.current {
                Some(v) => Ver::of(v),
                None => Ver {
                    mod_revision: event.revision,
                    create_revision: event.object().create_revision,
                    value: None,
                },
            });
            state.log.push_back(Arc::new(event));
        }
        if current.checked_sub(oldest) != Some(state.log.len() as Revision) {
            return Err(format!(
                "event log ends before revision {current} (it holds {} events after {oldest})",
                state.log.len()
            ));
        }
        for (key, version) in live {
            state
                .keys
                .entry(key)
                .or_insert_with(|| VecDeque::from([Ver::of(&version)]));
        }
        state.make_visible(current);
        Ok(state)
    }

    /// The latest revision readers see.
    pub(crate) fn visible(&self) -> Revision {
        self.visible
    }

    /// The latest applied revision, visible or not.
    pub(crate) fn head(&self) -> Revision {
        self.current
    }

    /// The key's latest applied version, visible or not: what the next write's preconditions
    /// check.
    pub(crate) fn latest(&self, key: &Key) -> Option<Versioned<V>> {
        self.keys.get(key).and_then(live_last)?.live()
    }

    /// Makes the writes up to `revision` visible, then forgets what falls out of the window.
    pub(crate) fn make_visible(&mut self, revision: Revision) {
        self.visible = self.visible.max(revision.min(self.current));
        while self.log.len() > self.window
            && self.log.front().is_some_and(|e| e.revision <= self.visible)
        {
            self.forget_oldest();
        }
    }

    pub(crate) fn oldest(&self) -> Revision {
        self.oldest
    }

    /// The revision a read at `at` serves, or why it cannot be served.
    fn resolve(&self, at: Option<Revision>) -> Result<Revision> {
        match at {
            None => Ok(self.visible),
            Some(r) if r > self.visible => Err(StorageError::FutureRevision {
                requested: r,
                current: self.visible,
            }),
            Some(r) if r < self.oldest => Err(StorageError::Gone {
                requested: r,
                oldest: self.oldest,
            }),
            Some(r) => Ok(r),
        }
    }

    /// Checks where a cursor may start, as [`State::resolve`] checks a read.
    pub(crate) fn watch_start(&self, from: Option<Revision>) -> Result<Revision> {
        self.resolve(from)
    }

    fn get(&self, key: &Key, at: Option<Revision>) -> Result<Option<Versioned<V>>> {
        let at = self.resolve(at)?;
        Ok(self.keys.get(key).and_then(|h| ver_at(h, at)?.live()))
    }

    fn list(&self, prefix: &Prefix, options: &ListOptions) -> Result<ListPage<V>> {
        let at = self.resolve(options.at)?;
        let start = prefix.start_after(options.continue_after.as_ref());
        let mut items = Vec::new();
        let mut more = false;
        for (key, history) in self
            .keys
            .range((start, Bound::Unbounded))
            .take_while(|(k, _)| prefix.contains(k))
        {
            let Some(live) = ver_at(history, at).and_then(Ver::live) else {
                continue;
            };
            if options.limit != 0 && items.len() == options.limit {
                more = true;
                break;
            }
            items.push((key.clone(), live));
        }
        let continue_after = if more {
            items.last().map(|(k, _)| k.clone())
        } else {
            None
        };
        Ok(ListPage {
            items,
            revision: at,
            continue_after,
        })
    }

    pub(crate) fn create(&mut self, key: &Key, value: V) -> Result<Arc<Event<V>>> {
        let revision = self.current + 1;
        let current = Versioned {
            value: value.clone(),
            create_revision: revision,
            mod_revision: revision,
        };
        let ver = Ver {
            mod_revision: revision,
            create_revision: revision,
            value: Some(value),
        };
        match self.keys.get_mut(key) {
            Some(history) => {
                if live_last(history).is_some() {
                    return Err(StorageError::AlreadyExists { key: key.clone() });
                }
                history.push_back(ver);
            }
            None => {
                self.keys.insert(key.clone(), VecDeque::from([ver]));
            }
        }
        Ok(self.append(Event {
            kind: EventKind::Added,
            key: key.clone(),
            revision,
            current: Some(current),
            prev: None,
        }))
    }

    /// The key's live version, checked against the expected revision of an update or delete.
    fn precondition(
        &mut self,
        key: &Key,
        expected: Option<Revision>,
    ) -> Result<&mut VecDeque<Ver<V>>> {
        let history = self.keys.get_mut(key);
        let Some(last) = history.as_deref().and_then(live_last) else {
            return Err(StorageError::NotFound { key: key.clone() });
        };
        if let Some(expected) = expected.filter(|e| *e != last.mod_revision) {
            return Err(StorageError::Conflict {
                key: key.clone(),
                expected,
                actual: last.mod_revision,
            });
        }
        Ok(history.expect("checked above"))
    }

    pub(crate) fn update(
        &mut self,
        key: &Key,
        value: V,
        expected: Option<Revision>,
    ) -> Result<Arc<Event<V>>> {
        let revision = self.current + 1;
        let history = self.precondition(key, expected)?;
        let last = history.back().expect("precondition found a live version");
        let prev = last.live();
        let create_revision = last.create_revision;
        let current = Versioned {
            value: value.clone(),
            create_revision,
            mod_revision: revision,
        };
        history.push_back(Ver {
            mod_revision: revision,
            create_revision,
            value: Some(value),
        });
        Ok(self.append(Event {
            kind: EventKind::Modified,
            key: key.clone(),
            revision,
            current: Some(current),
            prev,
        }))
    }

    pub(crate) fn delete(
        &mut self,
        key: &Key,
        expected: Option<Revision>,
    ) -> Result<Arc<Event<V>>> {
        let revision = self.current + 1;
        let history = self.precondition(key, expected)?;
        let last = history.back().expect("precondition found a live version");
        let prev = last.live();
        let create_revision = last.create_revision;
        history.push_back(Ver {
            mod_revision: revision,
            create_revision,
            value: None,
        });
        Ok(self.append(Event {
            kind: EventKind::Deleted,
            key: key.clone(),
            revision,
            current: None,
            prev,
        }))
    }

    /// Logs a write whose version is already in its key's history (not visible yet: see
    /// [`State::make_visible`]).
    fn append(&mut self, event: Event<V>) -> Arc<Event<V>> {
        let event = Arc::new(event);
        self.current = event.revision;
        self.log.push_back(event.clone());
        event
    }

    /// Drops the oldest logged event, which makes its revision the oldest one, and the versions
    /// of its key that no read at or after that revision can see.
    fn forget_oldest(&mut self) -> bool {
        let Some(event) = self.log.pop_front() else {
            return false;
        };
        let r = event.revision;
        self.oldest = r;
        if let Some(history) = self.keys.get_mut(&event.key) {
            // The key's version at `r` is the one this event wrote: everything before it is
            // invisible now, and so is a tombstone at `r` (absence needs no record).
            while history.front().is_some_and(|v| v.mod_revision < r) {
                history.pop_front();
            }
            if history
                .front()
                .is_some_and(|v| v.mod_revision == r && v.value.is_none())
            {
                history.pop_front();
            }
            if history.is_empty() {
                self.keys.remove(&event.key);
            }
        }
        true
    }

    pub(crate) fn compact(&mut self, revision: Revision) -> Result<()> {
        if revision > self.visible {
            return Err(StorageError::FutureRevision {
                requested: revision,
                current: self.visible,
            });
        }
        // The log holds the revisions after `oldest` up to the current one, so it runs out
        // only when `oldest` reaches the current revision; `revision` is at most the visible
        // one, so only visible events are forgotten.
        while self.oldest < revision && self.forget_oldest() {}
        Ok(())
    }

    /// Moves a cursor at `*position` forward over the logged events, appending the ones in
    /// `prefix` to `out` until it holds `max` more or the log ends.
    pub(crate) fn advance(
        &self,
        prefix: &Prefix,
        position: &mut Revision,
        out: &mut Vec<Arc<Event<V>>>,
        max: usize,
    ) -> Result<usize> {
        if *position < self.oldest {
            return Err(StorageError::Gone {
                requested: *position,
                oldest: self.oldest,
            });
        }
        let mut taken = 0;
        if max == 0 {
            return Ok(0);
        }
        // The event after the position sits at this index (see the module documentation).
        let start = (*position - self.oldest) as usize;
        for event in self.log.range(start.min(self.log.len())..) {
            if event.revision > self.visible {
                break;
            }
            *position = event.revision;
            if prefix.contains(&event.key) {
                out.push(event.clone());
                taken += 1;
                if taken == max {
                    break;
                }
            }
        }
        Ok(taken)
    }
}

/// The shared part of a [`MemoryStorage`]: what its clones and cursors hold.
pub(crate) struct Shared<V> {
    state: RwLock<State<V>>,
    pub(crate) notifier: Notifier,
}

impl<V> Shared<V> {
    // A panic while the lock is held leaves a poisoned lock. Every write checks its
    // preconditions and clones the values it needs before it changes anything, so the state
    // behind a poisoned lock is still consistent, and reading on is sound.
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, State<V>> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, State<V>> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Storage in memory, usable from many threads: clones share one store. The history and the
/// event log cover the last `window` revisions (fewer after [`Storage::compact`]); older reads
/// and watches are [`StorageError::Gone`].
pub struct MemoryStorage<V> {
    pub(crate) shared: Arc<Shared<V>>,
}

impl<V> std::fmt::Debug for MemoryStorage<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.read();
        f.debug_struct("MemoryStorage")
            .field("current", &state.visible)
            .field("oldest", &state.oldest)
            .field("window", &state.window)
            .field("keys", &state.keys.len())
            .finish()
    }
}

impl<V> Clone for MemoryStorage<V> {
    fn clone(&self) -> Self {
        MemoryStorage {
            shared: self.shared.clone(),
        }
    }
}

impl<V: Clone + Send + Sync + 'static> MemoryStorage<V> {
    /// An empty storage at revision 0 that keeps the last `window` revisions (at least one,
    /// so that a cursor at the current revision survives the next write).
    pub fn new(window: usize) -> MemoryStorage<V> {
        MemoryStorage {
            shared: Arc::new(Shared {
                state: RwLock::new(State::empty(window)),
                notifier: Notifier::default(),
            }),
        }
    }

    /// A storage whose state is `state` (a recovered one).
    pub(crate) fn from_state(state: State<V>) -> MemoryStorage<V> {
        let notifier = Notifier::default();
        notifier.publish(state.visible());
        MemoryStorage {
            shared: Arc::new(Shared {
                state: RwLock::new(state),
                notifier,
            }),
        }
    }

    /// How many revisions the log keeps.
    pub fn window(&self) -> usize {
        self.shared.read().window
    }

    /// Waits up to `timeout` until the storage reaches `revision`; returns whether it has.
    /// A server uses it before reading at a revision a client saw elsewhere, as Kubernetes' watch
    /// cache waits up to 3 s before answering "Too large resource version".
    pub fn wait_for_revision(&self, revision: Revision, timeout: Duration) -> bool {
        revision == 0
            || self
                .shared
                .notifier
                .wait_past(revision - 1, Instant::now().checked_add(timeout))
    }

    /// [`Storage::watch`] without the box: the concrete cursor.
    pub fn cursor(&self, prefix: &Prefix, from: Option<Revision>) -> Result<MemoryWatcher<V>> {
        let position = self.shared.read().watch_start(from)?;
        Ok(MemoryWatcher::new(
            self.shared.clone(),
            prefix.clone(),
            position,
        ))
    }

    fn write(
        &self,
        f: impl FnOnce(&mut State<V>) -> Result<Arc<Event<V>>>,
    ) -> Result<Arc<Event<V>>> {
        let event = {
            let mut state = self.shared.write();
            let event = f(&mut state)?;
            state.make_visible(event.revision);
            // Published under the lock so that the published revision never goes backwards.
            self.shared.notifier.publish(state.visible());
            event
        };
        // Woken cursors take the read lock, so they are woken after the write lock is released.
        self.shared.notifier.wake();
        Ok(event)
    }
}

impl<V: Clone + Send + Sync + 'static> Storage<V> for MemoryStorage<V> {
    fn current_revision(&self) -> Revision {
        self.shared.read().visible()
    }

    fn oldest_revision(&self) -> Revision {
        self.shared.read().oldest()
    }

    fn get(&self, key: &Key, at: Option<Revision>) -> Result<Option<Versioned<V>>> {
        self.shared.read().get(key, at)
    }

    fn list(&self, prefix: &Prefix, options: &ListOptions) -> Result<ListPage<V>> {
        self.shared.read().list(prefix, options)
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

    fn compact(&self, revision: Revision) -> Result<()> {
        self.shared.write().compact(revision)
    }
}

//! Model-based test: random sequences of operations drive a `MemoryStorage` (through the
//! `Storage` trait object, as a server would hold it) and a naive model that keeps every
//! historical state in a vector; every answer of the storage must equal the model's. The
//! operations include writes with right and wrong expected revisions, reads at past, compacted
//! and future revisions, paginated lists continued after later writes, compaction, and several
//! cursors opened at random revisions and advanced at random. redb's fuzz target is the pattern.
//!
//! The same run drives a `DurableStorage` too, which is also closed and opened again from its
//! directory at random points: every answer after a reopen must still be the model's (cursors
//! are opened anew, since a server's watches end with it).
//!
//! And an `EtcdStorage` on a real etcd (started for the test; skipped without an etcd binary,
//! except under CI): each case has a key prefix of its own and starts at the revision etcd is
//! at, compacted there, so the model's history starts at that revision instead of 0; a reopen
//! connects again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kubeplane_storage::etcd_testing::{etcd_or_skip, EtcdCluster};
use kubeplane_storage::{
    Codec, DurableStorage, EtcdConfig, EtcdStorage, Event, EventKind, Key, ListOptions, ListPage,
    MemoryStorage, Prefix, Revision, Storage, StorageError, Versioned, Watcher,
};
use proptest::prelude::*;
use proptest::sample::Index;

type Result<T> = std::result::Result<T, StorageError>;

const RESOURCES: [&str; 2] = ["a", "b"];
const NAMESPACES: [&str; 3] = ["", "x", "y"];
const NAMES: [&str; 3] = ["1", "2", "3"];
const KEYS: usize = 18;

fn key(i: usize) -> Key {
    let i = i % KEYS;
    Key::new(RESOURCES[i / 9], NAMESPACES[(i / 3) % 3], NAMES[i % 3])
}

fn prefix(i: usize) -> Prefix {
    match i % 8 {
        0 => Prefix::All,
        1 => Prefix::resource("a"),
        2 => Prefix::resource("b"),
        3 => Prefix::namespace("a", ""),
        4 => Prefix::namespace("a", "x"),
        5 => Prefix::namespace("b", "y"),
        6 => Prefix::resource("c"),
        _ => Prefix::namespace("a", "z"),
    }
}

/// How a write names the revision it expects.
#[derive(Clone, Debug)]
enum Expect {
    Nothing,
    /// The key's current mod revision (0 when it has none).
    Current,
    /// Any revision up to one past the current one: usually wrong.
    Other(Index),
}

#[derive(Clone, Debug)]
enum Op {
    Create(usize, u32),
    Update(usize, u32, Expect),
    Delete(usize, Expect),
    Get(usize, Option<Index>),
    List {
        prefix: usize,
        at: Option<Index>,
        limit: usize,
        after: Option<usize>,
    },
    /// The next page of the last list that had more, at that list's revision.
    Continue,
    Compact(Index),
    Watch(usize, Option<Index>),
    Next(Index, usize),
    Batch(Index, usize),
    /// Close the durable storage and open its directory again (nothing for the in-memory one).
    Reopen,
}

/// The durable storage's encoding of the test's values.
struct U32;

impl Codec<u32> for U32 {
    fn encode(&self, value: &u32, out: &mut Vec<u8>) {
        out.extend_from_slice(&value.to_le_bytes());
    }

    fn decode(&self, bytes: &[u8]) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(
            bytes.try_into().map_err(|_| "not 4 bytes")?,
        ))
    }
}

/// A new empty directory for one durable run, in memory when the machine has /dev/shm (the
/// model checks answers, not the disk; `tests/crash.rs` kills a real writer on disk).
fn scratch_dir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let base = Path::new("/dev/shm");
    let base = if base.is_dir() {
        base.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let n = N.fetch_add(1, Ordering::SeqCst);
    let dir = base.join(format!("kubeplane-model-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Which storage a run drives.
#[derive(Clone, Copy)]
enum Under<'a> {
    Memory,
    Durable(&'a Path),
    /// etcd at these endpoints, under this key prefix.
    Etcd(&'a [String], &'a str),
}

fn open(window: usize, under: Under<'_>) -> Arc<dyn Storage<u32>> {
    match under {
        Under::Memory => Arc::new(MemoryStorage::new(window)),
        Under::Durable(dir) => Arc::new(DurableStorage::open(dir, window, U32).expect("open")),
        Under::Etcd(endpoints, prefix) => {
            let mut config = EtcdConfig::new(endpoints.to_vec());
            config.prefix = prefix.to_string();
            config.window = window;
            config.compaction_interval = None;
            Arc::new(EtcdStorage::connect(&config, U32).expect("connect to etcd"))
        }
    }
}

fn expect() -> impl Strategy<Value = Expect> {
    prop_oneof![
        Just(Expect::Nothing),
        Just(Expect::Current),
        any::<Index>().prop_map(Expect::Other)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0..KEYS;
    let v = 0..1000u32;
    prop_oneof![
        4 => (k.clone(), v.clone()).prop_map(|(k, v)| Op::Create(k, v)),
        4 => (k.clone(), v, expect()).prop_map(|(k, v, e)| Op::Update(k, v, e)),
        2 => (k.clone(), expect()).prop_map(|(k, e)| Op::Delete(k, e)),
        2 => (k.clone(), any::<Option<Index>>()).prop_map(|(k, at)| Op::Get(k, at)),
        2 => (0..8usize, any::<Option<Index>>(), 0..4usize, proptest::option::of(k))
            .prop_map(|(prefix, at, limit, after)| Op::List { prefix, at, limit, after }),
        1 => Just(Op::Continue),
        1 => any::<Index>().prop_map(Op::Compact),
        1 => (0..8usize, any::<Option<Index>>()).prop_map(|(p, at)| Op::Watch(p, at)),
        3 => (any::<Index>(), 1..4usize).prop_map(|(c, n)| Op::Next(c, n)),
        1 => (any::<Index>(), 0..5usize).prop_map(|(c, n)| Op::Batch(c, n)),
        1 => Just(Op::Reopen),
    ]
}

/// The naive model: every state since revision `base` (0, or etcd's revision when the case
/// started), every event, and the oldest revision.
struct Model {
    base: Revision,
    states: Vec<BTreeMap<Key, Versioned<u32>>>,
    events: Vec<Event<u32>>,
    oldest: Revision,
    window: Revision,
}

struct ModelCursor {
    prefix: Prefix,
    position: Revision,
}

impl Model {
    fn current(&self) -> Revision {
        self.base + self.states.len() as Revision - 1
    }

    fn state(&self, revision: Revision) -> &BTreeMap<Key, Versioned<u32>> {
        &self.states[(revision - self.base) as usize]
    }

    fn check(&self, at: Option<Revision>) -> Result<Revision> {
        let current = self.current();
        match at {
            None => Ok(current),
            Some(r) if r > current => Err(StorageError::FutureRevision {
                requested: r,
                current,
            }),
            Some(r) if r < self.oldest => Err(StorageError::Gone {
                requested: r,
                oldest: self.oldest,
            }),
            Some(r) => Ok(r),
        }
    }

    fn live(&self, key: &Key) -> Option<&Versioned<u32>> {
        self.states.last().unwrap().get(key)
    }

    fn write(
        &mut self,
        key: &Key,
        value: Option<u32>,
        expected: Option<Revision>,
        create: bool,
    ) -> Result<Event<u32>> {
        let prev = self.live(key).cloned();
        let revision = self.current() + 1;
        let kind = match (&prev, create, value) {
            (Some(_), true, _) => return Err(StorageError::AlreadyExists { key: key.clone() }),
            (None, true, _) => EventKind::Added,
            (None, false, _) => return Err(StorageError::NotFound { key: key.clone() }),
            (Some(p), false, _) if expected.is_some_and(|e| e != p.mod_revision) => {
                return Err(StorageError::Conflict {
                    key: key.clone(),
                    expected: expected.unwrap(),
                    actual: p.mod_revision,
                })
            }
            (Some(_), false, Some(_)) => EventKind::Modified,
            (Some(_), false, None) => EventKind::Deleted,
        };
        let create_revision = prev.as_ref().map_or(revision, |p| p.create_revision);
        let current = value.map(|value| Versioned {
            value,
            create_revision,
            mod_revision: revision,
        });
        let mut state = self.states.last().unwrap().clone();
        match &current {
            Some(v) => state.insert(key.clone(), v.clone()),
            None => state.remove(key),
        };
        self.states.push(state);
        let event = Event {
            kind,
            key: key.clone(),
            revision,
            current,
            prev,
        };
        self.events.push(event.clone());
        self.oldest = self.oldest.max(revision.saturating_sub(self.window));
        Ok(event)
    }

    fn list(
        &self,
        prefix: &Prefix,
        at: Option<Revision>,
        limit: usize,
        after: Option<&Key>,
    ) -> Result<ListPage<u32>> {
        let revision = self.check(at)?;
        let all: Vec<(Key, Versioned<u32>)> = self
            .state(revision)
            .iter()
            .filter(|(k, _)| prefix.contains(k) && after.is_none_or(|a| *k > a))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let more = limit != 0 && all.len() > limit;
        let items: Vec<_> = all
            .into_iter()
            .take(if limit == 0 { usize::MAX } else { limit })
            .collect();
        let continue_after = if more {
            Some(items.last().unwrap().0.clone())
        } else {
            None
        };
        Ok(ListPage {
            items,
            revision,
            continue_after,
        })
    }

    fn next(&self, cursor: &mut ModelCursor) -> Result<Option<Event<u32>>> {
        if cursor.position < self.oldest {
            return Err(StorageError::Gone {
                requested: cursor.position,
                oldest: self.oldest,
            });
        }
        for e in &self.events[(cursor.position - self.base) as usize..] {
            cursor.position = e.revision;
            if cursor.prefix.contains(&e.key) {
                return Ok(Some(e.clone()));
            }
        }
        Ok(None)
    }
}

fn revision_in(model: &Model, i: &Index) -> Revision {
    // From two before the first revision up to two past the current one, so that compacted
    // and future revisions come up too.
    let low = model.base.saturating_sub(2);
    low + i.index((model.current() - low) as usize + 3) as Revision
}

fn expected_revision(model: &Model, key: &Key, e: Expect) -> Option<Revision> {
    match e {
        Expect::Nothing => None,
        Expect::Current => Some(model.live(key).map_or(0, |v| v.mod_revision)),
        Expect::Other(i) => Some(i.index(model.current() as usize + 2) as Revision),
    }
}

fn events(r: Result<Option<Arc<Event<u32>>>>) -> Result<Option<Event<u32>>> {
    r.map(|e| e.map(|e| (*e).clone()))
}

fn run(window: usize, ops: Vec<Op>, under: Under<'_>) -> std::result::Result<(), TestCaseError> {
    let mut storage = open(window, under);
    // etcd is shared by the cases: this one starts where etcd is, with nothing older readable.
    let base = storage.current_revision();
    storage.compact(base).expect("compact at the start");
    let mut model = Model {
        base,
        states: vec![BTreeMap::new()],
        events: Vec::new(),
        oldest: base,
        window: window as Revision,
    };
    let mut cursors: Vec<(Box<dyn Watcher<u32>>, ModelCursor)> = Vec::new();
    let mut pending: Option<(Prefix, Revision, usize, Key)> = None;
    for op in ops {
        match op {
            Op::Create(k, v) => {
                let key = key(k);
                let real = storage.create(&key, v).map(|e| (*e).clone());
                prop_assert_eq!(real, model.write(&key, Some(v), None, true));
            }
            Op::Update(k, v, e) => {
                let key = key(k);
                let expected = expected_revision(&model, &key, e);
                let real = storage.update(&key, v, expected).map(|e| (*e).clone());
                prop_assert_eq!(real, model.write(&key, Some(v), expected, false));
            }
            Op::Delete(k, e) => {
                let key = key(k);
                let expected = expected_revision(&model, &key, e);
                let real = storage.delete(&key, expected).map(|e| (*e).clone());
                prop_assert_eq!(real, model.write(&key, None, expected, false));
            }
            Op::Get(k, at) => {
                let key = key(k);
                let at = at.map(|i| revision_in(&model, &i));
                let expected = model.check(at).map(|r| model.state(r).get(&key).cloned());
                prop_assert_eq!(storage.get(&key, at), expected);
            }
            Op::List {
                prefix: p,
                at,
                limit,
                after,
            } => {
                let prefix = prefix(p);
                let at = at.map(|i| revision_in(&model, &i));
                let after = after.map(key);
                let options = ListOptions {
                    at,
                    limit,
                    continue_after: after.clone(),
                };
                let real = storage.list(&prefix, &options);
                prop_assert_eq!(&real, &model.list(&prefix, at, limit, after.as_ref()));
                if let Ok(ListPage {
                    revision,
                    continue_after: Some(k),
                    ..
                }) = real
                {
                    pending = Some((prefix, revision, limit, k));
                }
            }
            Op::Continue => {
                if let Some((prefix, revision, limit, after)) = pending.take() {
                    let options = ListOptions {
                        at: Some(revision),
                        limit,
                        continue_after: Some(after.clone()),
                    };
                    let real = storage.list(&prefix, &options);
                    prop_assert_eq!(
                        &real,
                        &model.list(&prefix, Some(revision), limit, Some(&after))
                    );
                    if let Ok(ListPage {
                        continue_after: Some(k),
                        ..
                    }) = real
                    {
                        pending = Some((prefix, revision, limit, k));
                    }
                }
            }
            Op::Compact(i) => {
                let r = revision_in(&model, &i);
                let expected = if r > model.current() {
                    Err(StorageError::FutureRevision {
                        requested: r,
                        current: model.current(),
                    })
                } else {
                    model.oldest = model.oldest.max(r);
                    Ok(())
                };
                prop_assert_eq!(storage.compact(r), expected);
            }
            Op::Watch(p, from) => {
                let prefix = prefix(p);
                let from = from.map(|i| revision_in(&model, &i));
                match (storage.watch(&prefix, from), model.check(from)) {
                    (Ok(cursor), Ok(position)) => {
                        prop_assert_eq!(cursor.position(), position);
                        cursors.push((cursor, ModelCursor { prefix, position }));
                    }
                    (Err(real), Err(expected)) => prop_assert_eq!(real, expected),
                    (real, expected) => {
                        return Err(TestCaseError::fail(format!(
                            "watch from {from:?}: storage {:?}, model {expected:?}",
                            real.map(|c| c.position())
                        )))
                    }
                }
            }
            Op::Next(c, n) => {
                if cursors.is_empty() {
                    continue;
                }
                let i = c.index(cursors.len());
                let (cursor, modeled) = &mut cursors[i];
                for _ in 0..n {
                    let real = events(cursor.try_next());
                    prop_assert_eq!(real, model.next(modeled));
                    prop_assert_eq!(cursor.position(), modeled.position);
                }
            }
            Op::Batch(c, max) => {
                if cursors.is_empty() {
                    continue;
                }
                let i = c.index(cursors.len());
                let (cursor, modeled) = &mut cursors[i];
                let mut out = Vec::new();
                let real = cursor
                    .try_next_batch(&mut out, max)
                    .map(|_| out.iter().map(|e| (**e).clone()).collect::<Vec<_>>());
                // A lagging cursor is Gone even when it asks for no events.
                let mut expected = if modeled.position < model.oldest {
                    Err(StorageError::Gone {
                        requested: modeled.position,
                        oldest: model.oldest,
                    })
                } else {
                    Ok(Vec::new())
                };
                for _ in 0..if expected.is_ok() { max } else { 0 } {
                    match model.next(modeled) {
                        Ok(Some(e)) => expected.as_mut().unwrap().push(e),
                        Ok(None) => break,
                        Err(e) => {
                            expected = Err(e);
                            break;
                        }
                    }
                }
                prop_assert_eq!(real, expected);
                prop_assert_eq!(cursor.position(), modeled.position);
            }
            Op::Reopen => {
                if !matches!(under, Under::Memory) {
                    cursors.clear();
                    drop(storage);
                    storage = open(window, under);
                }
            }
        }
        prop_assert_eq!(storage.current_revision(), model.current());
        prop_assert_eq!(storage.oldest_revision(), model.oldest);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn storage_answers_every_operation_as_the_naive_model_does(
        window in prop_oneof![1..24usize, Just(10_000usize)],
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        run(window, ops, Under::Memory)?;
    }
}

proptest! {
    // Fewer cases: each write of the durable storage is a transaction.
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn durable_storage_answers_every_operation_as_the_naive_model_does_across_reopens(
        window in prop_oneof![1..24usize, Just(10_000usize)],
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        let dir = scratch_dir();
        let result = run(window, ops, Under::Durable(&dir));
        let _ = std::fs::remove_dir_all(&dir);
        result?;
    }
}

/// One etcd for all the cases (started here, stopped at the end), each case under a key prefix
/// of its own; the log's window is larger than any case, as etcd keeps everything until a
/// compaction.
#[test]
fn etcd_storage_answers_every_operation_as_the_naive_model_does_across_reconnects() {
    let Some(binary) = etcd_or_skip("etcd model test") else {
        return;
    };
    let cluster = EtcdCluster::start(&binary, 1);
    let endpoints = cluster.endpoints();
    let case = AtomicUsize::new(0);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(32));
    let result = runner.run(&proptest::collection::vec(op(), 1..200), |ops| {
        let prefix = format!("/model-{}", case.fetch_add(1, Ordering::SeqCst));
        run(10_000, ops, Under::Etcd(&endpoints, &prefix))
    });
    drop(cluster);
    if let Err(e) = result {
        panic!("{e}");
    }
}

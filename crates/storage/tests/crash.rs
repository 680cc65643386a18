//! Crash test of the durable storage: a child process (this test binary run again with
//! `KUBEPLANE_CRASH_DIR` set) writes from several threads and prints each acknowledged write;
//! the parent kills it with SIGKILL mid-stream, opens the directory again and checks that every
//! acknowledged write is there with its revision, that the revision counter did not go back,
//! that a watch from an old revision replays the history, and that compaction is kept.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use kubeplane_storage::{
    Codec, DurableStorage, EventKind, Key, Prefix, Revision, Storage, StorageError,
};

const CHILD_ENV: &str = "KUBEPLANE_CRASH_DIR";
const WRITERS: usize = 4;
const WINDOW: usize = 1_000_000;

struct Utf8;

impl Codec<String> for Utf8 {
    fn encode(&self, value: &String, out: &mut Vec<u8>) {
        out.extend_from_slice(value.as_bytes());
    }

    fn decode(&self, bytes: &[u8]) -> Result<String, String> {
        String::from_utf8(bytes.to_vec()).map_err(|e| e.to_string())
    }
}

fn key(writer: usize, i: usize) -> Key {
    Key::new("things", &format!("w{writer}"), &format!("n{i}"))
}

/// The child: each writer creates its keys in turn, updates every second one and deletes every
/// third one, printing `ack <writer> <i> <op> <revision>` once the storage acknowledged.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let storage = Arc::new(DurableStorage::open(&dir, WINDOW, Utf8).expect("open"));
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let storage = storage.clone();
            std::thread::spawn(move || {
                let ack = |i: usize, op: &str, r: Revision| {
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "ack {w} {i} {op} {r}").unwrap();
                    out.flush().unwrap();
                };
                for i in 0..1_000_000 {
                    let k = key(w, i);
                    let e = storage.create(&k, format!("{w}-{i}-a")).unwrap();
                    ack(i, "create", e.revision);
                    if i % 2 == 0 {
                        let e = storage
                            .update(&k, format!("{w}-{i}-b"), Some(e.revision))
                            .unwrap();
                        ack(i, "update", e.revision);
                    }
                    if i % 3 == 0 {
                        let e = storage.delete(&k, None).unwrap();
                        ack(i, "delete", e.revision);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kubeplane-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The last acknowledged write of each key: its op and revision.
type Acks = BTreeMap<(usize, usize), (String, Revision)>;

/// Runs the child until it acknowledged `n` writes, kills it with SIGKILL and returns every
/// write it acknowledged (the lines already written count too).
fn write_then_kill(dir: &Path, n: usize) -> Acks {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acks = Acks::new();
    let mut record = |line: String| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 5 && f[0] == "ack" {
            let k = (f[1].parse().unwrap(), f[2].parse().unwrap());
            acks.insert(k, (f[3].to_string(), f[4].parse().unwrap()));
            true
        } else {
            false
        }
    };
    let mut seen = 0;
    while seen < n {
        let line = lines.next().expect("the child stopped early").unwrap();
        seen += usize::from(record(line));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    for line in lines {
        record(line.unwrap());
    }
    acks
}

#[test]
fn every_acknowledged_write_survives_kill_9_and_the_history_replays() {
    let dir = scratch_dir("crash");
    let acks = write_then_kill(&dir, 3000);
    let storage = DurableStorage::open(&dir, WINDOW, Utf8).unwrap();
    let last_ack = acks.values().map(|a| a.1).max().unwrap();
    assert!(storage.current_revision() >= last_ack);
    // A watch from revision 0 replays every write, each revision once, in order, and every
    // acknowledged write is among them.
    let mut watch = storage.watch(&Prefix::All, Some(0)).unwrap();
    let mut replayed = BTreeMap::new();
    while let Some(e) = watch.try_next().unwrap() {
        replayed.insert(e.revision, (e.key.clone(), e.kind));
    }
    let expected: Vec<Revision> = (1..=storage.current_revision()).collect();
    assert_eq!(replayed.keys().copied().collect::<Vec<_>>(), expected);
    for (&(w, i), (op, revision)) in &acks {
        let kind = match op.as_str() {
            "create" => EventKind::Added,
            "update" => EventKind::Modified,
            _ => EventKind::Deleted,
        };
        assert_eq!(
            replayed[revision],
            (key(w, i), kind),
            "{w}/{i} at {revision}"
        );
    }

    // The current state holds each key's last acknowledged write, or a later one.
    for (&(w, i), (op, revision)) in &acks {
        let later_delete = replayed
            .range(revision + 1..)
            .any(|(_, (k, kind))| *k == key(w, i) && *kind == EventKind::Deleted);
        match (storage.get(&key(w, i), None).unwrap(), op.as_str()) {
            (None, "delete") => {}
            (None, _) => assert!(
                later_delete,
                "{w}/{i}: acknowledged {op} at {revision} lost"
            ),
            (Some(v), _) => {
                assert!(v.mod_revision >= *revision, "{w}/{i} went back");
                if v.mod_revision == *revision {
                    let suffix = if op == "create" { "a" } else { "b" };
                    assert_eq!(v.value, format!("{w}-{i}-{suffix}"));
                }
            }
        }
    }
    drop(watch);
    drop(storage);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compaction_is_kept_across_a_restart_and_older_watches_are_gone() {
    let dir = scratch_dir("compact");
    let storage = DurableStorage::open(&dir, 100, Utf8).unwrap();
    for i in 0..20 {
        storage.create(&key(0, i), format!("v{i}")).unwrap();
    }
    storage.compact(12).unwrap();
    drop(storage);

    let storage = DurableStorage::open(&dir, 100, Utf8).unwrap();
    assert_eq!(storage.current_revision(), 20);
    assert_eq!(storage.oldest_revision(), 12);
    let gone = storage.watch(&Prefix::All, Some(11)).err();
    assert_eq!(
        gone,
        Some(StorageError::Gone {
            requested: 11,
            oldest: 12
        })
    );
    let mut watch = storage.watch(&Prefix::All, Some(12)).unwrap();
    let mut replayed = Vec::new();
    while let Some(e) = watch.try_next().unwrap() {
        replayed.push((e.revision, e.current.as_ref().unwrap().value.clone()));
    }
    let expected: Vec<_> = (13..=20).map(|r| (r, format!("v{}", r - 1))).collect();
    assert_eq!(replayed, expected);
    // The state before the compaction point is still complete.
    assert_eq!(storage.get(&key(0, 0), None).unwrap().unwrap().value, "v0");
    assert_eq!(
        storage.get(&key(0, 3), Some(12)).unwrap().unwrap().value,
        "v3"
    );
    drop(watch);
    drop(storage);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_window_bounds_the_history_kept_on_disk_and_a_reopen_keeps_the_bound() {
    let dir = scratch_dir("window");
    let storage = DurableStorage::open(&dir, 5, Utf8).unwrap();
    let k = key(1, 1);
    let mut e = storage.create(&k, "0".to_string()).unwrap();
    for i in 1..30 {
        e = storage.update(&k, i.to_string(), Some(e.revision)).unwrap();
    }
    drop(storage);
    let storage = DurableStorage::open(&dir, 5, Utf8).unwrap();
    assert_eq!(storage.current_revision(), 30);
    assert_eq!(storage.oldest_revision(), 25);
    assert_eq!(storage.get(&k, Some(25)).unwrap().unwrap().value, "24");
    assert!(matches!(
        storage.get(&k, Some(24)),
        Err(StorageError::Gone { .. })
    ));
    // The next write goes on from the recovered revision, with the key's create revision.
    let next = storage.update(&k, "x".into(), Some(30)).unwrap();
    assert_eq!(next.revision, 31);
    assert_eq!(next.current.as_ref().unwrap().create_revision, 1);
    drop(storage);
    let _ = std::fs::remove_dir_all(&dir);
}

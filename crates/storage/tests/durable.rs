//! The durable storage under concurrent writers, where writes wait for their group's sync
//! while later ones are applied: an acknowledged write is visible, readers never see past the
//! visible revision, reflectors that relist after `Gone` converge, and a reopen finds the same
//! state.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use kubeplane_storage::{
    Codec, DurableStorage, Key, ListOptions, Prefix, Revision, Storage, StorageError,
};

const WRITERS: u64 = 8;
const WRITES_EACH: u64 = 300;
const WINDOW: usize = 64;

struct U64;

impl Codec<u64> for U64 {
    fn encode(&self, value: &u64, out: &mut Vec<u8>) {
        out.extend_from_slice(&value.to_le_bytes());
    }

    fn decode(&self, bytes: &[u8]) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            bytes.try_into().map_err(|_| "not 8 bytes")?,
        ))
    }
}

fn scratch_dir() -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("kubeplane-durable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// List, watch from the list's revision, and list again on `Gone`, until `until`.
fn reflect(s: &dyn Storage<u64>, until: Revision) -> BTreeMap<Key, u64> {
    'relist: loop {
        let page = s.list(&Prefix::All, &ListOptions::default()).unwrap();
        assert!(page.revision <= s.current_revision());
        let mut cache: BTreeMap<Key, u64> =
            page.items.into_iter().map(|(k, v)| (k, v.value)).collect();
        let Ok(mut w) = s.watch(&Prefix::All, Some(page.revision)) else {
            continue 'relist;
        };
        while w.position() < until {
            match w.wait_next(Duration::from_millis(50)) {
                Ok(Some(e)) => {
                    // A cursor never runs ahead of what the storage shows.
                    assert!(e.revision <= s.current_revision());
                    match &e.current {
                        Some(v) => cache.insert(e.key.clone(), v.value),
                        None => cache.remove(&e.key),
                    };
                }
                Ok(None) => {}
                Err(StorageError::Gone { .. }) => continue 'relist,
                Err(e) => panic!("{e}"),
            }
        }
        return cache;
    }
}

#[test]
fn concurrent_durable_writes_are_visible_once_acknowledged_and_followers_converge() {
    let dir = scratch_dir();
    let s = Arc::new(DurableStorage::open(&dir, WINDOW, U64).unwrap());
    let total = WRITERS * WRITES_EACH;
    let followers: Vec<_> = (0..2)
        .map(|_| {
            let s = s.clone();
            thread::spawn(move || reflect(&*s, total))
        })
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let lister = {
        let (s, done) = (s.clone(), done.clone());
        thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let page = s.list(&Prefix::All, &ListOptions::default()).unwrap();
                for (key, v) in &page.items {
                    assert!(v.mod_revision <= page.revision);
                    match s.get(key, Some(page.revision)) {
                        Ok(got) => assert_eq!(got.as_ref(), Some(v)),
                        // The window moved past the page meanwhile.
                        Err(StorageError::Gone { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let s = s.clone();
            thread::spawn(move || {
                for i in 0..WRITES_EACH {
                    let key = Key::new("things", "", &format!("{t}-{}", i % 5));
                    let e = if i < 5 {
                        s.create(&key, i).unwrap()
                    } else if i % 7 == 0 {
                        s.delete(&key, None).unwrap()
                    } else {
                        match s.update(&key, i, None) {
                            Ok(e) => e,
                            Err(StorageError::NotFound { .. }) => s.create(&key, i).unwrap(),
                            Err(e) => panic!("{e}"),
                        }
                    };
                    // Acknowledged means visible.
                    assert!(s.current_revision() >= e.revision);
                    let read = s.get(&key, None).unwrap();
                    assert_eq!(
                        read.map(|v| v.mod_revision),
                        e.current.as_ref().map(|v| v.mod_revision)
                    );
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    lister.join().unwrap();
    assert_eq!(s.current_revision(), total);
    let truth: BTreeMap<Key, u64> = s
        .list(&Prefix::All, &ListOptions::default())
        .unwrap()
        .items
        .into_iter()
        .map(|(k, v)| (k, v.value))
        .collect();
    for f in followers {
        assert_eq!(f.join().unwrap(), truth);
    }
    let oldest = s.oldest_revision();
    drop(s);

    let s = DurableStorage::open(&dir, WINDOW, U64).unwrap();
    assert_eq!(s.current_revision(), total);
    assert_eq!(s.oldest_revision(), oldest);
    assert_eq!(reflect(&s, total), truth);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

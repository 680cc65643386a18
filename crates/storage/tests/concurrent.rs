//! Readers on other threads follow one writer: every cursor sees every event once, in order,
//! lists read consistent snapshots, and a reflector that relists after `Gone` converges to the
//! final state.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use kubeplane_storage::{
    EventKind, Key, ListOptions, MemoryStorage, Prefix, Revision, Storage, StorageError, Watcher,
};

const WRITES: u64 = 20_000;
const KEYS: u64 = 97;

/// Writes `WRITES` times over `KEYS` keys: the value of each write is its revision, so readers
/// can check what they see.
fn write_all(s: &MemoryStorage<u64>) {
    let mut live = vec![false; KEYS as usize];
    for revision in 1..=WRITES {
        let k = (revision * 31) % KEYS;
        let key = Key::new("pods", ["even", "odd"][(k % 2) as usize], &k.to_string());
        let event = if !live[k as usize] {
            live[k as usize] = true;
            s.create(&key, revision)
        } else if revision % 5 == 0 {
            live[k as usize] = false;
            s.delete(&key, None)
        } else {
            s.update(&key, revision, None)
        };
        assert_eq!(event.unwrap().revision, revision);
    }
}

#[test]
fn cursors_on_reader_threads_see_every_event_once_in_order() {
    let s = MemoryStorage::new(WRITES as usize);
    let readers: Vec<_> = (0..4)
        .map(|i| {
            let mut w = s.cursor(&Prefix::All, Some(0)).unwrap();
            thread::spawn(move || {
                let mut expected = 1;
                let mut batch = Vec::new();
                while expected <= WRITES {
                    // Half the readers take batches, half wait for one event at a time.
                    if i % 2 == 0 {
                        batch.clear();
                        if w.try_next_batch(&mut batch, 100).unwrap() == 0 {
                            thread::yield_now();
                        }
                    } else if let Some(e) = w.wait_next(Duration::from_secs(60)).unwrap() {
                        batch = vec![e];
                    }
                    for e in batch.drain(..) {
                        assert_eq!(e.revision, expected);
                        if e.kind != EventKind::Deleted {
                            assert_eq!(e.current.as_ref().unwrap().value, e.revision);
                        }
                        expected += 1;
                    }
                }
                w.position()
            })
        })
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let lister = {
        let s = s.clone();
        let done = done.clone();
        thread::spawn(move || {
            let mut last = 0;
            while !done.load(Ordering::SeqCst) {
                let page = s.list(&Prefix::All, &ListOptions::default()).unwrap();
                assert!(page.revision >= last);
                last = page.revision;
                for (key, v) in &page.items {
                    assert!(v.mod_revision <= page.revision);
                    assert_eq!(v.value, v.mod_revision);
                    // The snapshot agrees with a point read at its revision.
                    assert_eq!(s.get(key, Some(page.revision)).unwrap().as_ref(), Some(v));
                }
            }
        })
    };
    write_all(&s);
    done.store(true, Ordering::SeqCst);
    for r in readers {
        assert_eq!(r.join().unwrap(), WRITES);
    }
    lister.join().unwrap();
}

/// What a Kubernetes reflector does: list, watch from the list's revision, and on `Gone` list
/// again.
fn reflect(s: &MemoryStorage<u64>, prefix: &Prefix, until: Revision) -> (BTreeMap<Key, u64>, u32) {
    let mut relists = 0;
    'relist: loop {
        let page = s.list(prefix, &ListOptions::default()).unwrap();
        let mut cache: BTreeMap<Key, u64> =
            page.items.into_iter().map(|(k, v)| (k, v.value)).collect();
        // Under load the writers can push the list's revision out of the window before the
        // watch opens: that is Gone too, and a reflector lists again.
        let mut w = match s.watch(prefix, Some(page.revision)) {
            Ok(w) => w,
            Err(StorageError::Gone { .. }) => {
                relists += 1;
                continue 'relist;
            }
            Err(e) => panic!("{e}"),
        };
        while w.position() < until {
            match w.wait_next(Duration::from_millis(50)) {
                Ok(Some(e)) => match &e.current {
                    Some(v) => {
                        cache.insert(e.key.clone(), v.value);
                    }
                    None => {
                        cache.remove(&e.key);
                    }
                },
                Ok(None) => {}
                Err(StorageError::Gone { .. }) => {
                    relists += 1;
                    continue 'relist;
                }
                Err(e) => panic!("{e}"),
            }
        }
        return (cache, relists);
    }
}

#[test]
fn reflectors_that_relist_after_gone_converge_to_the_final_state() {
    // A window far smaller than the writes, so followers that fall behind lose their place.
    let s = MemoryStorage::new(64);
    let followers: Vec<_> = [Prefix::All, Prefix::namespace("pods", "odd")]
        .into_iter()
        .cycle()
        .take(4)
        .map(|prefix| {
            let s = s.clone();
            thread::spawn(move || {
                let (cache, relists) = reflect(&s, &prefix, WRITES);
                (prefix, cache, relists)
            })
        })
        .collect();
    write_all(&s);
    for f in followers {
        let (prefix, cache, _relists) = f.join().unwrap();
        let truth: BTreeMap<Key, u64> = s
            .list(&prefix, &ListOptions::default())
            .unwrap()
            .items
            .into_iter()
            .map(|(k, v)| (k, v.value))
            .collect();
        assert_eq!(cache, truth);
    }
}

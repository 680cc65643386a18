//! One test per rule of the storage contract (the crate documentation states them), on the
//! in-memory implementation.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kubeplane_storage::{
    EventKind, Key, ListOptions, MemoryStorage, Prefix, Storage, StorageError, Versioned, Watcher,
};

fn pod(ns: &str, name: &str) -> Key {
    Key::new("pods", ns, name)
}

fn storage() -> MemoryStorage<&'static str> {
    MemoryStorage::new(1000)
}

fn keys(page: &kubeplane_storage::ListPage<&'static str>) -> Vec<String> {
    page.items.iter().map(|(k, _)| k.to_string()).collect()
}

#[test]
fn every_successful_write_takes_the_next_revision_and_a_failed_one_takes_none() {
    let s = storage();
    assert_eq!(s.current_revision(), 0);
    assert_eq!(s.create(&pod("a", "p"), "v1").unwrap().revision, 1);
    assert!(s.create(&pod("a", "p"), "again").is_err());
    assert!(s.update(&pod("a", "q"), "v", None).is_err());
    assert_eq!(s.update(&pod("a", "p"), "v2", None).unwrap().revision, 2);
    assert_eq!(s.delete(&pod("a", "p"), None).unwrap().revision, 3);
    assert_eq!(s.current_revision(), 3);
}

#[test]
fn create_of_a_live_key_is_already_exists() {
    let s = storage();
    s.create(&pod("a", "p"), "v1").unwrap();
    assert_eq!(
        s.create(&pod("a", "p"), "v2"),
        Err(StorageError::AlreadyExists { key: pod("a", "p") })
    );
    assert_eq!(s.get(&pod("a", "p"), None).unwrap().unwrap().value, "v1");
}

#[test]
fn update_and_delete_of_a_missing_key_are_not_found() {
    let s = storage();
    let missing = StorageError::NotFound { key: pod("a", "p") };
    assert_eq!(s.update(&pod("a", "p"), "v", None), Err(missing.clone()));
    assert_eq!(s.delete(&pod("a", "p"), None), Err(missing.clone()));
    s.create(&pod("a", "p"), "v").unwrap();
    s.delete(&pod("a", "p"), None).unwrap();
    assert_eq!(s.delete(&pod("a", "p"), None), Err(missing));
}

#[test]
fn a_write_with_a_stale_expected_revision_is_a_conflict_naming_both_revisions() {
    let s = storage();
    s.create(&pod("a", "p"), "v1").unwrap();
    s.update(&pod("a", "p"), "v2", Some(1)).unwrap();
    let conflict = StorageError::Conflict {
        key: pod("a", "p"),
        expected: 1,
        actual: 2,
    };
    assert_eq!(
        s.update(&pod("a", "p"), "v3", Some(1)),
        Err(conflict.clone())
    );
    assert_eq!(s.delete(&pod("a", "p"), Some(1)), Err(conflict));
    assert_eq!(s.delete(&pod("a", "p"), Some(2)).unwrap().revision, 3);
}

#[test]
fn a_create_after_a_delete_starts_a_new_life_with_its_own_create_revision() {
    let s = storage();
    s.create(&pod("a", "p"), "first").unwrap();
    s.update(&pod("a", "p"), "first, changed", None).unwrap();
    s.delete(&pod("a", "p"), None).unwrap();
    s.create(&pod("a", "p"), "second").unwrap();
    s.update(&pod("a", "p"), "second, changed", None).unwrap();
    let v = s.get(&pod("a", "p"), None).unwrap().unwrap();
    assert_eq!((v.create_revision, v.mod_revision), (4, 5));
    let old = s.get(&pod("a", "p"), Some(2)).unwrap().unwrap();
    assert_eq!(
        (old.value, old.create_revision, old.mod_revision),
        ("first, changed", 1, 2)
    );
}

#[test]
fn a_read_at_a_past_revision_sees_the_state_of_that_revision() {
    let s = storage();
    s.create(&pod("a", "p"), "v1").unwrap();
    s.create(&pod("a", "q"), "q1").unwrap();
    s.update(&pod("a", "p"), "v2", None).unwrap();
    s.delete(&pod("a", "q"), None).unwrap();
    assert_eq!(s.get(&pod("a", "p"), Some(0)).unwrap(), None);
    assert_eq!(s.get(&pod("a", "p"), Some(2)).unwrap().unwrap().value, "v1");
    assert_eq!(s.get(&pod("a", "p"), Some(3)).unwrap().unwrap().value, "v2");
    assert_eq!(s.get(&pod("a", "q"), Some(3)).unwrap().unwrap().value, "q1");
    assert_eq!(s.get(&pod("a", "q"), None).unwrap(), None);
    let at2 = ListOptions {
        at: Some(2),
        ..ListOptions::default()
    };
    let page = s.list(&Prefix::All, &at2).unwrap();
    assert_eq!(page.revision, 2);
    assert_eq!(keys(&page), ["pods/a/p", "pods/a/q"]);
}

#[test]
fn reads_and_watches_before_the_oldest_revision_are_gone_and_at_it_still_work() {
    let s = storage();
    for i in 0..5 {
        s.create(&pod("a", &i.to_string()), "v").unwrap();
    }
    s.compact(3).unwrap();
    assert_eq!(s.oldest_revision(), 3);
    let gone = StorageError::Gone {
        requested: 2,
        oldest: 3,
    };
    assert_eq!(s.get(&pod("a", "0"), Some(2)), Err(gone.clone()));
    let at2 = ListOptions {
        at: Some(2),
        ..ListOptions::default()
    };
    assert_eq!(s.list(&Prefix::All, &at2), Err(gone.clone()));
    assert_eq!(s.watch(&Prefix::All, Some(2)).err(), Some(gone));
    assert_eq!(
        s.get(&pod("a", "2"), Some(3))
            .unwrap()
            .unwrap()
            .mod_revision,
        3
    );
    let mut w = s.watch(&Prefix::All, Some(3)).unwrap();
    assert_eq!(w.try_next().unwrap().unwrap().revision, 4);
}

#[test]
fn reads_watches_and_compactions_past_the_current_revision_are_future_revision() {
    let s = storage();
    s.create(&pod("a", "p"), "v").unwrap();
    let future = StorageError::FutureRevision {
        requested: 2,
        current: 1,
    };
    assert_eq!(s.get(&pod("a", "p"), Some(2)), Err(future.clone()));
    let at2 = ListOptions {
        at: Some(2),
        ..ListOptions::default()
    };
    assert_eq!(s.list(&Prefix::All, &at2), Err(future.clone()));
    assert_eq!(s.watch(&Prefix::All, Some(2)).err(), Some(future.clone()));
    assert_eq!(s.compact(2), Err(future));
}

#[test]
fn compacting_at_or_below_the_oldest_revision_changes_nothing() {
    let s = storage();
    for i in 0..4 {
        s.create(&pod("a", &i.to_string()), "v").unwrap();
    }
    s.compact(3).unwrap();
    s.compact(1).unwrap();
    s.compact(3).unwrap();
    assert_eq!(s.oldest_revision(), 3);
    assert_eq!(s.get(&pod("a", "0"), Some(3)).unwrap().unwrap().value, "v");
}

#[test]
fn the_window_keeps_exactly_the_last_revisions_and_the_live_state() {
    let s = MemoryStorage::new(3);
    s.create(&pod("a", "p"), 0).unwrap();
    for i in 1..10 {
        s.update(&pod("a", "p"), i, None).unwrap();
    }
    assert_eq!((s.oldest_revision(), s.current_revision()), (7, 10));
    assert_eq!(s.get(&pod("a", "p"), Some(7)).unwrap().unwrap().value, 6);
    assert!(matches!(
        s.get(&pod("a", "p"), Some(6)),
        Err(StorageError::Gone { oldest: 7, .. })
    ));
    // A key written long before the window is still live and readable anywhere in it.
    s.create(&pod("a", "old"), 100).unwrap();
    for i in 10..20 {
        s.update(&pod("a", "p"), i, None).unwrap();
    }
    let oldest = s.oldest_revision();
    assert_eq!(
        s.get(&pod("a", "old"), Some(oldest))
            .unwrap()
            .unwrap()
            .value,
        100
    );
}

#[test]
fn a_list_holds_the_prefix_in_resource_namespace_name_order() {
    let s = storage();
    for (r, ns, n) in [
        ("pods", "b", "x"),
        ("nodes", "", "n1"),
        ("pods", "a", "z"),
        ("pods", "a", "y"),
        ("podsx", "a", "a"),
        ("pods", "", "cluster"),
    ] {
        s.create(&Key::new(r, ns, n), "v").unwrap();
    }
    let all = ListOptions::default();
    let pods = s.list(&Prefix::resource("pods"), &all).unwrap();
    assert_eq!(
        keys(&pods),
        ["pods/cluster", "pods/a/y", "pods/a/z", "pods/b/x"]
    );
    let in_a = s.list(&Prefix::namespace("pods", "a"), &all).unwrap();
    assert_eq!(keys(&in_a), ["pods/a/y", "pods/a/z"]);
    let everything = s.list(&Prefix::All, &all).unwrap();
    assert_eq!(everything.items.len(), 6);
    assert_eq!(everything.revision, 6);
}

#[test]
fn pages_read_at_one_revision_form_one_snapshot_despite_writes_between_them() {
    let s = storage();
    for n in ["a", "b", "c", "d", "e"] {
        s.create(&pod("ns", n), "v").unwrap();
    }
    let first = s
        .list(
            &Prefix::resource("pods"),
            &ListOptions {
                limit: 2,
                ..ListOptions::default()
            },
        )
        .unwrap();
    assert_eq!(keys(&first), ["pods/ns/a", "pods/ns/b"]);
    assert_eq!(first.continue_after, Some(pod("ns", "b")));
    s.delete(&pod("ns", "c"), None).unwrap();
    s.create(&pod("ns", "bb"), "new").unwrap();
    let mut seen = keys(&first);
    let mut after = first.continue_after;
    while let Some(k) = after {
        let page = s
            .list(
                &Prefix::resource("pods"),
                &ListOptions {
                    at: Some(first.revision),
                    limit: 2,
                    continue_after: Some(k),
                },
            )
            .unwrap();
        seen.extend(keys(&page));
        after = page.continue_after;
    }
    assert_eq!(
        seen,
        [
            "pods/ns/a",
            "pods/ns/b",
            "pods/ns/c",
            "pods/ns/d",
            "pods/ns/e"
        ]
    );
}

#[test]
fn a_page_that_ends_the_list_has_no_continue_key() {
    let s = storage();
    s.create(&pod("ns", "a"), "v").unwrap();
    s.create(&pod("ns", "b"), "v").unwrap();
    let page = s
        .list(
            &Prefix::All,
            &ListOptions {
                limit: 2,
                ..ListOptions::default()
            },
        )
        .unwrap();
    assert_eq!((page.items.len(), page.continue_after), (2, None));
}

#[test]
fn a_continue_at_a_revision_compacted_meanwhile_is_gone() {
    let s = storage();
    for n in ["a", "b", "c"] {
        s.create(&pod("ns", n), "v").unwrap();
    }
    let options = ListOptions {
        limit: 1,
        ..ListOptions::default()
    };
    let first = s.list(&Prefix::All, &options).unwrap();
    s.update(&pod("ns", "a"), "w", None).unwrap();
    s.compact(4).unwrap();
    let next = ListOptions {
        at: Some(first.revision),
        limit: 1,
        continue_after: first.continue_after,
    };
    assert_eq!(
        s.list(&Prefix::All, &next),
        Err(StorageError::Gone {
            requested: 3,
            oldest: 4
        })
    );
}

#[test]
fn a_watch_yields_the_events_strictly_after_its_revision_with_previous_versions() {
    let s = storage();
    s.create(&pod("a", "p"), "v1").unwrap();
    let mut w = s.watch(&Prefix::All, Some(1)).unwrap();
    s.update(&pod("a", "p"), "v2", None).unwrap();
    s.delete(&pod("a", "p"), None).unwrap();
    let modified = w.try_next().unwrap().unwrap();
    assert_eq!((modified.kind, modified.revision), (EventKind::Modified, 2));
    assert_eq!(modified.current.as_ref().unwrap().value, "v2");
    assert_eq!(modified.prev.as_ref().unwrap().value, "v1");
    let deleted = w.try_next().unwrap().unwrap();
    assert_eq!((deleted.kind, deleted.revision), (EventKind::Deleted, 3));
    assert_eq!(deleted.current, None);
    assert_eq!(
        deleted.prev,
        Some(Versioned {
            value: "v2",
            create_revision: 1,
            mod_revision: 2
        })
    );
    assert_eq!(deleted.object().value, "v2");
    assert!(w.try_next().unwrap().is_none());
    assert_eq!(w.position(), 3);
}

#[test]
fn a_watch_without_a_revision_starts_at_the_current_one() {
    let s = storage();
    s.create(&pod("a", "p"), "v1").unwrap();
    let mut w = s.watch(&Prefix::All, None).unwrap();
    assert_eq!(w.position(), 1);
    assert!(w.try_next().unwrap().is_none());
    s.create(&pod("a", "q"), "v1").unwrap();
    assert_eq!(w.try_next().unwrap().unwrap().key, pod("a", "q"));
}

#[test]
fn cursors_on_one_log_advance_independently() {
    let s = storage();
    let mut early = s.watch(&Prefix::All, Some(0)).unwrap();
    for n in ["a", "b", "c"] {
        s.create(&pod("ns", n), "v").unwrap();
    }
    let mut late = s.watch(&Prefix::All, Some(2)).unwrap();
    assert_eq!(early.try_next().unwrap().unwrap().revision, 1);
    assert_eq!(late.try_next().unwrap().unwrap().revision, 3);
    assert_eq!(early.try_next().unwrap().unwrap().revision, 2);
    assert!(late.try_next().unwrap().is_none());
    assert_eq!(early.try_next().unwrap().unwrap().revision, 3);
}

#[test]
fn a_cursor_with_a_prefix_skips_other_keys_and_moves_its_position_past_them() {
    let s = storage();
    let mut w = s.watch(&Prefix::namespace("pods", "a"), None).unwrap();
    s.create(&pod("b", "x"), "v").unwrap();
    s.create(&pod("a", "x"), "v").unwrap();
    s.create(&Key::cluster("nodes", "n"), "v").unwrap();
    assert_eq!(w.try_next().unwrap().unwrap().key, pod("a", "x"));
    assert!(w.try_next().unwrap().is_none());
    assert_eq!(w.position(), 3);
}

#[test]
fn a_lagging_cursor_whose_next_events_were_forgotten_is_gone_for_good() {
    let s = MemoryStorage::new(2);
    let mut w = s.watch(&Prefix::All, None).unwrap();
    s.create(&pod("a", "p"), 0).unwrap();
    s.create(&pod("a", "q"), 0).unwrap();
    // The window holds revisions 1 and 2: the cursor at 0 still gets both.
    assert_eq!(w.try_next().unwrap().unwrap().revision, 1);
    s.update(&pod("a", "p"), 1, None).unwrap();
    s.update(&pod("a", "p"), 2, None).unwrap();
    let gone = StorageError::Gone {
        requested: 1,
        oldest: 2,
    };
    assert_eq!(w.try_next(), Err(gone.clone()));
    assert_eq!(w.try_next(), Err(gone.clone()));
    assert_eq!(w.wait_next(Duration::from_millis(1)), Err(gone));
}

#[test]
fn a_batch_takes_up_to_its_maximum_and_leaves_the_rest() {
    let s = storage();
    let mut w = s.watch(&Prefix::All, None).unwrap();
    for n in ["a", "b", "c", "d", "e"] {
        s.create(&pod("ns", n), "v").unwrap();
    }
    let mut out = Vec::new();
    assert_eq!(w.try_next_batch(&mut out, 3).unwrap(), 3);
    assert_eq!(w.position(), 3);
    assert_eq!(w.try_next_batch(&mut out, 3).unwrap(), 2);
    let revisions: Vec<u64> = out.iter().map(|e| e.revision).collect();
    assert_eq!(revisions, [1, 2, 3, 4, 5]);
}

#[test]
fn wait_next_returns_nothing_once_the_timeout_passes_without_a_write() {
    let s = storage();
    let mut w = s.watch(&Prefix::All, None).unwrap();
    let start = Instant::now();
    assert!(w.wait_next(Duration::from_millis(30)).unwrap().is_none());
    assert!(start.elapsed() >= Duration::from_millis(30));
}

#[test]
fn wait_next_wakes_when_another_thread_writes() {
    let s = storage();
    let mut w = s.watch(&Prefix::resource("pods"), None).unwrap();
    let writer = s.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        // An event outside the prefix wakes the cursor, which then waits on.
        writer.create(&Key::cluster("nodes", "n"), "v").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        writer.create(&pod("a", "p"), "v").unwrap();
    });
    // The longest timeout there is: waiting without a deadline.
    let event = w.wait_next(Duration::MAX).unwrap().unwrap();
    assert_eq!((event.key.clone(), event.revision), (pod("a", "p"), 2));
    t.join().unwrap();
}

#[test]
fn wait_for_revision_returns_once_the_revision_is_written() {
    let s = storage();
    assert!(s.wait_for_revision(0, Duration::ZERO));
    assert!(!s.wait_for_revision(1, Duration::from_millis(10)));
    let writer = s.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        writer.create(&pod("a", "p"), "v").unwrap();
    });
    assert!(s.wait_for_revision(1, Duration::from_secs(30)));
    t.join().unwrap();
}

#[test]
fn a_server_can_hold_the_storage_as_a_trait_object() {
    let s: Arc<dyn Storage<&'static str>> = Arc::new(storage());
    let event = s.create(&pod("a", "p"), "v").unwrap();
    assert_eq!(event.kind, EventKind::Added);
    let mut w: Box<dyn Watcher<&'static str>> = s.watch(&Prefix::All, Some(0)).unwrap();
    assert!(Arc::ptr_eq(&w.try_next().unwrap().unwrap(), &event));
}

#[test]
fn errors_read_as_sentences() {
    let conflict = StorageError::Conflict {
        key: pod("a", "p"),
        expected: 3,
        actual: 5,
    };
    assert_eq!(
        conflict.to_string(),
        "conflict on pods/a/p: expected revision 3, the current one is 5"
    );
    let gone = StorageError::Gone {
        requested: 2,
        oldest: 7,
    };
    assert_eq!(
        gone.to_string(),
        "revision 2 has been compacted; the oldest available revision is 7"
    );
    assert_eq!(
        StorageError::NotFound {
            key: Key::cluster("nodes", "n")
        }
        .to_string(),
        "nodes/n not found"
    );
}

#[test]
fn debug_output_shows_revisions_not_values() {
    let s = MemoryStorage::new(10);
    s.create(&pod("a", "p"), "secret").unwrap();
    let w = s.cursor(&Prefix::resource("pods"), None).unwrap();
    assert_eq!(
        format!("{s:?}"),
        "MemoryStorage { current: 1, oldest: 0, window: 10, keys: 1 }"
    );
    assert_eq!(
        format!("{w:?}"),
        "MemoryWatcher { prefix: Resource(\"pods\"), position: 1 }"
    );
}

//! `EtcdStorage` on real etcd servers started for each test (skipped without an etcd binary,
//! except under CI): kube-apiserver's key layout as etcd holds it, a scheduled compaction, and a
//! three-member cluster that keeps taking writes with one member killed, one that loses its
//! quorum and recovers, and a member that stops answering.

use std::time::{Duration, Instant};

use kubeplane_storage::etcd_testing::{etcd_or_skip, EtcdCluster};
use kubeplane_storage::{
    Codec, EtcdConfig, EtcdStorage, Key, ListOptions, Prefix, Storage, StorageError,
};

/// Values as their UTF-8 text, so that etcd's keys and values can be read back raw.
struct Text;

impl Codec<String> for Text {
    fn encode(&self, value: &String, out: &mut Vec<u8>) {
        out.extend_from_slice(value.as_bytes());
    }

    fn decode(&self, bytes: &[u8]) -> Result<String, String> {
        String::from_utf8(bytes.to_vec()).map_err(|e| e.to_string())
    }
}

fn connect(endpoints: Vec<String>, compaction: Option<Duration>) -> EtcdStorage<String> {
    let mut config = EtcdConfig::new(endpoints);
    config.compaction_interval = compaction;
    EtcdStorage::connect(&config, Text).expect("connect")
}

#[test]
fn keys_follow_kube_apiserver_layout_and_revisions_are_etcd_mod_revisions() {
    let Some(binary) = etcd_or_skip("etcd key layout") else {
        return;
    };
    let etcd = EtcdCluster::start(&binary, 1);
    let storage = connect(etcd.endpoints(), None);
    let cases = [
        (
            Key::new("pods", "default", "web"),
            "/registry/pods/default/web",
        ),
        (Key::cluster("minions", "n1"), "/registry/minions/n1"),
        (
            Key::new("events.k8s.io/events", "default", "e"),
            "/registry/events.k8s.io/events/default/e",
        ),
    ];
    for (key, path) in &cases {
        let event = storage.create(key, path.to_string()).unwrap();
        // The raw etcd key holds the value, at the event's revision.
        let raw = etcd.get(path).expect("the key is in etcd");
        assert_eq!(raw.0, *path);
        assert_eq!(raw.1, event.revision);
    }
    let all = storage.list(&Prefix::All, &ListOptions::default()).unwrap();
    let keys: Vec<Key> = all.items.into_iter().map(|(k, _)| k).collect();
    let mut expected: Vec<Key> = cases.iter().map(|(k, _)| k.clone()).collect();
    expected.sort_by_key(|k| cases.iter().find(|c| &c.0 == k).unwrap().1);
    assert_eq!(keys, expected, "a list is in the byte order of etcd's keys");
}

#[test]
fn the_compactor_compacts_one_interval_behind() {
    let Some(binary) = etcd_or_skip("etcd compactor") else {
        return;
    };
    let etcd = EtcdCluster::start(&binary, 1);
    let storage = connect(etcd.endpoints(), Some(Duration::from_millis(300)));
    let key = Key::new("configmaps", "default", "c");
    let first = storage.create(&key, "0".into()).unwrap();
    for i in 1..5 {
        storage.update(&key, i.to_string(), None).unwrap();
    }
    let mut waited = Duration::ZERO;
    while storage.oldest_revision() <= first.revision && waited < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
        waited += Duration::from_millis(50);
    }
    assert!(storage.oldest_revision() > first.revision, "compacted");
    assert!(matches!(
        storage.get(&key, Some(first.revision)),
        Err(StorageError::Gone { .. })
    ));
    assert!(matches!(
        storage.watch(&Prefix::All, Some(first.revision)),
        Err(StorageError::Gone { .. })
    ));
    assert_eq!(storage.get(&key, None).unwrap().unwrap().value, "4");
}

/// Creates `key`, retrying while the cluster elects a new leader; a retry that finds the key
/// means the first try was applied.
fn create_retrying(storage: &EtcdStorage<String>, key: &Key) {
    for _ in 0..100 {
        match storage.create(key, key.name().to_string()) {
            Ok(_) | Err(StorageError::AlreadyExists { .. }) => return,
            Err(
                StorageError::Unavailable { .. }
                | StorageError::Unreachable { .. }
                | StorageError::Timeout { .. },
            ) => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => panic!("create {key}: {e}"),
        }
    }
    panic!("create {key}: the cluster did not take the write");
}

#[test]
fn a_three_member_cluster_takes_writes_with_one_member_killed() {
    let Some(binary) = etcd_or_skip("three-member etcd") else {
        return;
    };
    let mut etcd = EtcdCluster::start(&binary, 3);
    let storage = connect(etcd.endpoints(), None);
    let mut cursor = storage.watch(&Prefix::resource("pods"), None).unwrap();
    let keys: Vec<Key> = (0..40)
        .map(|i| Key::new("pods", "default", &format!("p{i:02}")))
        .collect();
    for key in &keys[..20] {
        create_retrying(&storage, key);
    }
    etcd.stop_member(0);
    for key in &keys[20..] {
        create_retrying(&storage, key);
    }
    let page = storage
        .list(&Prefix::resource("pods"), &ListOptions::default())
        .unwrap();
    let listed: Vec<Key> = page.items.into_iter().map(|(k, _)| k).collect();
    assert_eq!(listed, keys);
    let mut watched = Vec::new();
    while let Some(event) = cursor.wait_next(Duration::from_secs(10)).unwrap() {
        watched.push(event.key.clone());
        if watched.len() == keys.len() {
            break;
        }
    }
    assert_eq!(watched, keys, "the watch saw every create once, in order");
}

/// Whether `result` is the failure of a storage without quorum: unreachable or timed out.
fn no_quorum<T: std::fmt::Debug>(result: &Result<T, StorageError>) -> bool {
    matches!(
        result,
        Err(StorageError::Unreachable { .. } | StorageError::Timeout { .. })
    )
}

/// Reads the cursor until it yields `last`, for up to 30 s; the keys it yielded.
fn keys_until(cursor: &mut dyn kubeplane_storage::Watcher<String>, last: &Key) -> Vec<Key> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut keys = Vec::new();
    while Instant::now() < deadline && keys.last() != Some(last) {
        if let Some(event) = cursor.wait_next(Duration::from_millis(200)).unwrap() {
            keys.push(event.key.clone());
        }
    }
    keys
}

#[test]
fn without_quorum_reads_and_writes_fail_as_unreachable_or_timeout_and_service_resumes_after() {
    let Some(binary) = etcd_or_skip("etcd without quorum") else {
        return;
    };
    let mut etcd = EtcdCluster::start(&binary, 3);
    let storage = connect(etcd.endpoints(), None);
    let key = |i: usize| Key::new("configmaps", "default", &format!("c{i}"));
    create_retrying(&storage, &key(0));
    let mut before = storage
        .watch(&Prefix::resource("configmaps"), None)
        .unwrap();
    let seen = before.position();

    etcd.stop_member(1);
    etcd.stop_member(2);
    let started = Instant::now();
    let write = storage.create(&key(1), "1".into());
    assert!(no_quorum(&write), "a write without quorum: {write:?}");
    let read = storage.get(&key(0), None);
    assert!(no_quorum(&read), "a read without quorum: {read:?}");
    let list = storage.list(&Prefix::resource("configmaps"), &ListOptions::default());
    assert!(no_quorum(&list), "a list without quorum: {list:?}");
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "three failures in {:?}",
        started.elapsed()
    );
    // A watch from a revision the storage has seen starts without asking etcd.
    let mut during = storage
        .watch(&Prefix::resource("configmaps"), Some(seen))
        .expect("a watch from a seen revision starts without quorum");

    etcd.run_member(1);
    etcd.run_member(2);
    etcd.wait_healthy(1);
    etcd.wait_healthy(2);
    create_retrying(&storage, &key(2));
    assert_eq!(storage.get(&key(2), None).unwrap().unwrap().value, "c2");
    // c1's create had an unknown outcome: etcd may have applied it once the quorum returned.
    for (name, cursor) in [("before", &mut before), ("during", &mut during)] {
        let keys = keys_until(cursor.as_mut(), &key(2));
        assert_eq!(
            keys.last(),
            Some(&key(2)),
            "the watch {name} sees c2: {keys:?}"
        );
        assert!(
            keys == [key(2)] || keys == [key(1), key(2)],
            "the watch {name} sees what followed, once: {keys:?}"
        );
    }
}

#[test]
fn a_member_that_answers_nothing_is_a_timeout_and_service_resumes_when_it_answers_again() {
    let Some(binary) = etcd_or_skip("etcd that answers nothing") else {
        return;
    };
    let etcd = EtcdCluster::start(&binary, 1);
    let mut config = EtcdConfig::new(etcd.endpoints());
    config.compaction_interval = None;
    config.timeout = Duration::from_secs(2);
    let storage = EtcdStorage::connect(&config, Text).expect("connect");
    let key = |i: usize| Key::new("configmaps", "default", &format!("c{i}"));
    storage.create(&key(0), "c0".into()).unwrap();
    let mut cursor = storage
        .watch(&Prefix::resource("configmaps"), None)
        .unwrap();

    etcd.pause_member(0);
    let started = Instant::now();
    let write = storage.create(&key(1), "c1".into());
    let took = started.elapsed();
    etcd.resume_member(0);
    assert!(
        matches!(write, Err(StorageError::Timeout { .. })),
        "a write etcd does not answer: {write:?}"
    );
    assert!(took < Duration::from_secs(5), "timed out after {took:?}");

    create_retrying(&storage, &key(2));
    let keys = keys_until(cursor.as_mut(), &key(2));
    assert!(
        keys == [key(2)] || keys == [key(1), key(2)],
        "the watch sees what followed, once: {keys:?}"
    );
}

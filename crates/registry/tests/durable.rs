//! The registry over the durable storage (`kubeplane serve --data-dir`): the API suite passes
//! over it, objects round-trip through their JSON encoding, and a restart keeps the objects,
//! the revision counter and unique names and UIDs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::{Client, Clock, Kind, Object, ObjectKey};
use kubeplane_registry::{ObjectJson, StorageClient};
use kubeplane_storage::Codec;

fn clock() -> Clock {
    Clock::new("2025-01-01T00:00:00Z".parse().unwrap())
}

/// A new directory under one per test process (in memory when the machine has /dev/shm: these
/// tests check the registry's answers; the storage's crash test syncs a real disk).
fn scratch_dir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let n = N.fetch_add(1, Ordering::SeqCst);
    let dir = base.join(format!("kubeplane-registry-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn pod(name: &str, generate: bool) -> Object {
    Object::Pod(Arc::new(
        Pod {
            metadata: ObjectMeta {
                name: (!generate).then(|| name.into()),
                generate_name: generate.then(|| name.into()),
                namespace: Some("default".into()),
                labels: Some([("app".to_string(), "web".to_string())].into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    image: Some("nginx".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
        .into(),
    ))
}

fn config_map(name: &str) -> Object {
    Object::from_json(&serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"b": "2", "a": "1"},
    }))
    .unwrap()
}

#[test]
fn the_registry_over_durable_storage_passes_the_api_suite() {
    let dirs = std::sync::Mutex::new(Vec::new());
    kubeplane_api::suite::run_all(&|| {
        let dir = scratch_dir();
        dirs.lock().unwrap().push(dir.clone());
        Box::new(StorageClient::open(&dir, 1, clock(), 1000).unwrap())
    });
    for dir in dirs.into_inner().unwrap() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn objects_of_every_stored_shape_round_trip_through_their_json_encoding() {
    let mut c = StorageClient::new(1, clock(), 100);
    let objects = [
        c.create(pod("web", false)).unwrap(),
        c.create(config_map("settings")).unwrap(),
        c.get(&ObjectKey::new(Kind::Namespace, "", "default"))
            .unwrap(),
    ];
    for obj in objects {
        let mut bytes = Vec::new();
        ObjectJson.encode(&obj, &mut bytes);
        assert_eq!(ObjectJson.decode(&bytes).unwrap(), obj);
    }
    assert!(ObjectJson
        .decode(br#"{"apiVersion":"v9","kind":"Pod"}"#)
        .is_err());
}

#[test]
fn a_restart_keeps_objects_and_revisions_and_draws_new_names_and_uids() {
    let dir = scratch_dir();
    let mut c = StorageClient::open(&dir, 7, clock(), 1000).unwrap();
    let mut before = vec![c.create(config_map("settings")).unwrap()];
    for _ in 0..3 {
        before.push(c.create(pod("web-", true)).unwrap());
    }
    let deleted = c.create(pod("gone", false)).unwrap();
    c.delete(&deleted.key(), Default::default()).unwrap();
    let revision = c.storage().current_revision();
    drop(c);

    let mut c = StorageClient::open(&dir, 7, clock(), 1000).unwrap();
    assert_eq!(c.storage().current_revision(), revision);
    for obj in &before {
        assert_eq!(&c.get(&obj.key()).unwrap(), obj);
    }
    assert!(c.get(&deleted.key()).is_err());
    // The cache of a client opened on the directory holds what was stored.
    assert_eq!(c.cache().list(Kind::Pod).count(), 3);
    let after: Vec<Object> = (0..3)
        .map(|_| c.create(pod("web-", true)).unwrap())
        .collect();
    assert_eq!(after[0].resource_version(), (revision + 1).to_string());
    let names: BTreeSet<&str> = before.iter().chain(&after).map(|o| o.name()).collect();
    let uids: BTreeSet<&str> = before.iter().chain(&after).map(|o| o.uid()).collect();
    assert_eq!(names.len(), 7);
    assert_eq!(uids.len(), 7);
    drop(c);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn clients_on_several_threads_write_durably_to_one_directory() {
    let dir = scratch_dir();
    let c = StorageClient::open(&dir, 1, clock(), 100_000).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let mut c = c.handle();
            std::thread::spawn(move || {
                (0..25)
                    .map(|i| c.create(pod(&format!("p-{t}-{i}"), false)).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let created: Vec<Object> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let revision = c.storage().current_revision();
    drop(c);
    let mut c = StorageClient::open(&dir, 1, clock(), 100_000).unwrap();
    assert_eq!(c.storage().current_revision(), revision);
    let versions: BTreeSet<&str> = created.iter().map(|o| o.resource_version()).collect();
    assert_eq!(versions.len(), 200);
    for obj in &created {
        assert_eq!(&c.get(&obj.key()).unwrap(), obj);
    }
    drop(c);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Pods created per second through clients over one durable directory, with 1, 16 and 64
/// threads each with its own client, for two seconds each, on the temporary directory's disk
/// (or in `KUBEPLANE_BENCH_DIR`): `cargo test --release -p kubeplane-registry --test durable
/// -- --ignored --nocapture`.
#[test]
#[ignore]
fn durable_pod_creates_per_second_by_client_threads() {
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};
    for threads in [1, 16, 64] {
        let base = std::env::var_os("KUBEPLANE_BENCH_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!("kubeplane-registry-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let c = StorageClient::open(&dir, 1, clock(), 100_000).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let start = Instant::now();
        let writers: Vec<_> = (0..threads)
            .map(|t| {
                let (mut c, stop) = (c.handle(), stop.clone());
                std::thread::spawn(move || {
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        c.create(pod(&format!("p-{t}-{n}"), false)).unwrap();
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs(2));
        stop.store(true, Ordering::Relaxed);
        let n: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
        let elapsed = start.elapsed().as_secs_f64();
        println!(
            "registry over durable storage, {threads:>2} client threads: {n} pod creates in \
             {elapsed:.2} s, {:.0} creates/s",
            n as f64 / elapsed
        );
        drop(c);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

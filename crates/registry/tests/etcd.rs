//! The registry over a real etcd (`kubeplane serve --etcd-servers`): the API suite passes, a
//! client connected anew finds what an earlier one stored, and objects are stored under
//! kube-apiserver's keys. Skipped without an etcd binary, except under CI.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Node, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::{Client, Clock, Kind, Object, ObjectKey};
use kubeplane_registry::StorageClient;
use kubeplane_storage::etcd_testing::{etcd_or_skip, EtcdCluster};
use kubeplane_storage::{EtcdConfig, Key};

fn clock() -> Clock {
    Clock::new("2025-01-01T00:00:00Z".parse().unwrap())
}

fn config(endpoints: Vec<String>, prefix: &str) -> EtcdConfig {
    let mut config = EtcdConfig::new(endpoints);
    config.prefix = prefix.into();
    config.compaction_interval = None;
    config
}

#[test]
fn the_registry_over_etcd_passes_the_api_suite() {
    let Some(binary) = etcd_or_skip("API suite on etcd") else {
        return;
    };
    let etcd = EtcdCluster::start(&binary, 1);
    let n = AtomicUsize::new(0);
    kubeplane_api::suite::run_all(&|| {
        let prefix = format!("/suite-{}", n.fetch_add(1, Ordering::SeqCst));
        let config = config(etcd.endpoints(), &prefix);
        Box::new(StorageClient::etcd(&config, 1, clock()).unwrap())
    });
}

#[test]
fn objects_are_stored_under_kube_apiserver_keys_and_outlive_their_client() {
    let Some(binary) = etcd_or_skip("registry keys on etcd") else {
        return;
    };
    let etcd = EtcdCluster::start(&binary, 1);
    let config = config(etcd.endpoints(), "/registry");
    let mut c = StorageClient::etcd(&config, 1, clock()).unwrap();
    let pod = c
        .create(Object::Pod(Arc::new(
            Pod {
                metadata: ObjectMeta {
                    name: Some("web".into()),
                    namespace: Some("default".into()),
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
        )))
        .unwrap();
    let node = c
        .create(Object::Node(Arc::new(
            Node {
                metadata: ObjectMeta {
                    name: Some("n1".into()),
                    ..Default::default()
                },
                ..Default::default()
            }
            .into(),
        )))
        .unwrap();
    // The resourceVersion is the key's etcd mod revision.
    for (key, obj) in [
        (Key::new("pods", "default", "web"), &pod),
        (Key::cluster("minions", "n1"), &node),
    ] {
        let stored = c.storage().get(&key, None).unwrap().expect("stored");
        assert_eq!(stored.mod_revision.to_string(), obj.resource_version());
    }
    drop(c);
    let mut again = StorageClient::etcd(&config, 1, clock()).unwrap();
    assert_eq!(
        again
            .get(&ObjectKey::new(Kind::Pod, "default", "web"))
            .unwrap(),
        pod
    );
    assert_eq!(again.cache().list(Kind::Node).count(), 1);
}

#[test]
fn two_servers_writing_one_object_without_resource_versions_get_no_conflict() {
    // Each client is a server of its own on one etcd. An update that names no resourceVersion
    // races the other's between its read and its write; upstream's GuaranteedUpdate reads
    // again and retries such a write, so neither may see a 409.
    let Some(binary) = etcd_or_skip("unconditional updates from two servers") else {
        return;
    };
    let etcd = EtcdCluster::start(&binary, 1);
    let config = config(etcd.endpoints(), "/registry");
    let map = |n: usize| {
        let v = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "shared", "namespace": "default"}, "data": {"n": n.to_string()}});
        Object::from_json(&v).unwrap()
    };
    StorageClient::etcd(&config, 1, clock())
        .unwrap()
        .create(map(0))
        .unwrap();
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let config = config.clone();
            std::thread::spawn(move || {
                let mut c = StorageClient::etcd(&config, 10 + w, clock()).unwrap();
                (0..150)
                    .filter_map(|i| c.update(map(w as usize * 1000 + i)).err())
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let failed: Vec<String> = writers
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    assert!(
        failed.is_empty(),
        "{} updates without a resourceVersion failed: {:?}",
        failed.len(),
        failed.first()
    );
}

//! What the registry over `kubeplane-storage` promises beyond the API suite: resourceVersions
//! are storage revisions, several threads write through their own clients, each client's
//! cache follows the storage, and the same calls give the same objects as over the store.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::{Client, Clock, DeleteOptions, Kind, Object, ObjectKey};
use kubeplane_registry::storage_client::storage_key;
use kubeplane_registry::testing::TestClient;
use kubeplane_registry::StorageClient;

fn clock() -> Clock {
    Clock::new("2025-01-01T00:00:00Z".parse().unwrap())
}

fn generated_pod(prefix: &str) -> Object {
    Object::Pod(Arc::new(
        Pod {
            metadata: ObjectMeta {
                generate_name: Some(prefix.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                containers: vec![k8s_openapi::api::core::v1::Container {
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

fn revision_of(c: &StorageClient, obj: &Object) -> u64 {
    c.storage()
        .get(&storage_key(obj.kind(), obj.namespace(), obj.name()), None)
        .unwrap()
        .unwrap()
        .mod_revision
}

#[test]
fn a_resource_version_is_the_storage_revision_of_the_write() {
    let mut c = StorageClient::new(1, clock(), 100);
    let created = c.create(generated_pod("web-")).unwrap();
    // The implicit namespace "default" was revision 1.
    assert_eq!(created.resource_version(), "2");
    assert_eq!(revision_of(&c, &created), 2);
    let updated = c.update(created).unwrap();
    assert_eq!(updated.resource_version(), "3");
    assert_eq!(c.storage().current_revision(), 3);
}

#[test]
fn clients_on_several_threads_write_to_one_storage() {
    let c = StorageClient::new(1, clock(), 100_000);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let mut h = c.handle();
            std::thread::spawn(move || {
                (0..50)
                    .map(|_| h.create(generated_pod("web-")).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let created: Vec<Object> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let mut names: Vec<&str> = created.iter().map(|o| o.name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 200, "every generated name is distinct");
    for obj in &created {
        assert_eq!(obj.resource_version(), revision_of(&c, obj).to_string());
    }
    let mut c = c;
    c.sync();
    assert_eq!(c.cache().list(Kind::Pod).count(), 200);
}

#[test]
fn a_clients_cache_follows_the_writes_of_other_clients_and_lists_again_when_behind() {
    // A window of 4 revisions: 10 writes leave the second client's cursor behind.
    let mut a = StorageClient::new(1, clock(), 4);
    let mut b = a.handle();
    let created: Vec<Object> = (0..10)
        .map(|_| a.create(generated_pod("web-")).unwrap())
        .collect();
    assert_eq!(
        a.cache().list(Kind::Pod).count(),
        10,
        "its own writes at once"
    );
    assert_eq!(b.cache().list(Kind::Pod).count(), 0, "until it syncs");
    b.delete(&created[0].key(), DeleteOptions::default())
        .unwrap();
    assert_eq!(b.cache().list(Kind::Pod).count(), 9);
    a.sync();
    assert!(a.cache().get_key(&created[0].key()).is_none());
    let listed: Vec<&str> = b.cache().list(Kind::Pod).map(|o| o.name()).collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted, "namespace and name order");
}

#[test]
fn the_same_calls_give_the_same_objects_over_the_store_and_over_storage() {
    fn calls(c: &mut dyn Client) -> Vec<Object> {
        let a = c.create(generated_pod("web-")).unwrap();
        let b = c.create(generated_pod("web-")).unwrap();
        let bound = c.bind("default", a.name(), a.uid(), "n1").unwrap();
        let patched = c
            .patch_pod_status("default", b.name(), b.uid(), &mut |s| {
                s.phase = Some("Running".into())
            })
            .unwrap();
        let terminating = c
            .delete(&bound.key(), DeleteOptions::default())
            .unwrap()
            .unwrap();
        let ns = c
            .get(&ObjectKey::new(Kind::Namespace, "", "default"))
            .unwrap();
        vec![a, b, bound, patched, terminating, ns]
    }
    let mut over_store = TestClient::new(3);
    let mut over_storage = StorageClient::new(3, over_store.clock(), 100);
    // TestClient skips admission, which changes only a pod's spec: compare the metadata.
    let from_store = calls(&mut over_store);
    let from_storage = calls(&mut over_storage);
    for (s, t) in from_store.iter().zip(&from_storage) {
        assert_eq!(s.key(), t.key());
        assert_eq!(s.uid(), t.uid());
        assert_eq!(s.resource_version(), t.resource_version());
        assert_eq!(s.meta(), t.meta());
    }
}

#[test]
fn the_binding_over_storage_follows_the_clients_binding_features() {
    use k8s_openapi::api::core::v1::{Node, PodStatus};
    use kubeplane_registry::strategy::pod::BindFeatures;
    let node = Object::Node(Arc::new(
        Node {
            metadata: ObjectMeta {
                name: Some("n1".into()),
                labels: Some(
                    [("topology.kubernetes.io/zone".to_string(), "z1".to_string())].into(),
                ),
                ..Default::default()
            },
            ..Default::default()
        }
        .into(),
    ));
    let cases = [
        (
            "the v1.34 binding (the default) keeps the nomination and adds no label",
            BindFeatures::default(),
            Some("n1"),
            None,
        ),
        (
            "the v1.35 binding clears the nomination and copies the zone",
            BindFeatures {
                clear_nominated_node_name: true,
                topology_labels: true,
            },
            None,
            Some("z1"),
        ),
    ];
    for (name, features, nominated, zone) in cases {
        let mut c = StorageClient::new(1, clock(), 100);
        c.binding = features;
        c.create(node.clone()).unwrap();
        let pod = c.create(generated_pod("web-")).unwrap();
        let mut nominate = |s: &mut PodStatus| s.nominated_node_name = Some("n1".into());
        c.patch_pod_status("default", pod.name(), "", &mut nominate)
            .unwrap();
        let Object::Pod(bound) = c.bind("default", pod.name(), "", "n1").unwrap() else {
            panic!("{name}: not a pod")
        };
        let status = bound.status().unwrap();
        assert_eq!(status.nominated_node_name(), nominated, "{name}");
        let labels = bound.labels();
        let got = labels.and_then(|l| l.get("topology.kubernetes.io/zone"));
        assert_eq!(got.map(String::as_str), zone, "{name}");
    }
}

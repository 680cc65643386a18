//! The managedFields a client with a field manager records: creates, updates, status patches,
//! bindings and scale writes over the storage, as upstream's API server records them for
//! kube-controller-manager, kube-scheduler, kubelet and `kubectl scale`.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, Pod, PodCondition, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubeplane_api::StoredDeployment;
use kubeplane_api::{Client, Clock, Kind, Object, ObjectKey};
use kubeplane_core::SimTime;
use serde_json::{json, Value};

use crate::StorageClient;

fn client() -> StorageClient {
    let mut c = StorageClient::new(1, Clock::new("2026-01-01T00:00:00Z".parse().unwrap()), 1000);
    c.now = SimTime::from_secs(30);
    c
}

fn pod(name: &str) -> Object {
    Object::Pod(Arc::new(
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
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

fn deployment(replicas: i32) -> Object {
    let labels = Some([("app".to_string(), "web".to_string())].into());
    Object::Deployment(Arc::new(StoredDeployment::from_k8s(Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: labels.clone(),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels,
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "c".into(),
                        image: Some("nginx".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    })))
}

/// The object's managedFields as JSON, one entry per manager (time left out).
fn entries(o: &Object) -> Vec<Value> {
    let v = o.to_json();
    v.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("time");
            e
        })
        .collect()
}

fn entry_of<'a>(all: &'a [Value], manager: &str) -> &'a Value {
    all.iter()
        .find(|e| e["manager"] == manager)
        .unwrap_or_else(|| panic!("no entry of {manager} in {all:?}"))
}

fn stored(c: &mut StorageClient, kind: Kind, name: &str) -> Object {
    c.get(&ObjectKey::new(kind, "default", name)).unwrap()
}

#[test]
fn a_create_records_an_update_entry_of_the_manager_with_the_time_of_the_write() {
    let mut c = client();
    c.set_field_manager(Some("kube-controller-manager"));
    let created = c.create(pod("p")).unwrap();
    let all = entries(&created);
    assert_eq!(all.len(), 1);
    let e = &all[0];
    assert_eq!(e["manager"], "kube-controller-manager");
    assert_eq!(e["operation"], "Update");
    assert_eq!(e["apiVersion"], "v1");
    assert!(e.get("subresource").is_none());
    assert_eq!(e["fieldsV1"]["f:metadata"]["f:labels"]["f:app"], json!({}));
    assert_eq!(
        e["fieldsV1"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["f:image"],
        json!({})
    );
    let time = created.to_json()["metadata"]["managedFields"][0]["time"].clone();
    assert_eq!(time, "2026-01-01T00:00:30Z");
}

#[test]
fn a_binding_records_nothing_and_a_status_patch_records_the_managers_status_entry() {
    let mut c = client();
    c.set_field_manager(Some("kube-controller-manager"));
    c.create(pod("p")).unwrap();
    c.set_field_manager(Some("kube-scheduler"));
    let uid = stored(&mut c, Kind::Pod, "p").uid().to_string();
    c.bind("default", "p", &uid, "n1").unwrap();
    let bound = stored(&mut c, Kind::Pod, "p");
    assert_eq!(entries(&bound).len(), 1, "{:?}", entries(&bound));
    c.set_field_manager(Some("kubelet"));
    c.patch_pod_status("default", "p", &uid, &mut |s| {
        s.phase = Some("Running".into());
        s.host_ip = Some("10.0.0.1".into());
        let ready = PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        };
        s.conditions.get_or_insert_with(Vec::new).push(ready);
    })
    .unwrap();
    let running = stored(&mut c, Kind::Pod, "p");
    let all = entries(&running);
    assert_eq!(all.len(), 2, "{all:?}");
    let kubelet = entry_of(&all, "kubelet");
    assert_eq!(kubelet["subresource"], "status");
    assert_eq!(kubelet["operation"], "Update");
    let status = &kubelet["fieldsV1"]["f:status"];
    assert_eq!(status["f:phase"], json!({}));
    assert_eq!(status["f:hostIP"], json!({}));
    assert_eq!(
        status["f:conditions"]["k:{\"type\":\"Ready\"}"]["f:status"],
        json!({})
    );
    // The binding's PodScheduled condition is nobody's: the kubelet did not change it.
    assert!(status["f:conditions"]
        .get("k:{\"type\":\"PodScheduled\"}")
        .is_none());
    assert!(kubelet["fieldsV1"].get("f:spec").is_none());
    let creator = entry_of(&all, "kube-controller-manager");
    assert!(creator["fieldsV1"]["f:spec"].get("f:nodeName").is_none());
}

#[test]
fn an_update_records_what_it_changed_and_takes_it_from_the_creator() {
    let mut c = client();
    c.set_field_manager(Some("kubectl-create"));
    let created = c.create(deployment(1)).unwrap();
    c.set_field_manager(Some("kube-controller-manager"));
    let Object::Deployment(d) = &created else {
        unreachable!()
    };
    let mut d = StoredDeployment::clone(d);
    d.metadata.annotations = Some(
        [(
            "deployment.kubernetes.io/revision".to_string(),
            "1".to_string(),
        )]
        .into(),
    );
    let updated = c.update(Object::Deployment(Arc::new(d))).unwrap();
    let all = entries(&updated);
    let kcm = entry_of(&all, "kube-controller-manager");
    assert_eq!(
        kcm["fieldsV1"],
        json!({"f:metadata": {"f:annotations": {".": {}, "f:deployment.kubernetes.io/revision": {}}}})
    );
    assert!(kcm.get("subresource").is_none());
}

#[test]
fn a_scale_write_moves_the_replicas_to_an_entry_with_subresource_scale() {
    let mut c = client();
    c.set_field_manager(Some("kubectl-client-side-apply"));
    c.create(deployment(1)).unwrap();
    c.set_field_manager(Some("kubectl"));
    let key = ObjectKey::new(Kind::Deployment, "default", "web");
    c.update_scale(&key, 3, None).unwrap();
    let scaled = stored(&mut c, Kind::Deployment, "web");
    let all = entries(&scaled);
    assert_eq!(
        entry_of(&all, "kubectl"),
        &json!({"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"})
    );
    let creator = entry_of(&all, "kubectl-client-side-apply");
    assert!(creator["fieldsV1"]["f:spec"].get("f:replicas").is_none());
    assert!(creator["fieldsV1"]["f:spec"].get("f:selector").is_some());
}

#[test]
fn writes_to_an_object_nobody_tracks_record_nothing() {
    let mut c = client();
    let created = c.create(pod("p")).unwrap();
    assert!(entries(&created).is_empty());
    c.set_field_manager(Some("kubelet"));
    let uid = created.uid().to_string();
    c.patch_pod_status("default", "p", &uid, &mut |s| {
        s.phase = Some("Running".into())
    })
    .unwrap();
    let current = stored(&mut c, Kind::Pod, "p");
    let updated = c.update(current).unwrap();
    assert!(entries(&updated).is_empty());
}

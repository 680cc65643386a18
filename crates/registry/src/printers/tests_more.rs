//! Tests of the printers for PersistentVolume, ReplicationController, PodTemplate,
//! IngressClass, NetworkPolicy, EndpointSlice, the webhook configurations and RuntimeClass.

use kubeplane_api::Kind;
use serde_json::{json, Value};

use super::tests::{ago, cells};
use super::*;

fn headers(api_version: &str, kind: &str) -> Vec<(&'static str, i32)> {
    column_definitions(Kind::from_manifest(api_version, kind).unwrap())
        .iter()
        .map(|c| (c.name, c.priority))
        .collect()
}

fn meta(name: &str) -> Value {
    json!({ "name": name, "namespace": "default", "creationTimestamp": ago(600) })
}

#[test]
fn persistent_volume_columns_and_cells_are_upstreams() {
    assert_eq!(
        headers("v1", "PersistentVolume"),
        [
            ("Name", 0),
            ("Capacity", 0),
            ("Access Modes", 0),
            ("Reclaim Policy", 0),
            ("Status", 0),
            ("Claim", 0),
            ("StorageClass", 0),
            ("VolumeAttributesClass", 0),
            ("Reason", 0),
            ("Age", 0),
            ("VolumeMode", 1)
        ]
    );
    let pv = json!({ "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": { "name": "pv1", "creationTimestamp": ago(600) },
        "spec": { "capacity": { "storage": "10Gi" }, "accessModes": ["ReadOnlyMany", "ReadWriteOncePod"],
                  "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "slow",
                  "claimRef": { "namespace": "default", "name": "data" } },
        "status": { "phase": "Bound" } });
    assert_eq!(
        cells(pv),
        [
            json!("pv1"),
            json!("10Gi"),
            json!("ROX,RWOP"),
            json!("Retain"),
            json!("Bound"),
            json!("default/data"),
            json!("slow"),
            json!("<unset>"),
            json!(""),
            json!("10m"),
            json!("<unset>")
        ]
    );
}

#[test]
fn replication_controller_and_pod_template_columns_and_cells_are_upstreams() {
    assert_eq!(
        headers("v1", "ReplicationController"),
        [
            ("Name", 0),
            ("Desired", 0),
            ("Current", 0),
            ("Ready", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1)
        ]
    );
    let rc = json!({ "apiVersion": "v1", "kind": "ReplicationController", "metadata": meta("rc"),
        "spec": { "replicas": 2, "selector": { "app": "web" },
                  "template": { "spec": { "containers": [{ "name": "web", "image": "nginx" }] } } },
        "status": { "replicas": 2, "readyReplicas": 1 } });
    assert_eq!(
        cells(rc),
        [
            json!("rc"),
            json!(2),
            json!(2),
            json!(1),
            json!("10m"),
            json!("web"),
            json!("nginx"),
            json!("app=web")
        ]
    );
    assert_eq!(
        headers("v1", "PodTemplate"),
        [
            ("Name", 0),
            ("Containers", 0),
            ("Images", 0),
            ("Pod Labels", 0)
        ]
    );
    let pt = json!({ "apiVersion": "v1", "kind": "PodTemplate", "metadata": meta("pt"),
        "template": { "metadata": { "labels": { "a": "b" } },
                      "spec": { "containers": [{ "name": "x", "image": "busybox" }] } } });
    assert_eq!(
        cells(pt),
        [json!("pt"), json!("x"), json!("busybox"), json!("a=b")]
    );
}

#[test]
fn ingress_class_and_network_policy_columns_and_cells_are_upstreams() {
    assert_eq!(
        headers("networking.k8s.io/v1", "IngressClass"),
        [
            ("Name", 0),
            ("Controller", 0),
            ("Parameters", 0),
            ("Age", 0)
        ]
    );
    let with_group = json!({ "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": { "name": "test1", "creationTimestamp": ago(10 * 365 * 86_400) },
        "spec": { "controller": "example.com/controller",
                  "parameters": { "apiGroup": "example.com", "kind": "customgroup", "name": "example" } } });
    assert_eq!(
        cells(with_group),
        [
            json!("test1"),
            json!("example.com/controller"),
            json!("customgroup.example.com/example"),
            json!("10y")
        ]
    );
    let without = json!({ "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": { "name": "test2" }, "spec": { "controller": "example.com/controller2" } });
    assert_eq!(cells(without)[2], "<none>");
    assert_eq!(
        headers("networking.k8s.io/v1", "NetworkPolicy"),
        [("Name", 0), ("Pod-Selector", 0), ("Age", 0)]
    );
    let np = json!({ "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("np"),
        "spec": { "podSelector": { "matchLabels": { "role": "db" } } } });
    assert_eq!(cells(np), [json!("np"), json!("role=db"), json!("10m")]);
    let all = json!({ "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("all"),
        "spec": { "podSelector": {} } });
    assert_eq!(cells(all)[1], "<none>");
}

#[test]
fn endpoint_slice_columns_and_cells_are_upstreams() {
    assert_eq!(
        headers("discovery.k8s.io/v1", "EndpointSlice"),
        [
            ("Name", 0),
            ("AddressType", 0),
            ("Ports", 0),
            ("Endpoints", 0),
            ("Age", 0)
        ]
    );
    let es = json!({ "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": meta("es"),
        "addressType": "IPv4",
        "ports": [{ "port": 80 }, { "name": "https" }, {}, { "port": 8080 }],
        "endpoints": [{ "addresses": ["10.0.0.1", "10.0.0.2"] }, { "addresses": ["10.0.0.3"] }] });
    assert_eq!(
        cells(es),
        [
            json!("es"),
            json!("IPv4"),
            json!("80,https,* + 1 more..."),
            json!("10.0.0.1,10.0.0.2,10.0.0.3"),
            json!("10m")
        ]
    );
    let empty = json!({ "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": meta("e"),
        "addressType": "IPv6", "endpoints": [] });
    assert_eq!(cells(empty)[2..4], [json!("<unset>"), json!("<unset>")]);
}

#[test]
fn webhook_configuration_and_runtime_class_columns_and_cells_are_upstreams() {
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        assert_eq!(
            headers("admissionregistration.k8s.io/v1", kind),
            [("Name", 0), ("Webhooks", 0), ("Age", 0)],
            "{kind}"
        );
        let wh = json!({ "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": { "name": "w", "creationTimestamp": ago(600) },
            "webhooks": [{ "name": "a.example.com" }, { "name": "b.example.com" }] });
        assert_eq!(cells(wh), [json!("w"), json!(2), json!("10m")], "{kind}");
    }
    assert_eq!(
        headers("node.k8s.io/v1", "RuntimeClass"),
        [("Name", 0), ("Handler", 0), ("Age", 0)]
    );
    let rc = json!({ "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
        "metadata": { "name": "gvisor", "creationTimestamp": ago(600) }, "handler": "runsc" });
    assert_eq!(cells(rc), [json!("gvisor"), json!("runsc"), json!("10m")]);
}

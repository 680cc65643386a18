//! Tests of the printers: the Table document, the column definitions of every kind against
//! upstream's `printers.go`, and the rows, with facts from upstream's `printers_test.go`.

use std::sync::Arc;

use kubeplane_api::object::DynamicObject;
use kubeplane_api::{Kind, Object};
use serde_json::{json, Value};

use super::*;

pub(super) const NOW: &str = "2025-06-01T12:00:00Z";

pub(super) fn now() -> jiff::Timestamp {
    NOW.parse().unwrap()
}

/// `now` minus `secs` seconds, as an RFC 3339 string for a manifest.
pub(super) fn ago(secs: i64) -> String {
    (now() - jiff::SignedDuration::from_secs(secs)).to_string()
}

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

/// An object from a manifest, typed for the kinds kubeplane models.
pub(super) fn obj(v: Value) -> Object {
    let api = v["apiVersion"].as_str().unwrap();
    let kind = Kind::from_manifest(api, v["kind"].as_str().unwrap()).unwrap();
    match kind {
        Kind::Pod => Object::Pod(Arc::new(from(v))),
        Kind::Node => Object::Node(Arc::new(from(v))),
        Kind::Namespace => Object::Namespace(Arc::new(from(v))),
        Kind::Deployment => Object::Deployment(Arc::new(from(v))),
        Kind::ReplicaSet => Object::ReplicaSet(Arc::new(from(v))),
        Kind::PodDisruptionBudget => Object::PodDisruptionBudget(Arc::new(from(v))),
        Kind::PriorityClass => Object::PriorityClass(Arc::new(from(v))),
        Kind::Lease => Object::Lease(Arc::new(from(v))),
        Kind::Other(t) => Object::Other(Arc::new(DynamicObject::from_value(t, &v).unwrap())),
    }
}

/// The cells of one object's row.
pub(super) fn cells(v: Value) -> Vec<Value> {
    row(&obj(v), now()).cells
}

fn kind(api_version: &str, kind: &str) -> Kind {
    Kind::from_manifest(api_version, kind).unwrap()
}

/// The (name, priority) pairs of a kind's columns.
fn headers(k: Kind) -> Vec<(&'static str, i32)> {
    column_definitions(k)
        .iter()
        .map(|c| (c.name, c.priority))
        .collect()
}

#[test]
fn pod_columns_are_upstreams() {
    assert_eq!(
        headers(Kind::Pod),
        [
            ("Name", 0),
            ("Ready", 0),
            ("Status", 0),
            ("Restarts", 0),
            ("Age", 0),
            ("IP", 1),
            ("Node", 1),
            ("Nominated Node", 1),
            ("Readiness Gates", 1)
        ]
    );
    let types: Vec<&str> = column_definitions(Kind::Pod)
        .iter()
        .map(|c| c.type_)
        .collect();
    assert_eq!(types, ["string"; 9]);
}

#[test]
fn node_columns_are_upstreams() {
    assert_eq!(
        headers(Kind::Node),
        [
            ("Name", 0),
            ("Status", 0),
            ("Roles", 0),
            ("Age", 0),
            ("Version", 0),
            ("Internal-IP", 1),
            ("External-IP", 1),
            ("OS-Image", 1),
            ("Kernel-Version", 1),
            ("Container-Runtime", 1)
        ]
    );
}

#[test]
fn namespace_columns_are_upstreams() {
    assert_eq!(
        headers(Kind::Namespace),
        [("Name", 0), ("Status", 0), ("Age", 0)]
    );
}

#[test]
fn deployment_columns_are_upstreams() {
    assert_eq!(
        headers(Kind::Deployment),
        [
            ("Name", 0),
            ("Ready", 0),
            ("Up-to-date", 0),
            ("Available", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1)
        ]
    );
}

#[test]
fn replica_set_columns_are_upstreams() {
    assert_eq!(
        headers(Kind::ReplicaSet),
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
    let types: Vec<&str> = column_definitions(Kind::ReplicaSet)[1..4]
        .iter()
        .map(|c| c.type_)
        .collect();
    assert_eq!(types, ["integer"; 3]);
}

#[test]
fn daemon_set_columns_are_upstreams() {
    assert_eq!(
        headers(kind("apps/v1", "DaemonSet")),
        [
            ("Name", 0),
            ("Desired", 0),
            ("Current", 0),
            ("Ready", 0),
            ("Up-to-date", 0),
            ("Available", 0),
            ("Node Selector", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1)
        ]
    );
}

#[test]
fn stateful_set_columns_are_upstreams() {
    assert_eq!(
        headers(kind("apps/v1", "StatefulSet")),
        [
            ("Name", 0),
            ("Ready", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1)
        ]
    );
}

#[test]
fn controller_revision_columns_are_upstreams() {
    assert_eq!(
        headers(kind("apps/v1", "ControllerRevision")),
        [("Name", 0), ("Controller", 0), ("Revision", 0), ("Age", 0)]
    );
}

#[test]
fn job_columns_are_upstreams() {
    assert_eq!(
        headers(kind("batch/v1", "Job")),
        [
            ("Name", 0),
            ("Status", 0),
            ("Completions", 0),
            ("Duration", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1)
        ]
    );
}

#[test]
fn cron_job_columns_are_upstreams() {
    assert_eq!(
        headers(kind("batch/v1", "CronJob")),
        [
            ("Name", 0),
            ("Schedule", 0),
            ("Timezone", 0),
            ("Suspend", 0),
            ("Active", 0),
            ("Last Schedule", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1)
        ]
    );
    assert_eq!(
        column_definitions(kind("batch/v1", "CronJob"))[3].type_,
        "boolean"
    );
}

#[test]
fn service_columns_are_upstreams() {
    assert_eq!(
        headers(kind("v1", "Service")),
        [
            ("Name", 0),
            ("Type", 0),
            ("Cluster-IP", 0),
            ("External-IP", 0),
            ("Port(s)", 0),
            ("Age", 0),
            ("Selector", 1)
        ]
    );
}

#[test]
fn config_map_columns_are_upstreams() {
    assert_eq!(
        headers(kind("v1", "ConfigMap")),
        [("Name", 0), ("Data", 0), ("Age", 0)]
    );
}

#[test]
fn secret_columns_are_upstreams() {
    assert_eq!(
        headers(kind("v1", "Secret")),
        [("Name", 0), ("Type", 0), ("Data", 0), ("Age", 0)]
    );
}

#[test]
fn service_account_columns_are_upstreams() {
    assert_eq!(
        headers(kind("v1", "ServiceAccount")),
        [("Name", 0), ("Secrets", 0), ("Age", 0)]
    );
}

#[test]
fn event_columns_are_upstreams_for_both_event_apis() {
    let want = [
        ("Last Seen", 0),
        ("Type", 0),
        ("Reason", 0),
        ("Object", 0),
        ("Subobject", 1),
        ("Source", 1),
        ("Message", 0),
        ("First Seen", 1),
        ("Count", 1),
        ("Name", 1),
    ];
    assert_eq!(headers(kind("v1", "Event")), want);
    assert_eq!(headers(kind("events.k8s.io/v1", "Event")), want);
    let name = column_definitions(kind("v1", "Event"))[9];
    assert_eq!((name.format, name.priority), ("name", 1));
}

#[test]
fn endpoints_columns_are_upstreams() {
    assert_eq!(
        headers(kind("v1", "Endpoints")),
        [("Name", 0), ("Endpoints", 0), ("Age", 0)]
    );
}

#[test]
fn persistent_volume_claim_columns_are_upstreams() {
    assert_eq!(
        headers(kind("v1", "PersistentVolumeClaim")),
        [
            ("Name", 0),
            ("Status", 0),
            ("Volume", 0),
            ("Capacity", 0),
            ("Access Modes", 0),
            ("StorageClass", 0),
            ("VolumeAttributesClass", 0),
            ("Age", 0),
            ("VolumeMode", 1)
        ]
    );
}

#[test]
fn lease_columns_are_upstreams() {
    assert_eq!(
        headers(Kind::Lease),
        [("Name", 0), ("Holder", 0), ("Age", 0)]
    );
}

#[test]
fn priority_class_columns_are_upstreams() {
    // PreemptionPolicy has priority 0 upstream although only the wide printer fills it.
    assert_eq!(
        headers(Kind::PriorityClass),
        [
            ("Name", 0),
            ("Value", 0),
            ("Global-Default", 0),
            ("Age", 0),
            ("PreemptionPolicy", 0)
        ]
    );
}

#[test]
fn pod_disruption_budget_columns_are_upstreams() {
    assert_eq!(
        headers(Kind::PodDisruptionBudget),
        [
            ("Name", 0),
            ("Min Available", 0),
            ("Max Unavailable", 0),
            ("Allowed Disruptions", 0),
            ("Age", 0)
        ]
    );
}

#[test]
fn ingress_columns_are_upstreams() {
    assert_eq!(
        headers(kind("networking.k8s.io/v1", "Ingress")),
        [
            ("Name", 0),
            ("Class", 0),
            ("Hosts", 0),
            ("Address", 0),
            ("Ports", 0),
            ("Age", 0)
        ]
    );
}

#[test]
fn role_binding_columns_are_upstreams() {
    let want = [
        ("Name", 0),
        ("Role", 0),
        ("Age", 0),
        ("Users", 1),
        ("Groups", 1),
        ("ServiceAccounts", 1),
    ];
    assert_eq!(
        headers(kind("rbac.authorization.k8s.io/v1", "RoleBinding")),
        want
    );
    assert_eq!(
        headers(kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding")),
        want
    );
    let users = column_definitions(kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"))[3];
    assert_eq!(users.description, "Users in the clusterRoleBinding");
}

#[test]
fn roles_and_cluster_roles_use_the_default_columns() {
    for k in ["Role", "ClusterRole"] {
        let defs = column_definitions(kind("rbac.authorization.k8s.io/v1", k));
        let got: Vec<(&str, &str, &str)> =
            defs.iter().map(|c| (c.name, c.type_, c.format)).collect();
        assert_eq!(
            got,
            [("Name", "string", "name"), ("Created At", "date", "")],
            "{k}"
        );
    }
}

#[test]
fn horizontal_pod_autoscaler_columns_are_upstreams() {
    assert_eq!(
        headers(kind("autoscaling/v2", "HorizontalPodAutoscaler")),
        [
            ("Name", 0),
            ("Reference", 0),
            ("Targets", 0),
            ("MinPods", 0),
            ("MaxPods", 0),
            ("Replicas", 0),
            ("Age", 0)
        ]
    );
}

#[test]
fn every_printer_fills_one_cell_per_column() {
    let manifests = super::tests_kinds::one_of_each_kind();
    for m in manifests {
        let o = obj(m);
        let n_cells = row(&o, now()).cells.len();
        assert_eq!(n_cells, column_definitions(o.kind()).len(), "{}", o.kind());
    }
}

fn pod_manifest() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "web", "namespace": "default", "resourceVersion": "42",
                      "creationTimestamp": ago(300), "labels": { "app": "web" } },
        "spec": { "containers": [{ "name": "c", "image": "nginx" }] },
        "status": { "phase": "Running" }
    })
}

#[test]
fn a_table_has_upstreams_shape_and_partial_metadata_rows_by_default() {
    let pod = obj(pod_manifest());
    let t = table(Kind::Pod, &[&pod], now(), &TableOptions::default());
    let keys: Vec<&String> = t.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "kind",
            "apiVersion",
            "metadata",
            "columnDefinitions",
            "rows"
        ]
    );
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(t["metadata"], json!({}));
    assert_eq!(
        t["columnDefinitions"][0],
        json!({ "name": "Name", "type": "string", "format": "name",
                "description": descriptions::META_NAME, "priority": 0 })
    );
    assert_eq!(t["columnDefinitions"][5]["priority"], 1);
    let row = &t["rows"][0];
    assert_eq!(
        row["cells"],
        json!(["web", "0/1", "Running", "0", "5m", "<none>", "<none>", "<none>", "<none>"])
    );
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(row["object"]["metadata"]["labels"], json!({ "app": "web" }));
    assert!(row.get("conditions").is_none());
}

#[test]
fn include_object_chooses_what_a_row_carries() {
    let pod = obj(pod_manifest());
    let cases = [
        (
            "None leaves the object null",
            IncludeObject::None,
            Value::Null,
        ),
        (
            "Object carries the whole object",
            IncludeObject::Object,
            pod.to_json(),
        ),
    ];
    for (case, include_object, want) in cases {
        let options = TableOptions {
            include_object,
            ..TableOptions::default()
        };
        let t = table(Kind::Pod, &[&pod], now(), &options);
        assert_eq!(t["rows"][0]["object"], want, "{case}");
    }
    assert_eq!(IncludeObject::parse(""), Some(IncludeObject::Metadata));
    assert_eq!(IncludeObject::parse("Object"), Some(IncludeObject::Object));
    assert_eq!(IncludeObject::parse("object"), None);
}

#[test]
fn no_headers_drops_the_column_definitions_and_v1beta1_is_carried_through() {
    let pod = obj(pod_manifest());
    let options = TableOptions {
        no_headers: true,
        api_version: "meta.k8s.io/v1beta1",
        ..TableOptions::default()
    };
    let t = table(Kind::Pod, &[&pod], now(), &options);
    assert!(t.get("columnDefinitions").is_none());
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");
}

#[test]
fn an_empty_list_has_no_rows_but_its_columns() {
    let t = table(Kind::Node, &[], now(), &TableOptions::default());
    assert_eq!(t["rows"], json!([]));
    assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 10);
}

#[test]
fn a_single_object_table_carries_its_resource_version() {
    let pod = obj(pod_manifest());
    let t = table_for_object(&pod, now(), &TableOptions::default());
    assert_eq!(t["metadata"], json!({ "resourceVersion": "42" }));
    assert_eq!(t["rows"].as_array().unwrap().len(), 1);
}

#[test]
fn the_default_convertor_prints_the_name_and_the_creation_time() {
    let role = obj(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": { "name": "reader", "namespace": "default",
                      "creationTimestamp": "2025-05-31T08:30:15.5Z" },
        "rules": []
    }));
    assert_eq!(
        row(&role, now()).cells,
        [json!("reader"), json!("2025-05-31T08:30:15Z")]
    );
    let bare = obj(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": { "name": "x" }
    }));
    assert_eq!(row(&bare, now()).cells[1], "0001-01-01T00:00:00Z");
}

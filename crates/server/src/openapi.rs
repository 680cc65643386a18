//! `/openapi/v3`: the index of group versions and, per group version, a document with
//! upstream's object schemas (generated from k8s-openapi's `schemars` support, under upstream's
//! definition names such as `io.k8s.api.core.v1.Pod`, each kind's schema carrying
//! `x-kubernetes-group-version-kind` as `kubectl explain` looks for it) and the operations whose
//! `fieldValidation` query parameter tells kubectl that the server validates fields itself (it
//! then sends `fieldValidation=Strict` instead of validating against the schema).
//!
//! k8s-openapi's schemas lack upstream's `x-kubernetes-patch-*`, list-type and map-type
//! extensions; they are added from the registry's merge metadata (generated from upstream's
//! schema), because kubectl computes `kubectl apply`'s strategic merge patches from them.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use bytes::Bytes;
use k8s_openapi::Resource;
use kubeplane_api::Kind;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

use crate::request::{all_kinds, version_of};

use k8s_openapi::api::{
    admissionregistration::v1 as admission, apps::v1 as apps, autoscaling::v2 as autoscaling,
    batch::v1 as batch, certificates::v1 as certificates, coordination::v1 as coordination,
    core::v1 as core, discovery::v1 as discovery, events::v1 as events,
    flowcontrol::v1 as flowcontrol, networking::v1 as networking, node::v1 as node,
    policy::v1 as policy, rbac::v1 as rbac, resource::v1 as resource, scheduling::v1 as scheduling,
    storage::v1 as storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;

fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// Adds a kind's schema (and every schema it refers to) to a generator.
type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

fn root<T: Resource + JsonSchema>() -> (&'static str, &'static str, SchemaFn) {
    (T::API_VERSION, T::KIND, |g| g.subschema_for::<T>())
}

/// The Rust type behind every kind the server serves, by `apiVersion` and kind.
fn roots() -> Vec<(&'static str, &'static str, SchemaFn)> {
    vec![
        root::<core::Namespace>(),
        root::<core::Node>(),
        root::<core::Pod>(),
        root::<scheduling::PriorityClass>(),
        root::<apps::Deployment>(),
        root::<apps::ReplicaSet>(),
        root::<policy::PodDisruptionBudget>(),
        root::<coordination::Lease>(),
        root::<core::ConfigMap>(),
        root::<core::Endpoints>(),
        root::<core::Event>(),
        root::<core::LimitRange>(),
        root::<core::PersistentVolume>(),
        root::<core::PersistentVolumeClaim>(),
        root::<core::PodTemplate>(),
        root::<core::ReplicationController>(),
        root::<core::ResourceQuota>(),
        root::<core::Secret>(),
        root::<core::Service>(),
        root::<core::ServiceAccount>(),
        root::<apiregistration::APIService>(),
        root::<apps::ControllerRevision>(),
        root::<apps::DaemonSet>(),
        root::<apps::StatefulSet>(),
        root::<events::Event>(),
        root::<autoscaling::HorizontalPodAutoscaler>(),
        root::<batch::CronJob>(),
        root::<batch::Job>(),
        root::<certificates::CertificateSigningRequest>(),
        root::<networking::IngressClass>(),
        root::<networking::Ingress>(),
        root::<networking::IPAddress>(),
        root::<networking::NetworkPolicy>(),
        root::<networking::ServiceCIDR>(),
        root::<rbac::ClusterRoleBinding>(),
        root::<rbac::ClusterRole>(),
        root::<rbac::RoleBinding>(),
        root::<rbac::Role>(),
        root::<storage::CSIDriver>(),
        root::<storage::CSINode>(),
        root::<storage::CSIStorageCapacity>(),
        root::<storage::StorageClass>(),
        root::<storage::VolumeAttachment>(),
        root::<storage::VolumeAttributesClass>(),
        root::<admission::MutatingWebhookConfiguration>(),
        root::<admission::ValidatingAdmissionPolicy>(),
        root::<admission::ValidatingAdmissionPolicyBinding>(),
        root::<admission::ValidatingWebhookConfiguration>(),
        root::<apiextensions::CustomResourceDefinition>(),
        root::<discovery::EndpointSlice>(),
        root::<flowcontrol::FlowSchema>(),
        root::<flowcontrol::PriorityLevelConfiguration>(),
        root::<node::RuntimeClass>(),
        root::<resource::DeviceClass>(),
        root::<resource::ResourceClaim>(),
        root::<resource::ResourceClaimTemplate>(),
        root::<resource::ResourceSlice>(),
    ]
}

/// One group version's document: its content hash, the document, and the bytes served.
struct Document {
    hash: String,
    value: Value,
    text: Bytes,
}

/// The documents, by group-version path, built once.
fn documents() -> &'static BTreeMap<String, Document> {
    static DOCS: OnceLock<BTreeMap<String, Document>> = OnceLock::new();
    DOCS.get_or_init(|| {
        let roots = roots();
        let mut by_path: BTreeMap<String, Vec<Kind>> = BTreeMap::new();
        for k in all_kinds() {
            by_path
                .entry(group_version_path(k.group(), version_of(k)))
                .or_default()
                .push(k);
        }
        by_path
            .into_iter()
            .map(|(path, kinds)| {
                let value = document(&path, &kinds, &roots);
                let text = Bytes::from(value.to_string());
                let hash = fnv_hex(&text);
                (path, Document { hash, value, text })
            })
            .collect()
    })
}

/// A stable content hash (FNV-1a, 64 bits), so a client's cache of a document is refreshed
/// exactly when the document changes, as upstream's `?hash=` does.
pub(crate) fn fnv_hex(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016X}")
}

fn document(path: &str, kinds: &[Kind], roots: &[(&str, &str, SchemaFn)]) -> Value {
    let mut generator = SchemaGenerator::new(SchemaSettings::openapi3());
    let mut paths = Map::new();
    let mut gvk_of = BTreeMap::new();
    for &k in kinds {
        let gvk = json!({"group": k.group(), "version": version_of(k), "kind": k.as_str()});
        if let Some((_, _, schema)) = roots
            .iter()
            .find(|(v, kind, _)| *v == k.api_version() && *kind == k.as_str())
        {
            let reference = schema(&mut generator);
            if let Some(name) = reference
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.rsplit('/').next())
            {
                gvk_of.insert(name.to_string(), gvk.clone());
            }
        }
        let ns = if k.is_namespaced() {
            "namespaces/{namespace}/"
        } else {
            ""
        };
        let op = operation(&gvk);
        paths.insert(
            format!("/{path}/{ns}{}/{{name}}", k.plural()),
            json!({"get": {"x-kubernetes-group-version-kind": gvk}, "put": op, "patch": op}),
        );
        paths.insert(format!("/{path}/{ns}{}", k.plural()), json!({"post": op}));
    }
    let mut schemas = generator.take_definitions(true);
    for (name, schema) in schemas.iter_mut() {
        add_merge_metadata(name, schema);
    }
    for (name, gvk) in gvk_of {
        if let Some(Value::Object(s)) = schemas.get_mut(&name) {
            s.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.34.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

/// Upstream's `x-kubernetes-patch-*`, `x-kubernetes-list-*` and `x-kubernetes-map-type`
/// extensions on a definition's fields (from the registry's merge metadata, generated from
/// upstream's schema): kubectl computes strategic merge patches from them once a server
/// serves schemas, so a list that merges on a key must say so here as it does upstream.
fn add_merge_metadata(name: &str, schema: &mut Value) {
    let Some(ty) = kubeplane_registry::patch::meta::type_def(name) else {
        return;
    };
    if ty.atomic {
        schema["x-kubernetes-map-type"] = json!("atomic");
    }
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for f in ty.fields {
        let Some(Value::Object(p)) = props.get_mut(f.name) else {
            continue;
        };
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(v) = value {
                p.insert(key.to_string(), v);
            }
        };
        put(
            "x-kubernetes-patch-strategy",
            f.patch_strategy.map(Value::from),
        );
        put(
            "x-kubernetes-patch-merge-key",
            f.patch_merge_key.map(Value::from),
        );
        put("x-kubernetes-list-type", f.list_type.map(Value::from));
        let keys = (!f.list_map_keys.is_empty()).then(|| json!(f.list_map_keys));
        put("x-kubernetes-list-map-keys", keys);
        put("x-kubernetes-map-type", f.map_type.map(Value::from));
    }
}

/// A mutating operation: its kind and the query parameters kubectl looks for.
pub(crate) fn operation(gvk: &Value) -> Value {
    let params = json!([
        {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
        {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
        {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
    ]);
    json!({"x-kubernetes-group-version-kind": gvk, "parameters": params})
}

/// The `/openapi/v3` index.
pub fn index() -> Value {
    let paths: Map<String, Value> = documents()
        .iter()
        .map(|(p, d)| {
            let url = format!("/openapi/v3/{p}?hash={}", d.hash);
            (p.clone(), json!({"serverRelativeURL": url}))
        })
        .collect();
    json!({"paths": paths})
}

/// Every group version's document.
pub fn all_documents() -> impl Iterator<Item = &'static Value> {
    documents().values().map(|d| &d.value)
}

/// The document of one group version (`api/v1`, `apis/apps/v1`), or `None`.
pub fn group_version(path: &str) -> Option<&'static Value> {
    documents().get(path).map(|d| &d.value)
}

/// The serialized document of one group version, as served.
pub fn group_version_text(path: &str) -> Option<Bytes> {
    documents().get(path).map(|d| d.text.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_patch_operation_advertises_field_validation_as_kubectl_looks_for_it() {
        let doc = group_version("apis/apps/v1").unwrap();
        let op = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(op["x-kubernetes-group-version-kind"]["kind"], "Deployment");
        assert!(op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query"));
        assert!(index()["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap()
            .starts_with("/openapi/v3/api/v1?hash="));
        assert!(group_version("apis/nope/v1").is_none());
    }

    #[test]
    fn every_served_kind_has_its_schema_under_upstreams_name_with_its_group_version_kind() {
        for k in all_kinds() {
            let doc = group_version(&group_version_path(k.group(), version_of(k))).unwrap();
            let schemas = doc["components"]["schemas"].as_object().unwrap();
            let found = schemas.values().any(|s| {
                s["x-kubernetes-group-version-kind"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|g| g["kind"] == k.as_str()))
            });
            assert!(found, "no schema for {}", k.api_version());
        }
    }

    #[test]
    fn lists_that_merge_on_a_key_say_so_as_upstreams_schema_does() {
        let doc = group_version("api/v1").unwrap();
        let spec = &doc["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"];
        let containers = &spec["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(containers["x-kubernetes-list-type"], "map");
        assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
        let container = &doc["components"]["schemas"]["io.k8s.api.core.v1.Container"];
        assert_eq!(
            container["properties"]["env"]["x-kubernetes-patch-merge-key"],
            "name"
        );
    }

    #[test]
    fn references_point_into_the_same_document_as_kubectl_explain_follows_them() {
        let doc = group_version("api/v1").unwrap();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        let pod = &schemas["io.k8s.api.core.v1.Pod"];
        assert!(pod["description"].as_str().unwrap().contains("containers"));
        let spec = pod["properties"]["spec"]["allOf"][0]["$ref"]
            .as_str()
            .unwrap();
        assert_eq!(spec, "#/components/schemas/io.k8s.api.core.v1.PodSpec");
        let text = doc.to_string();
        for r in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = &r[..r.find('"').unwrap()];
            assert!(schemas.contains_key(name), "dangling reference {name}");
        }
    }
}

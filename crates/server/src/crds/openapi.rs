//! The `/openapi/v3` documents of the custom resources (upstream's CRD OpenAPI controller):
//! one per served group version, the version's `openAPIV3Schema` under upstream's name
//! (`com.example.v1.Widget`: the group reversed) with `apiVersion`, `kind`, `metadata` (a
//! reference to ObjectMeta, whose schema comes along) and its group, version and kind, and the
//! paths with the `fieldValidation` parameter, so `kubectl explain` finds the resource and
//! `kubectl apply` lets the server validate. Built when asked for: definitions change.

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::generate::SchemaSettings;
use schemars::SchemaGenerator;
use serde_json::{json, Map, Value};

use super::{CustomResources, Served};
use crate::openapi::{fnv_hex, operation};

/// Upstream's definition name of a custom resource's schema.
fn schema_name(s: &Served, version: &str) -> String {
    let group: Vec<&str> = s.def.type_.group.rsplit('.').collect();
    format!("{}.{version}.{}", group.join("."), s.def.type_.kind)
}

/// The document of one served version.
fn document(s: &Served, version: &str) -> Value {
    let t = &s.def.type_;
    let gvk = json!({"group": t.group, "version": version, "kind": t.kind});
    let mut generator = SchemaGenerator::new(SchemaSettings::openapi3());
    let meta_ref =
        serde_json::to_value(generator.subschema_for::<ObjectMeta>()).unwrap_or_default();
    let mut schemas: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    let mut schema = s
        .schema(version)
        .cloned()
        .unwrap_or(json!({"type": "object"}));
    if let Some(m) = schema.as_object_mut() {
        let props = m.entry("properties").or_insert_with(|| json!({}));
        props["apiVersion"] = json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."});
        props["kind"] = json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."});
        props["metadata"] = meta_ref;
        m.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
    }
    schemas.insert(schema_name(s, version), schema);
    let base = format!("/apis/{}/{version}", t.group);
    let ns = if t.namespaced {
        "namespaces/{namespace}/"
    } else {
        ""
    };
    let op = operation(&gvk);
    let mut paths = Map::new();
    paths.insert(
        format!("{base}/{ns}{}/{{name}}", t.plural),
        json!({"get": {"x-kubernetes-group-version-kind": gvk}, "put": op, "patch": op}),
    );
    paths.insert(format!("{base}/{ns}{}", t.plural), json!({"post": op}));
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

/// The serialized documents of every served version, by group-version path
/// (`apis/example.com/v1`).
pub fn documents(custom: &CustomResources) -> Vec<(String, Bytes)> {
    let mut out = Vec::new();
    for s in custom.all().iter() {
        for v in &s.def.served {
            let path = format!("apis/{}/{v}", s.def.type_.group);
            out.push((path, Bytes::from(document(s, v).to_string())));
        }
    }
    out
}

/// The `/openapi/v3` index with the custom resources' documents added.
pub fn index(custom: &CustomResources) -> Value {
    let mut index = crate::openapi::index();
    for (path, text) in documents(custom) {
        let url = format!("/openapi/v3/{path}?hash={}", fnv_hex(&text));
        index["paths"][path] = json!({"serverRelativeURL": url});
    }
    index
}

/// One custom resource group version's document.
pub fn document_text(custom: &CustomResources, path: &str) -> Option<Bytes> {
    documents(custom)
        .into_iter()
        .find(|(p, _)| p == path)
        .map(|(_, text)| text)
}

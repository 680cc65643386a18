//! `/openapi/v3`: the index of group versions and, per group version, a document whose PATCH
//! operations carry `x-kubernetes-group-version-kind` and the `fieldValidation` query
//! parameter, which is what kubectl reads to decide that the server validates fields itself
//! (it then sends `fieldValidation=Strict` instead of validating against a downloaded schema).
//! The object schemas are not served yet (`kubectl explain` needs them); kubectl apply then
//! computes its patches from its compiled-in types, as it does for any server without them.

use serde_json::{json, Map, Value};

use crate::request::{all_kinds, version_of};

fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The `/openapi/v3` index.
pub fn index() -> Value {
    let mut paths = Map::new();
    for k in all_kinds() {
        let p = group_version_path(k.group(), version_of(k));
        paths.entry(p.clone()).or_insert_with(
            || json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash=kubeplane")}),
        );
    }
    json!({"paths": paths})
}

/// The document of one group version (`api/v1`, `apis/apps/v1`), or `None`.
pub fn group_version(path: &str) -> Option<Value> {
    let mut paths = Map::new();
    for k in all_kinds() {
        if group_version_path(k.group(), version_of(k)) != path {
            continue;
        }
        let gvk = json!({"group": k.group(), "version": version_of(k), "kind": k.as_str()});
        let params = json!([
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
        ]);
        let op = json!({"x-kubernetes-group-version-kind": gvk, "parameters": params});
        let ns = if k.is_namespaced() {
            "namespaces/{namespace}/"
        } else {
            ""
        };
        paths.insert(
            format!("/{path}/{ns}{}/{{name}}", k.plural()),
            json!({"patch": op.clone(), "put": op.clone(), "get": {"x-kubernetes-group-version-kind": gvk}}),
        );
        paths.insert(format!("/{path}/{ns}{}", k.plural()), json!({"post": op}));
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.34.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
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
            .starts_with("/openapi/v3/api/v1"));
        assert!(group_version("apis/nope/v1").is_none());
    }
}

//! Aggregated discovery (`apidiscovery.k8s.io/v2`, and `v2beta1` for clients that ask only
//! for it): `/api` and `/apis` answer with every group, version and resource in one
//! `APIGroupDiscoveryList` when the client's `Accept` header asks for it, as kubectl since
//! v1.26 and client-go do; other clients get the legacy documents of [`crate::discovery`].
//! Built from the same kinds, subresources, short names and categories, so both forms agree.

use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::{json, Value};

use crate::crds::CustomResources;
use crate::discovery::{group_versions, listed, preferred, Listed, VERBS};

/// The aggregated version an `Accept` header asks for (`v2` before `v2beta1`), or `None`
/// when the client wants the legacy form.
pub fn requested(accept: &str) -> Option<&'static str> {
    let asks = |version: &str| {
        accept.split(',').any(|media| {
            let params: Vec<&str> = media.split(';').map(str::trim).collect();
            params.contains(&"g=apidiscovery.k8s.io")
                && params.contains(&format!("v={version}").as_str())
                && params.contains(&"as=APIGroupDiscoveryList")
        })
    };
    ["v2", "v2beta1"].into_iter().find(|v| asks(v))
}

/// The content type of an aggregated answer.
pub fn content_type(version: &str) -> String {
    format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
}

/// The serialized `APIGroupDiscoveryList` of `/api` (`core` true) or `/apis` at `version`
/// (`v2` or `v2beta1`): built once while no custom resource type is served (the built-in
/// kinds are fixed, so the document is too), afresh otherwise.
pub fn served(core: bool, version: &'static str, custom: &CustomResources) -> Bytes {
    static DOCS: OnceLock<[[Bytes; 2]; 2]> = OnceLock::new();
    if !core && !custom.all().is_empty() {
        return Bytes::from(document(false, version, &listed(custom)).to_string());
    }
    let docs = DOCS.get_or_init(|| {
        let listed = listed(&CustomResources::default());
        [true, false].map(|core| {
            ["v2", "v2beta1"].map(|v| Bytes::from(document(core, v, &listed).to_string()))
        })
    });
    docs[usize::from(!core)][usize::from(version != "v2")].clone()
}

/// The `APIGroupDiscoveryList` of `/api` (`core` true: the core group alone) or `/apis`.
pub(crate) fn document(core: bool, version: &str, listed: &[Listed]) -> Value {
    let items: Vec<Value> = group_versions(listed)
        .into_iter()
        .filter(|(group, _)| group.is_empty() == core)
        .map(|(group, mut versions)| {
            // The preferred version first, then the others newest first, as upstream orders.
            let first = preferred(&versions);
            versions.sort_by_key(|v| (*v != first, std::cmp::Reverse(v.clone())));
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| group_version(listed, &group, v))
                .collect();
            let metadata = if group.is_empty() {
                json!({"creationTimestamp": null})
            } else {
                json!({"name": group, "creationTimestamp": null})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

fn group_version(listed: &[Listed], group: &str, version: &str) -> Value {
    let resources: Vec<Value> = listed
        .iter()
        .filter(|l| l.group == group && l.version == version)
        .map(resource)
        .collect();
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

fn resource(l: &Listed) -> Value {
    let k = l.kind;
    let kind = |group: &str, version: &str, kind: &str| json!({"group": group, "version": version, "kind": kind});
    let subresources: Vec<Value> = l
        .subresources
        .iter()
        .map(|(sub, sub_kind, verbs)| {
            let response = match *sub {
                "eviction" => kind("policy", "v1", sub_kind),
                "scale" => kind("autoscaling", "v1", sub_kind),
                _ => kind(&l.group, &l.version, sub_kind),
            };
            json!({"subresource": sub, "responseKind": response, "verbs": verbs})
        })
        .collect();
    let mut r = json!({
        "resource": k.plural(),
        "responseKind": kind(&l.group, &l.version, k.as_str()),
        "scope": if k.is_namespaced() { "Namespaced" } else { "Cluster" },
        "singularResource": l.singular,
        "verbs": VERBS,
    });
    for (name, values) in [
        ("shortNames", &l.short_names),
        ("categories", &l.categories),
    ] {
        if !values.is_empty() {
            r[name] = json!(values);
        }
    }
    if !subresources.is_empty() {
        r["subresources"] = json!(subresources);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

    #[test]
    fn the_accept_header_decides_the_form() {
        assert_eq!(requested(KUBECTL), Some("v2"));
        assert_eq!(
            requested("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"),
            Some("v2beta1")
        );
        assert_eq!(requested("application/json, */*"), None);
        assert_eq!(requested(""), None);
    }

    #[test]
    fn the_core_group_has_no_name_and_lists_pods_with_their_subresources() {
        let d = document(true, "v2", &listed(&CustomResources::default()));
        let items = d["items"].as_array().unwrap();
        assert_eq!(items.len(), 1);
        assert!(items[0]["metadata"].get("name").is_none());
        let v1 = &items[0]["versions"][0];
        assert_eq!(v1["version"], "v1");
        let pods = v1["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "pods")
            .unwrap();
        assert_eq!(pods["scope"], "Namespaced");
        assert_eq!(pods["shortNames"], json!(["po"]));
        let eviction = pods["subresources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["subresource"] == "eviction")
            .unwrap();
        assert_eq!(eviction["responseKind"]["group"], "policy");
    }

    #[test]
    fn named_groups_put_their_preferred_version_first() {
        let d = document(false, "v2", &listed(&CustomResources::default()));
        let items = d["items"].as_array().unwrap();
        assert!(items.iter().all(|g| g["metadata"]["name"] != ""));
        let apps = items
            .iter()
            .find(|g| g["metadata"]["name"] == "apps")
            .unwrap();
        let deployments = apps["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "deployments")
            .unwrap();
        assert_eq!(deployments["responseKind"]["kind"], "Deployment");
        assert_eq!(deployments["scope"], "Namespaced");
        let autoscaling = items
            .iter()
            .find(|g| g["metadata"]["name"] == "autoscaling")
            .unwrap();
        assert_eq!(autoscaling["versions"][0]["version"], "v2");
    }
}

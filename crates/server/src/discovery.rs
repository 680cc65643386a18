//! Discovery as kube-apiserver serves it (the legacy, unaggregated form, which every client
//! falls back to): `/api`, `/api/v1`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}`, and
//! `/version`. Generated from the kinds the server serves, so discovery and the routes agree.

use std::collections::BTreeMap;

use kubeplane_api::Kind;
use kubeplane_core::version::KubeVersion;
use kubeplane_registry::strategy::plain;
use kubeplane_registry::strategy::scale::has_scale;
use serde_json::{json, Value};

use crate::request::{all_kinds, short_names, version_of};
use crate::status::StatusError;

pub(crate) const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Kinds that `kubectl get all` shows (the `all` category).
pub(crate) fn categories(kind: Kind) -> &'static [&'static str] {
    match kind.plural() {
        "pods"
        | "deployments"
        | "replicasets"
        | "services"
        | "daemonsets"
        | "statefulsets"
        | "jobs"
        | "cronjobs"
        | "replicationcontrollers" => &["all"],
        _ => &[],
    }
}

/// The subresources of a kind and their verbs.
pub(crate) fn subresources(
    kind: Kind,
) -> Vec<(&'static str, &'static str, &'static [&'static str])> {
    const STATUS: &[&str] = &["get", "patch", "update"];
    let mut out = Vec::new();
    let has_status = match kind {
        Kind::Other(t) => plain::type_has_status(t),
        Kind::PriorityClass | Kind::Lease => false,
        _ => true,
    };
    if has_status {
        out.push(("status", kind.as_str(), STATUS));
    }
    match kind {
        Kind::Pod => {
            out.push(("binding", "Binding", &["create"][..]));
            out.push(("eviction", "Eviction", &["create"][..]));
        }
        k if has_scale(k) => out.push(("scale", "Scale", STATUS)),
        _ => {}
    }
    out
}

/// The `apiVersion`s the server serves, grouped: group → versions.
pub(crate) fn group_versions() -> BTreeMap<&'static str, Vec<&'static str>> {
    let mut groups: BTreeMap<&'static str, Vec<&'static str>> = BTreeMap::new();
    for k in all_kinds() {
        let versions = groups.entry(k.group()).or_default();
        if !versions.contains(&version_of(k)) {
            versions.push(version_of(k));
        }
    }
    groups
}

/// The preferred version of a group: the newest GA one (`v2` over `v1`).
pub(crate) fn preferred(versions: &[&'static str]) -> &'static str {
    versions
        .iter()
        .copied()
        .max_by_key(|v| v.trim_start_matches('v').parse::<u32>().unwrap_or(0))
        .unwrap_or("v1")
}

fn group_json(name: &str, versions: &[&'static str]) -> Value {
    let gv = |v: &str| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": gv(preferred(versions)),
    })
}

/// The APIResourceList of one group version.
fn resource_list(group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for k in all_kinds().filter(|k| k.group() == group && version_of(*k) == version) {
        resources.push(json!({
            "name": k.plural(),
            "singularName": k.as_str().to_lowercase(),
            "namespaced": k.is_namespaced(),
            "kind": k.as_str(),
            "verbs": VERBS,
            "shortNames": short_names(k),
            "categories": categories(k),
        }));
        for (sub, kind, verbs) in subresources(k) {
            let mut r = json!({
                "name": format!("{}/{sub}", k.plural()),
                "singularName": "",
                "namespaced": k.is_namespaced(),
                "kind": kind,
                "verbs": verbs,
            });
            // Subresources of another group name it, as kubectl drain looks for.
            match sub {
                "eviction" => r.as_object_mut().map(|m| {
                    m.insert("group".into(), "policy".into());
                    m.insert("version".into(), "v1".into())
                }),
                "scale" => r.as_object_mut().map(|m| {
                    m.insert("group".into(), "autoscaling".into());
                    m.insert("version".into(), "v1".into())
                }),
                _ => None,
            };
            resources.push(r);
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

/// The discovery document of a path's segments (`["api"]`, `["apis", "apps", "v1"]`, ...).
pub fn document(segments: &[String], server_address: &str) -> Result<Value, StatusError> {
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let groups = group_versions();
    let doc = match segs.as_slice() {
        ["api"] => json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        }),
        ["api", version] => resource_list("", version).ok_or_else(StatusError::not_found_path)?,
        ["apis"] => json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": groups.iter().filter(|(g, _)| !g.is_empty()).map(|(g, v)| group_json(g, v)).collect::<Vec<_>>(),
        }),
        ["apis", group] => {
            let versions = groups
                .get(group)
                .filter(|_| !group.is_empty())
                .ok_or_else(StatusError::not_found_path)?;
            let mut g = group_json(group, versions);
            g["kind"] = "APIGroup".into();
            g["apiVersion"] = "v1".into();
            g
        }
        ["apis", group, version] if !group.is_empty() => {
            resource_list(group, version).ok_or_else(StatusError::not_found_path)?
        }
        _ => return Err(StatusError::not_found_path()),
    };
    Ok(doc)
}

/// `/version`: the Kubernetes release the server follows.
pub fn version(v: KubeVersion) -> Value {
    json!({
        "major": "1",
        "minor": v.minor.to_string(),
        "emulationMajor": "1",
        "emulationMinor": v.minor.to_string(),
        "gitVersion": format!("v1.{}.{}", v.minor, v.patch),
        "gitCommit": "kubeplane",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "kubeplane",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str) -> Value {
        let segs: Vec<String> = path
            .trim_matches('/')
            .split('/')
            .map(String::from)
            .collect();
        document(&segs, "127.0.0.1:6443").unwrap()
    }

    #[test]
    fn the_core_group_lists_pods_with_their_short_name_verbs_and_subresources() {
        let d = doc("/api/v1");
        let res = d["resources"].as_array().unwrap();
        let pods = res.iter().find(|r| r["name"] == "pods").unwrap();
        assert_eq!(pods["kind"], "Pod");
        assert_eq!(pods["namespaced"], true);
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert!(pods["verbs"].as_array().unwrap().contains(&json!("watch")));
        for sub in ["pods/status", "pods/binding", "pods/eviction"] {
            assert!(res.iter().any(|r| r["name"] == sub), "{sub}");
        }
        assert!(res
            .iter()
            .any(|r| r["name"] == "configmaps" && r["shortNames"] == json!(["cm"])));
    }

    #[test]
    fn groups_list_their_versions_and_the_apps_group_serves_the_scale_subresources() {
        let d = doc("/apis");
        let apps = d["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "apps")
            .unwrap();
        assert_eq!(apps["preferredVersion"]["groupVersion"], "apps/v1");
        let d = doc("/apis/apps/v1");
        let res = d["resources"].as_array().unwrap();
        for scalable in ["deployments", "replicasets", "statefulsets"] {
            assert!(
                res.iter()
                    .any(|r| r["name"] == format!("{scalable}/scale") && r["kind"] == "Scale"),
                "{scalable}/scale"
            );
        }
        assert!(!res.iter().any(|r| r["name"] == "daemonsets/scale"));
        assert!(res
            .iter()
            .any(|r| r["name"] == "daemonsets" && r["shortNames"] == json!(["ds"])));
        assert_eq!(
            document(&["apis".into(), "nope".into()], "x")
                .unwrap_err()
                .code,
            404
        );
    }
}

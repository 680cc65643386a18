//! Discovery as kube-apiserver serves it (the legacy, unaggregated form, which every client
//! falls back to): `/api`, `/api/v1`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}`, and
//! `/version`. Generated from the kinds the server serves, so discovery and the routes agree.

use std::collections::BTreeMap;

use kubeplane_api::Kind;
use kubeplane_core::version::KubeVersion;
use kubeplane_registry::strategy::plain;
use kubeplane_registry::strategy::scale::has_scale;
use serde_json::{json, Value};

use crate::crds::CustomResources;
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

/// One resource discovery lists: a kind at one version, with what discovery says of it.
pub(crate) struct Listed {
    pub kind: Kind,
    pub group: String,
    pub version: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// (subresource, its kind, its verbs).
    pub subresources: Vec<(&'static str, String, &'static [&'static str])>,
}

/// Every resource the server serves: the built-in kinds, then each served version of the
/// custom resource types.
pub(crate) fn listed(custom: &CustomResources) -> Vec<Listed> {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut out: Vec<Listed> = all_kinds()
        .map(|k| Listed {
            kind: k,
            group: k.group().to_string(),
            version: version_of(k).to_string(),
            singular: k.as_str().to_lowercase(),
            short_names: strings(short_names(k)),
            categories: strings(categories(k)),
            subresources: subresources(k)
                .into_iter()
                .map(|(sub, kind, verbs)| (sub, kind.to_string(), verbs))
                .collect(),
        })
        .collect();
    const VERBS3: &[&str] = &["get", "patch", "update"];
    for s in custom.all().iter() {
        for v in &s.def.served {
            let mut subs = Vec::new();
            if s.subresource(v, "status").is_some() {
                subs.push(("status", s.def.type_.kind.clone(), VERBS3));
            }
            if s.subresource(v, "scale").is_some() {
                subs.push(("scale", "Scale".to_string(), VERBS3));
            }
            out.push(Listed {
                kind: s.kind(),
                group: s.def.type_.group.clone(),
                version: v.clone(),
                singular: s.singular(),
                short_names: s.def.type_.short_names.clone(),
                categories: s.def.categories.clone(),
                subresources: subs,
            });
        }
    }
    out
}

/// The `apiVersion`s the server serves, grouped: group → versions.
pub(crate) fn group_versions(listed: &[Listed]) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in listed {
        let versions = groups.entry(l.group.clone()).or_default();
        if !versions.contains(&l.version) {
            versions.push(l.version.clone());
        }
    }
    groups
}

/// Upstream's version priority: GA over beta over alpha, then the higher numbers (`v2` over
/// `v1`, `v1beta2` over `v1beta1`); names of another form last, alphabetically.
fn priority(v: &str) -> (u8, u32, u32) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(major) = digits.parse::<u32>() else {
        return (0, 0, 0);
    };
    match &rest[digits.len()..] {
        "" => (3, major, 0),
        tail => {
            let (level, n) = match (tail.strip_prefix("beta"), tail.strip_prefix("alpha")) {
                (Some(n), _) => (2, n),
                (_, Some(n)) => (1, n),
                _ => return (0, 0, 0),
            };
            match n.parse::<u32>() {
                Ok(minor) => (level, major, minor),
                Err(_) => (0, 0, 0),
            }
        }
    }
}

/// The preferred version of a group: the one of highest priority (`v2` over `v1` over
/// `v1beta1`).
pub(crate) fn preferred(versions: &[String]) -> String {
    versions
        .iter()
        .max_by_key(|v| priority(v))
        .cloned()
        .unwrap_or_else(|| "v1".to_string())
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let gv = |v: &str| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": gv(&preferred(versions)),
    })
}

/// The APIResourceList of one group version.
fn resource_list(listed: &[Listed], group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for l in listed
        .iter()
        .filter(|l| l.group == group && l.version == version)
    {
        let k = l.kind;
        resources.push(json!({
            "name": k.plural(),
            "singularName": l.singular,
            "namespaced": k.is_namespaced(),
            "kind": k.as_str(),
            "verbs": VERBS,
            "shortNames": l.short_names,
            "categories": l.categories,
        }));
        for (sub, kind, verbs) in &l.subresources {
            let mut r = json!({
                "name": format!("{}/{sub}", k.plural()),
                "singularName": "",
                "namespaced": k.is_namespaced(),
                "kind": kind,
                "verbs": verbs,
            });
            // Subresources of another group name it, as kubectl drain looks for.
            match *sub {
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

/// The discovery document of a path's segments (`["api"]`, `["apis", "apps", "v1"]`, ...),
/// with the custom resource types served.
pub fn document(
    segments: &[String],
    server_address: &str,
    custom: &CustomResources,
) -> Result<Value, StatusError> {
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let listed = listed(custom);
    let groups = group_versions(&listed);
    let doc = match segs.as_slice() {
        ["api"] => json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        }),
        ["api", version] => {
            resource_list(&listed, "", version).ok_or_else(StatusError::not_found_path)?
        }
        ["apis"] => json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": groups.iter().filter(|(g, _)| !g.is_empty()).map(|(g, v)| group_json(g, v)).collect::<Vec<_>>(),
        }),
        ["apis", group] => {
            let versions = groups
                .get(*group)
                .filter(|_| !group.is_empty())
                .ok_or_else(StatusError::not_found_path)?;
            let mut g = group_json(group, versions);
            g["kind"] = "APIGroup".into();
            g["apiVersion"] = "v1".into();
            g
        }
        ["apis", group, version] if !group.is_empty() => {
            resource_list(&listed, group, version).ok_or_else(StatusError::not_found_path)?
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
        document(&segs, "127.0.0.1:6443", &CustomResources::default()).unwrap()
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
            document(
                &["apis".into(), "nope".into()],
                "x",
                &CustomResources::default()
            )
            .unwrap_err()
            .code,
            404
        );
    }
}

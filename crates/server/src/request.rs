//! What a request names: the resource (group, version, plural → [`Kind`]), the namespace, the
//! object and the subresource, read from the path as kube-apiserver's request-info resolver
//! reads it, and the query parameters a verb takes.

use std::collections::HashMap;
use std::sync::Arc;

use kubeplane_api::types::BUILTIN;
use kubeplane_api::Kind;

use crate::crds::{CustomResources, Served};
use crate::status::StatusError;

/// Every kind the server serves: the ones kubeplane simulates, then every other built-in one.
pub fn all_kinds() -> impl Iterator<Item = Kind> {
    Kind::ALL.into_iter().chain(BUILTIN.iter().map(Kind::Other))
}

/// The version of a kind's `apiVersion` (`v1` of `apps/v1`).
pub fn version_of(kind: Kind) -> &'static str {
    match kind.api_version().rsplit_once('/') {
        Some((_, v)) => v,
        None => kind.api_version(),
    }
}

/// kubectl's short names for a kind (`po`, `deploy`, `cm`, ...), as discovery lists them.
pub fn short_names(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Namespace => &["ns"],
        Kind::Node => &["no"],
        Kind::PriorityClass => &["pc"],
        Kind::Deployment => &["deploy"],
        Kind::ReplicaSet => &["rs"],
        Kind::PodDisruptionBudget => &["pdb"],
        Kind::Pod => &["po"],
        Kind::Lease => &[],
        Kind::Other(t) => t.short_names,
    }
}

/// The kind served at `group`/`version`/`plural`.
pub fn resolve(group: &str, version: &str, plural: &str) -> Option<Kind> {
    all_kinds().find(|k| k.group() == group && version_of(*k) == version && k.plural() == plural)
}

/// A request for a resource (everything under `/api/v1` and `/apis/{group}/{version}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRequest {
    pub kind: Kind,
    /// The namespace of the path (`""` for cluster-scoped kinds and all-namespace requests).
    pub namespace: String,
    /// The object's name; `None` for the collection.
    pub name: Option<String>,
    /// `status`, `scale`, `binding`, `eviction`, ... when the path names one.
    pub subresource: Option<String>,
    /// The version of the path (a custom resource may be served at several).
    pub version: String,
    /// The custom resource type the path names, with its definition.
    pub custom: Option<Arc<Served>>,
}

impl ResourceRequest {
    /// The `apiVersion` the client speaks: the path's group and version.
    pub fn api_version(&self) -> String {
        match self.kind.group() {
            "" => self.version.clone(),
            g => format!("{g}/{}", self.version),
        }
    }

    /// Whether the client's version is not the stored one (a custom resource read at another
    /// served version): its objects' `apiVersion` is rewritten.
    pub fn converts(&self) -> bool {
        self.custom.is_some() && self.api_version() != self.kind.api_version()
    }
}

/// What a path is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `/api`, `/apis`, `/api/v1`, `/apis/{group}`, `/apis/{group}/{version}`.
    Discovery(Vec<String>),
    Resource(ResourceRequest),
}

/// Reads a request path; `Err` is a 404 Status for a path that names nothing the server has.
/// `custom` holds the custom resource types served besides the built-in kinds.
pub fn parse_path(path: &str, custom: &CustomResources) -> Result<Target, StatusError> {
    let parts: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let (group, version, rest) = match parts.first().map(String::as_str) {
        Some("api") if parts.len() <= 2 => return Ok(Target::Discovery(parts)),
        Some("api") => ("", parts[1].as_str(), &parts[2..]),
        Some("apis") if parts.len() <= 3 => return Ok(Target::Discovery(parts)),
        Some("apis") => (parts[1].as_str(), parts[2].as_str(), &parts[3..]),
        _ => return Err(StatusError::not_found_path()),
    };
    let found = |plural: &str| match resolve(group, version, plural) {
        Some(k) => Some((k, None)),
        None => custom
            .resolve(group, version, plural)
            .map(|s| (s.kind(), Some(s))),
    };
    let resource = |plural: &str| found(plural).ok_or_else(StatusError::not_found_path);
    let req = match rest {
        // /namespaces/{ns}/{plural}[/{name}[/{sub}]]
        [ns, ns_name, plural, tail @ ..]
            if ns == "namespaces" && tail.len() <= 2 && found(plural).is_some() =>
        {
            let (kind, custom) = resource(plural)?;
            if !kind.is_namespaced() {
                return Err(StatusError::not_found_path());
            }
            ResourceRequest {
                kind,
                namespace: ns_name.clone(),
                name: tail.first().cloned(),
                subresource: tail.get(1).cloned(),
                version: version.to_string(),
                custom,
            }
        }
        [plural, tail @ ..] if tail.len() <= 2 => {
            let (kind, custom) = resource(plural)?;
            ResourceRequest {
                kind,
                namespace: String::new(),
                name: tail.first().cloned(),
                subresource: tail.get(1).cloned(),
                version: version.to_string(),
                custom,
            }
        }
        _ => return Err(StatusError::not_found_path()),
    };
    if req.name.is_some() && req.kind.is_namespaced() && req.namespace.is_empty() {
        // A namespaced object named without its namespace.
        return Err(StatusError::not_found_path());
    }
    Ok(Target::Resource(req))
}

fn percent_decode(s: &str) -> String {
    form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| s.to_string())
}

/// The query parameters of a request, and its `User-Agent` (the default field manager of a
/// write, as upstream takes it).
#[derive(Clone, Debug, Default)]
pub struct Query(HashMap<String, String>, String);

impl Query {
    pub fn parse(query: Option<&str>) -> Query {
        Query(
            form_urlencoded::parse(query.unwrap_or("").as_bytes())
                .into_owned()
                .collect(),
            String::new(),
        )
    }

    /// The request's `User-Agent` header, empty when it sent none.
    pub fn user_agent(&self) -> &str {
        &self.1
    }

    pub fn with_user_agent(mut self, user_agent: &str) -> Query {
        self.1 = user_agent.to_string();
        self
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some("true" | "1"))
    }

    /// A non-negative integer parameter; a malformed one is a 400.
    pub fn number(&self, name: &str) -> Result<Option<i64>, StatusError> {
        match self.get(name) {
            None => Ok(None),
            Some(s) => s.parse::<i64>().map(Some).map_err(|_| {
                StatusError::bad_request(format!(
                    "invalid value {s:?} for parameter {name}: not an integer"
                ))
            }),
        }
    }

    /// A query with only `q`'s label and field selectors.
    pub fn copy_selectors(&mut self, q: &Query) {
        for k in ["labelSelector", "fieldSelector"] {
            if let Some(v) = q.get(k) {
                self.0.insert(k.to_string(), v.to_string());
            }
        }
    }

    /// `dryRun=All`: validate and admit, persist nothing.
    pub fn dry_run(&self) -> Result<bool, StatusError> {
        match self.get("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(StatusError::bad_request(format!(
                "Invalid dryRun value {other:?}: supported values: \"All\""
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(path: &str) -> ResourceRequest {
        match parse_path(path, &CustomResources::default()).unwrap() {
            Target::Resource(r) => r,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn paths_name_the_kind_namespace_object_and_subresource_as_the_api_server_reads_them() {
        let r = res("/api/v1/namespaces/default/pods/web-0/binding");
        assert_eq!((r.kind, r.namespace.as_str()), (Kind::Pod, "default"));
        assert_eq!(r.name.as_deref(), Some("web-0"));
        assert_eq!(r.subresource.as_deref(), Some("binding"));
        let r = res("/apis/apps/v1/deployments");
        assert_eq!((r.kind, r.name), (Kind::Deployment, None));
        let r = res("/api/v1/namespaces/kube-system");
        assert_eq!(
            (r.kind, r.name.as_deref()),
            (Kind::Namespace, Some("kube-system"))
        );
        let r = res("/api/v1/namespaces/ns1/status");
        assert_eq!(
            (r.kind, r.subresource.as_deref()),
            (Kind::Namespace, Some("status"))
        );
        let r = res("/api/v1/nodes/n1/status");
        assert_eq!((r.kind, r.name.as_deref()), (Kind::Node, Some("n1")));
        let r = res("/api/v1/namespaces/default/configmaps");
        assert_eq!(r.kind.as_str(), "ConfigMap");
    }

    #[test]
    fn unknown_groups_versions_and_resources_are_not_found() {
        for p in [
            "/apis/apps/v2/deployments",
            "/api/v1/widgets",
            "/apis/nope/v1/things",
            "/metrics2",
        ] {
            assert_eq!(
                parse_path(p, &CustomResources::default()).unwrap_err().code,
                404,
                "{p}"
            );
        }
    }

    #[test]
    fn discovery_paths_are_recognised() {
        assert_eq!(
            parse_path("/apis/apps", &CustomResources::default()).unwrap(),
            Target::Discovery(vec!["apis".into(), "apps".into()])
        );
        assert!(matches!(
            parse_path("/api/v1", &CustomResources::default()).unwrap(),
            Target::Discovery(_)
        ));
    }
}

//! CustomResourceDefinitions (upstream `apiextensions-apiserver/pkg/apis/apiextensions/
//! validation`, the parts that decide what resource type a definition makes: its name, group,
//! names, scope and versions) and the resource type of a valid definition. The schemas, the
//! conversion settings and the status are stored as written and not checked.

use kubeplane_api::types::CustomType;
use kubeplane_api::DynamicObject;
use serde_json::Value;

use super::meta::{self, NameRule};
use super::{quote, Check, FieldError};

/// What a valid CustomResourceDefinition defines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    /// The resource type (its storage version stands for it).
    pub type_: CustomType,
    /// The versions served, in the definition's order.
    pub served: Vec<String>,
    pub singular: String,
    pub categories: Vec<String>,
}

impl Definition {
    /// Whether `kind` of `apiVersion` (`group/version`) is this definition's resource at a
    /// served version: `None` when the definition is of another group or kind.
    pub fn serves(&self, api_version: &str, kind: &str) -> Option<bool> {
        let (group, version) = api_version.split_once('/')?;
        (group == self.type_.group && kind == self.type_.kind)
            .then(|| self.served.iter().any(|v| v == version))
    }
}

/// Upstream `ValidateCustomResourceDefinition` (first problem only).
pub fn validate_crd(crd: &DynamicObject) -> Check {
    definition(crd).map(|_| ())
}

/// The definition a CustomResourceDefinition makes, or its first problem.
pub fn definition(crd: &DynamicObject) -> Result<Definition, FieldError> {
    let spec = crd.field("spec").cloned().unwrap_or(Value::Null);
    let at = |path: &[&str]| path.iter().try_fold(&spec, |v, k| v.get(k));
    let text = |path: &[&str]| at(path).and_then(Value::as_str).unwrap_or("").to_string();
    let list = |path: &[&str]| -> Vec<String> {
        at(path)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let (group, plural, kind) = (
        text(&["group"]),
        text(&["names", "plural"]),
        text(&["names", "kind"]),
    );
    let scope = text(&["scope"]);
    check_names(crd, &group, &plural, &kind, &scope)?;
    let (served, storage) = versions(&spec)?;
    let status_subresource = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(storage.as_str()))
        .and_then(|v| v.pointer("/subresources/status"))
        .is_some_and(|s| !s.is_null());
    Ok(Definition {
        type_: CustomType {
            group,
            version: storage,
            kind,
            plural,
            namespaced: scope == "Namespaced",
            short_names: list(&["names", "shortNames"]),
            status_subresource,
        },
        served,
        singular: text(&["names", "singular"]),
        categories: list(&["names", "categories"]),
    })
}

/// The metadata, the name that must be `plural.group`, the group, the scope and the names.
fn check_names(crd: &DynamicObject, group: &str, plural: &str, kind: &str, scope: &str) -> Check {
    meta::validate_meta(&crd.metadata, "metadata", NameRule::PathSegment, false)?;
    let name = crd.metadata.name.as_deref().unwrap_or("");
    if name != format!("{plural}.{group}") {
        return Err(FieldError::invalid(
            "metadata.name",
            quote(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        return Err(FieldError::required("spec.group", ""));
    }
    if group.split('.').count() < 2 {
        return Err(FieldError::invalid(
            "spec.group",
            quote(group),
            "should be a domain with at least one dot",
        ));
    }
    if !matches!(scope, "Namespaced" | "Cluster") {
        return Err(FieldError::not_supported(
            "spec.scope",
            scope,
            &["Cluster", "Namespaced"],
        ));
    }
    if plural.is_empty() {
        return Err(FieldError::required("spec.names.plural", ""));
    }
    if kind.is_empty() {
        return Err(FieldError::required("spec.names.kind", ""));
    }
    Ok(())
}

/// The served versions and the one storage version of `spec.versions`.
fn versions(spec: &Value) -> Result<(Vec<String>, String), FieldError> {
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut served = Vec::new();
    let mut storage = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            return Err(FieldError::required(format!("spec.versions[{i}].name"), ""));
        }
        if v.get("served").and_then(Value::as_bool) == Some(true) {
            served.push(name.to_string());
        }
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage.push(name.to_string());
        }
    }
    match storage.as_slice() {
        [one] => Ok((served, one.clone())),
        _ => Err(FieldError::invalid_omitted(
            "spec.versions",
            "must have exactly one version marked as storage version",
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn crd(spec: Value, name: &str) -> DynamicObject {
        let t =
            kubeplane_api::types::builtin("apiextensions.k8s.io/v1", "CustomResourceDefinition")
                .unwrap();
        let v = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                       "metadata": {"name": name}, "spec": spec});
        DynamicObject::from_value(t, &v).unwrap()
    }

    #[test]
    fn a_definition_makes_the_type_its_spec_names() {
        let spec = json!({"group": "example.com", "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget",
                      "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{"name": "v1beta1", "served": true, "storage": false},
                         {"name": "v1", "served": true, "storage": true},
                         {"name": "v0", "served": false, "storage": false}]});
        let d = definition(&crd(spec, "widgets.example.com")).unwrap();
        assert_eq!(d.type_.version, "v1", "the storage version");
        assert!(!d.type_.namespaced);
        assert_eq!(d.type_.short_names, ["wd"]);
        assert_eq!(
            (d.singular.as_str(), d.categories.as_slice()),
            ("widget", &["all".to_string()][..])
        );
        assert_eq!(d.served, ["v1beta1", "v1"]);
        assert_eq!(d.serves("example.com/v1beta1", "Widget"), Some(true));
        assert_eq!(d.serves("example.com/v0", "Widget"), Some(false));
        assert_eq!(d.serves("example.com/v1", "Gadget"), None);
        assert_eq!(d.serves("v1", "Widget"), None);
    }

    #[test]
    fn a_definition_named_otherwise_than_plural_dot_group_is_invalid() {
        let spec = json!({"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true}]});
        let e = validate_crd(&crd(spec, "widget.example.com")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "metadata.name: Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group"
        );
    }
}

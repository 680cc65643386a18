//! ObjectMeta (upstream `apimachinery/pkg/api/validation/objectmeta.go`), object names
//! (`IsDNS1123Label`, `IsValidPathSegmentName`), labels, annotations and label selectors.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubeplane_core::labels::{from_label_selector, is_qualified_name, is_valid_label_value};

use super::{join, quote, Check, FieldError};

/// How strictly an object name is checked.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// Upstream's path-segment rule (no `/` or `%`, not `.` or `..`), which every name must
    /// meet. Upstream also requires DNS-1123 subdomains for most kinds; kubeplane does not,
    /// because scenarios derived from upstream unit tests use names like `nodeA`.
    PathSegment,
    /// Namespaces: a DNS-1123 label, as upstream (namespaces appear in `ns/name` references).
    Dns1123Label,
}

/// Upstream `IsDNS1123Label`, with its messages.
pub fn is_dns1123_label(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    if b.len() > 63 {
        return Err("must be no more than 63 characters".into());
    }
    if b.is_empty()
        || !b.first().is_some_and(alnum)
        || !b.last().is_some_and(alnum)
        || !b.iter().all(|c| alnum(c) || *c == b'-')
    {
        return Err(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric \
             characters or '-', and must start and end with an alphanumeric character (e.g. \
             'my-name', or '123-abc')"
                .into(),
        );
    }
    Ok(())
}

/// Upstream `IsValidPathSegmentName`, plus no whitespace or control characters and at most
/// 253 characters.
pub fn is_path_segment_name(s: &str) -> Result<(), String> {
    if s == "." || s == ".." {
        return Err(format!("may not be '{s}'"));
    }
    if let Some(c) = s.chars().find(|c| matches!(c, '/' | '%')) {
        return Err(format!("may not contain '{c}'"));
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("may not contain whitespace or control characters".into());
    }
    if s.len() > 253 {
        return Err("must be no more than 253 characters".into());
    }
    Ok(())
}

fn check_name(rule: NameRule, name: &str) -> Result<(), String> {
    match rule {
        NameRule::PathSegment => is_path_segment_name(name),
        NameRule::Dns1123Label => is_dns1123_label(name),
    }
}

/// Upstream `ValidateObjectMeta`: a name (or generateName) that meets `rule`, a DNS-1123
/// namespace for namespaced kinds, valid labels, qualified annotation keys within the size
/// limit.
pub fn validate_meta(m: &ObjectMeta, path: &str, rule: NameRule, namespaced: bool) -> Check {
    validate_meta_labelled(m, m.labels.as_ref(), path, rule, namespaced)
}

/// [`validate_meta`] with the labels given apart (a stored pod keeps them outside its
/// metadata).
pub fn validate_meta_labelled(
    m: &ObjectMeta,
    labels: Option<&BTreeMap<String, String>>,
    path: &str,
    rule: NameRule,
    namespaced: bool,
) -> Check {
    match (m.name.as_deref(), m.generate_name.as_deref()) {
        (Some(name), _) if !name.is_empty() => check_name(rule, name)
            .map_err(|e| FieldError::invalid(join(path, "name"), quote(name), &e))?,
        (_, Some(g)) if !g.is_empty() => {}
        _ => {
            return Err(FieldError::required(
                join(path, "name"),
                "name or generateName is required",
            ))
        }
    }
    if namespaced {
        if let Some(ns) = m.namespace.as_deref().filter(|ns| !ns.is_empty()) {
            is_dns1123_label(ns)
                .map_err(|e| FieldError::invalid(join(path, "namespace"), quote(ns), &e))?;
        }
    }
    if labels.is_some() {
        check_labels(labels, &|| join(path, "labels"))?;
    }
    let Some(annotations) = &m.annotations else {
        return Ok(());
    };
    for key in annotations.keys() {
        // Lower-cased (a copy) only when it has upper-case letters.
        let lower = match key.bytes().any(|b| b.is_ascii_uppercase()) {
            true => std::borrow::Cow::Owned(key.to_ascii_lowercase()),
            false => std::borrow::Cow::Borrowed(key.as_str()),
        };
        is_qualified_name(&lower)
            .map_err(|e| FieldError::invalid(join(path, "annotations"), quote(key), &e))?;
    }
    validate_annotations_size(Some(annotations), &join(path, "annotations"))
}

/// Upstream `ValidateObjectMetaUpdate`, the parts a client can get wrong: the UID of the
/// update, when given, is the stored object's (name and namespace select the stored object;
/// the creation timestamp and generation are the server's).
pub fn validate_meta_update(old: &ObjectMeta, new: &ObjectMeta, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(uid) = new.uid.as_deref().filter(|u| !u.is_empty()) {
        if old.uid.as_deref() != Some(uid) {
            errs.push(immutable(join(path, "uid"), quote(uid)));
        }
    }
    errs
}

/// Upstream `ValidateImmutableField`'s error.
pub fn immutable(field: String, value: String) -> FieldError {
    FieldError::invalid(field, value, "field is immutable")
}

/// Upstream `ValidateNamespace`, the metadata part.
pub fn validate_namespace(n: &Namespace) -> Check {
    validate_meta(&n.metadata, "metadata", NameRule::Dns1123Label, false)
}

/// Upstream `TotalAnnotationSizeLimitB`: the keys and values of an object's annotations hold
/// at most 256 KiB in all.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;

/// Upstream `ValidateAnnotationsSize`, with its message (`field.TooLong`).
pub fn validate_annotations_size(
    annotations: Option<&BTreeMap<String, String>>,
    path: &str,
) -> Check {
    let total: usize = annotations
        .into_iter()
        .flatten()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        return Err(FieldError::too_long(
            path,
            &format!("must have at most {TOTAL_ANNOTATION_SIZE_LIMIT_BYTES} bytes"),
        ));
    }
    Ok(())
}

/// Label keys must be qualified names and values valid label values.
pub fn validate_labels(labels: Option<&BTreeMap<String, String>>, path: &str) -> Check {
    check_labels(labels, &|| path.to_string())
}

/// [`validate_labels`] with the path built by `path` only when an error needs it (every pod
/// created passes through here).
pub(crate) fn check_labels(
    labels: Option<&BTreeMap<String, String>>,
    path: &dyn Fn() -> String,
) -> Check {
    for (k, v) in labels.into_iter().flatten() {
        is_qualified_name(k).map_err(|e| FieldError::invalid(path(), quote(k), &e))?;
        is_valid_label_value(v).map_err(|e| {
            FieldError::invalid(path(), format!("{} (key {})", quote(v), quote(k)), &e)
        })?;
    }
    Ok(())
}

/// A label selector that compiles.
pub fn validate_selector(sel: &LabelSelector, path: &str) -> Check {
    from_label_selector(sel)
        .map(|_| ())
        .map_err(|e| FieldError::invalid_omitted(path, &e.to_string()))
}

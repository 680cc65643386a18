//! Field selectors (`?fieldSelector=spec.nodeName=n1,status.phase!=Succeeded`) with each kind's
//! upstream field set: `metadata.name` and `metadata.namespace` for every kind, and the fields
//! each registry strategy's `GetAttrs` adds (pods, nodes, namespaces, events, secrets,
//! replicasets).

use kubeplane_api::PodExt;
use kubeplane_api::{Kind, Object};
use serde_json::Value;

use crate::status::StatusError;

/// One term of a field selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub field: String,
    pub value: String,
    pub equal: bool,
}

/// A parsed field selector: every term must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector(pub Vec<Term>);

impl FieldSelector {
    /// Parses a selector and checks its fields against the kind's field set.
    pub fn parse(s: &str, kind: Kind) -> Result<FieldSelector, StatusError> {
        let mut terms = Vec::new();
        for part in split_unescaped(s) {
            if part.is_empty() {
                continue;
            }
            let (field, value, equal) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, v, true)
            } else {
                return Err(StatusError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let field = field.trim().to_string();
            if !supported(kind, &field) {
                return Err(StatusError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            terms.push(Term {
                field,
                value: value.trim().replace("\\,", ",").replace("\\=", "="),
                equal,
            });
        }
        Ok(FieldSelector(terms))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The name a `metadata.name=X` term pins, if any (a watch of one object).
    pub fn name(&self) -> Option<&str> {
        self.0
            .iter()
            .find(|t| t.equal && t.field == "metadata.name")
            .map(|t| t.value.as_str())
    }

    pub fn matches(&self, obj: &Object) -> bool {
        self.0.iter().all(|t| {
            let v = field_value(obj, &t.field).unwrap_or_default();
            (v == t.value) == t.equal
        })
    }
}

fn split_unescaped(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = s.as_bytes();
    for i in 0..bytes.len() {
        if bytes[i] == b',' && (i == 0 || bytes[i - 1] != b'\\') {
            out.push(&s[start..i]);
            start = i + 1;
        }
    }
    out.push(&s[start..]);
    out
}

/// The fields a kind can be selected by.
fn kind_fields(kind: Kind) -> &'static [&'static str] {
    match (kind.group(), kind.plural()) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "namespaces") => &["status.phase"],
        ("", "secrets") => &["type"],
        ("apps", "replicasets") => &["status.replicas"],
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        _ => &[],
    }
}

fn supported(kind: Kind, field: &str) -> bool {
    field == "metadata.name" || field == "metadata.namespace" || kind_fields(kind).contains(&field)
}

/// The value of a selectable field, as upstream's `GetAttrs` renders it.
pub fn field_value(obj: &Object, field: &str) -> Option<String> {
    match field {
        "metadata.name" => return Some(obj.name().to_string()),
        "metadata.namespace" => return Some(obj.namespace().to_string()),
        _ => {}
    }
    if let Some(pod) = obj.as_pod() {
        let spec = pod.spec.as_ref();
        let status = pod.status_k8s();
        let status = status.as_ref();
        return Some(match field {
            "spec.nodeName" => pod.node_name().unwrap_or_default().to_string(),
            "spec.restartPolicy" => spec
                .and_then(|s| s.restart_policy.clone())
                .unwrap_or_default(),
            "spec.schedulerName" => spec
                .and_then(|s| s.scheduler_name.clone())
                .unwrap_or_default(),
            "spec.serviceAccountName" => spec
                .and_then(|s| s.service_account_name.clone())
                .unwrap_or_default(),
            "spec.hostNetwork" => spec
                .and_then(|s| s.host_network)
                .unwrap_or(false)
                .to_string(),
            "status.phase" => status.and_then(|s| s.phase.clone()).unwrap_or_default(),
            "status.podIP" => status.and_then(|s| s.pod_ip.clone()).unwrap_or_default(),
            "status.nominatedNodeName" => status
                .and_then(|s| s.nominated_node_name.clone())
                .unwrap_or_default(),
            _ => return None,
        });
    }
    if let Some(node) = obj.as_node() {
        return match field {
            "spec.unschedulable" => Some(
                node.spec
                    .as_ref()
                    .and_then(|s| s.unschedulable)
                    .unwrap_or(false)
                    .to_string(),
            ),
            _ => None,
        };
    }
    // Every other kind: read the JSON (`source` of an Event is `source.component`).
    let json = obj.to_json();
    let path = if field == "source" {
        "source.component"
    } else {
        field
    };
    let mut v = &json;
    for part in path.split('.') {
        v = v.get(part)?;
    }
    Some(match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeplane_core::testing::PodBuilder;
    use std::sync::Arc;

    #[test]
    fn pods_are_selected_by_node_and_phase_as_kubectl_describe_node_selects_them() {
        let pod = Object::Pod(Arc::new(
            PodBuilder::new("p")
                .node("n1")
                .phase("Running")
                .obj()
                .into(),
        ));
        let sel =
            FieldSelector::parse("spec.nodeName=n1,status.phase!=Succeeded", Kind::Pod).unwrap();
        assert!(sel.matches(&pod));
        let sel = FieldSelector::parse("spec.nodeName==n2", Kind::Pod).unwrap();
        assert!(!sel.matches(&pod));
        assert_eq!(
            FieldSelector::parse("metadata.name=p", Kind::Pod)
                .unwrap()
                .name(),
            Some("p")
        );
    }

    #[test]
    fn an_unknown_field_label_is_a_bad_request_in_upstreams_words() {
        let err = FieldSelector::parse("spec.foo=bar", Kind::Pod).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(err.message, "field label not supported: spec.foo");
    }
}

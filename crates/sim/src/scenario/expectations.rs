//! The assertions of `expect` steps: one of pod, pods, event or replicaSet, each decoded
//! strictly and turned into the model's [`Assertion`].

use kubeplane_core::labels::parse as parse_selector;
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;
use serde_json::Value;

use super::model::*;
use super::objects::{join, FieldError};
use super::parse::type_name;
use super::raw::*;
use super::steps::{check_phase, object_ref, pod_ref};

/// The assertion kinds, in the order messages list them.
pub(super) const ASSERTION_KINDS: [&str; 4] = ["pod", "pods", "event", "replicaSet"];

pub(super) fn parse_assertion(v: &Value, path: &str) -> Result<Assertion, FieldError> {
    let Value::Object(m) = v else {
        return Err(FieldError::at(
            path,
            format!(
                "an assertion is a mapping with one of pod, pods, event or replicaSet, found {}",
                type_name(v)
            ),
        ));
    };
    match assertion_kind(m, path)? {
        "pod" => pod_assertion(v, path),
        "pods" => pods_assertion(v, path),
        "event" => event_assertion(v, path),
        _ => replica_set_assertion(v, path),
    }
}

/// Which of the assertion kinds a mapping holds (exactly one).
fn assertion_kind(
    m: &serde_json::Map<String, Value>,
    path: &str,
) -> Result<&'static str, FieldError> {
    let kinds: Vec<&'static str> = ASSERTION_KINDS
        .into_iter()
        .filter(|k| m.contains_key(*k))
        .collect();
    match kinds.as_slice() {
        [k] => Ok(k),
        [] => {
            let keys: Vec<&str> = m.keys().map(String::as_str).collect();
            Err(FieldError::at(
                path,
                format!(
                    "an assertion needs one of pod, pods, event or replicaSet, found {}",
                    if keys.is_empty() {
                        "nothing".to_string()
                    } else {
                        keys.join(", ")
                    }
                ),
            ))
        }
        many => Err(FieldError::at(
            path,
            format!(
                "an assertion checks one thing, found {}; write one assertion for each",
                many.join(" and ")
            ),
        )),
    }
}

fn pod_assertion(v: &Value, path: &str) -> Result<Assertion, FieldError> {
    let r: PodAssertRaw = de(v, path)?;
    let (namespace, name) = pod_ref(&r.pod, &join(path, "pod"))?;
    if let Some(ph) = &r.phase {
        check_phase(ph, &join(path, "phase"))?;
    }
    Ok(Assertion::Pod(PodAssertion {
        namespace,
        name,
        exists: r.exists,
        node: r.node,
        node_in: r.node_in,
        phase: r.phase,
        ready: r.ready,
        terminating: r.terminating,
        nominated_node: r.nominated_node,
    }))
}

fn pods_assertion(v: &Value, path: &str) -> Result<Assertion, FieldError> {
    let r: PodsAssertRaw = de(v, path)?;
    let f = r.pods.unwrap_or(PodsFilterRaw {
        namespace: None,
        selector: None,
        node: None,
        phase: None,
    });
    let selector = match f.selector {
        None => None,
        Some(text) => {
            let selector = parse_selector(&text)
                .map_err(|e| FieldError::at(join(path, "pods.selector"), e.to_string()))?;
            Some(ParsedSelector { text, selector })
        }
    };
    if let Some(ph) = &f.phase {
        check_phase(ph, &join(path, "pods.phase"))?;
    }
    Ok(Assertion::Pods(PodsAssertion {
        namespace: f.namespace.filter(|ns| !ns.is_empty()),
        selector,
        node: f.node,
        phase: f.phase,
        count: r.count,
    }))
}

fn event_assertion(v: &Value, path: &str) -> Result<Assertion, FieldError> {
    let r: EventAssertRaw = de(v, path)?;
    let object = match r.event.object {
        None => None,
        Some(o) => Some(object_ref(&o, &join(path, "event.object"))?),
    };
    let message_contains = match r.event.message_contains {
        None => Vec::new(),
        Some(OneOrMany::One(s)) => vec![s],
        Some(OneOrMany::Many(v)) => v,
    };
    Ok(Assertion::Event(EventAssertion {
        reason: r.event.reason,
        object,
        kind: r.event.kind,
        message_contains,
        count: r.count,
        first_at: r.first_at.map(|d| SimTime(d.0 .0)),
        tolerance: r.tolerance.map_or(SimDuration::ZERO, |d| d.0),
    }))
}

fn replica_set_assertion(v: &Value, path: &str) -> Result<Assertion, FieldError> {
    let r: ReplicaSetAssertRaw = de(v, path)?;
    let (namespace, name) = pod_ref(&r.replica_set, &join(path, "replicaSet"))?;
    Ok(Assertion::ReplicaSet(ReplicaSetAssertion {
        namespace,
        name,
        exists: r.exists,
        replicas: r.replicas,
        ready_replicas: r.ready_replicas,
        available_replicas: r.available_replicas,
    }))
}

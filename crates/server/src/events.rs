//! Kubernetes events: what the components record ([`EventRecord`]) becomes a `v1` Event object
//! in the involved object's namespace, named as client-go's recorder names it
//! (`<object>.<hex nanoseconds>`), so `kubectl describe` and `kubectl events` show it.

use std::sync::Arc;

use jiff::Timestamp;
use kubeplane_api::types::BUILTIN;
use kubeplane_api::{DynamicObject, Kind, Object};
use kubeplane_core::EventRecord;
use serde_json::json;

/// The core `v1` Event kind.
pub fn event_kind() -> Kind {
    Kind::Other(
        BUILTIN
            .iter()
            .find(|t| t.kind == "Event" && t.group.is_empty())
            .expect("the built-in table has v1 Event"),
    )
}

/// The Event object of a recorded event at `at`, involving the object in `uid` (when known).
pub fn event_object(ev: &EventRecord, at: Timestamp, uid: Option<&str>) -> Object {
    let namespace = if ev.namespace().is_empty() {
        "default"
    } else {
        ev.namespace()
    };
    let nanos = at.as_nanosecond().max(0) as u128;
    let time = at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let micro = at.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string();
    let api_version = crate::request::all_kinds()
        .find(|k| k.as_str() == ev.kind())
        .map(|k| k.api_version())
        .unwrap_or("v1");
    let mut involved = json!({
        "kind": ev.kind(),
        "name": ev.name(),
        "apiVersion": api_version,
    });
    if !ev.namespace().is_empty() {
        involved["namespace"] = ev.namespace().into();
    }
    if let Some(uid) = uid {
        involved["uid"] = uid.into();
    }
    let value = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": format!("{}.{nanos:x}", ev.name()), "namespace": namespace},
        "involvedObject": involved,
        "reason": ev.reason(),
        "message": ev.message(),
        "type": ev.type_(),
        "source": {"component": ev.source()},
        "reportingComponent": ev.source(),
        "reportingInstance": "kubeplane",
        "firstTimestamp": time,
        "lastTimestamp": time,
        "eventTime": micro,
        "count": 1,
    });
    let Kind::Other(t) = event_kind() else {
        unreachable!()
    };
    Object::Other(Arc::new(
        DynamicObject::from_value(t, &value).expect("an event's metadata is valid"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeplane_core::SimTime;

    #[test]
    fn a_scheduling_event_becomes_a_v1_event_about_the_pod() {
        let ev = EventRecord::normal(
            SimTime::ZERO,
            "default-scheduler",
            "Pod",
            "default",
            "web-0",
            "Scheduled",
            "Successfully assigned default/web-0 to n1".into(),
        );
        let o = event_object(&ev, Timestamp::UNIX_EPOCH, Some("u1")).to_json();
        assert_eq!(o["metadata"]["namespace"], "default");
        assert_eq!(o["metadata"]["name"], "web-0.0");
        assert_eq!(o["involvedObject"]["uid"], "u1");
        assert_eq!(o["involvedObject"]["apiVersion"], "v1");
        assert_eq!(o["source"]["component"], "default-scheduler");
        assert_eq!(o["firstTimestamp"], "1970-01-01T00:00:00Z");
    }
}

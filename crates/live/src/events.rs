//! The scheduler's events as `events.k8s.io/v1` Events, as client-go's `tools/events` recorder
//! writes them for kube-scheduler: named `<object>.<hex nanoseconds>`, `reportingController`
//! the profile's scheduler name (`default-scheduler` for the default profile),
//! `reportingInstance` `<controller>-<hostname>`, upstream's action per reason, the message as
//! the `note` (at most 1 kB, as the API validates it). They are created by a task of their own
//! (upstream's broadcaster): recording never waits on the network, and a failed create is
//! logged and dropped.
//!
//! The controller manager's controllers record `v1` Events instead, as client-go's
//! `tools/record` recorder writes them for kube-controller-manager ([`core_event_object`]).

use jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::core::DynamicObject;
use kubeplane_core::EventRecord;
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

/// The host name (the `HOSTNAME` variable, `/etc/hostname`, or `localhost`).
pub fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Upstream's action of a scheduler event reason.
fn action(reason: &str) -> &'static str {
    match reason {
        "Scheduled" => "Binding",
        "Preempted" => "Preempting",
        _ => "Scheduling",
    }
}

/// The longest note the API accepts (upstream `NoteLengthLimit`).
const NOTE_LIMIT: usize = 1024;

fn truncate(s: &str, limit: usize) -> &str {
    if s.len() <= limit {
        return s;
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The Event of a recorded event at `at`, reported by `controller`, about an object with
/// `uid` (when known).
pub fn event_object(
    ev: &EventRecord,
    at: Timestamp,
    controller: &str,
    host: &str,
    uid: Option<&str>,
) -> Value {
    let namespace = if ev.namespace().is_empty() {
        "default"
    } else {
        ev.namespace()
    };
    let nanos = at.as_nanosecond().max(0) as u128;
    let mut regarding = json!({"kind": ev.kind(), "name": ev.name(), "apiVersion": "v1"});
    if !ev.namespace().is_empty() {
        regarding["namespace"] = ev.namespace().into();
    }
    if let Some(uid) = uid.filter(|u| !u.is_empty()) {
        regarding["uid"] = uid.into();
    }
    json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": format!("{}.{nanos:x}", ev.name()), "namespace": namespace},
        "eventTime": at.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string(),
        "reportingController": controller,
        "reportingInstance": format!("{controller}-{host}"),
        "action": action(ev.reason()),
        "reason": ev.reason(),
        "note": truncate(ev.message(), NOTE_LIMIT),
        "type": ev.type_(),
        "regarding": regarding,
    })
}

/// The `v1` Event of an event a controller recorded at `at` (client-go `tools/record`:
/// named `<object>.<hex nanoseconds>`, `source.component` the controller's name, which is
/// also the `reportingComponent`; count 1), about an object with `uid` and `api_version`.
pub fn core_event_object(
    ev: &EventRecord,
    at: Timestamp,
    api_version: &str,
    uid: Option<&str>,
) -> Value {
    let namespace = if ev.namespace().is_empty() {
        "default"
    } else {
        ev.namespace()
    };
    let nanos = at.as_nanosecond().max(0) as u128;
    let mut involved = json!({"kind": ev.kind(), "name": ev.name(), "apiVersion": api_version});
    if !ev.namespace().is_empty() {
        involved["namespace"] = ev.namespace().into();
    }
    if let Some(uid) = uid.filter(|u| !u.is_empty()) {
        involved["uid"] = uid.into();
    }
    let time = at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": format!("{}.{nanos:x}", ev.name()), "namespace": namespace},
        "involvedObject": involved,
        "reason": ev.reason(),
        "message": ev.message(),
        "source": {"component": ev.source()},
        "firstTimestamp": time,
        "lastTimestamp": time,
        "count": 1,
        "type": ev.type_(),
        "reportingComponent": ev.source(),
        "reportingInstance": "",
    })
}

/// Creates the events it is sent (`events.k8s.io/v1` or `v1`, as each says) until the sending
/// side closes; `who` names the component in log lines.
pub async fn send_events(
    client: kube::Client,
    mut rx: UnboundedReceiver<Value>,
    who: &'static str,
) {
    let new_gvk = kube::core::GroupVersionKind::gvk("events.k8s.io", "v1", "Event");
    let new = kube::core::ApiResource::from_gvk_with_plural(&new_gvk, "events");
    let core_gvk = kube::core::GroupVersionKind::gvk("", "v1", "Event");
    let core = kube::core::ApiResource::from_gvk_with_plural(&core_gvk, "events");
    let mut failures = 0u64;
    while let Some(ev) = rx.recv().await {
        let namespace = ev["metadata"]["namespace"].as_str().unwrap_or("default");
        let resource = if ev["apiVersion"] == "v1" {
            &core
        } else {
            &new
        };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, resource);
        let Ok(obj) = serde_json::from_value::<DynamicObject>(ev.clone()) else {
            continue;
        };
        if let Err(e) = api.create(&PostParams::default(), &obj).await {
            failures += 1;
            if failures <= 10 || failures.is_power_of_two() {
                eprintln!("{who}: recording an event ({failures} failed so far): {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kubeplane_core::SimTime;

    use super::*;

    #[test]
    fn a_failed_scheduling_becomes_an_events_k8s_io_event_about_the_pod() {
        let ev = EventRecord::warning(
            SimTime::ZERO,
            "default-scheduler",
            "Pod",
            "default",
            "big",
            "FailedScheduling",
            "0/3 nodes are available: 3 Insufficient cpu.".into(),
        );
        let at = Timestamp::from_nanosecond(1_700_000_000_123_456_789).unwrap();
        let o = event_object(&ev, at, "kubeplane-live", "h1", Some("u1"));
        assert_eq!(o["apiVersion"], "events.k8s.io/v1");
        assert_eq!(o["metadata"]["name"], "big.17979cfe3d85cd15");
        assert_eq!(o["reportingController"], "kubeplane-live");
        assert_eq!(o["reportingInstance"], "kubeplane-live-h1");
        assert_eq!(o["action"], "Scheduling");
        assert_eq!(o["note"], ev.message());
        assert_eq!(o["regarding"]["uid"], "u1");
        assert_eq!(o["eventTime"], "2023-11-14T22:13:20.123456Z");
    }

    #[test]
    fn a_long_note_is_cut_at_the_limit_on_a_character_boundary() {
        let long = "é".repeat(600);
        let cut = truncate(&long, NOTE_LIMIT);
        assert_eq!(cut.len(), NOTE_LIMIT);
        assert_eq!(truncate("short", NOTE_LIMIT), "short");
    }

    #[test]
    fn a_controllers_event_is_a_core_v1_event_from_its_component() {
        let ev = EventRecord::normal(
            SimTime::ZERO,
            "replicaset-controller",
            "ReplicaSet",
            "default",
            "web-1",
            "SuccessfulCreate",
            "Created pod: web-1-abcde".into(),
        );
        let at = Timestamp::from_nanosecond(1_700_000_000_123_456_789).unwrap();
        let o = core_event_object(&ev, at, "apps/v1", Some("u2"));
        assert_eq!(o["apiVersion"], "v1");
        assert_eq!(o["metadata"]["name"], "web-1.17979cfe3d85cd15");
        assert_eq!(o["source"]["component"], "replicaset-controller");
        assert_eq!(o["involvedObject"]["apiVersion"], "apps/v1");
        assert_eq!(o["involvedObject"]["uid"], "u2");
        assert_eq!(o["firstTimestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(o["count"], 1);
    }
}

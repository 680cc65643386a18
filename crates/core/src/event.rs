//! A Kubernetes Event as the control plane records it (one record per occurrence).

use serde::Serialize;

use crate::SimTime;

/// One recorded Kubernetes event. Field order is the output order of the jsonl record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRecord {
    pub time: SimTime,
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    pub reason: String,
    /// Kind of the involved object (`Pod`, `Node`, `ReplicaSet`, ...).
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub message: String,
    /// The component that recorded it (`default-scheduler`, `taint-eviction-controller`, ...).
    pub source: &'static str,
}

#[derive(Serialize)]
struct EventJson<'a> {
    time: f64,
    #[serde(rename = "type")]
    type_: &'a str,
    reason: &'a str,
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
    message: &'a str,
}

impl EventRecord {
    pub fn normal(
        time: SimTime,
        source: &'static str,
        kind: &'static str,
        namespace: &str,
        name: &str,
        reason: &str,
        message: String,
    ) -> Self {
        EventRecord {
            time,
            type_: "Normal",
            reason: reason.to_string(),
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
            message,
            source,
        }
    }

    pub fn warning(
        time: SimTime,
        source: &'static str,
        kind: &'static str,
        namespace: &str,
        name: &str,
        reason: &str,
        message: String,
    ) -> Self {
        EventRecord {
            type_: "Warning",
            ..Self::normal(time, source, kind, namespace, name, reason, message)
        }
    }

    /// The jsonl form: `{"time":30.0,"type":"Normal","reason":...,"message":...}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(EventJson {
            time: self.time.as_secs_f64(),
            type_: self.type_,
            reason: &self.reason,
            kind: self.kind,
            namespace: &self.namespace,
            name: &self.name,
            message: &self.message,
        })
        .expect("event serializes")
    }
}

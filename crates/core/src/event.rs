//! A Kubernetes Event as the control plane records it (one record per occurrence).

use std::borrow::Cow;

use serde::Serialize;

use crate::SimTime;

/// One recorded Kubernetes event. Field order is the output order of the jsonl record.
///
/// The sim keeps every event in an `Arc` for the whole run (half a million at the envelope's
/// full size), so the record is sized for mimalloc's 160-byte class with the `Arc`'s two
/// counts: 144 bytes (the unit test below holds it there). An owned `String` for both the
/// reason and the message made it 152, the 192 class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRecord {
    pub time: SimTime,
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    /// Nearly always a constant of the recorder (`Scheduled`, `SuccessfulCreate`): borrowed, it
    /// costs no allocation; owned only when it comes from an object (a Job's FailureTarget
    /// condition's reason).
    pub reason: Cow<'static, str>,
    /// Kind of the involved object (`Pod`, `Node`, `ReplicaSet`, ...).
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    /// Never changed once recorded: a `Box<str>` has no spare capacity to keep.
    pub message: Box<str>,
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
        reason: impl Into<Cow<'static, str>>,
        message: String,
    ) -> Self {
        EventRecord {
            time,
            type_: "Normal",
            reason: reason.into(),
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
            message: message.into_boxed_str(),
            source,
        }
    }

    pub fn warning(
        time: SimTime,
        source: &'static str,
        kind: &'static str,
        namespace: &str,
        name: &str,
        reason: impl Into<Cow<'static, str>>,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// With `Arc`'s two counts the record must stay within mimalloc's 160-byte class: a field
    /// added or widened here moves every recorded event to the 192 class.
    #[test]
    fn an_arced_record_fits_the_160_byte_class() {
        let arc_counts = 2 * std::mem::size_of::<usize>();
        assert_eq!(std::mem::size_of::<EventRecord>(), 144);
        assert!(std::mem::size_of::<EventRecord>() + arc_counts <= 160);
    }
}

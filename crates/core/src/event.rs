//! A Kubernetes Event as the control plane records it (one record per occurrence).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use rustc_hash::FxBuildHasher;
use serde::Serialize;

use crate::SimTime;

/// One recorded Kubernetes event: when, `Normal` or `Warning`, why (the reason), about what (the
/// involved object's kind, namespace and name), what happened (the message) and who recorded it
/// (the source). Read through the accessors; the output order of the jsonl record is
/// [`EventRecord::to_json`]'s.
///
/// The sim keeps every event in an `Arc` for the whole run (half a million at the envelope's
/// full size), so the record is compact: the constants of the recorder (type, source, kind and
/// a constant reason) are one shared [`Meta`], and the strings of the event itself (an owned
/// reason, the namespace, the name and the message) one allocation with their lengths beside
/// it. 48 bytes, so the `Arc` block with its two counts is in mimalloc's 64-byte class (the
/// unit test below holds it there); the record with a field each was 144 bytes and three
/// strings, the 160-byte class.
#[derive(Clone)]
pub struct EventRecord {
    time: SimTime,
    meta: &'static Meta,
    /// The owned reason (when `meta.reason` is `None`), namespace, name and message, in that
    /// order; the message is the rest after the three lengths below.
    text: Box<str>,
    reason_len: u32,
    namespace_len: u32,
    name_len: u32,
}

/// The part of an event its recorder's constants decide: few distinct values in a run, each
/// kept once in [`intern`]'s table.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Meta {
    warning: bool,
    /// The component that recorded it (`default-scheduler`, `taint-eviction-controller`, ...).
    source: &'static str,
    /// Kind of the involved object (`Pod`, `Node`, `ReplicaSet`, ...).
    kind: &'static str,
    /// Nearly always a constant of the recorder (`Scheduled`, `SuccessfulCreate`); `None` when
    /// it comes from an object (a Job's FailureTarget condition's reason) and is in the text.
    reason: Option<&'static str>,
}

/// The one shared `Meta` with these values. The table only grows, by the recorders' distinct
/// constants (dozens in a run): the leaked entries are what lets a record hold 8 bytes for
/// them and read them without a lock. Which entry a record points at never prints.
fn intern(meta: Meta) -> &'static Meta {
    static TABLE: Mutex<Option<HashMap<&'static Meta, (), FxBuildHasher>>> = Mutex::new(None);
    let mut table = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
    let table = table.get_or_insert_with(HashMap::default);
    if let Some((&m, _)) = table.get_key_value(&meta) {
        return m;
    }
    let m: &'static Meta = Box::leak(Box::new(meta));
    table.insert(m, ());
    m
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

/// A string's length as a record keeps it. Object names and namespaces are at most 253 bytes
/// and reasons short; 4 GiB would be a broken input, not an event.
fn len32(s: &str) -> u32 {
    u32::try_from(s.len()).expect("an event's reason, namespace and name are under 4 GiB")
}

impl EventRecord {
    /// A `Normal` event.
    pub fn normal(
        time: SimTime,
        source: &'static str,
        kind: &'static str,
        namespace: &str,
        name: &str,
        reason: impl Into<Cow<'static, str>>,
        message: String,
    ) -> Self {
        Self::new(
            time,
            false,
            source,
            kind,
            namespace,
            name,
            reason.into(),
            &message,
        )
    }

    /// A `Warning` event.
    pub fn warning(
        time: SimTime,
        source: &'static str,
        kind: &'static str,
        namespace: &str,
        name: &str,
        reason: impl Into<Cow<'static, str>>,
        message: String,
    ) -> Self {
        Self::new(
            time,
            true,
            source,
            kind,
            namespace,
            name,
            reason.into(),
            &message,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn new(
        time: SimTime,
        warning: bool,
        source: &'static str,
        kind: &'static str,
        namespace: &str,
        name: &str,
        reason: Cow<'static, str>,
        message: &str,
    ) -> Self {
        let (static_reason, owned_reason) = match reason {
            Cow::Borrowed(r) => (Some(r), ""),
            Cow::Owned(ref r) => (None, r.as_str()),
        };
        let meta = intern(Meta {
            warning,
            source,
            kind,
            reason: static_reason,
        });
        let mut text = String::with_capacity(
            owned_reason.len() + namespace.len() + name.len() + message.len(),
        );
        for part in [owned_reason, namespace, name, message] {
            text.push_str(part);
        }
        EventRecord {
            time,
            meta,
            text: text.into_boxed_str(),
            reason_len: len32(owned_reason),
            namespace_len: len32(namespace),
            name_len: len32(name),
        }
    }

    /// When it was recorded.
    pub fn time(&self) -> SimTime {
        self.time
    }

    /// `Normal` or `Warning`.
    pub fn type_(&self) -> &'static str {
        if self.meta.warning {
            "Warning"
        } else {
            "Normal"
        }
    }

    /// Why (`Scheduled`, `SuccessfulCreate`, ...).
    pub fn reason(&self) -> &str {
        match self.meta.reason {
            Some(r) => r,
            None => &self.text[..self.reason_len as usize],
        }
    }

    /// Kind of the involved object (`Pod`, `Node`, `ReplicaSet`, ...).
    pub fn kind(&self) -> &'static str {
        self.meta.kind
    }

    /// The involved object's namespace (empty for a cluster-scoped object).
    pub fn namespace(&self) -> &str {
        let start = self.reason_len as usize;
        &self.text[start..start + self.namespace_len as usize]
    }

    /// The involved object's name.
    pub fn name(&self) -> &str {
        let start = (self.reason_len + self.namespace_len) as usize;
        &self.text[start..start + self.name_len as usize]
    }

    /// What happened.
    pub fn message(&self) -> &str {
        &self.text[(self.reason_len + self.namespace_len + self.name_len) as usize..]
    }

    /// The component that recorded it (`default-scheduler`, `taint-eviction-controller`, ...).
    pub fn source(&self) -> &'static str {
        self.meta.source
    }

    /// The jsonl form: `{"time":30.0,"type":"Normal","reason":...,"message":...}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(EventJson {
            time: self.time.as_secs_f64(),
            type_: self.type_(),
            reason: self.reason(),
            kind: self.kind(),
            namespace: self.namespace(),
            name: self.name(),
            message: self.message(),
        })
        .expect("event serializes")
    }
}

/// By the fields, not the packed form: a constant reason equals the same reason owned.
impl PartialEq for EventRecord {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time
            && self.meta.warning == other.meta.warning
            && self.source() == other.source()
            && self.kind() == other.kind()
            && self.reason() == other.reason()
            && self.namespace() == other.namespace()
            && self.name() == other.name()
            && self.message() == other.message()
    }
}

impl Eq for EventRecord {}

/// The fields as the record had them, not its packed form.
impl fmt::Debug for EventRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventRecord")
            .field("time", &self.time)
            .field("type_", &self.type_())
            .field("reason", &self.reason())
            .field("kind", &self.kind())
            .field("namespace", &self.namespace())
            .field("name", &self.name())
            .field("message", &self.message())
            .field("source", &self.source())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With `Arc`'s two counts the record must stay within mimalloc's 64-byte class: a field
    /// added or widened here moves every recorded event to the 80 class.
    #[test]
    fn an_arced_record_fits_the_64_byte_class() {
        let arc_counts = 2 * std::mem::size_of::<usize>();
        assert_eq!(std::mem::size_of::<EventRecord>(), 48);
        assert!(std::mem::size_of::<EventRecord>() + arc_counts <= 64);
    }

    #[test]
    fn every_field_reads_back_as_given() {
        let t = SimTime(30_000_000_000);
        let a = EventRecord::normal(t, "rs", "ReplicaSet", "ns1", "web", "Created", "m 1".into());
        let b = EventRecord::warning(t, "job", "Job", "", "j", String::from("Own"), "".into());
        assert_eq!(
            (a.time(), a.type_(), a.reason(), a.kind()),
            (t, "Normal", "Created", "ReplicaSet")
        );
        assert_eq!(
            (a.namespace(), a.name(), a.message(), a.source()),
            ("ns1", "web", "m 1", "rs")
        );
        assert_eq!((b.type_(), b.reason(), b.kind()), ("Warning", "Own", "Job"));
        assert_eq!(
            (b.namespace(), b.name(), b.message(), b.source()),
            ("", "j", "", "job")
        );
        let json = a.to_json().to_string();
        assert_eq!(
            json,
            r#"{"time":30.0,"type":"Normal","reason":"Created","kind":"ReplicaSet","namespace":"ns1","name":"web","message":"m 1"}"#
        );
    }

    /// A constant reason and the same reason owned are the same event.
    #[test]
    fn records_compare_by_their_fields() {
        let t = SimTime::ZERO;
        let a = EventRecord::normal(t, "s", "Pod", "ns", "p", "R", "m".into());
        let b = EventRecord::normal(t, "s", "Pod", "ns", "p", String::from("R"), "m".into());
        let c = EventRecord::normal(t, "s", "Pod", "n", "sp", "R", "m".into());
        assert_eq!(a.clone(), a);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}

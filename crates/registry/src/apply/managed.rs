//! `metadata.managedFields`: one entry per manager (its name, the operation, `Apply` or
//! `Update`, the API version, the subresource), with the time of its last change and the
//! fields it owns in the FieldsV1 encoding. Two entries are the same manager when name,
//! operation and subresource agree and, for `Update`, the API version too (upstream's manager
//! identifier leaves the version out of an `Apply`'s).

use serde_json::{json, Map, Value};

use super::fieldpath::{self, Set};

/// The operation an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One managedFields entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    /// RFC 3339 in seconds, as metav1.Time writes it.
    pub time: Option<String>,
    /// Empty for the main resource.
    pub subresource: String,
    pub fields: Set,
}

impl Entry {
    /// Whether `other` is the same manager (upstream's manager identifier).
    pub fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    /// The manager as conflicts name it (upstream's `printManager`):
    /// `"kubectl" using apps/v1`, `"kubelet" with subresource "status" using v1`, `"web"`.
    pub fn describe(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), self.manager.clone().into());
        m.insert("operation".into(), self.operation.as_str().into());
        m.insert("apiVersion".into(), self.api_version.clone().into());
        if let Some(t) = &self.time {
            m.insert("time".into(), t.clone().into());
        }
        m.insert("fieldsType".into(), "FieldsV1".into());
        m.insert("fieldsV1".into(), fieldpath::to_fields_v1(&self.fields));
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), self.subresource.clone().into());
        }
        Value::Object(m)
    }

    fn from_json(v: &Value) -> Option<Entry> {
        let s = |name: &str| {
            v.get(name)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let operation = match s("operation").as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return None,
        };
        if s("fieldsType") != "FieldsV1" {
            return None;
        }
        Some(Entry {
            manager: s("manager"),
            operation,
            api_version: s("apiVersion"),
            time: v.get("time").and_then(Value::as_str).map(str::to_string),
            subresource: s("subresource"),
            fields: fieldpath::from_fields_v1(v.get("fieldsV1").unwrap_or(&json!({})))?,
        })
    }
}

/// An object's `metadata.managedFields`: `None` when the field is absent or does not decode,
/// `Some(vec![])` for an explicit empty list (which resets them).
pub fn read(obj: &Value) -> Option<Vec<Entry>> {
    let list = obj.pointer("/metadata/managedFields")?.as_array()?;
    list.iter().map(Entry::from_json).collect()
}

/// The entries in upstream's order (operation, Apply first; time; manager; API version;
/// subresource), as JSON.
pub fn encode(entries: &[Entry]) -> Value {
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| {
        (
            a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    Value::Array(sorted.into_iter().map(Entry::to_json).collect())
}

/// Writes the entries into the object (none: the field is removed).
pub fn write(obj: &mut Value, entries: &[Entry]) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if entries.is_empty() {
        meta.shift_remove("managedFields");
    } else {
        meta.insert("managedFields".into(), encode(entries));
    }
}

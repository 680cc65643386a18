//! Why a strategic merge patch fails, with upstream's messages
//! (apimachinery/pkg/util/mergepatch/errors.go and strategicpatch/patch.go) and Go's `%v`
//! rendering of decoded JSON, which those messages embed.

use serde_json::{Map, Value};

pub(crate) const BAD_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
pub(crate) const BAD_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
pub(crate) const BAD_SET_ELEMENT_ORDER: &str = "invalid patch format of setElementOrder list";
pub(crate) const NO_LIST_OF_LISTS: &str = "lists of lists are not supported";
pub(crate) const MERGE_IN_LIST: &str = "merging lists cannot yet be specified in the patch";
pub(crate) const NO_ELEMENTS: &str = "no elements in any of the given slices";

/// A failed strategic merge patch, classified as the API server classifies it
/// (`interpretStrategicMergePatchError` in apiserver's handlers/patch.go).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SmpError {
    /// A malformed patch the server names: 400 BadRequest with this message.
    BadRequest(String),
    /// A patch the server cannot process (lists of lists): 422 with the generic message;
    /// upstream's own message is kept here for tests and logs.
    Unprocessable(String),
    /// Any other failure: upstream passes it on unclassified, a 500 with this message.
    Other(String),
}

impl SmpError {
    pub(crate) fn bad_request(message: &str) -> Self {
        SmpError::BadRequest(message.to_string())
    }

    /// `ErrNoMergeKey`.
    pub(crate) fn no_merge_key(map: &Map<String, Value>, key: &str) -> Self {
        SmpError::Other(format!(
            "map: {} does not contain declared merge key: {key}",
            go_map(map)
        ))
    }

    /// `ErrBadPatchType`.
    pub(crate) fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> Self {
        SmpError::Other(format!(
            "unknown patch type: {} in map: {}",
            go_value(directive),
            go_map(map)
        ))
    }

    /// `ErrBadArgType`: `expected` is a Go type name.
    pub(crate) fn bad_arg_type(expected: &str, actual: Option<&Value>) -> Self {
        SmpError::Other(format!(
            "expected a {expected}, but received a {}",
            go_type(actual)
        ))
    }
}

pub(crate) const GO_MAP: &str = "map[string]interface {}";
pub(crate) const GO_SLICE: &str = "[]interface {}";

/// The Go type a decoded JSON value has (the server decodes integers as int64).
pub(crate) fn go_type(v: Option<&Value>) -> &'static str {
    match v {
        None | Some(Value::Null) => "%!s(<nil>)",
        Some(Value::Bool(_)) => "bool",
        Some(Value::Number(n)) if n.is_i64() => "int64",
        Some(Value::Number(_)) => "float64",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => GO_SLICE,
        Some(Value::Object(_)) => GO_MAP,
    }
}

/// Go's `%v` of a decoded JSON value: `map[k:v ...]` with sorted keys, `[a b]`, `<nil>`.
pub(crate) fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => go_list(items),
        Value::Object(map) => go_map(map),
    }
}

pub(crate) fn go_list(items: &[Value]) -> String {
    let inner: Vec<String> = items.iter().map(go_value).collect();
    format!("[{}]", inner.join(" "))
}

fn go_map(map: &Map<String, Value>) -> String {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let inner: Vec<String> = entries
        .into_iter()
        .map(|(k, v)| format!("{k}:{}", go_value(v)))
        .collect();
    format!("map[{}]", inner.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_render_as_gos_percent_v() {
        for (v, want) in [
            (json!(null), "<nil>"),
            (json!({"b": [1, "x"], "a": true}), "map[a:true b:[1 x]]"),
            (json!(1.5), "1.5"),
        ] {
            assert_eq!(go_value(&v), want);
        }
        let map = json!({"value": "a"});
        assert_eq!(
            SmpError::no_merge_key(map.as_object().unwrap(), "name"),
            SmpError::Other("map: map[value:a] does not contain declared merge key: name".into())
        );
    }
}

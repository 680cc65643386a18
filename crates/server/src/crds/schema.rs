//! A custom resource checked against its version's `openAPIV3Schema`, as apiextensions-apiserver
//! does: pruning first (fields the structural schema does not declare are dropped, unless
//! `x-kubernetes-preserve-unknown-fields: true`; `apiVersion`, `kind` and `metadata` at the
//! root are always kept), then validation of the common keywords (`type`, `nullable`,
//! `required`, `properties`, `additionalProperties`, `items`, `enum`, `minimum`/`maximum` and
//! their exclusive forms, `minLength`/`maxLength`, `minItems`/`maxItems`, `pattern` through the
//! `regex` crate, `x-kubernetes-int-or-string`), with upstream's field paths and messages
//! (kube-openapi's errors as `kubeOpenAPIResultToFieldErrors` turns them into `field.Error`s).
//!
//! A small validator written for these keywords: no JSON Schema crate speaks the structural
//! schema's extensions or upstream's messages. Keywords outside the list (`oneOf`, `anyOf`,
//! `allOf`, `not`, `format`, CEL `x-kubernetes-validations`, defaults) are not checked.

use kubeplane_registry::validation::{quote, ErrorType, FieldError};
use serde_json::{Map, Value};

/// A schema's flag (`nullable`, `x-kubernetes-preserve-unknown-fields`, ...).
fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// Drops the fields the schema does not declare; returns their paths (for `fieldValidation`
/// warnings or errors), in the order met.
pub fn prune(schema: &Value, value: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    if let Some(m) = value.as_object_mut() {
        let root_kept = ["apiVersion", "kind", "metadata"];
        prune_object(schema, m, "", &root_kept, &mut unknown);
    }
    unknown
}

fn prune_object(
    schema: &Value,
    m: &mut Map<String, Value>,
    path: &str,
    kept: &[&str],
    unknown: &mut Vec<String>,
) {
    let props = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields")
        || schema.get("additionalProperties") == Some(&Value::Bool(true));
    let embedded = flag(schema, "x-kubernetes-embedded-resource");
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        let sub = props.and_then(|p| p.get(&k)).or(additional);
        let always = kept.contains(&k.as_str())
            || (embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"));
        match sub {
            Some(s) => {
                if let Some(v) = m.get_mut(&k) {
                    prune_value(s, v, &join(path, &k), unknown);
                }
            }
            None if always || preserve => {}
            None => {
                m.remove(&k);
                unknown.push(join(path, &k));
            }
        }
    }
}

fn prune_value(schema: &Value, v: &mut Value, path: &str, unknown: &mut Vec<String>) {
    match v {
        Value::Object(m) => prune_object(schema, m, path, &[], unknown),
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_value(s, item, &format!("{path}[{i}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

/// go-openapi's name of a JSON value's type.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether a value is of a schema type.
fn is_type(v: &Value, ty: &str) -> bool {
    match ty {
        "number" => v.is_number(),
        "integer" => type_name(v) == "integer",
        other => type_name(v) == other,
    }
}

/// A number as Go's `%v` prints a float64 (`10`, `2.5`).
fn number(n: &Value) -> String {
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        Some(f) => f.to_string(),
        None => n.to_string(),
    }
}

/// A value as a field error prints it (strings quoted, numbers plain).
fn printed(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        other => other.to_string(),
    }
}

/// Every problem of `value` against `schema`, with paths under `path` (the root is `""`).
pub fn validate(schema: &Value, value: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    check(schema, value, path, true, &mut errs);
    errs
}

fn check(schema: &Value, v: &Value, path: &str, root: bool, errs: &mut Vec<FieldError>) {
    if v.is_null() && (flag(schema, "nullable") || schema.get("type").is_none()) {
        return;
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        if !(v.is_string() || type_name(v) == "integer") {
            let message = format!(
                "{path} in body must be of type integer,string: {:?}",
                type_name(v)
            );
            errs.push(FieldError::invalid(path, quote(type_name(v)), &message));
            return;
        }
    } else if let Some(ty) = schema.get("type").and_then(Value::as_str) {
        if !is_type(v, ty) {
            let message = format!("{path} in body must be of type {ty}: {:?}", type_name(v));
            errs.push(FieldError::invalid(path, quote(type_name(v)), &message));
            return;
        }
    }
    check_enum(schema, v, path, errs);
    match v {
        Value::Object(m) => check_object(schema, m, path, root, errs),
        Value::Array(items) => check_array(schema, items, path, errs),
        Value::String(s) => check_string(schema, s, path, errs),
        Value::Number(_) => check_number(schema, v, path, errs),
        _ => {}
    }
}

fn check_enum(schema: &Value, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(allowed) = schema.get("enum").and_then(Value::as_array) else {
        return;
    };
    if allowed.contains(v) {
        return;
    }
    let values: Vec<String> = allowed
        .iter()
        .map(|a| match a {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    let shown = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    errs.push(FieldError::not_supported(path, &shown, &refs));
}

fn check_object(
    schema: &Value,
    m: &Map<String, Value>,
    path: &str,
    root: bool,
    errs: &mut Vec<FieldError>,
) {
    for r in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(r) = r.as_str() else { continue };
        if !m.contains_key(r) {
            errs.push(FieldError::required(join(path, r), ""));
        }
    }
    let props = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    for (k, v) in m {
        if root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(s) = props.and_then(|p| p.get(k)).or(additional) {
            check(s, v, &join(path, k), false, errs);
        }
    }
}

fn check_array(schema: &Value, items: &[Value], path: &str, errs: &mut Vec<FieldError>) {
    let n = items.len() as u64;
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
        if n > max {
            errs.push(FieldError {
                field: path.to_string(),
                type_: ErrorType::TooMany,
                value: Some(n.to_string()),
                detail: format!("must have at most {max} items"),
            });
        }
    }
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
        if n < min {
            let message = format!("{path} in body should have at least {min} items");
            errs.push(FieldError::invalid(path, n.to_string(), &message));
        }
    }
    if let Some(s) = schema.get("items") {
        for (i, item) in items.iter().enumerate() {
            check(s, item, &format!("{path}[{i}]"), false, errs);
        }
    }
}

fn check_string(schema: &Value, s: &str, path: &str, errs: &mut Vec<FieldError>) {
    let chars = s.chars().count() as u64;
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
        if chars > max {
            let unit = if max == 1 { "byte" } else { "bytes" };
            errs.push(FieldError::too_long(
                path,
                &format!("may not be more than {max} {unit}"),
            ));
        }
    }
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
        if chars < min {
            let message = format!("{path} in body should be at least {min} chars long");
            errs.push(FieldError::invalid(path, quote(s), &message));
        }
    }
    if let Some(p) = schema.get("pattern").and_then(Value::as_str) {
        if regex::Regex::new(p).is_ok_and(|re| !re.is_match(s)) {
            let message = format!("{path} in body should match '{p}'");
            errs.push(FieldError::invalid(path, quote(s), &message));
        }
    }
}

fn check_number(schema: &Value, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(x) = v.as_f64() else { return };
    if let Some(max) = schema.get("maximum") {
        let exclusive = flag(schema, "exclusiveMaximum");
        let m = max.as_f64().unwrap_or(f64::INFINITY);
        if x > m || (exclusive && x == m) {
            let rel = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            let message = format!("{path} in body should be {rel} {}", number(max));
            errs.push(FieldError::invalid(path, printed(v), &message));
        }
    }
    if let Some(min) = schema.get("minimum") {
        let exclusive = flag(schema, "exclusiveMinimum");
        let m = min.as_f64().unwrap_or(f64::NEG_INFINITY);
        if x < m || (exclusive && x == m) {
            let rel = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let message = format!("{path} in body should be {rel} {}", number(min));
            errs.push(FieldError::invalid(path, printed(v), &message));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
                "note": {"type": "string", "nullable": true},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true}}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}})
    }

    #[test]
    fn every_keyword_reports_upstreams_field_error() {
        for (spec, want) in [
            (json!({"size": "3"}), "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""),
            (json!({}), "spec.size: Required value"),
            (json!({"size": 11}), "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"),
            (json!({"size": 0}), "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"),
            (json!({"size": 2, "color": "pink"}), "spec.color: Unsupported value: \"pink\": supported values: \"red\", \"blue\""),
            (json!({"size": 2, "name": "abcdef"}), "spec.name: Too long: may not be more than 5 bytes"),
            (json!({"size": 2, "name": "ab1"}), "spec.name: Invalid value: \"ab1\": spec.name in body should match '^[a-z]+$'"),
            (json!({"size": 2, "tags": ["a", "b", "c"]}), "spec.tags: Too many: 3: must have at most 2 items"),
            (json!({"size": 2, "tags": [1]}), "spec.tags[0]: Invalid value: \"integer\": spec.tags[0] in body must be of type string: \"integer\""),
            (json!({"size": 2, "port": true}), "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""),
        ] {
            let errs = validate(&schema(), &json!({"spec": spec}), "");
            let got: Vec<String> = errs.iter().map(ToString::to_string).collect();
            assert_eq!(got, vec![want.to_string()]);
        }
    }

    #[test]
    fn valid_values_nullable_fields_and_int_or_string_pass() {
        let v = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w"},
                       "spec": {"size": 3, "note": null, "port": "http", "free": {"any": [1]}}});
        assert!(validate(&schema(), &v, "").is_empty());
    }

    #[test]
    fn pruning_drops_undeclared_fields_but_keeps_preserved_ones_and_the_root_metadata() {
        let mut v = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w"},
            "extra": 1, "spec": {"size": 3, "bogus": true, "free": {"kept": 1}},
            "status": {"ready": true, "phase": "x"}});
        let unknown = prune(&schema(), &mut v);
        assert_eq!(unknown, ["extra", "spec.bogus", "status.phase"]);
        assert_eq!(
            v,
            json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w"},
            "spec": {"size": 3, "free": {"kept": 1}}, "status": {"ready": true}})
        );
    }
}

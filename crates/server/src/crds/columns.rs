//! What a custom resource's definition says about printing and scaling it: the Table of its
//! `additionalPrinterColumns` (upstream's `tableconvertor` for custom resources: a `Name`
//! column, then each column's JSONPath; a definition without columns prints `Age`, as its
//! defaulting adds), and the `scale` subresource read from and written to the paths the
//! definition names (`specReplicasPath`, `statusReplicasPath`, `labelSelectorPath`).
//!
//! JSONPath here is the simple form columns use: `.a.b`, `.a[0]`, `.a[*]` (the first match)
//! and `.a[?(@.k=="v")].b` filters.

use kubeplane_api::Object;
use kubeplane_core::duration::human_duration;
use kubeplane_core::time::SimDuration;
use kubeplane_registry::printers::descriptions::META_NAME;
use kubeplane_registry::printers::{IncludeObject, TableOptions};
use serde_json::{json, Map, Value};

use super::Served;

/// One step of a simple JSONPath.
#[derive(Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    /// `[?(@.key=="value")]`
    Filter(String, String),
}

/// Parses `.a.b[0].c`, `{.a}`, `.a[?(@.type=="Ready")].status`; `None` for anything else.
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut steps = Vec::new();
    let mut rest = path.trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end > 0 {
                steps.push(Step::Field(r[..end].to_string()));
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = &r[end + 1..];
            steps.push(match inner {
                "*" => Step::All,
                f if f.starts_with("?(@.") => {
                    let cond = f.strip_prefix("?(@.")?.strip_suffix(')')?;
                    let (k, v) = cond.split_once("==")?;
                    let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
                    Step::Filter(k.trim().to_string(), v.to_string())
                }
                n => Step::Index(n.parse().ok()?),
            });
        } else {
            return None;
        }
    }
    Some(steps)
}

/// The first value a simple JSONPath finds in `v`.
pub fn find<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let steps = parse_path(path)?;
    walk(v, &steps)
}

fn walk<'a>(v: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    let Some((first, rest)) = steps.split_first() else {
        return Some(v);
    };
    match first {
        Step::Field(f) => walk(v.get(f)?, rest),
        Step::Index(i) => walk(v.get(*i)?, rest),
        Step::All => v.as_array()?.iter().find_map(|e| walk(e, rest)),
        Step::Filter(k, want) => v.as_array()?.iter().find_map(|e| {
            let matches = match e.get(k)? {
                Value::String(s) => s == want,
                other => serde_json::from_str::<Value>(want).ok().as_ref() == Some(other),
            };
            if matches {
                walk(e, rest)
            } else {
                None
            }
        }),
    }
}

/// The definition's columns at a version (`Age` when it names none).
fn columns(s: &Served, version: &str) -> Vec<Value> {
    let given = s
        .version(version)
        .and_then(|v| v.get("additionalPrinterColumns"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if given.is_empty() {
        return vec![
            json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
        ];
    }
    given
}

/// A cell as upstream's convertor makes it: strings printed, dates as ages, numbers and
/// booleans as they are, `null` when the path finds nothing.
fn cell(column: &Value, obj: &Value, now: jiff::Timestamp) -> Value {
    let path = column.get("jsonPath").and_then(Value::as_str).unwrap_or("");
    let Some(v) = find(obj, path) else {
        return Value::Null;
    };
    match column
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string")
    {
        "date" => match v.as_str().map(str::parse::<jiff::Timestamp>) {
            Some(Ok(t)) => {
                let nanos = now.as_duration().saturating_sub(t.as_duration()).as_nanos();
                human_duration(SimDuration(
                    nanos.clamp(i64::MIN as i128, i64::MAX as i128) as i64
                ))
                .into()
            }
            _ => "<invalid>".into(),
        },
        "string" => match v {
            Value::String(s) => s.clone().into(),
            other => other.to_string().into(),
        },
        "integer" => v.as_i64().map_or(Value::Null, Value::from),
        "number" => v.as_f64().map_or(Value::Null, Value::from),
        "boolean" => v.as_bool().map_or(Value::Null, Value::from),
        _ => v.clone(),
    }
}

/// The Table of custom resources of one type at `version`.
pub fn table(
    s: &Served,
    version: &str,
    objects: &[&Object],
    now: jiff::Timestamp,
    opts: &TableOptions,
) -> Value {
    let cols = columns(s, version);
    let mut defs = vec![json!({"name": "Name", "type": "string", "format": "name",
                              "description": META_NAME, "priority": 0})];
    for c in &cols {
        defs.push(json!({
            "name": c.get("name").cloned().unwrap_or_default(),
            "type": c.get("type").cloned().unwrap_or_default(),
            "format": c.get("format").cloned().unwrap_or("".into()),
            "description": c.get("description").cloned().unwrap_or("".into()),
            "priority": c.get("priority").cloned().unwrap_or(0.into()),
        }));
    }
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let v = o.to_json();
            let mut cells = vec![Value::from(o.name())];
            cells.extend(cols.iter().map(|c| cell(c, &v, now)));
            let object = match opts.include_object {
                IncludeObject::None => Value::Null,
                IncludeObject::Object => v,
                IncludeObject::Metadata => json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": opts.api_version,
                    "metadata": v.get("metadata").cloned().unwrap_or_default(),
                }),
            };
            json!({"cells": cells, "object": object})
        })
        .collect();
    let mut out = Map::new();
    out.insert("kind".into(), "Table".into());
    out.insert("apiVersion".into(), opts.api_version.into());
    out.insert("metadata".into(), json!({}));
    if !opts.no_headers {
        out.insert("columnDefinitions".into(), Value::Array(defs));
    }
    out.insert("rows".into(), Value::Array(rows));
    Value::Object(out)
}

/// A dotted path (`.spec.replicas`) as a JSON pointer (`/spec/replicas`).
fn pointer(path: &str) -> String {
    path.split('.')
        .filter(|p| !p.is_empty())
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// The definition's `scale` subresource at a version, when it has one.
pub fn scale_spec(s: &Served, version: &str) -> Option<Value> {
    s.subresource(version, "scale").cloned()
}

/// The `autoscaling/v1` Scale of a custom resource.
pub fn scale_of(spec: &Value, obj: &Object) -> Value {
    let v = obj.to_json();
    let path = |name: &str| spec.get(name).and_then(Value::as_str).map(pointer);
    let at = |name: &str| path(name).and_then(|p| v.pointer(&p).cloned());
    let meta = obj.meta();
    let mut status =
        json!({"replicas": at("statusReplicasPath").and_then(|r| r.as_i64()).unwrap_or(0)});
    if let Some(Value::String(sel)) = at("labelSelectorPath") {
        status["selector"] = sel.into();
    }
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            "name": meta.name, "namespace": meta.namespace, "uid": meta.uid,
            "resourceVersion": meta.resource_version,
            "creationTimestamp": meta.creation_timestamp,
        },
        "spec": {"replicas": at("specReplicasPath").and_then(|r| r.as_i64()).unwrap_or(0)},
        "status": status,
    })
}

/// A custom resource's JSON with `replicas` written at the definition's `specReplicasPath`.
pub fn with_replicas(spec: &Value, obj: &Value, replicas: i64) -> Value {
    let mut v = obj.clone();
    let path = spec
        .get("specReplicasPath")
        .and_then(Value::as_str)
        .unwrap_or(".spec.replicas");
    let parts: Vec<&str> = path.split('.').filter(|p| !p.is_empty()).collect();
    let mut at = &mut v;
    for (i, p) in parts.iter().enumerate() {
        if !at.is_object() {
            *at = json!({});
        }
        let m = at.as_object_mut().expect("an object");
        if i + 1 == parts.len() {
            m.insert(p.to_string(), replicas.into());
            break;
        }
        at = m.entry(p.to_string()).or_insert_with(|| json!({}));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_jsonpaths_find_what_printer_columns_name() {
        let v = json!({"spec": {"size": 3, "tags": ["a", "b"]},
            "status": {"conditions": [{"type": "Synced", "status": "False"},
                                      {"type": "Ready", "status": "True"}]}});
        for (path, want) in [
            (".spec.size", Some(json!(3))),
            ("{.spec.tags[1]}", Some(json!("b"))),
            (".spec.tags[*]", Some(json!("a"))),
            (
                ".status.conditions[?(@.type==\"Ready\")].status",
                Some(json!("True")),
            ),
            (".spec.missing", None),
        ] {
            assert_eq!(find(&v, path).cloned(), want, "{path}");
        }
    }

    #[test]
    fn replicas_are_written_at_the_spec_replicas_path() {
        let spec = json!({"specReplicasPath": ".spec.count"});
        let v = with_replicas(&spec, &json!({"spec": {"other": 1}}), 4);
        assert_eq!(v, json!({"spec": {"other": 1, "count": 4}}));
    }
}

//! `/openapi/v2`: the Swagger 2.0 document of every served kind, built from the same schemas
//! as `/openapi/v3` ([`crate::openapi`]), as JSON or as the protobuf that client-go's discovery
//! client asks for (`application/com.github.proto-openapi.spec.v2.v1.0+protobuf`, gnostic's
//! `openapi.v2.Document`). kubectl reads it for `explain --output=plaintext-openapiv2`, and
//! older clients for their schema validation.
//!
//! The protobuf is written by hand with the few message shapes a schema needs (no protobuf
//! crate carries gnostic's messages): a Document with `info` and `definitions`, and Schemas
//! with references, types, descriptions, formats, required fields, properties, items,
//! additional properties, `allOf`, enums and vendor extensions (as YAML text, which JSON is).

use std::sync::OnceLock;

use bytes::Bytes;

use serde_json::{json, Map, Value};

/// The media type of the protobuf form, as the server names it (the form with `@`, which
/// clients still send in `Accept`, is not a valid media type for Go's parser).
pub const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Whether an `Accept` header asks for the protobuf form (either spelling).
pub fn wants_protobuf(accept: &str) -> bool {
    accept.contains("com.github.proto-openapi.spec.v2")
}

/// The document as JSON, built once.
pub fn json() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut definitions = Map::new();
        for doc in crate::openapi::all_documents() {
            if let Some(schemas) = doc["components"]["schemas"].as_object() {
                for (name, s) in schemas {
                    definitions
                        .entry(name.clone())
                        .or_insert_with(|| to_v2(s.clone()));
                }
            }
        }
        json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.34.0"},
            "paths": {},
            "definitions": definitions,
        })
    })
}

/// The JSON document as served, serialized once.
pub fn json_text() -> &'static Bytes {
    static TEXT: OnceLock<Bytes> = OnceLock::new();
    TEXT.get_or_init(|| Bytes::from(json().to_string()))
}

/// The document as gnostic's protobuf, built once.
pub fn protobuf() -> &'static Bytes {
    static DOC: OnceLock<Bytes> = OnceLock::new();
    DOC.get_or_init(|| {
        let doc = json();
        let mut out = Vec::new();
        string(&mut out, 1, "2.0");
        let mut info = Vec::new();
        string(
            &mut info,
            1,
            doc["info"]["title"].as_str().unwrap_or_default(),
        );
        string(
            &mut info,
            2,
            doc["info"]["version"].as_str().unwrap_or_default(),
        );
        bytes(&mut out, 2, &info);
        bytes(&mut out, 8, &[]);
        let mut definitions = Vec::new();
        if let Some(defs) = doc["definitions"].as_object() {
            for (name, s) in defs {
                bytes(&mut definitions, 1, &named(name, &schema(s)));
            }
        }
        bytes(&mut out, 9, &definitions);
        Bytes::from(out)
    })
}

/// A v3 schema in v2 terms: references into `#/definitions/`, and a lone `allOf` reference
/// (how OpenAPI 3 gives a reference a description) as a plain reference.
fn to_v2(v: Value) -> Value {
    match v {
        Value::Object(mut m) => {
            if let Some(Value::Array(all)) = m.get("allOf") {
                if let [one] = all.as_slice() {
                    if let Some(r) = one.get("$ref").cloned() {
                        m.remove("allOf");
                        m.insert("$ref".into(), r);
                    }
                }
            }
            m.remove("nullable");
            Value::Object(m.into_iter().map(|(k, v)| (k, to_v2(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(to_v2).collect()),
        Value::String(s) => match s.strip_prefix("#/components/schemas/") {
            Some(name) => Value::String(format!("#/definitions/{name}")),
            None => Value::String(s),
        },
        other => other,
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field (wire type 2): a string, bytes or an embedded message.
fn bytes(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    varint(out, (u64::from(field) << 3) | 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    if !s.is_empty() {
        bytes(out, field, s.as_bytes());
    }
}

/// A `NamedSchema` (or any `Named*`): name 1, value 2.
fn named(name: &str, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 1, name);
    bytes(&mut out, 2, value);
    out
}

/// An `Any` holding a value as YAML text (field 2); JSON is YAML.
fn any(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 2, &v.to_string());
    out
}

/// gnostic's `Schema` message.
fn schema(s: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let text = |key: &str| s.get(key).and_then(Value::as_str).unwrap_or_default();
    string(&mut out, 1, text("$ref"));
    string(&mut out, 2, text("format"));
    string(&mut out, 3, text("title"));
    string(&mut out, 4, text("description"));
    for r in s["required"].as_array().into_iter().flatten() {
        string(&mut out, 19, r.as_str().unwrap_or_default());
    }
    for e in s["enum"].as_array().into_iter().flatten() {
        bytes(&mut out, 20, &any(e));
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            // AdditionalPropertiesItem.boolean (field 2, varint)
            let item = [2 << 3, u8::from(*b)];
            bytes(&mut out, 21, &item);
        }
        Some(a @ Value::Object(_)) => {
            let mut item = Vec::new();
            bytes(&mut item, 1, &schema(a));
            bytes(&mut out, 21, &item);
        }
        _ => {}
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() {
        let mut item = Vec::new();
        for t in types {
            string(&mut item, 1, t);
        }
        bytes(&mut out, 22, &item);
    }
    if let Some(items) = s.get("items").filter(|i| i.is_object()) {
        let mut item = Vec::new();
        bytes(&mut item, 1, &schema(items));
        bytes(&mut out, 23, &item);
    }
    for a in s["allOf"].as_array().into_iter().flatten() {
        bytes(&mut out, 24, &schema(a));
    }
    if let Some(props) = s["properties"].as_object() {
        let mut item = Vec::new();
        for (name, p) in props {
            bytes(&mut item, 1, &named(name, &schema(p)));
        }
        bytes(&mut out, 25, &item);
    }
    for (k, v) in s.as_object().into_iter().flatten() {
        if k.starts_with("x-") {
            bytes(&mut out, 31, &named(k, &any(v)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads one length-delimited field's payloads from a message (a test-side decoder).
    fn fields(mut msg: &[u8], wanted: u64) -> Vec<&[u8]> {
        let read = |m: &mut &[u8]| {
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let b = m[0];
                *m = &m[1..];
                v |= u64::from(b & 0x7f) << shift;
                shift += 7;
                if b < 0x80 {
                    return v;
                }
            }
        };
        let mut out = Vec::new();
        while !msg.is_empty() {
            let tag = read(&mut msg);
            assert_eq!(tag & 7, 2, "only length-delimited fields at this level");
            let len = read(&mut msg) as usize;
            if tag >> 3 == wanted {
                out.push(&msg[..len]);
            }
            msg = &msg[len..];
        }
        out
    }

    #[test]
    fn the_json_document_refers_to_its_own_definitions() {
        let doc = json();
        let defs = doc["definitions"].as_object().unwrap();
        let deploy = &defs["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deploy["properties"]["spec"]["$ref"],
            "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
        );
        assert_eq!(
            deploy["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        let text = doc.to_string();
        assert!(!text.contains("#/components/schemas/"));
        for r in text.split("\"$ref\":\"#/definitions/").skip(1) {
            let name = &r[..r.find('"').unwrap()];
            assert!(defs.contains_key(name), "dangling reference {name}");
        }
    }

    #[test]
    fn the_protobuf_document_names_every_definition_with_its_schema() {
        let pb = protobuf();
        assert_eq!(fields(pb, 1), vec![b"2.0".as_slice()]);
        let definitions = fields(pb, 9);
        assert_eq!(definitions.len(), 1);
        let named = fields(definitions[0], 1);
        assert_eq!(
            named.len(),
            json()["definitions"].as_object().unwrap().len()
        );
        let pod = named
            .iter()
            .find(|n| fields(n, 1) == vec![b"io.k8s.api.core.v1.Pod".as_slice()])
            .expect("the Pod definition");
        let schema = fields(pod, 2)[0];
        let description = String::from_utf8_lossy(fields(schema, 4)[0]);
        assert!(description.contains("containers"));
        let extensions = fields(schema, 31);
        let gvk = fields(extensions[0], 1)[0];
        assert_eq!(gvk, b"x-kubernetes-group-version-kind");
    }
}

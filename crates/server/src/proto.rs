//! The few protobuf request bodies real clients send to a JSON server: client-go's typed
//! clients (kubectl drain's, for one) encode `DeleteOptions` and `policy/v1` `Eviction` as
//! `application/vnd.kubernetes.protobuf`. Kubernetes wraps a message in the 4-byte magic
//! `k8s\0` and a `runtime.Unknown` envelope (typeMeta = 1, raw = 2); this reads those two
//! messages into their JSON form by hand (field numbers from the upstream `generated.proto`
//! files), and nothing else: any other protobuf body is a 415.

use serde_json::{json, Map, Value};

/// One protobuf field: its number and its value (a varint or a length-delimited slice).
enum Field<'a> {
    Varint(u32, u64),
    Bytes(u32, &'a [u8]),
}

fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        out |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(out);
        }
    }
    None
}

fn fields(buf: &[u8]) -> Option<Vec<Field<'_>>> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < buf.len() {
        let tag = varint(buf, &mut pos)?;
        let number = u32::try_from(tag >> 3).ok()?;
        match tag & 7 {
            0 => out.push(Field::Varint(number, varint(buf, &mut pos)?)),
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).ok()?;
                let end = pos.checked_add(len).filter(|&e| e <= buf.len())?;
                out.push(Field::Bytes(number, &buf[pos..end]));
                pos = end;
            }
            1 => pos = pos.checked_add(8).filter(|&e| e <= buf.len())?,
            5 => pos = pos.checked_add(4).filter(|&e| e <= buf.len())?,
            _ => return None,
        }
    }
    Some(out)
}

fn string(b: &[u8]) -> Option<Value> {
    Some(Value::String(std::str::from_utf8(b).ok()?.to_string()))
}

/// `meta.v1.DeleteOptions` as JSON.
fn delete_options(buf: &[u8]) -> Option<Value> {
    let mut m = Map::new();
    let mut dry_run = Vec::new();
    for f in fields(buf)? {
        match f {
            Field::Varint(1, v) => {
                m.insert("gracePeriodSeconds".into(), json!(v as i64));
            }
            Field::Bytes(2, b) => {
                let mut pre = Map::new();
                for pf in fields(b)? {
                    match pf {
                        Field::Bytes(1, s) => pre.insert("uid".into(), string(s)?),
                        Field::Bytes(2, s) => pre.insert("resourceVersion".into(), string(s)?),
                        _ => None,
                    };
                }
                m.insert("preconditions".into(), Value::Object(pre));
            }
            Field::Varint(3, v) => {
                m.insert("orphanDependents".into(), json!(v != 0));
            }
            Field::Bytes(4, s) => {
                m.insert("propagationPolicy".into(), string(s)?);
            }
            Field::Bytes(5, s) => dry_run.push(string(s)?),
            _ => {}
        }
    }
    if !dry_run.is_empty() {
        m.insert("dryRun".into(), Value::Array(dry_run));
    }
    Some(Value::Object(m))
}

/// `policy.v1.Eviction` as JSON (its metadata's name and namespace, and its DeleteOptions).
fn eviction(buf: &[u8]) -> Option<Value> {
    let mut out = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {}});
    for f in fields(buf)? {
        match f {
            Field::Bytes(1, meta) => {
                for mf in fields(meta)? {
                    match mf {
                        Field::Bytes(1, s) => out["metadata"]["name"] = string(s)?,
                        Field::Bytes(3, s) => out["metadata"]["namespace"] = string(s)?,
                        _ => {}
                    }
                }
            }
            Field::Bytes(2, opts) => out["deleteOptions"] = delete_options(opts)?,
            _ => {}
        }
    }
    Some(out)
}

/// The JSON form of a protobuf-encoded DeleteOptions or Eviction body; `None` for anything
/// else or a malformed body.
pub fn decode(body: &[u8]) -> Option<Value> {
    let envelope = body.strip_prefix(b"k8s\0")?;
    let (mut kind, mut raw) = (String::new(), None);
    for f in fields(envelope)? {
        match f {
            Field::Bytes(1, type_meta) => {
                for tf in fields(type_meta)? {
                    if let Field::Bytes(2, k) = tf {
                        kind = std::str::from_utf8(k).ok()?.to_string();
                    }
                }
            }
            Field::Bytes(2, r) => raw = Some(r),
            _ => {}
        }
    }
    match kind.as_str() {
        "DeleteOptions" => delete_options(raw?),
        "Eviction" => eviction(raw?),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_field(n: u32, b: &[u8]) -> Vec<u8> {
        let mut out = vec![((n << 3) | 2) as u8, b.len() as u8];
        out.extend_from_slice(b);
        out
    }

    #[test]
    fn an_eviction_with_a_grace_period_reads_as_its_json_form() {
        let opts = [vec![0x08, 30], bytes_field(4, b"Background")].concat();
        let meta = [bytes_field(1, b"web-0"), bytes_field(3, b"shop")].concat();
        let raw = [bytes_field(1, &meta), bytes_field(2, &opts)].concat();
        let type_meta = [bytes_field(1, b"policy/v1"), bytes_field(2, b"Eviction")].concat();
        let body = [
            b"k8s\0".to_vec(),
            bytes_field(1, &type_meta),
            bytes_field(2, &raw),
        ]
        .concat();
        let v = decode(&body).unwrap();
        assert_eq!(v["metadata"]["name"], "web-0");
        assert_eq!(v["metadata"]["namespace"], "shop");
        assert_eq!(v["deleteOptions"]["gracePeriodSeconds"], 30);
        assert_eq!(v["deleteOptions"]["propagationPolicy"], "Background");
    }

    #[test]
    fn anything_else_or_a_truncated_body_is_refused() {
        assert!(decode(b"k8s\0\x0a\xff").is_none());
        assert!(decode(b"{}").is_none());
        let type_meta = [bytes_field(1, b"v1"), bytes_field(2, b"Pod")].concat();
        let body = [
            b"k8s\0".to_vec(),
            bytes_field(1, &type_meta),
            bytes_field(2, b""),
        ]
        .concat();
        assert!(decode(&body).is_none());
    }
}

//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), which client-go's typed
//! clients send: `kubectl create deployment|configmap|secret|job|...`, drain's evictions and
//! DeleteOptions. Kubernetes wraps a message in the 4-byte magic `k8s\0` and a
//! `runtime.Unknown` envelope (typeMeta {apiVersion, kind} = 1, raw = 2); the message in
//! `raw` is the one of the kind typeMeta names, `k8s.io.api.<group>.<version>.<Kind>`.
//!
//! This decodes it with the descriptors of upstream's `generated.proto` files (vendored in
//! crates/server/proto, compiled by build.rs) into the JSON a client would have sent, which
//! then takes the JSON path. The JSON follows Kubernetes' conventions, not proto3-JSON: field
//! names as in the .proto files, unset fields absent, int64 as numbers, `Time` and `MicroTime`
//! as RFC 3339 strings, `Quantity` and `Duration` as strings, `IntOrString` as a number or a
//! string, `RawExtension` and `FieldsV1` as the JSON they carry, `bytes` as base64, maps as
//! objects with sorted keys. Go encodes its non-pointer fields even when unset: a scalar field
//! at its zero value ("", 0, false) reads as absent unless `pointers.rs` lists it as a Go
//! pointer (`replicas: 0`, `storageClassName: ""`), and a zero `Time` reads as absent too.

use std::sync::OnceLock;

use base64::Engine;
use prost_reflect::{
    DescriptorPool, DynamicMessage, MapKey, MessageDescriptor, ReflectMessage, Value as PV,
};
use serde_json::{Map, Value};

/// The magic prefix of Kubernetes' protobuf encoding.
pub const MAGIC: &[u8] = b"k8s\0";

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// The descriptors of the vendored `generated.proto` files.
pub fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/k8s.desc"))[..])
            .expect("build.rs writes a valid descriptor set")
    })
}

/// The message of a built-in kind: `k8s.io.api.<first label of the group>.<version>.<Kind>`
/// for the core group and groups without a dot or under `k8s.io`, then meta/v1's (DeleteOptions).
pub fn message_of(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let package = match group {
        "" => "core",
        g if !g.contains('.') || g.ends_with(".k8s.io") => g.split('.').next()?,
        _ => return None,
    };
    let pool = pool();
    pool.get_message_by_name(&format!("k8s.io.api.{package}.{version}.{kind}"))
        .or_else(|| pool.get_message_by_name(&format!("{META}.{kind}")))
}

/// How deep protobuf-encoded objects may nest inside `RawExtension`s: each level decodes
/// afresh (with prost's own recursion limit), so without a bound a small hostile body
/// could nest deep enough to overflow the stack.
const MAX_EMBEDDED_DEPTH: u32 = 8;

thread_local! {
    static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The JSON form of a protobuf body (magic, `runtime.Unknown`, the message of the kind its
/// typeMeta names); `None` for a kind without a vendored message, a malformed body, or
/// objects embedded deeper than [`MAX_EMBEDDED_DEPTH`].
pub fn decode(body: &[u8]) -> Option<Value> {
    let depth = DEPTH.with(|d| d.get());
    if depth >= MAX_EMBEDDED_DEPTH {
        return None;
    }
    DEPTH.with(|d| d.set(depth + 1));
    let out = decode_envelope(body);
    DEPTH.with(|d| d.set(depth));
    out
}

fn decode_envelope(body: &[u8]) -> Option<Value> {
    let envelope = body.strip_prefix(MAGIC)?;
    let unknown = pool().get_message_by_name("k8s.io.apimachinery.pkg.runtime.Unknown")?;
    let unknown = DynamicMessage::decode(unknown, envelope).ok()?;
    let type_meta = unknown.get_field_by_name("typeMeta")?;
    let type_meta = type_meta.as_message()?;
    let text = |m: &DynamicMessage, f: &str| -> Option<String> {
        Some(m.get_field_by_name(f)?.as_str()?.to_string())
    };
    let (api_version, kind) = (text(type_meta, "apiVersion")?, text(type_meta, "kind")?);
    let raw = unknown.get_field_by_name("raw")?;
    let message =
        DynamicMessage::decode(message_of(&api_version, &kind)?, raw.as_bytes()?.clone()).ok()?;
    let mut out = Map::new();
    if !api_version.is_empty() {
        out.insert("apiVersion".into(), api_version.into());
    }
    out.insert("kind".into(), kind.into());
    match message_json(&message)? {
        Value::Object(fields) => out.extend(fields),
        _ => return None,
    }
    Some(Value::Object(out))
}

/// A message as Kubernetes' JSON (`Value::Null` for a zero `Time`, which is left out).
fn message_json(m: &DynamicMessage) -> Option<Value> {
    let field = |name: &str| m.get_field_by_name(name);
    let full_name = m.descriptor().full_name().to_string();
    let special = match full_name.strip_prefix("k8s.io.apimachinery.pkg.") {
        Some("apis.meta.v1.Time") => Some(time(m, false)),
        Some("apis.meta.v1.MicroTime") => Some(time(m, true)),
        Some("apis.meta.v1.Duration") => {
            Some(Value::String(duration(field("duration")?.as_i64()?)))
        }
        Some("api.resource.Quantity" | "api.resource.QuantityValue") => {
            Some(Value::String(field("string")?.as_str()?.to_string()))
        }
        Some("util.intstr.IntOrString") => Some(if field("type")?.as_i64()? == 1 {
            Value::String(field("strVal")?.as_str()?.to_string())
        } else {
            Value::from(field("intVal")?.as_i32()?)
        }),
        Some("runtime.RawExtension") => Some(embedded(field("raw")?.as_bytes()?)?),
        Some("apis.meta.v1.FieldsV1") => Some(embedded(field("Raw")?.as_bytes()?)?),
        _ => None,
    };
    if special.is_some() {
        return special;
    }
    // Go's named slices (`Verbs`, `ExtraValue`) are wrapper messages of one `items` list.
    let desc = m.descriptor();
    let mut fields = desc.fields();
    if let (Some(only), None) = (fields.next(), fields.next()) {
        if only.name() == "items" && only.is_list() && !desc.name().ends_with("List") {
            return value_json(&m.get_field(&only));
        }
    }
    let mut out = Map::new();
    for (f, v) in m.fields() {
        if is_zero(v) && !is_pointer(desc.full_name(), f.name()) {
            continue;
        }
        let v = value_json(v)?;
        if v.is_null() {
            continue;
        }
        match v {
            Value::Object(inner) if is_inlined(desc.full_name(), f.name()) => out.extend(inner),
            v => {
                out.insert(json_name(desc.full_name(), f.name()).to_string(), v);
            }
        }
    }
    Some(Value::Object(out))
}

/// Go's embedded structs, which are a field of their own in the protobuf and inlined in JSON
/// (message, field), in the vendored groups (found by comparing each .proto field with the
/// JSON names of k8s-openapi's types).
pub const INLINED: &[(&str, &str)] = &[
    ("k8s.io.api.core.v1.Probe", "handler"),
    ("k8s.io.api.core.v1.Volume", "volumeSource"),
    (
        "k8s.io.api.core.v1.PersistentVolumeSpec",
        "persistentVolumeSource",
    ),
    (
        "k8s.io.api.core.v1.EphemeralContainer",
        "ephemeralContainerCommon",
    ),
    (
        "k8s.io.api.core.v1.ConfigMapEnvSource",
        "localObjectReference",
    ),
    (
        "k8s.io.api.core.v1.ConfigMapKeySelector",
        "localObjectReference",
    ),
    (
        "k8s.io.api.core.v1.ConfigMapProjection",
        "localObjectReference",
    ),
    (
        "k8s.io.api.core.v1.ConfigMapVolumeSource",
        "localObjectReference",
    ),
    ("k8s.io.api.core.v1.SecretEnvSource", "localObjectReference"),
    (
        "k8s.io.api.core.v1.SecretKeySelector",
        "localObjectReference",
    ),
    (
        "k8s.io.api.core.v1.SecretProjection",
        "localObjectReference",
    ),
    ("k8s.io.api.networking.v1.IngressRule", "ingressRuleValue"),
    (
        "k8s.io.api.admissionregistration.v1.NamedRuleWithOperations",
        "ruleWithOperations",
    ),
    (
        "k8s.io.api.admissionregistration.v1.RuleWithOperations",
        "rule",
    ),
    (
        "k8s.io.api.resource.v1.DeviceAllocationConfiguration",
        "deviceConfiguration",
    ),
    (
        "k8s.io.api.resource.v1.DeviceClaimConfiguration",
        "deviceConfiguration",
    ),
    (
        "k8s.io.api.resource.v1.DeviceClassConfiguration",
        "deviceConfiguration",
    ),
];

/// Fields whose protobuf name is not their JSON name: (message, protobuf name, JSON name).
pub const RENAMED: &[(&str, &str, &str)] = &[
    (
        "k8s.io.api.admissionregistration.v1.MutatingWebhookConfiguration",
        "Webhooks",
        "webhooks",
    ),
    (
        "k8s.io.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        "Webhooks",
        "webhooks",
    ),
    (
        "k8s.io.api.admissionregistration.v1.Validation",
        "Expression",
        "expression",
    ),
    (
        "k8s.io.api.admissionregistration.v1.Variable",
        "Expression",
        "expression",
    ),
    (
        "k8s.io.api.admissionregistration.v1.Variable",
        "Name",
        "name",
    ),
    (
        "k8s.io.api.networking.v1.IngressClassParametersReference",
        "aPIGroup",
        "apiGroup",
    ),
];

/// Go's zero value of a scalar field.
fn is_zero(v: &PV) -> bool {
    match v {
        PV::Bool(b) => !b,
        PV::I32(n) => *n == 0,
        PV::I64(n) => *n == 0,
        PV::U32(n) => *n == 0,
        PV::U64(n) => *n == 0,
        PV::String(s) => s.is_empty(),
        _ => false,
    }
}

/// Whether a scalar field is a Go pointer, whose zero value is a value (`replicas: 0`).
fn is_pointer(message: &str, field: &str) -> bool {
    pointers::POINTER_SCALARS
        .binary_search(&(message, field))
        .is_ok()
}

fn is_inlined(message: &str, field: &str) -> bool {
    INLINED.contains(&(message, field))
}

fn json_name<'a>(message: &str, field: &'a str) -> &'a str {
    RENAMED
        .iter()
        .find(|(m, f, _)| *m == message && *f == field)
        .map_or(field, |(_, _, json)| json)
}

fn value_json(v: &PV) -> Option<Value> {
    Some(match v {
        PV::Bool(b) => Value::Bool(*b),
        PV::I32(n) => Value::from(*n),
        PV::I64(n) => Value::from(*n),
        PV::U32(n) => Value::from(*n),
        PV::U64(n) => Value::from(*n),
        PV::F32(n) => Value::from(f64::from(*n)),
        PV::F64(n) => Value::from(*n),
        PV::EnumNumber(n) => Value::from(*n),
        PV::String(s) => Value::String(s.clone()),
        PV::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        PV::Message(m) => message_json(m)?,
        PV::List(items) => Value::Array(items.iter().map(value_json).collect::<Option<_>>()?),
        PV::Map(entries) => {
            let mut sorted: Vec<(String, Value)> = entries
                .iter()
                .map(|(k, v)| Some((map_key(k), value_json(v)?)))
                .collect::<Option<_>>()?;
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(sorted.into_iter().collect())
        }
    })
}

fn map_key(k: &MapKey) -> String {
    match k {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
    }
}

/// The object a `RawExtension` carries: JSON as written, or a protobuf-encoded one of its own.
fn embedded(raw: &[u8]) -> Option<Value> {
    if raw.is_empty() {
        return Some(Value::Null);
    }
    if raw.starts_with(MAGIC) {
        return decode(raw);
    }
    serde_json::from_slice(raw).ok()
}

/// `Time` (RFC 3339, seconds) or `MicroTime` (six fraction digits), in UTC; a zero `Time` is
/// Go's zero time, which its JSON writes as null.
fn time(m: &DynamicMessage, micro: bool) -> Value {
    let part = |name: &str| {
        m.get_field_by_name(name)
            .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
    };
    let (seconds, nanos) = (part("seconds").unwrap_or(0), part("nanos").unwrap_or(0));
    if seconds == 0 && nanos == 0 {
        return Value::Null;
    }
    let Ok(ts) = jiff::Timestamp::new(seconds, i32::try_from(nanos).unwrap_or(0)) else {
        return Value::Null;
    };
    let base = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    Value::String(if micro {
        format!("{base}.{:06}Z", nanos / 1000)
    } else {
        format!("{base}Z")
    })
}

/// A `Duration` as Go's `time.Duration.String` writes it ("1h0m0s", "1.5s", "300ms").
fn duration(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let u = ns.unsigned_abs();
    if u == 0 {
        return "0s".into();
    }
    let fraction = |whole: u64, frac: u64, digits: usize| {
        let f = format!("{frac:0digits$}");
        let f = f.trim_end_matches('0');
        if f.is_empty() {
            whole.to_string()
        } else {
            format!("{whole}.{f}")
        }
    };
    if u < 1_000 {
        return format!("{sign}{u}ns");
    }
    if u < 1_000_000 {
        return format!("{sign}{}µs", fraction(u / 1_000, u % 1_000, 3));
    }
    if u < 1_000_000_000 {
        return format!("{sign}{}ms", fraction(u / 1_000_000, u % 1_000_000, 6));
    }
    let secs = u / 1_000_000_000;
    let s = fraction(secs % 60, u % 1_000_000_000, 9);
    match (secs / 3600, secs / 60 % 60) {
        (0, 0) => format!("{sign}{s}s"),
        (0, m) => format!("{sign}{m}m{s}s"),
        (h, m) => format!("{sign}{h}h{m}m{s}s"),
    }
}

mod pointers;

#[cfg(test)]
mod tests;

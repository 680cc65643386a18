//! Tests of the protobuf body decoder: Kubernetes JSON encoded into the upstream messages by
//! a small encoder of the same conventions, wrapped in the `k8s\0` + `runtime.Unknown`
//! envelope, must decode to the same JSON; and hand-assembled bytes for one message.

use super::*;
use prost_reflect::prost::Message;
use prost_reflect::Kind;
use serde_json::json;

/// Kubernetes JSON as a message of `desc` (the inverse of `message_json`).
fn encode_message(desc: MessageDescriptor, v: &Value) -> DynamicMessage {
    let mut m = DynamicMessage::new(desc.clone());
    let set = |m: &mut DynamicMessage, name: &str, value: PV| {
        let f = desc.get_field_by_name(name).unwrap();
        m.set_field(&f, value);
    };
    match desc.full_name() {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time" => {
            let ts: jiff::Timestamp = v.as_str().unwrap().parse().unwrap();
            set(&mut m, "seconds", PV::I64(ts.as_second()));
            return m;
        }
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => {
            set(&mut m, "string", PV::String(v.as_str().unwrap().into()));
            return m;
        }
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => {
            match v.as_i64() {
                Some(n) => set(&mut m, "intVal", PV::I32(n as i32)),
                None => {
                    set(&mut m, "type", PV::I64(1));
                    set(&mut m, "strVal", PV::String(v.as_str().unwrap().into()));
                }
            }
            return m;
        }
        _ => {}
    }
    for (name, value) in v.as_object().unwrap() {
        let proto_name = RENAMED
            .iter()
            .find(|(m, _, json)| *m == desc.full_name() && json == name)
            .map_or(name.as_str(), |(_, proto, _)| proto);
        let Some(f) = desc.get_field_by_name(proto_name) else {
            // A field of an inlined (embedded) struct: set it in that field's message.
            let (_, inlined) = INLINED
                .iter()
                .find(|(m, f)| {
                    let field = desc.get_field_by_name(f);
                    *m == desc.full_name()
                        && field.is_some_and(|f| {
                            f.kind()
                                .as_message()
                                .unwrap()
                                .get_field_by_name(name)
                                .is_some()
                        })
                })
                .unwrap_or_else(|| panic!("{} has no field {name}", desc.full_name()));
            let f = desc.get_field_by_name(inlined).unwrap();
            let mut inner = match m.get_field(&f).as_message() {
                Some(existing) if m.has_field(&f) => existing.clone(),
                _ => DynamicMessage::new(f.kind().as_message().unwrap().clone()),
            };
            let part = encode_message(inner.descriptor(), &json!({name: value}));
            inner.merge(part.encode_to_vec().as_slice()).unwrap();
            m.set_field(&f, PV::Message(inner));
            continue;
        };
        let pv = if f.is_map() {
            let Kind::Message(entry) = f.kind() else {
                unreachable!()
            };
            let vk = entry.map_entry_value_field().kind();
            let map = value.as_object().unwrap().iter();
            PV::Map(
                map.map(|(k, x)| (MapKey::String(k.clone()), encode_value(&vk, x)))
                    .collect(),
            )
        } else if f.is_list() {
            let items = value.as_array().unwrap().iter();
            PV::List(items.map(|x| encode_value(&f.kind(), x)).collect())
        } else {
            encode_value(&f.kind(), value)
        };
        m.set_field(&f, pv);
    }
    m
}

fn encode_value(kind: &Kind, v: &Value) -> PV {
    match kind {
        Kind::Message(d) => PV::Message(encode_message(d.clone(), v)),
        Kind::String => PV::String(v.as_str().unwrap().into()),
        Kind::Bytes => PV::Bytes(
            base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap())
                .unwrap()
                .into(),
        ),
        Kind::Int32 => PV::I32(v.as_i64().unwrap() as i32),
        Kind::Int64 => PV::I64(v.as_i64().unwrap()),
        Kind::Bool => PV::Bool(v.as_bool().unwrap()),
        other => panic!("no test encoding for {other:?}"),
    }
}

/// A JSON object with apiVersion and kind as the protobuf body client-go would send.
fn body_of(object: &Value) -> Vec<u8> {
    let (api_version, kind) = (
        object["apiVersion"].as_str().unwrap(),
        object["kind"].as_str().unwrap(),
    );
    let mut fields = object.as_object().unwrap().clone();
    fields.remove("apiVersion");
    fields.remove("kind");
    let raw = encode_message(
        message_of(api_version, kind).unwrap(),
        &Value::Object(fields),
    );
    let unknown = json!({"typeMeta": {"apiVersion": api_version, "kind": kind}});
    let unknown_desc = pool()
        .get_message_by_name("k8s.io.apimachinery.pkg.runtime.Unknown")
        .unwrap();
    let mut envelope = encode_message(unknown_desc.clone(), &unknown);
    envelope.set_field(
        &unknown_desc.get_field_by_name("raw").unwrap(),
        PV::Bytes(raw.encode_to_vec().into()),
    );
    [MAGIC.to_vec(), envelope.encode_to_vec()].concat()
}

fn round_trip(object: Value) {
    assert_eq!(decode(&body_of(&object)), Some(object));
}

#[test]
fn a_deployment_with_a_pod_template_reads_back_as_the_same_json() {
    round_trip(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web", "tier": "front"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "nginx",
                        "image": "nginx:1.27",
                        "args": ["-g", "daemon off;"],
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
                        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5}
                    }],
                    "terminationGracePeriodSeconds": 0,
                    "automountServiceAccountToken": false,
                    "volumes": [{"name": "scratch", "emptyDir": {}}]
                }
            }
        },
        "status": {}
    }));
}

#[test]
fn a_secret_s_bytes_read_as_base64_and_a_configmap_s_strings_as_written() {
    round_trip(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "creationTimestamp": "2026-01-02T03:04:05Z"},
        "data": {"password": "czNjcjN0", "user": "YWRtaW4="},
        "type": "Opaque"
    }));
    round_trip(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "annotations": {"a": "b"}},
        "data": {"empty": "", "mode": "fast"},
        "binaryData": {"blob": "AAEC"},
        "immutable": true
    }));
}

#[test]
fn go_zero_values_of_non_pointer_fields_read_as_absent_and_of_pointers_as_values() {
    // Go always encodes non-pointer fields: their zero values and a zero Time must not show up.
    let body = body_of(&json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "", "generation": 0, "creationTimestamp": "1970-01-01T00:00:00Z"},
        "spec": {
            "replicas": 0,
            "paused": false,
            "minReadySeconds": 0,
            "template": {"spec": {"hostNetwork": false, "automountServiceAccountToken": false, "containers": []}}
        },
        "status": {"replicas": 0}
    }));
    assert_eq!(
        decode(&body),
        Some(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"replicas": 0, "template": {"spec": {"automountServiceAccountToken": false}}},
            "status": {}
        }))
    );
    let claim = body_of(
        &json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "spec": {"storageClassName": ""}}),
    );
    assert_eq!(
        decode(&claim).unwrap()["spec"],
        json!({"storageClassName": ""})
    );
}

#[test]
fn durations_read_as_go_writes_them() {
    for (ns, text) in [
        (0, "0s"),
        (1_500_000_000, "1.5s"),
        (300_000_000, "300ms"),
        (3_600_000_000_000, "1h0m0s"),
        (90_000_000_000, "1m30s"),
        (-2_000, "-2µs"),
    ] {
        assert_eq!(duration(ns), text);
    }
}

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
        MAGIC.to_vec(),
        bytes_field(1, &type_meta),
        bytes_field(2, &raw),
    ]
    .concat();
    assert_eq!(
        decode(&body),
        Some(json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "web-0", "namespace": "shop"},
            "deleteOptions": {"gracePeriodSeconds": 30, "propagationPolicy": "Background"}
        }))
    );
}

#[test]
fn an_unknown_kind_a_foreign_group_or_a_truncated_body_is_refused() {
    assert!(decode(b"k8s\0\x0a\xff").is_none());
    assert!(decode(b"{}").is_none());
    for (api_version, kind) in [("v1", "Frobnicator"), ("apps.example.com/v1", "Deployment")] {
        let type_meta = [
            bytes_field(1, api_version.as_bytes()),
            bytes_field(2, kind.as_bytes()),
        ]
        .concat();
        let body = [
            MAGIC.to_vec(),
            bytes_field(1, &type_meta),
            bytes_field(2, b""),
        ]
        .concat();
        assert!(decode(&body).is_none(), "{api_version} {kind}");
    }
}

/// A ControllerRevision whose `data` holds, protobuf-encoded, `levels - 1` more of them.
fn nested_revisions(levels: usize) -> Vec<u8> {
    let revision = message_of("apps/v1", "ControllerRevision").unwrap();
    let data = revision.get_field_by_name("data").unwrap();
    let unknown = pool()
        .get_message_by_name("k8s.io.apimachinery.pkg.runtime.Unknown")
        .unwrap();
    let mut inner: Option<Vec<u8>> = None;
    for _ in 0..levels {
        let mut m = encode_message(revision.clone(), &json!({"revision": 1}));
        if let Some(raw) = inner.take() {
            let ext = data.kind().as_message().unwrap().clone();
            let mut e = DynamicMessage::new(ext.clone());
            e.set_field(
                &ext.get_field_by_name("raw").unwrap(),
                PV::Bytes(raw.into()),
            );
            m.set_field(&data, PV::Message(e));
        }
        let type_meta =
            json!({"typeMeta": {"apiVersion": "apps/v1", "kind": "ControllerRevision"}});
        let mut envelope = encode_message(unknown.clone(), &type_meta);
        envelope.set_field(
            &unknown.get_field_by_name("raw").unwrap(),
            PV::Bytes(m.encode_to_vec().into()),
        );
        inner = Some([MAGIC.to_vec(), envelope.encode_to_vec()].concat());
    }
    inner.unwrap()
}

#[test]
fn embedded_protobuf_objects_decode_a_few_levels_deep_and_a_hostile_depth_is_refused() {
    let two = decode(&nested_revisions(2)).unwrap();
    assert_eq!(two["data"]["kind"], "ControllerRevision");
    assert_eq!(two["data"]["revision"], 1);
    // Deep enough to overflow the stack without the bound; refused, not a crash.
    assert_eq!(decode(&nested_revisions(20_000)), None);
    // The bound is per body: a refused body leaves the next one unaffected.
    assert!(decode(&nested_revisions(3)).is_some());
}

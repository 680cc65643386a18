//! The Scenario document as written: its scalar types (durations, `never`, label values) and
//! the serde shapes of the spec, the steps and the assertions, decoded strictly (unknown fields
//! are errors).

use std::collections::BTreeMap;
use std::fmt;

use kubeplane_core::duration::parse_duration;
use kubeplane_core::time::SimDuration;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::objects::{path_string, FieldError};

/// A duration: Go-style (`300ms`, `1h30m`) or a bare number of seconds.
#[derive(Copy, Clone, Debug)]
pub(super) struct Dur(pub(super) SimDuration);

pub(super) struct DurVisitor;

impl Visitor<'_> for DurVisitor {
    type Value = SimDuration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration like 30s, 5m, 1h30m or a number of seconds")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<SimDuration, E> {
        parse_duration(v.trim()).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<SimDuration, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<SimDuration, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<SimDuration, E> {
        self.visit_str(&v.to_string())
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DurVisitor).map(Dur)
    }
}

/// `podStartupLatency`: a duration or `never` (`None`).
pub(super) struct Latency(pub(super) Option<SimDuration>);

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Option<SimDuration>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration like 1s, a number of seconds, or \"never\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                if v.trim() == "never" {
                    Ok(None)
                } else {
                    DurVisitor.visit_str(v).map(Some)
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                DurVisitor.visit_i64(v).map(Some)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                DurVisitor.visit_u64(v).map(Some)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                DurVisitor.visit_f64(v).map(Some)
            }
        }
        d.deserialize_any(V).map(Latency)
    }
}

/// A label or annotation value: a string, or a number or boolean written without quotes
/// (taken as its text, as `kubectl label` would).
pub(super) struct Text(pub(super) String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = String;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
                Ok(v.to_string())
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
                Ok(v.to_string())
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
                Ok(v.to_string())
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
                Ok(v.to_string())
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
                Ok(v.to_string())
            }
        }
        d.deserialize_any(V).map(Text)
    }
}

/// One string or a list of strings.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// Tells `field: null` (`Some(None)`) from an absent field (`None`, with `#[serde(default)]`).
pub(super) fn nullable<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

// ---------------------------------------------------------------------------------------------
// the Scenario document, as written

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ScenarioDoc {
    #[serde(default)]
    pub(super) metadata: Option<ScenarioMeta>,
    #[serde(default)]
    pub(super) spec: Option<SpecRaw>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Accepted for the look of an ordinary object; only the name is used.
pub(super) struct ScenarioMeta {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) namespace: Option<String>,
    #[serde(default)]
    pub(super) labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub(super) annotations: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct SpecRaw {
    #[serde(default)]
    pub(super) start_time: Option<String>,
    #[serde(default)]
    pub(super) duration: Option<Dur>,
    #[serde(default)]
    pub(super) seed: Option<u64>,
    #[serde(default)]
    pub(super) pod_startup_latency: Option<Latency>,
    #[serde(default)]
    pub(super) kubernetes_version: Option<Value>,
    #[serde(default)]
    pub(super) feature_gates: Option<BTreeMap<String, bool>>,
    #[serde(default)]
    pub(super) steps: Option<Vec<StepRaw>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct StepRaw {
    #[serde(default)]
    pub(super) at: Option<Dur>,
    #[serde(default)]
    pub(super) apply: Option<Value>,
    #[serde(default)]
    pub(super) delete: Option<DeleteRaw>,
    #[serde(default)]
    pub(super) taint: Option<TaintRaw>,
    #[serde(default)]
    pub(super) untaint: Option<UntaintRaw>,
    #[serde(default)]
    pub(super) cordon: Option<NodeRaw>,
    #[serde(default)]
    pub(super) uncordon: Option<NodeRaw>,
    #[serde(default)]
    pub(super) scale: Option<ScaleRaw>,
    #[serde(default)]
    pub(super) annotate: Option<MetaEditRaw>,
    #[serde(default)]
    pub(super) label: Option<MetaEditRaw>,
    #[serde(default)]
    pub(super) node_down: Option<NodeRaw>,
    #[serde(default)]
    pub(super) node_up: Option<NodeRaw>,
    #[serde(default)]
    pub(super) node_condition: Option<NodeConditionRaw>,
    #[serde(default)]
    pub(super) pod_status: Option<PodStatusRaw>,
    #[serde(default)]
    pub(super) drain: Option<DrainRaw>,
    #[serde(default)]
    pub(super) expect: Option<Vec<Value>>,
}

/// Every action a step may have, as written.
pub(super) const ACTIONS: &str =
    "apply, delete, taint, untaint, cordon, uncordon, scale, annotate, label, \
     nodeDown, nodeUp, nodeCondition, podStatus, drain, expect";

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct DeleteRaw {
    pub(super) kind: String,
    pub(super) name: String,
    #[serde(default)]
    pub(super) namespace: Option<String>,
    #[serde(default)]
    pub(super) grace_period_seconds: Option<i64>,
    #[serde(default)]
    pub(super) propagation_policy: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TaintRaw {
    pub(super) node: String,
    pub(super) key: String,
    #[serde(default)]
    pub(super) value: Option<String>,
    pub(super) effect: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UntaintRaw {
    pub(super) node: String,
    pub(super) key: String,
    #[serde(default)]
    pub(super) effect: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NodeRaw {
    pub(super) node: String,
}

/// `drain`: kubectl drain's flags, named as its `drain.Helper` fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct DrainRaw {
    pub(super) node: String,
    #[serde(default)]
    pub(super) ignore_daemon_sets: bool,
    #[serde(default)]
    pub(super) delete_empty_dir_data: bool,
    #[serde(default)]
    pub(super) force: bool,
    #[serde(default)]
    pub(super) grace_period_seconds: Option<i64>,
    #[serde(default)]
    pub(super) timeout: Option<Dur>,
    #[serde(default)]
    pub(super) pod_selector: Option<String>,
    #[serde(default)]
    pub(super) disable_eviction: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ScaleRaw {
    pub(super) kind: String,
    pub(super) name: String,
    #[serde(default)]
    pub(super) namespace: Option<String>,
    pub(super) replicas: i32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MetaEditRaw {
    pub(super) kind: String,
    pub(super) name: String,
    #[serde(default)]
    pub(super) namespace: Option<String>,
    #[serde(default)]
    pub(super) set: BTreeMap<String, Text>,
    #[serde(default)]
    pub(super) remove: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NodeConditionRaw {
    pub(super) node: String,
    #[serde(rename = "type")]
    pub(super) type_: String,
    pub(super) status: String,
    #[serde(default)]
    pub(super) reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct PodStatusRaw {
    pub(super) pod: String,
    #[serde(default)]
    pub(super) phase: Option<String>,
    #[serde(default)]
    pub(super) ready: Option<bool>,
    #[serde(default)]
    pub(super) restart_count: Option<i32>,
    #[serde(default)]
    pub(super) exit_code: Option<i32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct PodAssertRaw {
    pub(super) pod: String,
    #[serde(default)]
    pub(super) exists: Option<bool>,
    #[serde(default, deserialize_with = "nullable")]
    pub(super) node: Option<Option<String>>,
    #[serde(default)]
    pub(super) node_in: Option<Vec<String>>,
    #[serde(default)]
    pub(super) phase: Option<String>,
    #[serde(default)]
    pub(super) ready: Option<bool>,
    #[serde(default)]
    pub(super) terminating: Option<bool>,
    #[serde(default, deserialize_with = "nullable")]
    pub(super) nominated_node: Option<Option<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PodsAssertRaw {
    #[serde(default)]
    pub(super) pods: Option<PodsFilterRaw>,
    pub(super) count: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PodsFilterRaw {
    #[serde(default)]
    pub(super) namespace: Option<String>,
    #[serde(default)]
    pub(super) selector: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub(super) node: Option<Option<String>>,
    #[serde(default)]
    pub(super) phase: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct EventAssertRaw {
    pub(super) event: EventFilterRaw,
    #[serde(default)]
    pub(super) count: Option<usize>,
    #[serde(default)]
    pub(super) first_at: Option<Dur>,
    #[serde(default)]
    pub(super) tolerance: Option<Dur>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct EventFilterRaw {
    #[serde(default)]
    pub(super) reason: Option<String>,
    #[serde(default)]
    pub(super) object: Option<String>,
    #[serde(default)]
    pub(super) kind: Option<String>,
    #[serde(default)]
    pub(super) message_contains: Option<OneOrMany>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ReplicaSetAssertRaw {
    pub(super) replica_set: String,
    #[serde(default)]
    pub(super) exists: Option<bool>,
    #[serde(default)]
    pub(super) replicas: Option<i32>,
    #[serde(default)]
    pub(super) ready_replicas: Option<i32>,
    #[serde(default)]
    pub(super) available_replicas: Option<i32>,
}

/// Deserializes a value, reporting a failure at its path below `path`.
pub(super) fn de<T: DeserializeOwned>(v: &Value, path: &str) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        FieldError {
            field: path_string(e.path()),
            message: e.inner().to_string(),
        }
        .within(path)
    })
}

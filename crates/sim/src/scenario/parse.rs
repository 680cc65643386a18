//! From YAML streams to an [`Input`]: split documents, tell objects, scheduler configurations
//! and the Scenario apart, and turn each into its validated form. The first problem found ends
//! parsing with an [`InputError`] naming the file, the document and the field.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use k8s_openapi::api::core::v1::Taint;
use kubeplane_core::duration::parse_duration;
use kubeplane_core::labels::{is_qualified_name, parse as parse_selector};
use kubeplane_core::time::SimDuration;
use kubeplane_core::version::KubeVersion;
use kubeplane_core::SimTime;
use kubeplane_store::{Kind, Object, ObjectKey};
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::model::*;
use super::objects::{join, manifest_kind, parse_object, path_string, FieldError, SUPPORTED};
use super::yaml::{check_flow_depth, DuplicateKey, StrictValue, MAX_FLOW_DEPTH};
use kubeplane_registry::validation::{
    check_replicas, check_taint, check_taint_effect, validate_annotations_size, validate_labels,
    MAX_REPLICAS,
};

const SCENARIO_API_VERSION: &str = "kubeplane.io/v1alpha1";
const SCHEDULER_CONFIG_API_VERSION: &str = "kubescheduler.config.k8s.io/v1";

/// Parses input files (display name, content), in order. Each file is a YAML stream of
/// `---`-separated documents; documents that hold nothing (only comments) are skipped.
pub fn parse_files(files: &[(String, String)]) -> Result<Input, InputError> {
    parse_files_for(files, None)
}

/// [`parse_files`] for a Kubernetes release that overrides the Scenario's
/// `spec.kubernetesVersion` (`--kubernetes-version`); the feature gates are checked against it.
pub fn parse_files_for(
    files: &[(String, String)],
    kubernetes_version: Option<KubeVersion>,
) -> Result<Input, InputError> {
    let mut b = Builder {
        kubernetes_version,
        ..Builder::default()
    };
    for (name, content) in files {
        b.file(name, content)?;
    }
    let mut total_replicas = 0i64;
    for o in &b.objects {
        let replicas = match &o.object {
            Object::ReplicaSet(rs) => rs.spec.as_ref().and_then(|s| s.replicas),
            Object::Deployment(d) => d.spec.as_ref().and_then(|s| s.replicas),
            _ => None,
        };
        total_replicas += i64::from(replicas.unwrap_or(0));
        if total_replicas > i64::from(MAX_REPLICAS) {
            return Err(InputError {
                file: o.source.file.clone(),
                doc: Some((o.source.doc_index, o.source.what())),
                field: Some(
                    o.source
                        .item
                        .map(|i| format!("items[{i}].spec.replicas"))
                        .unwrap_or_else(|| "spec.replicas".into()),
                ),
                message: format!(
                    "Invalid value: {}: the ReplicaSets and Deployments of the initial state ask for {total_replicas} replicas in all, more than {MAX_REPLICAS} (kubeplane simulates clusters of at most 150,000 pods, upstream's scalability threshold)",
                    replicas.unwrap_or(0)
                ),
            });
        }
    }
    if b.objects.is_empty() && b.scenario.is_none() && b.scheduler_configs.is_empty() {
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        return Err(InputError {
            file: match names.as_slice() {
                [] => "the input".to_string(),
                names => names.join(", "),
            },
            doc: None,
            field: None,
            message: "no objects passed to simulate: the input holds no Kubernetes object, \
                      KubeSchedulerConfiguration or Scenario (only comments or empty documents)"
                .to_string(),
        });
    }
    Ok(b.finish(files.first().map(|(n, _)| n.as_str())))
}

/// Reads a file that holds one YAML document (such as `--scheduler-config`) as strictly as the
/// input files: duplicate keys and flow collections nested too deeply are errors.
pub fn parse_yaml_document(file: &str, content: &str) -> Result<Value, InputError> {
    let error = |field: Option<String>, message: String| InputError {
        file: file.to_string(),
        doc: None,
        field,
        message,
    };
    if let Err(deep) = check_flow_depth(content) {
        return Err(error(
            None,
            format!(
                "invalid YAML: flow collections ('[' and '{{') nested more than {MAX_FLOW_DEPTH} levels deep at line {} column {}",
                deep.line, deep.column
            ),
        ));
    }
    let duplicate = RefCell::new(None);
    let seed = StrictValue {
        path: String::new(),
        duplicate: &duplicate,
    };
    seed.deserialize(serde_yaml_ng::Deserializer::from_str(content))
        .map_err(|e| match duplicate.take() {
            Some(DuplicateKey { path, key }) => error(
                Some(path),
                format!("Duplicate value: key {key:?} already set in map; a mapping holds each key once"),
            ),
            None => error(None, e.to_string()),
        })
}

#[derive(Default)]
struct Builder {
    objects: Vec<SourcedObject>,
    /// Where each named object of the initial state was defined, to reject duplicates.
    defined: HashMap<ObjectKey, Source>,
    scheduler_configs: Vec<(Source, Value)>,
    scenario: Option<(Source, Scenario)>,
    /// `--kubernetes-version`, which overrides the Scenario's.
    kubernetes_version: Option<KubeVersion>,
}

/// The `Kind ns/name` label of a document, from whatever it holds (for messages).
fn doc_label(v: &Value) -> String {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let meta = v.get("metadata");
    let field = |f: &str| {
        meta.and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let name = match field("name") {
        "" => field("generateName"),
        n => n,
    };
    let namespace = match manifest_kind(api_version, kind) {
        Ok(k) if k.is_namespaced() => match field("namespace") {
            "" => "default",
            ns => ns,
        },
        Ok(_) => "",
        Err(_) => field("namespace"),
    };
    describe(kind, namespace, name)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

/// `apiVersion` or `kind` of a document: a non-empty string.
fn header<'a>(v: &'a Value, field: &str) -> Result<&'a str, FieldError> {
    match v.get(field) {
        None | Some(Value::Null) => Err(FieldError::at(
            field,
            format!(
                "Required value: every document needs apiVersion and kind (one of: {SUPPORTED})"
            ),
        )),
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(other) => Err(FieldError::at(
            field,
            format!("must be a non-empty string, found {}", type_name(other)),
        )),
    }
}

/// A manifest's objects: one, or the items of a `v1` List in order (with their index).
fn manifest(v: &Value) -> Result<Vec<(Option<usize>, Object)>, FieldError> {
    if !v.is_object() {
        return Err(FieldError {
            field: None,
            message: format!(
                "expected a mapping with apiVersion and kind, found {}",
                type_name(v)
            ),
        });
    }
    let kind = header(v, "kind")?;
    let api_version = header(v, "apiVersion")?;
    if kind != "List" {
        return Ok(vec![(None, parse_object(v)?)]);
    }
    if api_version != "v1" {
        return Err(FieldError::at(
            "apiVersion",
            format!("unsupported apiVersion {api_version:?} for List (expected \"v1\")"),
        ));
    }
    let items = match v.get("items") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(FieldError::at(
                "items",
                format!("expected a sequence of objects, found {}", type_name(other)),
            ))
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let within = |e: FieldError| e.within(&format!("items[{i}]"));
        if !item.is_object() {
            return Err(within(FieldError {
                field: None,
                message: format!("expected an object, found {}", type_name(item)),
            }));
        }
        let item_kind = header(item, "kind").map_err(within)?;
        header(item, "apiVersion").map_err(within)?;
        if matches!(
            item_kind,
            "List" | "Scenario" | "KubeSchedulerConfiguration"
        ) {
            return Err(within(FieldError::at(
                "kind",
                format!("a List holds Kubernetes objects, not a {item_kind}"),
            )));
        }
        out.push((Some(i), parse_object(item).map_err(within)?));
    }
    Ok(out)
}

impl Builder {
    fn file(&mut self, file: &str, content: &str) -> Result<(), InputError> {
        if let Err(deep) = check_flow_depth(content) {
            return Err(InputError {
                file: file.to_string(),
                doc: Some((deep.doc_index, String::new())),
                field: None,
                message: format!(
                    "invalid YAML: flow collections ('[' and '{{') nested more than {MAX_FLOW_DEPTH} levels deep at line {} column {}",
                    deep.line, deep.column
                ),
            });
        }
        for (doc_index, doc) in serde_yaml_ng::Deserializer::from_str(content).enumerate() {
            let duplicate = RefCell::new(None);
            let seed = StrictValue {
                path: String::new(),
                duplicate: &duplicate,
            };
            let value = seed.deserialize(doc).map_err(|e| {
                let at = e
                    .location()
                    .map(|l| {
                        format!(
                            " (in the mapping at line {} column {})",
                            l.line(),
                            l.column()
                        )
                    })
                    .unwrap_or_default();
                match duplicate.take() {
                    Some(DuplicateKey { path, key }) => InputError {
                        file: file.to_string(),
                        doc: Some((doc_index, String::new())),
                        field: Some(path),
                        message: format!(
                            "Duplicate value: key {key:?} already set in map{at}; a mapping holds each key once"
                        ),
                    },
                    None => InputError {
                        file: file.to_string(),
                        doc: Some((doc_index, String::new())),
                        field: None,
                        message: format!("invalid YAML: {e}"),
                    },
                }
            })?;
            if value.is_null() {
                continue;
            }
            self.document(file, doc_index, &value)?;
        }
        Ok(())
    }

    fn document(&mut self, file: &str, doc_index: usize, v: &Value) -> Result<(), InputError> {
        let label = doc_label(v);
        let err = |e: FieldError| InputError {
            file: file.to_string(),
            doc: Some((doc_index, label.clone())),
            field: e.field,
            message: e.message,
        };
        let source = |kind: &str, namespace: &str, name: &str, item| Source {
            file: file.to_string(),
            doc_index,
            item,
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        if !v.is_object() {
            return Err(err(FieldError {
                field: None,
                message: format!(
                    "expected a mapping with apiVersion and kind, found {}",
                    type_name(v)
                ),
            }));
        }
        let kind = header(v, "kind").map_err(err)?;
        let api_version = header(v, "apiVersion").map_err(err)?;
        let name = v
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        match kind {
            "Scenario" => {
                if api_version != SCENARIO_API_VERSION {
                    return Err(err(FieldError::at(
                        "apiVersion",
                        format!(
                            "unsupported apiVersion {api_version:?} for Scenario (expected {SCENARIO_API_VERSION:?})"
                        ),
                    )));
                }
                if let Some((first, _)) = &self.scenario {
                    return Err(err(FieldError::at(
                        "kind",
                        format!(
                            "a second Scenario (the first is {first}); an input holds at most one"
                        ),
                    )));
                }
                let scenario = parse_scenario(v, self.kubernetes_version).map_err(err)?;
                self.scenario = Some((source("Scenario", "", name, None), scenario));
            }
            "KubeSchedulerConfiguration" => {
                if api_version != SCHEDULER_CONFIG_API_VERSION {
                    return Err(err(FieldError::at(
                        "apiVersion",
                        format!(
                            "unsupported apiVersion {api_version:?} for KubeSchedulerConfiguration (expected {SCHEDULER_CONFIG_API_VERSION:?})"
                        ),
                    )));
                }
                self.scheduler_configs.push((
                    source("KubeSchedulerConfiguration", "", name, None),
                    v.clone(),
                ));
            }
            _ => {
                for (item, object) in manifest(v).map_err(err)? {
                    let meta = object.meta();
                    let display_name = match object.name() {
                        "" => meta.generate_name.as_deref().unwrap_or(""),
                        n => n,
                    };
                    let src = source(
                        object.kind().as_str(),
                        object.namespace(),
                        display_name,
                        item,
                    );
                    if !object.name().is_empty() {
                        if let Some(first) = self.defined.get(&object.key()) {
                            let prefix = item.map(|i| format!("items[{i}]")).unwrap_or_default();
                            return Err(err(FieldError::at(
                                join(&prefix, "metadata.name"),
                                format!(
                                    "{} is defined twice (first in {first}); objects of the initial state must be unique by kind, namespace and name",
                                    object.key()
                                ),
                            )));
                        }
                        self.defined.insert(object.key(), src.clone());
                    }
                    self.objects.push(SourcedObject {
                        source: src,
                        object,
                    });
                }
            }
        }
        Ok(())
    }

    fn finish(self, first_file: Option<&str>) -> Input {
        let (scenario_source, mut scenario) = match self.scenario {
            Some((src, s)) => (Some(src), s),
            None => (None, Scenario::for_version(self.kubernetes_version)),
        };
        if scenario.name.is_empty() {
            scenario.name = first_file.map(file_stem).unwrap_or_default();
        }
        Input {
            objects: self.objects,
            scheduler_configs: self.scheduler_configs,
            scenario,
            scenario_source,
        }
    }
}

/// `dir/web.yaml` -> `web`; `-` -> `stdin`.
fn file_stem(file: &str) -> String {
    if file == "-" {
        return "stdin".to_string();
    }
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem = base
        .strip_suffix(".yaml")
        .or_else(|| base.strip_suffix(".yml"))
        .or_else(|| base.strip_suffix(".json"))
        .unwrap_or(base);
    stem.to_string()
}

// ---------------------------------------------------------------------------------------------
// scalar types of the Scenario

/// A duration: Go-style (`300ms`, `1h30m`) or a bare number of seconds.
#[derive(Copy, Clone, Debug)]
struct Dur(SimDuration);

struct DurVisitor;

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
struct Latency(Option<SimDuration>);

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
struct Text(String);

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
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// Tells `field: null` (`Some(None)`) from an absent field (`None`, with `#[serde(default)]`).
fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

// ---------------------------------------------------------------------------------------------
// the Scenario document, as written

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ScenarioDoc {
    #[serde(default)]
    metadata: Option<ScenarioMeta>,
    #[serde(default)]
    spec: Option<SpecRaw>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Accepted for the look of an ordinary object; only the name is used.
struct ScenarioMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SpecRaw {
    #[serde(default)]
    start_time: Option<String>,
    #[serde(default)]
    duration: Option<Dur>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    pod_startup_latency: Option<Latency>,
    #[serde(default)]
    kubernetes_version: Option<Value>,
    #[serde(default)]
    feature_gates: Option<BTreeMap<String, bool>>,
    #[serde(default)]
    steps: Option<Vec<StepRaw>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StepRaw {
    #[serde(default)]
    at: Option<Dur>,
    #[serde(default)]
    apply: Option<Value>,
    #[serde(default)]
    delete: Option<DeleteRaw>,
    #[serde(default)]
    taint: Option<TaintRaw>,
    #[serde(default)]
    untaint: Option<UntaintRaw>,
    #[serde(default)]
    cordon: Option<NodeRaw>,
    #[serde(default)]
    uncordon: Option<NodeRaw>,
    #[serde(default)]
    scale: Option<ScaleRaw>,
    #[serde(default)]
    annotate: Option<MetaEditRaw>,
    #[serde(default)]
    label: Option<MetaEditRaw>,
    #[serde(default)]
    node_down: Option<NodeRaw>,
    #[serde(default)]
    node_up: Option<NodeRaw>,
    #[serde(default)]
    node_condition: Option<NodeConditionRaw>,
    #[serde(default)]
    pod_status: Option<PodStatusRaw>,
    #[serde(default)]
    expect: Option<Vec<Value>>,
}

/// Every action a step may have, as written.
const ACTIONS: &str = "apply, delete, taint, untaint, cordon, uncordon, scale, annotate, label, \
     nodeDown, nodeUp, nodeCondition, podStatus, expect";

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DeleteRaw {
    kind: String,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    grace_period_seconds: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaintRaw {
    node: String,
    key: String,
    #[serde(default)]
    value: Option<String>,
    effect: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UntaintRaw {
    node: String,
    key: String,
    #[serde(default)]
    effect: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeRaw {
    node: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScaleRaw {
    kind: String,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    replicas: i32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MetaEditRaw {
    kind: String,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    set: BTreeMap<String, Text>,
    #[serde(default)]
    remove: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeConditionRaw {
    node: String,
    #[serde(rename = "type")]
    type_: String,
    status: String,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PodStatusRaw {
    pod: String,
    #[serde(default)]
    phase: Option<String>,
    #[serde(default)]
    ready: Option<bool>,
    #[serde(default)]
    restart_count: Option<i32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PodAssertRaw {
    pod: String,
    #[serde(default)]
    exists: Option<bool>,
    #[serde(default, deserialize_with = "nullable")]
    node: Option<Option<String>>,
    #[serde(default)]
    node_in: Option<Vec<String>>,
    #[serde(default)]
    phase: Option<String>,
    #[serde(default)]
    ready: Option<bool>,
    #[serde(default)]
    terminating: Option<bool>,
    #[serde(default, deserialize_with = "nullable")]
    nominated_node: Option<Option<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PodsAssertRaw {
    #[serde(default)]
    pods: Option<PodsFilterRaw>,
    count: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PodsFilterRaw {
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    selector: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    node: Option<Option<String>>,
    #[serde(default)]
    phase: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EventAssertRaw {
    event: EventFilterRaw,
    #[serde(default)]
    count: Option<usize>,
    #[serde(default)]
    first_at: Option<Dur>,
    #[serde(default)]
    tolerance: Option<Dur>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EventFilterRaw {
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    object: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    message_contains: Option<OneOrMany>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ReplicaSetAssertRaw {
    replica_set: String,
    #[serde(default)]
    exists: Option<bool>,
    #[serde(default)]
    replicas: Option<i32>,
    #[serde(default)]
    ready_replicas: Option<i32>,
    #[serde(default)]
    available_replicas: Option<i32>,
}

/// Deserializes a value, reporting a failure at its path below `path`.
fn de<T: DeserializeOwned>(v: &Value, path: &str) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        FieldError {
            field: path_string(e.path()),
            message: e.inner().to_string(),
        }
        .within(path)
    })
}

// ---------------------------------------------------------------------------------------------
// from what is written to the model

fn parse_scenario(v: &Value, version: Option<KubeVersion>) -> Result<Scenario, FieldError> {
    let mut body = v.clone();
    if let Value::Object(m) = &mut body {
        m.remove("apiVersion");
        m.remove("kind");
    }
    let doc: ScenarioDoc = de(&body, "")?;
    let mut s = Scenario {
        name: doc.metadata.and_then(|m| m.name).unwrap_or_default(),
        ..Scenario::default()
    };
    let Some(spec) = doc.spec else {
        return Ok(Scenario {
            name: s.name,
            ..Scenario::for_version(version)
        });
    };
    (s.kubernetes_version, s.feature_gates) = super::version::resolve(
        spec.kubernetes_version.as_ref(),
        spec.feature_gates.as_ref(),
        version,
    )?;
    if let Some(t) = spec.start_time {
        s.start_time = t.trim().parse().map_err(|e| {
            FieldError::at(
                "spec.startTime",
                format!(
                    "invalid timestamp {t:?} ({e}); expected an RFC 3339 time like 2025-01-01T00:00:00Z"
                ),
            )
        })?;
    }
    s.duration = spec.duration.map(|d| d.0);
    s.seed = spec.seed.unwrap_or(0);
    if let Some(l) = spec.pod_startup_latency {
        s.pod_startup_latency = l.0;
    }
    for (i, raw) in spec.steps.unwrap_or_default().into_iter().enumerate() {
        let path = format!("spec.steps[{i}]");
        let Some(at) = raw.at else {
            return Err(FieldError::at(
                join(&path, "at"),
                "Required value: when the step happens (a duration since t=0, like 30s)",
            ));
        };
        let at = SimTime(at.0 .0);
        if let Some(duration) = s.duration.filter(|&d| at > SimTime::ZERO + d) {
            let show = |d: SimDuration| kubeplane_core::duration::format_duration(d);
            return Err(FieldError::at(
                join(&path, "at"),
                format!(
                    "Invalid value: \"{}\": after the end of the scenario (spec.duration {}): the step would never run",
                    show(at - SimTime::ZERO),
                    show(duration)
                ),
            ));
        }
        for action in step_actions(raw, &path)? {
            s.steps.push(Step {
                at,
                index: i,
                action,
            });
        }
    }
    // Stable: steps due at the same time keep their order in the file.
    s.steps.sort_by_key(|step| step.at);
    Ok(s)
}

/// `namespace/name` or `name` (namespace `default`).
fn pod_ref(s: &str, path: &str) -> Result<(String, String), FieldError> {
    let r = object_ref(s, path)?;
    Ok((r.namespace.unwrap_or_else(|| "default".into()), r.name))
}

fn object_ref(s: &str, path: &str) -> Result<ObjectRef, FieldError> {
    let bad = || {
        FieldError::at(
            path,
            format!("invalid reference {s:?}: expected namespace/name or name"),
        )
    };
    let parts: Vec<&str> = s.trim().split('/').collect();
    match parts.as_slice() {
        [name] if !name.is_empty() => Ok(ObjectRef {
            namespace: None,
            name: name.to_string(),
        }),
        [ns, name] if !ns.is_empty() && !name.is_empty() => Ok(ObjectRef {
            namespace: Some(ns.to_string()),
            name: name.to_string(),
        }),
        _ => Err(bad()),
    }
}

const PHASES: [&str; 5] = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];

fn check_phase(phase: &str, path: &str) -> Result<(), FieldError> {
    if PHASES.contains(&phase) {
        Ok(())
    } else {
        Err(FieldError::at(
            path,
            format!(
                "Unsupported value: {phase:?}: supported values: {}",
                PHASES.join(", ")
            ),
        ))
    }
}

fn non_empty(s: &str, path: &str) -> Result<(), FieldError> {
    if s.trim().is_empty() {
        Err(FieldError::at(path, "Required value"))
    } else {
        Ok(())
    }
}

/// The key of an object a step refers to by kind, name and namespace.
fn step_key(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    path: &str,
    allowed: &[Kind],
) -> Result<ObjectKey, FieldError> {
    let k = Kind::parse(kind.trim()).filter(|k| allowed.contains(k));
    let Some(k) = k else {
        let names: Vec<&str> = allowed.iter().map(|k| k.as_str()).collect();
        return Err(FieldError::at(
            join(path, "kind"),
            format!(
                "Unsupported value: {kind:?}: supported values: {}",
                names.join(", ")
            ),
        ));
    };
    non_empty(name, &join(path, "name"))?;
    let ns = namespace.filter(|ns| !ns.is_empty()).unwrap_or("default");
    Ok(ObjectKey::new(k, ns, name))
}

const USER_KINDS: [Kind; 7] = [
    Kind::Namespace,
    Kind::Node,
    Kind::PriorityClass,
    Kind::Deployment,
    Kind::ReplicaSet,
    Kind::PodDisruptionBudget,
    Kind::Pod,
];

const NODE_CONDITIONS: [&str; 5] = [
    "Ready",
    "MemoryPressure",
    "DiskPressure",
    "PIDPressure",
    "NetworkUnavailable",
];

fn step_actions(raw: StepRaw, path: &str) -> Result<Vec<StepAction>, FieldError> {
    let given: Vec<&str> = [
        ("apply", raw.apply.is_some()),
        ("delete", raw.delete.is_some()),
        ("taint", raw.taint.is_some()),
        ("untaint", raw.untaint.is_some()),
        ("cordon", raw.cordon.is_some()),
        ("uncordon", raw.uncordon.is_some()),
        ("scale", raw.scale.is_some()),
        ("annotate", raw.annotate.is_some()),
        ("label", raw.label.is_some()),
        ("nodeDown", raw.node_down.is_some()),
        ("nodeUp", raw.node_up.is_some()),
        ("nodeCondition", raw.node_condition.is_some()),
        ("podStatus", raw.pod_status.is_some()),
        ("expect", raw.expect.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, present)| present.then_some(name))
    .collect();
    match given.as_slice() {
        [_] => {}
        [] => {
            return Err(FieldError::at(
                path,
                format!("a step needs an action (one of {ACTIONS})"),
            ))
        }
        many => {
            return Err(FieldError::at(
                path,
                format!(
                    "a step has exactly one action, found {}; write one step per action",
                    many.join(" and ")
                ),
            ))
        }
    }
    let one = |a: StepAction| Ok(vec![a]);
    if let Some(v) = raw.apply {
        let p = join(path, "apply");
        if let Some(kind @ ("Scenario" | "KubeSchedulerConfiguration")) =
            v.get("kind").and_then(Value::as_str)
        {
            return Err(FieldError::at(
                join(&p, "kind"),
                format!("apply takes a Kubernetes object, not a {kind}"),
            ));
        }
        let objects = manifest(&v).map_err(|e| e.within(&p))?;
        for (item, o) in &objects {
            if o.name().is_empty() {
                let at = item.map(|i| format!("items[{i}].")).unwrap_or_default();
                return Err(FieldError::at(
                    format!("{p}.{at}metadata.name"),
                    "Required value: an applied object needs a name (generateName is only for the initial state)",
                ));
            }
        }
        return Ok(objects
            .into_iter()
            .map(|(_, o)| StepAction::Apply(o))
            .collect());
    }
    if let Some(d) = raw.delete {
        let p = join(path, "delete");
        let key = step_key(&d.kind, &d.name, d.namespace.as_deref(), &p, &USER_KINDS)?;
        if let Some(g) = d.grace_period_seconds.filter(|g| *g < 0) {
            return Err(FieldError::at(
                join(&p, "gracePeriodSeconds"),
                format!("Invalid value: {g}: must be greater than or equal to 0"),
            ));
        }
        return one(StepAction::Delete {
            key,
            grace_period_secs: d.grace_period_seconds,
        });
    }
    if let Some(t) = raw.taint {
        let p = join(path, "taint");
        non_empty(&t.node, &join(&p, "node"))?;
        check_taint(&t.key, t.value.as_deref(), &t.effect, &p)?;
        return one(StepAction::Taint {
            node: t.node,
            taint: Taint {
                key: t.key,
                value: t.value,
                effect: t.effect,
                time_added: None,
            },
        });
    }
    if let Some(u) = raw.untaint {
        let p = join(path, "untaint");
        non_empty(&u.node, &join(&p, "node"))?;
        non_empty(&u.key, &join(&p, "key"))?;
        if let Some(e) = &u.effect {
            check_taint_effect(e, &join(&p, "effect"))?;
        }
        return one(StepAction::Untaint {
            node: u.node,
            key: u.key,
            effect: u.effect,
        });
    }
    let node_action = |n: NodeRaw, name: &str| -> Result<String, FieldError> {
        non_empty(&n.node, &format!("{path}.{name}.node"))?;
        Ok(n.node)
    };
    if let Some(n) = raw.cordon {
        return one(StepAction::Cordon {
            node: node_action(n, "cordon")?,
        });
    }
    if let Some(n) = raw.uncordon {
        return one(StepAction::Uncordon {
            node: node_action(n, "uncordon")?,
        });
    }
    if let Some(n) = raw.node_down {
        return one(StepAction::NodeDown {
            node: node_action(n, "nodeDown")?,
        });
    }
    if let Some(n) = raw.node_up {
        return one(StepAction::NodeUp {
            node: node_action(n, "nodeUp")?,
        });
    }
    if let Some(s) = raw.scale {
        let p = join(path, "scale");
        let key = step_key(
            &s.kind,
            &s.name,
            s.namespace.as_deref(),
            &p,
            &[Kind::ReplicaSet, Kind::Deployment],
        )?;
        check_replicas(Some(s.replicas), &join(&p, "replicas"))?;
        return one(StepAction::Scale {
            key,
            replicas: s.replicas,
        });
    }
    for (name, edit) in [("annotate", raw.annotate), ("label", raw.label)] {
        let Some(m) = edit else {
            continue;
        };
        let p = join(path, name);
        let key = step_key(&m.kind, &m.name, m.namespace.as_deref(), &p, &USER_KINDS)?;
        let set: BTreeMap<String, String> = m.set.into_iter().map(|(k, v)| (k, v.0)).collect();
        if name == "label" {
            validate_labels(Some(&set), &join(&p, "set"))?;
        } else {
            validate_annotations_size(Some(&set), &join(&p, "set"))?;
        }
        for (field, keys) in [
            ("set", set.keys().collect::<Vec<_>>()),
            ("remove", m.remove.iter().collect()),
        ] {
            for k in keys {
                is_qualified_name(k).map_err(|e| {
                    FieldError::at(join(&p, field), format!("Invalid value: {k:?}: {e}"))
                })?;
            }
        }
        let (set, remove) = (set, m.remove);
        return one(if name == "label" {
            StepAction::Label { key, set, remove }
        } else {
            StepAction::Annotate { key, set, remove }
        });
    }
    if let Some(c) = raw.node_condition {
        let p = join(path, "nodeCondition");
        non_empty(&c.node, &join(&p, "node"))?;
        if !NODE_CONDITIONS.contains(&c.type_.as_str()) {
            return Err(FieldError::at(
                join(&p, "type"),
                format!(
                    "Unsupported value: {:?}: supported values: {}",
                    c.type_,
                    NODE_CONDITIONS.join(", ")
                ),
            ));
        }
        if !matches!(c.status.as_str(), "True" | "False" | "Unknown") {
            return Err(FieldError::at(
                join(&p, "status"),
                format!(
                    "Unsupported value: {:?}: supported values: True, False, Unknown (quote them: 'True')",
                    c.status
                ),
            ));
        }
        return one(StepAction::NodeCondition {
            node: c.node,
            type_: c.type_,
            status: c.status,
            reason: c.reason,
        });
    }
    if let Some(s) = raw.pod_status {
        let p = join(path, "podStatus");
        let (namespace, name) = pod_ref(&s.pod, &join(&p, "pod"))?;
        if let Some(ph) = &s.phase {
            check_phase(ph, &join(&p, "phase"))?;
        }
        if let Some(rc) = s.restart_count.filter(|rc| *rc < 0) {
            return Err(FieldError::at(
                join(&p, "restartCount"),
                format!("Invalid value: {rc}: must be greater than or equal to 0"),
            ));
        }
        if s.phase.is_none() && s.ready.is_none() && s.restart_count.is_none() {
            return Err(FieldError::at(
                p,
                "Required value: one of phase, ready or restartCount",
            ));
        }
        return one(StepAction::PodStatus {
            namespace,
            name,
            phase: s.phase,
            ready: s.ready,
            restart_count: s.restart_count,
        });
    }
    let p = join(path, "expect");
    let mut assertions = Vec::new();
    for (j, a) in raw.expect.unwrap_or_default().iter().enumerate() {
        assertions.push(parse_assertion(a, &format!("{p}[{j}]"))?);
    }
    one(StepAction::Expect(assertions))
}

/// The assertion kinds, in the order messages list them.
const ASSERTION_KINDS: [&str; 4] = ["pod", "pods", "event", "replicaSet"];

fn parse_assertion(v: &Value, path: &str) -> Result<Assertion, FieldError> {
    let Value::Object(m) = v else {
        return Err(FieldError::at(
            path,
            format!(
                "an assertion is a mapping with one of pod, pods, event or replicaSet, found {}",
                type_name(v)
            ),
        ));
    };
    let kinds: Vec<&str> = ASSERTION_KINDS
        .into_iter()
        .filter(|k| m.contains_key(*k))
        .collect();
    let kind = match kinds.as_slice() {
        [k] => *k,
        [] => {
            let keys: Vec<&str> = m.keys().map(String::as_str).collect();
            return Err(FieldError::at(
                path,
                format!(
                    "an assertion needs one of pod, pods, event or replicaSet, found {}",
                    if keys.is_empty() {
                        "nothing".to_string()
                    } else {
                        keys.join(", ")
                    }
                ),
            ));
        }
        many => {
            return Err(FieldError::at(
                path,
                format!(
                    "an assertion checks one thing, found {}; write one assertion for each",
                    many.join(" and ")
                ),
            ))
        }
    };
    match kind {
        "pod" => {
            let r: PodAssertRaw = de(v, path)?;
            let (namespace, name) = pod_ref(&r.pod, &join(path, "pod"))?;
            if let Some(ph) = &r.phase {
                check_phase(ph, &join(path, "phase"))?;
            }
            Ok(Assertion::Pod(PodAssertion {
                namespace,
                name,
                exists: r.exists,
                node: r.node,
                node_in: r.node_in,
                phase: r.phase,
                ready: r.ready,
                terminating: r.terminating,
                nominated_node: r.nominated_node,
            }))
        }
        "pods" => {
            let r: PodsAssertRaw = de(v, path)?;
            let f = r.pods.unwrap_or(PodsFilterRaw {
                namespace: None,
                selector: None,
                node: None,
                phase: None,
            });
            let selector = match f.selector {
                None => None,
                Some(text) => {
                    let selector = parse_selector(&text)
                        .map_err(|e| FieldError::at(join(path, "pods.selector"), e.to_string()))?;
                    Some(ParsedSelector { text, selector })
                }
            };
            if let Some(ph) = &f.phase {
                check_phase(ph, &join(path, "pods.phase"))?;
            }
            Ok(Assertion::Pods(PodsAssertion {
                namespace: f.namespace.filter(|ns| !ns.is_empty()),
                selector,
                node: f.node,
                phase: f.phase,
                count: r.count,
            }))
        }
        "event" => {
            let r: EventAssertRaw = de(v, path)?;
            let object = match r.event.object {
                None => None,
                Some(o) => Some(object_ref(&o, &join(path, "event.object"))?),
            };
            let message_contains = match r.event.message_contains {
                None => Vec::new(),
                Some(OneOrMany::One(s)) => vec![s],
                Some(OneOrMany::Many(v)) => v,
            };
            Ok(Assertion::Event(EventAssertion {
                reason: r.event.reason,
                object,
                kind: r.event.kind,
                message_contains,
                count: r.count,
                first_at: r.first_at.map(|d| SimTime(d.0 .0)),
                tolerance: r.tolerance.map_or(SimDuration::ZERO, |d| d.0),
            }))
        }
        _ => {
            let r: ReplicaSetAssertRaw = de(v, path)?;
            let (namespace, name) = pod_ref(&r.replica_set, &join(path, "replicaSet"))?;
            Ok(Assertion::ReplicaSet(ReplicaSetAssertion {
                namespace,
                name,
                exists: r.exists,
                replicas: r.replicas,
                ready_replicas: r.ready_replicas,
                available_replicas: r.available_replicas,
            }))
        }
    }
}

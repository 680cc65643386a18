//! From YAML streams to an [`Input`]: split documents, tell objects, scheduler configurations
//! and the Scenario apart, and turn each into its validated form. The first problem found ends
//! parsing with an [`InputError`] naming the file, the document and the field.

use std::cell::RefCell;
use std::collections::HashMap;

use kubeplane_core::version::KubeVersion;
use kubeplane_registry::validation::MAX_REPLICAS;
use kubeplane_store::{Object, ObjectKey};
use serde::de::DeserializeSeed;
use serde_json::Value;

use super::crds::Crds;
use super::model::*;
use super::objects::{join, manifest_kind, parse_object, FieldError, SUPPORTED};
use super::steps::parse_scenario;
use super::yaml::{check_flow_depth, DuplicateKey, StrictValue, MAX_FLOW_DEPTH};

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
        crds: Crds::scan(files),
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
    /// The custom resource types of the whole input.
    crds: Crds,
}

/// The `Kind ns/name` label of a document, from whatever it holds (for messages).
fn doc_label(v: &Value, crds: &Crds) -> String {
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
    let namespace = match manifest_kind(api_version, kind, crds) {
        Ok(k) if k.is_namespaced() => match field("namespace") {
            "" => "default",
            ns => ns,
        },
        Ok(_) => "",
        Err(_) => field("namespace"),
    };
    describe(kind, namespace, name)
}

pub(super) fn type_name(v: &Value) -> &'static str {
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
pub(super) fn manifest(v: &Value, crds: &Crds) -> Result<Vec<(Option<usize>, Object)>, FieldError> {
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
        return Ok(vec![(None, parse_object(v, crds)?)]);
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
        out.push((Some(i), parse_object(item, crds).map_err(within)?));
    }
    Ok(out)
}

/// Reads a file's YAML documents as the loader does (flow depth checked first, each document
/// strictly: a duplicate key is an error naming its path) and hands each non-null one, with its
/// index, to `each`; the first error ends the reading.
pub(crate) fn read_documents(
    file: &str,
    content: &str,
    mut each: impl FnMut(usize, Value) -> Result<(), InputError>,
) -> Result<(), InputError> {
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
        each(doc_index, value)?;
    }
    Ok(())
}

impl Builder {
    fn file(&mut self, file: &str, content: &str) -> Result<(), InputError> {
        read_documents(file, content, |doc_index, value| {
            self.document(file, doc_index, &value)
        })
    }

    fn document(&mut self, file: &str, doc_index: usize, v: &Value) -> Result<(), InputError> {
        let label = doc_label(v, &self.crds);
        let err = |e: FieldError| InputError {
            file: file.to_string(),
            doc: Some((doc_index, label.clone())),
            field: e.field,
            message: e.message,
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
        let at = DocAt { file, doc_index };
        match kind {
            "Scenario" => self.scenario_document(v, api_version, at.source("Scenario", "", name, None)),
            "KubeSchedulerConfiguration" => {
                if api_version != SCHEDULER_CONFIG_API_VERSION {
                    return Err(err(FieldError::at(
                        "apiVersion",
                        format!(
                            "unsupported apiVersion {api_version:?} for KubeSchedulerConfiguration (expected {SCHEDULER_CONFIG_API_VERSION:?})"
                        ),
                    )));
                }
                let src = at.source("KubeSchedulerConfiguration", "", name, None);
                self.scheduler_configs.push((src, v.clone()));
                Ok(())
            }
            _ => self.manifest_document(v, at),
        }
        .map_err(err)
    }

    /// The Scenario of the input (at most one).
    fn scenario_document(
        &mut self,
        v: &Value,
        api_version: &str,
        src: Source,
    ) -> Result<(), FieldError> {
        if api_version != SCENARIO_API_VERSION {
            return Err(FieldError::at(
                "apiVersion",
                format!(
                    "unsupported apiVersion {api_version:?} for Scenario (expected {SCENARIO_API_VERSION:?})"
                ),
            ));
        }
        if let Some((first, _)) = &self.scenario {
            return Err(FieldError::at(
                "kind",
                format!("a second Scenario (the first is {first}); an input holds at most one"),
            ));
        }
        let scenario = parse_scenario(v, self.kubernetes_version, &self.crds)?;
        self.scenario = Some((src, scenario));
        Ok(())
    }

    /// The objects of a manifest (or List) in the initial state, unique by kind, namespace and
    /// name.
    fn manifest_document(&mut self, v: &Value, at: DocAt<'_>) -> Result<(), FieldError> {
        for (item, object) in manifest(v, &self.crds)? {
            let meta = object.meta();
            let display_name = match object.name() {
                "" => meta.generate_name.as_deref().unwrap_or(""),
                n => n,
            };
            let src = at.source(
                object.kind().as_str(),
                object.namespace(),
                display_name,
                item,
            );
            if !object.name().is_empty() {
                if let Some(first) = self.defined.get(&object.key()) {
                    let prefix = item.map(|i| format!("items[{i}]")).unwrap_or_default();
                    return Err(FieldError::at(
                        join(&prefix, "metadata.name"),
                        format!(
                            "{} is defined twice (first in {first}); objects of the initial state must be unique by kind, namespace and name",
                            object.key()
                        ),
                    ));
                }
                self.defined.insert(object.key(), src.clone());
            }
            self.objects.push(SourcedObject {
                source: src,
                object,
            });
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
        if !scenario.start_time_given {
            let latest = self
                .objects
                .iter()
                .filter_map(|o| latest_timestamp(&o.object))
                .max();
            if let Some(t) = latest.filter(|t| *t > scenario.start_time) {
                scenario.start_time = t;
            }
        }
        Input {
            objects: self.objects,
            scheduler_configs: self.scheduler_configs,
            scenario,
            scenario_source,
        }
    }
}

/// The object fields that hold a past instant (not `deletionTimestamp`, which a terminating
/// pod's grace period puts in the future).
const PAST_TIMESTAMPS: [&str; 11] = [
    "creationTimestamp",
    "lastTransitionTime",
    "lastHeartbeatTime",
    "lastProbeTime",
    "lastUpdateTime",
    "lastScaleTime",
    "startTime",
    "renewTime",
    "acquireTime",
    "startedAt",
    "time",
];

/// The latest instant an object records (its creation, conditions, container starts,
/// managedFields' times, a Lease's renewals).
fn latest_timestamp(obj: &Object) -> Option<jiff::Timestamp> {
    fn walk(v: &Value, latest: &mut Option<jiff::Timestamp>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match v {
                        Value::String(s) if PAST_TIMESTAMPS.contains(&k.as_str()) => {
                            if let Ok(t) = s.parse::<jiff::Timestamp>() {
                                *latest = (*latest).max(Some(t));
                            }
                        }
                        _ => walk(v, latest),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, latest)),
            _ => {}
        }
    }
    let mut latest = None;
    walk(&obj.to_json(), &mut latest);
    latest
}

/// Where a document is: its file and index.
#[derive(Copy, Clone)]
struct DocAt<'a> {
    file: &'a str,
    doc_index: usize,
}

impl DocAt<'_> {
    fn source(&self, kind: &str, namespace: &str, name: &str, item: Option<usize>) -> Source {
        Source {
            file: self.file.to_string(),
            doc_index: self.doc_index,
            item,
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
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

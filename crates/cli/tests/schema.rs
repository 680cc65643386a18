//! `kubeplane schema`: the JSON Schema of the Scenario document accepts every Scenario the
//! project ships (examples, conformance scenarios, the documentation's examples) and rejects
//! what the parser rejects, so the two cannot drift apart silently.

mod support;

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use support::validator::Validator;
use support::{conformance_scenarios, examples, kubeplane, repo_root, stdout};

fn schema() -> Value {
    let out = kubeplane(&["schema"]);
    assert!(out.status.success());
    serde_json::from_str(&stdout(&out)).expect("kubeplane schema prints JSON")
}

/// The documents of a YAML stream, as JSON values (empty documents left out).
fn documents(text: &str, name: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{name}: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

/// The ```yaml blocks of a Markdown file, each a complete valid input; a fragment that is a
/// list of assertions is put in an `expect` step of a Scenario (as the scenario parser's test
/// of docs/scenario-format.md does).
fn yaml_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim_end() == "```yaml" => current = Some(String::new()),
            Some(block) if line.starts_with("```") => {
                if block.starts_with("- ") {
                    let indented: String = block.lines().map(|l| format!("    {l}\n")).collect();
                    blocks.push(format!(
                        "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    expect:\n{indented}"
                    ));
                } else {
                    blocks.push(std::mem::take(block));
                }
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// Checks every document of `text` against the schema; returns how many were Scenarios.
fn check_stream(v: &Validator, text: &str, name: &str) -> usize {
    let mut n_scenarios = 0;
    for doc in documents(text, name) {
        let errors = v.errors(&doc);
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        n_scenarios += usize::from(doc["kind"] == "Scenario");
    }
    n_scenarios
}

#[test]
fn every_shipped_scenario_is_valid_under_the_schema() {
    let schema = schema();
    let v = Validator::new(&schema);
    let mut n_scenarios = 0;
    let files: Vec<_> = examples()
        .into_iter()
        .chain(conformance_scenarios())
        .collect();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        n_scenarios += check_stream(&v, &text, &f.display().to_string());
    }
    for doc in ["docs/scenario-format.md", "README.md"] {
        let text = std::fs::read_to_string(repo_root().join(doc)).unwrap();
        for (i, block) in yaml_blocks(&text).iter().enumerate() {
            n_scenarios += check_stream(&v, block, &format!("{doc} yaml block {}", i + 1));
        }
    }
    assert!(
        n_scenarios >= examples().len(),
        "only {n_scenarios} Scenario documents checked"
    );
}

/// A scenario file with one node, and the given Scenario document.
fn scenario_file(dir: &Path, name: &str, scenario: &str) -> String {
    let path = dir.join(format!("{name}.yaml"));
    let text = format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: n1}}\nstatus:\n  allocatable: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n---\n{scenario}"
    );
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const HEAD: &str = "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n";

/// Scenario documents the parser accepts; the schema must too.
const ACCEPTED: &[(&str, &str)] = &[
    ("bare numbers of seconds", "  duration: 90\n  steps:\n  - at: 0.25\n    cordon: {node: n1}\n  - at: \"30\"\n    uncordon: {node: n1}\n"),
    ("podStartupLatency never and feature gates", "  podStartupLatency: never\n  seed: 7\n  featureGates: {SchedulerPopFromBackoffQ: false}\n"),
    ("a Kubernetes version and a gate it has", "  kubernetesVersion: v1.35.2\n  featureGates: {OpportunisticBatching: false}\n"),
    ("a Kubernetes version written as a number", "  kubernetesVersion: 1.36\n"),
    ("label values written as numbers", "  steps:\n  - at: 1s\n    label: {kind: node, name: n1, set: {tier: 1, fast: true}, remove: [old]}\n"),
    ("null node and an empty pods filter", "  steps:\n  - at: 1s\n    expect:\n    - pod: default/p\n      node: null\n      exists: false\n    - pods: {}\n      count: 0\n    - pods:\n      count: 0\n"),
    ("messageContains as a list", "  steps:\n  - at: 1s\n    expect:\n    - event: {reason: Scheduled, messageContains: [a, b]}\n      count: 0\n      firstAt: 1m30s\n      tolerance: 500ms\n"),
    ("every other action", "  steps:\n  - at: 1s\n    taint: {node: n1, key: k, effect: NoExecute}\n  - at: 2s\n    untaint: {node: n1, key: k}\n  - at: 3s\n    nodeCondition: {node: n1, type: MemoryPressure, status: \"True\"}\n  - at: 4s\n    nodeDown: {node: n1}\n  - at: 5s\n    nodeUp: {node: n1}\n  - at: 6s\n    annotate: {kind: Node, name: n1, set: {a: b}}\n  - at: 7s\n    apply: {apiVersion: v1, kind: Namespace, metadata: {name: team}}\n  - at: 8s\n    delete: {kind: ns, name: team, gracePeriodSeconds: 0}\n  - at: 9s\n    expect:\n    - replicaSet: web\n      exists: false\n  - at: 10s\n    drain: {node: n1, ignoreDaemonSets: true, deleteEmptyDirData: true, force: true, gracePeriodSeconds: -1, timeout: 2m, podSelector: app=web, disableEviction: false}\n"),
];

/// Scenario documents the parser rejects; the schema must too.
const REJECTED: &[(&str, &str)] = &[
    (
        "an unknown step field",
        "  steps:\n  - at: 1s\n    reboot: {node: n1}\n",
    ),
    (
        "a drain option kubectl drain has but kubeplane does not offer",
        "  steps:\n  - at: 1s\n    drain: {node: n1, chunkSize: 5}\n",
    ),
    (
        "two actions in one step",
        "  steps:\n  - at: 1s\n    cordon: {node: n1}\n    nodeDown: {node: n1}\n",
    ),
    ("a step without an action", "  steps:\n  - at: 1s\n"),
    ("a step without at", "  steps:\n  - cordon: {node: n1}\n"),
    (
        "an assertion of two kinds",
        "  steps:\n  - at: 1s\n    expect:\n    - pod: p\n      event: {reason: Scheduled}\n",
    ),
    (
        "an unknown assertion field",
        "  steps:\n  - at: 1s\n    expect:\n    - pod: p\n      nodeName: n1\n",
    ),
    (
        "a pods assertion without count",
        "  steps:\n  - at: 1s\n    expect:\n    - pods: {node: n1}\n",
    ),
    (
        "a misspelt taint effect",
        "  steps:\n  - at: 1s\n    taint: {node: n1, key: k, effect: NoExecut}\n",
    ),
    (
        "an unquoted condition status",
        "  steps:\n  - at: 1s\n    nodeCondition: {node: n1, type: Ready, status: True}\n",
    ),
    (
        "an unknown feature gate",
        "  featureGates: {NoSuchGate: true}\n",
    ),
    (
        "an unsupported Kubernetes version",
        "  kubernetesVersion: \"1.33\"\n",
    ),
    (
        "a Kubernetes release candidate",
        "  kubernetesVersion: v1.35.0-rc.1\n",
    ),
    ("a duration in words", "  duration: 5 minutes\n"),
    ("a negative duration", "  duration: -5s\n"),
    (
        "a podStatus without a status",
        "  steps:\n  - at: 1s\n    podStatus: {pod: p}\n",
    ),
    (
        "an unknown phase",
        "  steps:\n  - at: 1s\n    expect:\n    - pod: p\n      phase: Started\n",
    ),
    (
        "negative replicas",
        "  steps:\n  - at: 1s\n    scale: {kind: rs, name: web, replicas: -1}\n",
    ),
    ("an unknown spec field", "  durations: 5m\n"),
];

#[test]
fn the_schema_accepts_and_rejects_what_the_parser_does() {
    let schema = schema();
    let v = Validator::new(&schema);
    let dir = std::env::temp_dir().join(format!("kubeplane-schema-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (what, spec)) in ACCEPTED.iter().chain(REJECTED).enumerate() {
        let accepted = i < ACCEPTED.len();
        let scenario = format!("{HEAD}{spec}");
        let doc: Value = serde_yaml_ng::from_str(&scenario).unwrap();
        let errors = v.errors(&doc);
        assert_eq!(errors.is_empty(), accepted, "schema on {what}: {errors:?}");
        let file = scenario_file(&dir, &format!("case{i}"), &scenario);
        let out = kubeplane(&["simulate", "--output", "jsonl", &file]);
        let parser_rejects = out.status.code() == Some(2);
        assert_eq!(
            !parser_rejects,
            accepted,
            "parser on {what}: {}",
            support::stderr(&out)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_schema_names_every_feature_gate_kubeplane_knows() {
    let schema = schema();
    let gates = &schema["definitions"]["ScenarioSpec"]["properties"]["featureGates"]["properties"];
    let mut in_schema: Vec<&str> = gates
        .as_object()
        .expect("featureGates has properties")
        .keys()
        .map(String::as_str)
        .collect();
    in_schema.sort_unstable();
    let known: Vec<&str> = kubeplane_core::features::GATES
        .iter()
        .map(|g| g.name)
        .collect();
    assert_eq!(in_schema, known);
}

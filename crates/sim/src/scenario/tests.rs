//! Tests of scenario parsing and validation: errors name the file, the document and the field.

use std::path::{Path, PathBuf};

use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;
use kubeplane_store::{Kind, ObjectKey};

use super::*;

fn parse_one(content: &str) -> Result<Input, InputError> {
    parse_files(&[("scenario.yaml".to_string(), content.to_string())])
}

// ---------------------------------------------------------------------------------------------
// the conformance scenarios

fn conformance_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/scenarios")
}

fn conformance_files() -> Option<Vec<PathBuf>> {
    let dir = conformance_dir();
    let Ok(categories) = std::fs::read_dir(&dir) else {
        eprintln!(
            "note: {} is absent; skipping the conformance scenarios",
            dir.display()
        );
        return None;
    };
    let mut files = Vec::new();
    for c in categories.flatten() {
        for f in std::fs::read_dir(c.path()).into_iter().flatten().flatten() {
            if f.path().extension().is_some_and(|e| e == "yaml") {
                files.push(f.path());
            }
        }
    }
    files.sort();
    Some(files)
}

/// The embedded `# acceptance.kubeplane.io/expect: {...}` of a conformance file.
fn embedded_expectation(content: &str) -> serde_json::Value {
    for line in content.lines().take_while(|l| l.starts_with('#')) {
        if let Some((_, json)) = line.split_once("acceptance.kubeplane.io/expect:") {
            return serde_json::from_str(json.trim()).expect("the embedded expectation is JSON");
        }
    }
    serde_json::Value::Null
}

/// Exit-2 scenarios whose rejection is the validation of a KubeSchedulerConfiguration's plugin
/// arguments: the engine's job (the parser passes scheduler configurations through as given).
const REJECTED_BY_THE_ENGINE: [&str; 3] = [
    "plugins_score/least-allocated-resource-weight-larger-than-maxnodescore.yaml",
    "plugins_score/least-allocated-resource-with-negative-weight.yaml",
    "plugins_score/most-allocated-resource-with-negative-weight.yaml",
];

fn count_assertions(input: &Input) -> usize {
    input
        .scenario
        .steps
        .iter()
        .map(|s| match &s.action {
            StepAction::Expect(list) => list.len(),
            _ => 0,
        })
        .sum()
}

#[test]
fn every_conformance_scenario_parses_or_is_rejected_as_its_expectation_says() {
    let Some(files) = conformance_files() else {
        return;
    };
    assert!(!files.is_empty());
    let dir = conformance_dir();
    let mut failures = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let content = std::fs::read_to_string(path).unwrap();
        let expect = embedded_expectation(&content);
        let exit_code = expect.get("exitCode").and_then(|v| v.as_i64()).unwrap_or(0);
        let result = parse_files(&[(rel.clone(), content.clone())]);
        if exit_code == 2 && !REJECTED_BY_THE_ENGINE.contains(&rel.as_str()) {
            match result {
                Ok(_) => failures.push(format!("{rel}: parsed, but must be rejected")),
                Err(e) => {
                    let msg = e.to_string().to_lowercase();
                    for s in expect["stderrContains"].as_array().into_iter().flatten() {
                        let s = s.as_str().unwrap().to_lowercase();
                        if !msg.contains(&s) {
                            failures.push(format!("{rel}: {msg:?} lacks {s:?}"));
                        }
                    }
                }
            }
            continue;
        }
        match result {
            Err(e) => failures.push(format!("{rel}: {e}")),
            Ok(input) => {
                if let Some(n) = expect.get("expectationRecords").and_then(|v| v.as_u64()) {
                    let got = count_assertions(&input);
                    if got as u64 != n {
                        failures.push(format!("{rel}: {got} assertions, expected {n}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A small deterministic generator for the garbling test (no wall clock, no unseeded source).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % bound.max(1)
    }
}

fn garbled(content: &str, rng: &mut Lcg) -> String {
    let mut bytes = content.as_bytes().to_vec();
    match rng.next(6) {
        0 => bytes.truncate(rng.next(bytes.len())),
        1 => {
            // Replace a few bytes by characters that matter to YAML.
            const NASTY: &[u8] = b":-[]{}#&*!|>'\"%@` \n\t0-1.5e9";
            for _ in 0..1 + rng.next(4) {
                let i = rng.next(bytes.len());
                bytes[i] = NASTY[rng.next(NASTY.len())];
            }
        }
        2 => {
            // Delete a line.
            let lines: Vec<&str> = content.lines().collect();
            let drop = rng.next(lines.len());
            let kept: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter_map(|(i, l)| (i != drop).then_some(*l))
                .collect();
            return kept.join("\n");
        }
        3 => {
            // Duplicate a line (duplicate keys, repeated list items).
            let mut lines: Vec<&str> = content.lines().collect();
            let i = rng.next(lines.len());
            if let Some(l) = lines.get(i).copied() {
                lines.insert(i, l);
            }
            return lines.join("\n");
        }
        4 => {
            // Change the indentation of a line.
            let mut lines: Vec<String> = content.lines().map(str::to_string).collect();
            let i = rng.next(lines.len());
            if let Some(l) = lines.get_mut(i) {
                if rng.next(2) == 0 {
                    l.insert_str(0, "  ");
                } else {
                    *l = l.trim_start().to_string();
                }
            }
            return lines.join("\n");
        }
        _ => {
            // Swap a value for a number, a null or a list.
            let lines: Vec<&str> = content.lines().collect();
            let i = rng.next(lines.len());
            let replacement = ["-5", "null", "[]", "{}", "1e400", "'x'", "~", "true"][rng.next(8)];
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            if let Some(l) = out.get_mut(i) {
                if let Some((k, _)) = l.split_once(": ") {
                    *l = format!("{k}: {replacement}");
                }
            }
            return out.join("\n");
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn garbled_conformance_scenarios_give_an_error_or_an_input_never_a_panic() {
    let Some(files) = conformance_files() else {
        return;
    };
    let mut rng = Lcg(7);
    let mut n_errors = 0;
    for path in &files {
        let content = std::fs::read_to_string(path).unwrap();
        for _ in 0..40 {
            let g = garbled(&content, &mut rng);
            let result = std::panic::catch_unwind(|| parse_one(&g));
            match result {
                Err(_) => panic!("parsing panicked on a garbled {}:\n{g}", path.display()),
                Ok(Err(e)) => {
                    n_errors += 1;
                    let msg = e.to_string();
                    assert!(msg.starts_with("scenario.yaml"), "{msg}");
                    assert!(!msg.contains('\n'), "one line: {msg}");
                }
                Ok(Ok(_)) => {}
            }
        }
    }
    assert!(n_errors > 0);
}

// ---------------------------------------------------------------------------------------------
// what a valid input becomes

const NODE: &str = "apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  capacity: {cpu: 4, memory: 8Gi, pods: '110'}
  allocatable: {cpu: '4', memory: 8Gi, pods: '110'}
";

const POD: &str = "apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  containers:
  - name: c
    image: pause
    resources: {requests: {cpu: 500m, memory: 1Gi}}
";

#[test]
fn an_input_without_a_scenario_gets_the_defaults() {
    let input = parse_one(&format!("{NODE}---\n{POD}")).unwrap();
    let s = &input.scenario;
    assert_eq!(s.name, "scenario");
    assert_eq!(s.start_time.to_string(), "2025-01-01T00:00:00Z");
    assert_eq!(s.duration, None);
    assert_eq!(s.seed, 0);
    assert_eq!(s.pod_startup_latency, Some(SimDuration::from_secs(1)));
    assert!(s.steps.is_empty());
    assert!(input.scenario_source.is_none());
    let kinds: Vec<Kind> = input.objects.iter().map(|o| o.object.kind()).collect();
    assert_eq!(kinds, [Kind::Node, Kind::Pod]);
    let pod = &input.objects[1];
    assert_eq!(pod.source.doc_index, 1);
    assert_eq!(
        pod.source.to_string(),
        "scenario.yaml: document 2 (Pod default/p1)"
    );
}

#[test]
fn the_kubernetes_version_is_read_in_every_form_and_sets_the_gate_defaults() {
    let scenario = |version: &str| {
        let text = format!("apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {{kubernetesVersion: {version}}}\n");
        parse_one(&text).unwrap().scenario
    };
    for (written, want) in [
        ("\"1.34.0\"", "v1.34.0"),
        ("v1.35.2", "v1.35.2"),
        ("1.35", "v1.35.4"),
        ("\"1.36\"", "v1.36.0"),
        ("1.37.0", "v1.37.0"),
    ] {
        let s = scenario(written);
        assert_eq!(s.kubernetes_version.to_string(), want, "{written}");
        assert_eq!(s.feature_gates.version().to_string(), want, "{written}");
    }
    assert!(scenario("1.34.0")
        .feature_gates
        .enabled("SchedulerAsyncAPICalls"));
    assert!(!scenario("1.34.2")
        .feature_gates
        .enabled("SchedulerAsyncAPICalls"));
    assert!(scenario("1.35.0")
        .feature_gates
        .enabled("OpportunisticBatching"));
    let none = parse_one(&format!("{NODE}---\n{POD}")).unwrap().scenario;
    assert_eq!(none.kubernetes_version, kubeplane_core::version::DEFAULT);
}

#[test]
fn the_kubernetes_version_given_to_the_parser_overrides_the_scenarios() {
    let parse_for = |text: &str, version: &str| {
        let files = [("scenario.yaml".to_string(), text.to_string())];
        parse_files_for(&files, Some(version.parse().unwrap()))
    };
    // The override decides which gates exist: v1.35 has OpportunisticBatching, v1.34 does not.
    let text = "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  kubernetesVersion: \"1.34.0\"\n  featureGates: {OpportunisticBatching: false}\n";
    assert!(parse_one(text).is_err());
    let s = parse_for(text, "1.35").unwrap().scenario;
    assert_eq!(s.kubernetes_version.to_string(), "v1.35.4");
    assert!(!s.feature_gates.enabled("OpportunisticBatching"));
    // And which are locked.
    let text = "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  kubernetesVersion: \"1.36\"\n  featureGates: {NodeDeclaredFeatures: false}\n";
    assert!(parse_one(text).is_ok());
    let err = parse_for(text, "1.37").unwrap_err().to_string();
    assert!(
        err.contains("spec.featureGates.NodeDeclaredFeatures"),
        "{err}"
    );
    // An input without a Scenario, or a Scenario without a spec, follows the override too.
    let s = parse_for(&format!("{NODE}---\n{POD}"), "1.34.0")
        .unwrap()
        .scenario;
    assert_eq!(s.kubernetes_version.to_string(), "v1.34.0");
    let bare = "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {name: x}\n";
    let s = parse_for(bare, "1.36").unwrap().scenario;
    assert_eq!(
        (s.name.as_str(), s.kubernetes_version.to_string()),
        ("x", "v1.36.0".into())
    );
    // A malformed field is an error even when overridden, as spec.seed is.
    let bad =
        "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {kubernetesVersion: \"1.x\"}\n";
    assert!(parse_for(bad, "1.35").is_err());
}

#[test]
fn comment_only_and_empty_documents_are_skipped_but_counted() {
    let input = parse_one(&format!("# a comment\n---\n# only a comment\n---\n{POD}")).unwrap();
    assert_eq!(input.objects.len(), 1);
    assert_eq!(input.objects[0].source.doc_index, 1);
}

#[test]
fn an_input_with_no_object_and_no_scenario_is_an_error() {
    for text in [
        "",
        "# nothing\n",
        "---\n---\n# c\n---\n",
        "apiVersion: v1\nkind: List\n",
    ] {
        let err = parse_one(text).unwrap_err();
        assert!(
            err.message.starts_with("no objects passed to simulate"),
            "{text:?}: {err}"
        );
        assert_eq!(err.file, "scenario.yaml");
    }
}

#[test]
fn a_list_expands_in_order_and_metadata_and_status_are_kept() {
    let input = parse_one(
        "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {zone: a}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: team, uid: u-1, creationTimestamp: '2024-12-31T00:00:00Z'}
  spec: {nodeName: n1, containers: [{name: c, image: pause}]}
  status: {phase: Running, conditions: [{type: Ready, status: 'True'}]}
",
    )
    .unwrap();
    assert_eq!(input.objects.len(), 2);
    let pod = &input.objects[1];
    assert_eq!(pod.source.item, Some(1));
    assert_eq!(
        pod.source.to_string(),
        "scenario.yaml: document 1, items[1] (Pod team/p)"
    );
    let p = pod.object.as_pod().unwrap();
    assert_eq!(p.metadata.uid.as_deref(), Some("u-1"));
    assert!(p.metadata.creation_timestamp.is_some());
    assert_eq!(p.phase(), Some("Running"));
}

const SCENARIO: &str = "apiVersion: kubeplane.io/v1alpha1
kind: Scenario
metadata: {name: example}
spec:
  startTime: '2025-06-01T12:00:00Z'
  duration: 10m
  seed: 42
  podStartupLatency: never
  featureGates: {SchedulerPopFromBackoffQ: false}
  steps:
  - at: 5m
    expect:
    - pod: default/p1
      node: n2
  - at: 30s
    taint: {node: n1, key: dedicated, value: db, effect: NoExecute}
  - at: 5m
    expect:
    - pod: p1
      node: null
      nominatedNode: null
    - pod: other/p2
      exists: false
  - at: 1.5
    cordon: {node: n1}
";

#[test]
fn the_scenario_fields_and_steps_are_read_and_steps_sorted_by_time_then_file_order() {
    let input = parse_one(SCENARIO).unwrap();
    let s = &input.scenario;
    assert_eq!(s.name, "example");
    assert_eq!(s.start_time.to_string(), "2025-06-01T12:00:00Z");
    assert_eq!(s.duration, Some(SimDuration::from_secs(600)));
    assert_eq!(s.seed, 42);
    assert_eq!(s.pod_startup_latency, None);
    assert!(!s.feature_gates.enabled("SchedulerPopFromBackoffQ"));
    let order: Vec<(SimTime, usize)> = s.steps.iter().map(|st| (st.at, st.index)).collect();
    assert_eq!(
        order,
        [
            (SimTime::from_millis(1500), 3),
            (SimTime::from_secs(30), 1),
            (SimTime::from_secs(300), 0),
            (SimTime::from_secs(300), 2),
        ]
    );
    let StepAction::Expect(list) = &s.steps[3].action else {
        panic!("expected an expect step");
    };
    let Assertion::Pod(p) = &list[0] else {
        panic!("expected a pod assertion");
    };
    assert_eq!((p.namespace.as_str(), p.name.as_str()), ("default", "p1"));
    assert_eq!(
        p.node,
        Some(None),
        "node: null is 'not bound', not 'not given'"
    );
    assert_eq!(p.nominated_node, Some(None));
    assert_eq!(p.phase, None);
    let Assertion::Pod(p2) = &list[1] else {
        panic!("expected a pod assertion");
    };
    assert_eq!(p2.namespace, "other");
    assert_eq!(p2.exists, Some(false));
    let StepAction::Expect(first) = &s.steps[2].action else {
        panic!("expected an expect step");
    };
    let Assertion::Pod(p) = &first[0] else {
        panic!("expected a pod assertion");
    };
    assert_eq!(p.node, Some(Some("n2".to_string())));
    assert!(input
        .scenario_source
        .as_ref()
        .is_some_and(|s| s.name == "example"));
}

#[test]
fn every_step_action_is_read() {
    let input = parse_one(
        "apiVersion: kubeplane.io/v1alpha1
kind: Scenario
spec:
  steps:
  - {at: 1s, apply: {apiVersion: v1, kind: Node, metadata: {name: n3}}}
  - {at: 2s, delete: {kind: Pod, name: p1, gracePeriodSeconds: 0}}
  - {at: 3s, delete: {kind: node, name: n1, namespace: ignored, propagationPolicy: Orphan}}
  - {at: 4s, untaint: {node: n1, key: k}}
  - {at: 5s, uncordon: {node: n1}}
  - {at: 6s, scale: {kind: Deployment, name: web, namespace: prod, replicas: 3}}
  - {at: 7s, annotate: {kind: Pod, name: p1, set: {a: b}, remove: [c]}}
  - {at: 8s, label: {kind: Node, name: n1, set: {tier: 1, on: true}}}
  - {at: 9s, nodeDown: {node: n1}}
  - {at: 10s, nodeUp: {node: n1}}
  - {at: 11s, nodeCondition: {node: n1, type: MemoryPressure, status: 'True', reason: Low}}
  - {at: 12s, podStatus: {pod: prod/p1, phase: Failed, ready: false, restartCount: 2}}
  - at: 13
    expect:
    - pods: {namespace: default, selector: 'app=web,tier in (a,b)', node: n1, phase: Running}
      count: 3
    - event: {reason: TaintManagerEviction, object: default/p1, messageContains: Marking}
      count: 1
      firstAt: 300s
      tolerance: 1s
    - event: {reason: Scheduled, kind: Pod, object: p1, messageContains: [assigned, n1]}
    - replicaSet: default/web
      replicas: 2
      readyReplicas: 1
      availableReplicas: 0
",
    )
    .unwrap();
    let actions: Vec<&str> = input
        .scenario
        .steps
        .iter()
        .map(|s| s.action.name())
        .collect();
    assert_eq!(
        actions,
        [
            "apply",
            "delete",
            "delete",
            "untaint",
            "uncordon",
            "scale",
            "annotate",
            "label",
            "nodeDown",
            "nodeUp",
            "nodeCondition",
            "podStatus",
            "expect"
        ]
    );
    let steps = &input.scenario.steps;
    assert!(matches!(
        &steps[1].action,
        StepAction::Delete { key, grace_period_secs: Some(0), propagation_policy: None } if *key == ObjectKey::new(Kind::Pod, "default", "p1")
    ));
    assert!(matches!(
        &steps[2].action,
        StepAction::Delete { key, grace_period_secs: None, propagation_policy: Some(kubeplane_api::PropagationPolicy::Orphan) } if *key == ObjectKey::new(Kind::Node, "", "n1")
    ));
    assert!(matches!(
        &steps[5].action,
        StepAction::Scale { key, replicas: 3 } if *key == ObjectKey::new(Kind::Deployment, "prod", "web")
    ));
    let StepAction::Label { set, .. } = &steps[7].action else {
        panic!("label");
    };
    assert_eq!(set.get("tier").map(String::as_str), Some("1"));
    assert_eq!(set.get("on").map(String::as_str), Some("true"));
    assert!(matches!(
        &steps[11].action,
        StepAction::PodStatus { namespace, phase: Some(ph), restart_count: Some(2), .. } if namespace == "prod" && ph == "Failed"
    ));
    let StepAction::Expect(list) = &steps[12].action else {
        panic!("expect");
    };
    assert_eq!(steps[12].at, SimTime::from_secs(13));
    let Assertion::Pods(pods) = &list[0] else {
        panic!("pods");
    };
    assert_eq!(pods.count, 3);
    assert_eq!(
        pods.selector.as_ref().unwrap().text,
        "app=web,tier in (a,b)"
    );
    let Assertion::Event(ev) = &list[1] else {
        panic!("event");
    };
    assert_eq!(ev.first_at, Some(SimTime::from_secs(300)));
    assert_eq!(ev.tolerance, SimDuration::from_secs(1));
    assert_eq!(ev.count, Some(1));
    let Assertion::Event(ev) = &list[2] else {
        panic!("event");
    };
    assert_eq!(ev.message_contains, ["assigned", "n1"]);
    assert_eq!(ev.object.as_ref().unwrap().namespace, None);
    assert_eq!(ev.count, None);
}

#[test]
fn files_are_read_in_order_and_each_counts_its_own_documents() {
    let input = parse_files(&[
        ("nodes.yaml".to_string(), NODE.to_string()),
        ("-".to_string(), format!("---\n{POD}")),
    ])
    .unwrap();
    assert_eq!(input.scenario.name, "nodes");
    assert_eq!(input.objects[1].source.file, "-");
    assert_eq!(input.objects[1].source.doc_index, 0);
}

// ---------------------------------------------------------------------------------------------
// errors: each names the file, the document and the field

pub(super) struct Case {
    pub(super) name: &'static str,
    pub(super) input: &'static str,
    /// Substrings of the one-line message, in any order.
    pub(super) expect: &'static [&'static str],
}

/// What is wrong with each case's error: accepted, not one line, not naming `file` first, or
/// lacking an expected part (the failures of all cases, so one run shows them all).
pub(super) fn case_failures(
    cases: &[Case],
    file: &str,
    parse: impl Fn(&str) -> Result<Input, InputError>,
) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        let msg = match parse(case.input) {
            Ok(_) => {
                failures.push(format!("{}: accepted", case.name));
                continue;
            }
            Err(e) => e.to_string(),
        };
        println!("{msg}");
        assert!(!msg.contains('\n'), "{}: not one line: {msg}", case.name);
        assert!(
            msg.starts_with(&format!("{file}: ")),
            "{}: {msg}",
            case.name
        );
        for s in case.expect {
            if !msg.contains(s) {
                failures.push(format!("{}:\n  {msg}\n  lacks {s:?}", case.name));
            }
        }
    }
    failures
}

const CASES: &[Case] = &[
    Case {
        name: "an unparseable cpu request names the container and the quantity rule",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: web-0}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {cpu: 2 cores}}\n",
        expect: &["scenario.yaml: document 1 (Pod default/web-0): spec.containers[0].resources.requests.cpu:", "quantities must match"],
    },
    Case {
        name: "a negative memory limit is rejected",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {limits: {memory: -1Gi}}\n",
        expect: &["spec.containers[0].resources.limits.memory", "greater than or equal to 0"],
    },
    Case {
        name: "a request above its limit is rejected",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}\n",
        expect: &["spec.containers[0].resources.requests.cpu", "must be less than or equal to cpu limit of 1"],
    },
    Case {
        name: "an extended resource needs a limit equal to its request",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {example.com/gpu: '1'}}\n",
        expect: &["spec.containers[0].resources.limits.example.com/gpu", "Limit must be set"],
    },
    Case {
        name: "an unknown unprefixed resource name is rejected",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {cpus: '1'}}\n",
        expect: &["requests.cpus", "standard resource"],
    },
    Case {
        name: "a node capacity quantity must parse",
        input: "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {memory: 8GB}}\n",
        expect: &["document 1 (Node n1): status.capacity.memory", "invalid quantity \"8GB\""],
    },
    Case {
        name: "pod overhead quantities must parse",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  overhead: {cpu: lots}\n  containers: [{name: c, image: x}]\n",
        expect: &["spec.overhead.cpu", "invalid quantity"],
    },
    Case {
        name: "a pod without containers is rejected",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n",
        expect: &["(Pod default/p): spec.containers: Required value"],
    },
    Case {
        name: "a container without an image is rejected",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
        expect: &["spec.containers[0].image: Required value"],
    },
    Case {
        name: "a pod without a name is rejected",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\nspec: {containers: [{name: c, image: x}]}\n",
        expect: &["document 1 (Pod): metadata.name: Required value"],
    },
    Case {
        name: "a name may not contain a slash",
        input: "apiVersion: v1\nkind: Node\nmetadata: {name: a/b}\n",
        expect: &["metadata.name", "may not contain '/'"],
    },
    Case {
        name: "a taint effect must be one of the three",
        input: "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {taints: [{key: k, effect: NoScheduling}]}\n",
        expect: &["spec.taints[0].effect", "Unsupported value: \"NoScheduling\"", "NoExecute"],
    },
    Case {
        name: "a node taint needs an effect",
        input: "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {taints: [{key: k}]}\n",
        expect: &["spec.taints[0].effect: Required value"],
    },
    Case {
        name: "a toleration with Exists has no value",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n  tolerations: [{key: k, operator: Exists, value: v}]\n",
        expect: &["spec.tolerations[0].operator", "value must be empty when `operator` is 'Exists'"],
    },
    Case {
        name: "a toleration operator is Exists or Equal",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n  tolerations: [{key: k, operator: In}]\n",
        expect: &["spec.tolerations[0].operator", "Unsupported value: \"In\""],
    },
    Case {
        name: "tolerationSeconds needs the NoExecute effect",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n  tolerations: [{key: k, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]\n",
        expect: &["spec.tolerations[0].effect", "NoExecute"],
    },
    Case {
        name: "a type error names the field path",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n  terminationGracePeriodSeconds: soon\n",
        expect: &["spec.terminationGracePeriodSeconds", "invalid type"],
    },
    Case {
        name: "an unknown field is rejected like kubectl's strict validation",
        input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x, resource: {}}]\n",
        expect: &["spec.containers[0].resource", "unknown field \"resource\""],
    },
    Case {
        name: "a ReplicaSet selector must match its template labels",
        input: "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: c, image: x}]}\n",
        expect: &["(ReplicaSet default/web): spec.template.metadata.labels", "does not match"],
    },
    Case {
        name: "a Deployment selector must not be empty",
        input: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: prod}\nspec:\n  selector: {}\n  template:\n    spec: {containers: [{name: c, image: x}]}\n",
        expect: &["(Deployment prod/web): spec.selector", "empty selector"],
    },
    Case {
        name: "a label selector operator must be valid",
        input: "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: pdb}\nspec:\n  minAvailable: 1\n  selector: {matchExpressions: [{key: app, operator: Is, values: [web]}]}\n",
        expect: &["(PodDisruptionBudget default/pdb): spec.selector", "\"Is\""],
    },
    Case {
        name: "an unsupported kind lists what is supported",
        input: "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: s}\n",
        expect: &["document 1 (Widget s): kind: unsupported kind \"Widget\" of apiVersion \"example.com/v1\"", "no CustomResourceDefinition in the input defines it", "PodDisruptionBudget"],
    },
    Case {
        name: "a modelled kind at another apiVersion names the one expected",
        input: "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: d}\n",
        expect: &["apiVersion: unsupported apiVersion \"extensions/v1beta1\" for Deployment (expected \"apps/v1\")"],
    },
    Case {
        name: "the wrong apiVersion for a kind names the right one",
        input: "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: d}\n",
        expect: &["apiVersion: unsupported apiVersion \"extensions/v1beta1\" for Deployment (expected \"apps/v1\")"],
    },
    Case {
        name: "a document without kind is rejected",
        input: "apiVersion: v1\nmetadata: {name: x}\n",
        expect: &["document 1", "kind: Required value"],
    },
    Case {
        name: "a document that is not a mapping is rejected",
        input: "- a\n- b\n",
        expect: &["document 1", "expected a mapping"],
    },
    Case {
        name: "invalid YAML names the document and the line",
        input: "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\nkind: [unclosed\n",
        expect: &["document 2", "invalid YAML", "line"],
    },
    Case {
        name: "a List item error names the item",
        input: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n1}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {containers: []}\n",
        expect: &["document 1 (List)", "items[1].spec.containers: Required value"],
    },
    Case {
        name: "two objects with the same kind, namespace and name are rejected",
        input: "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n",
        expect: &["document 2 (Node n1): metadata.name", "defined twice", "document 1"],
    },
    Case {
        name: "two Scenarios are rejected",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {name: a}\n---\napiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {name: b}\n",
        expect: &["document 2 (Scenario b): kind", "second Scenario", "at most one"],
    },
    Case {
        name: "a Scenario of another version is rejected",
        input: "apiVersion: kubeplane.io/v1\nkind: Scenario\n",
        expect: &["apiVersion", "kubeplane.io/v1alpha1"],
    },
    Case {
        name: "a scheduler configuration of another version is rejected",
        input: "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
        expect: &["apiVersion", "kubescheduler.config.k8s.io/v1"],
    },
    Case {
        name: "an unknown Scenario field is rejected",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {durations: 5m}\n",
        expect: &["document 1 (Scenario)", "unknown field `durations`"],
    },
    Case {
        name: "an invalid duration names the field",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {duration: 5 minutes}\n",
        expect: &["spec.duration", "invalid duration"],
    },
    Case {
        name: "podStartupLatency is a duration or never",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {podStartupLatency: later}\n",
        expect: &["spec.podStartupLatency", "invalid duration \"later\""],
    },
    Case {
        name: "an invalid start time names the field",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {startTime: yesterday}\n",
        expect: &["spec.startTime", "RFC 3339"],
    },
    Case {
        name: "a negative seed is rejected",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {seed: -1}\n",
        expect: &["spec.seed", "invalid value"],
    },
    Case {
        name: "an unknown feature gate is named",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {featureGates: {NoSuchGate: true}}\n",
        expect: &["spec.featureGates.NoSuchGate", "unrecognized feature gate: NoSuchGate"],
    },
    Case {
        name: "turning off a gate locked on is named",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {featureGates: {SchedulerQueueingHints: false}}\n",
        expect: &["spec.featureGates.SchedulerQueueingHints", "locked"],
    },
    Case {
        name: "an unsupported Kubernetes version is named",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {kubernetesVersion: \"1.33\"}\n",
        expect: &["spec.kubernetesVersion", "unsupported Kubernetes version \"1.33\"", "v1.34.0 to v1.34.7"],
    },
    Case {
        name: "a Kubernetes version that is neither a string nor a number is rejected",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {kubernetesVersion: [1, 35]}\n",
        expect: &["spec.kubernetesVersion", "expected a Kubernetes version"],
    },
    Case {
        name: "a gate the scenario's release does not have is named with the release",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {kubernetesVersion: \"1.34\", featureGates: {OpportunisticBatching: false}}\n",
        expect: &["spec.featureGates.OpportunisticBatching", "Kubernetes v1.34.7"],
    },
    Case {
        name: "a gate the scenario's release locks is named with the release",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec: {kubernetesVersion: v1.37.0, featureGates: {NodeDeclaredFeatures: false}}\n",
        expect: &["spec.featureGates.NodeDeclaredFeatures", "locked to true in Kubernetes v1.37.0"],
    },
    Case {
        name: "a negative step time is rejected",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - {at: -5s, cordon: {node: n1}}\n",
        expect: &["spec.steps[0].at", "negative"],
    },
    Case {
        name: "a step without at is rejected",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - {cordon: {node: n1}}\n",
        expect: &["spec.steps[0].at: Required value"],
    },
    Case {
        name: "a step with two actions is rejected",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - {at: 1s, cordon: {node: n1}, nodeDown: {node: n1}}\n",
        expect: &["spec.steps[0]", "exactly one action, found cordon and nodeDown"],
    },
    Case {
        name: "a step without an action is rejected",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - {at: 1s}\n",
        expect: &["spec.steps[0]", "needs an action"],
    },
    Case {
        name: "an unknown step field is rejected",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - {at: 1s, reboot: {node: n1}}\n",
        expect: &["spec.steps[0]", "unknown field `reboot`"],
    },
    Case {
        name: "an unknown field of an action is rejected",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    taint: {node: n1, key: k, efect: NoSchedule}\n",
        expect: &["spec.steps[0].taint", "unknown field `efect`"],
    },
    Case {
        name: "a taint step effect must be valid",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    taint: {node: n1, key: k, effect: NoRun}\n",
        expect: &["spec.steps[0].taint.effect", "Unsupported value: \"NoRun\""],
    },
    Case {
        name: "scale takes a ReplicaSet or a Deployment",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    scale: {kind: Pod, name: p, replicas: 2}\n",
        expect: &["spec.steps[0].scale.kind", "ReplicaSet"],
    },
    Case {
        name: "an applied manifest is validated like the initial state",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n  steps:\n  - at: 1s\n    apply:\n      apiVersion: v1\n      kind: Pod\n      metadata: {name: p}\n      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: x}}}]}\n",
        expect: &["document 1 (Scenario s): spec.steps[0].apply.spec.containers[0].resources.requests.cpu", "invalid quantity"],
    },
    Case {
        name: "a pod reference has at most one slash",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    expect:\n    - pod: a/b/c\n",
        expect: &["spec.steps[0].expect[0].pod", "namespace/name or name"],
    },
    Case {
        name: "an assertion needs a kind",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    expect:\n    - node: n1\n",
        expect: &["spec.steps[0].expect[0]", "one of pod, pods, event or replicaSet"],
    },
    Case {
        name: "an unknown assertion field is rejected",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    expect:\n    - pod: p\n      nodeName: n1\n",
        expect: &["spec.steps[0].expect[0]", "unknown field `nodeName`"],
    },
    Case {
        name: "a pods assertion needs a count",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    expect:\n    - pods: {phase: Running}\n",
        expect: &["spec.steps[0].expect[0]", "missing field `count`"],
    },
    Case {
        name: "a pods selector must parse",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    expect:\n    - pods: {selector: 'app in web'}\n      count: 1\n",
        expect: &["spec.steps[0].expect[0].pods.selector"],
    },
    Case {
        name: "a phase must be one of the five",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    expect:\n    - pod: p\n      phase: running\n",
        expect: &["spec.steps[0].expect[0].phase", "Unsupported value: \"running\""],
    },
    Case {
        name: "firstAt is a duration",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    expect:\n    - event: {reason: Scheduled}\n      firstAt: soon\n",
        expect: &["spec.steps[0].expect[0].firstAt", "invalid duration"],
    },
    Case {
        name: "a node condition status is True, False or Unknown",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    nodeCondition: {node: n1, type: Ready, status: 'yes'}\n",
        expect: &["spec.steps[0].nodeCondition.status", "Unsupported value: \"yes\""],
    },
    Case {
        name: "a propagation policy is one of upstream's, spelt as upstream does",
        input: "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    delete: {kind: Deployment, name: web, propagationPolicy: foreground}\n",
        expect: &["spec.steps[0].delete.propagationPolicy", "Unsupported value: \"foreground\": supported values: \"Foreground\", \"Background\", \"Orphan\""],
    },
];

#[test]
fn input_errors_name_the_file_the_document_and_the_field() {
    let failures = case_failures(CASES, "scenario.yaml", parse_one);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_input_error_has_its_parts_as_fields() {
    let e = parse_one(&format!("{NODE}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: web-0}}\nspec: {{containers: []}}\n")).unwrap_err();
    assert_eq!(e.file, "scenario.yaml");
    assert_eq!(e.doc, Some((1, "Pod default/web-0".to_string())));
    assert_eq!(e.field.as_deref(), Some("spec.containers"));
}

#[test]
fn what_upstream_accepts_is_accepted() {
    // Quantities as YAML numbers, a toleration without key that matches everything, node
    // affinity values that are not label values (the scheduler, not validation, rejects them),
    // generateName instead of a name, and a bare number of seconds as a duration.
    parse_one(
        "apiVersion: v1
kind: Pod
metadata: {generateName: web-}
spec:
  containers:
  - name: c
    image: x
    resources: {requests: {cpu: 0.5, memory: 1000, example.com/gpu: 1}, limits: {example.com/gpu: 1}}
  tolerations: [{operator: Exists}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: foo, operator: NotIn, values: ['invalid value: ___@#$%^']}]
---
apiVersion: kubeplane.io/v1alpha1
kind: Scenario
spec: {duration: 90, podStartupLatency: 0.25}
",
    )
    .unwrap();
}

// ---------------------------------------------------------------------------------------------
// the examples of docs/scenario-format.md

/// The fenced code blocks of a markdown file: (info string, content).
fn code_blocks(markdown: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in markdown.lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(info)) => current = Some((info.trim().to_string(), String::new())),
            (Some(_), Some(_)) => blocks.extend(current.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

#[test]
fn the_examples_of_the_format_reference_are_what_they_say() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenario-format.md");
    let Ok(markdown) = std::fs::read_to_string(&path) else {
        eprintln!("note: {} is absent; skipping its examples", path.display());
        return;
    };
    let blocks = code_blocks(&markdown);
    let mut n_checked = 0;
    for (i, (info, body)) in blocks.iter().enumerate() {
        let parse = |content: &str| parse_files(&[("example.yaml".into(), content.into())]);
        match info.as_str() {
            "yaml" if body.starts_with("- ") => {
                // An assertion fragment: valid inside an expect step.
                let indented: String = body.lines().map(|l| format!("    {l}\n")).collect();
                let doc = format!(
                    "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    expect:\n{indented}"
                );
                if let Err(e) = parse(&doc) {
                    panic!("the fragment\n{body}is invalid: {e}");
                }
            }
            "yaml" => {
                if let Err(e) = parse(body) {
                    panic!("the example\n{body}is invalid: {e}");
                }
            }
            "yaml invalid" => {
                let e = parse(body).expect_err("an invalid example is rejected");
                let (_, shown) = &blocks[i + 1];
                assert_eq!(
                    e.to_string(),
                    shown.trim_end(),
                    "the message shown after\n{body}"
                );
            }
            _ => continue,
        }
        n_checked += 1;
    }
    assert!(n_checked >= 8, "only {n_checked} examples found");
}

#[test]
fn annotations_over_256_kib_in_all_are_too_long_as_upstream_says() {
    let node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n";
    let pod = |value_len: usize| {
        format!(
            "{node}apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    big: \"{}\"\nspec:\n  containers: [{{name: app, image: nginx}}]\n",
            "x".repeat(value_len)
        )
    };
    // Keys count too: "big" is 3 bytes.
    assert!(parse_one(&pod(256 * 1024 - 3)).is_ok());
    let err = parse_one(&pod(256 * 1024 - 2)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "scenario.yaml: document 2 (Pod default/p): metadata.annotations: Too long: must have at most 262144 bytes"
    );
    let rs = format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: web}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata:\n      labels: {{app: web}}\n      annotations: {{a: \"{}\"}}\n    spec:\n      containers: [{{name: app, image: nginx}}]\n",
        "x".repeat(300 * 1024)
    );
    let err = parse_one(&rs).unwrap_err();
    assert_eq!(
        err.field.as_deref(),
        Some("spec.template.metadata.annotations")
    );
}

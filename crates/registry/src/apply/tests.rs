//! Tests of server-side apply and managedFields over a real kind's schema (Deployment):
//! scenarios of applies and updates by several managers, each checked on the resulting
//! object and on who owns which field, and the FieldsV1 encoding.

use kubeplane_api::Kind;
use serde_json::{json, Value};

use super::fieldpath::{self, PathElement};
use super::*;
use crate::patch::meta;

/// One write of a scenario.
enum Step {
    /// The stored object as it is (created before tracking: no managedFields).
    Live(Value),
    /// `kubectl apply --server-side` by a manager.
    Apply(&'static str, Value),
    /// The same with `--force-conflicts`.
    Force(&'static str, Value),
    /// A create or update by a manager: the live object with a merge patch applied.
    Update(&'static str, Value),
}
use Step::*;

/// A Deployment named `web` with these fields merged in.
fn cfg(fields: Value) -> Value {
    let mut v = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
    json_patch::merge(&mut v, &fields);
    v
}

fn run(steps: &[Step]) -> Result<Value, String> {
    let ty = meta::for_kind(Kind::Deployment);
    let mut live: Option<Value> = None;
    for (i, step) in steps.iter().enumerate() {
        let time = format!("2026-01-01T00:00:{i:02}Z");
        let writer = |manager| Writer {
            manager,
            api_version: "apps/v1",
            subresource: None,
            time: &time,
        };
        let next = match step {
            Live(v) => v.clone(),
            Apply(m, c) | Force(m, c) => {
                let force = matches!(step, Force(..));
                apply(ty, live.as_ref(), c, &writer(m), force).map_err(|e| match e {
                    ApplyError::Conflicts(c) => conflict_message(&c),
                    ApplyError::BadRequest(m) => m,
                })?
            }
            Update(m, patch) => {
                let mut new = live.clone().unwrap_or_else(|| cfg(json!({})));
                json_patch::merge(&mut new, patch);
                update(ty, live.as_ref(), new, &writer(m))
            }
        };
        live = Some(next);
    }
    Ok(live.unwrap_or_default())
}

/// The managers that own the field printed as `field` (`.spec.replicas`).
fn owners(obj: &Value, field: &str) -> Vec<String> {
    let entries = managed::read(obj).unwrap_or_default();
    entries
        .iter()
        .filter(|e| e.fields.iter().any(|p| fieldpath::path_string(p) == field))
        .map(|e| e.manager.clone())
        .collect()
}

struct Case {
    name: &'static str,
    steps: Vec<Step>,
    /// JSON pointers and their values (`Value::Null`: absent).
    values: Vec<(&'static str, Value)>,
    /// Fields and the managers that own them.
    owned: Vec<(&'static str, Vec<&'static str>)>,
}

fn check(cases: Vec<Case>) {
    for case in cases {
        let obj = run(&case.steps).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        for (pointer, want) in &case.values {
            let got = obj.pointer(pointer).cloned().unwrap_or(Value::Null);
            assert_eq!(&got, want, "{}: {pointer} in {obj:#}", case.name);
        }
        for (field, want) in &case.owned {
            assert_eq!(
                &owners(&obj, field),
                want,
                "{}: owners of {field} in {obj:#}",
                case.name
            );
        }
    }
}

fn replicas(n: i64) -> Value {
    cfg(json!({"spec": {"replicas": n}}))
}

fn containers(list: Value) -> Value {
    cfg(json!({"spec": {"template": {"spec": {"containers": list}}}}))
}

#[test]
fn applies_set_own_and_remove_fields() {
    check(vec![
        Case {
            name: "applying to a missing object creates it and owns what it sets",
            steps: vec![Apply("a", replicas(2))],
            values: vec![
                ("/spec/replicas", json!(2)),
                ("/metadata/name", json!("web")),
            ],
            owned: vec![(".spec.replicas", vec!["a"]), (".metadata.name", vec![])],
        },
        Case {
            name: "force takes ownership",
            steps: vec![Apply("a", replicas(2)), Force("b", replicas(3))],
            values: vec![("/spec/replicas", json!(3))],
            owned: vec![(".spec.replicas", vec!["b"])],
        },
        Case {
            name: "applying the value another manager set shares the field",
            steps: vec![Apply("a", replicas(2)), Apply("b", replicas(2))],
            values: vec![("/spec/replicas", json!(2))],
            owned: vec![(".spec.replicas", vec!["a", "b"])],
        },
        Case {
            name: "omitting a previously applied field removes it",
            steps: vec![
                Apply(
                    "a",
                    cfg(json!({"spec": {"replicas": 2, "minReadySeconds": 5}})),
                ),
                Apply("a", replicas(2)),
            ],
            values: vec![
                ("/spec/minReadySeconds", Value::Null),
                ("/spec/replicas", json!(2)),
            ],
            owned: vec![(".spec.minReadySeconds", vec![])],
        },
        Case {
            name: "a field also owned by another manager survives when omitted",
            steps: vec![
                Apply(
                    "a",
                    cfg(json!({"spec": {"replicas": 2, "minReadySeconds": 5}})),
                ),
                Apply("b", cfg(json!({"spec": {"minReadySeconds": 5}}))),
                Apply("a", replicas(2)),
            ],
            values: vec![("/spec/minReadySeconds", json!(5))],
            owned: vec![(".spec.minReadySeconds", vec!["b"])],
        },
        Case {
            name: "a field the applier never applied is not removed when it applies again",
            steps: vec![
                Update("kubectl-create", json!({"spec": {"paused": true}})),
                Apply("a", replicas(2)),
                Apply("a", replicas(3)),
            ],
            values: vec![("/spec/paused", json!(true)), ("/spec/replicas", json!(3))],
            owned: vec![
                (".spec.paused", vec!["kubectl-create"]),
                (".spec.replicas", vec!["a"]),
            ],
        },
        Case {
            name: "an update takes the fields it changes from the applier",
            steps: vec![
                Apply("a", replicas(2)),
                Update("kubectl-scale", json!({"spec": {"replicas": 4}})),
            ],
            values: vec![("/spec/replicas", json!(4))],
            owned: vec![(".spec.replicas", vec!["kubectl-scale"])],
        },
        Case {
            name: "an update that removes a field takes it from its owner",
            steps: vec![
                Apply("a", cfg(json!({"spec": {"replicas": 2, "paused": true}}))),
                Update("kubectl-edit", json!({"spec": {"paused": null}})),
            ],
            values: vec![("/spec/paused", Value::Null)],
            owned: vec![(".spec.paused", vec![]), (".spec.replicas", vec!["a"])],
        },
        Case {
            name: "labels are granular: two managers own one label each",
            steps: vec![
                Apply("a", cfg(json!({"metadata": {"labels": {"x": "1"}}}))),
                Apply("b", cfg(json!({"metadata": {"labels": {"y": "2"}}}))),
            ],
            values: vec![("/metadata/labels", json!({"x": "1", "y": "2"}))],
            owned: vec![
                (".metadata.labels.x", vec!["a"]),
                (".metadata.labels.y", vec!["b"]),
            ],
        },
        Case {
            name: "set items are owned by value",
            steps: vec![
                Apply("a", cfg(json!({"metadata": {"finalizers": ["x"]}}))),
                Apply("b", cfg(json!({"metadata": {"finalizers": ["y"]}}))),
                Apply("a", cfg(json!({"metadata": {}}))),
            ],
            values: vec![("/metadata/finalizers", json!(["y"]))],
            owned: vec![(".metadata.finalizers[=\"y\"]", vec!["b"])],
        },
    ]);
}

#[test]
fn associative_lists_are_owned_item_by_item_on_their_keys() {
    check(vec![
        Case {
            name: "containers of two managers are merged by name",
            steps: vec![
                Apply("a", containers(json!([{"name": "app", "image": "x"}]))),
                Apply("b", containers(json!([{"name": "side", "image": "y"}]))),
            ],
            values: vec![(
                "/spec/template/spec/containers",
                json!([{"name": "app", "image": "x"}, {"name": "side", "image": "y"}]),
            )],
            owned: vec![
                (".spec.template.spec.containers[name=\"app\"]", vec!["a"]),
                (".spec.template.spec.containers[name=\"app\"].image", vec!["a"]),
                (".spec.template.spec.containers[name=\"side\"].image", vec!["b"]),
            ],
        },
        Case {
            name: "omitting an applied container removes it and keeps another manager's",
            steps: vec![
                Apply("a", containers(json!([{"name": "app", "image": "x"}]))),
                Apply("b", containers(json!([{"name": "side", "image": "y"}]))),
                Apply("a", containers(json!([]))),
            ],
            values: vec![(
                "/spec/template/spec/containers",
                json!([{"name": "side", "image": "y"}]),
            )],
            owned: vec![(".spec.template.spec.containers[name=\"app\"]", vec![])],
        },
        Case {
            name: "container ports are keyed by containerPort and protocol, TCP by default",
            steps: vec![Apply(
                "a",
                containers(json!([{"name": "app", "image": "x", "ports": [{"containerPort": 80}]}])),
            )],
            values: vec![],
            owned: vec![(
                ".spec.template.spec.containers[name=\"app\"].ports[containerPort=80,protocol=\"TCP\"].containerPort",
                vec!["a"],
            )],
        },
        Case {
            name: "a field of an item another manager changed stays when the applier drops the item",
            steps: vec![
                Apply("a", containers(json!([{"name": "app", "image": "x"}]))),
                Update("kubectl-set", json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "z"}]}}}})),
                Apply("a", containers(json!([]))),
            ],
            values: vec![("/spec/template/spec/containers", json!([{"name": "app", "image": "z"}]))],
            owned: vec![(".spec.template.spec.containers[name=\"app\"].image", vec!["kubectl-set"])],
        },
    ]);
}

#[test]
fn conflicts_name_the_other_manager_and_the_field() {
    let cases = [
        (
            "a second manager changing a field the first applied conflicts",
            vec![Apply("a", replicas(2)), Apply("b", replicas(3))],
            "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas",
        ),
        (
            "a conflict with an updater names its API version",
            vec![
                Update("kubectl-client-side-apply", json!({"spec": {"replicas": 2}})),
                Apply("b", replicas(3)),
            ],
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas",
        ),
        (
            "changing another manager's container image conflicts on the item's key",
            vec![
                Apply("a", containers(json!([{"name": "app", "image": "x"}]))),
                Apply("b", containers(json!([{"name": "app", "image": "z"}]))),
            ],
            "Apply failed with 1 conflict: conflict with \"a\": .spec.template.spec.containers[name=\"app\"].image",
        ),
        (
            "an atomic selector conflicts whole",
            vec![
                Apply("a", cfg(json!({"spec": {"selector": {"matchLabels": {"app": "web"}}}}))),
                Apply("b", cfg(json!({"spec": {"selector": {"matchLabels": {"app": "web", "t": "x"}}}}))),
            ],
            "Apply failed with 1 conflict: conflict with \"a\": .spec.selector",
        ),
        (
            "several conflicts are listed by manager",
            vec![
                Apply("a", cfg(json!({"spec": {"replicas": 2, "minReadySeconds": 5}}))),
                Apply("b", cfg(json!({"spec": {"replicas": 3, "minReadySeconds": 6}}))),
            ],
            "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.minReadySeconds\n- .spec.replicas",
        ),
        (
            "the fields of an object without managedFields belong to before-first-apply",
            vec![
                Live(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                            "metadata": {"name": "web", "uid": "u1"}, "spec": {"replicas": 2}})),
                Apply("b", replicas(3)),
            ],
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas",
        ),
    ];
    for (name, steps, want) in cases {
        assert_eq!(run(&steps).err().as_deref(), Some(want), "{name}");
    }
}

#[test]
fn an_update_of_an_object_created_without_tracking_records_no_managers() {
    let obj = run(&[
        Live(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web", "uid": "u1"}, "spec": {"replicas": 2}})),
        Update("kubectl-edit", json!({"spec": {"replicas": 3}})),
    ])
    .unwrap();
    assert_eq!(obj.pointer("/metadata/managedFields"), None);
}

#[test]
fn an_apply_that_sets_managed_fields_is_a_bad_request() {
    let got = run(&[Apply("a", cfg(json!({"metadata": {"managedFields": []}})))]);
    assert_eq!(
        got.err().as_deref(),
        Some("metadata.managedFields must be nil")
    );
}

#[test]
fn a_create_records_an_update_entry_in_fields_v1() {
    let created = run(&[Update(
        "kubectl-create",
        json!({"metadata": {"labels": {"app": "web"}},
               "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "app", "image": "x"}]}}},
               "status": {"replicas": 0}}),
    )])
    .unwrap();
    let want = json!([{
        "manager": "kubectl-create",
        "operation": "Update",
        "apiVersion": "apps/v1",
        "time": "2026-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {".": {}, "f:replicas": {}, "f:template": {".": {}, "f:spec": {".": {},
                "f:containers": {".": {}, "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}
        }
    }]);
    assert_eq!(created.pointer("/metadata/managedFields"), Some(&want));
}

#[test]
fn an_apply_records_an_apply_entry_first_and_keeps_others() {
    let obj = run(&[
        Update("kubectl-create", json!({"spec": {"paused": true}})),
        Apply("kubectl", replicas(2)),
    ])
    .unwrap();
    let entries = obj.pointer("/metadata/managedFields").unwrap();
    let summary: Vec<(String, String, Value)> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap().into(),
                e["operation"].as_str().unwrap().into(),
                e["fieldsV1"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "kubectl".into(),
                "Apply".into(),
                json!({"f:spec": {"f:replicas": {}}})
            ),
            (
                "kubectl-create".into(),
                "Update".into(),
                json!({"f:spec": {".": {}, "f:paused": {}}})
            ),
        ]
    );
    assert_eq!(entries[0]["time"], "2026-01-01T00:00:01Z");
}

#[test]
fn fields_v1_round_trips_and_prints_paths_as_upstream() {
    let doc = json!({"f:metadata": {"f:finalizers": {".": {}, "v:\"x\"": {}}},
                     "f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}}});
    let set = fieldpath::from_fields_v1(&doc).unwrap();
    let printed: Vec<String> = set.iter().map(|p| fieldpath::path_string(p)).collect();
    assert_eq!(
        printed,
        [
            ".metadata.finalizers",
            ".metadata.finalizers[=\"x\"]",
            ".spec.ports[port=80,protocol=\"TCP\"]",
            ".spec.ports[port=80,protocol=\"TCP\"].port",
        ]
    );
    assert_eq!(fieldpath::to_fields_v1(&set), doc);
    assert_eq!(fieldpath::from_fields_v1(&json!({"x:y": {}})), None);
    assert_eq!(
        PathElement::key(&[("protocol", json!("TCP")), ("port", json!(80))]),
        PathElement::Key("{\"port\":80,\"protocol\":\"TCP\"}".into())
    );
}

#[test]
fn the_default_manager_is_the_user_agent_up_to_its_first_slash() {
    let long = "x".repeat(200);
    let cases = [
        (
            "an explicit fieldManager wins",
            Some("mine"),
            "kubectl/v1.34.0",
            "mine".to_string(),
        ),
        (
            "kubectl's user agent gives kubectl",
            None,
            "kubectl/v1.34.0 (linux/amd64) kubernetes/abcdef",
            "kubectl".to_string(),
        ),
        (
            "an empty fieldManager is no manager",
            Some(""),
            "kube-rs/0.1",
            "kube-rs".to_string(),
        ),
        (
            "unprintable characters are dropped",
            None,
            "a\u{7}b/1",
            "ab".to_string(),
        ),
        (
            "a long user agent is cut at 128 bytes",
            None,
            long.as_str(),
            "x".repeat(128),
        ),
    ];
    for (name, manager, ua, want) in cases {
        assert_eq!(manager_or_user_agent(manager, ua), want, "{name}");
    }
}

#[test]
fn the_status_subresource_owns_only_status() {
    let ty = meta::for_kind(Kind::Deployment);
    let live = run(&[Update("kubectl-create", json!({"spec": {"replicas": 1}}))]).unwrap();
    let mut new = live.clone();
    new["status"] = json!({"replicas": 1});
    new["spec"]["replicas"] = json!(9);
    let writer = Writer {
        manager: "kube-controller-manager",
        api_version: "apps/v1",
        subresource: Some("status"),
        time: "2026-01-01T00:00:05Z",
    };
    let out = update(ty, Some(&live), new, &writer);
    assert_eq!(
        owners(&out, ".status.replicas"),
        ["kube-controller-manager"]
    );
    assert_eq!(owners(&out, ".spec.replicas"), ["kubectl-create"]);
    let entry = managed::read(&out)
        .unwrap()
        .into_iter()
        .find(|e| e.subresource == "status");
    assert!(entry
        .is_some_and(|e| e.describe()
            == "\"kube-controller-manager\" with subresource \"status\" using apps/v1"));
}

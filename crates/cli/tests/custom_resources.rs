//! Custom resources in a `helm template`-like input: the CustomResourceDefinitions of the
//! input define their kinds wherever they are, the custom resources are stored and kept in the
//! final state, noted once per kind as stored, not simulated, and refused by `--strict`.

mod support;

use serde_json::Value;
use support::{kubeplane, stderr};

const CHART: &str = "crates/cli/tests/fixtures/helm-template-crds.yaml";

fn final_state(args: &[&str]) -> (std::process::Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let mut all = vec!["simulate", "--final-state", state.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = kubeplane(&all);
    let text = std::fs::read_to_string(&state).unwrap_or_default();
    (out, text)
}

#[test]
fn custom_resources_are_stored_kept_and_noted_once_per_kind() {
    let (out, state) = final_state(&[CHART]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(
        err.matches("stored, not simulated").count(),
        1,
        "one note: {err}"
    );
    assert!(
        err.contains(
            "note: stored, not simulated: ConfigMap (1), CustomResourceDefinition (2), \
             Gadget (1), Service (1), Widget (2)"
        ),
        "{err}"
    );
    let objects: Vec<Value> = serde_json::from_str(&state).unwrap();
    let find = |kind: &str, name: &str| {
        objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{kind} {name} kept in {state}"))
            .clone()
    };
    let large = find("Widget", "large");
    assert_eq!(large["apiVersion"], "example.com/v1");
    assert_eq!(large["metadata"]["namespace"], "shop");
    assert_eq!(large["metadata"]["generation"], 1);
    assert_eq!(large["spec"]["size"], 10);
    assert!(large["metadata"]["uid"].is_string());
    let gadget = find("Gadget", "cluster-gadget");
    assert_eq!(gadget["spec"]["power"], 9000);
    assert!(gadget["metadata"].get("namespace").is_none());
    find("CustomResourceDefinition", "widgets.example.com");
    // The custom kinds come after the built-in ones, by group, version and kind; each by
    // namespace and name.
    let order: Vec<String> = objects
        .iter()
        .filter(|o| o["apiVersion"] == "example.com/v1")
        .map(|o| format!("{} {}", o["kind"], o["metadata"]["name"]))
        .collect();
    assert_eq!(
        order,
        [
            r#""Gadget" "cluster-gadget""#,
            r#""Widget" "large""#,
            r#""Widget" "small""#
        ]
    );
}

#[test]
fn the_same_input_gives_the_same_bytes() {
    let (a, state_a) = final_state(&["--output", "jsonl", CHART]);
    let (b, state_b) = final_state(&["--output", "jsonl", CHART]);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(state_a, state_b);
    assert!(state_a.contains("\"Widget\""));
}

#[test]
fn strict_refuses_custom_resources_like_every_stored_kind() {
    let out = kubeplane(&["simulate", "--strict", CHART]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "document 1 (Gadget cluster-gadget): --strict: kubeplane stores but does not simulate"
        ),
        "{err}"
    );
    assert!(err.contains("Widget (2)"), "{err}");
}

#[test]
fn a_custom_resource_without_its_definition_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let cr = dir.path().join("widget.yaml");
    std::fs::write(
        &cr,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: shop}\n",
    )
    .unwrap();
    let out = kubeplane(&["simulate", cr.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("widget.yaml: document 1 (Widget shop/w1): kind: unsupported kind \"Widget\""),
        "{err}"
    );
    assert!(
        err.contains("no CustomResourceDefinition in the input defines it"),
        "{err}"
    );
    // With the chart's definitions as a second file, it loads.
    let both = kubeplane(&["simulate", cr.to_str().unwrap(), CHART]);
    assert!(both.status.success(), "{}", stderr(&both));
}

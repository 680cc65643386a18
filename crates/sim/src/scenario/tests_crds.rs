//! Tests of custom resources in the input: the input's CustomResourceDefinitions define the
//! kinds, wherever they are; the API server's refusals name the file, document and field.

use kubeplane_store::{Kind, Object};

use super::tests::{case_failures, Case};
use super::*;

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wd], categories: [all]}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1beta1, served: false, storage: false}
";

const CLUSTER_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Cluster
  versions: [{name: v2, served: true, storage: true}, {name: v1, served: true, storage: false}]
";

fn parse(files: &[(&str, &str)]) -> Result<Input, InputError> {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(n, c)| (n.to_string(), c.to_string()))
        .collect();
    parse_files(&files)
}

/// Each case's input follows the two definitions above.
const CASES: &[Case] = &[
    Case {
        name: "a custom resource no definition of the input defines is refused at its kind",
        input: "apiVersion: example.com/v1\nkind: Sprocket\nmetadata: {name: s}\n",
        expect: &["document 3 (Sprocket s): kind: unsupported kind \"Sprocket\" of apiVersion \"example.com/v1\"", "no CustomResourceDefinition in the input defines it"],
    },
    Case {
        name: "a version the definition does not have finds no match, as the API server says",
        input: "apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: w}\n",
        expect: &["document 3 (Widget w): apiVersion: no matches for kind \"Widget\" in version \"example.com/v2\"", "widgets.example.com serves v1"],
    },
    Case {
        name: "a version the definition has but does not serve finds no match",
        input: "apiVersion: example.com/v1beta1\nkind: Widget\nmetadata: {name: w}\n",
        expect: &["apiVersion: no matches for kind \"Widget\" in version \"example.com/v1beta1\""],
    },
    Case {
        name: "a custom resource in another group than its definition's is not defined",
        input: "apiVersion: other.example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
        expect: &["kind: unsupported kind \"Widget\"", "no CustomResourceDefinition"],
    },
    Case {
        name: "a custom resource needs a name",
        input: "apiVersion: example.com/v1\nkind: Widget\nmetadata: {namespace: shop}\n",
        expect: &["metadata.name: Required value: name or generateName is required"],
    },
    Case {
        name: "a custom resource's namespace is a DNS label",
        input: "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: Shop_1}\n",
        expect: &["metadata.namespace: Invalid value: \"Shop_1\"", "RFC 1123 label"],
    },
    Case {
        name: "a definition's name must be its plural and group",
        input: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: sprocket.example.com}\nspec: {group: example.com, names: {kind: Sprocket, plural: sprockets}, scope: Namespaced, versions: [{name: v1, served: true, storage: true}]}\n",
        expect: &["document 3 (CustomResourceDefinition sprocket.example.com): metadata.name: Invalid value: \"sprocket.example.com\": must be spec.names.plural+\".\"+spec.group"],
    },
    Case {
        name: "a definition's scope is Cluster or Namespaced",
        input: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: sprockets.example.com}\nspec: {group: example.com, names: {kind: Sprocket, plural: sprockets}, scope: Global, versions: [{name: v1, served: true, storage: true}]}\n",
        expect: &["spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""],
    },
    Case {
        name: "a definition has exactly one storage version",
        input: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: sprockets.example.com}\nspec: {group: example.com, names: {kind: Sprocket, plural: sprockets}, scope: Namespaced, versions: [{name: v1, served: true, storage: true}, {name: v2, served: true, storage: true}]}\n",
        expect: &["spec.versions: Invalid value", "must have exactly one version marked as storage version"],
    },
    Case {
        name: "a definition's group is a domain with a dot",
        input: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: sprockets.example}\nspec: {group: example, names: {kind: Sprocket, plural: sprockets}, scope: Namespaced, versions: [{name: v1, served: true, storage: true}]}\n",
        expect: &["spec.group: Invalid value: \"example\": should be a domain with at least one dot"],
    },
    Case {
        name: "a definition names its kind",
        input: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: sprockets.example.com}\nspec: {group: example.com, names: {plural: sprockets}, scope: Namespaced, versions: [{name: v1, served: true, storage: true}]}\n",
        expect: &["spec.names.kind: Required value"],
    },
    Case {
        name: "a custom resource defined twice is refused as every object is",
        input: "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\n",
        expect: &["document 4 (Widget default/w): metadata.name: Widget default/w is defined twice"],
    },
];

#[test]
fn custom_resource_errors_name_the_file_the_document_and_the_field() {
    let failures = case_failures(CASES, "crd.yaml", |input| {
        parse(&[("crd.yaml", &format!("{CRD}---\n{CLUSTER_CRD}---\n{input}"))])
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn kinds(input: &Input) -> Vec<(String, String, String)> {
    input
        .objects
        .iter()
        .map(|o| {
            let ob = &o.object;
            (
                ob.kind().to_string(),
                ob.namespace().to_string(),
                ob.name().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_custom_resource_before_its_definition_in_another_file_loads() {
    let cr = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n";
    let input = parse(&[("a-widgets.yaml", cr), ("b-crds.yaml", CRD)]).unwrap();
    assert_eq!(
        kinds(&input),
        [
            ("Widget".into(), "default".into(), "w1".into()),
            (
                "CustomResourceDefinition".into(),
                "".into(),
                "widgets.example.com".into()
            )
        ]
    );
    let Object::Other(w) = &input.objects[0].object else {
        panic!("a custom resource is a stored object");
    };
    assert_eq!(
        (w.type_.group, w.type_.plural, w.type_.namespaced),
        ("example.com", "widgets", true)
    );
    assert_eq!(w.type_.short_names, &["wd"]);
    assert_eq!(w.field("spec"), Some(&serde_json::json!({"size": 3})));
}

#[test]
fn every_served_version_is_the_one_resource_and_keeps_the_version_written() {
    let text = format!(
        "{CLUSTER_CRD}---\napiVersion: example.com/v1\nkind: Gadget\nmetadata: {{name: g1, namespace: ignored}}\n---\napiVersion: example.com/v2\nkind: Gadget\nmetadata: {{name: g2}}\n"
    );
    let input = parse(&[("g.yaml", &text)]).unwrap();
    let (g1, g2) = (&input.objects[1].object, &input.objects[2].object);
    assert_eq!(g1.kind(), g2.kind(), "one resource type for both versions");
    let Kind::Other(t) = g1.kind() else {
        panic!("a stored kind")
    };
    assert_eq!(t.api_version, "example.com/v2", "the storage version");
    assert_eq!(
        g1.namespace(),
        "",
        "a cluster-scoped resource has no namespace"
    );
    assert_eq!(g1.to_json()["apiVersion"], "example.com/v1");
}

#[test]
fn a_definition_in_a_list_defines_its_kind_and_two_parses_share_the_type() {
    let list = format!(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: example.com/v1\n  kind: Widget\n  metadata: {{name: w}}\n- {}",
        CRD.replace('\n', "\n  ")
    );
    let a = parse(&[("list.yaml", &list)]).unwrap();
    let b = parse(&[("list.yaml", &list)]).unwrap();
    let (Kind::Other(ta), Kind::Other(tb)) =
        (a.objects[0].object.kind(), b.objects[0].object.kind())
    else {
        panic!("custom resources are stored kinds")
    };
    assert!(std::ptr::eq(ta, tb), "a definition interns to one type");
}

#[test]
fn a_scenario_step_applies_a_custom_resource_its_definition_defines() {
    let scenario = "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 10s\n    apply: {apiVersion: example.com/v1, kind: Widget, metadata: {name: w2}, spec: {size: 1}}\n";
    let input = parse(&[("s.yaml", scenario), ("crd.yaml", CRD)]).unwrap();
    let applied: Vec<_> = input
        .scenario
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            StepAction::Apply(o) => Some(o.key().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(applied, ["Widget default/w2"]);
    let without = parse(&[("s.yaml", scenario)]).unwrap_err().to_string();
    assert!(
        without.contains("spec.steps[0].apply.kind: unsupported kind \"Widget\""),
        "{without}"
    );
}

//! The API server's validation in the registry: messages as upstream's `field.Error` renders
//! them, update rules (immutable fields), and the `Invalid` error of an invalid write through
//! [`ApiClient`] (via [`TestClient`], with admission and validation on).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Container, Node, NodeSpec, Pod, PodSpec, PodTemplateSpec, ResourceRequirements, Taint,
    Toleration,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubeplane_api::StoredDeployment;
use kubeplane_api::{ApiError, Client, Kind, Object};
use kubeplane_registry::validation::{
    invalid_message, validate_create, validate_update, ErrorType, FieldError, FieldErrors,
};

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        ..Default::default()
    }
}

fn container() -> Container {
    Container {
        name: "app".into(),
        image: Some("nginx".into()),
        ..Default::default()
    }
}

fn pod_with(name: &str, edit: impl FnOnce(&mut PodSpec)) -> Object {
    let mut spec = PodSpec {
        containers: vec![container()],
        ..Default::default()
    };
    edit(&mut spec);
    Object::Pod(Arc::new(
        Pod {
            metadata: meta(name),
            spec: Some(spec),
            ..Default::default()
        }
        .into(),
    ))
}

fn resources(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> ResourceRequirements {
    let list = |l: &[(&str, &str)]| -> Option<BTreeMap<String, Quantity>> {
        (!l.is_empty()).then(|| {
            l.iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                .collect()
        })
    };
    ResourceRequirements {
        requests: list(requests),
        limits: list(limits),
        ..Default::default()
    }
}

fn deployment(selector: &str, replicas: i32) -> Object {
    let labels: BTreeMap<String, String> = [("app".to_string(), selector.to_string())].into();
    Object::Deployment(Arc::new(StoredDeployment::from_k8s(Deployment {
        metadata: meta("web"),
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container()],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    })))
}

fn priority_class(value: i32, policy: Option<&str>) -> Object {
    Object::PriorityClass(Arc::new(PriorityClass {
        metadata: ObjectMeta {
            name: Some("high".into()),
            ..Default::default()
        },
        value,
        preemption_policy: policy.map(str::to_string),
        ..Default::default()
    }))
}

fn named_priority_class(name: &str, value: i32, global_default: bool) -> Object {
    Object::PriorityClass(Arc::new(PriorityClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        value,
        global_default: Some(global_default),
        ..Default::default()
    }))
}

/// The rendered errors of a create (empty when valid).
fn create_errors(obj: &Object) -> String {
    validate_create(obj)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn create_validation_renders_each_problem_as_upstream_field_errors() {
    let long_annotation = {
        let mut m = meta("p");
        m.annotations = Some([("a".to_string(), "x".repeat(256 * 1024))].into());
        Object::Pod(Arc::new(
            Pod {
                metadata: m,
                spec: Some(PodSpec {
                    containers: vec![container()],
                    ..Default::default()
                }),
                ..Default::default()
            }
            .into(),
        ))
    };
    let cases: Vec<(&str, Object, &str)> = vec![
        ("a complete pod is valid", pod_with("p", |_| {}), ""),
        (
            "a container without an image is a required value",
            pod_with("web-1", |s| s.containers[0].image = None),
            "spec.containers[0].image: Required value",
        ),
        (
            "a request above its limit shows the request and the limit",
            pod_with("p", |s| {
                s.containers[0].resources = Some(resources(&[("cpu", "2")], &[("cpu", "1")]))
            }),
            "spec.containers[0].resources.requests.cpu: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
        ),
        (
            "an extended resource needs a limit",
            pod_with("p", |s| {
                s.containers[0].resources = Some(resources(&[("example.com/gpu", "1")], &[]))
            }),
            "spec.containers[0].resources.limits.example.com/gpu: Required value: Limit must be set for non overcommitable resources",
        ),
        (
            "an unparsable quantity gives the decoder's message alone",
            pod_with("p", |s| {
                s.containers[0].resources = Some(resources(&[("memory", "8GB")], &[]))
            }),
            "spec.containers[0].resources.requests.memory: invalid quantity \"8GB\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            "a toleration with an unknown operator lists the supported values",
            pod_with("p", |s| {
                s.tolerations = Some(vec![Toleration {
                    key: Some("k".into()),
                    operator: Some("Maybe".into()),
                    ..Default::default()
                }])
            }),
            "spec.tolerations[0].operator: Unsupported value: \"Maybe\": supported values: \"Equal\", \"Exists\"",
        ),
        (
            "a pod's nodeName (stored outside its spec) is a path segment name",
            pod_with("p", |s| s.node_name = Some("a/b".into())),
            "spec.nodeName: Invalid value: \"a/b\": may not contain '/'",
        ),
        (
            "two containers of one name are a duplicate value",
            pod_with("p", |s| s.containers.push(container())),
            "spec.containers[1].name: Duplicate value: \"app\"",
        ),
        (
            "annotations over 256 KiB are too long",
            long_annotation,
            "metadata.annotations: Too long: must have at most 262144 bytes",
        ),
        (
            "a node's taints are unique by key and effect",
            Object::Node(Arc::new(Node {
                metadata: ObjectMeta {
                    name: Some("n1".into()),
                    ..Default::default()
                },
                spec: Some(NodeSpec {
                    taints: Some(vec![
                        Taint {
                            key: "k".into(),
                            effect: "NoSchedule".into(),
                            ..Default::default()
                        },
                        Taint {
                            key: "k".into(),
                            effect: "NoSchedule".into(),
                            ..Default::default()
                        },
                    ]),
                    ..Default::default()
                }),
                ..Default::default()
            }.into())),
            "spec.taints[1]: Duplicate value: \"k\": taints must be unique by key and effect pair",
        ),
        (
            "a user-defined priority above one billion is forbidden",
            priority_class(2_000_000_000, None),
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
        ),
        (
            "a system- class must be a built-in one",
            named_priority_class("system-mine", 1000, false),
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
        ),
        (
            "a built-in system class must keep its value",
            named_priority_class("system-node-critical", 2_000_000_000, false),
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be 2000001000",
        ),
        (
            "a built-in system class is never the global default",
            named_priority_class("system-cluster-critical", 2_000_000_000, true),
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: globalDefault of system-cluster-critical PriorityClass must be false",
        ),
        (
            "a built-in system class as upstream defines it is valid above one billion",
            named_priority_class("system-node-critical", 2_000_001_000, false),
            "",
        ),
        (
            "a deployment whose selector matches its template is valid",
            deployment("web", 3),
            "",
        ),
        (
            "replicas beyond kubeplane's limit are invalid",
            deployment("web", 150_001),
            "spec.replicas: Invalid value: 150001: must be less than or equal to 150000 (kubeplane simulates clusters of at most 150,000 pods, upstream's scalability threshold)",
        ),
    ];
    for (name, obj, want) in cases {
        assert_eq!(create_errors(&obj), want, "{name}");
    }
}

#[test]
fn update_validation_rejects_changes_to_immutable_fields() {
    let pc = priority_class(1000, None);
    let mut with_uid = pod_with("p", |_| {});
    with_uid.meta_mut().uid = Some("uid-1".into());
    let mut other_uid = with_uid.clone();
    other_uid.meta_mut().uid = Some("uid-2".into());
    let mut no_uid = with_uid.clone();
    no_uid.meta_mut().uid = None;
    let cases: Vec<(&str, Object, Object, &str)> = vec![
        (
            "an unchanged deployment may be updated",
            deployment("web", 3),
            deployment("web", 5),
            "",
        ),
        (
            "a deployment's selector is immutable in apps/v1",
            deployment("web", 3),
            deployment("api", 3),
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"api\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
        ),
        (
            "a priority class's value may not change",
            pc.clone(),
            priority_class(2000, None),
            "value: Forbidden: may not be changed in an update.",
        ),
        (
            "a priority class's preemption policy is immutable, its default included",
            pc.clone(),
            priority_class(1000, Some("Never")),
            "preemptionPolicy: Invalid value: \"Never\": field is immutable",
        ),
        (
            "several problems are listed in brackets, in order",
            pc.clone(),
            priority_class(2000, Some("Never")),
            "[value: Forbidden: may not be changed in an update., preemptionPolicy: Invalid value: \"Never\": field is immutable]",
        ),
        (
            "an update naming another object's uid is rejected",
            with_uid.clone(),
            other_uid,
            "metadata.uid: Invalid value: \"uid-2\": field is immutable",
        ),
        (
            "an update without a uid keeps the stored one",
            with_uid.clone(),
            no_uid,
            "",
        ),
        (
            "the new object is validated as on create",
            with_uid,
            pod_with("p", |s| s.containers[0].image = None),
            "spec.containers[0].image: Required value",
        ),
    ];
    for (name, old, new, want) in cases {
        let got = validate_update(&old, &new)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn field_errors_render_and_join_as_upstream_aggregates() {
    let a = FieldError::required("spec.x", "");
    let b = FieldError::invalid("spec.y", "3", "must be odd");
    assert_eq!(a.to_string(), "spec.x: Required value");
    assert_eq!(a.type_, ErrorType::Required);
    assert_eq!(b.body(), "Invalid value: 3: must be odd");
    assert_eq!(
        FieldErrors(vec![a.clone(), b.clone(), a.clone()]).to_string(),
        "[spec.x: Required value, spec.y: Invalid value: 3: must be odd]",
        "each distinct message once"
    );
    assert_eq!(
        invalid_message(Kind::Deployment, "web", &FieldErrors(vec![b])),
        "Deployment.apps \"web\" is invalid: spec.y: Invalid value: 3: must be odd"
    );
}

#[test]
fn an_invalid_create_through_the_api_client_fails_with_invalid_and_upstream_message() {
    let mut store = kubeplane_store::Store::new(1, jiff::Timestamp::UNIX_EPOCH);
    struct Discard;
    impl kubeplane_registry::Sink for Discard {
        fn event(&mut self, _: kubeplane_core::EventRecord) {}
        fn record(&mut self, _: serde_json::Value) {}
    }
    let mut sink = Discard;
    let mut api = kubeplane_registry::ApiClient {
        store: &mut store,
        now: kubeplane_core::SimTime::ZERO,
        sink: &mut sink,
        explain: false,
        admission: true,
        binding: Default::default(),
    };
    let bad = pod_with("web-1", |s| s.containers[0].image = None);
    let err = api.create(bad).unwrap_err();
    let ApiError::Invalid { key, message } = &err else {
        panic!("want Invalid, got {err:?}");
    };
    assert_eq!(message, "spec.containers[0].image: Required value");
    assert_eq!(err.code(), 422);
    let errs = validate_create(&pod_with("web-1", |s| s.containers[0].image = None)).unwrap_err();
    assert_eq!(
        invalid_message(key.kind, &key.name, &errs),
        "Pod \"web-1\" is invalid: spec.containers[0].image: Required value"
    );
    assert!(
        api.cache().list(Kind::Pod).next().is_none(),
        "nothing stored"
    );

    // A valid pod is stored; an update that breaks it is refused the same way.
    let created = api.create(pod_with("web-1", |_| {})).unwrap();
    let mut broken = created.clone();
    if let Object::Pod(p) = &mut broken {
        Arc::make_mut(p).spec_mut().containers[0].name = "Bad_Name".into();
    }
    let err = api.update(broken).unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { message, .. } if message.starts_with("spec.containers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label")),
        "{err}"
    );
}

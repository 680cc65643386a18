//! Tests of PATCH: each patch type over real kinds' objects. The strategic merge patch cases
//! restate facts of upstream's strategicpatch/patch_test.go (its "ThreeWay" patch applied to
//! "Current" gives "Result") on the real fields that have the same metadata: `containers`
//! (merged on `name`) for its `mergingList`, `finalizers` (merged primitives) for its
//! `mergingIntList`.

use kubeplane_api::types::ResourceType;
use kubeplane_api::{ApiError, Kind};
use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;

fn smp(kind: Kind, current: Value, patch: Value) -> Result<Value, ApiError> {
    apply(
        kind,
        &current,
        PatchType::StrategicMerge,
        patch.to_string().as_bytes(),
    )
}

fn pod_with_containers(containers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": containers}})
}

fn containers_after(current: Value, spec_patch: Value) -> Value {
    let merged = smp(
        Kind::Pod,
        pod_with_containers(current),
        json!({"spec": spec_patch}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    merged["spec"]["containers"].clone()
}

#[test]
fn lists_of_maps_merge_on_their_merge_key_in_set_element_order() {
    let cases = [
        (
            "merge lists of maps",
            json!([{"name": "1", "image": "a"}, {"name": "2", "tty": true, "image": "b"}]),
            json!({"$setElementOrder/containers": [{"name": "4"}, {"name": "1"}, {"name": "2"}, {"name": "3"}],
                   "containers": [{"name": "4", "tty": true}, {"name": "3", "tty": false}]}),
            json!([{"name": "4", "tty": true}, {"name": "1", "image": "a"},
                   {"name": "2", "tty": true, "image": "b"}, {"name": "3", "tty": false}]),
        ),
        (
            "add field to map in merging list",
            json!([{"name": "1", "image": "a"}, {"name": "2", "tty": true, "image": "b"}]),
            json!({"$setElementOrder/containers": [{"name": "1"}, {"name": "2"}],
                   "containers": [{"name": "1", "tty": true}]}),
            json!([{"name": "1", "image": "a", "tty": true}, {"name": "2", "tty": true, "image": "b"}]),
        ),
        (
            "delete map from merging list",
            json!([{"name": "1"}, {"name": "2", "image": "b"}]),
            json!({"$setElementOrder/containers": [{"name": "2"}],
                   "containers": [{"name": "1", "$patch": "delete"}]}),
            json!([{"name": "2", "image": "b"}]),
        ),
        (
            "delete missing map from merging list with conflict",
            json!([{"name": "3", "image": "a"}]),
            json!({"$setElementOrder/containers": [{"name": "2"}],
                   "containers": [{"name": "2"}, {"name": "1", "$patch": "delete"}]}),
            json!([{"name": "2"}, {"name": "3", "image": "a"}]),
        ),
        (
            "add map and delete map from merging list",
            json!([{"name": "1"}, {"name": "2", "image": "b"}, {"name": "4", "image": "c"}]),
            json!({"$setElementOrder/containers": [{"name": "2"}, {"name": "3"}],
                   "containers": [{"name": "3"}, {"name": "1", "$patch": "delete"}]}),
            json!([{"name": "2", "image": "b"}, {"name": "4", "image": "c"}, {"name": "3"}]),
        ),
        (
            "nested patch merge with empty list",
            json!([{"name": "hello2"}]),
            json!({"$setElementOrder/containers": [{"name": "hello"}, {"name": "doesntexist"}],
                   "containers": [{"name": "hello"}]}),
            json!([{"name": "hello"}, {"name": "hello2"}]),
        ),
        (
            "without an order directive a new item goes before the live ones",
            json!([{"name": "nginx", "image": "nginx"}]),
            json!({"containers": [{"name": "patch-demo-ctr-2", "image": "redis"}]}),
            json!([{"name": "patch-demo-ctr-2", "image": "redis"}, {"name": "nginx", "image": "nginx"}]),
        ),
        (
            "a replace directive in a list replaces the whole list with the other items",
            json!([{"name": "1", "image": "a"}, {"name": "2"}]),
            json!({"containers": [{"name": "3", "image": "c"}, {"$patch": "replace"}]}),
            json!([{"name": "3", "image": "c"}]),
        ),
    ];
    for (name, current, patch, want) in cases {
        assert_eq!(containers_after(current, patch), want, "{name}");
    }
}

fn finalizers_after(current: Value, metadata_patch: Value) -> Value {
    let pod = json!({"metadata": {"name": "p", "finalizers": current}});
    let merged = smp(Kind::Pod, pod, json!({"metadata": metadata_patch})).unwrap();
    merged["metadata"]["finalizers"].clone()
}

#[test]
fn lists_of_primitives_union_and_delete_from_primitive_list_removes() {
    let cases = [
        (
            "delete items in lists of scalars",
            json!(["1", "2", "3", "4"]),
            json!({"$setElementOrder/finalizers": ["1", "2"], "$deleteFromPrimitiveList/finalizers": ["3"]}),
            json!(["1", "2", "4"]),
        ),
        (
            "delete all duplicate items in lists of scalars",
            json!(["1", "2", "3", "3", "4"]),
            json!({"$setElementOrder/finalizers": ["1", "2"], "$deleteFromPrimitiveList/finalizers": ["3"]}),
            json!(["1", "2", "4"]),
        ),
        (
            "add and delete items in lists of scalars",
            json!(["1", "2", "3"]),
            json!({"$setElementOrder/finalizers": ["1", "2", "4"],
                   "$deleteFromPrimitiveList/finalizers": ["3"], "finalizers": ["4"]}),
            json!(["1", "2", "4"]),
        ),
        (
            "a merged primitive list is a union in the live order",
            json!(["a", "b"]),
            json!({"finalizers": ["b", "c"]}),
            json!(["a", "b", "c"]),
        ),
        (
            "an item new to a merged primitive list goes first",
            json!(["a", "b"]),
            json!({"finalizers": ["c"]}),
            json!(["c", "a", "b"]),
        ),
    ];
    for (name, current, patch, want) in cases {
        assert_eq!(finalizers_after(current, patch), want, "{name}");
    }
}

#[test]
fn maps_merge_and_null_deletes_a_field() {
    let pod = json!({"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}},
                     "spec": {"nodeName": "n1", "tolerations": [{"key": "x"}]}});
    let patch = json!({"metadata": {"labels": {"a": null, "c": "3"}},
                       "spec": {"nodeName": null, "tolerations": [{"key": "y", "value": null}],
                                "newField": {"keep": 1, "drop": null}}});
    let merged = smp(Kind::Pod, pod, patch).unwrap();
    assert_eq!(merged["metadata"]["labels"], json!({"b": "2", "c": "3"}));
    assert!(merged["spec"].get("nodeName").is_none());
    // tolerations have no patch strategy: the list is replaced whole.
    assert_eq!(merged["spec"]["tolerations"], json!([{"key": "y"}]));
    assert_eq!(merged["spec"]["newField"], json!({"keep": 1}));
}

#[test]
fn retain_keys_clears_the_live_keys_it_does_not_list() {
    let deploy = json!({"metadata": {"name": "d"}, "spec": {"strategy": {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    let merged = smp(Kind::Deployment, deploy, patch).unwrap();
    assert_eq!(merged["spec"]["strategy"], json!({"type": "Recreate"}));

    let pod = json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}});
    let patch = json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"],
                                             "hostPath": {"path": "/x"}}]}});
    let merged = smp(Kind::Pod, pod, patch).unwrap();
    assert_eq!(
        merged["spec"]["volumes"],
        json!([{"name": "v", "hostPath": {"path": "/x"}}])
    );
}

fn volumes_after(current: Value, spec_patch: Value) -> Value {
    let pod = json!({"spec": {"volumes": current}});
    let merged = smp(Kind::Pod, pod, json!({"spec": spec_patch})).unwrap_or_else(|e| panic!("{e}"));
    merged["spec"]["volumes"].clone()
}

#[test]
fn retain_keys_on_items_of_a_merged_list() {
    let order = json!([{"name": "bar"}, {"name": "foo"}]);
    let cases = [
        (
            "retainKeys list of maps clears a field",
            json!([{"name": "bar"}, {"name": "foo", "value": "a", "other": "x"}]),
            json!([{"$retainKeys": ["name", "value"], "name": "foo"}]),
            json!([{"name": "bar"}, {"name": "foo", "value": "a"}]),
        ),
        (
            "retainKeys list of maps changes a field and clear a field",
            json!([{"name": "bar"}, {"name": "foo", "value": "old", "other": "x"}]),
            json!([{"$retainKeys": ["name", "value"], "name": "foo", "value": "new"}]),
            json!([{"name": "bar"}, {"name": "foo", "value": "new"}]),
        ),
        (
            "retainKeys list of maps adds a field and clear a field",
            json!([{"name": "bar"}, {"name": "foo", "other": "x"}]),
            json!([{"$retainKeys": ["name", "value"], "name": "foo", "value": "a"}]),
            json!([{"name": "bar"}, {"name": "foo", "value": "a"}]),
        ),
        (
            "retainKeys list of maps deletes a field and clear a field",
            json!([{"name": "bar"}, {"name": "foo", "value": "a", "other": "x"}]),
            json!([{"$retainKeys": ["name"], "name": "foo", "value": null}]),
            json!([{"name": "bar"}, {"name": "foo"}]),
        ),
    ];
    for (name, current, list, want) in cases {
        let patch = json!({"$setElementOrder/volumes": order, "volumes": list});
        assert_eq!(volumes_after(current, patch), want, "{name}");
    }
}

#[test]
fn delete_and_reorder_in_one_list_reorder_in_another() {
    let pod = json!({"spec": {
        "containers": [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}],
        "volumes": [{"name": "c", "value": "c"}, {"name": "d", "value": "d"}]}});
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "b"}],
        "$setElementOrder/volumes": [{"name": "d"}, {"name": "c"}],
        "containers": [{"$patch": "delete", "name": "a"}]}});
    let merged = smp(Kind::Pod, pod, patch).unwrap();
    assert_eq!(
        merged["spec"]["containers"],
        json!([{"name": "b", "image": "b"}])
    );
    assert_eq!(
        merged["spec"]["volumes"],
        json!([{"name": "d", "value": "d"}, {"name": "c", "value": "c"}])
    );
}

#[test]
fn map_directives_replace_or_empty_the_map() {
    let pod = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
    let replaced = smp(
        Kind::Pod,
        pod.clone(),
        json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}),
    )
    .unwrap();
    assert_eq!(replaced["metadata"]["labels"], json!({"c": "3"}));
    let deleted = smp(
        Kind::Pod,
        pod,
        json!({"metadata": {"labels": {"$patch": "delete"}}}),
    )
    .unwrap();
    assert_eq!(deleted["metadata"]["labels"], json!({}));
    // A PodDisruptionBudget's selector has patch strategy replace.
    let pdb = json!({"spec": {"selector": {"matchLabels": {"a": "1"}}}});
    let merged = smp(
        Kind::PodDisruptionBudget,
        pdb,
        json!({"spec": {"selector": {"matchLabels": {"b": "2"}}}}),
    )
    .unwrap();
    assert_eq!(
        merged["spec"]["selector"],
        json!({"matchLabels": {"b": "2"}})
    );
}

/// A Deployment as `kubectl apply` last wrote it, with an env var a webhook added since.
fn live_deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "app", "image": "app:v1",
             "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"},
                     {"name": "X", "value": "injected"}],
             "ports": [{"containerPort": 8080, "protocol": "TCP"}]},
            {"name": "sidecar", "image": "proxy:v1"}]}}}})
}

#[test]
fn a_kubectl_apply_patch_updates_containers_env_and_ports_in_their_order() {
    // kubectl apply: image changed, env B removed and C added, port 9090 added.
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
        "containers": [{
            "$setElementOrder/env": [{"name": "A"}, {"name": "C"}],
            "$setElementOrder/ports": [{"containerPort": 8080}, {"containerPort": 9090}],
            "env": [{"name": "C", "value": "3"}, {"$patch": "delete", "name": "B"}],
            "image": "app:v2", "name": "app",
            "ports": [{"containerPort": 9090, "protocol": "TCP"}]}]}}}});
    let merged = smp(Kind::Deployment, live_deployment(), patch).unwrap();
    let containers = &merged["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers[0]["image"], "app:v2");
    // Upstream's merge appends C into the room B's deletion freed in the live list, so the
    // ordering finds C after X there (see strategic::LiveView).
    assert_eq!(
        containers[0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "X", "value": "injected"},
               {"name": "C", "value": "3"}])
    );
    assert_eq!(
        containers[0]["ports"],
        json!([{"containerPort": 8080, "protocol": "TCP"},
               {"containerPort": 9090, "protocol": "TCP"}])
    );
    assert_eq!(
        containers[1],
        json!({"name": "sidecar", "image": "proxy:v1"})
    );
    assert_eq!(merged["spec"]["replicas"], 2);
}

#[test]
fn a_kubectl_apply_patch_that_only_adds_puts_the_applied_items_before_live_only_ones() {
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
        "containers": [{
            "$setElementOrder/env": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
            "env": [{"name": "C", "value": "3"}], "name": "app"}]}}}});
    let merged = smp(Kind::Deployment, live_deployment(), patch).unwrap();
    let env = &merged["spec"]["template"]["spec"]["containers"][0]["env"];
    let names: Vec<&str> = env
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["A", "B", "C", "X"]);
}

#[test]
fn a_kubectl_apply_patch_removes_a_container_and_reorders() {
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "sidecar"}],
        "containers": [{"$patch": "delete", "name": "app"}]}}}});
    let merged = smp(Kind::Deployment, live_deployment(), patch).unwrap();
    assert_eq!(
        merged["spec"]["template"]["spec"]["containers"],
        json!([{"name": "sidecar", "image": "proxy:v1"}])
    );
}

#[test]
fn bad_strategic_merge_patches_get_upstreams_errors() {
    let pod = pod_with_containers(json!([{"name": "a"}]));
    let bad = |message: &str| ApiError::BadRequest {
        message: message.into(),
    };
    let internal = |message: &str| ApiError::Internal {
        message: message.into(),
    };
    let cases = [
        (
            "a merge directive in a list is not supported",
            json!({"spec": {"containers": [{"$patch": "merge"}]}}),
            internal("merging lists cannot yet be specified in the patch"),
        ),
        (
            "an unknown map directive names the map",
            json!({"spec": {"$patch": "frobnicate", "x": 1}}),
            internal("unknown patch type: frobnicate in map: map[$patch:frobnicate x:1]"),
        ),
        (
            "an item without the merge key names the merge key",
            json!({"spec": {"containers": [{"image": "x"}]}}),
            internal("map: map[image:x] does not contain declared merge key: name"),
        ),
        (
            "retain keys must be a list",
            json!({"spec": {"$retainKeys": "nodeName"}}),
            bad("invalid patch format of retainKeys"),
        ),
        (
            "the patch may set no key retain keys does not list",
            json!({"spec": {"$retainKeys": ["nodeName"], "hostname": "h"}}),
            bad("invalid patch format of retainKeys"),
        ),
        (
            "a deletion list needs a field name",
            json!({"metadata": {"$deleteFromPrimitiveList": ["x"]}}),
            bad("invalid patch format of primitive list"),
        ),
        (
            "an order directive needs a field name",
            json!({"spec": {"$setElementOrderContainers": [{"name": "a"}]}}),
            bad("invalid patch format of setElementOrder list"),
        ),
        (
            "the patch list must follow the order directive",
            json!({"spec": {"$setElementOrder/containers": [{"name": "a"}],
                            "containers": [{"name": "b"}]}}),
            internal("the order in patch list:\n[map[name:b]]\n doesn't match $setElementOrder list:\n[map[name:a]]"),
        ),
        (
            "list element types must agree",
            json!({"metadata": {"finalizers": [1]}}),
            internal("list element types are not identical: [[f] [1]]"),
        ),
        (
            "a patch that is not an object does not decode",
            json!([1]),
            bad("json: cannot unmarshal array into Go value of type map[string]interface {}"),
        ),
    ];
    let pod = json!({"metadata": {"finalizers": ["f"]}, "spec": pod["spec"]});
    for (name, patch, want) in cases {
        assert_eq!(smp(Kind::Pod, pod.clone(), patch), Err(want), "{name}");
    }
    let lists = json!({"metadata": {"finalizers": [["f"]]}});
    assert_eq!(
        smp(
            Kind::Pod,
            lists,
            json!({"metadata": {"finalizers": [["g"]]}})
        ),
        Err(ApiError::Unprocessable {
            message: UNPROCESSABLE_MESSAGE.into()
        }),
        "lists of lists are unprocessable"
    );
}

static WIDGET: ResourceType = ResourceType {
    group: "example.com",
    api_version: "example.com/v1",
    kind: "Widget",
    plural: "widgets",
    namespaced: true,
    short_names: &[],
    status_subresource: false,
    storage_resource: "example.com/widgets",
};

#[test]
fn a_kind_without_merge_metadata_refuses_strategic_merge_patch() {
    let widget = Kind::Other(&WIDGET);
    let err = smp(widget, json!({"spec": {}}), json!({"spec": {"a": 1}})).unwrap_err();
    assert_eq!(err.code(), 415);
    assert_eq!(
        err.to_string(),
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    let merged = apply(
        widget,
        &json!({"spec": {}}),
        PatchType::Merge,
        br#"{"spec":{"a":1}}"#,
    );
    assert_eq!(merged, Ok(json!({"spec": {"a": 1}})));
}

#[test]
fn every_stored_kind_has_merge_metadata() {
    let builtin = kubeplane_api::types::BUILTIN.iter().map(Kind::Other);
    for kind in Kind::ALL.into_iter().chain(builtin) {
        assert!(meta::for_kind(kind).is_some(), "{}", kind.as_str());
    }
    let container = meta::type_def("io.k8s.api.core.v1.Container").unwrap();
    let ports = container.field("ports").unwrap();
    assert_eq!(ports.patch_merge_key, Some("containerPort"));
    assert_eq!(ports.list_map_keys, ["containerPort", "protocol"]);
    assert!(ports.has_strategy("merge") && !ports.has_strategy("retainKeys"));
    let volumes = meta::type_def("io.k8s.api.core.v1.PodSpec")
        .and_then(|t| t.field("volumes"))
        .unwrap();
    assert!(volumes.has_strategy("merge") && volumes.has_strategy("retainKeys"));
    assert_eq!(volumes.list_type, Some("map"));
}

fn json_patch_of(current: &Value, ops: Value) -> Result<Value, ApiError> {
    apply(
        Kind::Pod,
        current,
        PatchType::Json,
        ops.to_string().as_bytes(),
    )
}

#[test]
fn json_patches_apply_or_fail_as_the_api_server_answers() {
    let pod = json!({"metadata": {"name": "p", "labels": {"a": "1"}}});
    let ok = json_patch_of(
        &pod,
        json!([{"op": "test", "path": "/metadata/labels/a", "value": "1"},
               {"op": "add", "path": "/metadata/labels/b", "value": "2"}]),
    );
    assert_eq!(
        ok.unwrap()["metadata"]["labels"],
        json!({"a": "1", "b": "2"})
    );
    let unprocessable = Err(ApiError::Unprocessable {
        message: UNPROCESSABLE_MESSAGE.into(),
    });
    let cases = [
        (
            "a test that does not match",
            json!([{"op": "test", "path": "/metadata/labels/a", "value": "2"}]),
        ),
        (
            "a path that does not exist",
            json!([{"op": "remove", "path": "/spec/nodeName"}]),
        ),
        (
            "an unknown operation",
            json!([{"op": "frobnicate", "path": "/x"}]),
        ),
    ];
    for (name, ops) in cases {
        assert_eq!(json_patch_of(&pod, ops), unprocessable, "{name}");
    }
    assert_eq!(
        json_patch_of(&pod, json!({"op": "add"})),
        Err(ApiError::BadRequest {
            message: "json: cannot unmarshal object into Go value of type jsonpatch.Patch".into()
        })
    );
    let many: Vec<Value> = (0..=MAX_JSON_PATCH_OPERATIONS)
        .map(|_| json!({"op": "test", "path": "/metadata/name", "value": "p"}))
        .collect();
    let err = json_patch_of(&pod, Value::Array(many)).unwrap_err();
    assert_eq!(err.code(), 413);
    assert!(err.to_string().ends_with("is 10000, got 10001"), "{err}");
    let err = json_patch_of(&pod, json!([{"op": "replace", "path": "", "value": 5}])).unwrap_err();
    assert_eq!(err.code(), 422);
}

#[test]
fn merge_patches_remove_fields_with_null_and_replace_lists() {
    let pod = json!({"metadata": {"labels": {"a": "1", "b": "2"}},
                     "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let merged = apply(
        Kind::Pod,
        &pod,
        PatchType::Merge,
        br#"{"metadata":{"labels":{"a":null}},"spec":{"containers":[{"name":"c"}]}}"#,
    )
    .unwrap();
    assert_eq!(merged["metadata"]["labels"], json!({"b": "2"}));
    assert_eq!(merged["spec"]["containers"], json!([{"name": "c"}]));
    let invalid = Err(ApiError::BadRequest {
        message: "Invalid JSON Patch".into(),
    });
    for body in [&b"{"[..], b"null", b"\"x\""] {
        assert_eq!(apply(Kind::Pod, &pod, PatchType::Merge, body), invalid);
    }
    let err = apply(Kind::Pod, &pod, PatchType::Merge, b"[1]").unwrap_err();
    assert_eq!(
        err.code(),
        422,
        "a list replaces the object, which then does not decode"
    );
}

#[test]
fn service_ports_merge_on_the_port() {
    let svc = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}});
    let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090},
                                          {"port": 443, "protocol": "TCP"}]}});
    let merged = smp(
        Kind::Other(kubeplane_api::types::builtin("v1", "Service").unwrap()),
        svc,
        patch,
    )
    .unwrap();
    assert_eq!(
        merged["spec"]["ports"],
        json!([{"port": 80, "targetPort": 9090, "protocol": "TCP"},
               {"port": 443, "protocol": "TCP"}]),
        "items the patch names keep the patch's order"
    );
}

#[test]
fn patch_types_parse_from_the_content_type() {
    for t in PatchType::ALL {
        assert_eq!(PatchType::from_content_type(t.content_type()), Ok(t));
    }
    assert_eq!(
        PatchType::from_content_type("application/merge-patch+json; charset=utf-8"),
        Ok(PatchType::Merge)
    );
    let err = PatchType::from_content_type("application/json").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, \
         application/strategic-merge-patch+json, application/apply-patch+yaml"
    );
    assert_eq!(err.code(), 415);
    let apply_err = apply(Kind::Pod, &json!({}), PatchType::Apply, b"{}").unwrap_err();
    assert_eq!(apply_err.code(), 500);
}

/// A JSON object of nested objects and scalars (no nulls: a merge patch cannot set one).
fn object() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::from),
        (0i64..5).prop_map(Value::from),
        "[a-c]{0,2}".prop_map(Value::from),
    ];
    let value = leaf.prop_recursive(3, 16, 3, |inner| {
        prop::collection::btree_map("[a-d]", inner, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    });
    prop::collection::btree_map("[a-d]", value, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// The simplest merge patch that turns `a` into `b`.
fn diff(a: &Value, b: &Value) -> Value {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return b.clone();
    };
    let mut patch = serde_json::Map::new();
    for (k, av) in a {
        match b.get(k) {
            None => {
                patch.insert(k.clone(), Value::Null);
            }
            Some(bv) if bv != av => {
                patch.insert(k.clone(), diff(av, bv));
            }
            Some(_) => {}
        }
    }
    for (k, bv) in b {
        if !a.contains_key(k) {
            patch.insert(k.clone(), bv.clone());
        }
    }
    Value::Object(patch)
}

proptest! {
    #[test]
    fn a_merge_patch_diffed_from_a_to_b_turns_a_into_b(a in object(), b in object()) {
        let body = diff(&a, &b).to_string();
        // Field names outside the Pod's schema: strategic merge patch merges them as a merge
        // patch does.
        for patch_type in [PatchType::Merge, PatchType::StrategicMerge] {
            let patched = apply(Kind::Pod, &a, patch_type, body.as_bytes());
            prop_assert_eq!(patched, Ok(b.clone()), "{:?}", patch_type);
        }
    }
}

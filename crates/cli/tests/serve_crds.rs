//! Custom resources in `kubeplane serve`, with kube-rs's dynamic API as the client: a
//! CustomResourceDefinition created through the API becomes Established and its resources are
//! served at both of its versions with every verb (create, get, list with selectors, watch,
//! update, patches, the status and scale subresources, delete), pruned and validated against
//! its schema, printed with its columns, described in `/openapi/v3`, and deleted with it.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use serde_json::{json, Value};

mod support;

use support::serve::Served;

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn crd_resource() -> ApiResource {
    resource(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    )
}

fn widgets(version: &str) -> ApiResource {
    resource("example.com", version, "Widget", "widgets")
}

/// A definition with two served versions (v1 stored), a schema, both subresources and a
/// printer column.
fn definition() -> Value {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "replicas": {"type": "integer"},
            "color": {"type": "string", "enum": ["red", "blue"]}}},
        "status": {"type": "object", "properties": {
            "replicas": {"type": "integer"}, "selector": {"type": "string"}}}}});
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": schema},
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
            "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]})
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget",
                      "shortNames": ["wd"], "categories": ["all"]},
            "versions": [version("v1beta1", false), version("v1", true)]}})
}

fn widget(name: &str, size: i64) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "labels": {"size": size.to_string()}},
        "spec": {"size": size, "replicas": 1, "bogus": "pruned"}}))
    .unwrap()
}

async fn established(crds: &Api<DynamicObject>) -> DynamicObject {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let crd = crds.get("widgets.example.com").await.unwrap();
        let conditions = crd.data["status"]["conditions"].clone();
        let is = |t: &str| {
            conditions
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == t && c["status"] == "True")
        };
        if is("Established") && is("NamesAccepted") {
            return crd;
        }
        assert!(Instant::now() < deadline, "the definition is Established");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn get_json(client: &kube::Client, path: &str, accept: &str) -> Value {
    let req = http::Request::get(path)
        .header("Accept", accept)
        .body(Vec::new())
        .unwrap();
    serde_json::from_str(&client.request_text(req).await.unwrap()).unwrap()
}

fn api_error(r: Result<DynamicObject, kube::Error>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected a Status error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_created_through_the_api_serves_its_resources_with_every_verb() {
    let dir = tempfile::tempdir().unwrap();
    let server = Served::start(dir.path(), "127.0.0.1:0", &[], &[], false);
    let client = server.client().await;
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd_resource());
    let crd: DynamicObject = serde_json::from_value(definition()).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let crd = established(&crds).await;
    assert_eq!(crd.data["status"]["acceptedNames"]["kind"], "Widget");
    assert_eq!(crd.data["status"]["storedVersions"], json!(["v1"]));

    discovery_lists_the_resource(&client).await;
    let v1: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &widgets("v1"));
    let beta: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widgets("v1beta1"));
    let created = v1
        .create(&PostParams::default(), &widget("w1", 3))
        .await
        .unwrap();
    assert_eq!(
        created.data["spec"],
        json!({"size": 3, "replicas": 1}),
        "pruned"
    );
    assert_eq!(created.metadata.generation, Some(1));
    v1.create(&PostParams::default(), &widget("w2", 5))
        .await
        .unwrap();
    let read = beta.get("w1").await.unwrap();
    assert_eq!(
        read.types.unwrap().api_version,
        "example.com/v1beta1",
        "another served version is the same object"
    );

    let names = |l: kube::core::ObjectList<DynamicObject>| {
        l.items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect::<Vec<_>>()
    };
    let all = v1.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(all.clone()), ["w1", "w2"]);
    let by_label = v1
        .list(&ListParams::default().labels("size=5"))
        .await
        .unwrap();
    assert_eq!(names(by_label), ["w2"]);
    let by_field = v1
        .list(&ListParams::default().fields("metadata.name=w1"))
        .await;
    assert_eq!(names(by_field.unwrap()), ["w1"]);
    let page = v1.list(&ListParams::default().limit(1)).await.unwrap();
    assert_eq!(names(page.clone()), ["w1"]);
    let token = page.metadata.continue_.unwrap();
    let next = ListParams::default().limit(1).continue_token(&token);
    assert_eq!(names(v1.list(&next).await.unwrap()), ["w2"]);

    let rv = all.metadata.resource_version.unwrap();
    let mut events = v1
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let spec = json!({"spec": {"size": 4}});
    let patched = v1
        .patch("w1", &PatchParams::default(), &Patch::Merge(&spec))
        .await
        .unwrap();
    assert_eq!(patched.metadata.generation, Some(2), "a spec change");
    let event = tokio::time::timeout(Duration::from_secs(10), events.try_next()).await;
    match event.expect("an event in time").unwrap() {
        Some(WatchEvent::Modified(o)) => assert_eq!(o.data["spec"]["size"], 4),
        other => panic!("expected MODIFIED, got {other:?}"),
    }

    subresources_follow_the_definition(&v1).await;
    validation_answers_as_upstream_does(&v1).await;
    the_table_has_the_definitions_columns(&client).await;

    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while crds.get_opt("widgets.example.com").await.unwrap().is_some() {
        assert!(
            Instant::now() < deadline,
            "the definition goes once its resources are"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let gone = v1.list(&ListParams::default()).await;
    match gone {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 404),
        other => panic!("the resource is no longer served: {other:?}"),
    }
}

async fn discovery_lists_the_resource(client: &kube::Client) {
    let list = get_json(client, "/apis/example.com/v1", "application/json").await;
    let res = list["resources"].as_array().unwrap();
    let w = res.iter().find(|r| r["name"] == "widgets").unwrap();
    assert_eq!(w["shortNames"], json!(["wd"]));
    assert_eq!(w["singularName"], "widget");
    assert_eq!(w["categories"], json!(["all"]));
    assert!(res.iter().any(|r| r["name"] == "widgets/status"));
    assert!(res
        .iter()
        .any(|r| r["name"] == "widgets/scale" && r["kind"] == "Scale"));
    let index = get_json(client, "/openapi/v3", "application/json").await;
    let url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .expect("the group version in the OpenAPI v3 index")
        .to_string();
    let doc = get_json(client, &url, "application/json").await;
    let schema = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        schema["properties"]["spec"]["properties"]["size"]["type"],
        "integer"
    );
    assert_eq!(
        schema["x-kubernetes-group-version-kind"][0]["kind"],
        "Widget"
    );
    let group = get_json(client, "/apis/example.com", "application/json").await;
    assert_eq!(group["preferredVersion"]["version"], "v1");
    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let all = get_json(client, "/apis", aggregated).await;
    let example = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "example.com")
        .expect("the group in aggregated discovery");
    let versions: Vec<&Value> = example["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["version"])
        .collect();
    assert_eq!(versions, [&json!("v1"), &json!("v1beta1")]);
}

async fn subresources_follow_the_definition(v1: &Api<DynamicObject>) {
    let status = json!({"status": {"replicas": 2, "selector": "app=w"}, "spec": {"size": 9}});
    let after = v1
        .patch_status("w1", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(after.data["status"]["replicas"], 2);
    assert_eq!(
        after.data["spec"]["size"], 4,
        "a status write keeps the spec"
    );
    assert_eq!(after.metadata.generation, Some(2), "and the generation");
    let main = json!({"status": {"replicas": 7}, "metadata": {"labels": {"x": "y"}}});
    let after = v1
        .patch("w1", &PatchParams::default(), &Patch::Merge(&main))
        .await
        .unwrap();
    assert_eq!(
        after.data["status"]["replicas"], 2,
        "the main resource keeps the status"
    );
    assert_eq!(after.metadata.generation, Some(2));

    let scale = v1.get_scale("w1").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(1));
    let st = scale.status.unwrap();
    assert_eq!((st.replicas, st.selector.as_deref()), (2, Some("app=w")));
    let to = json!({"spec": {"replicas": 5}});
    v1.patch_scale("w1", &PatchParams::default(), &Patch::Merge(&to))
        .await
        .unwrap();
    assert_eq!(v1.get("w1").await.unwrap().data["spec"]["replicas"], 5);

    let smp = v1
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Strategic(&json!({"spec": {}})),
        )
        .await;
    assert_eq!(api_error(smp).code, 415);
}

async fn validation_answers_as_upstream_does(v1: &Api<DynamicObject>) {
    let s = api_error(v1.create(&PostParams::default(), &widget("big", 20)).await);
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        s.message,
        "Widget.example.com \"big\" is invalid: spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10"
    );
    let mut typed = widget("typed", 1);
    typed.data["spec"]["size"] = json!("three");
    typed.data["spec"]["color"] = json!("pink");
    let s = api_error(v1.create(&PostParams::default(), &typed).await);
    assert_eq!(
        s.message,
        "Widget.example.com \"typed\" is invalid: [spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\", spec.color: Unsupported value: \"pink\": supported values: \"red\", \"blue\"]"
    );
    let unknown = json!({"spec": {"typo": 1}});
    let strict = PatchParams::default().validation_strict();
    let s = api_error(v1.patch("w2", &strict, &Patch::Merge(&unknown)).await);
    assert_eq!(s.code, 400);
    assert!(
        s.message
            .ends_with("strict decoding error: unknown field \"spec.typo\""),
        "{}",
        s.message
    );
}

async fn the_table_has_the_definitions_columns(client: &kube::Client) {
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let t = get_json(
        client,
        "/apis/example.com/v1/namespaces/default/widgets",
        table,
    )
    .await;
    let columns: Vec<&Value> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(columns, [&json!("Name"), &json!("Size")]);
    assert_eq!(t["rows"][0]["cells"], json!(["w1", 4]));
}

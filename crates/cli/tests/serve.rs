//! `kubeplane serve` with kube-rs as the client (the `kube` crate, as a Rust controller would
//! use it): list, create, a watcher, patches, Status errors, and the durability of
//! acknowledged writes across `kill -9`, on `--data-dir` and on a real etcd (`--etcd-servers`;
//! skipped without an etcd binary, except under CI). Each test starts its own server on a free
//! loopback port and stops it.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{watcher, WatchStreamExt};

mod support;

use support::serve::Served;

/// The kubectl story's cluster with durable state in `dir/data`.
fn start(dir: &Path) -> Served {
    let data = dir.join("data");
    Served::start(
        dir,
        "127.0.0.1:0",
        &["--data-dir".as_ref(), data.as_os_str()],
        &[],
        false,
    )
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    }))
    .unwrap()
}

async fn running(pods: &Api<Pod>, selector: &str) -> usize {
    let list = pods
        .list(&ListParams::default().labels(selector))
        .await
        .unwrap();
    list.items
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_lists_creates_watches_patches_and_gets_status_errors() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let client = server.client().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let names: Vec<String> = nodes
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert_eq!(names, ["node-a", "node-b", "node-c"]);

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut seen = watcher(pods.clone(), watcher::Config::default().labels("app=api"))
        .applied_objects()
        .boxed();
    deployments
        .create(&PostParams::default(), &deployment("api", 2))
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(30), seen.try_next()).await;
    let pod = first
        .expect("the watcher sees a pod in time")
        .unwrap()
        .expect("a pod");
    assert!(pod.metadata.name.unwrap().starts_with("api-"));

    let patch = serde_json::json!({"spec": {"replicas": 3}});
    deployments
        .patch("api", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let labels = serde_json::json!({"metadata": {"labels": {"team": "a"}}});
    let d = deployments
        .patch("api", &PatchParams::default(), &Patch::Strategic(&labels))
        .await
        .unwrap();
    assert_eq!(d.metadata.labels.unwrap()["team"], "a");
    let deadline = Instant::now() + Duration::from_secs(30);
    while running(&pods, "app=api").await < 3 {
        assert!(Instant::now() < deadline, "three pods Running in time");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    match pods.get("missing").await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 404);
            assert_eq!(s.reason, "NotFound");
            assert_eq!(s.message, "pods \"missing\" not found");
        }
        other => panic!("expected a 404 Status, got {other:?}"),
    }
    let mut stale = deployments.get("api").await.unwrap();
    deployments
        .patch(
            "api",
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({"metadata": {"annotations": {"x": "1"}}})),
        )
        .await
        .unwrap();
    stale.metadata.managed_fields = None;
    match deployments
        .replace("api", &PostParams::default(), &stale)
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!((s.code, s.reason.as_str()), (409, "Conflict")),
        other => panic!("expected a 409 Conflict, got {other:?}"),
    }
    metrics_are_typed_once_per_family(&client).await;
}

/// `/metrics` as Prometheus reads it: the components' families each typed once, the
/// scheduler's attempts a counter (published once a second: wait for them).
async fn metrics_are_typed_once_per_family(client: &kube::Client) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let req = http::Request::get("/metrics").body(Vec::new()).unwrap();
        let text = client.request_text(req).await.unwrap();
        if text.contains("scheduler_schedule_attempts_total") {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "scheduler metrics in time:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let types: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE ")).collect();
    let twice: Vec<&&str> = types
        .iter()
        .enumerate()
        .filter(|(i, t)| types[..*i].contains(t))
        .map(|(_, t)| t)
        .collect();
    assert!(twice.is_empty(), "typed twice: {twice:?}\n{text}");
    assert!(
        types.contains(&"# TYPE scheduler_schedule_attempts_total counter"),
        "{text}"
    );
    assert!(
        types.contains(&"# TYPE scheduler_pending_pods gauge"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_kill_9_and_watches_resume_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    survive_kill_9(|| start(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_etcd_acknowledged_writes_survive_kill_9_of_the_server_and_watches_resume() {
    use kubeplane_storage::etcd_testing::{etcd_or_skip, EtcdCluster};
    let Some(binary) = etcd_or_skip("serve on etcd") else {
        return;
    };
    let etcd = EtcdCluster::start(&binary, 1);
    let dir = tempfile::tempdir().unwrap();
    let servers = etcd.endpoints().join(",");
    let flags: [&std::ffi::OsStr; 2] = ["--etcd-servers".as_ref(), servers.as_ref()];
    survive_kill_9(|| Served::start(dir.path(), "127.0.0.1:0", &flags, &[], false)).await;
    drop(etcd);
}

/// Creates ConfigMaps, kills the server with SIGKILL, starts another on the same storage, and
/// checks that every acknowledged ConfigMap is there at its resourceVersion and that a watch
/// from before the kill replays what followed.
async fn survive_kill_9(start: impl Fn() -> Served) {
    let server = start();
    let client = server.client().await;
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut acknowledged = Vec::new();
    for i in 0..60 {
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:03}")}, "data": {"i": i.to_string()},
        }))
        .unwrap();
        let created = maps.create(&PostParams::default(), &cm).await.unwrap();
        acknowledged.push((
            created.metadata.name.unwrap(),
            created.metadata.resource_version.unwrap(),
        ));
    }
    drop(client);
    drop(server); // SIGKILL: no shutdown, no flush

    let server = start();
    let client = server.client().await;
    let maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let after: Vec<(String, String)> = maps
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| {
            c.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("cm-"))
        })
        .map(|c| {
            (
                c.metadata.name.unwrap(),
                c.metadata.resource_version.unwrap(),
            )
        })
        .collect();
    assert_eq!(
        after, acknowledged,
        "every acknowledged ConfigMap, at its resourceVersion"
    );

    let from = &acknowledged[29].1;
    let stream = maps
        .watch(&WatchParams::default().timeout(5), from)
        .await
        .unwrap();
    let replayed: Vec<String> = stream
        .take_while(|e| futures::future::ready(matches!(e, Ok(WatchEvent::Added(_)))))
        .filter_map(|e| async move {
            match e {
                Ok(WatchEvent::Added(c)) => c.metadata.name.filter(|n| n.starts_with("cm-")),
                _ => None,
            }
        })
        .take(30)
        .collect()
        .await;
    let expected: Vec<String> = acknowledged[30..].iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        replayed, expected,
        "a watch from before the restart replays what followed"
    );
}

/// The managers of an object's managedFields with their operations, in the stored order.
fn managers(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Vec<String> {
    let entries = meta.managed_fields.as_deref().unwrap_or_default();
    entries
        .iter()
        .map(|e| {
            format!(
                "{}/{}",
                e.manager.as_deref().unwrap_or(""),
                e.operation.as_deref().unwrap_or("")
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_server_side_apply_shares_fields_refuses_conflicts_and_forces() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let client = server.client().await;
    let maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let config = |data: serde_json::Value| {
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "settings"}, "data": data})
    };
    let team_a = PatchParams::apply("team-a");
    let team_b = PatchParams::apply("team-b");

    let created = maps
        .patch(
            "settings",
            &team_a,
            &Patch::Apply(config(serde_json::json!({"color": "blue", "size": "m"}))),
        )
        .await
        .expect("an apply creates the missing object");
    assert_eq!(managers(&created.metadata), ["team-a/Apply"]);

    let both = maps
        .patch(
            "settings",
            &team_b,
            &Patch::Apply(config(serde_json::json!({"shape": "round"}))),
        )
        .await
        .unwrap();
    let data = both.data.unwrap_or_default();
    assert_eq!(
        (data["color"].as_str(), data["shape"].as_str()),
        ("blue", "round")
    );
    assert_eq!(managers(&both.metadata), ["team-a/Apply", "team-b/Apply"]);

    let recolor = config(serde_json::json!({"shape": "round", "color": "red"}));
    match maps
        .patch("settings", &team_b, &Patch::Apply(&recolor))
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
            assert_eq!(
                s.message,
                "Apply failed with 1 conflict: conflict with \"team-a\": .data.color"
            );
        }
        other => panic!("expected a 409 apply conflict, got {other:?}"),
    }
    let forced = maps
        .patch("settings", &team_b.clone().force(), &Patch::Apply(&recolor))
        .await
        .expect("force takes the field");
    assert_eq!(forced.data.unwrap_or_default()["color"], "red");

    // team-a no longer owns the color: leaving it and the size out removes only the size.
    let after = maps
        .patch(
            "settings",
            &team_a,
            &Patch::Apply(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}})),
        )
        .await
        .unwrap();
    let data = after.data.unwrap_or_default();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["color", "shape"]);
    assert_eq!(managers(&after.metadata), ["team-b/Apply"]);

    let updated = maps
        .patch(
            "settings",
            &PatchParams {
                field_manager: Some("editor".into()),
                ..Default::default()
            },
            &Patch::Merge(serde_json::json!({"data": {"shape": "square"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        managers(&updated.metadata),
        ["team-b/Apply", "editor/Update"]
    );
}

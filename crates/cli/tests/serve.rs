//! `kubeplane serve` with kube-rs as the client (the `kube` crate, as a Rust controller would
//! use it): list, create, a watcher, patches, Status errors, and the durability of
//! acknowledged writes across `kill -9`, on `--data-dir` and on a real etcd (`--etcd-servers`;
//! skipped without an etcd binary, except under CI), and 503/504 answers while etcd has no
//! quorum. Each test starts its own server on a free loopback port and stops it.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{watcher, WatchStreamExt};

mod support;

use support::serve::{deployment, Served};

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

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
    }))
    .unwrap()
}

/// Asserts that a request made while etcd has no quorum got a 503 ServiceUnavailable or a 504
/// Timeout Status (not a 500, not success) within a minute.
async fn fails_without_quorum<T: std::fmt::Debug>(
    what: &str,
    request: impl std::future::Future<Output = kube::Result<T>>,
) {
    let started = Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(60), request)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within 60 s"));
    match answer {
        Err(kube::Error::Api(s)) => {
            let got = (s.code, s.reason.as_str());
            assert!(
                matches!(got, (503, "ServiceUnavailable") | (504, "Timeout")),
                "{what}: expected a 503 or 504 Status, got {s:?}"
            );
            assert_eq!(s.status, Some(kube::core::response::StatusSummary::Failure));
            assert!(!s.message.is_empty(), "{what}: a message");
        }
        other => panic!("{what}: expected a 503 or 504 Status, got {other:?}"),
    }
    eprintln!("{what}: answered in {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_etcd_without_quorum_requests_get_503_or_504_and_service_resumes_after() {
    use kubeplane_storage::etcd_testing::{etcd_or_skip, EtcdCluster};
    let Some(binary) = etcd_or_skip("serve on etcd without quorum") else {
        return;
    };
    let mut etcd = EtcdCluster::start(&binary, 3);
    let dir = tempfile::tempdir().unwrap();
    let servers = etcd.endpoints().join(",");
    let flags: [&std::ffi::OsStr; 2] = ["--etcd-servers".as_ref(), servers.as_ref()];
    let mut server = Served::start(dir.path(), "127.0.0.1:0", &flags, &[], false);
    let maps: Api<ConfigMap> = Api::namespaced(server.client_without_retries().await, "default");
    let before = maps
        .create(&PostParams::default(), &config_map("before"))
        .await
        .unwrap();
    let from = before.metadata.resource_version.clone().unwrap();
    let mut events = maps
        .watch(&WatchParams::default().timeout(290), &from)
        .await
        .unwrap()
        .boxed();

    etcd.stop_member(1);
    etcd.stop_member(2);
    let pp = PostParams::default();
    fails_without_quorum("a create", maps.create(&pp, &config_map("during"))).await;
    fails_without_quorum("a get", maps.get("before")).await;
    // An update and a delete read the object first: that read fails too, and they answer
    // with its error, not a 404.
    fails_without_quorum("an update", maps.replace("before", &pp, &before)).await;
    fails_without_quorum("a delete", maps.delete("before", &Default::default())).await;
    fails_without_quorum("a list", maps.list(&ListParams::default())).await;
    assert!(server.is_running(), "the server survives the lost quorum");

    etcd.run_member(1);
    etcd.run_member(2);
    etcd.wait_healthy(1);
    etcd.wait_healthy(2);
    // Writes succeed again once etcd has a leader.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match maps.create(&pp, &config_map("after")).await {
            Ok(_) => break,
            Err(kube::Error::Api(s)) if s.code == 409 => break,
            Err(e) => assert!(Instant::now() < deadline, "writes resume: {e:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        maps.get("after").await.unwrap().metadata.name.as_deref(),
        Some("after")
    );
    // The watch from before the outage sees what followed ("during" had an unknown outcome:
    // etcd may have applied it once its quorum returned).
    let mut names = Vec::new();
    while names.last().map(String::as_str) != Some("after") {
        let next = tokio::time::timeout_at(deadline.into(), events.next()).await;
        match next.expect("the watch sees the later create in time") {
            Some(Ok(WatchEvent::Added(c))) => names.extend(c.metadata.name),
            Some(Ok(WatchEvent::Bookmark(_))) => {}
            other => panic!("the watch from before the outage: {other:?}"),
        }
    }
    assert!(
        names == ["after"] || names == ["during", "after"],
        "the watch sees the later creates once: {names:?}"
    );
    // The in-process control plane works again: a new Deployment's pod runs.
    let client = server.client().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&pp, &deployment("late", 1))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let deadline = Instant::now() + Duration::from_secs(60);
    while running(&pods, "app=late").await < 1 {
        assert!(
            Instant::now() < deadline,
            "the Deployment's pod runs in time"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(server.is_running(), "the server still runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_etcd_that_answers_nothing_a_write_gets_upstreams_504_timeout() {
    use kubeplane_storage::etcd_testing::{etcd_or_skip, EtcdCluster};
    let Some(binary) = etcd_or_skip("serve on etcd that answers nothing") else {
        return;
    };
    let etcd = EtcdCluster::start(&binary, 1);
    let dir = tempfile::tempdir().unwrap();
    let servers = etcd.endpoints().join(",");
    let flags: [&std::ffi::OsStr; 2] = ["--etcd-servers".as_ref(), servers.as_ref()];
    let mut server = Served::start(dir.path(), "127.0.0.1:0", &flags, &[], false);
    let maps: Api<ConfigMap> = Api::namespaced(server.client_without_retries().await, "default");
    let pp = PostParams::default();
    maps.create(&pp, &config_map("before")).await.unwrap();

    etcd.pause_member(0);
    let started = Instant::now();
    let write = tokio::time::timeout(
        Duration::from_secs(30),
        maps.create(&pp, &config_map("during")),
    )
    .await;
    etcd.resume_member(0);
    match write.expect("an answer within 30 s") {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (504, "Timeout"), "{s:?}");
            assert_eq!(
                s.message,
                "Timeout: request did not complete within requested timeout - context deadline exceeded"
            );
        }
        other => panic!("expected a 504 Timeout Status, got {other:?}"),
    }
    eprintln!("the create answered in {:?}", started.elapsed());
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Err(e) = maps.create(&pp, &config_map("after")).await {
        assert!(Instant::now() < deadline, "writes resume: {e:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(server.is_running(), "the server still runs");
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

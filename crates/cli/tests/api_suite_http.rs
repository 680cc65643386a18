//! The seam's API test suite (`kubeplane_api::suite`) over HTTPS: every case gets a fresh
//! `kubeplane serve --api-only` (in this process, on a free loopback port, stopped when the
//! case ends) and the live runtime's client, which speaks to it through kube-rs. So the
//! server's handlers and the live client are held to the same cases as the in-memory
//! registry, the durable storage and etcd (`crates/registry/tests`), in memory and on a real
//! etcd (each case under a key prefix of its own, `--etcd-prefix`).

mod support;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kubeplane_api::{ApiError, Client, Object};
use kubeplane_live::client::LiveClient;
use kubeplane_live::clock::LiveClock;
use kubeplane_server::{Config, Handle};

/// The live client of one served, empty cluster; stops the server when dropped.
struct Http {
    client: LiveClient,
    server: Option<Handle>,
    _runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

impl Drop for Http {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop();
        }
    }
}

fn empty_input() -> kubeplane_sim::scenario::Input {
    kubeplane_sim::scenario::Input {
        objects: Vec::new(),
        scheduler_configs: Vec::new(),
        scenario: kubeplane_sim::scenario::Scenario::for_version(None),
        scenario_source: None,
    }
}

/// Serves an empty cluster with no control plane and connects the live client to it.
fn served() -> Http {
    served_on(None)
}

/// [`served`], keeping the objects in etcd at `etcd` (client URLs) under a key prefix of the
/// case's own, so that each case starts from an empty cluster.
fn served_on(etcd: Option<&[String]>) -> Http {
    static CASE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut config = Config {
        listen: "127.0.0.1:0".parse().expect("an address"),
        kubeconfig_out: Some(kubeconfig.clone()),
        api_only: true,
        ..Config::default()
    };
    if let Some(servers) = etcd {
        let case = CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        config.etcd_servers = Some(servers.to_vec());
        config.etcd_prefix = Some(format!("/suite-{}-{case}", std::process::id()));
    }
    let server = kubeplane_server::start(config, empty_input()).expect("the server starts");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    // A 429 or 503 is the answer a case checks, not something to retry.
    let kube = runtime.block_on(support::serve::client_without_retries_of(&kubeconfig));
    let client = LiveClient::new(
        kube,
        runtime.handle().clone(),
        LiveClock::start().api_clock(),
        Arc::new(AtomicBool::new(true)),
    );
    Http {
        client,
        server: Some(server),
        _runtime: runtime,
        _dir: dir,
    }
}

impl Client for Http {
    fn explain(&self) -> bool {
        false
    }
    kubeplane_api::delegate_client!(client: cache, clock, get, create, update, update_status,
        patch_pod_status, delete, evict, bind, update_scale, record_event, emit_record);
}

#[test]
fn the_api_suite_passes_over_https_through_the_live_client() {
    kubeplane_api::suite::run_all(&|| Box::new(served()));
}

#[test]
fn the_api_suite_passes_over_https_on_etcd() {
    use kubeplane_storage::etcd_testing::{etcd_or_skip, EtcdCluster};
    let Some(binary) = etcd_or_skip("the API suite over HTTPS on etcd") else {
        return;
    };
    let etcd = EtcdCluster::start(&binary, 1);
    let servers = etcd.endpoints();
    kubeplane_api::suite::run_all(&|| Box::new(served_on(Some(&servers))));
}

#[test]
fn an_api_only_server_runs_no_control_plane() {
    // With a scheduler inside, an unbound pod would be bound or marked unschedulable; with
    // --api-only it stays as it was created.
    let mut http = served();
    let pod: Object = serde_json::from_value::<k8s_openapi::api::core::v1::Pod>(
        serde_json::json!({"metadata": {"name": "p", "namespace": "default"},
                           "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    )
    .map(|p| Object::Pod(Arc::new(p.into())))
    .expect("a pod");
    let created = http.client.create(pod).expect("created");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let now = http.client.get(&created.key()).expect("read back");
    assert_eq!(now.resource_version(), created.resource_version());
    let node = kubeplane_api::ObjectKey::new(kubeplane_api::Kind::Node, "", "n1");
    assert!(matches!(
        http.client.get(&node),
        Err(ApiError::NotFound { .. })
    ));
}

#[test]
fn api_only_refuses_a_scenario_with_steps() {
    let out = support::kubeplane(&[
        "serve",
        "--api-only",
        "--listen",
        "127.0.0.1:0",
        "examples/cronjob.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", support::stderr(&out));
    assert!(
        support::stderr(&out).contains("--api-only: the Scenario's"),
        "{}",
        support::stderr(&out)
    );
}

//! `kubeplane serve` runs a Scenario's steps on its clock: on a virtual clock 60 times faster
//! than the wall, steps at 30 s and 60 s of cluster time take effect about half a second and a
//! second after the start, in order, and a failing step does not stop the others. The server
//! is started on a free loopback port and stopped by the test.

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use support::serve::Served;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenarios_steps_run_on_the_servers_virtual_clock() {
    let dir = std::env::temp_dir().join(format!("kubeplane-serve-steps-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let clock = ["--clock", "virtual", "--speed", "60"].map(std::ffi::OsStr::new);
    let server = Served::start(
        &dir,
        "127.0.0.1:0",
        &clock,
        &["tests/serve/steps.yaml"],
        true,
    );
    let nodes: Api<Node> = Api::all(server.client().await);

    let node_b = nodes.get("node-b").await.unwrap();
    let cordoned = |n: &Node| n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
    assert!(!cordoned(&node_b), "nothing has run before its time");

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let b = nodes.get("node-b").await.unwrap();
        if cordoned(&b) {
            break;
        }
        assert!(Instant::now() < deadline, "node-b was not cordoned");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let a = nodes.get("node-a").await.unwrap();
    let taints = a.spec.and_then(|s| s.taints).unwrap_or_default();
    assert!(
        taints
            .iter()
            .any(|t| t.key == "dedicated" && t.effect == "NoSchedule"),
        "the 30 s step ran before the 60 s one: {taints:?}"
    );
    let c = nodes.get("node-c").await.unwrap();
    let stage = c.metadata.labels.unwrap_or_default().get("stage").cloned();
    assert_eq!(
        stage.as_deref(),
        Some("later"),
        "the step after a failed one ran"
    );

    let output = server.stop();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("step 2 (delete) at 30s") && stderr.contains("not found"),
        "the failed step is reported: {stderr}"
    );
    assert!(
        stderr.contains("does not check its 1 expectation(s)"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

//! Benchmark of the DaemonSet controller on 5,000 nodes: from nothing to a pod for every node
//! (20 bursts of 250 creates, each sync reading every node and the DaemonSet's pods), then a
//! template change rolled out with `maxUnavailable: 100%` (5,000 deletes and 5,000 creates).
//! The controller runs alone over a test client (no scheduler, so pods stay unbound and go at
//! once when deleted). Wall time is read here only, never in decision code.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::{Client, Component, DynamicObject, Kind, Object};
use kubeplane_controllers::daemon::{
    daemon_set_type, DaemonSetsController, REASON_SUCCESSFUL_CREATE,
};
use kubeplane_registry::testing::TestClient;
use serde_json::{json, Value};

/// What [`bench_daemon_set`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReport {
    pub n_nodes: usize,
    /// Creating the nodes and the DaemonSet in the store (not the controller's work).
    pub setup_wall: Duration,
    /// From the DaemonSet's creation until every node has its pod.
    pub launch_wall: Duration,
    /// From the template change until every pod is of the new template.
    pub update_wall: Duration,
    /// Pods created in all (both phases).
    pub created: usize,
    pub syncs: u64,
    /// Every node ended with exactly one pod of the new template.
    pub ok: bool,
}

impl BenchReport {
    pub fn summary(&self) -> String {
        format!(
            "daemonset-controller: {} nodes: launch {:.3} s, rolling update (maxUnavailable 100%) {:.3} s, {} pods created, {} syncs, setup {:.3} s ({})",
            self.n_nodes,
            self.launch_wall.as_secs_f64(),
            self.update_wall.as_secs_f64(),
            self.created,
            self.syncs,
            self.setup_wall.as_secs_f64(),
            if self.ok { "ok" } else { "WRONG" },
        )
    }
}

fn daemon_set(image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "image": image}]}
            }
        }
    })
}

fn ds_object(v: &Value) -> Object {
    Object::Other(Arc::new(
        DynamicObject::from_value(daemon_set_type(), v).expect("a valid DaemonSet"),
    ))
}

fn pods_with_image(client: &TestClient, image: &str) -> usize {
    client
        .cache()
        .list(Kind::Pod)
        .filter_map(|o| o.as_pod())
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.containers.first())
                .and_then(|c| c.image.as_deref())
                == Some(image)
        })
        .count()
}

pub fn bench_daemon_set(n_nodes: usize) -> BenchReport {
    let started = Instant::now();
    let mut client = TestClient::new(7);
    let mut dsc = DaemonSetsController::new();
    for i in 0..n_nodes {
        let node = Node {
            metadata: ObjectMeta {
                name: Some(format!("node-{i}")),
                ..Default::default()
            },
            ..Default::default()
        };
        client
            .create(Object::Node(Arc::new(node.into())))
            .expect("node");
    }
    client.settle(&mut [&mut dsc]);
    let setup_wall = started.elapsed();

    let started = Instant::now();
    client
        .create(ds_object(&daemon_set("agent:v1")))
        .expect("daemonset");
    client.settle(&mut [&mut dsc]);
    let launch_wall = started.elapsed();

    let started = Instant::now();
    let cur = client
        .cache()
        .get(Kind::Other(daemon_set_type()), "kube-system", "agent")
        .expect("stored")
        .clone();
    let mut updated = ds_object(&daemon_set("agent:v2"));
    updated.meta_mut().resource_version = Some(cur.resource_version().to_string());
    client.update(updated).expect("template change");
    client.settle(&mut [&mut dsc]);
    let update_wall = started.elapsed();

    let syncs = dsc
        .metrics()
        .iter()
        .find(|(n, _)| n.starts_with("workqueue_adds_total"))
        .map_or(0, |(_, v)| *v);
    let created = client.events_with_reason(REASON_SUCCESSFUL_CREATE).len();
    let ok = pods_with_image(&client, "agent:v2") == n_nodes
        && client.cache().list(Kind::Pod).count() == n_nodes;
    BenchReport {
        n_nodes,
        setup_wall,
        launch_wall,
        update_wall,
        created,
        syncs,
        ok,
    }
}

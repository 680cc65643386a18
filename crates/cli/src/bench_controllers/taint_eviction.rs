//! Benchmark of the taint-eviction controller: a NoExecute taint lands on every node at once,
//! each node running pods with the default 300 s tolerations. Measures the wall time of the
//! eviction decisions (one per pod) and of the evictions themselves, and checks the virtual
//! timeline. Wall time is read here only, never in decision code.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, Node, Pod, PodSpec, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::{Client, Object, StoredPod};
use kubeplane_core::SimTime;
use kubeplane_registry::testing::TestClient;

use kubeplane_controllers::taint_eviction::{
    TaintEvictionController, REASON_TAINT_MANAGER_EVICTION,
};
use kubeplane_core::taints::TAINT_NODE_UNREACHABLE;
use kubeplane_registry::admission::default_toleration_seconds;

/// What [`bench_noexecute_eviction`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReport {
    pub n_nodes: usize,
    pub n_pods: usize,
    /// Creating the objects and letting the controller observe them.
    pub setup_wall: Duration,
    /// Observing the node updates and deciding for every pod (the taint instant).
    pub decisions_wall: Duration,
    /// Evictions scheduled by those decisions.
    pub decisions: usize,
    /// Firing the evictions: event, DisruptionTarget condition and delete for each pod.
    pub evictions_wall: Duration,
    /// `TaintManagerEviction` "Marking for deletion" events.
    pub evictions: usize,
    /// Virtual instant of the taint.
    pub taint_at_secs: f64,
    /// Virtual instants of the first and the last eviction.
    pub first_eviction_at_secs: Option<f64>,
    pub last_eviction_at_secs: Option<f64>,
    /// Every pod was evicted exactly once, at taint time + 300 s.
    pub timeline_ok: bool,
}

impl BenchReport {
    /// One line for a person.
    pub fn summary(&self) -> String {
        format!(
            "taint-eviction: {} nodes x {} pods: {} decisions in {:.3} s, {} evictions in {:.3} s (virtual {:?}..{:?} s, timeline {})",
            self.n_nodes,
            self.n_pods / self.n_nodes.max(1),
            self.decisions,
            self.decisions_wall.as_secs_f64(),
            self.evictions,
            self.evictions_wall.as_secs_f64(),
            self.first_eviction_at_secs,
            self.last_eviction_at_secs,
            if self.timeline_ok { "ok" } else { "WRONG" },
        )
    }
}

fn bench_node(name: &str) -> Object {
    Object::Node(Arc::new(
        Node {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            ..Default::default()
        }
        .into(),
    ))
}

fn bench_pod(name: &str, node: &str) -> Object {
    let mut pod: StoredPod = Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some("default".to_string()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node.to_string()),
            containers: vec![Container {
                name: "c0".to_string(),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
    .into();
    default_toleration_seconds(&mut pod);
    Object::Pod(Arc::new(pod))
}

/// Taints `n_nodes` nodes, each with `pods_per_node` pods carrying the default tolerations,
/// with `node.kubernetes.io/unreachable:NoExecute` at t=10 s, then runs to t=310 s.
pub fn bench_noexecute_eviction(n_nodes: usize, pods_per_node: usize) -> BenchReport {
    let setup_start = Instant::now();
    let mut client = TestClient::new(0);
    client.explain = false;
    let mut tc = TaintEvictionController::new();
    let names: Vec<String> = (0..n_nodes).map(|i| format!("node-{i:05}")).collect();
    for name in &names {
        client.create(bench_node(name)).expect("create node");
        for j in 0..pods_per_node {
            client
                .create(bench_pod(&format!("{name}-pod-{j:03}"), name))
                .expect("create pod");
        }
    }
    client.settle(&mut [&mut tc]);
    let setup_wall = setup_start.elapsed();

    let taint_at = SimTime::from_secs(10);
    client.run_until(taint_at, &mut [&mut tc]);
    for name in &names {
        let mut n = kubeplane_api::StoredNode::clone(client.store.get_node(name).expect("node"));
        n.spec.get_or_insert_with(Default::default).taints = Some(vec![Taint {
            key: TAINT_NODE_UNREACHABLE.to_string(),
            effect: "NoExecute".to_string(),
            value: None,
            time_added: Some(client.store.timestamp(taint_at)),
        }]);
        client
            .update(Object::Node(Arc::new(n)))
            .expect("taint node");
    }
    let decisions_start = Instant::now();
    client.settle(&mut [&mut tc]);
    let decisions_wall = decisions_start.elapsed();
    let decisions = tc.pending_evictions();

    let deadline = SimTime::from_secs(310);
    let evictions_start = Instant::now();
    client.run_until(deadline, &mut [&mut tc]);
    let evictions_wall = evictions_start.elapsed();

    let times: Vec<SimTime> = client
        .events
        .iter()
        .filter(|e| {
            e.reason() == REASON_TAINT_MANAGER_EVICTION && e.message().starts_with("Marking")
        })
        .map(|e| e.time())
        .collect();
    let n_pods = n_nodes * pods_per_node;
    let timeline_ok = times.len() == n_pods && times.iter().all(|&t| t == deadline);
    BenchReport {
        n_nodes,
        n_pods,
        setup_wall,
        decisions_wall,
        decisions,
        evictions_wall,
        evictions: times.len(),
        taint_at_secs: taint_at.as_secs_f64(),
        first_eviction_at_secs: times.iter().min().map(|t| t.as_secs_f64()),
        last_eviction_at_secs: times.iter().max().map(|t| t.as_secs_f64()),
        timeline_ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_benchmark_workload_evicts_every_pod_at_taint_time_plus_300_s() {
        let r = bench_noexecute_eviction(10, 3);
        assert_eq!((r.n_pods, r.decisions, r.evictions), (30, 30, 30));
        assert_eq!(r.first_eviction_at_secs, Some(310.0));
        assert!(r.timeline_ok, "{}", r.summary());
    }
}

/// The full-size benchmark: `cargo test --release -p kubeplane-controllers -- --ignored --nocapture full_size`.
#[cfg(test)]
#[test]
#[ignore = "benchmark; run in release"]
fn full_size_noexecute_eviction_benchmark() {
    let r = bench_noexecute_eviction(1000, 30);
    println!("{}", r.summary());
    println!("{r:?}");
    assert!(r.timeline_ok);
}

//! Benchmark of the node lifecycle controller's health monitor on a healthy cluster: every
//! node renews its Lease every 10 s and the monitor runs every 5 s of virtual time. Measures
//! the wall time spent in the controller only (lease events are built outside the timer and
//! fed to it directly: the controller reads Leases only from watch events). Wall time is read
//! here only, never in decision code.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kubeplane_api::{Client, Component, EventType, Kind, Object, WatchEvent};
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;
use kubeplane_registry::testing::TestClient;

use kubeplane_controllers::node_lifecycle::{
    NodeLifecycleConfig, NodeLifecycleController, NODE_LEASE_NAMESPACE,
};

/// What [`bench_node_monitor`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorBenchReport {
    pub n_nodes: usize,
    pub virtual_secs: i64,
    pub monitor_passes: u64,
    /// Wall time inside the controller (observe + run).
    pub controller_wall: Duration,
    /// Wall time of the whole run, lease events included.
    pub total_wall: Duration,
    /// Node writes by the controller (zero on a healthy cluster).
    pub node_writes: u64,
}

impl MonitorBenchReport {
    pub fn summary(&self) -> String {
        format!(
            "node-lifecycle: {} nodes, {} s virtual, {} passes: {:.3} s in the controller ({:.0} ns per node per pass), {} node writes",
            self.n_nodes,
            self.virtual_secs,
            self.monitor_passes,
            self.controller_wall.as_secs_f64(),
            self.controller_wall.as_nanos() as f64
                / (self.monitor_passes.max(1) as f64 * self.n_nodes.max(1) as f64),
            self.node_writes,
        )
    }
}

/// Runs the health monitor over `n_nodes` healthy nodes for `virtual_secs` of virtual time.
pub fn bench_node_monitor(n_nodes: usize, virtual_secs: i64) -> MonitorBenchReport {
    let total_start = Instant::now();
    let mut client = TestClient::new(0);
    client.explain = false;
    let mut nlc = NodeLifecycleController::new(NodeLifecycleConfig::default());
    let t0 = client.store.timestamp(SimTime::ZERO);
    let names: Vec<String> = (0..n_nodes).map(|i| format!("node-{i:05}")).collect();
    for name in &names {
        let node = Node {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..Default::default()
            },
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_heartbeat_time: Some(t0.clone()),
                    last_transition_time: Some(t0.clone()),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        client
            .create(Object::Node(Arc::new(node.into())))
            .expect("create node");
    }
    let mut leases: Vec<Arc<Lease>> = names
        .iter()
        .map(|name| {
            Arc::new(Lease {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(NODE_LEASE_NAMESPACE.into()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(name.clone()),
                    lease_duration_seconds: Some(40),
                    ..Default::default()
                }),
            })
        })
        .collect();

    let mut controller_wall = Duration::ZERO;
    let mut node_writes = 0u64;
    let mut rv = 1_000_000_000u64;
    let period = SimDuration::from_secs(5);
    let end = SimTime::from_secs(virtual_secs);
    let start = client.store.start_time();
    let mut t = SimTime::ZERO;
    let mut first = true;
    while t <= end {
        client.now = t;
        let mut events = client.store.take_events();
        if !first {
            node_writes += events
                .iter()
                .filter(|e| e.object.kind() == Kind::Node)
                .count() as u64;
        }
        first = false;
        if t.0 % SimDuration::from_secs(10).0 == 0 {
            let renew = MicroTime(t.to_timestamp(start));
            for lease in &mut leases {
                Arc::make_mut(lease).spec.as_mut().expect("spec").renew_time = Some(renew.clone());
                rv += 1;
                events.push(WatchEvent {
                    type_: EventType::Modified,
                    object: Object::Lease(Arc::clone(lease)),
                    old: None,
                    resource_version: rv,
                });
            }
        }
        let began = Instant::now();
        for ev in &events {
            nlc.observe(ev, t);
        }
        while nlc.next_wakeup().is_some_and(|w| w <= t) {
            nlc.run(t, &mut client);
            for ev in client.store.take_events() {
                if ev.object.kind() == Kind::Node {
                    node_writes += 1;
                }
                nlc.observe(&ev, t);
            }
        }
        controller_wall += began.elapsed();
        t = t + period;
    }
    MonitorBenchReport {
        n_nodes,
        virtual_secs,
        monitor_passes: nlc.monitor_passes(),
        controller_wall,
        total_wall: total_start.elapsed(),
        node_writes,
    }
}

/// The full-size benchmark: `cargo test --release -p kubeplane-controllers -- --ignored --nocapture full_size`.
#[cfg(test)]
#[test]
#[ignore = "benchmark; run in release"]
fn full_size_node_monitor_benchmark() {
    let r = bench_node_monitor(1000, 24 * 3600);
    println!("{}", r.summary());
    println!("{r:?}");
    assert_eq!(r.node_writes, 0);
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_monitor_benchmark_reports_a_quiet_cluster() {
        let r = super::bench_node_monitor(20, 3600);
        assert_eq!(r.n_nodes, 20);
        assert_eq!(r.monitor_passes, 721);
        assert_eq!(r.node_writes, 0, "a healthy cluster needs no node writes");
    }
}

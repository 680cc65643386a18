//! Builders and store helpers for the controllers' tests. Nothing here reads the wall clock.

use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodCondition, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kubeplane_api::{Client, Kind, Object, ObjectKey};
use kubeplane_core::SimTime;
use kubeplane_registry::testing::TestClient;

pub fn secs(s: i64) -> SimTime {
    SimTime::from_secs(s)
}

pub fn millis(ms: i64) -> SimTime {
    SimTime::from_millis(ms)
}

pub fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: (!value.is_empty()).then(|| value.to_string()),
        effect: effect.into(),
        time_added: None,
    }
}

/// `testTaintN=testN:NoExecute`, the taints of upstream's taint-eviction tests.
pub fn test_taint(n: u32) -> Taint {
    taint(&format!("testTaint{n}"), &format!("test{n}"), "NoExecute")
}

pub use kubeplane_core::testing::toleration;

/// Tolerates `testTaintN=testN:NoExecute` for `secs` (None: forever), as upstream's tests.
pub fn test_toleration(n: u32, secs: Option<i64>) -> Toleration {
    toleration(
        &format!("testTaint{n}"),
        "Equal",
        &format!("test{n}"),
        "NoExecute",
        secs,
    )
}

pub struct NodeBuilder(Node);

pub fn node(name: &str) -> NodeBuilder {
    NodeBuilder(Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus::default()),
    })
}

impl NodeBuilder {
    pub fn taint(mut self, t: Taint) -> Self {
        let spec = self.0.spec.get_or_insert_with(Default::default);
        spec.taints.get_or_insert_with(Vec::new).push(t);
        self
    }

    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(k.into(), v.into());
        self
    }

    pub fn zone(self, region: &str, zone: &str) -> Self {
        self.label("topology.kubernetes.io/region", region)
            .label("topology.kubernetes.io/zone", zone)
    }

    pub fn unschedulable(mut self) -> Self {
        self.0
            .spec
            .get_or_insert_with(Default::default)
            .unschedulable = Some(true);
        self
    }

    /// Adds a condition with the given heartbeat and transition instants (wall-clock
    /// timestamps of the default test start time).
    pub fn condition(mut self, type_: &str, status: &str, heartbeat: SimTime) -> Self {
        let start: jiff::Timestamp = TEST_START.parse().expect("valid");
        let ts =
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(heartbeat.to_timestamp(start));
        let status_obj = self.0.status.get_or_insert_with(Default::default);
        status_obj
            .conditions
            .get_or_insert_with(Vec::new)
            .push(NodeCondition {
                type_: type_.into(),
                status: status.into(),
                last_heartbeat_time: Some(ts.clone()),
                last_transition_time: Some(ts),
                ..Default::default()
            });
        self
    }

    pub fn ready(self, heartbeat: SimTime) -> Self {
        self.condition("Ready", "True", heartbeat)
    }

    pub fn build(self) -> Object {
        Object::Node(Arc::new(self.0.into()))
    }
}

/// The start time of [`TestClient`] stores.
pub const TEST_START: &str = "2025-01-01T00:00:00Z";

pub use kubeplane_core::testing::PodBuilder;

/// A pod in `ns` with one container and no UID or status, as a client creates it.
pub fn pod(ns: &str, name: &str) -> PodBuilder {
    PodBuilder::new(name)
        .namespace(ns)
        .uid("")
        .no_status()
        .image("registry.k8s.io/pause:3.9")
}

/// What the controllers' tests build from a pod.
pub trait PodBuilderExt {
    /// The pod as an API object.
    fn build(self) -> Object;
    /// The pod itself.
    fn build_pod(self) -> Pod;
}

impl PodBuilderExt for PodBuilder {
    fn build(self) -> Object {
        Object::Pod(Arc::new(self.obj().into()))
    }

    fn build_pod(self) -> Pod {
        self.obj()
    }
}

pub fn create(client: &mut TestClient, obj: Object) {
    client.create(obj).expect("create");
}

/// Replaces the node's taints (no resourceVersion precondition).
pub fn set_node_taints(client: &mut TestClient, name: &str, taints: Vec<Taint>) {
    let node = client.store.get_node(name).expect("node exists");
    let mut n = Node::clone(node);
    n.metadata.resource_version = None;
    n.spec.get_or_insert_with(Default::default).taints = (!taints.is_empty()).then_some(taints);
    client
        .update(Object::Node(Arc::new(n.into())))
        .expect("update node");
}

pub fn node_taints(client: &TestClient, name: &str) -> Vec<Taint> {
    client
        .store
        .get_node(name)
        .and_then(|n| n.spec.as_ref())
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
}

/// The node's taints as `key:Effect` strings.
pub fn node_taint_keys(client: &TestClient, name: &str) -> Vec<String> {
    node_taints(client, name)
        .iter()
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect()
}

pub fn set_pod_tolerations(client: &mut TestClient, ns: &str, name: &str, tols: Vec<Toleration>) {
    let pod = client.store.get_pod(ns, name).expect("pod exists");
    let mut p = StoredPod::clone(pod);
    p.metadata.resource_version = None;
    p.spec_mut().tolerations = (!tols.is_empty()).then_some(tols);
    client.update(Object::Pod(Arc::new(p))).expect("update pod");
}

pub fn delete_object(client: &mut TestClient, kind: Kind, ns: &str, name: &str) {
    client
        .delete(
            &ObjectKey::new(kind, ns, name),
            kubeplane_api::DeleteOptions::now(),
        )
        .expect("delete");
}

/// Creates or renews the node's Lease in kube-node-lease with renewTime = now.
pub fn renew_lease(client: &mut TestClient, node: &str) {
    let start = client.store.start_time();
    let renew = MicroTime(client.now.to_timestamp(start));
    let existing = client
        .store
        .get(Kind::Lease, "kube-node-lease", node)
        .cloned();
    let spec = LeaseSpec {
        holder_identity: Some(node.into()),
        lease_duration_seconds: Some(40),
        renew_time: Some(renew),
        ..Default::default()
    };
    match existing {
        Some(Object::Lease(l)) => {
            let mut l = Lease::clone(&l);
            l.metadata.resource_version = None;
            l.spec = Some(spec);
            client
                .update(Object::Lease(Arc::new(l)))
                .expect("renew lease");
        }
        _ => {
            let l = Lease {
                metadata: ObjectMeta {
                    name: Some(node.into()),
                    namespace: Some("kube-node-lease".into()),
                    ..Default::default()
                },
                spec: Some(spec),
            };
            client
                .create(Object::Lease(Arc::new(l)))
                .expect("create lease");
        }
    }
}

/// Sets a node condition as a node agent posts it: status, heartbeat now, transition now when
/// the status changes.
pub fn post_condition(client: &mut TestClient, node: &str, type_: &str, status: &str) {
    let start = client.store.start_time();
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(client.now.to_timestamp(start));
    let mut n = Node::clone(client.store.get_node(node).expect("node exists"));
    n.metadata.resource_version = None;
    let conds = n
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    match conds.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != status {
                c.last_transition_time = Some(now.clone());
                c.reason = None;
                c.message = None;
            }
            c.status = status.into();
            c.last_heartbeat_time = Some(now);
        }
        None => conds.push(NodeCondition {
            type_: type_.into(),
            status: status.into(),
            last_heartbeat_time: Some(now.clone()),
            last_transition_time: Some(now),
            ..Default::default()
        }),
    }
    client
        .update_status(Object::Node(Arc::new(n.into())))
        .expect("post status");
}

pub fn node_condition(client: &TestClient, node: &str, type_: &str) -> Option<NodeCondition> {
    client
        .store
        .get_node(node)?
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .cloned()
}

pub fn pod_condition(
    client: &TestClient,
    ns: &str,
    name: &str,
    type_: &str,
) -> Option<PodCondition> {
    client.store.get_pod(ns, name)?.status()?.condition(type_)
}

/// Whether deletion was requested for the pod (terminating or gone).
pub fn deletion_requested(client: &TestClient, ns: &str, name: &str) -> bool {
    client
        .store
        .get_pod(ns, name)
        .is_none_or(|p| p.metadata.deletion_timestamp.is_some())
}

/// Times (seconds) of the events with this reason on this object whose message contains `text`.
pub fn event_times(client: &TestClient, reason: &str, name: &str, text: &str) -> Vec<f64> {
    client
        .events
        .iter()
        .filter(|e| e.reason() == reason && e.name() == name && e.message().contains(text))
        .map(|e| e.time().as_secs_f64())
        .collect()
}

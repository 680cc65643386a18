//! Generated workloads shared by tests (small) and `kubeplane bench` (large), after upstream's
//! scheduler_perf templates: `node-default.yaml` (4 cpu, 32Gi, 110 pods, Ready) and
//! `pod-default.yaml` (one pause container requesting 100m cpu and 500Mi memory).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Node, NodeCondition, NodeStatus, Pod, PodSpec, PodStatus,
    ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_store::Object;

use crate::scenario::{Input, Scenario, Source, SourcedObject};

fn q(s: &str) -> Quantity {
    Quantity(s.to_string())
}

/// A scheduler_perf default node.
pub fn perf_node(name: &str) -> Object {
    let capacity: BTreeMap<String, Quantity> = [("pods", "110"), ("cpu", "4"), ("memory", "32Gi")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), q(v)))
        .collect();
    Object::Node(Arc::new(Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some([("kubernetes.io/hostname".to_string(), name.to_string())].into()),
            ..Default::default()
        },
        spec: None,
        status: Some(NodeStatus {
            allocatable: Some(capacity.clone()),
            capacity: Some(capacity),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }))
}

/// A scheduler_perf default pod (100m cpu, 500Mi memory), optionally already bound and Running.
pub fn perf_pod(namespace: &str, name: &str, node: Option<&str>) -> Object {
    let requests: BTreeMap<String, Quantity> = [("cpu", "100m"), ("memory", "500Mi")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), q(v)))
        .collect();
    Object::Pod(Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: node.map(str::to_string),
            containers: vec![Container {
                name: "pause".into(),
                image: Some("registry.k8s.io/pause:3.10".into()),
                ports: Some(vec![ContainerPort {
                    container_port: 80,
                    ..Default::default()
                }]),
                resources: Some(ResourceRequirements {
                    limits: Some(requests.clone()),
                    requests: Some(requests),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: node.map(|_| PodStatus {
            phase: Some("Running".into()),
            ..Default::default()
        }),
    }))
}

fn sourced(object: Object) -> SourcedObject {
    SourcedObject {
        source: Source {
            file: "<workload>".into(),
            doc_index: 0,
            item: None,
            kind: object.kind().to_string(),
            namespace: object.namespace().to_string(),
            name: object.name().to_string(),
        },
        object,
    }
}

/// An input with these objects and a scenario that keeps pods as they are (no kubelet
/// start-up), like scheduler_perf, which runs without kubelets.
pub fn input(objects: Vec<Object>, scenario: Scenario) -> Input {
    Input {
        objects: objects.into_iter().map(sourced).collect(),
        scheduler_configs: Vec::new(),
        scenario,
        scenario_source: None,
    }
}

/// `n` default nodes named `node-0`, `node-1`, ...
pub fn nodes(n: usize) -> Vec<Object> {
    (0..n).map(|i| perf_node(&format!("node-{i}"))).collect()
}

/// `n` unscheduled default pods named `<prefix>-0`, ... in `namespace`.
pub fn pods(namespace: &str, prefix: &str, n: usize) -> Vec<Object> {
    (0..n)
        .map(|i| perf_pod(namespace, &format!("{prefix}-{i}"), None))
        .collect()
}

/// `per_node` Running pods bound to each of `nodes` nodes.
pub fn bound_pods(namespace: &str, n_nodes: usize, per_node: usize) -> Vec<Object> {
    let mut out = Vec::with_capacity(n_nodes * per_node);
    for i in 0..n_nodes {
        for j in 0..per_node {
            out.push(perf_pod(
                namespace,
                &format!("pod-{i}-{j}"),
                Some(&format!("node-{i}")),
            ));
        }
    }
    out
}

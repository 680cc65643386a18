//! Generated workloads shared by tests (small) and `kubeplane bench` (large), after upstream's
//! scheduler_perf templates: `node-default.yaml` (4 cpu, 32Gi, 110 pods, Ready) and
//! `pod-default.yaml` (one pause container requesting 100m cpu and 500Mi memory).

use kubeplane_api::StoredPod;
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
    Object::Node(Arc::new(
        Node {
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
        }
        .into(),
    ))
}

/// A scheduler_perf default pod (100m cpu, 500Mi memory), optionally already bound and Running.
pub fn perf_pod(namespace: &str, name: &str, node: Option<&str>) -> Object {
    let requests: BTreeMap<String, Quantity> = [("cpu", "100m"), ("memory", "500Mi")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), q(v)))
        .collect();
    Object::Pod(Arc::new(
        Pod {
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
        }
        .into(),
    ))
}

/// A Deployment of default pods (100m cpu, 500Mi memory) with `replicas` replicas.
pub fn deployment(namespace: &str, name: &str, replicas: i32) -> Object {
    use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
    use k8s_openapi::api::core::v1::PodTemplateSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use kubeplane_api::StoredDeployment;
    let labels: BTreeMap<String, String> = [("app".to_string(), name.to_string())].into();
    let Object::Pod(pod) = perf_pod(namespace, name, None) else {
        unreachable!("perf_pod builds a pod")
    };
    Object::Deployment(Arc::new(StoredDeployment::from_k8s(Deployment {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: pod.spec().cloned(),
            },
            ..Default::default()
        }),
        status: None,
    })))
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

// ---- Scheduler plugin and preemption workloads (scheduler_perf `misc`, `affinity`,
// `topology_spreading`) ----

/// A pod like [`perf_pod`] with other requests, changed by `f`.
fn pod_with(
    namespace: &str,
    name: &str,
    cpu: &str,
    memory: &str,
    f: impl FnOnce(&mut StoredPod),
) -> Object {
    let Object::Pod(p) = perf_pod(namespace, name, None) else {
        unreachable!("perf_pod builds a pod")
    };
    let mut pod = StoredPod::clone(&p);
    let requests: BTreeMap<String, Quantity> = [("cpu", cpu), ("memory", memory)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), q(v)))
        .collect();
    if let Some(r) = pod.spec_mut().containers[0].resources.as_mut() {
        r.requests = Some(requests.clone());
        r.limits = Some(requests);
    }
    f(&mut pod);
    Object::Pod(Arc::new(pod))
}

/// `n` default nodes labelled `topology.kubernetes.io/zone` with `zones` in turn (upstream
/// `labelNodePrepareStrategy`).
pub fn zoned_nodes(n: usize, zones: &[&str]) -> Vec<Object> {
    (0..n)
        .map(|i| {
            let mut obj = perf_node(&format!("node-{i}"));
            obj.meta_mut()
                .labels
                .get_or_insert_with(Default::default)
                .insert(
                    "topology.kubernetes.io/zone".to_string(),
                    zones[i % zones.len()].to_string(),
                );
            obj
        })
        .collect()
}

/// A PriorityClass.
pub fn priority_class(name: &str, value: i32) -> Object {
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    Object::PriorityClass(Arc::new(PriorityClass {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        value,
        ..Default::default()
    }))
}

/// The PriorityClass the high-priority pods use (upstream sets `priority: 10` directly; the
/// API server's Priority admission needs a class).
pub const HIGH_PRIORITY_CLASS: &str = "high-priority";

/// `pod-low-priority.yaml`: 900m cpu, 500Mi, no priority, terminationGracePeriodSeconds 0.
pub fn low_priority_pods(namespace: &str, prefix: &str, n: usize) -> Vec<Object> {
    (0..n)
        .map(|i| {
            pod_with(namespace, &format!("{prefix}-{i}"), "900m", "500Mi", |p| {
                p.spec_mut().termination_grace_period_seconds = Some(0);
            })
        })
        .collect()
}

/// `pod-high-priority.yaml`: priority 10 (class [`HIGH_PRIORITY_CLASS`]), 3000m cpu, 500Mi.
pub fn high_priority_pods(namespace: &str, prefix: &str, n: usize) -> Vec<Object> {
    (0..n)
        .map(|i| {
            pod_with(namespace, &format!("{prefix}-{i}"), "3000m", "500Mi", |p| {
                p.spec_mut().priority_class_name = Some(HIGH_PRIORITY_CLASS.to_string());
            })
        })
        .collect()
}

fn label_pod(p: &mut StoredPod, key: &str, value: &str) {
    p.labels_mut().insert(key.to_string(), value.to_string());
}

fn color_term(color: &str, topology_key: &str) -> k8s_openapi::api::core::v1::PodAffinityTerm {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    k8s_openapi::api::core::v1::PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_labels: Some([("color".to_string(), color.to_string())].into()),
            ..Default::default()
        }),
        topology_key: topology_key.to_string(),
        namespaces: Some(vec!["sched-1".into(), "sched-0".into()]),
        ..Default::default()
    }
}

/// `pod-with-pod-anti-affinity.yaml`: labelled `color: green`, required anti-affinity to
/// green pods (namespaces sched-0 and sched-1) on `kubernetes.io/hostname`.
pub fn anti_affinity_pods(namespace: &str, prefix: &str, n: usize) -> Vec<Object> {
    use k8s_openapi::api::core::v1::{Affinity, PodAntiAffinity};
    (0..n)
        .map(|i| {
            pod_with(namespace, &format!("{prefix}-{i}"), "100m", "500Mi", |p| {
                label_pod(p, "color", "green");
                p.spec_mut().affinity = Some(Affinity {
                    pod_anti_affinity: Some(PodAntiAffinity {
                        required_during_scheduling_ignored_during_execution: Some(vec![
                            color_term("green", "kubernetes.io/hostname"),
                        ]),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
            })
        })
        .collect()
}

/// `pod-with-pod-affinity.yaml`: labelled `color: blue`, required affinity to blue pods
/// (namespaces sched-0 and sched-1) on `topology.kubernetes.io/zone`.
pub fn affinity_pods(namespace: &str, prefix: &str, n: usize) -> Vec<Object> {
    use k8s_openapi::api::core::v1::{Affinity, PodAffinity};
    (0..n)
        .map(|i| {
            pod_with(namespace, &format!("{prefix}-{i}"), "100m", "500Mi", |p| {
                label_pod(p, "color", "blue");
                p.spec_mut().affinity = Some(Affinity {
                    pod_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: Some(vec![
                            color_term("blue", "topology.kubernetes.io/zone"),
                        ]),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
            })
        })
        .collect()
}

/// `pod-with-topology-spreading.yaml`: labelled `color: blue`, a DoNotSchedule constraint of
/// maxSkew 5 on `topology.kubernetes.io/zone` selecting blue pods.
pub fn spreading_pods(namespace: &str, prefix: &str, n: usize) -> Vec<Object> {
    use k8s_openapi::api::core::v1::TopologySpreadConstraint;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    (0..n)
        .map(|i| {
            pod_with(namespace, &format!("{prefix}-{i}"), "100m", "500Mi", |p| {
                label_pod(p, "color", "blue");
                p.spec_mut().topology_spread_constraints = Some(vec![TopologySpreadConstraint {
                    max_skew: 5,
                    topology_key: "topology.kubernetes.io/zone".into(),
                    when_unsatisfiable: "DoNotSchedule".into(),
                    label_selector: Some(LabelSelector {
                        match_labels: Some([("color".to_string(), "blue".to_string())].into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]);
            })
        })
        .collect()
}

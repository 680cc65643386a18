//! Small builders for pods and nodes in plugin (and framework) tests. They never read the wall
//! clock; UIDs derive from names.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerImage, ContainerPort, Node, NodeAffinity, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, NodeSpec, NodeStatus, Pod, PodAffinityTerm,
    PodCondition, PodSchedulingGate, PodSpec, PodStatus, PreferredSchedulingTerm,
    ResourceRequirements, Taint, Toleration, TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference, Time,
};

use crate::cache::Snapshot;
use crate::framework::{NodeInfo, PodInfo};

/// A node selector requirement `key op values`.
pub fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.to_string(),
        operator: op.to_string(),
        values: if values.is_empty() {
            None
        } else {
            Some(values.iter().map(|v| v.to_string()).collect())
        },
    }
}

/// A node selector term of label expressions and field expressions.
pub fn term(
    exprs: Vec<NodeSelectorRequirement>,
    fields: Vec<NodeSelectorRequirement>,
) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: (!exprs.is_empty()).then_some(exprs),
        match_fields: (!fields.is_empty()).then_some(fields),
    }
}

/// A toleration; empty strings are left unset.
pub fn toleration(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Toleration {
        key: opt(key),
        operator: opt(op),
        value: opt(value),
        effect: opt(effect),
        toleration_seconds: None,
    }
}

/// A taint `key=value:effect`.
pub fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.to_string(),
        value: (!value.is_empty()).then(|| value.to_string()),
        effect: effect.to_string(),
        time_added: None,
    }
}

/// A label selector requirement `key op values` (for pod affinity terms and spread
/// constraints).
pub fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.to_string(),
        operator: op.to_string(),
        values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
    }
}

/// A label selector of expressions.
pub fn selector(exprs: Vec<LabelSelectorRequirement>) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(exprs),
        match_labels: None,
    }
}

/// A pod affinity term selecting pods with these expressions, over `topology_key`, in the
/// pod's own namespace.
pub fn pod_term(exprs: Vec<LabelSelectorRequirement>, topology_key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(selector(exprs)),
        topology_key: topology_key.to_string(),
        ..Default::default()
    }
}

/// A topology spread constraint with a selector of these expressions.
pub fn spread(
    max_skew: i32,
    topology_key: &str,
    when_unsatisfiable: &str,
    exprs: Vec<LabelSelectorRequirement>,
) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: topology_key.to_string(),
        when_unsatisfiable: when_unsatisfiable.to_string(),
        label_selector: Some(selector(exprs)),
        ..Default::default()
    }
}

/// A timestamp from its RFC 3339 form.
pub fn time(rfc3339: &str) -> Time {
    Time(rfc3339.parse().expect("a valid RFC 3339 timestamp"))
}

fn quantities(list: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    list.iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect()
}

/// Builds a pod: `PodBuilder::new("p").req(&[("cpu", "3")]).toleration(..).obj()`.
#[derive(Clone, Debug)]
pub struct PodBuilder {
    pod: Pod,
}

impl PodBuilder {
    pub fn new(name: &str) -> PodBuilder {
        PodBuilder {
            pod: Pod {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    namespace: Some("default".to_string()),
                    uid: Some(format!("uid-{name}")),
                    ..Default::default()
                },
                spec: Some(PodSpec::default()),
                status: Some(PodStatus::default()),
            },
        }
    }

    fn spec(&mut self) -> &mut PodSpec {
        self.pod.spec.get_or_insert_with(Default::default)
    }

    pub fn namespace(mut self, ns: &str) -> Self {
        self.pod.metadata.namespace = Some(ns.to_string());
        self
    }

    pub fn uid(mut self, uid: &str) -> Self {
        self.pod.metadata.uid = Some(uid.to_string());
        self
    }

    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.pod
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(k.to_string(), v.to_string());
        self
    }

    pub fn priority(mut self, p: i32) -> Self {
        self.spec().priority = Some(p);
        self
    }

    pub fn node(mut self, node: &str) -> Self {
        self.spec().node_name = Some(node.to_string());
        self
    }

    pub fn nominated(mut self, node: &str) -> Self {
        self.pod
            .status
            .get_or_insert_with(Default::default)
            .nominated_node_name = Some(node.to_string());
        self
    }

    /// Adds a container named `c<i>` with these requests.
    pub fn req(mut self, requests: &[(&str, &str)]) -> Self {
        let i = self.spec().containers.len();
        self.spec().containers.push(Container {
            name: format!("c{i}"),
            image: Some("registry.k8s.io/pause:3.9".to_string()),
            resources: Some(ResourceRequirements {
                requests: Some(quantities(requests)),
                ..Default::default()
            }),
            ..Default::default()
        });
        self
    }

    /// Adds a container with this image and no requests.
    pub fn image(mut self, image: &str) -> Self {
        let i = self.spec().containers.len();
        self.spec().containers.push(Container {
            name: format!("c{i}"),
            image: Some(image.to_string()),
            ..Default::default()
        });
        self
    }

    /// Adds an init container with these requests; `sidecar` sets `restartPolicy: Always`.
    pub fn init_req(mut self, requests: &[(&str, &str)], sidecar: bool) -> Self {
        let spec = self.spec();
        let i = spec.init_containers.as_ref().map_or(0, Vec::len);
        spec.init_containers
            .get_or_insert_with(Default::default)
            .push(Container {
                name: format!("init{i}"),
                image: Some("registry.k8s.io/pause:3.9".to_string()),
                restart_policy: sidecar.then(|| "Always".to_string()),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(requests)),
                    ..Default::default()
                }),
                ..Default::default()
            });
        self
    }

    /// Adds an init container with this image.
    pub fn init_image(mut self, image: &str) -> Self {
        let spec = self.spec();
        let i = spec.init_containers.as_ref().map_or(0, Vec::len);
        spec.init_containers
            .get_or_insert_with(Default::default)
            .push(Container {
                name: format!("init{i}"),
                image: Some(image.to_string()),
                ..Default::default()
            });
        self
    }

    /// Adds a container using host port `ip:port/proto` ("" for the defaults).
    pub fn host_port(mut self, ip: &str, proto: &str, port: i32) -> Self {
        let i = self.spec().containers.len();
        self.spec().containers.push(Container {
            name: format!("c{i}"),
            ports: Some(vec![ContainerPort {
                container_port: port,
                host_port: Some(port),
                host_ip: (!ip.is_empty()).then(|| ip.to_string()),
                protocol: (!proto.is_empty()).then(|| proto.to_string()),
                ..Default::default()
            }]),
            ..Default::default()
        });
        self
    }

    /// Adds an init container using a host port; `sidecar` sets `restartPolicy: Always`.
    pub fn init_host_port(mut self, ip: &str, proto: &str, port: i32, sidecar: bool) -> Self {
        let spec = self.spec();
        let i = spec.init_containers.as_ref().map_or(0, Vec::len);
        spec.init_containers
            .get_or_insert_with(Default::default)
            .push(Container {
                name: format!("init{i}"),
                restart_policy: sidecar.then(|| "Always".to_string()),
                ports: Some(vec![ContainerPort {
                    container_port: port,
                    host_port: Some(port),
                    host_ip: (!ip.is_empty()).then(|| ip.to_string()),
                    protocol: (!proto.is_empty()).then(|| proto.to_string()),
                    ..Default::default()
                }]),
                ..Default::default()
            });
        self
    }

    pub fn toleration(mut self, t: Toleration) -> Self {
        self.spec()
            .tolerations
            .get_or_insert_with(Default::default)
            .push(t);
        self
    }

    pub fn node_selector(mut self, k: &str, v: &str) -> Self {
        self.spec()
            .node_selector
            .get_or_insert_with(Default::default)
            .insert(k.to_string(), v.to_string());
        self
    }

    fn node_affinity(&mut self) -> &mut NodeAffinity {
        self.spec()
            .affinity
            .get_or_insert_with(Affinity::default)
            .node_affinity
            .get_or_insert_with(Default::default)
    }

    /// Adds a required node affinity term (terms are ORed).
    pub fn required_term(mut self, t: NodeSelectorTerm) -> Self {
        self.node_affinity()
            .required_during_scheduling_ignored_during_execution
            .get_or_insert_with(|| NodeSelector {
                node_selector_terms: Vec::new(),
            })
            .node_selector_terms
            .push(t);
        self
    }

    /// Adds a preferred node affinity term with a weight.
    pub fn preferred_term(mut self, weight: i32, t: NodeSelectorTerm) -> Self {
        self.node_affinity()
            .preferred_during_scheduling_ignored_during_execution
            .get_or_insert_with(Default::default)
            .push(PreferredSchedulingTerm {
                weight,
                preference: t,
            });
        self
    }

    fn pod_affinity(&mut self) -> &mut k8s_openapi::api::core::v1::PodAffinity {
        self.spec()
            .affinity
            .get_or_insert_with(Affinity::default)
            .pod_affinity
            .get_or_insert_with(Default::default)
    }

    fn pod_anti_affinity(&mut self) -> &mut k8s_openapi::api::core::v1::PodAntiAffinity {
        self.spec()
            .affinity
            .get_or_insert_with(Affinity::default)
            .pod_anti_affinity
            .get_or_insert_with(Default::default)
    }

    /// Adds a required pod affinity term.
    pub fn pod_affinity_required(mut self, t: PodAffinityTerm) -> Self {
        self.pod_affinity()
            .required_during_scheduling_ignored_during_execution
            .get_or_insert_with(Default::default)
            .push(t);
        self
    }

    /// Adds a required pod anti-affinity term.
    pub fn pod_anti_affinity_required(mut self, t: PodAffinityTerm) -> Self {
        self.pod_anti_affinity()
            .required_during_scheduling_ignored_during_execution
            .get_or_insert_with(Default::default)
            .push(t);
        self
    }

    /// Adds a preferred pod affinity term.
    pub fn pod_affinity_preferred(mut self, weight: i32, t: PodAffinityTerm) -> Self {
        self.pod_affinity()
            .preferred_during_scheduling_ignored_during_execution
            .get_or_insert_with(Default::default)
            .push(WeightedPodAffinityTerm {
                weight,
                pod_affinity_term: t,
            });
        self
    }

    /// Adds a preferred pod anti-affinity term.
    pub fn pod_anti_affinity_preferred(mut self, weight: i32, t: PodAffinityTerm) -> Self {
        self.pod_anti_affinity()
            .preferred_during_scheduling_ignored_during_execution
            .get_or_insert_with(Default::default)
            .push(WeightedPodAffinityTerm {
                weight,
                pod_affinity_term: t,
            });
        self
    }

    /// Adds a topology spread constraint.
    pub fn spread(mut self, c: TopologySpreadConstraint) -> Self {
        self.spec()
            .topology_spread_constraints
            .get_or_insert_with(Default::default)
            .push(c);
        self
    }

    /// Sets `status.startTime`.
    pub fn start_time(mut self, rfc3339: &str) -> Self {
        self.pod
            .status
            .get_or_insert_with(Default::default)
            .start_time = Some(time(rfc3339));
        self
    }

    pub fn preemption_policy(mut self, policy: &str) -> Self {
        self.spec().preemption_policy = Some(policy.to_string());
        self
    }

    /// Marks the pod Terminating because the scheduler preempted it (deletionTimestamp and
    /// the DisruptionTarget condition).
    pub fn terminating_by_preemption(mut self) -> Self {
        self.pod.metadata.deletion_timestamp = Some(time("2025-01-01T00:00:30Z"));
        self.pod
            .status
            .get_or_insert_with(Default::default)
            .conditions
            .get_or_insert_with(Default::default)
            .push(PodCondition {
                type_: "DisruptionTarget".into(),
                status: "True".into(),
                reason: Some("PreemptionByScheduler".into()),
                ..Default::default()
            });
        self
    }

    /// Sets a controller owner reference.
    pub fn owner(mut self, api_version: &str, kind: &str, name: &str) -> Self {
        self.pod
            .metadata
            .owner_references
            .get_or_insert_with(Default::default)
            .push(OwnerReference {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                name: name.to_string(),
                uid: format!("uid-{name}"),
                controller: Some(true),
                ..Default::default()
            });
        self
    }

    pub fn scheduling_gate(mut self, name: &str) -> Self {
        self.spec()
            .scheduling_gates
            .get_or_insert_with(Default::default)
            .push(PodSchedulingGate {
                name: name.to_string(),
            });
        self
    }

    pub fn obj(self) -> Pod {
        self.pod
    }

    pub fn info(self) -> PodInfo {
        PodInfo::new(Arc::new(self.pod))
    }
}

/// Builds a node: `NodeBuilder::new("n1").alloc(&[("cpu", "4")]).taint(..).info()`.
#[derive(Clone, Debug)]
pub struct NodeBuilder {
    node: Node,
}

impl NodeBuilder {
    pub fn new(name: &str) -> NodeBuilder {
        NodeBuilder {
            node: Node {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    uid: Some(format!("uid-{name}")),
                    ..Default::default()
                },
                spec: Some(NodeSpec::default()),
                status: Some(NodeStatus::default()),
            },
        }
    }

    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.node
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(k.to_string(), v.to_string());
        self
    }

    /// Sets `status.allocatable` (and capacity) to these amounts.
    pub fn alloc(mut self, list: &[(&str, &str)]) -> Self {
        let status = self.node.status.get_or_insert_with(Default::default);
        status.allocatable = Some(quantities(list));
        status.capacity = Some(quantities(list));
        self
    }

    pub fn taint(mut self, t: Taint) -> Self {
        self.node
            .spec
            .get_or_insert_with(Default::default)
            .taints
            .get_or_insert_with(Default::default)
            .push(t);
        self
    }

    pub fn unschedulable(mut self, u: bool) -> Self {
        self.node
            .spec
            .get_or_insert_with(Default::default)
            .unschedulable = Some(u);
        self
    }

    /// Adds an image with these names and size in bytes.
    pub fn image(mut self, names: &[&str], size_bytes: i64) -> Self {
        self.node
            .status
            .get_or_insert_with(Default::default)
            .images
            .get_or_insert_with(Default::default)
            .push(ContainerImage {
                names: Some(names.iter().map(|n| n.to_string()).collect()),
                size_bytes: Some(size_bytes),
            });
        self
    }

    pub fn obj(self) -> Node {
        self.node
    }

    pub fn info(self) -> NodeInfo {
        self.info_with_pods(Vec::new())
    }

    /// The node with these pods running on it.
    pub fn info_with_pods(self, pods: Vec<Pod>) -> NodeInfo {
        let name = self.node.metadata.name.clone().unwrap_or_default();
        let mut ni = NodeInfo::new(&name);
        ni.set_node(Arc::new(self.node));
        for p in pods {
            ni.add_pod(Arc::new(PodInfo::new(Arc::new(p))));
        }
        ni
    }
}

/// A snapshot of these nodes, in order.
pub fn snapshot(nodes: Vec<NodeInfo>) -> Snapshot {
    Snapshot::from_nodes(nodes)
}

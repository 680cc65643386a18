//! Builders for tests (the `testing` feature, which only dev-dependencies enable): the one
//! `PodBuilder` the scheduler's and the controllers' tests share. They never read the wall
//! clock; UIDs derive from names.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, ContainerStatus, NodeAffinity, NodeSelector,
    NodeSelectorTerm, Pod, PodAffinityTerm, PodCondition, PodSchedulingGate, PodSpec, PodStatus,
    PreferredSchedulingTerm, ResourceRequirements, Toleration, TopologySpreadConstraint,
    WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

/// A toleration; empty strings are left unset.
pub fn toleration(key: &str, op: &str, value: &str, effect: &str, secs: Option<i64>) -> Toleration {
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Toleration {
        key: opt(key),
        operator: opt(op),
        value: opt(value),
        effect: opt(effect),
        toleration_seconds: secs,
    }
}

/// A timestamp from its RFC 3339 form.
pub fn time(rfc3339: &str) -> Time {
    Time(rfc3339.parse().expect("a valid RFC 3339 timestamp"))
}

/// The image of the containers the builder adds with requests.
const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.9";

/// A container with this name and image, requesting `requests` when given.
fn container(name: String, image: &str, requests: Option<&[(&str, &str)]>) -> Container {
    Container {
        name,
        image: Some(image.to_string()),
        resources: requests.map(|r| ResourceRequirements {
            requests: Some(quantities(r)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn quantities(list: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    list.iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect()
}

/// Builds a pod: `PodBuilder::new("p").req(&[("cpu", "3")]).toleration(..).obj()`.
#[derive(Clone, Debug)]
pub struct PodBuilder {
    pod: Pod,
}

impl From<Pod> for PodBuilder {
    /// Continues building from a pod.
    fn from(pod: Pod) -> Self {
        PodBuilder { pod }
    }
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

    /// Sets the UID; an empty one removes it.
    pub fn uid(mut self, uid: &str) -> Self {
        self.pod.metadata.uid = (!uid.is_empty()).then(|| uid.to_string());
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

    /// Sets `spec.nodeName`; an empty name removes it.
    pub fn node(mut self, node: &str) -> Self {
        self.spec().node_name = (!node.is_empty()).then(|| node.to_string());
        self
    }

    /// Sets `status.phase`.
    pub fn phase(mut self, phase: &str) -> Self {
        self.pod.status.get_or_insert_with(Default::default).phase = Some(phase.into());
        self
    }

    /// Replaces the conditions with one Ready condition of this status, in effect since `since`
    /// (`None`: no lastTransitionTime).
    pub fn ready_condition(mut self, status: &str, since: Option<Timestamp>) -> Self {
        self.pod
            .status
            .get_or_insert_with(Default::default)
            .conditions = Some(vec![PodCondition {
            type_: "Ready".into(),
            status: status.into(),
            last_transition_time: since.map(Time),
            ..Default::default()
        }]);
        self
    }

    /// Running and Ready since `since` (`None`: no lastTransitionTime), the only condition.
    pub fn ready_since(self, since: Option<Timestamp>) -> Self {
        self.phase("Running").ready_condition("True", since)
    }

    /// Ready=False, the only condition.
    pub fn not_ready(self) -> Self {
        self.ready_condition("False", None)
    }

    /// Replaces the container statuses with one for `c0` that restarted `n` times.
    pub fn restarts(mut self, n: i32) -> Self {
        self.pod
            .status
            .get_or_insert_with(Default::default)
            .container_statuses = Some(vec![ContainerStatus {
            name: "c0".into(),
            restart_count: n,
            ..Default::default()
        }]);
        self
    }

    /// Sets (or with `None` removes) the creationTimestamp.
    pub fn created(mut self, t: Option<Timestamp>) -> Self {
        self.pod.metadata.creation_timestamp = t.map(Time);
        self
    }

    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.pod
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(k.into(), v.into());
        self
    }

    /// Sets the owner references to exactly this one.
    pub fn owner_reference(mut self, r: OwnerReference) -> Self {
        self.pod.metadata.owner_references = Some(vec![r]);
        self
    }

    /// Marks the pod Terminating since `at`.
    pub fn deleted_at(mut self, at: Timestamp) -> Self {
        self.pod.metadata.deletion_timestamp = Some(Time(at));
        self
    }

    /// Removes the status (a pod as a client creates it).
    pub fn no_status(mut self) -> Self {
        self.pod.status = None;
        self
    }

    /// A running pod with a Ready=True condition.
    pub fn ready(mut self) -> Self {
        let st = self.pod.status.get_or_insert_with(PodStatus::default);
        st.phase = Some("Running".into());
        st.conditions
            .get_or_insert_with(Vec::new)
            .push(PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            });
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
        let c = container(format!("c{i}"), PAUSE_IMAGE, Some(requests));
        self.spec().containers.push(c);
        self
    }

    /// Adds a container with this image and no requests.
    pub fn image(mut self, image: &str) -> Self {
        let i = self.spec().containers.len();
        let c = container(format!("c{i}"), image, None);
        self.spec().containers.push(c);
        self
    }

    /// Adds an init container with these requests; `sidecar` sets `restartPolicy: Always`.
    pub fn init_req(mut self, requests: &[(&str, &str)], sidecar: bool) -> Self {
        let spec = self.spec();
        let i = spec.init_containers.as_ref().map_or(0, Vec::len);
        let mut c = container(format!("init{i}"), PAUSE_IMAGE, Some(requests));
        c.restart_policy = sidecar.then(|| "Always".to_string());
        spec.init_containers
            .get_or_insert_with(Default::default)
            .push(c);
        self
    }

    /// Adds an init container with this image.
    pub fn init_image(mut self, image: &str) -> Self {
        let spec = self.spec();
        let i = spec.init_containers.as_ref().map_or(0, Vec::len);
        let c = container(format!("init{i}"), image, None);
        spec.init_containers
            .get_or_insert_with(Default::default)
            .push(c);
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

    /// The pod built so far.
    pub fn as_pod(&self) -> &Pod {
        &self.pod
    }

    pub fn obj(self) -> Pod {
        self.pod
    }
}

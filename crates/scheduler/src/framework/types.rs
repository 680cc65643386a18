//! The compact, precomputed pod and node data the scheduler's hot path works on (upstream
//! `PodInfo`, `NodeInfo`, `QueuedPodInfo`).

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PodSpec, Taint, Toleration};
use kubeplane_api::StoredNode;
use kubeplane_core::images::normalized_image_name;
use kubeplane_core::resources::{self, Resources};
use kubeplane_core::SimTime;

use crate::framework::affinity::PodAffinityTerms;
use crate::framework::topology::{self, LabelIds};

static EMPTY_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// A host port a container asks for; empty IP means 0.0.0.0 and empty protocol TCP.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPort {
    pub ip: String,
    pub protocol: String,
    pub port: i32,
}

impl HostPort {
    pub const WILDCARD_IP: &'static str = "0.0.0.0";

    /// Whether two host ports cannot be used on the same node: same protocol and port, and
    /// the same IP or either of them the wildcard 0.0.0.0.
    pub fn conflicts(&self, other: &HostPort) -> bool {
        self.port == other.port
            && self.protocol == other.protocol
            && (self.ip == other.ip
                || self.ip == Self::WILDCARD_IP
                || other.ip == Self::WILDCARD_IP)
    }
}

/// A pod with what the scheduler derives from it computed once.
#[derive(Clone, Debug)]
pub struct PodInfo {
    /// The pod; its name, namespace and UID are read from it (`name()`, `namespace()`,
    /// `uid()`), not copied: every bound pod's PodInfo stays in the cache while it runs.
    pub pod: Arc<StoredPod>,
    /// `spec.priority`, 0 when unset.
    pub priority: i32,
    /// The requests (`requests()`, `non_zero_requests()`), one block shared by the PodInfos
    /// of pods with the same resource lists (the replicas of a template, the versions of a
    /// pod): 112 bytes a PodInfo would otherwise hold for every pod in the cache.
    requests: Arc<PodRequests>,
    /// Host ports of all containers, init containers included (hostPort > 0 only).
    pub host_ports: Vec<HostPort>,
    /// Whether the pod has any pod affinity or anti-affinity term.
    pub has_affinity: bool,
    /// Whether the pod has a required pod anti-affinity term.
    pub has_required_anti_affinity: bool,
    /// The pod's (anti-)affinity terms, parsed once; `None` when it has none.
    pub affinity_terms: Option<Arc<PodAffinityTerms>>,
}

/// A pod's requests as the scheduler sums them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct PodRequests {
    /// The effective request (init containers, sidecars, overhead).
    requests: Resources,
    /// The same with the 100m cpu / 200Mi memory defaults for containers that request none.
    non_zero: Resources,
}

fn namespace_of(pod: &StoredPod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or("default")
}

fn start_time_of(pod: &StoredPod) -> Option<jiff::Timestamp> {
    pod.status()?.start_time().map(|t| t.0)
}

/// Whether two specs have the same containers, init containers, overhead and pod-level
/// resources: everything a pod's requests and host ports are derived from. One spec shared
/// (the versions of a pod, the pods of one template version) is the same without a look.
fn same_resource_lists(a: &PodSpec, b: &PodSpec) -> bool {
    std::ptr::eq(a, b)
        || a.containers == b.containers
            && a.init_containers == b.init_containers
            && a.overhead == b.overhead
            && a.resources == b.resources
}

/// The host ports a pod's containers ask for. Ports of regular init containers are released
/// before the app containers start; only sidecars (restartable init containers) keep theirs.
fn host_ports(spec: &PodSpec) -> Vec<HostPort> {
    let mut host_ports = Vec::new();
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    for c in sidecars.chain(spec.containers.iter()) {
        for p in c.ports.iter().flatten() {
            if let Some(hp) = p.host_port.filter(|&hp| hp > 0) {
                host_ports.push(HostPort {
                    ip: p
                        .host_ip
                        .clone()
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| HostPort::WILDCARD_IP.to_string()),
                    protocol: p
                        .protocol
                        .clone()
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| "TCP".to_string()),
                    port: hp,
                });
            }
        }
    }
    host_ports
}

fn spec_of(pod: &StoredPod) -> &PodSpec {
    static EMPTY: std::sync::OnceLock<PodSpec> = std::sync::OnceLock::new();
    pod.spec()
        .unwrap_or_else(|| EMPTY.get_or_init(PodSpec::default))
}

/// `Hash`, `Eq` and `Borrow<str>` for a type holding an `Arc<PodInfo>` in `$field`, by the
/// pod's UID: a hash set of it is found as a map keyed by a copy of the UID would be (the same
/// hash), without the copy. With `ord`, `Ord` by the UID as well (for a B-tree set).
macro_rules! keyed_by_pod_uid {
    ($ty:ty, $field:ident) => {
        impl std::hash::Hash for $ty {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.$field.uid().hash(state);
            }
        }

        impl PartialEq for $ty {
            fn eq(&self, other: &$ty) -> bool {
                self.$field.uid() == other.$field.uid()
            }
        }

        impl Eq for $ty {}

        impl std::borrow::Borrow<str> for $ty {
            fn borrow(&self) -> &str {
                self.$field.uid()
            }
        }
    };
    ($ty:ty, $field:ident, ord) => {
        $crate::framework::types::keyed_by_pod_uid!($ty, $field);

        impl Ord for $ty {
            fn cmp(&self, other: &$ty) -> std::cmp::Ordering {
                self.$field.uid().cmp(other.$field.uid())
            }
        }

        impl PartialOrd for $ty {
            fn partial_cmp(&self, other: &$ty) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
    };
}
pub(crate) use keyed_by_pod_uid;

impl PodInfo {
    /// Precomputes a pod's data. Quantities were validated when the pod entered the store; one
    /// that still fails to parse counts as zero.
    pub fn new(pod: Arc<StoredPod>) -> PodInfo {
        PodInfo::with_requests(pod, None)
    }

    /// [`Self::new`] for a pod that may have the resource lists of `like`'s (the replicas of
    /// a workload arrive one after another): its requests, most of the cost of `new`, are
    /// then taken from `like` instead of parsed again.
    pub fn new_like(pod: Arc<StoredPod>, like: Option<&PodInfo>) -> PodInfo {
        let requests = like
            .filter(|l| same_resource_lists(l.spec(), spec_of(&pod)))
            .map(|l| l.requests.clone());
        PodInfo::with_requests(pod, requests)
    }

    /// [`Self::new`] with the pod's requests and non-zero requests, when they are known.
    fn with_requests(pod: Arc<StoredPod>, requests: Option<Arc<PodRequests>>) -> PodInfo {
        let spec = spec_of(&pod);
        let requests = requests.unwrap_or_else(|| {
            let (requests, non_zero) =
                resources::pod_requests_and_non_zero(spec).unwrap_or_default();
            Arc::new(PodRequests { requests, non_zero })
        });
        let host_ports = host_ports(spec);
        let affinity = spec.affinity.as_ref();
        let pa = affinity.and_then(|a| a.pod_affinity.as_ref());
        let paa = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        fn non_empty<T>(v: Option<&Vec<T>>) -> bool {
            v.is_some_and(|v| !v.is_empty())
        }
        let has_required_anti_affinity = non_empty(paa.and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        }));
        let has_affinity = has_required_anti_affinity
            || non_empty(paa.and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            }))
            || non_empty(pa.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            }))
            || non_empty(pa.and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            }));
        PodInfo {
            priority: spec.priority.unwrap_or(0),
            requests,
            host_ports,
            has_affinity,
            has_required_anti_affinity,
            affinity_terms: PodAffinityTerms::parse(namespace_of(&pod), spec.affinity.as_ref())
                .map(Arc::new),
            pod,
        }
    }

    /// The same pod after an update: reuses the derived data when nothing it depends on
    /// changed (a binding or a status change), so watch events do not re-parse quantities.
    pub fn updated(&self, pod: Arc<StoredPod>) -> PodInfo {
        let (a, b) = (self.spec(), spec_of(&pod));
        let same = (std::ptr::eq(a, b)
            || (same_resource_lists(a, b) && a.priority == b.priority && a.affinity == b.affinity))
            && self.pod.metadata.uid == pod.metadata.uid;
        if !same {
            return PodInfo::new(pod);
        }
        PodInfo {
            priority: self.priority,
            requests: self.requests.clone(),
            host_ports: self.host_ports.clone(),
            has_affinity: self.has_affinity,
            has_required_anti_affinity: self.has_required_anti_affinity,
            affinity_terms: self.affinity_terms.clone(),
            pod,
        }
    }

    /// The same derived data for a copy of the pod that changes nothing it is derived from
    /// (the assumed pod: the same pod with its node set).
    pub fn with_pod(&self, pod: Arc<StoredPod>) -> PodInfo {
        PodInfo {
            pod,
            ..PodInfo::clone(self)
        }
    }

    pub fn spec(&self) -> &PodSpec {
        spec_of(&self.pod)
    }

    /// The effective request (init containers, sidecars, overhead).
    pub fn requests(&self) -> &Resources {
        &self.requests.requests
    }

    /// The same with the 100m cpu / 200Mi memory defaults for containers that request none.
    pub fn non_zero_requests(&self) -> &Resources {
        &self.requests.non_zero
    }

    /// `status.startTime`, for preemption's ordering of victims.
    pub fn start_time(&self) -> Option<jiff::Timestamp> {
        start_time_of(&self.pod)
    }

    /// The pod's UID, empty when unset (read from the pod: a copy would be one more string
    /// per PodInfo, and every bound pod's PodInfo stays in the cache while it runs).
    pub fn uid(&self) -> &str {
        self.pod.metadata.uid.as_deref().unwrap_or_default()
    }

    /// The pod's name, empty when unset.
    pub fn name(&self) -> &str {
        self.pod.metadata.name.as_deref().unwrap_or_default()
    }

    /// The pod's namespace, `default` when unset.
    pub fn namespace(&self) -> &str {
        namespace_of(&self.pod)
    }

    pub fn labels(&self) -> &BTreeMap<String, String> {
        self.pod.labels().unwrap_or(&EMPTY_LABELS)
    }

    pub fn tolerations(&self) -> &[Toleration] {
        self.spec().tolerations.as_deref().unwrap_or(&[])
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace(), self.name())
    }

    pub fn node_name(&self) -> Option<&str> {
        self.pod.node_name().filter(|n| !n.is_empty())
    }

    pub fn nominated_node_name(&self) -> Option<&str> {
        self.pod
            .status()
            .and_then(|s| s.nominated_node_name())
            .filter(|n| !n.is_empty())
    }

    pub fn is_terminating(&self) -> bool {
        self.pod.metadata.deletion_timestamp.is_some()
    }

    pub fn scheduler_name(&self) -> &str {
        self.spec()
            .scheduler_name
            .as_deref()
            .filter(|s| !s.is_empty())
            .unwrap_or(crate::DEFAULT_SCHEDULER_NAME)
    }
}

/// A container image present on a node, by normalized name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeImage {
    pub name: String,
    pub size_bytes: i64,
}

/// A node with the pods the scheduler accounts to it (bound and assumed).
#[derive(Clone, Debug, Default)]
pub struct NodeInfo {
    pub name: String,
    /// `None` for a node the cache knows only through its pods (deleted, or not seen yet).
    pub node: Option<Arc<StoredNode>>,
    pub allocatable: Resources,
    pub requested: Resources,
    pub non_zero_requested: Resources,
    pub pods: Vec<Arc<PodInfo>>,
    pub used_ports: Vec<HostPort>,
    pub images: Vec<NodeImage>,
    /// `spec.unschedulable`, copied out of the Node for the hot path.
    pub unschedulable: bool,
    /// `spec.taints`, copied out of the Node for the hot path.
    pub taints: Vec<Taint>,
    pub n_pods_with_affinity: usize,
    pub n_pods_with_required_anti_affinity: usize,
    /// Bumped on every change; the snapshot copies nodes whose generation moved.
    pub generation: u64,
    /// A small number the cache gives the node for as long as it knows it (reused after the
    /// node is gone), so that plugins can keep per-node tables in arrays instead of hash maps.
    /// Every version of a node's NodeInfo has the same id; NodeInfos built outside the cache
    /// have 0, so a table indexed by id must still check which NodeInfo it holds.
    pub id: u32,
    /// The node's labels as interned ids (see [`crate::framework::topology`]), kept with the
    /// Node by [`NodeInfo::set_node`]; empty without a Node.
    pub label_ids: LabelIds,
}

impl NodeInfo {
    pub fn new(name: &str) -> NodeInfo {
        NodeInfo {
            name: name.to_string(),
            ..Default::default()
        }
    }

    pub fn set_node(&mut self, node: Arc<StoredNode>) {
        // Heartbeats change only conditions: keep what was derived from the rest.
        if let Some(old) = &self.node {
            let (os, ns) = (old.status.as_ref(), node.status.as_ref());
            if old.spec == node.spec
                && os.map(|s| (&s.allocatable, &s.images))
                    == ns.map(|s| (&s.allocatable, &s.images))
                && old.metadata.labels == node.metadata.labels
            {
                self.node = Some(node);
                return;
            }
        }
        self.label_ids =
            topology::intern_labels(node.metadata.labels.as_ref().unwrap_or(&EMPTY_LABELS));
        self.allocatable = resources::node_allocatable(&node).unwrap_or_default();
        self.images = node
            .status
            .as_ref()
            .and_then(|s| s.images.as_ref())
            .map(|images| {
                let mut out: Vec<NodeImage> = Vec::new();
                for img in images {
                    for n in img.names.iter().flatten() {
                        let name = normalized_image_name(n);
                        if !out.iter().any(|i| i.name == name) {
                            out.push(NodeImage {
                                name,
                                size_bytes: img.size_bytes.unwrap_or(0),
                            });
                        }
                    }
                }
                out
            })
            .unwrap_or_default();
        let spec = node.spec.as_ref();
        self.unschedulable = spec.and_then(|s| s.unschedulable).unwrap_or(false);
        self.taints = spec.and_then(|s| s.taints.clone()).unwrap_or_default();
        self.node = Some(node);
    }

    pub fn labels(&self) -> &BTreeMap<String, String> {
        self.node
            .as_ref()
            .and_then(|n| n.metadata.labels.as_ref())
            .unwrap_or(&EMPTY_LABELS)
    }

    /// The pair id of the node's label `key` (a key id from [`topology::key_id`]), if it has
    /// that label.
    #[inline]
    pub fn label_pair(&self, key: Option<u32>) -> Option<u32> {
        topology::pair_of(&self.label_ids, key)
    }

    pub fn taints(&self) -> &[Taint] {
        &self.taints
    }

    pub fn unschedulable(&self) -> bool {
        self.unschedulable
    }

    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        self.requested.add(pod.requests());
        self.non_zero_requested.add(pod.non_zero_requests());
        self.used_ports.extend(pod.host_ports.iter().cloned());
        if pod.has_affinity {
            self.n_pods_with_affinity += 1;
        }
        if pod.has_required_anti_affinity {
            self.n_pods_with_required_anti_affinity += 1;
        }
        self.pods.push(pod);
    }

    /// Removes the pod with this UID; returns whether it was there.
    pub fn remove_pod(&mut self, uid: &str) -> bool {
        let Some(i) = self.pods.iter().position(|p| p.uid() == uid) else {
            return false;
        };
        self.remove_pod_at(i);
        true
    }

    /// Removes the pod whose PodInfo is at `held` (the very PodInfo the node was given,
    /// found by address: no UID comparisons), else the pod with this UID; returns whether one
    /// was there. `held` is only compared, never read.
    pub fn remove_pod_held(&mut self, held: *const PodInfo, uid: &str) -> bool {
        match self
            .pods
            .iter()
            .position(|p| std::ptr::eq(Arc::as_ptr(p), held))
        {
            Some(i) => {
                self.remove_pod_at(i);
                true
            }
            None => self.remove_pod(uid),
        }
    }

    /// Removes the `i`th pod and its accounting.
    fn remove_pod_at(&mut self, i: usize) {
        let pod = self.pods.swap_remove(i);
        self.requested.sub(pod.requests());
        self.non_zero_requested.sub(pod.non_zero_requests());
        for hp in &pod.host_ports {
            if let Some(j) = self.used_ports.iter().position(|u| u == hp) {
                self.used_ports.swap_remove(j);
            }
        }
        if pod.has_affinity {
            self.n_pods_with_affinity -= 1;
        }
        if pod.has_required_anti_affinity {
            self.n_pods_with_required_anti_affinity -= 1;
        }
    }
}

/// A pod waiting in the scheduling queue, with its queue bookkeeping.
#[derive(Clone, Debug)]
pub struct QueuedPodInfo {
    pub pod_info: Arc<PodInfo>,
    /// When the pod was last added to the queue (ordering and backoff start).
    pub timestamp: SimTime,
    /// When the pod first entered activeQ.
    pub initial_attempt_timestamp: Option<SimTime>,
    /// Scheduling attempts so far (incremented on every Pop).
    pub attempts: u32,
    pub unschedulable_count: u32,
    pub consecutive_errors_count: u32,
    /// Plugins that rejected the pod in its last attempt.
    pub unschedulable_plugins: BTreeSet<&'static str>,
    /// Plugins that returned Pending in its last attempt.
    pub pending_plugins: BTreeSet<&'static str>,
    /// The PreEnqueue plugin currently keeping the pod out of activeQ.
    pub gating_plugin: Option<&'static str>,
    /// Cached backoff expiry.
    pub backoff_expiration: Option<SimTime>,
}

impl QueuedPodInfo {
    pub fn new(pod_info: Arc<PodInfo>, now: SimTime) -> QueuedPodInfo {
        QueuedPodInfo {
            pod_info,
            timestamp: now,
            initial_attempt_timestamp: None,
            attempts: 0,
            unschedulable_count: 0,
            consecutive_errors_count: 0,
            unschedulable_plugins: BTreeSet::new(),
            pending_plugins: BTreeSet::new(),
            gating_plugin: None,
            backoff_expiration: None,
        }
    }

    pub fn gated(&self) -> bool {
        self.gating_plugin.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::PodBuilder;

    #[test]
    fn a_pod_like_another_takes_its_requests_only_when_its_resource_lists_are_the_same() {
        let web = |name: &str, cpu: &str| {
            Arc::new(
                PodBuilder::new(name)
                    .req(&[("cpu", cpu), ("memory", "1Gi")])
                    .host_port("", "TCP", 8080)
                    .obj()
                    .into(),
            )
        };
        let first = PodInfo::new(web("web-1", "2"));
        // A replica: the same derived data as parsing it afresh.
        let replica = PodInfo::new_like(web("web-2", "2"), Some(&first));
        let fresh = PodInfo::new(web("web-2", "2"));
        assert_eq!(
            (
                replica.requests(),
                replica.non_zero_requests(),
                replica.name()
            ),
            (fresh.requests(), fresh.non_zero_requests(), fresh.name())
        );
        assert_eq!(replica.host_ports, fresh.host_ports);
        // Other requests are parsed, not taken.
        let bigger = PodInfo::new_like(web("big", "3"), Some(&first));
        assert_eq!(bigger.requests().milli_cpu, 3000);
        assert_eq!(first.requests().milli_cpu, 2000);
        assert_eq!(
            PodInfo::new_like(web("w", "1"), None).requests().milli_cpu,
            1000
        );
    }

    #[test]
    fn a_version_sharing_the_spec_keeps_the_derived_data_and_another_spec_parses_its_own() {
        let pod: StoredPod = PodBuilder::new("p").req(&[("cpu", "2")]).obj().into();
        let info = PodInfo::new(Arc::new(pod.clone()));
        let mut next = pod.clone();
        next.metadata.resource_version = Some("2".into());
        let updated = info.updated(Arc::new(next));
        assert!(std::ptr::eq(updated.spec(), info.spec()));
        assert_eq!(updated.requests().milli_cpu, 2000);
        let other: StoredPod = PodBuilder::new("p").req(&[("cpu", "3")]).obj().into();
        assert_eq!(info.updated(Arc::new(other)).requests().milli_cpu, 3000);
        let like = PodInfo::new_like(Arc::new(pod), Some(&info));
        assert_eq!(like.requests, info.requests);
    }

    #[test]
    fn the_start_time_follows_every_version_of_the_pod() {
        let unstarted = Arc::new(PodBuilder::new("p").no_status().obj().into());
        let info = PodInfo::new(unstarted);
        assert_eq!(info.start_time(), None);
        let started = Arc::new(
            PodBuilder::new("p")
                .start_time("2025-01-01T00:01:00Z")
                .obj()
                .into(),
        );
        // A status update keeps the derived data but not the old start time.
        let updated = info.updated(Arc::clone(&started));
        let want = "2025-01-01T00:01:00Z".parse::<jiff::Timestamp>().ok();
        assert_eq!(updated.start_time(), want);
        assert_eq!(PodInfo::new(started).start_time(), want);
    }

    /// Every bound pod's PodInfo stays in the cache while it runs (and a superseded one's
    /// block while PodsByNamespace holds a `Weak` of it): what the pod has, it reads there.
    #[test]
    fn a_pod_info_is_seven_words() {
        let size = std::mem::size_of::<PodInfo>();
        println!(
            "PodInfo {size} B, QueuedPodInfo {} B, NodeInfo {} B",
            std::mem::size_of::<QueuedPodInfo>(),
            std::mem::size_of::<NodeInfo>()
        );
        assert!(size <= 7 * std::mem::size_of::<usize>(), "{size}");
    }

    #[test]
    fn a_held_pod_is_removed_by_its_address_and_else_by_its_uid() {
        let web = |cpu: &str| {
            Arc::new(PodInfo::new(Arc::new(
                PodBuilder::new("web").req(&[("cpu", cpu)]).obj().into(),
            )))
        };
        // Two PodInfos of one UID: the address tells which one goes.
        let (first, second) = (web("1"), web("2"));
        let mut node = NodeInfo::new("n");
        node.add_pod(first.clone());
        node.add_pod(second.clone());
        assert!(node.remove_pod_held(Arc::as_ptr(&second), second.uid()));
        assert!(Arc::ptr_eq(&node.pods[0], &first));
        assert_eq!(node.requested.milli_cpu, 1000);
        // Not held: the pod with the UID.
        let other = web("3");
        assert!(node.remove_pod_held(Arc::as_ptr(&other), other.uid()));
        assert!(node.pods.is_empty());
        assert_eq!(node.requested.milli_cpu, 0);
        assert!(!node.remove_pod_held(Arc::as_ptr(&other), other.uid()));
    }
}

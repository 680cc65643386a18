//! The nominator (upstream `backend/queue/nominator.go`): which pods are nominated to run on
//! which node (after preemption made room for them), keyed by pod UID; and the queue's
//! nominator operations, which resolve a nomination to the pod's latest queued version.

use k8s_openapi::api::core::v1::Pod;

use crate::framework::PodInfo;
use crate::plugins::helper::FxHashMap;

use super::*;

/// A reference to a nominated pod; the queue resolves it to its latest queued version by its
/// `namespace/name` key, kept with it (the filter pass resolves every nominated pod of a
/// checked node, once per cycle).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PodRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub key: String,
}

impl PodRef {
    pub fn of(pod: &PodInfo) -> PodRef {
        PodRef {
            namespace: pod.namespace.clone(),
            name: pod.name.clone(),
            uid: pod.uid.clone(),
            key: format!("{}/{}", pod.namespace, pod.name),
        }
    }
}

/// Both maps are looked up by key only (the preemption's dry runs ask for every candidate
/// node's nominated pods); nothing iterates them in an order that reaches a decision
/// ([`Nominator::node_names`] feeds a set).
#[derive(Default)]
pub(crate) struct Nominator {
    /// node → nominated pods, in nomination order.
    by_node: FxHashMap<String, Vec<PodRef>>,
    /// pod UID → node.
    node_of: FxHashMap<String, String>,
}

impl Nominator {
    /// Nominates the pod: to `nominated_node` when given (an empty name clears the nomination),
    /// else to the pod's `status.nominatedNodeName`. A pod that already has `spec.nodeName` is
    /// not nominated.
    pub fn add(&mut self, pod: &PodInfo, nominated_node: Option<&str>) {
        self.delete(&pod.uid);
        let node = match nominated_node {
            Some(n) => n,
            None => pod.nominated_node_name().unwrap_or(""),
        };
        if node.is_empty() || pod.node_name().is_some() {
            return;
        }
        self.node_of.insert(pod.uid.clone(), node.to_string());
        let list = self.by_node.entry(node.to_string()).or_default();
        if !list.iter().any(|r| r.uid == pod.uid) {
            list.push(PodRef::of(pod));
        }
    }

    /// Refreshes a pod's entry after an update. When neither version carries a
    /// nominatedNodeName but the nominator remembers one (the status patch has not arrived yet),
    /// the remembered node is kept.
    pub fn update(&mut self, old: &Pod, new: &PodInfo) {
        let no_nomination = |p: &Pod| {
            p.status
                .as_ref()
                .and_then(|s| s.nominated_node_name.as_deref())
                .unwrap_or("")
                .is_empty()
        };
        let old_uid = old.metadata.uid.as_deref().unwrap_or("");
        let mut keep = None;
        if no_nomination(old) && no_nomination(&new.pod) {
            keep = self.node_of.get(old_uid).cloned();
        }
        self.delete(old_uid);
        self.add(new, keep.as_deref());
    }

    pub fn delete(&mut self, uid: &str) {
        let Some(node) = self.node_of.remove(uid) else {
            return;
        };
        if let Some(list) = self.by_node.get_mut(&node) {
            list.retain(|r| r.uid != uid);
            if list.is_empty() {
                self.by_node.remove(&node);
            }
        }
    }

    pub fn pods_for_node(&self, node: &str) -> &[PodRef] {
        self.by_node.get(node).map_or(&[], Vec::as_slice)
    }

    /// The nodes with nominated pods, in no particular order.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.by_node.keys().map(String::as_str)
    }

    pub fn has_any(&self) -> bool {
        !self.node_of.is_empty()
    }

    pub fn node_of(&self, uid: &str) -> Option<&str> {
        self.node_of.get(uid).map(String::as_str)
    }
}

impl SchedulingQueue {
    /// Nominates the pod to `nominated_node` (Override; an empty name clears), or with `None`
    /// to its `status.nominatedNodeName` (Noop). A pod with `spec.nodeName` is not nominated.
    /// Upstream also skips pods missing from the informer; the caller checks that.
    pub fn add_nominated_pod(&mut self, pod: Arc<PodInfo>, nominated_node: Option<String>) {
        self.nominator.add(&pod, nominated_node.as_deref());
    }

    pub fn delete_nominated_pod_if_exists(&mut self, pod: &PodInfo) {
        self.nominator.delete(&pod.uid);
    }

    /// Whether any pod is nominated to any node.
    pub fn has_nominated_pods(&self) -> bool {
        self.nominator.has_any()
    }

    /// The nodes that have nominated pods, in no particular order.
    pub fn nominated_node_names(&self) -> impl Iterator<Item = &str> {
        self.nominator.node_names()
    }

    /// The node a pod is nominated to, by UID.
    pub fn nominated_node_of(&self, uid: &str) -> Option<&str> {
        self.nominator.node_of(uid)
    }

    /// The pods nominated to `node`, in nomination order, each as its latest queued version. A
    /// pod in no queue (in flight) is returned as upstream does: a bare pod with only its name,
    /// namespace and UID (so no requests and priority 0).
    pub fn nominated_pods_for_node(&self, node: &str) -> Vec<Arc<PodInfo>> {
        self.nominator
            .pods_for_node(node)
            .iter()
            .map(|r| {
                let key = r.key.as_str();
                self.active_q
                    .get(key)
                    .or_else(|| self.unschedulable_pods.get(key))
                    .or_else(|| self.backoff_get(key))
                    .map(|p| p.pod_info.clone())
                    .unwrap_or_else(|| bare_pod_info(r))
            })
            .collect()
    }
}

fn bare_pod_info(r: &PodRef) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(r.name.clone()),
            namespace: Some(r.namespace.clone()),
            uid: Some(r.uid.clone()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    })))
}

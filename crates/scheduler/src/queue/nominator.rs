//! The nominator (upstream `backend/queue/nominator.go`): which pods are nominated to run on
//! which node (after preemption made room for them), keyed by pod UID; and the queue's
//! nominator operations, which resolve a nomination to the pod's latest queued version.
//!
//! That resolution is kept with each nomination rather than looked up on every read (the
//! filter pass reads the nominated pods of every checked node that has some, once per cycle,
//! and the preemption's dry runs again per candidate): every public queue operation that can
//! change what the queues hold under a key (add, update, delete, pop, the failure handler's
//! requeue, a nomination) re-resolves the nominations with that key when it ends
//! ([`SchedulingQueue::refresh_nominated`]). The other operations only move a pod between
//! sub-queues, which keeps the same `Arc<PodInfo>` under its key.

use kubeplane_api::StoredPod;

use crate::framework::PodInfo;
use crate::plugins::helper::FxHashMap;

use super::*;

/// A reference to a nominated pod, with its resolution: the pod the queues hold under its
/// `namespace/name` key, or (in no queue: in flight) a bare pod with only its name, namespace
/// and UID.
#[derive(Clone, Debug)]
pub(crate) struct PodRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resolved: Arc<PodInfo>,
    /// Whether `resolved` is a queued pod (else the bare one).
    queued: bool,
}

impl PodRef {
    pub fn of(pod: &PodInfo) -> PodRef {
        PodRef {
            namespace: pod.namespace().to_string(),
            name: pod.name().to_string(),
            uid: pod.uid().to_string(),
            resolved: bare_pod_info(pod.namespace(), pod.name(), pod.uid()),
            queued: false,
        }
    }
}

/// The pods nominated to one node, in nomination order, read in place.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NominatedPods<'q>(&'q [PodRef]);

impl<'q> NominatedPods<'q> {
    /// Each as its latest queued version (as [`SchedulingQueue::nominated_pods_for_node`]).
    pub fn iter(self) -> impl Iterator<Item = &'q Arc<PodInfo>> + Clone {
        self.0.iter().map(|r| &r.resolved)
    }
}

/// Both maps are looked up by key only (the preemption's dry runs ask for every candidate
/// node's nominated pods); nothing iterates them in an order that reaches a decision
/// ([`Nominator::nodes`] feeds a table by snapshot place).
#[derive(Default)]
pub(crate) struct Nominator {
    /// node → nominated pods, in nomination order.
    by_node: FxHashMap<String, Vec<PodRef>>,
    /// pod UID → node.
    node_of: FxHashMap<String, String>,
    /// name → the (namespace, UID) of the pods nominated under that name (usually one), so
    /// that a queue operation can tell whether its pod's key has a nomination without
    /// formatting the key.
    uids_of_name: FxHashMap<String, Vec<(String, String)>>,
}

impl Nominator {
    /// Nominates the pod: to `nominated_node` when given (an empty name clears the nomination),
    /// else to the pod's `status.nominatedNodeName`. A pod that already has `spec.nodeName` is
    /// not nominated.
    pub fn add(&mut self, pod: &PodInfo, nominated_node: Option<&str>) {
        let node = match nominated_node {
            Some(n) => n,
            None => pod.nominated_node_name().unwrap_or(""),
        };
        let nominates = !node.is_empty() && pod.node_name().is_none();
        if nominates && self.renominate_in_place(pod, node) {
            return;
        }
        self.delete(pod.uid());
        if !nominates {
            return;
        }
        self.node_of.insert(pod.uid().to_string(), node.to_string());
        let list = self.by_node.entry(node.to_string()).or_default();
        if !list.iter().any(|r| r.uid == pod.uid()) {
            let uids = self.uids_of_name.entry(pod.name().to_string()).or_default();
            uids.push((pod.namespace().to_string(), pod.uid().to_string()));
            list.push(PodRef::of(pod));
        }
    }

    /// A nomination of a pod already nominated to `node` under the same key: moved to the end
    /// of the node's list as deleting and adding it would, without new strings. Its resolution
    /// is left for the [`SchedulingQueue::refresh_nominated`] that ends every queue operation
    /// (a fresh entry's bare pod and a kept one resolve alike). Returns whether it applied.
    fn renominate_in_place(&mut self, pod: &PodInfo, node: &str) -> bool {
        if self.node_of.get(pod.uid()).map(String::as_str) != Some(node) {
            return false;
        }
        let Some(list) = self.by_node.get_mut(node) else {
            return false;
        };
        let Some(i) = list.iter().position(|r| r.uid == pod.uid()) else {
            return false;
        };
        if list[i].name != pod.name() || list[i].namespace != pod.namespace() {
            return false;
        }
        list[i..].rotate_left(1);
        true
    }

    /// Refreshes a pod's entry after an update. When neither version carries a
    /// nominatedNodeName but the nominator remembers one (the status patch has not arrived yet),
    /// the remembered node is kept.
    pub fn update(&mut self, old: &StoredPod, new: &PodInfo) {
        let no_nomination = |p: &StoredPod| {
            p.status()
                .and_then(|s| s.nominated_node_name())
                .unwrap_or("")
                .is_empty()
        };
        let old_uid = old.metadata.uid.as_deref().unwrap_or("");
        let mut keep = None;
        if no_nomination(old) && no_nomination(&new.pod) {
            keep = self.node_of.get(old_uid).cloned();
        }
        if old_uid != new.uid() {
            self.delete(old_uid);
        }
        self.add(new, keep.as_deref());
    }

    pub fn delete(&mut self, uid: &str) {
        let Some(node) = self.node_of.remove(uid) else {
            return;
        };
        if let Some(list) = self.by_node.get_mut(&node) {
            if let Some(i) = list.iter().position(|r| r.uid == uid) {
                let r = list.remove(i);
                if let Some(uids) = self.uids_of_name.get_mut(&r.name) {
                    uids.retain(|(_, u)| u != uid);
                    if uids.is_empty() {
                        self.uids_of_name.remove(&r.name);
                    }
                }
            }
            if list.is_empty() {
                self.by_node.remove(&node);
            }
        }
    }

    /// Whether some nomination has this namespace and name.
    pub fn has_name(&self, namespace: &str, name: &str) -> bool {
        self.uids_of_name
            .get(name)
            .is_some_and(|uids| uids.iter().any(|(ns, _)| ns == namespace))
    }

    /// Sets the resolution of every nomination with this namespace and name: `queued`, the
    /// pod the queues hold under its key, or a bare pod when they hold none.
    pub fn set_resolved(&mut self, namespace: &str, name: &str, queued: Option<&Arc<PodInfo>>) {
        let Some(uids) = self.uids_of_name.get(name) else {
            return;
        };
        for (_, uid) in uids.iter().filter(|(ns, _)| ns == namespace) {
            let Some(list) = self.node_of.get(uid).and_then(|n| self.by_node.get_mut(n)) else {
                continue;
            };
            for r in list.iter_mut().filter(|r| &r.uid == uid) {
                match queued {
                    Some(p) => r.resolved = Arc::clone(p),
                    None if !r.queued => {}
                    None => r.resolved = bare_pod_info(&r.namespace, &r.name, &r.uid),
                }
                r.queued = queued.is_some();
            }
        }
    }

    pub fn pods_for_node(&self, node: &str) -> &[PodRef] {
        self.by_node.get(node).map_or(&[], Vec::as_slice)
    }

    /// The nodes with nominated pods, each with its pods, in no particular order.
    pub fn nodes(&self) -> impl Iterator<Item = (&str, NominatedPods<'_>)> {
        self.by_node
            .iter()
            .map(|(node, pods)| (node.as_str(), NominatedPods(pods)))
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
        self.refresh_nominated(&pod);
    }

    /// Re-resolves the nominations with `pod`'s key to what the queues now hold under it (see
    /// the module's documentation): called at the end of every operation that may change it.
    /// Without such a nomination (the usual case) the key is not even formatted.
    pub(super) fn refresh_nominated(&mut self, pod: &PodInfo) {
        if !self.nominator.has_name(pod.namespace(), pod.name()) {
            return;
        }
        let key = pod.key();
        let queued = self.queued_pod_info(&key).cloned();
        self.nominator
            .set_resolved(pod.namespace(), pod.name(), queued.as_ref());
    }

    /// The pod the queues hold under `key`, looked up in activeQ, unschedulablePods, then
    /// backoffQ.
    fn queued_pod_info(&self, key: &str) -> Option<&Arc<PodInfo>> {
        self.active_q
            .get(key)
            .or_else(|| self.unschedulable_pods.get(key))
            .or_else(|| self.backoff_get(key))
            .map(|p| &p.pod_info)
    }

    pub fn delete_nominated_pod_if_exists(&mut self, pod: &PodInfo) {
        self.nominator.delete(pod.uid());
    }

    /// Whether any pod is nominated to any node.
    pub fn has_nominated_pods(&self) -> bool {
        self.nominator.has_any()
    }

    /// The nodes that have nominated pods, each with its pods read in place (the filter
    /// pass's first pass on such a node), in no particular order.
    pub(crate) fn nominated_nodes(&self) -> impl Iterator<Item = (&str, NominatedPods<'_>)> {
        self.nominator.nodes()
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
            .map(|r| Arc::clone(&r.resolved))
            .collect()
    }

    /// The same, each looked up in the queues by its key (what the kept resolutions must
    /// equal).
    #[cfg(test)]
    pub(crate) fn nominated_pods_for_node_by_lookup(&self, node: &str) -> Vec<Arc<PodInfo>> {
        self.nominator
            .pods_for_node(node)
            .iter()
            .map(|r| {
                self.queued_pod_info(&format!("{}/{}", r.namespace, r.name))
                    .cloned()
                    .unwrap_or_else(|| bare_pod_info(&r.namespace, &r.name, &r.uid))
            })
            .collect()
    }
}

/// A pod with only a name, namespace and UID.
fn bare_pod_info(namespace: &str, name: &str, uid: &str) -> Arc<PodInfo> {
    let metadata = ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        uid: Some(uid.to_string()),
        ..ObjectMeta::default()
    };
    Arc::new(PodInfo::new(Arc::new(StoredPod::with_shared_spec(
        metadata, None, None, None,
    ))))
}

#[cfg(test)]
#[path = "nominator_tests.rs"]
mod tests;

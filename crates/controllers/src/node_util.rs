//! Helpers shared by the taint-eviction and node-lifecycle controllers: a pods-by-node index
//! fed from watch events (upstream's `spec.nodeName` informer index), the pod-condition update
//! rule, and the human-readable forms of taints and tolerations used in explanation records.

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::hash::Hash;

use k8s_openapi::api::core::v1::{PodCondition, PodStatus, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::{EventType, WatchEvent};

/// The node a pod is bound to (`spec.nodeName`), `""` when unbound.
pub(crate) fn pod_node_name(pod: &StoredPod) -> &str {
    pod.node_name().unwrap_or("")
}

/// The pod's tolerations, empty when unset.
pub(crate) fn pod_tolerations(pod: &StoredPod) -> &[Toleration] {
    pod.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[])
}

/// A pod's identity in the indexes: (namespace, name).
pub(crate) type PodRef = (String, String);

/// Pods by the node they are bound to, kept from watch events. Sets are ordered, so every
/// walk over a node's pods is deterministic (upstream's index order is unspecified).
#[derive(Default, Debug)]
pub(crate) struct PodsByNode {
    by_node: HashMap<String, BTreeSet<PodName>>,
}

/// A pod's namespace and name in one allocation (`namespace/name`), ordered as the pair
/// [`PodRef`] is: the index holds every bound pod, twice (node lifecycle, taint eviction).
#[derive(Debug, PartialEq, Eq)]
struct PodName {
    text: Box<str>,
    /// The namespace's length in `text`.
    ns_len: usize,
}

impl PodName {
    fn new(namespace: &str, name: &str) -> PodName {
        PodName {
            text: format!("{namespace}/{name}").into(),
            ns_len: namespace.len(),
        }
    }

    fn parts(&self) -> (&str, &str) {
        (&self.text[..self.ns_len], &self.text[self.ns_len + 1..])
    }
}

impl Ord for PodName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.parts().cmp(&other.parts())
    }
}

impl PartialOrd for PodName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PodsByNode {
    /// Applies one watch event (ignores everything that is not a pod).
    pub(crate) fn observe(&mut self, ev: &WatchEvent) {
        let Some(pod) = ev.object.as_pod() else {
            return;
        };
        let old_node = ev
            .old
            .as_ref()
            .and_then(|o| o.as_pod())
            .map(|p| pod_node_name(p))
            .unwrap_or("");
        let new_node = if ev.type_ == EventType::Deleted {
            ""
        } else {
            pod_node_name(pod)
        };
        if old_node == new_node && ev.type_ == EventType::Modified {
            return;
        }
        let key = || PodName::new(ev.object.namespace(), ev.object.name());
        if !old_node.is_empty() {
            if let Some(set) = self.by_node.get_mut(old_node) {
                set.remove(&key());
                if set.is_empty() {
                    self.by_node.remove(old_node);
                }
            }
        }
        if !new_node.is_empty() {
            self.by_node
                .entry(new_node.to_string())
                .or_default()
                .insert(key());
        }
    }

    /// The pods bound to `node`, ordered by namespace and name.
    pub(crate) fn pods_on(&self, node: &str) -> Vec<PodRef> {
        self.by_node
            .get(node)
            .map(|s| {
                s.iter()
                    .map(|p| {
                        let (ns, name) = p.parts();
                        (ns.to_string(), name.to_string())
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A FIFO that holds each item at most once (upstream's de-duplicating workqueue).
#[derive(Debug)]
pub(crate) struct UniqueQueue<T> {
    order: VecDeque<T>,
    present: HashSet<T>,
}

impl<T> Default for UniqueQueue<T> {
    fn default() -> Self {
        UniqueQueue {
            order: VecDeque::new(),
            present: HashSet::new(),
        }
    }
}

impl<T: Clone + Eq + Hash> UniqueQueue<T> {
    pub(crate) fn push(&mut self, item: T) {
        if self.present.insert(item.clone()) {
            self.order.push_back(item);
        }
    }
    pub(crate) fn pop(&mut self) -> Option<T> {
        let item = self.order.pop_front()?;
        self.present.remove(&item);
        Some(item)
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

fn opt_str(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

/// Upstream `UpdatePodCondition`: sets `cond` on `status` with lastTransitionTime `now`, keeping
/// the old lastTransitionTime when the condition's status did not change. Returns whether any
/// field of the condition changed (or it was added).
pub(crate) fn update_pod_condition(
    status: &mut PodStatus,
    mut cond: PodCondition,
    now: Time,
) -> bool {
    cond.last_transition_time = Some(now);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let Some(idx) = conditions.iter().position(|c| c.type_ == cond.type_) else {
        conditions.push(cond);
        return true;
    };
    let old = &conditions[idx];
    if cond.status == old.status {
        cond.last_transition_time = old.last_transition_time.clone();
    }
    let equal = cond.status == old.status
        && opt_str(&cond.reason) == opt_str(&old.reason)
        && opt_str(&cond.message) == opt_str(&old.message)
        && cond.last_probe_time == old.last_probe_time
        && cond.last_transition_time == old.last_transition_time;
    conditions[idx] = cond;
    !equal
}

/// A taint as kubectl prints it: `key=value:Effect`, or `key:Effect` without a value.
pub fn format_taint(t: &Taint) -> String {
    match t.value.as_deref() {
        Some(v) if !v.is_empty() => format!("{}={}:{}", t.key, v, t.effect),
        _ => format!("{}:{}", t.key, t.effect),
    }
}

/// A toleration as `kubectl describe pod` prints it, e.g.
/// `node.kubernetes.io/unreachable:NoExecute op=Exists for 300s`.
pub fn format_toleration(t: &Toleration) -> String {
    let key = opt_str(&t.key);
    let value = opt_str(&t.value);
    let effect = opt_str(&t.effect);
    let mut s = String::from(key);
    if !value.is_empty() {
        let _ = write!(s, "={value}");
    }
    if !effect.is_empty() {
        let _ = write!(s, ":{effect}");
    }
    if t.operator.as_deref() == Some("Exists") && value.is_empty() {
        if key.is_empty() && effect.is_empty() {
            s.push_str("op=Exists");
        } else {
            s.push_str(" op=Exists");
        }
    }
    if let Some(secs) = t.toleration_seconds {
        let _ = write!(s, " for {secs}s");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    use kubeplane_core::testing::toleration as tol;

    fn pod_event(type_: EventType, ns: &str, name: &str, node: &str) -> WatchEvent {
        let mut pod = StoredPod::default();
        pod.metadata.namespace = Some(ns.into());
        pod.metadata.name = Some(name.into());
        pod.set_node_name(Some(node.into()));
        WatchEvent {
            type_,
            object: kubeplane_api::Object::Pod(std::sync::Arc::new(pod)),
            old: None,
            resource_version: 1,
        }
    }

    #[test]
    fn pods_on_a_node_come_in_namespace_then_name_order_and_leave_with_their_deletion() {
        let mut index = PodsByNode::default();
        // "a-b/y" sorts before "a/x" as text; the pair ("a", "x") comes first.
        for (ns, name) in [("a-b", "y"), ("a", "x"), ("a", "w"), ("b", "z")] {
            index.observe(&pod_event(EventType::Added, ns, name, "n1"));
        }
        index.observe(&pod_event(EventType::Added, "a", "v", "n2"));
        let pair = |ns: &str, name: &str| (ns.to_string(), name.to_string());
        assert_eq!(
            index.pods_on("n1"),
            [
                pair("a", "w"),
                pair("a", "x"),
                pair("a-b", "y"),
                pair("b", "z")
            ]
        );
        let mut gone = pod_event(EventType::Deleted, "a", "x", "n1");
        gone.old = Some(gone.object.clone());
        index.observe(&gone);
        assert_eq!(
            index.pods_on("n1"),
            [pair("a", "w"), pair("a-b", "y"), pair("b", "z")]
        );
        assert_eq!(index.pods_on("n2"), [pair("a", "v")]);
        assert!(index.pods_on("n3").is_empty());
    }

    #[test]
    fn tolerations_print_like_kubectl_describe() {
        let cases = [
            (
                tol(
                    "node.kubernetes.io/unreachable",
                    "Exists",
                    "",
                    "NoExecute",
                    Some(300),
                ),
                "node.kubernetes.io/unreachable:NoExecute op=Exists for 300s",
            ),
            (tol("k", "Equal", "v", "NoExecute", None), "k=v:NoExecute"),
            (tol("", "Exists", "", "", None), "op=Exists"),
            (tol("k", "", "", "", Some(5)), "k for 5s"),
        ];
        for (t, want) in cases {
            assert_eq!(format_toleration(&t), want);
        }
    }

    #[test]
    fn a_condition_whose_status_is_unchanged_keeps_its_transition_time() {
        let t0 = Time("2025-01-01T00:00:00Z".parse().unwrap());
        let t1 = Time("2025-01-01T00:01:00Z".parse().unwrap());
        let ready = |status: &str| PodCondition {
            type_: "Ready".into(),
            status: status.into(),
            ..Default::default()
        };
        let mut st = PodStatus::default();
        assert!(update_pod_condition(&mut st, ready("True"), t0.clone()));
        assert!(!update_pod_condition(&mut st, ready("True"), t1.clone()));
        assert_eq!(
            st.conditions.as_ref().unwrap()[0].last_transition_time,
            Some(t0)
        );
        assert!(update_pod_condition(&mut st, ready("False"), t1.clone()));
        assert_eq!(
            st.conditions.as_ref().unwrap()[0].last_transition_time,
            Some(t1)
        );
    }
}

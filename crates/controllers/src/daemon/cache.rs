//! The DaemonSet controller's informer caches: DaemonSets (read once per change into the typed
//! k8s-openapi object, beside what a sync needs of its pod template), nodes, ControllerRevisions,
//! and the pods indexed by the DaemonSet that controls them, so a sync reads only its own pods;
//! orphans are counted by namespace, and only a sync of a namespace that has some looks through
//! that namespace's pods for them.

use kubeplane_api::StoredPod;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Taint, Toleration};
use kubeplane_api::object::DynamicObject;
use kubeplane_api::StoredNode;
use kubeplane_core::labels::{from_label_selector, Selector};
use kubeplane_core::nodeaffinity::RequiredNodeAffinity;
use kubeplane_core::taints::{find_untolerated_taint, EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE};
use rustc_hash::FxHashMap;

use super::util::add_or_update_daemon_pod_tolerations;
use super::KIND;
use crate::controller_utils::{controller_of, labels, ns_name, pod_labels, NsName};
use crate::pod_filing::{filed_under, put_hashed, take_hashed};

/// What upstream's `NewPod` + `predicates` read of a DaemonSet's template, computed once per
/// observed version of the DaemonSet.
#[derive(Debug)]
pub struct DaemonPodView {
    /// `spec.template.spec.nodeName`, when set.
    node_name: Option<String>,
    /// `nodeSelector` and the required node affinity of the template.
    affinity: RequiredNodeAffinity,
    /// The template's tolerations with the daemon tolerations added.
    tolerations: Vec<Toleration>,
}

impl DaemonPodView {
    pub fn new(ds: &DaemonSet) -> DaemonPodView {
        let mut spec = ds
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.clone())
            .unwrap_or_default();
        add_or_update_daemon_pod_tolerations(&mut spec);
        DaemonPodView {
            node_name: spec.node_name.clone().filter(|n| !n.is_empty()), // not a stored pod's spec
            affinity: RequiredNodeAffinity::from_pod(&spec),
            tolerations: spec.tolerations.unwrap_or_default(),
        }
    }

    /// Upstream `NodeShouldRunDaemonPod`: `(shouldRun, shouldContinueRunning)`. A node fits when
    /// it is the template's `nodeName` (if any), matches the node selector and required node
    /// affinity, and has no NoSchedule or NoExecute taint the pod does not tolerate; a pod
    /// already there may stay unless a NoExecute taint is untolerated.
    pub fn node_should_run_daemon_pod(&self, node: &Node) -> (bool, bool) {
        let name = node.metadata.name.as_deref().unwrap_or("");
        if self.node_name.as_deref().is_some_and(|n| n != name) {
            return (false, false);
        }
        if !self.affinity.matches(name, labels(&node.metadata)) {
            return (false, false);
        }
        let taints: &[Taint] = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or(&[]);
        let untolerated = |effects: &[&str]| {
            find_untolerated_taint(taints, &self.tolerations, |t| {
                effects.contains(&t.effect.as_str())
            })
            .is_some()
        };
        if untolerated(&[EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE]) {
            return (false, !untolerated(&[EFFECT_NO_EXECUTE]));
        }
        (true, true)
    }
}

/// One cached DaemonSet: the stored object (status writes start from it, so fields kubeplane's
/// typed model would drop survive), its typed form, selector and template view.
#[derive(Debug)]
pub struct CachedDs {
    pub obj: Arc<DynamicObject>,
    pub ds: Arc<DaemonSet>,
    /// `Err` for a selector that does not parse.
    pub selector: Result<Selector, String>,
    pub view: DaemonPodView,
}

impl CachedDs {
    pub fn new(obj: Arc<DynamicObject>, ds: DaemonSet) -> CachedDs {
        let selector = ds
            .spec
            .as_ref()
            .map(|s| from_label_selector(&s.selector).map_err(|e| e.to_string()))
            .unwrap_or_else(|| Ok(Selector::nothing()));
        let view = DaemonPodView::new(&ds);
        CachedDs {
            obj,
            ds: Arc::new(ds),
            selector,
            view,
        }
    }

    pub fn uid(&self) -> &str {
        self.ds.metadata.uid.as_deref().unwrap_or("")
    }
}

#[derive(Debug, Default)]
pub struct Cache {
    pub daemon_sets: BTreeMap<NsName, CachedDs>,
    pub nodes: BTreeMap<String, Arc<StoredNode>>,
    /// The pods a DaemonSet controls and the orphans, by namespace, by name. Pods of other
    /// kinds' controllers are not cached (see [`is_filed`]).
    /// Hashed: the indexes below give the order, and most events replace a pod in place.
    pods: FxHashMap<String, FxHashMap<String, Arc<StoredPod>>>,
    /// Pods whose controller reference names a DaemonSet, by that reference's UID.
    controlled: HashMap<String, BTreeSet<NsName>>,
    /// How many of `pods` have no controller reference, by namespace: the orphans themselves are
    /// found in `pods` when a DaemonSet looks for some to adopt, which is rare, while every
    /// pod of a cluster without DaemonSets is one (an ordered index of them cost every pod
    /// event two key copies and a tree insert).
    orphans: FxHashMap<String, usize>,
    pub revisions: BTreeMap<NsName, Arc<ControllerRevision>>,
}

fn daemon_controller_uid(pod: &StoredPod) -> Option<Option<&str>> {
    filed_under(pod, KIND)
}

/// Whether the controller caches the pod: it has no controller reference or one to a
/// DaemonSet. A pod of another kind's controller concerns no DaemonSet (upstream's handlers
/// find no DaemonSet for it and never consider it for adoption).
pub fn is_filed(pod: &StoredPod) -> bool {
    daemon_controller_uid(pod).is_some()
}

impl Cache {
    /// Replaces (or with `None` removes) a pod and returns the version cached before; a pod
    /// that is not [`is_filed`] is removed.
    pub fn replace_pod(
        &mut self,
        ns: &str,
        name: &str,
        pod: Option<&Arc<StoredPod>>,
    ) -> Option<Arc<StoredPod>> {
        let pod = pod.filter(|p| is_filed(p));
        let old = match pod {
            Some(p) => put_hashed(&mut self.pods, ns, name, p.clone()),
            None => take_hashed(&mut self.pods, ns, name),
        };
        // Most updates (bindings, status) keep the pod where it is indexed.
        let same_index = matches!((&old, pod),
            (Some(o), Some(p)) if daemon_controller_uid(o) == daemon_controller_uid(p));
        if !same_index {
            if let Some(old) = &old {
                self.unindex(ns, name, old);
            }
            if let Some(p) = pod {
                self.index(ns, name, p);
            }
        }
        old
    }

    fn index(&mut self, ns: &str, name: &str, pod: &StoredPod) {
        match daemon_controller_uid(pod) {
            Some(Some(uid)) => {
                self.controlled
                    .entry(uid.to_string())
                    .or_default()
                    .insert((ns.to_string(), name.to_string()));
            }
            Some(None) => match self.orphans.get_mut(ns) {
                Some(n) => *n += 1,
                None => {
                    self.orphans.insert(ns.to_string(), 1);
                }
            },
            None => {}
        }
    }

    fn unindex(&mut self, ns: &str, name: &str, pod: &StoredPod) {
        match daemon_controller_uid(pod) {
            Some(Some(uid)) => {
                if let Some(set) = self.controlled.get_mut(uid) {
                    set.remove(&(ns.to_string(), name.to_string()));
                    if set.is_empty() {
                        self.controlled.remove(uid);
                    }
                }
            }
            Some(None) => {
                if let Some(n) = self.orphans.get_mut(ns) {
                    *n -= 1;
                    if *n == 0 {
                        self.orphans.remove(ns);
                    }
                }
            }
            None => {}
        }
    }

    /// The pods whose controller reference carries `uid`, in key order.
    pub fn controlled_pods<'a>(
        &'a self,
        uid: &str,
    ) -> impl Iterator<Item = &'a Arc<StoredPod>> + 'a {
        self.controlled
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|(ns, name)| self.pods.get(ns)?.get(name))
    }

    /// The pods of `namespace` without a controller reference, in name order.
    pub fn orphan_pods(&self, namespace: &str) -> Vec<&Arc<StoredPod>> {
        if !self.orphans.contains_key(namespace) {
            return Vec::new();
        }
        let mut found: Vec<(&String, &Arc<StoredPod>)> = self
            .pods
            .get(namespace)
            .into_iter()
            .flatten()
            .filter(|(_, p)| daemon_controller_uid(p) == Some(None))
            .collect();
        found.sort_unstable_by(|a, b| a.0.cmp(b.0));
        found.into_iter().map(|(_, p)| p).collect()
    }

    /// The cached DaemonSet a controller reference points to (upstream `resolveControllerRef`).
    pub fn resolve_controller_ref(
        &self,
        namespace: &str,
        r: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
    ) -> Option<NsName> {
        if r.kind != KIND {
            return None;
        }
        let key = (namespace.to_string(), r.name.clone());
        let ds = self.daemon_sets.get(&key)?;
        (ds.uid() == r.uid).then_some(key)
    }

    /// The DaemonSets of the pod's namespace whose (non-empty) selector matches its labels
    /// (upstream `GetPodDaemonSets`).
    pub fn pod_daemon_sets(&self, pod: &StoredPod) -> Vec<NsName> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        crate::controller_utils::in_namespace(&self.daemon_sets, ns)
            .filter(|(_, ds)| {
                ds.selector
                    .as_ref()
                    .is_ok_and(|s| !s.is_empty() && s.matches(pod_labels(pod)))
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The ControllerRevisions of a namespace whose controller reference is the DaemonSet.
    pub fn controlled_histories(&self, ds: &CachedDs) -> Vec<Arc<ControllerRevision>> {
        let (ns, _) = ns_name(&ds.ds.metadata);
        crate::controller_utils::in_namespace(&self.revisions, &ns)
            .filter(|(_, cr)| {
                controller_of(&cr.metadata).is_some_and(|r| r.kind == KIND && r.uid == ds.uid())
            })
            .map(|(_, cr)| cr.clone())
            .collect()
    }
}

//! The namespace controller (upstream `pkg/controller/namespace`): deletes the contents of a
//! namespace that is being deleted, then lets the namespace go.
//!
//! Deleting a Namespace only sets its `deletionTimestamp` and phase `Terminating` (and the
//! `kubernetes` finalizer in `spec.finalizers`; the registry's deletion rules). For a namespace
//! with a `deletionTimestamp` the controller, as upstream's `namespacedResourcesDeleter`, reads
//! it with an uncached GET, sets phase `Terminating` if it is not, and, while the `kubernetes`
//! finalizer is there, deletes every namespaced object in it: every Deployment, ReplicaSet,
//! PodDisruptionBudget, Pod and Lease, in that order (the order of `Kind::ALL`; upstream's is
//! discovery order), then the objects of every other built-in kind and custom resource type,
//! each with a background delete (pods gracefully; an object already being
//! deleted is left alone and counted as remaining). While something remains it waits (synced
//! again when something in the namespace is deleted; upstream requeues after an estimate);
//! then it removes the `kubernetes` finalizer (upstream writes the `finalize` subresource,
//! kubeplane updates the Namespace) and the registry removes the Namespace.
//!
//! kubeplane's own cases: a Namespace that arrives with a `deletionTimestamp` and no
//! finalizer at all (an `apply` of one; upstream clears it on create) goes at the controller's
//! first write (the phase: an update that leaves a deleting object without finalizers removes
//! it), and the contents of a namespace that is gone are deleted after it, as they were before
//! kubeplane modelled termination. Not modelled: the status conditions
//! (`NamespaceDeletionContentFailure`, `NamespaceContentRemaining`, ...).

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use kubeplane_api::{Client, Component, DeleteOptions, EventType, Kind, Object, ObjectKey};
use kubeplane_api::{PropagationPolicy, WatchEvent};

/// The namespace controller's finalizer (upstream `v1.FinalizerKubernetes`).
const FINALIZER_KUBERNETES: &str = "kubernetes";
use kubeplane_core::SimTime;

/// The namespace controller.
#[derive(Default)]
pub struct NamespaceController {
    /// Namespaces whose contents are to be deleted now.
    queue: BTreeSet<String>,
    /// Namespaces with a `deletionTimestamp` that still have contents: synced again when
    /// something in them is deleted.
    terminating: BTreeSet<String>,
    deletions: u64,
}

impl NamespaceController {
    pub fn new() -> NamespaceController {
        NamespaceController::default()
    }

    /// Deletes every namespaced object in `ns`, of the kinds kubeplane simulates, then of every
    /// other built-in kind and custom resource type (upstream deletes every namespaced resource
    /// discovery lists); returns how many are left (being deleted).
    fn delete_all_content(&mut self, ns: &str, client: &mut dyn Client) -> usize {
        let mut left = 0;
        let stored = kubeplane_api::types::BUILTIN
            .iter()
            .chain(kubeplane_api::types::all_interned())
            .map(Kind::Other);
        let kinds = Kind::ALL.into_iter().chain(stored);
        for kind in kinds.filter(|k| k.is_namespaced()) {
            let items: Vec<(ObjectKey, String, bool)> = client
                .cache()
                .list(kind)
                .filter(|o| o.namespace() == ns)
                .map(|o| {
                    let terminating = o.meta().deletion_timestamp.is_some();
                    (o.key(), o.uid().to_string(), terminating)
                })
                .collect();
            for (key, uid, terminating) in items {
                if terminating {
                    left += 1;
                    continue;
                }
                let opts = DeleteOptions {
                    precondition_uid: Some(uid),
                    propagation_policy: Some(PropagationPolicy::Background),
                    ..DeleteOptions::default()
                };
                if let Ok(remaining) = client.delete(&key, opts) {
                    self.deletions += 1;
                    left += usize::from(remaining.is_some());
                }
            }
        }
        left
    }

    /// Syncs one namespace (upstream `namespacedResourcesDeleter.Delete`).
    fn sync(&mut self, ns: &str, client: &mut dyn Client) {
        let key = ObjectKey::new(Kind::Namespace, "", ns);
        let namespace = match client.get(&key) {
            Ok(obj) => obj,
            Err(_) => {
                // Gone: its contents go too (kubeplane's; see the module doc).
                self.delete_all_content(ns, client);
                self.terminating.remove(ns);
                return;
            }
        };
        if namespace.meta().deletion_timestamp.is_none() {
            self.terminating.remove(ns);
            return;
        }
        let Some(namespace) = set_terminating(namespace, client) else {
            return;
        };
        let has_finalizer = spec_finalizers(&namespace)
            .iter()
            .any(|f| f == FINALIZER_KUBERNETES);
        let no_finalizers = spec_finalizers(&namespace).is_empty()
            && namespace
                .meta()
                .finalizers
                .as_ref()
                .is_none_or(|f| f.is_empty());
        if !has_finalizer && !no_finalizers {
            // Finalized by us already; other parties' finalizers are theirs to remove.
            self.terminating.remove(ns);
            return;
        }
        if self.delete_all_content(ns, client) > 0 {
            self.terminating.insert(ns.to_string());
            return;
        }
        self.terminating.remove(ns);
        if has_finalizer {
            finalize(namespace, client);
        } else {
            let _ = client.delete(&key, DeleteOptions::exactly(&namespace));
        }
    }
}

/// A Namespace's `spec.finalizers`.
fn spec_finalizers(obj: &Object) -> &[String] {
    let Object::Namespace(n) = obj else {
        return &[];
    };
    n.spec
        .as_ref()
        .and_then(|s| s.finalizers.as_deref())
        .unwrap_or(&[])
}

/// Sets a deleting namespace's phase to Terminating if it is not (upstream
/// `updateNamespaceStatusFunc`); returns the namespace as it is now, `None` when the write
/// failed (retried at the next sync).
fn set_terminating(namespace: Object, client: &mut dyn Client) -> Option<Object> {
    let Object::Namespace(n) = &namespace else {
        return None;
    };
    let phase = n.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase == Some("Terminating") {
        return Some(namespace);
    }
    let mut n = Namespace::clone(n);
    n.status.get_or_insert_with(Default::default).phase = Some("Terminating".into());
    client.update_status(Object::Namespace(Arc::new(n))).ok()
}

/// Removes the `kubernetes` finalizer from `spec.finalizers` (upstream `finalizeNamespace`);
/// the registry removes the Namespace when nothing else holds it.
fn finalize(namespace: Object, client: &mut dyn Client) {
    let Object::Namespace(n) = &namespace else {
        return;
    };
    let mut n = Namespace::clone(n);
    if let Some(f) = n.spec.as_mut().and_then(|s| s.finalizers.as_mut()) {
        f.retain(|x| x != FINALIZER_KUBERNETES);
    }
    // A conflict is retried at the next sync (a change of the namespace queues it).
    let _ = client.update(Object::Namespace(Arc::new(n)));
}

impl Component for NamespaceController {
    fn name(&self) -> &'static str {
        "namespace-controller"
    }

    fn observe(&mut self, ev: &WatchEvent, _now: SimTime) {
        match &ev.object {
            Object::Namespace(n) => {
                let name = n.metadata.name.as_deref().unwrap_or("");
                if ev.type_ == EventType::Deleted || n.metadata.deletion_timestamp.is_some() {
                    self.queue.insert(name.to_string());
                }
            }
            obj if ev.type_ == EventType::Deleted && self.terminating.contains(obj.namespace()) => {
                self.queue.insert(obj.namespace().to_string());
            }
            _ => {}
        }
    }

    fn run(&mut self, _now: SimTime, client: &mut dyn Client) {
        for ns in std::mem::take(&mut self.queue) {
            self.sync(&ns, client);
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        (!self.queue.is_empty()).then_some(SimTime(i64::MIN))
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        vec![(
            "kubeplane_namespace_controller_deletions_total".into(),
            self.deletions,
        )]
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::apps::v1::ReplicaSet;
    use k8s_openapi::api::core::v1::{Namespace, Pod, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use kubeplane_api::StoredReplicaSet;
    use kubeplane_registry::testing::TestClient;

    use super::*;

    fn meta(ns: &str, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..Default::default()
        }
    }

    fn pod(ns: &str, name: &str, node: Option<&str>) -> Object {
        Object::Pod(Arc::new(
            Pod {
                metadata: meta(ns, name),
                spec: Some(PodSpec {
                    node_name: node.map(str::to_string),
                    termination_grace_period_seconds: Some(30),
                    ..Default::default()
                }),
                status: None,
            }
            .into(),
        ))
    }

    fn setup(tc: &mut TestClient) {
        tc.create(pod("team", "p1", None)).unwrap();
        tc.create(pod("team", "p2", Some("n1"))).unwrap();
        tc.create(pod("other", "p3", None)).unwrap();
        let rs = StoredReplicaSet::from_k8s(ReplicaSet {
            metadata: meta("team", "web"),
            ..Default::default()
        });
        tc.create(Object::ReplicaSet(Arc::new(rs))).unwrap();
    }

    fn phase(tc: &TestClient, ns: &str) -> Option<String> {
        let Some(Object::Namespace(n)) = tc.store.get(Kind::Namespace, "", ns) else {
            return None;
        };
        n.status.as_ref().and_then(|s| s.phase.clone())
    }

    #[test]
    fn the_stored_only_kinds_in_a_deleted_namespace_go_too() {
        let mut tc = TestClient::new(1);
        let mut c = NamespaceController::new();
        let object = |kind: &str, ns: &str| {
            let v = serde_json::json!({"apiVersion": "v1", "kind": kind,
                "metadata": {"name": "x", "namespace": ns}});
            Object::from_json(&v).unwrap()
        };
        for ns in ["team", "other"] {
            tc.create(object("ConfigMap", ns)).unwrap();
            tc.create(object("ServiceAccount", ns)).unwrap();
        }
        tc.settle(&mut [&mut c]);
        let key = ObjectKey::new(Kind::Namespace, "", "team");
        tc.delete(&key, DeleteOptions::default()).unwrap();
        tc.settle(&mut [&mut c]);
        assert_eq!(c.deletions, 2);
        assert!(tc.store.get(Kind::Namespace, "", "team").is_none());
        let left = |ns: &str| {
            let kind = object("ConfigMap", ns).kind();
            tc.store.get(kind, ns, "x").is_some()
        };
        assert!(!left("team"), "the ConfigMap went with its namespace");
        assert!(left("other"), "another namespace's stays");
    }

    #[test]
    fn a_deleted_namespace_is_terminating_until_its_contents_are_gone() {
        let mut tc = TestClient::new(1);
        let mut c = NamespaceController::new();
        setup(&mut tc);
        tc.settle(&mut [&mut c]);
        let key = ObjectKey::new(Kind::Namespace, "", "team");
        let after = tc.delete(&key, DeleteOptions::default()).unwrap();
        assert!(after.is_some(), "the namespace stays");
        assert_eq!(phase(&tc, "team").as_deref(), Some("Terminating"));
        tc.settle(&mut [&mut c]);
        assert!(tc.store.get(Kind::ReplicaSet, "team", "web").is_none());
        assert!(tc.store.get_pod("team", "p1").is_none());
        let p2 = tc.store.get_pod("team", "p2").expect("bound: terminating");
        assert!(p2.metadata.deletion_timestamp.is_some());
        assert!(tc.store.get_pod("other", "p3").is_some());
        assert_eq!(c.deletions, 3);
        // The bound pod is still terminating: the namespace waits for it, and nothing new
        // may be created in it.
        assert!(tc.store.get(Kind::Namespace, "", "team").is_some());
        let err = tc.create(pod("team", "late", None)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "pods \"late\" is forbidden: unable to create new content in namespace team because \
             it is being terminated"
        );
        // A second delete changes nothing.
        let again = tc.delete(&key, DeleteOptions::default()).unwrap().unwrap();
        assert_eq!(spec_finalizers(&again), ["kubernetes"]);
        // The kubelet removes the pod: the finalizer goes, and the namespace with it.
        let p2 = ObjectKey::new(Kind::Pod, "team", "p2");
        tc.delete(&p2, DeleteOptions::now()).unwrap();
        tc.settle(&mut [&mut c]);
        assert!(tc.store.get(Kind::Namespace, "", "team").is_none());
        assert!(c.terminating.is_empty());
        assert_eq!(c.next_wakeup(), None);
        // Creating in it again brings it back (kubeplane's implicit namespaces).
        tc.create(pod("team", "new", None)).unwrap();
        assert_eq!(phase(&tc, "team"), None);
    }

    #[test]
    fn a_namespace_with_another_finalizer_waits_for_it() {
        let mut tc = TestClient::new(1);
        let mut c = NamespaceController::new();
        setup(&mut tc);
        let mut ns = tc.store.get(Kind::Namespace, "", "team").unwrap().clone();
        ns.meta_mut().finalizers = Some(vec!["example.com/keep".into()]);
        tc.update(ns).unwrap();
        tc.settle(&mut [&mut c]);
        let key = ObjectKey::new(Kind::Namespace, "", "team");
        tc.delete(&key, DeleteOptions::default()).unwrap();
        tc.delete(
            &ObjectKey::new(Kind::Pod, "team", "p2"),
            DeleteOptions::now(),
        )
        .unwrap();
        tc.settle(&mut [&mut c]);
        let ns = tc.store.get(Kind::Namespace, "", "team").expect("held");
        assert!(spec_finalizers(ns).is_empty(), "ours is removed");
        assert_eq!(tc.store.list_namespace(Kind::Pod, "team").count(), 0);
        // The other party removes theirs: the namespace goes.
        let mut ns = ns.clone();
        ns.meta_mut().finalizers = None;
        tc.update(ns).unwrap();
        assert!(tc.store.get(Kind::Namespace, "", "team").is_none());
    }

    #[test]
    fn a_namespace_applied_with_a_deletion_timestamp_and_no_finalizer_goes_and_its_contents_after_it(
    ) {
        let mut tc = TestClient::new(1);
        let mut c = NamespaceController::new();
        setup(&mut tc);
        tc.settle(&mut [&mut c]);
        let mut ns = tc.store.get(Kind::Namespace, "", "team").unwrap().clone();
        let Object::Namespace(n) = &mut ns else {
            unreachable!()
        };
        let n = Arc::make_mut(n);
        n.metadata.deletion_timestamp = Some(Time(tc.store.clock().start()));
        n.metadata.resource_version = None;
        tc.update(Object::Namespace(Arc::new(Namespace::clone(n))))
            .unwrap();
        tc.settle(&mut [&mut c]);
        // Writing its phase was an update of a deleting object without finalizers: it went
        // (upstream's ShouldDeleteDuringUpdate), and its contents after it.
        assert!(tc.store.get(Kind::Namespace, "", "team").is_none());
        assert!(tc.store.get_pod("team", "p1").is_none());
        assert!(tc.store.get(Kind::ReplicaSet, "team", "web").is_none());
        let p2 = tc.store.get_pod("team", "p2").expect("bound: terminating");
        assert!(p2.metadata.deletion_timestamp.is_some());
        assert!(c.terminating.is_empty());
        assert_eq!(c.next_wakeup(), None);
    }
}

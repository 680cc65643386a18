//! The namespace controller (upstream `pkg/controller/namespace`): deletes the contents of a
//! namespace that is being deleted.
//!
//! Upstream, deleting a Namespace only sets its `deletionTimestamp` and phase `Terminating`;
//! the namespace controller deletes every namespaced object in it, resource by resource, waits
//! until they are gone (pods terminate gracefully), then removes the `kubernetes` finalizer
//! from `spec.finalizers`, and the API server deletes the Namespace.
//!
//! kubeplane's store has no finalizers: deleting a Namespace removes it at once. So this
//! controller deletes the contents *after* the Namespace is gone, when it sees the Deleted
//! event: every Deployment, ReplicaSet, PodDisruptionBudget, Pod and Lease in it, in that
//! order (the order of `Kind::ALL`; upstream's is discovery order), each with a plain delete
//! (pods gracefully; a pod already terminating is left alone). A Namespace that arrives with a
//! `deletionTimestamp` (an `apply` of one) is handled the upstream way: its contents are
//! deleted, and once none is left the Namespace itself is deleted (what removing the last
//! finalizer does). Not modelled: the `Terminating` phase and the status conditions
//! (`NamespaceDeletionContentFailure`, ...), and NamespaceLifecycle admission, which rejects
//! creations in a terminating namespace (kubeplane creates a missing namespace implicitly).

use std::collections::BTreeSet;

use kubeplane_api::WatchEvent;
use kubeplane_api::{Client, Component, DeleteOptions, EventType, Kind, Object, ObjectKey};
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

    /// Deletes every namespaced object in `ns`; returns how many are left (being deleted).
    fn delete_all_content(&mut self, ns: &str, client: &mut dyn Client) -> usize {
        let mut left = 0;
        for kind in Kind::ALL.into_iter().filter(|k| k.is_namespaced()) {
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

    /// Syncs one namespace: deletes its contents and, when it still exists with a
    /// `deletionTimestamp` and nothing is left in it, the namespace itself.
    fn sync(&mut self, ns: &str, client: &mut dyn Client) {
        let left = self.delete_all_content(ns, client);
        let Some(obj) = client.cache().get(Kind::Namespace, "", ns) else {
            self.terminating.remove(ns);
            return;
        };
        if obj.meta().deletion_timestamp.is_none() {
            self.terminating.remove(ns);
            return;
        }
        if left > 0 {
            self.terminating.insert(ns.to_string());
            return;
        }
        self.terminating.remove(ns);
        let opts = DeleteOptions::exactly(obj);
        let key = obj.key();
        let _ = client.delete(&key, opts);
    }
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
        Object::Pod(Arc::new(Pod {
            metadata: meta(ns, name),
            spec: Some(PodSpec {
                node_name: node.map(str::to_string),
                termination_grace_period_seconds: Some(30),
                ..Default::default()
            }),
            status: None,
        }))
    }

    fn setup(tc: &mut TestClient) {
        tc.create(pod("team", "p1", None)).unwrap();
        tc.create(pod("team", "p2", Some("n1"))).unwrap();
        tc.create(pod("other", "p3", None)).unwrap();
        let rs = ReplicaSet {
            metadata: meta("team", "web"),
            ..Default::default()
        };
        tc.create(Object::ReplicaSet(Arc::new(rs))).unwrap();
    }

    #[test]
    fn deleting_a_namespace_deletes_what_is_in_it() {
        let mut tc = TestClient::new(1);
        let mut c = NamespaceController::new();
        setup(&mut tc);
        tc.settle(&mut [&mut c]);
        let key = ObjectKey::new(Kind::Namespace, "", "team");
        tc.delete(&key, DeleteOptions::default()).unwrap();
        tc.settle(&mut [&mut c]);
        assert!(tc.store.get(Kind::ReplicaSet, "team", "web").is_none());
        assert!(tc.store.get_pod("team", "p1").is_none());
        let p2 = tc.store.get_pod("team", "p2").expect("bound: terminating");
        assert!(p2.metadata.deletion_timestamp.is_some());
        assert!(tc.store.get_pod("other", "p3").is_some());
        assert_eq!(c.deletions, 3);
        assert!(c.terminating.is_empty());
        assert_eq!(c.next_wakeup(), None);
    }

    #[test]
    fn a_namespace_with_a_deletion_timestamp_goes_once_it_is_empty() {
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
        // The bound pod is still terminating: the namespace waits for it.
        assert!(tc.store.get(Kind::Namespace, "", "team").is_some());
        assert!(c.terminating.contains("team"));
        // The kubelet removes it.
        let key = ObjectKey::new(Kind::Pod, "team", "p2");
        tc.delete(&key, DeleteOptions::now()).unwrap();
        tc.settle(&mut [&mut c]);
        assert!(tc.store.get(Kind::Namespace, "", "team").is_none());
        assert!(c.terminating.is_empty());
    }
}

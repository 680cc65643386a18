//! Components handle a relist the way upstream informers make them: the informer's
//! `replace` turns the differences into ordinary events, and a controller that missed changes
//! while its watch was down converges once it is given them.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubeplane_api::StoredReplicaSet;
use kubeplane_api::{Client, Component, DeleteOptions, Informer, Kind, Object, ObjectKey};
use kubeplane_controllers::replicaset::ReplicaSetController;
use kubeplane_registry::testing::TestClient;

fn replica_set(replicas: i32) -> Object {
    let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
    Object::ReplicaSet(Arc::new(StoredReplicaSet::from_k8s(ReplicaSet {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "c".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: None,
    })))
}

/// A runtime that delivers the server's events through an informer, as a remote one would.
struct Runtime {
    client: TestClient,
    informer: Informer,
    rsc: ReplicaSetController,
}

impl Runtime {
    fn new() -> Runtime {
        Runtime {
            client: TestClient::new(1),
            informer: Informer::new(),
            rsc: ReplicaSetController::new(),
        }
    }

    /// Delivers the server's pending events (without their old objects, as a watch sends
    /// them) and runs the controller until it has nothing left to do now.
    fn settle(&mut self) {
        for _ in 0..100 {
            let now = self.client.now;
            for mut ev in self.client.store.take_events() {
                ev.old = None;
                let ev = self.informer.apply(ev);
                self.rsc.observe(&ev, now);
            }
            if self.rsc.next_wakeup().is_some_and(|t| t <= now) {
                self.rsc.run(now, &mut self.client);
            } else if !self.client.store.has_events() {
                return;
            }
        }
        panic!("the controller did not settle");
    }

    /// Changes on the server that the watch never delivers (it was down).
    fn lose_events(&mut self) {
        self.client.store.take_events();
    }

    fn relist_pods(&mut self) {
        let now = self.client.now;
        let list: Vec<Object> = self.client.store.list(Kind::Pod).cloned().collect();
        let rv = self.client.store.resource_version();
        for ev in self.informer.replace(Kind::Pod, list, rv) {
            self.rsc.observe(&ev, now);
        }
    }

    fn pods(&self) -> usize {
        self.client.store.count(Kind::Pod)
    }
}

#[test]
fn a_replica_set_controller_replaces_a_pod_deleted_while_its_watch_was_down_after_a_relist() {
    let mut rt = Runtime::new();
    rt.client.create(replica_set(3)).unwrap();
    rt.settle();
    assert_eq!(rt.pods(), 3);

    let victim = rt.client.store.list(Kind::Pod).next().unwrap().key();
    rt.client.delete(&victim, DeleteOptions::now()).unwrap();
    rt.lose_events();
    rt.settle();
    assert_eq!(rt.pods(), 2, "without the deletion event nothing happens");

    rt.relist_pods();
    rt.settle();
    assert_eq!(
        rt.pods(),
        3,
        "the relist's Deleted event makes the controller replace it"
    );
    assert!(rt.client.store.get_key(&victim).is_none());
    let cached: Vec<ObjectKey> = kubeplane_api::Cache::list(&rt.informer, Kind::Pod)
        .map(Object::key)
        .collect();
    let stored: Vec<ObjectKey> = rt.client.store.list(Kind::Pod).map(Object::key).collect();
    assert_eq!(
        cached, stored,
        "the informer's cache matches the server after the relist"
    );
}

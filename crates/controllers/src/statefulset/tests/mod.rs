//! Tests of the StatefulSet controller: the upstream cases of `stateful_set_utils_test.go`
//! ([`utils`]) and of `stateful_set_control_test.go` ([`control`]), run through a
//! [`TestClient`] that plays the kubelet by writing pod statuses.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::{types, Client, DynamicObject, Kind, Object, ObjectKey, StoredPod};
use kubeplane_core::features::FeatureGates;
use kubeplane_registry::testing::TestClient;
use serde_json::{json, Value};

use super::{defaulted, StatefulSetController};

mod control;
mod explain;
mod pod_events;
mod utils;

/// A StatefulSet manifest `app=<name>` with one claim template `datadir`, the service
/// `governingsvc`, and `extra` merged into its spec.
pub(super) fn set_manifest(name: &str, replicas: i32, extra: &[(&str, Value)]) -> Value {
    let mut v = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {
            "replicas": replicas,
            "serviceName": "governingsvc",
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1"}]}
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "datadir"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}
            }]
        }
    });
    for (k, val) in extra {
        v["spec"][*k] = val.clone();
    }
    v
}

pub(super) fn typed_set(manifest: Value) -> StatefulSet {
    defaulted(serde_json::from_value(manifest).unwrap())
}

fn set_object(manifest: &Value) -> Object {
    let t = types::builtin("apps/v1", "StatefulSet").unwrap();
    Object::Other(Arc::new(DynamicObject::from_value(t, manifest).unwrap()))
}

/// A client and a controller with the v1.34 gates (`gates` set on top).
pub(super) struct Harness {
    pub(super) client: TestClient,
    pub(super) ssc: StatefulSetController,
}

impl Harness {
    pub(super) fn new(gates: &[(&str, bool)]) -> Harness {
        let mut features = FeatureGates::default();
        for (g, v) in gates {
            features.set(g, *v).unwrap();
        }
        Harness {
            client: TestClient::new(1),
            ssc: StatefulSetController::with_features(&features),
        }
    }

    pub(super) fn settle(&mut self) {
        self.client.settle(&mut [&mut self.ssc]);
    }

    pub(super) fn create(&mut self, manifest: &Value) {
        self.client.create(set_object(manifest)).unwrap();
        self.settle();
    }

    /// Replaces the set's spec with the manifest's (the stored status kept).
    pub(super) fn apply(&mut self, manifest: &Value) {
        let cur = self.stored(manifest["metadata"]["name"].as_str().unwrap());
        let mut obj = set_object(manifest);
        obj.meta_mut().resource_version = cur.meta().resource_version.clone();
        self.client.update(obj).unwrap();
        self.settle();
    }

    pub(super) fn stored(&self, name: &str) -> Object {
        let t = types::builtin("apps/v1", "StatefulSet").unwrap();
        self.client
            .store
            .get(Kind::Other(t), "default", name)
            .cloned()
            .unwrap()
    }

    pub(super) fn status(&self, name: &str) -> Value {
        self.stored(name).to_json()["status"].clone()
    }

    /// The set's pods by name (terminating ones included).
    pub(super) fn pod_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .client
            .store
            .pods()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        names.sort();
        names
    }

    pub(super) fn pod(&self, name: &str) -> Arc<kubeplane_api::StoredPod> {
        self.client.store.get_pod("default", name).cloned().unwrap()
    }

    /// The kubelet reports the pod `phase`, Ready when `ready`, since now.
    pub(super) fn report(&mut self, name: &str, phase: &str, ready: bool) {
        let now = self.client.clock().timestamp(self.client.now);
        let mut pod = StoredPod::clone(&self.pod(name));
        pod.set_status(Some(PodStatus {
            phase: Some(phase.into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                last_transition_time: Some(Time(now.0)),
                ..Default::default()
            }]),
            ..Default::default()
        }));
        self.client
            .update_status(Object::Pod(Arc::new(pod)))
            .unwrap();
        self.settle();
    }

    pub(super) fn ready(&mut self, name: &str) {
        self.report(name, "Running", true);
    }

    pub(super) fn delete_pod(&mut self, name: &str) {
        let key = ObjectKey::new(Kind::Pod, "default", name);
        self.client.delete(&key, Default::default()).unwrap();
        self.settle();
    }

    pub(super) fn objects_of(&self, kind: &str) -> Vec<Value> {
        let t = types::builtin(
            if kind == "ControllerRevision" {
                "apps/v1"
            } else {
                "v1"
            },
            kind,
        )
        .unwrap();
        self.client
            .store
            .list(Kind::Other(t))
            .map(|o| o.to_json())
            .collect()
    }

    pub(super) fn messages(&self, reason: &str) -> Vec<String> {
        self.client
            .events_with_reason(reason)
            .iter()
            .map(|e| e.message().to_string())
            .collect()
    }

    pub(super) fn advance(&mut self, secs: i64) {
        let until = self.client.now + kubeplane_core::time::SimDuration::from_secs(secs);
        self.client.run_until(until, &mut [&mut self.ssc]);
    }
}

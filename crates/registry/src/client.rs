//! [`ApiClient`]: the one implementation of [`Client`] over the in-process store.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kubeplane_api::{ApiError, Cache, Client, Clock, DeleteOptions, Kind, Object, ObjectKey};
use kubeplane_core::{EventRecord, SimTime};
use kubeplane_store::Store;

/// Where the events and explanation records of a run go.
pub trait Sink {
    fn event(&mut self, ev: EventRecord);
    fn record(&mut self, record: serde_json::Value);
}

/// A client of the in-process API at one instant: the store, the registry's rules, and the
/// sink for events and records.
pub struct ApiClient<'a> {
    pub store: &'a mut Store,
    pub now: SimTime,
    pub sink: &'a mut dyn Sink,
    pub explain: bool,
    /// Whether writes go through admission and validation (component unit tests build their
    /// pods complete and turn it off).
    pub admission: bool,
}

impl Client for ApiClient<'_> {
    fn cache(&self) -> &dyn Cache {
        self.store
    }

    fn clock(&self) -> Clock {
        self.store.clock()
    }

    fn get(&mut self, key: &ObjectKey) -> Result<Object, ApiError> {
        self.store
            .get_key(key)
            .cloned()
            .ok_or_else(|| ApiError::NotFound { key: key.clone() })
    }

    fn create(&mut self, obj: Object) -> Result<Object, ApiError> {
        let obj = if self.admission {
            crate::validation::admit_and_validate_create(obj, self.store)?
        } else {
            obj
        };
        self.store.create(obj, self.now)
    }

    fn update(&mut self, obj: Object) -> Result<Object, ApiError> {
        if self.admission {
            crate::validation::check_update(self.store.get_key(&obj.key()), &obj)?;
        }
        self.store.update(obj, self.now)
    }

    fn update_status(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.store.update_status(obj, self.now)
    }

    fn patch_pod_status(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        patch: &mut dyn FnMut(&mut PodStatus),
    ) -> Result<Object, ApiError> {
        let key = || ObjectKey::new(Kind::Pod, namespace, name);
        let Some(current) = self.store.get_pod(namespace, name) else {
            return Err(ApiError::NotFound { key: key() });
        };
        if !uid.is_empty() && current.metadata.uid.as_deref() != Some(uid) {
            // The UID precondition of the patch: the pod was deleted and created again.
            return Err(ApiError::Conflict { key: key() });
        }
        let mut p = Pod::clone(current);
        patch(p.status.get_or_insert_with(Default::default));
        // A patch applies to the current version: no resourceVersion precondition.
        p.metadata.resource_version = None;
        self.store.update_status(Object::Pod(Arc::new(p)), self.now)
    }

    fn delete(&mut self, key: &ObjectKey, opts: DeleteOptions) -> Result<Option<Object>, ApiError> {
        self.store.delete(key, &opts, self.now)
    }

    fn evict(&mut self, namespace: &str, name: &str, opts: DeleteOptions) -> Result<(), ApiError> {
        crate::eviction::evict(self.store, self.now, namespace, name, opts)
    }

    fn bind(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
    ) -> Result<Object, ApiError> {
        self.store.bind(namespace, name, uid, node, self.now)
    }

    fn record_event(&mut self, ev: EventRecord) {
        self.sink.event(ev);
    }

    fn explain(&self) -> bool {
        self.explain
    }

    fn emit_record(&mut self, record: serde_json::Value) {
        self.sink.record(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    struct Discard;
    impl Sink for Discard {
        fn event(&mut self, _: EventRecord) {}
        fn record(&mut self, _: serde_json::Value) {}
    }

    fn pod(name: &str) -> Object {
        Object::Pod(Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            // A pod the API server's validation accepts.
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                containers: vec![k8s_openapi::api::core::v1::Container {
                    name: "c".into(),
                    image: Some("pause".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    /// Runs `f` with an admitting client over an empty store.
    fn with_api(f: impl FnOnce(&mut ApiClient<'_>)) {
        let mut store = Store::new(1, jiff::Timestamp::UNIX_EPOCH);
        let mut sink = Discard;
        f(&mut ApiClient {
            store: &mut store,
            now: SimTime::ZERO,
            sink: &mut sink,
            explain: false,
            admission: true,
        });
    }

    #[test]
    fn a_pod_status_patch_applies_to_the_current_version_of_the_pod_with_that_uid() {
        with_api(|api| {
            let created = api.create(pod("p")).unwrap();
            let uid = created.uid().to_string();
            // A write after the caller's read: the patch still applies, to the newer version.
            let mut labelled = created.clone();
            labelled.meta_mut().labels = Some([("a".to_string(), "b".to_string())].into());
            api.update(labelled).unwrap();
            let patched = api
                .patch_pod_status("default", "p", &uid, &mut |s| {
                    s.phase = Some("Failed".into())
                })
                .unwrap();
            let p = patched.as_pod().unwrap();
            assert_eq!(p.status.as_ref().unwrap().phase.as_deref(), Some("Failed"));
            assert!(p.metadata.labels.is_some(), "the newer version was patched");
            // Another pod of the same name (another UID) is not patched.
            let err = api
                .patch_pod_status("default", "p", "other-uid", &mut |_| {})
                .unwrap_err();
            assert!(err.is_conflict());
            let missing = api
                .patch_pod_status("default", "q", &uid, &mut |_| {})
                .unwrap_err();
            assert!(missing.is_not_found());
        });
    }

    #[test]
    fn creates_go_through_admission() {
        with_api(|api| {
            let created = api.create(pod("p")).unwrap();
            let spec = created.as_pod().unwrap().spec.clone().unwrap();
            // Priority resolved, DefaultTolerationSeconds applied.
            assert_eq!(spec.priority, Some(0));
            assert_eq!(spec.tolerations.map(|t| t.len()), Some(2));
        });
    }
}

//! [`LiveClient`]: the [`Client`] the scheduler gets on a real cluster. Reads go to the
//! reflectors' [`Informer`]; API calls go through kube-rs, each made to completion (or to its
//! timeout) on the runtime's tokio runtime from the calling thread: the scheduling loop's
//! own calls (preemption's deletes and victims' status) and the worker threads' queued
//! bindings and status patches. Events are kept and handed to the event task after each run.
//!
//! A client whose `may_write` flag is down (the lease was lost) refuses every write with
//! `Unavailable`: no write after losing leadership.

use kubeplane_api::PodExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::api::{Api, DeleteParams, EvictParams, Patch, PatchParams, PostParams, Preconditions};
use kube::core::DynamicObject as KubeObject;
use kubeplane_api::{
    ApiError, Cache, Client, Clock, DeleteOptions, Informer, Kind, Object, ObjectKey,
    PropagationPolicy,
};
use kubeplane_core::EventRecord;
use serde_json::json;

use crate::convert::{api_error, api_resource};

/// How long one API call may take before it counts as failed (`Unavailable`).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The client over kube-rs.
pub struct LiveClient {
    pub(crate) kube: kube::Client,
    pub(crate) runtime: tokio::runtime::Handle,
    /// What the reflectors delivered (the lister view).
    pub(crate) informer: Informer,
    pub(crate) clock: Clock,
    /// Events recorded since they were last taken.
    pub(crate) events: Vec<EventRecord>,
    /// The status a pod status patch is computed from (the queued call's view of the pod);
    /// without it, the informer's pod, or the server's.
    pub(crate) base_status: Option<PodStatus>,
    /// Writes are allowed (this process leads, or does not elect).
    pub(crate) may_write: Arc<AtomicBool>,
}

impl LiveClient {
    pub fn new(
        kube: kube::Client,
        runtime: tokio::runtime::Handle,
        clock: Clock,
        may_write: Arc<AtomicBool>,
    ) -> LiveClient {
        LiveClient {
            kube,
            runtime,
            informer: Informer::new(),
            clock,
            events: Vec::new(),
            base_status: None,
            may_write,
        }
    }

    /// Runs one call to completion on the runtime, with the call timeout.
    fn call<T>(
        &self,
        key: &ObjectKey,
        fut: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ApiError> {
        match self
            .runtime
            .block_on(async { tokio::time::timeout(CALL_TIMEOUT, fut).await })
        {
            Ok(r) => r.map_err(|e| api_error(key, e)),
            Err(_) => Err(ApiError::Unavailable {
                message: format!("{key}: the API server did not answer within {CALL_TIMEOUT:?}"),
            }),
        }
    }

    fn check_write(&self) -> Result<(), ApiError> {
        if self.may_write.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(ApiError::Unavailable {
                message: "not the leader: writes stopped".into(),
            })
        }
    }

    fn dynamic(&self, key: &ObjectKey) -> Api<KubeObject> {
        let resource = api_resource(key.kind);
        if key.kind.is_namespaced() {
            Api::namespaced_with(self.kube.clone(), &key.namespace, &resource)
        } else {
            Api::all_with(self.kube.clone(), &resource)
        }
    }

    fn pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.kube.clone(), namespace)
    }

    fn decode(key: &ObjectKey, o: &impl serde::Serialize) -> Result<Object, ApiError> {
        let value = serde_json::to_value(o).map_err(|e| ApiError::Internal {
            message: e.to_string(),
        })?;
        Object::from_json(&value).map_err(|message| ApiError::Internal {
            message: format!("{key}: {message}"),
        })
    }

    fn encode(obj: &Object) -> Result<KubeObject, ApiError> {
        serde_json::from_value(obj.to_json()).map_err(|e| ApiError::BadRequest {
            message: e.to_string(),
        })
    }

    /// PUTs a Namespace to its `finalize` subresource; `None` when the server has none (404 or
    /// 405: `kubeplane serve` lets an update change `spec.finalizers` instead).
    fn finalize(
        &self,
        key: &ObjectKey,
        api: &Api<KubeObject>,
        body: &KubeObject,
    ) -> Option<Result<KubeObject, ApiError>> {
        let pp = PostParams::default();
        let call = api.replace_subresource("finalize", &key.name, &pp, body);
        let answer = self
            .runtime
            .block_on(async { tokio::time::timeout(CALL_TIMEOUT, call).await });
        match answer {
            Ok(Err(kube::Error::Api(s))) if s.code == 404 || s.code == 405 => None,
            Ok(r) => Some(r.map_err(|e| api_error(key, e))),
            Err(_) => Some(Err(ApiError::Unavailable {
                message: format!("{key}: the API server did not answer within {CALL_TIMEOUT:?}"),
            })),
        }
    }

    /// Whether `obj` is a Namespace whose `spec.finalizers` lack one the informer's copy has.
    fn drops_namespace_finalizers(&self, obj: &Object) -> bool {
        let Object::Namespace(new) = obj else {
            return false;
        };
        let finalizers = |n: &k8s_openapi::api::core::v1::Namespace| {
            n.spec
                .as_ref()
                .and_then(|s| s.finalizers.clone())
                .unwrap_or_default()
        };
        let Some(Object::Namespace(old)) = self.informer.get(Kind::Namespace, "", obj.name())
        else {
            return false;
        };
        let kept = finalizers(new);
        finalizers(old).iter().any(|f| !kept.contains(f))
    }

    /// Takes the events recorded since the last call.
    pub fn take_events(&mut self) -> Vec<EventRecord> {
        std::mem::take(&mut self.events)
    }
}

fn delete_params(opts: &DeleteOptions) -> DeleteParams {
    let preconditions = (opts.precondition_uid.is_some()
        || opts.precondition_resource_version.is_some())
    .then(|| Preconditions {
        uid: opts.precondition_uid.clone(),
        resource_version: opts.precondition_resource_version.clone(),
    });
    DeleteParams {
        grace_period_seconds: opts.grace_period_secs.map(|s| s.max(0) as u32),
        propagation_policy: opts.propagation_policy.map(|p| match p {
            PropagationPolicy::Orphan => kube::api::PropagationPolicy::Orphan,
            PropagationPolicy::Background => kube::api::PropagationPolicy::Background,
            PropagationPolicy::Foreground => kube::api::PropagationPolicy::Foreground,
        }),
        preconditions,
        ..DeleteParams::default()
    }
}

impl Client for LiveClient {
    fn cache(&self) -> &dyn Cache {
        &self.informer
    }

    fn clock(&self) -> Clock {
        self.clock
    }

    fn get(&mut self, key: &ObjectKey) -> Result<Object, ApiError> {
        let api = self.dynamic(key);
        let o = self.call(key, api.get(&key.name))?;
        Self::decode(key, &o)
    }

    fn create(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.check_write()?;
        let key = obj.key();
        let api = self.dynamic(&key);
        let body = Self::encode(&obj)?;
        let o = self.call(&key, api.create(&PostParams::default(), &body))?;
        Self::decode(&key, &o)
    }

    /// An update; one of a Namespace that drops entries of `spec.finalizers` is made on the
    /// `finalize` subresource, as upstream's namespace controller does (an update leaves them
    /// as they were), or as a plain update where the server has no such subresource.
    fn update(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.check_write()?;
        let key = obj.key();
        let api = self.dynamic(&key);
        let body = Self::encode(&obj)?;
        let pp = PostParams::default();
        if self.drops_namespace_finalizers(&obj) {
            if let Some(r) = self.finalize(&key, &api, &body) {
                return Self::decode(&key, &r?);
            }
        }
        let o = self.call(&key, api.replace(&key.name, &pp, &body))?;
        Self::decode(&key, &o)
    }

    fn update_status(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.check_write()?;
        let key = obj.key();
        let api = self.dynamic(&key);
        let body = Self::encode(&obj)?;
        let o = self.call(
            &key,
            api.replace_status(&key.name, &PostParams::default(), &body),
        )?;
        Self::decode(&key, &o)
    }

    fn patch_pod_status(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        patch: &mut dyn FnMut(&mut PodStatus),
    ) -> Result<Object, ApiError> {
        self.check_write()?;
        let key = ObjectKey::new(Kind::Pod, namespace, name);
        let base = self.base_status.take();
        let known = self
            .informer
            .get_pod(namespace, name)
            .filter(|p| uid.is_empty() || p.metadata.uid.as_deref() == Some(uid))
            .cloned();
        let old = match (base, &known) {
            (Some(s), _) => s,
            (None, Some(p)) => p.status_k8s().unwrap_or_default(),
            (None, None) => {
                let pods = self.pods(namespace);
                let p = self.call(&key, pods.get(name))?;
                p.status.unwrap_or_default()
            }
        };
        let mut new = old.clone();
        patch(&mut new);
        let Some(body) = crate::status_patch::status_patch(uid, &old, &new) else {
            return match known {
                Some(p) => Ok(Object::Pod(p)),
                None => self.get(&key),
            };
        };
        let pods = self.pods(namespace);
        let params = PatchParams::default();
        let p = self.call(
            &key,
            pods.patch_status(name, &params, &Patch::Strategic(&body)),
        )?;
        Ok(Object::Pod(Arc::new(p.into())))
    }

    fn delete(&mut self, key: &ObjectKey, opts: DeleteOptions) -> Result<Option<Object>, ApiError> {
        self.check_write()?;
        let api = self.dynamic(key);
        let params = delete_params(&opts);
        // Right: a Status, the object is gone. Left: the object, which is either still there
        // (graceful deletion, finalizers, a Terminating namespace) or gone: kube-apiserver
        // answers with the deleted object itself for the kinds whose storage sets
        // `ReturnDeletedObject` (pods among them). One marked for deletion is read again to
        // tell which.
        let Some(o) = self.call(key, api.delete(&key.name, &params))?.left() else {
            return Ok(None);
        };
        if o.metadata.deletion_timestamp.is_none() {
            return Ok(None);
        }
        match self.call(key, api.get_opt(&key.name))? {
            Some(now) if now.metadata.uid == o.metadata.uid => Self::decode(key, &now).map(Some),
            _ => Ok(None),
        }
    }

    fn evict(&mut self, namespace: &str, name: &str, opts: DeleteOptions) -> Result<(), ApiError> {
        self.check_write()?;
        let key = ObjectKey::new(Kind::Pod, namespace, name);
        let pods = self.pods(namespace);
        let params = EvictParams {
            delete_options: Some(delete_params(&opts)),
            post_options: PostParams::default(),
        };
        self.call(&key, pods.evict(name, &params)).map(|_| ())
    }

    /// POSTs a v1 Binding (the pod's name, namespace and UID; the target Node) to
    /// `pods/{name}/binding`. Returns the pod as the informer knows it, with the node set.
    fn bind(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
    ) -> Result<Object, ApiError> {
        self.check_write()?;
        let key = ObjectKey::new(Kind::Pod, namespace, name);
        let binding = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"kind": "Node", "name": node},
        });
        let pods = self.pods(namespace);
        self.call(
            &key,
            pods.create_subresource::<_, serde_json::Value>(
                "binding",
                name,
                &PostParams::default(),
                &binding,
            ),
        )?;
        let mut pod = self
            .informer
            .get_pod(namespace, name)
            .map(|p| (**p).clone())
            .unwrap_or_default();
        pod.set_node_name(Some(node.to_string()));
        Ok(Object::Pod(Arc::new(pod)))
    }

    fn update_scale(
        &mut self,
        key: &ObjectKey,
        replicas: i32,
        resource_version: Option<&str>,
    ) -> Result<Scale, ApiError> {
        self.check_write()?;
        let api = self.dynamic(key);
        let mut body = json!({"spec": {"replicas": replicas}});
        if let Some(rv) = resource_version {
            body["metadata"] = json!({"resourceVersion": rv});
        }
        let params = PatchParams::default();
        self.call(
            key,
            api.patch_scale(&key.name, &params, &Patch::Merge(&body)),
        )
    }

    fn record_event(&mut self, ev: EventRecord) {
        self.events.push(ev);
    }

    fn explain(&self) -> bool {
        false
    }

    fn emit_record(&mut self, _record: serde_json::Value) {}
}

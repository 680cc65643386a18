//! What kubeplane reads of a stored pod through accessors rather than through k8s-openapi's
//! field layout, so that the stored pod form can change without every reader changing with it
//! (issue 19's stored pod form; docs/performance/session-17.md, "the stored pod form, a plan
//! in steps").
//!
//! [`StoredPod`] is the pod as the store will keep it: k8s-openapi's `Pod` with its spec behind
//! an `Arc` (shared by every version of a pod and by every pod made from one template version)
//! and `spec.nodeName` kept outside that shared spec, so that binding a pod does not copy its
//! spec. A read of `spec.node_name` on a stored pod would therefore see nothing: every read of
//! a pod's node goes through [`PodExt::node_name`], implemented for both forms (the tidy test
//! forbids the field read outside this file). Its JSON is exactly k8s-openapi's `Pod`'s.
//!
//! The metadata's labels and ownerReferences are kept outside `metadata` the same way (behind
//! `Arc`s shared by the versions of a pod and by the pods of one template version; see
//! [`crate::pod_meta`]): `metadata.labels` and `metadata.owner_references` of a stored pod are
//! always `None`, and every read goes through [`StoredPod::labels`] and
//! [`StoredPod::owner_references`].

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::ser::SerializeStruct;

use crate::pod_meta::{Labels, PodMetaJson};
use crate::pod_status::StoredPodStatus;

/// Accessors of a pod that do not depend on how its spec is stored.
pub trait PodExt {
    /// `spec.nodeName` as written: `None` when unset, `Some("")` when set to the empty string
    /// (callers that treat the empty name as unbound filter it themselves, as upstream does).
    fn node_name(&self) -> Option<&str>;

    /// Sets `spec.nodeName` (creating an empty spec when the pod has none).
    fn set_node_name(&mut self, node: Option<String>);
}

impl PodExt for Pod {
    #[inline]
    fn node_name(&self) -> Option<&str> {
        self.spec.as_ref().and_then(|s| s.node_name.as_deref())
    }

    fn set_node_name(&mut self, node: Option<String>) {
        self.spec.get_or_insert_with(Default::default).node_name = node;
    }
}

/// A pod as kubeplane stores it: k8s-openapi's `Pod` with the spec shared by `Arc` and
/// `spec.nodeName` outside the shared spec.
#[derive(Clone, Debug, Default)]
pub struct StoredPod {
    /// The metadata without its labels and ownerReferences (always `None` here): those are
    /// read through [`StoredPod::labels`] and [`StoredPod::owner_references`] and written
    /// through their `set_`/`_mut` accessors.
    pub metadata: ObjectMeta,
    /// The spec without `nodeName` (always `None` inside; see [`StoredPod::node_name`]),
    /// shared by every version of the pod and by the pods of one template version.
    pub spec: Option<Arc<PodSpec>>,
    /// The status in its stored form (compact when it fits): read through the accessors or
    /// [`StoredPod::status_k8s`], written through [`StoredPod::set_status`] or
    /// [`StoredPod::update_status`].
    status: Option<StoredPodStatus>,
    node_name: Option<String>,
    /// `metadata.labels`, shared by the versions of a pod and the pods of a template version.
    pub(crate) labels: Option<Arc<Labels>>,
    /// `metadata.ownerReferences`, shared the same way.
    pub(crate) owner_references: Option<Arc<Vec<OwnerReference>>>,
}

impl StoredPod {
    /// The stored form of a k8s-openapi pod (its `spec.nodeName` moved out of the spec).
    pub fn from_k8s(pod: Pod) -> StoredPod {
        let Pod {
            mut metadata,
            spec,
            status,
        } = pod;
        let (spec, node_name) = match spec {
            Some(mut spec) => {
                let node = spec.node_name.take();
                (Some(Arc::new(spec)), node)
            }
            None => (None, None),
        };
        let (labels, owner_references) = take_shared_meta(&mut metadata);
        StoredPod {
            metadata,
            spec,
            status: status.map(StoredPodStatus::from_k8s),
            node_name,
            labels,
            owner_references,
        }
    }

    /// A pod with a spec that may already be shared (a template's): `spec` must have no
    /// `nodeName`, which is `node_name` here.
    pub fn with_shared_spec(
        mut metadata: ObjectMeta,
        spec: Option<Arc<PodSpec>>,
        status: Option<PodStatus>,
        node_name: Option<String>,
    ) -> StoredPod {
        debug_assert!(
            spec.as_ref().is_none_or(|s| s.node_name.is_none()),
            "a shared pod spec has no nodeName"
        );
        let (labels, owner_references) = take_shared_meta(&mut metadata);
        StoredPod {
            metadata,
            spec,
            status: status.map(StoredPodStatus::from_k8s),
            node_name,
            labels,
            owner_references,
        }
    }

    /// The k8s-openapi pod (the spec copied, `spec.nodeName` put back in it): for the edges.
    pub fn to_k8s(&self) -> Pod {
        Pod {
            metadata: self.metadata_k8s(),
            spec: self.full_spec(),
            status: self.status_k8s(),
        }
    }

    /// The status in its stored form, for the accessors (`phase`, `condition_status`, ...).
    #[inline]
    pub fn status(&self) -> Option<&StoredPodStatus> {
        self.status.as_ref()
    }

    /// `status.phase`.
    #[inline]
    pub fn phase(&self) -> Option<&str> {
        self.status.as_ref().and_then(|s| s.phase())
    }

    /// k8s-openapi's status (rebuilt): for the cold readers and the edges.
    pub fn status_k8s(&self) -> Option<PodStatus> {
        self.status.as_ref().map(StoredPodStatus::to_k8s)
    }

    /// Replaces the status.
    pub fn set_status(&mut self, status: Option<PodStatus>) {
        self.status = status.map(StoredPodStatus::from_k8s);
    }

    /// Replaces the status with another pod's stored one.
    pub fn set_stored_status(&mut self, status: Option<StoredPodStatus>) {
        self.status = status;
    }

    /// Edits the status in k8s-openapi's form (an empty one when the pod has none), then
    /// stores it again.
    pub fn update_status<R>(&mut self, edit: impl FnOnce(&mut PodStatus) -> R) -> R {
        let mut status = self.status_k8s().unwrap_or_default();
        let r = edit(&mut status);
        self.status = Some(StoredPodStatus::from_k8s(status));
        r
    }

    /// The spec with `nodeName` in its place (a copy).
    fn full_spec(&self) -> Option<PodSpec> {
        let node_name = self.node_name.clone();
        match &self.spec {
            Some(spec) => Some(PodSpec {
                node_name,
                ..PodSpec::clone(spec)
            }),
            None if node_name.is_some() => Some(PodSpec {
                node_name,
                ..PodSpec::default()
            }),
            None => None,
        }
    }

    /// The spec to edit (copied first if it is shared). Setting `node_name` in it is a bug:
    /// use [`PodExt::set_node_name`].
    pub fn spec_mut(&mut self) -> &mut PodSpec {
        Arc::make_mut(self.spec.get_or_insert_with(Default::default))
    }

    /// The spec, `None` when the pod has none (for readers that want `Option<&PodSpec>`).
    pub fn spec(&self) -> Option<&PodSpec> {
        self.spec.as_deref()
    }
}

/// Moves the labels and ownerReferences out of a pod's metadata into their shared form.
fn take_shared_meta(
    metadata: &mut ObjectMeta,
) -> (Option<Arc<Labels>>, Option<Arc<Vec<OwnerReference>>>) {
    (
        metadata.labels.take().map(Arc::new),
        metadata.owner_references.take().map(Arc::new),
    )
}

impl PodExt for StoredPod {
    #[inline]
    fn node_name(&self) -> Option<&str> {
        debug_assert!(
            self.spec.as_ref().is_none_or(|s| s.node_name.is_none()),
            "a stored pod's shared spec has no nodeName"
        );
        self.node_name.as_deref()
    }

    fn set_node_name(&mut self, node: Option<String>) {
        if node.is_some() && self.spec.is_none() {
            // As k8s-openapi's pod would: a nodeName makes a spec.
            self.spec = Some(Arc::default());
        }
        self.node_name = node;
    }
}

impl From<Pod> for StoredPod {
    fn from(pod: Pod) -> StoredPod {
        StoredPod::from_k8s(pod)
    }
}

impl From<&StoredPod> for Pod {
    fn from(pod: &StoredPod) -> Pod {
        pod.to_k8s()
    }
}

impl PartialEq for StoredPod {
    fn eq(&self, other: &StoredPod) -> bool {
        let spec_eq = match (&self.spec, &other.spec) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
            (None, None) => true,
            _ => false,
        };
        spec_eq
            && self.node_name == other.node_name
            && self.shared_meta_eq(other)
            && self.metadata == other.metadata
            && self.status == other.status
    }
}

impl serde::Serialize for StoredPod {
    /// Exactly k8s-openapi's `Pod` JSON: apiVersion, kind, metadata, spec (with nodeName in
    /// its place), status.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let spec = self.spec.is_some() || self.node_name.is_some();
        let fields = 3 + usize::from(spec) + usize::from(self.status.is_some());
        let mut state = s.serialize_struct("Pod", fields)?;
        state.serialize_field("apiVersion", "v1")?;
        state.serialize_field("kind", "Pod")?;
        state.serialize_field("metadata", &PodMetaJson(self))?;
        match (&self.spec, &self.node_name) {
            (Some(shared), None) => state.serialize_field("spec", &**shared)?,
            (_, Some(_)) => state.serialize_field("spec", &self.full_spec())?,
            (None, None) => {}
        }
        if let Some(status) = &self.status {
            state.serialize_field("status", &status.to_k8s())?;
        }
        state.end()
    }
}

impl<'de> serde::Deserialize<'de> for StoredPod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Pod::deserialize(d).map(StoredPod::from_k8s)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn node_name_reads_and_writes_spec_node_name() {
        let mut pod = Pod::default();
        assert_eq!(pod.node_name(), None);
        pod.set_node_name(Some("n1".into()));
        assert_eq!(pod.node_name(), Some("n1"));
        assert_eq!(pod.spec.as_ref().unwrap().node_name.as_deref(), Some("n1"));
        pod.spec = Some(PodSpec {
            node_name: Some(String::new()),
            ..Default::default()
        });
        assert_eq!(
            pod.node_name(),
            Some(""),
            "the empty name is kept as written"
        );
        pod.set_node_name(None);
        assert_eq!(pod.node_name(), None);
        assert!(pod.spec.is_some());
    }

    /// The manifest read as k8s-openapi's `Pod` and as a [`StoredPod`], checked to write the
    /// same JSON.
    pub(crate) fn read_both(m: &serde_json::Value) -> (Pod, StoredPod) {
        crate::replica_set::read_both(m)
    }

    fn manifest(node: Option<&str>) -> serde_json::Value {
        let mut spec = json!({"containers": [{"name": "c", "image": "i",
            "resources": {"requests": {"cpu": "100m"}}}],
            "priority": 5, "schedulerName": "default-scheduler",
            "tolerations": [{"key": "k", "operator": "Exists"}]});
        if let Some(n) = node {
            spec["nodeName"] = n.into();
        }
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "u1",
                "labels": {"app": "a"}},
            "spec": spec,
            "status": {"phase": "Pending"}})
    }

    #[test]
    fn a_stored_pod_writes_and_reads_exactly_the_json_of_k8s_openapis_pod() {
        let cases = [
            manifest(None),
            manifest(Some("n1")),
            manifest(Some("")),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"nodeName": "n2"}}),
        ];
        for m in cases {
            let (plain, stored) = read_both(&m);
            assert_eq!(stored.node_name(), plain.node_name(), "{m}");
            assert_eq!(stored.to_k8s(), plain, "{m}");
            assert_eq!(StoredPod::from_k8s(plain), stored, "{m}");
        }
    }

    #[test]
    fn the_shared_spec_has_no_node_name_and_binding_keeps_it_shared() {
        let stored: StoredPod = serde_json::from_value(manifest(Some("n1"))).unwrap();
        let spec = stored.spec.as_ref().unwrap();
        assert_eq!(
            spec.node_name, None,
            "nodeName lives outside the shared spec"
        );
        assert_eq!(stored.node_name(), Some("n1"));
        let mut rebound = stored.clone();
        rebound.set_node_name(Some("n2".into()));
        assert!(Arc::ptr_eq(rebound.spec.as_ref().unwrap(), spec));
        assert_ne!(rebound, stored);
        assert_eq!(rebound.to_k8s().node_name(), Some("n2"));
    }

    #[test]
    fn spec_mut_copies_a_shared_spec_only() {
        let a: StoredPod = serde_json::from_value(manifest(None)).unwrap();
        let mut b = a.clone();
        b.spec_mut().priority = Some(7);
        assert_eq!(a.spec.as_ref().unwrap().priority, Some(5), "a is untouched");
        assert_eq!(b.spec().unwrap().priority, Some(7));
        let before = Arc::as_ptr(b.spec.as_ref().unwrap());
        b.spec_mut().priority = Some(8);
        assert_eq!(
            Arc::as_ptr(b.spec.as_ref().unwrap()),
            before,
            "no copy when unshared"
        );
    }

    #[test]
    fn equality_compares_contents_when_specs_are_not_shared() {
        let a: StoredPod = serde_json::from_value(manifest(None)).unwrap();
        let b: StoredPod = serde_json::from_value(manifest(None)).unwrap();
        assert!(!Arc::ptr_eq(
            a.spec.as_ref().unwrap(),
            b.spec.as_ref().unwrap()
        ));
        assert_eq!(a, b);
        let mut c = b.clone();
        c.spec_mut().priority = None;
        assert_ne!(a, c);
    }

    #[test]
    fn setting_a_node_on_a_pod_without_spec_makes_one() {
        let mut p = StoredPod::default();
        p.set_node_name(Some("n1".into()));
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["spec"]["nodeName"], json!("n1"));
        let mut k = Pod::default();
        k.set_node_name(Some("n1".into()));
        assert_eq!(v, serde_json::to_value(&k).unwrap());
    }

    #[test]
    fn a_running_pods_status_is_stored_compact_and_written_as_k8s_openapis() {
        let mut m = manifest(Some("n1"));
        m["status"] = json!({"phase": "Running", "hostIP": "10.0.0.1",
            "hostIPs": [{"ip": "10.0.0.1"}], "podIP": "10.244.0.2", "podIPs": [{"ip": "10.244.0.2"}],
            "startTime": "2026-01-01T00:00:05Z",
            "conditions": [{"type": "Ready", "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:05Z"}],
            "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true,
                "restartCount": 0, "started": true,
                "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}}}]});
        let plain: Pod = serde_json::from_value(m.clone()).unwrap();
        let mut stored: StoredPod = serde_json::from_value(m).unwrap();
        assert!(stored.status().unwrap().is_compact());
        assert_eq!(
            serde_json::to_string(&stored).unwrap(),
            serde_json::to_string(&plain).unwrap()
        );
        assert_eq!(stored.to_k8s(), plain);
        assert_eq!(stored.phase(), Some("Running"));
        stored.update_status(|s| s.nominated_node_name = Some("n2".into()));
        assert!(!stored.status().unwrap().is_compact());
        assert_eq!(stored.status().unwrap().nominated_node_name(), Some("n2"));
        stored.update_status(|s| s.nominated_node_name = None);
        assert_eq!(stored.to_k8s(), plain);
        stored.set_status(None);
        assert_eq!(stored.status(), None);
    }

    #[test]
    fn the_stored_form_is_smaller_than_the_k8s_pod() {
        let (stored, pod) = (std::mem::size_of::<StoredPod>(), std::mem::size_of::<Pod>());
        eprintln!("size_of StoredPod {stored} bytes, Pod {pod} bytes");
        assert!(
            stored < pod / 2,
            "StoredPod {stored} bytes, Pod {pod} bytes"
        );
    }
}

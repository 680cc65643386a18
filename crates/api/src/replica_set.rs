//! The stored ReplicaSet (issue 19): k8s-openapi's `ReplicaSet` with its pod template's spec
//! behind an `Arc`, shared by every version of the ReplicaSet (a status write copies the
//! metadata and the status, not the template's several-KB `PodSpec`) and handed as is to the
//! pods the ReplicaSet controller makes. The template's metadata stays inline. Its JSON is
//! exactly k8s-openapi's `ReplicaSet`'s, field for field and in the same order.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::ser::SerializeStruct;

/// A pod template with its spec shared by `Arc` (k8s-openapi's `PodTemplateSpec` otherwise).
#[derive(Clone, Debug, Default)]
pub struct StoredPodTemplateSpec {
    pub metadata: Option<ObjectMeta>,
    /// Shared by every version of the owning object: edit through [`Self::spec_mut`].
    pub spec: Option<Arc<PodSpec>>,
}

impl StoredPodTemplateSpec {
    pub fn from_k8s(t: PodTemplateSpec) -> StoredPodTemplateSpec {
        StoredPodTemplateSpec {
            metadata: t.metadata,
            spec: t.spec.map(Arc::new),
        }
    }

    /// k8s-openapi's template (the spec copied): for the edges and the cold readers.
    pub fn to_k8s(&self) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: self.metadata.clone(),
            spec: self.spec.as_deref().cloned(),
        }
    }

    /// The spec, `None` when the template has none.
    pub fn spec(&self) -> Option<&PodSpec> {
        self.spec.as_deref()
    }

    /// The spec to edit (copied first if it is shared; an empty one made when there is none).
    pub fn spec_mut(&mut self) -> &mut PodSpec {
        Arc::make_mut(self.spec.get_or_insert_with(Default::default))
    }
}

impl PartialEq for StoredPodTemplateSpec {
    fn eq(&self, other: &StoredPodTemplateSpec) -> bool {
        let spec_eq = match (&self.spec, &other.spec) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
            (None, None) => true,
            _ => false,
        };
        spec_eq && self.metadata == other.metadata
    }
}

impl From<PodTemplateSpec> for StoredPodTemplateSpec {
    fn from(t: PodTemplateSpec) -> StoredPodTemplateSpec {
        StoredPodTemplateSpec::from_k8s(t)
    }
}

impl serde::Serialize for StoredPodTemplateSpec {
    /// Exactly k8s-openapi's `PodTemplateSpec` JSON.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = usize::from(self.metadata.is_some()) + usize::from(self.spec.is_some());
        let mut state = s.serialize_struct("PodTemplateSpec", fields)?;
        if let Some(m) = &self.metadata {
            state.serialize_field("metadata", m)?;
        }
        if let Some(spec) = &self.spec {
            state.serialize_field("spec", &**spec)?;
        }
        state.end()
    }
}

impl<'de> serde::Deserialize<'de> for StoredPodTemplateSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        PodTemplateSpec::deserialize(d).map(StoredPodTemplateSpec::from_k8s)
    }
}

/// A pod template where it is, in either form: k8s-openapi's `PodTemplateSpec` (a
/// Deployment's) or the stored one whose spec is shared (a ReplicaSet's).
#[derive(Clone, Copy, Debug, Default)]
pub struct TemplateRef<'a> {
    pub metadata: Option<&'a ObjectMeta>,
    pub spec: Option<&'a PodSpec>,
}

impl<'a> From<&'a PodTemplateSpec> for TemplateRef<'a> {
    fn from(t: &'a PodTemplateSpec) -> TemplateRef<'a> {
        TemplateRef {
            metadata: t.metadata.as_ref(),
            spec: t.spec.as_ref(),
        }
    }
}

impl<'a> From<&'a StoredPodTemplateSpec> for TemplateRef<'a> {
    fn from(t: &'a StoredPodTemplateSpec) -> TemplateRef<'a> {
        TemplateRef {
            metadata: t.metadata.as_ref(),
            spec: t.spec.as_deref(),
        }
    }
}

/// k8s-openapi's `ReplicaSetSpec` with the template in its stored form.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoredReplicaSetSpec {
    pub min_ready_seconds: Option<i32>,
    pub replicas: Option<i32>,
    pub selector: LabelSelector,
    pub template: Option<StoredPodTemplateSpec>,
}

impl StoredReplicaSetSpec {
    pub fn from_k8s(s: ReplicaSetSpec) -> StoredReplicaSetSpec {
        StoredReplicaSetSpec {
            min_ready_seconds: s.min_ready_seconds,
            replicas: s.replicas,
            selector: s.selector,
            template: s.template.map(StoredPodTemplateSpec::from_k8s),
        }
    }

    pub fn to_k8s(&self) -> ReplicaSetSpec {
        ReplicaSetSpec {
            min_ready_seconds: self.min_ready_seconds,
            replicas: self.replicas,
            selector: self.selector.clone(),
            template: self.template.as_ref().map(StoredPodTemplateSpec::to_k8s),
        }
    }
}

impl serde::Serialize for StoredReplicaSetSpec {
    /// Exactly k8s-openapi's `ReplicaSetSpec` JSON.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = 1
            + usize::from(self.min_ready_seconds.is_some())
            + usize::from(self.replicas.is_some())
            + usize::from(self.template.is_some());
        let mut state = s.serialize_struct("ReplicaSetSpec", fields)?;
        if let Some(v) = &self.min_ready_seconds {
            state.serialize_field("minReadySeconds", v)?;
        }
        if let Some(v) = &self.replicas {
            state.serialize_field("replicas", v)?;
        }
        state.serialize_field("selector", &self.selector)?;
        if let Some(v) = &self.template {
            state.serialize_field("template", v)?;
        }
        state.end()
    }
}

/// A ReplicaSet as kubeplane stores it: k8s-openapi's with the template's spec shared by `Arc`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoredReplicaSet {
    pub metadata: ObjectMeta,
    pub spec: Option<StoredReplicaSetSpec>,
    pub status: Option<ReplicaSetStatus>,
}

impl StoredReplicaSet {
    pub fn from_k8s(rs: ReplicaSet) -> StoredReplicaSet {
        StoredReplicaSet {
            metadata: rs.metadata,
            spec: rs.spec.map(StoredReplicaSetSpec::from_k8s),
            status: rs.status,
        }
    }

    /// k8s-openapi's ReplicaSet (the template's spec copied): for the edges.
    pub fn to_k8s(&self) -> ReplicaSet {
        ReplicaSet {
            metadata: self.metadata.clone(),
            spec: self.spec.as_ref().map(StoredReplicaSetSpec::to_k8s),
            status: self.status.clone(),
        }
    }

    /// The template, `None` when the ReplicaSet has no spec or its spec no template.
    pub fn template(&self) -> Option<&StoredPodTemplateSpec> {
        self.spec.as_ref()?.template.as_ref()
    }

    /// The template's spec (shared by every version of the ReplicaSet).
    pub fn template_spec(&self) -> Option<&Arc<PodSpec>> {
        self.template()?.spec.as_ref()
    }
}

impl From<ReplicaSet> for StoredReplicaSet {
    fn from(rs: ReplicaSet) -> StoredReplicaSet {
        StoredReplicaSet::from_k8s(rs)
    }
}

impl From<&StoredReplicaSet> for ReplicaSet {
    fn from(rs: &StoredReplicaSet) -> ReplicaSet {
        rs.to_k8s()
    }
}

impl serde::Serialize for StoredReplicaSet {
    /// Exactly k8s-openapi's `ReplicaSet` JSON: apiVersion, kind, metadata, spec, status.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (spec, status) = (self.spec.as_ref(), self.status.as_ref());
        serialize_apps_object(s, "ReplicaSet", &self.metadata, spec, status)
    }
}

/// An `apps/v1` object of `kind` as k8s-openapi writes it: apiVersion, kind, metadata, then
/// spec and status when set (the stored ReplicaSet's and Deployment's JSON).
pub(crate) fn serialize_apps_object<S, Spec, Status>(
    s: S,
    kind: &'static str,
    metadata: &ObjectMeta,
    spec: Option<&Spec>,
    status: Option<&Status>,
) -> Result<S::Ok, S::Error>
where
    S: serde::Serializer,
    Spec: serde::Serialize,
    Status: serde::Serialize,
{
    let fields = 3 + usize::from(spec.is_some()) + usize::from(status.is_some());
    let mut state = s.serialize_struct(kind, fields)?;
    state.serialize_field("apiVersion", "apps/v1")?;
    state.serialize_field("kind", kind)?;
    state.serialize_field("metadata", metadata)?;
    if let Some(spec) = spec {
        state.serialize_field("spec", spec)?;
    }
    if let Some(status) = status {
        state.serialize_field("status", status)?;
    }
    state.end()
}

impl<'de> serde::Deserialize<'de> for StoredReplicaSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ReplicaSet::deserialize(d).map(StoredReplicaSet::from_k8s)
    }
}

/// For the stored forms' tests: the manifest `m` read as k8s-openapi's `K` and as the stored
/// `S`, checked to write the same JSON text.
#[cfg(test)]
pub(crate) fn read_both<K, S>(m: &serde_json::Value) -> (K, S)
where
    K: serde::de::DeserializeOwned + serde::Serialize,
    S: serde::de::DeserializeOwned + serde::Serialize,
{
    let plain: K = serde_json::from_value(m.clone()).unwrap();
    let stored: S = serde_json::from_value(m.clone()).unwrap();
    assert_eq!(
        serde_json::to_string(&stored).unwrap(),
        serde_json::to_string(&plain).unwrap(),
        "{m}"
    );
    (plain, stored)
}

/// [`read_both`], and the same JSON value, and each form converts to the other.
#[cfg(test)]
pub(crate) fn assert_stored_json_is_k8s<K, S>(m: &serde_json::Value)
where
    K: serde::de::DeserializeOwned + serde::Serialize + PartialEq + std::fmt::Debug,
    K: for<'a> From<&'a S>,
    S: serde::de::DeserializeOwned + serde::Serialize + PartialEq + std::fmt::Debug + From<K>,
{
    let (plain, stored) = read_both::<K, S>(m);
    assert_eq!(
        serde_json::to_value(&stored).unwrap(),
        serde_json::to_value(&plain).unwrap(),
        "{m}"
    );
    assert_eq!(K::from(&stored), plain, "{m}");
    assert_eq!(S::from(plain), stored, "{m}");
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn manifest() -> serde_json::Value {
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-1", "namespace": "default", "uid": "u1",
                "labels": {"app": "web"}, "annotations": {"deployment.kubernetes.io/revision": "1"}},
            "spec": {"replicas": 3, "minReadySeconds": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "i",
                        "resources": {"requests": {"cpu": "100m"}}}]}}},
            "status": {"replicas": 3, "readyReplicas": 2, "observedGeneration": 1}})
    }

    #[test]
    fn a_stored_replica_set_writes_and_reads_exactly_k8s_openapis_json() {
        let cases = [
            manifest(),
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "bare"}}),
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "e"},
                "spec": {"selector": {}, "template": {}}}),
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "e"},
                "spec": {"selector": {}, "template": {"spec": {"containers": []}}}}),
        ];
        for m in cases {
            assert_stored_json_is_k8s::<ReplicaSet, StoredReplicaSet>(&m);
        }
    }

    #[test]
    fn a_status_write_shares_the_template_spec() {
        let a: StoredReplicaSet = serde_json::from_value(manifest()).unwrap();
        let mut b = a.clone();
        b.status.as_mut().unwrap().ready_replicas = Some(3);
        assert!(Arc::ptr_eq(
            a.template_spec().unwrap(),
            b.template_spec().unwrap()
        ));
        assert_ne!(a, b);
        let c: StoredReplicaSet = serde_json::from_value(manifest()).unwrap();
        assert_eq!(a, c, "equal by contents when not shared");
        let mut d = c.clone();
        d.spec
            .as_mut()
            .unwrap()
            .template
            .as_mut()
            .unwrap()
            .spec_mut()
            .priority = Some(1);
        assert_ne!(c, d);
        assert_eq!(a, c, "c is untouched");
    }
}

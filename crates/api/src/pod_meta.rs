//! A stored pod's labels and ownerReferences, kept outside its `metadata` behind `Arc`s (issue
//! 19; docs/performance/session-20.md, "A design for the pod's metadata shared per template").
//!
//! Every pod of a ReplicaSet's template version carries the same labels and the same controller
//! reference, and every write of a pod (the binding, the agents' start, the NotReady mark, the
//! deletion) copied both with the rest of the object: a B-tree leaf of 544 B and an
//! ownerReference block with its strings, about 650 B per pod version. Shared, a new version
//! costs two reference counts. Writers go through [`StoredPod::labels_mut`] and
//! [`StoredPod::owner_references_mut`], which copy a shared map or list first (copy on write),
//! or replace them whole through the `set_` accessors.
//!
//! `Object::meta()` keeps returning k8s-openapi's `&ObjectMeta` for every kind (a hundred
//! readers of names, namespaces, timestamps and finalizers stay as they are); for a pod it is
//! the metadata without these two fields, so the generic readers of labels and owner
//! references use `Object::labels()` and `Object::owner_references()`. The JSON is exactly
//! k8s-openapi's `ObjectMeta`'s: [`PodMetaJson`] writes its fields in its order with the
//! shared two in their places.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::ser::SerializeStruct;

use crate::pod::StoredPod;

/// A pod's labels.
pub type Labels = BTreeMap<String, String>;

impl StoredPod {
    /// `metadata.labels`.
    #[inline]
    pub fn labels(&self) -> Option<&Labels> {
        self.labels.as_deref()
    }

    /// `metadata.labels` as shared (for a writer that hands the same map to another pod).
    #[inline]
    pub fn shared_labels(&self) -> Option<&Arc<Labels>> {
        self.labels.as_ref()
    }

    /// The labels to edit (an empty map when the pod has none; copied first if shared).
    pub fn labels_mut(&mut self) -> &mut Labels {
        Arc::make_mut(self.labels.get_or_insert_with(Default::default))
    }

    /// Replaces `metadata.labels`.
    pub fn set_labels(&mut self, labels: Option<Labels>) {
        self.labels = labels.map(Arc::new);
    }

    /// Replaces `metadata.labels` with a shared map.
    pub fn set_shared_labels(&mut self, labels: Option<Arc<Labels>>) {
        self.labels = labels;
    }

    /// `metadata.ownerReferences`.
    #[inline]
    pub fn owner_references(&self) -> Option<&Vec<OwnerReference>> {
        self.owner_references.as_deref()
    }

    /// `metadata.ownerReferences` as shared.
    #[inline]
    pub fn shared_owner_references(&self) -> Option<&Arc<Vec<OwnerReference>>> {
        self.owner_references.as_ref()
    }

    /// The owner references to edit (an empty list when the pod has none; copied first if
    /// shared).
    pub fn owner_references_mut(&mut self) -> &mut Vec<OwnerReference> {
        Arc::make_mut(self.owner_references.get_or_insert_with(Default::default))
    }

    /// Replaces `metadata.ownerReferences`.
    pub fn set_owner_references(&mut self, refs: Option<Vec<OwnerReference>>) {
        self.owner_references = refs.map(Arc::new);
    }

    /// Replaces `metadata.ownerReferences` with a shared list.
    pub fn set_shared_owner_references(&mut self, refs: Option<Arc<Vec<OwnerReference>>>) {
        self.owner_references = refs;
    }

    /// The pod's labels and owner references set to shared ones (the pods of one template
    /// version: see the ReplicaSet controller's pod control).
    pub fn with_shared_meta(
        mut self,
        labels: Option<Arc<Labels>>,
        owner_references: Option<Arc<Vec<OwnerReference>>>,
    ) -> StoredPod {
        self.labels = labels;
        self.owner_references = owner_references;
        self
    }

    /// k8s-openapi's metadata (a copy, the labels and owner references in their places).
    pub fn metadata_k8s(&self) -> ObjectMeta {
        ObjectMeta {
            labels: self.labels().cloned(),
            owner_references: self.owner_references().cloned(),
            ..self.metadata.clone()
        }
    }

    /// Whether the labels and owner references are equal (shared ones by pointer first).
    pub(crate) fn shared_meta_eq(&self, other: &StoredPod) -> bool {
        fn eq<T: PartialEq>(a: &Option<Arc<T>>, b: &Option<Arc<T>>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
                (None, None) => true,
                _ => false,
            }
        }
        eq(&self.labels, &other.labels) && eq(&self.owner_references, &other.owner_references)
    }
}

/// A stored pod's metadata written as k8s-openapi's `ObjectMeta` (the same fields, order and
/// omissions; `ObjectMeta::serialize` in k8s-openapi's `object_meta.rs`).
pub(crate) struct PodMetaJson<'a>(pub(crate) &'a StoredPod);

impl serde::Serialize for PodMetaJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let pod = self.0;
        let m = &pod.metadata;
        // A write through `metadata.labels` (or `Object::meta_mut`) on a stored pod is a bug:
        // it would be lost here, so it stops the run rather than change the output.
        assert!(
            m.labels.is_none() && m.owner_references.is_none(),
            "a stored pod's labels and ownerReferences live outside its metadata"
        );
        let (labels, refs) = (pod.labels(), pod.owner_references());
        let n = usize::from(m.annotations.is_some())
            + usize::from(m.creation_timestamp.is_some())
            + usize::from(m.deletion_grace_period_seconds.is_some())
            + usize::from(m.deletion_timestamp.is_some())
            + usize::from(m.finalizers.is_some())
            + usize::from(m.generate_name.is_some())
            + usize::from(m.generation.is_some())
            + usize::from(labels.is_some())
            + usize::from(m.managed_fields.is_some())
            + usize::from(m.name.is_some())
            + usize::from(m.namespace.is_some())
            + usize::from(refs.is_some())
            + usize::from(m.resource_version.is_some())
            + usize::from(m.self_link.is_some())
            + usize::from(m.uid.is_some());
        let mut state = s.serialize_struct("ObjectMeta", n)?;
        macro_rules! field {
            ($name:literal, $value:expr) => {
                if let Some(value) = $value {
                    state.serialize_field($name, value)?;
                }
            };
        }
        field!("annotations", &m.annotations);
        field!("creationTimestamp", &m.creation_timestamp);
        field!(
            "deletionGracePeriodSeconds",
            &m.deletion_grace_period_seconds
        );
        field!("deletionTimestamp", &m.deletion_timestamp);
        field!("finalizers", &m.finalizers);
        field!("generateName", &m.generate_name);
        field!("generation", &m.generation);
        field!("labels", labels);
        field!("managedFields", &m.managed_fields);
        field!("name", &m.name);
        field!("namespace", &m.namespace);
        field!("ownerReferences", refs);
        field!("resourceVersion", &m.resource_version);
        field!("selfLink", &m.self_link);
        field!("uid", &m.uid);
        state.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::pod::PodExt;

    fn full_meta() -> serde_json::Value {
        json!({"annotations": {"a": "1"}, "creationTimestamp": "2026-01-01T00:00:00Z",
            "deletionGracePeriodSeconds": 30, "deletionTimestamp": "2026-01-01T00:01:00Z",
            "finalizers": ["f"], "generateName": "web-", "generation": 2,
            "labels": {"app": "web", "pod-template-hash": "abc"},
            "managedFields": [{"manager": "m", "operation": "Update"}],
            "name": "web-x", "namespace": "default",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                "uid": "u0", "controller": true, "blockOwnerDeletion": true}],
            "resourceVersion": "7", "selfLink": "/x", "uid": "u1"})
    }

    #[test]
    fn the_metadata_is_written_and_read_as_k8s_openapis() {
        let mut cases = vec![full_meta(), json!({"name": "bare"}), json!({})];
        // Every field alone, and the full metadata without each field.
        for (k, v) in full_meta().as_object().unwrap() {
            let mut alone = serde_json::Map::new();
            alone.insert(k.clone(), v.clone());
            cases.push(serde_json::Value::Object(alone));
            let mut without = full_meta();
            without.as_object_mut().unwrap().remove(k);
            cases.push(without);
        }
        cases.push(json!({"name": "p", "labels": {}, "ownerReferences": []}));
        for meta in cases {
            let m = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta});
            let (plain, stored) = crate::pod::tests::read_both(&m);
            assert_eq!(stored.metadata.labels, None, "{m}");
            assert_eq!(stored.metadata.owner_references, None, "{m}");
            assert_eq!(stored.labels(), plain.metadata.labels.as_ref(), "{m}");
            assert_eq!(
                stored.owner_references(),
                plain.metadata.owner_references.as_ref(),
                "{m}"
            );
            assert_eq!(stored.metadata_k8s(), plain.metadata, "{m}");
            assert_eq!(stored.to_k8s(), plain, "{m}");
            assert_eq!(StoredPod::from_k8s(plain), stored, "{m}");
        }
    }

    #[test]
    fn versions_share_the_labels_and_owner_references_until_one_writes() {
        let m = json!({"apiVersion": "v1", "kind": "Pod", "metadata": full_meta()});
        let a: StoredPod = serde_json::from_value(m).unwrap();
        let mut b = a.clone();
        b.set_node_name(Some("n1".into()));
        assert!(Arc::ptr_eq(
            a.shared_labels().unwrap(),
            b.shared_labels().unwrap()
        ));
        assert!(Arc::ptr_eq(
            a.shared_owner_references().unwrap(),
            b.shared_owner_references().unwrap()
        ));
        b.labels_mut().insert("zone".into(), "z1".into());
        b.owner_references_mut().clear();
        assert_eq!(a.labels().unwrap().len(), 2, "a is untouched");
        assert_eq!(a.owner_references().unwrap().len(), 1);
        assert_eq!(b.labels().unwrap()["zone"], "z1");
        assert_ne!(a, b);
        let before = Arc::as_ptr(b.shared_labels().unwrap());
        b.labels_mut().remove("zone");
        assert_eq!(
            Arc::as_ptr(b.shared_labels().unwrap()),
            before,
            "no copy when unshared"
        );
        let v = serde_json::to_value(&b).unwrap();
        assert_eq!(v["metadata"]["ownerReferences"], json!([]));
        b.set_owner_references(None);
        b.set_labels(None);
        let v = serde_json::to_value(&b).unwrap();
        assert_eq!(v["metadata"].get("labels"), None);
        assert_eq!(v["metadata"].get("ownerReferences"), None);
    }

    #[test]
    fn pods_given_one_template_versions_maps_share_them_and_compare_equal() {
        let labels = Arc::new(Labels::from([("app".to_string(), "web".to_string())]));
        let refs = Arc::new(vec![OwnerReference {
            name: "web".into(),
            uid: "u0".into(),
            controller: Some(true),
            ..Default::default()
        }]);
        let make = |name: &str| {
            let meta = ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            };
            StoredPod::with_shared_spec(meta, None, None, None)
                .with_shared_meta(Some(Arc::clone(&labels)), Some(Arc::clone(&refs)))
        };
        let (a, b) = (make("a"), make("b"));
        assert!(Arc::ptr_eq(a.shared_labels().unwrap(), &labels));
        assert!(Arc::ptr_eq(b.shared_owner_references().unwrap(), &refs));
        let copy = StoredPod::from_k8s(a.to_k8s());
        assert!(!Arc::ptr_eq(copy.shared_labels().unwrap(), &labels));
        assert_eq!(copy, a, "equal by content when not shared");
    }

    #[test]
    #[should_panic(expected = "live outside its metadata")]
    fn a_label_written_into_the_metadata_is_caught_when_written_out() {
        let mut p = StoredPod::default();
        p.metadata.labels = Some(Labels::new());
        let _ = serde_json::to_string(&p);
    }
}

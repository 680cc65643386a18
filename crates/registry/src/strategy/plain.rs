//! The kinds kubeplane stores without simulating them ([`Kind::Other`]): plain API semantics.
//! A kind with a status subresource keeps its stored `status` on an update of the main
//! resource, and keeps everything but `status` on an update of the status subresource (the
//! generic shape of upstream's strategies); the workload kinds whose upstream strategies track
//! `metadata.generation` start at 1 and move on every `spec` change. Custom resources start at
//! generation 1, moved by any change but metadata, and but status when their definition
//! enables the status subresource.
//!
//! [`Kind::Other`]: kubeplane_api::Kind::Other

use std::sync::Arc;

use kubeplane_api::DynamicObject;

/// The resources (plural, group) of the stored-only kinds that have a `status` subresource
/// in Kubernetes v1.34.
const STATUS_SUBRESOURCE: &[(&str, &str)] = &[
    ("daemonsets", "apps"),
    ("statefulsets", "apps"),
    ("jobs", "batch"),
    ("cronjobs", "batch"),
    ("horizontalpodautoscalers", "autoscaling"),
    ("persistentvolumes", ""),
    ("persistentvolumeclaims", ""),
    ("replicationcontrollers", ""),
    ("resourcequotas", ""),
    ("services", ""),
    ("certificatesigningrequests", "certificates.k8s.io"),
    ("flowschemas", "flowcontrol.apiserver.k8s.io"),
    (
        "prioritylevelconfigurations",
        "flowcontrol.apiserver.k8s.io",
    ),
    ("ingresses", "networking.k8s.io"),
    ("servicecidrs", "networking.k8s.io"),
    ("volumeattachments", "storage.k8s.io"),
    (
        "validatingadmissionpolicies",
        "admissionregistration.k8s.io",
    ),
    ("customresourcedefinitions", "apiextensions.k8s.io"),
    ("apiservices", "apiregistration.k8s.io"),
    ("resourceclaims", "resource.k8s.io"),
];

/// The stored-only kinds whose strategies set `metadata.generation` to 1 on create and bump
/// it when the spec changes.
const TRACKS_GENERATION: &[(&str, &str)] = &[
    ("daemonsets", "apps"),
    ("statefulsets", "apps"),
    ("jobs", "batch"),
    ("cronjobs", "batch"),
    ("replicationcontrollers", ""),
    ("customresourcedefinitions", "apiextensions.k8s.io"),
];

fn listed(list: &[(&str, &str)], o: &DynamicObject) -> bool {
    list.contains(&(o.type_.plural, o.type_.group))
}

/// Whether the object's kind has a status subresource.
pub fn has_status(o: &DynamicObject) -> bool {
    listed(STATUS_SUBRESOURCE, o) || o.type_.status_subresource
}

/// Whether a stored-only resource type has a status subresource (what discovery lists).
pub fn type_has_status(t: &kubeplane_api::types::ResourceType) -> bool {
    STATUS_SUBRESOURCE.contains(&(t.plural, t.group)) || t.status_subresource
}

/// Whether the object is a custom resource (its type is not a built-in one).
fn is_custom(o: &DynamicObject) -> bool {
    kubeplane_api::types::builtin_index(o.type_).is_none()
}

/// `PrepareForCreate`: generation 1 for the kinds that track it (custom resources always do).
pub fn prepare_for_create(o: &mut Arc<DynamicObject>) {
    if (listed(TRACKS_GENERATION, o) || is_custom(o)) && o.metadata.generation.is_none() {
        Arc::make_mut(o).metadata.generation = Some(1);
    }
}

/// `PrepareForUpdate` of the main resource: the stored status is kept (for a kind with a
/// status subresource), and a spec change moves the generation of the kinds that track it.
pub fn prepare_for_update(old: &DynamicObject, new: &mut Arc<DynamicObject>) {
    if has_status(old) && new.field("status") != old.field("status") {
        let n = Arc::make_mut(new);
        match old.field("status") {
            Some(status) => n.fields.insert("status".into(), status.clone()),
            None => n.fields.remove("status"),
        };
    }
    // A custom resource moves on any change but metadata (and but status when its
    // definition enables the status subresource: the stored status is kept above), as
    // upstream's customresource strategy does.
    let changed = if is_custom(old) {
        new.fields != old.fields
    } else {
        listed(TRACKS_GENERATION, old) && new.field("spec") != old.field("spec")
    };
    if changed {
        let generation = old.metadata.generation.unwrap_or(1) + 1;
        Arc::make_mut(new).metadata.generation = Some(generation);
    }
}

/// `PrepareForUpdate` of the status subresource: everything but `status` is the stored
/// object's (labels and annotations included, as upstream's status strategies reset them).
/// A kind without a status subresource has no such update; kubeplane treats it as a plain
/// update of the whole object.
pub fn prepare_for_status_update(old: &DynamicObject, new: &mut Arc<DynamicObject>) {
    if !has_status(old) {
        return;
    }
    let status = new.field("status").cloned();
    let mut kept = old.clone();
    match status {
        Some(s) => kept.fields.insert("status".into(), s),
        None => kept.fields.remove("status"),
    };
    kept.metadata.resource_version = new.metadata.resource_version.clone();
    *new = Arc::new(kept);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(api_version: &str, kind: &str, spec: i64, status: i64) -> Arc<DynamicObject> {
        let t = kubeplane_api::types::builtin(api_version, kind).unwrap();
        let v = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"},
                       "spec": {"n": spec}, "status": {"n": status}});
        Arc::new(DynamicObject::from_value(t, &v).unwrap())
    }

    #[test]
    fn a_main_update_keeps_the_stored_status_and_a_spec_change_moves_the_generation() {
        let mut old = object("apps/v1", "StatefulSet", 1, 1);
        prepare_for_create(&mut old);
        assert_eq!(old.metadata.generation, Some(1));
        let mut new = object("apps/v1", "StatefulSet", 2, 9);
        prepare_for_update(&old, &mut new);
        assert_eq!(new.field("status"), Some(&json!({"n": 1})));
        assert_eq!(new.metadata.generation, Some(2));
    }

    #[test]
    fn a_status_update_keeps_everything_but_the_status() {
        let old = object("batch/v1", "Job", 1, 1);
        let mut new = object("batch/v1", "Job", 5, 7);
        prepare_for_status_update(&old, &mut new);
        assert_eq!(new.field("spec"), Some(&json!({"n": 1})));
        assert_eq!(new.field("status"), Some(&json!({"n": 7})));
    }

    #[test]
    fn a_custom_resource_starts_at_generation_one_and_moves_on_any_change_but_metadata() {
        let t = kubeplane_api::types::intern(&kubeplane_api::types::CustomType {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            short_names: Vec::new(),
            status_subresource: false,
        });
        let widget = |size: i64, label: &str| {
            let v = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                           "metadata": {"name": "w", "labels": {"l": label}},
                           "spec": {"size": size}, "status": {"ready": size}});
            Arc::new(DynamicObject::from_value(t, &v).unwrap())
        };
        let mut old = widget(1, "a");
        prepare_for_create(&mut old);
        assert_eq!(old.metadata.generation, Some(1));
        let mut relabelled = widget(1, "b");
        prepare_for_update(&old, &mut relabelled);
        assert_eq!(
            relabelled.metadata.generation, None,
            "the stored one is kept"
        );
        let mut resized = widget(2, "a");
        prepare_for_update(&old, &mut resized);
        assert_eq!(resized.metadata.generation, Some(2));
        assert_eq!(
            resized.field("status"),
            Some(&json!({"ready": 2})),
            "no status subresource: the status is written with the object"
        );
    }

    #[test]
    fn a_kind_without_status_subresource_or_generation_is_stored_as_sent() {
        let old = object("v1", "ConfigMap", 1, 1);
        let mut created = old.clone();
        prepare_for_create(&mut created);
        assert_eq!(created.metadata.generation, None);
        let mut new = object("v1", "ConfigMap", 2, 2);
        prepare_for_update(&old, &mut new);
        assert_eq!(new.field("status"), Some(&json!({"n": 2})));
        assert_eq!(new.metadata.generation, None);
    }
}

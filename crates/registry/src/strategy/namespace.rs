//! The Namespace strategy (upstream `pkg/registry/core/namespace/strategy.go`), and the
//! namespaces kubeplane creates when an object names one that does not exist yet.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::Object;

/// The label every namespace carries with its own name (upstream `v1.LabelMetadataName`).
pub const LABEL_METADATA_NAME: &str = "kubernetes.io/metadata.name";

/// `namespaceStrategy.PrepareForCreate`: the `kubernetes.io/metadata.name` label, unless the
/// namespace brings one.
pub fn prepare_for_create(ns: &mut Arc<Namespace>) {
    let has_label = ns
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(LABEL_METADATA_NAME));
    if !has_label {
        let ns = Arc::make_mut(ns);
        let name = ns.metadata.name.clone().unwrap_or_default();
        ns.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(LABEL_METADATA_NAME.into(), name);
    }
}

/// `namespaceStrategy.PrepareForUpdate`: the stored status is kept.
pub fn prepare_for_update(old: &Namespace, new: &mut Arc<Namespace>) {
    if new.status != old.status {
        Arc::make_mut(new).status.clone_from(&old.status);
    }
}

/// `namespaceStatusStrategy.PrepareForUpdate`: the stored spec is kept.
pub fn prepare_for_status_update(old: &Namespace, new: &mut Arc<Namespace>) {
    if new.spec != old.spec {
        Arc::make_mut(new).spec.clone_from(&old.spec);
    }
}

/// The namespace created when an object names one that does not exist (kubeplane creates
/// namespaces implicitly; upstream's NamespaceLifecycle admission refuses the object).
pub fn implicit(name: &str) -> Object {
    Object::Namespace(Arc::new(Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some([(LABEL_METADATA_NAME.to_string(), name.to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_namespace_is_labelled_with_its_name_unless_it_brings_the_label() {
        let mut plain = Arc::new(Namespace::default());
        Arc::make_mut(&mut plain).metadata.name = Some("team".into());
        prepare_for_create(&mut plain);
        assert_eq!(
            plain.metadata.labels.as_ref().unwrap()[LABEL_METADATA_NAME],
            "team"
        );
        let mut labelled = plain.clone();
        Arc::make_mut(&mut labelled)
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(LABEL_METADATA_NAME.into(), "other".into());
        prepare_for_create(&mut labelled);
        assert_eq!(
            labelled.metadata.labels.as_ref().unwrap()[LABEL_METADATA_NAME],
            "other"
        );
    }
}

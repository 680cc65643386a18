//! The NamespaceLifecycle admission plugin (upstream
//! `plugin/pkg/admission/namespace/lifecycle`): nothing new in a namespace that is being
//! terminated, and the namespaces the cluster needs may not be deleted.
//!
//! Upstream also refuses creates in a namespace that does not exist; kubeplane creates such a
//! namespace implicitly (`Store::create`), as scenarios rely on.

use kubeplane_api::{ApiError, Kind, Object, ObjectKey};

/// The namespaces that may not be deleted (upstream's immortal namespaces).
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Refuses the create of a namespaced object in a namespace that is being terminated
/// (deletionTimestamp set or phase Terminating).
/// `namespace` is the stored Namespace of the object, if any.
pub fn check_create(obj: &Object, namespace: Option<&Object>) -> Result<(), ApiError> {
    let kind = obj.kind();
    if !kind.is_namespaced() {
        return Ok(());
    }
    let ns = obj.namespace();
    let Some(Object::Namespace(namespace)) = namespace else {
        return Ok(());
    };
    let phase = namespace.status.as_ref().and_then(|s| s.phase.as_deref());
    if namespace.metadata.deletion_timestamp.is_none() && phase != Some("Terminating") {
        return Ok(());
    }
    let name = match obj.name() {
        "" => obj.meta().generate_name.as_deref().unwrap_or(""),
        name => name,
    };
    Err(ApiError::Forbidden {
        message: format!(
            "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because \
             it is being terminated",
            kind.group_resource()
        ),
    })
}

/// Refuses the delete of an immortal namespace.
pub fn check_delete(key: &ObjectKey) -> Result<(), ApiError> {
    if key.kind != Kind::Namespace || !IMMORTAL_NAMESPACES.contains(&key.name.as_str()) {
        return Ok(());
    }
    Err(ApiError::Forbidden {
        message: format!(
            "namespaces \"{}\" is forbidden: this namespace may not be deleted",
            key.name
        ),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    use super::*;

    fn pod(ns: &str) -> Object {
        Object::Pod(Arc::new(
            Pod {
                metadata: ObjectMeta {
                    name: Some("p".into()),
                    namespace: Some(ns.into()),
                    ..Default::default()
                },
                ..Default::default()
            }
            .into(),
        ))
    }

    fn namespace(name: &str, terminating: bool) -> Object {
        Object::Namespace(Arc::new(Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                deletion_timestamp: terminating.then_some(Time(jiff::Timestamp::UNIX_EPOCH)),
                ..Default::default()
            },
            ..Default::default()
        }))
    }

    #[test]
    fn a_create_in_a_terminating_namespace_is_forbidden_and_elsewhere_allowed() {
        let err = check_create(&pod("team"), Some(&namespace("team", true))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "pods \"p\" is forbidden: unable to create new content in namespace team because it \
             is being terminated"
        );
        assert_eq!(err.code(), 403);
        // An active namespace, and one that does not exist yet (created implicitly).
        assert!(check_create(&pod("other"), Some(&namespace("other", false))).is_ok());
        assert!(check_create(&pod("default"), None).is_ok());
    }

    #[test]
    fn the_immortal_namespaces_may_not_be_deleted() {
        let key = |n: &str| ObjectKey::new(Kind::Namespace, "", n);
        let err = check_delete(&key("kube-system")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "namespaces \"kube-system\" is forbidden: this namespace may not be deleted"
        );
        assert!(check_delete(&key("team")).is_ok());
    }
}

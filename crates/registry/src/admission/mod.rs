//! What the API server does to an object on create before it is stored: the admission plugins
//! kube-apiserver enables by default that matter to scheduling, and the pod strategy's defaults.

pub mod default_toleration_seconds;
pub mod namespace_lifecycle;
pub mod pod_topology_labels;
pub mod priority;

use std::sync::Arc;

use kubeplane_api::{ApiError, Cache, Kind, Object, ObjectKey};

pub use default_toleration_seconds::default_toleration_seconds;
pub use priority::{admit_priority, apply_match_label_keys, SYSTEM_PRIORITY_CLASSES};

/// Runs the create-time admission chain on `obj` (only pods are changed): Priority, then
/// DefaultTolerationSeconds, then the pod strategy's matchLabelKeys merge.
pub fn admit_create(obj: Object, cache: &dyn Cache) -> Result<Object, ApiError> {
    let Object::Pod(mut pod) = obj else {
        return Ok(obj);
    };
    // Changed in place when the caller handed over the only reference (the pod is not moved
    // out of its allocation and into a new one).
    let p = Arc::make_mut(&mut pod);
    if let Err(message) = admit_priority(p, cache) {
        return Err(ApiError::Invalid {
            key: ObjectKey::new(
                Kind::Pod,
                p.metadata.namespace.as_deref().unwrap_or("default"),
                p.metadata.name.as_deref().unwrap_or(""),
            ),
            message,
        });
    }
    default_toleration_seconds(p);
    apply_match_label_keys(p);
    Ok(Object::Pod(pod))
}

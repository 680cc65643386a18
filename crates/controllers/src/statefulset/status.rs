//! The status write (upstream `stateful_set_status_updater.go`): the computed status through
//! the status subresource, retried on a conflict with a freshly read set.
//!
//! A StatefulSet is stored as a [`DynamicObject`]: the status replaces the `status` field of
//! the object as it was stored (not of the defaulted copy the controller reads), so the spec
//! is written back exactly as the user gave it.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::StatefulSetStatus;
use kubeplane_api::{ApiError, Client, DynamicObject, Kind, Object, ObjectKey};

/// Zero counts are left out, as Go's `omitempty` leaves them out (`availableReplicas` and
/// `replicas` have none and are always written).
fn wire(status: &StatefulSetStatus) -> serde_json::Value {
    let mut s = status.clone();
    let nz = |v: Option<i32>| v.filter(|&n| n != 0);
    s.ready_replicas = nz(s.ready_replicas);
    s.current_replicas = nz(s.current_replicas);
    s.updated_replicas = nz(s.updated_replicas);
    s.observed_generation = s.observed_generation.filter(|&g| g != 0);
    s.available_replicas = Some(s.available_replicas.unwrap_or(0));
    s.current_revision = s.current_revision.filter(|r| !r.is_empty());
    s.update_revision = s.update_revision.filter(|r| !r.is_empty());
    serde_json::to_value(s).unwrap_or_default()
}

/// Writes `status` as the set's status (upstream `UpdateStatefulSetStatus`: up to five tries,
/// each after a conflict on a fresh copy).
pub(super) fn update_status(
    client: &mut dyn Client,
    stored: &Arc<DynamicObject>,
    status: &StatefulSetStatus,
) -> Result<(), String> {
    let value = wire(status);
    let key = ObjectKey::new(
        Kind::Other(stored.type_),
        stored.metadata.namespace.as_deref().unwrap_or("default"),
        stored.metadata.name.as_deref().unwrap_or_default(),
    );
    let mut attempt = DynamicObject::clone(stored);
    let mut last = String::new();
    for _ in 0..5 {
        attempt.fields.insert("status".into(), value.clone());
        match client.update_status(Object::Other(Arc::new(attempt.clone()))) {
            Ok(_) => return Ok(()),
            Err(e @ ApiError::Conflict { .. }) => last = e.to_string(),
            Err(e) => return Err(e.to_string()),
        }
        match client.get(&key) {
            Ok(Object::Other(fresh)) => attempt = DynamicObject::clone(&fresh),
            Ok(_) | Err(_) => return Err(format!("error getting updated StatefulSet {key}")),
        }
    }
    Err(last)
}

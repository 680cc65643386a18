//! The API server's rules per kind, in the shape of upstream's registry strategies
//! (`pkg/registry/<group>/<kind>/strategy.go`) and the generic steps around them
//! (`staging/src/k8s.io/apiserver/pkg/registry/rest/{create,update,delete}.go`).
//!
//! Every function here is pure: it takes the objects (the stored one, the one sent) and the
//! time, and returns or adjusts objects. Nothing reads a store; the clients
//! ([`crate::ApiClient`] over the simulator's store, [`crate::StorageClient`] over
//! `kubeplane-storage`) look the stored object up, apply these functions, and write the result
//! with their backend's plain operations.
//!
//! - Create ([`before_create`]): the namespace (`default` when none is given, none for a
//!   cluster-scoped kind), creationTimestamp, then the kind's `PrepareForCreate` (generation 1
//!   for the kinds that track it, a namespace's `kubernetes.io/metadata.name` label). Names from
//!   `generateName` ([`generate_name_prefix`]) and the UID come from the backend's seeded source.
//! - Update of the main resource ([`prepare_for_update`]) and of the status subresource
//!   ([`prepare_for_status_update`]): what the kind keeps from the stored object and when its
//!   generation moves, then the immutable fields ([`validate_update`]) and what no update may
//!   change (`rest.BeforeUpdate`: uid, creationTimestamp, a set deletionTimestamp).
//! - Delete ([`before_delete`]): the preconditions, then whether the object goes at once or
//!   becomes Terminating (`rest.BeforeDelete` with the kind's `CheckGracefulDelete`).

pub mod deployment;
pub mod namespace;
pub mod node;
pub mod plain;
pub mod pod;
pub mod poddisruptionbudget;
pub mod replicaset;
pub mod scale;
pub mod service;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::sync::Arc;

use kubeplane_api::{ApiError, Object};

/// The message of a create with neither a name nor a generateName.
pub const MESSAGE_NAME_REQUIRED: &str =
    "metadata.name: Required value: name or generateName is required";

/// The prefix a nameless object's name is generated from (its generateName); `None` for an
/// object with a name. Invalid when the object has neither. The backend appends a suffix from
/// its seeded source until the name is free.
pub fn generate_name_prefix(obj: &Object) -> Result<Option<String>, ApiError> {
    if !obj.name().is_empty() {
        return Ok(None);
    }
    match obj.meta().generate_name.as_deref() {
        Some(prefix) if !prefix.is_empty() => Ok(Some(prefix.to_string())),
        _ => Err(ApiError::Invalid {
            key: obj.key(),
            message: MESSAGE_NAME_REQUIRED.into(),
        }),
    }
}

/// Sets the namespace an object is stored under: the one it names, `default` when it names
/// none, and none for a cluster-scoped kind.
pub fn set_namespace(obj: &mut Object) {
    if obj.kind().is_namespaced() {
        let ns = obj.namespace().to_string();
        obj.meta_mut().namespace = Some(ns);
    } else if obj.meta().namespace.is_some() {
        obj.meta_mut().namespace = None;
    }
}

/// `rest.BeforeCreate` after the name and namespace: creationTimestamp (`now`, unless the
/// object brings one, as the simulator's initial state does), then the kind's
/// `PrepareForCreate`. The UID and resourceVersion are the backend's.
pub fn before_create(obj: &mut Object, now: Time) {
    let meta = obj.meta_mut();
    if meta.creation_timestamp.is_none() {
        meta.creation_timestamp = Some(now);
    }
    match obj {
        Object::Deployment(_) | Object::ReplicaSet(_) | Object::PodDisruptionBudget(_) => {
            // Every kind that tracks its spec's generation starts at 1 (each strategy's
            // PrepareForCreate).
            let meta = obj.meta_mut();
            if meta.generation.is_none() {
                meta.generation = Some(1);
            }
        }
        Object::Namespace(ns) => namespace::prepare_for_create(ns),
        Object::Other(o) => {
            if service::is_defaulted(o) {
                let d = Arc::make_mut(o);
                service::set_defaults(d);
                service::prepare_for_create(d);
            }
            plain::prepare_for_create(o)
        }
        _ => {}
    }
}

/// The kind's `PrepareForUpdate` for the main resource (the stored status is kept; a spec
/// change bumps the generation of the kinds that track it), then [`validate_update`] and
/// [`before_update`].
pub fn prepare_for_update(old: &Object, new: &mut Object) -> Result<(), ApiError> {
    match (old, &mut *new) {
        (Object::Pod(o), Object::Pod(n)) => pod::prepare_for_update(o, n),
        (Object::Node(o), Object::Node(n)) => node::prepare_for_update(o, n),
        (Object::Namespace(o), Object::Namespace(n)) => namespace::prepare_for_update(o, n),
        (Object::Deployment(o), Object::Deployment(n)) => deployment::prepare_for_update(o, n),
        (Object::ReplicaSet(o), Object::ReplicaSet(n)) => replicaset::prepare_for_update(o, n),
        (Object::PodDisruptionBudget(o), Object::PodDisruptionBudget(n)) => {
            poddisruptionbudget::prepare_for_update(o, n)
        }
        (Object::Other(o), Object::Other(n)) => {
            if service::is_defaulted(n) {
                let d = Arc::make_mut(n);
                service::set_defaults(d);
                service::prepare_for_update(o, d)?;
            }
            plain::prepare_for_update(o, n)
        }
        // PriorityClasses and Leases have no status subresource and no generation.
        _ => {}
    }
    validate_update(old, new)?;
    before_update(old, new);
    Ok(())
}

/// The kind's status strategy `PrepareForUpdate` (the stored spec is kept, and what else the
/// kind's status strategy keeps), then [`validate_update`] and [`before_update`].
pub fn prepare_for_status_update(old: &Object, new: &mut Object) -> Result<(), ApiError> {
    match (old, &mut *new) {
        (Object::Pod(o), Object::Pod(n)) => pod::prepare_for_status_update(o, n),
        (Object::Node(o), Object::Node(n)) => node::prepare_for_status_update(o, n),
        (Object::Namespace(o), Object::Namespace(n)) => namespace::prepare_for_status_update(o, n),
        (Object::Deployment(o), Object::Deployment(n)) => {
            deployment::prepare_for_status_update(o, n)
        }
        (Object::ReplicaSet(o), Object::ReplicaSet(n)) => {
            replicaset::prepare_for_status_update(o, n)
        }
        (Object::PodDisruptionBudget(o), Object::PodDisruptionBudget(n)) => {
            poddisruptionbudget::prepare_for_status_update(o, n)
        }
        (Object::Other(o), Object::Other(n)) => plain::prepare_for_status_update(o, n),
        _ => {}
    }
    validate_update(old, new)?;
    before_update(old, new);
    Ok(())
}

/// The fields an update may not change, per kind: a bound pod's nodeName.
pub fn validate_update(old: &Object, new: &Object) -> Result<(), ApiError> {
    match (old, new) {
        (Object::Pod(o), Object::Pod(n)) => {
            pod::validate_update(o, n).map_err(|message| ApiError::Invalid {
                key: new.key(),
                message,
            })
        }
        _ => Ok(()),
    }
}

/// What no update changes (`rest.BeforeUpdate`): the namespace (the update found the stored
/// object by it: an object that names none, as a Scenario's `apply` may, is in the stored
/// one's), the uid and creationTimestamp are the stored ones, and an update can never clear or move a stored deletionTimestamp and its grace period
/// (only the registry's own deletion writes do). A generation the strategy did not set is the
/// stored one.
pub fn before_update(old: &Object, new: &mut Object) {
    let old_meta = old.meta();
    let meta = new.meta_mut();
    if meta.namespace != old_meta.namespace {
        meta.namespace.clone_from(&old_meta.namespace);
    }
    if meta.uid != old_meta.uid {
        meta.uid.clone_from(&old_meta.uid);
    }
    if meta.creation_timestamp != old_meta.creation_timestamp {
        meta.creation_timestamp
            .clone_from(&old_meta.creation_timestamp);
    }
    if meta.deletion_timestamp.is_none() || old_meta.deletion_timestamp.is_some() {
        meta.deletion_timestamp
            .clone_from(&old_meta.deletion_timestamp);
        meta.deletion_grace_period_seconds = old_meta.deletion_grace_period_seconds;
    }
    if meta.generation.is_none() {
        meta.generation = old_meta.generation;
    }
}

//! The garbage collector's writes to owners and dependents as upstream makes them with
//! patches: a finalizer removed from an owner (`removeFinalizer`), and a dependent's owner
//! references changed (`orphanDependents`, `unblockOwnerReferences`). Each reads the object
//! with an uncached GET and writes it with its resourceVersion as precondition, retrying a
//! conflict a few times (upstream's `retry.RetryOnConflict` with the default backoff: 5
//! attempts); a patch applies to the current version, so this is the same outcome.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubeplane_api::{ApiError, Client, ObjectKey};

/// The attempts of a read-modify-write before a conflict is given up (upstream
/// `retry.DefaultRetry.Steps`).
const ATTEMPTS: usize = 5;

/// Removes `finalizer` from the object at `key` with UID `uid`, if it is there.
pub(super) fn remove_finalizer(
    key: &ObjectKey,
    uid: &str,
    finalizer: &str,
    client: &mut dyn Client,
) {
    for _ in 0..ATTEMPTS {
        let Ok(mut obj) = client.get(key) else { return };
        if obj.uid() != uid {
            return;
        }
        let meta = obj.meta_mut();
        let Some(finalizers) = meta.finalizers.as_mut() else {
            return;
        };
        let before = finalizers.len();
        finalizers.retain(|f| f != finalizer);
        if finalizers.len() == before {
            return;
        }
        if finalizers.is_empty() {
            meta.finalizers = None;
        }
        match client.update(obj) {
            Err(ApiError::Conflict { .. }) => continue,
            _ => return,
        }
    }
}

/// Changes the owner references of the object at `key` with `change`; true when written, or
/// when there is nothing to write (the object is gone or unchanged).
pub(super) fn patch_references(
    key: &ObjectKey,
    client: &mut dyn Client,
    change: &mut dyn FnMut(&mut Vec<OwnerReference>),
) -> bool {
    for _ in 0..ATTEMPTS {
        let mut obj = match client.get(key) {
            Ok(obj) => obj,
            Err(ApiError::NotFound { .. }) => return true,
            Err(_) => return false,
        };
        let mut refs = obj.owner_references().cloned().unwrap_or_default();
        change(&mut refs);
        if obj.owner_references().unwrap_or(&Vec::new()) == &refs {
            return true;
        }
        obj.set_owner_references((!refs.is_empty()).then_some(refs));
        match client.update(obj) {
            Ok(_) | Err(ApiError::NotFound { .. }) => return true,
            Err(ApiError::Conflict { .. }) => continue,
            Err(_) => return false,
        }
    }
    false
}

//! The API server's deletion rules (upstream `registry/generic/registry/store.go` `Delete`,
//! `rest.BeforeDelete`, `ShouldDeleteDuringUpdate`, and the Namespace's own `Delete` in
//! `pkg/registry/core/namespace/storage`), as pure functions of the stored object, the
//! options and the time, so that every backend applies the same rules.
//!
//! - [`plan_delete`] says what a DELETE does: remove the object, keep it marked as being
//!   deleted (deletionTimestamp, deletionGracePeriodSeconds, finalizers), or nothing (a
//!   deletion already under way).
//! - A pod bound to a node is deleted gracefully (deletionTimestamp = now + grace period); a
//!   second delete may only shorten the period (the new deadline is the old one moved by the
//!   difference, as upstream).
//! - `propagationPolicy` (and, without one, the object's own `orphan`/`foregroundDeletion`
//!   finalizer; every kind kubeplane stores defaults to background) sets the garbage
//!   collector's finalizers ([`gc_finalizers`]). An object left with finalizers is not removed:
//!   it is marked as being deleted (deletionTimestamp now, or kept when earlier; grace period
//!   0; generation bumped on the first mark). The finalizers of a deleting object may still be
//!   switched by a later delete (Orphan after Foreground, say), except for a pod in its grace
//!   period.
//! - A Namespace's first delete sets deletionTimestamp and `status.phase: Terminating` (and the
//!   `kubernetes` finalizer in `spec.finalizers`, which upstream sets at creation); later
//!   deletes do nothing while `spec.finalizers` is not empty.
//! - An update may not add a finalizer to an object being deleted ([`check_update`]); an
//!   update that leaves such an object with no finalizers removes it when its grace period is
//!   0 ([`should_delete_during_update`]).

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::sync::Arc;

use kubeplane_api::{ApiError, Clock, DeleteOptions, Object, PropagationPolicy};
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;

/// The finalizer of an object whose dependents are orphaned (upstream
/// `metav1.FinalizerOrphanDependents`).
pub const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";
/// The finalizer of an object deleted in the foreground (upstream
/// `metav1.FinalizerDeleteDependents`).
pub const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";
/// The namespace controller's finalizer in a Namespace's `spec.finalizers` (upstream
/// `v1.FinalizerKubernetes`).
pub const FINALIZER_KUBERNETES: &str = "kubernetes";
/// The grace period of a pod without terminationGracePeriodSeconds (API defaulting).
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECS: i64 = 30;

/// What a DELETE does to the stored object.
#[derive(Clone, Debug, PartialEq)]
pub enum DeletePlan {
    /// The object is removed now.
    Remove,
    /// The object stays, written as given: marked as being deleted.
    Mark(Object),
    /// Nothing is written: the deletion is already under way as asked.
    Unchanged,
}

/// Decides what deleting `stored` with `opts` at `now` does. Errors: a failed UID or
/// resourceVersion precondition ([`ApiError::Conflict`]).
pub fn plan_delete(
    stored: &Object,
    opts: &DeleteOptions,
    now: SimTime,
    clock: Clock,
) -> Result<DeletePlan, ApiError> {
    check_preconditions(stored, opts)?;
    if let Object::Namespace(ns) = stored {
        if ns.metadata.deletion_timestamp.is_none() {
            return Ok(DeletePlan::Mark(start_namespace_termination(
                stored, opts, now, clock,
            )));
        }
        let spec_finalizers = ns.spec.as_ref().and_then(|s| s.finalizers.as_ref());
        if spec_finalizers.is_some_and(|f| !f.is_empty()) {
            return Ok(DeletePlan::Unchanged);
        }
    }
    let grace = match stored {
        Object::Pod(pod) => pod_grace(pod, opts, now, clock),
        _ => Grace::NotGraceful,
    };
    if grace == Grace::Pending {
        return Ok(DeletePlan::Unchanged);
    }
    let finalizers = gc_finalizers(stored.meta().finalizers.as_deref(), opts);
    let pending_finalizers = match &finalizers {
        Some(f) => !f.is_empty(),
        None => stored
            .meta()
            .finalizers
            .as_ref()
            .is_some_and(|f| !f.is_empty()),
    };
    let marks = match grace {
        Grace::Graceful { secs, .. } => secs > 0 || pending_finalizers,
        _ => pending_finalizers,
    };
    if !marks {
        // Decided before copying: an object removed now is not copied.
        return Ok(DeletePlan::Remove);
    }
    let mut obj = stored.clone();
    if let Grace::Graceful { deadline, secs } = grace {
        let first = stored.meta().deletion_timestamp.is_none();
        let meta = obj.meta_mut();
        meta.deletion_timestamp = Some(clock.timestamp(deadline));
        meta.deletion_grace_period_seconds = Some(secs);
        if first {
            bump_generation(&mut obj);
        }
    }
    if let Some(finalizers) = finalizers {
        obj.meta_mut().finalizers = (!finalizers.is_empty()).then_some(finalizers);
    }
    if grace == Grace::NotGraceful {
        mark_as_deleting(&mut obj, now, clock);
    }
    Ok(if obj == *stored {
        DeletePlan::Unchanged
    } else {
        DeletePlan::Mark(obj)
    })
}

/// The UID and resourceVersion preconditions of a delete.
fn check_preconditions(stored: &Object, opts: &DeleteOptions) -> Result<(), ApiError> {
    let uid_differs = opts
        .precondition_uid
        .as_ref()
        .is_some_and(|uid| uid != stored.uid());
    let rv_differs = opts
        .precondition_resource_version
        .as_ref()
        .is_some_and(|rv| rv != stored.resource_version());
    if uid_differs || rv_differs {
        return Err(ApiError::Conflict { key: stored.key() });
    }
    Ok(())
}

/// How a pod's grace period stands (upstream `rest.BeforeDelete` with the pod strategy's
/// `CheckGracefulDelete`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Grace {
    /// No grace period: the finalizers decide.
    NotGraceful,
    /// Already terminating with a period no longer than the one asked: nothing changes.
    Pending,
    /// Terminating until `deadline` (`secs` after the start of the grace period).
    Graceful { deadline: SimTime, secs: i64 },
}

/// The grace period of a pod's delete. A pod not bound to a node has none (upstream also
/// deletes Succeeded and Failed pods at once; kubeplane keeps their grace period).
fn pod_grace(pod: &StoredPod, opts: &DeleteOptions, now: SimTime, clock: Clock) -> Grace {
    let meta = &pod.metadata;
    if let Some(ts) = &meta.deletion_timestamp {
        let current = meta.deletion_grace_period_seconds.unwrap_or(0);
        if current == 0 {
            return Grace::NotGraceful;
        }
        return match opts.grace_period_secs.map(|g| g.max(0)) {
            Some(asked) if asked < current => Grace::Graceful {
                deadline: clock.instant(ts) - SimDuration::from_secs(current)
                    + SimDuration::from_secs(asked),
                secs: asked,
            },
            _ => Grace::Pending,
        };
    }
    let spec = pod.spec.as_ref();
    let bound = pod.node_name().is_some_and(|n| !n.is_empty());
    let secs = opts.grace_period_secs.unwrap_or_else(|| {
        spec.and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(DEFAULT_TERMINATION_GRACE_PERIOD_SECS)
    });
    if bound && secs > 0 {
        Grace::Graceful {
            deadline: now + SimDuration::from_secs(secs),
            secs,
        }
    } else {
        Grace::NotGraceful
    }
}

/// Upstream `deletionFinalizersForGarbageCollection`: the finalizers after a delete with
/// `opts`, or `None` when they do not change. The policy in the options wins; without one, an
/// `orphan` or `foregroundDeletion` finalizer already there stays; the default of every kind
/// kubeplane stores is background (apps/v1's `DeleteDependents` default means the same).
pub fn gc_finalizers(finalizers: Option<&[String]>, opts: &DeleteOptions) -> Option<Vec<String>> {
    let current = finalizers.unwrap_or(&[]);
    let first_gc_finalizer = current
        .iter()
        .find(|f| *f == FINALIZER_ORPHAN_DEPENDENTS || *f == FINALIZER_DELETE_DEPENDENTS);
    let (orphan, foreground) = match opts.propagation_policy {
        Some(PropagationPolicy::Orphan) => (true, false),
        Some(PropagationPolicy::Foreground) => (false, true),
        Some(PropagationPolicy::Background) => (false, false),
        None => match first_gc_finalizer.map(String::as_str) {
            Some(FINALIZER_ORPHAN_DEPENDENTS) => (true, false),
            Some(FINALIZER_DELETE_DEPENDENTS) => (false, true),
            _ => (false, false),
        },
    };
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| *f != FINALIZER_ORPHAN_DEPENDENTS && *f != FINALIZER_DELETE_DEPENDENTS)
        .cloned()
        .collect();
    if orphan {
        next.push(FINALIZER_ORPHAN_DEPENDENTS.to_string());
    }
    if foreground {
        next.push(FINALIZER_DELETE_DEPENDENTS.to_string());
    }
    let same_set =
        next.iter().all(|f| current.contains(f)) && current.iter().all(|f| next.contains(f));
    (!same_set).then_some(next)
}

/// Upstream `markAsDeleting`: deletionTimestamp now (kept when already earlier), grace period
/// 0, and the generation bumped the first time.
fn mark_as_deleting(obj: &mut Object, now: SimTime, clock: Clock) {
    let existing = obj
        .meta()
        .deletion_timestamp
        .as_ref()
        .map(|t| clock.instant(t));
    if existing.is_none() {
        bump_generation(obj);
    }
    let meta = obj.meta_mut();
    if existing.is_none_or(|t| t > now) {
        meta.deletion_timestamp = Some(clock.timestamp(now));
    }
    meta.deletion_grace_period_seconds = Some(0);
}

fn bump_generation(obj: &mut Object) {
    let meta = obj.meta_mut();
    if let Some(g) = meta.generation.filter(|g| *g > 0) {
        meta.generation = Some(g + 1);
    }
}

/// The first delete of a Namespace: deletionTimestamp, phase Terminating, the garbage
/// collector's finalizers as the options ask, and the `kubernetes` finalizer (which upstream's
/// namespace strategy adds at creation; kubeplane adds it here, so that namespaces that are
/// never deleted look as they always did).
fn start_namespace_termination(
    stored: &Object,
    opts: &DeleteOptions,
    now: SimTime,
    clock: Clock,
) -> Object {
    let mut obj = stored.clone();
    let Object::Namespace(ns) = &mut obj else {
        return obj;
    };
    let ns = Arc::make_mut(ns);
    ns.metadata.deletion_timestamp = Some(clock.timestamp(now));
    ns.status.get_or_insert_with(Default::default).phase = Some("Terminating".into());
    let has = |f: &str| ns.metadata.finalizers.iter().flatten().any(|x| x == f);
    let orphan = opts
        .propagation_policy
        .map_or(has(FINALIZER_ORPHAN_DEPENDENTS), |p| {
            p == PropagationPolicy::Orphan
        });
    let foreground = opts
        .propagation_policy
        .map_or(has(FINALIZER_DELETE_DEPENDENTS), |p| {
            p == PropagationPolicy::Foreground
        });
    let mut finalizers: Vec<String> = ns
        .metadata
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != FINALIZER_ORPHAN_DEPENDENTS && *f != FINALIZER_DELETE_DEPENDENTS)
        .cloned()
        .collect();
    if orphan {
        finalizers.push(FINALIZER_ORPHAN_DEPENDENTS.into());
    }
    if foreground {
        finalizers.push(FINALIZER_DELETE_DEPENDENTS.into());
    }
    ns.metadata.finalizers = (!finalizers.is_empty()).then_some(finalizers);
    let spec = ns.spec.get_or_insert_with(Default::default);
    let spec_finalizers = spec.finalizers.get_or_insert_with(Vec::new);
    if !spec_finalizers.iter().any(|f| f == FINALIZER_KUBERNETES) {
        spec_finalizers.push(FINALIZER_KUBERNETES.into());
    }
    obj
}

/// Upstream `ValidateNoNewFinalizers` on an update of an object being deleted.
pub fn check_update(old: &Object, new: &Object) -> Result<(), ApiError> {
    if old.meta().deletion_timestamp.is_none() {
        return Ok(());
    }
    let before = old.meta().finalizers.as_deref().unwrap_or(&[]);
    let mut extra: Vec<&str> = new
        .meta()
        .finalizers
        .iter()
        .flatten()
        .filter(|f| !before.contains(f))
        .map(String::as_str)
        .collect();
    if extra.is_empty() {
        return Ok(());
    }
    extra.sort_unstable();
    extra.dedup();
    let quoted: Vec<String> = extra.iter().map(|f| format!("{f:?}")).collect();
    Err(ApiError::Invalid {
        key: new.key(),
        message: format!(
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is \
             being deleted, found new finalizers []string{{{}}}",
            quoted.join(", ")
        ),
    })
}

/// Upstream `ShouldDeleteDuringUpdate` (with the Namespace's `spec.finalizers` check): an
/// update that leaves an object being deleted with grace period 0 without finalizers removes
/// it instead of writing it.
pub fn should_delete_during_update(old: &Object, new: &Object) -> bool {
    let old_meta = old.meta();
    if new
        .meta()
        .finalizers
        .as_ref()
        .is_some_and(|f| !f.is_empty())
    {
        return false;
    }
    if let Object::Namespace(ns) = new {
        let spec_finalizers = ns.spec.as_ref().and_then(|s| s.finalizers.as_ref());
        if spec_finalizers.is_some_and(|f| !f.is_empty()) {
            return false;
        }
    }
    old_meta.deletion_timestamp.is_some()
        && old_meta.deletion_grace_period_seconds.unwrap_or(0) == 0
}

#[cfg(test)]
mod tests;

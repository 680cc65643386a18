//! PodTopologySpread PreScore's default soft constraints, kept for the pods of one
//! ReplicaSet (upstream builds them for every pod in `buildDefaultConstraints`).
//!
//! The replicas of a workload come one after another and get the same default constraints:
//! the selector of their ReplicaSet on the default topology keys. PreScore builds them once
//! per run of one ReplicaSet's pods and shares them (with the counts' key and the cycle
//! state) instead of compiling and cloning the selector for every pod. They are reused only
//! when nothing else they depend on can differ: the pod has no constraints of its own, the
//! defaults take no `matchLabelKeys` from the pod's labels, and the snapshot's ReplicaSet
//! selectors are the very ones they were built with.

use std::sync::{Arc, Weak};

use crate::cache::{ReplicaSetSelectors, Snapshot};
use crate::framework::PodInfo;

use super::{Constraint, PodTopologySpread};

/// The default soft constraints last built, and what they were built from.
#[derive(Default)]
pub(crate) struct SoftDefaults {
    /// The snapshot's ReplicaSet selectors they were built with. A `Weak` keeps the allocation
    /// (not the selectors), so its address is not reused meanwhile; and the selectors at an
    /// address never change: with this `Weak` alive the scheduler's cache (`Arc::make_mut`)
    /// writes a changed set to a new allocation.
    replica_sets: Weak<ReplicaSetSelectors>,
    /// The pods' namespace and the name of the ReplicaSet that controls them.
    namespace: String,
    owner: String,
    constraints: Option<Arc<[Constraint]>>,
}

/// The namespace and the controlling ReplicaSet (apps/v1) of a pod, as the defaults' selector
/// reads them (`default_selector`); `None` for a pod that no ReplicaSet controls.
pub(crate) fn replica_set_of(pod: &PodInfo) -> Option<(&str, &str)> {
    let meta = &pod.pod.metadata;
    let owner = pod
        .pod
        .owner_references()
        .into_iter()
        .flatten()
        .find(|o| o.controller == Some(true))?;
    if owner.kind != "ReplicaSet" || owner.api_version != "apps/v1" {
        return None;
    }
    Some((meta.namespace.as_deref().unwrap_or("default"), &owner.name))
}

impl SoftDefaults {
    /// The constraints kept for the pods of ReplicaSet `owner` in `namespace`, if they were
    /// built with the snapshot's selectors.
    pub(crate) fn get(
        &self,
        snapshot: &Snapshot,
        (namespace, owner): (&str, &str),
    ) -> Option<Arc<[Constraint]>> {
        let same = std::ptr::eq(
            self.replica_sets.as_ptr(),
            Arc::as_ptr(&snapshot.replica_sets),
        ) && self.owner == owner
            && self.namespace == namespace;
        same.then(|| self.constraints.clone()).flatten()
    }

    /// Keeps `constraints`, built for the pods of ReplicaSet `owner` in `namespace` with the
    /// snapshot's selectors.
    pub(crate) fn keep(
        &mut self,
        snapshot: &Snapshot,
        (namespace, owner): (&str, &str),
        constraints: &Arc<[Constraint]>,
    ) {
        self.replica_sets = Arc::downgrade(&snapshot.replica_sets);
        self.namespace.replace_range(.., namespace);
        self.owner.replace_range(.., owner);
        self.constraints = Some(Arc::clone(constraints));
    }
}

impl PodTopologySpread {
    /// Whether the default constraints are the same for every pod of one ReplicaSet: they
    /// take nothing from the pod's labels.
    pub(crate) fn defaults_per_replica_set(&self) -> bool {
        !self.enable_match_label_keys
            || self
                .default_constraints
                .iter()
                .all(|c| c.match_label_keys.as_ref().is_none_or(Vec::is_empty))
    }
}

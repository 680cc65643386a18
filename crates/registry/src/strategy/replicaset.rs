//! The ReplicaSet strategy (upstream `pkg/registry/apps/replicaset/strategy.go`).

use std::sync::Arc;

use kubeplane_api::StoredReplicaSet;

/// `rsStrategy.PrepareForUpdate`: the stored status is kept; a spec change bumps the
/// generation.
pub fn prepare_for_update(old: &StoredReplicaSet, new: &mut Arc<StoredReplicaSet>) {
    if new.status != old.status {
        Arc::make_mut(new).status.clone_from(&old.status);
    }
    if new.spec != old.spec {
        Arc::make_mut(new).metadata.generation = Some(old.metadata.generation.unwrap_or(1) + 1);
    }
}

/// `rsStatusStrategy.PrepareForUpdate`: the stored spec is kept.
pub fn prepare_for_status_update(old: &StoredReplicaSet, new: &mut Arc<StoredReplicaSet>) {
    if new.spec != old.spec {
        Arc::make_mut(new).spec.clone_from(&old.spec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};

    fn rs(replicas: i32, observed: i32) -> StoredReplicaSet {
        StoredReplicaSet::from_k8s(ReplicaSet {
            spec: Some(ReplicaSetSpec {
                replicas: Some(replicas),
                ..Default::default()
            }),
            status: Some(ReplicaSetStatus {
                replicas: observed,
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[test]
    fn a_spec_change_bumps_the_generation_from_one_when_none_was_stored() {
        let mut new = Arc::new(rs(3, 0));
        prepare_for_update(&rs(1, 1), &mut new);
        assert_eq!(new.metadata.generation, Some(2));
        assert_eq!(new.status, rs(1, 1).status, "the stored status is kept");
    }

    #[test]
    fn a_status_update_keeps_the_spec() {
        let mut new = Arc::new(rs(3, 2));
        prepare_for_status_update(&rs(1, 1), &mut new);
        assert_eq!(new.spec, rs(1, 1).spec);
        assert_eq!(new.status, rs(3, 2).status);
    }
}

//! The Node strategy (upstream `pkg/registry/core/node/strategy.go`).

use std::sync::Arc;

use kubeplane_api::StoredNode;

/// `nodeStrategy.PrepareForUpdate`: the stored status is kept, `status.declaredFeatures`
/// included. A node changed here loses its heartbeat mark (`StoredNode::heartbeats_of`).
pub fn prepare_for_update(old: &StoredNode, new: &mut Arc<StoredNode>) {
    if new.status != old.status {
        let n = Arc::make_mut(new);
        n.status.clone_from(&old.status);
        n.heartbeats_of = None;
    }
    if new.declared_features != old.declared_features {
        let n = Arc::make_mut(new);
        n.declared_features.clone_from(&old.declared_features);
        n.heartbeats_of = None;
    }
}

/// `nodeStatusStrategy.PrepareForUpdate`: the stored spec is kept (taints and
/// unschedulable are the main resource's). A node changed here loses its heartbeat mark.
pub fn prepare_for_status_update(old: &StoredNode, new: &mut Arc<StoredNode>) {
    if new.spec != old.spec {
        let n = Arc::make_mut(new);
        n.spec.clone_from(&old.spec);
        n.heartbeats_of = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus};

    fn node(unschedulable: bool, phase: &str) -> StoredNode {
        StoredNode::from(Node {
            spec: Some(NodeSpec {
                unschedulable: Some(unschedulable),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                phase: Some(phase.into()),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[test]
    fn each_part_is_written_only_through_its_own_endpoint() {
        let mut old = node(false, "Running");
        old.declared_features = Some(vec!["A".into()]);
        let mut written = node(true, "Terminated");
        written.declared_features = Some(vec!["B".into()]);
        let mut main = Arc::new(written.clone());
        prepare_for_update(&old, &mut main);
        let mut want = old.clone();
        want.spec = node(true, "").spec.clone();
        assert_eq!(*main, want, "the main resource keeps the stored status");
        let mut status = Arc::new(written.clone());
        prepare_for_status_update(&old, &mut status);
        let mut want = old.clone();
        want.status = written.status.clone();
        want.declared_features = written.declared_features.clone();
        assert_eq!(
            *status, want,
            "the status subresource keeps the stored spec"
        );
    }
}

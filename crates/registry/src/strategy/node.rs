//! The Node strategy (upstream `pkg/registry/core/node/strategy.go`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;

/// `nodeStrategy.PrepareForUpdate`: the stored status is kept.
pub fn prepare_for_update(old: &Node, new: &mut Arc<Node>) {
    if new.status != old.status {
        Arc::make_mut(new).status.clone_from(&old.status);
    }
}

/// `nodeStatusStrategy.PrepareForUpdate`: the stored spec is kept (taints and
/// unschedulable are the main resource's).
pub fn prepare_for_status_update(old: &Node, new: &mut Arc<Node>) {
    if new.spec != old.spec {
        Arc::make_mut(new).spec.clone_from(&old.spec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeSpec, NodeStatus};

    fn node(unschedulable: bool, phase: &str) -> Node {
        Node {
            spec: Some(NodeSpec {
                unschedulable: Some(unschedulable),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                phase: Some(phase.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn each_part_is_written_only_through_its_own_endpoint() {
        let old = node(false, "Running");
        let mut main = Arc::new(node(true, "Terminated"));
        prepare_for_update(&old, &mut main);
        assert_eq!(
            *main,
            Node {
                spec: node(true, "").spec,
                ..old.clone()
            }
        );
        let mut status = Arc::new(node(true, "Terminated"));
        prepare_for_status_update(&old, &mut status);
        assert_eq!(
            *status,
            Node {
                status: node(true, "Terminated").status,
                ..old
            }
        );
    }
}

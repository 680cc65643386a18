//! Which controllers run in a simulation, in the order they run at each instant.

use kubeplane_controllers::deployment::DeploymentController;
use kubeplane_controllers::node_lifecycle::{NodeLifecycleConfig, NodeLifecycleController};
use kubeplane_controllers::replicaset::ReplicaSetController;
use kubeplane_controllers::taint_eviction::TaintEvictionController;
use kubeplane_core::features::FeatureGates;
use kubeplane_store::Component;

/// Controllers whose timers are pending work (a run without `duration` waits for them).
pub fn controllers(features: &FeatureGates) -> Vec<Box<dyn Component + Send>> {
    vec![
        Box::new(TaintEvictionController::new()),
        Box::new(DeploymentController::new()),
        Box::new(ReplicaSetController::with_features(features.clone())),
        Box::new(crate::disruption::DisruptionController::new()),
    ]
}

/// Controllers that run periodically for as long as the cluster exists.
pub fn periodic_controllers(_features: &FeatureGates) -> Vec<Box<dyn Component + Send>> {
    vec![Box::new(NodeLifecycleController::new(
        NodeLifecycleConfig::default(),
    ))]
}

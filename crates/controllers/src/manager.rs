//! The controller manager: which controllers run, listed once for every runtime, in the order
//! they run at each instant.

use kubeplane_api::Component;
use kubeplane_core::features::FeatureGates;

use crate::cronjob::CronJobController;
use crate::daemon::DaemonSetsController;
use crate::deployment::DeploymentController;
use crate::disruption::DisruptionController;
use crate::garbage_collector::GarbageCollector;
use crate::job::JobController;
use crate::namespace::NamespaceController;
use crate::node_lifecycle::{NodeLifecycleConfig, NodeLifecycleController};
use crate::pod_gc::PodGcController;
use crate::replicaset::ReplicaSetController;
use crate::statefulset::StatefulSetController;
use crate::taint_eviction::TaintEvictionController;
use crate::ttl_after_finished::TtlAfterFinishedController;

/// Controllers whose timers are pending work (a run without `duration` waits for them). PodGC
/// is one: it only wakes while something is collectable.
pub fn controllers(features: &FeatureGates) -> Vec<Box<dyn Component + Send>> {
    vec![
        Box::new(TaintEvictionController::new()),
        Box::new(DeploymentController::with_features(features)),
        Box::new(ReplicaSetController::with_features(features.clone())),
        Box::new(StatefulSetController::with_features(features)),
        Box::new(DaemonSetsController::new()),
        Box::new(DisruptionController::new()),
        Box::new(GarbageCollector::new()),
        Box::new(PodGcController::default()),
        Box::new(NamespaceController::new()),
        Box::new(JobController::new()),
        Box::new(CronJobController::new()),
        Box::new(TtlAfterFinishedController::new()),
    ]
}

/// Controllers that run periodically for as long as the cluster exists.
pub fn periodic_controllers(_features: &FeatureGates) -> Vec<Box<dyn Component + Send>> {
    vec![Box::new(NodeLifecycleController::new(
        NodeLifecycleConfig::default(),
    ))]
}

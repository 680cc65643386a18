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

#[cfg(test)]
mod tests {
    use super::*;
    use kubeplane_api::{EventType, Kind, Object, WatchEvent};
    use kubeplane_core::SimTime;

    /// An object of each simulated kind, in the namespace `default`.
    fn object_of(kind: Kind) -> Object {
        let ns = if kind.is_namespaced() { "default" } else { "" };
        let mut value = serde_json::json!({
            "apiVersion": kind.api_version(),
            "kind": kind.as_str(),
            "metadata": {"name": "x", "uid": "u1", "resourceVersion": "1"},
        });
        if !ns.is_empty() {
            value["metadata"]["namespace"] = ns.into();
        }
        Object::from_json(&value).expect("a valid object")
    }

    #[test]
    fn a_controller_that_does_not_observe_a_kind_gets_no_work_from_its_events() {
        for mut c in controllers(&FeatureGates::default())
            .into_iter()
            .chain(periodic_controllers(&FeatureGates::default()))
        {
            let before = (c.next_wakeup(), c.metrics());
            let ignored: Vec<Kind> = Kind::ALL.into_iter().filter(|&k| !c.observes(k)).collect();
            for kind in ignored {
                let obj = object_of(kind);
                for type_ in [EventType::Added, EventType::Modified, EventType::Deleted] {
                    let old = (type_ != EventType::Added).then(|| obj.clone());
                    let ev = WatchEvent {
                        type_,
                        object: obj.clone(),
                        old,
                        resource_version: 2,
                    };
                    c.observe(&ev, SimTime::from_secs(5));
                }
                assert_eq!(
                    (c.next_wakeup(), c.metrics()),
                    before,
                    "{} after events of a {}",
                    c.name(),
                    kind.as_str()
                );
            }
        }
    }

    #[test]
    fn the_garbage_collector_and_the_node_lifecycle_controller_observe_leases() {
        let observing: Vec<&str> = controllers(&FeatureGates::default())
            .iter()
            .chain(periodic_controllers(&FeatureGates::default()).iter())
            .filter(|c| c.observes(Kind::Lease))
            .map(|c| c.name())
            .collect();
        assert_eq!(
            observing,
            [
                "garbage-collector",
                "namespace-controller",
                "node-lifecycle-controller"
            ]
        );
    }
}

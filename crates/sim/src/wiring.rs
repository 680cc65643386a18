//! Which controllers run in a simulation.

use kubeplane_core::features::FeatureGates;
use kubeplane_store::Component;

/// Controllers whose timers are pending work (a run without `duration` waits for them).
pub fn controllers(features: &FeatureGates) -> Vec<Box<dyn Component>> {
    let _ = features;
    Vec::new()
}

/// Controllers that run periodically for as long as the cluster exists.
pub fn periodic_controllers(features: &FeatureGates) -> Vec<Box<dyn Component>> {
    let _ = features;
    Vec::new()
}

//! The PodDisruptionBudget strategy (upstream
//! `pkg/registry/policy/poddisruptionbudget/strategy.go`).

use std::sync::Arc;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;

/// `podDisruptionBudgetStrategy.PrepareForUpdate`: the stored status is kept; a spec change
/// bumps the generation (the eviction subresource waits for the disruption controller to
/// observe it).
pub fn prepare_for_update(old: &PodDisruptionBudget, new: &mut Arc<PodDisruptionBudget>) {
    if new.status != old.status {
        Arc::make_mut(new).status.clone_from(&old.status);
    }
    if new.spec != old.spec {
        Arc::make_mut(new).metadata.generation = Some(old.metadata.generation.unwrap_or(1) + 1);
    }
}

/// `podDisruptionBudgetStatusStrategy.PrepareForUpdate`: the stored spec is kept.
pub fn prepare_for_status_update(old: &PodDisruptionBudget, new: &mut Arc<PodDisruptionBudget>) {
    if new.spec != old.spec {
        Arc::make_mut(new).spec.clone_from(&old.spec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn pdb(min: i32) -> PodDisruptionBudget {
        let mut p = PodDisruptionBudget {
            spec: Some(PodDisruptionBudgetSpec {
                min_available: Some(IntOrString::Int(min)),
                ..Default::default()
            }),
            ..Default::default()
        };
        p.metadata.generation = Some(1);
        p
    }

    #[test]
    fn only_a_spec_change_bumps_the_generation() {
        let mut same = Arc::new(pdb(1));
        prepare_for_update(&pdb(1), &mut same);
        assert_eq!(same.metadata.generation, Some(1));
        let mut changed = Arc::new(pdb(2));
        prepare_for_update(&pdb(1), &mut changed);
        assert_eq!(changed.metadata.generation, Some(2));
        let mut status_only = Arc::new(pdb(2));
        prepare_for_status_update(&pdb(1), &mut status_only);
        assert_eq!(status_only.spec, pdb(1).spec);
    }
}

//! The Deployment strategy (upstream `pkg/registry/apps/deployment/strategy.go`).

use std::sync::Arc;

use kubeplane_api::StoredDeployment;

/// `deploymentStrategy.PrepareForUpdate`: the stored status is kept, and a change of the spec
/// or of the annotations bumps the generation (upstream: "annotations are copied from
/// deployments to their replica sets", so a rollout may follow from them).
pub fn prepare_for_update(old: &StoredDeployment, new: &mut Arc<StoredDeployment>) {
    if new.status != old.status {
        Arc::make_mut(new).status.clone_from(&old.status);
    }
    if new.spec != old.spec || new.metadata.annotations != old.metadata.annotations {
        Arc::make_mut(new).metadata.generation = Some(old.metadata.generation.unwrap_or(1) + 1);
    }
}

/// `deploymentStatusStrategy.PrepareForUpdate`: the stored spec and labels are kept. The
/// annotations may change: the controller writes its revision annotation this way, without
/// a generation bump.
pub fn prepare_for_status_update(old: &StoredDeployment, new: &mut Arc<StoredDeployment>) {
    if new.spec != old.spec {
        Arc::make_mut(new).spec.clone_from(&old.spec);
    }
    if new.metadata.labels != old.metadata.labels {
        Arc::make_mut(new)
            .metadata
            .labels
            .clone_from(&old.metadata.labels);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::apps::v1::DeploymentSpec;

    fn deployment(replicas: i32, annotation: &str) -> StoredDeployment {
        let mut d = StoredDeployment::from_k8s(Deployment {
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                ..Default::default()
            }),
            ..Default::default()
        });
        d.metadata.generation = Some(4);
        d.metadata.annotations = Some([("a".to_string(), annotation.to_string())].into());
        d
    }

    #[test]
    fn a_spec_or_annotation_change_bumps_the_generation_and_nothing_else_does() {
        let old = deployment(1, "x");
        let cases = [
            ("the same object", deployment(1, "x"), Some(4)),
            ("another replica count", deployment(2, "x"), Some(5)),
            ("another annotation", deployment(1, "y"), Some(5)),
        ];
        for (name, new, want) in cases {
            let mut new = Arc::new(new);
            prepare_for_update(&old, &mut new);
            assert_eq!(new.metadata.generation, want, "{name}");
        }
    }

    #[test]
    fn a_status_update_keeps_the_spec_and_labels_but_takes_the_annotations() {
        let old = deployment(1, "x");
        let mut changed = deployment(3, "y");
        changed.metadata.labels = Some([("l".to_string(), "v".to_string())].into());
        let mut new = Arc::new(changed);
        prepare_for_status_update(&old, &mut new);
        assert_eq!(new.spec, old.spec);
        assert_eq!(new.metadata.labels, None);
        assert_eq!(new.metadata.annotations.as_ref().unwrap()["a"], "y");
    }
}

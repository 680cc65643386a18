//! The stored Deployment (issue 19): k8s-openapi's `Deployment` with its pod template's spec
//! behind an `Arc` ([`StoredPodTemplateSpec`]), shared by every version of the Deployment (a
//! status write copies the metadata and the status only) and by the ReplicaSets the Deployment
//! controller makes from it. Its JSON is exactly k8s-openapi's `Deployment`'s.

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStatus, DeploymentStrategy,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::ser::SerializeStruct;

use crate::replica_set::{serialize_apps_object, StoredPodTemplateSpec};

/// k8s-openapi's `DeploymentSpec` with the template in its stored form.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoredDeploymentSpec {
    pub min_ready_seconds: Option<i32>,
    pub paused: Option<bool>,
    pub progress_deadline_seconds: Option<i32>,
    pub replicas: Option<i32>,
    pub revision_history_limit: Option<i32>,
    pub selector: LabelSelector,
    pub strategy: Option<DeploymentStrategy>,
    pub template: StoredPodTemplateSpec,
}

impl StoredDeploymentSpec {
    pub fn from_k8s(s: DeploymentSpec) -> StoredDeploymentSpec {
        StoredDeploymentSpec {
            min_ready_seconds: s.min_ready_seconds,
            paused: s.paused,
            progress_deadline_seconds: s.progress_deadline_seconds,
            replicas: s.replicas,
            revision_history_limit: s.revision_history_limit,
            selector: s.selector,
            strategy: s.strategy,
            template: StoredPodTemplateSpec::from_k8s(s.template),
        }
    }

    pub fn to_k8s(&self) -> DeploymentSpec {
        DeploymentSpec {
            min_ready_seconds: self.min_ready_seconds,
            paused: self.paused,
            progress_deadline_seconds: self.progress_deadline_seconds,
            replicas: self.replicas,
            revision_history_limit: self.revision_history_limit,
            selector: self.selector.clone(),
            strategy: self.strategy.clone(),
            template: self.template.to_k8s(),
        }
    }
}

impl From<DeploymentSpec> for StoredDeploymentSpec {
    fn from(s: DeploymentSpec) -> StoredDeploymentSpec {
        StoredDeploymentSpec::from_k8s(s)
    }
}

impl serde::Serialize for StoredDeploymentSpec {
    /// Exactly k8s-openapi's `DeploymentSpec` JSON.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = 2
            + usize::from(self.min_ready_seconds.is_some())
            + usize::from(self.paused.is_some())
            + usize::from(self.progress_deadline_seconds.is_some())
            + usize::from(self.replicas.is_some())
            + usize::from(self.revision_history_limit.is_some())
            + usize::from(self.strategy.is_some());
        let mut state = s.serialize_struct("DeploymentSpec", fields)?;
        if let Some(v) = &self.min_ready_seconds {
            state.serialize_field("minReadySeconds", v)?;
        }
        if let Some(v) = &self.paused {
            state.serialize_field("paused", v)?;
        }
        if let Some(v) = &self.progress_deadline_seconds {
            state.serialize_field("progressDeadlineSeconds", v)?;
        }
        if let Some(v) = &self.replicas {
            state.serialize_field("replicas", v)?;
        }
        if let Some(v) = &self.revision_history_limit {
            state.serialize_field("revisionHistoryLimit", v)?;
        }
        state.serialize_field("selector", &self.selector)?;
        if let Some(v) = &self.strategy {
            state.serialize_field("strategy", v)?;
        }
        state.serialize_field("template", &self.template)?;
        state.end()
    }
}

/// A Deployment as kubeplane stores it: k8s-openapi's with the template's spec shared by `Arc`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoredDeployment {
    pub metadata: ObjectMeta,
    pub spec: Option<StoredDeploymentSpec>,
    pub status: Option<DeploymentStatus>,
}

impl StoredDeployment {
    pub fn from_k8s(d: Deployment) -> StoredDeployment {
        StoredDeployment {
            metadata: d.metadata,
            spec: d.spec.map(StoredDeploymentSpec::from_k8s),
            status: d.status,
        }
    }

    /// k8s-openapi's Deployment (the template's spec copied): for the edges.
    pub fn to_k8s(&self) -> Deployment {
        Deployment {
            metadata: self.metadata.clone(),
            spec: self.spec.as_ref().map(StoredDeploymentSpec::to_k8s),
            status: self.status.clone(),
        }
    }
}

impl From<Deployment> for StoredDeployment {
    fn from(d: Deployment) -> StoredDeployment {
        StoredDeployment::from_k8s(d)
    }
}

impl From<&StoredDeployment> for Deployment {
    fn from(d: &StoredDeployment) -> Deployment {
        d.to_k8s()
    }
}

impl serde::Serialize for StoredDeployment {
    /// Exactly k8s-openapi's `Deployment` JSON: apiVersion, kind, metadata, spec, status.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (spec, status) = (self.spec.as_ref(), self.status.as_ref());
        serialize_apps_object(s, "Deployment", &self.metadata, spec, status)
    }
}

impl<'de> serde::Deserialize<'de> for StoredDeployment {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Deployment::deserialize(d).map(StoredDeployment::from_k8s)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn manifest() -> serde_json::Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1", "generation": 2},
            "spec": {"replicas": 3, "minReadySeconds": 2, "paused": false,
                "progressDeadlineSeconds": 600, "revisionHistoryLimit": 10,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"replicas": 3, "observedGeneration": 2, "collisionCount": 1}})
    }

    #[test]
    fn a_stored_deployment_writes_and_reads_exactly_k8s_openapis_json() {
        let cases = [
            manifest(),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bare"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "e"},
                "spec": {"selector": {}, "template": {}}}),
        ];
        for m in cases {
            crate::replica_set::assert_stored_json_is_k8s::<Deployment, StoredDeployment>(&m);
        }
    }

    #[test]
    fn a_status_write_shares_the_template_spec() {
        let a: StoredDeployment = serde_json::from_value(manifest()).unwrap();
        let mut b = a.clone();
        b.status.as_mut().unwrap().replicas = Some(2);
        let spec = |d: &StoredDeployment| {
            Arc::clone(d.spec.as_ref().unwrap().template.spec.as_ref().unwrap())
        };
        assert!(Arc::ptr_eq(&spec(&a), &spec(&b)));
        assert_ne!(a, b);
    }
}

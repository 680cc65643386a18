//! The scale subresource of Deployments, ReplicaSets and StatefulSets (upstream
//! `pkg/registry/apps/deployment/storage/storage.go`, `replicaset/storage/storage.go` and
//! `statefulset/storage/storage.go`, `ScaleREST`): an autoscaling/v1 `Scale` read from the object, and an update that writes
//! only `spec.replicas`, as `kubectl scale` and the HorizontalPodAutoscaler do.

use std::sync::Arc;

use k8s_openapi::api::autoscaling::v1::{Scale, ScaleSpec, ScaleStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubeplane_api::{ApiError, Kind, Object, ObjectKey};
use kubeplane_core::labels::from_label_selector;
use serde_json::Value;

/// Whether a kind has the scale subresource.
pub fn has_scale(kind: Kind) -> bool {
    matches!(kind, Kind::Deployment | Kind::ReplicaSet)
        || matches!(kind, Kind::Other(t) if t.kind == "StatefulSet" && t.api_version == "apps/v1")
}

/// The object with `spec.replicas` set to `replicas` and nothing else changed; `None` for a
/// kind without a scale subresource.
pub fn with_replicas(obj: &Object, replicas: i32) -> Option<Object> {
    match obj {
        Object::Deployment(d) => {
            let mut d = Arc::clone(d);
            Arc::make_mut(&mut d)
                .spec
                .get_or_insert_with(Default::default)
                .replicas = Some(replicas);
            Some(Object::Deployment(d))
        }
        Object::ReplicaSet(rs) => {
            let mut rs = Arc::clone(rs);
            Arc::make_mut(&mut rs)
                .spec
                .get_or_insert_with(Default::default)
                .replicas = Some(replicas);
            Some(Object::ReplicaSet(rs))
        }
        Object::Other(o) if has_scale(obj.kind()) => {
            let mut o = Arc::clone(o);
            let spec = Arc::make_mut(&mut o)
                .fields
                .entry("spec")
                .or_insert_with(|| Value::Object(Default::default()));
            if !spec.is_object() {
                *spec = Value::Object(Default::default());
            }
            spec["replicas"] = Value::from(replicas);
            Some(Object::Other(o))
        }
        _ => None,
    }
}

/// The replica count a scale update asks for: Invalid when negative (upstream's Scale
/// validation).
pub fn validate_replicas(key: &ObjectKey, replicas: i32) -> Result<(), ApiError> {
    if replicas < 0 {
        return Err(ApiError::Invalid {
            key: key.clone(),
            message: format!(
                "spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0"
            ),
        });
    }
    Ok(())
}

/// The autoscaling/v1 Scale of a Deployment, ReplicaSet or StatefulSet: the object's identity, its
/// desired replicas, and its observed replicas with its selector in string form.
pub fn scale_of(obj: &Object) -> Option<Scale> {
    let (spec_replicas, status_replicas, selector) = match obj {
        Object::Deployment(d) => {
            let spec = d.spec.as_ref();
            (
                spec.and_then(|s| s.replicas),
                d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0),
                spec.map(|s| &s.selector),
            )
        }
        Object::ReplicaSet(rs) => {
            let spec = rs.spec.as_ref();
            (
                spec.and_then(|s| s.replicas),
                rs.status.as_ref().map_or(0, |s| s.replicas),
                spec.map(|s| &s.selector),
            )
        }
        Object::Other(o) if has_scale(obj.kind()) => return Some(stateful_set_scale(obj, o)),
        _ => return None,
    };
    Some(scale(obj, spec_replicas, status_replicas, selector))
}

/// A StatefulSet's Scale. The set is stored as written, so `spec.replicas` takes the API
/// server's default (1) when absent, as upstream's stored set would show it.
fn stateful_set_scale(obj: &Object, o: &kubeplane_api::DynamicObject) -> Scale {
    let spec = o.field("spec");
    let replicas = spec
        .and_then(|s| s.get("replicas"))
        .and_then(Value::as_i64)
        .map_or(1, |r| r as i32);
    let status_replicas = o
        .field("status")
        .and_then(|s| s.get("replicas"))
        .and_then(Value::as_i64)
        .unwrap_or(0) as i32;
    let selector = spec
        .and_then(|s| s.get("selector"))
        .and_then(|s| serde_json::from_value::<LabelSelector>(s.clone()).ok());
    scale(obj, Some(replicas), status_replicas, selector.as_ref())
}

fn scale(
    obj: &Object,
    spec_replicas: Option<i32>,
    status_replicas: i32,
    selector: Option<&LabelSelector>,
) -> Scale {
    let meta = obj.meta();
    Scale {
        metadata: ObjectMeta {
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            creation_timestamp: meta.creation_timestamp.clone(),
            ..Default::default()
        },
        spec: Some(ScaleSpec {
            replicas: spec_replicas,
        }),
        status: Some(ScaleStatus {
            replicas: status_replicas,
            selector: selector.map(selector_string),
        }),
    }
}

fn selector_string(selector: &LabelSelector) -> String {
    from_label_selector(selector)
        .map(|s| s.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
    use kubeplane_api::StoredReplicaSet;

    fn rs() -> Object {
        Object::ReplicaSet(Arc::new(StoredReplicaSet::from_k8s(ReplicaSet {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                labels: Some([("app".to_string(), "web".to_string())].into()),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(2),
                selector: LabelSelector {
                    match_labels: Some([("app".to_string(), "web".to_string())].into()),
                    ..Default::default()
                },
                ..Default::default()
            }),
            status: Some(ReplicaSetStatus {
                replicas: 1,
                ..Default::default()
            }),
        })))
    }

    #[test]
    fn a_scale_update_changes_only_the_replicas() {
        let before = rs();
        let after = with_replicas(&before, 5).unwrap();
        let (Object::ReplicaSet(b), Object::ReplicaSet(a)) = (&before, &after) else {
            unreachable!()
        };
        assert_eq!(a.spec.as_ref().unwrap().replicas, Some(5));
        let mut a = StoredReplicaSet::clone(a);
        a.spec.as_mut().unwrap().replicas = Some(2);
        assert_eq!(&a, &**b);
        assert!(with_replicas(&kubeplane_api::Object::Lease(Default::default()), 1).is_none());
    }

    #[test]
    fn the_scale_shows_desired_and_observed_replicas_and_the_selector_string() {
        let s = scale_of(&rs()).unwrap();
        assert_eq!(s.spec.unwrap().replicas, Some(2));
        let status = s.status.unwrap();
        assert_eq!(status.replicas, 1);
        assert_eq!(status.selector.as_deref(), Some("app=web"));
        assert_eq!(s.metadata.name.as_deref(), Some("web"));
    }

    #[test]
    fn a_negative_replica_count_is_invalid() {
        let key = rs().key();
        assert!(validate_replicas(&key, 0).is_ok());
        let err = validate_replicas(&key, -1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ReplicaSet default/web is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
    }

    fn stateful_set(spec: serde_json::Value) -> Object {
        let t = kubeplane_api::types::builtin("apps/v1", "StatefulSet").unwrap();
        let manifest = serde_json::json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": spec,
            "status": {"replicas": 2},
        });
        Object::Other(Arc::new(
            kubeplane_api::DynamicObject::from_value(t, &manifest).unwrap(),
        ))
    }

    #[test]
    fn a_stateful_set_has_a_scale_with_the_api_servers_default_of_one_replica() {
        let selector = serde_json::json!({"matchLabels": {"app": "db"}});
        let set = stateful_set(serde_json::json!({"selector": selector.clone()}));
        assert!(has_scale(set.kind()));
        let s = scale_of(&set).unwrap();
        assert_eq!(s.spec.unwrap().replicas, Some(1));
        let status = s.status.unwrap();
        assert_eq!(
            (status.replicas, status.selector.as_deref()),
            (2, Some("app=db"))
        );

        let scaled = with_replicas(&set, 5).unwrap();
        let Object::Other(o) = &scaled else {
            unreachable!()
        };
        assert_eq!(
            o.field("spec"),
            Some(&serde_json::json!({"selector": selector, "replicas": 5}))
        );
        assert_eq!(scale_of(&scaled).unwrap().spec.unwrap().replicas, Some(5));
    }

    #[test]
    fn other_workloads_have_no_scale() {
        for kind in ["DaemonSet", "Job", "CronJob"] {
            let api_version = if kind == "DaemonSet" {
                "apps/v1"
            } else {
                "batch/v1"
            };
            let t = kubeplane_api::types::builtin(api_version, kind).unwrap();
            assert!(!has_scale(Kind::Other(t)), "{kind}");
        }
    }
}

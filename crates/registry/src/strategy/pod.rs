//! The pod strategy (upstream `pkg/registry/core/pod/strategy.go`): what an update of the main
//! resource and of the status subresource keeps, the immutable nodeName, the grace period of a
//! delete, and the binding (`pods/binding`, upstream `storage/storage.go`'s `assignPod`).

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::DeleteOptions;
use kubeplane_core::features::FeatureGates;

/// The default grace period of a pod without terminationGracePeriodSeconds.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECS: i64 = 30;

/// The message of an update that changes a bound pod's node (upstream's pod update
/// validation, which lists the fields an update may change).
pub const MESSAGE_NODE_NAME_IMMUTABLE: &str = "spec.nodeName: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.schedulingGates` and `spec.terminationGracePeriodSeconds`";

/// The message of a binding of a pod that is being deleted.
pub const MESSAGE_BIND_DELETING: &str = "pod is being deleted, cannot be assigned to a host";

/// `podStrategy.PrepareForUpdate`: the stored status is kept. Copies only when they differ,
/// so an unchanged status stays shared.
pub fn prepare_for_update(old: &StoredPod, new: &mut Arc<StoredPod>) {
    if new.status() != old.status() {
        Arc::make_mut(new).set_stored_status(old.status().cloned());
    }
}

/// `podStatusStrategy.PrepareForUpdate`: the stored spec and ownerReferences are kept; the
/// rest of the metadata (annotations, labels) may change.
pub fn prepare_for_status_update(old: &StoredPod, new: &mut Arc<StoredPod>) {
    if new.spec != old.spec || new.node_name() != old.node_name() {
        // The spec's nodeName is kept too (it is stored outside the shared spec).
        let kept = Arc::make_mut(new);
        kept.spec.clone_from(&old.spec);
        kept.set_node_name(old.node_name().map(str::to_string));
    }
    if new.owner_references() != old.owner_references() {
        Arc::make_mut(new).set_shared_owner_references(old.shared_owner_references().cloned());
    }
}

fn node_name(pod: &StoredPod) -> Option<&str> {
    pod.node_name()
}

/// A bound pod's node may not change (upstream's pod update validation).
pub fn validate_update(old: &StoredPod, new: &StoredPod) -> Result<(), String> {
    let old_node = node_name(old);
    if old_node.is_some() && old_node != node_name(new) {
        return Err(MESSAGE_NODE_NAME_IMMUTABLE.into());
    }
    Ok(())
}

/// `podStrategy.CheckGracefulDelete`: the grace period of a graceful deletion, or `None` when
/// the pod goes at once. The period is the delete's, else the pod's
/// terminationGracePeriodSeconds, else 30 s; a pod not bound to a node (no kubelet to stop
/// it) and a period of 0 go at once.
pub fn check_graceful_delete(pod: &StoredPod, opts: &DeleteOptions) -> Option<i64> {
    let bound = node_name(pod).is_some_and(|n| !n.is_empty());
    let grace = opts.grace_period_secs.unwrap_or_else(|| {
        pod.spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(DEFAULT_TERMINATION_GRACE_PERIOD_SECS)
    });
    (bound && grace > 0).then_some(grace)
}

/// Why a binding is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindError {
    /// Another pod of that name (another UID), or the pod is bound already: Conflict.
    Conflict,
    /// The pod is being deleted: Invalid, with this message.
    Invalid(&'static str),
}

/// What a binding does besides setting the node, by kube-apiserver's feature gates (both on
/// from v1.35.0; off, the v1.34 binding).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct BindFeatures {
    /// ClearingNominatedNodeNameAfterBinding: the binding clears `status.nominatedNodeName`.
    pub clear_nominated_node_name: bool,
    /// PodTopologyLabelsAdmission: the binding's labels (the node's zone and region, from
    /// [`crate::admission::pod_topology_labels`]) are written onto the pod.
    pub topology_labels: bool,
}

impl BindFeatures {
    /// The binding of a run with these gates.
    pub fn from_gates(gates: &FeatureGates) -> BindFeatures {
        BindFeatures {
            clear_nominated_node_name: gates.enabled("ClearingNominatedNodeNameAfterBinding"),
            topology_labels: gates.enabled("PodTopologyLabelsAdmission"),
        }
    }
}

/// The pod as a binding to `node` leaves it (upstream `setPodNodeAndMetadata`): spec.nodeName
/// set, with ClearingNominatedNodeNameAfterBinding the nominated node cleared, with
/// PodTopologyLabelsAdmission the binding's `labels` written over the pod's, and the
/// PodScheduled condition True since `now`. Refused for another UID (when `uid` is given), a
/// pod being deleted, and a pod already bound.
pub fn bind(
    pod: &StoredPod,
    uid: &str,
    node: &str,
    now: Time,
    features: BindFeatures,
    labels: &BTreeMap<String, String>,
) -> Result<StoredPod, BindError> {
    if !uid.is_empty() && pod.metadata.uid.as_deref() != Some(uid) {
        return Err(BindError::Conflict);
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Err(BindError::Invalid(MESSAGE_BIND_DELETING));
    }
    if node_name(pod).is_some_and(|n| !n.is_empty()) {
        return Err(BindError::Conflict);
    }
    let mut p = pod.clone();
    p.set_node_name(Some(node.to_string()));
    if features.topology_labels {
        crate::admission::pod_topology_labels::copy_labels_overwriting(&mut p, labels);
    }
    p.update_status(|status| {
        if features.clear_nominated_node_name {
            status.nominated_node_name = None;
        }
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        conditions.retain(|c| c.type_ != "PodScheduled");
        conditions.push(PodCondition {
            type_: "PodScheduled".into(),
            status: "True".into(),
            last_transition_time: Some(now),
            ..Default::default()
        });
    });
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};

    const OFF: BindFeatures = BindFeatures {
        clear_nominated_node_name: false,
        topology_labels: false,
    };

    fn pod(node: Option<&str>, phase: Option<&str>) -> StoredPod {
        Pod {
            spec: Some(PodSpec {
                node_name: node.map(str::to_string),
                ..Default::default()
            }),
            status: phase.map(|p| PodStatus {
                phase: Some(p.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
        .into()
    }

    #[test]
    fn a_main_resource_update_keeps_the_stored_status() {
        let old = pod(Some("n1"), Some("Running"));
        let mut new = Arc::new(pod(Some("n1"), None));
        prepare_for_update(&old, &mut new);
        assert_eq!(new.status(), old.status());
    }

    #[test]
    fn a_status_update_keeps_the_spec_and_the_owner_references_but_not_the_annotations() {
        let old = pod(None, None);
        let mut changed = pod(Some("elsewhere"), Some("Running"));
        changed.set_owner_references(Some(vec![Default::default()]));
        changed.metadata.annotations = Some([("a".to_string(), "b".to_string())].into());
        let mut new = Arc::new(changed);
        prepare_for_status_update(&old, &mut new);
        assert_eq!(new.spec, old.spec);
        assert_eq!(new.node_name(), None, "the node is the stored one");
        assert_eq!(new.owner_references(), None);
        assert!(new.metadata.annotations.is_some());
        assert_eq!(new.phase(), Some("Running"));
    }

    #[test]
    fn an_unchanged_status_stays_shared() {
        let old = pod(Some("n1"), Some("Running"));
        let mut new = Arc::new(old.clone());
        let before = Arc::as_ptr(&new);
        prepare_for_update(&old, &mut new);
        prepare_for_status_update(&old, &mut new);
        assert_eq!(Arc::as_ptr(&new), before, "no copy was made");
    }

    #[test]
    fn a_bound_pods_node_may_not_change_but_an_unbound_pod_may_be_given_one() {
        let cases = [
            (None, Some("n1"), true),
            (Some("n1"), Some("n1"), true),
            (Some("n1"), Some("n2"), false),
            (Some("n1"), None, false),
        ];
        for (old, new, ok) in cases {
            let result = validate_update(&pod(old, None), &pod(new, None));
            assert_eq!(result.is_ok(), ok, "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn the_grace_period_is_the_deletes_then_the_pods_then_thirty_seconds_for_a_bound_pod() {
        let mut own = pod(Some("n1"), None);
        own.spec_mut().termination_grace_period_seconds = Some(5);
        let with = |g| DeleteOptions {
            grace_period_secs: g,
            ..DeleteOptions::default()
        };
        let cases = [
            (pod(Some("n1"), None), with(None), Some(30)),
            (own.clone(), with(None), Some(5)),
            (own, with(Some(10)), Some(10)),
            (pod(Some("n1"), None), with(Some(0)), None),
            (pod(None, None), with(None), None),
            (pod(Some(""), None), with(Some(10)), None),
        ];
        for (p, opts, want) in cases {
            assert_eq!(check_graceful_delete(&p, &opts), want, "{opts:?}");
        }
    }

    #[test]
    fn binding_sets_the_node_and_the_pod_scheduled_condition_once() {
        let none = BTreeMap::new();
        let mut p = pod(None, None);
        p.metadata.uid = Some("u1".into());
        let now = Time(jiff::Timestamp::UNIX_EPOCH);
        assert_eq!(
            bind(&p, "u2", "n1", now.clone(), OFF, &none),
            Err(BindError::Conflict)
        );
        let bound = bind(&p, "u1", "n1", now.clone(), OFF, &none).unwrap();
        assert_eq!(node_name(&bound), Some("n1"));
        let cond = &bound.status_k8s().unwrap().conditions.unwrap()[0];
        assert_eq!(
            (cond.type_.as_str(), cond.status.as_str()),
            ("PodScheduled", "True")
        );
        assert_eq!(
            bind(&bound, "", "n2", now.clone(), OFF, &none),
            Err(BindError::Conflict)
        );
        let mut deleting = p.clone();
        deleting.metadata.deletion_timestamp = Some(now.clone());
        assert_eq!(
            bind(&deleting, "", "n1", now, OFF, &none),
            Err(BindError::Invalid(MESSAGE_BIND_DELETING))
        );
    }

    #[test]
    fn the_v1_35_binding_clears_the_nomination_and_writes_the_binding_labels() {
        let mut p = pod(None, None);
        p.set_status(Some(PodStatus {
            nominated_node_name: Some("n2".into()),
            ..Default::default()
        }));
        p.set_labels(Some(
            [("topology.kubernetes.io/zone".to_string(), "own".to_string())].into(),
        ));
        let labels: BTreeMap<String, String> =
            [("topology.kubernetes.io/zone".to_string(), "z1".to_string())].into();
        let now = Time(jiff::Timestamp::UNIX_EPOCH);
        let on = BindFeatures {
            clear_nominated_node_name: true,
            topology_labels: true,
        };
        let cases = [
            (
                "with both gates off the pod keeps its nomination and labels",
                OFF,
                Some("n2"),
                "own",
            ),
            (
                "with ClearingNominatedNodeNameAfterBinding the nomination is cleared",
                BindFeatures {
                    clear_nominated_node_name: true,
                    ..OFF
                },
                None,
                "own",
            ),
            (
                "with PodTopologyLabelsAdmission the node's zone replaces the pod's",
                BindFeatures {
                    topology_labels: true,
                    ..OFF
                },
                Some("n2"),
                "z1",
            ),
            ("with both gates on both happen", on, None, "z1"),
        ];
        for (name, features, nominated, zone) in cases {
            let bound = bind(&p, "", "n1", now.clone(), features, &labels).unwrap();
            let status = bound.status().unwrap();
            assert_eq!(status.nominated_node_name(), nominated, "{name}");
            assert_eq!(
                bound.labels().unwrap()["topology.kubernetes.io/zone"],
                zone,
                "{name}"
            );
            assert_eq!(node_name(&bound), Some("n1"), "{name}");
        }
    }

    #[test]
    fn the_features_follow_the_release() {
        use kubeplane_core::version::v1;
        let at =
            |minor, patch| BindFeatures::from_gates(&FeatureGates::for_version(v1(minor, patch)));
        assert_eq!(at(34, 1), OFF);
        assert_eq!(at(34, 7), OFF);
        for minor in 35..=37 {
            assert_eq!(
                at(minor, 0),
                BindFeatures {
                    clear_nominated_node_name: true,
                    topology_labels: true
                }
            );
        }
    }
}

//! The `pods/eviction` subresource (upstream `pkg/registry/core/pod/storage/eviction.go`): a
//! delete that respects the pod's PodDisruptionBudget.
//!
//! - A pod that is Succeeded, Failed, Pending or already terminating is deleted without
//!   looking at budgets (it disrupts nothing more); a Pending one with its resourceVersion as
//!   a precondition, so a pod that became ready meanwhile is not deleted unchecked.
//! - A pod covered by more than one budget cannot be evicted (500).
//! - A not-ready pod is deleted without spending the budget when the budget's
//!   `unhealthyPodEvictionPolicy` is `AlwaysAllow`, or (the default `IfHealthyBudget`) while the
//!   budget has its desired healthy pods.
//! - Otherwise the budget must be up to date (`observedGeneration`) and allow a disruption: the
//!   eviction decrements `disruptionsAllowed`, records the pod in `disruptedPods` (the
//!   disruption controller then does not count it), and deletes the pod. A budget that allows
//!   none answers 429 TooManyRequests, "Cannot evict pod as it would violate the pod's
//!   disruption budget.", which `kubectl drain` retries.

use kubeplane_api::StoredPod;
use std::sync::Arc;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kubeplane_api::{ApiError, Cache, Client, DeleteOptions, Kind, Object, ObjectKey};
use kubeplane_core::labels::from_optional;
use kubeplane_core::SimTime;

/// The message of a blocked eviction.
pub const MESSAGE_BLOCKED: &str =
    "Cannot evict pod as it would violate the pod's disruption budget.";
/// The message of a pod covered by several budgets.
pub const MESSAGE_MULTIPLE_BUDGETS: &str =
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";
/// Upstream's bound on the budget's `disruptedPods` map.
pub const MAX_DISRUPTED_POD_SIZE: usize = 2000;

/// Evicts the pod `namespace/name`, deleting it with `opts` when its budget allows. It runs
/// over any [`Client`] of the registry (its reads, the budget's status update and the delete
/// go through the client's own rules); the client's cache must be current, as the
/// registry's clients' caches are when they call it.
pub fn evict(
    api: &mut dyn Client,
    now: SimTime,
    namespace: &str,
    name: &str,
    opts: DeleteOptions,
) -> Result<(), ApiError> {
    let key = ObjectKey::new(Kind::Pod, namespace, name);
    let Object::Pod(pod) = api.get(&key)? else {
        unreachable!("a pod key reads a pod")
    };
    let phase = pod.phase();
    let terminal = matches!(phase, Some("Succeeded" | "Failed"));
    let terminating = pod.metadata.deletion_timestamp.is_some();
    if terminal || terminating || phase == Some("Pending") {
        let opts = if terminal || terminating {
            opts
        } else {
            with_resource_version(opts, &pod)
        };
        return api.delete(&key, opts).map(|_| ());
    }
    let pdbs = budgets_of(api.cache(), &pod);
    let opts = match pdbs.as_slice() {
        [] => opts,
        [pdb] => {
            if !is_ready(&pod) && may_evict_unhealthy(pdb) {
                with_resource_version(opts, &pod)
            } else {
                check_and_decrement(api, now, pdb, name)?;
                opts
            }
        }
        _ => {
            return Err(ApiError::Internal {
                message: MESSAGE_MULTIPLE_BUDGETS.to_string(),
            })
        }
    };
    api.delete(&key, opts).map(|_| ())
}

fn with_resource_version(mut opts: DeleteOptions, pod: &StoredPod) -> DeleteOptions {
    if opts.precondition_resource_version.is_none() {
        opts.precondition_resource_version = pod.metadata.resource_version.clone();
    }
    opts
}

fn is_ready(pod: &StoredPod) -> bool {
    pod.status()
        .and_then(|s| s.condition_status("Ready"))
        .is_some_and(|c| c == "True")
}

/// The budgets of the pod's namespace that select it (a budget without a selector, or with an
/// empty or invalid one, selects nothing).
fn budgets_of(cache: &dyn Cache, pod: &StoredPod) -> Vec<Arc<PodDisruptionBudget>> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let empty = Default::default();
    let labels = pod.labels().unwrap_or(&empty);
    cache
        .list(Kind::PodDisruptionBudget)
        .filter_map(|o| match o {
            Object::PodDisruptionBudget(pdb) if o.namespace() == namespace => Some(pdb),
            _ => None,
        })
        .filter(|pdb| {
            let selector = pdb.spec.as_ref().and_then(|s| s.selector.as_ref());
            from_optional(selector).is_ok_and(|s| !s.is_empty() && s.matches(labels))
        })
        .cloned()
        .collect()
}

/// A not-ready pod may go without spending the budget: `AlwaysAllow`, or the budget is met.
fn may_evict_unhealthy(pdb: &PodDisruptionBudget) -> bool {
    let policy = pdb
        .spec
        .as_ref()
        .and_then(|s| s.unhealthy_pod_eviction_policy.as_deref());
    if policy == Some("AlwaysAllow") {
        return true;
    }
    let status = pdb.status.clone().unwrap_or_default();
    status.desired_healthy > 0 && status.current_healthy >= status.desired_healthy
}

fn too_many_requests(cause: String) -> ApiError {
    ApiError::TooManyRequests {
        message: MESSAGE_BLOCKED.to_string(),
        cause: Some(cause),
    }
}

/// Upstream `checkAndDecrement`, then the budget's status update.
fn check_and_decrement(
    api: &mut dyn Client,
    now: SimTime,
    pdb: &PodDisruptionBudget,
    pod_name: &str,
) -> Result<(), ApiError> {
    let name = pdb.metadata.name.as_deref().unwrap_or("");
    let mut status = pdb.status.clone().unwrap_or_default();
    if status.observed_generation.unwrap_or(0) < pdb.metadata.generation.unwrap_or(0) {
        return Err(too_many_requests(format!(
            "The disruption budget {name} is still being processed by the server."
        )));
    }
    let forbidden = |reason: &str| ApiError::Forbidden {
        message: format!("poddisruptionbudgets.policy \"{name}\" is forbidden: {reason}"),
    };
    if status.disruptions_allowed < 0 {
        return Err(forbidden("pdb disruptions allowed is negative"));
    }
    if status.disrupted_pods.as_ref().map_or(0, |m| m.len()) > MAX_DISRUPTED_POD_SIZE {
        return Err(forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if status.disruptions_allowed == 0 {
        return Err(too_many_requests(format!(
            "The disruption budget {name} needs {} healthy pods and has {} currently",
            status.desired_healthy, status.current_healthy
        )));
    }
    let ts = api.clock().timestamp(now);
    let observed = status.observed_generation;
    status
        .disrupted_pods
        .get_or_insert_with(Default::default)
        .insert(pod_name.to_string(), ts.clone());
    status.disruptions_allowed -= 1;
    if status.disruptions_allowed == 0 {
        set_insufficient_pods(status.conditions.get_or_insert_with(Vec::new), observed, ts);
    }
    let mut updated = PodDisruptionBudget::clone(pdb);
    updated.status = Some(status);
    api.update_status(Object::PodDisruptionBudget(Arc::new(updated)))
        .map(|_| ())
}

/// Upstream `UpdateDisruptionAllowedCondition` with no disruption left: DisruptionAllowed is
/// False for InsufficientPods (its transition time changes only with its status).
fn set_insufficient_pods(conditions: &mut Vec<Condition>, generation: Option<i64>, now: Time) {
    let wanted = Condition {
        type_: "DisruptionAllowed".into(),
        status: "False".into(),
        reason: "InsufficientPods".into(),
        message: String::new(),
        observed_generation: generation,
        last_transition_time: now,
    };
    match conditions.iter_mut().find(|c| c.type_ == wanted.type_) {
        Some(c) => {
            let transition = if c.status == wanted.status {
                c.last_transition_time.clone()
            } else {
                wanted.last_transition_time.clone()
            };
            *c = Condition {
                last_transition_time: transition,
                ..wanted
            };
        }
        None => conditions.push(wanted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::api::policy::v1::{PodDisruptionBudgetSpec, PodDisruptionBudgetStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

    use crate::testing::TestClient;

    fn store() -> TestClient {
        TestClient::new(1)
    }

    fn pod(store: &mut TestClient, name: &str, ready: bool) {
        let p = Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                labels: Some([("app".to_string(), "web".to_string())].into()),
                ..Default::default()
            },
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                node_name: Some("n1".into()),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        };
        store.create(Object::Pod(Arc::new(p.into()))).unwrap();
    }

    fn budget(store: &mut TestClient, policy: Option<&str>, status: PodDisruptionBudgetStatus) {
        let pdb = PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                selector: Some(LabelSelector {
                    match_labels: Some([("app".to_string(), "web".to_string())].into()),
                    ..Default::default()
                }),
                unhealthy_pod_eviction_policy: policy.map(str::to_string),
                ..Default::default()
            }),
            status: Some(status),
        };
        store
            .create(Object::PodDisruptionBudget(Arc::new(pdb)))
            .unwrap();
    }

    fn exhausted(current: i32, desired: i32) -> PodDisruptionBudgetStatus {
        PodDisruptionBudgetStatus {
            current_healthy: current,
            desired_healthy: desired,
            disruptions_allowed: 0,
            observed_generation: Some(1),
            ..Default::default()
        }
    }

    fn evict_a(store: &mut TestClient) -> Result<(), ApiError> {
        store.evict("default", "a", DeleteOptions::default())
    }

    #[test]
    fn a_not_ready_pod_goes_while_the_budget_is_met_under_if_healthy_budget() {
        let mut s = store();
        pod(&mut s, "a", false);
        budget(&mut s, None, exhausted(2, 2));
        evict_a(&mut s).unwrap();
        // The budget was not spent.
        let Some(Object::PodDisruptionBudget(pdb)) =
            s.store.get(Kind::PodDisruptionBudget, "default", "web")
        else {
            panic!("the budget")
        };
        assert_eq!(pdb.status.as_ref().unwrap().disrupted_pods, None);
    }

    #[test]
    fn a_not_ready_pod_is_blocked_when_the_budget_is_not_met_unless_always_allow() {
        let mut s = store();
        pod(&mut s, "a", false);
        budget(&mut s, None, exhausted(1, 2));
        assert!(matches!(
            evict_a(&mut s),
            Err(ApiError::TooManyRequests { .. })
        ));
        let mut s = store();
        pod(&mut s, "a", false);
        budget(&mut s, Some("AlwaysAllow"), exhausted(1, 2));
        evict_a(&mut s).unwrap();
    }

    #[test]
    fn a_budget_not_yet_observed_blocks_with_its_cause() {
        let mut s = store();
        pod(&mut s, "a", true);
        let mut status = exhausted(2, 1);
        status.disruptions_allowed = 1;
        status.observed_generation = Some(0);
        budget(&mut s, None, status);
        match evict_a(&mut s) {
            Err(ApiError::TooManyRequests { cause, .. }) => assert_eq!(
                cause.as_deref(),
                Some("The disruption budget web is still being processed by the server.")
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn spending_the_last_disruption_records_the_pod_and_the_condition() {
        let mut s = store();
        pod(&mut s, "a", true);
        let mut status = exhausted(2, 1);
        status.disruptions_allowed = 1;
        budget(&mut s, None, status);
        evict_a(&mut s).unwrap();
        let Some(Object::PodDisruptionBudget(pdb)) =
            s.store.get(Kind::PodDisruptionBudget, "default", "web")
        else {
            panic!("the budget")
        };
        let status = pdb.status.as_ref().unwrap();
        assert_eq!(status.disruptions_allowed, 0);
        assert!(status.disrupted_pods.as_ref().unwrap().contains_key("a"));
        let c = &status.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
            ("DisruptionAllowed", "False", "InsufficientPods")
        );
    }
}

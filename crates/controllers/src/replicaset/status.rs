//! Status calculation and update (upstream `replica_set_utils.go`).

use kubeplane_api::StoredPod;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::StoredReplicaSet;
use kubeplane_api::{Client, Kind, Object, ObjectKey};

use super::cache::{CachedPod, LabelSets, SelectorMemo};
use super::{
    min_ready_seconds, spec_replicas, template_selector, CONDITION_REPLICA_FAILURE,
    REASON_FAILED_CREATE, REASON_FAILED_DELETE,
};
use crate::controller_utils::{
    is_pod_available, is_pod_ready, ns_name, pod_labels, ready_long_enough,
};

pub(super) fn non_zero(n: i32) -> Option<i32> {
    (n != 0).then_some(n)
}

/// The pod counts of a ReplicaSet's status, over its claimed pods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct StatusCounts {
    pub(super) replicas: usize,
    pub(super) fully_labeled: i32,
    pub(super) ready: i32,
    pub(super) available: i32,
}

impl StatusCounts {
    /// The counts over pods as they are.
    pub(super) fn of_pods(
        rs: &StoredReplicaSet,
        claimed: &[Arc<StoredPod>],
        now: Timestamp,
    ) -> StatusCounts {
        let template_selector = template_selector(rs);
        let min_ready = min_ready_seconds(rs);
        let mut counts = StatusCounts {
            replicas: claimed.len(),
            ..StatusCounts::default()
        };
        for pod in claimed {
            if template_selector.matches(pod_labels(pod)) {
                counts.fully_labeled += 1;
            }
            if is_pod_ready(pod) {
                counts.ready += 1;
                if is_pod_available(pod, min_ready, now) {
                    counts.available += 1;
                }
            }
        }
        counts
    }

    /// The same counts over cached pods, from what the cache computed of them; the template
    /// selector is evaluated once per label map.
    pub(super) fn of_cached(
        rs: &StoredReplicaSet,
        claimed: &[&CachedPod],
        sets: &LabelSets,
        now: Timestamp,
    ) -> StatusCounts {
        let template_selector = template_selector(rs);
        let mut fully_labeled = SelectorMemo::new(&template_selector, sets);
        let min_ready = min_ready_seconds(rs);
        let mut counts = StatusCounts {
            replicas: claimed.len(),
            ..StatusCounts::default()
        };
        for pod in claimed {
            if fully_labeled.matches(pod.labels) {
                counts.fully_labeled += 1;
            }
            if pod.facts.ready {
                counts.ready += 1;
                if ready_long_enough(pod.facts.ready_time(), min_ready, now) {
                    counts.available += 1;
                }
            }
        }
        counts
    }
}

/// Upstream `calculateStatus`: counts over the claimed active pods, and the ReplicaFailure
/// condition while creates or deletes fail.
pub fn calculate_status(
    rs: &StoredReplicaSet,
    claimed: &[Arc<StoredPod>],
    manage_err: Option<&str>,
    terminating: Option<i32>,
    now: &Time,
) -> ReplicaSetStatus {
    let counts = StatusCounts::of_pods(rs, claimed, now.0);
    status_with_counts(rs, counts, manage_err, terminating, now)
}

/// [`calculate_status`] given the pod counts.
pub(super) fn status_with_counts(
    rs: &StoredReplicaSet,
    counts: StatusCounts,
    manage_err: Option<&str>,
    terminating: Option<i32>,
    now: &Time,
) -> ReplicaSetStatus {
    let mut status = rs.status.clone().unwrap_or_default();
    let has_failure = get_condition(&status, CONDITION_REPLICA_FAILURE).is_some();
    match manage_err {
        Some(err) if !has_failure => {
            let diff = counts.replicas as i64 - i64::from(spec_replicas(rs));
            let reason = match diff {
                d if d < 0 => REASON_FAILED_CREATE,
                d if d > 0 => REASON_FAILED_DELETE,
                _ => "",
            };
            set_condition(
                &mut status,
                ReplicaSetCondition {
                    type_: CONDITION_REPLICA_FAILURE.into(),
                    status: "True".into(),
                    reason: Some(reason.into()),
                    message: Some(err.to_string()),
                    last_transition_time: Some(now.clone()),
                },
            );
        }
        None if has_failure => remove_condition(&mut status, CONDITION_REPLICA_FAILURE),
        _ => {}
    }
    status.replicas = counts.replicas as i32;
    status.fully_labeled_replicas = non_zero(counts.fully_labeled);
    status.ready_replicas = non_zero(counts.ready);
    status.available_replicas = non_zero(counts.available);
    status.terminating_replicas = terminating;
    status
}

pub fn get_condition<'a>(
    status: &'a ReplicaSetStatus,
    type_: &str,
) -> Option<&'a ReplicaSetCondition> {
    status
        .conditions
        .as_ref()
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
}

/// Upstream `SetCondition`: a condition with the same status and reason is kept as it is;
/// otherwise the old one of that type is removed and the new one appended.
pub fn set_condition(status: &mut ReplicaSetStatus, cond: ReplicaSetCondition) {
    if let Some(cur) = get_condition(status, &cond.type_) {
        if cur.status == cond.status && cur.reason == cond.reason {
            return;
        }
    }
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    conditions.retain(|c| c.type_ != cond.type_);
    conditions.push(cond);
}

pub fn remove_condition(status: &mut ReplicaSetStatus, type_: &str) {
    if let Some(cs) = status.conditions.as_mut() {
        cs.retain(|c| c.type_ != type_);
        if cs.is_empty() {
            status.conditions = None;
        }
    }
}

/// Upstream `updateReplicaSetStatus`: a no-op when nothing changed and the generation was
/// observed; otherwise one write, and on failure one more on a fresh copy.
pub(super) fn update_replica_set_status(
    client: &mut dyn Client,
    rs: &Arc<StoredReplicaSet>,
    mut new_status: ReplicaSetStatus,
    with_terminating: bool,
) -> Result<Arc<StoredReplicaSet>, String> {
    let cur = rs.status.clone().unwrap_or_default();
    let g = |o: Option<i32>| o.unwrap_or(0);
    let generation = rs.metadata.generation.unwrap_or(0);
    if cur.replicas == new_status.replicas
        && g(cur.fully_labeled_replicas) == g(new_status.fully_labeled_replicas)
        && g(cur.ready_replicas) == g(new_status.ready_replicas)
        && g(cur.available_replicas) == g(new_status.available_replicas)
        && (!with_terminating || cur.terminating_replicas == new_status.terminating_replicas)
        && generation == cur.observed_generation.unwrap_or(0)
        && cur.conditions.as_deref().unwrap_or_default()
            == new_status.conditions.as_deref().unwrap_or_default()
    {
        return Ok(rs.clone());
    }
    new_status.observed_generation = (generation != 0).then_some(generation);
    let (ns, name) = ns_name(&rs.metadata);
    // The version to write: the cached one, copied once when its status is set and handed
    // to the write without a second copy (the write consumes it; a retry starts from a
    // fresh read).
    let mut attempt: Arc<StoredReplicaSet> = rs.clone();
    // What the attempt started from, for a write that answers with another kind.
    let mut base = rs.clone();
    let mut last_err = String::new();
    for i in 0..2 {
        Arc::make_mut(&mut attempt).status = Some(new_status.clone());
        let sent = std::mem::replace(&mut attempt, base.clone());
        match client.update_status(Object::ReplicaSet(sent)) {
            Ok(Object::ReplicaSet(updated)) => return Ok(updated),
            Ok(_) => {
                let mut written = StoredReplicaSet::clone(&base);
                written.status = Some(new_status);
                return Ok(Arc::new(written));
            }
            Err(e) => last_err = e.to_string(),
        }
        if i == 1 {
            break;
        }
        // Upstream reads the latest version with an uncached GET before the retry.
        match client.get(&ObjectKey::new(Kind::ReplicaSet, &ns, &name)) {
            Ok(Object::ReplicaSet(fresh)) => {
                base = fresh.clone();
                attempt = fresh;
            }
            _ => return Err(format!("replicasets.apps \"{name}\" not found")),
        }
    }
    Err(last_err)
}

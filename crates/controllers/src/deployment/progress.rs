//! Upstream `progress.go`: the Progressing condition, the progress deadline and the timer that
//! checks a stuck rollout again.

use super::*;
use kubeplane_api::StoredDeployment;
use kubeplane_api::StoredReplicaSet;

impl DeploymentController {
    /// Upstream `syncRolloutStatus` (progress.go): status plus the Progressing condition, and a
    /// timer for the progress deadline.
    pub(super) fn sync_rollout_status(
        &mut self,
        all: &[Arc<StoredReplicaSet>],
        new_rs: Option<&Arc<StoredReplicaSet>>,
        d: &mut DeploymentRef,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        let mut new_status = self.calculate_status(all, new_rs, d, &cx.now_ts);
        if !has_progress_deadline(d) {
            remove_condition(&mut new_status, CONDITION_PROGRESSING);
        }
        let current = get_condition(status_or_empty(d), CONDITION_PROGRESSING).cloned();
        let is_complete = new_status.replicas == new_status.updated_replicas
            && current.as_ref().and_then(|c| c.reason.as_deref()) == Some(REASON_NEW_RS_AVAILABLE);
        if has_progress_deadline(d) && !is_complete {
            let dname = d.metadata.name.clone().unwrap_or_default();
            let subject = |what: &str| match new_rs {
                Some(rs) => format!("ReplicaSet {:?} {what}", rs_name(rs)),
                None => format!("Deployment {dname:?} {what}"),
            };
            if deployment_complete(d, &new_status) {
                let c = new_condition(
                    CONDITION_PROGRESSING,
                    "True",
                    REASON_NEW_RS_AVAILABLE,
                    subject("has successfully progressed."),
                    &cx.now_ts,
                );
                set_condition(&mut new_status, c);
            } else if deployment_progressing(d, &new_status) {
                let mut c = new_condition(
                    CONDITION_PROGRESSING,
                    "True",
                    REASON_RS_UPDATED,
                    subject("is progressing."),
                    &cx.now_ts,
                );
                // Progress refreshes lastUpdateTime even when the reason stays the same.
                if let Some(cur) = current.as_ref() {
                    if cur.status == "True" {
                        c.last_transition_time = cur.last_transition_time.clone();
                    }
                    remove_condition(&mut new_status, CONDITION_PROGRESSING);
                }
                set_condition(&mut new_status, c);
            } else if deployment_timed_out(d, &new_status, cx.now_ts.0) {
                let c = new_condition(
                    CONDITION_PROGRESSING,
                    "False",
                    REASON_TIMED_OUT,
                    subject("has timed out progressing."),
                    &cx.now_ts,
                );
                set_condition(&mut new_status, c);
            }
        }
        match replica_failures(all, new_rs).into_iter().next() {
            Some(c) => set_condition(&mut new_status, c),
            None => remove_condition(&mut new_status, CONDITION_REPLICA_FAILURE),
        }
        if d.status.as_ref() == Some(&new_status) {
            self.requeue_stuck_deployment(d, &new_status, cx);
            return Ok(());
        }
        mutate(d).status = Some(new_status);
        self.update_deployment_status(d, cx)
    }

    /// Upstream `requeueStuckDeployment`: check again one second after the progress deadline.
    pub(super) fn requeue_stuck_deployment(
        &mut self,
        d: &StoredDeployment,
        new_status: &DeploymentStatus,
        cx: &mut SyncCtx,
    ) {
        let Some(cur) = get_condition(status_or_empty(d), CONDITION_PROGRESSING) else {
            return;
        };
        if !has_progress_deadline(d)
            || deployment_complete(d, new_status)
            || cur.reason.as_deref() == Some(REASON_TIMED_OUT)
        {
            return;
        }
        let Some(last_update) = cur.last_update_time.as_ref() else {
            return;
        };
        let key = ns_name(&d.metadata);
        let deadline = cx.client.clock().instant(last_update)
            + SimDuration::from_secs(i64::from(progress_deadline_seconds(d)));
        let after = deadline - cx.now;
        if after < SimDuration::from_secs(1) {
            self.queue.add_rate_limited(key, cx.now);
        } else {
            self.queue
                .add_after(key, cx.now + after + SimDuration::from_secs(1));
        }
    }
}

/// The ReplicaFailure conditions of the new ReplicaSet, or else of any ReplicaSet.
fn replica_failures(
    all: &[Arc<StoredReplicaSet>],
    new_rs: Option<&Arc<StoredReplicaSet>>,
) -> Vec<k8s_openapi::api::apps::v1::DeploymentCondition> {
    let of = |rs: &StoredReplicaSet| -> Vec<_> {
        rs.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.type_ == CONDITION_REPLICA_FAILURE)
            .map(rs_condition_to_deployment)
            .collect()
    };
    if let Some(rs) = new_rs {
        let c = of(rs);
        if !c.is_empty() {
            return c;
        }
    }
    all.iter().flat_map(|rs| of(rs)).collect()
}

//! Upstream `rolling.go`: the RollingUpdate strategy, scaling the new ReplicaSet up and the old
//! ones down within maxSurge and maxUnavailable.

use super::*;
use kubeplane_api::StoredDeployment;
use kubeplane_api::StoredReplicaSet;

impl DeploymentController {
    /// Upstream `rolloutRolling`.
    pub(super) fn rollout_rolling(
        &mut self,
        d: &mut DeploymentRef,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        let (new_rs, old_rss) =
            self.get_all_replica_sets_and_sync_revision(d, rs_list, true, cx)?;
        let new_rs = new_rs.ok_or("no new replica set")?;
        let mut all = old_rss.clone();
        all.push(new_rs.clone());
        if self.reconcile_new_replica_set(&all, &new_rs, d, rs_list, cx)? {
            return self.sync_rollout_status(&all, Some(&new_rs), d, cx);
        }
        if self.reconcile_old_replica_sets(
            &all,
            &filter_active(&old_rss),
            &new_rs,
            d,
            rs_list,
            cx,
        )? {
            return self.sync_rollout_status(&all, Some(&new_rs), d, cx);
        }
        if deployment_complete(d, status_or_empty(d)) {
            self.cleanup_deployment(&old_rss, d, cx)?;
        }
        self.sync_rollout_status(&all, Some(&new_rs), d, cx)
    }

    pub(super) fn reconcile_new_replica_set(
        &mut self,
        all: &[Arc<StoredReplicaSet>],
        new_rs: &Arc<StoredReplicaSet>,
        d: &StoredDeployment,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<bool, String> {
        let want = replicas(d);
        if rs_replicas(new_rs) == want {
            return Ok(false);
        }
        if rs_replicas(new_rs) > want {
            return Ok(self
                .scale_replica_set_and_record_event(new_rs, want, d, rs_list, cx)?
                .0);
        }
        let n = new_rs_new_replicas(d, all, new_rs)?;
        Ok(self
            .scale_replica_set_and_record_event(new_rs, n, d, rs_list, cx)?
            .0)
    }

    /// Upstream `reconcileOldReplicaSets`: scales old ReplicaSets down as far as
    /// maxUnavailable allows, unhealthy replicas first.
    pub(super) fn reconcile_old_replica_sets(
        &mut self,
        all: &[Arc<StoredReplicaSet>],
        old_rss: &[Arc<StoredReplicaSet>],
        new_rs: &Arc<StoredReplicaSet>,
        d: &StoredDeployment,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<bool, String> {
        if sum_spec_replicas(old_rss) == 0 {
            return Ok(false);
        }
        let all_pods = sum_spec_replicas(all);
        let min_available = replicas(d) - max_unavailable(d);
        let new_unavailable = rs_replicas(new_rs) - available_replicas(new_rs);
        let max_scaled_down = all_pods - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        let (old_rss, cleanup_count) =
            self.cleanup_unhealthy_replicas(old_rss, d, max_scaled_down, rs_list, cx)?;
        let mut all = old_rss.clone();
        all.push(new_rs.clone());
        let scaled_down =
            self.scale_down_old_replica_sets_for_rolling_update(&all, &old_rss, d, rs_list, cx)?;
        Ok(cleanup_count + scaled_down > 0)
    }

    pub(super) fn cleanup_unhealthy_replicas(
        &mut self,
        old_rss: &[Arc<StoredReplicaSet>],
        d: &StoredDeployment,
        max_cleanup: i32,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<(RsList, i32), String> {
        let mut old: RsList = old_rss.to_vec();
        old.sort_by(|a, b| by_creation_timestamp(a, b));
        let mut total = 0;
        for slot in old.iter_mut() {
            if total >= max_cleanup {
                break;
            }
            let spec = rs_replicas(slot);
            let available = available_replicas(slot);
            if spec == 0 || spec == available {
                continue;
            }
            let n = (max_cleanup - total).min(spec - available);
            let new_count = spec - n;
            if new_count > spec {
                return Err(format!("when cleaning up unhealthy replicas, got invalid request to scale down {}/{} {spec} -> {new_count}", slot.metadata.namespace.as_deref().unwrap_or(""), rs_name(slot)));
            }
            let (_, updated) =
                self.scale_replica_set_and_record_event(slot, new_count, d, rs_list, cx)?;
            total += n;
            *slot = updated;
        }
        Ok((old, total))
    }

    pub(super) fn scale_down_old_replica_sets_for_rolling_update(
        &mut self,
        all: &[Arc<StoredReplicaSet>],
        old_rss: &[Arc<StoredReplicaSet>],
        d: &StoredDeployment,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<i32, String> {
        let min_available = replicas(d) - max_unavailable(d);
        let available = sum_available_replicas(all);
        if available <= min_available {
            return Ok(0);
        }
        let mut old: RsList = old_rss.to_vec();
        old.sort_by(|a, b| by_creation_timestamp(a, b));
        let total_to_scale = available - min_available;
        let mut total = 0;
        for rs in &old {
            if total >= total_to_scale {
                break;
            }
            if rs_replicas(rs) == 0 {
                continue;
            }
            let n = rs_replicas(rs).min(total_to_scale - total);
            self.scale_replica_set_and_record_event(rs, rs_replicas(rs) - n, d, rs_list, cx)?;
            total += n;
        }
        Ok(total)
    }
}

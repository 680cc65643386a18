//! Upstream `recreate.go`: the Recreate strategy, which scales every old ReplicaSet to zero and
//! waits for their pods to be gone before scaling the new one up.

use super::*;
use kubeplane_api::StoredPod;
use kubeplane_api::StoredReplicaSet;

impl DeploymentController {
    /// Upstream `rolloutRecreate`: every old pod is gone before the new ReplicaSet scales up.
    pub(super) fn rollout_recreate(
        &mut self,
        d: &mut DeploymentRef,
        rs_list: &mut RsList,
        pod_map: &BTreeMap<String, Vec<Arc<StoredPod>>>,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        let (mut new_rs, mut old_rss) =
            self.get_all_replica_sets_and_sync_revision(d, rs_list, false, cx)?;
        let mut all = old_rss.clone();
        all.extend(new_rs.clone());
        let mut scaled_down = false;
        for rs in filter_active(&old_rss) {
            if self
                .scale_replica_set_and_record_event(&rs, 0, d, rs_list, cx)?
                .0
            {
                scaled_down = true;
            }
        }
        if scaled_down {
            return self.sync_rollout_status(&all, new_rs.as_ref(), d, cx);
        }
        if old_pods_running(new_rs.as_ref(), &old_rss, pod_map) {
            return self.sync_rollout_status(&all, new_rs.as_ref(), d, cx);
        }
        if new_rs.is_none() {
            let (n, o) = self.get_all_replica_sets_and_sync_revision(d, rs_list, true, cx)?;
            new_rs = n;
            old_rss = o;
            all = old_rss.clone();
            all.extend(new_rs.clone());
        }
        if let Some(rs) = new_rs.as_ref() {
            self.scale_replica_set_and_record_event(rs, replicas(d), d, rs_list, cx)?;
        }
        if deployment_complete(d, status_or_empty(d)) {
            self.cleanup_deployment(&old_rss, d, cx)?;
        }
        self.sync_rollout_status(&all, new_rs.as_ref(), d, cx)
    }
}

/// Any old pod still running (upstream `oldPodsRunning`): old ReplicaSets report replicas, or
/// an old pod is in a phase other than Failed and Succeeded (terminating pods included).
fn old_pods_running(
    new_rs: Option<&Arc<StoredReplicaSet>>,
    old_rss: &[Arc<StoredReplicaSet>],
    pod_map: &BTreeMap<String, Vec<Arc<StoredPod>>>,
) -> bool {
    if sum_actual_replicas(old_rss) > 0 {
        return true;
    }
    let new_uid = new_rs.and_then(|rs| rs.metadata.uid.clone());
    pod_map.iter().any(|(uid, pods)| {
        Some(uid) != new_uid.as_ref()
            && pods
                .iter()
                .any(|p| !matches!(pod_phase(p), "Failed" | "Succeeded"))
    })
}

//! `manageJob` (upstream `job_controller.go`): surplus pods deleted (all of them while
//! suspended, repeated or invalid indexes first), missing ones created after the pod failure
//! backoff (the Job's, or each index's with `backoffLimitPerIndex`), for Indexed Jobs one per
//! pending index.

use kubeplane_api::StoredPod;
use std::collections::BTreeSet;
use std::sync::Arc;

use jiff::SignedDuration;
use k8s_openapi::api::batch::v1::Job;
use kubeplane_api::Client;
use kubeplane_core::time::SimDuration;

use super::backoff_utils::remaining_for_index;
use super::indexed_job_utils::{
    duplicated_index_pods, first_pending_indexes, has_backoff_limit_per_index,
};
use super::sync::{delete_pod, JobCtx};
use super::tracking::{create_pod, remove_tracking_finalizer};
use super::util::*;
use super::{JobController, MAX_POD_CREATE_DELETE_PER_SYNC};
use crate::controller_utils::{is_pod_ready, key_string, ns_name};
use crate::replicaset::ranking::{less, merge_sort_by_less, PodSortKey, RankContext};

/// Active pods to remove: for Indexed Jobs those with repeated or invalid indexes first, then
/// the first `rm_at_least` in deletion order (upstream `activePodsForRemoval`).
fn active_pods_for_removal(
    job: &Job,
    pods: &[Arc<StoredPod>],
    rm_at_least: usize,
) -> Vec<Arc<StoredPod>> {
    let ctx = RankContext {
        now: None,
        pod_deletion_cost: false,
    };
    let rank = |v: &mut Vec<&StoredPod>| {
        let keys: Vec<PodSortKey> = v.iter().map(|p| PodSortKey::new(p, 0)).collect();
        let mut order: Vec<usize> = (0..keys.len()).collect();
        merge_sort_by_less(&mut order, &|a: &usize, b: &usize| {
            less(&keys[*a], &keys[*b], &ctx)
        });
        let sorted: Vec<&StoredPod> = order.iter().map(|&i| v[i]).collect();
        *v = sorted;
    };
    let refs: Vec<&StoredPod> = pods.iter().map(|p| p.as_ref()).collect();
    let (mut rm, mut left) = if is_indexed(job) {
        let completions = i64::from(spec(job).completions.unwrap_or(0));
        duplicated_index_pods(&refs, completions, rank)
    } else {
        (Vec::new(), refs)
    };
    if rm.len() < rm_at_least {
        rank(&mut left);
        let more = rm_at_least - rm.len();
        rm.extend(left.into_iter().take(more));
    }
    let names: BTreeSet<&str> = rm
        .iter()
        .map(|p| p.metadata.name.as_deref().unwrap_or(""))
        .collect();
    let mut out: Vec<Arc<StoredPod>> = Vec::with_capacity(rm.len());
    for p in &rm {
        let name = p.metadata.name.as_deref().unwrap_or("");
        if let Some(a) = pods
            .iter()
            .find(|a| a.metadata.name.as_deref() == Some(name))
        {
            out.push(a.clone());
        }
    }
    debug_assert_eq!(names.len(), out.len());
    out
}

impl JobController {
    /// Upstream `manageJob`: deletes surplus pods (all of them while suspended) or creates the
    /// missing ones after the pod failure backoff. Returns the active count after it.
    pub(super) fn manage_job(
        &mut self,
        ctx: &mut JobCtx,
        client: &mut dyn Client,
    ) -> (i32, Result<(), String>) {
        let active = ctx.active.len() as i32;
        let s = spec(&ctx.job);
        let parallelism = s.parallelism.unwrap_or(1);
        if is_suspended(&ctx.job) {
            let rm = active_pods_for_removal(&ctx.job, &ctx.active, active as usize);
            let (ready, removed, err) = self.delete_job_pods(ctx, &rm, client);
            ctx.terminating += removed;
            ctx.ready -= ready;
            return (active - removed, err);
        }
        let want = match s.completions {
            None if ctx.succeeded > 0 => active,
            None => parallelism,
            Some(c) => (c - ctx.succeeded).clamp(0, parallelism.max(0)),
        };
        let rm_at_least = (active - want).max(0) as usize;
        let mut rm = active_pods_for_removal(&ctx.job, &ctx.active, rm_at_least);
        rm.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
        if !rm.is_empty() {
            let (ready, removed, err) = self.delete_job_pods(ctx, &rm, client);
            ctx.terminating += removed;
            ctx.ready -= ready;
            return (active - removed, err);
        }
        let terminating = if only_replace_failed_pods(&ctx.job) {
            ctx.terminating
        } else {
            0
        };
        let diff = want - terminating - active;
        if diff <= 0 {
            return (active, Ok(()));
        }
        self.create_missing(ctx, active, diff, client)
    }

    /// The creating half of `manageJob`: after the pod failure backoff (the Job's, or each
    /// index's with `backoffLimitPerIndex`), up to `diff` pods, for Indexed Jobs one per
    /// pending index. Returns the active count after it.
    fn create_missing(
        &mut self,
        ctx: &mut JobCtx,
        mut active: i32,
        mut diff: i32,
        client: &mut dyn Client,
    ) -> (i32, Result<(), String>) {
        let per_index = has_backoff_limit_per_index(&ctx.job);
        if !per_index {
            let remaining = ctx.new_backoff.remaining(ctx.now_ts.0);
            if remaining > SignedDuration::ZERO {
                self.wait_for_backoff(ctx, remaining, None, client);
                // Upstream reports no active pods while it waits.
                return (0, Ok(()));
            }
        }
        diff = diff.min(MAX_POD_CREATE_DELETE_PER_SYNC as i32);
        let mut indexes = Vec::new();
        if is_indexed(&ctx.job) {
            let completions = i64::from(ctx.completions().unwrap_or(0));
            let held: Vec<&StoredPod> = ctx.active.iter().map(|p| p.as_ref()).collect();
            let failed = ctx.failed_indexes.as_ref();
            indexes = first_pending_indexes(
                &held,
                &ctx.succeeded_indexes,
                failed,
                diff as usize,
                completions,
            );
            if per_index {
                match self.indexes_past_backoff(ctx, indexes, client) {
                    Some(ready) => indexes = ready,
                    None => return (0, Ok(())),
                }
            }
            diff = indexes.len() as i32;
        }
        self.expectations
            .expect_creations(&ctx.key, diff as usize, ctx.now);
        let mut next = indexes.into_iter();
        let (created, err) = crate::controller_utils::slow_start_batch(
            diff as usize,
            crate::controller_utils::SLOW_START_INITIAL_BATCH_SIZE,
            || create_pod(ctx, next.next(), client),
        );
        for _ in created..diff as usize {
            self.expectations.creation_observed(&ctx.key);
        }
        active += created as i32;
        (active, err.map_or(Ok(()), Err))
    }

    /// Upstream `getPodCreationInfoForIndependentIndexes`: the indexes whose backoff is over, or
    /// (`None`) when none is, a sync queued for the first index whose backoff ends.
    fn indexes_past_backoff(
        &mut self,
        ctx: &JobCtx,
        indexes: Vec<i64>,
        client: &mut dyn Client,
    ) -> Option<Vec<i64>> {
        let mut ready = Vec::new();
        let mut first: Option<(SignedDuration, i64)> = None;
        for ix in indexes {
            let last = ctx.delayed_deletion.get(&ix).map(|p| p.as_ref());
            let remaining = remaining_for_index(last, ctx.now_ts.0);
            if remaining <= SignedDuration::ZERO {
                ready.push(ix);
            } else if first.is_none_or(|(r, _)| remaining < r) {
                first = Some((remaining, ix));
            }
        }
        match first {
            Some((remaining, ix)) if ready.is_empty() => {
                self.wait_for_backoff(ctx, remaining, Some(ix), client);
                None
            }
            _ => Some(ready),
        }
    }

    /// Queues a sync for when the pod failure backoff ends (at least a second away) and says
    /// why no pod is created until then.
    fn wait_for_backoff(
        &mut self,
        ctx: &JobCtx,
        remaining: SignedDuration,
        index: Option<i64>,
        client: &mut dyn Client,
    ) {
        let delay = remaining.max(SignedDuration::from_secs(1));
        let at = ctx.now + SimDuration(delay.as_nanos() as i64);
        self.queue.add_after(ctx.key.clone(), at);
        if client.explain() {
            let until = ctx.now + SimDuration(remaining.as_nanos() as i64);
            if self.explained_backoff.insert(ctx.key.clone(), until) != Some(until) {
                client.emit_record(super::explain::backoff(ctx, until, index));
            }
        }
    }

    /// Removes the tracking finalizer then deletes each pod (upstream `deleteJobPods`),
    /// expecting the deletions first. Returns (ready deleted, deleted, first error).
    fn delete_job_pods(
        &mut self,
        ctx: &JobCtx,
        pods: &[Arc<StoredPod>],
        client: &mut dyn Client,
    ) -> (i32, i32, Result<(), String>) {
        let keys: Vec<String> = pods
            .iter()
            .map(|p| key_string(&ns_name(&p.metadata)))
            .collect();
        self.expectations
            .expect_deletions(&ctx.key, keys.clone(), ctx.now);
        let (mut ready, mut deleted, mut err) = (0, 0, Ok(()));
        for (pod, pod_key) in pods.iter().zip(&keys) {
            let result = remove_tracking_finalizer(client, pod)
                .map_err(|e| format!("removing completion finalizer: {e}"))
                .and_then(|()| delete_pod(ctx, pod, client));
            match result {
                Ok(()) => deleted += 1,
                Err(e) => {
                    self.expectations.deletion_observed(&ctx.key, pod_key);
                    err = Err(e);
                }
            }
            if is_pod_ready(pod) {
                ready += 1;
            }
        }
        (ready, deleted, err)
    }
}

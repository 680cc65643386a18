//! One sync of a StatefulSet's pods and revisions (upstream `stateful_set_control.go`): the
//! current and update revisions, the replicas by ordinal, creation, the condemned pods beyond
//! the range, the rolling update, the status and the revision history.

use kubeplane_api::StoredPod;
use std::collections::BTreeSet;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use kubeplane_api::{ApiError, DeleteOptions, DynamicObject, Kind, Object, ObjectKey};

use super::explain;
use super::pod_control::{aggregate, other_object, PodControl};
use super::status::update_status;
use super::utils::{
    allows_burst, apply_revision, complete_rolling_update, equal_revision, hash_revision,
    identity_matches, in_ordinal_range, inconsistent_status, is_failed_or_succeeded, is_pending,
    is_running_and_available, is_running_and_ready, is_terminating, is_unavailable,
    max_unavailable, max_unavailable_field, min_ready_seconds, new_pod, new_revision,
    next_revision, ordinal, partition, pod_revision, replicas, revision_name, set_name,
    set_namespace, start_ordinal, storage_matches, update_strategy_type, REVISION_HASH_LABEL,
};
use crate::controller_utils::NsName;
use crate::explain::Explained;

/// Pods created or deleted at once at most in Parallel mode (upstream `MaxBatchSize`).
const MAX_BATCH_SIZE: usize = 500;

/// A pod of the replica range: one that exists, or the one the sync would create.
#[derive(Clone)]
pub(super) struct Replica {
    pub(super) pod: Arc<StoredPod>,
    pub(super) created: bool,
}

/// A sync's writes and what it reads besides the set and its pods.
pub(super) struct SetControl<'a> {
    pub(super) pc: PodControl<'a>,
    pub(super) now: Timestamp,
    /// MaxUnavailableStatefulSet.
    pub(super) max_unavailable_gate: bool,
    /// The explanation records written so far (`--explain`).
    pub(super) explained: &'a mut Explained,
}

fn by_revision(a: &ControllerRevision, b: &ControllerRevision) -> std::cmp::Ordering {
    a.revision
        .cmp(&b.revision)
        .then_with(|| {
            let t = |r: &ControllerRevision| r.metadata.creation_timestamp.clone().map(|t| t.0);
            t(a).cmp(&t(b))
        })
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

fn name_of(r: &ControllerRevision) -> &str {
    r.metadata.name.as_deref().unwrap_or_default()
}

/// Runs `f` over `0..n`: in order, stopping at the first that asks to (monotonic), or in
/// slow-start batches stopping after a batch with an error (upstream `runForAll`).
fn run_for_all(
    n: usize,
    monotonic: bool,
    mut f: impl FnMut(usize) -> Result<bool, String>,
) -> Result<bool, String> {
    if monotonic {
        for i in 0..n {
            if f(i)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    let (mut i, mut batch) = (0, 1usize.min(n));
    while batch > 0 {
        let errs: Vec<String> = (i..i + batch).filter_map(|k| f(k).err()).collect();
        aggregate(errs)?;
        i += batch;
        batch = (2 * batch).min(n - i).min(MAX_BATCH_SIZE);
    }
    Ok(false)
}

/// Upstream `computeReplicaStatus` summed over lists (`updateStatus`).
fn count_status(
    status: &mut StatefulSetStatus,
    min_ready: i32,
    now: Timestamp,
    revisions: (&str, &str),
    lists: &[&[Replica]],
) {
    let (mut n, mut ready, mut available, mut current, mut updated) = (0, 0, 0, 0, 0);
    for r in lists.iter().flat_map(|l| l.iter()) {
        if r.created {
            n += 1;
        }
        if is_running_and_ready(&r.pod) {
            ready += 1;
            if is_running_and_available(&r.pod, min_ready, now) {
                available += 1;
            }
        }
        if r.created && !is_terminating(&r.pod) {
            let rev = pod_revision(&r.pod);
            current += i32::from(rev == revisions.0);
            updated += i32::from(rev == revisions.1);
        }
    }
    status.replicas = n;
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status.current_replicas = Some(current);
    status.updated_replicas = Some(updated);
}

impl SetControl<'_> {
    /// Upstream `UpdateStatefulSet`: the sync, the status write and the history truncation.
    /// The status is returned when it was computed.
    pub(super) fn update_stateful_set(
        &mut self,
        set: &StatefulSet,
        stored: &Arc<DynamicObject>,
        pods: &[Arc<StoredPod>],
        mut revisions: Vec<ControllerRevision>,
    ) -> (Option<StatefulSetStatus>, Result<(), String>) {
        revisions.sort_by(by_revision);
        let (current, update, status, result) = self.perform_update(set, stored, pods, &revisions);
        let truncated = self.truncate_history(set, pods, &revisions, current, update);
        let result = match (result, truncated) {
            (Ok(()), t) => t,
            (Err(e), Ok(())) => Err(e),
            (Err(e), Err(t)) => aggregate(vec![e, t]),
        };
        (status, result)
    }

    #[allow(clippy::type_complexity)]
    fn perform_update(
        &mut self,
        set: &StatefulSet,
        stored: &Arc<DynamicObject>,
        pods: &[Arc<StoredPod>],
        revisions: &[ControllerRevision],
    ) -> (
        Option<ControllerRevision>,
        Option<ControllerRevision>,
        Option<StatefulSetStatus>,
        Result<(), String>,
    ) {
        let (current, update, collisions) = match self.get_revisions(set, revisions) {
            Ok(r) => r,
            Err(e) => return (None, None, None, Err(e)),
        };
        let (mut status, err) = self.update_set(set, &current, &update, collisions, pods);
        complete_rolling_update(set, &mut status);
        let status_err = if inconsistent_status(set, &status) {
            update_status(self.pc.client, stored, &status).err()
        } else {
            None
        };
        let result = match (err, status_err) {
            (Err(e), _) => Err(e),
            (Ok(()), Some(e)) => Err(e),
            (Ok(()), None) => Ok(()),
        };
        (Some(current), Some(update), Some(status), result)
    }

    /// Upstream `getStatefulSetRevisions`: the update revision is the set's template, reusing
    /// (and renumbering, for a rollback) an equal revision; the current one is the status's.
    fn get_revisions(
        &mut self,
        set: &StatefulSet,
        revisions: &[ControllerRevision],
    ) -> Result<(ControllerRevision, ControllerRevision, i32), String> {
        let mut collisions = set
            .status
            .as_ref()
            .and_then(|s| s.collision_count)
            .unwrap_or(0);
        let candidate = new_revision(set, next_revision(revisions), collisions);
        let equal: Vec<&ControllerRevision> = revisions
            .iter()
            .filter(|r| equal_revision(r, &candidate))
            .collect();
        let update = match (equal.last(), revisions.last()) {
            (Some(eq), Some(last)) if equal_revision(last, eq) => last.clone(),
            (Some(eq), _) => self.renumber_revision(eq, candidate.revision)?,
            (None, _) => self.create_revision(set, candidate, &mut collisions)?,
        };
        let current_name = set
            .status
            .as_ref()
            .and_then(|s| s.current_revision.clone())
            .unwrap_or_default();
        let current = revisions
            .iter()
            .find(|r| name_of(r) == current_name)
            .cloned()
            .unwrap_or_else(|| update.clone());
        Ok((current, update, collisions))
    }

    /// Upstream `CreateControllerRevision`: a name taken by other data moves the collision
    /// count on and hashes again.
    fn create_revision(
        &mut self,
        set: &StatefulSet,
        mut revision: ControllerRevision,
        collisions: &mut i32,
    ) -> Result<ControllerRevision, String> {
        let data = revision.data.clone().map(|d| d.0).unwrap_or_default();
        loop {
            let hash = hash_revision(&data, *collisions);
            let name = revision_name(set_name(set), &hash);
            revision.metadata.name = Some(name.clone());
            if let Some(l) = revision.metadata.labels.as_mut() {
                l.insert(REVISION_HASH_LABEL.into(), hash);
            }
            let obj = other_object("apps/v1", "ControllerRevision", &revision)
                .map_err(|e| e.to_string())?;
            match self.pc.client.create(obj) {
                Ok(created) => return Ok(parse_revision(&created).unwrap_or(revision)),
                Err(ApiError::AlreadyExists { key }) => {
                    let existing = self.pc.client.get(&key).map_err(|e| e.to_string())?;
                    if let Some(existing) = parse_revision(&existing) {
                        if equal_revision(&existing, &revision) {
                            return Ok(existing);
                        }
                    }
                    *collisions += 1;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Upstream `UpdateControllerRevision`: a new number for an existing revision.
    fn renumber_revision(
        &mut self,
        revision: &ControllerRevision,
        number: i64,
    ) -> Result<ControllerRevision, String> {
        if revision.revision == number {
            return Ok(revision.clone());
        }
        let mut r = revision.clone();
        r.revision = number;
        let obj = other_object("apps/v1", "ControllerRevision", &r).map_err(|e| e.to_string())?;
        let updated = self.pc.client.update(obj).map_err(|e| e.to_string())?;
        Ok(parse_revision(&updated).unwrap_or(r))
    }

    /// Upstream `truncateHistory`: revisions neither current, update, nor of a pod are deleted,
    /// oldest first, down to `revisionHistoryLimit`.
    fn truncate_history(
        &mut self,
        set: &StatefulSet,
        pods: &[Arc<StoredPod>],
        revisions: &[ControllerRevision],
        current: Option<ControllerRevision>,
        update: Option<ControllerRevision>,
    ) -> Result<(), String> {
        let mut live: BTreeSet<&str> = pods.iter().map(|p| pod_revision(p)).collect();
        live.extend(current.as_ref().map(name_of));
        live.extend(update.as_ref().map(name_of));
        let history: Vec<&ControllerRevision> = revisions
            .iter()
            .filter(|r| !live.contains(name_of(r)))
            .collect();
        let limit = set
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10);
        if limit < 0 || history.len() <= limit as usize {
            return Ok(());
        }
        for r in &history[..history.len() - limit as usize] {
            let key = ObjectKey::new(revision_kind(), set_namespace(set), name_of(r));
            match self.pc.client.delete(&key, DeleteOptions::default()) {
                Ok(_) | Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }

    /// Upstream `updateStatefulSet`: the status of the pods as they are, then the replicas
    /// processed in ordinal order, the condemned ones in reverse, and the rolling update.
    fn update_set(
        &mut self,
        set: &StatefulSet,
        current: &ControllerRevision,
        update: &ControllerRevision,
        collisions: i32,
        pods: &[Arc<StoredPod>],
    ) -> (StatefulSetStatus, Result<(), String>) {
        let current_set = apply_revision(set, current);
        let update_set = apply_revision(set, update);
        let min_ready = min_ready_seconds(set);
        let names = (name_of(current), name_of(update));
        let mut status = StatefulSetStatus {
            observed_generation: set.metadata.generation,
            current_revision: Some(names.0.to_string()),
            update_revision: Some(names.1.to_string()),
            collision_count: Some(collisions),
            ..Default::default()
        };
        let existing: Vec<Replica> = pods
            .iter()
            .map(|p| Replica {
                pod: p.clone(),
                created: true,
            })
            .collect();
        count_status(&mut status, min_ready, self.now, names, &[&existing]);
        let (mut replicas, condemned) =
            self.partition_pods(set, &current_set, &update_set, names, existing);
        if set.metadata.deletion_timestamp.is_some() {
            return (status, Ok(()));
        }
        let converged = self.converge(set, &update_set, &mut replicas, &condemned);
        count_status(
            &mut status,
            min_ready,
            self.now,
            names,
            &[&replicas, &condemned],
        );
        match converged {
            Ok(true) if update_strategy_type(set) != "OnDelete" => {
                let result = self.rolling_update(set, &replicas, names.1, &mut status);
                (status, result)
            }
            Ok(true) => {
                self.explain_update_stopped(set, &replicas, names.1, None);
                (status, Ok(()))
            }
            Ok(false) => {
                self.explain_blocked_rollout(set, &replicas, names.1);
                (status, Ok(()))
            }
            Err(e) => (status, Err(e)),
        }
    }

    /// Writes a record about `subject` of the set, unless it is the last one written (only
    /// with `--explain`).
    fn explain(
        &mut self,
        set: &StatefulSet,
        subject: &str,
        record: impl FnOnce(kubeplane_core::SimTime, &NsName) -> serde_json::Value,
    ) {
        if !self.pc.client.explain() {
            return;
        }
        let key = (set_namespace(set).to_string(), set_name(set).to_string());
        let r = record(self.pc.now, &key);
        self.explained.emit(&mut *self.pc.client, &key, subject, r);
    }

    /// The decision about `subject` no longer holds.
    fn unexplain(&mut self, set: &StatefulSet, subject: &str) {
        let key = (set_namespace(set).to_string(), set_name(set).to_string());
        self.explained.clear(&key, subject);
    }

    /// `UpdateStopped` when the replicas not at the update revision are exactly those the
    /// strategy leaves alone: below the partition (`Some`), or all of them under OnDelete.
    fn explain_update_stopped(
        &mut self,
        set: &StatefulSet,
        replicas: &[Replica],
        update: &str,
        partition: Option<i64>,
    ) {
        let held = partition.unwrap_or(i64::MAX).max(0) as usize;
        let outdated = |r: &&Replica| pod_revision(&r.pod) != update;
        let still_rolling = replicas.iter().skip(held).any(|r| outdated(&r));
        let kept: Vec<String> = replicas
            .iter()
            .take(held)
            .filter(outdated)
            .filter_map(|r| r.pod.metadata.name.clone())
            .collect();
        if still_rolling || kept.is_empty() {
            self.unexplain(set, "update");
            return;
        }
        self.explain(set, "update", |now, key| {
            explain::update_stopped(now, key, partition, &kept, update)
        });
    }

    /// The replicas processed in ordinal order, the condemned pods' claims fixed, then the
    /// condemned pods deleted highest first. `Ok(true)`: all done, the update may proceed.
    fn converge(
        &mut self,
        set: &StatefulSet,
        update_set: &StatefulSet,
        replicas: &mut [Replica],
        condemned: &[Replica],
    ) -> Result<bool, String> {
        let monotonic = !allows_burst(set);
        let min_ready = min_ready_seconds(set);
        if run_for_all(replicas.len(), monotonic, |i| {
            self.process_replica(set, update_set, monotonic, replicas, i)
        })? {
            return Ok(false);
        }
        self.unexplain(set, "create");
        if run_for_all(condemned.len(), monotonic, |i| {
            let pod = &condemned[i].pod;
            if !self.pc.claims_match_retention(update_set, pod) {
                self.pc.update_claims_for_retention(update_set, pod)?;
            }
            Ok(false)
        })? {
            return Ok(false);
        }
        let now = self.now;
        let first_unhealthy = replicas
            .iter()
            .chain(condemned.iter().rev())
            .find(|r| is_unavailable(&r.pod, min_ready, now))
            .and_then(|r| r.pod.metadata.name.clone());
        let exit = run_for_all(condemned.len(), monotonic, |i| {
            self.process_condemned(set, first_unhealthy.as_deref(), monotonic, &condemned[i])
        })?;
        Ok(!exit)
    }

    /// The pods in the ordinal range by ordinal (missing ones built at their revision), and
    /// the others with an ordinal, highest first.
    fn partition_pods(
        &self,
        set: &StatefulSet,
        current_set: &StatefulSet,
        update_set: &StatefulSet,
        names: (&str, &str),
        existing: Vec<Replica>,
    ) -> (Vec<Replica>, Vec<Replica>) {
        let start = start_ordinal(set);
        let mut slots: Vec<Option<Replica>> = vec![None; replicas(set).max(0) as usize];
        let mut condemned = Vec::new();
        for r in existing {
            if in_ordinal_range(&r.pod, set) {
                let i = (ordinal(&r.pod) - start) as usize;
                slots[i] = Some(r);
            } else if ordinal(&r.pod) >= 0 {
                condemned.push(r);
            }
        }
        let current_replicas = set
            .status
            .as_ref()
            .and_then(|s| s.current_replicas)
            .map_or(0, i64::from);
        let replicas = slots
            .into_iter()
            .enumerate()
            .map(|(i, slot)| {
                slot.unwrap_or_else(|| {
                    let o = start + i as i64;
                    let rolling = update_strategy_type(current_set) == "RollingUpdate";
                    let at_current = match partition(current_set) {
                        None => rolling && o < start + current_replicas,
                        Some(p) => o < start + p,
                    };
                    let pod = if at_current {
                        new_pod(current_set, o, names.0)
                    } else {
                        new_pod(update_set, o, names.1)
                    };
                    Replica {
                        pod: Arc::new(pod),
                        created: false,
                    }
                })
            })
            .collect();
        condemned.sort_by_key(|r| std::cmp::Reverse(ordinal(&r.pod)));
        (replicas, condemned)
    }

    /// Upstream `processReplica`. `Ok(true)`: stop here (monotonic).
    fn process_replica(
        &mut self,
        set: &StatefulSet,
        update_set: &StatefulSet,
        monotonic: bool,
        replicas: &mut [Replica],
        i: usize,
    ) -> Result<bool, String> {
        let r = replicas[i].clone();
        let pod = &r.pod;
        if r.created && is_failed_or_succeeded(pod) {
            if !is_terminating(pod) {
                self.pc.delete_pod(set, pod).map_err(|e| e.to_string())?;
            }
            return Ok(true);
        }
        if !r.created {
            if self.pc.pod_claim_is_stale(set, pod) {
                return Ok(true);
            }
            // The created pod is counted by the next sync, which observes it.
            self.pc.create_pod(set, pod)?;
            return Ok(monotonic);
        }
        if is_pending(pod) {
            self.pc.create_missing_claims(set, pod)?;
        }
        let min_ready = min_ready_seconds(set);
        if monotonic
            && (is_terminating(pod)
                || !is_running_and_ready(pod)
                || !is_running_and_available(pod, min_ready, self.now))
        {
            if let Some(next) = replicas[i + 1..].iter().find(|r| !r.created) {
                let next = next.pod.metadata.name.clone().unwrap_or_default();
                self.explain(set, "create", |now, key| {
                    explain::waiting_for_pod(now, key, pod, &next, min_ready)
                });
            }
            return Ok(true);
        }
        let retention_match = self.pc.claims_match_retention(update_set, pod);
        if identity_matches(set, pod) && storage_matches(set, pod) && retention_match {
            return Ok(false);
        }
        self.pc.update_pod(update_set, pod)?;
        Ok(false)
    }

    /// Upstream `processCondemned`: the condemned pod is deleted once every replica is healthy
    /// (monotonic), unless it is itself the first unhealthy pod.
    fn process_condemned(
        &mut self,
        set: &StatefulSet,
        first_unhealthy: Option<&str>,
        monotonic: bool,
        r: &Replica,
    ) -> Result<bool, String> {
        let pod = &r.pod;
        if is_terminating(pod) {
            return Ok(monotonic);
        }
        let is_first = pod.metadata.name.as_deref() == first_unhealthy;
        let min_ready = min_ready_seconds(set);
        if monotonic
            && !is_first
            && (!is_running_and_ready(pod) || !is_running_and_available(pod, min_ready, self.now))
        {
            return Ok(true);
        }
        self.pc.delete_pod(set, pod).map_err(|e| e.to_string())?;
        Ok(true)
    }

    /// The destructive update of RollingUpdate: from the highest ordinal down to the partition,
    /// the first pod not at the update revision is deleted (one at a time; with
    /// MaxUnavailableStatefulSet, up to maxUnavailable less the unavailable ones).
    fn rolling_update(
        &mut self,
        set: &StatefulSet,
        replicas: &[Replica],
        update: &str,
        status: &mut StatefulSetStatus,
    ) -> Result<(), String> {
        let min_ready = min_ready_seconds(set);
        let update_min = partition(set).unwrap_or(0).max(0) as usize;
        let outdated = |r: &Replica| pod_revision(&r.pod) != update && !is_terminating(&r.pod);
        if !self.max_unavailable_gate {
            for r in replicas.iter().skip(update_min).rev() {
                if outdated(r) {
                    match self.pc.delete_pod(set, &r.pod) {
                        Ok(()) | Err(ApiError::NotFound { .. }) => {}
                        Err(e) => return Err(e.to_string()),
                    }
                    status.current_replicas = Some(status.current_replicas.unwrap_or(0) - 1);
                    return Ok(());
                }
                if is_unavailable(&r.pod, min_ready, self.now) {
                    self.explain_rollout_wait(set, &replicas[update_min..], r, update);
                    return Ok(());
                }
            }
            self.unexplain(set, "rollout");
            self.explain_update_stopped(set, replicas, update, Some(update_min as i64));
            return Ok(());
        }
        let max = max_unavailable(max_unavailable_field(set), replicas.len() as i64)?;
        let unavailable = replicas
            .iter()
            .filter(|r| is_unavailable(&r.pod, min_ready, self.now))
            .count() as i64;
        if unavailable > max {
            let outdated: Vec<String> = replicas
                .iter()
                .skip(update_min)
                .filter(|r| outdated(r))
                .filter_map(|r| r.pod.metadata.name.clone())
                .collect();
            if !outdated.is_empty() {
                self.explain(set, "rollout", |now, key| {
                    explain::rollout_max_unavailable(now, key, unavailable, max, &outdated)
                });
            }
            return Ok(());
        }
        self.unexplain(set, "rollout");
        let mut budget = max - unavailable;
        for r in replicas.iter().skip(update_min).rev() {
            if budget <= 0 {
                break;
            }
            if outdated(r) {
                match self.pc.delete_pod(set, &r.pod) {
                    Ok(()) | Err(ApiError::NotFound { .. }) => {}
                    Err(e) => return Err(e.to_string()),
                }
                budget -= 1;
                status.current_replicas = Some(status.current_replicas.unwrap_or(0) - 1);
            }
        }
        self.explain_update_stopped(set, replicas, update, Some(update_min as i64));
        Ok(())
    }

    /// OrderedReady stops at the first unhealthy replica, before the rolling update runs: a
    /// `RolloutWaiting` record when that leaves an outdated pod (from the partition up) waiting.
    fn explain_blocked_rollout(&mut self, set: &StatefulSet, replicas: &[Replica], update: &str) {
        if allows_burst(set) || update_strategy_type(set) == "OnDelete" || !self.pc.client.explain()
        {
            return;
        }
        let min_ready = min_ready_seconds(set);
        let now = self.now;
        let unhealthy = |r: &&Replica| {
            r.created && (is_terminating(&r.pod) || is_unavailable(&r.pod, min_ready, now))
        };
        let Some(blocker) = replicas.iter().find(unhealthy) else {
            return;
        };
        let update_min = partition(set).unwrap_or(0).max(0) as usize;
        let next = replicas
            .iter()
            .skip(update_min)
            .rev()
            .find(|r| r.created && pod_revision(&r.pod) != update && !is_terminating(&r.pod));
        let Some(next) = next.and_then(|r| r.pod.metadata.name.clone()) else {
            return;
        };
        let blocker = blocker.pod.clone();
        self.explain(set, "rollout", |now, key| {
            explain::rollout_waiting_for_pod(now, key, &blocker, &next, min_ready)
        });
    }

    /// `RolloutWaiting` while `unavailable` holds up the next outdated pod below it in
    /// `range` (the replicas from the partition up).
    fn explain_rollout_wait(
        &mut self,
        set: &StatefulSet,
        range: &[Replica],
        unavailable: &Replica,
        update: &str,
    ) {
        let below = range
            .iter()
            .rev()
            .skip_while(|r| r.pod.metadata.name != unavailable.pod.metadata.name)
            .skip(1)
            .find(|r| pod_revision(&r.pod) != update && !is_terminating(&r.pod));
        let Some(next) = below.and_then(|r| r.pod.metadata.name.clone()) else {
            return;
        };
        let min_ready = min_ready_seconds(set);
        self.explain(set, "rollout", |now, key| {
            explain::rollout_waiting_for_pod(now, key, &unavailable.pod, &next, min_ready)
        });
    }
}

pub(super) fn revision_kind() -> Kind {
    Kind::Other(
        kubeplane_api::types::builtin("apps/v1", "ControllerRevision")
            .expect("ControllerRevision is a stored kind"),
    )
}

/// A stored ControllerRevision as the k8s-openapi type.
pub(super) fn parse_revision(obj: &Object) -> Option<ControllerRevision> {
    match obj {
        Object::Other(o) if o.type_.kind == "ControllerRevision" => {
            serde_json::from_value(obj.to_json()).ok()
        }
        _ => None,
    }
}

//! Upstream `sync.go`: scaling events and paused Deployments, finding or creating the new
//! ReplicaSet (with the revision bookkeeping), proportional scaling, writing a ReplicaSet's
//! size, cleaning up old ReplicaSets beyond revisionHistoryLimit, and computing the status.

use super::*;
use kubeplane_api::StoredDeployment;
use kubeplane_api::{StoredReplicaSet, StoredReplicaSetSpec};

impl DeploymentController {
    pub(super) fn sync_status_only(
        &mut self,
        d: &mut DeploymentRef,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        let (new_rs, old_rss) =
            self.get_all_replica_sets_and_sync_revision(d, rs_list, false, cx)?;
        let mut all = old_rss;
        all.extend(new_rs.clone());
        self.sync_deployment_status(&all, new_rs.as_ref(), d, cx)
    }

    /// Upstream `sync`: scaling events and paused deployments.
    pub(super) fn sync(
        &mut self,
        d: &mut DeploymentRef,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        let (new_rs, old_rss) =
            self.get_all_replica_sets_and_sync_revision(d, rs_list, false, cx)?;
        self.scale(d, new_rs.as_ref(), &old_rss, rs_list, cx)?;
        if is_paused(d) {
            self.cleanup_deployment(&old_rss, d, cx)?;
        }
        let mut all = old_rss;
        all.extend(new_rs.clone());
        self.sync_deployment_status(&all, new_rs.as_ref(), d, cx)
    }

    /// Upstream `checkPausedConditions`.
    pub(super) fn check_paused_conditions(
        &mut self,
        d: &mut DeploymentRef,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        if !has_progress_deadline(d) {
            return Ok(());
        }
        let reason = get_condition(status_or_empty(d), CONDITION_PROGRESSING)
            .and_then(|c| c.reason.as_deref());
        if reason == Some(REASON_TIMED_OUT) {
            return Ok(());
        }
        let paused_exists = reason == Some(REASON_PAUSED);
        let condition = if is_paused(d) && !paused_exists {
            new_condition(
                CONDITION_PROGRESSING,
                "Unknown",
                REASON_PAUSED,
                "Deployment is paused".into(),
                &cx.now_ts,
            )
        } else if !is_paused(d) && paused_exists {
            new_condition(
                CONDITION_PROGRESSING,
                "Unknown",
                REASON_RESUMED,
                "Deployment is resumed".into(),
                &cx.now_ts,
            )
        } else {
            return Ok(());
        };
        set_condition(
            mutate(d).status.get_or_insert_with(Default::default),
            condition,
        );
        self.update_deployment_status(d, cx)
    }

    /// Upstream `isScalingEvent`: an active ReplicaSet's desired-replicas annotation differs
    /// from the Deployment's replicas.
    pub(super) fn is_scaling_event(
        &mut self,
        d: &mut DeploymentRef,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<bool, String> {
        let (new_rs, old_rss) =
            self.get_all_replica_sets_and_sync_revision(d, rs_list, false, cx)?;
        let mut all = old_rss;
        all.extend(new_rs);
        Ok(filter_active(&all).iter().any(|rs| {
            desired_replicas_annotation(rs).is_some_and(|desired| desired != replicas(d))
        }))
    }

    /// Upstream `getAllReplicaSetsAndSyncRevision`: the new ReplicaSet (created when asked and
    /// missing) and every old one.
    ///
    /// A sync calls it twice (for the scaling check, then for the rollout). A call that found
    /// the new ReplicaSet and changed nothing is a function of the Deployment's and the
    /// ReplicaSets' versions alone, so the second call with the same versions returns what the
    /// first found ([`FoundReplicaSets`]) without finding and checking it again.
    pub(super) fn get_all_replica_sets_and_sync_revision(
        &mut self,
        d: &mut DeploymentRef,
        rs_list: &mut RsList,
        create: bool,
        cx: &mut SyncCtx,
    ) -> Result<(Option<Arc<StoredReplicaSet>>, RsList), String> {
        if let Some(found) = self
            .found_replica_sets
            .as_ref()
            .filter(|f| f.holds(d, rs_list))
        {
            return Ok((Some(found.new_rs.clone()), found.old_rss.clone()));
        }
        let before = FoundReplicaSets::key(d, rs_list);
        let verdicts = &mut self.template_verdicts;
        let existing = find_new_replica_set_by(rs_list, |rs| verdicts.equal(d, rs));
        let old_rss = old_replica_sets(existing.as_deref(), rs_list);
        let new_rs = self.get_new_replica_set(d, rs_list, existing, &old_rss, create, cx)?;
        if let Some(rs) = &new_rs {
            let found = before.found(rs, &old_rss);
            if found.holds(d, rs_list) {
                self.found_replica_sets = Some(found);
            }
        }
        Ok((new_rs, old_rss))
    }

    /// Upstream `getNewReplicaSet`, given what [`find_new_replica_set`] found in `rs_list`.
    pub(super) fn get_new_replica_set(
        &mut self,
        d: &mut DeploymentRef,
        rs_list: &mut RsList,
        existing: Option<Arc<StoredReplicaSet>>,
        old_rss: &[Arc<StoredReplicaSet>],
        create: bool,
        cx: &mut SyncCtx,
    ) -> Result<Option<Arc<StoredReplicaSet>>, String> {
        let new_revision = max_revision(old_rss) + 1;
        let (ns, dname) = ns_name(&d.metadata);

        if let Some(existing) = existing {
            return self.sync_existing_new_replica_set(d, rs_list, existing, new_revision, cx);
        }
        if !create {
            return Ok(None);
        }

        // The new ReplicaSet does not exist: create it.
        let (new_rs, new_replicas) = new_replica_set(d, old_rss, new_revision)?;
        let (created, already_exists) = self.create_new_replica_set(d, new_rs, cx)?;
        if !already_exists && new_replicas > 0 {
            cx.client.record_event(EventRecord::normal(
                cx.now,
                CONTROLLER_NAME,
                KIND,
                &ns,
                &dname,
                REASON_SCALING_REPLICA_SET,
                format!(
                    "Scaled up replica set {} from 0 to {new_replicas}",
                    rs_name(&created)
                ),
            ));
        }
        let mut needs_update = set_revision(d, &new_revision.to_string());
        if !already_exists && has_progress_deadline(d) {
            let msg = format!("Created new replica set {:?}", rs_name(&created));
            let status = mutate(d).status.get_or_insert_with(Default::default);
            set_condition(
                status,
                new_condition(
                    CONDITION_PROGRESSING,
                    "True",
                    REASON_NEW_RS_CREATED,
                    msg,
                    &cx.now_ts,
                ),
            );
            needs_update = true;
        }
        if needs_update {
            self.update_deployment_status(d, cx)?;
        }
        replace_rs(rs_list, &created);
        Ok(Some(created))
    }

    /// The part of upstream `getNewReplicaSet` for a new ReplicaSet that exists: brings its
    /// revision annotations and minReadySeconds up to date, or else the Deployment's revision
    /// and Progressing condition.
    fn sync_existing_new_replica_set(
        &mut self,
        d: &mut DeploymentRef,
        rs_list: &mut RsList,
        existing: Arc<StoredReplicaSet>,
        new_revision: i64,
        cx: &mut SyncCtx,
    ) -> Result<Option<Arc<StoredReplicaSet>>, String> {
        let want_min_ready = d.spec.as_ref().and_then(|s| s.min_ready_seconds);
        let min_ready_update = existing
            .spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0)
            != want_min_ready.unwrap_or(0);
        let (annotations_updated, ann) =
            existing_annotations(d, &existing, new_revision, min_ready_update);
        if annotations_updated || min_ready_update {
            let updated = patch_replica_set(cx.client, &existing, |r| {
                r.metadata.annotations = ann.clone();
                r.spec
                    .get_or_insert_with(Default::default)
                    .min_ready_seconds = want_min_ready;
                true
            })
            .map_err(|e| e.to_string())?
            .unwrap_or(existing);
            replace_rs(rs_list, &updated);
            return Ok(Some(updated));
        }
        // Unchanged, or changed only in annotations other than the revision (one that does
        // not parse): the revision is the existing ReplicaSet's.
        let rs_revision = existing
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION_ANNOTATION).cloned())
            .unwrap_or_default();
        let mut needs_update = set_revision(d, &rs_revision);
        let has_deadline = has_progress_deadline(d);
        // A missing status becomes an empty one here, as the mutable borrow of upstream's
        // code leaves it (the copy is made only then).
        if d.status.is_none() {
            mutate(d).status = Some(DeploymentStatus::default());
        }
        if has_deadline && get_condition(status_or_empty(d), CONDITION_PROGRESSING).is_none() {
            let msg = format!("Found new replica set {:?}", rs_name(&existing));
            set_condition(
                mutate(d).status.get_or_insert_with(Default::default),
                new_condition(
                    CONDITION_PROGRESSING,
                    "True",
                    REASON_FOUND_NEW_RS,
                    msg,
                    &cx.now_ts,
                ),
            );
            needs_update = true;
        }
        if needs_update {
            self.update_deployment_status(d, cx)?;
        }
        Ok(Some(existing))
    }

    /// Creates the new ReplicaSet. `Ok((rs, true))` when it already exists with our template;
    /// a hash collision bumps collisionCount, and a failure sets the Progressing condition.
    fn create_new_replica_set(
        &mut self,
        d: &mut DeploymentRef,
        new_rs: StoredReplicaSet,
        cx: &mut SyncCtx,
    ) -> Result<(Arc<StoredReplicaSet>, bool), String> {
        let (ns, dname) = ns_name(&d.metadata);
        let new_name = rs_name(&new_rs).to_string();
        match cx.client.create(Object::ReplicaSet(Arc::new(new_rs))) {
            Ok(Object::ReplicaSet(rs)) => {
                self.metrics.replica_sets_created += 1;
                Ok((rs, false))
            }
            Ok(_) => Err("created object is not a ReplicaSet".into()),
            Err(err @ ApiError::AlreadyExists { .. }) => {
                let existing = match cx.client.cache().get(Kind::ReplicaSet, &ns, &new_name) {
                    Some(Object::ReplicaSet(rs)) => rs.clone(),
                    _ => return Err(format!("replicasets.apps {new_name:?} not found")),
                };
                let ours = controller_of(&existing.metadata)
                    .is_some_and(|r| Some(&r.uid) == d.metadata.uid.as_ref());
                if ours && equal_ignore_hash(deployment_template_ref(d), rs_template_ref(&existing))
                {
                    Ok((existing, true))
                } else {
                    // A hash collision: bump collisionCount so the next sync computes another
                    // name.
                    let status = mutate(d).status.get_or_insert_with(Default::default);
                    status.collision_count = Some(status.collision_count.unwrap_or(0) + 1);
                    let _ = self.update_deployment_status(d, cx);
                    Err(err.to_string())
                }
            }
            Err(err) => {
                let msg = format!("Failed to create new replica set {new_name:?}: {err}");
                if has_progress_deadline(d) {
                    let status = mutate(d).status.get_or_insert_with(Default::default);
                    set_condition(
                        status,
                        new_condition(
                            CONDITION_PROGRESSING,
                            "False",
                            REASON_FAILED_RS_CREATE,
                            msg.clone(),
                            &cx.now_ts,
                        ),
                    );
                    let _ = self.update_deployment_status(d, cx);
                }
                cx.client.record_event(EventRecord::warning(
                    cx.now,
                    CONTROLLER_NAME,
                    KIND,
                    &ns,
                    &dname,
                    REASON_FAILED_RS_CREATE,
                    msg,
                ));
                Err(err.to_string())
            }
        }
    }

    /// Upstream `scale`: sizes the ReplicaSets on a scaling event or while paused.
    pub(super) fn scale(
        &mut self,
        d: &StoredDeployment,
        new_rs: Option<&Arc<StoredReplicaSet>>,
        old_rss: &[Arc<StoredReplicaSet>],
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        if let Some(active) = find_active_or_latest(new_rs, old_rss) {
            if rs_replicas(&active) == replicas(d) {
                return Ok(());
            }
            self.scale_replica_set_and_record_event(&active, replicas(d), d, rs_list, cx)?;
            return Ok(());
        }
        if is_saturated(d, new_rs) {
            for old in filter_active(old_rss) {
                self.scale_replica_set_and_record_event(&old, 0, d, rs_list, cx)?;
            }
            return Ok(());
        }
        if !is_rolling_update(d) {
            return Ok(());
        }
        let mut all: Vec<Arc<StoredReplicaSet>> = old_rss.to_vec();
        all.extend(new_rs.cloned());
        let mut all = filter_active(&all);
        let all_replicas = sum_spec_replicas(&all);
        let allowed = if replicas(d) > 0 {
            replicas(d) + max_surge(d)
        } else {
            0
        };
        let to_add = allowed - all_replicas;
        let operation = if to_add > 0 {
            all.sort_by(|a, b| by_size_newer(a, b));
            "up"
        } else if to_add < 0 {
            all.sort_by(|a, b| by_size_older(a, b));
            "down"
        } else {
            ""
        };
        let mut added = 0;
        let mut sizes: Vec<i32> = Vec::with_capacity(all.len());
        for rs in &all {
            if to_add != 0 {
                let p = get_proportion(rs, d, to_add, added);
                sizes.push(rs_replicas(rs) + p);
                added += p;
            } else {
                sizes.push(rs_replicas(rs));
            }
        }
        if to_add != 0 && !sizes.is_empty() {
            // The leftover goes to the first (largest) ReplicaSet.
            sizes[0] = (sizes[0] + to_add - added).max(0);
        }
        for (rs, size) in all.iter().zip(sizes) {
            self.scale_replica_set(rs, size, d, operation, rs_list, cx)?;
        }
        Ok(())
    }

    pub(super) fn scale_replica_set_and_record_event(
        &mut self,
        rs: &Arc<StoredReplicaSet>,
        new_scale: i32,
        d: &StoredDeployment,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<(bool, Arc<StoredReplicaSet>), String> {
        if rs_replicas(rs) == new_scale {
            return Ok((false, rs.clone()));
        }
        let operation = if rs_replicas(rs) < new_scale {
            "up"
        } else {
            "down"
        };
        self.scale_replica_set(rs, new_scale, d, operation, rs_list, cx)
    }

    /// Upstream `scaleReplicaSet`: writes the size and the replica annotations; records
    /// `ScalingReplicaSet` when the size changed.
    pub(super) fn scale_replica_set(
        &mut self,
        rs: &Arc<StoredReplicaSet>,
        new_scale: i32,
        d: &StoredDeployment,
        operation: &str,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<(bool, Arc<StoredReplicaSet>), String> {
        let size_needs_update = rs_replicas(rs) != new_scale;
        let desired = replicas(d);
        let max = desired + max_surge(d);
        let annotations_need_update = replicas_annotations_need_update(rs, desired, max);
        if !size_needs_update && !annotations_need_update {
            return Ok((false, rs.clone()));
        }
        let old_scale = rs_replicas(rs);
        let updated = patch_replica_set(cx.client, rs, |r| {
            r.spec.get_or_insert_with(Default::default).replicas = Some(new_scale);
            set_replicas_annotations(r, desired, max);
            true
        })
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("replicasets.apps {:?} not found", rs_name(rs)))?;
        replace_rs(rs_list, &updated);
        if size_needs_update {
            let (ns, name) = ns_name(&d.metadata);
            cx.client.record_event(EventRecord::normal(
                cx.now,
                CONTROLLER_NAME,
                KIND,
                &ns,
                &name,
                REASON_SCALING_REPLICA_SET,
                format!(
                    "Scaled {operation} replica set {} from {old_scale} to {new_scale}",
                    rs_name(&updated)
                ),
            ));
        }
        Ok((size_needs_update, updated))
    }

    /// Upstream `cleanupDeployment`: deletes the oldest fully scaled-down ReplicaSets beyond
    /// revisionHistoryLimit.
    pub(super) fn cleanup_deployment(
        &mut self,
        old_rss: &[Arc<StoredReplicaSet>],
        d: &StoredDeployment,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        let mut cleanable: RsList = old_rss
            .iter()
            .filter(|rs| rs.metadata.deletion_timestamp.is_none())
            .cloned()
            .collect();
        let diff = cleanable.len() as i64 - i64::from(revision_history_limit(d));
        if diff <= 0 {
            return Ok(());
        }
        cleanable.sort_by(|a, b| by_revision(a, b));
        for rs in cleanable.iter().take(diff as usize) {
            let status = rs.status.clone().unwrap_or_default();
            if status.replicas != 0
                || rs_replicas(rs) != 0
                || rs.metadata.generation.unwrap_or(0) > status.observed_generation.unwrap_or(0)
                || rs.metadata.deletion_timestamp.is_some()
            {
                continue;
            }
            let (ns, name) = ns_name(&rs.metadata);
            match cx.client.delete(
                &ObjectKey::new(Kind::ReplicaSet, &ns, &name),
                DeleteOptions::default(),
            ) {
                Ok(_) | Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }

    /// Upstream `calculateStatus`.
    pub(super) fn calculate_status(
        &self,
        all: &[Arc<StoredReplicaSet>],
        new_rs: Option<&Arc<StoredReplicaSet>>,
        d: &StoredDeployment,
        now: &Time,
    ) -> DeploymentStatus {
        let available = sum_available_replicas(all);
        let total = sum_spec_replicas(all);
        let unavailable = (total - available).max(0);
        let nz = |n: i32| (n != 0).then_some(n);
        let prev = status_or_empty(d);
        let mut status = DeploymentStatus {
            observed_generation: d.metadata.generation,
            replicas: nz(sum_actual_replicas(all)),
            updated_replicas: nz(new_rs
                .map(|rs| sum_actual_replicas(std::slice::from_ref(rs)))
                .unwrap_or(0)),
            ready_replicas: nz(sum_ready_replicas(all)),
            available_replicas: nz(available),
            unavailable_replicas: nz(unavailable),
            collision_count: prev.collision_count,
            conditions: prev.conditions.clone(),
            terminating_replicas: if self.terminating_replicas {
                terminating_replica_count(all)
            } else {
                prev.terminating_replicas
            },
        };
        let (cond_status, reason, message) = if available >= replicas(d) - max_unavailable(d) {
            (
                "True",
                REASON_MIN_AVAILABLE,
                "Deployment has minimum availability.",
            )
        } else {
            (
                "False",
                REASON_MIN_UNAVAILABLE,
                "Deployment does not have minimum availability.",
            )
        };
        set_available_condition(&mut status, cond_status, reason, message, now);
        status
    }

    pub(super) fn sync_deployment_status(
        &mut self,
        all: &[Arc<StoredReplicaSet>],
        new_rs: Option<&Arc<StoredReplicaSet>>,
        d: &mut DeploymentRef,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        let new_status = self.calculate_status(all, new_rs, d, &cx.now_ts);
        if d.status.as_ref() == Some(&new_status) {
            return Ok(());
        }
        mutate(d).status = Some(new_status);
        self.update_deployment_status(d, cx)
    }
}

/// [`set_condition`] of the Available condition, built only when it changes the status: the
/// same status and reason keep the existing condition, which most syncs find.
pub(super) fn set_available_condition(
    status: &mut DeploymentStatus,
    cond_status: &str,
    reason: &str,
    message: &str,
    now: &Time,
) {
    let kept = get_condition(status, CONDITION_AVAILABLE)
        .is_some_and(|c| c.status == cond_status && c.reason.as_deref() == Some(reason));
    if !kept {
        let cond = new_condition(
            CONDITION_AVAILABLE,
            cond_status,
            reason,
            message.into(),
            now,
        );
        set_condition(status, cond);
    }
}

/// `SetNewReplicaSetAnnotations` on an existing new ReplicaSet: whether it changed them, and
/// the annotations it leaves. Only the annotations can change here (an existing ReplicaSet
/// gets no replica annotations), so only they are copied, not the template, and only when
/// they change or the ReplicaSet is written anyway (`write`, which sends them): this runs a
/// few times in every sync of a Deployment. The unchanged case builds no ReplicaSet at all
/// (an empty one is a large value to build, move and drop).
fn existing_annotations(
    d: &StoredDeployment,
    existing: &StoredReplicaSet,
    new_revision: i64,
    write: bool,
) -> (bool, Option<BTreeMap<String, String>>) {
    if !write && new_replica_set_annotations_unchanged(d, existing, new_revision) {
        return (false, None);
    }
    let mut rs_copy = StoredReplicaSet::default();
    rs_copy
        .metadata
        .annotations
        .clone_from(&existing.metadata.annotations);
    let updated = set_new_replica_set_annotations(d, &mut rs_copy, new_revision, true);
    (updated, rs_copy.metadata.annotations)
}

/// What [`DeploymentController::get_all_replica_sets_and_sync_revision`] found for one
/// version of a Deployment and of its ReplicaSets when it found the new ReplicaSet and changed
/// nothing (the sync's Deployment is the same allocation, the list the same `Arc`s). The
/// Deployment is held weakly, as [`TemplateVerdicts`] holds it: a change of it (`Arc::make_mut`)
/// moves it to a new allocation while this is held, so an equal pointer with a live
/// allocation is the same version. The owner clears it at each sync.
pub(super) struct FoundReplicaSets {
    d: std::sync::Weak<StoredDeployment>,
    rs_list: RsList,
    new_rs: Arc<StoredReplicaSet>,
    old_rss: RsList,
}

/// The versions a call starts from, to be kept when the call changes nothing.
pub(super) struct FoundKey {
    d: std::sync::Weak<StoredDeployment>,
    rs_list: RsList,
}

impl FoundReplicaSets {
    fn key(d: &DeploymentRef, rs_list: &RsList) -> FoundKey {
        FoundKey {
            d: Arc::downgrade(d),
            rs_list: rs_list.clone(),
        }
    }

    /// Whether `d` and `rs_list` are the versions this was found for.
    fn holds(&self, d: &DeploymentRef, rs_list: &RsList) -> bool {
        std::ptr::eq(self.d.as_ptr(), Arc::as_ptr(d))
            && self.d.strong_count() > 0
            && self.rs_list.len() == rs_list.len()
            && self
                .rs_list
                .iter()
                .zip(rs_list)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

impl FoundKey {
    fn found(self, new_rs: &Arc<StoredReplicaSet>, old_rss: &RsList) -> FoundReplicaSets {
        FoundReplicaSets {
            d: self.d,
            rs_list: self.rs_list,
            new_rs: new_rs.clone(),
            old_rss: old_rss.clone(),
        }
    }
}

/// The new ReplicaSet of upstream `getNewReplicaSet`, not yet created: named after the hash of
/// the template, selecting it by that hash, with its replicas (also returned) and revision.
fn new_replica_set(
    d: &StoredDeployment,
    old_rss: &[Arc<StoredReplicaSet>],
    new_revision: i64,
) -> Result<(StoredReplicaSet, i32), String> {
    let (ns, dname) = ns_name(&d.metadata);
    let mut template = deployment_template(d);
    let collision_count = d.status.as_ref().and_then(|s| s.collision_count);
    let hash = compute_hash(&template, collision_count);
    template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH_LABEL.into(), hash.clone());
    let selector = clone_selector_and_add_label(
        &d.spec
            .as_ref()
            .map(|s| s.selector.clone())
            .unwrap_or_default(),
        POD_TEMPLATE_HASH_LABEL,
        &hash,
    );
    // The new ReplicaSet's template shares the Deployment's spec (it differs only in the
    // pod-template-hash label), and so do the pods made from it.
    let mut new_rs = StoredReplicaSet {
        metadata: ObjectMeta {
            name: Some(format!("{dname}-{hash}")),
            namespace: Some(ns.clone()),
            owner_references: Some(vec![new_controller_ref(API_VERSION, KIND, &d.metadata)]),
            labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
            ..Default::default()
        },
        spec: Some(StoredReplicaSetSpec {
            replicas: Some(0),
            min_ready_seconds: d.spec.as_ref().and_then(|s| s.min_ready_seconds),
            selector,
            template: Some(template),
        }),
        status: None,
    };
    let mut all: RsList = old_rss.to_vec();
    all.push(Arc::new(new_rs.clone()));
    let new_replicas = new_rs_new_replicas(d, &all, &new_rs)?;
    new_rs.spec.as_mut().expect("set above").replicas = Some(new_replicas);
    set_new_replica_set_annotations(d, &mut new_rs, new_revision, false);
    Ok((new_rs, new_replicas))
}

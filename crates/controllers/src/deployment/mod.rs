//! The Deployment controller (upstream `pkg/controller/deployment`): owns ReplicaSets, one per
//! pod template (named `<deployment>-<pod-template-hash>`), and moves replicas from the old ones
//! to the new one with the RollingUpdate or Recreate strategy; scales proportionally while a
//! rollout is in flight or the Deployment is paused; keeps revisionHistoryLimit old
//! ReplicaSets; reports status with the Available and Progressing conditions.
//!
//! Differences from upstream, kept on purpose (see `docs/replicaset.md`):
//! - ReplicaSet writes are applied to the current stored object (like a patch) rather than to
//!   the cached copy, so a status write of the ReplicaSet controller at the same virtual
//!   instant does not turn into a conflict and a retry 5 ms later;
//! - within one sync, the controller continues with the objects its own writes returned, where
//!   upstream continues with its stale cache copies and may conflict with itself;
//! - the pod-template-hash is FNV-32a over the template's JSON, not over Go's spew dump
//!   ([`util::compute_hash`]);
//! - the deprecated rollback annotation of extensions/v1beta1 is not supported.

pub mod util;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kubeplane_api::{
    ApiError, Client, Component, DeleteOptions, EventType, Kind, Object, ObjectKey, WatchEvent,
};
use kubeplane_core::labels::{from_label_selector, Selector};
use kubeplane_core::time::SimDuration;
use kubeplane_core::{EventRecord, SimTime};
use rustc_hash::FxHashMap;

use crate::controller_utils::{
    add_owner_reference, claim_action, controller_of, in_namespace, key_string, labels,
    new_controller_ref, ns_name, pod_phase, remove_owner_reference, resolve_controller_ref,
    selecting, ClaimAction, NsName, WorkQueue,
};
use util::*;

/// The event source of everything this controller records.
pub const CONTROLLER_NAME: &str = "deployment-controller";
pub const KIND: &str = "Deployment";
pub const API_VERSION: &str = "apps/v1";

pub const REASON_SCALING_REPLICA_SET: &str = "ScalingReplicaSet";
pub const REASON_SELECTING_ALL: &str = "SelectingAll";

type RsList = Vec<Arc<ReplicaSet>>;

fn deployment_selector(d: &Deployment) -> Result<Selector, String> {
    let sel = d
        .spec
        .as_ref()
        .map(|s| s.selector.clone())
        .unwrap_or_default();
    from_label_selector(&sel).map_err(|e| {
        format!(
            "deployment {} has invalid label selector: {e}",
            key_string(&ns_name(&d.metadata))
        )
    })
}

fn rs_name(rs: &ReplicaSet) -> &str {
    rs.metadata.name.as_deref().unwrap_or("")
}

/// Replaces the entry with the same UID (or appends) in a working list of ReplicaSets.
fn replace_rs(list: &mut RsList, rs: &Arc<ReplicaSet>) {
    match list.iter_mut().find(|r| r.metadata.uid == rs.metadata.uid) {
        Some(slot) => *slot = rs.clone(),
        None => list.push(rs.clone()),
    }
}

/// Everything one sync needs besides the controller's caches.
struct SyncCtx<'a> {
    now: SimTime,
    now_ts: Time,
    client: &'a mut dyn Client,
}

#[derive(Clone, Debug, Default)]
struct Metrics {
    syncs: u64,
    retries: u64,
    replica_sets_created: u64,
}

/// Where a pod comes in a namespace/name listing.
fn pod_listing_key(p: &Pod) -> (&str, &str) {
    let m = &p.metadata;
    (
        m.namespace.as_deref().unwrap_or("default"),
        m.name.as_deref().unwrap_or_default(),
    )
}

/// The Deployment controller. See the module documentation.
pub struct DeploymentController {
    deployments: BTreeMap<NsName, Arc<Deployment>>,
    replica_sets: BTreeMap<NsName, Arc<ReplicaSet>>,
    /// Pods with a controller, by the controller's UID and then the pod's UID (for the
    /// Recreate strategy's pod map, which sorts them by namespace and name). Hash maps keyed
    /// by UIDs: every pod event looks them up with borrowed strings, allocating nothing.
    pods_by_controller_uid: FxHashMap<String, FxHashMap<String, Arc<Pod>>>,
    queue: WorkQueue,
    metrics: Metrics,
}

impl Default for DeploymentController {
    fn default() -> Self {
        Self::new()
    }
}

impl DeploymentController {
    pub fn new() -> Self {
        DeploymentController {
            deployments: BTreeMap::new(),
            replica_sets: BTreeMap::new(),
            pods_by_controller_uid: FxHashMap::default(),
            queue: WorkQueue::default(),
            metrics: Metrics::default(),
        }
    }

    // ----- event handlers --------------------------------------------------------------------

    fn resolve_controller_ref(&self, namespace: &str, r: &OwnerReference) -> Option<NsName> {
        resolve_controller_ref(&self.deployments, KIND, namespace, r, |d| &d.metadata)
    }

    /// Deployments in the ReplicaSet's namespace whose non-empty selector matches its labels.
    fn deployments_for_replica_set(&self, rs: &ReplicaSet) -> Vec<NsName> {
        let ns = rs.metadata.namespace.as_deref().unwrap_or_default();
        selecting(
            &self.deployments,
            ns,
            labels(&rs.metadata),
            deployment_selector,
        )
    }

    fn on_replica_set(&mut self, ev: &WatchEvent, rs: &Arc<ReplicaSet>) {
        let key = ns_name(&rs.metadata);
        let cached = self.replica_sets.remove(&key);
        let ns = key.0.clone();
        match ev.type_ {
            EventType::Deleted => {
                if let Some(k) =
                    controller_of(&rs.metadata).and_then(|r| self.resolve_controller_ref(&ns, r))
                {
                    self.queue.add(k);
                }
                return;
            }
            EventType::Added | EventType::Modified => {
                self.replica_sets.insert(key.clone(), rs.clone());
            }
        }
        let old = cached.or_else(|| match &ev.old {
            Some(Object::ReplicaSet(o)) => Some(o.clone()),
            _ => None,
        });
        let cur_ref = controller_of(&rs.metadata);
        match old {
            None => {
                if let Some(r) = cur_ref {
                    if let Some(k) = self.resolve_controller_ref(&ns, r) {
                        self.queue.add(k);
                    }
                    return;
                }
                for k in self.deployments_for_replica_set(rs) {
                    self.queue.add(k);
                }
            }
            Some(old) => {
                if old.metadata.resource_version == rs.metadata.resource_version {
                    return;
                }
                let old_ref = controller_of(&old.metadata);
                let ref_changed = cur_ref != old_ref;
                if ref_changed {
                    if let Some(k) = old_ref.and_then(|r| self.resolve_controller_ref(&ns, r)) {
                        self.queue.add(k);
                    }
                }
                if let Some(r) = cur_ref {
                    if let Some(k) = self.resolve_controller_ref(&ns, r) {
                        self.queue.add(k);
                    }
                    return;
                }
                if old.metadata.labels != rs.metadata.labels || ref_changed {
                    for k in self.deployments_for_replica_set(rs) {
                        self.queue.add(k);
                    }
                }
            }
        }
    }

    fn on_pod(&mut self, ev: &WatchEvent, pod: &Arc<Pod>) {
        let pod_uid = pod.metadata.uid.as_deref().unwrap_or_default();
        // An update under the same controller replaces the entry in place.
        if ev.type_ == EventType::Modified {
            if let (Some(Object::Pod(old)), Some(r)) = (&ev.old, controller_of(&pod.metadata)) {
                if controller_of(&old.metadata).is_some_and(|o| o.uid == r.uid) {
                    if let Some(slot) = self
                        .pods_by_controller_uid
                        .get_mut(r.uid.as_str())
                        .and_then(|m| m.get_mut(pod_uid))
                    {
                        *slot = pod.clone();
                        return;
                    }
                }
            }
        }
        // Unindex the previous version.
        if let Some(Object::Pod(old)) = &ev.old {
            if let Some(r) = controller_of(&old.metadata) {
                if let Some(m) = self.pods_by_controller_uid.get_mut(r.uid.as_str()) {
                    m.remove(old.metadata.uid.as_deref().unwrap_or_default());
                    if m.is_empty() {
                        self.pods_by_controller_uid.remove(r.uid.as_str());
                    }
                }
            }
        }
        if ev.type_ != EventType::Deleted {
            if let Some(r) = controller_of(&pod.metadata) {
                let pods = match self.pods_by_controller_uid.get_mut(r.uid.as_str()) {
                    Some(m) => m,
                    None => self
                        .pods_by_controller_uid
                        .entry(r.uid.clone())
                        .or_default(),
                };
                pods.insert(pod_uid.to_string(), pod.clone());
            }
            return;
        }
        let key = ns_name(&pod.metadata);
        // A deleted pod may be the last one a Recreate rollout waits for.
        let Some(rs) = controller_of(&pod.metadata)
            .filter(|r| r.kind == "ReplicaSet")
            .and_then(|r| {
                self.replica_sets
                    .get(&(key.0.clone(), r.name.clone()))
                    .filter(|rs| rs.metadata.uid.as_deref() == Some(r.uid.as_str()))
            })
        else {
            return;
        };
        let Some(dkey) =
            controller_of(&rs.metadata).and_then(|r| self.resolve_controller_ref(&key.0, r))
        else {
            return;
        };
        let Some(d) = self.deployments.get(&dkey) else {
            return;
        };
        if strategy_type(d) != STRATEGY_RECREATE {
            return;
        }
        let rs_list: RsList = self
            .replica_sets
            .range((dkey.0.clone(), String::new())..)
            .take_while(|((n, _), _)| *n == dkey.0)
            .filter(|(_, rs)| {
                controller_of(&rs.metadata).is_some_and(|r| Some(&r.uid) == d.metadata.uid.as_ref())
            })
            .map(|(_, rs)| rs.clone())
            .collect();
        let n_pods: usize = self.pod_map(d, &rs_list).values().map(Vec::len).sum();
        if n_pods == 0 {
            self.queue.add(dkey);
        }
    }

    // ----- sync ------------------------------------------------------------------------------

    /// Upstream `syncDeployment`.
    fn sync_deployment(&mut self, key: &NsName, cx: &mut SyncCtx) -> Result<(), String> {
        self.metrics.syncs += 1;
        let Some(cached) = self.deployments.get(key).cloned() else {
            return Ok(());
        };
        let mut d = Deployment::clone(&cached);
        let selector = d
            .spec
            .as_ref()
            .map(|s| s.selector.clone())
            .unwrap_or_default();
        if selector_is_empty(&selector) {
            cx.client.record_event(EventRecord::warning(
                cx.now,
                CONTROLLER_NAME,
                KIND,
                &key.0,
                &key.1,
                REASON_SELECTING_ALL,
                "This deployment is selecting all pods. A non-empty selector is required.".into(),
            ));
            let status = d.status.get_or_insert_with(Default::default);
            if status.observed_generation.unwrap_or(0) < d.metadata.generation.unwrap_or(0) {
                status.observed_generation = d.metadata.generation;
                self.update_deployment_status(&mut d, cx)?;
            }
            return Ok(());
        }
        let mut rs_list = self.get_replica_sets_for_deployment(&d, cx)?;
        // Upstream lists the pods here; only Recreate reads them, so only Recreate pays for it
        // (a RollingUpdate Deployment of 10,000 replicas syncs dozens of times while scaling).
        let recreate = strategy_type(&d) == STRATEGY_RECREATE;
        let pod_map = recreate.then(|| self.pod_map(&d, &rs_list));
        if d.metadata.deletion_timestamp.is_some() {
            return self.sync_status_only(&mut d, &mut rs_list, cx);
        }
        self.check_paused_conditions(&mut d, cx)?;
        if is_paused(&d) {
            return self.sync(&mut d, &mut rs_list, cx);
        }
        if self.is_scaling_event(&mut d, &mut rs_list, cx)? {
            return self.sync(&mut d, &mut rs_list, cx);
        }
        if recreate {
            let pod_map = pod_map.unwrap_or_default();
            self.rollout_recreate(&mut d, &mut rs_list, &pod_map, cx)
        } else {
            self.rollout_rolling(&mut d, &mut rs_list, cx)
        }
    }

    /// Upstream `getReplicaSetsForDeployment`: claims the namespace's ReplicaSets, adopting
    /// matching orphans and releasing owned ones that stopped matching.
    fn get_replica_sets_for_deployment(
        &mut self,
        d: &Deployment,
        cx: &mut SyncCtx,
    ) -> Result<RsList, String> {
        let (ns, name) = ns_name(&d.metadata);
        let selector = deployment_selector(d)?;
        let uid = d.metadata.uid.clone().unwrap_or_default();
        let deleting = d.metadata.deletion_timestamp.is_some();
        let candidates: RsList = in_namespace(&self.replica_sets, &ns)
            .map(|(_, rs)| rs.clone())
            .collect();
        let mut claimed = Vec::new();
        let mut errors: Vec<String> = Vec::new();
        let mut can_adopt: Option<Result<(), String>> = None;
        for rs in candidates {
            let matches = selector.matches(labels(&rs.metadata));
            match claim_action(&uid, &ns, deleting, &rs.metadata, matches) {
                ClaimAction::Claim => claimed.push(rs),
                ClaimAction::Ignore => {}
                ClaimAction::Adopt => {
                    let check = can_adopt
                        .get_or_insert_with(|| recheck_deployment(cx.client, &ns, &name, &uid))
                        .clone();
                    if let Err(e) = check {
                        errors.push(format!(
                            "can't adopt ReplicaSet {}/{} ({}): {e}",
                            ns,
                            rs_name(&rs),
                            rs.metadata.uid.as_deref().unwrap_or("")
                        ));
                        continue;
                    }
                    let controller_ref = new_controller_ref(API_VERSION, KIND, &d.metadata);
                    match patch_replica_set(cx.client, &rs, |r| {
                        if controller_of(&r.metadata).is_some_and(|c| c.uid != controller_ref.uid) {
                            return false;
                        }
                        add_owner_reference(&mut r.metadata, controller_ref.clone());
                        true
                    }) {
                        Ok(Some(_)) => claimed.push(rs),
                        Ok(None) | Err(ApiError::NotFound { .. }) => {}
                        Err(e) => errors.push(e.to_string()),
                    }
                }
                ClaimAction::Release => {
                    match patch_replica_set(cx.client, &rs, |r| {
                        remove_owner_reference(&mut r.metadata, &uid);
                        true
                    }) {
                        Ok(_) | Err(ApiError::NotFound { .. }) | Err(ApiError::Invalid { .. }) => {}
                        Err(e) => errors.push(e.to_string()),
                    }
                }
            }
        }
        match errors.len() {
            0 => Ok(claimed),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// Pods of the Deployment's ReplicaSets that match its selector, by ReplicaSet UID
    /// (upstream `getPodMapForDeployment`).
    fn pod_map(
        &self,
        d: &Deployment,
        rs_list: &[Arc<ReplicaSet>],
    ) -> BTreeMap<String, Vec<Arc<Pod>>> {
        let selector = deployment_selector(d).unwrap_or_else(|_| Selector::nothing());
        let mut map = BTreeMap::new();
        for rs in rs_list {
            let uid = rs.metadata.uid.clone().unwrap_or_default();
            let mut pods: Vec<Arc<Pod>> = self
                .pods_by_controller_uid
                .get(&uid)
                .into_iter()
                .flat_map(|m| m.values())
                .filter(|p| selector.matches(labels(&p.metadata)))
                .cloned()
                .collect();
            // The order of a namespace/name listing, whatever the index's order.
            pods.sort_by(|a, b| pod_listing_key(a).cmp(&pod_listing_key(b)));
            map.insert(uid, pods);
        }
        map
    }

    fn sync_status_only(
        &mut self,
        d: &mut Deployment,
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
    fn sync(
        &mut self,
        d: &mut Deployment,
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
    fn check_paused_conditions(
        &mut self,
        d: &mut Deployment,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        if !has_progress_deadline(d) {
            return Ok(());
        }
        let status = d.status.clone().unwrap_or_default();
        let cond = get_condition(&status, CONDITION_PROGRESSING);
        let reason = cond.and_then(|c| c.reason.as_deref());
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
        set_condition(d.status.get_or_insert_with(Default::default), condition);
        self.update_deployment_status(d, cx)
    }

    /// Upstream `isScalingEvent`: an active ReplicaSet's desired-replicas annotation differs
    /// from the Deployment's replicas.
    fn is_scaling_event(
        &mut self,
        d: &mut Deployment,
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
    fn get_all_replica_sets_and_sync_revision(
        &mut self,
        d: &mut Deployment,
        rs_list: &mut RsList,
        create: bool,
        cx: &mut SyncCtx,
    ) -> Result<(Option<Arc<ReplicaSet>>, RsList), String> {
        let old_rss = find_old_replica_sets(d, rs_list);
        let new_rs = self.get_new_replica_set(d, rs_list, &old_rss, create, cx)?;
        Ok((new_rs, old_rss))
    }

    /// Upstream `getNewReplicaSet`.
    fn get_new_replica_set(
        &mut self,
        d: &mut Deployment,
        rs_list: &mut RsList,
        old_rss: &[Arc<ReplicaSet>],
        create: bool,
        cx: &mut SyncCtx,
    ) -> Result<Option<Arc<ReplicaSet>>, String> {
        let existing = find_new_replica_set(d, rs_list);
        let new_revision = max_revision(old_rss) + 1;
        let (ns, dname) = ns_name(&d.metadata);

        if let Some(existing) = existing {
            let mut rs_copy = ReplicaSet::clone(&existing);
            let annotations_updated =
                set_new_replica_set_annotations(d, &mut rs_copy, new_revision, true);
            let want_min_ready = d.spec.as_ref().and_then(|s| s.min_ready_seconds);
            let min_ready_update = rs_copy
                .spec
                .as_ref()
                .and_then(|s| s.min_ready_seconds)
                .unwrap_or(0)
                != want_min_ready.unwrap_or(0);
            if annotations_updated || min_ready_update {
                let ann = rs_copy.metadata.annotations.clone();
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
            let rs_revision = rs_copy
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(REVISION_ANNOTATION).cloned())
                .unwrap_or_default();
            let mut needs_update = set_deployment_revision(d, &rs_revision);
            let has_deadline = has_progress_deadline(d);
            let status = d.status.get_or_insert_with(Default::default);
            if has_deadline && get_condition(status, CONDITION_PROGRESSING).is_none() {
                let msg = format!("Found new replica set {:?}", rs_name(&rs_copy));
                set_condition(
                    status,
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
            return Ok(Some(existing));
        }
        if !create {
            return Ok(None);
        }

        // The new ReplicaSet does not exist: create it.
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
        let mut new_rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some(format!("{dname}-{hash}")),
                namespace: Some(ns.clone()),
                owner_references: Some(vec![new_controller_ref(API_VERSION, KIND, &d.metadata)]),
                labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
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
        let new_name = rs_name(&new_rs).to_string();

        let (created, already_exists) = match cx.client.create(Object::ReplicaSet(Arc::new(new_rs)))
        {
            Ok(Object::ReplicaSet(rs)) => {
                self.metrics.replica_sets_created += 1;
                (rs, false)
            }
            Ok(_) => return Err("created object is not a ReplicaSet".into()),
            Err(err @ ApiError::AlreadyExists { .. }) => {
                let existing = match cx.client.cache().get(Kind::ReplicaSet, &ns, &new_name) {
                    Some(Object::ReplicaSet(rs)) => rs.clone(),
                    _ => return Err(format!("replicasets.apps {new_name:?} not found")),
                };
                let ours = controller_of(&existing.metadata)
                    .is_some_and(|r| Some(&r.uid) == d.metadata.uid.as_ref());
                if ours && equal_ignore_hash(&deployment_template(d), &rs_template(&existing)) {
                    (existing, true)
                } else {
                    // A hash collision: bump collisionCount so the next sync computes another
                    // name.
                    let status = d.status.get_or_insert_with(Default::default);
                    status.collision_count = Some(status.collision_count.unwrap_or(0) + 1);
                    let _ = self.update_deployment_status(d, cx);
                    return Err(err.to_string());
                }
            }
            Err(err) => {
                let msg = format!("Failed to create new replica set {new_name:?}: {err}");
                if has_progress_deadline(d) {
                    let status = d.status.get_or_insert_with(Default::default);
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
                return Err(err.to_string());
            }
        };
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
        let mut needs_update = set_deployment_revision(d, &new_revision.to_string());
        if !already_exists && has_progress_deadline(d) {
            let msg = format!("Created new replica set {:?}", rs_name(&created));
            let status = d.status.get_or_insert_with(Default::default);
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

    /// Upstream `scale`: sizes the ReplicaSets on a scaling event or while paused.
    fn scale(
        &mut self,
        d: &Deployment,
        new_rs: Option<&Arc<ReplicaSet>>,
        old_rss: &[Arc<ReplicaSet>],
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
        let mut all: Vec<Arc<ReplicaSet>> = old_rss.to_vec();
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

    fn scale_replica_set_and_record_event(
        &mut self,
        rs: &Arc<ReplicaSet>,
        new_scale: i32,
        d: &Deployment,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<(bool, Arc<ReplicaSet>), String> {
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
    fn scale_replica_set(
        &mut self,
        rs: &Arc<ReplicaSet>,
        new_scale: i32,
        d: &Deployment,
        operation: &str,
        rs_list: &mut RsList,
        cx: &mut SyncCtx,
    ) -> Result<(bool, Arc<ReplicaSet>), String> {
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

    /// Upstream `rolloutRolling`.
    fn rollout_rolling(
        &mut self,
        d: &mut Deployment,
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
        if deployment_complete(d, &d.status.clone().unwrap_or_default()) {
            self.cleanup_deployment(&old_rss, d, cx)?;
        }
        self.sync_rollout_status(&all, Some(&new_rs), d, cx)
    }

    fn reconcile_new_replica_set(
        &mut self,
        all: &[Arc<ReplicaSet>],
        new_rs: &Arc<ReplicaSet>,
        d: &Deployment,
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
    fn reconcile_old_replica_sets(
        &mut self,
        all: &[Arc<ReplicaSet>],
        old_rss: &[Arc<ReplicaSet>],
        new_rs: &Arc<ReplicaSet>,
        d: &Deployment,
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

    fn cleanup_unhealthy_replicas(
        &mut self,
        old_rss: &[Arc<ReplicaSet>],
        d: &Deployment,
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

    fn scale_down_old_replica_sets_for_rolling_update(
        &mut self,
        all: &[Arc<ReplicaSet>],
        old_rss: &[Arc<ReplicaSet>],
        d: &Deployment,
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

    /// Upstream `rolloutRecreate`: every old pod is gone before the new ReplicaSet scales up.
    fn rollout_recreate(
        &mut self,
        d: &mut Deployment,
        rs_list: &mut RsList,
        pod_map: &BTreeMap<String, Vec<Arc<Pod>>>,
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
        if deployment_complete(d, &d.status.clone().unwrap_or_default()) {
            self.cleanup_deployment(&old_rss, d, cx)?;
        }
        self.sync_rollout_status(&all, new_rs.as_ref(), d, cx)
    }

    /// Upstream `cleanupDeployment`: deletes the oldest fully scaled-down ReplicaSets beyond
    /// revisionHistoryLimit.
    fn cleanup_deployment(
        &mut self,
        old_rss: &[Arc<ReplicaSet>],
        d: &Deployment,
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
    fn calculate_status(
        &self,
        all: &[Arc<ReplicaSet>],
        new_rs: Option<&Arc<ReplicaSet>>,
        d: &Deployment,
        now: &Time,
    ) -> DeploymentStatus {
        let available = sum_available_replicas(all);
        let total = sum_spec_replicas(all);
        let unavailable = (total - available).max(0);
        let nz = |n: i32| (n != 0).then_some(n);
        let prev = d.status.clone().unwrap_or_default();
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
            terminating_replicas: prev.terminating_replicas,
        };
        if available >= replicas(d) - max_unavailable(d) {
            set_condition(
                &mut status,
                new_condition(
                    CONDITION_AVAILABLE,
                    "True",
                    REASON_MIN_AVAILABLE,
                    "Deployment has minimum availability.".into(),
                    now,
                ),
            );
        } else {
            set_condition(
                &mut status,
                new_condition(
                    CONDITION_AVAILABLE,
                    "False",
                    REASON_MIN_UNAVAILABLE,
                    "Deployment does not have minimum availability.".into(),
                    now,
                ),
            );
        }
        status
    }

    fn sync_deployment_status(
        &mut self,
        all: &[Arc<ReplicaSet>],
        new_rs: Option<&Arc<ReplicaSet>>,
        d: &mut Deployment,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        let new_status = self.calculate_status(all, new_rs, d, &cx.now_ts);
        if d.status.as_ref() == Some(&new_status) {
            return Ok(());
        }
        d.status = Some(new_status);
        self.update_deployment_status(d, cx)
    }

    /// Upstream `syncRolloutStatus` (progress.go): status plus the Progressing condition, and a
    /// timer for the progress deadline.
    fn sync_rollout_status(
        &mut self,
        all: &[Arc<ReplicaSet>],
        new_rs: Option<&Arc<ReplicaSet>>,
        d: &mut Deployment,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        let mut new_status = self.calculate_status(all, new_rs, d, &cx.now_ts);
        if !has_progress_deadline(d) {
            remove_condition(&mut new_status, CONDITION_PROGRESSING);
        }
        let old_status = d.status.clone().unwrap_or_default();
        let current = get_condition(&old_status, CONDITION_PROGRESSING).cloned();
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
        d.status = Some(new_status);
        self.update_deployment_status(d, cx)
    }

    /// Upstream `requeueStuckDeployment`: check again one second after the progress deadline.
    fn requeue_stuck_deployment(
        &mut self,
        d: &Deployment,
        new_status: &DeploymentStatus,
        cx: &mut SyncCtx,
    ) {
        let old = d.status.clone().unwrap_or_default();
        let Some(cur) = get_condition(&old, CONDITION_PROGRESSING) else {
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

    /// Writes the Deployment's status subresource (the revision annotation too: upstream's
    /// status strategy keeps only the spec and the labels) and continues with the written
    /// object. The resourceVersion precondition keeps a concurrent spec change.
    fn update_deployment_status(
        &mut self,
        d: &mut Deployment,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        match cx
            .client
            .update_status(Object::Deployment(Arc::new(d.clone())))
        {
            Ok(Object::Deployment(updated)) => {
                *d = Deployment::clone(&updated);
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Any old pod still running (upstream `oldPodsRunning`): old ReplicaSets report replicas, or
/// an old pod is in a phase other than Failed and Succeeded (terminating pods included).
fn old_pods_running(
    new_rs: Option<&Arc<ReplicaSet>>,
    old_rss: &[Arc<ReplicaSet>],
    pod_map: &BTreeMap<String, Vec<Arc<Pod>>>,
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

/// The ReplicaFailure conditions of the new ReplicaSet, or else of any ReplicaSet.
fn replica_failures(
    all: &[Arc<ReplicaSet>],
    new_rs: Option<&Arc<ReplicaSet>>,
) -> Vec<k8s_openapi::api::apps::v1::DeploymentCondition> {
    let of = |rs: &ReplicaSet| -> Vec<_> {
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

/// An uncached GET of the Deployment before adopting: the very same Deployment must exist and
/// not be being deleted.
fn recheck_deployment(
    client: &mut dyn Client,
    ns: &str,
    name: &str,
    uid: &str,
) -> Result<(), String> {
    let Some(fresh) = client.cache().get(Kind::Deployment, ns, name) else {
        return Err(format!(
            "can't recheck DeletionTimestamp: deployments.apps {name:?} not found"
        ));
    };
    if fresh.uid() != uid {
        return Err(format!(
            "can't recheck DeletionTimestamp: original Deployment {ns}/{name} is gone: got uid {}, wanted {uid}",
            fresh.uid()
        ));
    }
    if let Some(ts) = fresh.meta().deletion_timestamp.as_ref() {
        return Err(format!("{ns}/{name} has just been deleted at {}", ts.0));
    }
    Ok(())
}

/// Applies `change` to the current stored version of a ReplicaSet (the same object: the UID
/// must match) and writes it. `Ok(None)` when the ReplicaSet is gone or `change` declines.
fn patch_replica_set(
    client: &mut dyn Client,
    rs: &ReplicaSet,
    change: impl FnOnce(&mut ReplicaSet) -> bool,
) -> Result<Option<Arc<ReplicaSet>>, ApiError> {
    let (ns, name) = ns_name(&rs.metadata);
    let key = ObjectKey::new(Kind::ReplicaSet, &ns, &name);
    let fresh = match client.cache().get_key(&key) {
        Some(Object::ReplicaSet(r)) => r.clone(),
        _ => return Err(ApiError::NotFound { key }),
    };
    if fresh.metadata.uid != rs.metadata.uid {
        return Err(ApiError::Conflict { key });
    }
    let mut copy = ReplicaSet::clone(&fresh);
    if !change(&mut copy) {
        return Ok(None);
    }
    match client.update(Object::ReplicaSet(Arc::new(copy)))? {
        Object::ReplicaSet(updated) => Ok(Some(updated)),
        _ => Ok(None),
    }
}

impl Component for DeploymentController {
    fn name(&self) -> &'static str {
        CONTROLLER_NAME
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        self.queue.last_seen = self.queue.last_seen.max(now);
        match &ev.object {
            Object::Deployment(d) => {
                let key = ns_name(&d.metadata);
                match ev.type_ {
                    EventType::Deleted => {
                        self.deployments.remove(&key);
                    }
                    _ => {
                        self.deployments.insert(key.clone(), d.clone());
                    }
                }
                self.queue.add(key);
            }
            Object::ReplicaSet(rs) => self.on_replica_set(ev, rs),
            Object::Pod(p) => self.on_pod(ev, p),
            _ => {}
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        let now_ts = client.clock().timestamp(now);
        let mut cx = SyncCtx {
            now,
            now_ts,
            client,
        };
        let keys: BTreeSet<NsName> = self.queue.take_due(now);
        for key in keys {
            match self.sync_deployment(&key, &mut cx) {
                Ok(()) => self.queue.forget(&key),
                Err(_) => {
                    self.metrics.retries += 1;
                    self.queue.add_rate_limited(key, now);
                }
            }
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        self.queue.next_wakeup()
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        vec![
            (
                "workqueue_adds_total{name=\"deployment\"}".into(),
                self.metrics.syncs,
            ),
            (
                "workqueue_retries_total{name=\"deployment\"}".into(),
                self.metrics.retries,
            ),
            (
                "kubeplane_deployment_replicasets_created_total".into(),
                self.metrics.replica_sets_created,
            ),
        ]
    }
}

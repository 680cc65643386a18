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

mod pod_index;
mod progress;
mod recreate;
mod rolling;
mod sync;
pub mod util;

#[cfg(test)]
mod tests;

use kubeplane_api::StoredPod;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DeploymentStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, ObjectMeta, OwnerReference, Time,
};
use kubeplane_api::StoredDeployment;
use kubeplane_api::StoredReplicaSet;
use kubeplane_api::{
    ApiError, Client, Component, DeleteOptions, EventType, Kind, Object, ObjectKey, WatchEvent,
};
use kubeplane_core::features::FeatureGates;
use kubeplane_core::labels::{from_label_selector, Selector};
use kubeplane_core::time::SimDuration;
use kubeplane_core::{EventRecord, SimTime};
use rustc_hash::FxHashMap;

use crate::controller_utils::{
    add_owner_reference, claim_action, controller_of, in_namespace, key_string, labels,
    new_controller_ref, ns_name, pod_controller, pod_labels, pod_phase, remove_owner_reference,
    resolve_controller_ref, selecting, ClaimAction, NsName, WorkQueue,
};
use pod_index::{ByUid, PodsByUid};
use util::*;

/// The event source of everything this controller records.
pub const CONTROLLER_NAME: &str = "deployment-controller";
pub const KIND: &str = "Deployment";
pub const API_VERSION: &str = "apps/v1";

pub const REASON_SCALING_REPLICA_SET: &str = "ScalingReplicaSet";
pub const REASON_SELECTING_ALL: &str = "SelectingAll";

type RsList = Vec<Arc<StoredReplicaSet>>;

/// The Deployment a sync works on: the cached version, shared until the sync changes it (a
/// write of the status or of the revision annotation), and then the sync's own copy. A sync
/// that writes nothing copies nothing; one that writes copies the Deployment once, where a
/// copy per sync and two per write were made before.
type DeploymentRef = Arc<StoredDeployment>;

/// The sync's own copy of the Deployment, made on its first change.
fn mutate(d: &mut DeploymentRef) -> &mut StoredDeployment {
    Arc::make_mut(d)
}

/// The status of a Deployment, or the empty status (what a missing one reads as).
fn status_or_empty(d: &StoredDeployment) -> &DeploymentStatus {
    static EMPTY: std::sync::OnceLock<DeploymentStatus> = std::sync::OnceLock::new();
    d.status
        .as_ref()
        .unwrap_or_else(|| EMPTY.get_or_init(DeploymentStatus::default))
}

/// [`set_deployment_revision`] on a shared Deployment, copying it only when the revision
/// annotation changes (a missing annotation map counts as a change, as there).
fn set_revision(d: &mut DeploymentRef, revision: &str) -> bool {
    let current = d
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION_ANNOTATION))
        .map(String::as_str);
    if current == Some(revision) {
        return false;
    }
    set_deployment_revision(mutate(d), revision)
}

/// A placeholder left in a sync's Deployment while its copy is being written.
fn written_placeholder() -> DeploymentRef {
    static EMPTY: std::sync::OnceLock<DeploymentRef> = std::sync::OnceLock::new();
    EMPTY
        .get_or_init(|| Arc::new(StoredDeployment::default()))
        .clone()
}

/// The Deployment's label selector (an empty one when it has no spec), read in place.
fn label_selector(d: &StoredDeployment) -> &LabelSelector {
    static EMPTY: std::sync::OnceLock<LabelSelector> = std::sync::OnceLock::new();
    match d.spec.as_ref() {
        Some(spec) => &spec.selector,
        None => EMPTY.get_or_init(LabelSelector::default),
    }
}

fn deployment_selector(d: &StoredDeployment) -> Result<Selector, String> {
    from_label_selector(label_selector(d)).map_err(|e| {
        format!(
            "deployment {} has invalid label selector: {e}",
            key_string(&ns_name(&d.metadata))
        )
    })
}

fn rs_name(rs: &StoredReplicaSet) -> &str {
    rs.metadata.name.as_deref().unwrap_or("")
}

/// Replaces the entry with the same UID (or appends) in a working list of ReplicaSets.
fn replace_rs(list: &mut RsList, rs: &Arc<StoredReplicaSet>) {
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
fn pod_listing_key(p: &StoredPod) -> (&str, &str) {
    let m = &p.metadata;
    (
        m.namespace.as_deref().unwrap_or("default"),
        m.name.as_deref().unwrap_or_default(),
    )
}

/// The Deployment controller. See the module documentation.
pub struct DeploymentController {
    deployments: BTreeMap<NsName, Arc<StoredDeployment>>,
    replica_sets: BTreeMap<NsName, Arc<StoredReplicaSet>>,
    /// Pods with a controller, by the controller's UID and then the pod's UID (for the
    /// Recreate strategy's pod map, which sorts them by namespace and name). Hash maps keyed
    /// by UIDs: every pod event looks them up with borrowed strings, allocating nothing.
    pods_by_controller_uid: FxHashMap<String, PodsByUid>,
    queue: WorkQueue,
    metrics: Metrics,
    /// `DeploymentReplicaSetTerminatingReplicas`: the status reports terminating replicas.
    terminating_replicas: bool,
    /// The template comparisons of the sync in progress (cleared at each sync's start).
    template_verdicts: TemplateVerdicts,
    /// The sync's last unchanged finding of its new and old ReplicaSets (cleared with the
    /// verdicts).
    found_replica_sets: Option<sync::FoundReplicaSets>,
}

impl Default for DeploymentController {
    fn default() -> Self {
        Self::new()
    }
}

impl DeploymentController {
    /// A controller with the default release's feature gates.
    pub fn new() -> Self {
        Self::with_features(&FeatureGates::default())
    }

    /// A controller honouring `DeploymentReplicaSetTerminatingReplicas`.
    pub fn with_features(features: &FeatureGates) -> Self {
        DeploymentController {
            deployments: BTreeMap::new(),
            replica_sets: BTreeMap::new(),
            pods_by_controller_uid: FxHashMap::default(),
            queue: WorkQueue::default(),
            metrics: Metrics::default(),
            terminating_replicas: features.enabled("DeploymentReplicaSetTerminatingReplicas"),
            template_verdicts: TemplateVerdicts::default(),
            found_replica_sets: None,
        }
    }

    // ----- event handlers --------------------------------------------------------------------

    fn resolve_controller_ref(&self, namespace: &str, r: &OwnerReference) -> Option<NsName> {
        resolve_controller_ref(&self.deployments, KIND, namespace, r, |d| &d.metadata)
    }

    /// Deployments in the ReplicaSet's namespace whose non-empty selector matches its labels.
    fn deployments_for_replica_set(&self, rs: &StoredReplicaSet) -> Vec<NsName> {
        let ns = rs.metadata.namespace.as_deref().unwrap_or_default();
        selecting(
            &self.deployments,
            ns,
            labels(&rs.metadata),
            deployment_selector,
        )
    }

    fn on_replica_set(&mut self, ev: &WatchEvent, rs: &Arc<StoredReplicaSet>) {
        let key = ns_name(&rs.metadata);
        let ns = key.0.as_str();
        let cached = match ev.type_ {
            EventType::Deleted => {
                self.replica_sets.remove(&key);
                if let Some(k) =
                    controller_of(&rs.metadata).and_then(|r| self.resolve_controller_ref(ns, r))
                {
                    self.queue.add(k);
                }
                return;
            }
            // A new version of a cached ReplicaSet takes its place in the map.
            EventType::Added | EventType::Modified => match self.replica_sets.get_mut(&key) {
                Some(slot) => Some(std::mem::replace(slot, rs.clone())),
                None => {
                    self.replica_sets.insert(key.clone(), rs.clone());
                    None
                }
            },
        };
        let old = cached.or_else(|| match &ev.old {
            Some(Object::ReplicaSet(o)) => Some(o.clone()),
            _ => None,
        });
        let cur_ref = controller_of(&rs.metadata);
        match old {
            None => {
                if let Some(r) = cur_ref {
                    if let Some(k) = self.resolve_controller_ref(ns, r) {
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
                    if let Some(k) = old_ref.and_then(|r| self.resolve_controller_ref(ns, r)) {
                        self.queue.add(k);
                    }
                }
                if let Some(r) = cur_ref {
                    if let Some(k) = self.resolve_controller_ref(ns, r) {
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

    fn on_pod(&mut self, ev: &WatchEvent, pod: &Arc<StoredPod>) {
        self.index_pod(ev, pod);
        if ev.type_ == EventType::Deleted {
            self.pod_deleted(pod);
        }
    }

    /// Keeps the index of pods by controller UID up to date.
    fn index_pod(&mut self, ev: &WatchEvent, pod: &Arc<StoredPod>) {
        let pod_uid = pod.metadata.uid.as_deref().unwrap_or_default();
        // An update under the same controller replaces the entry in place.
        if ev.type_ == EventType::Modified {
            if let (Some(Object::Pod(old)), Some(r)) = (&ev.old, pod_controller(pod)) {
                if pod_controller(old).is_some_and(|o| o.uid == r.uid) {
                    if let Some(m) = self.pods_by_controller_uid.get_mut(r.uid.as_str()) {
                        if m.replace(ByUid(pod.clone())).is_some() {
                            return;
                        }
                        // Not indexed: undone, and indexed below as a new entry.
                        m.remove(pod_uid);
                    }
                }
            }
        }
        // Unindex the previous version.
        if let Some(Object::Pod(old)) = &ev.old {
            if let Some(r) = pod_controller(old) {
                if let Some(m) = self.pods_by_controller_uid.get_mut(r.uid.as_str()) {
                    m.remove(old.metadata.uid.as_deref().unwrap_or_default());
                    if m.is_empty() {
                        self.pods_by_controller_uid.remove(r.uid.as_str());
                    }
                }
            }
        }
        if ev.type_ != EventType::Deleted {
            if let Some(r) = pod_controller(pod) {
                let pods = match self.pods_by_controller_uid.get_mut(r.uid.as_str()) {
                    Some(m) => m,
                    None => self
                        .pods_by_controller_uid
                        .entry(r.uid.clone())
                        .or_default(),
                };
                pods.replace(ByUid(pod.clone()));
            }
        }
    }

    /// A deleted pod may be the last one a Recreate rollout waits for.
    fn pod_deleted(&mut self, pod: &Arc<StoredPod>) {
        let key = ns_name(&pod.metadata);
        let Some(rs) = pod_controller(pod)
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
        let Some(mut d) = self.deployments.get(key).cloned() else {
            return Ok(());
        };
        if selector_is_empty(label_selector(&d)) {
            cx.client.record_event(EventRecord::warning(
                cx.now,
                CONTROLLER_NAME,
                KIND,
                &key.0,
                &key.1,
                REASON_SELECTING_ALL,
                "This deployment is selecting all pods. A non-empty selector is required.".into(),
            ));
            let generation = d.metadata.generation;
            if status_or_empty(&d).observed_generation.unwrap_or(0) < generation.unwrap_or(0) {
                mutate(&mut d)
                    .status
                    .get_or_insert_with(Default::default)
                    .observed_generation = generation;
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
        d: &StoredDeployment,
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
        d: &StoredDeployment,
        rs_list: &[Arc<StoredReplicaSet>],
    ) -> BTreeMap<String, Vec<Arc<StoredPod>>> {
        let selector = deployment_selector(d).unwrap_or_else(|_| Selector::nothing());
        let mut map = BTreeMap::new();
        for rs in rs_list {
            let uid = rs.metadata.uid.clone().unwrap_or_default();
            let mut pods: Vec<Arc<StoredPod>> = self
                .pods_by_controller_uid
                .get(&uid)
                .into_iter()
                .flat_map(|m| m.iter().map(|p| &p.0))
                .filter(|p| selector.matches(pod_labels(p)))
                .cloned()
                .collect();
            // The order of a namespace/name listing, whatever the index's order.
            pods.sort_by(|a, b| pod_listing_key(a).cmp(&pod_listing_key(b)));
            map.insert(uid, pods);
        }
        map
    }

    /// Writes the Deployment's status subresource (the revision annotation too: upstream's
    /// status strategy keeps only the spec and the labels) and continues with the written
    /// object. The resourceVersion precondition keeps a concurrent spec change.
    ///
    /// The sync's copy is handed over without a copy (the store's update then writes into it
    /// in place), and the written version is shared with the store afterwards. After a failed
    /// write `d` is a placeholder: every caller ends its sync with an error then.
    fn update_deployment_status(
        &mut self,
        d: &mut DeploymentRef,
        cx: &mut SyncCtx,
    ) -> Result<(), String> {
        let sent = std::mem::replace(d, written_placeholder());
        match cx.client.update_status(Object::Deployment(sent)) {
            Ok(Object::Deployment(updated)) => {
                *d = updated;
                Ok(())
            }
            // The placeholder must not be synced on: end the sync as a failed write would.
            Ok(other) => Err(format!(
                "a status write of a Deployment answered with a {}",
                other.kind()
            )),
            Err(e) => Err(e.to_string()),
        }
    }
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
    rs: &StoredReplicaSet,
    change: impl FnOnce(&mut StoredReplicaSet) -> bool,
) -> Result<Option<Arc<StoredReplicaSet>>, ApiError> {
    let (ns, name) = ns_name(&rs.metadata);
    let key = ObjectKey::new(Kind::ReplicaSet, &ns, &name);
    let fresh = match client.cache().get_key(&key) {
        Some(Object::ReplicaSet(r)) => r.clone(),
        _ => return Err(ApiError::NotFound { key }),
    };
    if fresh.metadata.uid != rs.metadata.uid {
        return Err(ApiError::Conflict { key });
    }
    let mut copy = StoredReplicaSet::clone(&fresh);
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

    /// Only Deployments, ReplicaSets and pods.
    fn observes(&self, kind: kubeplane_api::Kind) -> bool {
        matches!(
            kind,
            kubeplane_api::Kind::Deployment
                | kubeplane_api::Kind::ReplicaSet
                | kubeplane_api::Kind::Pod
        )
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
                    _ => match self.deployments.get_mut(&key) {
                        Some(slot) => *slot = d.clone(),
                        None => {
                            self.deployments.insert(key.clone(), d.clone());
                        }
                    },
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
            self.template_verdicts.clear();
            self.found_replica_sets = None;
            let synced = self.sync_deployment(&key, &mut cx);
            self.template_verdicts.clear();
            self.found_replica_sets = None;
            match synced {
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

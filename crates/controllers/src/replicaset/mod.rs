//! The ReplicaSet controller (upstream `pkg/controller/replicaset`): keeps `spec.replicas` pods
//! matching each ReplicaSet's selector, adopting orphans and releasing pods that stopped matching,
//! creating missing pods in slow-start batches and deleting surplus ones in the order of
//! [`ranking`], and reports status.
//!
//! Like upstream it reads only its own informer-like caches (built from the watch events it
//! observes) and guards against acting twice on the same need with expectations: after creating
//! or deleting pods it waits until it has observed those writes before it creates or deletes
//! again.
//!
//! A sync reads every pod of its ReplicaSet, which may have 10,000 of them, several times over.
//! So the cache keeps, next to each pod, what syncs read of it ([`CachedPod`], computed once per
//! observed version), and numbers the distinct label maps of the pods ([`LabelSets`]) so that a
//! sync evaluates a selector once per distinct map rather than once per pod.

pub mod ranking;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kubeplane_api::{
    ApiError, Client, Component, DeleteOptions, EventType, Kind, Object, ObjectKey, WatchEvent,
};
use kubeplane_core::features::FeatureGates;
use kubeplane_core::labels::{from_label_selector, selector_from_map, Selector};
use kubeplane_core::time::SimDuration;
use kubeplane_core::{EventRecord, SimTime};
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use crate::controller_utils::{
    add_owner_reference, available_at, claim_rule, controller_of, is_pod_active, is_pod_available,
    is_pod_ready, key_string, labels, new_controller_ref, ns_name, pod_node, ready_long_enough,
    remove_owner_reference, resolve_controller_ref, selecting, slow_start_batch, ClaimAction,
    Expectations, NsName, WorkQueue, BURST_REPLICAS, SLOW_START_INITIAL_BATCH_SIZE,
};
use ranking::{get_pods_to_delete_with_counts, Candidate, RankContext, SortFacts};

/// The event source of everything this controller records.
pub const CONTROLLER_NAME: &str = "replicaset-controller";
/// The kind this controller manages (upstream also runs it for ReplicationController).
pub const KIND: &str = "ReplicaSet";
pub const API_VERSION: &str = "apps/v1";

pub const REASON_SUCCESSFUL_CREATE: &str = "SuccessfulCreate";
pub const REASON_FAILED_CREATE: &str = "FailedCreate";
pub const REASON_SUCCESSFUL_DELETE: &str = "SuccessfulDelete";
pub const REASON_FAILED_DELETE: &str = "FailedDelete";
/// The status condition type reporting failed creates or deletes.
pub const CONDITION_REPLICA_FAILURE: &str = "ReplicaFailure";

/// The replicas a ReplicaSet asks for (the API server defaults a missing value to 1).
pub fn spec_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

fn min_ready_seconds(rs: &ReplicaSet) -> i32 {
    rs.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

fn rs_selector(rs: &ReplicaSet) -> Result<Selector, String> {
    match rs.spec.as_ref() {
        Some(spec) => from_label_selector(&spec.selector).map_err(|e| e.to_string()),
        None => Ok(Selector::nothing()),
    }
}

/// The selector of the labels a ReplicaSet's template gives its pods (what status calls "fully
/// labeled").
fn template_selector(rs: &ReplicaSet) -> Selector {
    let template_labels = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.as_ref());
    match template_labels {
        Some(l) => selector_from_map(l),
        None => selector_from_map(&BTreeMap::new()),
    }
}

/// Counters reported at the end of a run.
#[derive(Clone, Debug, Default)]
struct Metrics {
    syncs: u64,
    retries: u64,
    pods_created: u64,
    pods_deleted: u64,
    deletion_age_ratio_observations: u64,
}

// ----- label sets and cached pods ----------------------------------------------------------------

/// The number [`LabelSets`] gives a distinct label map.
type LabelSetId = usize;

/// The distinct label maps of the cached pods, numbered. The pods of one ReplicaSet nearly all
/// carry the same map, so a selector evaluated once per number ([`SelectorMemo`]) is evaluated a
/// handful of times per sync instead of once per pod.
///
/// A map is counted once for each cached pod carrying it; when the last one goes, the map is
/// forgotten and its number reused, so the table holds no more maps than the cache has pods
/// (pods with labels of their own coming and going do not grow it).
#[derive(Debug, Default)]
struct LabelSets {
    ids: FxHashMap<Arc<BTreeMap<String, String>>, LabelSetId>,
    /// By number; `None` for a free number.
    slots: Vec<Option<LabelSet>>,
    /// Free numbers, reused before new ones.
    free: Vec<LabelSetId>,
}

/// A numbered label map and how many cached pods carry it.
#[derive(Debug)]
struct LabelSet {
    labels: Arc<BTreeMap<String, String>>,
    users: usize,
}

impl LabelSets {
    /// The number of `labels`, counting one more pod carrying them.
    fn acquire(&mut self, labels: &BTreeMap<String, String>) -> LabelSetId {
        if let Some(&id) = self.ids.get(labels) {
            if let Some(Some(set)) = self.slots.get_mut(id) {
                set.users += 1;
            }
            return id;
        }
        let map = Arc::new(labels.clone());
        let slot = Some(LabelSet {
            labels: map.clone(),
            users: 1,
        });
        let id = match self.free.pop() {
            Some(id) if id < self.slots.len() => {
                self.slots[id] = slot;
                id
            }
            _ => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        self.ids.insert(map, id);
        id
    }

    /// One pod carrying the map numbered `id` is gone; the last one frees the number.
    fn release(&mut self, id: LabelSetId) {
        let Some(slot) = self.slots.get_mut(id) else {
            return;
        };
        let Some(set) = slot.as_mut() else {
            return;
        };
        set.users -= 1;
        if set.users == 0 {
            self.ids.remove(set.labels.as_ref());
            *slot = None;
            self.free.push(id);
        }
    }

    /// The map numbered `id` (`None` for a free or unknown number).
    fn get(&self, id: LabelSetId) -> Option<&BTreeMap<String, String>> {
        match self.slots.get(id) {
            Some(Some(set)) => Some(&set.labels),
            _ => None,
        }
    }

    /// One more than the highest number in use or free: the size of a table indexed by number.
    fn capacity(&self) -> usize {
        self.slots.len()
    }
}

/// One selector's verdicts on numbered label maps, each computed the first time a sync asks.
struct SelectorMemo<'a> {
    selector: &'a Selector,
    sets: &'a LabelSets,
    /// By label-set number: `None` until evaluated.
    verdicts: Vec<Option<bool>>,
}

impl<'a> SelectorMemo<'a> {
    fn new(selector: &'a Selector, sets: &'a LabelSets) -> Self {
        SelectorMemo {
            selector,
            sets,
            verdicts: vec![None; sets.capacity()],
        }
    }

    /// Whether the selector matches the label map numbered `id` (a free or unknown number is
    /// an empty map; the cache never hands one out).
    fn matches(&mut self, id: LabelSetId) -> bool {
        let (selector, sets) = (self.selector, self.sets);
        let eval = || match sets.get(id) {
            Some(m) => selector.matches(m),
            None => selector.matches(&BTreeMap::new()),
        };
        match self.verdicts.get_mut(id) {
            Some(Some(v)) => *v,
            Some(slot) => *slot.insert(eval()),
            None => eval(),
        }
    }
}

/// A cached pod with what syncs read of it, computed once per observed version: a sync reads
/// these compact records rather than the pods (several kilobytes each, spread over many cache
/// lines and heap allocations), which only adoption, release and scale-down ranking look at.
#[derive(Clone, Debug)]
struct CachedPod {
    pod: Arc<Pod>,
    /// The number of its label map in [`LabelSets`].
    labels: LabelSetId,
    /// `metadata.namespace` is set: the cache files a pod without one under `default`, where it
    /// is nevertheless no ReplicaSet's candidate.
    namespaced: bool,
    /// [`is_pod_active`].
    active: bool,
    /// A deletion was requested (`metadata.deletionTimestamp` is set).
    deleting: bool,
    /// A hash of the UID, for [`ByUid`].
    uid_hash: u64,
    /// Readiness for the status, and everything a scale-down ranks pods by.
    facts: SortFacts,
}

impl CachedPod {
    fn new(pod: Arc<Pod>, sets: &mut LabelSets) -> CachedPod {
        CachedPod {
            labels: sets.acquire(labels(&pod.metadata)),
            namespaced: pod.metadata.namespace.is_some(),
            active: is_pod_active(&pod),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            facts: SortFacts::of(&pod),
            uid_hash: FxBuildHasher.hash_one(pod.metadata.uid.as_deref().unwrap_or_default()),
            pod,
        }
    }

    fn uid(&self) -> &str {
        self.pod.metadata.uid.as_deref().unwrap_or_default()
    }
}

impl Candidate for CachedPod {
    fn pod(&self) -> &Pod {
        &self.pod
    }

    fn facts(&self) -> SortFacts {
        self.facts
    }
}

/// A cached pod as a member of a set of UIDs. It hashes as the UID hash the cache computed, and
/// its UID is read only to tell apart pods whose hashes look alike: de-duplicating 10,000 pods
/// by UID then hardly reads a pod.
#[derive(Clone, Copy)]
struct ByUid<'a>(&'a CachedPod);

impl Hash for ByUid<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.uid_hash);
    }
}

impl PartialEq for ByUid<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0.uid() == other.0.uid()
    }
}

impl Eq for ByUid<'_> {}

// ----- the controller ----------------------------------------------------------------------------

/// Cached pods by namespace, then name. The pods of a namespace are one lookup away and come in
/// name order without comparing namespaces pod by pod (each a string of its own to read).
#[derive(Debug, Default)]
struct PodsByNamespace(BTreeMap<String, BTreeMap<String, CachedPod>>);

impl PodsByNamespace {
    /// The pods of one namespace, by name.
    fn namespace(&self, namespace: &str) -> Option<&BTreeMap<String, CachedPod>> {
        self.0.get(namespace)
    }

    fn get_mut(&mut self, (namespace, name): &NsName) -> Option<&mut CachedPod> {
        self.0.get_mut(namespace)?.get_mut(name)
    }

    fn insert(&mut self, (namespace, name): &NsName, pod: CachedPod) {
        match self.0.get_mut(namespace) {
            Some(pods) => {
                pods.insert(name.clone(), pod);
            }
            None => {
                self.0
                    .insert(namespace.clone(), BTreeMap::from([(name.clone(), pod)]));
            }
        }
    }

    /// Removes a pod, and its namespace with the last one.
    fn remove(&mut self, (namespace, name): &NsName) -> Option<CachedPod> {
        let pods = self.0.get_mut(namespace)?;
        let old = pods.remove(name);
        if pods.is_empty() {
            self.0.remove(namespace);
        }
        old
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The informer caches: every ReplicaSet and pod the controller has observed, indexed.
#[derive(Debug, Default)]
struct Cache {
    replica_sets: BTreeMap<NsName, Arc<ReplicaSet>>,
    /// ReplicaSets by the UID of their controller (upstream index `controllerUID`).
    rs_by_controller_uid: BTreeMap<String, BTreeSet<NsName>>,
    pods: PodsByNamespace,
    /// Pods by the UID of their controller (upstream pod index by controller UID).
    pods_by_controller_uid: BTreeMap<String, PodsByNamespace>,
    /// Pods without a controller.
    orphan_pods: PodsByNamespace,
    /// The label maps of the cached pods.
    label_sets: LabelSets,
}

/// The ReplicaSet controller. See the module documentation.
pub struct ReplicaSetController {
    pod_deletion_cost: bool,
    terminating_replicas: bool,
    cache: Cache,
    queue: WorkQueue,
    expectations: Expectations,
    metrics: Metrics,
}

impl Default for ReplicaSetController {
    fn default() -> Self {
        Self::new()
    }
}

impl Cache {
    fn index_rs(&mut self, rs: &Arc<ReplicaSet>) {
        let key = ns_name(&rs.metadata);
        if let Some(c) = controller_of(&rs.metadata) {
            self.rs_by_controller_uid
                .entry(c.uid.clone())
                .or_default()
                .insert(key.clone());
        }
        self.replica_sets.insert(key, rs.clone());
    }

    fn unindex_rs(&mut self, key: &NsName) -> Option<Arc<ReplicaSet>> {
        let old = self.replica_sets.remove(key)?;
        if let Some(c) = controller_of(&old.metadata) {
            if let Some(set) = self.rs_by_controller_uid.get_mut(&c.uid) {
                set.remove(key);
                if set.is_empty() {
                    self.rs_by_controller_uid.remove(&c.uid);
                }
            }
        }
        Some(old)
    }

    /// Caches `pod` as the current version of the pod `key` (`None`: forgets the pod) and
    /// returns the version cached before.
    fn replace_pod(&mut self, key: &NsName, pod: Option<&Arc<Pod>>) -> Option<Arc<Pod>> {
        // The new version takes its label map before the old one lets go of it, so that a map
        // that did not change keeps its number.
        let cur = pod.map(|p| CachedPod::new(p.clone(), &mut self.label_sets));
        let old = match cur {
            None => self.unindex_pod(key),
            Some(cur) => match self.update_in_place(key, &cur) {
                Some(old) => Some(old),
                None => {
                    let old = self.unindex_pod(key);
                    self.index_pod(key, cur);
                    old
                }
            },
        };
        let old = old?;
        self.label_sets.release(old.labels);
        Some(old.pod)
    }

    /// Replaces a cached pod whose controller did not change where its entries are, and
    /// returns the version cached before; `None`, changing nothing, when the pod is not cached
    /// or changed controller. Most updates (a binding, a status change) take this path, which
    /// neither removes nor inserts tree entries.
    fn update_in_place(&mut self, key: &NsName, cur: &CachedPod) -> Option<CachedPod> {
        let controller = controller_of(&cur.pod.metadata).map(|c| c.uid.as_str());
        let cached = self.pods.get_mut(key)?;
        if controller_of(&cached.pod.metadata).map(|c| c.uid.as_str()) != controller {
            return None;
        }
        let indexed = match controller {
            Some(uid) => self.pods_by_controller_uid.get_mut(uid)?.get_mut(key),
            None => self.orphan_pods.get_mut(key),
        }?;
        *indexed = cur.clone();
        Some(std::mem::replace(cached, cur.clone()))
    }

    fn index_pod(&mut self, key: &NsName, pod: CachedPod) {
        match controller_of(&pod.pod.metadata) {
            Some(c) => self
                .pods_by_controller_uid
                .entry(c.uid.clone())
                .or_default()
                .insert(key, pod.clone()),
            None => self.orphan_pods.insert(key, pod.clone()),
        }
        self.pods.insert(key, pod);
    }

    fn unindex_pod(&mut self, key: &NsName) -> Option<CachedPod> {
        let old = self.pods.remove(key)?;
        match controller_of(&old.pod.metadata) {
            Some(c) => {
                if let Some(m) = self.pods_by_controller_uid.get_mut(&c.uid) {
                    m.remove(key);
                    if m.is_empty() {
                        self.pods_by_controller_uid.remove(&c.uid);
                    }
                }
            }
            None => {
                self.orphan_pods.remove(key);
            }
        }
        Some(old)
    }

    /// The ReplicaSet a controller reference points to, if it is in the cache with that UID.
    fn resolve_controller_ref(&self, namespace: &str, r: &OwnerReference) -> Option<NsName> {
        resolve_controller_ref(&self.replica_sets, KIND, namespace, r, |rs| &rs.metadata)
    }

    /// Every ReplicaSet in the pod's namespace whose (non-empty) selector matches it.
    fn pod_replica_sets(&self, pod: &Pod) -> Vec<NsName> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        selecting(&self.replica_sets, ns, labels(&pod.metadata), rs_selector)
    }

    /// Upstream `getIndirectlyRelatedPods` reduced to what the ranking reads of it
    /// ([`ranking::pods_per_node`]): per node name, the active pods among those selected by
    /// every ReplicaSet with the same controller (this one included), de-duplicated by UID. A
    /// ReplicaSet without a controller has none, so all its pods rank 0.
    fn related_active_pods_per_node(&self, rs: &ReplicaSet) -> ranking::PodsOnNode<'_> {
        let mut counts = ranking::PodsOnNode::default();
        let Some(c) = controller_of(&rs.metadata) else {
            return counts;
        };
        let mut seen: FxHashSet<ByUid> = FxHashSet::default();
        for key in self.rs_by_controller_uid.get(&c.uid).into_iter().flatten() {
            let Some(other) = self.replica_sets.get(key) else {
                continue;
            };
            let Ok(selector) = rs_selector(other) else {
                continue;
            };
            let mut selects = SelectorMemo::new(&selector, &self.label_sets);
            for pod in self
                .pods
                .namespace(&key.0)
                .into_iter()
                .flat_map(|m| m.values())
            {
                // A pod counts once however many ReplicaSets select it, inactive or not.
                if selects.matches(pod.labels) && seen.insert(ByUid(pod)) && pod.active {
                    *counts.entry(pod_node(&pod.pod)).or_insert(0) += 1;
                }
            }
        }
        counts
    }
}

/// The pods a sync claimed, and the terminating ones it counted on the way.
struct Claimed<'a> {
    /// The active pods the ReplicaSet owns and that match its selector, adopted ones included,
    /// owned ones in key order then adopted ones in name order.
    pods: Vec<&'a CachedPod>,
    /// Owned pods that are terminating and match the selector.
    terminating: i32,
}

/// A sync's view of the controller: the caches it reads, from which the claimed pods are
/// borrowed for the whole sync, and apart from them the queue, expectations and counters it
/// updates.
struct SyncCx<'a> {
    cache: &'a Cache,
    queue: &'a mut WorkQueue,
    expectations: &'a mut Expectations,
    metrics: &'a mut Metrics,
    pod_deletion_cost: bool,
    terminating_replicas: bool,
}

impl ReplicaSetController {
    /// A controller with the v1.34 default feature gates.
    pub fn new() -> Self {
        Self::with_features(FeatureGates::default())
    }

    /// A controller honouring `PodDeletionCost` and `DeploymentReplicaSetTerminatingReplicas`.
    pub fn with_features(features: FeatureGates) -> Self {
        ReplicaSetController {
            pod_deletion_cost: features.enabled("PodDeletionCost"),
            terminating_replicas: features.enabled("DeploymentReplicaSetTerminatingReplicas"),
            cache: Cache::default(),
            queue: WorkQueue::default(),
            expectations: Expectations::default(),
            metrics: Metrics::default(),
        }
    }

    /// The expectations of a ReplicaSet key (for tests and diagnostics).
    pub fn expectations(&self) -> &Expectations {
        &self.expectations
    }

    // ----- event handlers --------------------------------------------------------------------

    fn add_pod(&mut self, pod: &Pod) {
        if pod.metadata.deletion_timestamp.is_some() {
            self.delete_pod(pod);
            return;
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        if let Some(r) = controller_of(&pod.metadata) {
            if let Some(key) = self.cache.resolve_controller_ref(ns, r) {
                self.expectations.creation_observed(&key);
                self.queue.add(key);
            }
            return;
        }
        // An orphan: wake every ReplicaSet that may adopt it. Creation is not observed.
        for key in self.cache.pod_replica_sets(pod) {
            self.queue.add(key);
        }
    }

    fn update_pod(&mut self, old: &Pod, cur: &Pod) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            return;
        }
        if !status_relevant_change(old, cur) {
            // Upstream syncs on every pod update; a sync after a change like a binding would
            // find nothing to do, so kubeplane skips it (it matters with 10,000 pods).
            return;
        }
        let label_changed = old.metadata.labels != cur.metadata.labels;
        if cur.metadata.deletion_timestamp.is_some() {
            self.delete_pod(cur);
            if label_changed {
                self.delete_pod(old);
            }
            return;
        }
        let ns = cur.metadata.namespace.as_deref().unwrap_or("default");
        let cur_ref = controller_of(&cur.metadata);
        let old_ref = controller_of(&old.metadata);
        let ref_changed = cur_ref != old_ref;
        if ref_changed {
            if let Some(key) = old_ref.and_then(|r| self.cache.resolve_controller_ref(ns, r)) {
                self.queue.add(key);
            }
        }
        if let Some(r) = cur_ref {
            // Readiness changes of pods that are waiting out minReadySeconds are picked up by
            // the timer the sync sets (see `sync`), not by the +1 s requeue upstream uses.
            if let Some(key) = self.cache.resolve_controller_ref(ns, r) {
                self.queue.add(key);
            }
            return;
        }
        if label_changed || ref_changed {
            for key in self.cache.pod_replica_sets(cur) {
                self.queue.add(key);
            }
        }
    }

    fn delete_pod(&mut self, pod: &Pod) {
        let Some(r) = controller_of(&pod.metadata) else {
            return;
        };
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let Some(key) = self.cache.resolve_controller_ref(ns, r) else {
            return;
        };
        let pod_key = key_string(&ns_name(&pod.metadata));
        self.expectations.deletion_observed(&key, &pod_key);
        self.queue.add(key);
    }

    // ----- sync ------------------------------------------------------------------------------

    /// Syncs one key ([`SyncCx::sync`]).
    fn sync(&mut self, key: &NsName, now: SimTime, client: &mut dyn Client) -> Result<(), String> {
        SyncCx {
            cache: &self.cache,
            queue: &mut self.queue,
            expectations: &mut self.expectations,
            metrics: &mut self.metrics,
            pod_deletion_cost: self.pod_deletion_cost,
            terminating_replicas: self.terminating_replicas,
        }
        .sync(key, now, client)
    }
}

impl<'a> SyncCx<'a> {
    /// Upstream `syncReplicaSet`. An error requeues the key with backoff.
    fn sync(&mut self, key: &NsName, now: SimTime, client: &mut dyn Client) -> Result<(), String> {
        self.metrics.syncs += 1;
        let Some(rs) = self.cache.replica_sets.get(key).cloned() else {
            self.expectations.delete(key);
            return Ok(());
        };
        let needs_sync = self.expectations.satisfied(key, now);
        let Ok(selector) = rs_selector(&rs) else {
            // An invalid selector is reported and not retried, as upstream.
            return Ok(());
        };
        let claimed = self.claim_pods(&rs, &selector, client)?;
        let terminating = self.terminating_replicas.then_some(claimed.terminating);
        let claimed = claimed.pods;

        let mut manage_err = None;
        if needs_sync && rs.metadata.deletion_timestamp.is_none() {
            manage_err = self.manage_replicas(&claimed, &rs, key, now, client).err();
        }

        let now_ts = client.clock().timestamp(now);
        let counts = StatusCounts::of_cached(&rs, &claimed, &self.cache.label_sets, now_ts.0);
        let new_status =
            status_with_counts(&rs, counts, manage_err.as_deref(), terminating, &now_ts);
        let updated =
            update_replica_set_status(client, &rs, new_status, self.terminating_replicas)?;

        // Requeue when a ready pod becomes available (v1.34: the earliest such moment, falling
        // back to minReadySeconds from now).
        let min_ready = min_ready_seconds(&updated);
        if let Some(status) = updated.status.as_ref() {
            if min_ready > 0 && status.ready_replicas != status.available_replicas {
                let next = claimed
                    .iter()
                    .filter(|p| {
                        p.facts.ready && !ready_long_enough(p.facts.ready_time, min_ready, now_ts.0)
                    })
                    .filter_map(|p| p.facts.ready_time)
                    .map(|t| client.clock().instant(&Time(available_at(t, min_ready))))
                    .filter(|&t| t > now)
                    .min()
                    .unwrap_or(now + SimDuration::from_secs(i64::from(min_ready)));
                self.queue.add_after(key.clone(), next);
            }
        }
        match manage_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Upstream `claimPods` over the active pods the ReplicaSet owns and the orphans of its
    /// namespace: the ControllerRefManager adopts matching orphans and releases owned pods that
    /// stopped matching. Any error fails the sync before pods are created or deleted. On the way
    /// it counts the owned terminating pods that match: one pass, one selector evaluation per
    /// distinct label map.
    fn claim_pods(
        &self,
        rs: &Arc<ReplicaSet>,
        selector: &Selector,
        client: &mut dyn Client,
    ) -> Result<Claimed<'a>, String> {
        let cache: &'a Cache = self.cache;
        let (ns, name) = ns_name(&rs.metadata);
        let uid = rs.metadata.uid.clone().unwrap_or_default();
        let deleting = rs.metadata.deletion_timestamp.is_some();
        // The index by controller UID has the owned pods; like the orphans, they must be in
        // the ReplicaSet's namespace.
        let owned = cache
            .pods_by_controller_uid
            .get(&uid)
            .and_then(|m| m.namespace(&ns));
        let orphans = cache.orphan_pods.namespace(&ns);
        let mut claimed =
            Vec::with_capacity(owned.map_or(0, BTreeMap::len) + orphans.map_or(0, BTreeMap::len));
        let owned = owned
            .into_iter()
            .flat_map(|m| m.values())
            .filter(|p| p.namespaced)
            .map(|p| (p, true));
        let orphans = orphans
            .into_iter()
            .flat_map(|m| m.values())
            .map(|p| (p, false));
        let mut selects = SelectorMemo::new(selector, &cache.label_sets);
        let mut terminating = 0;
        let mut errors = Vec::new();
        let mut can_adopt: Option<Result<(), String>> = None;
        for (pod, owned) in owned.chain(orphans) {
            if !pod.active {
                if pod.deleting && owned && selects.matches(pod.labels) {
                    terminating += 1;
                }
                continue;
            }
            let matches = selects.matches(pod.labels);
            // An active orphan of the namespace is not being deleted: it is adoptable.
            match claim_rule(owned.then_some(true), true, deleting, matches) {
                ClaimAction::Claim => claimed.push(pod),
                ClaimAction::Ignore => {}
                ClaimAction::Adopt => {
                    let check = can_adopt
                        .get_or_insert_with(|| recheck_replica_set(client, &ns, &name, &uid))
                        .clone();
                    if let Err(e) = check {
                        errors.push(format!(
                            "can't adopt Pod {}/{} ({}): {e}",
                            ns,
                            pod.pod.metadata.name.as_deref().unwrap_or(""),
                            pod.uid()
                        ));
                        continue;
                    }
                    match adopt_pod(client, rs, &pod.pod) {
                        Ok(true) => claimed.push(pod),
                        Ok(false) => {}
                        Err(e) => errors.push(e.to_string()),
                    }
                }
                ClaimAction::Release => match release_pod(client, &uid, &pod.pod) {
                    Ok(()) => {}
                    Err(e) => errors.push(e.to_string()),
                },
            }
        }
        match errors.len() {
            0 => Ok(Claimed {
                pods: claimed,
                terminating,
            }),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// Upstream `manageReplicas`: creates or deletes at most [`BURST_REPLICAS`] pods.
    fn manage_replicas(
        &mut self,
        claimed: &[&CachedPod],
        rs: &Arc<ReplicaSet>,
        key: &NsName,
        now: SimTime,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let diff = claimed.len() as i64 - i64::from(spec_replicas(rs));
        let (ns, name) = key.clone();
        if diff < 0 {
            let n = ((-diff) as usize).min(BURST_REPLICAS);
            // Expect the creates before making any: their watch events may arrive at any time.
            self.expectations.expect_creations(key, n, now);
            let mut created = 0u64;
            let (successes, err) = slow_start_batch(n, SLOW_START_INITIAL_BATCH_SIZE, || {
                let r = create_pod(client, rs, now);
                if r.is_ok() {
                    created += 1;
                }
                r
            });
            self.metrics.pods_created += created;
            // The informer will never see the creates that failed or were not attempted.
            for _ in successes..n {
                self.expectations.creation_observed(key);
            }
            return match err {
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        if diff > 0 {
            let n = (diff as usize).min(BURST_REPLICAS);
            let pods_on_node = self.cache.related_active_pods_per_node(rs);
            let now_ts = client.clock().timestamp(now).0;
            let ctx = RankContext {
                now: Some(now_ts),
                pod_deletion_cost: self.pod_deletion_cost,
            };
            let choice = get_pods_to_delete_with_counts(claimed, &pods_on_node, n, &ctx);
            if choice.sorted {
                self.metrics.deletion_age_ratio_observations +=
                    choice.victims.iter().filter(|p| is_pod_ready(p)).count() as u64;
            }
            if client.explain() {
                let record =
                    ranking::explain_record(now.as_secs_f64(), &ns, &name, &choice, n, &ctx);
                client.emit_record(record);
            }
            let pod_keys: Vec<String> = choice
                .victims
                .iter()
                .map(|p| key_string(&ns_name(&p.metadata)))
                .collect();
            self.expectations
                .expect_deletions(key, pod_keys.clone(), now);
            let mut first_err = None;
            for (pod, pod_key) in choice.victims.iter().zip(&pod_keys) {
                let pod_name = pod.metadata.name.clone().unwrap_or_default();
                let obj_key = ObjectKey::new(Kind::Pod, &ns, &pod_name);
                match client.delete(&obj_key, DeleteOptions::default()) {
                    Ok(_) => {
                        self.metrics.pods_deleted += 1;
                        client.record_event(EventRecord::normal(
                            now,
                            CONTROLLER_NAME,
                            KIND,
                            &ns,
                            &name,
                            REASON_SUCCESSFUL_DELETE,
                            format!("Deleted pod: {pod_name}"),
                        ));
                    }
                    Err(e) => {
                        // The informer will never see this deletion.
                        self.expectations.deletion_observed(key, pod_key);
                        if !matches!(e, ApiError::NotFound { .. }) {
                            client.record_event(EventRecord::warning(
                                now,
                                CONTROLLER_NAME,
                                KIND,
                                &ns,
                                &name,
                                REASON_FAILED_DELETE,
                                format!("Error deleting: {e}"),
                            ));
                            if first_err.is_none() {
                                first_err = Some(format!("unable to delete pods: {e}"));
                            }
                        }
                    }
                }
            }
            return match first_err {
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        Ok(())
    }
}

/// Whether a pod update can change what a sync of its ReplicaSet does: which ReplicaSet may
/// claim it, whether it is active, its readiness or availability. Node, restarts and deletion
/// cost matter only when pods are ranked, which reads them at that moment.
fn status_relevant_change(old: &Pod, cur: &Pod) -> bool {
    let ready = |p: &Pod| {
        crate::controller_utils::pod_ready_condition(p)
            .map(|c| (c.status.clone(), c.last_transition_time.clone()))
    };
    old.metadata.labels != cur.metadata.labels
        || old.metadata.owner_references != cur.metadata.owner_references
        || old.metadata.deletion_timestamp != cur.metadata.deletion_timestamp
        || crate::controller_utils::pod_phase(old) != crate::controller_utils::pod_phase(cur)
        || ready(old) != ready(cur)
}

/// Upstream `RecheckDeletionTimestamp` over an uncached GET of the ReplicaSet: adoption is only
/// allowed while the very same ReplicaSet exists and is not being deleted.
fn recheck_replica_set(
    client: &mut dyn Client,
    ns: &str,
    name: &str,
    uid: &str,
) -> Result<(), String> {
    let Ok(fresh) = client.get(&ObjectKey::new(Kind::ReplicaSet, ns, name)) else {
        return Err(format!(
            "can't recheck DeletionTimestamp: replicasets.apps \"{name}\" not found"
        ));
    };
    if fresh.uid() != uid {
        return Err(format!(
            "can't recheck DeletionTimestamp: original {KIND} {ns}/{name} is gone: got uid {}, wanted {uid}",
            fresh.uid()
        ));
    }
    if let Some(ts) = fresh.meta().deletion_timestamp.as_ref() {
        return Err(format!("{ns}/{name} has just been deleted at {}", ts.0));
    }
    Ok(())
}

/// Adds the ReplicaSet's controller reference to an orphan (upstream `AdoptPod`, a patch with a
/// UID precondition). `Ok(false)` when the pod is gone.
fn adopt_pod(client: &mut dyn Client, rs: &ReplicaSet, pod: &Pod) -> Result<bool, ApiError> {
    let (ns, name) = ns_name(&pod.metadata);
    let Some(fresh) = client.cache().get_pod(&ns, &name).cloned() else {
        return Ok(false);
    };
    let key = ObjectKey::new(Kind::Pod, &ns, &name);
    if fresh.metadata.uid != pod.metadata.uid {
        return Err(ApiError::Conflict { key });
    }
    let controller_ref = new_controller_ref(API_VERSION, KIND, &rs.metadata);
    if let Some(other) = controller_of(&fresh.metadata) {
        if other.uid != controller_ref.uid {
            return Err(ApiError::Invalid {
                key,
                message: "metadata.ownerReferences: Invalid value: Only one reference can have Controller set to true".into(),
            });
        }
    }
    let mut p = Pod::clone(&fresh);
    add_owner_reference(&mut p.metadata, controller_ref);
    match client.update(Object::Pod(Arc::new(p))) {
        Ok(_) => Ok(true),
        Err(ApiError::NotFound { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Removes the ReplicaSet's reference from a pod that no longer matches (upstream `ReleasePod`).
/// A pod that is gone or cannot be patched counts as released.
fn release_pod(client: &mut dyn Client, rs_uid: &str, pod: &Pod) -> Result<(), ApiError> {
    let (ns, name) = ns_name(&pod.metadata);
    let Some(fresh) = client.cache().get_pod(&ns, &name).cloned() else {
        return Ok(());
    };
    if fresh.metadata.uid != pod.metadata.uid {
        return Err(ApiError::Conflict {
            key: ObjectKey::new(Kind::Pod, &ns, &name),
        });
    }
    let mut p = Pod::clone(&fresh);
    remove_owner_reference(&mut p.metadata, rs_uid);
    match client.update(Object::Pod(Arc::new(p))) {
        Ok(_) | Err(ApiError::NotFound { .. }) | Err(ApiError::Invalid { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The pod a ReplicaSet creates (upstream `GetPodFromTemplate`): copies of the template's
/// labels, annotations, finalizers and spec, `generateName: <rs-name>-`, and the controller
/// reference.
pub fn pod_from_template(rs: &ReplicaSet) -> Pod {
    let template = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default();
    let tmeta = template.metadata.unwrap_or_default();
    let rs_name = rs.metadata.name.clone().unwrap_or_default();
    // The dashed prefix must itself be a valid name prefix (at most 253 characters with the
    // generated suffix dropped); otherwise upstream falls back to the bare name.
    let prefix = if rs_name.len() < 253 {
        format!("{rs_name}-")
    } else {
        rs_name
    };
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(prefix),
            namespace: rs.metadata.namespace.clone(),
            labels: tmeta.labels,
            annotations: tmeta.annotations,
            finalizers: tmeta.finalizers,
            owner_references: Some(vec![new_controller_ref(API_VERSION, KIND, &rs.metadata)]),
            ..Default::default()
        },
        spec: template.spec,
        status: None,
    }
}

/// Upstream `RealPodControl.CreatePods` with its events.
fn create_pod(client: &mut dyn Client, rs: &ReplicaSet, now: SimTime) -> Result<(), String> {
    let (ns, name) = ns_name(&rs.metadata);
    let pod = pod_from_template(rs);
    if pod.metadata.labels.as_ref().is_none_or(BTreeMap::is_empty) {
        return Err("unable to create pods, no labels".into());
    }
    match client.create(Object::Pod(Arc::new(pod))) {
        Ok(created) => {
            client.record_event(EventRecord::normal(
                now,
                CONTROLLER_NAME,
                KIND,
                &ns,
                &name,
                REASON_SUCCESSFUL_CREATE,
                format!("Created pod: {}", created.name()),
            ));
            Ok(())
        }
        Err(e) => {
            client.record_event(EventRecord::warning(
                now,
                CONTROLLER_NAME,
                KIND,
                &ns,
                &name,
                REASON_FAILED_CREATE,
                format!("Error creating: {e}"),
            ));
            Err(e.to_string())
        }
    }
}

fn non_zero(n: i32) -> Option<i32> {
    (n != 0).then_some(n)
}

/// The pod counts of a ReplicaSet's status, over its claimed pods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct StatusCounts {
    replicas: usize,
    fully_labeled: i32,
    ready: i32,
    available: i32,
}

impl StatusCounts {
    /// The counts over pods as they are.
    fn of_pods(rs: &ReplicaSet, claimed: &[Arc<Pod>], now: Timestamp) -> StatusCounts {
        let template_selector = template_selector(rs);
        let min_ready = min_ready_seconds(rs);
        let mut counts = StatusCounts {
            replicas: claimed.len(),
            ..StatusCounts::default()
        };
        for pod in claimed {
            if template_selector.matches(labels(&pod.metadata)) {
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
    fn of_cached(
        rs: &ReplicaSet,
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
                if ready_long_enough(pod.facts.ready_time, min_ready, now) {
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
    rs: &ReplicaSet,
    claimed: &[Arc<Pod>],
    manage_err: Option<&str>,
    terminating: Option<i32>,
    now: &Time,
) -> ReplicaSetStatus {
    let counts = StatusCounts::of_pods(rs, claimed, now.0);
    status_with_counts(rs, counts, manage_err, terminating, now)
}

/// [`calculate_status`] given the pod counts.
fn status_with_counts(
    rs: &ReplicaSet,
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
fn update_replica_set_status(
    client: &mut dyn Client,
    rs: &Arc<ReplicaSet>,
    mut new_status: ReplicaSetStatus,
    with_terminating: bool,
) -> Result<Arc<ReplicaSet>, String> {
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
    let mut attempt = ReplicaSet::clone(rs);
    let mut last_err = String::new();
    for i in 0..2 {
        attempt.status = Some(new_status.clone());
        match client.update_status(Object::ReplicaSet(Arc::new(attempt.clone()))) {
            Ok(Object::ReplicaSet(updated)) => return Ok(updated),
            Ok(_) => return Ok(Arc::new(attempt)),
            Err(e) => last_err = e.to_string(),
        }
        if i == 1 {
            break;
        }
        // Upstream reads the latest version with an uncached GET before the retry.
        match client.get(&ObjectKey::new(Kind::ReplicaSet, &ns, &name)) {
            Ok(Object::ReplicaSet(fresh)) => attempt = ReplicaSet::clone(&fresh),
            _ => return Err(format!("replicasets.apps \"{name}\" not found")),
        }
    }
    Err(last_err)
}

impl Component for ReplicaSetController {
    fn name(&self) -> &'static str {
        CONTROLLER_NAME
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        self.queue.last_seen = self.queue.last_seen.max(now);
        match &ev.object {
            Object::ReplicaSet(rs) => {
                let key = ns_name(&rs.metadata);
                let cached = self.cache.unindex_rs(&key);
                match ev.type_ {
                    EventType::Added | EventType::Modified => {
                        let old_uid = cached
                            .as_ref()
                            .and_then(|o| o.metadata.uid.clone())
                            .or_else(|| ev.old.as_ref().map(|o| o.uid().to_string()));
                        if old_uid.is_some_and(|u| Some(u.as_str()) != rs.metadata.uid.as_deref()) {
                            // Re-created under the same name: forget the old one first.
                            self.expectations.delete(&key);
                        }
                        self.cache.index_rs(rs);
                    }
                    EventType::Deleted => self.expectations.delete(&key),
                }
                self.queue.add(key);
            }
            Object::Pod(pod) => {
                let key = ns_name(&pod.metadata);
                let current = (ev.type_ != EventType::Deleted).then_some(pod);
                let cached = self.cache.replace_pod(&key, current);
                match ev.type_ {
                    EventType::Added => self.add_pod(pod),
                    EventType::Modified => {
                        let old =
                            cached.or_else(|| ev.old.as_ref().and_then(|o| o.as_pod().cloned()));
                        match old {
                            Some(old) => self.update_pod(&old, pod),
                            None => self.add_pod(pod),
                        }
                    }
                    EventType::Deleted => self.delete_pod(pod),
                }
            }
            _ => {}
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        for key in self.queue.take_due(now) {
            match self.sync(&key, now, client) {
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
                "replicaset_controller_sorting_deletion_age_ratio_count".into(),
                self.metrics.deletion_age_ratio_observations,
            ),
            (
                "workqueue_adds_total{name=\"replicaset\"}".into(),
                self.metrics.syncs,
            ),
            (
                "workqueue_retries_total{name=\"replicaset\"}".into(),
                self.metrics.retries,
            ),
            (
                "kubeplane_replicaset_pods_created_total".into(),
                self.metrics.pods_created,
            ),
            (
                "kubeplane_replicaset_pods_deleted_total".into(),
                self.metrics.pods_deleted,
            ),
        ]
    }
}

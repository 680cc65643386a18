//! The controller's informer caches (upstream: the ReplicaSet and pod listers with their
//! indexes by controller UID and of orphans per namespace), with what syncs read of each pod.

use kubeplane_api::StoredPod;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubeplane_api::StoredReplicaSet;
use kubeplane_core::labels::Selector;
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use super::ranking::{Candidate, SortFacts};
use super::{ranking, rs_selector, KIND};
use crate::controller_utils::{
    controller_of, is_pod_active, ns_name, pod_controller, pod_labels, pod_node,
    resolve_controller_ref, selecting, NsName,
};

// ----- label sets and cached pods ----------------------------------------------------------------

/// The number [`LabelSets`] gives a distinct label map.
pub(super) type LabelSetId = usize;

/// The distinct label maps of the cached pods, numbered. The pods of one ReplicaSet nearly all
/// carry the same map, so a selector evaluated once per number ([`SelectorMemo`]) is evaluated a
/// handful of times per sync instead of once per pod.
///
/// A map is counted once for each cached pod carrying it; when the last one goes, the map is
/// forgotten and its number reused, so the table holds no more maps than the cache has pods
/// (pods with labels of their own coming and going do not grow it).
#[derive(Debug, Default)]
pub(super) struct LabelSets {
    pub(super) ids: FxHashMap<Arc<BTreeMap<String, String>>, LabelSetId>,
    /// By number; `None` for a free number.
    pub(super) slots: Vec<Option<LabelSet>>,
    /// Free numbers, reused before new ones.
    pub(super) free: Vec<LabelSetId>,
}

/// A numbered label map and how many cached pods carry it.
#[derive(Debug)]
pub(super) struct LabelSet {
    pub(super) labels: Arc<BTreeMap<String, String>>,
    pub(super) users: usize,
}

impl LabelSets {
    /// The number of `labels`, counting one more pod carrying them.
    pub(super) fn acquire(&mut self, labels: &BTreeMap<String, String>) -> LabelSetId {
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
    pub(super) fn release(&mut self, id: LabelSetId) {
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
    pub(super) fn get(&self, id: LabelSetId) -> Option<&BTreeMap<String, String>> {
        match self.slots.get(id) {
            Some(Some(set)) => Some(&set.labels),
            _ => None,
        }
    }

    /// One more than the highest number in use or free: the size of a table indexed by number.
    pub(super) fn capacity(&self) -> usize {
        self.slots.len()
    }
}

/// One selector's verdicts on numbered label maps, each computed the first time a sync asks.
pub(super) struct SelectorMemo<'a> {
    pub(super) selector: &'a Selector,
    pub(super) sets: &'a LabelSets,
    /// By label-set number: `None` until evaluated.
    pub(super) verdicts: Vec<Option<bool>>,
}

impl<'a> SelectorMemo<'a> {
    pub(super) fn new(selector: &'a Selector, sets: &'a LabelSets) -> Self {
        SelectorMemo {
            selector,
            sets,
            verdicts: vec![None; sets.capacity()],
        }
    }

    /// Whether the selector matches the label map numbered `id` (a free or unknown number is
    /// an empty map; the cache never hands one out).
    pub(super) fn matches(&mut self, id: LabelSetId) -> bool {
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
pub(super) struct CachedPod {
    pub(super) pod: Arc<StoredPod>,
    /// The number of its label map in [`LabelSets`].
    pub(super) labels: LabelSetId,
    /// `metadata.namespace` is set: the cache files a pod without one under `default`, where it
    /// is nevertheless no ReplicaSet's candidate.
    pub(super) namespaced: bool,
    /// [`is_pod_active`].
    pub(super) active: bool,
    /// A deletion was requested (`metadata.deletionTimestamp` is set).
    pub(super) deleting: bool,
    /// A hash of the UID, for [`ByUid`].
    pub(super) uid_hash: u64,
    /// Readiness for the status, and everything a scale-down ranks pods by.
    pub(super) facts: SortFacts,
}

impl CachedPod {
    pub(super) fn new(pod: Arc<StoredPod>, sets: &mut LabelSets) -> CachedPod {
        CachedPod {
            labels: sets.acquire(pod_labels(&pod)),
            namespaced: pod.metadata.namespace.is_some(),
            active: is_pod_active(&pod),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            facts: SortFacts::of(&pod),
            uid_hash: FxBuildHasher.hash_one(pod.metadata.uid.as_deref().unwrap_or_default()),
            pod,
        }
    }

    pub(super) fn uid(&self) -> &str {
        self.pod.metadata.uid.as_deref().unwrap_or_default()
    }
}

impl Candidate for CachedPod {
    fn pod(&self) -> &StoredPod {
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
pub(super) struct ByUid<'a>(&'a CachedPod);

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

/// A cached pod as filed in the indexes, ordered and found by its name (the key's name: the
/// cache files a pod under `metadata.name`). `pods` and the index of its controller share one
/// [`CachedPod`]: each index holds a pointer, no copy of the record nor of the name. (A
/// `BTreeMap` of names to inline records cost about 290 bytes per pod and index at the
/// envelope's 15 pods per namespace, most of it the nodes' unused room.)
#[derive(Clone, Debug)]
pub(super) struct ByName(pub(super) Arc<CachedPod>);

impl ByName {
    pub(super) fn name(&self) -> &str {
        self.0.pod.metadata.name.as_deref().unwrap_or_default()
    }
}

impl std::ops::Deref for ByName {
    type Target = CachedPod;

    fn deref(&self) -> &CachedPod {
        &self.0
    }
}

impl Borrow<str> for ByName {
    fn borrow(&self) -> &str {
        self.name()
    }
}

impl PartialEq for ByName {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for ByName {}

impl PartialOrd for ByName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByName {
    fn cmp(&self, other: &Self) -> Ordering {
        self.name().cmp(other.name())
    }
}

/// The cached pods of one namespace, in name order.
pub(super) type PodsByName = BTreeSet<ByName>;

/// Cached pods by namespace, then name. The pods of a namespace are one lookup away and come in
/// name order without comparing namespaces pod by pod (each a string of its own to read).
#[derive(Debug, Default)]
pub(super) struct PodsByNamespace(pub(super) BTreeMap<String, PodsByName>);

impl PodsByNamespace {
    /// The pods of one namespace, by name.
    pub(super) fn namespace(&self, namespace: &str) -> Option<&PodsByName> {
        self.0.get(namespace)
    }

    /// Files `pod` under its name in `namespace`, in place of the version filed before, which
    /// it returns (one search either way).
    pub(super) fn insert(&mut self, namespace: &str, pod: ByName) -> Option<ByName> {
        match self.0.get_mut(namespace) {
            Some(pods) => pods.replace(pod),
            None => {
                self.0.insert(namespace.to_string(), BTreeSet::from([pod]));
                None
            }
        }
    }

    /// Puts `pod` in place of the version filed under its name in `namespace`; changes nothing
    /// and returns `false` when none is.
    pub(super) fn replace_existing(&mut self, namespace: &str, pod: ByName) -> bool {
        let Some(pods) = self.0.get_mut(namespace) else {
            return false;
        };
        let probe = pod.clone();
        if pods.replace(pod).is_some() {
            return true;
        }
        // Not filed (the indexes never allow it): take it out again.
        pods.remove(&probe);
        false
    }

    /// Removes a pod, and its namespace with the last one.
    pub(super) fn remove(&mut self, (namespace, name): &NsName) -> Option<ByName> {
        let pods = self.0.get_mut(namespace)?;
        let old = pods.take(name.as_str());
        if pods.is_empty() {
            self.0.remove(namespace);
        }
        old
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The pods of one controller UID, by the kind and name their controller reference gives
/// (nearly always a single group: references are written by the controller itself).
#[derive(Debug, Default)]
pub(super) struct ControllerGroups(pub(super) Vec<((String, String), PodsByNamespace)>);

impl ControllerGroups {
    fn position(&self, c: &OwnerReference) -> Option<usize> {
        self.0
            .iter()
            .position(|((kind, name), _)| *kind == c.kind && *name == c.name)
    }

    fn group_mut(&mut self, c: &OwnerReference) -> Option<&mut PodsByNamespace> {
        let i = self.position(c)?;
        Some(&mut self.0[i].1)
    }

    fn group_or_insert(&mut self, c: &OwnerReference) -> &mut PodsByNamespace {
        let i = match self.position(c) {
            Some(i) => i,
            None => {
                self.0
                    .push(((c.kind.clone(), c.name.clone()), PodsByNamespace::default()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }

    fn remove(&mut self, c: &OwnerReference, key: &NsName) {
        if let Some(i) = self.position(c) {
            self.0[i].1.remove(key);
            if self.0[i].1.is_empty() {
                self.0.remove(i);
            }
        }
    }
}

/// Whether two controller references index a pod under the same key.
fn same_controller(a: Option<&OwnerReference>, b: Option<&OwnerReference>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.uid == b.uid && a.kind == b.kind && a.name == b.name,
        _ => false,
    }
}

/// The informer caches: every ReplicaSet and pod the controller has observed, indexed.
#[derive(Debug, Default)]
pub(super) struct Cache {
    pub(super) replica_sets: BTreeMap<NsName, Arc<StoredReplicaSet>>,
    /// ReplicaSets by the UID of their controller (upstream index `controllerUID`).
    pub(super) rs_by_controller_uid: BTreeMap<String, BTreeSet<NsName>>,
    pub(super) pods: PodsByNamespace,
    /// Pods with a controller, by their controller reference: its UID, then its kind and name
    /// (upstream's pod index by controller; see [`Cache::controlled_pods`]). Hashed: it is only
    /// looked up by UID, once or twice per pod event, where a tree of thousands of UIDs compared
    /// a dozen of them each time.
    pub(super) pods_by_controller: FxHashMap<String, ControllerGroups>,
    /// Pods without a controller.
    pub(super) orphan_pods: PodsByNamespace,
    /// The label maps of the cached pods.
    pub(super) label_sets: LabelSets,
}

impl Cache {
    pub(super) fn index_rs(&mut self, rs: &Arc<StoredReplicaSet>) {
        let key = ns_name(&rs.metadata);
        if let Some(c) = controller_of(&rs.metadata) {
            self.rs_by_controller_uid
                .entry(c.uid.clone())
                .or_default()
                .insert(key.clone());
        }
        self.replica_sets.insert(key, rs.clone());
    }

    /// Caches `rs` as the current version of the ReplicaSet `key` (`None`: forgets it) and
    /// returns the version cached before. A version with the same controller UID as the cached
    /// one (a status write, a scale) takes its place without leaving and re-entering the
    /// indexes.
    pub(super) fn replace_rs(
        &mut self,
        key: &NsName,
        rs: Option<&Arc<StoredReplicaSet>>,
    ) -> Option<Arc<StoredReplicaSet>> {
        let Some(rs) = rs else {
            return self.unindex_rs(key);
        };
        if let Some(cached) = self.replica_sets.get_mut(key) {
            if controller_of(&cached.metadata).map(|c| &c.uid)
                == controller_of(&rs.metadata).map(|c| &c.uid)
            {
                return Some(std::mem::replace(cached, rs.clone()));
            }
        }
        let old = self.unindex_rs(key);
        self.index_rs(rs);
        old
    }

    pub(super) fn unindex_rs(&mut self, key: &NsName) -> Option<Arc<StoredReplicaSet>> {
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
    /// returns the version cached before. Most updates (a binding, a status change) keep the
    /// pod's controller: the new version then takes the old one's place in `pods` and in its
    /// controller's index, neither removing nor inserting tree entries.
    pub(super) fn replace_pod(
        &mut self,
        key: &NsName,
        pod: Option<&Arc<StoredPod>>,
    ) -> Option<Arc<StoredPod>> {
        // The new version takes its label map before the old one lets go of it, so that a map
        // that did not change keeps its number.
        let old = match pod {
            None => self.unindex_pod(key),
            Some(p) => {
                let cur = ByName(Arc::new(CachedPod::new(p.clone(), &mut self.label_sets)));
                debug_assert_eq!(cur.name(), key.1, "a pod is cached under its name");
                // One search in `pods` whether the pod was cached or not.
                let old = self.pods.insert(&key.0, cur.clone());
                match &old {
                    // A pod seen for the first time: nothing to take out of the indexes.
                    None => self.index_controlled(key, cur),
                    Some(old) => {
                        let same =
                            same_controller(pod_controller(&old.pod), pod_controller(&cur.pod));
                        if !(same && self.replace_controlled(key, cur.clone())) {
                            self.unindex_controlled(key, old);
                            self.index_controlled(key, cur);
                        }
                    }
                }
                old
            }
        };
        let old = Arc::unwrap_or_clone(old?.0);
        self.label_sets.release(old.labels);
        Some(old.pod)
    }

    /// Puts `pod` in place of the version in its controller's index (or the orphans'); changes
    /// nothing and returns `false` when that index does not hold it.
    fn replace_controlled(&mut self, key: &NsName, pod: ByName) -> bool {
        let group = match pod_controller(&pod.pod) {
            Some(c) => self
                .pods_by_controller
                .get_mut(c.uid.as_str())
                .and_then(|g| g.group_mut(c)),
            None => Some(&mut self.orphan_pods),
        };
        group.is_some_and(|g| g.replace_existing(&key.0, pod))
    }

    /// Files a pod in its controller's index, or among the orphans.
    fn index_controlled(&mut self, key: &NsName, pod: ByName) {
        match pod_controller(&pod.pod) {
            Some(c) => {
                // The UID is copied only for a controller seen for the first time.
                let groups = match self.pods_by_controller.get_mut(c.uid.as_str()) {
                    Some(groups) => groups,
                    None => self.pods_by_controller.entry(c.uid.clone()).or_default(),
                };
                groups.group_or_insert(c).insert(&key.0, pod)
            }
            None => self.orphan_pods.insert(&key.0, pod),
        };
    }

    /// Takes a cached version out of its controller's index, or the orphans'.
    fn unindex_controlled(&mut self, key: &NsName, old: &CachedPod) {
        match pod_controller(&old.pod) {
            Some(c) => {
                if let Some(groups) = self.pods_by_controller.get_mut(c.uid.as_str()) {
                    groups.remove(c, key);
                    if groups.0.is_empty() {
                        self.pods_by_controller.remove(c.uid.as_str());
                    }
                }
            }
            None => {
                self.orphan_pods.remove(key);
            }
        }
    }

    pub(super) fn unindex_pod(&mut self, key: &NsName) -> Option<ByName> {
        let old = self.pods.remove(key)?;
        self.unindex_controlled(key, &old);
        Some(old)
    }

    /// The pods a ReplicaSet lists as its own (upstream `FilterPodsByOwner` without the
    /// orphans), as maps of pods by name, one per namespace. With `full_key` (kubernetes#134654: v1.35.0, and v1.34.2 as #134658) the pod
    /// index is keyed by the controller reference's namespace, kind, name and UID, so only
    /// pods in the ReplicaSet's namespace whose reference names this very ReplicaSet are
    /// listed. Before, it was keyed by the UID alone: every pod whose controller reference
    /// carries the ReplicaSet's UID, whatever kind and name it gives and in any namespace.
    pub(super) fn controlled_pods(
        &self,
        rs: &StoredReplicaSet,
        full_key: bool,
    ) -> Vec<&PodsByName> {
        let (ns, name) = ns_name(&rs.metadata);
        let uid = rs.metadata.uid.as_deref().unwrap_or_default();
        let groups = self
            .pods_by_controller
            .get(uid)
            .map_or(&[][..], |g| g.0.as_slice());
        if full_key {
            groups
                .iter()
                .filter(|((kind, n), _)| kind == KIND && *n == name)
                .filter_map(|(_, pods)| pods.namespace(&ns))
                .collect()
        } else {
            groups
                .iter()
                .flat_map(|(_, pods)| pods.0.values())
                .collect()
        }
    }

    /// The ReplicaSet a controller reference points to, if it is in the cache with that UID.
    pub(super) fn resolve_controller_ref(
        &self,
        namespace: &str,
        r: &OwnerReference,
    ) -> Option<NsName> {
        resolve_controller_ref(&self.replica_sets, KIND, namespace, r, |rs| &rs.metadata)
    }

    /// Every ReplicaSet in the pod's namespace whose (non-empty) selector matches it.
    pub(super) fn pod_replica_sets(&self, pod: &StoredPod) -> Vec<NsName> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        selecting(&self.replica_sets, ns, pod_labels(pod), rs_selector)
    }

    /// Upstream `getIndirectlyRelatedPods` reduced to what the ranking reads of it
    /// ([`ranking::pods_per_node`]): per node name, the active pods among those selected by
    /// every ReplicaSet with the same controller (this one included), de-duplicated by UID. A
    /// ReplicaSet without a controller has none, so all its pods rank 0.
    pub(super) fn related_active_pods_per_node(
        &self,
        rs: &StoredReplicaSet,
    ) -> ranking::PodsOnNode<'_> {
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
            for pod in self.pods.namespace(&key.0).into_iter().flatten() {
                // A pod counts once however many ReplicaSets select it, inactive or not.
                if selects.matches(pod.labels) && seen.insert(ByUid(&pod.0)) && pod.active {
                    *counts.entry(pod_node(&pod.pod)).or_insert(0) += 1;
                }
            }
        }
        counts
    }
}

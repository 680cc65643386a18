//! The StatefulSet controller (upstream `pkg/controller/statefulset`, `stateful_set.go`): pods
//! with stable names `<set>-<ordinal>`, created and deleted in ordinal order (OrderedReady) or
//! all at once (Parallel), their PersistentVolumeClaims, the rolling update through
//! ControllerRevisions, and the set's status.
//!
//! StatefulSets, ControllerRevisions and PersistentVolumeClaims are kinds kubeplane stores
//! without a [`Kind`](kubeplane_api::Kind) variant of their own (`Kind::Other`): the controller
//! reads each into its k8s-openapi type once per observed change, keeps it in its own cache
//! (upstream's listers), and writes them back as [`Object::Other`]. A set is read with the API server's defaults
//! applied ([`defaulted`]); its status is written onto the object as stored.
//!
//! Files follow upstream's: [`control`] is `stateful_set_control.go`, [`utils`]
//! `stateful_set_utils.go`, [`pod_control`] `stateful_pod_control.go`, [`status`]
//! `stateful_set_status_updater.go`.

mod control;
mod explain;
mod pod_control;
mod status;
pub mod utils;

#[cfg(test)]
mod tests;

use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{
    ControllerRevision, RollingUpdateStatefulSetStrategy, StatefulSet,
    StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::{Client, Component, DynamicObject, EventType, Object, WatchEvent};
use kubeplane_core::features::FeatureGates;
use kubeplane_core::labels::{from_label_selector, Selector};
use kubeplane_core::SimTime;
use rustc_hash::FxHashMap;

use crate::controller_utils::{
    add_owner_reference, add_pod_owner_reference, available_at, claim_rule, controller_of,
    is_pod_ready, labels, new_controller_ref, ns_name, pod_controller, pod_labels, pod_ready_time,
    remove_pod_owner_reference, ClaimAction, NsName, WorkQueue,
};
use crate::pod_filing::{filed_under, put_hashed, take_hashed};
use control::{parse_revision, SetControl};
use pod_control::{other_object, Claims, PodControl};

/// The event source of everything this controller records.
pub const CONTROLLER_NAME: &str = "statefulset-controller";
pub const KIND: &str = "StatefulSet";
pub const API_VERSION: &str = "apps/v1";

/// A StatefulSet as observed: the defaulted typed copy the controller reads, and the object as
/// stored, onto which the status is written.
#[derive(Clone)]
struct CachedSet {
    set: Arc<StatefulSet>,
    stored: Arc<DynamicObject>,
}

/// The API server's defaults for a StatefulSet (upstream `SetDefaults_StatefulSet`):
/// OrderedReady, RollingUpdate with partition 0, one replica, ten revisions of history,
/// claims retained.
pub fn defaulted(mut set: StatefulSet) -> StatefulSet {
    let spec = set.spec.get_or_insert_with(Default::default);
    spec.replicas.get_or_insert(1);
    spec.pod_management_policy
        .get_or_insert_with(|| "OrderedReady".into());
    spec.revision_history_limit.get_or_insert(10);
    let strategy = spec
        .update_strategy
        .get_or_insert_with(StatefulSetUpdateStrategy::default);
    let type_ = strategy.type_.get_or_insert_with(|| "RollingUpdate".into());
    if type_ == "RollingUpdate" {
        let ru = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateStatefulSetStrategy::default);
        ru.partition.get_or_insert(0);
    }
    let policy = spec
        .persistent_volume_claim_retention_policy
        .get_or_insert_with(StatefulSetPersistentVolumeClaimRetentionPolicy::default);
    policy.when_deleted.get_or_insert_with(|| "Retain".into());
    policy.when_scaled.get_or_insert_with(|| "Retain".into());
    set
}

fn is_kind(o: &DynamicObject, group: &str, kind: &str) -> bool {
    o.type_.group == group && o.type_.kind == kind
}

fn selector_of(set: &StatefulSet) -> Result<Selector, String> {
    match set.spec.as_ref() {
        Some(spec) => from_label_selector(&spec.selector).map_err(|e| e.to_string()),
        None => Ok(Selector::nothing()),
    }
}

/// The StatefulSet controller. See the module documentation.
pub struct StatefulSetController {
    max_unavailable: bool,
    sets: BTreeMap<NsName, CachedSet>,
    /// Pods by namespace, then name (hashed: a claim sorts its candidates by name).
    pods: FxHashMap<String, FxHashMap<String, Arc<StoredPod>>>,
    revisions: BTreeMap<NsName, Arc<ControllerRevision>>,
    claims: Claims,
    queue: WorkQueue,
    /// The explanation records written so far, so that each is written once.
    explained: crate::explain::Explained,
}

impl Default for StatefulSetController {
    fn default() -> Self {
        Self::new()
    }
}

impl StatefulSetController {
    /// A controller with the v1.34 default feature gates.
    pub fn new() -> Self {
        Self::with_features(&FeatureGates::default())
    }

    /// A controller honouring MaxUnavailableStatefulSet.
    pub fn with_features(features: &FeatureGates) -> Self {
        StatefulSetController {
            max_unavailable: features.enabled("MaxUnavailableStatefulSet"),
            sets: BTreeMap::new(),
            pods: FxHashMap::default(),
            revisions: BTreeMap::new(),
            claims: Claims::new(),
            queue: WorkQueue::default(),
            explained: Default::default(),
        }
    }

    // ----- event handlers --------------------------------------------------------------------

    /// The set a controller reference names, if it is one this controller has observed.
    fn resolve(&self, ns: &str, pod: &StoredPod) -> Option<NsName> {
        let r = pod_controller(pod)?;
        if r.kind != KIND || r.api_version != API_VERSION {
            return None;
        }
        let key = (ns.to_string(), r.name.clone());
        let set = self.sets.get(&key)?;
        (set.set.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(key)
    }

    /// The sets of the namespace whose selector matches the pod (upstream `getPodStatefulSets`).
    fn selecting(&self, pod: &StoredPod) -> Vec<NsName> {
        if self.sets.is_empty() {
            return Vec::new();
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        self.sets
            .range((ns.to_string(), String::new())..)
            .take_while(|(k, _)| k.0 == ns)
            .filter(|(_, s)| selector_of(&s.set).is_ok_and(|sel| sel.matches(pod_labels(pod))))
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn pod_changed(&mut self, old: Option<&StoredPod>, cur: &StoredPod, deleted: bool) {
        let ns = cur.metadata.namespace.as_deref().unwrap_or("default");
        if let Some(old) = old {
            if old.metadata.resource_version == cur.metadata.resource_version && !deleted {
                return;
            }
            if pod_controller(old) != pod_controller(cur) {
                if let Some(key) = self.resolve(ns, old) {
                    self.queue.add(key);
                }
            }
        }
        if let Some(key) = self.resolve(ns, cur) {
            self.queue.add(key);
            return;
        }
        if deleted || pod_controller(cur).is_some() {
            return;
        }
        let relevant = old
            .is_none_or(|o| o.labels() != cur.labels() || pod_controller(o) != pod_controller(cur));
        if relevant {
            for key in self.selecting(cur) {
                self.queue.add(key);
            }
        }
    }

    fn observe_pod(&mut self, ev: &WatchEvent, pod: &Arc<StoredPod>) {
        let filed = |p: &StoredPod| filed_under(p, KIND).is_some();
        let ev_old = ev.old.as_ref().and_then(Object::as_pod);
        if !filed(pod) && ev_old.is_none_or(|o| !filed(o)) {
            // Another kind's controller before and after: `resolve` finds no set for it and
            // `claim_pods` ignores it, so it is neither cached nor handled.
            return;
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let old = match ev.type_ {
            EventType::Modified | EventType::Added if filed(pod) => {
                put_hashed(&mut self.pods, ns, name, pod.clone())
            }
            _ => take_hashed(&mut self.pods, ns, name),
        };
        let old = old.or_else(|| ev_old.cloned());
        match ev.type_ {
            EventType::Added => self.pod_changed(None, pod, false),
            EventType::Modified => self.pod_changed(old.as_deref(), pod, false),
            EventType::Deleted => self.pod_changed(None, pod, true),
        }
    }

    fn observe_other(&mut self, ev: &WatchEvent, o: &Arc<DynamicObject>) {
        let watched = [
            ("apps", "StatefulSet"),
            ("apps", "ControllerRevision"),
            ("", "PersistentVolumeClaim"),
        ];
        if !watched.iter().any(|(g, k)| is_kind(o, g, k)) {
            return;
        }
        let key = ns_name(&o.metadata);
        let deleted = ev.type_ == EventType::Deleted;
        let obj = Object::Other(o.clone());
        if is_kind(o, "apps", "StatefulSet") {
            let parsed = serde_json::from_value::<StatefulSet>(obj.to_json()).ok();
            match parsed.filter(|_| !deleted) {
                Some(set) => {
                    let cached = CachedSet {
                        set: Arc::new(defaulted(set)),
                        stored: o.clone(),
                    };
                    self.sets.insert(key.clone(), cached);
                }
                None => {
                    self.sets.remove(&key);
                    self.explained.forget(&key);
                }
            }
            self.queue.add(key);
        } else if is_kind(o, "apps", "ControllerRevision") {
            match parse_revision(&obj).filter(|_| !deleted) {
                Some(r) => self.revisions.insert(key, Arc::new(r)),
                None => self.revisions.remove(&key),
            };
        } else if is_kind(o, "", "PersistentVolumeClaim") {
            let parsed = serde_json::from_value::<PersistentVolumeClaim>(obj.to_json()).ok();
            match parsed.filter(|_| !deleted) {
                Some(c) => self.claims.insert(key, Arc::new(c)),
                None => self.claims.remove(&key),
            };
        }
    }

    // ----- sync ------------------------------------------------------------------------------

    /// Upstream `sync`: adopt orphan revisions, claim the pods, sync the set, and requeue when
    /// a ready pod becomes available.
    fn sync(&mut self, key: &NsName, now: SimTime, client: &mut dyn Client) -> Result<(), String> {
        let Some(cached) = self.sets.get(key).cloned() else {
            return Ok(());
        };
        let set = cached.set.clone();
        let Ok(selector) = selector_of(&set) else {
            // A non-transient error: not retried, as upstream.
            return Ok(());
        };
        let revisions = self.claim_revisions(&set, &selector, client)?;
        let pods = self.claim_pods(&set, &selector, client)?;
        let now_ts = client.clock().timestamp(now).0;
        let (status, result) = SetControl {
            pc: PodControl {
                client: &mut *client,
                claims: &self.claims,
                now,
            },
            now: now_ts,
            max_unavailable_gate: self.max_unavailable,
            explained: &mut self.explained,
        }
        .update_stateful_set(&set, &cached.stored, &pods, revisions);
        result?;
        let min_ready = utils::min_ready_seconds(&set);
        let want = utils::replicas(&set) as i32;
        if min_ready > 0 && status.is_some_and(|s| s.available_replicas != Some(want)) {
            // Upstream requeues after minReadySeconds to absorb clock skew; the simulator has
            // none, so the set is synced when the next ready pod becomes available.
            let next = pods
                .iter()
                .filter(|p| is_pod_ready(p))
                .filter_map(|p| pod_ready_time(p))
                .map(|t| client.clock().instant(&Time(available_at(t, min_ready))))
                .filter(|&t| t > now)
                .min();
            if let Some(t) = next {
                self.queue.add_after(key.clone(), t);
            }
        }
        Ok(())
    }

    /// Upstream `adoptOrphanRevisions` and `ListRevisions`: the set's revisions, orphans that
    /// match its selector adopted first.
    fn claim_revisions(
        &self,
        set: &StatefulSet,
        selector: &Selector,
        client: &mut dyn Client,
    ) -> Result<Vec<ControllerRevision>, String> {
        let ns = utils::set_namespace(set).to_string();
        let uid = set.metadata.uid.clone().unwrap_or_default();
        let mut out = Vec::new();
        for (_, r) in self
            .revisions
            .range((ns.clone(), String::new())..)
            .take_while(|(k, _)| k.0 == ns)
        {
            match controller_of(&r.metadata) {
                Some(c) if c.uid == uid => out.push(ControllerRevision::clone(r)),
                Some(_) => {}
                None if selector.matches(labels(&r.metadata)) => {
                    let mut adopted = ControllerRevision::clone(r);
                    let cref = new_controller_ref(API_VERSION, KIND, &set.metadata);
                    add_owner_reference(&mut adopted.metadata, cref);
                    let obj = other_object("apps/v1", "ControllerRevision", &adopted)
                        .map_err(|e| e.to_string())?;
                    client.update(obj).map_err(|e| e.to_string())?;
                    out.push(adopted);
                }
                None => {}
            }
        }
        Ok(out)
    }

    /// Upstream `getPodsForStatefulSet`: the ControllerRefManager over the namespace's pods,
    /// claiming only members of the set (by name).
    fn claim_pods(
        &self,
        set: &StatefulSet,
        selector: &Selector,
        client: &mut dyn Client,
    ) -> Result<Vec<Arc<StoredPod>>, String> {
        let ns = utils::set_namespace(set);
        let uid = set.metadata.uid.clone().unwrap_or_default();
        let deleting = set.metadata.deletion_timestamp.is_some();
        let mut out = Vec::new();
        let mut errs = Vec::new();
        // The namespace's pods in name order (the order of the writes below), without the
        // ones the claim ignores in any case: neither owned by the set nor matching it.
        let mut candidates: Vec<(&Arc<StoredPod>, bool, Option<bool>)> = self
            .pods
            .get(ns)
            .into_iter()
            .flat_map(|m| m.values())
            .filter_map(|pod| {
                let matches = selector.matches(pod_labels(pod)) && utils::is_member_of(set, pod);
                let owned = pod_controller(pod).map(|c| c.uid == uid);
                (matches || owned == Some(true)).then_some((pod, matches, owned))
            })
            .collect();
        candidates.sort_unstable_by(|a, b| a.0.metadata.name.cmp(&b.0.metadata.name));
        for (pod, matches, owned) in candidates {
            let adoptable = pod.metadata.deletion_timestamp.is_none();
            match claim_rule(owned, adoptable, deleting, matches) {
                ClaimAction::Claim => out.push(pod.clone()),
                ClaimAction::Ignore => {}
                ClaimAction::Adopt => {
                    let mut p = StoredPod::clone(pod);
                    let cref = new_controller_ref(API_VERSION, KIND, &set.metadata);
                    add_pod_owner_reference(&mut p, cref);
                    match client.update(Object::Pod(Arc::new(p))) {
                        Ok(Object::Pod(adopted)) => out.push(adopted),
                        Ok(_) => {}
                        Err(e) => errs.push(e.to_string()),
                    }
                }
                ClaimAction::Release => {
                    let mut p = StoredPod::clone(pod);
                    remove_pod_owner_reference(&mut p, &uid);
                    if let Err(e) = client.update(Object::Pod(Arc::new(p))) {
                        if !e.is_not_found() {
                            errs.push(e.to_string());
                        }
                    }
                }
            }
        }
        pod_control::aggregate(errs).map(|()| out)
    }
}

impl Component for StatefulSetController {
    fn name(&self) -> &'static str {
        CONTROLLER_NAME
    }

    /// Only StatefulSets, ControllerRevisions, PersistentVolumeClaims and pods.
    fn observes(&self, kind: kubeplane_api::Kind) -> bool {
        matches!(
            kind,
            kubeplane_api::Kind::Other(_) | kubeplane_api::Kind::Pod
        )
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        self.queue.last_seen = self.queue.last_seen.max(now);
        match &ev.object {
            Object::Pod(pod) => self.observe_pod(ev, pod),
            Object::Other(o) => self.observe_other(ev, o),
            _ => {}
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        for key in self.queue.take_due(now) {
            match self.sync(&key, now, client) {
                Ok(()) => self.queue.forget(&key),
                Err(_) => self.queue.add_rate_limited(key, now),
            }
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        self.queue.next_wakeup()
    }
}

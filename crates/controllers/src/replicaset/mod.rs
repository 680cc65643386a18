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

mod cache;
mod pod_control;
pub mod ranking;
mod status;

#[cfg(test)]
mod tests;

use kubeplane_api::StoredPod;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::StoredReplicaSet;
use kubeplane_api::{
    ApiError, Client, Component, DeleteOptions, EventType, Kind, Object, ObjectKey, WatchEvent,
};
use kubeplane_core::features::FeatureGates;
use kubeplane_core::labels::{from_label_selector, selector_from_map, Selector};
use kubeplane_core::time::SimDuration;
use kubeplane_core::version::changes;
use kubeplane_core::{EventRecord, SimTime};

use crate::controller_utils::{
    available_at, claim_rule, is_pod_ready, key_string, ns_name, pod_controller, ready_long_enough,
    slow_start_batch, ClaimAction, Expectations, NsName, WorkQueue, BURST_REPLICAS,
    SLOW_START_INITIAL_BATCH_SIZE,
};
use cache::{Cache, CachedPod, SelectorMemo};
pub use pod_control::pod_from_template;
use pod_control::{
    adopt_pod, create_pod, recheck_replica_set, release_pod, template_spec, SharedMeta,
};
use ranking::{get_pods_to_delete_with_counts, RankContext};
pub use status::{calculate_status, get_condition, remove_condition, set_condition};
use status::{status_with_counts, update_replica_set_status, StatusCounts};

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
pub fn spec_replicas(rs: &StoredReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

fn min_ready_seconds(rs: &StoredReplicaSet) -> i32 {
    rs.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

fn rs_selector(rs: &StoredReplicaSet) -> Result<Selector, String> {
    match rs.spec.as_ref() {
        Some(spec) => from_label_selector(&spec.selector).map_err(|e| e.to_string()),
        None => Ok(Selector::nothing()),
    }
}

/// The selector of the labels a ReplicaSet's template gives its pods (what status calls "fully
/// labeled").
fn template_selector(rs: &StoredReplicaSet) -> Selector {
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

/// The ReplicaSet controller. See the module documentation.
pub struct ReplicaSetController {
    pod_deletion_cost: bool,
    terminating_replicas: bool,
    /// The pod index is keyed by the whole controller reference (kubernetes#134654).
    full_controller_key: bool,
    cache: Cache,
    queue: WorkQueue,
    expectations: Expectations,
    metrics: Metrics,
    /// The labels and controller reference the pods of each ReplicaSet share.
    shared_meta: SharedMeta,
}

impl Default for ReplicaSetController {
    fn default() -> Self {
        Self::new()
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

/// One `claimPods` pass: what it claimed and counted so far, and the errors it met.
struct Claim<'a, 's> {
    rs: &'s Arc<StoredReplicaSet>,
    /// The ReplicaSet is being deleted.
    deleting: bool,
    selects: SelectorMemo<'s>,
    claimed: Claimed<'a>,
    errors: Vec<String>,
    /// The outcome of the ReplicaSet's recheck, made before the first adoption.
    can_adopt: Option<Result<(), String>>,
}

impl<'a> Claim<'a, '_> {
    /// The ControllerRefManager's decision on one pod, `owned` when it was listed as the
    /// ReplicaSet's own.
    #[inline]
    fn consider(&mut self, pod: &'a CachedPod, owned: bool, client: &mut dyn Client) {
        if !pod.active {
            if pod.deleting && owned && self.selects.matches(pod.labels) {
                self.claimed.terminating += 1;
            }
            return;
        }
        let matches = self.selects.matches(pod.labels);
        // An active orphan of the namespace is not being deleted: it is adoptable.
        match claim_rule(owned.then_some(true), true, self.deleting, matches) {
            ClaimAction::Claim => self.claimed.pods.push(pod),
            ClaimAction::Ignore => {}
            ClaimAction::Adopt => self.adopt(pod, client),
            ClaimAction::Release => {
                let uid = self.rs.metadata.uid.as_deref().unwrap_or_default();
                if let Err(e) = release_pod(client, uid, &pod.pod) {
                    self.errors.push(e.to_string());
                }
            }
        }
    }

    /// Adopts an orphan once the ReplicaSet has been rechecked (one uncached GET per sync).
    fn adopt(&mut self, pod: &'a CachedPod, client: &mut dyn Client) {
        let (ns, name) = ns_name(&self.rs.metadata);
        let uid = self.rs.metadata.uid.as_deref().unwrap_or_default();
        let check = self
            .can_adopt
            .get_or_insert_with(|| recheck_replica_set(client, &ns, &name, uid));
        if let Err(e) = check {
            self.errors.push(format!(
                "can't adopt Pod {}/{} ({}): {e}",
                ns,
                pod.pod.metadata.name.as_deref().unwrap_or(""),
                pod.uid()
            ));
            return;
        }
        match adopt_pod(client, self.rs, &pod.pod) {
            Ok(true) => self.claimed.pods.push(pod),
            Ok(false) => {}
            Err(e) => self.errors.push(e.to_string()),
        }
    }
}

/// A sync's view of the controller: the caches it reads, from which the claimed pods are
/// borrowed for the whole sync, and apart from them the queue, expectations and counters it
/// updates.
struct SyncCx<'a> {
    cache: &'a Cache,
    queue: &'a mut WorkQueue,
    expectations: &'a mut Expectations,
    metrics: &'a mut Metrics,
    shared_meta: &'a mut SharedMeta,
    pod_deletion_cost: bool,
    terminating_replicas: bool,
    full_controller_key: bool,
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
            full_controller_key: features
                .version()
                .has(changes::POD_CONTROLLER_INDEX_FULL_KEY),
            cache: Cache::default(),
            queue: WorkQueue::default(),
            expectations: Expectations::default(),
            metrics: Metrics::default(),
            shared_meta: SharedMeta::default(),
        }
    }

    /// The expectations of a ReplicaSet key (for tests and diagnostics).
    pub fn expectations(&self) -> &Expectations {
        &self.expectations
    }

    // ----- event handlers --------------------------------------------------------------------

    fn add_pod(&mut self, pod: &StoredPod) {
        if pod.metadata.deletion_timestamp.is_some() {
            self.delete_pod(pod);
            return;
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        if let Some(r) = pod_controller(pod) {
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

    fn update_pod(&mut self, old: &StoredPod, cur: &StoredPod) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            return;
        }
        if !status_relevant_change(old, cur) {
            // Upstream syncs on every pod update; a sync after a change like a binding would
            // find nothing to do, so kubeplane skips it (it matters with 10,000 pods).
            return;
        }
        let label_changed = old.labels() != cur.labels();
        if cur.metadata.deletion_timestamp.is_some() {
            self.delete_pod(cur);
            if label_changed {
                self.delete_pod(old);
            }
            return;
        }
        let ns = cur.metadata.namespace.as_deref().unwrap_or("default");
        let cur_ref = pod_controller(cur);
        let old_ref = pod_controller(old);
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

    fn delete_pod(&mut self, pod: &StoredPod) {
        let Some(r) = pod_controller(pod) else {
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
            shared_meta: &mut self.shared_meta,
            pod_deletion_cost: self.pod_deletion_cost,
            terminating_replicas: self.terminating_replicas,
            full_controller_key: self.full_controller_key,
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
                        p.facts.ready
                            && !ready_long_enough(p.facts.ready_time(), min_ready, now_ts.0)
                    })
                    .filter_map(|p| p.facts.ready_time())
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

    /// Upstream `claimPods` over the pods the ReplicaSet lists as its own
    /// ([`Cache::controlled_pods`]) and the orphans of its namespace: the ControllerRefManager
    /// adopts matching orphans and releases owned pods that stopped matching. Any error fails
    /// the sync before pods are created or deleted. On the way it counts the owned terminating
    /// pods that match: one pass, one selector evaluation per distinct label map.
    fn claim_pods(
        &self,
        rs: &Arc<StoredReplicaSet>,
        selector: &Selector,
        client: &mut dyn Client,
    ) -> Result<Claimed<'a>, String> {
        let cache: &'a Cache = self.cache;
        let ns = rs.metadata.namespace.as_deref().unwrap_or("default");
        let owned = cache.controlled_pods(rs, self.full_controller_key);
        let orphans = cache.orphan_pods.namespace(ns);
        let n_candidates =
            owned.iter().map(|m| m.len()).sum::<usize>() + orphans.map_or(0, BTreeSet::len);
        let owned = owned
            .into_iter()
            .flatten()
            .filter(|p| p.namespaced)
            .map(|p| (&*p.0, true));
        let orphans = orphans.into_iter().flatten().map(|p| (&*p.0, false));
        let mut claim = Claim {
            rs,
            deleting: rs.metadata.deletion_timestamp.is_some(),
            selects: SelectorMemo::new(selector, &cache.label_sets),
            claimed: Claimed {
                pods: Vec::with_capacity(n_candidates),
                terminating: 0,
            },
            errors: Vec::new(),
            can_adopt: None,
        };
        for (pod, owned) in owned.chain(orphans) {
            claim.consider(pod, owned, client);
        }
        let Claim {
            claimed,
            mut errors,
            ..
        } = claim;
        match errors.len() {
            0 => Ok(claimed),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// Upstream `manageReplicas`: creates or deletes at most [`BURST_REPLICAS`] pods.
    fn manage_replicas(
        &mut self,
        claimed: &[&CachedPod],
        rs: &Arc<StoredReplicaSet>,
        key: &NsName,
        now: SimTime,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let diff = claimed.len() as i64 - i64::from(spec_replicas(rs));
        match diff {
            d if d < 0 => {
                let n = ((-d) as usize).min(BURST_REPLICAS);
                self.create_replicas(n, rs, key, now, client)
            }
            d if d > 0 => {
                let n = (d as usize).min(BURST_REPLICAS);
                self.delete_replicas(n, claimed, rs, key, now, client)
            }
            _ => Ok(()),
        }
    }

    /// Creates `n` pods in slow-start batches.
    fn create_replicas(
        &mut self,
        n: usize,
        rs: &Arc<StoredReplicaSet>,
        key: &NsName,
        now: SimTime,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        // Expect the creates before making any: their watch events may arrive at any time.
        self.expectations.expect_creations(key, n, now);
        let mut created = 0u64;
        let spec = template_spec(rs, key, self.shared_meta);
        let (successes, err) = slow_start_batch(n, SLOW_START_INITIAL_BATCH_SIZE, || {
            let r = create_pod(client, rs, spec.clone(), now);
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
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Deletes the `n` claimed pods that rank first for deletion.
    fn delete_replicas(
        &mut self,
        n: usize,
        claimed: &[&CachedPod],
        rs: &Arc<StoredReplicaSet>,
        key: &NsName,
        now: SimTime,
        client: &mut dyn Client,
    ) -> Result<(), String> {
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
            let (ns, name) = key;
            let record = ranking::explain_record(now.as_secs_f64(), ns, name, &choice, n, &ctx);
            client.emit_record(record);
        }
        self.delete_victims(&choice.victims, key, now, client)
    }

    /// Deletes the chosen pods, expecting their deletions first.
    fn delete_victims(
        &mut self,
        victims: &[&StoredPod],
        key: &NsName,
        now: SimTime,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let (ns, name) = key;
        let pod_keys: Vec<String> = victims
            .iter()
            .map(|p| key_string(&ns_name(&p.metadata)))
            .collect();
        self.expectations
            .expect_deletions(key, pod_keys.clone(), now);
        let mut first_err = None;
        for (pod, pod_key) in victims.iter().zip(&pod_keys) {
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            let obj_key = ObjectKey::new(Kind::Pod, ns, &pod_name);
            let event = match client.delete(&obj_key, DeleteOptions::default()) {
                Ok(_) => {
                    self.metrics.pods_deleted += 1;
                    let message = format!("Deleted pod: {pod_name}");
                    EventRecord::normal(
                        now,
                        CONTROLLER_NAME,
                        KIND,
                        ns,
                        name,
                        REASON_SUCCESSFUL_DELETE,
                        message,
                    )
                }
                Err(e) => {
                    // The informer will never see this deletion.
                    self.expectations.deletion_observed(key, pod_key);
                    if matches!(e, ApiError::NotFound { .. }) {
                        continue;
                    }
                    first_err.get_or_insert_with(|| format!("unable to delete pods: {e}"));
                    let message = format!("Error deleting: {e}");
                    EventRecord::warning(
                        now,
                        CONTROLLER_NAME,
                        KIND,
                        ns,
                        name,
                        REASON_FAILED_DELETE,
                        message,
                    )
                }
            };
            client.record_event(event);
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Whether a pod update can change what a sync of its ReplicaSet does: which ReplicaSet may
/// claim it, whether it is active, its readiness or availability. Node, restarts and deletion
/// cost matter only when pods are ranked, which reads them at that moment.
fn status_relevant_change(old: &StoredPod, cur: &StoredPod) -> bool {
    let ready = |p: &StoredPod| {
        crate::controller_utils::pod_ready_condition(p).map(|(status, t)| (status.to_string(), t))
    };
    old.labels() != cur.labels()
        || old.owner_references() != cur.owner_references()
        || old.metadata.deletion_timestamp != cur.metadata.deletion_timestamp
        || crate::controller_utils::pod_phase(old) != crate::controller_utils::pod_phase(cur)
        || ready(old) != ready(cur)
}

impl Component for ReplicaSetController {
    fn name(&self) -> &'static str {
        CONTROLLER_NAME
    }

    /// Only ReplicaSets and pods.
    fn observes(&self, kind: kubeplane_api::Kind) -> bool {
        matches!(
            kind,
            kubeplane_api::Kind::ReplicaSet | kubeplane_api::Kind::Pod
        )
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        self.queue.last_seen = self.queue.last_seen.max(now);
        match &ev.object {
            Object::ReplicaSet(rs) => {
                let key = ns_name(&rs.metadata);
                let current = (ev.type_ != EventType::Deleted).then_some(rs);
                let cached = self.cache.replace_rs(&key, current);
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
                    }
                    EventType::Deleted => {
                        self.expectations.delete(&key);
                        self.shared_meta.forget(&key);
                    }
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

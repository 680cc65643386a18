//! Helpers shared by the workload controllers (ReplicaSet, Deployment), after upstream
//! `pkg/controller/controller_utils.go` and `controller_ref_manager.go`: pod predicates,
//! controller references, the claim rules of the ControllerRefManager, expectations and
//! slow-start batching. Nothing here reads a clock: instants are parameters.

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;

/// Pods created or deleted in one sync at most (upstream `BurstReplicas`, a constant).
pub const BURST_REPLICAS: usize = 500;
/// The first batch of a slow-start create wave (upstream `SlowStartInitialBatchSize`).
pub const SLOW_START_INITIAL_BATCH_SIZE: usize = 1;
/// Expectations older than this count as satisfied: the safety valve for lost watch events
/// (upstream `ExpectationsTimeout`).
pub const EXPECTATIONS_TIMEOUT: SimDuration = SimDuration(5 * 60 * 1_000_000_000);
/// The annotation users set to say which pods of a ReplicaSet should go first.
pub const POD_DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The first delay of the per-item exponential rate limiter (upstream 5 ms … 1000 s).
pub const RATE_LIMIT_BASE: SimDuration = SimDuration(5_000_000);
/// The longest delay of the per-item exponential rate limiter.
pub const RATE_LIMIT_MAX: SimDuration = SimDuration(1000 * 1_000_000_000);
/// Upstream `DefaultControllerRateLimiter`'s overall bucket: 10 requeues per second, bursts of
/// 100, shared by every key of a queue.
pub const RATE_LIMIT_QPS: i64 = 10;
pub const RATE_LIMIT_BURST: i64 = 100;

/// A namespaced object's identity as the controllers' caches key it.
pub type NsName = (String, String);

pub fn ns_name(meta: &ObjectMeta) -> NsName {
    (
        meta.namespace.clone().unwrap_or_else(|| "default".into()),
        meta.name.clone().unwrap_or_default(),
    )
}

/// `namespace/name` (upstream `PodKey` / `KeyFunc`).
pub fn key_string(key: &NsName) -> String {
    format!("{}/{}", key.0, key.1)
}

/// Phase is neither Succeeded nor Failed and no deletion was requested (upstream `IsPodActive`).
pub fn is_pod_active(pod: &StoredPod) -> bool {
    let phase = pod_phase(pod);
    phase != "Succeeded" && phase != "Failed" && pod.metadata.deletion_timestamp.is_none()
}

pub fn pod_phase(pod: &StoredPod) -> &str {
    pod.phase().unwrap_or("")
}

pub fn pod_node(pod: &StoredPod) -> &str {
    pod.node_name().unwrap_or("")
}

/// The status and lastTransitionTime of the pod's Ready condition.
pub fn pod_ready_condition(pod: &StoredPod) -> Option<(&str, Option<Time>)> {
    pod.status().and_then(|s| s.condition_status_time("Ready"))
}

/// The pod's Ready condition is True (upstream `podutil.IsPodReady`).
pub fn is_pod_ready(pod: &StoredPod) -> bool {
    pod_ready_condition(pod).is_some_and(|(status, _)| status == "True")
}

/// The `lastTransitionTime` of a True Ready condition; `None` stands for Go's zero time.
pub fn pod_ready_time(pod: &StoredPod) -> Option<Timestamp> {
    pod_ready_condition(pod)
        .filter(|(status, _)| *status == "True")
        .and_then(|(_, t)| t)
        .map(|t| t.0)
}

/// Ready for at least `min_ready_secs` (upstream `podutil.IsPodAvailable`).
///
/// Upstream requires `lastTransitionTime + minReadySeconds` to be strictly before `now`; on a
/// virtual clock that would make a pod available only an instant *after* the moment it is due.
/// kubeplane counts it available at that moment (`<=`), which no real clock can tell apart.
pub fn is_pod_available(pod: &StoredPod, min_ready_secs: i32, now: Timestamp) -> bool {
    is_pod_ready(pod) && ready_long_enough(pod_ready_time(pod), min_ready_secs, now)
}

/// Whether a pod whose Ready condition is True, since `ready_time` ([`pod_ready_time`]), counts
/// as available: the rest of [`is_pod_available`], for callers that cached the pod's readiness.
pub fn ready_long_enough(
    ready_time: Option<Timestamp>,
    min_ready_secs: i32,
    now: Timestamp,
) -> bool {
    if min_ready_secs <= 0 {
        return true;
    }
    match ready_time {
        None => false,
        Some(t) => available_at(t, min_ready_secs) <= now,
    }
}

/// The instant a pod that became ready at `ready_since` counts as available.
pub fn available_at(ready_since: Timestamp, min_ready_secs: i32) -> Timestamp {
    ready_since
        .checked_add(jiff::SignedDuration::from_secs(i64::from(min_ready_secs)))
        .unwrap_or(ready_since)
}

/// The highest restartCount over the regular containers (init and ephemeral containers are
/// not counted, as upstream).
pub fn max_container_restarts(pod: &StoredPod) -> i32 {
    pod.status()
        .and_then(|s| s.max_restart_count())
        .unwrap_or(0)
        .max(0)
}

/// Pending 0, Unknown 1, Running 2; any other phase (the empty one included) is 0.
pub fn pod_phase_ordinal(phase: &str) -> u8 {
    match phase {
        "Unknown" => 1,
        "Running" => 2,
        _ => 0,
    }
}

/// The `controller.kubernetes.io/pod-deletion-cost` of a pod (upstream
/// `GetDeletionCostFromPodAnnotations`): missing means 0; a value must start with `-` or a digit
/// 1-9, or be exactly `"0"`, and parse as a base-10 int32. Callers treat an error as 0.
pub fn deletion_cost(annotations: Option<&BTreeMap<String, String>>) -> Result<i32, String> {
    let Some(value) = annotations.and_then(|a| a.get(POD_DELETION_COST_ANNOTATION)) else {
        return Ok(0);
    };
    let first_ok = value == "0"
        || value
            .as_bytes()
            .first()
            .is_some_and(|&b| b == b'-' || (b'1'..=b'9').contains(&b));
    if !first_ok {
        return Err(format!("invalid value {value:?}"));
    }
    value
        .parse::<i32>()
        .map_err(|e| format!("invalid value {value:?}: {e}"))
}

/// The owner reference with `controller: true` (upstream `metav1.GetControllerOf`). Not for
/// a stored pod, whose owner references are outside its metadata: [`pod_controller`].
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    controller_among(meta.owner_references.as_ref())
}

/// [`controller_of`] of a pod.
#[inline]
pub fn pod_controller(pod: &StoredPod) -> Option<&OwnerReference> {
    controller_among(pod.owner_references())
}

/// The reference with `controller: true` among `refs`.
pub fn controller_among(refs: Option<&Vec<OwnerReference>>) -> Option<&OwnerReference> {
    refs.and_then(|refs| refs.iter().find(|r| r.controller == Some(true)))
}

/// A controller reference `{apiVersion, kind, name, uid, controller: true,
/// blockOwnerDeletion: true}` (upstream `metav1.NewControllerRef`).
pub fn new_controller_ref(api_version: &str, kind: &str, owner: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: owner.name.clone().unwrap_or_default(),
        uid: owner.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// What the ControllerRefManager does with one candidate object (upstream `ClaimObject`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ClaimAction {
    /// Owned by this controller and matching: claimed as it is.
    Claim,
    /// An orphan that matches: adopt it (add our controller reference), then claim it.
    Adopt,
    /// Owned by this controller but no longer matching: remove our reference.
    Release,
    /// Owned by someone else, or neither claimable nor releasable.
    Ignore,
}

/// The ControllerRefManager rules for one object.
/// `owner_deleting`: the controller has a deletionTimestamp.
pub fn claim_action(
    owner_uid: &str,
    owner_namespace: &str,
    owner_deleting: bool,
    obj: &ObjectMeta,
    matches: bool,
) -> ClaimAction {
    claim_action_of(
        owner_uid,
        owner_namespace,
        owner_deleting,
        obj,
        controller_of(obj),
        matches,
    )
}

/// [`claim_action`] of a pod.
pub fn claim_pod_action(
    owner_uid: &str,
    owner_namespace: &str,
    owner_deleting: bool,
    pod: &StoredPod,
    matches: bool,
) -> ClaimAction {
    let controller = pod_controller(pod);
    claim_action_of(
        owner_uid,
        owner_namespace,
        owner_deleting,
        &pod.metadata,
        controller,
        matches,
    )
}

fn claim_action_of(
    owner_uid: &str,
    owner_namespace: &str,
    owner_deleting: bool,
    obj: &ObjectMeta,
    controller: Option<&OwnerReference>,
    matches: bool,
) -> ClaimAction {
    let controlled_by_owner = controller.map(|r| r.uid == owner_uid);
    let adoptable = obj.deletion_timestamp.is_none()
        && obj.namespace.as_deref().unwrap_or("default") == owner_namespace;
    claim_rule(controlled_by_owner, adoptable, owner_deleting, matches)
}

/// The ControllerRefManager rules over the facts they read of an object, for callers that know
/// them without reading the object (an informer index by controller UID, say).
/// `controlled_by_owner`: `None` for an object without a controller, else whether its controller
/// is the owner; `adoptable`: it is not being deleted and is in the owner's namespace.
pub fn claim_rule(
    controlled_by_owner: Option<bool>,
    adoptable: bool,
    owner_deleting: bool,
    matches: bool,
) -> ClaimAction {
    match controlled_by_owner {
        Some(false) => ClaimAction::Ignore,
        Some(true) if matches => ClaimAction::Claim,
        Some(true) if owner_deleting => ClaimAction::Ignore,
        Some(true) => ClaimAction::Release,
        None if owner_deleting || !matches || !adoptable => ClaimAction::Ignore,
        None => ClaimAction::Adopt,
    }
}

/// Adds `controller_ref` to the object's owner references, replacing one with the same UID (the
/// strategic merge patch upstream sends merges the list by UID).
pub fn add_owner_reference(meta: &mut ObjectMeta, controller_ref: OwnerReference) {
    put_reference(
        meta.owner_references.get_or_insert_with(Vec::new),
        controller_ref,
    );
}

/// `r` in `refs` in place of any with its UID, at the end.
fn put_reference(refs: &mut Vec<OwnerReference>, r: OwnerReference) {
    refs.retain(|o| o.uid != r.uid);
    refs.push(r);
}

/// Removes the owner reference with this UID (the `$patch: delete` of a release).
pub fn remove_owner_reference(meta: &mut ObjectMeta, uid: &str) {
    if let Some(refs) = meta.owner_references.as_mut() {
        refs.retain(|r| r.uid != uid);
        if refs.is_empty() {
            meta.owner_references = None;
        }
    }
}

/// [`add_owner_reference`] on a pod (its shared list copied first).
pub fn add_pod_owner_reference(pod: &mut StoredPod, controller_ref: OwnerReference) {
    put_reference(pod.owner_references_mut(), controller_ref);
}

/// [`remove_owner_reference`] on a pod (its shared list copied first, only if it has the UID
/// beside others).
pub fn remove_pod_owner_reference(pod: &mut StoredPod, uid: &str) {
    let Some(refs) = pod.owner_references() else {
        return;
    };
    if refs.iter().all(|r| r.uid == uid) {
        pod.set_owner_references(None);
    } else if refs.iter().any(|r| r.uid == uid) {
        pod.owner_references_mut().retain(|r| r.uid != uid);
    }
}

/// Calls `f` `count` times in batches of 1, 2, 4, ... (upstream `slowStartBatch`). Every call of
/// a batch is made (upstream runs them concurrently); a batch with a failure ends the wave.
/// Returns the number of successes and the first error.
pub fn slow_start_batch<E>(
    count: usize,
    initial_batch_size: usize,
    mut f: impl FnMut() -> Result<(), E>,
) -> (usize, Option<E>) {
    let mut remaining = count;
    let mut successes = 0;
    let mut batch = remaining.min(initial_batch_size);
    while batch > 0 {
        let mut first_err = None;
        for _ in 0..batch {
            match f() {
                Ok(()) => successes += 1,
                Err(e) => {
                    if first_err.is_none() {
                        first_err = Some(e);
                    }
                }
            }
        }
        if first_err.is_some() {
            return (successes, first_err);
        }
        remaining -= batch;
        batch = (2 * batch).min(remaining);
    }
    (successes, None)
}

/// One controller's outstanding creates and deletes (upstream `ControlleeExpectations`), with
/// the keys of the pods it expects to see deleted (upstream `UIDTrackingControllerExpectations`,
/// which despite the name tracks `namespace/name` keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectation {
    pub add: i64,
    pub del: i64,
    pub timestamp: SimTime,
}

/// The expectations of every controller key. While a key's expectations are unmet the
/// controller still writes status but does not create or delete: its own earlier writes have
/// not reached its cache yet.
#[derive(Clone, Debug, Default)]
pub struct Expectations {
    records: BTreeMap<NsName, Expectation>,
    deletion_keys: BTreeMap<NsName, BTreeSet<String>>,
}

impl Expectations {
    /// No record, both counters at or below zero, or a record older than five minutes.
    pub fn satisfied(&self, key: &NsName, now: SimTime) -> bool {
        match self.records.get(key) {
            None => true,
            Some(e) => (e.add <= 0 && e.del <= 0) || now - e.timestamp > EXPECTATIONS_TIMEOUT,
        }
    }

    pub fn get(&self, key: &NsName) -> Option<&Expectation> {
        self.records.get(key)
    }

    /// Replaces the record and stamps it `now` (upstream `SetExpectations`).
    pub fn set(&mut self, key: &NsName, add: i64, del: i64, now: SimTime) {
        self.records.insert(
            key.clone(),
            Expectation {
                add,
                del,
                timestamp: now,
            },
        );
    }

    pub fn expect_creations(&mut self, key: &NsName, n: usize, now: SimTime) {
        self.set(key, n as i64, 0, now);
    }

    /// Expects the deletion of exactly these pods (keys `namespace/name`).
    pub fn expect_deletions(&mut self, key: &NsName, pod_keys: Vec<String>, now: SimTime) {
        let n = pod_keys.len();
        self.deletion_keys
            .insert(key.clone(), pod_keys.into_iter().collect());
        self.set(key, 0, n as i64, now);
    }

    /// Expects `add` creates and the deletion of exactly these pods at once (the DaemonSet
    /// controller's `SetExpectations(key, creates, deletes)`).
    pub fn expect(&mut self, key: &NsName, add: usize, pod_keys: Vec<String>, now: SimTime) {
        let n = pod_keys.len();
        self.deletion_keys
            .insert(key.clone(), pod_keys.into_iter().collect());
        self.set(key, add as i64, n as i64, now);
    }

    /// One expected create was seen, or will never happen. Without a record, nothing happens.
    pub fn creation_observed(&mut self, key: &NsName) {
        if let Some(e) = self.records.get_mut(key) {
            e.add -= 1;
        }
    }

    /// The pod `pod_key` was seen deleted (or terminating). Counts only for pods this key
    /// expected to delete, and only once per pod.
    pub fn deletion_observed(&mut self, key: &NsName, pod_key: &str) {
        let Some(keys) = self.deletion_keys.get_mut(key) else {
            return;
        };
        if keys.remove(pod_key) {
            if let Some(e) = self.records.get_mut(key) {
                e.del -= 1;
            }
        }
    }

    pub fn delete(&mut self, key: &NsName) {
        self.records.remove(key);
        self.deletion_keys.remove(key);
    }
}

/// A work queue with upstream's semantics where they matter to a simulation: a key is queued at
/// most once; `add_after` keeps the earliest due time; rate-limited keys are retried after the
/// longer of a per-key exponential delay (5 ms, 10 ms, ... up to 1000 s, reset by `forget`)
/// and the queue-wide bucket's delay (10 per second, bursts of 100), as upstream's
/// `DefaultControllerRateLimiter`.
#[derive(Clone, Debug, Default)]
pub struct WorkQueue {
    ready: BTreeSet<NsName>,
    delayed: BTreeSet<(SimTime, NsName)>,
    due_by_key: BTreeMap<NsName, SimTime>,
    failures: BTreeMap<NsName, u32>,
    /// The bucket as a theoretical arrival time: each requeue moves it one emission interval
    /// (1/`RATE_LIMIT_QPS` s) past `max(itself, now)`, and waits until it is at most
    /// `RATE_LIMIT_BURST` intervals ahead of the clock (a token bucket, in integers).
    bucket_tat: SimTime,
    /// The latest instant the owner has seen; `next_wakeup` answers it while keys are ready.
    pub last_seen: SimTime,
}

impl WorkQueue {
    pub fn add(&mut self, key: NsName) {
        self.ready.insert(key);
    }

    pub fn add_after(&mut self, key: NsName, at: SimTime) {
        if let Some(&due) = self.due_by_key.get(&key) {
            if due <= at {
                return;
            }
            self.delayed.remove(&(due, key.clone()));
        }
        self.due_by_key.insert(key.clone(), at);
        self.delayed.insert((at, key));
    }

    /// Requeues a key after its next backoff delay (upstream `AddRateLimited`).
    pub fn add_rate_limited(&mut self, key: NsName, now: SimTime) {
        let n = self.failures.entry(key.clone()).or_insert(0);
        let exp = (*n).min(40);
        *n += 1;
        let per_key = RATE_LIMIT_BASE
            .0
            .saturating_mul(1i64 << exp.min(62))
            .min(RATE_LIMIT_MAX.0);
        let interval = 1_000_000_000 / RATE_LIMIT_QPS;
        self.bucket_tat = SimTime(self.bucket_tat.0.max(now.0) + interval);
        let bucket = (self.bucket_tat.0 - RATE_LIMIT_BURST * interval - now.0).max(0);
        self.add_after(key, now + SimDuration(per_key.max(bucket)));
    }

    /// Clears a key's failure count (upstream `Forget`).
    pub fn forget(&mut self, key: &NsName) {
        self.failures.remove(key);
    }

    /// Moves every delayed key due at `now` to the ready set and takes the ready set.
    pub fn take_due(&mut self, now: SimTime) -> BTreeSet<NsName> {
        self.last_seen = self.last_seen.max(now);
        while let Some((t, _)) = self.delayed.first() {
            if *t > now {
                break;
            }
            let (_, key) = self.delayed.pop_first().expect("non-empty");
            self.due_by_key.remove(&key);
            self.ready.insert(key);
        }
        std::mem::take(&mut self.ready)
    }

    pub fn next_wakeup(&self) -> Option<SimTime> {
        if !self.ready.is_empty() {
            return Some(self.last_seen);
        }
        self.delayed.first().map(|(t, _)| *t)
    }

    pub fn is_empty(&self) -> bool {
        self.ready.is_empty() && self.delayed.is_empty()
    }
}

// ----- informer-cache lookups shared by the ReplicaSet and Deployment controllers -----------

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// An object's labels (none when unset). Not for a stored pod, whose labels are outside its
/// metadata: [`pod_labels`].
pub fn labels(meta: &ObjectMeta) -> &BTreeMap<String, String> {
    meta.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// A pod's labels (none when unset).
#[inline]
pub fn pod_labels(pod: &StoredPod) -> &BTreeMap<String, String> {
    pod.labels().unwrap_or(&NO_LABELS)
}

/// The cached objects of one namespace, in name order.
pub fn in_namespace<'a, T>(
    cache: &'a BTreeMap<NsName, T>,
    namespace: &'a str,
) -> impl Iterator<Item = (&'a NsName, &'a T)> + 'a {
    cache
        .range((namespace.to_string(), String::new())..)
        .take_while(move |((n, _), _)| n == namespace)
}

/// The cached controller a controller reference points to: same kind, and the object of that
/// name in `namespace` has the reference's UID.
pub fn resolve_controller_ref<T>(
    cache: &BTreeMap<NsName, std::sync::Arc<T>>,
    kind: &str,
    namespace: &str,
    r: &OwnerReference,
    meta: impl Fn(&T) -> &ObjectMeta,
) -> Option<NsName> {
    if r.kind != kind {
        return None;
    }
    let key = (namespace.to_string(), r.name.clone());
    let obj = cache.get(&key)?;
    (meta(obj).uid.as_deref() == Some(r.uid.as_str())).then_some(key)
}

/// The cached objects in `namespace` whose valid, non-empty selector matches `target`.
pub fn selecting<T>(
    cache: &BTreeMap<NsName, std::sync::Arc<T>>,
    namespace: &str,
    target: &BTreeMap<String, String>,
    selector: impl Fn(&T) -> Result<kubeplane_core::labels::Selector, String>,
) -> Vec<NsName> {
    in_namespace(cache, namespace)
        .filter(|(_, obj)| match selector(obj) {
            Ok(sel) => !sel.is_empty() && sel.matches(target),
            Err(_) => false,
        })
        .map(|(k, _)| k.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: &str) -> NsName {
        ("default".into(), n.into())
    }

    #[test]
    fn slow_start_batches_double_until_the_count_is_reached() {
        // Upstream TestSlowStartBatch: count 10, initial batch 1.
        let mut calls = 0;
        let (ok, err) = slow_start_batch(10, 1, || {
            calls += 1;
            Ok::<(), ()>(())
        });
        assert_eq!((ok, err, calls), (10, None, 10));

        let mut calls = 0;
        let (ok, err) = slow_start_batch(10, 1, || {
            calls += 1;
            Err::<(), _>("boom")
        });
        assert_eq!((ok, err, calls), (0, Some("boom"), 1));

        // Only the first 5 calls succeed: batches 1, 2, 4 run (7 calls), 5 successes.
        let mut calls = 0;
        let (ok, err) = slow_start_batch(10, 1, || {
            calls += 1;
            if calls <= 5 {
                Ok(())
            } else {
                Err("quota")
            }
        });
        assert_eq!((ok, err, calls), (5, Some("quota"), 7));
    }

    #[test]
    fn expectations_are_satisfied_once_observed_or_expired() {
        // Upstream TestControllerExpectations.
        let mut e = Expectations::default();
        let k = key("rs");
        assert!(e.satisfied(&k, SimTime::ZERO), "no record means satisfied");
        e.set(&k, 2, 1, SimTime::ZERO);
        assert!(!e.satisfied(&k, SimTime::ZERO));
        e.creation_observed(&k);
        assert!(!e.satisfied(&k, SimTime::ZERO));
        e.creation_observed(&k);
        e.records.get_mut(&k).unwrap().del -= 1;
        assert!(e.satisfied(&k, SimTime::ZERO));
        // Going negative stays satisfied.
        e.creation_observed(&k);
        assert!(e.satisfied(&k, SimTime::ZERO));
        // An unmet record older than five minutes is satisfied.
        e.set(&k, 1, 0, SimTime::ZERO);
        assert!(!e.satisfied(&k, SimTime::from_secs(300)));
        assert!(e.satisfied(&k, SimTime::from_secs(301)));
    }

    #[test]
    fn uid_tracking_counts_each_expected_pod_once() {
        // Upstream TestUIDExpectations.
        let mut e = Expectations::default();
        let k = key("rs");
        e.expect_deletions(
            &k,
            vec!["default/a".into(), "default/b".into()],
            SimTime::ZERO,
        );
        assert!(!e.satisfied(&k, SimTime::ZERO));
        e.deletion_observed(&k, "default/a");
        // Terminating first, gone later: the second observation does not count again.
        e.deletion_observed(&k, "default/a");
        e.deletion_observed(&k, "default/unrelated");
        assert_eq!(e.get(&k).unwrap().del, 1);
        e.deletion_observed(&k, "default/b");
        assert!(e.satisfied(&k, SimTime::ZERO));
        e.delete(&k);
        assert!(e.get(&k).is_none());
    }

    #[test]
    fn deletion_cost_parsing_follows_the_int32_rules() {
        let ann = |v: &str| -> BTreeMap<String, String> {
            [(POD_DELETION_COST_ANNOTATION.to_string(), v.to_string())].into()
        };
        assert_eq!(deletion_cost(None), Ok(0));
        assert_eq!(deletion_cost(Some(&BTreeMap::new())), Ok(0));
        assert_eq!(deletion_cost(Some(&ann("0"))), Ok(0));
        assert_eq!(deletion_cost(Some(&ann("100"))), Ok(100));
        assert_eq!(deletion_cost(Some(&ann("-100"))), Ok(-100));
        assert_eq!(deletion_cost(Some(&ann("2147483647"))), Ok(i32::MAX));
        assert_eq!(deletion_cost(Some(&ann("-2147483648"))), Ok(i32::MIN));
        for bad in [
            "+10",
            "008",
            "",
            "2147483648",
            "-2147483649",
            "1.5",
            "abc",
            "-",
            " 1",
        ] {
            assert!(
                deletion_cost(Some(&ann(bad))).is_err(),
                "{bad:?} must be invalid"
            );
        }
    }

    #[test]
    fn active_pods_exclude_finished_and_terminating_ones() {
        // Upstream TestActivePodFiltering: phases {Succeeded, Failed, "", "", ""} -> the last 3.
        use k8s_openapi::api::core::v1::{Pod, PodStatus};
        let pod = |phase: &str| -> StoredPod {
            Pod {
                status: Some(PodStatus {
                    phase: (!phase.is_empty()).then(|| phase.to_string()),
                    ..Default::default()
                }),
                ..Default::default()
            }
            .into()
        };
        let pods = [pod("Succeeded"), pod("Failed"), pod(""), pod(""), pod("")];
        assert_eq!(pods.iter().filter(|p| is_pod_active(p)).count(), 3);
        let mut terminating = pod("Running");
        terminating.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH),
        );
        assert!(!is_pod_active(&terminating));
    }

    #[test]
    fn the_work_queue_keeps_the_earliest_due_time_and_backs_off_failures() {
        let mut q = WorkQueue::default();
        q.add_after(key("a"), SimTime::from_secs(10));
        q.add_after(key("a"), SimTime::from_secs(5));
        q.add_after(key("a"), SimTime::from_secs(7));
        assert_eq!(q.next_wakeup(), Some(SimTime::from_secs(5)));
        assert!(q.take_due(SimTime::from_secs(4)).is_empty());
        assert_eq!(q.take_due(SimTime::from_secs(5)).len(), 1);
        assert!(q.is_empty());
        q.add_rate_limited(key("b"), SimTime::ZERO);
        assert_eq!(q.next_wakeup(), Some(SimTime::from_millis(5)));
        q.take_due(SimTime::from_millis(5));
        q.add_rate_limited(key("b"), SimTime::from_millis(5));
        assert_eq!(q.next_wakeup(), Some(SimTime::from_millis(15)));
        q.forget(&key("b"));
    }

    #[test]
    fn rate_limited_requeues_share_a_bucket_of_10_per_second_with_bursts_of_100() {
        // A key that is forgotten after every sync (upstream's deployment progress check in
        // its last second) is requeued after 5 ms while the bucket has tokens, then at 10 per
        // second.
        let mut q = WorkQueue::default();
        let mut now = SimTime::from_secs(100);
        let mut delays = Vec::new();
        for _ in 0..110 {
            q.add_rate_limited(key("d"), now);
            let due = q.next_wakeup().unwrap();
            delays.push((due - now).0 / 1_000_000);
            now = due;
            q.take_due(now);
            q.forget(&key("d"));
        }
        // 5 ms each for the burst (a few more: the bucket refills meanwhile), then 100 ms.
        assert!(delays[..100].iter().all(|&d| d == 5), "{delays:?}");
        assert!(delays.iter().all(|&d| d <= 100), "{delays:?}");
        assert_eq!(delays[106..], [100, 100, 100, 100], "{delays:?}");
        // An idle second refills 10 tokens.
        now = now + SimDuration::from_secs(1);
        for _ in 0..10 {
            q.add_rate_limited(key("d"), now);
            assert_eq!(q.next_wakeup(), Some(now + SimDuration::from_millis(5)));
            now = q.next_wakeup().unwrap();
            q.take_due(now);
            q.forget(&key("d"));
        }
    }

    #[test]
    fn claim_rules_follow_the_controller_ref_manager() {
        let owner = "uid-rs";
        let mut orphan = ObjectMeta {
            namespace: Some("default".into()),
            ..Default::default()
        };
        assert_eq!(
            claim_action(owner, "default", false, &orphan, true),
            ClaimAction::Adopt
        );
        assert_eq!(
            claim_action(owner, "default", true, &orphan, true),
            ClaimAction::Ignore
        );
        assert_eq!(
            claim_action(owner, "other", false, &orphan, true),
            ClaimAction::Ignore
        );
        assert_eq!(
            claim_action(owner, "default", false, &orphan, false),
            ClaimAction::Ignore
        );
        let owner_meta = ObjectMeta {
            name: Some("rs".into()),
            uid: Some(owner.into()),
            ..Default::default()
        };
        add_owner_reference(
            &mut orphan,
            new_controller_ref("apps/v1", "ReplicaSet", &owner_meta),
        );
        let ours = orphan.clone();
        assert_eq!(
            claim_action(owner, "default", false, &ours, true),
            ClaimAction::Claim
        );
        assert_eq!(
            claim_action(owner, "default", true, &ours, true),
            ClaimAction::Claim
        );
        assert_eq!(
            claim_action(owner, "default", false, &ours, false),
            ClaimAction::Release
        );
        assert_eq!(
            claim_action(owner, "default", true, &ours, false),
            ClaimAction::Ignore
        );
        assert_eq!(
            claim_action("other", "default", false, &ours, true),
            ClaimAction::Ignore
        );
        let mut released = ours;
        remove_owner_reference(&mut released, owner);
        assert!(released.owner_references.is_none());
    }
}

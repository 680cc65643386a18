//! The PodDisruptionBudget status controller (upstream `pkg/controller/disruption`): keeps each
//! budget's `status` (currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed,
//! disruptedPods, observedGeneration and the DisruptionAllowed condition) up to date with the
//! pods it selects. Preemption reads `disruptionsAllowed` from it.
//!
//! A budget is synced when it is added or changed and when a pod it selects changes. kubeplane
//! has no eviction API, so nothing adds `disruptedPods`; entries given in a manifest are kept
//! until they expire (2 minutes), as upstream.

use kubeplane_api::StoredPod;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::controller_utils::{controller_of, is_pod_ready, pod_controller};
use jiff::Timestamp;
use k8s_openapi::api::policy::v1::{
    PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubeplane_api::{Cache, Client, Component, EventType, Kind, Object, WatchEvent};
use kubeplane_core::labels::{from_optional, Selector};
use kubeplane_core::time::SimDuration;
use kubeplane_core::{EventRecord, SimTime};

/// The event source of the controller manager's recorder.
const SOURCE: &str = "controllermanager";
/// How long a pod may stay in `disruptedPods` without being deleted (upstream
/// `DeletionTimeout`).
pub const DELETION_TIMEOUT: SimDuration = SimDuration(120 * 1_000_000_000);

pub const CONDITION_DISRUPTION_ALLOWED: &str = "DisruptionAllowed";
pub const REASON_SUFFICIENT_PODS: &str = "SufficientPods";
pub const REASON_INSUFFICIENT_PODS: &str = "InsufficientPods";
pub const REASON_SYNC_FAILED: &str = "SyncFailed";

/// `namespace/name` of a budget.
type PdbKey = (String, String);

/// Keeps PodDisruptionBudget status up to date.
#[derive(Default)]
pub struct DisruptionController {
    /// Budgets to sync.
    dirty: BTreeSet<PdbKey>,
    /// Budgets to sync again at a time (a `disruptedPods` entry expires).
    recheck: BTreeMap<PdbKey, SimTime>,
    /// The budgets as last seen: key → selector (for routing pod events).
    selectors: BTreeMap<PdbKey, Selector>,
    syncs: u64,
}

impl DisruptionController {
    pub fn new() -> DisruptionController {
        DisruptionController::default()
    }

    /// Marks every budget in the pod's namespace whose selector matches it (upstream enqueues
    /// one of them; all is what it means to do).
    fn pod_changed(&mut self, pod: &StoredPod) {
        static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let labels = pod.labels().unwrap_or(&NO_LABELS);
        for ((pns, name), sel) in &self.selectors {
            if pns == ns && sel.matches(labels) {
                self.dirty.insert((pns.clone(), name.clone()));
            }
        }
    }
}

fn key_of(pdb: &PodDisruptionBudget) -> PdbKey {
    (
        pdb.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        pdb.metadata.name.clone().unwrap_or_default(),
    )
}

/// `intstr.GetScaledValueFromIntOrPercent` rounding up.
pub fn scaled_value(v: &IntOrString, total: i32) -> Result<i32, String> {
    match v {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let Some(num) = s.strip_suffix('%') else {
                return Err(
                    "invalid value for IntOrString: invalid type: string is not a percentage"
                        .into(),
                );
            };
            let pct: i64 = num
                .parse()
                .map_err(|e| format!("invalid value for IntOrString: invalid value {s:?}: {e}"))?;
            Ok(((pct as f64) * (total as f64) / 100.0).ceil() as i32)
        }
    }
}

/// The scale of the controller a pod's controller reference names (upstream `finders`): a
/// ReplicaSet's Deployment when it has one, else the ReplicaSet; a Deployment directly.
/// `Ok(None)` when the reference names nothing that exists.
fn controller_scale(
    store: &dyn Cache,
    owner: &OwnerReference,
    namespace: &str,
) -> Result<Option<(String, i32)>, String> {
    let group = owner.api_version.split_once('/').map_or("", |(g, _)| g);
    match owner.kind.as_str() {
        "ReplicaSet" if group == "apps" || group == "extensions" => {
            let Some(Object::ReplicaSet(rs)) = store.get(Kind::ReplicaSet, namespace, &owner.name)
            else {
                return Ok(None);
            };
            if rs.metadata.uid.as_deref() != Some(owner.uid.as_str()) {
                return Ok(None);
            }
            if let Some(d_ref) = controller_of(&rs.metadata) {
                if d_ref.kind == "Deployment" {
                    let Some(Object::Deployment(d)) =
                        store.get(Kind::Deployment, namespace, &d_ref.name)
                    else {
                        return Ok(None);
                    };
                    if d.metadata.uid.as_deref() != Some(d_ref.uid.as_str()) {
                        return Ok(None);
                    }
                    let replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                    return Ok(Some((d_ref.uid.clone(), replicas)));
                }
            }
            let replicas = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            Ok(Some((owner.uid.clone(), replicas)))
        }
        "Deployment" if group == "apps" || group == "extensions" => {
            let Some(Object::Deployment(d)) = store.get(Kind::Deployment, namespace, &owner.name)
            else {
                return Ok(None);
            };
            if d.metadata.uid.as_deref() != Some(owner.uid.as_str()) {
                return Ok(None);
            }
            let replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            Ok(Some((owner.uid.clone(), replicas)))
        }
        _ => Ok(None),
    }
}

/// The sum of the scales of the controllers of the pods (upstream `getExpectedScale`), and the
/// names of pods without a controller.
fn expected_scale(
    store: &dyn Cache,
    pods: &[&Arc<StoredPod>],
) -> Result<(i32, Vec<String>), String> {
    let mut scales: BTreeMap<String, i32> = BTreeMap::new();
    let mut unmanaged = Vec::new();
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let Some(owner) = pod_controller(pod) else {
            unmanaged.push(name);
            continue;
        };
        if scales.contains_key(&owner.uid) {
            continue;
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        match controller_scale(store, owner, ns)? {
            Some((uid, scale)) => {
                scales.insert(uid, scale);
            }
            None => return Err(format!("found no controllers for pod {name:?}")),
        }
    }
    Ok((scales.values().sum(), unmanaged))
}

/// The budget's status as it should be, or the error that makes the sync fail.
pub struct ComputedStatus {
    pub current_healthy: i32,
    pub desired_healthy: i32,
    pub expected_pods: i32,
    pub disruptions_allowed: i32,
    pub disrupted_pods: BTreeMap<String, Time>,
    /// When the earliest `disruptedPods` entry expires.
    pub recheck: Option<Timestamp>,
    pub n_pods: usize,
}

/// Computes a budget's status from the store (upstream `trySync` without the write).
pub fn compute_status(
    store: &dyn Cache,
    pdb: &PodDisruptionBudget,
    now: Timestamp,
) -> Result<ComputedStatus, String> {
    let ns = pdb.metadata.namespace.as_deref().unwrap_or("default");
    let spec = pdb.spec.clone().unwrap_or_default();
    let selector = from_optional(spec.selector.as_ref()).map_err(|e| e.to_string())?;
    let pods: Vec<&Arc<StoredPod>> = store
        .list(Kind::Pod)
        .filter_map(Object::as_pod)
        .filter(|p| p.metadata.namespace.as_deref().unwrap_or("default") == ns)
        .filter(|p| {
            static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
            selector.matches(p.labels().unwrap_or(&NO_LABELS))
        })
        .collect();
    let (expected, desired) = expected_and_desired(store, &spec, &pods)?;
    let (disrupted, recheck) = still_disrupted(pdb, &pods, now);
    let current = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| !disrupted.contains_key(p.metadata.name.as_deref().unwrap_or("")))
        .filter(|p| is_pod_ready(p))
        .count() as i32;
    let mut allowed = current - desired;
    if expected <= 0 || allowed <= 0 {
        allowed = 0;
    }
    Ok(ComputedStatus {
        current_healthy: current,
        desired_healthy: desired,
        expected_pods: expected,
        disruptions_allowed: allowed,
        disrupted_pods: disrupted,
        recheck,
        n_pods: pods.len(),
    })
}

/// The expected number of pods and the desired healthy ones (upstream `getExpectedPodCount`).
fn expected_and_desired(
    store: &dyn Cache,
    spec: &PodDisruptionBudgetSpec,
    pods: &[&Arc<StoredPod>],
) -> Result<(i32, i32), String> {
    Ok(if let Some(max_unavailable) = &spec.max_unavailable {
        let (expected, _) = expected_scale(store, pods)?;
        let max = scaled_value(max_unavailable, expected)?;
        (expected, (expected - max).max(0))
    } else if let Some(min_available) = &spec.min_available {
        match min_available {
            IntOrString::Int(i) => (pods.len() as i32, *i),
            IntOrString::String(_) => {
                let (expected, _) = expected_scale(store, pods)?;
                (expected, scaled_value(min_available, expected)?)
            }
        }
    } else {
        (0, 0)
    })
}

/// The `disruptedPods` entries to keep (upstream `buildDisruptedPodMap`): pods not yet being
/// deleted whose deletion is still expected; and when the earliest of them expires.
fn still_disrupted(
    pdb: &PodDisruptionBudget,
    pods: &[&Arc<StoredPod>],
    now: Timestamp,
) -> (BTreeMap<String, Time>, Option<Timestamp>) {
    let mut disrupted = BTreeMap::new();
    let mut recheck: Option<Timestamp> = None;
    if let Some(given) = pdb.status.as_ref().and_then(|s| s.disrupted_pods.as_ref()) {
        for pod in pods {
            if pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let name = pod.metadata.name.as_deref().unwrap_or("");
            let Some(t) = given.get(name) else { continue };
            let expected_deletion =
                t.0.checked_add(jiff::SignedDuration::from_nanos(DELETION_TIMEOUT.0))
                    .unwrap_or(t.0);
            if expected_deletion >= now {
                recheck = Some(recheck.map_or(expected_deletion, |r| r.min(expected_deletion)));
                disrupted.insert(name.to_string(), t.clone());
            }
        }
    }
    (disrupted, recheck)
}

/// Sets (or updates) the DisruptionAllowed condition (upstream `apimeta.SetStatusCondition`).
fn set_condition(
    conditions: &mut Vec<Condition>,
    status: &str,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
    now: &Time,
) {
    match conditions
        .iter_mut()
        .find(|c| c.type_ == CONDITION_DISRUPTION_ALLOWED)
    {
        Some(c) => {
            if c.status != status {
                c.status = status.to_string();
                c.last_transition_time = now.clone();
            }
            c.reason = reason.to_string();
            c.message = message.to_string();
            c.observed_generation = observed_generation;
        }
        None => conditions.push(Condition {
            type_: CONDITION_DISRUPTION_ALLOWED.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation,
            last_transition_time: now.clone(),
        }),
    }
}

/// Whether the condition says what `disruptions_allowed` implies (upstream
/// `ConditionsAreUpToDate`).
fn conditions_up_to_date(status: &PodDisruptionBudgetStatus, generation: Option<i64>) -> bool {
    let Some(c) = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == CONDITION_DISRUPTION_ALLOWED)
    else {
        return false;
    };
    let (want_status, want_reason) = if status.disruptions_allowed > 0 {
        ("True", REASON_SUFFICIENT_PODS)
    } else {
        ("False", REASON_INSUFFICIENT_PODS)
    };
    c.status == want_status && c.reason == want_reason && c.observed_generation == generation
}

/// Upstream `failSafe`: no disruption allowed while the status cannot be computed. `None` when
/// the status already says so.
fn fail_safe_status(
    old_status: &PodDisruptionBudgetStatus,
    err: &str,
    ts: &Time,
) -> Option<PodDisruptionBudgetStatus> {
    let mut status = old_status.clone();
    status.disruptions_allowed = 0;
    let observed = status.observed_generation;
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    set_condition(conditions, "False", REASON_SYNC_FAILED, err, observed, ts);
    (status != *old_status).then_some(status)
}

/// Upstream `updatePdbStatus`: the status with the computed figures and the
/// DisruptionAllowed condition, or `None` when the stored one already says all that.
fn updated_status(
    old_status: &PodDisruptionBudgetStatus,
    c: ComputedStatus,
    generation: Option<i64>,
    ts: &Time,
) -> Option<PodDisruptionBudgetStatus> {
    let disrupted = (!c.disrupted_pods.is_empty()).then_some(c.disrupted_pods);
    let given_disrupted = old_status.disrupted_pods.clone().filter(|m| !m.is_empty());
    if old_status.current_healthy == c.current_healthy
        && old_status.desired_healthy == c.desired_healthy
        && old_status.expected_pods == c.expected_pods
        && old_status.disruptions_allowed == c.disruptions_allowed
        && given_disrupted == disrupted
        && old_status.observed_generation == generation
        && conditions_up_to_date(old_status, generation)
    {
        return None;
    }
    let mut status = PodDisruptionBudgetStatus {
        current_healthy: c.current_healthy,
        desired_healthy: c.desired_healthy,
        expected_pods: c.expected_pods,
        disruptions_allowed: c.disruptions_allowed,
        disrupted_pods: disrupted,
        observed_generation: generation,
        conditions: old_status.conditions.clone(),
    };
    let (st, reason) = if status.disruptions_allowed > 0 {
        ("True", REASON_SUFFICIENT_PODS)
    } else {
        ("False", REASON_INSUFFICIENT_PODS)
    };
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    set_condition(conditions, st, reason, "", generation, ts);
    Some(status)
}

impl DisruptionController {
    fn sync(&mut self, key: &PdbKey, now: SimTime, client: &mut dyn Client) {
        let Some(Object::PodDisruptionBudget(pdb)) = client
            .cache()
            .get(Kind::PodDisruptionBudget, &key.0, &key.1)
            .cloned()
        else {
            return;
        };
        self.syncs += 1;
        let ts = client.clock().timestamp(now);
        let generation = Some(pdb.metadata.generation.unwrap_or(1));
        let computed = compute_status(client.cache(), &pdb, ts.0);
        let mut new = PodDisruptionBudget::clone(&pdb);
        let old_status = pdb.status.clone().unwrap_or_default();
        let status = match computed {
            Err(e) => {
                client.record_event(EventRecord::warning(
                    now,
                    SOURCE,
                    "PodDisruptionBudget",
                    &key.0,
                    &key.1,
                    "CalculateExpectedPodCountFailed",
                    format!("Failed to calculate the number of expected pods: {e}"),
                ));
                fail_safe_status(&old_status, &e, &ts)
            }
            Ok(c) => {
                if c.n_pods == 0 {
                    client.record_event(EventRecord::normal(
                        now,
                        SOURCE,
                        "PodDisruptionBudget",
                        &key.0,
                        &key.1,
                        "NoPods",
                        "No matching pods found".into(),
                    ));
                }
                if let Some(r) = c.recheck {
                    self.recheck.insert(
                        key.clone(),
                        SimTime::from_timestamp(r, client.clock().start()),
                    );
                }
                updated_status(&old_status, c, generation, &ts)
            }
        };
        let Some(status) = status else {
            return;
        };
        new.status = Some(status);
        new.metadata.resource_version = None;
        let _ = client.update_status(Object::PodDisruptionBudget(Arc::new(new)));
    }
}

impl Component for DisruptionController {
    fn name(&self) -> &'static str {
        "disruption-controller"
    }

    /// Only PodDisruptionBudgets and pods.
    fn observes(&self, kind: kubeplane_api::Kind) -> bool {
        matches!(
            kind,
            kubeplane_api::Kind::PodDisruptionBudget | kubeplane_api::Kind::Pod
        )
    }

    fn observe(&mut self, ev: &WatchEvent, _now: SimTime) {
        match &ev.object {
            Object::PodDisruptionBudget(pdb) => {
                let key = key_of(pdb);
                if ev.type_ == EventType::Deleted {
                    self.selectors.remove(&key);
                    self.dirty.remove(&key);
                    self.recheck.remove(&key);
                } else {
                    let sel = from_optional(pdb.spec.as_ref().and_then(|s| s.selector.as_ref()))
                        .unwrap_or_else(|_| Selector::nothing());
                    self.selectors.insert(key.clone(), sel);
                    self.dirty.insert(key);
                }
            }
            Object::Pod(pod) => {
                self.pod_changed(pod);
                if let Some(Object::Pod(old)) = &ev.old {
                    if old.labels() != pod.labels() {
                        self.pod_changed(old);
                    }
                }
            }
            _ => {}
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        let due: Vec<PdbKey> = self
            .recheck
            .iter()
            .filter(|(_, &t)| t <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in due {
            self.recheck.remove(&k);
            self.dirty.insert(k);
        }
        for key in std::mem::take(&mut self.dirty) {
            self.sync(&key, now, client);
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        if !self.dirty.is_empty() {
            return Some(SimTime(i64::MIN));
        }
        self.recheck.values().min().copied()
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        vec![("disruption_controller_syncs_total".into(), self.syncs)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    use kubeplane_store::Store;

    fn store() -> Store {
        Store::new(1, "2025-01-01T00:00:00Z".parse().unwrap())
    }

    fn pod(name: &str, ready: bool) -> Object {
        Object::Pod(Arc::new(
            Pod {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    namespace: Some("default".into()),
                    labels: Some([("app".to_string(), "web".to_string())].into()),
                    ..Default::default()
                },
                spec: Some(Default::default()),
                status: Some(PodStatus {
                    conditions: Some(vec![PodCondition {
                        type_: "Ready".into(),
                        status: if ready { "True" } else { "False" }.into(),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
            }
            .into(),
        ))
    }

    fn pdb(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudget {
        PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                min_available: min,
                max_unavailable: max,
                selector: Some(LabelSelector {
                    match_labels: Some([("app".to_string(), "web".to_string())].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: None,
        }
    }

    #[test]
    fn min_available_as_a_number_counts_the_selected_pods() {
        let mut s = store();
        for (n, ready) in [("a", true), ("b", true), ("c", false)] {
            kubeplane_registry::client::create(&mut s, pod(n, ready), SimTime::ZERO).unwrap();
        }
        let c = compute_status(
            &s,
            &pdb(Some(IntOrString::Int(1)), None),
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(
            (
                c.current_healthy,
                c.desired_healthy,
                c.expected_pods,
                c.disruptions_allowed
            ),
            (2, 1, 3, 1)
        );
    }

    #[test]
    fn a_percentage_needs_the_pods_controllers() {
        let mut s = store();
        kubeplane_registry::client::create(&mut s, pod("a", true), SimTime::ZERO).unwrap();
        // Unmanaged pods contribute no expected scale: 0 expected, nothing allowed.
        let c = compute_status(
            &s,
            &pdb(None, Some(IntOrString::String("50%".into()))),
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!((c.expected_pods, c.disruptions_allowed), (0, 0));
    }

    #[test]
    fn percentages_round_up() {
        assert_eq!(scaled_value(&IntOrString::String("50%".into()), 3), Ok(2));
        assert_eq!(scaled_value(&IntOrString::String("10%".into()), 5), Ok(1));
        assert!(scaled_value(&IntOrString::String("5".into()), 5).is_err());
    }
}

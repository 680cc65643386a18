//! Pure helpers of the Deployment controller, after upstream
//! `pkg/controller/deployment/util/deployment_util.go`: defaults, fenceposts, revision and
//! replica annotations, new and old ReplicaSets, conditions, proportions and status arithmetic;
//! the pod template hash is in `hash.rs`.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentStatus, ReplicaSetCondition};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubeplane_api::StoredDeployment;
use kubeplane_api::{StoredPodTemplateSpec, StoredReplicaSet, TemplateRef};

pub mod hash;
#[cfg(test)]
mod tests;

pub use hash::{compute_hash, equal_ignore_hash, fnv32a, safe_encode_string, TemplateVerdicts};

pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
pub const REVISION_HISTORY_ANNOTATION: &str = "deployment.kubernetes.io/revision-history";
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";
/// The label that keeps the pods of a Deployment's ReplicaSets apart.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";
const LAST_APPLIED_CONFIG_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
const DEPRECATED_ROLLBACK_TO_ANNOTATION: &str = "deprecated.deployment.rollback.to";
/// The longest revision-history annotation upstream keeps.
const MAX_REV_HISTORY_LENGTH_IN_CHARS: usize = 2000;

pub const CONDITION_AVAILABLE: &str = "Available";
pub const CONDITION_PROGRESSING: &str = "Progressing";
pub const CONDITION_REPLICA_FAILURE: &str = "ReplicaFailure";

// Reasons of the deployment conditions (upstream `deploymentutil` constants).
pub const REASON_NEW_RS_CREATED: &str = "NewReplicaSetCreated";
pub const REASON_FOUND_NEW_RS: &str = "FoundNewReplicaSet";
pub const REASON_RS_UPDATED: &str = "ReplicaSetUpdated";
pub const REASON_NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
pub const REASON_TIMED_OUT: &str = "ProgressDeadlineExceeded";
pub const REASON_PAUSED: &str = "DeploymentPaused";
pub const REASON_RESUMED: &str = "DeploymentResumed";
pub const REASON_FAILED_RS_CREATE: &str = "ReplicaSetCreateError";
pub const REASON_MIN_AVAILABLE: &str = "MinimumReplicasAvailable";
pub const REASON_MIN_UNAVAILABLE: &str = "MinimumReplicasUnavailable";

pub const STRATEGY_RECREATE: &str = "Recreate";
pub const STRATEGY_ROLLING_UPDATE: &str = "RollingUpdate";

// ----- defaults (what the API server fills in) ----------------------------------------------

pub fn replicas(d: &StoredDeployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

pub fn rs_replicas(rs: &StoredReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

pub fn min_ready_seconds(d: &StoredDeployment) -> i32 {
    d.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

pub fn is_paused(d: &StoredDeployment) -> bool {
    d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false)
}

pub fn strategy_type(d: &StoredDeployment) -> &str {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        .filter(|t| !t.is_empty())
        .unwrap_or(STRATEGY_ROLLING_UPDATE)
}

pub fn is_rolling_update(d: &StoredDeployment) -> bool {
    strategy_type(d) == STRATEGY_ROLLING_UPDATE
}

/// `revisionHistoryLimit`, defaulted to 10.
pub fn revision_history_limit(d: &StoredDeployment) -> i32 {
    d.spec
        .as_ref()
        .and_then(|s| s.revision_history_limit)
        .unwrap_or(10)
}

/// `progressDeadlineSeconds`, defaulted to 600. `i32::MAX` means no deadline.
pub fn progress_deadline_seconds(d: &StoredDeployment) -> i32 {
    d.spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .unwrap_or(600)
}

pub fn has_progress_deadline(d: &StoredDeployment) -> bool {
    progress_deadline_seconds(d) != i32::MAX
}

fn default_quarter() -> IntOrString {
    IntOrString::String("25%".into())
}

/// maxSurge and maxUnavailable as given, each defaulted to 25%.
pub fn rolling_params(d: &StoredDeployment) -> (IntOrString, IntOrString) {
    let ru = d
        .spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    (
        ru.and_then(|r| r.max_surge.clone())
            .unwrap_or_else(default_quarter),
        ru.and_then(|r| r.max_unavailable.clone())
            .unwrap_or_else(default_quarter),
    )
}

// ----- fenceposts ---------------------------------------------------------------------------

/// An int, or a percentage of `total` rounded up (maxSurge) or down (maxUnavailable)
/// (upstream `GetScaledValueFromIntOrPercent`).
pub fn scaled_value(v: &IntOrString, total: i32, round_up: bool) -> Result<i32, String> {
    match v {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let Some(p) = s.strip_suffix('%') else {
                return Err(format!(
                    "invalid value for IntOrString: invalid type: string is not a percentage: {s:?}"
                ));
            };
            let p: i64 = p
                .parse()
                .map_err(|e| format!("invalid value for IntOrString: {e}"))?;
            let x = p as f64 * f64::from(total) / 100.0;
            Ok(if round_up { x.ceil() } else { x.floor() } as i32)
        }
    }
}

/// Upstream `ResolveFenceposts`: maxSurge rounds up, maxUnavailable down; when both resolve to
/// zero, maxUnavailable becomes 1 so a rollout can proceed.
pub fn resolve_fenceposts(
    max_surge: &IntOrString,
    max_unavailable: &IntOrString,
    desired: i32,
) -> Result<(i32, i32), String> {
    let surge = scaled_value(max_surge, desired, true)?;
    let mut unavailable = scaled_value(max_unavailable, desired, false)?;
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    Ok((surge, unavailable))
}

/// Upstream `MaxSurge`: 0 for Recreate.
pub fn max_surge(d: &StoredDeployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    let (s, u) = rolling_params(d);
    resolve_fenceposts(&s, &u, replicas(d))
        .map(|(s, _)| s)
        .unwrap_or(0)
}

/// Upstream `MaxUnavailable`: 0 for Recreate or zero replicas, at most the replicas.
pub fn max_unavailable(d: &StoredDeployment) -> i32 {
    if !is_rolling_update(d) || replicas(d) == 0 {
        return 0;
    }
    let (s, u) = rolling_params(d);
    let (_, unavailable) = resolve_fenceposts(&s, &u, replicas(d)).unwrap_or((0, 0));
    unavailable.min(replicas(d))
}

/// The API server's validation of a RollingUpdate strategy (upstream
/// `ValidateRollingUpdateDeployment`), for runtimes that reject invalid input.
pub fn validate_rolling_update(d: &StoredDeployment) -> Result<(), String> {
    if !is_rolling_update(d) {
        return Ok(());
    }
    let (surge, unavailable) = rolling_params(d);
    let field = "spec.strategy.rollingUpdate";
    for (name, v) in [("maxSurge", &surge), ("maxUnavailable", &unavailable)] {
        match v {
            IntOrString::Int(i) if *i < 0 => {
                return Err(format!(
                    "{field}.{name}: Invalid value: {i}: must be greater than or equal to 0"
                ))
            }
            IntOrString::String(s) => {
                let p = s
                    .strip_suffix('%')
                    .and_then(|p| p.parse::<i64>().ok())
                    .ok_or_else(|| {
                        format!("{field}.{name}: Invalid value: {s:?}: a valid percent string must be a numeric string followed by an ending '%'")
                    })?;
                if p < 0 {
                    return Err(format!(
                        "{field}.{name}: Invalid value: {s:?}: must be greater than or equal to 0"
                    ));
                }
                if name == "maxUnavailable" && p > 100 {
                    return Err(format!(
                        "{field}.{name}: Invalid value: {s:?}: must not be greater than 100%"
                    ));
                }
            }
            _ => {}
        }
    }
    let is_zero = |v: &IntOrString| match v {
        IntOrString::Int(i) => *i == 0,
        IntOrString::String(s) => {
            s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) == Some(0)
        }
    };
    if is_zero(&surge) && is_zero(&unavailable) {
        return Err(format!(
            "{field}.maxUnavailable: Invalid value: {unavailable:?}: may not be 0 when `maxSurge` is 0"
        ));
    }
    Ok(())
}

pub fn rs_template(rs: &StoredReplicaSet) -> PodTemplateSpec {
    rs.template()
        .map(StoredPodTemplateSpec::to_k8s)
        .unwrap_or_default()
}

/// [`rs_template`] without the copy (an empty template when the ReplicaSet has none).
pub fn rs_template_ref(rs: &StoredReplicaSet) -> TemplateRef<'_> {
    rs.template().map(TemplateRef::from).unwrap_or_default()
}

/// [`deployment_template`] without the copy (an empty template when the Deployment has no
/// spec).
pub fn deployment_template_ref(d: &StoredDeployment) -> TemplateRef<'_> {
    d.spec
        .as_ref()
        .map(|s| TemplateRef::from(&s.template))
        .unwrap_or_default()
}

/// The Deployment's template, its spec shared with the Deployment (the metadata copied).
pub fn deployment_template(d: &StoredDeployment) -> StoredPodTemplateSpec {
    d.spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default()
}

/// A copy of a selector with one more `matchLabels` entry (upstream
/// `CloneSelectorAndAddLabel`).
pub fn clone_selector_and_add_label(sel: &LabelSelector, key: &str, value: &str) -> LabelSelector {
    let mut s = sel.clone();
    s.match_labels
        .get_or_insert_with(BTreeMap::new)
        .insert(key.into(), value.into());
    s
}

/// True for a selector that selects everything (no labels and no expressions).
pub fn selector_is_empty(sel: &LabelSelector) -> bool {
    sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

// ----- annotations --------------------------------------------------------------------------

fn annotation<'a>(rs: &'a StoredReplicaSet, key: &str) -> Option<&'a str> {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// The revision annotation as a number: 0 when missing, an error when malformed.
pub fn revision(rs: &StoredReplicaSet) -> Result<i64, String> {
    match annotation(rs, REVISION_ANNOTATION) {
        None => Ok(0),
        Some(v) => v.parse().map_err(|e| format!("{v:?}: {e}")),
    }
}

/// The highest revision among the ReplicaSets, skipping malformed ones.
pub fn max_revision(rss: &[Arc<StoredReplicaSet>]) -> i64 {
    rss.iter()
        .filter_map(|rs| revision(rs).ok())
        .max()
        .unwrap_or(0)
}

pub fn desired_replicas_annotation(rs: &StoredReplicaSet) -> Option<i32> {
    annotation(rs, DESIRED_REPLICAS_ANNOTATION).and_then(|v| v.parse().ok())
}

pub fn max_replicas_annotation(rs: &StoredReplicaSet) -> Option<i32> {
    annotation(rs, MAX_REPLICAS_ANNOTATION).and_then(|v| v.parse().ok())
}

pub fn replicas_annotations_need_update(rs: &StoredReplicaSet, desired: i32, max: i32) -> bool {
    annotation(rs, DESIRED_REPLICAS_ANNOTATION) != Some(desired.to_string().as_str())
        || annotation(rs, MAX_REPLICAS_ANNOTATION) != Some(max.to_string().as_str())
}

/// Sets the desired- and max-replicas annotations; true when something changed.
pub fn set_replicas_annotations(rs: &mut StoredReplicaSet, desired: i32, max: i32) -> bool {
    let ann = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (k, v) in [
        (DESIRED_REPLICAS_ANNOTATION, desired.to_string()),
        (MAX_REPLICAS_ANNOTATION, max.to_string()),
    ] {
        if ann.get(k) != Some(&v) {
            ann.insert(k.into(), v);
            changed = true;
        }
    }
    changed
}

fn skip_copy_annotation(key: &str) -> bool {
    matches!(
        key,
        LAST_APPLIED_CONFIG_ANNOTATION
            | REVISION_ANNOTATION
            | REVISION_HISTORY_ANNOTATION
            | DESIRED_REPLICAS_ANNOTATION
            | MAX_REPLICAS_ANNOTATION
            | DEPRECATED_ROLLBACK_TO_ANNOTATION
    )
}

/// Copies the Deployment's annotations onto the ReplicaSet, except the ones the controller
/// owns; true when something changed.
fn copy_deployment_annotations_to_replica_set(
    d: &StoredDeployment,
    rs: &mut StoredReplicaSet,
) -> bool {
    let mut changed = false;
    let ann = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    for (k, v) in d.metadata.annotations.iter().flatten() {
        if skip_copy_annotation(k) || ann.get(k) == Some(v) {
            continue;
        }
        ann.insert(k.clone(), v.clone());
        changed = true;
    }
    changed
}

/// Whether [`set_new_replica_set_annotations`] of an existing ReplicaSet (`exists`) would
/// change nothing and report no change, read without copying the annotations: every
/// Deployment annotation it copies is there already, and the revision is not below
/// `new_revision` (or does not parse, which reports no change either).
pub fn new_replica_set_annotations_unchanged(
    d: &StoredDeployment,
    rs: &StoredReplicaSet,
    new_revision: i64,
) -> bool {
    let ann = rs.metadata.annotations.as_ref();
    let copied = d
        .metadata
        .annotations
        .iter()
        .flatten()
        .all(|(k, v)| skip_copy_annotation(k) || ann.and_then(|a| a.get(k)) == Some(v));
    if !copied {
        return false;
    }
    match ann
        .and_then(|a| a.get(REVISION_ANNOTATION))
        .map(String::as_str)
    {
        None | Some("") => 0 >= new_revision,
        Some(v) => v.parse::<i64>().map_or(true, |n| n >= new_revision),
    }
}

/// Upstream `SetNewReplicaSetAnnotations`: copies the Deployment's annotations, raises the
/// revision to `new_revision` (keeping the superseded one in the revision history), and for a
/// ReplicaSet about to be created sets the replica annotations. True when something changed.
pub fn set_new_replica_set_annotations(
    d: &StoredDeployment,
    rs: &mut StoredReplicaSet,
    new_revision: i64,
    exists: bool,
) -> bool {
    let mut changed = copy_deployment_annotations_to_replica_set(d, rs);
    let ann = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let old_revision = ann.get(REVISION_ANNOTATION).cloned();
    let old_revision_int = match old_revision.as_deref() {
        None | Some("") => 0,
        Some(v) => match v.parse::<i64>() {
            Ok(n) => n,
            Err(_) => return false,
        },
    };
    if old_revision_int < new_revision {
        ann.insert(REVISION_ANNOTATION.into(), new_revision.to_string());
        changed = true;
    }
    if let Some(old) = old_revision.filter(|_| old_revision_int < new_revision) {
        let history = ann
            .get(REVISION_HISTORY_ANNOTATION)
            .cloned()
            .unwrap_or_default();
        if history.is_empty() {
            ann.insert(REVISION_HISTORY_ANNOTATION.into(), old);
        } else {
            let mut revisions: Vec<&str> = history.split(',').collect();
            let mut total = history.len() + old.len() + 1;
            let mut start = 0;
            while total > MAX_REV_HISTORY_LENGTH_IN_CHARS && start < revisions.len() {
                total -= revisions[start].len() + 1;
                start += 1;
            }
            if total <= MAX_REV_HISTORY_LENGTH_IN_CHARS {
                revisions = revisions.split_off(start);
                revisions.push(&old);
                ann.insert(REVISION_HISTORY_ANNOTATION.into(), revisions.join(","));
            }
        }
    }
    if !exists && set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)) {
        changed = true;
    }
    changed
}

/// Sets the Deployment's revision annotation; true when it changed.
pub fn set_deployment_revision(d: &mut StoredDeployment, revision: &str) -> bool {
    let ann = d.metadata.annotations.get_or_insert_with(BTreeMap::new);
    if ann.get(REVISION_ANNOTATION).map(String::as_str) == Some(revision) {
        return false;
    }
    ann.insert(REVISION_ANNOTATION.into(), revision.into());
    true
}

// ----- finding the new and old ReplicaSets --------------------------------------------------

fn creation(rs: &StoredReplicaSet) -> Option<Timestamp> {
    rs.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

fn name(rs: &StoredReplicaSet) -> &str {
    rs.metadata.name.as_deref().unwrap_or("")
}

/// Oldest first, then by name (upstream `ReplicaSetsByCreationTimestamp`).
pub fn by_creation_timestamp(a: &StoredReplicaSet, b: &StoredReplicaSet) -> Ordering {
    creation(a)
        .cmp(&creation(b))
        .then_with(|| name(a).cmp(name(b)))
}

/// Largest first; ties oldest first (upstream `ReplicaSetsBySizeOlder`).
pub fn by_size_older(a: &StoredReplicaSet, b: &StoredReplicaSet) -> Ordering {
    rs_replicas(b)
        .cmp(&rs_replicas(a))
        .then_with(|| by_creation_timestamp(a, b))
}

/// Largest first; ties newest first (upstream `ReplicaSetsBySizeNewer`).
pub fn by_size_newer(a: &StoredReplicaSet, b: &StoredReplicaSet) -> Ordering {
    rs_replicas(b)
        .cmp(&rs_replicas(a))
        .then_with(|| by_creation_timestamp(b, a))
}

/// Lowest revision first; unparsable or equal revisions by creation (upstream
/// `ReplicaSetsByRevision`).
pub fn by_revision(a: &StoredReplicaSet, b: &StoredReplicaSet) -> Ordering {
    match (revision(a), revision(b)) {
        (Ok(x), Ok(y)) if x != y => x.cmp(&y),
        _ => by_creation_timestamp(a, b),
    }
}

/// The oldest ReplicaSet whose template equals the Deployment's (upstream
/// `FindNewReplicaSet`). Compares the templates where they are, copying neither: a
/// Deployment syncs dozens of times while it scales, and finds its new ReplicaSet a few
/// times in each sync.
pub fn find_new_replica_set(
    d: &StoredDeployment,
    rss: &[Arc<StoredReplicaSet>],
) -> Option<Arc<StoredReplicaSet>> {
    let template = deployment_template_ref(d);
    find_new_replica_set_by(rss, |rs| equal_ignore_hash(rs_template_ref(rs), template))
}

/// [`find_new_replica_set`] with the template comparison given (`equal`: whether a
/// ReplicaSet's template equals the Deployment's), as [`TemplateVerdicts::equal`] answers it.
pub fn find_new_replica_set_by(
    rss: &[Arc<StoredReplicaSet>],
    mut equal: impl FnMut(&Arc<StoredReplicaSet>) -> bool,
) -> Option<Arc<StoredReplicaSet>> {
    let mut sorted: Vec<&Arc<StoredReplicaSet>> = rss.iter().collect();
    sorted.sort_by(|a, b| by_creation_timestamp(a, b));
    sorted.into_iter().find(|rs| equal(rs)).cloned()
}

/// Every ReplicaSet except the new one (upstream `FindOldReplicaSets`' second result).
pub fn find_old_replica_sets(
    d: &StoredDeployment,
    rss: &[Arc<StoredReplicaSet>],
) -> Vec<Arc<StoredReplicaSet>> {
    old_replica_sets(find_new_replica_set(d, rss).as_deref(), rss)
}

/// Every ReplicaSet except `new_rs` (by UID), for a caller that has already found the new
/// one with [`find_new_replica_set`].
pub fn old_replica_sets(
    new_rs: Option<&StoredReplicaSet>,
    rss: &[Arc<StoredReplicaSet>],
) -> Vec<Arc<StoredReplicaSet>> {
    let new_uid = new_rs.and_then(|rs| rs.metadata.uid.as_ref());
    rss.iter()
        .filter(|rs| new_uid.is_none() || rs.metadata.uid.as_ref() != new_uid)
        .cloned()
        .collect()
}

/// ReplicaSets that have, or should have, pods.
pub fn filter_active(rss: &[Arc<StoredReplicaSet>]) -> Vec<Arc<StoredReplicaSet>> {
    rss.iter()
        .filter(|rs| rs_replicas(rs) > 0)
        .cloned()
        .collect()
}

/// Upstream `FindActiveOrLatest`: the only active ReplicaSet, or with none active the new one
/// or else the newest old one; `None` when several are active.
pub fn find_active_or_latest(
    new_rs: Option<&Arc<StoredReplicaSet>>,
    old_rss: &[Arc<StoredReplicaSet>],
) -> Option<Arc<StoredReplicaSet>> {
    if new_rs.is_none() && old_rss.is_empty() {
        return None;
    }
    let mut old: Vec<Arc<StoredReplicaSet>> = old_rss.to_vec();
    old.sort_by(|a, b| by_creation_timestamp(b, a));
    let mut all = old.clone();
    all.extend(new_rs.cloned());
    let active = filter_active(&all);
    match active.len() {
        0 => new_rs.cloned().or_else(|| old.first().cloned()),
        1 => Some(active[0].clone()),
        _ => None,
    }
}

// ----- replica arithmetic -------------------------------------------------------------------

pub fn sum_spec_replicas(rss: &[Arc<StoredReplicaSet>]) -> i32 {
    rss.iter().map(|rs| rs_replicas(rs)).sum()
}

fn status_of(rs: &StoredReplicaSet) -> (i32, i32, i32) {
    let s = rs.status.as_ref();
    (
        s.map(|s| s.replicas).unwrap_or(0),
        s.and_then(|s| s.ready_replicas).unwrap_or(0),
        s.and_then(|s| s.available_replicas).unwrap_or(0),
    )
}

pub fn sum_actual_replicas(rss: &[Arc<StoredReplicaSet>]) -> i32 {
    rss.iter().map(|rs| status_of(rs).0).sum()
}

pub fn sum_ready_replicas(rss: &[Arc<StoredReplicaSet>]) -> i32 {
    rss.iter().map(|rs| status_of(rs).1).sum()
}

pub fn sum_available_replicas(rss: &[Arc<StoredReplicaSet>]) -> i32 {
    rss.iter().map(|rs| status_of(rs).2).sum()
}

/// The terminating replicas of the ReplicaSets (upstream
/// `GetTerminatingReplicaCountForReplicaSets`): a ReplicaSet its controller has never synced
/// (no `observedGeneration`) and that reports none is skipped; any other that does not report
/// them makes the sum unknown (`None`).
pub fn terminating_replica_count(rss: &[Arc<StoredReplicaSet>]) -> Option<i32> {
    let mut total = 0;
    for rs in rss {
        let status = rs.status.as_ref();
        let terminating = status.and_then(|s| s.terminating_replicas);
        let observed = status.and_then(|s| s.observed_generation).unwrap_or(0);
        match terminating {
            Some(n) => total += n,
            None if observed == 0 => {}
            None => return None,
        }
    }
    Some(total)
}

pub fn available_replicas(rs: &StoredReplicaSet) -> i32 {
    status_of(rs).2
}

/// How many replicas the new ReplicaSet should have now (upstream `NewRSNewReplicas`).
pub fn new_rs_new_replicas(
    d: &StoredDeployment,
    all_rss: &[Arc<StoredReplicaSet>],
    new_rs: &StoredReplicaSet,
) -> Result<i32, String> {
    if !is_rolling_update(d) {
        return Ok(replicas(d));
    }
    let (s, u) = rolling_params(d);
    let (surge, _) = resolve_fenceposts(&s, &u, replicas(d))?;
    let current = sum_spec_replicas(all_rss);
    let max_total = replicas(d) + surge;
    if current >= max_total {
        return Ok(rs_replicas(new_rs));
    }
    let scale_up = (max_total - current).min(replicas(d) - rs_replicas(new_rs));
    Ok(rs_replicas(new_rs) + scale_up)
}

/// The new ReplicaSet has all the Deployment's replicas, all available (upstream
/// `IsSaturated`).
pub fn is_saturated(d: &StoredDeployment, rs: Option<&Arc<StoredReplicaSet>>) -> bool {
    let Some(rs) = rs else {
        return false;
    };
    let Some(desired) = desired_replicas_annotation(rs) else {
        return false;
    };
    rs_replicas(rs) == replicas(d)
        && desired == replicas(d)
        && available_replicas(rs) == replicas(d)
}

/// How much of a scaling change a ReplicaSet takes (upstream `GetReplicaSetProportion`).
pub fn get_proportion(rs: &StoredReplicaSet, d: &StoredDeployment, to_add: i32, added: i32) -> i32 {
    if rs_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = get_replica_set_fraction(rs, d);
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// The change that keeps a ReplicaSet's share of the Deployment when it is resized (upstream
/// `getReplicaSetFraction`): `round(rs × (replicas + maxSurge) / annotatedMax) − rs`, rounding
/// half away from zero.
pub fn get_replica_set_fraction(rs: &StoredReplicaSet, d: &StoredDeployment) -> i32 {
    if replicas(d) == 0 {
        return -rs_replicas(rs);
    }
    let deployment_replicas = i64::from(replicas(d) + max_surge(d));
    let annotated = max_replicas_annotation(rs)
        .unwrap_or_else(|| d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0));
    if annotated == 0 {
        // Upstream divides by zero here (it never scales proportionally from zero).
        return 0;
    }
    let size = (i64::from(rs_replicas(rs)) * deployment_replicas) as f64 / f64::from(annotated);
    size.round() as i32 - rs_replicas(rs)
}

// ----- conditions ---------------------------------------------------------------------------

pub fn get_condition<'a>(
    status: &'a DeploymentStatus,
    type_: &str,
) -> Option<&'a DeploymentCondition> {
    status
        .conditions
        .as_ref()
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
}

pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
    now: &Time,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    }
}

/// Upstream `SetDeploymentCondition`: the same status and reason keeps the existing condition;
/// the same status keeps its lastTransitionTime; the condition moves to the end of the list.
pub fn set_condition(status: &mut DeploymentStatus, mut cond: DeploymentCondition) {
    if let Some(cur) = get_condition(status, &cond.type_) {
        if cur.status == cond.status && cur.reason == cond.reason {
            return;
        }
        if cur.status == cond.status {
            cond.last_transition_time = cur.last_transition_time.clone();
        }
    }
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    conditions.retain(|c| c.type_ != cond.type_);
    conditions.push(cond);
}

pub fn remove_condition(status: &mut DeploymentStatus, type_: &str) {
    if let Some(cs) = status.conditions.as_mut() {
        cs.retain(|c| c.type_ != type_);
        if cs.is_empty() {
            status.conditions = None;
        }
    }
}

/// A ReplicaSet's ReplicaFailure condition as a Deployment condition.
pub fn rs_condition_to_deployment(c: &ReplicaSetCondition) -> DeploymentCondition {
    DeploymentCondition {
        type_: c.type_.clone(),
        status: c.status.clone(),
        reason: c.reason.clone(),
        message: c.message.clone(),
        last_update_time: c.last_transition_time.clone(),
        last_transition_time: c.last_transition_time.clone(),
    }
}

fn g(v: Option<i32>) -> i32 {
    v.unwrap_or(0)
}

/// All replicas updated, existing and available, and the generation observed (upstream
/// `DeploymentComplete`).
pub fn deployment_complete(d: &StoredDeployment, s: &DeploymentStatus) -> bool {
    let r = replicas(d);
    g(s.updated_replicas) == r
        && g(s.replicas) == r
        && g(s.available_replicas) == r
        && s.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
}

/// Something moved since the last status (upstream `DeploymentProgressing`).
pub fn deployment_progressing(d: &StoredDeployment, new: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let old_old = g(old.replicas) - g(old.updated_replicas);
    let new_old = g(new.replicas) - g(new.updated_replicas);
    g(new.updated_replicas) > g(old.updated_replicas)
        || new_old < old_old
        || g(new.ready_replicas) > g(old.ready_replicas)
        || g(new.available_replicas) > g(old.available_replicas)
}

/// The Progressing condition was last updated more than progressDeadlineSeconds ago (upstream
/// `DeploymentTimedOut`, strictly before now).
pub fn deployment_timed_out(d: &StoredDeployment, new: &DeploymentStatus, now: Timestamp) -> bool {
    if !has_progress_deadline(d) {
        return false;
    }
    let Some(c) = get_condition(new, CONDITION_PROGRESSING) else {
        return false;
    };
    match c.reason.as_deref() {
        Some(REASON_NEW_RS_AVAILABLE) => return false,
        Some(REASON_TIMED_OUT) => return true,
        _ => {}
    }
    let Some(from) = c.last_update_time.as_ref() else {
        return false;
    };
    let deadline = jiff::SignedDuration::from_secs(i64::from(progress_deadline_seconds(d)));
    from.0.checked_add(deadline).is_ok_and(|t| t < now)
}

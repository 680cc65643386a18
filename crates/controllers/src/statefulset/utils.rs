//! What the StatefulSet controller computes of sets, pods, claims and revisions without I/O
//! (upstream `stateful_set_utils.go`): ordinals and names, the pod identity and storage a set
//! gives each ordinal, pod predicates, the revision patch and its hash, and the status rules.

use kubeplane_api::StoredPod;
use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{json, Value};

use super::{API_VERSION, KIND};
use crate::controller_utils::{is_pod_available, is_pod_ready, new_controller_ref, pod_phase};
use crate::deployment::util::safe_encode_string;

/// The label naming a stateful pod (`apps.StatefulSetPodNameLabel`).
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label with a stateful pod's ordinal (`apps.PodIndexLabel`, gate PodIndexLabel, GA).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// The label with the revision a pod was made from (`apps.StatefulSetRevisionLabel`).
pub const REVISION_LABEL: &str = "controller-revision-hash";
/// The hash label of a ControllerRevision (`history.ControllerRevisionHashLabel`).
pub const REVISION_HASH_LABEL: &str = "controller.kubernetes.io/hash";

pub const RETAIN: &str = "Retain";
pub const DELETE: &str = "Delete";

// ----- ordinals and names ------------------------------------------------------------------------

/// The parent name and ordinal a pod name encodes (`(.*)-([0-9]+)$`); the ordinal is -1 when
/// the digits do not fit an int32, and `None` when the name has no such form.
pub fn parent_and_ordinal(name: &str) -> Option<(&str, i64)> {
    let (parent, digits) = name.rsplit_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, digits.parse::<i32>().map_or(-1, i64::from)))
}

/// A pod's ordinal, -1 when its name has none.
pub fn ordinal(pod: &StoredPod) -> i64 {
    parent_and_ordinal(pod.metadata.name.as_deref().unwrap_or_default()).map_or(-1, |(_, o)| o)
}

pub fn set_name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or_default()
}

pub fn set_namespace(set: &StatefulSet) -> &str {
    set.metadata.namespace.as_deref().unwrap_or("default")
}

pub fn replicas(set: &StatefulSet) -> i64 {
    i64::from(set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1))
}

pub fn min_ready_seconds(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

/// The first ordinal (`spec.ordinals.start`, 0 by default).
pub fn start_ordinal(set: &StatefulSet) -> i64 {
    set.spec
        .as_ref()
        .and_then(|s| s.ordinals.as_ref())
        .and_then(|o| o.start)
        .map_or(0, i64::from)
}

/// The last ordinal (inclusive).
pub fn end_ordinal(set: &StatefulSet) -> i64 {
    start_ordinal(set) + replicas(set) - 1
}

pub fn in_ordinal_range(pod: &StoredPod, set: &StatefulSet) -> bool {
    let o = ordinal(pod);
    o >= start_ordinal(set) && o <= end_ordinal(set)
}

pub fn pod_name(set: &StatefulSet, ordinal: i64) -> String {
    format!("{}-{ordinal}", set_name(set))
}

/// `<claim>-<set>-<ordinal>`.
pub fn claim_name(set: &StatefulSet, template: &str, ordinal: i64) -> String {
    format!("{template}-{}-{ordinal}", set_name(set))
}

pub fn is_member_of(set: &StatefulSet, pod: &StoredPod) -> bool {
    parent_and_ordinal(pod.metadata.name.as_deref().unwrap_or_default())
        .is_some_and(|(p, _)| p == set_name(set))
}

pub fn service_name(set: &StatefulSet) -> String {
    set.spec
        .as_ref()
        .and_then(|s| s.service_name.clone())
        .unwrap_or_default()
}

fn claim_templates(set: &StatefulSet) -> &[PersistentVolumeClaim] {
    set.spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.as_deref())
        .unwrap_or_default()
}

fn template_name(t: &PersistentVolumeClaim) -> &str {
    t.metadata.name.as_deref().unwrap_or_default()
}

/// Whether the pod has the name, namespace and pod-name label of a member of the set.
pub fn identity_matches(set: &StatefulSet, pod: &StoredPod) -> bool {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let Some((parent, o)) = parent_and_ordinal(name) else {
        return false;
    };
    o >= 0
        && parent == set_name(set)
        && name == pod_name(set, o)
        && pod.metadata.namespace.as_deref().unwrap_or("default") == set_namespace(set)
        && pod_label(pod, POD_NAME_LABEL) == Some(name)
}

/// Whether the pod mounts the claims of every volume claim template under its ordinal.
pub fn storage_matches(set: &StatefulSet, pod: &StoredPod) -> bool {
    let o = ordinal(pod);
    if o < 0 {
        return false;
    }
    let volumes = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or_default();
    claim_templates(set).iter().all(|t| {
        volumes
            .iter()
            .find(|v| v.name == template_name(t))
            .and_then(|v| v.persistent_volume_claim.as_ref())
            .is_some_and(|c| c.claim_name == claim_name(set, template_name(t), o))
    })
}

/// The claims of one ordinal, in template order, as the controller creates them: the
/// template with the claim's name, the set's namespace, and the selector's matchLabels added to
/// its labels.
pub fn claims_for(set: &StatefulSet, ordinal: i64) -> Vec<(String, PersistentVolumeClaim)> {
    let match_labels = set
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default();
    claim_templates(set)
        .iter()
        .map(|t| {
            let mut claim = t.clone();
            claim.metadata.name = Some(claim_name(set, template_name(t), ordinal));
            claim.metadata.namespace = Some(set_namespace(set).to_string());
            let labels = claim.metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.extend(match_labels.clone());
            (template_name(t).to_string(), claim)
        })
        .collect()
}

/// Points the pod's volumes named after claim templates at its claims (other volumes kept).
pub fn update_storage(set: &StatefulSet, pod: &mut StoredPod) {
    let claims = claims_for(set, ordinal(pod));
    let spec = pod.spec_mut();
    let current = spec.volumes.take().unwrap_or_default();
    let mut volumes: Vec<Volume> = claims
        .iter()
        .map(|(name, claim)| Volume {
            name: name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.metadata.name.clone().unwrap_or_default(),
                read_only: Some(false),
            }),
            ..Default::default()
        })
        .collect();
    volumes.extend(
        current
            .into_iter()
            .filter(|v| !claims.iter().any(|(n, _)| *n == v.name)),
    );
    spec.volumes = (!volumes.is_empty()).then_some(volumes);
}

/// Name, namespace and the pod-name and pod-index labels of the pod's ordinal.
pub fn update_identity(set: &StatefulSet, pod: &mut StoredPod) {
    let o = ordinal(pod);
    let name = pod_name(set, o);
    pod.metadata.namespace = Some(set_namespace(set).to_string());
    let labels = pod.labels_mut();
    labels.insert(POD_NAME_LABEL.into(), name.clone());
    labels.insert(POD_INDEX_LABEL.into(), o.to_string());
    pod.metadata.name = Some(name);
}

pub fn pod_label<'a>(pod: &'a StoredPod, key: &str) -> Option<&'a str> {
    pod.labels().and_then(|l| l.get(key)).map(String::as_str)
}

/// The revision a pod was made from ("" when unlabelled).
pub fn pod_revision(pod: &StoredPod) -> &str {
    pod_label(pod, REVISION_LABEL).unwrap_or_default()
}

/// A new pod of the set for an ordinal (upstream `newStatefulSetPod`): the template's metadata
/// and spec, the controller reference, the identity, `hostname`/`subdomain` (set only on
/// creation) and the claims' volumes.
pub fn new_pod(set: &StatefulSet, ordinal: i64, revision: &str) -> StoredPod {
    let template = set
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let tmeta = template.metadata.unwrap_or_default();
    let mut pod: StoredPod = Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(set, ordinal)),
            labels: tmeta.labels,
            annotations: tmeta.annotations,
            finalizers: tmeta.finalizers,
            owner_references: Some(vec![new_controller_ref(API_VERSION, KIND, &set.metadata)]),
            ..Default::default()
        },
        spec: template.spec,
        status: None,
    }
    .into();
    update_identity(set, &mut pod);
    let hostname = pod.metadata.name.clone();
    let spec = pod.spec_mut();
    spec.hostname = hostname;
    let service = service_name(set);
    spec.subdomain = (!service.is_empty()).then_some(service);
    update_storage(set, &mut pod);
    pod.labels_mut()
        .insert(REVISION_LABEL.into(), revision.to_string());
    pod
}

// ----- pod predicates ----------------------------------------------------------------------------

pub fn is_running_and_ready(pod: &StoredPod) -> bool {
    pod_phase(pod) == "Running" && is_pod_ready(pod)
}

/// Ready for `minReadySeconds` (upstream `podutil.IsPodAvailable`; the phase is not read).
pub fn is_running_and_available(pod: &StoredPod, min_ready: i32, now: Timestamp) -> bool {
    is_pod_available(pod, min_ready, now)
}

/// kubeplane's API server leaves a new pod's phase unset; the controller reads that as Pending.
pub fn is_pending(pod: &StoredPod) -> bool {
    matches!(pod_phase(pod), "Pending" | "")
}

pub fn is_failed_or_succeeded(pod: &StoredPod) -> bool {
    matches!(pod_phase(pod), "Failed" | "Succeeded")
}

pub fn is_terminating(pod: &StoredPod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

pub fn is_unavailable(pod: &StoredPod, min_ready: i32, now: Timestamp) -> bool {
    !is_running_and_available(pod, min_ready, now) || is_terminating(pod)
}

// ----- revisions ---------------------------------------------------------------------------------

/// The revision data of a set (upstream `getPatch`): its pod template under `spec.template`,
/// marked to replace the template wholesale. Keys are sorted at every level, as Go's JSON
/// encoding of the maps upstream builds sorts them.
pub fn revision_patch(set: &StatefulSet) -> Value {
    let template = set.spec.as_ref().map(|s| &s.template);
    let mut template = serde_json::to_value(template).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut template {
        m.insert("$patch".into(), "replace".into());
    }
    sorted(json!({ "spec": { "template": template } }))
}

/// The value with the keys of every object in sorted order.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// 32-bit FNV-1 (Go's `fnv.New32`).
pub fn fnv32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h = h.wrapping_mul(0x0100_0193);
        h ^= u32::from(b);
    }
    h
}

/// Upstream `HashControllerRevision`: FNV-1 over the data and the decimal collision count,
/// safe-encoded.
pub fn hash_revision(data: &Value, collision_count: i32) -> String {
    let mut bytes = serde_json::to_vec(data).unwrap_or_default();
    bytes.extend_from_slice(collision_count.to_string().as_bytes());
    safe_encode_string(&fnv32(&bytes).to_string())
}

/// `<prefix>-<hash>`, the prefix cut to 223 bytes.
pub fn revision_name(prefix: &str, hash: &str) -> String {
    let mut end = prefix.len().min(223);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}-{hash}", &prefix[..end])
}

/// Upstream `newRevision` / `history.NewControllerRevision`: the template's labels plus the
/// hash label, the set's annotations, the controller reference, the data and the number.
pub fn new_revision(set: &StatefulSet, number: i64, collision_count: i32) -> ControllerRevision {
    let data = revision_patch(set);
    let hash = hash_revision(&data, collision_count);
    let mut labels = set
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(REVISION_HASH_LABEL.into(), hash.clone());
    let annotations = set.metadata.annotations.clone().unwrap_or_default();
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(set_name(set), &hash)),
            namespace: Some(set_namespace(set).to_string()),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![new_controller_ref(API_VERSION, KIND, &set.metadata)]),
            ..Default::default()
        },
        data: Some(RawExtension(data)),
        revision: number,
    }
}

/// Whether two revisions hold the same data (upstream `EqualRevision`: the hashes are not
/// numbers, so the data decides). The templates are compared as decoded, so a revision written
/// by a real API server (Go's `"creationTimestamp": null` in the template's metadata, say) equals
/// the one kubeplane computes from the same template: a dumped cluster's pods stay at their
/// revision.
pub fn equal_revision(a: &ControllerRevision, b: &ControllerRevision) -> bool {
    let data = |r: &ControllerRevision| r.data.as_ref().map(|d| d.0.clone());
    let (da, db) = (data(a), data(b));
    da == db || (da.is_some() && normalized(da.as_ref()) == normalized(db.as_ref()))
}

/// A revision's data with its template decoded and encoded again (`None` when it has none or
/// it does not decode).
fn normalized(data: Option<&Value>) -> Option<Value> {
    let template = data?.pointer("/spec/template")?.clone();
    let mut template = match template {
        Value::Object(mut m) => {
            let patch = m.remove("$patch");
            (Value::Object(m), patch)
        }
        other => (other, None),
    };
    let decoded: PodTemplateSpec = serde_json::from_value(template.0.take()).ok()?;
    Some(json!({ "template": decoded, "patch": template.1 }))
}

/// The set with the pod template a revision recorded (upstream `ApplyRevision`: the patch
/// replaces the template).
pub fn apply_revision(set: &StatefulSet, revision: &ControllerRevision) -> StatefulSet {
    let mut out = set.clone();
    let template = revision
        .data
        .as_ref()
        .and_then(|d| d.0.pointer("/spec/template"))
        .cloned()
        .map(|mut t| {
            if let Value::Object(m) = &mut t {
                m.remove("$patch");
            }
            t
        });
    if let (Some(spec), Some(t)) = (out.spec.as_mut(), template) {
        if let Ok(t) = serde_json::from_value(t) {
            spec.template = t;
        }
    }
    out
}

/// One more than the highest revision number (revisions sorted), 1 for none.
pub fn next_revision(revisions: &[ControllerRevision]) -> i64 {
    revisions.last().map_or(1, |r| r.revision + 1)
}

// ----- strategy ------------------------------------------------------------------------------

pub fn update_strategy_type(set: &StatefulSet) -> &str {
    set.spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|u| u.type_.as_deref())
        .unwrap_or("RollingUpdate")
}

/// The rolling update's partition, `None` without `rollingUpdate`.
pub fn partition(set: &StatefulSet) -> Option<i64> {
    let ru = set
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|u| u.rolling_update.as_ref())?;
    Some(i64::from(ru.partition.unwrap_or(0)))
}

pub fn max_unavailable_field(set: &StatefulSet) -> Option<&IntOrString> {
    set.spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|u| u.rolling_update.as_ref())
        .and_then(|r| r.max_unavailable.as_ref())
}

/// Upstream `getStatefulSetMaxUnavailable`: 1 by default, a percentage of the replicas rounded
/// down, at least 1.
pub fn max_unavailable(value: Option<&IntOrString>, replicas: i64) -> Result<i64, String> {
    let n = match value {
        None => 1,
        Some(IntOrString::Int(i)) => i64::from(*i),
        Some(IntOrString::String(s)) => {
            let pct = s
                .strip_suffix('%')
                .and_then(|p| p.parse::<i64>().ok())
                .ok_or_else(|| format!("invalid value for IntOrString: invalid value {s:?}"))?;
            pct * replicas / 100
        }
    };
    Ok(n.max(1))
}

pub fn allows_burst(set: &StatefulSet) -> bool {
    set.spec
        .as_ref()
        .and_then(|s| s.pod_management_policy.as_deref())
        == Some("Parallel")
}

/// `(whenDeleted, whenScaled)`, Retain for what is unset.
pub fn retention_policy(set: &StatefulSet) -> (String, String) {
    let p = set
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_claim_retention_policy.as_ref());
    let get = |v: Option<&String>| v.cloned().unwrap_or_else(|| RETAIN.to_string());
    (
        get(p.and_then(|p| p.when_deleted.as_ref())),
        get(p.and_then(|p| p.when_scaled.as_ref())),
    )
}

// ----- status --------------------------------------------------------------------------------

/// Whether a computed status differs from the set's in what upstream compares
/// (`inconsistentStatus`; the collision count is not compared).
pub fn inconsistent_status(set: &StatefulSet, status: &StatefulSetStatus) -> bool {
    let cur = set.status.clone().unwrap_or_default();
    let n = |v: Option<i32>| v.unwrap_or(0);
    let s = |v: &Option<String>| v.clone().unwrap_or_default();
    status.observed_generation.unwrap_or(0) > cur.observed_generation.unwrap_or(0)
        || status.replicas != cur.replicas
        || n(status.current_replicas) != n(cur.current_replicas)
        || n(status.ready_replicas) != n(cur.ready_replicas)
        || n(status.updated_replicas) != n(cur.updated_replicas)
        || s(&status.current_revision) != s(&cur.current_revision)
        || n(status.available_replicas) != n(cur.available_replicas)
        || s(&status.update_revision) != s(&cur.update_revision)
}

/// Upstream `completeRollingUpdate`: once every replica is updated and ready, the update
/// revision becomes the current one.
pub fn complete_rolling_update(set: &StatefulSet, status: &mut StatefulSetStatus) {
    let want = replicas(set) as i32;
    if update_strategy_type(set) == "RollingUpdate"
        && status.updated_replicas.unwrap_or(0) == want
        && status.ready_replicas.unwrap_or(0) == want
        && status.replicas == want
    {
        status.current_replicas = status.updated_replicas;
        status.current_revision = status.update_revision.clone();
    }
}

// ----- claim ownership (the retention policy) ----------------------------------------------------

fn matches_ref(r: &OwnerReference, api_version: &str, kind: &str, name: &str) -> bool {
    r.api_version == api_version && r.kind == kind && r.name == name
}

/// The identity of an owner as claims reference it.
pub struct Owner<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub meta: &'a ObjectMeta,
}

impl Owner<'_> {
    fn name(&self) -> &str {
        self.meta.name.as_deref().unwrap_or_default()
    }
    fn uid(&self) -> &str {
        self.meta.uid.as_deref().unwrap_or_default()
    }
    fn matches(&self, r: &OwnerReference) -> bool {
        matches_ref(r, self.api_version, self.kind, self.name())
    }
}

pub fn set_owner(set: &StatefulSet) -> Owner<'_> {
    Owner {
        api_version: API_VERSION,
        kind: KIND,
        meta: &set.metadata,
    }
}

pub fn pod_owner(pod: &StoredPod) -> Owner<'_> {
    Owner {
        api_version: "v1",
        kind: "Pod",
        meta: &pod.metadata,
    }
}

fn refs(claim: &PersistentVolumeClaim) -> &[OwnerReference] {
    claim
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or_default()
}

fn has_owner_ref(claim: &PersistentVolumeClaim, owner: &Owner) -> bool {
    refs(claim).iter().any(|r| r.uid == owner.uid())
}

fn has_stale_owner_ref(claim: &PersistentVolumeClaim, owner: &Owner) -> bool {
    refs(claim)
        .iter()
        .find(|r| owner.matches(r))
        .is_some_and(|r| r.uid != owner.uid())
}

/// Upstream `hasUnexpectedController`: under a policy other than Retain/Retain, a reference
/// to another UID of the set or pod, or another controller.
fn has_unexpected_controller(
    claim: &PersistentVolumeClaim,
    set: &Owner,
    pod: &Owner,
    retain_retain: bool,
) -> bool {
    if retain_retain {
        return false;
    }
    refs(claim).iter().any(|r| {
        if set.matches(r) {
            return r.uid != set.uid();
        }
        if pod.matches(r) {
            return r.uid != pod.uid();
        }
        r.controller == Some(true)
    })
}

/// The claim-ownership questions of one set and pod under the set's retention policy.
pub struct ClaimOwnership<'a> {
    pub set: &'a StatefulSet,
    pub pod: &'a StoredPod,
}

impl ClaimOwnership<'_> {
    fn with_policy<T>(&self, f: impl FnOnce(&str, &str) -> T) -> T {
        let (deleted, scaled) = retention_policy(self.set);
        f(&deleted, &scaled)
    }

    fn retain_retain(&self) -> bool {
        let (deleted, scaled) = retention_policy(self.set);
        deleted == RETAIN && scaled == RETAIN
    }

    /// Upstream `isClaimOwnerUpToDate`.
    pub fn up_to_date(&self, claim: &PersistentVolumeClaim) -> bool {
        let (set, pod) = (set_owner(self.set), pod_owner(self.pod));
        self.with_policy(|deleted, scaled| {
            if has_stale_owner_ref(claim, &set) || has_stale_owner_ref(claim, &pod) {
                return true;
            }
            if has_unexpected_controller(claim, &set, &pod, self.retain_retain()) {
                return !(has_owner_ref(claim, &set) || has_owner_ref(claim, &pod));
            }
            let non_controller = refs(claim)
                .iter()
                .any(|r| (r.uid == set.uid() || r.uid == pod.uid()) && r.controller != Some(true));
            if non_controller {
                return false;
            }
            let scaled_down = !in_ordinal_range(self.pod, self.set);
            let (has_set, has_pod) = (has_owner_ref(claim, &set), has_owner_ref(claim, &pod));
            match (scaled == DELETE, deleted == DELETE) {
                (false, false) => !has_set && !has_pod,
                (false, true) => has_set && !has_pod,
                (true, false) => !has_set && scaled_down == has_pod,
                (true, true) => scaled_down != has_set && scaled_down == has_pod,
            }
        })
    }

    /// Upstream `updateClaimOwnerRefForSetAndPod`: the claim's references to the set and pod as
    /// the policy wants them.
    pub fn fix(&self, claim: &mut PersistentVolumeClaim) {
        let (set, pod) = (set_owner(self.set), pod_owner(self.pod));
        self.with_policy(|deleted, scaled| {
            let unexpected = has_unexpected_controller(claim, &set, &pod, self.retain_retain());
            let mut refs: Vec<OwnerReference> = refs(claim)
                .iter()
                .filter(|r| !set.matches(r) && !pod.matches(r))
                .cloned()
                .collect();
            if !unexpected {
                let scaled_down = !in_ordinal_range(self.pod, self.set);
                let want_pod = scaled == DELETE && scaled_down;
                let want_set = deleted == DELETE && (scaled != DELETE || !scaled_down);
                if want_set {
                    refs.push(new_controller_ref(API_VERSION, KIND, &self.set.metadata));
                }
                if want_pod {
                    refs.push(new_controller_ref("v1", "Pod", &self.pod.metadata));
                }
            }
            claim.metadata.owner_references = (!refs.is_empty()).then_some(refs);
        });
    }

    /// Upstream `hasUnexpectedController` for the ConflictingController event.
    pub fn conflicting(&self, claim: &PersistentVolumeClaim) -> bool {
        let (set, pod) = (set_owner(self.set), pod_owner(self.pod));
        self.with_policy(|_, _| has_unexpected_controller(claim, &set, &pod, self.retain_retain()))
    }

    /// Upstream `PodClaimIsStale`'s test of one claim.
    pub fn stale(&self, claim: &PersistentVolumeClaim) -> bool {
        has_stale_owner_ref(claim, &pod_owner(self.pod))
    }
}

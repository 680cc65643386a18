//! The API calls the scheduler queues in its dispatcher (upstream `framework/api_calls`): a
//! pod's binding and a patch of a pod's status (the PodScheduled condition and
//! nominatedNodeName). Each call owns what it needs to run, so a runtime may run it on another
//! thread, later than it was queued.

use kubeplane_api::StoredPod;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::{ApiError, Client};

use crate::framework::NominatingMode;

/// The kinds of call (upstream `APICallType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApiCallType {
    PodStatusPatch,
    PodBinding,
}

impl ApiCallType {
    /// Upstream's `Relevances`: a more relevant call overwrites a less relevant one queued for
    /// the same object, and a less relevant call is skipped while a more relevant one is queued.
    pub fn relevance(self) -> u8 {
        match self {
            ApiCallType::PodStatusPatch => 1,
            ApiCallType::PodBinding => 2,
        }
    }

    /// Upstream's name of the type.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiCallType::PodStatusPatch => "pod_status_patch",
            ApiCallType::PodBinding => "pod_binding",
        }
    }
}

/// The pod a call is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl PodRef {
    pub fn of(pod: &StoredPod) -> PodRef {
        PodRef {
            namespace: pod
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            name: pod.metadata.name.clone().unwrap_or_default(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
        }
    }
}

/// Binds a pod through the `pods/binding` subresource (upstream `PodBindingCall`). It never
/// merges: a newer binding of the same pod overwrites it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodBindingCall {
    pub pod: PodRef,
    pub node: String,
}

/// Patches a pod's status with conditions and a nomination (upstream `PodStatusPatchCall`).
#[derive(Clone, Debug, PartialEq)]
pub struct PodStatusPatchCall {
    pub pod: PodRef,
    /// The pod's status as the scheduler last saw it: the call is a no-op when its conditions
    /// and nomination are already there.
    pub pod_status: PodStatus,
    /// The conditions to set (without `lastTransitionTime`: a condition whose status changes
    /// gets `transition_time`, one that keeps its status keeps its time).
    pub conditions: Vec<PodCondition>,
    pub nominating: NominatingMode,
    /// The time of the change (when the call was queued).
    pub transition_time: Time,
    /// Set when the call is handed out to run: a later sync no longer updates `pod_status`.
    pub(crate) executed: bool,
}

impl PodStatusPatchCall {
    pub fn new(
        pod: &StoredPod,
        conditions: Vec<PodCondition>,
        nominating: NominatingMode,
        transition_time: Time,
    ) -> PodStatusPatchCall {
        PodStatusPatchCall {
            pod: PodRef::of(pod),
            pod_status: pod.status_k8s().unwrap_or_default(),
            conditions,
            nominating,
            transition_time,
            executed: false,
        }
    }

    /// Upstream `IsNoOp`: the nomination and every condition (status, reason, message, probe
    /// time) are already as the call would set them.
    pub fn is_no_op(&self) -> bool {
        !nominated_node_needs_update(&self.pod_status, &self.nominating)
            && !self
                .conditions
                .iter()
                .any(|c| condition_needs_update(&self.pod_status, c))
    }

    /// Upstream `Merge`: this (newer) call takes the older one's nomination when it has none,
    /// and the older one's conditions of the types it does not set itself.
    pub fn merge(&mut self, old: &PodStatusPatchCall) {
        if self.nominating == NominatingMode::Noop {
            if let NominatingMode::Override(_) = &old.nominating {
                self.nominating = old.nominating.clone();
            }
        }
        for c in &old.conditions {
            if !self.conditions.iter().any(|n| n.type_ == c.type_) {
                self.conditions.push(c.clone());
            }
        }
    }

    /// Applies the call's conditions and nomination to `status`; whether anything changed.
    fn apply(&self, status: &mut PodStatus) -> bool {
        let nnn = nominated_node_needs_update(status, &self.nominating);
        let conditions: Vec<&PodCondition> = self
            .conditions
            .iter()
            .filter(|c| condition_needs_update(status, c))
            .collect();
        if !nnn && conditions.is_empty() {
            return false;
        }
        for c in conditions {
            set_condition(status, c, &self.transition_time);
        }
        if let NominatingMode::Override(n) = &self.nominating {
            status.nominated_node_name = Some(n.clone()).filter(|n| !n.is_empty());
        }
        true
    }

    /// Upstream `Sync`: a newer state of the pod replaces the status the call compares with
    /// (unless the call already runs), and the pod is returned with the call's changes
    /// applied (`None` when they are all there already).
    pub fn sync(&mut self, pod: &StoredPod) -> Option<StoredPod> {
        if !self.executed {
            self.pod_status = pod.status_k8s().unwrap_or_default();
        }
        let mut synced = pod.clone();
        let changed = synced.update_status(|s| self.apply(s));
        changed.then_some(synced)
    }

    /// Upstream `Execute`: nothing to do when the pod the call saw has its changes already;
    /// otherwise the change is patched onto the pod's current status with its UID as the
    /// precondition (upstream `PatchPodStatus`).
    pub fn execute(&self, client: &mut dyn Client) -> Result<(), ApiError> {
        if self.is_no_op() {
            return Ok(());
        }
        let pod = &self.pod;
        client
            .patch_pod_status(&pod.namespace, &pod.name, &pod.uid, &mut |st| {
                for c in &self.conditions {
                    set_condition(st, c, &self.transition_time);
                }
                if let NominatingMode::Override(n) = &self.nominating {
                    st.nominated_node_name = Some(n.clone()).filter(|n| !n.is_empty());
                }
            })
            .map(|_| ())
    }
}

/// Whether the nomination changes nominatedNodeName (only an Override can).
fn nominated_node_needs_update(status: &PodStatus, nominating: &NominatingMode) -> bool {
    match nominating {
        NominatingMode::Override(n) => status.nominated_node_name.as_deref().unwrap_or("") != n,
        NominatingMode::Noop => false,
    }
}

/// Upstream `conditionNeedsUpdate`: no condition of the type yet, or a different status,
/// reason, message or probe time.
fn condition_needs_update(status: &PodStatus, c: &PodCondition) -> bool {
    let existing = status
        .conditions
        .as_ref()
        .and_then(|cs| cs.iter().find(|e| e.type_ == c.type_));
    match existing {
        None => true,
        Some(e) => {
            e.status != c.status
                || e.reason != c.reason
                || e.message != c.message
                || e.last_probe_time != c.last_probe_time
        }
    }
}

/// Replaces the condition of `c`'s type: its lastTransitionTime is kept when the status stays,
/// and is `now` otherwise. The condition goes last, as kubeplane's patch always wrote it.
fn set_condition(status: &mut PodStatus, c: &PodCondition, now: &Time) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let transition = match conditions.iter().find(|e| e.type_ == c.type_) {
        Some(e) if e.status == c.status => e.last_transition_time.clone(),
        _ => Some(now.clone()),
    };
    conditions.retain(|e| e.type_ != c.type_);
    conditions.push(PodCondition {
        last_transition_time: transition,
        ..c.clone()
    });
}

/// One queued call (upstream `APICall`).
#[derive(Clone, Debug, PartialEq)]
pub enum ApiCall {
    /// Shared (the call handed out to run is a cheap copy), and a pod status is much larger
    /// than a binding.
    PodStatusPatch(Arc<PodStatusPatchCall>),
    PodBinding(Arc<PodBindingCall>),
}

impl ApiCall {
    pub fn call_type(&self) -> ApiCallType {
        match self {
            ApiCall::PodStatusPatch(_) => ApiCallType::PodStatusPatch,
            ApiCall::PodBinding(_) => ApiCallType::PodBinding,
        }
    }

    /// The UID of the object the call is for: at most one call per object is queued.
    pub fn uid(&self) -> &str {
        match self {
            ApiCall::PodStatusPatch(c) => &c.pod.uid,
            ApiCall::PodBinding(c) => &c.pod.uid,
        }
    }

    pub fn is_no_op(&self) -> bool {
        match self {
            ApiCall::PodStatusPatch(c) => c.is_no_op(),
            ApiCall::PodBinding(_) => false,
        }
    }

    /// Merges an older call of the same type into this one (a binding simply replaces it).
    pub(crate) fn merge(&mut self, old: &ApiCall) {
        if let (ApiCall::PodStatusPatch(new), ApiCall::PodStatusPatch(old)) = (self, old) {
            Arc::make_mut(new).merge(old);
        }
    }

    /// Brings the call up to date with a newer state of its pod; returns the pod with the
    /// call's changes applied, `None` when the pod needs no change.
    pub(crate) fn sync(&mut self, pod: &StoredPod) -> Option<StoredPod> {
        match self {
            ApiCall::PodStatusPatch(c) => Arc::make_mut(c).sync(pod),
            ApiCall::PodBinding(_) => None,
        }
    }

    pub(crate) fn mark_executed(&mut self) {
        if let ApiCall::PodStatusPatch(c) = self {
            Arc::make_mut(c).executed = true;
        }
    }

    /// Makes the call.
    pub fn execute(&self, client: &mut dyn Client) -> Result<(), ApiError> {
        match self {
            ApiCall::PodStatusPatch(c) => c.execute(client),
            ApiCall::PodBinding(c) => client
                .bind(&c.pod.namespace, &c.pod.name, &c.pod.uid, &c.node)
                .map(|_| ()),
        }
    }
}

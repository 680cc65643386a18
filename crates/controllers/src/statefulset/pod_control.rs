//! Writes of the StatefulSet controller to pods and claims, with their events (upstream
//! `stateful_pod_control.go`): pods are created after their PersistentVolumeClaims, updated to
//! their identity and storage, deleted; claims are created and given the owner references the
//! retention policy asks for (the garbage collector then deletes them with their owner).

use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kubeplane_api::{
    types, ApiError, Client, DeleteOptions, DynamicObject, Kind, Object, ObjectKey,
};
use kubeplane_core::{EventRecord, SimTime};

use super::utils::{
    claims_for, identity_matches, ordinal, set_name, set_namespace, storage_matches,
    update_identity, update_storage, ClaimOwnership, RETAIN,
};
use super::{CONTROLLER_NAME, KIND};
use crate::controller_utils::NsName;

/// The claims the controller has observed (upstream's claim lister).
pub(super) type Claims = BTreeMap<NsName, Arc<PersistentVolumeClaim>>;

/// The writes of one sync: the client, the observed claims, the instant of the events.
pub(super) struct PodControl<'a> {
    pub(super) client: &'a mut dyn Client,
    pub(super) claims: &'a Claims,
    pub(super) now: SimTime,
}

/// What a pod event reports (upstream passes the verb as text and titles it for the reason;
/// an enum gives the reasons as constants, which an event keeps without an allocation).
#[derive(Clone, Copy)]
pub(super) enum Verb {
    Create,
    Update,
    Delete,
}

impl Verb {
    fn text(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Delete => "delete",
        }
    }

    fn reason(self, ok: bool) -> &'static str {
        match (self, ok) {
            (Verb::Create, true) => "SuccessfulCreate",
            (Verb::Update, true) => "SuccessfulUpdate",
            (Verb::Delete, true) => "SuccessfulDelete",
            (Verb::Create, false) => "FailedCreate",
            (Verb::Update, false) => "FailedUpdate",
            (Verb::Delete, false) => "FailedDelete",
        }
    }
}

fn pod_name(pod: &StoredPod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

impl PodControl<'_> {
    fn event(&mut self, set: &StatefulSet, ok: bool, reason: &'static str, message: String) {
        let (ns, name) = (set_namespace(set), set_name(set));
        let ev = if ok {
            EventRecord::normal(self.now, CONTROLLER_NAME, KIND, ns, name, reason, message)
        } else {
            EventRecord::warning(self.now, CONTROLLER_NAME, KIND, ns, name, reason, message)
        };
        self.client.record_event(ev);
    }

    /// Upstream `recordPodEvent`.
    pub(super) fn pod_event(
        &mut self,
        verb: Verb,
        set: &StatefulSet,
        pod: &str,
        err: Option<&str>,
    ) {
        let set_name = set_name(set).to_string();
        let (reason, verb) = (|ok| verb.reason(ok), verb.text());
        match err {
            None => self.event(
                set,
                true,
                reason(true),
                format!("{verb} Pod {pod} in StatefulSet {set_name} successful"),
            ),
            Some(e) => self.event(
                set,
                false,
                reason(false),
                format!("{verb} Pod {pod} in StatefulSet {set_name} failed error: {e}"),
            ),
        }
    }

    /// Upstream `recordClaimEvent`.
    fn claim_event(&mut self, set: &StatefulSet, pod: &str, claim: &str, err: Option<&str>) {
        let set_name = set_name(set).to_string();
        match err {
            None => self.event(
                set,
                true,
                "SuccessfulCreate",
                format!("create Claim {claim} Pod {pod} in StatefulSet {set_name} success"),
            ),
            Some(e) => self.event(
                set,
                false,
                "FailedCreate",
                format!(
                    "create Claim {claim} for Pod {pod} in StatefulSet {set_name} failed error: {e}"
                ),
            ),
        }
    }

    fn claim(&self, ns: &str, name: &str) -> Option<&Arc<PersistentVolumeClaim>> {
        self.claims.get(&(ns.to_string(), name.to_string()))
    }

    /// Upstream `createPersistentVolumeClaims`: every missing claim of the pod's ordinal is
    /// created; a claim being deleted is an error.
    pub(super) fn create_claims(
        &mut self,
        set: &StatefulSet,
        pod: &StoredPod,
    ) -> Result<(), String> {
        let mut errs = Vec::new();
        for (_, claim) in claims_for(set, ordinal(pod)) {
            let ns = set_namespace(set);
            let name = claim.metadata.name.clone().unwrap_or_default();
            if let Some(existing) = self.claim(ns, &name) {
                if existing.metadata.deletion_timestamp.is_some() {
                    errs.push(format!("pvc {name} is being deleted"));
                }
                continue;
            }
            let result = match claim_object(&claim) {
                Ok(obj) => self.client.create(obj).map(|_| ()),
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => self.claim_event(set, pod_name(pod), &name, None),
                Err(e) => {
                    errs.push(format!("failed to create PVC {name}: {e}"));
                    if !matches!(e, ApiError::AlreadyExists { .. }) {
                        self.claim_event(set, pod_name(pod), &name, Some(&e.to_string()));
                    }
                }
            }
        }
        aggregate(errs)
    }

    /// Upstream `CreateStatefulPod`: the claims, then the pod, then the claims' owners. The
    /// created pod is returned.
    pub(super) fn create_pod(
        &mut self,
        set: &StatefulSet,
        pod: &StoredPod,
    ) -> Result<Arc<StoredPod>, String> {
        if let Err(e) = self.create_claims(set, pod) {
            self.pod_event(Verb::Create, set, pod_name(pod), Some(&e));
            return Err(e);
        }
        let created = match self.client.create(Object::Pod(Arc::new(pod.clone()))) {
            Ok(Object::Pod(p)) => p,
            Ok(_) => Arc::new(pod.clone()),
            Err(e @ ApiError::AlreadyExists { .. }) => return Err(e.to_string()),
            Err(e) => {
                let e = e.to_string();
                self.pod_event(Verb::Create, set, pod_name(pod), Some(&e));
                return Err(e);
            }
        };
        if let Err(e) = self.update_claims_for_retention(set, &created) {
            self.pod_event(Verb::Update, set, pod_name(pod), Some(&e));
            return Err(e);
        }
        self.pod_event(Verb::Create, set, pod_name(pod), None);
        Ok(created)
    }

    /// Upstream `createMissingPersistentVolumeClaims`.
    pub(super) fn create_missing_claims(
        &mut self,
        set: &StatefulSet,
        pod: &StoredPod,
    ) -> Result<(), String> {
        self.create_claims(set, pod)?;
        if let Err(e) = self.update_claims_for_retention(set, pod) {
            self.pod_event(Verb::Update, set, pod_name(pod), Some(&e));
            return Err(e);
        }
        Ok(())
    }

    /// Upstream `UpdateStatefulPod`: identity, storage and claim owners brought in line, the
    /// pod written when it changed (retried on conflicts with a fresh copy), and one event.
    pub(super) fn update_pod(&mut self, set: &StatefulSet, pod: &StoredPod) -> Result<(), String> {
        let mut pod = pod.clone();
        let mut attempted = false;
        let mut result = Ok(());
        for _ in 0..5 {
            let mut consistent = true;
            if !identity_matches(set, &pod) {
                update_identity(set, &mut pod);
                consistent = false;
            }
            if !storage_matches(set, &pod) {
                update_storage(set, &mut pod);
                if let Err(e) = self.create_claims(set, &pod) {
                    self.pod_event(Verb::Update, set, pod_name(&pod), Some(&e));
                    return Err(e);
                }
                consistent = false;
            }
            if !self.claims_match_retention(set, &pod) {
                if let Err(e) = self.update_claims_for_retention(set, &pod) {
                    self.pod_event(Verb::Update, set, pod_name(&pod), Some(&e));
                    return Err(e);
                }
                consistent = false;
            }
            if consistent {
                result = Ok(());
                break;
            }
            attempted = true;
            match self.client.update(Object::Pod(Arc::new(pod.clone()))) {
                Ok(_) => {
                    result = Ok(());
                    break;
                }
                Err(e) => {
                    let conflict = matches!(e, ApiError::Conflict { .. });
                    result = Err(e.to_string());
                    let key = ObjectKey::new(Kind::Pod, set_namespace(set), pod_name(&pod));
                    if let Ok(Object::Pod(fresh)) = self.client.get(&key) {
                        pod = StoredPod::clone(&fresh);
                    }
                    if !conflict {
                        break;
                    }
                }
            }
        }
        if attempted {
            let name = pod_name(&pod).to_string();
            self.pod_event(
                Verb::Update,
                set,
                &name,
                result.as_ref().err().map(String::as_str),
            );
        }
        result
    }

    /// Upstream `DeleteStatefulPod`.
    pub(super) fn delete_pod(
        &mut self,
        set: &StatefulSet,
        pod: &StoredPod,
    ) -> Result<(), ApiError> {
        let key = ObjectKey::new(Kind::Pod, set_namespace(set), pod_name(pod));
        let result = self
            .client
            .delete(&key, DeleteOptions::default())
            .map(|_| ());
        let err = result.as_ref().err().map(ToString::to_string);
        self.pod_event(Verb::Delete, set, pod_name(pod), err.as_deref());
        result
    }

    /// Upstream `ClaimsMatchRetentionPolicy` (a missing claim matches).
    pub(super) fn claims_match_retention(&self, set: &StatefulSet, pod: &StoredPod) -> bool {
        let ownership = ClaimOwnership { set, pod };
        claims_for(set, ordinal(pod)).iter().all(|(_, c)| {
            let name = c.metadata.name.as_deref().unwrap_or_default();
            self.claim(set_namespace(set), name)
                .is_none_or(|claim| ownership.up_to_date(claim))
        })
    }

    /// Upstream `UpdatePodClaimForRetentionPolicy`.
    pub(super) fn update_claims_for_retention(
        &mut self,
        set: &StatefulSet,
        pod: &StoredPod,
    ) -> Result<(), String> {
        let ownership = ClaimOwnership { set, pod };
        for (_, c) in claims_for(set, ordinal(pod)) {
            let name = c.metadata.name.clone().unwrap_or_default();
            let Some(claim) = self.claim(set_namespace(set), &name).cloned() else {
                continue;
            };
            if ownership.conflicting(&claim) {
                let message = format!("PersistentVolumeClaim {name} has a conflicting OwnerReference that acts as a manging controller, the retention policy is ignored for this claim");
                self.event(set, false, "ConflictingController", message);
            }
            if ownership.up_to_date(&claim) {
                continue;
            }
            let mut fixed = PersistentVolumeClaim::clone(&claim);
            ownership.fix(&mut fixed);
            let written = claim_object(&fixed).and_then(|o| self.client.update(o));
            if let Err(e) = written {
                return Err(format!(
                    "could not update claim {name} for delete policy ownerRefs: {e}"
                ));
            }
        }
        Ok(())
    }

    /// Upstream `PodClaimIsStale`: under `whenScaled: Delete`, a claim that references an older
    /// pod of the same name blocks the creation.
    pub(super) fn pod_claim_is_stale(&self, set: &StatefulSet, pod: &StoredPod) -> bool {
        if super::utils::retention_policy(set).1 == RETAIN {
            return false;
        }
        let ownership = ClaimOwnership { set, pod };
        claims_for(set, ordinal(pod)).iter().any(|(_, c)| {
            let name = c.metadata.name.as_deref().unwrap_or_default();
            self.claim(set_namespace(set), name)
                .is_some_and(|claim| ownership.stale(claim))
        })
    }
}

/// A claim as the stored object kubeplane keeps of the kind.
fn claim_object(claim: &PersistentVolumeClaim) -> Result<Object, ApiError> {
    other_object("v1", "PersistentVolumeClaim", claim)
}

/// A k8s-openapi object of a kind kubeplane only stores, as the stored object.
pub(super) fn other_object<T: serde::Serialize>(
    api_version: &str,
    kind: &str,
    obj: &T,
) -> Result<Object, ApiError> {
    let internal = |message: String| ApiError::Internal { message };
    let t = types::builtin(api_version, kind)
        .ok_or_else(|| internal(format!("{kind} is not a stored kind")))?;
    let value = serde_json::to_value(obj).map_err(|e| internal(e.to_string()))?;
    DynamicObject::from_value(t, &value)
        .map(|o| Object::Other(Arc::new(o)))
        .map_err(|e| internal(e.to_string()))
}

/// Upstream `utilerrors.NewAggregate`: one error as it is, several as `[a, b]`.
pub(super) fn aggregate(mut errs: Vec<String>) -> Result<(), String> {
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

//! Writes to pods: adoption and release (upstream `controller_ref_manager.go`) and creation from
//! the template (upstream `controller_utils.go`, `RealPodControl`), the pods of one template
//! call sharing one spec, one label map and one controller reference ([`template_spec`]).

use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kubeplane_api::pod_meta::Labels;
use kubeplane_api::StoredReplicaSet;
use kubeplane_api::{ApiError, Client, Kind, Object, ObjectKey};
use kubeplane_core::{EventRecord, SimTime};
use rustc_hash::FxHashMap;

use super::{API_VERSION, CONTROLLER_NAME, KIND, REASON_FAILED_CREATE, REASON_SUCCESSFUL_CREATE};
use crate::controller_utils::{
    add_pod_owner_reference, new_controller_ref, ns_name, pod_controller,
    remove_pod_owner_reference, NsName,
};

/// Upstream `RecheckDeletionTimestamp` over an uncached GET of the ReplicaSet: adoption is only
/// allowed while the very same ReplicaSet exists and is not being deleted.
pub(super) fn recheck_replica_set(
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
pub(super) fn adopt_pod(
    client: &mut dyn Client,
    rs: &StoredReplicaSet,
    pod: &StoredPod,
) -> Result<bool, ApiError> {
    let (ns, name) = ns_name(&pod.metadata);
    let Some(fresh) = client.cache().get_pod(&ns, &name).cloned() else {
        return Ok(false);
    };
    let key = ObjectKey::new(Kind::Pod, &ns, &name);
    if fresh.metadata.uid != pod.metadata.uid {
        return Err(ApiError::Conflict { key });
    }
    let controller_ref = new_controller_ref(API_VERSION, KIND, &rs.metadata);
    if let Some(other) = pod_controller(&fresh) {
        if other.uid != controller_ref.uid {
            return Err(ApiError::Invalid {
                key,
                message: "metadata.ownerReferences: Invalid value: Only one reference can have Controller set to true".into(),
            });
        }
    }
    let mut p = StoredPod::clone(&fresh);
    add_pod_owner_reference(&mut p, controller_ref);
    match client.update(Object::Pod(Arc::new(p))) {
        Ok(_) => Ok(true),
        Err(ApiError::NotFound { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Removes the ReplicaSet's reference from a pod that no longer matches (upstream `ReleasePod`).
/// A pod that is gone or cannot be patched counts as released.
pub(super) fn release_pod(
    client: &mut dyn Client,
    rs_uid: &str,
    pod: &StoredPod,
) -> Result<(), ApiError> {
    let (ns, name) = ns_name(&pod.metadata);
    let Some(fresh) = client.cache().get_pod(&ns, &name).cloned() else {
        return Ok(());
    };
    if fresh.metadata.uid != pod.metadata.uid {
        return Err(ApiError::Conflict {
            key: ObjectKey::new(Kind::Pod, &ns, &name),
        });
    }
    let mut p = StoredPod::clone(&fresh);
    remove_pod_owner_reference(&mut p, rs_uid);
    match client.update(Object::Pod(Arc::new(p))) {
        Ok(_) | Err(ApiError::NotFound { .. }) | Err(ApiError::Invalid { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The pod a ReplicaSet creates (upstream `GetPodFromTemplate`): copies of the template's
/// labels, annotations, finalizers and spec, `generateName: <rs-name>-`, and the controller
/// reference.
pub fn pod_from_template(rs: &StoredReplicaSet) -> Pod {
    let template = rs.spec.as_ref().and_then(|s| s.template.as_ref());
    Pod {
        metadata: pod_meta_from_template(rs),
        spec: template.and_then(|t| t.spec.as_deref().cloned()),
        status: None,
    }
}

/// [`pod_from_template`] with the template's spec, labels and controller reference given as
/// the ones the ReplicaSet's pods share (made by [`template_spec`]).
fn shared_pod_from_template(rs: &StoredReplicaSet, shared: SharedTemplate) -> StoredPod {
    let tmeta = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.metadata.as_ref());
    let meta = ObjectMeta {
        generate_name: Some(generate_name(rs)),
        namespace: rs.metadata.namespace.clone(),
        annotations: tmeta.and_then(|m| m.annotations.clone()),
        finalizers: tmeta.and_then(|m| m.finalizers.clone()),
        ..Default::default()
    };
    StoredPod::with_shared_spec(meta, Some(shared.spec), None, None)
        .with_shared_meta(shared.labels, Some(shared.owner_references))
}

/// The metadata of a pod made from the ReplicaSet's template.
fn pod_meta_from_template(rs: &StoredReplicaSet) -> ObjectMeta {
    let tmeta = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.metadata.clone())
        .unwrap_or_default();
    ObjectMeta {
        generate_name: Some(generate_name(rs)),
        namespace: rs.metadata.namespace.clone(),
        labels: tmeta.labels,
        annotations: tmeta.annotations,
        finalizers: tmeta.finalizers,
        owner_references: Some(vec![new_controller_ref(API_VERSION, KIND, &rs.metadata)]),
        ..Default::default()
    }
}

/// The `generateName` of the ReplicaSet's pods.
fn generate_name(rs: &StoredReplicaSet) -> String {
    let rs_name = rs.metadata.name.clone().unwrap_or_default();
    // The dashed prefix must itself be a valid name prefix (at most 253 characters with the
    // generated suffix dropped); otherwise upstream falls back to the bare name.
    if rs_name.len() < 253 {
        format!("{rs_name}-")
    } else {
        rs_name
    }
}

/// What the pods of one template version of a ReplicaSet share (issue 19's stored pod form):
/// the spec (and so the registry's one admitted spec), the labels and the controller
/// reference, each one `Arc`.
#[derive(Clone, Debug)]
pub(super) struct SharedTemplate {
    spec: Arc<PodSpec>,
    labels: Option<Arc<Labels>>,
    owner_references: Arc<Vec<OwnerReference>>,
}

/// The labels and controller reference last handed to each ReplicaSet's pods, by the
/// ReplicaSet's namespace and name, held weakly: the next creation for the same ReplicaSet
/// shares them again while some pod still holds them and they are equal to what the template
/// makes now. Without it every `manage_replicas` call made its own (a replacement pod after an
/// eviction is a call of one: about 700 B of labels and reference per replaced pod in the
/// envelope). A `Weak` keeps only the `Arc`'s block once its pods are gone; the entry goes when
/// the ReplicaSet is deleted ([`SharedMeta::forget`]).
#[derive(Default)]
pub(super) struct SharedMeta(FxHashMap<NsName, MetaSlots>);

#[derive(Default)]
struct MetaSlots {
    labels: Weak<Labels>,
    owner_references: Weak<Vec<OwnerReference>>,
}

impl SharedMeta {
    /// Forgets a deleted ReplicaSet's shared parts.
    pub(super) fn forget(&mut self, key: &NsName) {
        self.0.remove(key);
    }

    fn slots(&mut self, key: &NsName) -> &mut MetaSlots {
        if !self.0.contains_key(key) {
            self.0.insert(key.clone(), MetaSlots::default());
        }
        self.0.get_mut(key).expect("inserted above")
    }
}

/// The `Arc` held in `slot` when it is still alive and equal to `current`; otherwise a new one
/// with a copy of `current`, which `slot` then holds.
fn shared<T: PartialEq + Clone>(slot: &mut Weak<T>, current: &T) -> Arc<T> {
    match slot.upgrade() {
        Some(held) if *held == *current => held,
        _ => {
            let made = Arc::new(current.clone());
            *slot = Arc::downgrade(&made);
            made
        }
    }
}

/// The template's shared parts for the pods of one `manage_replicas` call (`None` when the
/// template has no spec or sets `nodeName`: each pod then gets its own copies).
///
/// The spec is the stored ReplicaSet's own (`StoredReplicaSet` keeps its template's spec
/// behind an `Arc`, shared by every version of the ReplicaSet), so a call copies nothing. The
/// pods made from it are admitted (the Priority plugin writes every template pod's spec), and
/// the registry's admission shares one admitted spec between all the pods of one controller
/// whose admitted specs are equal (`kubeplane_registry::admission`, keyed by the controller's
/// UID). The labels and the controller reference are shared by the pods of every call while
/// they are equal ([`SharedMeta`]).
pub(super) fn template_spec(
    rs: &StoredReplicaSet,
    key: &NsName,
    memo: &mut SharedMeta,
) -> Option<SharedTemplate> {
    let template = rs.spec.as_ref()?.template.as_ref()?;
    let spec = template.spec.as_ref()?;
    if spec.node_name.is_some() {
        // not a stored pod's spec
        return None;
    }
    let slots = memo.slots(key);
    let labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
    let controller_ref = vec![new_controller_ref(API_VERSION, KIND, &rs.metadata)];
    Some(SharedTemplate {
        spec: Arc::clone(spec),
        labels: labels.map(|l| shared(&mut slots.labels, l)),
        owner_references: shared(&mut slots.owner_references, &controller_ref),
    })
}

/// Upstream `RealPodControl.CreatePods` with its events.
/// `spec` is the call's shared parts ([`template_spec`]), `None` to copy the template's.
pub(super) fn create_pod(
    client: &mut dyn Client,
    rs: &StoredReplicaSet,
    spec: Option<SharedTemplate>,
    now: SimTime,
) -> Result<(), String> {
    let (ns, name) = ns_name(&rs.metadata);
    let pod = match spec {
        Some(spec) => shared_pod_from_template(rs, spec),
        None => pod_from_template(rs).into(),
    };
    if pod.labels().is_none_or(BTreeMap::is_empty) {
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

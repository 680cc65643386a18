//! The DaemonSet controller's writes to pods: creation from the template pinned to a node and
//! deletion, with their events (upstream `controller_utils.go`, `RealPodControl`), and adoption
//! and release (upstream `controller_ref_manager.go`).

use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::{ApiError, Client, DeleteOptions, Kind, Object, ObjectKey};
use kubeplane_core::{EventRecord, SimTime};

use super::cache::CachedDs;
use super::util::replace_daemon_set_pod_node_name_node_affinity;
use super::{
    daemon_set_type, API_VERSION, CONTROLLER_NAME, KIND, REASON_FAILED_CREATE,
    REASON_FAILED_DELETE, REASON_SUCCESSFUL_CREATE, REASON_SUCCESSFUL_DELETE,
};
use crate::controller_utils::{
    add_pod_owner_reference, new_controller_ref, ns_name, pod_controller,
    remove_pod_owner_reference,
};

/// Whether a create failed because its namespace is being deleted (upstream
/// `NamespaceTerminatingCause`).
fn namespace_terminating(e: &ApiError) -> bool {
    matches!(e, ApiError::Forbidden { message } if message.contains("because it is being terminated"))
}

/// The pod a DaemonSet creates for `node` (upstream `GetPodFromTemplate` with the template of
/// `CreatePodTemplate`, then `ReplaceDaemonSetPodNodeNameNodeAffinity`): `generateName:
/// <ds>-`, the template's labels, annotations, finalizers and spec, the controller reference,
/// and a required node affinity naming the node. The scheduler binds it.
pub fn new_daemon_pod(ds: &CachedDs, template: &PodTemplateSpec, node: &str) -> Pod {
    let tmeta = template.metadata.clone().unwrap_or_default();
    let name = ds.ds.metadata.name.clone().unwrap_or_default();
    let prefix = if name.len() < 253 {
        format!("{name}-")
    } else {
        name
    };
    let mut spec = template.spec.clone().unwrap_or_default();
    spec.affinity = Some(replace_daemon_set_pod_node_name_node_affinity(
        spec.affinity.take(),
        node,
    ));
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(prefix),
            namespace: ds.ds.metadata.namespace.clone(),
            labels: tmeta.labels,
            annotations: tmeta.annotations,
            finalizers: tmeta.finalizers,
            owner_references: Some(vec![new_controller_ref(API_VERSION, KIND, &ds.ds.metadata)]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// An event about the DaemonSet.
pub fn event(
    now: SimTime,
    ds: &CachedDs,
    warning: bool,
    reason: &'static str,
    msg: String,
) -> EventRecord {
    let (ns, name) = ns_name(&ds.ds.metadata);
    let make = if warning {
        EventRecord::warning
    } else {
        EventRecord::normal
    };
    make(now, CONTROLLER_NAME, KIND, &ns, &name, reason, msg)
}

/// Upstream `RealPodControl.CreatePods` for one node. `Err(None)`: the namespace is being
/// deleted (no event, as upstream).
pub fn create_pod(
    client: &mut dyn Client,
    ds: &CachedDs,
    template: &PodTemplateSpec,
    node: &str,
    now: SimTime,
) -> Result<(), Option<String>> {
    let pod = new_daemon_pod(ds, template, node);
    if pod.metadata.labels.as_ref().is_none_or(BTreeMap::is_empty) {
        return Err(Some("unable to create pods, no labels".into()));
    }
    match client.create(Object::Pod(Arc::new(pod.into()))) {
        Ok(created) => {
            let msg = format!("Created pod: {}", created.name());
            client.record_event(event(now, ds, false, REASON_SUCCESSFUL_CREATE, msg));
            Ok(())
        }
        Err(e) if namespace_terminating(&e) => Err(None),
        Err(e) => {
            let msg = format!("Error creating: {e}");
            client.record_event(event(now, ds, true, REASON_FAILED_CREATE, msg));
            Err(Some(e.to_string()))
        }
    }
}

/// Upstream `RealPodControl.DeletePod`: `SuccessfulDelete`, or `FailedDelete` for an error
/// other than NotFound.
pub fn delete_pod(
    client: &mut dyn Client,
    ds: &CachedDs,
    name: &str,
    now: SimTime,
) -> Result<(), ApiError> {
    let (ns, _) = ns_name(&ds.ds.metadata);
    let key = ObjectKey::new(Kind::Pod, &ns, name);
    match client.delete(&key, DeleteOptions::default()) {
        Ok(_) => {
            let msg = format!("Deleted pod: {name}");
            client.record_event(event(now, ds, false, REASON_SUCCESSFUL_DELETE, msg));
            Ok(())
        }
        Err(e @ ApiError::NotFound { .. }) => Err(e),
        Err(e) => {
            let msg = format!("Error deleting: {e}");
            client.record_event(event(now, ds, true, REASON_FAILED_DELETE, msg));
            Err(e)
        }
    }
}

/// Upstream `RecheckDeletionTimestamp` over an uncached GET: adoption is allowed only while the
/// very same DaemonSet exists and is not being deleted.
pub fn recheck_daemon_set(client: &mut dyn Client, ds: &CachedDs) -> Result<(), String> {
    let (ns, name) = ns_name(&ds.ds.metadata);
    let key = ObjectKey::new(Kind::Other(daemon_set_type()), &ns, &name);
    let Ok(fresh) = client.get(&key) else {
        return Err(format!(
            "can't recheck DeletionTimestamp: daemonsets.apps \"{name}\" not found"
        ));
    };
    if fresh.uid() != ds.uid() {
        return Err(format!(
            "can't recheck DeletionTimestamp: original DaemonSet {ns}/{name} is gone: got uid {}, wanted {}",
            fresh.uid(),
            ds.uid()
        ));
    }
    if let Some(ts) = fresh.meta().deletion_timestamp.as_ref() {
        return Err(format!("{ns}/{name} has just been deleted at {}", ts.0));
    }
    Ok(())
}

/// Upstream `AdoptPod`: adds the controller reference. `Ok(false)` when the pod is gone.
pub fn adopt_pod(
    client: &mut dyn Client,
    ds: &CachedDs,
    pod: &StoredPod,
) -> Result<bool, ApiError> {
    let (ns, name) = ns_name(&pod.metadata);
    let Some(fresh) = client.cache().get_pod(&ns, &name).cloned() else {
        return Ok(false);
    };
    let key = ObjectKey::new(Kind::Pod, &ns, &name);
    if fresh.metadata.uid != pod.metadata.uid || pod_controller(&fresh).is_some() {
        return Err(ApiError::Conflict { key });
    }
    let mut p = StoredPod::clone(&fresh);
    add_pod_owner_reference(
        &mut p,
        new_controller_ref(API_VERSION, KIND, &ds.ds.metadata),
    );
    match client.update(Object::Pod(Arc::new(p))) {
        Ok(_) => Ok(true),
        Err(ApiError::NotFound { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Upstream `ReleasePod`: removes the reference from a pod that stopped matching. A pod that is
/// gone counts as released.
pub fn release_pod(client: &mut dyn Client, ds_uid: &str, pod: &StoredPod) -> Result<(), ApiError> {
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
    remove_pod_owner_reference(&mut p, ds_uid);
    match client.update(Object::Pod(Arc::new(p))) {
        Ok(_) | Err(ApiError::NotFound { .. }) | Err(ApiError::Invalid { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

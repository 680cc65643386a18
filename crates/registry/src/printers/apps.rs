//! The apps group's printers (upstream `printDeployment`, `printReplicaSet`,
//! `printDaemonSet`, `printStatefulSet`, `printControllerRevision`).

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, StatefulSet};
use kubeplane_api::Object;

use super::descriptions as d;
use super::{
    container_cells, decode, format_label_selector, format_labels, object_age, Column, Entry, Row,
    AGE, CONTAINERS, IMAGES, NAME,
};

/// The printer of an apps kind stored as [`Object::Other`].
pub(super) fn printer(kind: &str) -> Option<Entry> {
    Some(match kind {
        "DaemonSet" => (DAEMON_SET_COLUMNS, daemon_set_row),
        "StatefulSet" => (STATEFUL_SET_COLUMNS, stateful_set_row),
        "ControllerRevision" => (CONTROLLER_REVISION_COLUMNS, controller_revision_row),
        _ => return None,
    })
}

const READY_PODS: &str = "Number of the pod with ready state";

pub(super) const DEPLOYMENT_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Ready", "string", READY_PODS),
    Column::new(
        "Up-to-date",
        "string",
        d::DEPLOYMENT_STATUS_UPDATED_REPLICAS,
    ),
    Column::new(
        "Available",
        "string",
        d::DEPLOYMENT_STATUS_AVAILABLE_REPLICAS,
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", d::DEPLOYMENT_SPEC_SELECTOR).wide(),
];

pub(super) fn deployment_row(object: &Object, now: jiff::Timestamp) -> Row {
    let Object::Deployment(dep) = object else {
        return Row::default();
    };
    let spec = dep.spec.as_ref();
    let status = dep.status.clone().unwrap_or_default();
    // An unset replicas is the defaulted 1 the API server would have stored.
    let desired = spec.and_then(|s| s.replicas).unwrap_or(1);
    let (containers, images) = container_cells(spec.and_then(|s| s.template.spec.as_deref()));
    // printDeployment writes the selector itself: empty when it selects everything.
    let selector = match spec.map(|s| kubeplane_core::labels::from_label_selector(&s.selector)) {
        Some(Ok(sel)) => sel.to_string(),
        Some(Err(_)) => "<invalid>".to_string(),
        None => String::new(),
    };
    Row::new(vec![
        object.name().into(),
        format!("{}/{desired}", status.ready_replicas.unwrap_or(0)).into(),
        status.updated_replicas.unwrap_or(0).into(),
        status.available_replicas.unwrap_or(0).into(),
        object_age(object, now),
        containers,
        images,
        selector.into(),
    ])
}

pub(super) const REPLICA_SET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Desired", "integer", d::REPLICA_SET_SPEC_REPLICAS),
    Column::new("Current", "integer", d::REPLICA_SET_STATUS_REPLICAS),
    Column::new("Ready", "integer", d::REPLICA_SET_STATUS_READY_REPLICAS),
    AGE,
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", d::REPLICA_SET_SPEC_SELECTOR).wide(),
];

pub(super) fn replica_set_row(object: &Object, now: jiff::Timestamp) -> Row {
    let Object::ReplicaSet(rs) = object else {
        return Row::default();
    };
    let spec = rs.spec.as_ref();
    let status = rs.status.clone().unwrap_or_default();
    let template = spec.and_then(|s| s.template.as_ref());
    let (containers, images) = container_cells(template.and_then(|t| t.spec.as_deref()));
    Row::new(vec![
        object.name().into(),
        spec.and_then(|s| s.replicas).unwrap_or(1).into(),
        status.replicas.into(),
        status.ready_replicas.unwrap_or(0).into(),
        object_age(object, now),
        containers,
        images,
        format_label_selector(spec.map(|s| &s.selector)).into(),
    ])
}

const DAEMON_SET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Desired", "integer", d::DAEMON_SET_STATUS_DESIRED),
    Column::new("Current", "integer", d::DAEMON_SET_STATUS_CURRENT),
    Column::new("Ready", "integer", d::DAEMON_SET_STATUS_READY),
    Column::new("Up-to-date", "integer", d::DAEMON_SET_STATUS_UPDATED),
    Column::new("Available", "integer", d::DAEMON_SET_STATUS_AVAILABLE),
    Column::new("Node Selector", "string", d::POD_SPEC_NODE_SELECTOR),
    AGE,
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", d::DAEMON_SET_SPEC_SELECTOR).wide(),
];

fn daemon_set_row(object: &Object, now: jiff::Timestamp) -> Row {
    let ds: DaemonSet = decode(object);
    let spec = ds.spec.unwrap_or_default();
    let status = ds.status.unwrap_or_default();
    let pod_spec = spec.template.spec.as_ref();
    let (containers, images) = container_cells(pod_spec);
    Row::new(vec![
        object.name().into(),
        status.desired_number_scheduled.into(),
        status.current_number_scheduled.into(),
        status.number_ready.into(),
        status.updated_number_scheduled.unwrap_or(0).into(),
        status.number_available.unwrap_or(0).into(),
        format_labels(pod_spec.and_then(|s| s.node_selector.as_ref())).into(),
        object_age(object, now),
        containers,
        images,
        format_label_selector(Some(&spec.selector)).into(),
    ])
}

const STATEFUL_SET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Ready", "string", READY_PODS),
    AGE,
    CONTAINERS,
    IMAGES,
];

fn stateful_set_row(object: &Object, now: jiff::Timestamp) -> Row {
    let sts: StatefulSet = decode(object);
    let spec = sts.spec.unwrap_or_default();
    let ready = sts.status.and_then(|s| s.ready_replicas).unwrap_or(0);
    let (containers, images) = container_cells(spec.template.spec.as_ref());
    Row::new(vec![
        object.name().into(),
        format!("{ready}/{}", spec.replicas.unwrap_or(1)).into(),
        object_age(object, now),
        containers,
        images,
    ])
}

const CONTROLLER_REVISION_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Controller", "string", "Controller of the object"),
    Column::new("Revision", "string", d::CONTROLLER_REVISION_REVISION),
    AGE,
];

/// `daemonset.apps/web` for the controlling owner, `<none>` without one (upstream
/// `formatResourceName` over the controller's group and kind).
pub(super) fn controller_name(object: &Object) -> String {
    let owner = object
        .owner_references()
        .into_iter()
        .flatten()
        .find(|r| r.controller == Some(true));
    let Some(owner) = owner else {
        return "<none>".to_string();
    };
    let group = owner
        .api_version
        .rsplit_once('/')
        .map_or("", |(group, _)| group);
    let group_kind = match (group, owner.kind.as_str()) {
        ("", "") => return owner.name.clone(),
        ("", kind) => kind.to_string(),
        (group, kind) => format!("{kind}.{group}"),
    };
    format!("{}/{}", group_kind.to_lowercase(), owner.name)
}

fn controller_revision_row(object: &Object, now: jiff::Timestamp) -> Row {
    let cr: ControllerRevision = decode(object);
    Row::new(vec![
        object.name().into(),
        controller_name(object).into(),
        cr.revision.into(),
        object_age(object, now),
    ])
}

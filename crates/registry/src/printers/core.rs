//! The core group's printers besides the Pod's (upstream `printNode`, `printNamespace`,
//! `printService`, `printConfigMap`, `printSecret`, `printServiceAccount`, `printEvent`,
//! `printEndpoints`, `printPersistentVolumeClaim`, `printPersistentVolume`,
//! `printReplicationController`, `printPodTemplate`).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{
    ConfigMap, Endpoints, Event, Node, PersistentVolume, PersistentVolumeClaim, PodTemplate,
    ReplicationController, Secret, Service, ServiceAccount,
};
use kubeplane_api::Object;
use serde_json::Value;

use super::descriptions as d;
use super::{
    age, container_cells, decode, format_labels, object_age, since, Column, Entry, Row, AGE,
    CONTAINERS, IMAGES, NAME,
};

/// The printer of a core-group kind stored as [`Object::Other`].
pub(super) fn printer(kind: &str) -> Option<Entry> {
    Some(match kind {
        "Service" => (SERVICE_COLUMNS, service_row),
        "ConfigMap" => (CONFIG_MAP_COLUMNS, config_map_row),
        "Secret" => (SECRET_COLUMNS, secret_row),
        "ServiceAccount" => (SERVICE_ACCOUNT_COLUMNS, service_account_row),
        "Event" => (EVENT_COLUMNS, event_row),
        "Endpoints" => (ENDPOINTS_COLUMNS, endpoints_row),
        "PersistentVolumeClaim" => (PVC_COLUMNS, pvc_row),
        "PersistentVolume" => (PV_COLUMNS, pv_row),
        "ReplicationController" => (RC_COLUMNS, rc_row),
        "PodTemplate" => (POD_TEMPLATE_COLUMNS, pod_template_row),
        _ => return None,
    })
}

/// `<none>` for an empty string.
fn or_none(s: &str) -> Value {
    if s.is_empty() {
        "<none>".into()
    } else {
        s.into()
    }
}

pub(super) const NODE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "The status of the node"),
    Column::new("Roles", "string", "The roles of the node"),
    AGE,
    Column::new("Version", "string", d::NODE_INFO_KUBELET_VERSION),
    Column::new("Internal-IP", "string", d::NODE_STATUS_ADDRESSES).wide(),
    Column::new("External-IP", "string", d::NODE_STATUS_ADDRESSES).wide(),
    Column::new("OS-Image", "string", d::NODE_INFO_OS_IMAGE).wide(),
    Column::new("Kernel-Version", "string", d::NODE_INFO_KERNEL_VERSION).wide(),
    Column::new(
        "Container-Runtime",
        "string",
        d::NODE_INFO_CONTAINER_RUNTIME_VERSION,
    )
    .wide(),
];

/// `Ready` / `NotReady` / `Unknown` from the Ready condition, then `SchedulingDisabled`
/// when cordoned.
pub(super) fn node_status(node: &Node) -> String {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().rfind(|c| c.type_ == "Ready"));
    let mut status = vec![match ready {
        Some(c) if c.status == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        status.push("SchedulingDisabled");
    }
    status.join(",")
}

/// The roles of `node-role.kubernetes.io/<role>` labels and of a `kubernetes.io/role`
/// label, sorted and deduplicated; `<none>` without any.
pub(super) fn node_roles(node: &Node) -> String {
    let mut roles = BTreeSet::new();
    for (k, v) in node.metadata.labels.iter().flatten() {
        if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
            if !role.is_empty() {
                roles.insert(role.to_string());
            }
        } else if k == "kubernetes.io/role" && !v.is_empty() {
            roles.insert(v.clone());
        }
    }
    let joined = roles.into_iter().collect::<Vec<_>>().join(",");
    if joined.is_empty() {
        "<none>".to_string()
    } else {
        joined
    }
}

pub(super) fn node_row(object: &Object, now: jiff::Timestamp) -> Row {
    let Some(node) = object.as_node() else {
        return Row::default();
    };
    let status = node.status.as_ref();
    let info = status.and_then(|s| s.node_info.as_ref());
    let address = |type_: &str| -> Value {
        let a = status
            .and_then(|s| s.addresses.as_ref())
            .and_then(|a| a.iter().find(|a| a.type_ == type_));
        a.map_or("<none>".into(), |a| a.address.clone().into())
    };
    let unknown = |s: Option<&String>| -> Value {
        match s.filter(|s| !s.is_empty()) {
            Some(s) => s.clone().into(),
            None => "<unknown>".into(),
        }
    };
    Row::new(vec![
        object.name().into(),
        node_status(node).into(),
        node_roles(node).into(),
        object_age(object, now),
        info.map_or("", |i| i.kubelet_version.as_str()).into(),
        address("InternalIP"),
        address("ExternalIP"),
        unknown(info.map(|i| &i.os_image)),
        unknown(info.map(|i| &i.kernel_version)),
        unknown(info.map(|i| &i.container_runtime_version)),
    ])
}

pub(super) const NAMESPACE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "The status of the namespace"),
    AGE,
];

pub(super) fn namespace_row(object: &Object, now: jiff::Timestamp) -> Row {
    let phase = match object {
        Object::Namespace(ns) => ns.status.as_ref().and_then(|s| s.phase.clone()),
        _ => None,
    };
    Row::new(vec![
        object.name().into(),
        phase.unwrap_or_default().into(),
        object_age(object, now),
    ])
}

const SERVICE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Type", "string", d::SERVICE_SPEC_TYPE),
    Column::new("Cluster-IP", "string", d::SERVICE_SPEC_CLUSTER_IP),
    Column::new("External-IP", "string", d::SERVICE_SPEC_EXTERNAL_IPS),
    Column::new("Port(s)", "string", d::SERVICE_SPEC_PORTS),
    AGE,
    Column::new("Selector", "string", d::SERVICE_SPEC_SELECTOR).wide(),
];

/// EXTERNAL-IP by service type (upstream `getServiceExternalIP`, wide: nothing clipped).
fn service_external_ip(svc: &Service) -> String {
    let spec = svc.spec.clone().unwrap_or_default();
    let external = spec.external_ips.unwrap_or_default();
    match spec.type_.as_deref().unwrap_or("") {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".to_string(),
        "LoadBalancer" => {
            let lb: BTreeSet<String> = svc
                .status
                .as_ref()
                .and_then(|s| s.load_balancer.as_ref())
                .and_then(|lb| lb.ingress.as_ref())
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    let ip = i.ip.clone().filter(|s| !s.is_empty());
                    ip.or_else(|| i.hostname.clone().filter(|s| !s.is_empty()))
                })
                .collect();
            let mut all: Vec<String> = lb.into_iter().collect();
            all.extend(external);
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => spec.external_name.unwrap_or_default(),
        _ => "<unknown>".to_string(),
    }
}

fn service_row(object: &Object, now: jiff::Timestamp) -> Row {
    let svc: Service = decode(object);
    let spec = svc.spec.clone().unwrap_or_default();
    let cluster_ip = spec.cluster_ips.as_ref().and_then(|ips| ips.first());
    let ports: Vec<String> = spec
        .ports
        .iter()
        .flatten()
        .map(|p| {
            let proto = p.protocol.as_deref().unwrap_or("");
            match p.node_port.filter(|&n| n > 0) {
                Some(n) => format!("{}:{n}/{proto}", p.port),
                None => format!("{}/{proto}", p.port),
            }
        })
        .collect();
    Row::new(vec![
        object.name().into(),
        spec.type_.clone().unwrap_or_default().into(),
        or_none(cluster_ip.map_or("", String::as_str)),
        service_external_ip(&svc).into(),
        or_none(&ports.join(",")),
        object_age(object, now),
        format_labels(spec.selector.as_ref()).into(),
    ])
}

const CONFIG_MAP_COLUMNS: &[Column] =
    &[NAME, Column::new("Data", "string", d::CONFIG_MAP_DATA), AGE];

fn config_map_row(object: &Object, now: jiff::Timestamp) -> Row {
    let cm: ConfigMap = decode(object);
    let n = cm.data.map_or(0, |m| m.len()) + cm.binary_data.map_or(0, |m| m.len());
    Row::new(vec![
        object.name().into(),
        n.into(),
        object_age(object, now),
    ])
}

const SECRET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Type", "string", d::SECRET_TYPE),
    Column::new("Data", "string", d::SECRET_DATA),
    AGE,
];

fn secret_row(object: &Object, now: jiff::Timestamp) -> Row {
    let secret: Secret = decode(object);
    Row::new(vec![
        object.name().into(),
        secret.type_.unwrap_or_default().into(),
        secret.data.map_or(0, |m| m.len()).into(),
        object_age(object, now),
    ])
}

const SERVICE_ACCOUNT_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Secrets", "string", d::SERVICE_ACCOUNT_SECRETS),
    AGE,
];

fn service_account_row(object: &Object, now: jiff::Timestamp) -> Row {
    let sa: ServiceAccount = decode(object);
    Row::new(vec![
        object.name().into(),
        sa.secrets.map_or(0, |s| s.len()).into(),
        object_age(object, now),
    ])
}

pub(super) const EVENT_COLUMNS: &[Column] = &[
    Column::new("Last Seen", "string", d::EVENT_LAST_TIMESTAMP),
    Column::new("Type", "string", d::EVENT_TYPE),
    Column::new("Reason", "string", d::EVENT_REASON),
    Column::new("Object", "string", d::EVENT_INVOLVED_OBJECT),
    Column::new("Subobject", "string", d::OBJECT_REFERENCE_FIELD_PATH).wide(),
    Column::new("Source", "string", d::EVENT_SOURCE).wide(),
    Column::new("Message", "string", d::EVENT_MESSAGE),
    Column::new("First Seen", "string", d::EVENT_FIRST_TIMESTAMP).wide(),
    Column::new("Count", "string", d::EVENT_COUNT).wide(),
    NAME.wide(),
];

fn event_row(object: &Object, now: jiff::Timestamp) -> Row {
    let ev: Event = decode(object);
    event_cells(&ev, object.name(), now)
}

/// A core v1 Event's cells (also used for events.k8s.io Events, converted).
pub(super) fn event_cells(ev: &Event, name: &str, now: jiff::Timestamp) -> Row {
    let first = match &ev.first_timestamp {
        Some(t) => since(t.0, now),
        None => ev
            .event_time
            .as_ref()
            .map_or("<unknown>".to_string(), |t| since(t.0, now)),
    };
    let mut last = match &ev.last_timestamp {
        Some(t) => since(t.0, now),
        None => first.clone(),
    };
    let mut count = ev.count.unwrap_or(0);
    if let Some(series) = &ev.series {
        last = series
            .last_observed_time
            .as_ref()
            .map_or("<unknown>".to_string(), |t| since(t.0, now));
        count = series.count.unwrap_or(0);
    } else if count == 0 {
        // Singleton events of the new API have no count.
        count = 1;
    }
    let involved = &ev.involved_object;
    let kind = involved.kind.as_deref().unwrap_or("").to_lowercase();
    let target = match involved.name.as_deref().filter(|n| !n.is_empty()) {
        Some(n) => format!("{kind}/{n}"),
        None => kind,
    };
    let source = ev.source.clone().unwrap_or_default();
    let component = first_non_empty(source.component, ev.reporting_component.clone());
    let instance = first_non_empty(source.host, ev.reporting_instance.clone());
    let source_cell = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    Row::new(vec![
        last.into(),
        ev.type_.clone().unwrap_or_default().into(),
        ev.reason.clone().unwrap_or_default().into(),
        target.into(),
        involved.field_path.clone().unwrap_or_default().into(),
        source_cell.into(),
        ev.message.as_deref().unwrap_or("").trim().into(),
        first.into(),
        count.into(),
        name.into(),
    ])
}

fn first_non_empty(a: Option<String>, b: Option<String>) -> String {
    a.filter(|s| !s.is_empty())
        .or(b.filter(|s| !s.is_empty()))
        .unwrap_or_default()
}

const ENDPOINTS_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Endpoints", "string", d::ENDPOINTS_SUBSETS),
    AGE,
];

/// Upstream `formatEndpoints` for all ports: up to three `ip:port`s, then `+ N more...`.
fn format_endpoints(ep: &Endpoints) -> String {
    let subsets = ep.subsets.as_deref().unwrap_or(&[]);
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    const MAX: usize = 3;
    let (mut list, mut count, mut more) = (Vec::new(), 0, false);
    for ss in subsets {
        let addresses = ss.addresses.as_deref().unwrap_or(&[]);
        let ports = ss.ports.as_deref().unwrap_or(&[]);
        // A headless service may have no ports: its addresses print alone.
        let port_list: Vec<Option<i32>> = if ports.is_empty() {
            vec![None]
        } else {
            ports.iter().map(|p| Some(p.port)).collect()
        };
        for port in port_list {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(match port {
                    Some(p) if a.ip.contains(':') => format!("[{}]:{p}", a.ip),
                    Some(p) => format!("{}:{p}", a.ip),
                    None => a.ip.clone(),
                });
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

fn endpoints_row(object: &Object, now: jiff::Timestamp) -> Row {
    let ep: Endpoints = decode(object);
    Row::new(vec![
        object.name().into(),
        format_endpoints(&ep).into(),
        object_age(object, now),
    ])
}

const PVC_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", d::PVC_STATUS_PHASE),
    Column::new("Volume", "string", d::PVC_SPEC_VOLUME_NAME),
    Column::new("Capacity", "string", d::PVC_STATUS_CAPACITY),
    Column::new("Access Modes", "string", d::PVC_STATUS_ACCESS_MODES),
    Column::new("StorageClass", "string", "StorageClass of the pvc"),
    Column::new(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pvc",
    ),
    AGE,
    Column::new("VolumeMode", "string", d::PVC_SPEC_VOLUME_MODE).wide(),
];

/// Upstream `GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order, each once.
pub(super) fn access_modes(modes: &[String]) -> String {
    let has = |m: &str| modes.iter().any(|x| x == m);
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| has(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

fn pvc_row(object: &Object, now: jiff::Timestamp) -> Row {
    let pvc: PersistentVolumeClaim = decode(object);
    let spec = pvc.spec.clone().unwrap_or_default();
    let status = pvc.status.clone().unwrap_or_default();
    let mut phase = status.phase.clone().unwrap_or_default();
    if object.meta().deletion_timestamp.is_some() {
        phase = "Terminating".to_string();
    }
    let volume = spec.volume_name.clone().unwrap_or_default();
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        let cap = status.capacity.as_ref().and_then(|c| c.get("storage"));
        (
            cap.map_or("0".to_string(), |q| q.0.clone()),
            access_modes(status.access_modes.as_deref().unwrap_or(&[])),
        )
    };
    let class = storage_class(object, spec.storage_class_name.clone());
    let unset = |s: Option<String>| s.unwrap_or_else(|| "<unset>".to_string());
    Row::new(vec![
        object.name().into(),
        phase.into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        class.into(),
        unset(spec.volume_attributes_class_name).into(),
        age(object.meta().creation_timestamp.as_ref(), now).into(),
        unset(spec.volume_mode).into(),
    ])
}

/// The class of a claim or volume: the beta annotation wins over the field, as upstream's
/// `GetPersistentVolumeClaimClass` and `GetPersistentVolumeClass`.
fn storage_class(object: &Object, field: Option<String>) -> String {
    object
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get("volume.beta.kubernetes.io/storage-class").cloned())
        .or(field)
        .unwrap_or_default()
}

const PV_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Capacity", "string", d::PV_SPEC_CAPACITY),
    Column::new("Access Modes", "string", d::PV_SPEC_ACCESS_MODES),
    Column::new("Reclaim Policy", "string", d::PV_SPEC_RECLAIM_POLICY),
    Column::new("Status", "string", d::PV_STATUS_PHASE),
    Column::new("Claim", "string", d::PV_SPEC_CLAIM_REF),
    Column::new("StorageClass", "string", "StorageClass of the pv"),
    Column::new(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pv",
    ),
    Column::new("Reason", "string", d::PV_STATUS_REASON),
    AGE,
    Column::new("VolumeMode", "string", d::PV_SPEC_VOLUME_MODE).wide(),
];

fn pv_row(object: &Object, now: jiff::Timestamp) -> Row {
    let pv: PersistentVolume = decode(object);
    let spec = pv.spec.clone().unwrap_or_default();
    let status = pv.status.clone().unwrap_or_default();
    let claim = spec.claim_ref.as_ref().map_or(String::new(), |c| {
        let ns = c.namespace.as_deref().unwrap_or("");
        format!("{ns}/{}", c.name.as_deref().unwrap_or(""))
    });
    let capacity = spec.capacity.as_ref().and_then(|c| c.get("storage"));
    let mut phase = status.phase.clone().unwrap_or_default();
    if object.meta().deletion_timestamp.is_some() {
        phase = "Terminating".to_string();
    }
    let unset = |s: Option<String>| s.unwrap_or_else(|| "<unset>".to_string());
    Row::new(vec![
        object.name().into(),
        capacity.map_or("0".to_string(), |q| q.0.clone()).into(),
        access_modes(spec.access_modes.as_deref().unwrap_or(&[])).into(),
        spec.persistent_volume_reclaim_policy
            .clone()
            .unwrap_or_default()
            .into(),
        phase.into(),
        claim.into(),
        storage_class(object, spec.storage_class_name.clone()).into(),
        unset(spec.volume_attributes_class_name).into(),
        status.reason.unwrap_or_default().into(),
        object_age(object, now),
        unset(spec.volume_mode).into(),
    ])
}

const RC_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Desired", "integer", d::RC_SPEC_REPLICAS),
    Column::new("Current", "integer", d::RC_STATUS_REPLICAS),
    Column::new("Ready", "integer", d::RC_STATUS_READY_REPLICAS),
    AGE,
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", d::RC_SPEC_SELECTOR).wide(),
];

fn rc_row(object: &Object, now: jiff::Timestamp) -> Row {
    let rc: ReplicationController = decode(object);
    let spec = rc.spec.unwrap_or_default();
    let status = rc.status.unwrap_or_default();
    let pod_spec = spec.template.as_ref().and_then(|t| t.spec.as_ref());
    let (containers, images) = container_cells(pod_spec);
    Row::new(vec![
        object.name().into(),
        // An unset replicas is the defaulted 1 the API server would have stored.
        spec.replicas.unwrap_or(1).into(),
        status.replicas.into(),
        status.ready_replicas.unwrap_or(0).into(),
        object_age(object, now),
        containers,
        images,
        format_labels(spec.selector.as_ref()).into(),
    ])
}

const POD_TEMPLATE_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Containers",
        "string",
        "Names of each container in the template.",
    ),
    Column::new(
        "Images",
        "string",
        "Images referenced by each container in the template.",
    ),
    Column::new("Pod Labels", "string", "The labels for the pod template."),
];

fn pod_template_row(object: &Object, _now: jiff::Timestamp) -> Row {
    let pt: PodTemplate = decode(object);
    let template = pt.template.unwrap_or_default();
    let (containers, images) = container_cells(template.spec.as_ref());
    let labels = template.metadata.and_then(|m| m.labels);
    Row::new(vec![
        object.name().into(),
        containers,
        images,
        format_labels(labels.as_ref()).into(),
    ])
}

//! The printers of the smaller groups: policy (`printPodDisruptionBudget`), scheduling
//! (`printPriorityClass`), coordination (`printLease`), networking (`printIngress`), rbac
//! (`printRoleBinding`, `printClusterRoleBinding`), autoscaling
//! (`printHorizontalPodAutoscaler`), and events.k8s.io Events, which upstream prints with
//! the core Event's printer after converting them.

use std::collections::BTreeSet;

use k8s_openapi::api::autoscaling::v2::{
    HorizontalPodAutoscaler, MetricSpec, MetricStatus, MetricTarget, MetricValueStatus,
};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::rbac::v1::{RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubeplane_api::Object;
use serde_json::{json, Value};

use super::core::{event_cells, EVENT_COLUMNS};
use super::descriptions as d;
use super::{decode, object_age, Column, Entry, Row, AGE, NAME};

/// The printer of a kind of one of these groups stored as [`Object::Other`].
pub(super) fn printer(group: &str, kind: &str) -> Option<Entry> {
    Some(match (group, kind) {
        ("networking.k8s.io", "Ingress") => (INGRESS_COLUMNS, ingress_row),
        ("rbac.authorization.k8s.io", "RoleBinding") => (ROLE_BINDING_COLUMNS, binding_row),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            (CLUSTER_ROLE_BINDING_COLUMNS, binding_row)
        }
        ("autoscaling", "HorizontalPodAutoscaler") => (HPA_COLUMNS, hpa_row),
        ("events.k8s.io", "Event") => (EVENT_COLUMNS, events_event_row),
        _ => return None,
    })
}

pub(super) const PDB_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
    ),
    Column::new(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
    ),
    Column::new(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
];

fn int_or_string(v: Option<&IntOrString>) -> String {
    match v {
        Some(IntOrString::Int(i)) => i.to_string(),
        Some(IntOrString::String(s)) => s.clone(),
        None => "N/A".to_string(),
    }
}

pub(super) fn pdb_row(object: &Object, now: jiff::Timestamp) -> Row {
    let Object::PodDisruptionBudget(pdb) = object else {
        return Row::default();
    };
    let spec = pdb.spec.clone().unwrap_or_default();
    let allowed = pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed);
    Row::new(vec![
        object.name().into(),
        int_or_string(spec.min_available.as_ref()).into(),
        int_or_string(spec.max_unavailable.as_ref()).into(),
        allowed.into(),
        object_age(object, now),
    ])
}

pub(super) const PRIORITY_CLASS_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Value", "integer", d::PRIORITY_CLASS_VALUE),
    Column::new(
        "Global-Default",
        "boolean",
        d::PRIORITY_CLASS_GLOBAL_DEFAULT,
    ),
    AGE,
    Column::new(
        "PreemptionPolicy",
        "string",
        d::PRIORITY_CLASS_PREEMPTION_POLICY,
    ),
];

pub(super) fn priority_class_row(object: &Object, now: jiff::Timestamp) -> Row {
    let Object::PriorityClass(pc) = object else {
        return Row::default();
    };
    Row::new(vec![
        object.name().into(),
        pc.value.into(),
        pc.global_default.unwrap_or(false).into(),
        object_age(object, now),
        pc.preemption_policy.clone().unwrap_or_default().into(),
    ])
}

pub(super) const LEASE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Holder", "string", d::LEASE_SPEC_HOLDER_IDENTITY),
    AGE,
];

pub(super) fn lease_row(object: &Object, now: jiff::Timestamp) -> Row {
    let holder = match object {
        Object::Lease(l) => l.spec.as_ref().and_then(|s| s.holder_identity.clone()),
        _ => None,
    };
    Row::new(vec![
        object.name().into(),
        holder.unwrap_or_default().into(),
        object_age(object, now),
    ])
}

const INGRESS_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used for additional configuration",
    ),
    Column::new(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    Column::new(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer",
    ),
    Column::new("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
];

/// Upstream `formatHosts`: the first three hosts, `+ N more...`, `*` when none is named.
pub(super) fn ingress_hosts(ing: &Ingress) -> String {
    const MAX: usize = 3;
    let rules = ing
        .spec
        .as_ref()
        .and_then(|s| s.rules.as_deref())
        .unwrap_or(&[]);
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        match rule.host.as_deref() {
            Some(h) if !more && !h.is_empty() => list.push(h),
            _ => {}
        }
    }
    if list.is_empty() {
        return "*".to_string();
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", rules.len() - MAX)
    } else {
        joined
    }
}

fn ingress_row(object: &Object, now: jiff::Timestamp) -> Row {
    let ing: Ingress = decode(object);
    let addresses: BTreeSet<String> = ing
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
    let spec = ing.spec.clone().unwrap_or_default();
    let ports = if spec.tls.as_ref().is_some_and(|t| !t.is_empty()) {
        "80, 443"
    } else {
        "80"
    };
    Row::new(vec![
        object.name().into(),
        spec.ingress_class_name
            .unwrap_or_else(|| "<none>".to_string())
            .into(),
        ingress_hosts(&ing).into(),
        addresses.into_iter().collect::<Vec<_>>().join(",").into(),
        ports.into(),
        object_age(object, now),
    ])
}

const ROLE_BINDING_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Role", "string", d::ROLE_BINDING_ROLE_REF),
    AGE,
    Column::new("Users", "string", "Users in the roleBinding").wide(),
    Column::new("Groups", "string", "Groups in the roleBinding").wide(),
    Column::new(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the roleBinding",
    )
    .wide(),
];

const CLUSTER_ROLE_BINDING_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Role", "string", d::CLUSTER_ROLE_BINDING_ROLE_REF),
    AGE,
    Column::new("Users", "string", "Users in the clusterRoleBinding").wide(),
    Column::new("Groups", "string", "Groups in the clusterRoleBinding").wide(),
    Column::new(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the clusterRoleBinding",
    )
    .wide(),
];

/// Upstream `rbac.SubjectsStrings`: users, groups and `namespace/name` service accounts.
fn subjects(subjects: &[Subject]) -> (String, String, String) {
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for s in subjects {
        match s.kind.as_str() {
            "ServiceAccount" => {
                let ns = s.namespace.as_deref().unwrap_or("");
                sas.push(format!("{ns}/{}", s.name));
            }
            "User" => users.push(s.name.clone()),
            "Group" => groups.push(s.name.clone()),
            _ => {}
        }
    }
    (users.join(", "), groups.join(", "), sas.join(", "))
}

/// A RoleBinding's or ClusterRoleBinding's row (the two have the same shape, read field by
/// field since k8s-openapi checks `kind` when it decodes a whole object).
fn binding_row(object: &Object, now: jiff::Timestamp) -> Row {
    let Object::Other(o) = object else {
        return Row::default();
    };
    let role_ref: RoleRef = o
        .field("roleRef")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let list: Vec<Subject> = o
        .field("subjects")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let (users, groups, sas) = subjects(&list);
    Row::new(vec![
        object.name().into(),
        format!("{}/{}", role_ref.kind, role_ref.name).into(),
        object_age(object, now),
        users.into(),
        groups.into(),
        sas.into(),
    ])
}

const HPA_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Reference", "string", d::HPA_SPEC_SCALE_TARGET_REF),
    Column::new("Targets", "string", d::HPA_SPEC_METRICS),
    Column::new("MinPods", "string", d::HPA_SPEC_MIN_REPLICAS),
    Column::new("MaxPods", "string", d::HPA_SPEC_MAX_REPLICAS),
    Column::new("Replicas", "string", d::HPA_STATUS_CURRENT_REPLICAS),
    AGE,
];

/// An `autoscaling/v1` HPA as the v2 shape upstream's internal type has: its CPU target and
/// current utilization become one Resource metric.
fn hpa_from_v1(v1: &Value) -> HorizontalPodAutoscaler {
    let mut v = v1.clone();
    // k8s-openapi checks apiVersion when it decodes.
    v["apiVersion"] = "autoscaling/v2".into();
    let target = v1.pointer("/spec/targetCPUUtilizationPercentage").cloned();
    let current = v1
        .pointer("/status/currentCPUUtilizationPercentage")
        .cloned();
    if let Some(t) = target {
        v["spec"]["metrics"] = json!([{ "type": "Resource", "resource": {
            "name": "cpu", "target": { "type": "Utilization", "averageUtilization": t } } }]);
    }
    if let (Some(c), Some(status)) = (current, v.get_mut("status")) {
        status["currentMetrics"] = json!([{ "type": "Resource", "resource": {
            "name": "cpu", "current": { "averageUtilization": c } } }]);
    }
    serde_json::from_value(v).unwrap_or_default()
}

const UNKNOWN: &str = "<unknown>";

/// A quantity as stored, `<unknown>` when absent.
fn quantity(q: Option<&Quantity>) -> String {
    q.map_or(UNKNOWN.to_string(), |q| q.0.clone())
}

/// `current/target (avg)` for an average-value target, else `current/target` of the value.
fn value_or_average(target: &MetricTarget, current: Option<&MetricValueStatus>) -> String {
    if target.average_value.is_some() {
        let avg = current.and_then(|c| c.average_value.as_ref());
        let t = quantity(target.average_value.as_ref());
        format!("{}/{t} (avg)", quantity(avg))
    } else {
        let val = current.map_or(UNKNOWN.to_string(), |c| quantity(c.value.as_ref()));
        format!("{val}/{}", quantity(target.value.as_ref()))
    }
}

/// `name: current/target` of a (container) resource metric: values, or utilizations in
/// percent (`<auto>` without a target utilization).
fn resource_metric(
    name: &str,
    target: &MetricTarget,
    current: Option<&MetricValueStatus>,
) -> String {
    if target.average_value.is_some() {
        let avg = current.map_or(UNKNOWN.to_string(), |c| quantity(c.average_value.as_ref()));
        format!("{name}: {avg}/{}", quantity(target.average_value.as_ref()))
    } else {
        let util = current.and_then(|c| c.average_utilization);
        let cur = util.map_or(UNKNOWN.to_string(), |p| format!("{p}%"));
        let t = target
            .average_utilization
            .map_or("<auto>".to_string(), |p| format!("{p}%"));
        format!("{name}: {cur}/{t}")
    }
}

/// `current/target` of one metric (upstream `formatHPAMetrics`' cases).
fn hpa_metric(spec: &MetricSpec, status: Option<&MetricStatus>) -> String {
    let unknown_type = || "<unknown type>".to_string();
    match spec.type_.as_str() {
        "External" => spec.external.as_ref().map_or_else(unknown_type, |e| {
            let cur = status.and_then(|s| s.external.as_ref()).map(|s| &s.current);
            value_or_average(&e.target, cur)
        }),
        "Object" => spec.object.as_ref().map_or_else(unknown_type, |o| {
            let cur = status.and_then(|s| s.object.as_ref()).map(|s| &s.current);
            value_or_average(&o.target, cur)
        }),
        "Pods" => spec.pods.as_ref().map_or_else(unknown_type, |p| {
            let cur = status.and_then(|s| s.pods.as_ref()).map(|s| &s.current);
            let current = cur.map_or(UNKNOWN.to_string(), |c| quantity(c.average_value.as_ref()));
            format!("{current}/{}", quantity(p.target.average_value.as_ref()))
        }),
        "Resource" => spec.resource.as_ref().map_or_else(unknown_type, |r| {
            let cur = status.and_then(|s| s.resource.as_ref()).map(|s| &s.current);
            resource_metric(&r.name, &r.target, cur)
        }),
        "ContainerResource" => spec
            .container_resource
            .as_ref()
            .map_or_else(unknown_type, |r| {
                let cur = status
                    .and_then(|s| s.container_resource.as_ref())
                    .map(|s| &s.current);
                resource_metric(&r.name, &r.target, cur)
            }),
        _ => unknown_type(),
    }
}

/// Upstream `formatHPAMetrics`: the first two metrics, `+ N more...`, `<none>` without any.
pub(super) fn hpa_targets(hpa: &HorizontalPodAutoscaler) -> String {
    let specs = hpa
        .spec
        .as_ref()
        .and_then(|s| s.metrics.as_deref())
        .unwrap_or(&[]);
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let statuses = hpa
        .status
        .as_ref()
        .and_then(|s| s.current_metrics.as_deref())
        .unwrap_or(&[]);
    const MAX: usize = 2;
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| hpa_metric(spec, statuses.get(i)))
        .collect();
    if list.len() > MAX {
        format!("{} + {} more...", list[..MAX].join(", "), list.len() - MAX)
    } else {
        list.join(", ")
    }
}

fn hpa_row(object: &Object, now: jiff::Timestamp) -> Row {
    let json = object.to_json();
    let hpa: HorizontalPodAutoscaler = match json["apiVersion"].as_str() {
        Some("autoscaling/v1") => hpa_from_v1(&json),
        _ => serde_json::from_value(json).unwrap_or_default(),
    };
    let spec = hpa.spec.clone().unwrap_or_default();
    let current = hpa
        .status
        .as_ref()
        .and_then(|s| s.current_replicas)
        .unwrap_or(0);
    let min = spec
        .min_replicas
        .map_or("<unset>".to_string(), |m| m.to_string());
    Row::new(vec![
        object.name().into(),
        format!(
            "{}/{}",
            spec.scale_target_ref.kind, spec.scale_target_ref.name
        )
        .into(),
        hpa_targets(&hpa).into(),
        min.into(),
        spec.max_replicas.into(),
        current.into(),
        object_age(object, now),
    ])
}

/// An events.k8s.io/v1 Event as the core v1 Event it is stored as upstream.
fn core_event(ev: &Value) -> Event {
    let mut core = json!({});
    let moves = [
        ("regarding", "involvedObject"),
        ("note", "message"),
        ("reason", "reason"),
        ("type", "type"),
        ("deprecatedSource", "source"),
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
        ("eventTime", "eventTime"),
        ("series", "series"),
        ("reportingController", "reportingComponent"),
        ("reportingInstance", "reportingInstance"),
    ];
    for (from, to) in moves {
        if let Some(v) = ev.get(from).filter(|v| !v.is_null()) {
            core[to] = v.clone();
        }
    }
    if core.get("involvedObject").is_none() {
        core["involvedObject"] = json!({});
    }
    core["metadata"] = json!({});
    serde_json::from_value(core).unwrap_or_default()
}

fn events_event_row(object: &Object, now: jiff::Timestamp) -> Row {
    event_cells(&core_event(&object.to_json()), object.name(), now)
}

//! The printers of networking.k8s.io's IngressClass and NetworkPolicy, discovery.k8s.io's
//! EndpointSlice, the admission webhook configurations and node.k8s.io's RuntimeClass
//! (upstream `printIngressClass`, `printNetworkPolicy`, `printEndpointSlice`,
//! `printMutatingWebhook`, `printValidatingWebhook`, `printRuntimeClass`).

use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{IngressClass, NetworkPolicy};
use kubeplane_api::Object;

use super::descriptions as d;
use super::{decode, format_label_selector, object_age, Column, Entry, Row, AGE, NAME};

/// The printer of one of these kinds.
pub(super) fn printer(group: &str, kind: &str) -> Option<Entry> {
    Some(match (group, kind) {
        ("networking.k8s.io", "IngressClass") => (INGRESS_CLASS_COLUMNS, ingress_class_row),
        ("networking.k8s.io", "NetworkPolicy") => (NETWORK_POLICY_COLUMNS, network_policy_row),
        ("discovery.k8s.io", "EndpointSlice") => (ENDPOINT_SLICE_COLUMNS, endpoint_slice_row),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration")
        | ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            (WEBHOOK_COLUMNS, webhook_row)
        }
        ("node.k8s.io", "RuntimeClass") => (RUNTIME_CLASS_COLUMNS, runtime_class_row),
        _ => return None,
    })
}

const INGRESS_CLASS_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
    ),
    Column::new(
        "Parameters",
        "string",
        "A reference to a resource with additional parameters",
    ),
    AGE,
];

fn ingress_class_row(object: &Object, now: jiff::Timestamp) -> Row {
    let ic: IngressClass = decode(object);
    let spec = ic.spec.unwrap_or_default();
    let parameters = spec.parameters.map_or("<none>".to_string(), |p| {
        let kind = match p.api_group {
            Some(group) => format!("{}.{group}", p.kind),
            None => p.kind,
        };
        format!("{kind}/{}", p.name)
    });
    Row::new(vec![
        object.name().into(),
        spec.controller.unwrap_or_default().into(),
        parameters.into(),
        object_age(object, now),
    ])
}

const NETWORK_POLICY_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Pod-Selector",
        "string",
        d::NETWORK_POLICY_SPEC_POD_SELECTOR,
    ),
    AGE,
];

fn network_policy_row(object: &Object, now: jiff::Timestamp) -> Row {
    let np: NetworkPolicy = decode(object);
    let selector = np.spec.and_then(|s| s.pod_selector).unwrap_or_default();
    Row::new(vec![
        object.name().into(),
        format_label_selector(Some(&selector)).into(),
        object_age(object, now),
    ])
}

const ENDPOINT_SLICE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("AddressType", "string", d::ENDPOINT_SLICE_ADDRESS_TYPE),
    Column::new("Ports", "string", d::ENDPOINT_SLICE_PORTS),
    Column::new("Endpoints", "string", d::ENDPOINT_SLICE_ENDPOINTS),
    AGE,
];

/// Upstream `listWithMoreString`: the first three, `+ N more...`, `<unset>` when empty.
fn list_with_more(items: Vec<String>) -> String {
    const MAX: usize = 3;
    if items.len() > MAX {
        format!("{} + {} more...", items[..MAX].join(","), items.len() - MAX)
    } else if items.is_empty() {
        "<unset>".to_string()
    } else {
        items.join(",")
    }
}

fn endpoint_slice_row(object: &Object, now: jiff::Timestamp) -> Row {
    let es: EndpointSlice = decode(object);
    let ports: Vec<String> = es
        .ports
        .iter()
        .flatten()
        .map(|p| match (p.port, &p.name) {
            (Some(port), _) => port.to_string(),
            (None, Some(name)) => name.clone(),
            (None, None) => "*".to_string(),
        })
        .collect();
    let addresses: Vec<String> = es
        .endpoints
        .iter()
        .flat_map(|e| e.addresses.iter().cloned())
        .collect();
    Row::new(vec![
        object.name().into(),
        es.address_type.into(),
        list_with_more(ports).into(),
        list_with_more(addresses).into(),
        object_age(object, now),
    ])
}

const WEBHOOK_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE,
];

fn webhook_row(object: &Object, now: jiff::Timestamp) -> Row {
    let n = match object {
        Object::Other(o) => o
            .field("webhooks")
            .and_then(|w| w.as_array())
            .map_or(0, Vec::len),
        _ => 0,
    };
    Row::new(vec![
        object.name().into(),
        n.into(),
        object_age(object, now),
    ])
}

const RUNTIME_CLASS_COLUMNS: &[Column] = &[
    NAME,
    // Upstream looks `handler` up in ObjectMeta's documentation, which has no such key.
    Column::new("Handler", "string", ""),
    AGE,
];

fn runtime_class_row(object: &Object, now: jiff::Timestamp) -> Row {
    let handler = match object {
        Object::Other(o) => o.field("handler").and_then(|h| h.as_str()).unwrap_or(""),
        _ => "",
    };
    Row::new(vec![
        object.name().into(),
        handler.into(),
        object_age(object, now),
    ])
}

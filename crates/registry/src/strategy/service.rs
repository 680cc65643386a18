//! Services and Secrets, which kubeplane stores without a controller, get what kube-apiserver
//! gives them on the way in: the defaults of `SetDefaults_Service` and `SetDefaults_Secret`
//! (pkg/apis/core/v1/defaults.go), an empty status, and for a Service its cluster IP and node
//! ports from the service REST's allocators (pkg/registry/core/service/storage/alloc.go).
//!
//! The ranges are kubeadm's and kind's defaults: cluster IPs from 10.96.0.0/12, the first of
//! them kept for the `kubernetes` Service; node ports from 30000-32767. As upstream's
//! allocators (KEP-3070, KEP-3668) do, a dynamic allocation draws from the upper part of the
//! range first, leaving the lower band to the values users ask for; the draws come from the
//! registry's seeded source. What is taken is read from the stored Services (kubeplane keeps
//! no IPAddress objects or allocation bitmaps; docs/compatibility.md).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use kubeplane_api::{ApiError, DynamicObject, ObjectKey};
use serde_json::{json, Map, Value};

/// The service cluster IP range: 10.96.0.0/12.
pub const SERVICE_CIDR: (Ipv4Addr, u8) = (Ipv4Addr::new(10, 96, 0, 0), 12);

/// The address of the `kubernetes` Service (the range's first).
pub const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);

/// `--service-node-port-range`'s default.
pub const NODE_PORTS: (u32, u32) = (30000, 32767);

/// The seconds of `sessionAffinityConfig.clientIP` (`DefaultClientIPServiceAffinitySeconds`).
const CLIENT_IP_AFFINITY_SECONDS: i64 = 10800;

/// Whether the object is a core `v1` Service.
pub fn is_service(o: &DynamicObject) -> bool {
    (o.type_.group, o.type_.plural) == ("", "services")
}

fn is_secret(o: &DynamicObject) -> bool {
    (o.type_.group, o.type_.plural) == ("", "secrets")
}

/// Whether the object is a kind this module defaults (a Service or a Secret).
pub fn is_defaulted(o: &DynamicObject) -> bool {
    is_service(o) || is_secret(o)
}

/// The defaults a Service or Secret gets on every write (upstream defaults on decoding).
pub fn set_defaults(o: &mut DynamicObject) {
    if is_secret(o) && o.field("type").is_none_or(|t| t.as_str() == Some("")) {
        o.fields.insert("type".into(), json!("Opaque"));
    }
    if is_service(o) {
        let spec = o
            .fields
            .entry("spec")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(spec) = spec {
            service_defaults(spec);
        }
    }
}

fn str_of<'a>(spec: &'a Map<String, Value>, field: &str) -> &'a str {
    spec.get(field).and_then(Value::as_str).unwrap_or("")
}

fn service_defaults(spec: &mut Map<String, Value>) {
    if str_of(spec, "sessionAffinity").is_empty() {
        spec.insert("sessionAffinity".into(), json!("None"));
    }
    match str_of(spec, "sessionAffinity") {
        "None" => {
            spec.remove("sessionAffinityConfig");
        }
        "ClientIP" => {
            let timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"));
            if timeout.is_none_or(Value::is_null) {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": CLIENT_IP_AFFINITY_SECONDS}}),
                );
            }
        }
        _ => {}
    }
    if str_of(spec, "type").is_empty() {
        spec.insert("type".into(), json!("ClusterIP"));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        ports
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .for_each(port_defaults);
    }
    let type_ = str_of(spec, "type").to_string();
    let external = type_ == "NodePort" || type_ == "LoadBalancer";
    if external && str_of(spec, "externalTrafficPolicy").is_empty() {
        spec.insert("externalTrafficPolicy".into(), json!("Cluster"));
    }
    if (external || type_ == "ClusterIP") && spec.get("internalTrafficPolicy").is_none() {
        spec.insert("internalTrafficPolicy".into(), json!("Cluster"));
    }
    if type_ == "LoadBalancer" && spec.get("allocateLoadBalancerNodePorts").is_none() {
        spec.insert("allocateLoadBalancerNodePorts".into(), json!(true));
    }
}

fn port_defaults(port: &mut Map<String, Value>) {
    if str_of(port, "protocol").is_empty() {
        port.insert("protocol".into(), json!("TCP"));
    }
    let unset = match port.get("targetPort") {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_i64() == Some(0),
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    };
    if unset {
        if let Some(p) = port.get("port").cloned() {
            port.insert("targetPort".into(), p);
        }
    }
}

/// What the stored Services hold: their cluster IPs and node ports.
#[derive(Default)]
pub struct Taken {
    ips: BTreeSet<u32>,
    ports: BTreeSet<u32>,
}

impl Taken {
    /// What `services` hold (a Service being updated is left out by the caller).
    pub fn of<'a>(services: impl IntoIterator<Item = &'a DynamicObject>) -> Taken {
        let mut taken = Taken::default();
        for s in services {
            let spec = s.field("spec");
            for ip in cluster_ips(spec) {
                if let Ok(a) = ip.parse::<Ipv4Addr>() {
                    taken.ips.insert(u32::from(a));
                }
            }
            for (_, port) in node_ports(spec) {
                taken.ports.insert(port);
            }
        }
        taken
    }
}

fn cluster_ips(spec: Option<&Value>) -> Vec<String> {
    let Some(spec) = spec else {
        return Vec::new();
    };
    let mut ips: Vec<String> = spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if let Some(ip) = spec.get("clusterIP").and_then(Value::as_str) {
        if !ip.is_empty() && !ips.iter().any(|i| i == ip) {
            ips.insert(0, ip.to_string());
        }
    }
    ips
}

/// Each port's index and node port (where one is set).
fn node_ports(spec: Option<&Value>) -> Vec<(usize, u32)> {
    spec.and_then(|s| s.get("ports"))
        .and_then(Value::as_array)
        .map(|ports| {
            ports
                .iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    let n = p.get("nodePort").and_then(Value::as_u64)?;
                    (n != 0).then_some((i, n as u32))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A seeded draw in `0..n`.
pub type Draw<'a> = &'a mut dyn FnMut(u64) -> u64;

fn invalid(key: &ObjectKey, field: &str, value: &str, why: &str) -> ApiError {
    ApiError::Invalid {
        key: key.clone(),
        message: format!("{field}: Invalid value: {value}: {why}"),
    }
}

/// The first free value of `lo..=hi` after a seeded start in the upper band (from `lo +
/// offset`), then in the lower band: upstream's allocators prefer the upper band.
fn draw_free(lo: u32, hi: u32, offset: u32, taken: &BTreeSet<u32>, draw: Draw) -> Option<u32> {
    let upper = lo + offset.min(hi - lo);
    let span = (hi - upper + 1) as u64;
    let start = upper + draw(span) as u32;
    (start..=hi)
        .chain(upper..start)
        .chain(lo..upper)
        .find(|v| !taken.contains(v))
}

/// Gives a new Service its cluster IP (unless headless, an ExternalName or one it names) and
/// its node ports (NodePort, and LoadBalancer unless `allocateLoadBalancerNodePorts` is
/// false); refuses values outside the ranges or taken, with upstream's messages.
pub fn allocate(o: &mut DynamicObject, taken: &Taken, draw: Draw) -> Result<(), ApiError> {
    let key = ObjectKey::new(
        kubeplane_api::Kind::Other(o.type_),
        o.metadata.namespace.as_deref().unwrap_or(""),
        o.metadata.name.as_deref().unwrap_or(""),
    );
    let Some(spec) = o.fields.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let type_ = str_of(spec, "type").to_string();
    if type_ != "ExternalName" {
        allocate_ip(&key, spec, taken, draw)?;
    }
    let wants_ports = type_ == "NodePort"
        || (type_ == "LoadBalancer"
            && spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)));
    if wants_ports {
        allocate_ports(&key, spec, taken, draw)?;
    }
    Ok(())
}

fn allocate_ip(
    key: &ObjectKey,
    spec: &mut Map<String, Value>,
    taken: &Taken,
    draw: Draw,
) -> Result<(), ApiError> {
    let (base, bits) = SERVICE_CIDR;
    let lo = u32::from(base) + 1;
    let hi = u32::from(base) + (1u32 << (32 - bits)) - 2;
    let asked = cluster_ips(Some(&Value::Object(spec.clone())));
    let ip = match asked.first().map(String::as_str) {
        Some("None") => {
            spec.insert("clusterIPs".into(), json!(["None"]));
            return Ok(());
        }
        Some(ip) => {
            let field = "spec.clusterIPs";
            let shown = format!("[]string{{\"{ip}\"}}");
            let a: Ipv4Addr = ip.parse().map_err(|_| {
                invalid(
                    key,
                    "spec.clusterIPs[0]",
                    &format!("\"{ip}\""),
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )
            })?;
            let n = u32::from(a);
            if n < lo || n > hi {
                return Err(invalid(key, field, &shown, &format!("failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {base}/{bits}")));
            }
            if taken.ips.contains(&n) {
                return Err(invalid(
                    key,
                    field,
                    &shown,
                    &format!("failed to allocate IP {ip}: provided IP is already allocated"),
                ));
            }
            a
        }
        None => {
            let offset = ((hi - lo + 1) / 16).clamp(16, 256);
            let n = draw_free(lo, hi, offset, &taken.ips, draw).ok_or_else(|| {
                invalid(
                    key,
                    "spec.clusterIPs",
                    "[]string{}",
                    "failed to allocate IP: range is full",
                )
            })?;
            Ipv4Addr::from(n)
        }
    };
    spec.insert("clusterIP".into(), json!(ip.to_string()));
    spec.insert("clusterIPs".into(), json!([ip.to_string()]));
    spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
    spec.entry("ipFamilyPolicy")
        .or_insert_with(|| json!("SingleStack"));
    Ok(())
}

fn allocate_ports(
    key: &ObjectKey,
    spec: &mut Map<String, Value>,
    taken: &Taken,
    draw: Draw,
) -> Result<(), ApiError> {
    let (lo, hi) = NODE_PORTS;
    let mut used = taken.ports.clone();
    let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for (i, port) in ports.iter_mut().enumerate() {
        let asked = port.get("nodePort").and_then(Value::as_u64).unwrap_or(0) as u32;
        let field = format!("spec.ports[{i}].nodePort");
        let n = if asked != 0 {
            if asked < lo || asked > hi {
                return Err(invalid(key, &field, &asked.to_string(), &format!("provided port is not in the valid range. The range of valid ports is {lo}-{hi}")));
            }
            if used.contains(&asked) {
                return Err(invalid(
                    key,
                    &field,
                    &asked.to_string(),
                    "provided port is already allocated",
                ));
            }
            asked
        } else {
            let offset = ((hi - lo + 1) / 32).clamp(16, 128);
            draw_free(lo, hi, offset, &used, draw).ok_or_else(|| {
                invalid(
                    key,
                    &field,
                    "0",
                    "failed to allocate a nodePort: range is full",
                )
            })?
        };
        used.insert(n);
        if let Some(p) = port.as_object_mut() {
            p.insert("nodePort".into(), json!(n));
        }
    }
    Ok(())
}

/// The status a new Service starts with (`PrepareForCreate` clears it).
pub fn prepare_for_create(o: &mut DynamicObject) {
    if is_service(o) {
        o.fields
            .insert("status".into(), json!({"loadBalancer": {}}));
    }
}

/// An update that leaves out what was allocated keeps it (upstream's
/// `patchAllocatedValues`: `kubectl replace` of a manifest without a clusterIP), and the
/// cluster IPs may not change once set.
pub fn prepare_for_update(old: &DynamicObject, new: &mut DynamicObject) -> Result<(), ApiError> {
    if !is_service(old) {
        return Ok(());
    }
    let old_spec = old.field("spec").cloned().unwrap_or_default();
    let key = ObjectKey::new(
        kubeplane_api::Kind::Other(new.type_),
        new.metadata.namespace.as_deref().unwrap_or(""),
        new.metadata.name.as_deref().unwrap_or(""),
    );
    let Some(spec) = new.fields.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let same_type = old_spec.get("type") == spec.get("type");
    let old_ips = cluster_ips(Some(&old_spec));
    if same_type
        && cluster_ips(Some(&Value::Object(spec.clone()))).is_empty()
        && !old_ips.is_empty()
    {
        spec.insert("clusterIP".into(), json!(old_ips[0]));
        spec.insert("clusterIPs".into(), json!(old_ips));
        for f in ["ipFamilies", "ipFamilyPolicy"] {
            if let (None, Some(v)) = (spec.get(f), old_spec.get(f)) {
                spec.insert(f.into(), v.clone());
            }
        }
    }
    let new_ips = cluster_ips(Some(&Value::Object(spec.clone())));
    if same_type && !old_ips.is_empty() && new_ips != old_ips {
        return Err(invalid(
            &key,
            "spec.clusterIPs[0]",
            &format!(
                "[]string{{{}}}",
                new_ips
                    .iter()
                    .map(|i| format!("\"{i}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "may not change once set",
        ));
    }
    if same_type {
        keep_node_ports(&old_spec, spec);
    }
    Ok(())
}

/// A port left without a node port keeps the one its namesake (same port and protocol) had.
fn keep_node_ports(old_spec: &Value, spec: &mut Map<String, Value>) {
    let old_ports = old_spec
        .get("ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) else {
        return;
    };
    for p in ports.iter_mut().filter_map(Value::as_object_mut) {
        if p.get("nodePort").and_then(Value::as_u64).unwrap_or(0) != 0 {
            continue;
        }
        let same = old_ports.iter().find(|o| {
            o.get("port") == p.get("port")
                && o.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                    == p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
        });
        if let Some(n) = same
            .and_then(|o| o.get("nodePort"))
            .filter(|n| n.as_u64().unwrap_or(0) != 0)
        {
            p.insert("nodePort".into(), n.clone());
        }
    }
}

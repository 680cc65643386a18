//! Pod and host IPs, as a kubelet and its network plugin report them: `kubeplane serve`'s
//! agents set them (`kubectl get pods -o wide` shows an IP), `simulate`'s do not (its output
//! stays as it was).
//!
//! The host IP is the Node's first `InternalIP` address, else one made up in kind's node
//! network (172.18.0.0/16, by the node's index). The pod IP comes from the Node's
//! `spec.podCIDR` when it has an IPv4 one, else from kind's pod network (10.244.N.0/24 for
//! the node of index N), handed out in turn from the subnet's second address and wrapping
//! after its last.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::{HostIP, Node, PodIP, PodStatus};

/// The next host part each node hands out.
#[derive(Clone, Debug, Default)]
pub struct PodIps {
    next: HashMap<usize, u32>,
}

/// The Node's first InternalIP, or one made up from its index.
fn host_ip(index: usize, node: Option<&Node>) -> String {
    let internal = node
        .and_then(|n| n.status.as_ref())
        .and_then(|s| s.addresses.as_ref())
        .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
        .map(|a| a.address.clone());
    internal.unwrap_or_else(|| {
        let n = index as u32 + 2;
        Ipv4Addr::new(172, 18, (n / 256) as u8, (n % 256) as u8).to_string()
    })
}

/// The node's pod subnet: its IPv4 `spec.podCIDR`, else 10.244.index.0/24.
fn subnet(index: usize, node: Option<&Node>) -> (u32, u32) {
    let cidr = node
        .and_then(|n| n.spec.as_ref())
        .and_then(|s| s.pod_cidr.as_deref())
        .and_then(|c| c.split_once('/'))
        .and_then(|(ip, bits)| Some((ip.parse::<Ipv4Addr>().ok()?, bits.parse::<u32>().ok()?)))
        .filter(|(_, bits)| (8..=30).contains(bits));
    match cidr {
        Some((ip, bits)) => {
            let size = 1u32 << (32 - bits);
            (u32::from(ip) & !(size - 1), size)
        }
        None => {
            let base = u32::from(Ipv4Addr::new(10, 244, 0, 0)) + ((index as u32 % 256) << 8);
            (base, 256)
        }
    }
}

impl PodIps {
    /// Sets the pod's `hostIP(s)` and `podIP(s)` for a start on the node of `index`.
    pub fn assign(&mut self, index: usize, node: Option<&Node>, status: &mut PodStatus) {
        let host = host_ip(index, node);
        let (base, size) = subnet(index, node);
        let next = self.next.entry(index).or_insert(2);
        if *next >= size - 1 {
            *next = 2;
        }
        let pod = Ipv4Addr::from(base + *next).to_string();
        *next += 1;
        status.host_ip = Some(host.clone());
        status.host_ips = Some(vec![HostIP { ip: host }]);
        status.pod_ip = Some(pod.clone());
        status.pod_ips = Some(vec![PodIP { ip: pod }]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(pod_cidr: Option<&str>, internal: Option<&str>) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n"},
            "spec": {"podCIDR": pod_cidr},
            "status": {"addresses": internal.map(|a| vec![
                serde_json::json!({"type": "Hostname", "address": "n"}),
                serde_json::json!({"type": "InternalIP", "address": a}),
            ])},
        }))
        .unwrap()
    }

    #[test]
    fn a_node_without_addresses_gets_kinds_networks_by_its_index() {
        let mut ips = PodIps::default();
        let mut s = PodStatus::default();
        ips.assign(3, None, &mut s);
        assert_eq!(s.host_ip.as_deref(), Some("172.18.0.5"));
        assert_eq!(s.pod_ip.as_deref(), Some("10.244.3.2"));
        ips.assign(3, None, &mut s);
        assert_eq!(s.pod_ip.as_deref(), Some("10.244.3.3"));
        assert_eq!(s.pod_ips.as_ref().unwrap()[0].ip, "10.244.3.3");
    }

    #[test]
    fn the_nodes_pod_cidr_and_internal_ip_are_used_and_the_subnet_wraps() {
        let n = node(Some("10.1.2.0/30"), Some("192.168.1.7"));
        let mut ips = PodIps::default();
        let mut s = PodStatus::default();
        ips.assign(0, Some(&n), &mut s);
        assert_eq!(s.host_ip.as_deref(), Some("192.168.1.7"));
        assert_eq!(s.pod_ip.as_deref(), Some("10.1.2.2"));
        ips.assign(0, Some(&n), &mut s);
        assert_eq!(
            s.pod_ip.as_deref(),
            Some("10.1.2.2"),
            "a /30 has one pod address"
        );
    }
}

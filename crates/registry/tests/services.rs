//! Services and Secrets get kube-apiserver's defaults and allocations on the way in, through
//! both clients of the registry: type, session affinity, port protocol and target port, a
//! cluster IP from 10.96.0.0/12 and node ports from 30000-32767 that no other Service holds,
//! the allocated values kept by an update that leaves them out, and a Secret's `Opaque` type.

use std::net::Ipv4Addr;

use kubeplane_api::{ApiError, Client, Clock, Object};
use kubeplane_registry::testing::TestClient;
use kubeplane_registry::StorageClient;
use serde_json::{json, Value};

fn clients() -> Vec<(&'static str, Box<dyn Client>)> {
    let clock = Clock::new("2025-01-01T00:00:00Z".parse().unwrap());
    vec![
        ("in-memory registry", Box::new(TestClient::new(1))),
        (
            "registry over storage",
            Box::new(StorageClient::new(1, clock, 1000)),
        ),
    ]
}

fn object(v: Value) -> Object {
    Object::from_json(&v).expect("a valid object")
}

fn service(name: &str, spec: Value) -> Object {
    object(json!({"apiVersion": "v1", "kind": "Service",
                  "metadata": {"name": name, "namespace": "default"}, "spec": spec}))
}

fn spec(o: &Object) -> Value {
    o.to_json()["spec"].clone()
}

fn in_range(ip: &str) -> bool {
    let a: Ipv4Addr = ip.parse().expect("an IPv4 address");
    a.octets()[0] == 10 && (96..112).contains(&a.octets()[1]) && ip != "10.96.0.1"
}

#[test]
fn a_service_gets_upstreams_defaults_and_a_cluster_ip_of_its_own() {
    for (name, mut c) in clients() {
        let web = c
            .create(service(
                "web",
                json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}),
            ))
            .unwrap();
        let s = spec(&web);
        assert_eq!(s["type"], "ClusterIP", "{name}");
        assert_eq!(s["sessionAffinity"], "None", "{name}");
        assert_eq!(s["internalTrafficPolicy"], "Cluster", "{name}");
        assert_eq!(s["ports"][0]["protocol"], "TCP", "{name}");
        assert_eq!(s["ports"][0]["targetPort"], 80, "{name}");
        assert_eq!(s["ipFamilies"], json!(["IPv4"]), "{name}");
        assert_eq!(s["ipFamilyPolicy"], "SingleStack", "{name}");
        let ip = s["clusterIP"].as_str().unwrap().to_string();
        assert!(in_range(&ip), "{name}: {ip}");
        assert_eq!(s["clusterIPs"], json!([ip]), "{name}");
        assert_eq!(
            web.to_json()["status"],
            json!({"loadBalancer": {}}),
            "{name}"
        );
        let api = c
            .create(service(
                "api",
                json!({"ports": [{"port": 8080, "targetPort": "http"}]}),
            ))
            .unwrap();
        assert_ne!(
            spec(&api)["clusterIP"],
            ip,
            "{name}: two services share {ip}"
        );
        assert_eq!(spec(&api)["ports"][0]["targetPort"], "http", "{name}");
    }
}

#[test]
fn a_cluster_ip_asked_for_is_given_unless_taken_or_out_of_range() {
    for (name, mut c) in clients() {
        let s = service(
            "a",
            json!({"clusterIP": "10.96.0.10", "ports": [{"port": 53}]}),
        );
        assert_eq!(
            spec(&c.create(s).unwrap())["clusterIP"],
            "10.96.0.10",
            "{name}"
        );
        let err = c
            .create(service(
                "b",
                json!({"clusterIP": "10.96.0.10", "ports": [{"port": 53}]}),
            ))
            .unwrap_err();
        assert!(matches!(err, ApiError::Invalid { .. }), "{name}: {err}");
        assert!(err.to_string().contains("spec.clusterIPs: Invalid value: []string{\"10.96.0.10\"}: failed to allocate IP 10.96.0.10: provided IP is already allocated"), "{name}: {err}");
        let err = c
            .create(service(
                "c",
                json!({"clusterIP": "192.168.0.1", "ports": [{"port": 53}]}),
            ))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("is not in the valid range. The range of valid IPs is 10.96.0.0/12"),
            "{name}: {err}"
        );
    }
}

#[test]
fn headless_and_external_name_services_get_no_cluster_ip() {
    for (name, mut c) in clients() {
        let headless = c
            .create(service(
                "h",
                json!({"clusterIP": "None", "ports": [{"port": 80}]}),
            ))
            .unwrap();
        assert_eq!(spec(&headless)["clusterIPs"], json!(["None"]), "{name}");
        let ext = c
            .create(service(
                "e",
                json!({"type": "ExternalName", "externalName": "example.com"}),
            ))
            .unwrap();
        assert!(spec(&ext).get("clusterIP").is_none(), "{name}");
        assert!(spec(&ext).get("internalTrafficPolicy").is_none(), "{name}");
    }
}

#[test]
fn node_ports_are_allocated_once_each_and_a_taken_one_is_refused() {
    for (name, mut c) in clients() {
        let np = c
            .create(service(
                "np",
                json!({"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]}),
            ))
            .unwrap();
        let s = spec(&np);
        assert_eq!(s["externalTrafficPolicy"], "Cluster", "{name}");
        let ports: Vec<u64> = (0..2)
            .map(|i| s["ports"][i]["nodePort"].as_u64().unwrap())
            .collect();
        assert!(
            ports.iter().all(|p| (30000..=32767).contains(p)),
            "{name}: {ports:?}"
        );
        assert_ne!(ports[0], ports[1], "{name}");
        let lb = c
            .create(service(
                "lb",
                json!({"type": "LoadBalancer", "ports": [{"port": 80}]}),
            ))
            .unwrap();
        assert_eq!(spec(&lb)["allocateLoadBalancerNodePorts"], true, "{name}");
        assert!(
            !ports.contains(&spec(&lb)["ports"][0]["nodePort"].as_u64().unwrap()),
            "{name}"
        );
        let taken = ports[0];
        let err = c
            .create(service(
                "x",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": taken}]}),
            ))
            .unwrap_err();
        assert!(err.to_string().contains(&format!("spec.ports[0].nodePort: Invalid value: {taken}: provided port is already allocated")), "{name}: {err}");
        let err = c
            .create(service(
                "y",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}),
            ))
            .unwrap_err();
        assert!(
            err.to_string().contains(
                "provided port is not in the valid range. The range of valid ports is 30000-32767"
            ),
            "{name}: {err}"
        );
    }
}

#[test]
fn an_update_that_leaves_out_the_allocations_keeps_them_and_may_not_move_the_ip() {
    for (name, mut c) in clients() {
        let np = c
            .create(service(
                "np",
                json!({"type": "NodePort", "ports": [{"port": 80}]}),
            ))
            .unwrap();
        let ip = spec(&np)["clusterIP"].clone();
        let port = spec(&np)["ports"][0]["nodePort"].clone();
        let mut replaced = service(
            "np",
            json!({"type": "NodePort", "ports": [{"port": 80}], "selector": {"app": "x"}}),
        );
        replaced.meta_mut().resource_version = Some(np.resource_version().to_string());
        let after = c.update(replaced).unwrap();
        assert_eq!(spec(&after)["clusterIP"], ip, "{name}");
        assert_eq!(spec(&after)["ports"][0]["nodePort"], port, "{name}");
        let mut moved = after.clone();
        if let Object::Other(o) = &mut moved {
            let o = std::sync::Arc::make_mut(o);
            o.fields.get_mut("spec").unwrap()["clusterIP"] = json!("10.96.0.99");
            o.fields.get_mut("spec").unwrap()["clusterIPs"] = json!(["10.96.0.99"]);
        }
        let err = c.update(moved).unwrap_err();
        assert!(
            err.to_string().contains("may not change once set"),
            "{name}: {err}"
        );
        let to_cluster_ip = c
            .create(service("t", json!({"ports": [{"port": 80}]})))
            .unwrap();
        let mut as_node_port = service("t", json!({"type": "NodePort", "ports": [{"port": 80}]}));
        as_node_port.meta_mut().resource_version =
            Some(to_cluster_ip.resource_version().to_string());
        let after = c.update(as_node_port).unwrap();
        assert!(
            spec(&after)["ports"][0]["nodePort"].as_u64().is_some(),
            "{name}: a type change to NodePort allocates its port"
        );
    }
}

#[test]
fn the_same_seed_allocates_the_same_addresses() {
    let ips = || {
        let mut c = TestClient::new(7);
        (0..3)
            .map(|i| {
                let s = c
                    .create(service(&format!("s{i}"), json!({"ports": [{"port": 80}]})))
                    .unwrap();
                spec(&s)["clusterIP"].as_str().unwrap().to_string()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(ips(), ips());
}

#[test]
fn a_secret_without_a_type_is_opaque() {
    for (name, mut c) in clients() {
        let s = c
            .create(object(json!({"apiVersion": "v1", "kind": "Secret",
                                  "metadata": {"name": "s", "namespace": "default"},
                                  "data": {"k": "dg=="}})))
            .unwrap();
        assert_eq!(s.to_json()["type"], "Opaque", "{name}");
        let t = c
            .create(object(json!({"apiVersion": "v1", "kind": "Secret",
                                  "metadata": {"name": "t", "namespace": "default"},
                                  "type": "kubernetes.io/tls"})))
            .unwrap();
        assert_eq!(t.to_json()["type"], "kubernetes.io/tls", "{name}");
    }
}

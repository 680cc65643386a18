//! Row tests of every kind but the Pod, and one manifest of each printed kind.

use serde_json::{json, Value};

use super::tests::{ago, cells, now, obj};
use super::*;

fn meta(name: &str) -> Value {
    json!({ "name": name, "namespace": "default", "creationTimestamp": ago(600) })
}

fn node(labels: Value, unschedulable: bool, conditions: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": "n1", "creationTimestamp": ago(3 * 86_400), "labels": labels },
        "spec": { "unschedulable": unschedulable },
        "status": { "conditions": conditions,
            "addresses": [{ "type": "InternalIP", "address": "10.0.0.1" }],
            "nodeInfo": { "kubeletVersion": "v1.34.0", "osImage": "", "kernelVersion": "6.1",
                "containerRuntimeVersion": "containerd://2.0", "architecture": "", "bootID": "",
                "kubeProxyVersion": "", "machineID": "", "operatingSystem": "", "systemUUID": "" } }
    })
}

#[test]
fn node_status_and_roles_follow_upstream() {
    let ready = json!([{ "type": "Ready", "status": "True" }]);
    let cases = [
        (
            "a ready node is Ready",
            node(json!({}), false, ready.clone()),
            "Ready",
            "<none>",
        ),
        (
            "a cordoned node adds SchedulingDisabled",
            node(json!({}), true, ready.clone()),
            "Ready,SchedulingDisabled",
            "<none>",
        ),
        (
            "a node whose Ready condition is not True is NotReady",
            node(
                json!({}),
                false,
                json!([{ "type": "Ready", "status": "Unknown" }]),
            ),
            "NotReady",
            "<none>",
        ),
        (
            "a node without a Ready condition is Unknown",
            node(json!({}), false, json!([])),
            "Unknown",
            "<none>",
        ),
        (
            "roles come from node-role labels and the kubernetes.io/role label, sorted",
            node(
                json!({ "node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/": "x",
                        "kubernetes.io/role": "control-plane" }),
                false,
                ready.clone(),
            ),
            "Ready",
            "control-plane,worker",
        ),
    ];
    for (case, n, status, roles) in cases {
        let c = cells(n);
        assert_eq!(
            (c[1].as_str().unwrap(), c[2].as_str().unwrap()),
            (status, roles),
            "{case}"
        );
    }
    let c = cells(node(json!({}), false, ready));
    assert_eq!(
        c[3..],
        [
            json!("3d"),
            json!("v1.34.0"),
            json!("10.0.0.1"),
            json!("<none>"),
            json!("<unknown>"),
            json!("6.1"),
            json!("containerd://2.0")
        ]
    );
}

#[test]
fn namespaces_print_their_phase() {
    let ns = json!({ "apiVersion": "v1", "kind": "Namespace",
        "metadata": { "name": "team", "creationTimestamp": ago(45) }, "status": { "phase": "Active" } });
    assert_eq!(cells(ns), [json!("team"), json!("Active"), json!("45s")]);
    let bare =
        json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "namespace2" } });
    assert_eq!(
        cells(bare),
        [json!("namespace2"), json!(""), json!("<unknown>")]
    );
}

fn template() -> Value {
    json!({ "metadata": { "labels": { "app": "web" } }, "spec": { "containers": [
        { "name": "web", "image": "nginx:1" }, { "name": "log", "image": "busybox" }] } })
}

#[test]
fn deployments_and_replica_sets_print_their_replicas() {
    let dep = json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("web"),
        "spec": { "replicas": 3, "selector": { "matchLabels": { "app": "web" } }, "template": template() },
        "status": { "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2 } });
    assert_eq!(
        cells(dep),
        [
            json!("web"),
            json!("2/3"),
            json!(3),
            json!(2),
            json!("10m"),
            json!("web,log"),
            json!("nginx:1,busybox"),
            json!("app=web")
        ]
    );
    let rs = json!({ "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta("web-1"),
        "spec": { "replicas": 3, "selector": { "matchLabels": { "app": "web" } }, "template": template() },
        "status": { "replicas": 3, "readyReplicas": 1 } });
    assert_eq!(
        cells(rs),
        [
            json!("web-1"),
            json!(3),
            json!(3),
            json!(1),
            json!("10m"),
            json!("web,log"),
            json!("nginx:1,busybox"),
            json!("app=web")
        ]
    );
}

#[test]
fn daemon_sets_stateful_sets_and_controller_revisions_print_upstreams_cells() {
    let mut tpl = template();
    tpl["spec"]["nodeSelector"] = json!({ "disk": "ssd", "arch": "amd64" });
    let ds = json!({ "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("agent"),
        "spec": { "selector": { "matchLabels": { "app": "web" } }, "template": tpl },
        "status": { "desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                    "updatedNumberScheduled": 1, "numberAvailable": 2, "numberMisscheduled": 0 } });
    assert_eq!(
        cells(ds),
        [
            json!("agent"),
            json!(3),
            json!(3),
            json!(2),
            json!(1),
            json!(2),
            json!("arch=amd64,disk=ssd"),
            json!("10m"),
            json!("web,log"),
            json!("nginx:1,busybox"),
            json!("app=web")
        ]
    );
    let sts = json!({ "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("db"),
        "spec": { "replicas": 3, "serviceName": "db", "selector": {}, "template": template() },
        "status": { "replicas": 3, "readyReplicas": 1 } });
    assert_eq!(cells(sts)[..3], [json!("db"), json!("1/3"), json!("10m")]);
    let mut m = meta("agent-7d9f");
    m["ownerReferences"] = json!([{ "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
        "uid": "u1", "controller": true }]);
    let cr = json!({ "apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": m, "revision": 4 });
    assert_eq!(
        cells(cr),
        [
            json!("agent-7d9f"),
            json!("daemonset.apps/agent"),
            json!(4),
            json!("10m")
        ]
    );
    let orphan = json!({ "apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta("x"), "revision": 1 });
    assert_eq!(cells(orphan)[1], "<none>");
}

fn job(spec: Value, status: Value, deleting: bool) -> Value {
    let mut m = meta("j");
    if deleting {
        m["deletionTimestamp"] = ago(1).into();
    }
    let mut s = json!({ "template": template() });
    for (k, v) in spec.as_object().unwrap() {
        s[k] = v.clone();
    }
    json!({ "apiVersion": "batch/v1", "kind": "Job", "metadata": m, "spec": s, "status": status })
}

#[test]
fn job_status_completions_and_duration_follow_upstream() {
    let cond = |t: &str| json!({ "conditions": [{ "type": t, "status": "True" }] });
    let cases = [
        (
            "a complete condition wins",
            job(json!({}), cond("Complete"), true),
            "Complete",
        ),
        (
            "a failed job is Failed",
            job(json!({}), cond("Failed"), false),
            "Failed",
        ),
        (
            "a deleted job is Terminating",
            job(json!({}), cond("Suspended"), true),
            "Terminating",
        ),
        (
            "a suspended job is Suspended",
            job(json!({}), cond("Suspended"), false),
            "Suspended",
        ),
        (
            "a job about to fail is FailureTarget",
            job(json!({}), cond("FailureTarget"), false),
            "FailureTarget",
        ),
        (
            "any other job is Running",
            job(json!({}), json!({}), false),
            "Running",
        ),
    ];
    for (case, j, want) in cases {
        assert_eq!(cells(j)[1], want, "{case}");
    }
    let completions = [
        (
            "completions are succeeded over the spec's",
            json!({ "completions": 3 }),
            "1/3",
        ),
        (
            "a work queue shows its parallelism",
            json!({ "parallelism": 4 }),
            "1/1 of 4",
        ),
        ("a single pod job is out of one", json!({}), "1/1"),
    ];
    for (case, spec, want) in completions {
        assert_eq!(
            cells(job(spec, json!({ "succeeded": 1 }), false))[2],
            want,
            "{case}"
        );
    }
    let done = json!({ "startTime": ago(400), "completionTime": ago(100) });
    assert_eq!(cells(job(json!({}), done, false))[3], "5m");
    assert_eq!(
        cells(job(json!({}), json!({ "startTime": ago(150) }), false))[3],
        "2m30s"
    );
    assert_eq!(cells(job(json!({}), json!({}), false))[3], "");
}

#[test]
fn cron_jobs_print_schedule_suspend_and_last_schedule() {
    let cj = json!({ "apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("nightly"),
        "spec": { "schedule": "0/5 * * * ?", "suspend": false,
                  "jobTemplate": { "spec": { "template": template() } } },
        "status": { "active": [{ "name": "a" }, { "name": "b" }], "lastScheduleTime": ago(30) } });
    assert_eq!(
        cells(cj)[..7],
        [
            json!("nightly"),
            json!("0/5 * * * ?"),
            json!("<none>"),
            json!("False"),
            json!(2),
            json!("30s"),
            json!("10m")
        ]
    );
    let bare = json!({ "apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("n"),
        "spec": { "schedule": "@daily", "timeZone": "Etc/UTC", "jobTemplate": {} } });
    let c = cells(bare);
    assert_eq!(
        c[2..6],
        [
            json!("Etc/UTC"),
            json!("<unset>"),
            json!(0),
            json!("<none>")
        ]
    );
    assert_eq!(c[9], "<none>");
}

fn service(spec: Value, status: Value) -> Value {
    json!({ "apiVersion": "v1", "kind": "Service", "metadata": meta("svc"), "spec": spec, "status": status })
}

#[test]
fn services_print_their_addresses_and_ports() {
    let lb = |ingress: Value| json!({ "loadBalancer": { "ingress": ingress } });
    let ports = json!([{ "port": 80, "protocol": "TCP" }, { "port": 8090, "protocol": "UDP", "nodePort": 30090 }]);
    let cases = [
        (
            "a load balancer lists its ingress addresses in full",
            service(
                json!({ "type": "LoadBalancer", "clusterIPs": ["1.5.6.7"], "ports": ports }),
                lb(
                    json!([{ "ip": "3.4.5.6" }, { "ip": "2.3.4.5" }, { "ip": "5.6.7.8", "hostname": "host5678" }]),
                ),
            ),
            (
                "1.5.6.7",
                "2.3.4.5,3.4.5.6,5.6.7.8",
                "80/TCP,8090:30090/UDP",
            ),
        ),
        (
            "a load balancer without an address is pending",
            service(
                json!({ "type": "LoadBalancer", "clusterIPs": ["1.3.4.5"] }),
                json!({}),
            ),
            ("1.3.4.5", "<pending>", "<none>"),
        ),
        (
            "a cluster IP service has no external IP",
            service(
                json!({ "type": "ClusterIP", "clusterIPs": ["10.0.0.10"], "ports": [{ "port": 53, "protocol": "UDP" }] }),
                json!({}),
            ),
            ("10.0.0.10", "<none>", "53/UDP"),
        ),
        (
            "a node port service lists its external IPs",
            service(
                json!({ "type": "NodePort", "externalIPs": ["9.9.9.9", "8.8.8.8"] }),
                json!({}),
            ),
            ("<none>", "9.9.9.9,8.8.8.8", "<none>"),
        ),
        (
            "an external name service shows the name",
            service(
                json!({ "type": "ExternalName", "externalName": "db.example.com" }),
                json!({}),
            ),
            ("<none>", "db.example.com", "<none>"),
        ),
    ];
    for (case, s, (cluster_ip, external, ports)) in cases {
        let c = cells(s);
        let got = (
            c[2].as_str().unwrap(),
            c[3].as_str().unwrap(),
            c[4].as_str().unwrap(),
        );
        assert_eq!(got, (cluster_ip, external, ports), "{case}");
    }
    let selected = service(
        json!({ "type": "ClusterIP", "selector": { "b": "2", "a": "1" } }),
        json!({}),
    );
    assert_eq!(cells(selected)[6], "a=1,b=2");
}

#[test]
fn config_maps_secrets_and_service_accounts_count_their_entries() {
    let cm = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("cm"),
        "data": { "a": "1", "b": "2" }, "binaryData": { "c": "AA==" } });
    assert_eq!(cells(cm), [json!("cm"), json!(3), json!("10m")]);
    let secret = json!({ "apiVersion": "v1", "kind": "Secret", "metadata": meta("s"),
        "type": "kubernetes.io/tls", "data": { "tls.crt": "AA==", "tls.key": "AA==" } });
    assert_eq!(
        cells(secret),
        [
            json!("s"),
            json!("kubernetes.io/tls"),
            json!(2),
            json!("10m")
        ]
    );
    let sa = json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("default") });
    assert_eq!(cells(sa), [json!("default"), json!(0), json!("10m")]);
}

#[test]
fn events_print_when_what_and_where_for_both_event_apis() {
    let core = json!({ "apiVersion": "v1", "kind": "Event", "metadata": meta("web.1"),
        "involvedObject": { "kind": "Pod", "name": "web", "fieldPath": "spec.containers{web}" },
        "reason": "Scheduled", "type": "Normal", "message": " Successfully assigned default/web to n1\n",
        "source": { "component": "default-scheduler" },
        "firstTimestamp": ago(300), "lastTimestamp": ago(60), "count": 3 });
    assert_eq!(
        cells(core),
        [
            json!("60s"),
            json!("Normal"),
            json!("Scheduled"),
            json!("pod/web"),
            json!("spec.containers{web}"),
            json!("default-scheduler"),
            json!("Successfully assigned default/web to n1"),
            json!("5m"),
            json!(3),
            json!("web.1")
        ]
    );
    // Upstream's "event serie" case: the series' last observation and count win.
    let series = json!({ "apiVersion": "v1", "kind": "Event", "metadata": meta("s"),
        "involvedObject": { "kind": "Deployment", "name": "Deployment Name" },
        "reason": "R", "type": "Warning", "message": "M", "eventTime": ago(3 * 86_400),
        "series": { "count": 2, "lastObservedTime": ago(2 * 86_400) },
        "reportingComponent": "kubelet", "reportingInstance": "test" });
    let c = cells(series);
    assert_eq!(
        (
            c[0].clone(),
            c[3].clone(),
            c[5].clone(),
            c[7].clone(),
            c[8].clone()
        ),
        (
            json!("2d"),
            json!("deployment/Deployment Name"),
            json!("kubelet, test"),
            json!("3d"),
            json!(2)
        )
    );
    let new_api = json!({ "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta("web.2"),
        "eventTime": ago(30), "reportingController": "kubelet", "reportingInstance": "n1",
        "regarding": { "kind": "Node", "name": "n1" }, "reason": "Starting", "type": "Normal",
        "note": "Starting kubelet.", "action": "Start" });
    assert_eq!(
        cells(new_api),
        [
            json!("30s"),
            json!("Normal"),
            json!("Starting"),
            json!("node/n1"),
            json!(""),
            json!("kubelet, n1"),
            json!("Starting kubelet."),
            json!("30s"),
            json!(1),
            json!("web.2")
        ]
    );
}

#[test]
fn endpoints_list_three_addresses_then_how_many_more() {
    let ep = json!({ "apiVersion": "v1", "kind": "Endpoints", "metadata": meta("svc"),
        "subsets": [{ "addresses": [{ "ip": "10.0.0.1" }, { "ip": "10.0.0.2" }],
                      "ports": [{ "port": 80 }, { "port": 443 }] }] });
    assert_eq!(
        cells(ep)[1],
        "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more..."
    );
    let headless = json!({ "apiVersion": "v1", "kind": "Endpoints", "metadata": meta("h"),
        "subsets": [{ "addresses": [{ "ip": "fd00::1" }] }] });
    assert_eq!(cells(headless)[1], "fd00::1");
    let v6 = json!({ "apiVersion": "v1", "kind": "Endpoints", "metadata": meta("v6"),
        "subsets": [{ "addresses": [{ "ip": "fd00::1" }], "ports": [{ "port": 80 }] }] });
    assert_eq!(cells(v6)[1], "[fd00::1]:80");
    let none = json!({ "apiVersion": "v1", "kind": "Endpoints", "metadata": meta("e") });
    assert_eq!(cells(none)[1], "<none>");
}

#[test]
fn persistent_volume_claims_show_capacity_only_once_bound() {
    let bound = json!({ "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta("data"),
        "spec": { "volumeName": "pv1", "storageClassName": "fast", "volumeMode": "Filesystem",
                  "resources": { "requests": { "storage": "5Gi" } } },
        "status": { "phase": "Bound", "capacity": { "storage": "10Gi" },
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"] } });
    assert_eq!(
        cells(bound),
        [
            json!("data"),
            json!("Bound"),
            json!("pv1"),
            json!("10Gi"),
            json!("RWO,RWX"),
            json!("fast"),
            json!("<unset>"),
            json!("10m"),
            json!("Filesystem")
        ]
    );
    let mut m = meta("pending");
    m["deletionTimestamp"] = ago(1).into();
    m["annotations"] = json!({ "volume.beta.kubernetes.io/storage-class": "legacy" });
    let pending = json!({ "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": m,
        "spec": { "storageClassName": "fast" }, "status": { "phase": "Pending" } });
    assert_eq!(
        cells(pending)[1..7],
        [
            json!("Terminating"),
            json!(""),
            json!(""),
            json!(""),
            json!("legacy"),
            json!("<unset>")
        ]
    );
}

#[test]
fn leases_priority_classes_and_budgets_print_upstreams_cells() {
    let lease = json!({ "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta("n1"),
        "spec": { "holderIdentity": "n1" } });
    assert_eq!(cells(lease), [json!("n1"), json!("n1"), json!("10m")]);
    let pc = json!({ "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": { "name": "high", "creationTimestamp": ago(600) }, "value": 1000,
        "globalDefault": true, "preemptionPolicy": "Never" });
    assert_eq!(
        cells(pc),
        [
            json!("high"),
            json!(1000),
            json!(true),
            json!("10m"),
            json!("Never")
        ]
    );
    let pdb = json!({ "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("b"),
        "spec": { "maxUnavailable": "50%" }, "status": { "disruptionsAllowed": 1, "currentHealthy": 2,
        "desiredHealthy": 1, "expectedPods": 2 } });
    assert_eq!(
        cells(pdb),
        [
            json!("b"),
            json!("N/A"),
            json!("50%"),
            json!(1),
            json!("10m")
        ]
    );
}

#[test]
fn ingresses_print_hosts_addresses_and_ports() {
    let ing = json!({ "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta("web"),
        "spec": { "rules": [{ "host": "a.example" }, {}, { "host": "b.example" }, { "host": "c.example" },
                            { "host": "d.example" }],
                  "tls": [{ "hosts": ["a.example"] }] },
        "status": { "loadBalancer": { "ingress": [{ "hostname": "lb.example" }, { "ip": "1.2.3.4" }] } } });
    assert_eq!(
        cells(ing),
        [
            json!("web"),
            json!("<none>"), // Upstream counts the rule without a host in the "more".
            json!("a.example,b.example,c.example + 2 more..."),
            json!("1.2.3.4,lb.example"),
            json!("80, 443"),
            json!("10m")
        ]
    );
    let any = json!({ "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta("any"),
        "spec": { "ingressClassName": "nginx" } });
    assert_eq!(
        cells(any)[1..5],
        [json!("nginx"), json!("*"), json!(""), json!("80")]
    );
}

#[test]
fn role_bindings_print_the_role_and_their_subjects() {
    let rb = json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": { "name": "admins", "creationTimestamp": ago(600) },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin" },
        "subjects": [{ "kind": "User", "name": "alice" }, { "kind": "Group", "name": "ops" },
                     { "kind": "User", "name": "bob" },
                     { "kind": "ServiceAccount", "name": "ci", "namespace": "tools" }] });
    assert_eq!(
        cells(rb),
        [
            json!("admins"),
            json!("ClusterRole/admin"),
            json!("10m"),
            json!("alice, bob"),
            json!("ops"),
            json!("tools/ci")
        ]
    );
}

#[test]
fn horizontal_pod_autoscalers_print_their_targets() {
    let hpa = json!({ "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta("web"),
        "spec": { "scaleTargetRef": { "kind": "Deployment", "name": "web" }, "minReplicas": 2, "maxReplicas": 10,
            "metrics": [
                { "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 80 } } },
                { "type": "Resource", "resource": { "name": "memory", "target": { "type": "AverageValue", "averageValue": "500Mi" } } },
                { "type": "Pods", "pods": { "metric": { "name": "qps" }, "target": { "type": "AverageValue", "averageValue": "10" } } }] },
        "status": { "currentReplicas": 3, "desiredReplicas": 3, "currentMetrics": [
            { "type": "Resource", "resource": { "name": "cpu", "current": { "averageUtilization": 50 } } }] } });
    assert_eq!(
        cells(hpa),
        [
            json!("web"),
            json!("Deployment/web"),
            json!("cpu: 50%/80%, memory: <unknown>/500Mi + 1 more..."),
            json!("2"),
            json!(10),
            json!(3),
            json!("10m")
        ]
    );
    let v1 = json!({ "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": meta("old"),
        "spec": { "scaleTargetRef": { "kind": "Deployment", "name": "old" }, "maxReplicas": 4,
                  "targetCPUUtilizationPercentage": 70 },
        "status": { "currentReplicas": 1, "desiredReplicas": 1 } });
    assert_eq!(
        cells(v1)[2..4],
        [json!("cpu: <unknown>/70%"), json!("<unset>")]
    );
    let none = json!({ "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta("n"),
        "spec": { "scaleTargetRef": { "kind": "Deployment", "name": "n" }, "maxReplicas": 1 } });
    assert_eq!(cells(none)[2], "<none>");
}

/// One manifest of every kind that has a printer, and one that has none.
pub(super) fn one_of_each_kind() -> Vec<Value> {
    let m = || meta("x");
    vec![
        json!({ "apiVersion": "v1", "kind": "Pod", "metadata": m() }),
        json!({ "apiVersion": "v1", "kind": "Node", "metadata": { "name": "n" } }),
        json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "ns" } }),
        json!({ "apiVersion": "v1", "kind": "Service", "metadata": m() }),
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": m() }),
        json!({ "apiVersion": "v1", "kind": "Secret", "metadata": m() }),
        json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": m() }),
        json!({ "apiVersion": "v1", "kind": "Event", "metadata": m(), "involvedObject": {} }),
        json!({ "apiVersion": "v1", "kind": "Endpoints", "metadata": m() }),
        json!({ "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": m() }),
        json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": m(),
                "spec": { "selector": {}, "template": {} } }),
        json!({ "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": m(), "spec": { "selector": {} } }),
        json!({ "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": m() }),
        json!({ "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": m() }),
        json!({ "apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": m() }),
        json!({ "apiVersion": "batch/v1", "kind": "Job", "metadata": m() }),
        json!({ "apiVersion": "batch/v1", "kind": "CronJob", "metadata": m() }),
        json!({ "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": m() }),
        json!({ "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": { "name": "p" }, "value": 1 }),
        json!({ "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": m() }),
        json!({ "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": m() }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": m(),
                "roleRef": { "apiGroup": "", "kind": "Role", "name": "r" } }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": { "name": "c" },
                "roleRef": { "apiGroup": "", "kind": "ClusterRole", "name": "r" } }),
        json!({ "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": m() }),
        json!({ "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": m() }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": m() }),
        json!({ "apiVersion": "v1", "kind": "LimitRange", "metadata": m() }),
        json!({ "apiVersion": "v1", "kind": "PersistentVolume", "metadata": { "name": "pv" } }),
        json!({ "apiVersion": "v1", "kind": "ReplicationController", "metadata": m() }),
        json!({ "apiVersion": "v1", "kind": "PodTemplate", "metadata": m() }),
        json!({ "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": { "name": "i" } }),
        json!({ "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": m() }),
        json!({ "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": m(),
                "addressType": "IPv4", "endpoints": [] }),
        json!({ "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                "metadata": { "name": "w" } }),
        json!({ "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": { "name": "r" },
                "handler": "runc" }),
    ]
}

#[test]
fn ages_are_human_durations_of_the_creation_time() {
    let at = |secs: i64| {
        json!({ "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": "c", "namespace": "d", "creationTimestamp": ago(secs) } })
    };
    let cases = [
        (90, "90s"),
        (125, "2m5s"),
        (4 * 3600, "4h"),
        (400 * 86_400, "400d"),
    ];
    for (secs, want) in cases {
        assert_eq!(cells(at(secs))[2], want, "{secs} s");
    }
    let unknown = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c", "namespace": "d" } });
    assert_eq!(cells(unknown)[2], "<unknown>");
    assert_eq!(row(&obj(at(0)), now()).cells[0], "c");
}

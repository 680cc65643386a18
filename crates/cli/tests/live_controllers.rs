//! `kubeplane controller-manager` against `kubeplane serve --controllers=` (a server that runs
//! no controller of its own, only its scheduler and simulated kubelets): the controller
//! manager turns a Deployment into a ReplicaSet and running pods and, once the Deployment is
//! deleted, its garbage collector removes them; with leader election only the leader acts and
//! the other instance takes over once the leader is killed; a NoExecute taint evicts pods at
//! the times their tolerationSeconds give and in the order `simulate` evicts the same pods, and
//! a ReplicaSet scaled from 4 to 2 deletes the pods `simulate` deletes (pod-deletion-cost).

mod support;

use kubeplane_api::PodExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use support::process::{free_port, wait_for, Proc};
use support::serve::Served;

/// `kubeplane serve` with no controllers.
fn serve(dir: &Path) -> Served {
    Served::start(dir, "127.0.0.1:0", &["--controllers=".as_ref()], &[], false)
}

/// A token file holding [`TOKEN`] (kube-apiserver's CSV form), kept for the test run.
fn tokens_file() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("kubeplane-kcm-tokens-{}", std::process::id()));
    std::fs::write(&path, format!("{TOKEN},prometheus,1\n")).expect("the token file");
    path
}

/// A `kubeplane controller-manager` (with these extra flags) and the port of its endpoints.
fn controller_manager(kubeconfig: &Path, flags: &[&str]) -> (Proc, u16) {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .arg("controller-manager")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--secure-port", &port.to_string()])
        .arg("--authentication-token-file")
        .arg(tokens_file())
        .args(flags)
        .stderr(Stdio::null())
        .spawn()
        .expect("kubeplane controller-manager starts");
    (Proc(child), port)
}

/// Leader election with short times and a lease of the test's own.
const ELECTION: &[&str] = &[
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=500ms",
    "--leader-elect-resource-name=kubeplane-kcm-test",
];

/// The bearer token the tests' controller managers accept for /metrics.
const TOKEN: &str = "metrics-reader-token";

/// An HTTPS GET of one of the endpoints, with the metrics reader's token.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    support::https::get_as(port, path, Some(TOKEN))
}

fn metric(port: u16, sample: &str) -> Option<u64> {
    let (_, body) = get(port, "/metrics")?;
    body.lines()
        .find_map(|l| l.strip_prefix(sample)?.trim().parse().ok())
}

const LEADING: &str = "leader_election_master_status{name=\"kube-controller-manager\"}";
const GC_DELETIONS: &str = "kubeplane_garbagecollector_deletions_total";
const PODS_CREATED: &str = "kubeplane_replicaset_pods_created_total";

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "c", "image": "nginx",
                    "resources": {"requests": {"cpu": "100m"}}}]}}},
    }))
    .unwrap()
}

struct Cluster {
    rt: tokio::runtime::Runtime,
    deployments: Api<Deployment>,
    replicasets: Api<ReplicaSet>,
    pods: Api<Pod>,
    events: Api<Event>,
}

impl Cluster {
    fn new(kubeconfig: &Path) -> Cluster {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(support::serve::client(kubeconfig));
        Cluster {
            deployments: Api::namespaced(client.clone(), "default"),
            replicasets: Api::namespaced(client.clone(), "default"),
            pods: Api::namespaced(client.clone(), "default"),
            events: Api::namespaced(client, "default"),
            rt,
        }
    }

    fn create(&self, d: Deployment) {
        self.rt
            .block_on(self.deployments.create(&PostParams::default(), &d))
            .expect("the deployment is created");
    }

    fn delete(&self, name: &str) {
        self.rt
            .block_on(self.deployments.delete(name, &DeleteParams::background()))
            .expect("the deployment is deleted");
    }

    /// The names of the ReplicaSets of a Deployment's label.
    fn replicasets(&self, app: &str) -> Vec<String> {
        let lp = ListParams::default().labels(&format!("app={app}"));
        let list = self.rt.block_on(self.replicasets.list(&lp)).unwrap();
        list.items
            .into_iter()
            .filter_map(|r| r.metadata.name)
            .collect()
    }

    /// The pods of a Deployment's label, and how many are bound and running.
    fn pods(&self, app: &str) -> (usize, usize) {
        let lp = ListParams::default().labels(&format!("app={app}"));
        let list = self.rt.block_on(self.pods.list(&lp)).unwrap();
        let running = list
            .items
            .iter()
            .filter(|p| p.node_name().is_some())
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        (list.items.len(), running)
    }

    fn event_reasons(&self) -> Vec<(String, String)> {
        let list = self
            .rt
            .block_on(self.events.list(&ListParams::default()))
            .unwrap();
        list.items
            .into_iter()
            .map(|e| {
                let source = e.source.and_then(|s| s.component).unwrap_or_default();
                (source, e.reason.unwrap_or_default())
            })
            .collect()
    }
}

#[test]
fn the_controller_manager_runs_a_deployment_on_a_server_without_controllers_and_collects_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path());
    let c = Cluster::new(&server.kubeconfig);
    c.create(deployment("web", 2));
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        c.replicasets("web").is_empty(),
        "the server runs no Deployment controller of its own"
    );
    let (_kcm, port) = controller_manager(&server.kubeconfig, &["--leader-elect=false"]);
    wait_for("/readyz answers ok", 30, || {
        get(port, "/readyz").is_some_and(|(code, _)| code == 200)
    });
    assert_eq!(get(port, "/healthz").unwrap(), (200, "ok".to_string()));
    wait_for("the Deployment's ReplicaSet", 30, || {
        c.replicasets("web").len() == 1
    });
    wait_for("two pods bound and running", 30, || c.pods("web") == (2, 2));
    wait_for("the controllers' v1 Events", 10, || {
        let reasons = c.event_reasons();
        let has = |s: &str, r: &str| reasons.iter().any(|(a, b)| a == s && b == r);
        has("deployment-controller", "ScalingReplicaSet")
            && has("replicaset-controller", "SuccessfulCreate")
    });
    c.delete("web");
    wait_for(
        "the garbage collector removes the ReplicaSet and its pods",
        30,
        || c.replicasets("web").is_empty() && c.pods("web").0 == 0,
    );
    wait_for("the metrics count the collector's deletions", 5, || {
        metric(port, GC_DELETIONS).is_some_and(|n| n >= 1)
    });
    assert_eq!(metric(port, LEADING), Some(1), "without election it leads");
}

#[test]
fn only_the_leader_acts_and_the_other_instance_takes_over_when_it_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path());
    let kubeconfig = server.kubeconfig.clone();
    let (one, port1) = controller_manager(&kubeconfig, ELECTION);
    wait_for("the first instance leads", 30, || {
        metric(port1, LEADING) == Some(1)
    });
    let (_two, port2) = controller_manager(&kubeconfig, ELECTION);
    wait_for("the second instance has listed", 30, || {
        get(port2, "/readyz").is_some_and(|(code, _)| code == 200)
    });
    wait_for("the second instance publishes its metrics", 5, || {
        metric(port2, LEADING).is_some()
    });
    assert_eq!(metric(port2, LEADING), Some(0), "only one instance leads");
    let c = Cluster::new(&kubeconfig);
    c.create(deployment("web", 2));
    wait_for("the leader's ReplicaSet and pods", 30, || {
        c.replicasets("web").len() == 1 && c.pods("web") == (2, 2)
    });
    c.delete("web");
    wait_for("the leader collects them", 30, || {
        c.replicasets("web").is_empty() && c.pods("web").0 == 0
    });
    wait_for("the leader's metrics count its deletions", 5, || {
        metric(port1, GC_DELETIONS).is_some_and(|n| n >= 1)
    });
    assert_eq!(
        metric(port2, GC_DELETIONS),
        Some(0),
        "the follower deletes nothing"
    );
    assert_eq!(metric(port2, PODS_CREATED), Some(0), "nor creates anything");
    assert_eq!(metric(port1, PODS_CREATED), Some(2));

    let killed = Instant::now();
    drop(one); // SIGKILL: the lease is not released
    c.create(deployment("after", 1));
    wait_for("the other instance takes over and acts", 30, || {
        c.replicasets("after").len() == 1
    });
    let failover = killed.elapsed();
    wait_for("the other instance reports that it leads", 5, || {
        metric(port2, LEADING) == Some(1)
    });
    wait_for("its pod runs", 30, || c.pods("after") == (1, 1));
    wait_for(
        "the new leader's metrics count the pod it created",
        5,
        || metric(port2, PODS_CREATED) == Some(1),
    );
    // A 4 s lease observed from the follower's side, its 0.5 s retries and a sync.
    assert!(
        failover < Duration::from_secs(12),
        "failover took {failover:?}"
    );
    eprintln!("controller-manager failover after the leader was killed: {failover:?}");
}

#[test]
fn a_deleted_namespace_is_emptied_and_finalized() {
    use k8s_openapi::api::core::v1::Namespace;
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path());
    let (_kcm, port) = controller_manager(&server.kubeconfig, &["--leader-elect=false"]);
    wait_for("/readyz answers ok", 30, || {
        get(port, "/readyz").is_some_and(|(code, _)| code == 200)
    });
    let c = Cluster::new(&server.kubeconfig);
    let client = c.pods.clone().into_client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}))
    .unwrap();
    let pp = PostParams::default();
    c.rt.block_on(namespaces.create(&pp, &ns)).unwrap();
    let shop: Api<Deployment> = Api::namespaced(client.clone(), "shop");
    let mut d = deployment("web", 2);
    d.metadata.namespace = Some("shop".into());
    c.rt.block_on(shop.create(&pp, &d)).unwrap();
    let shop_pods: Api<Pod> = Api::namespaced(client, "shop");
    let running = || {
        let list =
            c.rt.block_on(shop_pods.list(&ListParams::default()))
                .unwrap();
        list.items.len()
    };
    wait_for("the Deployment's pods", 30, || running() == 2);
    c.rt.block_on(namespaces.delete("shop", &DeleteParams::default()))
        .unwrap();
    wait_for("the namespace is emptied and goes", 60, || {
        c.rt.block_on(namespaces.get_opt("shop")).unwrap().is_none()
    });
    assert_eq!(running(), 0);
}

#[test]
fn a_leader_whose_lease_is_taken_stops_at_once_and_exits_with_status_1() {
    use k8s_openapi::api::coordination::v1::Lease;
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path());
    let (mut kcm, port) = controller_manager(&server.kubeconfig, ELECTION);
    wait_for("it leads", 30, || metric(port, LEADING) == Some(1));
    let c = Cluster::new(&server.kubeconfig);
    let leases: Api<Lease> = Api::namespaced(c.pods.clone().into_client(), "kube-system");
    wait_for("the lease is taken over", 10, || {
        let mut lease = c.rt.block_on(leases.get("kubeplane-kcm-test")).unwrap();
        lease.spec.as_mut().unwrap().holder_identity = Some("intruder".into());
        let pp = PostParams::default();
        c.rt.block_on(leases.replace("kubeplane-kcm-test", &pp, &lease))
            .is_ok()
    });
    let mut status = None;
    wait_for("it exits", 10, || {
        status = kcm.0.try_wait().unwrap();
        status.is_some()
    });
    assert_eq!(status.unwrap().code(), Some(1));
}

#[test]
fn the_controller_manager_outlives_a_server_restart_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let data = dir.path().join("data");
    let listen = format!("127.0.0.1:{port}");
    let args: [&std::ffi::OsStr; 3] = [
        "--controllers=".as_ref(),
        "--data-dir".as_ref(),
        data.as_os_str(),
    ];
    let server = Served::start(dir.path(), &listen, &args, &[], false);
    let kubeconfig = dir.path().join("kubeconfig");
    let (mut kcm, kcm_port) = controller_manager(&kubeconfig, &["--leader-elect=false"]);
    wait_for("/readyz answers ok", 30, || {
        get(kcm_port, "/readyz").is_some_and(|(code, _)| code == 200)
    });
    let c = Cluster::new(&kubeconfig);
    c.create(deployment("before", 1));
    wait_for("the ReplicaSet before the restart", 30, || {
        c.replicasets("before").len() == 1
    });
    drop(server); // SIGKILL
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        kcm.0.try_wait().unwrap().is_none(),
        "the controller manager keeps running while the server is away"
    );
    let _server = Served::start(dir.path(), &listen, &args, &[], false);
    let c = Cluster::new(&kubeconfig);
    c.create(deployment("after", 1));
    wait_for("the ReplicaSet after the restart", 60, || {
        c.replicasets("after").len() == 1
    });
    wait_for("its pod runs", 30, || c.pods("after") == (1, 1));
    assert_eq!(
        c.replicasets("before").len(),
        1,
        "no second ReplicaSet for the first one"
    );
    assert!(kcm.0.try_wait().unwrap().is_none());
}

#[test]
fn bad_flags_are_input_errors_with_upstreams_messages() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kubeplane"))
            .args(args)
            .output()
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n").unwrap();
    let kc = kubeconfig.to_str().unwrap();
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "an unknown controller",
            &["--controllers=*,-nonsense"],
            "\"nonsense\" is not in the list of known controllers",
        ),
        (
            "a renew deadline not below the lease",
            &["--leader-elect-lease-duration=5s"],
            "must be greater than renewDeadline",
        ),
        (
            "another lock than leases",
            &["--leader-elect-resource-lock=endpoints"],
            "resourceLock value must be \"leases\"",
        ),
        ("an unknown flag", &["--no-such-flag"], "--no-such-flag"),
        (
            "a bad duration",
            &["--node-monitor-grace-period=soon"],
            "--node-monitor-grace-period",
        ),
    ];
    for (name, flags, want) in cases {
        let mut args = vec!["controller-manager", "--kubeconfig", kc];
        args.extend_from_slice(flags);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{name}: {err}");
    }
    let out = run(&["serve", "--controllers=replicaset,-bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"bogus\" is not in the list"));
}

/// `kubeplane simulate FILES --output jsonl` of tests/serve/cluster.yaml (the served nodes)
/// and these documents: its events' (time, reason, object name, message).
fn simulate_events(dir: &Path, documents: &str) -> Vec<(f64, String, String, String)> {
    let file = dir.join("simulated.yaml");
    std::fs::write(&file, documents).unwrap();
    let cluster = support::repo_root().join("tests/serve/cluster.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .arg("simulate")
        .arg(&cluster)
        .arg(&file)
        .args(["--output", "jsonl"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["reason"].is_string() && v["time"].is_number())
        .map(|v| {
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (
                v["time"].as_f64().unwrap(),
                s("reason"),
                s("name"),
                s("message"),
            )
        })
        .collect()
}

/// Pods on node-a with a NoExecute toleration of `example.com/maintenance` for these seconds
/// (`None`: no toleration; `Some(None)`: tolerated for ever).
const TAINT_PODS: &[(&str, Option<Option<i64>>)] = &[
    ("untolerated", None),
    ("three-seconds", Some(Some(3))),
    ("six-seconds", Some(Some(6))),
    ("forever", Some(None)),
];

fn taint_pods_yaml() -> String {
    let mut out = String::new();
    for (name, toleration) in TAINT_PODS {
        let tolerations = match toleration {
            None => "[]".to_string(),
            Some(secs) => format!(
                "[{{key: example.com/maintenance, operator: Exists, effect: NoExecute{}}}]",
                secs.map(|s| format!(", tolerationSeconds: {s}"))
                    .unwrap_or_default()
            ),
        };
        out.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\n\
             spec:\n  nodeName: node-a\n  terminationGracePeriodSeconds: 1\n  tolerations: {tolerations}\n  \
             containers: [{{name: c, image: nginx}}]\n"
        ));
    }
    out
}

/// The pods of `default` and whether each is being deleted (gone counts as deleted).
fn deleted_pods(c: &Cluster, names: &[&str]) -> Vec<bool> {
    let list = c.rt.block_on(c.pods.list(&ListParams::default())).unwrap();
    names
        .iter()
        .map(|n| {
            list.items
                .iter()
                .find(|p| p.metadata.name.as_deref() == Some(*n))
                .is_none_or(|p| p.metadata.deletion_timestamp.is_some())
        })
        .collect()
}

#[test]
fn a_noexecute_taint_evicts_the_pods_when_and_in_the_order_simulate_does() {
    use k8s_openapi::api::core::v1::Node;
    use kube::api::{Patch, PatchParams};
    let dir = tempfile::tempdir().unwrap();
    // simulate: the taint at 10 s; each pod's eviction time after it.
    let scenario =
        "---\napiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {name: taint}\n\
        spec:\n  duration: 30s\n  steps:\n  - at: 10s\n    \
        taint: {node: node-a, key: example.com/maintenance, effect: NoExecute}\n";
    let simulated: Vec<(String, f64)> =
        simulate_events(dir.path(), &(taint_pods_yaml() + scenario))
            .into_iter()
            .filter(|(_, reason, _, msg)| {
                reason == "TaintManagerEviction" && msg.starts_with("Marking")
            })
            .map(|(t, _, name, _)| (name, t - 10.0))
            .collect();
    let names: Vec<&str> = TAINT_PODS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        simulated
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        ["untolerated", "three-seconds", "six-seconds"],
        "simulate's evictions: {simulated:?}"
    );

    let server = serve(dir.path());
    let c = Cluster::new(&server.kubeconfig);
    let docs = taint_pods_yaml();
    for doc in docs.split("---\n").filter(|d| !d.trim().is_empty()) {
        let pod: Pod = serde_yaml_ng::from_str(doc).unwrap();
        c.rt.block_on(c.pods.create(&PostParams::default(), &pod))
            .unwrap();
    }
    let (_kcm, port) = controller_manager(
        &server.kubeconfig,
        &[
            "--leader-elect=false",
            "--controllers=taint-eviction-controller",
        ],
    );
    wait_for("/readyz answers ok", 30, || {
        get(port, "/readyz").is_some_and(|(code, _)| code == 200)
    });
    let nodes: Api<Node> = Api::all(c.pods.clone().into_client());
    let taint = serde_json::json!({"spec": {"taints": [
        {"key": "example.com/maintenance", "effect": "NoExecute"}]}});
    c.rt.block_on(nodes.patch("node-a", &PatchParams::default(), &Patch::Merge(&taint)))
        .unwrap();
    let tainted = Instant::now();
    let mut live: Vec<(String, f64)> = Vec::new();
    while tainted.elapsed() < Duration::from_secs(9) {
        for (name, gone) in names.iter().zip(deleted_pods(&c, &names)) {
            if gone && !live.iter().any(|(n, _)| n == name) {
                live.push((name.to_string(), tainted.elapsed().as_secs_f64()));
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let order = |v: &[(String, f64)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(
        order(&live),
        order(&simulated),
        "live {live:?}, simulated {simulated:?}"
    );
    for ((name, at), (_, want)) in live.iter().zip(&simulated) {
        assert!(
            (at - want).abs() < 1.0,
            "{name}: evicted {at:.2} s after the taint live, {want} s in simulate"
        );
    }
    eprintln!("evictions after the taint: live {live:?}, simulated {simulated:?}");
}

/// Four pods of the ReplicaSet `rs` (owned by its uid), each with a pod-deletion-cost; the
/// scheduler places them (a pod created with its nodeName is not started by the served
/// kubelets), and the costs rank them before their nodes do.
const RS_PODS: &[(&str, &str)] = &[
    ("rs-1", "10"),
    ("rs-2", "-5"),
    ("rs-3", "0"),
    ("rs-4", "100"),
];

fn replicaset_yaml(uid: Option<&str>) -> String {
    let uid = uid.map(|u| format!(", uid: {u}")).unwrap_or_default();
    format!(
        "---\napiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: rs, namespace: default{uid}}}\n\
         spec:\n  replicas: 4\n  selector: {{matchLabels: {{app: rs}}}}\n  template:\n    \
         metadata: {{labels: {{app: rs}}}}\n    spec:\n      terminationGracePeriodSeconds: 1\n      \
         containers: [{{name: c, image: nginx}}]\n"
    )
}

fn replicaset_pods_yaml(uid: &str) -> String {
    let mut out = String::new();
    for (name, cost) in RS_PODS {
        out.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  \
             labels: {{app: rs}}\n  annotations: {{controller.kubernetes.io/pod-deletion-cost: \"{cost}\"}}\n  \
             ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: {uid}, \
             controller: true, blockOwnerDeletion: true}}]\n\
             spec:\n  terminationGracePeriodSeconds: 1\n  \
             containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: 100m}}}}}}]\n"
        ));
    }
    out
}

#[test]
fn a_replicaset_scaled_from_4_to_2_deletes_the_pods_simulate_deletes() {
    use kube::api::{Patch, PatchParams};
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path());
    let c = Cluster::new(&server.kubeconfig);
    let rs: ReplicaSet =
        serde_yaml_ng::from_str(replicaset_yaml(None).trim_start_matches("---\n")).unwrap();
    let rs =
        c.rt.block_on(c.replicasets.create(&PostParams::default(), &rs))
            .unwrap();
    let uid = rs.metadata.uid.unwrap();
    let pods = replicaset_pods_yaml(&uid);
    for doc in pods.split("---\n").filter(|d| !d.trim().is_empty()) {
        let pod: Pod = serde_yaml_ng::from_str(doc).unwrap();
        c.rt.block_on(c.pods.create(&PostParams::default(), &pod))
            .unwrap();
    }

    // simulate: the same objects, scaled to 2 once the pods run.
    let scenario = "---\napiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {name: rs}\n\
        spec:\n  duration: 1m\n  steps:\n  - {at: 30s, scale: {kind: ReplicaSet, name: rs, replicas: 2}}\n";
    let input = replicaset_yaml(Some(&uid)) + &pods + scenario;
    let mut simulated: Vec<String> = simulate_events(dir.path(), &input)
        .into_iter()
        .filter(|(_, reason, name, _)| reason == "SuccessfulDelete" && name == "rs")
        .filter_map(|(_, _, _, msg)| Some(msg.strip_prefix("Deleted pod: ")?.to_string()))
        .collect();
    simulated.sort();
    assert_eq!(simulated, ["rs-2", "rs-3"], "the two lowest deletion costs");

    let names: Vec<&str> = RS_PODS.iter().map(|(n, _)| *n).collect();
    let lp = ListParams::default().labels("app=rs");
    wait_for("the four pods run and are ready", 30, || {
        let list = c.rt.block_on(c.pods.list(&lp)).unwrap();
        list.items.len() == 4
            && list.items.iter().all(|p| {
                p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
    });
    let (_kcm, port) = controller_manager(
        &server.kubeconfig,
        &[
            "--leader-elect=false",
            "--controllers=replicaset-controller",
        ],
    );
    wait_for("/readyz answers ok", 30, || {
        get(port, "/readyz").is_some_and(|(code, _)| code == 200)
    });
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        deleted_pods(&c, &names),
        [false; 4],
        "4 pods for 4 replicas"
    );
    let scale = serde_json::json!({"spec": {"replicas": 2}});
    c.rt.block_on(
        c.replicasets
            .patch("rs", &PatchParams::default(), &Patch::Merge(&scale)),
    )
    .unwrap();
    wait_for("two pods deleted", 30, || {
        deleted_pods(&c, &names).iter().filter(|d| **d).count() == 2
    });
    std::thread::sleep(Duration::from_secs(1));
    let live: Vec<String> = names
        .iter()
        .zip(deleted_pods(&c, &names))
        .filter(|(_, d)| *d)
        .map(|(n, _)| n.to_string())
        .collect();
    assert_eq!(
        live, simulated,
        "the live controller deletes what simulate deletes"
    );
}

//! `kubeplane scheduler` against `kubeplane serve`: the live scheduler binds the pods that name
//! its profile (`kubeplane-live`) and leaves the others alone, reports an unschedulable pod with
//! the FailedScheduling event and condition, and with leader election only the leader binds
//! and the other replica takes over once the leader is killed. The server runs its own
//! scheduler for `default-scheduler`; these pods never name it.

mod support;

use kubeplane_api::PodExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use support::process::{free_port, wait_for, Proc};
use support::serve::Served;

fn serve(dir: &Path) -> Served {
    Served::start(dir, "127.0.0.1:0", &[], &[], false)
}

const CONFIG: &str = "\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms
  resourceName: kubeplane-live
profiles:
- schedulerName: kubeplane-live
";

/// The bearer token the tests' schedulers accept for /metrics.
const TOKEN: &str = "metrics-reader-token";

/// A `kubeplane scheduler` and the port of its endpoints.
fn scheduler(dir: &Path, kubeconfig: &Path, leader_elect: bool) -> (Proc, u16) {
    let config = dir.join("scheduler.yaml");
    std::fs::write(&config, CONFIG).unwrap();
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, format!("{TOKEN},prometheus,1\n")).unwrap();
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .arg("scheduler")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--config")
        .arg(&config)
        .arg(format!("--leader-elect={leader_elect}"))
        .args(["--secure-port", &port.to_string()])
        .arg("--authentication-token-file")
        .arg(&tokens)
        .stderr(Stdio::null())
        .spawn()
        .expect("kubeplane scheduler starts");
    (Proc(child), port)
}

/// [`get_as`] with the metrics reader's token.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    support::https::get_as(port, path, Some(TOKEN))
}

fn metric(port: u16, sample: &str) -> Option<u64> {
    let (_, body) = get(port, "/metrics")?;
    body.lines()
        .find_map(|l| l.strip_prefix(sample)?.trim().parse().ok())
}

fn pod(name: &str, scheduler: &str, cpu: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "nginx",
            "resources": {"requests": {"cpu": cpu}}}]},
    }))
    .unwrap()
}

struct Cluster {
    rt: tokio::runtime::Runtime,
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
            pods: Api::namespaced(client.clone(), "default"),
            events: Api::namespaced(client, "default"),
            rt,
        }
    }

    fn create(&self, p: Pod) {
        self.rt
            .block_on(self.pods.create(&PostParams::default(), &p))
            .expect("the pod is created");
    }

    fn pod(&self, name: &str) -> Pod {
        self.rt.block_on(self.pods.get(name)).unwrap()
    }

    fn node_of(&self, name: &str) -> Option<String> {
        self.pod(name).node_name().map(str::to_string)
    }
}

#[test]
fn the_live_scheduler_binds_the_pods_naming_its_profile_and_reports_the_unfit_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path());
    let kubeconfig = server.kubeconfig.clone();
    let (_scheduler, port) = scheduler(dir.path(), &kubeconfig, false);
    wait_for("/readyz answers ok", 30, || {
        get(port, "/readyz").is_some_and(|(code, _)| code == 200)
    });
    assert_eq!(get(port, "/healthz").unwrap(), (200, "ok".to_string()));
    let c = Cluster::new(&kubeconfig);
    for name in ["a", "b", "c"] {
        c.create(pod(name, "kubeplane-live", "3"));
    }
    c.create(pod("big", "kubeplane-live", "100"));
    c.create(pod("other", "someone-else", "1"));
    wait_for("the three fitting pods are bound", 30, || {
        ["a", "b", "c"].iter().all(|n| c.node_of(n).is_some())
    });
    let mut nodes: Vec<String> = ["a", "b", "c"]
        .iter()
        .filter_map(|n| c.node_of(n))
        .collect();
    nodes.sort();
    // 3 CPUs each on nodes of 4: one pod per node.
    assert_eq!(nodes, ["node-a", "node-b", "node-c"]);
    wait_for("big has its PodScheduled=False condition", 30, || {
        let p = c.pod("big");
        let cond = p.status.and_then(|s| s.conditions).unwrap_or_default();
        cond.iter().any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        })
    });
    wait_for("a FailedScheduling event about big", 30, || {
        let list =
            c.rt.block_on(c.events.list(&ListParams::default()))
                .unwrap();
        list.items.iter().any(|e| {
            e.reason.as_deref() == Some("FailedScheduling")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("big")
                && e.reporting_controller.as_deref() == Some("kubeplane-live")
                && e.note
                    .as_deref()
                    .is_some_and(|n| n.starts_with("0/3 nodes are available"))
        })
    });
    assert_eq!(c.node_of("big"), None);
    assert_eq!(
        c.node_of("other"),
        None,
        "a pod naming another scheduler is left alone"
    );
    // The metrics are published once a second.
    let scheduled =
        "scheduler_schedule_attempts_total{profile=\"kubeplane-live\",result=\"scheduled\"}";
    wait_for("the metrics count three pods scheduled", 5, || {
        metric(port, scheduled) == Some(3)
    });
    // Each attempt once in the latency histogram of its profile and result, and big's
    // attempts as unschedulable.
    let count = |result: &str| {
        metric(
            port,
            &format!(
                "scheduler_scheduling_attempt_duration_seconds_count{{profile=\"kubeplane-live\",result=\"{result}\"}}"
            ),
        )
    };
    assert_eq!(count("scheduled"), Some(3));
    let unschedulable = metric(
        port,
        "scheduler_schedule_attempts_total{profile=\"kubeplane-live\",result=\"unschedulable\"}",
    );
    assert!(unschedulable.is_some_and(|n| n >= 1), "{unschedulable:?}");
    assert_eq!(count("unschedulable"), unschedulable);
    // Over HTTPS: the health checks are open, the metrics need a token of the file.
    assert_eq!(
        support::https::get_as(port, "/healthz", None).unwrap().0,
        200
    );
    assert_eq!(
        support::https::get_as(port, "/readyz", None).unwrap().0,
        200
    );
    let (code, body) = support::https::get_as(port, "/metrics", None).unwrap();
    assert_eq!(code, 403, "anonymous: {body}");
    assert!(body.contains("User \"system:anonymous\" cannot get path \"/metrics\""));
    assert_eq!(
        support::https::get_as(port, "/metrics", Some("wrong"))
            .unwrap()
            .0,
        401
    );
}

#[test]
fn two_replicas_elect_one_leader_and_the_other_takes_over_when_it_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path());
    let kubeconfig = server.kubeconfig.clone();
    let first = dir.path().join("1");
    let second = dir.path().join("2");
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    let (one, port1) = scheduler(&first, &kubeconfig, true);
    let (two, port2) = scheduler(&second, &kubeconfig, true);
    let leading = |port| {
        metric(
            port,
            "leader_election_master_status{name=\"kube-scheduler\"}",
        )
    };
    wait_for("one replica leads", 30, || {
        leading(port1) == Some(1) || leading(port2) == Some(1)
    });
    let (mut leader, leader_port, follower_port) = if leading(port1) == Some(1) {
        (Some(one), port1, port2)
    } else {
        (Some(two), port2, port1)
    };
    assert_eq!(leading(follower_port), Some(0), "only one replica leads");
    let c = Cluster::new(&kubeconfig);
    c.create(pod("first", "kubeplane-live", "1"));
    wait_for("the leader binds the first pod", 30, || {
        c.node_of("first").is_some()
    });
    let attempts =
        "scheduler_schedule_attempts_total{profile=\"kubeplane-live\",result=\"scheduled\"}";
    wait_for("the leader's metrics count it", 5, || {
        metric(leader_port, attempts) == Some(1)
    });
    assert_eq!(
        metric(follower_port, attempts),
        Some(0),
        "the follower binds nothing"
    );

    let killed = Instant::now();
    drop(leader.take()); // SIGKILL: the lease is not released
    c.create(pod("second", "kubeplane-live", "1"));
    wait_for("the other replica takes over and binds", 30, || {
        c.node_of("second").is_some()
    });
    let failover = killed.elapsed();
    wait_for("the other replica reports that it leads", 5, || {
        leading(follower_port) == Some(1)
    });
    wait_for("the new leader's metrics count it", 5, || {
        metric(follower_port, attempts) == Some(1)
    });
    // A 4 s lease observed from the follower's side, its 0.5 s retries and a scheduling cycle.
    assert!(
        failover < Duration::from_secs(12),
        "failover took {failover:?}"
    );
    eprintln!("failover after the leader was killed: {failover:?}");
}

#[test]
fn an_unreadable_kubeconfig_is_an_input_error_naming_the_file() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .args(["scheduler", "--kubeconfig", "/nonexistent/kubeconfig"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/kubeconfig"), "{err}");
}

/// `kubeplane serve` on a fixed port with a data directory, so that a restart keeps the
/// address, the credentials and the objects.
fn serve_at(dir: &Path, port: u16) -> Served {
    let data = dir.join("data");
    let listen = format!("127.0.0.1:{port}");
    Served::start(
        dir,
        &listen,
        &["--data-dir".as_ref(), data.as_os_str()],
        &[],
        false,
    )
}

#[test]
fn the_scheduler_outlives_a_server_restart_and_goes_on_scheduling() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = serve_at(dir.path(), port);
    let kubeconfig = dir.path().join("kubeconfig");
    let (mut scheduler, metrics_port) = scheduler(dir.path(), &kubeconfig, false);
    wait_for("/readyz answers ok", 30, || {
        get(metrics_port, "/readyz").is_some_and(|(code, _)| code == 200)
    });
    let c = Cluster::new(&kubeconfig);
    c.create(pod("before", "kubeplane-live", "1"));
    wait_for("the pod before the restart is bound", 30, || {
        c.node_of("before").is_some()
    });
    drop(server); // SIGKILL
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        scheduler.0.try_wait().unwrap().is_none(),
        "the scheduler keeps running while the server is away"
    );
    let _server = serve_at(dir.path(), port);
    let c = Cluster::new(&kubeconfig);
    c.create(pod("after", "kubeplane-live", "1"));
    wait_for("the pod after the restart is bound", 60, || {
        c.node_of("after").is_some()
    });
    assert!(scheduler.0.try_wait().unwrap().is_none());
    wait_for("the metrics count both pods, each once", 10, || {
        metric(
            metrics_port,
            "scheduler_schedule_attempts_total{profile=\"kubeplane-live\",result=\"scheduled\"}",
        ) == Some(2)
    });
}

#[test]
fn a_leader_whose_lease_is_taken_stops_at_once_and_exits_with_status_1() {
    use k8s_openapi::api::coordination::v1::Lease;
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path());
    let kubeconfig = server.kubeconfig.clone();
    let (mut one, port) = scheduler(dir.path(), &kubeconfig, true);
    let leading = || {
        metric(
            port,
            "leader_election_master_status{name=\"kube-scheduler\"}",
        )
    };
    wait_for("the scheduler leads", 30, || leading() == Some(1));
    let c = Cluster::new(&kubeconfig);
    let leases: Api<Lease> = Api::namespaced(c.pods.clone().into_client(), "kube-system");
    // Another holder writes the lease (again after a conflict with a renewal).
    wait_for("the lease is taken over", 10, || {
        let mut lease = c.rt.block_on(leases.get("kubeplane-live")).unwrap();
        lease.spec.as_mut().unwrap().holder_identity = Some("intruder".into());
        let pp = PostParams::default();
        c.rt.block_on(leases.replace("kubeplane-live", &pp, &lease))
            .is_ok()
    });
    let mut status = None;
    wait_for("the scheduler exits", 10, || {
        status = one.0.try_wait().unwrap();
        status.is_some()
    });
    assert_eq!(status.unwrap().code(), Some(1));
}

/// The resident memory of a process (`VmRSS` of /proc/PID/status), in MiB.
fn resident_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmRSS:")?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0.0);
    kib / 1024.0
}

/// A figure, not a check: pods per second bound through the API (run with `--ignored
/// --nocapture`). 300 pods (three nodes of 110 pods) created one after the other while the
/// scheduler runs; the time from the first create to the last binding seen. The server runs
/// no controllers; a `kubeplane controller-manager` runs beside the scheduler, and the
/// resident memory of both is printed once every pod is bound.
#[test]
#[ignore]
fn measure_pods_per_second_through_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let server = Served::start(
        dir.path(),
        "127.0.0.1:0",
        &["--controllers=".as_ref()],
        &[],
        false,
    );
    let kubeconfig = server.kubeconfig.clone();
    let (scheduler, port) = scheduler(dir.path(), &kubeconfig, false);
    let kcm = Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .args([
            "controller-manager",
            "--leader-elect=false",
            "--secure-port=0",
        ])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stderr(Stdio::null())
        .spawn()
        .map(Proc)
        .expect("kubeplane controller-manager starts");
    wait_for("/readyz answers ok", 30, || {
        get(port, "/readyz").is_some_and(|(code, _)| code == 200)
    });
    let c = Cluster::new(&kubeconfig);
    let n = 300;
    let start = Instant::now();
    for i in 0..n {
        c.create(pod(&format!("p{i}"), "kubeplane-live", "10m"));
    }
    let created = start.elapsed();
    let bound = || {
        let list = c.rt.block_on(c.pods.list(&ListParams::default())).unwrap();
        list.items
            .iter()
            .filter(|p| p.node_name().is_some())
            .count()
    };
    wait_for("every pod is bound", 120, || bound() == n);
    let all = start.elapsed();
    eprintln!(
        "{n} pods: created in {created:?}, all bound after {all:?}: {:.0} pods/s",
        n as f64 / all.as_secs_f64()
    );
    std::thread::sleep(Duration::from_secs(2));
    eprintln!(
        "resident memory with {n} pods: scheduler {:.1} MiB, controller-manager {:.1} MiB",
        resident_mib(scheduler.0.id()),
        resident_mib(kcm.0.id())
    );
}

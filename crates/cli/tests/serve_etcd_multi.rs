//! Several `kubeplane serve` processes on one three-member etcd (skipped without an etcd
//! binary, except under CI): each serves the whole API, exactly one (the Lease holder) runs
//! the control plane, a client sees its own writes whichever server it asks, and when the
//! leader is killed (`kill -9`) while a client writes and watches through the others, another
//! takes over within the lease duration and pods keep being scheduled. A checker proves that
//! every acknowledged write is present and that the watch saw every change once, in order.

use kubeplane_api::PodExt;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kubeplane_storage::etcd_testing::{etcd_or_skip, EtcdCluster};

mod support;

use support::serve::{deployment, Served};

/// Short election durations, so that the test's failover takes seconds.
const ELECTION: [&str; 6] = [
    "--leader-elect-lease-duration",
    "3s",
    "--leader-elect-renew-deadline",
    "2s",
    "--leader-elect-retry-period",
    "500ms",
];
const LEASE: Duration = Duration::from_secs(3);
const RETRY: Duration = Duration::from_millis(500);

fn start_server(dir: &Path, servers: &str) -> Served {
    let mut args: Vec<&OsStr> = vec!["--etcd-servers".as_ref(), servers.as_ref()];
    args.extend(ELECTION.iter().map(OsStr::new));
    Served::start(dir, "127.0.0.1:0", &args, &[], false)
}

/// Whether the server says it leads (`leader_election_master_status`).
async fn leads(client: &kube::Client) -> Option<bool> {
    let req = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(req).await.ok()?;
    let line = text
        .lines()
        .find(|l| l.starts_with("leader_election_master_status{"))?;
    Some(line.ends_with(" 1"))
}

/// The index of the one leading server among `clients`, once one leads.
async fn leader(clients: &[&kube::Client], within: Duration) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let mut leading = Vec::new();
        for (i, c) in clients.iter().enumerate() {
            if leads(c).await == Some(true) {
                leading.push(i);
            }
        }
        assert!(leading.len() <= 1, "two servers lead at once: {leading:?}");
        if let [one] = leading[..] {
            return one;
        }
        assert!(
            Instant::now() < deadline,
            "no server leads after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn config_map(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"v": value},
    }))
    .unwrap()
}

/// Waits until `n` pods of the Deployment `app` are Running and bound.
async fn running(pods: &Api<Pod>, app: &str, n: usize, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let list = pods
            .list(&ListParams::default().labels(&format!("app={app}")))
            .await
            .unwrap();
        let up = list
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .filter(|p| p.node_name().is_some())
            .count();
        if up >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{n} pods of {app} Running in time ({up})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A write through one server is what a read through another returns at once, both ways,
/// and what the other's admission finds (a Namespace created through one server takes
/// objects through the other at once).
async fn reads_your_writes(x: &Api<ConfigMap>, w: &Api<ConfigMap>) {
    let (xc, wc) = (x.clone().into_client(), w.clone().into_client());
    for i in 0..5 {
        let ns: k8s_openapi::api::core::v1::Namespace =
            serde_json::from_value(serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": format!("ryw-{i}")}}))
            .unwrap();
        Api::all(xc.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
        Api::<ConfigMap>::namespaced(wc.clone(), &format!("ryw-{i}"))
            .create(&PostParams::default(), &config_map("in-new-namespace", "1"))
            .await
            .expect("the other server admits an object in the new namespace at once");
    }
    for i in 0..20 {
        let name = format!("ryw-{i}");
        let created = x
            .create(&PostParams::default(), &config_map(&name, "1"))
            .await
            .unwrap();
        let read = w.get(&name).await.expect("the other server has it at once");
        assert_eq!(
            read.metadata.resource_version,
            created.metadata.resource_version
        );
        let mut changed = read.clone();
        changed.data = Some([("v".to_string(), "2".to_string())].into());
        let updated = w
            .replace(&name, &PostParams::default(), &changed)
            .await
            .expect("an update through the other server with the read resourceVersion");
        let back = x.get(&name).await.unwrap();
        assert_eq!(
            back.metadata.resource_version,
            updated.metadata.resource_version
        );
        assert_eq!(back.data.unwrap()["v"], "2");
        let listed = x.list(&ListParams::default()).await.unwrap();
        assert!(listed
            .items
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some(&name)));
    }
}

/// What the watcher saw of the `w-` ConfigMaps: (name, resourceVersion, value), and how
/// often it had to relist.
#[derive(Default)]
struct Seen {
    events: Vec<(String, u64, String)>,
    relists: usize,
}

/// Watches the ConfigMaps through one server until `done`, from `from`; a watch that ends is
/// started again from the last resourceVersion seen, a 410 relists.
async fn watch_all(
    api: Api<ConfigMap>,
    from: String,
    done: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
) {
    let mut rv = from;
    while !done.load(Ordering::SeqCst) {
        let mut stream = match api.watch(&WatchParams::default().timeout(5), &rv).await {
            Ok(s) => s.boxed(),
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        while let Some(event) = stream.next().await {
            let cm = match event {
                Ok(WatchEvent::Added(c) | WatchEvent::Modified(c) | WatchEvent::Deleted(c)) => c,
                Ok(WatchEvent::Bookmark(b)) => {
                    rv = b.metadata.resource_version;
                    continue;
                }
                Ok(WatchEvent::Error(e)) if e.code == 410 => {
                    let list = api.list(&ListParams::default()).await.unwrap();
                    rv = list.metadata.resource_version.unwrap();
                    seen.lock().unwrap().relists += 1;
                    break;
                }
                _ => break,
            };
            rv = cm.metadata.resource_version.clone().unwrap();
            let name = cm.metadata.name.clone().unwrap();
            if name.starts_with("w-") {
                let value = cm.data.unwrap_or_default().remove("v").unwrap_or_default();
                seen.lock()
                    .unwrap()
                    .events
                    .push((name, rv.parse().unwrap(), value));
            }
        }
    }
}

/// Creates and then updates ConfigMaps through one server until `done`; returns every
/// acknowledged write: (name, resourceVersion, value).
async fn write_all(api: Api<ConfigMap>, done: Arc<AtomicBool>) -> Vec<(String, u64, String)> {
    let mut acknowledged = Vec::new();
    let mut i = 0;
    while !done.load(Ordering::SeqCst) {
        let name = format!("w-{i:04}");
        let created = api
            .create(&PostParams::default(), &config_map(&name, "a"))
            .await
            .expect("writes through a surviving server go on");
        let rv = created.metadata.resource_version.clone().unwrap();
        acknowledged.push((name.clone(), rv.parse().unwrap(), "a".to_string()));
        let mut next = created;
        next.data = Some([("v".to_string(), "b".to_string())].into());
        let updated = api
            .replace(&name, &PostParams::default(), &next)
            .await
            .expect("an update with the create's resourceVersion");
        let rv = updated.metadata.resource_version.unwrap();
        acknowledged.push((name, rv.parse().unwrap(), "b".to_string()));
        i += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    acknowledged
}

/// Every acknowledged write is stored (the last one of each object, at its resourceVersion)
/// and was seen by the watch exactly once, in resourceVersion order, with nothing else.
async fn check(acknowledged: &[(String, u64, String)], seen: &Seen, api: &Api<ConfigMap>) {
    let mut last: BTreeMap<&str, (u64, &str)> = BTreeMap::new();
    for (name, rv, value) in acknowledged {
        last.insert(name, (*rv, value));
    }
    let stored: BTreeMap<String, (u64, String)> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| c.metadata.name.as_deref().unwrap_or("").starts_with("w-"))
        .map(|c| {
            let rv = c.metadata.resource_version.unwrap().parse().unwrap();
            let value = c.data.unwrap_or_default().remove("v").unwrap_or_default();
            (c.metadata.name.unwrap(), (rv, value))
        })
        .collect();
    let want: BTreeMap<String, (u64, String)> = last
        .iter()
        .map(|(n, (rv, v))| (n.to_string(), (*rv, v.to_string())))
        .collect();
    assert_eq!(
        stored, want,
        "every acknowledged write, at its resourceVersion"
    );
    let rvs: Vec<u64> = seen.events.iter().map(|e| e.1).collect();
    assert!(
        rvs.windows(2).all(|w| w[0] < w[1]),
        "the watch saw the changes in order, each once"
    );
    if seen.relists == 0 {
        let mut written = acknowledged.to_vec();
        written.sort_by_key(|w| w.1);
        assert_eq!(
            seen.events, written,
            "the watch saw every acknowledged write, no other"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_servers_on_one_etcd_elect_one_control_plane_and_fail_over_without_losing_writes() {
    let Some(binary) = etcd_or_skip("several servers on one etcd") else {
        return;
    };
    let etcd = EtcdCluster::start(&binary, 3);
    let servers = etcd.endpoints().join(",");
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut served: Vec<Option<Served>> = dirs
        .iter()
        .map(|d| Some(start_server(d.path(), &servers)))
        .collect();
    let mut clients = Vec::new();
    for s in &served {
        clients.push(s.as_ref().unwrap().client().await);
    }
    let l = leader(&clients.iter().collect::<Vec<_>>(), LEASE * 3).await;
    let (x, w) = match l {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    eprintln!("server {l} leads; writes go through {x}, watches through {w}");
    let maps = |i: usize| Api::<ConfigMap>::namespaced(clients[i].clone(), "default");
    reads_your_writes(&maps(x), &maps(w)).await;

    // A Deployment created through a server that does not lead gets Running pods.
    let deployments = Api::<Deployment>::namespaced(clients[x].clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 3))
        .await
        .unwrap();
    let pods_w = Api::<Pod>::namespaced(clients[w].clone(), "default");
    running(&pods_w, "web", 3, Duration::from_secs(30)).await;

    let from = maps(w)
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let watcher = tokio::spawn(watch_all(maps(w), from, done.clone(), seen.clone()));
    let writes_done = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(write_all(maps(x), writes_done.clone()));
    tokio::time::sleep(Duration::from_secs(1)).await;

    let killed = Instant::now();
    drop(served[l].take()); // SIGKILL
    let survivors = [&clients[x], &clients[w]];
    let next = leader(&survivors, LEASE * 4).await;
    let failover = killed.elapsed();
    eprintln!(
        "failover: server {} leads {:.2}s after the leader was killed (lease {:?}, retry {:?})",
        [x, w][next],
        failover.as_secs_f64(),
        LEASE,
        RETRY
    );
    assert!(
        failover < LEASE + RETRY * 3,
        "taken over within the lease duration (and the retries around it): {failover:?}"
    );

    // Pods keep being scheduled by the new leader.
    deployments
        .create(&PostParams::default(), &deployment("after", 2))
        .await
        .unwrap();
    running(&pods_w, "after", 2, Duration::from_secs(30)).await;

    writes_done.store(true, Ordering::SeqCst);
    let acknowledged = writer.await.unwrap();
    // The watch catches up with the last acknowledged write, then stops.
    let last_rv = acknowledged.last().map(|w| w.1).unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().events.last().map(|e| e.1).unwrap_or(0) < last_rv {
        assert!(
            Instant::now() < deadline,
            "the watch saw the last write in time"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done.store(true, Ordering::SeqCst);
    let _ = tokio::time::timeout(Duration::from_secs(10), watcher).await;
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    eprintln!(
        "{} acknowledged writes during the failover, {} watch events, {} relists",
        acknowledged.len(),
        seen.events.len(),
        seen.relists
    );
    assert!(acknowledged.len() > 20, "the client kept writing");
    check(&acknowledged, &seen, &maps(x)).await;
    drop(served);
    drop(etcd);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_runs_past_request_timeout_gets_upstreams_504() {
    let Some(binary) = etcd_or_skip("serve --request-timeout") else {
        return;
    };
    let etcd = EtcdCluster::start(&binary, 1);
    let dir = tempfile::tempdir().unwrap();
    let servers = etcd.endpoints().join(",");
    let flags: [&OsStr; 4] = [
        "--etcd-servers".as_ref(),
        servers.as_ref(),
        "--request-timeout".as_ref(),
        "2s".as_ref(),
    ];
    let mut server = Served::start(dir.path(), "127.0.0.1:0", &flags, &[], false);
    let maps: Api<ConfigMap> = Api::namespaced(server.client_without_retries().await, "default");
    let pp = PostParams::default();
    maps.create(&pp, &config_map("before", "1")).await.unwrap();
    // etcd frozen: it would answer nothing for the storage's own 10 s deadline.
    etcd.pause_member(0);
    let started = Instant::now();
    let write = tokio::time::timeout(
        Duration::from_secs(30),
        maps.create(&pp, &config_map("during", "1")),
    )
    .await;
    let took = started.elapsed();
    etcd.resume_member(0);
    match write.expect("an answer within 30 s") {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (504, "Timeout"), "{s:?}");
            assert_eq!(
                s.message,
                "Timeout: request did not complete within the allotted timeout"
            );
        }
        other => panic!("expected a 504 Timeout Status, got {other:?}"),
    }
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(6),
        "answered at the request timeout, not the storage's deadline: {took:?}"
    );
    assert!(server.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reaches_an_etcd_that_requires_tls_and_client_certificates() {
    use kubeplane_storage::etcd_testing::TlsFiles;
    let Some(binary) = etcd_or_skip("serve on etcd over TLS") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A CA, a serving certificate for 127.0.0.1 and a client certificate, made with rcgen.
    let creds = kubeplane_server::tls::generate(&["127.0.0.1".to_string()]).unwrap();
    let file = |name: &str, pem: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, pem).unwrap();
        path
    };
    let files = TlsFiles {
        ca: file("ca.crt", &creds.ca_cert),
        cert: file("etcd.crt", &creds.serving_cert),
        key: file("etcd.key", &creds.serving_key),
    };
    let client_cert = file("client.crt", &creds.client_cert);
    let client_key = file("client.key", &creds.client_key);
    let etcd = EtcdCluster::start_tls(&binary, 1, files.clone());
    let servers = etcd.endpoints().join(",");
    assert!(servers.starts_with("https://"), "{servers}");
    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let flags: [&OsStr; 8] = [
        "--etcd-servers".as_ref(),
        servers.as_ref(),
        "--etcd-cafile".as_ref(),
        files.ca.as_os_str(),
        "--etcd-certfile".as_ref(),
        client_cert.as_os_str(),
        "--etcd-keyfile".as_ref(),
        client_key.as_os_str(),
    ];
    let server = Served::start(&served, "127.0.0.1:0", &flags, &[], false);
    let maps: Api<ConfigMap> = Api::namespaced(server.client().await, "default");
    let created = maps
        .create(&PostParams::default(), &config_map("over-tls", "1"))
        .await
        .unwrap();
    let read = maps.get("over-tls").await.unwrap();
    assert_eq!(
        read.metadata.resource_version,
        created.metadata.resource_version
    );
    drop(server);

    // Without a client certificate etcd refuses the connection: the server does not start.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--etcd-servers",
            &servers,
        ])
        .arg("--etcd-cafile")
        .arg(&files.ca)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "refused without a client certificate"
    );
}

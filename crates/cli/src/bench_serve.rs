//! The `kubeplane serve` benchmarks: the server started in this process on a free loopback
//! port, driven over HTTPS by client threads with keep-alive connections (a small HTTP/1.1
//! client over rustls, so the figures are the server's and not a client library's). Wall
//! time is measured here, at the edge.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubeplane_core::version::KubeVersion;
use kubeplane_server::{Config, Handle};
use kubeplane_sim::workloads;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

use crate::bench_support::{figure, label as record_label, param, peak_memory_mib, Workload};

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// One keep-alive HTTPS connection to the server.
struct Conn {
    stream: BufReader<Tls>,
    token: String,
}

impl Conn {
    fn open(h: &Handle) -> Result<Conn, String> {
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(h.credentials.ca_cert.as_bytes()) {
            roots
                .add(c.map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        let name = ServerName::try_from("127.0.0.1").map_err(|e| e.to_string())?;
        let conn = rustls::ClientConnection::new(Arc::new(cfg), name).map_err(|e| e.to_string())?;
        let tcp = TcpStream::connect(&h.address).map_err(|e| e.to_string())?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Conn {
            stream: BufReader::new(rustls::StreamOwned::new(conn, tcp)),
            token: h.credentials.token.clone(),
        })
    }

    /// Sends a watch request and reads its response head (the events follow, chunked).
    fn start_watch(&mut self, path: &str) -> Result<(), String> {
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\r\n",
            self.token
        );
        let io = |e: std::io::Error| e.to_string();
        self.stream
            .get_mut()
            .write_all(req.as_bytes())
            .map_err(io)?;
        let mut line = String::new();
        self.stream.read_line(&mut line).map_err(io)?;
        if !line.contains(" 200 ") {
            return Err(format!("watch {path}: {}", line.trim()));
        }
        while line != "\r\n" && !line.is_empty() {
            line.clear();
            self.stream.read_line(&mut line).map_err(io)?;
        }
        Ok(())
    }

    /// The object name of the next ADDED event of a watch (chunk sizes and bookmarks are
    /// skipped).
    fn next_event_name(&mut self) -> Result<String, String> {
        let mut line = String::new();
        loop {
            line.clear();
            let read = self
                .stream
                .read_line(&mut line)
                .map_err(|e| e.to_string())?;
            if read == 0 {
                return Err("the watch ended".into());
            }
            if !line.starts_with('{') {
                continue;
            }
            let v: serde_json::Value =
                serde_json::from_str(line.trim()).map_err(|e| e.to_string())?;
            if v["type"] == "ADDED" {
                let name = v["object"]["metadata"]["name"].as_str().unwrap_or_default();
                return Ok(name.to_string());
            }
        }
    }

    /// One request; the status code and the body.
    fn call(&mut self, method: &str, path: &str, body: &str) -> Result<(u16, Vec<u8>), String> {
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.token,
            body.len()
        );
        let io = |e: std::io::Error| e.to_string();
        self.stream
            .get_mut()
            .write_all(req.as_bytes())
            .map_err(io)?;
        let mut line = String::new();
        self.stream.read_line(&mut line).map_err(io)?;
        let code: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or("a status line")?;
        let mut len = 0usize;
        loop {
            line.clear();
            self.stream.read_line(&mut line).map_err(io)?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().map_err(|_| "a content length")?;
            }
        }
        let mut out = vec![0; len];
        self.stream.read_exact(&mut out).map_err(io)?;
        Ok((code, out))
    }
}

fn start(version: KubeVersion, objects: Vec<kubeplane_api::Object>) -> Result<Handle, String> {
    start_in(version, objects, Place::Memory)
}

/// Where a benchmark's server keeps its state.
#[derive(Clone, Debug)]
enum Place {
    Memory,
    /// `--data-dir`: every write waits until it is on disk.
    Dir(std::path::PathBuf),
    /// `--etcd-servers`, under a prefix of the run's own.
    Etcd(Vec<String>, String),
}

impl Place {
    fn label(&self) -> &'static str {
        match self {
            Place::Memory => "",
            Place::Dir(_) => "Durable",
            Place::Etcd(..) => "Etcd",
        }
    }
}

/// The etcd the `-etcd` benchmarks use: `KUBEPLANE_BENCH_ETCD_SERVERS` (client URLs), each run
/// under a key prefix of its own; `None` (the benchmark says it is skipped) without it.
fn bench_etcd(what: &str) -> Option<Place> {
    let Ok(urls) = std::env::var("KUBEPLANE_BENCH_ETCD_SERVERS") else {
        println!("{what}: skipped (set KUBEPLANE_BENCH_ETCD_SERVERS to an etcd's client URLs)");
        return None;
    };
    let servers = urls.split(',').map(str::to_string).collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    Some(Place::Etcd(servers, format!("/kubeplane-bench/{nanos}")))
}

/// [`start`], keeping the state where `place` says.
fn start_in(
    version: KubeVersion,
    objects: Vec<kubeplane_api::Object>,
    place: Place,
) -> Result<Handle, String> {
    let mut config = Config {
        listen: "127.0.0.1:0".parse().expect("an address"),
        ..Config::default()
    };
    match place {
        Place::Memory => {}
        Place::Dir(dir) => config.data_dir = Some(dir),
        Place::Etcd(servers, prefix) => {
            config.etcd_servers = Some(servers);
            config.etcd_prefix = Some(prefix);
        }
    }
    let scenario = kubeplane_sim::scenario::Scenario::for_version(Some(version));
    let input = workloads::input(objects, scenario);
    kubeplane_server::start(config, input).map_err(|e| e.to_string())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// `n` calls spread over `clients` threads; each call is `make(thread, i)` → (method, path,
/// body). Returns the sorted latencies and the wall time.
fn drive(
    h: &Handle,
    clients: usize,
    n: usize,
    make: &(dyn Fn(usize, usize) -> (String, String, String) + Sync),
) -> Result<(Vec<Duration>, f64), String> {
    let started = Instant::now();
    let results: Vec<Result<Vec<Duration>, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|t| {
                s.spawn(move || {
                    let mut conn = Conn::open(h)?;
                    let mut lat = Vec::new();
                    for i in (t..n).step_by(clients) {
                        let (m, p, b) = make(t, i);
                        let at = Instant::now();
                        let (code, _) = conn.call(&m, &p, &b)?;
                        lat.push(at.elapsed());
                        if code >= 300 {
                            return Err(format!("{m} {p}: HTTP {code}"));
                        }
                    }
                    Ok(lat)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a client panicked".into())))
            .collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let mut all = Vec::new();
    for r in results {
        all.extend(r?);
    }
    all.sort();
    Ok((all, wall))
}

/// API latency of create, get and list of ConfigMaps under 1, 16 and 64 concurrent clients.
pub fn api_latency(version: KubeVersion, n: usize) -> Result<(), String> {
    api_latency_in(version, n, Place::Memory)
}

/// [`api_latency`] on etcd (`KUBEPLANE_BENCH_ETCD_SERVERS`).
pub fn api_latency_etcd(version: KubeVersion, n: usize) -> Result<(), String> {
    match bench_etcd("ServeAPIEtcd") {
        Some(place) => api_latency_in(version, n, place),
        None => Ok(()),
    }
}

/// [`api_latency`] with the state in a new data directory: every create waits until it is
/// on disk (the storage's group commit).
pub fn api_latency_durable(version: KubeVersion, n: usize) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("kubeplane-bench-durable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let result = api_latency_in(version, n, Place::Dir(dir.clone()));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn api_latency_in(version: KubeVersion, n: usize, place: Place) -> Result<(), String> {
    let label = place.label();
    let h = start_in(version, Vec::new(), place)?;
    record_label(&format!("ServeAPI{label}"));
    param("calls_per_verb", n);
    for clients in [1, 16, 64] {
        let ns = format!("c{clients}");
        let create = move |_: usize, i: usize| {
            let body = format!("{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"cm-{i}\"}},\"data\":{{\"k\":\"v\"}}}}");
            (
                "POST".to_string(),
                format!("/api/v1/namespaces/{ns}/configmaps"),
                body,
            )
        };
        let mut setup = Conn::open(&h)?;
        setup.call("POST", "/api/v1/namespaces", &format!("{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"c{clients}\"}}}}"))?;
        let ns = format!("c{clients}");
        let get = |_: usize, i: usize| {
            (
                "GET".to_string(),
                format!("/api/v1/namespaces/{ns}/configmaps/cm-{i}"),
                String::new(),
            )
        };
        let list = |_: usize, _: usize| {
            (
                "GET".to_string(),
                format!("/api/v1/namespaces/{ns}/configmaps?limit=100"),
                String::new(),
            )
        };
        for (verb, make, count) in [
            (
                "create",
                &create as &(dyn Fn(usize, usize) -> (String, String, String) + Sync),
                n,
            ),
            ("get", &get, n),
            ("list (100 of them)", &list, n / 10),
        ] {
            let (lat, wall) = drive(&h, clients, count, make)?;
            let what = format!("{verb}, {clients} clients");
            figure(&what, count as f64 / wall, "calls/s");
            figure(&format!("{what}, p50"), percentile(&lat, 0.5), "ms");
            figure(&format!("{what}, p99"), percentile(&lat, 0.99), "ms");
            println!(
                "ServeAPI{label}/{verb}/{clients}Clients: {count} calls, {:.0} calls/s, p50 {:.2} ms, p99 {:.2} ms",
                count as f64 / wall,
                percentile(&lat, 0.5),
                percentile(&lat, 0.99)
            );
        }
    }
    h.stop();
    Ok(())
}

/// `n_pods` pods created through the API on `n_nodes` nodes until all are Running.
pub fn pods_end_to_end(version: KubeVersion, n_nodes: usize, n_pods: usize) -> Result<(), String> {
    pods_end_to_end_in(version, n_nodes, n_pods, Place::Memory)
}

/// [`pods_end_to_end`] on etcd (`KUBEPLANE_BENCH_ETCD_SERVERS`).
pub fn pods_end_to_end_etcd(
    version: KubeVersion,
    n_nodes: usize,
    n_pods: usize,
) -> Result<(), String> {
    match bench_etcd("ServePodsEtcd") {
        Some(place) => pods_end_to_end_in(version, n_nodes, n_pods, place),
        None => Ok(()),
    }
}

fn pods_end_to_end_in(
    version: KubeVersion,
    n_nodes: usize,
    n_pods: usize,
    place: Place,
) -> Result<(), String> {
    let label = place.label();
    let h = start_in(version, workloads::nodes(n_nodes), place)?;
    let body = |i: usize| {
        format!("{{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{{\"name\":\"p-{i}\"}},\"spec\":{{\"containers\":[{{\"name\":\"c\",\"image\":\"pause\",\"resources\":{{\"requests\":{{\"cpu\":\"10m\",\"memory\":\"10Mi\"}}}}}}]}}}}")
    };
    let create = |_: usize, i: usize| {
        (
            "POST".to_string(),
            "/api/v1/namespaces/default/pods".to_string(),
            body(i),
        )
    };
    let started = Instant::now();
    let (lat, _) = drive(&h, 16, n_pods, &create)?;
    let created = started.elapsed().as_secs_f64();
    let mut conn = Conn::open(&h)?;
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        // Done when no pod is left that is not Running.
        let (_, b) = conn.call(
            "GET",
            "/api/v1/namespaces/default/pods?fieldSelector=status.phase%21%3DRunning&limit=1",
            "",
        )?;
        let v: serde_json::Value = serde_json::from_slice(&b).map_err(|e| e.to_string())?;
        if v["items"].as_array().is_some_and(Vec::is_empty) {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "ServePods: not all {n_pods} pods Running after 600 s"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let wall = started.elapsed().as_secs_f64();
    record_label(&format!("ServePods{label}/{n_nodes}Nodes_{n_pods}Pods"));
    param("nodes", n_nodes);
    param("pods", n_pods);
    figure("end to end", n_pods as f64 / wall, "pods/s");
    figure("created in", created, "s");
    figure("create p50", percentile(&lat, 0.5), "ms");
    figure("create p99", percentile(&lat, 0.99), "ms");
    println!(
        "ServePods{label}/{n_nodes}Nodes_{n_pods}Pods: {:.0} pods/s end to end (created in {created:.2} s, create p50 {:.2} ms, p99 {:.2} ms; all Running after {wall:.2} s), peak memory {:.0} MiB",
        n_pods as f64 / wall,
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        peak_memory_mib().unwrap_or(0.0)
    );
    h.stop();
    Ok(())
}

/// One LIST of every pod of a large cluster (the pods given as the server's input).
pub fn list_all(version: KubeVersion, n_nodes: usize, n_pods: usize) -> Result<(), String> {
    let mut objects = workloads::nodes(n_nodes);
    objects.extend(workloads::pods("default", "pod", n_pods));
    let loaded = Instant::now();
    let h = start(version, objects)?;
    let load = loaded.elapsed().as_secs_f64();
    let mut conn = Conn::open(&h)?;
    let mut best = f64::MAX;
    let mut size = 0;
    for _ in 0..3 {
        let at = Instant::now();
        let (code, body) = conn.call("GET", "/api/v1/pods", "")?;
        if code != 200 {
            return Err(format!("LIST pods: HTTP {code}"));
        }
        best = best.min(at.elapsed().as_secs_f64());
        size = body.len();
    }
    record_label(&format!("ServeList/{n_pods}Pods"));
    param("nodes", n_nodes);
    param("pods", n_pods);
    figure("LIST", best, "s");
    figure("loaded in", load, "s");
    println!(
        "ServeList/{n_pods}Pods: LIST of {n_pods} pods in {best:.3} s ({:.0} MiB of JSON; loaded in {load:.1} s), peak memory {:.0} MiB",
        size as f64 / 1048576.0,
        peak_memory_mib().unwrap_or(0.0)
    );
    h.stop();
    Ok(())
}

/// `watchers` concurrent watches of one namespace's ConfigMaps while `n` ConfigMaps are
/// created there one at a time: the delay from each create's acknowledgement to each watcher
/// reading its ADDED event.
pub fn watch_delivery(version: KubeVersion, watchers: usize, n: usize) -> Result<(), String> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    let h = start(version, Vec::new())?;
    let mut setup = Conn::open(&h)?;
    let ns = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"w"}}"#;
    setup.call("POST", "/api/v1/namespaces", ns)?;
    let acked: Mutex<HashMap<String, Instant>> = Mutex::new(HashMap::new());
    let ready = std::sync::Barrier::new(watchers + 1);
    let path = "/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=0";
    let started = Instant::now();
    let results: Vec<Result<Vec<(String, Instant)>, String>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..watchers)
            .map(|_| {
                sc.spawn(|| {
                    let opened = Conn::open(&h).and_then(|mut c| c.start_watch(path).map(|_| c));
                    ready.wait();
                    let mut conn = opened?;
                    let mut seen = Vec::with_capacity(n);
                    while seen.len() < n {
                        let name = conn.next_event_name()?;
                        seen.push((name, Instant::now()));
                    }
                    Ok(seen)
                })
            })
            .collect();
        ready.wait();
        for i in 0..n {
            let body = format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}"}}}}"#
            );
            if let Err(e) = setup.call("POST", "/api/v1/namespaces/w/configmaps", &body) {
                eprintln!("serve-watch: create: {e}");
            }
            if let Ok(mut a) = acked.lock() {
                a.insert(format!("cm-{i}"), Instant::now());
            }
        }
        handles
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err("a watcher panicked".into()))
            })
            .collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let acked = acked.into_inner().map_err(|_| "a poisoned lock")?;
    let mut lat = Vec::new();
    for r in results {
        for (name, at) in r? {
            let sent = acked
                .get(&name)
                .ok_or("an event for an object never created")?;
            lat.push(at.saturating_duration_since(*sent));
        }
    }
    lat.sort();
    report_watch(watchers, n, &lat, wall);
    h.stop();
    Ok(())
}

/// Records and prints what [`watch_delivery`] measured: `lat`, sorted, over `wall` seconds.
fn report_watch(watchers: usize, n: usize, lat: &[Duration], wall: f64) {
    record_label(&format!("ServeWatch/{watchers}Watchers"));
    param("watchers", watchers);
    param("creates", n);
    figure("delivered", lat.len() as f64 / wall, "events/s");
    figure("p50", percentile(lat, 0.5), "ms");
    figure("p99", percentile(lat, 0.99), "ms");
    println!(
        "ServeWatch/{watchers}Watchers: {n} creates, {} events delivered, {:.0} events/s, p50 {:.2} ms, p99 {:.2} ms after the create's acknowledgement",
        lat.len(),
        lat.len() as f64 / wall,
        percentile(lat, 0.5),
        percentile(lat, 0.99)
    );
}

/// The server's workloads, scaled down by `s`, the server following Kubernetes `v`.
pub fn workloads(s: usize, v: KubeVersion) -> Vec<Workload> {
    vec![
        Workload {
            name: "serve-api",
            about: "kubeplane serve over HTTPS: create, get and list latency, 1, 16 and 64 clients",
            run: Box::new(move || api_latency(v, 2000 / s)),
        },
        Workload {
            name: "serve-api-durable",
            about: "kubeplane serve --data-dir: durable create, get and list latency, 1, 16 and 64 clients",
            run: Box::new(move || api_latency_durable(v, 2000 / s)),
        },
        Workload {
            name: "serve-pods",
            about:
                "kubeplane serve: 10,000 pods created through the API on 500 nodes until Running",
            run: Box::new(move || pods_end_to_end(v, 500 / s, 10000 / s)),
        },
        Workload {
            name: "serve-api-etcd",
            about: "kubeplane serve --etcd-servers $KUBEPLANE_BENCH_ETCD_SERVERS: create, get and list latency",
            run: Box::new(move || api_latency_etcd(v, 2000 / s)),
        },
        Workload {
            name: "serve-pods-etcd",
            about: "kubeplane serve on etcd: 10,000 pods created through the API on 500 nodes until Running",
            run: Box::new(move || pods_end_to_end_etcd(v, 500 / s, 10000 / s)),
        },
        Workload {
            name: "serve-watch",
            about: "kubeplane serve: 1,000 concurrent watchers, delivery latency of 200 creates",
            run: Box::new(move || watch_delivery(v, 1000 / s, 200 / s.min(10))),
        },
        Workload {
            name: "serve-list",
            about: "kubeplane serve: one LIST of 150,000 pods",
            run: Box::new(move || list_all(v, 5000 / s, 150000 / s)),
        },
    ]
}

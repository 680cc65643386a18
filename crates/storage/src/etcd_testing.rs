//! Real etcd servers for tests: [`EtcdCluster::start`] runs `etcd` members on free loopback
//! ports (client and peer) in a temporary directory and stops them when dropped.
//!
//! The binary is `$KUBEPLANE_ETCD`, else `etcd` on `PATH`, else `target/tools/etcd` of the
//! workspace (where `scripts/install-etcd.sh` puts it). Without one, a test prints a skip line
//! and passes, except under CI (`CI=true`), where a missing etcd fails the test.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The etcd binary the tests use, if there is one.
pub fn etcd_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KUBEPLANE_ETCD") {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("etcd"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let cwd = std::env::current_dir().ok()?;
        cwd.ancestors()
            .map(|dir| dir.join("target/tools/etcd"))
            .find(|p| p.is_file())
    })
}

/// The binary, or `None` after printing why the test `name` is skipped; panics under CI.
pub fn etcd_or_skip(name: &str) -> Option<PathBuf> {
    let binary = etcd_binary();
    if binary.is_none() {
        let why =
            "no etcd binary (set KUBEPLANE_ETCD, put etcd on PATH, or run scripts/install-etcd.sh)";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{name}: {why}; CI must install etcd");
        }
        eprintln!("skipped {name}: {why}");
    }
    binary
}

/// A port nobody listens on now, and never handed out before in this process: the kernel may
/// give the port it just freed to the next bind, and a member given one port for two URLs
/// fails to start ("address already in use"). The CLI's tests take their ports here too.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("local address").port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// One member of a test cluster.
struct Member {
    name: String,
    client: u16,
    peer: u16,
    /// Plain-HTTP `/health` and `/metrics` (`--listen-metrics-urls`) of a TLS cluster.
    metrics: u16,
    child: Option<Child>,
}

/// The PEM files of a cluster that serves clients over TLS and requires client certificates.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The CA that signed the members' and the clients' certificates.
    pub ca: PathBuf,
    /// The members' serving certificate (for `127.0.0.1`) and its key.
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Loopback etcd members in a temporary directory, stopped (killed) and removed when dropped.
pub struct EtcdCluster {
    binary: PathBuf,
    dir: PathBuf,
    members: Vec<Member>,
    tls: Option<TlsFiles>,
}

impl EtcdCluster {
    /// Starts `size` members forming one cluster and waits until each answers `/health`.
    pub fn start(binary: &Path, size: usize) -> EtcdCluster {
        EtcdCluster::start_with(binary, size, None)
    }

    /// [`EtcdCluster::start`] with `https://` client URLs served with `tls`'s certificate and
    /// client certificates required (`--client-cert-auth`, signed by `tls`'s CA).
    pub fn start_tls(binary: &Path, size: usize, tls: TlsFiles) -> EtcdCluster {
        EtcdCluster::start_with(binary, size, Some(tls))
    }

    fn start_with(binary: &Path, size: usize, tls: Option<TlsFiles>) -> EtcdCluster {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("kubeplane-etcd-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the etcd directory");
        let members = (0..size)
            .map(|i| Member {
                name: format!("m{i}"),
                client: free_port(),
                peer: free_port(),
                metrics: free_port(),
                child: None,
            })
            .collect();
        let mut cluster = EtcdCluster {
            binary: binary.to_path_buf(),
            dir,
            members,
            tls,
        };
        for i in 0..size {
            cluster.run_member(i);
        }
        for i in 0..size {
            cluster.wait_healthy(i);
        }
        cluster
    }

    /// Starts member `i` (again, on its data directory after [`EtcdCluster::stop_member`]).
    pub fn run_member(&mut self, i: usize) {
        let initial: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer))
            .collect();
        let m = &self.members[i];
        let log = std::fs::File::create(self.dir.join(format!("{}.log", m.name)))
            .expect("create the etcd log");
        let mut command = Command::new(&self.binary);
        if let Some(tls) = &self.tls {
            command
                .arg("--cert-file")
                .arg(&tls.cert)
                .arg("--key-file")
                .arg(&tls.key)
                .arg("--trusted-ca-file")
                .arg(&tls.ca)
                .arg("--client-cert-auth")
                .arg("--listen-metrics-urls")
                .arg(format!("http://127.0.0.1:{}", m.metrics));
        }
        let client_url = format!("{}://127.0.0.1:{}", self.scheme(), m.client);
        let child = command
            .arg("--name")
            .arg(&m.name)
            .arg("--data-dir")
            .arg(self.dir.join(&m.name))
            .arg("--listen-client-urls")
            .arg(&client_url)
            .arg("--advertise-client-urls")
            .arg(&client_url)
            .arg("--listen-peer-urls")
            .arg(format!("http://127.0.0.1:{}", m.peer))
            .arg("--initial-advertise-peer-urls")
            .arg(format!("http://127.0.0.1:{}", m.peer))
            .arg("--initial-cluster")
            .arg(initial.join(","))
            .arg("--initial-cluster-state")
            .arg("new")
            .arg("--initial-cluster-token")
            .arg(self.dir.display().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start etcd");
        self.members[i].child = Some(child);
    }

    /// Waits up to 30 s until member `i` reports itself healthy.
    pub fn wait_healthy(&self, i: usize) {
        let m = &self.members[i];
        let port = if self.tls.is_some() {
            m.metrics
        } else {
            m.client
        };
        for _ in 0..300 {
            if health(port) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = std::fs::read_to_string(self.dir.join(format!("{}.log", self.members[i].name)));
        panic!(
            "etcd member {i} did not become healthy; its log:\n{}",
            log.unwrap_or_default()
        );
    }

    /// Kills member `i` (`SIGKILL`), keeping its data directory.
    pub fn stop_member(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes member `i` (`SIGSTOP`): it keeps its connections but answers nothing, as a
    /// member stuck on a slow disk or a lost network does, until [`EtcdCluster::resume_member`].
    pub fn pause_member(&self, i: usize) {
        self.signal(i, "-STOP");
    }

    /// Lets a member frozen by [`EtcdCluster::pause_member`] go on (`SIGCONT`).
    pub fn resume_member(&self, i: usize) {
        self.signal(i, "-CONT");
    }

    fn signal(&self, i: usize, signal: &str) {
        let child = self.members[i].child.as_ref().expect("a running member");
        let status = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} member {i}");
    }

    /// The value and mod revision of the raw etcd key `key`, read with the `etcdctl` beside
    /// the `etcd` binary (its `-w fields` output).
    pub fn get(&self, key: &str) -> Option<(String, u64)> {
        let etcdctl = self.binary.with_file_name("etcdctl");
        let output = Command::new(etcdctl)
            .arg("--endpoints")
            .arg(self.endpoints().join(","))
            .args(["get", key, "-w", "fields"])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&output.stdout);
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("\"{name}\" : ")))
                .map(|v| v.trim().trim_matches('"').to_string())
        };
        Some((field("Value")?, field("ModRevision")?.parse().ok()?))
    }

    /// The client URLs of every member.
    pub fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("{}://127.0.0.1:{}", self.scheme(), m.client))
            .collect()
    }

    fn scheme(&self) -> &'static str {
        match self.tls {
            Some(_) => "https",
            None => "http",
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.stop_member(i);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether the member listening on `port` answers `/health` with `"health":"true"`.
fn health(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.contains("\"health\":\"true\"")
}

//! [`EtcdStorage`]: the storage contract over an etcd cluster (the v3 API), as kube-apiserver
//! keeps its objects there.
//!
//! Keys follow kube-apiserver's layout: `<prefix>/<resource>/<namespace>/<name>`, or
//! `<prefix>/<resource>/<name>` for a cluster-scoped object, with the prefix `/registry` by
//! default (its `--etcd-prefix`); the resource is the storage's (the registry names Nodes
//! `minions` and built-in groups have no group segment). Values are what the [`Codec`] makes of
//! them. A version's revisions are etcd's: `mod_revision` is the key's etcd mod revision, which
//! is the object's resourceVersion.
//!
//! Writes are upstream's transactions: a create puts the key only if its mod revision is 0; an
//! update or a delete changes it only if it exists and, when given an expected revision, its
//! mod revision is that one; otherwise the transaction reads the key back and the answer is
//! AlreadyExists, NotFound or Conflict. Reads go to etcd (a list pages through one pinned
//! revision). Watches and [`Storage::current_revision`]'s followers read the watch log of
//! `etcd_log.rs`; a write returns once the log has its event.
//!
//! Revisions: etcd's empty store is at revision 1, so the first write is revision 2 (not 1 as
//! in memory); reads at revision 0 are below the oldest revision and `Gone`.
//!
//! The etcd client is asynchronous; the storage runs it on a small runtime of its own (one
//! worker thread) and its synchronous methods wait for the answers, so they may be called from
//! any thread, including an async runtime's (they block it for one round trip, as the durable
//! storage blocks for a sync).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions, GetOptions, KeyValue};

use crate::api::{
    Event, ListOptions, ListPage, Result, Revision, Storage, StorageError, Versioned, Watcher,
};
use crate::etcd_compact::Compactor;
use crate::etcd_health::{failure, not_sent, Failure, Health};
use crate::etcd_log::{version, EtcdWatcher, Feeder, Log};
use crate::journal::Codec;
use crate::key::{Key, Prefix};

/// How to reach etcd and what to keep.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// The client URLs of the cluster's members (`http://127.0.0.1:2379`).
    pub endpoints: Vec<String>,
    /// The prefix of every key (kube-apiserver's `--etcd-prefix`, `/registry`).
    pub prefix: String,
    /// The most events the watch log keeps (older ones are `Gone` for watches).
    pub window: usize,
    /// How long one call to etcd may take before it fails as unavailable.
    pub timeout: Duration,
    /// Compact the history this often (kube-apiserver's `--etcd-compaction-interval`, 5
    /// minutes by default), keeping one interval of history; `None`: never.
    pub compaction_interval: Option<Duration>,
    /// TLS to the members (`https://` endpoints): kube-apiserver's `--etcd-cafile`,
    /// `--etcd-certfile` and `--etcd-keyfile`.
    pub tls: Option<EtcdTls>,
}

/// The PEM files of TLS to etcd: the CA that signed the members' certificates (the system's
/// roots when `None`) and the client certificate and key (for etcd's `--client-cert-auth`).
#[derive(Clone, Debug, Default)]
pub struct EtcdTls {
    pub ca: Option<Vec<u8>>,
    pub cert_and_key: Option<(Vec<u8>, Vec<u8>)>,
}

impl EtcdTls {
    fn options(&self) -> etcd_client::TlsOptions {
        let mut tls = etcd_client::TlsOptions::new();
        if let Some(ca) = &self.ca {
            tls = tls.ca_certificate(etcd_client::Certificate::from_pem(ca));
        }
        if let Some((cert, key)) = &self.cert_and_key {
            tls = tls.identity(etcd_client::Identity::from_pem(cert, key));
        }
        tls
    }
}

impl EtcdConfig {
    /// kube-apiserver's defaults for these endpoints.
    pub fn new(endpoints: Vec<String>) -> EtcdConfig {
        EtcdConfig {
            endpoints,
            prefix: "/registry".into(),
            window: 200_000,
            timeout: Duration::from_secs(10),
            compaction_interval: Some(Duration::from_secs(300)),
            tls: None,
        }
    }
}

/// How a storage [`Key`] is spelled in etcd.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    /// The prefix with a trailing `/`.
    root: String,
}

/// The first key after every key that starts with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

impl Layout {
    fn new(prefix: &str) -> Layout {
        Layout {
            root: format!("{}/", prefix.trim_end_matches('/')),
        }
    }

    /// `<root><resource>/<namespace>/<name>`, without the namespace when it is empty.
    pub(crate) fn key(&self, key: &Key) -> Vec<u8> {
        let mut s = format!("{}{}/", self.root, key.resource());
        if !key.namespace().is_empty() {
            s.push_str(key.namespace());
            s.push('/');
        }
        s.push_str(key.name());
        s.into_bytes()
    }

    /// The etcd range `[start, end)` of a prefix's keys (a cluster-scoped prefix's range also
    /// holds the namespaced keys of its resource, which lists leave out).
    pub(crate) fn range(&self, prefix: &Prefix) -> (Vec<u8>, Vec<u8>) {
        let start = match prefix {
            Prefix::All => self.root.clone(),
            Prefix::Resource(r) => format!("{}{r}/", self.root),
            Prefix::Namespace(r, ns) if ns.is_empty() => format!("{}{r}/", self.root),
            Prefix::Namespace(r, ns) => format!("{}{r}/{ns}/", self.root),
        };
        let end = prefix_end(start.as_bytes());
        (start.into_bytes(), end)
    }

    /// The storage key an etcd key spells, if it is one: the resource is the first segment
    /// after the root, or the first two when the first names a group (it has a dot, as
    /// `apiextensions.k8s.io/customresourcedefinitions`) or is `services` (kube-apiserver's
    /// `services/specs` and `services/endpoints`); then a name, or a namespace and a name.
    pub(crate) fn parse(&self, raw: &[u8]) -> Option<Key> {
        let rest = std::str::from_utf8(raw).ok()?.strip_prefix(&self.root)?;
        let parts: Vec<&str> = rest.split('/').collect();
        let group = parts.first()?.contains('.') || parts[0] == "services";
        let (resource, tail) = if group && parts.len() > 2 {
            (format!("{}/{}", parts[0], parts[1]), &parts[2..])
        } else {
            (parts[0].to_string(), &parts[1..])
        };
        match tail {
            [name] if !name.is_empty() => Some(Key::cluster(&resource, name)),
            [ns, name] if !ns.is_empty() && !name.is_empty() => Some(Key::new(&resource, ns, name)),
            _ => None,
        }
    }
}

pub(crate) fn unavailable(message: impl std::fmt::Display) -> StorageError {
    StorageError::Unavailable {
        message: format!("etcd: {message}"),
    }
}

/// Storage in an etcd cluster; see the module documentation. Dropping it stops its runtime
/// (the watch and the compactor).
pub struct EtcdStorage<V> {
    pub(crate) runtime: Option<tokio::runtime::Runtime>,
    pub(crate) handle: tokio::runtime::Handle,
    pub(crate) client: Client,
    pub(crate) layout: Layout,
    pub(crate) codec: Arc<dyn Codec<V>>,
    pub(crate) log: Arc<Log<V>>,
    pub(crate) timeout: Duration,
    pub(crate) health: Health,
}

impl<V> std::fmt::Debug for EtcdStorage<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.log.lock();
        f.debug_struct("EtcdStorage")
            .field("root", &self.layout.root)
            .field("seen", &state.seen)
            .field("oldest", &state.oldest())
            .finish()
    }
}

impl<V> Drop for EtcdStorage<V> {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Allowed where blocking is not (an async caller dropping its storage).
            runtime.shutdown_background();
        }
    }
}

impl<V: Clone + Send + Sync + 'static> EtcdStorage<V> {
    /// Connects to the cluster, replays the retained history into the watch log (from etcd's
    /// compaction point) and starts the compactor when the configuration asks for one.
    pub fn connect(config: &EtcdConfig, codec: impl Codec<V>) -> Result<EtcdStorage<V>> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("etcd-client")
            .enable_all()
            .build()
            .map_err(unavailable)?;
        let handle = runtime.handle().clone();
        let mut options = ConnectOptions::new()
            .with_connect_timeout(config.timeout)
            .with_timeout(config.timeout);
        if let Some(tls) = &config.tls {
            options = options.with_tls(tls.options());
        }
        let endpoints = config.endpoints.clone();
        let client = block(&handle, config.timeout, async move {
            Client::connect(endpoints, Some(options)).await
        })
        .map_err(|e| unavailable(describe(e)))?;
        let storage = EtcdStorage {
            runtime: Some(runtime),
            handle,
            client,
            layout: Layout::new(&config.prefix),
            codec: Arc::new(codec),
            log: Arc::new(Log::new(config.window, 1)),
            timeout: config.timeout,
            health: Health::default(),
        };
        storage.start(config)?;
        Ok(storage)
    }

    /// Starts the watch and the compactor, and waits until the log holds the current state's
    /// history.
    fn start(&self, config: &EtcdConfig) -> Result<()> {
        let current = self.etcd_revision()?;
        let feeder = Feeder {
            client: self.client.clone(),
            layout: self.layout.clone(),
            codec: self.codec.clone(),
            log: self.log.clone(),
        };
        self.handle.spawn(feeder.run());
        if !self.log.wait_seen(current, config.timeout) {
            return Err(unavailable(format!(
                "the watch did not reach revision {current} within {:?}",
                config.timeout
            )));
        }
        if let Some(interval) = config.compaction_interval {
            let compactor = Compactor {
                client: self.client.clone(),
                log: self.log.clone(),
            };
            self.handle.spawn(compactor.run(interval));
        }
        Ok(())
    }

    /// Waits up to `timeout` until the watch log has seen `revision` (a server reading at a
    /// revision a client saw elsewhere); returns whether it has.
    pub fn wait_for_revision(&self, revision: Revision, timeout: Duration) -> bool {
        self.log.wait_seen(revision, timeout)
    }

    /// Waits until the watch log has seen every write etcd had acknowledged when this is
    /// called (the writes of other servers on the same etcd included), each step bounded by
    /// `timeout`; returns whether it has. It asks etcd once for its revision, without retries
    /// and without the health check: an unavailable etcd is left for the caller's next call to
    /// find and report.
    pub fn catch_up(&self, timeout: Duration) -> bool {
        let root = self.layout.root.clone().into_bytes();
        let client = self.client.clone();
        match block(&self.handle, timeout, revision_of(client, root)) {
            Ok(revision) => self.log.wait_seen(revision, timeout),
            Err(_) => false,
        }
    }

    /// [`Storage::watch`] without the box: the concrete cursor.
    /// A watch from a revision the log has seen asks etcd nothing, so it can start while etcd
    /// has no quorum (its events follow once etcd is back).
    pub fn cursor(&self, prefix: &Prefix, from: Option<Revision>) -> Result<EtcdWatcher<V>> {
        let seen = self.log.lock().seen;
        let position = match from {
            Some(r) if r <= seen => r,
            None => self.etcd_revision()?,
            Some(r) => {
                let current = self.etcd_revision()?;
                if r > current {
                    return Err(StorageError::FutureRevision {
                        requested: r,
                        current,
                    });
                }
                r
            }
        };
        // The log reaches the current revision at once but for the writes of other clients
        // an instant ago.
        self.log.wait_seen(position, self.timeout);
        let oldest = self.log.lock().oldest();
        if position < oldest {
            return Err(StorageError::Gone {
                requested: position,
                oldest,
            });
        }
        Ok(EtcdWatcher::new(self.log.clone(), prefix.clone(), position))
    }

    /// Runs `f` with a client on the storage's runtime and waits for its answer. A request
    /// that could not be sent (its member is down) is sent again, up to 50 times 100 ms apart,
    /// while the client's balancer moves to the members that are up. While etcd is found
    /// unavailable, the call fails at once (see `etcd_health.rs`).
    pub(crate) fn call<T, F>(&self, f: impl Fn(Client) -> F) -> std::result::Result<T, Failure>
    where
        T: Send + 'static,
        F: Future<Output = std::result::Result<T, etcd_client::Error>> + Send + 'static,
    {
        let admitted = self.health.admit()?;
        let answer = self.call_etcd(f);
        self.health.record(admitted, answer.as_ref().err());
        answer
    }

    /// [`EtcdStorage::call`] without the health check.
    fn call_etcd<T, F>(&self, f: impl Fn(Client) -> F) -> std::result::Result<T, Failure>
    where
        T: Send + 'static,
        F: Future<Output = std::result::Result<T, etcd_client::Error>> + Send + 'static,
    {
        let mut tries = 0;
        loop {
            match block(&self.handle, self.timeout, f(self.client.clone())) {
                Ok(v) => return Ok(v),
                Err(Blocked::Etcd(e)) if not_sent(&e) && tries < 50 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(Blocked::Etcd(e)) => return Err(failure(e)),
                Err(Blocked::TimedOut(t)) => {
                    return Err(Failure::TimedOut(format!(
                        "no answer from etcd within {t:?}"
                    )))
                }
                Err(other) => return Err(Failure::Other(describe(other))),
            }
        }
    }

    /// etcd's current revision.
    pub(crate) fn etcd_revision(&self) -> Result<Revision> {
        let root = self.layout.root.clone().into_bytes();
        self.call(|c| revision_of(c, root.clone()))
            .map_err(|f| self.error(f, None))
    }

    /// The storage error of a failed call that read at `at`.
    pub(crate) fn error(&self, failure: Failure, at: Option<Revision>) -> StorageError {
        match (failure, at) {
            (Failure::Compacted, Some(r)) => {
                let oldest = self.log.lock().oldest().max(r + 1);
                StorageError::Gone {
                    requested: r,
                    oldest,
                }
            }
            (Failure::Future, Some(r)) => StorageError::FutureRevision {
                requested: r,
                current: self.etcd_revision().unwrap_or(0),
            },
            (Failure::Compacted, None) => unavailable("compacted"),
            (Failure::Future, None) => unavailable("future revision"),
            (Failure::TimedOut(message), _) => StorageError::Timeout { message },
            (Failure::Unreachable(message), _) => StorageError::Unreachable { message },
            (Failure::Other(m), _) => unavailable(m),
        }
    }

    /// Checks a read's revision against the oldest one.
    pub(crate) fn check_at(&self, at: Option<Revision>) -> Result<()> {
        let oldest = self.log.lock().oldest();
        match at {
            Some(r) if r < oldest => Err(StorageError::Gone {
                requested: r,
                oldest,
            }),
            _ => Ok(()),
        }
    }

    pub(crate) fn decode(&self, kv: &KeyValue) -> Result<Versioned<V>> {
        version(&*self.codec, kv).map_err(|e| {
            unavailable(format!(
                "undecodable value at {}: {e}",
                String::from_utf8_lossy(kv.key())
            ))
        })
    }

    pub(crate) fn encode(&self, value: &V) -> Vec<u8> {
        let mut bytes = Vec::new();
        self.codec.encode(value, &mut bytes);
        bytes
    }
}

/// etcd's current revision: the header's of a count-only read of `key`.
pub(crate) async fn revision_of(
    mut client: Client,
    key: Vec<u8>,
) -> std::result::Result<Revision, etcd_client::Error> {
    let options = GetOptions::new().with_count_only().with_limit(1);
    let response = client.get(key, Some(options)).await?;
    Ok(header_revision(response.header()))
}

/// The revision of a response's header.
pub(crate) fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Revision {
    header.map_or(0, |h| h.revision()) as Revision
}

/// Why [`block`] got no answer.
enum Blocked {
    Etcd(etcd_client::Error),
    TimedOut(Duration),
    Stopped,
}

fn describe(b: Blocked) -> String {
    match b {
        Blocked::Etcd(e) => e.to_string(),
        Blocked::TimedOut(t) => format!("no answer within {t:?}"),
        Blocked::Stopped => "the client's runtime stopped".into(),
    }
}

/// Runs `future` on `handle`'s runtime and waits (blocking this thread, which need not be a
/// runtime's) up to `timeout` for its answer.
fn block<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    timeout: Duration,
    future: impl Future<Output = std::result::Result<T, etcd_client::Error>> + Send + 'static,
) -> std::result::Result<T, Blocked> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let answer = match tokio::time::timeout(timeout, future).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Blocked::Etcd(e)),
            Err(_) => Err(Blocked::TimedOut(timeout)),
        };
        let _ = tx.send(answer);
    });
    rx.recv().unwrap_or(Err(Blocked::Stopped))
}

impl<V: Clone + Send + Sync + 'static> Storage<V> for EtcdStorage<V> {
    fn current_revision(&self) -> Revision {
        match self.etcd_revision() {
            Ok(r) => r,
            Err(_) => self.log.lock().seen,
        }
    }

    fn oldest_revision(&self) -> Revision {
        self.log.lock().oldest()
    }

    fn get(&self, key: &Key, at: Option<Revision>) -> Result<Option<Versioned<V>>> {
        self.check_at(at)?;
        let raw = self.layout.key(key);
        let options = GetOptions::new().with_revision(at.unwrap_or(0) as i64);
        let response = self
            .call(|mut c| {
                let (raw, options) = (raw.clone(), options.clone());
                async move { c.get(raw, Some(options)).await }
            })
            .map_err(|f| self.error(f, at))?;
        response.kvs().first().map(|kv| self.decode(kv)).transpose()
    }

    fn list(&self, prefix: &Prefix, options: &ListOptions) -> Result<ListPage<V>> {
        self.check_at(options.at)?;
        self.list_page(prefix, options)
    }

    fn create(&self, key: &Key, value: V) -> Result<Arc<Event<V>>> {
        self.create_key(key, value)
    }

    fn update(&self, key: &Key, value: V, expected: Option<Revision>) -> Result<Arc<Event<V>>> {
        self.update_key(key, value, expected)
    }

    fn delete(&self, key: &Key, expected: Option<Revision>) -> Result<Arc<Event<V>>> {
        self.delete_key(key, expected)
    }

    fn watch(&self, prefix: &Prefix, from: Option<Revision>) -> Result<Box<dyn Watcher<V>>> {
        Ok(Box::new(self.cursor(prefix, from)?))
    }

    fn compact(&self, revision: Revision) -> Result<()> {
        let current = self.etcd_revision()?;
        if revision > current {
            return Err(StorageError::FutureRevision {
                requested: revision,
                current,
            });
        }
        if revision <= self.log.lock().oldest() {
            return Ok(());
        }
        self.compact_at(revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_spelled_as_kube_apiserver_spells_them_and_read_back() {
        let layout = Layout::new("/registry");
        let cases = [
            (
                "a namespaced object",
                Key::new("pods", "default", "web"),
                "/registry/pods/default/web",
            ),
            (
                "a cluster-scoped object",
                Key::cluster("minions", "n1"),
                "/registry/minions/n1",
            ),
            (
                "a Service under services/specs",
                Key::new("services/specs", "default", "api"),
                "/registry/services/specs/default/api",
            ),
            (
                "a resource whose group comes first",
                Key::cluster("apiextensions.k8s.io/customresourcedefinitions", "a.b.io"),
                "/registry/apiextensions.k8s.io/customresourcedefinitions/a.b.io",
            ),
        ];
        for (case, key, path) in cases {
            assert_eq!(String::from_utf8(layout.key(&key)).unwrap(), path, "{case}");
            assert_eq!(layout.parse(path.as_bytes()), Some(key), "{case}");
        }
        for other in [
            "/registry/pods/a/b/c",
            "/registry/",
            "/other/pods/a/b",
            "/registry/pods/",
        ] {
            assert_eq!(
                layout.parse(other.as_bytes()),
                None,
                "{other} is no object's key"
            );
        }
    }

    #[test]
    fn a_range_ends_after_every_key_of_its_prefix() {
        let layout = Layout::new("/registry/");
        let (start, end) = layout.range(&Prefix::namespace("pods", "default"));
        assert_eq!(start, b"/registry/pods/default/");
        assert_eq!(end, b"/registry/pods/default0");
        assert_eq!(prefix_end(&[b'a', 0xff]), b"b");
    }
}

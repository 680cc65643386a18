//! What every request handler shares: the storage (reads and watches), the registry clients
//! that write (several, so that requests waiting for their writes to be durable share one
//! commit of the storage's group commit; the registry's write lock still orders the writes
//! themselves), the clock, the credentials and the request counters.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use kubeplane_api::{ApiError, Client, ObjectKey};
use kubeplane_core::version::KubeVersion;
use kubeplane_registry::StorageClient;
use kubeplane_storage::Storage;

use crate::clock::ServerClock;
use crate::events::event_object;

/// How many registry clients may write for the API: up to this many requests wait for their
/// writes to be durable at once. Each keeps a cache of its own, so the second and later ones
/// are made only when every earlier one is busy (a server written to by one client at a time
/// keeps one).
const WRITERS: usize = 8;

/// The server's shared state.
pub struct State {
    /// Reads and watches go to the storage directly (this client never writes).
    reader: StorageClient,
    writers: Vec<std::sync::OnceLock<Mutex<StorageClient>>>,
    /// Where the search for a free writer starts next.
    next_writer: AtomicUsize,
    pub clock: ServerClock,
    /// The admin bearer token.
    pub token: String,
    pub version: KubeVersion,
    /// `host:port` clients reach the server at.
    pub address: String,
    /// Set when the server is shutting down: watches end.
    pub stopping: AtomicBool,
    /// `apiserver_request_total` by (verb, resource, code).
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    /// The components' counters, as the control plane last published them.
    pub component_metrics: Mutex<Vec<(String, u64)>>,
    /// With several servers on one etcd: whether this one leads.
    leadership: std::sync::OnceLock<Arc<crate::leader::Leadership>>,
    /// How long a request other than a watch may take (`--request-timeout`, 1 minute unless
    /// set).
    request_timeout: std::sync::OnceLock<std::time::Duration>,
    /// The custom resource types served, from the stored CustomResourceDefinitions.
    pub crds: crate::crds::CustomResources,
}

impl State {
    pub fn new(
        client: StorageClient,
        clock: ServerClock,
        token: String,
        version: KubeVersion,
        address: String,
    ) -> Arc<State> {
        let reader = client.handle();
        let writers: Vec<std::sync::OnceLock<Mutex<StorageClient>>> =
            (0..WRITERS).map(|_| std::sync::OnceLock::new()).collect();
        let _ = writers[0].set(Mutex::new(client));
        Arc::new(State {
            reader,
            writers,
            next_writer: AtomicUsize::new(0),
            clock,
            token,
            version,
            address,
            stopping: AtomicBool::new(false),
            requests: Mutex::new(BTreeMap::new()),
            component_metrics: Mutex::new(Vec::new()),
            leadership: std::sync::OnceLock::new(),
            request_timeout: std::sync::OnceLock::new(),
            crds: Default::default(),
        })
    }

    pub fn storage(&self) -> &dyn Storage<kubeplane_api::Object> {
        self.reader.storage()
    }

    pub fn current_revision(&self) -> u64 {
        self.storage().current_revision()
    }

    /// A new client over the same storage (for the control plane's thread).
    pub fn client(&self) -> StorageClient {
        self.reader.handle()
    }

    /// Sets `--request-timeout` (once, before serving).
    pub fn set_request_timeout(&self, timeout: std::time::Duration) {
        let _ = self.request_timeout.set(timeout);
    }

    /// How long a request other than a watch may take: kube-apiserver's `--request-timeout`.
    pub fn request_timeout(&self) -> std::time::Duration {
        self.request_timeout
            .get()
            .copied()
            .unwrap_or(crate::REQUEST_TIMEOUT)
    }

    /// Runs the control plane under an election from now on.
    pub fn set_leadership(&self, leadership: Arc<crate::leader::Leadership>) {
        let _ = self.leadership.set(leadership);
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// A free writer if there is one (the search starts where the last one ended), else the
    /// next one in turn once it is free.
    fn lock_writer(&self) -> MutexGuard<'_, StorageClient> {
        // Writers are made in slot order: the made ones are a prefix.
        let made = self.writers.iter().take_while(|w| w.get().is_some());
        let n = made.clone().count();
        let start = self.next_writer.fetch_add(1, Ordering::Relaxed) % n;
        for w in made.clone().skip(start).chain(made.take(start)) {
            match w.get().map(Mutex::try_lock) {
                Some(Ok(g)) => return g,
                Some(Err(std::sync::TryLockError::Poisoned(p))) => return p.into_inner(),
                _ => {}
            }
        }
        // Every writer is busy: another one, while there is room, else the next in turn.
        let slot = self.writers.get(n).unwrap_or(&self.writers[start]);
        let writer = slot.get_or_init(|| Mutex::new(self.reader.handle()));
        match writer.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Runs one registry call at the cluster's current instant, then stores the events it
    /// recorded.
    pub fn write<T>(&self, f: impl FnOnce(&mut StorageClient) -> T) -> T {
        let mut client = self.lock_writer();
        client.now = self.clock.now();
        let out = f(&mut client);
        flush_events(&mut client);
        out
    }

    pub fn count_request(&self, verb: &str, resource: &str, code: u16) {
        let mut r = match self.requests.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *r.entry((verb.to_string(), resource.to_string(), code))
            .or_default() += 1;
    }

    /// The Prometheus text exposition of the server's and the components' counters.
    pub fn metrics_text(&self) -> String {
        let mut out = String::new();
        out.push_str("# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, resource and HTTP response code.\n");
        out.push_str("# TYPE apiserver_request_total counter\n");
        if let Ok(r) = self.requests.lock() {
            for ((verb, resource, code), n) in r.iter() {
                out.push_str(&format!(
                    "apiserver_request_total{{code=\"{code}\",resource=\"{resource}\",verb=\"{verb}\"}} {n}\n"
                ));
            }
        }
        out.push_str("# TYPE kubeplane_storage_revision gauge\n");
        out.push_str(&format!(
            "kubeplane_storage_revision {}\n",
            self.current_revision()
        ));
        if let Some(l) = self.leadership.get() {
            out.push_str("# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.\n");
            out.push_str("# TYPE leader_election_master_status gauge\n");
            out.push_str(&format!(
                "leader_election_master_status{{name=\"{}\"}} {}\n",
                l.election.name,
                u8::from(l.leading())
            ));
        }
        if let Ok(m) = self.component_metrics.lock() {
            // The components' samples as they give them: upstream's names, label values
            // unchanged (`profile="default-scheduler"`), each family typed once.
            kubeplane_api::component::write_prometheus(&mut out, &m);
        }
        out
    }
}

/// Stores the events a client recorded as `v1` Events (a name taken at the same instant gets
/// the next nanosecond, as two events a nanosecond apart would).
pub fn flush_events(client: &mut StorageClient) {
    let events = std::mem::take(&mut client.events);
    for r in client.records.drain(..) {
        // A drain step's result is the one record a server user asks for; the explanation
        // records of `simulate --explain` are not kept.
        if r["kind"] == "DrainResult" {
            eprintln!("kubeplane serve: {r}");
        }
    }
    for ev in events {
        let at = client.clock().timestamp(ev.time()).0;
        let uid = client
            .cache()
            .get(kind_of(ev.kind()), ev.namespace(), ev.name())
            .map(|o| o.uid().to_string());
        for bump in 0..64 {
            let at = at + jiff::SignedDuration::from_nanos(bump);
            match client.create(event_object(&ev, at, uid.as_deref())) {
                Err(ApiError::AlreadyExists { .. }) => continue,
                _ => break,
            }
        }
    }
}

fn kind_of(name: &str) -> kubeplane_api::Kind {
    crate::request::all_kinds()
        .find(|k| k.as_str() == name)
        .unwrap_or(kubeplane_api::Kind::Pod)
}

/// The key of a request's object.
pub fn key(kind: kubeplane_api::Kind, namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new(kind, namespace, name)
}

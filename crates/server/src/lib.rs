//! `kubeplane serve`: one process that kubectl, client-go tools, the Python client and kube-rs
//! use as they use a cluster: an HTTPS API server over kubeplane's registry (the same rules the
//! simulator applies, on `kubeplane-storage`), with the scheduler, the controllers and a
//! simulated kubelet per Node running inside on the wall clock or a faster virtual one. The
//! outward contract is `contracts/serve.md` of the shared material.
//!
//! - [`http`]: TLS, authentication, routing, graceful shutdown;
//! - [`request`]: what a path and a query name; [`discovery`], [`aggregated`], [`openapi`] and
//!   [`openapi_v2`]: what clients read to find the resources and their schemas;
//! - [`handlers`], [`list`], [`watch`], [`patch`]: the verbs; [`fields`]: field selectors;
//!   [`status`]: `metav1.Status` errors;
//! - [`runtime`]: the control plane's thread; [`leader`]: which of several servers on one etcd
//!   runs it; [`events`]: recorded events as `v1` Events;
//! - [`tls`]: CA, serving certificate, token; [`kubeconfig`]: the admin kubeconfig;
//! - [`clock`]: the only place the server's components get time from.

pub mod aggregated;
pub mod clock;
pub mod crds;
pub mod discovery;
pub mod events;
pub mod fields;
pub mod handlers;
pub mod http;
pub mod kubeconfig;
pub mod leader;
pub mod list;
pub mod openapi;
pub mod openapi_v2;
pub mod patch;
pub mod proto;
pub mod reflector;
pub mod request;
pub mod runtime;
pub mod state;
pub mod status;
pub mod table;
pub mod tls;
pub mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kubeplane_api::{ApiError, Client, Kind, Object};
use kubeplane_registry::strategy::pod::BindFeatures;
use kubeplane_registry::StorageClient;
use kubeplane_sim::agents::NodeAgents;
use kubeplane_sim::scenario::Input;
pub use kubeplane_storage::EtcdTls;

use crate::clock::{ClockMode, ServerClock};
use crate::runtime::ControlPlane;
use crate::state::State;

/// How many revisions the storage keeps for watches and reads in the past.
pub const WATCH_WINDOW: usize = 200_000;

/// kube-apiserver's default `--request-timeout`.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The namespaces kube-apiserver creates at start.
pub const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// `kubeplane serve`'s options.
#[derive(Clone, Debug)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: Option<PathBuf>,
    /// Keep the objects in etcd at these client URLs (then `data_dir` keeps the credentials
    /// only).
    pub etcd_servers: Option<Vec<String>>,
    /// TLS to etcd (`--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`), for `https://` URLs.
    pub etcd_tls: Option<EtcdTls>,
    /// The prefix of every etcd key (`--etcd-prefix`; `/registry` unless set).
    pub etcd_prefix: Option<String>,
    pub kubeconfig_out: Option<PathBuf>,
    pub clock: ClockMode,
    /// Serve the API alone: no scheduler, controllers or node agents run inside (`--api-only`).
    pub api_only: bool,
    /// The controllers that run inside (`--controllers`, kube-controller-manager's syntax).
    pub controllers: kubeplane_controllers::manager::Selection,
    /// Run the control plane only while holding this election's Lease (several servers on
    /// one etcd); `None`: run it from the start.
    pub leader_election: Option<leader::Election>,
    /// How long a request other than a watch may take before it gets a 504
    /// ([`REQUEST_TIMEOUT`] unless set).
    pub request_timeout: Option<Duration>,
}

impl Default for Config {
    /// The contract's defaults: `127.0.0.1:6443`, state in memory, the wall clock, every
    /// controller, no election, upstream's request timeout.
    fn default() -> Config {
        Config {
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 6443)),
            data_dir: None,
            etcd_servers: None,
            etcd_tls: None,
            etcd_prefix: None,
            kubeconfig_out: None,
            clock: ClockMode::Wall,
            api_only: false,
            controllers: Default::default(),
            leader_election: None,
            request_timeout: None,
        }
    }
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The input or the flags are wrong (exit 2).
    #[error("{0}")]
    Input(String),
    /// Something outside the input failed (exit 1).
    #[error("{0}")]
    Runtime(String),
}

fn namespace(name: &str) -> Object {
    let ns = k8s_openapi::api::core::v1::Namespace {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    Object::Namespace(Arc::new(ns))
}

/// The `default/kubernetes` Service kube-apiserver keeps: the first address of the service
/// range, port 443 to the server's own port.
fn kubernetes_service(port: u16) -> Object {
    let target = if port == 0 { 6443 } else { port };
    let v = serde_json::json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {
            "clusterIP": kubeplane_registry::strategy::service::KUBERNETES_SERVICE_IP.to_string(),
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": target}],
        },
    });
    Object::from_json(&v).expect("the kubernetes Service is a valid object")
}

/// Stores the system namespaces, the `kubernetes` Service and the input's objects, in file
/// order (a Namespace the input names that exists already is updated to the input's).
/// On a `shared` storage (etcd) an object another server stored first is left as it is.
fn load(
    client: &mut StorageClient,
    input: &mut Input,
    port: u16,
    shared: bool,
) -> Result<(), ServeError> {
    let system = SYSTEM_NAMESPACES.iter().map(|ns| namespace(ns));
    for obj in system.chain([kubernetes_service(port)]) {
        match client.create(obj) {
            // Another server on the same etcd created it meanwhile.
            Ok(_) | Err(ApiError::AlreadyExists { .. }) => {}
            Err(e) => return Err(ServeError::Runtime(e.to_string())),
        }
    }
    for o in std::mem::take(&mut input.objects) {
        let mut obj = o.object;
        if let Object::Other(d) = &mut obj {
            // A custom resource is stored at its definition's storage version.
            if d.api_version != d.type_.api_version {
                Arc::make_mut(d).api_version = d.type_.api_version.to_string();
            }
        }
        let result = match client.create(obj.clone()) {
            Err(ApiError::AlreadyExists { .. }) if obj.kind() == Kind::Namespace => {
                client.update(obj).map(|_| ())
            }
            // A cluster dump carries the `kubernetes` Service: the server keeps its own, as
            // kube-apiserver reconciles it.
            Err(ApiError::AlreadyExists { key }) if key == kubernetes_service(port).key() => Ok(()),
            // On a shared etcd another server started at the same moment stored it first.
            Err(ApiError::AlreadyExists { .. }) if shared => Ok(()),
            r => r.map(|_| ()),
        };
        result.map_err(|e| ServeError::Input(format!("{}: {e}", o.source)))?;
    }
    state::flush_events(client);
    Ok(())
}

/// The storage of `config`: etcd, the durable storage in the data directory, or memory.
fn open_storage(
    config: &Config,
    seed: u64,
    clock: &ServerClock,
) -> Result<StorageClient, ServeError> {
    Ok(match (&config.etcd_servers, &config.data_dir) {
        (Some(servers), _) => {
            let mut etcd = kubeplane_storage::EtcdConfig::new(servers.clone());
            etcd.window = WATCH_WINDOW;
            etcd.tls = config.etcd_tls.clone();
            if let Some(prefix) = &config.etcd_prefix {
                etcd.prefix.clone_from(prefix);
            }
            // Other servers may share this etcd: their UIDs and generated names must differ.
            StorageClient::etcd(&etcd, seed ^ leader::salt(), clock.api_clock())
                .map_err(|e| ServeError::Runtime(e.to_string()))?
        }
        (None, Some(dir)) => {
            StorageClient::open(dir.join("storage"), seed, clock.api_clock(), WATCH_WINDOW)
                .map_err(|e| ServeError::Runtime(e.to_string()))?
        }
        (None, None) => StorageClient::new(seed, clock.api_clock(), WATCH_WINDOW),
    })
}

/// Where the state is kept, for the message of a restart.
fn storage_place(config: &Config) -> String {
    match (&config.etcd_servers, &config.data_dir) {
        (Some(servers), _) => format!("etcd ({})", servers.join(",")),
        (None, dir) => dir
            .as_deref()
            .unwrap_or(std::path::Path::new(""))
            .display()
            .to_string(),
    }
}

/// Everything the server needs before it listens.
struct Prepared {
    client: StorageClient,
    scheduler: kubeplane_scheduler::Scheduler,
    features: kubeplane_core::features::FeatureGates,
    clock: ServerClock,
    creds: tls::Credentials,
    tls: Arc<rustls::ServerConfig>,
}

/// Refuses steps without a control plane to run them; notes the expectations serve does not
/// check.
fn check_steps(
    config: &Config,
    scenario: &kubeplane_sim::scenario::Scenario,
) -> Result<(), ServeError> {
    if config.api_only && !scenario.steps.is_empty() {
        return Err(ServeError::Input(format!(
            "--api-only: the Scenario's {} step(s) need the control plane, which --api-only does not run",
            scenario.steps.len()
        )));
    }
    let expectations = scenario
        .steps
        .iter()
        .filter(|s| matches!(s.action, kubeplane_sim::scenario::StepAction::Expect(_)))
        .count();
    if expectations > 0 {
        eprintln!(
            "note: kubeplane serve runs a Scenario's steps but does not check its {expectations} expectation(s) (kubeplane simulate does)"
        );
    }
    Ok(())
}

/// Sets up the storage with the input, the scheduler and the credentials.
fn prepare(config: &Config, input: &mut Input) -> Result<Prepared, ServeError> {
    let scenario = &input.scenario;
    check_steps(config, scenario)?;
    let origin = match config.clock {
        ClockMode::Virtual { .. } if scenario.start_time_given => scenario.start_time,
        _ => jiff::Timestamp::now(),
    };
    let clock = ServerClock::start(origin, config.clock);
    let features = scenario.feature_gates.clone();
    let seed = scenario.seed;
    let scheduler =
        kubeplane_sim::engine::build_scheduler(&input.scheduler_configs, &features, seed)
            .map_err(|e| ServeError::Input(e.to_string()))?;
    let mut client = open_storage(config, seed, &clock)?;
    client.binding = BindFeatures::from_gates(&features);
    client.now = clock.now();
    let revision = client.storage().current_revision();
    // etcd's empty store is at revision 1: it is new when nothing is stored under the prefix.
    let new = match &config.etcd_servers {
        Some(_) => client.cache().list(Kind::Namespace).next().is_none(),
        None => revision == 0,
    };
    if new {
        if config.data_dir.is_some() || config.etcd_servers.is_some() {
            // Checked in memory first: an invalid FILE leaves nothing behind in DIR.
            let mut trial = StorageClient::new(seed, clock.api_clock(), WATCH_WINDOW);
            trial.now = clock.now();
            load(&mut trial, &mut input.clone(), config.listen.port(), false)?;
        }
        let shared = config.etcd_servers.is_some();
        load(&mut client, input, config.listen.port(), shared)?;
    } else {
        eprintln!(
            "kubeplane serve: resuming the state kept in {} at resourceVersion {revision}; the FILEs (and their Scenario's steps) were applied when it was new",
            storage_place(config)
        );
        input.scenario.steps.clear();
    }
    let host = config.listen.ip().to_string();
    let hosts = if tls::is_ip(&host) {
        vec![host]
    } else {
        Vec::new()
    };
    let creds = match &config.data_dir {
        Some(dir) => tls::load_or_generate(dir, &hosts),
        None => tls::generate(&hosts),
    }
    .map_err(|e| ServeError::Runtime(e.to_string()))?;
    let tls = tls::server_config(&creds).map_err(|e| ServeError::Runtime(e.to_string()))?;
    Ok(Prepared {
        client,
        scheduler,
        features,
        clock,
        creds,
        tls,
    })
}

/// A server running on its own threads.
pub struct Handle {
    /// `host:port` clients reach it at.
    pub address: String,
    pub credentials: tls::Credentials,
    stop: tokio::sync::watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Handle {
    /// Stops accepting, lets in-flight requests finish, stops the control plane, and returns
    /// once all of it has ended.
    pub fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the server on threads of its own and returns once it accepts requests (and the
/// kubeconfig, when asked for, is written).
pub fn start(config: Config, mut input: Input) -> Result<Handle, ServeError> {
    let p = prepare(&config, &mut input)?;
    let credentials = p.creds.clone();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("kubeplane-serve".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(ServeError::Runtime(e.to_string())));
                    return;
                }
            };
            rt.block_on(serve(config, input, p, stop_rx, ready_tx));
        })
        .map_err(|e| ServeError::Runtime(e.to_string()))?;
    match ready_rx.recv() {
        Ok(Ok(address)) => Ok(Handle {
            address,
            credentials,
            stop: stop_tx,
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err(ServeError::Runtime(
            "the server thread ended before it was ready".into(),
        )),
    }
}

/// Runs the server until SIGINT or SIGTERM.
pub fn run(config: Config, input: Input) -> Result<(), ServeError> {
    let handle = start(config, input)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ServeError::Runtime(e.to_string()))?;
    rt.block_on(wait_for_signal());
    handle.stop();
    eprintln!("kubeplane serve: stopped");
    Ok(())
}

type Ready = std::sync::mpsc::Sender<Result<String, ServeError>>;

/// Listens, starts the control plane, writes the kubeconfig, says it is ready and serves
/// until `stop` turns true.
async fn serve(
    config: Config,
    input: Input,
    p: Prepared,
    stop: tokio::sync::watch::Receiver<bool>,
    ready: Ready,
) {
    let listener = match tokio::net::TcpListener::bind(config.listen).await {
        Ok(l) => l,
        Err(e) => {
            let _ = ready.send(Err(ServeError::Runtime(format!(
                "listen on {}: {e}",
                config.listen
            ))));
            return;
        }
    };
    let address = match listener.local_addr() {
        Ok(a) => kubeconfig::client_address(a),
        Err(e) => {
            let _ = ready.send(Err(ServeError::Runtime(e.to_string())));
            return;
        }
    };
    let version = input.scenario.kubernetes_version;
    let state = State::new(
        p.client,
        p.clock,
        p.creds.token.clone(),
        version,
        address.clone(),
    );
    crds::refresh(&state);
    if let Some(t) = config.request_timeout {
        state.set_request_timeout(t);
    }
    let cp = start_control_plane(&config, &input, p.scheduler, &p.features, &state);
    if let Some(path) = &config.kubeconfig_out {
        if let Err(e) = kubeconfig::write(path, &address, &p.creds) {
            state
                .stopping
                .store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = ready.send(Err(ServeError::Runtime(format!("{}: {e}", path.display()))));
            return;
        }
    }
    let clock = match config.clock {
        ClockMode::Wall => "wall clock".to_string(),
        ClockMode::Virtual { speed } => format!("virtual clock, {speed}x"),
    };
    eprintln!("kubeplane serve: listening on https://{address} ({clock})");
    let _ = ready.send(Ok(address));
    let acceptor = tokio_rustls::TlsAcceptor::from(p.tls.clone());
    http::serve(
        listener,
        acceptor,
        state.clone(),
        stop,
        Duration::from_secs(10),
    )
    .await;
    state
        .stopping
        .store(true, std::sync::atomic::Ordering::Relaxed);
    for thread in cp {
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}

/// The control plane of `input` (the scheduler, the selected controllers and the node agents
/// over the server's state, with the Scenario's steps): a new one each time this server comes
/// to lead.
fn control_plane(
    state: &State,
    input: &Input,
    features: &kubeplane_core::features::FeatureGates,
    selection: &kubeplane_controllers::manager::Selection,
    scheduler: kubeplane_scheduler::Scheduler,
) -> ControlPlane {
    let (periodic, controllers) =
        kubeplane_controllers::manager::selected(features, &Default::default(), selection);
    let unnamed = |l: Vec<(_, _)>| l.into_iter().map(|(_, c)| c).collect();
    let mut control_plane = ControlPlane::new(
        state.client(),
        scheduler,
        unnamed(controllers),
        unnamed(periodic),
        NodeAgents::new(input.scenario.pod_startup_latency).with_pod_ips(),
    )
    .with_steps(input.scenario.steps.clone())
    .with_backoff_seed(input.scenario.seed);
    control_plane.client.binding = BindFeatures::from_gates(features);
    control_plane
}

/// Starts the control plane's thread, and with an election the elector's: then the control
/// plane runs only while this server leads, and a new one starts each time it comes to lead
/// again (its first Scenario steps run only in the first).
fn start_control_plane(
    config: &Config,
    input: &Input,
    scheduler: kubeplane_scheduler::Scheduler,
    features: &kubeplane_core::features::FeatureGates,
    state: &Arc<State>,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut threads = Vec::new();
    if config.api_only {
        return threads;
    }
    let first = control_plane(state, input, features, &config.controllers, scheduler);
    let Some(election) = config.leader_election.clone() else {
        let cp_state = state.clone();
        threads.extend(
            std::thread::Builder::new()
                .name("control-plane".into())
                .spawn(move || first.run(cp_state)),
        );
        return threads;
    };
    let leadership = leader::Leadership::new(election);
    state.set_leadership(leadership.clone());
    let elector_state = state.clone();
    let le = leadership.clone();
    let (etcd, seed) = (elector_etcd(config), input.scenario.seed);
    threads.extend(
        std::thread::Builder::new()
            .name("leader-elector".into())
            .spawn(move || {
                let client = elector_client(etcd, &elector_state, seed);
                leader::campaign(client, le, &elector_state.stopping)
            }),
    );
    let (cp_state, mut input) = (state.clone(), input.clone());
    input.scenario.steps.clear();
    let (features, selection) = (features.clone(), config.controllers.clone());
    threads.extend(
        std::thread::Builder::new()
            .name("control-plane".into())
            .spawn(move || {
                lead_while_elected(&cp_state, &leadership, &input, &features, &selection, first)
            }),
    );
    threads
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Runs a control plane each time this server comes to lead, until it loses the lease (the
/// control plane stops at once: its writes are gated by the lease) or the server stops.
fn lead_while_elected(
    state: &Arc<State>,
    leadership: &Arc<leader::Leadership>,
    input: &Input,
    features: &kubeplane_core::features::FeatureGates,
    selection: &kubeplane_controllers::manager::Selection,
    first: ControlPlane,
) {
    let mut next = Some(first);
    while reflector::wait_until(&state.stopping, || leadership.leading()) {
        let mut cp = match next.take() {
            Some(cp) => cp,
            None => {
                let seed = input.scenario.seed;
                match kubeplane_sim::engine::build_scheduler(
                    &input.scheduler_configs,
                    features,
                    seed,
                ) {
                    Ok(s) => control_plane(state, input, features, selection, s),
                    Err(e) => return eprintln!("kubeplane serve: the scheduler: {e}"),
                }
            }
        };
        cp.client.write_gate = Some(leadership.gate());
        cp.leader = Some(leadership.clone());
        cp.run(state.clone());
    }
}

/// The etcd configuration of the elector's own connection: a short watch window, no compactor.
fn elector_etcd(config: &Config) -> Option<kubeplane_storage::EtcdConfig> {
    let mut etcd = kubeplane_storage::EtcdConfig::new(config.etcd_servers.clone()?);
    if let Some(prefix) = &config.etcd_prefix {
        etcd.prefix.clone_from(prefix);
    }
    etcd.window = 1000;
    etcd.compaction_interval = None;
    etcd.tls = config.etcd_tls.clone();
    Some(etcd)
}

/// The elector's client: on etcd a connection, write lock and health of its own, so that a
/// renewal waiting for an unresponsive etcd holds up no API request (the registry serializes
/// the writes of one connection's clients), and an API request that etcd fails does not fail
/// the renewals; else a client over the server's storage.
fn elector_client(
    etcd: Option<kubeplane_storage::EtcdConfig>,
    state: &State,
    seed: u64,
) -> StorageClient {
    let Some(etcd) = etcd else {
        return state.client();
    };
    match StorageClient::etcd(&etcd, seed ^ leader::salt(), state.clock.api_clock()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "kubeplane serve: the leader elector's etcd connection: {e}; sharing the server's"
            );
            state.client()
        }
    }
}

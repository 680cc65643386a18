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
//! - [`runtime`]: the control plane's thread; [`events`]: recorded events as `v1` Events;
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

use crate::clock::{ClockMode, ServerClock};
use crate::runtime::ControlPlane;
use crate::state::State;

/// How many revisions the storage keeps for watches and reads in the past.
pub const WATCH_WINDOW: usize = 200_000;

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
    pub kubeconfig_out: Option<PathBuf>,
    pub clock: ClockMode,
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

/// Stores the system namespaces and the input's objects, in file order (a Namespace the input
/// names that exists already is updated to the input's).
fn load(client: &mut StorageClient, input: &mut Input) -> Result<(), ServeError> {
    for ns in SYSTEM_NAMESPACES {
        client
            .create(namespace(ns))
            .map_err(|e| ServeError::Runtime(e.to_string()))?;
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
            StorageClient::etcd(&etcd, seed, clock.api_clock())
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

/// Sets up the storage with the input, the scheduler and the credentials.
fn prepare(config: &Config, input: &mut Input) -> Result<Prepared, ServeError> {
    let scenario = &input.scenario;
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
            load(&mut trial, &mut input.clone())?;
        }
        load(&mut client, input)?;
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
    let mut control_plane = ControlPlane::new(
        state.client(),
        p.scheduler,
        kubeplane_controllers::manager::controllers(&p.features),
        kubeplane_controllers::manager::periodic_controllers(&p.features),
        NodeAgents::new(input.scenario.pod_startup_latency),
    )
    .with_steps(input.scenario.steps.clone())
    .with_backoff_seed(input.scenario.seed);
    control_plane.client.binding = BindFeatures::from_gates(&p.features);
    let cp_state = state.clone();
    let cp = std::thread::Builder::new()
        .name("control-plane".into())
        .spawn(move || control_plane.run(cp_state));
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
    let acceptor = tokio_rustls::TlsAcceptor::from(p.tls);
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
    if let Ok(cp) = cp {
        let _ = tokio::task::spawn_blocking(move || cp.join()).await;
    }
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

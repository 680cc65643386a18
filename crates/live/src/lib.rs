//! The live runtime: kubeplane's scheduler against a real API server through kube-rs
//! (`kubeplane scheduler [--kubeconfig PATH]`). The third runtime of the `api` crate's traits,
//! beside the simulator and `kubeplane serve`'s control-plane thread.
//!
//! - [`reflector`]: a kube-rs watcher per kind the scheduler reads (list, watch with bookmarks,
//!   relist after 410, backoff while the server is away), feeding the scheduling loop.
//! - [`runtime`]: the scheduling loop (the informer fills in old objects; the scheduler runs
//!   while it leads) and the worker threads that make the queued bindings and status patches.
//! - [`client`]: the `Client` over kube-rs (`pods/binding`, strategic status patches with the
//!   UID precondition in [`status_patch`], deletes with preconditions, evictions, ...).
//! - [`events`]: `events.k8s.io/v1` Events, created by a task of their own.
//! - [`leader`]: Lease-based leader election with upstream's defaults and rules.
//! - [`health`] and [`metrics`]: `/healthz`, `/readyz`, `/metrics` over HTTPS ([`tls`]), the
//!   metrics behind a bearer token; [`attempts`]: the
//!   scheduling attempts by profile and result, with their wall-clock durations.
//! - [`clock`]: wall time as the scheduler's instants.
//! - [`snapshot`]: a cluster's scheduling-relevant state as a `simulate` input
//!   (`kubeplane snapshot`).
//! - [`controller_manager`]: the controllers the same way (`kubeplane controller-manager`),
//!   with dynamic reflectors, kube-controller-manager's lease and `v1` Events.

pub mod attempts;
pub mod client;
pub mod clock;
pub mod controller_manager;
pub mod convert;
pub mod events;
pub mod health;
pub mod leader;
pub mod metrics;
pub mod reflector;
pub mod runtime;
pub mod snapshot;
pub mod status_patch;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Mutex};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kubeplane_core::features::FeatureGates;
use kubeplane_scheduler::api_dispatcher::ApiCallDrain;
use kubeplane_scheduler::Scheduler;

pub use leader::LeaderElection;
pub use runtime::Exit;

/// How many threads make the queued API calls.
const WORKERS: usize = 4;

/// What `kubeplane scheduler` was asked to do.
#[derive(Debug)]
pub struct Options {
    /// `--kubeconfig` (none: the configuration kubectl would use, [`INFERRED`]).
    pub kubeconfig: Option<PathBuf>,
    /// The KubeSchedulerConfiguration document and where it came from (for messages).
    pub config: Option<(String, serde_json::Value)>,
    /// `--leader-elect`, over the configuration's `leaderElection.leaderElect`.
    pub leader_elect: Option<bool>,
    /// Where `/healthz`, `/readyz` and `/metrics` are served (`None`: not served).
    pub serve: Option<SocketAddr>,
    /// The serving certificate of that port (none: a self-signed one).
    pub tls: tls::TlsFiles,
    /// Who may read which path there.
    pub access: health::Access,
}

/// Why the scheduler could not start or stopped.
#[derive(Debug)]
pub enum LiveError {
    /// Bad input: an unreadable kubeconfig, a bad configuration (exit status 2).
    Input(String),
    /// The lease was lost (upstream exits with "leaderelection lost").
    LeaseLost,
    /// Anything else that stops the process.
    Runtime(String),
}

/// The scheduler of a configuration, its profiles' names and its leader election.
fn build_scheduler(
    config: Option<&(String, serde_json::Value)>,
) -> Result<(Scheduler, Vec<String>, LeaderElection), String> {
    let cfg = match config {
        Some((source, value)) => {
            Some(kubeplane_scheduler::config::decode(value).map_err(|e| format!("{source}: {e}"))?)
        }
        None => None,
    };
    let source = config.map(|(s, _)| s.as_str()).unwrap_or("configuration");
    let le = LeaderElection::from_config(cfg.as_ref().and_then(|c| c.leader_election.as_ref()))
        .map_err(|e| format!("{source}: {e}"))?;
    let features = FeatureGates::default();
    let setup = kubeplane_scheduler::config::resolve(cfg.as_ref(), &features)
        .map_err(|e| format!("{source}: {e}"))?;
    let profiles = setup
        .frameworks
        .iter()
        .map(|f| f.profile_name.clone())
        .collect();
    let queue = kubeplane_scheduler::queue::SchedulingQueue::new(setup.queue);
    let mut scheduler = Scheduler::new(
        setup.frameworks,
        queue,
        setup.percentage_of_nodes_to_score,
        0,
    );
    scheduler.set_async_api_calls(Some(ApiCallDrain::ByRuntime));
    scheduler.follow_version(features.version());
    Ok((scheduler, profiles, le))
}

/// Where the configuration of a client comes from when no `--kubeconfig` is given, in the
/// order kube-rs's `Config::infer` tries them.
pub const INFERRED: &str = "$KUBECONFIG, ~/.kube/config, or the in-cluster service account \
(KUBERNETES_SERVICE_HOST and /var/run/secrets/kubernetes.io/serviceaccount)";

/// The kube-rs configuration of a kubeconfig file or, without one, the configuration kubectl
/// and client-go would use ([`INFERRED`]). The message of an error names the file, or says
/// that none of the inferred sources works.
pub async fn kube_config(path: Option<&std::path::Path>) -> Result<kube::Config, String> {
    let Some(path) = path else {
        return kube::Config::infer().await.map_err(|e| {
            format!("no --kubeconfig given and no configuration found in {INFERRED}: {e}")
        });
    };
    let kc = Kubeconfig::read_from(path).map_err(|e| format!("{}: {e}", path.display()))?;
    kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The kube-rs client of a kubeconfig file, or of the inferred configuration.
pub(crate) async fn connect(path: Option<&std::path::Path>) -> Result<kube::Client, String> {
    let cfg = kube_config(path).await?;
    kube::Client::try_from(cfg).map_err(|e| match path {
        Some(path) => format!("{}: {e}", path.display()),
        None => e.to_string(),
    })
}

/// Runs the scheduler until SIGINT or SIGTERM (`Ok`), or until it loses its lease.
pub fn run(opts: Options) -> Result<(), LiveError> {
    let (scheduler, profiles, mut le) =
        build_scheduler(opts.config.as_ref()).map_err(LiveError::Input)?;
    if let Some(on) = opts.leader_elect {
        le.leader_elect = on;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| LiveError::Runtime(e.to_string()))?;
    let kube = rt
        .block_on(connect(opts.kubeconfig.as_deref()))
        .map_err(LiveError::Input)?;
    let health = Arc::new(health::Health::default());
    let leading = Arc::new(AtomicBool::new(!le.leader_elect));
    let (tx, rx) = mpsc::channel();
    let events_tx = start_tasks(&rt, &opts, &kube, &health, le, &leading, &tx)?;
    let clock = clock::LiveClock::start();
    let client = |leading: &Arc<AtomicBool>| {
        client::LiveClient::new(
            kube.clone(),
            rt.handle().clone(),
            clock.api_clock(),
            leading.clone(),
        )
    };
    let (calls_tx, calls_rx) = mpsc::channel();
    let calls_rx = Arc::new(Mutex::new(calls_rx));
    for _ in 0..WORKERS {
        let (c, q, t) = (client(&leading), calls_rx.clone(), tx.clone());
        std::thread::spawn(move || runtime::worker(c, q, t));
    }
    drop(tx);
    let main = runtime::Loop {
        scheduler,
        client: client(&leading),
        clock: clock.clone(),
        synced: Default::default(),
        leading,
        profiles: profiles.clone(),
        calls: calls_tx,
        events: events_tx,
        health,
        host: events::hostname(),
        published: None,
        attempts: attempts::AttemptMetrics::new(profiles.clone()),
    };
    finish(rt, main.run(rx))
}

/// Stops the runtime's tasks (waiting a second at most) and says how the loop ended.
pub(crate) fn finish(rt: tokio::runtime::Runtime, exit: Exit) -> Result<(), LiveError> {
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    match exit {
        Exit::Stopped => Ok(()),
        Exit::LeaseLost => Err(LiveError::LeaseLost),
    }
}

/// Starts what runs on the tokio runtime: the endpoints, the reflectors, the event task, the
/// leader elector and the signal handler. Returns the event task's channel.
fn start_tasks(
    rt: &tokio::runtime::Runtime,
    opts: &Options,
    kube: &kube::Client,
    health: &Arc<health::Health>,
    le: LeaderElection,
    leading: &Arc<AtomicBool>,
    tx: &mpsc::Sender<runtime::Msg>,
) -> Result<tokio::sync::mpsc::UnboundedSender<serde_json::Value>, LiveError> {
    health::start(
        rt,
        opts.serve,
        &opts.tls,
        &opts.access,
        health,
        "kubeplane scheduler",
    )?;
    reflector::start(rt.handle(), kube, tx);
    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    rt.spawn(events::send_events(
        kube.clone(),
        events_rx,
        "kubeplane scheduler",
    ));
    if le.leader_elect {
        let api = kube::Api::namespaced(kube.clone(), &le.namespace);
        let tx = tx.clone();
        let id = leader::identity();
        let who = "kubeplane scheduler";
        rt.spawn(leader::run(api, le, id, leading.clone(), who, move |on| {
            let _ = tx.send(runtime::Msg::Leading(on));
        }));
    }
    let stop = tx.clone();
    rt.spawn(async move {
        wait_for_signal().await;
        let _ = stop.send(runtime::Msg::Stop);
    });
    Ok(events_tx)
}

pub(crate) async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_scheduler_follows_the_default_releases_nomination_rule() {
        let (scheduler, profiles, _) = build_scheduler(None).unwrap();
        assert_eq!(profiles, vec!["default-scheduler".to_string()]);
        // v1.34 keeps a nomination when a cycle fails (#133276); the simulator's scheduler
        // and this one are built for the same release.
        let default = FeatureGates::default().version();
        assert!(
            default.has(kubeplane_core::version::changes::SCHEDULER_KEEPS_NOMINATION_ON_FAILURE)
        );
        assert!(scheduler.keeps_nomination_on_failure());
    }
}

//! The live controller manager (`kubeplane controller-manager --kubeconfig PATH`): kubeplane's
//! controllers against a real API server through kube-rs, as kube-controller-manager runs
//! them.
//!
//! - a dynamic reflector per kind the controllers read ([`KINDS`]: list, watch with
//!   bookmarks, relist after 410, backoff while the server is away);
//! - one thread ([`control_loop`]) that hands the changes to the controllers and runs them
//!   while this process leads, writing through [`LiveClient`](crate::client::LiveClient);
//! - leader election on the Lease `kube-system/kube-controller-manager` (upstream's name and
//!   defaults; `--leader-elect-resource-name` lets it run beside a real one): a lost lease
//!   stops every write at once and ends the process, as upstream exits;
//! - `/healthz`, `/readyz` and `/metrics` on its own port; `v1` Events from a task of its own.

pub mod control_loop;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};

use kubeplane_api::Kind;
use kubeplane_controllers::manager::{Selection, Settings};
use kubeplane_core::features::FeatureGates;

use crate::runtime::Msg;
use crate::{health, leader, LeaderElection, LiveError};

/// How the controller manager names itself in log lines.
const WHO: &str = "kubeplane controller-manager";

/// What `kubeplane controller-manager` was asked to do.
#[derive(Debug)]
pub struct Options {
    /// `--kubeconfig` (none: the configuration kubectl would use, [`crate::INFERRED`]).
    pub kubeconfig: Option<PathBuf>,
    /// `--controllers`.
    pub selection: Selection,
    /// The controllers' settings (`--node-monitor-grace-period`, ...).
    pub settings: Settings,
    /// `--leader-elect*`.
    pub leader_election: LeaderElection,
    /// Where `/healthz`, `/readyz` and `/metrics` are served (`None`: not served).
    pub serve: Option<SocketAddr>,
    /// The serving certificate of that port (none: a self-signed one).
    pub tls: crate::tls::TlsFiles,
    /// Who may read which path there.
    pub access: crate::health::Access,
}

/// kube-controller-manager's leader election defaults: the scheduler's, on the Lease
/// `kube-system/kube-controller-manager`.
pub fn default_leader_election() -> LeaderElection {
    LeaderElection {
        name: "kube-controller-manager".into(),
        ..LeaderElection::default()
    }
}

/// The kinds the controllers read: the modelled kinds and the workload kinds of the built-in
/// table (DaemonSets, StatefulSets and their ControllerRevisions, Jobs, CronJobs).
pub fn kinds() -> Vec<Kind> {
    let builtin = [
        ("apps/v1", "DaemonSet"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "ControllerRevision"),
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
    ];
    Kind::ALL
        .into_iter()
        .chain(
            builtin
                .iter()
                .filter_map(|(v, k)| Kind::from_manifest(v, k)),
        )
        .collect()
}

/// Runs the selected controllers until SIGINT or SIGTERM (`Ok`), or until the lease is lost.
pub fn run(opts: Options) -> Result<(), LiveError> {
    let le = opts.leader_election.clone();
    le.validate().map_err(LiveError::Input)?;
    let features = FeatureGates::default();
    let (periodic, others) =
        kubeplane_controllers::manager::selected(&features, &opts.settings, &opts.selection);
    let controllers: Vec<_> = periodic.into_iter().chain(others).collect();
    let names: Vec<&str> = controllers.iter().map(|(n, _)| *n).collect();
    eprintln!("{WHO}: controllers: {}", names.join(", "));
    for n in opts.selection.not_implemented() {
        eprintln!("{WHO}: {n} is not implemented by kubeplane; not started");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| LiveError::Runtime(e.to_string()))?;
    let kube = rt
        .block_on(crate::connect(opts.kubeconfig.as_deref()))
        .map_err(LiveError::Input)?;
    let health = Arc::new(health::Health::default());
    let leading = Arc::new(AtomicBool::new(!le.leader_elect));
    let (tx, rx) = mpsc::channel();
    let kinds = kinds();
    let events = start_tasks(&rt, &opts, &kube, &health, &leading, &kinds, tx)?;
    let clock = crate::clock::LiveClock::start();
    let client = crate::client::LiveClient::new(
        kube.clone(),
        rt.handle().clone(),
        clock.api_clock(),
        leading.clone(),
    );
    let main = control_loop::ControlLoop {
        controllers,
        client,
        clock,
        kinds,
        synced: Default::default(),
        leading,
        events,
        health,
        published: None,
    };
    crate::finish(rt, main.run(rx))
}

/// Starts what runs on the tokio runtime: the endpoints, the reflectors, the event task, the
/// leader elector and the signal handler. Returns the event task's channel.
fn start_tasks(
    rt: &tokio::runtime::Runtime,
    opts: &Options,
    kube: &kube::Client,
    health: &Arc<health::Health>,
    leading: &Arc<AtomicBool>,
    kinds: &[Kind],
    tx: mpsc::Sender<Msg>,
) -> Result<tokio::sync::mpsc::UnboundedSender<serde_json::Value>, LiveError> {
    health::start(rt, opts.serve, &opts.tls, &opts.access, health, WHO)?;
    crate::reflector::start_kinds(rt.handle(), kube, kinds, &tx, WHO);
    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    rt.spawn(crate::events::send_events(kube.clone(), events_rx, WHO));
    let le = opts.leader_election.clone();
    if le.leader_elect {
        let api = kube::Api::namespaced(kube.clone(), &le.namespace);
        let tx = tx.clone();
        let id = leader::identity();
        rt.spawn(leader::run(api, le, id, leading.clone(), WHO, move |on| {
            let _ = tx.send(Msg::Leading(on));
        }));
    }
    rt.spawn(async move {
        crate::wait_for_signal().await;
        let _ = tx.send(Msg::Stop);
    });
    Ok(events_tx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_controller_manager_watches_the_workload_kinds_and_elects_on_its_own_lease() {
        let names: Vec<&str> = kinds().iter().map(|k| k.as_str()).collect();
        for k in [
            "Pod",
            "Node",
            "ReplicaSet",
            "Deployment",
            "DaemonSet",
            "StatefulSet",
            "Job",
            "CronJob",
            "ControllerRevision",
        ] {
            assert!(names.contains(&k), "{k} in {names:?}");
        }
        let le = default_leader_election();
        assert_eq!(
            (le.namespace.as_str(), le.name.as_str()),
            ("kube-system", "kube-controller-manager")
        );
        assert_eq!(le.lease_duration, std::time::Duration::from_secs(15));
        assert!(le.validate().is_ok());
    }
}

//! `kubeplane controller-manager`: kube-controller-manager's flags (those kubeplane has a knob
//! for, and the concurrency flags, accepted without effect), checked, then the live controller
//! manager (crates/live) until SIGINT or SIGTERM or a lost lease.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use kubeplane_controllers::manager::{Selection, Settings};
use kubeplane_core::time::SimDuration;
use kubeplane_live::controller_manager::{default_leader_election, Options};

use crate::simulate::input_error;

/// A Go duration (`40s`, `1m30s`), as kube-controller-manager's duration flags take.
fn duration(text: &str) -> Result<SimDuration, String> {
    match kubeplane_core::duration::parse_duration(text) {
        Ok(d) if d.0 >= 0 => Ok(d),
        Ok(_) => Err("must not be negative".into()),
        Err(e) => Err(e.to_string()),
    }
}

fn std_duration(d: SimDuration) -> Duration {
    Duration::from_nanos(d.0.max(0) as u64)
}

#[derive(Args, Debug)]
pub struct ControllerManagerArgs {
    /// The kubeconfig of the cluster to run the controllers on.
    /// [default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account, as kubectl
    /// finds one]
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The controllers to run: '*' every one, 'foo' enables foo, '-foo' disables it
    /// (kube-controller-manager's names and aliases; its other controllers are accepted and
    /// not run). An empty list runs none.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "*",
        allow_hyphen_values = true
    )]
    pub controllers: Vec<String>,
    /// Elect a leader on a coordination.k8s.io Lease before running the controllers.
    #[arg(long, value_name = "BOOL", default_value = "true", num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// How long a non-leader waits after the last renewal it saw before it takes the lease.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = duration)]
    pub leader_elect_lease_duration: SimDuration,
    /// How long the leader keeps trying to renew before it gives up (and exits).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    pub leader_elect_renew_deadline: SimDuration,
    /// How long candidates wait between tries to take or renew the lease.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration)]
    pub leader_elect_retry_period: SimDuration,
    /// The Lease's name (another than kube-controller-manager's runs beside a real one).
    #[arg(long, value_name = "NAME", default_value = "kube-controller-manager")]
    pub leader_elect_resource_name: String,
    /// The Lease's namespace.
    #[arg(long, value_name = "NAMESPACE", default_value = "kube-system")]
    pub leader_elect_resource_namespace: String,
    /// The lock's type: only "leases", as upstream now.
    #[arg(long, value_name = "TYPE", default_value = "leases")]
    pub leader_elect_resource_lock: String,
    /// The HTTPS port of /healthz, /readyz and /metrics; 0 serves none.
    #[arg(long, default_value = "10257", value_name = "PORT")]
    pub secure_port: u16,
    #[command(flatten)]
    pub serving: crate::cli::ServingArgs,
    #[command(flatten)]
    pub node: NodeLifecycleArgs,
    #[command(flatten)]
    pub concurrency: ConcurrencyArgs,
}

/// The node lifecycle controller's and the pod GC's flags.
#[derive(Args, Debug)]
pub struct NodeLifecycleArgs {
    /// How often the node lifecycle controller checks the nodes' status.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration)]
    pub node_monitor_period: SimDuration,
    /// How long a node may go without a heartbeat before it is marked unhealthy.
    #[arg(long, value_name = "DURATION", default_value = "50s", value_parser = duration)]
    pub node_monitor_grace_period: SimDuration,
    /// How long a starting node may be unresponsive before it is marked unhealthy.
    #[arg(long, value_name = "DURATION", default_value = "1m0s", value_parser = duration)]
    pub node_startup_grace_period: SimDuration,
    /// Nodes per second tainted for eviction in a healthy zone.
    #[arg(long, value_name = "RATE", default_value = "0.1")]
    pub node_eviction_rate: f32,
    /// Nodes per second tainted for eviction in an unhealthy large zone.
    #[arg(long, value_name = "RATE", default_value = "0.01")]
    pub secondary_node_eviction_rate: f32,
    /// The fraction of not-ready nodes that makes a zone unhealthy.
    #[arg(long, value_name = "FRACTION", default_value = "0.55")]
    pub unhealthy_zone_threshold: f32,
    /// Zones with at most this many nodes count as small (secondary rate 0).
    #[arg(long, value_name = "COUNT", default_value = "50")]
    pub large_cluster_size_threshold: i32,
    /// Terminated pods kept before the pod GC deletes the oldest (0: never).
    #[arg(long, value_name = "COUNT", default_value = "12500")]
    pub terminated_pod_gc_threshold: usize,
}

/// kube-controller-manager's worker counts: accepted without effect (each kubeplane
/// controller works through its queue on the controller manager's one thread).
#[derive(Args, Debug)]
pub struct ConcurrencyArgs {
    /// Accepted without effect (kubeplane's controllers run on one thread).
    #[arg(long, value_name = "N", default_value = "5")]
    pub concurrent_deployment_syncs: u32,
    /// Accepted without effect.
    #[arg(long, value_name = "N", default_value = "5")]
    pub concurrent_replicaset_syncs: u32,
    /// Accepted without effect.
    #[arg(long, value_name = "N", default_value = "5")]
    pub concurrent_statefulset_syncs: u32,
    /// Accepted without effect.
    #[arg(long, value_name = "N", default_value = "2")]
    pub concurrent_daemonset_syncs: u32,
    /// Accepted without effect.
    #[arg(long, value_name = "N", default_value = "5")]
    pub concurrent_job_syncs: u32,
    /// Accepted without effect.
    #[arg(long, value_name = "N", default_value = "5")]
    pub concurrent_cron_job_syncs: u32,
    /// Accepted without effect.
    #[arg(long, value_name = "N", default_value = "20")]
    pub concurrent_gc_syncs: u32,
    /// Accepted without effect.
    #[arg(long, value_name = "N", default_value = "10")]
    pub concurrent_namespace_syncs: u32,
    /// Accepted without effect.
    #[arg(long, value_name = "N", default_value = "5")]
    pub concurrent_ttl_after_finished_syncs: u32,
}

/// The options of the flags, or the message of the first bad one.
fn options(args: ControllerManagerArgs) -> Result<Options, String> {
    let selection =
        Selection::parse(&args.controllers).map_err(|e| format!("--controllers: {e}"))?;
    let (tls, access) = crate::scheduler::serving(&args.serving)?;
    if args.leader_elect && args.leader_elect_resource_lock != "leases" {
        return Err("--leader-elect-resource-lock: resourceLock value must be \"leases\"".into());
    }
    let mut le = default_leader_election();
    le.leader_elect = args.leader_elect;
    le.lease_duration = std_duration(args.leader_elect_lease_duration);
    le.renew_deadline = std_duration(args.leader_elect_renew_deadline);
    le.retry_period = std_duration(args.leader_elect_retry_period);
    le.name = args.leader_elect_resource_name;
    le.namespace = args.leader_elect_resource_namespace;
    le.validate()?;
    let n = args.node;
    let mut settings = Settings::default();
    let nl = &mut settings.node_lifecycle;
    nl.node_monitor_period = n.node_monitor_period;
    nl.node_monitor_grace_period = n.node_monitor_grace_period;
    nl.node_startup_grace_period = n.node_startup_grace_period;
    nl.node_eviction_rate = n.node_eviction_rate;
    nl.secondary_node_eviction_rate = n.secondary_node_eviction_rate;
    nl.unhealthy_zone_threshold = n.unhealthy_zone_threshold;
    nl.large_cluster_size_threshold = n.large_cluster_size_threshold;
    settings.terminated_pod_gc_threshold = n.terminated_pod_gc_threshold;
    Ok(Options {
        kubeconfig: args.kubeconfig,
        selection,
        settings,
        leader_election: le,
        serve: (args.secure_port != 0)
            .then(|| std::net::SocketAddr::new(args.serving.bind_address, args.secure_port)),
        tls,
        access,
    })
}

pub fn run(args: ControllerManagerArgs) -> ExitCode {
    if let Some(path) = &args.kubeconfig {
        if let Err(e) = std::fs::metadata(path) {
            return input_error(format!("--kubeconfig {}: {e}", path.display()));
        }
    }
    let opts = match options(args) {
        Ok(o) => o,
        Err(e) => return input_error(e),
    };
    crate::scheduler::exit_code(kubeplane_live::controller_manager::run(opts))
}

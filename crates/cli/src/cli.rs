//! Command-line flags, defined once; `--help`, the shell completions and the man page are all
//! generated from these definitions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use kubeplane_core::version::{KubeVersion, VersionError};

/// `--version`: the crate's version, the Kubernetes release it follows by default
/// (`kubeplane_core::version::DEFAULT`; a test keeps the two equal) and the releases
/// `--kubernetes-version` takes.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (follows Kubernetes v1.34.1 by default; --kubernetes-version takes v1.34.0 to v1.37.0, \
     see docs/compatibility.md)"
);

#[derive(Parser, Debug)]
#[command(
    name = "kubeplane",
    version = VERSION,
    about = "Simulate a Kubernetes v1.34 to v1.37 control plane on a deterministic virtual clock",
    long_about = "Simulate a Kubernetes control plane (v1.34.1 by default, v1.34.0 to v1.37.0 with \
--kubernetes-version) on a deterministic virtual clock.\n\n\
Components it runs, with upstream's behaviour, reasons and event messages:\n  \
kube-scheduler: scheduling queue (activeQ, backoffQ, unschedulable pods), cache, the default \
plugins, preemption\n  \
taint-eviction controller: NoExecute taints and tolerationSeconds\n  \
node lifecycle controller: heartbeats, condition taints, zone states\n  \
ReplicaSet controller: slow start, scale-down ranking\n  \
Deployment controller: rolling update and recreate\n  \
disruption controller: PodDisruptionBudget status\n  \
DaemonSet controller: a pod per eligible node, rolling update and OnDelete\n  \
StatefulSet controller: ordinal pods, OrderedReady and Parallel, partitioned rolling update\n  \
Job and CronJob controllers: completions, backoff, pod failure and success policies, schedules\n  \
garbage collector, pod GC, namespace and TTL-after-finished controllers\n  \
admission: DefaultTolerationSeconds\n  \
simulated kubelets: Lease heartbeats, pod start-up and termination\n\n\
The same scenario and seed always give the same output, byte for byte."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run scenarios and check their expectations (exit 0: all held; 1: one failed; 2: invalid input).
    #[command(
        long_about = "Run scenarios on a virtual clock and check their expectations.\n\n\
The input is a YAML stream of Kubernetes manifests, an optional KubeSchedulerConfiguration and \
one kubeplane.io/v1alpha1 Scenario (see docs/scenario-format.md).\n\n\
Output: one record per line in order of virtual time: Kubernetes events, Expectation records, \
and with --explain SchedulingAttempt, EvictionDecision, ScaleDownDecision, DaemonSetDecision, \
StatefulSetDecision, JobDecision and CronJobDecision records.\n\n\
Exit status: 0 every expectation held; 1 at least one failed or a step could not be applied; \
2 the input or the command line is invalid (nothing is simulated)."
    )]
    Simulate(SimulateArgs),
    /// Tell the story of one pod: its scheduling attempts, preemption, evictions, scale-downs and
    /// what its Job, CronJob, DaemonSet or StatefulSet decided about it.
    #[command(
        long_about = "Run the input as `simulate --explain` does and tell the story of one \
pod in plain text: each scheduling attempt with upstream's \"0/N nodes are available\" summary, \
the failing filter of every node or the scores of the best ones, preemption (as preemptor and as \
victim), each eviction decision with its deadline and the tolerations that set it, the \
scale-down ranking that chose it, the Job, CronJob, DaemonSet and StatefulSet controllers' \
decisions about it or its owner (a Job's backoff, failure and TTL deletion, a CronJob's deletion \
of its Job, an OrderedReady wait, a rollout that keeps it, a node its DaemonSet skips), every \
event about it, and where it is at the end.\n\n\
POD is NAME, NAMESPACE/NAME or pod/NAME (in --namespace), or a prefix of one pod's name.\n\n\
Example: kubeplane why web-1 examples/scheduling.yaml"
    )]
    Why(WhyArgs),
    /// Run the same input under several scheduler configurations and compare them side by side.
    #[command(
        long_about = "Run the same input once per KubeSchedulerConfiguration and print \
one column per configuration (named by its file's stem) and one row per measure: pods scheduled \
and pending at the end, nodes used, CPU and memory utilisation per node (requests of the pods \
bound at the end over allocatable: mean, standard deviation, max - min), pods per zone \
(topology.kubernetes.io/zone), preemptions, evictions, pods placed on another node than under \
the first configuration, and the expectations of each run.\n\n\
--config default is the built-in default profile (it replaces a KubeSchedulerConfiguration of \
the input); a file's configuration is applied as `simulate --scheduler-config` applies it.\n\n\
Example: kubeplane compare --config default --config examples/configs/bin-packing.yaml \
examples/what-if.yaml\n\n\
Exit status: 0 every run's expectations held; 1 an expectation or step of a run failed; 2 the \
input, a configuration or the command line is invalid (nothing is simulated)."
    )]
    Compare(CompareArgs),
    /// Run the performance benchmarks and print their figures.
    Bench(BenchArgs),
    /// Serve a kubectl-compatible API with the scheduler, controllers and simulated kubelets inside.
    #[command(
        long_about = "Serve the Kubernetes API over HTTPS (HTTP/1.1 and HTTP/2) with kubeplane's \
scheduler, controllers and a simulated kubelet for every Node inside, so kubectl, client-go \
tools, the Python client and kube-rs work against it unchanged.\n\n\
FILEs are the inputs `simulate` takes: their objects are the initial state.\n\n\
Every request needs the admin bearer token (written with the CA into --kubeconfig-out) or a \
client certificate signed by the server's CA; /readyz, /livez, /healthz and /version are open.\n\n\
Example:\n  kubeplane serve --kubeconfig-out /tmp/kubeplane.yaml examples/what-if.yaml &\n  \
KUBECONFIG=/tmp/kubeplane.yaml kubectl get nodes\n\n\
Exit status: 0 stopped by SIGINT or SIGTERM; 1 the server failed; 2 the input or the \
command line is invalid (nothing is started)."
    )]
    Serve(ServeArgs),
    /// Run kubeplane's scheduler against a real API server (a kubeconfig's cluster).
    #[command(
        long_about = "Run kubeplane's scheduler against any conformant API server through \
kube-rs, as kube-scheduler runs: it watches pods, nodes, namespaces, ReplicaSets and \
PodDisruptionBudgets, binds through pods/binding, writes the PodScheduled condition with status \
patches and records events.k8s.io/v1 Events. Its profiles take only the pods whose \
spec.schedulerName names one of them, so it can run beside the cluster's default scheduler \
(give its profile another schedulerName in --config).\n\n\
Leader election follows the configuration's leaderElection block (upstream's defaults: a \
coordination.k8s.io Lease kube-system/kube-scheduler, 15 s lease, 10 s renew deadline, 2 s \
retry); --leader-elect overrides its leaderElect. /healthz, /readyz and /metrics are served \
over HTTPS on --bind-address:--secure-port (a self-signed certificate unless --tls-cert-file is \
given); /metrics needs a bearer token of --authentication-token-file unless \
--authorization-always-allow-paths lists it.\n\n\
Without --kubeconfig the configuration kubectl would use is taken: $KUBECONFIG, \
~/.kube/config, or inside a pod its service account.\n\n\
Example: kubeplane scheduler --kubeconfig ~/.kube/config --config second-scheduler.yaml\n\n\
Exit status: 0 stopped by SIGINT or SIGTERM; 1 the lease was lost or the scheduler failed; 2 \
the kubeconfig, the configuration or the command line is invalid (nothing is started)."
    )]
    Scheduler(SchedulerArgs),
    /// Write a live cluster's scheduling-relevant state as a simulate input (read only).
    #[command(
        long_about = "Read the scheduling-relevant state of a live cluster (a kubeconfig's \
current context) and write it as a `simulate` input: Namespaces, PriorityClasses, Nodes and \
their heartbeat Leases, PodDisruptionBudgets, Deployments, ReplicaSets, StatefulSets, \
DaemonSets, CronJobs, Jobs and Pods, with their status, in that order (each kind by \
namespace, then name), and the --scheduler-config file if given. Finished pods (Succeeded, \
Failed) are left out; managedFields, resourceVersion, selfLink and the kubectl \
last-applied-configuration annotation are stripped; uids and ownerReferences are kept. \
Lists are paged (--chunk-size); nothing is written to the cluster. Without --kubeconfig the \
configuration kubectl would use is taken: $KUBECONFIG, ~/.kube/config, or inside a pod its \
service account.\n\n\
Example:\n  kubeplane snapshot --kubeconfig ~/.kube/config -o cluster.yaml\n  \
kubeplane simulate cluster.yaml --drain node-3 --ignore-daemonsets\n\n\
Exit status: 0 written; 1 the API server could not be reached or refused a list (401, 403, \
...); 2 the kubeconfig, the scheduler configuration or the command line is invalid (nothing \
is read)."
    )]
    Snapshot(SnapshotArgs),
    /// Run kubeplane's controllers against a real API server (a kubeconfig's cluster).
    #[command(
        long_about = "Run kubeplane's controllers against any conformant API server through \
kube-rs, as kube-controller-manager runs them: taint eviction, node lifecycle, ReplicaSet, \
Deployment, StatefulSet, DaemonSet, disruption, garbage collector, pod GC, namespace, Job, \
CronJob and TTL-after-finished. It watches the kinds they read, writes through the API, and \
records v1 Events.\n\n\
--controllers takes kube-controller-manager's syntax and names ('*', 'foo', '-foo'). Leader \
election uses a coordination.k8s.io Lease, kube-system/kube-controller-manager by default \
(15 s lease, 10 s renew deadline, 2 s retry; --leader-elect-resource-name another name to run \
beside a real kube-controller-manager); a lost lease stops every write and ends the process. \
/healthz, /readyz and /metrics are served over HTTPS on --bind-address:--secure-port, /metrics \
behind a bearer token of --authentication-token-file. Without --kubeconfig the configuration \
kubectl would use is taken: $KUBECONFIG, ~/.kube/config, or inside a pod its service \
account.\n\n\
Example: kubeplane controller-manager --kubeconfig ~/.kube/config --controllers='*,-podgc'\n\n\
Exit status: 0 stopped by SIGINT or SIGTERM; 1 the lease was lost or the controller manager \
failed; 2 the kubeconfig or the command line is invalid (nothing is started)."
    )]
    ControllerManager(crate::controller_manager::ControllerManagerArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(long_about = "Print a shell completion script to standard output.\n\n\
bash:  kubeplane completion bash > ~/.local/share/bash-completion/completions/kubeplane\n\
zsh:   kubeplane completion zsh > \"${fpath[1]}/_kubeplane\"\n\
fish:  kubeplane completion fish > ~/.config/fish/completions/kubeplane.fish")]
    Completion(CompletionArgs),
    /// Print the man page (roff) to standard output.
    #[command(long_about = "Print the man page (roff) to standard output: \
kubeplane man > kubeplane.1 && man ./kubeplane.1")]
    Man,
    /// Print the JSON Schema of the Scenario document, for editors (yaml-language-server).
    Schema,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Manifests (and a Scenario) whose objects are the initial state; directories as
    /// `kubectl apply -f` reads them.
    pub files: Vec<String>,
    /// Read the subdirectories of directory FILEs too.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// The address to listen on (HTTPS).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: std::net::SocketAddr,
    /// Keep the CA, the serving certificate and the admin token here (created if missing).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Write an admin kubeconfig here once the server is ready.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig_out: Option<PathBuf>,
    /// The cluster's clock: the wall clock, or a virtual one running --speed times faster.
    #[arg(long, value_enum, default_value = "wall")]
    pub clock: ClockArg,
    /// How much faster than wall time a virtual clock runs.
    #[arg(long, default_value = "1", value_name = "FACTOR")]
    pub speed: f64,
    /// Keep the objects in an etcd cluster at these client URLs (kube-apiserver's key layout
    /// under /registry) instead of memory or --data-dir.
    #[arg(long, value_name = "URL[,URL]")]
    pub etcd_servers: Option<String>,
    /// The prefix of every key in etcd (kube-apiserver's flag): servers with different
    /// prefixes keep separate clusters in one etcd.
    #[arg(long, value_name = "PREFIX", default_value = "/registry")]
    pub etcd_prefix: String,
    /// The CA (PEM) that signed the etcd members' certificates (with https:// URLs).
    #[arg(long, value_name = "PATH")]
    pub etcd_cafile: Option<PathBuf>,
    /// The client certificate (PEM) to present to etcd (with --etcd-keyfile).
    #[arg(long, value_name = "PATH")]
    pub etcd_certfile: Option<PathBuf>,
    /// The key (PEM) of --etcd-certfile.
    #[arg(long, value_name = "PATH")]
    pub etcd_keyfile: Option<PathBuf>,
    /// With --etcd-servers: how long a leader's Lease lasts (servers on one etcd elect the one
    /// that runs the scheduler and the controllers). Default 15s.
    #[arg(long, value_name = "DURATION")]
    pub leader_elect_lease_duration: Option<String>,
    /// How long the leader tries to renew its Lease before it stops leading. Default 10s.
    #[arg(long, value_name = "DURATION")]
    pub leader_elect_renew_deadline: Option<String>,
    /// How often servers try to acquire or renew the Lease. Default 2s.
    #[arg(long, value_name = "DURATION")]
    pub leader_elect_retry_period: Option<String>,
    /// How long a request other than a watch may take before it gets a 504 Timeout
    /// (kube-apiserver's flag). Default 1m.
    #[arg(long, value_name = "DURATION")]
    pub request_timeout: Option<String>,
    /// A KubeSchedulerConfiguration file, as for simulate.
    #[arg(long, value_name = "PATH")]
    pub scheduler_config: Option<PathBuf>,
    /// The Kubernetes release to follow (as for simulate).
    #[arg(long, value_name = "VERSION", value_parser = parse_kubernetes_version)]
    pub kubernetes_version: Option<KubeVersion>,
    /// Serve the API alone, as a bare kube-apiserver: no scheduler, controllers or node agents
    /// run inside (run your own against it, e.g. `kubeplane scheduler`).
    #[arg(long)]
    pub api_only: bool,
    /// The controllers that run inside, as kube-controller-manager's --controllers: '*' all,
    /// 'foo' enables foo, '-foo' disables it; an empty list (or '-*') runs none, for running
    /// `kubeplane controller-manager` (or a real one) against the server instead.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "*",
        allow_hyphen_values = true
    )]
    pub controllers: Vec<String>,
}

#[derive(Args, Debug)]
pub struct SchedulerArgs {
    /// The kubeconfig of the cluster to schedule on [default: $KUBECONFIG, ~/.kube/config, or
    /// the in-cluster service account, as kubectl finds one].
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// A KubeSchedulerConfiguration file (profiles, plugins, leaderElection).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Elect a leader before scheduling (over the configuration's leaderElection.leaderElect).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub leader_elect: Option<bool>,
    /// The HTTPS port of /healthz, /readyz and /metrics; 0 serves none.
    #[arg(long, default_value = "10259", value_name = "PORT")]
    pub secure_port: u16,
    #[command(flatten)]
    pub serving: ServingArgs,
}

/// How the health and metrics port of `kubeplane scheduler` and `kubeplane controller-manager`
/// is served: its address, certificate and who may read it (upstream's flag names).
#[derive(Args, Debug)]
pub struct ServingArgs {
    /// The address the health and metrics port is served on.
    #[arg(long, default_value = "127.0.0.1", value_name = "IP")]
    pub bind_address: std::net::IpAddr,
    /// The serving certificate (PEM) of that port [default: a self-signed one made at start].
    #[arg(long, value_name = "PATH", requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The key (PEM) of --tls-cert-file.
    #[arg(long, value_name = "PATH", requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// The bearer tokens that may read /metrics (and every path not always allowed): one a
    /// line, or kube-apiserver's token CSV (its first field). Without it only the always
    /// allowed paths can be read.
    #[arg(long, value_name = "PATH")]
    pub authentication_token_file: Option<PathBuf>,
    /// Paths served without authentication (a trailing * matches a prefix).
    #[arg(
        long,
        value_name = "PATHS",
        value_delimiter = ',',
        default_value = "/healthz,/readyz,/livez"
    )]
    pub authorization_always_allow_paths: Vec<String>,
}

#[derive(Args, Debug)]
pub struct SnapshotArgs {
    /// The kubeconfig of the cluster to read (its current context) [default: $KUBECONFIG,
    /// ~/.kube/config, or the in-cluster service account, as kubectl finds one].
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Write the snapshot here instead of standard output (only once everything is read).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// A KubeSchedulerConfiguration file to add to the snapshot (the cluster's scheduler's).
    #[arg(long, value_name = "PATH")]
    pub scheduler_config: Option<PathBuf>,
    /// Objects per list request (kubectl's --chunk-size).
    #[arg(long, default_value = "500", value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_size: u32,
    /// No progress on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `--clock`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ClockArg {
    Wall,
    Virtual,
}

#[derive(Args, Debug)]
pub struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns for a person, and a closing summary.
    Table,
    /// One JSON object per record and line.
    Jsonl,
    /// One JSON document: every record and a summary.
    Json,
}

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// Scenario files and manifests (YAML or JSON streams); '-' reads standard input; a
    /// directory reads its .yaml, .yml and .json files in name order.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,
    /// Read the subdirectories of directory arguments too (as `kubectl apply -R`).
    #[arg(long, short = 'R')]
    pub recursive: bool,
    /// Output format [default: table when stdout is a terminal, else jsonl].
    #[arg(long, value_enum)]
    pub output: Option<OutputFormat>,
    /// Virtual time to run (Go duration like 10m, or seconds); overrides spec.duration.
    #[arg(long, value_name = "DURATION")]
    pub until: Option<String>,
    /// Seed of every random choice; overrides spec.seed.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The Kubernetes release to follow: 1.34 to 1.37 (a minor alone means its newest patch
    /// release) or a patch release like 1.34.0 or v1.35.2; overrides spec.kubernetesVersion
    /// [default: 1.34.1].
    #[arg(long, value_name = "VERSION", value_parser = parse_kubernetes_version)]
    pub kubernetes_version: Option<KubeVersion>,
    /// Write every object at the end of the run to PATH (YAML; JSON if PATH ends in .json).
    #[arg(long, value_name = "PATH")]
    pub final_state: Option<PathBuf>,
    /// Add one SchedulingAttempt record per scheduling attempt (and EvictionDecision and
    /// ScaleDownDecision records).
    #[arg(long)]
    pub explain: bool,
    /// Also write a self-contained HTML report of the run to PATH: events, pods and requested
    /// resources per node over time, the records in a filterable table, each pod's story.
    #[arg(long, value_name = "PATH")]
    pub report: Option<PathBuf>,
    /// A KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1).
    #[arg(long, value_name = "PATH")]
    pub scheduler_config: Option<PathBuf>,
    /// Print the components' counters (metrics) to stderr at the end of the run.
    #[arg(long)]
    pub metrics: bool,
    /// Recompute every scheduling cycle's node-local Filter and Score results, as upstream
    /// does, instead of reusing them for pods with identical specs. The output is the same;
    /// this checks that, and is slower.
    #[arg(long)]
    pub recompute_node_local: bool,
    /// Print no progress line and no closing note on stderr (errors are still printed).
    #[arg(long, short)]
    pub quiet: bool,
    /// Refuse kinds kubeplane stores but does not simulate (ConfigMap, Service, DaemonSet,
    /// ...) instead of noting them on stderr.
    #[arg(long)]
    pub strict: bool,
    /// Instead of the records, tell the story of this pod (as `kubeplane why POD`).
    #[arg(long, value_name = "POD")]
    pub why: Option<String>,
    /// What-if: the steps after this flag happen at this virtual time (Go duration like 1m,
    /// or seconds) [default: 0].
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "What-ifs (each a step, in order)"
    )]
    pub at: Vec<String>,
    /// The namespace of the KIND/NAME references (and of --why's pod) after this flag
    /// [default: default].
    #[arg(
        long,
        short = 'n',
        value_name = "NAMESPACE",
        help_heading = "What-ifs (each a step, in order)"
    )]
    pub namespace: Vec<String>,
    /// Add a taint to a node.
    #[arg(
        long,
        value_name = "NODE:KEY[=VALUE]:EFFECT",
        help_heading = "What-ifs (each a step, in order)"
    )]
    pub taint: Vec<String>,
    /// Remove a node's taints with this key (and effect).
    #[arg(
        long,
        value_name = "NODE:KEY[:EFFECT]",
        help_heading = "What-ifs (each a step, in order)"
    )]
    pub untaint: Vec<String>,
    /// Mark a node unschedulable.
    #[arg(
        long,
        value_name = "NODE",
        help_heading = "What-ifs (each a step, in order)"
    )]
    pub cordon: Vec<String>,
    /// Mark a node schedulable.
    #[arg(
        long,
        value_name = "NODE",
        help_heading = "What-ifs (each a step, in order)"
    )]
    pub uncordon: Vec<String>,
    /// Stop a node's agent (no more heartbeats: the node becomes unreachable).
    #[arg(
        long,
        value_name = "NODE",
        help_heading = "What-ifs (each a step, in order)"
    )]
    pub node_down: Vec<String>,
    /// Resume a node's agent.
    #[arg(
        long,
        value_name = "NODE",
        help_heading = "What-ifs (each a step, in order)"
    )]
    pub node_up: Vec<String>,
    /// Set the replicas of a Deployment, ReplicaSet or StatefulSet (deployment/web=20, sts/db=3).
    #[arg(
        long,
        value_name = "KIND/NAME=N",
        help_heading = "What-ifs (each a step, in order)"
    )]
    pub scale: Vec<String>,
    /// Delete an object, gracefully (pod/web-0, deployment/web, node/n3).
    #[arg(
        long,
        value_name = "KIND/NAME",
        help_heading = "What-ifs (each a step, in order)"
    )]
    pub delete: Vec<String>,
    /// Drain a node as `kubectl drain` does: cordon it, then evict its pods, respecting
    /// PodDisruptionBudgets (the options below are kubectl drain's).
    #[arg(
        long,
        value_name = "NODE",
        help_heading = "What-ifs (each a step, in order)"
    )]
    pub drain: Vec<String>,
    /// --drain: ignore DaemonSet-managed pods.
    #[arg(long, help_heading = "Options of --drain (kubectl drain's)")]
    pub ignore_daemonsets: bool,
    /// --drain: continue even if there are pods using emptyDir (local data that will be
    /// deleted when the node is drained).
    #[arg(long, help_heading = "Options of --drain (kubectl drain's)")]
    pub delete_emptydir_data: bool,
    /// --drain: continue even if there are pods that do not declare a controller.
    #[arg(long, help_heading = "Options of --drain (kubectl drain's)")]
    pub force: bool,
    /// --drain: seconds given to each pod to terminate gracefully; negative uses the pod's
    /// own [default: -1].
    #[arg(
        long,
        value_name = "SECONDS",
        allow_negative_numbers = true,
        help_heading = "Options of --drain (kubectl drain's)"
    )]
    pub grace_period: Option<i64>,
    /// --drain: how long to wait before giving up (Go duration); 0 waits for ever [default: 0s].
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Options of --drain (kubectl drain's)"
    )]
    pub timeout: Option<String>,
    /// --drain: a label selector to filter the pods on the node.
    #[arg(
        long,
        value_name = "SELECTOR",
        help_heading = "Options of --drain (kubectl drain's)"
    )]
    pub pod_selector: Option<String>,
    /// --drain: delete the pods instead of evicting them, bypassing PodDisruptionBudgets.
    #[arg(long, help_heading = "Options of --drain (kubectl drain's)")]
    pub disable_eviction: bool,
    /// The what-if flags in command-line order (filled in from the parsed matches).
    #[arg(skip)]
    pub what_ifs: Vec<crate::whatif::Flag>,
}

impl SimulateArgs {
    /// The namespace --why's pod is in: the last `-n`, else `default`.
    pub fn why_namespace(&self) -> &str {
        self.namespace.last().map_or("default", String::as_str)
    }

    /// The options of `--drain` as given.
    pub fn drain_flags(&self) -> crate::whatif::DrainFlags {
        crate::whatif::DrainFlags {
            ignore_daemonsets: self.ignore_daemonsets,
            delete_emptydir_data: self.delete_emptydir_data,
            force: self.force,
            grace_period: self.grace_period,
            timeout: self.timeout.clone(),
            pod_selector: self.pod_selector.clone(),
            disable_eviction: self.disable_eviction,
        }
    }

    /// Fills `what_ifs` from the matches of this command, in command-line order.
    pub fn collect_what_ifs(&mut self, m: &clap::ArgMatches) {
        let mut all = Vec::new();
        for (id, _) in crate::whatif::FLAGS {
            let (Some(idx), Some(vals)) = (m.indices_of(id), m.get_many::<String>(id)) else {
                continue;
            };
            for (i, v) in idx.zip(vals) {
                all.push((i, id, v.clone()));
            }
        }
        all.sort_by_key(|(i, _, _)| *i);
        self.what_ifs = all
            .into_iter()
            .map(|(_, id, value)| crate::whatif::Flag { id, value })
            .collect();
    }
}

/// The output formats of `compare`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// One column per configuration, one row per measure.
    Table,
    /// One JSON document with one entry per configuration.
    Json,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// A KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1), or `default` for
    /// the built-in default profile; once per configuration, in column order.
    #[arg(long = "config", required = true, value_name = "PATH|default")]
    pub configs: Vec<String>,
    /// Scenario files and manifests, read as `simulate` reads them.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,
    /// Read the subdirectories of directory arguments too.
    #[arg(long, short = 'R')]
    pub recursive: bool,
    /// Virtual time to run (Go duration like 10m, or seconds); overrides spec.duration.
    #[arg(long, value_name = "DURATION")]
    pub until: Option<String>,
    /// Seed of every random choice; overrides spec.seed.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The Kubernetes release to follow (as `simulate --kubernetes-version`).
    #[arg(long, value_name = "VERSION", value_parser = parse_kubernetes_version)]
    pub kubernetes_version: Option<KubeVersion>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
    pub output: CompareFormat,
}

#[derive(Args, Debug)]
pub struct WhyArgs {
    /// The pod: NAME, NAMESPACE/NAME, pod/NAME, or a prefix of one pod's name.
    #[arg(value_name = "POD")]
    pub pod: String,
    #[command(flatten)]
    pub simulate: SimulateArgs,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Which benchmarks to run (default: all); `--list` names them.
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// List the benchmarks, one line each, and run none.
    #[arg(long)]
    pub list: bool,
    /// Scale every workload down by this factor (for a quick check).
    #[arg(long, default_value_t = 1)]
    pub scale_down: usize,
    /// After each simulator-driven benchmark, print the components' counters (scheduling
    /// attempts, controller syncs, pods created and deleted, ...).
    #[arg(long)]
    pub metrics: bool,
    /// The Kubernetes release the simulated components follow (as `simulate
    /// --kubernetes-version`) [default: 1.34.1].
    #[arg(long, value_name = "VERSION", value_parser = parse_kubernetes_version)]
    pub kubernetes_version: Option<KubeVersion>,
    /// Write the figures as one JSON document on stdout (the machine and build, then per
    /// workload its parameters, figures with units and peak memory); the text goes to stderr.
    /// `scripts/bench-compare.py A.json B.json` compares two of them.
    #[arg(long)]
    pub json: bool,
}

/// `--kubernetes-version`: a supported release (clap reports an error as a usage error, exit 2,
/// naming the flag and the supported range).
fn parse_kubernetes_version(text: &str) -> Result<KubeVersion, VersionError> {
    text.parse()
}

//! Command-line flags, defined once; `--help` is generated from these definitions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "kubeplane",
    version,
    about = "Simulate a Kubernetes v1.34 control plane (scheduler, taint eviction, ReplicaSets) on a deterministic virtual clock"
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
and with --explain SchedulingAttempt, EvictionDecision and ScaleDownDecision records.\n\n\
Exit status: 0 every expectation held; 1 at least one failed or a step could not be applied; \
2 the input or the command line is invalid (nothing is simulated)."
    )]
    Simulate(SimulateArgs),
    /// Run the performance benchmarks and print their figures.
    Bench(BenchArgs),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Table,
    Jsonl,
}

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// Scenario files (YAML streams); '-' reads standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,
    /// Output format [default: table when stdout is a terminal, else jsonl].
    #[arg(long, value_enum)]
    pub output: Option<OutputFormat>,
    /// Virtual time to run (Go duration like 10m, or seconds); overrides spec.duration.
    #[arg(long, value_name = "DURATION")]
    pub until: Option<String>,
    /// Seed of every random choice; overrides spec.seed.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Write every object at the end of the run to PATH (YAML; JSON if PATH ends in .json).
    #[arg(long, value_name = "PATH")]
    pub final_state: Option<PathBuf>,
    /// Add one SchedulingAttempt record per scheduling attempt (and EvictionDecision and
    /// ScaleDownDecision records).
    #[arg(long)]
    pub explain: bool,
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
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Which benchmarks to run (default: all). Names: scheduling-basic-10k,
    /// scheduling-basic-50k, heartbeats-24h, and those the controllers add.
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Scale every workload down by this factor (for a quick check).
    #[arg(long, default_value_t = 1)]
    pub scale_down: usize,
    /// After each simulator-driven benchmark, print the components' counters (scheduling
    /// attempts, controller syncs, pods created and deleted, ...).
    #[arg(long)]
    pub metrics: bool,
}

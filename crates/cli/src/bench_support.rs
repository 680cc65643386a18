//! What the benchmarks of `kubeplane bench` share: the `Workload` they are listed as, the
//! process's CPU time and peak memory they report, a scenario whose pods never start, and the
//! record of parameters and figures a workload leaves for `bench --json`.

use std::sync::Mutex;

use kubeplane_core::version::KubeVersion;
use kubeplane_sim::scenario::Scenario;
use serde_json::{json, Map, Value};

/// A benchmark: its name on the command line, one line on what it measures, and the run.
pub struct Workload {
    pub name: &'static str,
    pub about: &'static str,
    pub run: Box<dyn Fn() -> Result<(), String>>,
}

/// The process's peak resident memory in MiB (Linux), if known. `bench` runs each workload in
/// a process of its own, so this is the workload's peak.
pub fn peak_memory_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// CPU time the process has used, all threads, in seconds (Linux `/proc/self/stat`, user +
/// system), so figures stay meaningful on a machine busy with other work.
pub fn thread_cpu_secs() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may contain spaces) end with ')'.
    let rest = &s[s.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // Linux reports these in clock ticks of 1/100 s.
    Some((utime + stime) / 100.0)
}

/// A scenario following `version` whose bound pods are never started (no pod startup
/// latency), so a benchmark measures the scheduler alone.
pub fn scenario_without_kubelets(version: KubeVersion) -> Scenario {
    Scenario {
        pod_startup_latency: None,
        ..Scenario::for_version(Some(version))
    }
}

/// What the running workload has recorded so far: the names it printed its figures under,
/// its parameters and its figures.
#[derive(Default)]
pub struct Record {
    pub labels: Vec<String>,
    pub parameters: Map<String, Value>,
    pub figures: Vec<Value>,
}

static RECORD: Mutex<Option<Record>> = Mutex::new(None);

fn with_record(f: impl FnOnce(&mut Record)) {
    let mut guard = RECORD.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Record::default));
}

/// Which way a figure in `unit` is better: rates (`.../s`) higher, times and sizes lower.
pub fn better(unit: &str) -> &'static str {
    if unit.ends_with("/s") {
        "higher"
    } else {
        "lower"
    }
}

/// Records the name the workload prints its figures under (upstream's, e.g.
/// `SchedulingBasic/5000Nodes_10000Pods`).
pub fn label(text: &str) {
    with_record(|r| {
        if !r.labels.iter().any(|l| l == text) {
            r.labels.push(text.to_string());
        }
    });
}

/// Records one parameter of the workload (nodes, pods, ...).
pub fn param(name: &str, value: impl Into<Value>) {
    let value = value.into();
    with_record(|r| {
        r.parameters.insert(name.to_string(), value);
    });
}

/// Records a scheduling workload's three figures: measured pods per second of wall time, the
/// wall time, and measured pods per CPU-second of all threads.
pub fn throughput_figures(measured: usize, wall: f64, cpu: f64) {
    figure("throughput", measured as f64 / wall, "pods/s");
    figure("wall", wall, "s");
    figure(
        "throughput per CPU-second",
        measured as f64 / cpu.max(1e-9),
        "pods/s",
    );
}

/// Records one figure: its name, value and unit (which also says which way is better).
pub fn figure(name: &str, value: f64, unit: &str) {
    let value = if value.is_finite() { value } else { 0.0 };
    with_record(|r| {
        r.figures.push(json!({
            "name": name, "value": value, "unit": unit, "better": better(unit),
        }))
    });
}

/// Takes what the workload recorded, leaving an empty record for the next.
pub fn take_record() -> Record {
    let mut guard = RECORD.lock().unwrap_or_else(|e| e.into_inner());
    guard.take().unwrap_or_default()
}

/// The facts about this build and machine a JSON document starts with: the version, the git
/// commit when the build was given one (`KUBEPLANE_GIT_COMMIT`), the build profile, the
/// cores, and the load when the run started (the machine may be shared).
pub fn machine_facts(kubernetes: &str, scale_down: usize) -> Value {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok());
    json!({
        "kubeplane_version": env!("CARGO_PKG_VERSION"),
        "git_commit": option_env!("KUBEPLANE_GIT_COMMIT"),
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "kubernetes_version": kubernetes,
        "scale_down": scale_down,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "load_average_1m": load,
    })
}

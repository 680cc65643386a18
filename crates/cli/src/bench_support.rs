//! What the benchmarks of `kubeplane bench` share: the `Workload` they are listed as, the
//! process's CPU time and peak memory they report, and a scenario whose pods never start.

use kubeplane_core::version::KubeVersion;
use kubeplane_sim::scenario::Scenario;

/// A benchmark: its name on the command line, one line on what it measures, and the run.
pub struct Workload {
    pub name: &'static str,
    pub about: &'static str,
    pub run: Box<dyn Fn() -> Result<(), String>>,
}

/// The process's peak resident memory in MiB (Linux), if known.
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

//! The scheduler plugin and preemption benchmarks of `kubeplane bench` (upstream
//! scheduler_perf `misc/PreemptionBasic`, `misc/PreemptionAsync`,
//! `topology_spreading/TopologySpreading`, `affinity/SchedulingPodAntiAffinity` and
//! `affinity/SchedulingPodAffinity`), in the shape of `bench::scheduling_basic`: set-up objects
//! are scheduled first, then the measured pods; the figure is measured pods per second.

use std::time::Instant;

use kubeplane_core::version::KubeVersion;
use kubeplane_sim::workloads;
use kubeplane_sim::{RunOptions, Simulation};
use kubeplane_store::Object;

use crate::bench_support::{
    label, param, peak_memory_mib, scenario_without_kubelets, thread_cpu_secs, throughput_figures,
    Workload,
};

/// Schedules `setup`, then measures how fast the `n_measured` pods of `measured` are
/// scheduled; `expected_scheduled` Scheduled events must have happened in all.
fn measured_workload(
    version: KubeVersion,
    name: &str,
    setup: Vec<Object>,
    measured: Vec<Object>,
    n_measured: usize,
    expected_scheduled: usize,
) -> Result<(), String> {
    let n_nodes = setup
        .iter()
        .filter(|o| o.kind() == kubeplane_store::Kind::Node)
        .count();
    let mut sim = Simulation::new(
        workloads::input(setup, scenario_without_kubelets(version)),
        &RunOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    rayon::scope(|_| sim.settle_now()).map_err(|e| e.to_string())?;
    let before = sim.events().len();
    let started = Instant::now();
    let cpu_started = thread_cpu_secs().unwrap_or(0.0);
    sim.create_objects(measured).map_err(|e| e.to_string())?;
    rayon::scope(|_| sim.settle_now()).map_err(|e| e.to_string())?;
    let wall = started.elapsed().as_secs_f64();
    let cpu = thread_cpu_secs().unwrap_or(0.0) - cpu_started;
    let count = |reason: &str| sim.events().iter().filter(|e| e.reason() == reason).count();
    let scheduled = count("Scheduled");
    let preempted = sim.events()[before..]
        .iter()
        .filter(|e| e.reason() == "Preempted")
        .count();
    label(name);
    param("nodes", n_nodes);
    param("setup_pods", expected_scheduled - n_measured);
    param("measured_pods", n_measured);
    throughput_figures(n_measured, wall, cpu);
    println!(
        "{name}: {n_nodes} nodes, {n_measured} measured pods: {:.0} pods/s ({wall:.3} s wall; {:.0} pods per CPU-second, all threads), {scheduled}/{expected_scheduled} pods scheduled, {preempted} preempted, peak memory {:.0} MiB",
        n_measured as f64 / wall,
        n_measured as f64 / cpu.max(1e-9),
        peak_memory_mib().unwrap_or(0.0)
    );
    if scheduled != expected_scheduled {
        return Err(format!(
            "{name}: {scheduled} pods were scheduled, expected {expected_scheduled}"
        ));
    }
    Ok(())
}

/// PreemptionBasic: nodes full of low-priority pods (4 × 900m on 4 cpu); each measured
/// high-priority pod (3 cpu) preempts three of them.
fn preemption_basic(
    version: KubeVersion,
    n_nodes: usize,
    n_init: usize,
    n_measured: usize,
) -> Result<(), String> {
    let mut setup = workloads::nodes(n_nodes);
    setup.push(workloads::priority_class(
        workloads::HIGH_PRIORITY_CLASS,
        10,
    ));
    setup.extend(workloads::low_priority_pods("sched-0", "low", n_init));
    let measured = workloads::high_priority_pods("sched-1", "high", n_measured);
    measured_workload(
        version,
        &format!("PreemptionBasic/{n_nodes}Nodes"),
        setup,
        measured,
        n_measured,
        n_init + n_measured,
    )
}

/// PreemptionAsync: default pods scheduled while high-priority pods preempt. Upstream creates
/// a high-priority pod every 200 ms while the measured pods are created; on the virtual clock
/// everything is created at once, so the same proportion of high-priority pods (5 per second
/// of the 570 pods/s threshold) is created with the measured pods.
fn preemption_async(
    version: KubeVersion,
    n_nodes: usize,
    n_init: usize,
    n_measured: usize,
) -> Result<(), String> {
    let mut setup = workloads::nodes(n_nodes);
    setup.push(workloads::priority_class(
        workloads::HIGH_PRIORITY_CLASS,
        10,
    ));
    setup.extend(workloads::low_priority_pods("sched-0", "low", n_init));
    let n_high = (n_measured * 5).div_ceil(570);
    let mut measured = workloads::pods("sched-1", "pod", n_measured);
    let high = workloads::high_priority_pods("sched-1", "high", n_high);
    let every = (n_measured / n_high.max(1)).max(1);
    for (i, h) in high.into_iter().enumerate() {
        measured.insert(((i + 1) * every + i).min(measured.len()), h);
    }
    measured_workload(
        version,
        &format!("PreemptionAsync/{n_nodes}Nodes ({n_high} preemptors)"),
        setup,
        measured,
        n_measured + n_high,
        n_init + n_measured + n_high,
    )
}

/// TopologySpreading: pods with a hard zone constraint (maxSkew 5) on 3 zones.
fn topology_spreading(
    version: KubeVersion,
    n_nodes: usize,
    n_init: usize,
    n_measured: usize,
) -> Result<(), String> {
    let mut setup = workloads::zoned_nodes(n_nodes, &["moon-1", "moon-2", "moon-3"]);
    setup.extend(workloads::pods("sched-0", "init", n_init));
    let measured = workloads::spreading_pods("sched-1", "spreading", n_measured);
    measured_workload(
        version,
        &format!("TopologySpreading/{n_nodes}Nodes_{n_measured}Pods"),
        setup,
        measured,
        n_measured,
        n_init + n_measured,
    )
}

/// SchedulingPodAntiAffinity: every pod repels the others from its node.
fn pod_anti_affinity(
    version: KubeVersion,
    n_nodes: usize,
    n_init: usize,
    n_measured: usize,
) -> Result<(), String> {
    let mut setup = workloads::nodes(n_nodes);
    setup.extend(workloads::anti_affinity_pods("sched-0", "init", n_init));
    let measured = workloads::anti_affinity_pods("sched-1", "anti", n_measured);
    measured_workload(
        version,
        &format!("SchedulingPodAntiAffinity/{n_nodes}Nodes_{n_measured}Pods"),
        setup,
        measured,
        n_measured,
        n_init + n_measured,
    )
}

/// SchedulingPodAffinity: every pod requires the others' zone (all nodes in one zone).
fn pod_affinity(
    version: KubeVersion,
    n_nodes: usize,
    n_init: usize,
    n_measured: usize,
) -> Result<(), String> {
    let mut setup = workloads::zoned_nodes(n_nodes, &["zone1"]);
    setup.extend(workloads::affinity_pods("sched-0", "init", n_init));
    let measured = workloads::affinity_pods("sched-1", "affinity", n_measured);
    measured_workload(
        version,
        &format!("SchedulingPodAffinity/{n_nodes}Nodes_{n_measured}Pods"),
        setup,
        measured,
        n_measured,
        n_init + n_measured,
    )
}

/// The workloads, scaled down by `s`, following Kubernetes `version`.
pub fn workloads(s: usize, version: KubeVersion) -> Vec<Workload> {
    vec![
        Workload {
            name: "preemption-basic",
            about: "PreemptionBasic: 1000 nodes full of low-priority pods, 1000 preemptors",
            run: Box::new(move || preemption_basic(version, 1000 / s, 4000 / s, 1000 / s)),
        },
        Workload {
            name: "preemption-basic-5000",
            about: "PreemptionBasic: 5000 nodes, 20,000 low-priority pods, 1000 preemptors",
            run: Box::new(move || preemption_basic(version, 5000 / s, 20000 / s, 1000 / s)),
        },
        Workload {
            name: "preemption-async",
            about: "PreemptionAsync: 5000 pods scheduled on 5000 nodes while preemptors preempt",
            run: Box::new(move || preemption_async(version, 5000 / s, 20000 / s, 5000 / s)),
        },
        Workload {
            name: "topology-spreading",
            about:
                "TopologySpreading: 5000 pods with a hard zone constraint, 5000 nodes in 3 zones",
            run: Box::new(move || topology_spreading(version, 5000 / s, 5000 / s, 5000 / s)),
        },
        Workload {
            name: "pod-anti-affinity",
            about: "SchedulingPodAntiAffinity: 2000 pods repelling each other, 5000 nodes",
            run: Box::new(move || pod_anti_affinity(version, 5000 / s, 1000 / s, 2000 / s)),
        },
        Workload {
            name: "pod-affinity",
            about: "SchedulingPodAffinity: 5000 pods requiring each other's zone, 5000 nodes",
            run: Box::new(move || pod_affinity(version, 5000 / s, 5000 / s, 5000 / s)),
        },
    ]
}

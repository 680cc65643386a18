//! `kubeplane bench`: the performance workloads, printing their figures. Wall time is measured
//! here, at the edge; the simulation itself runs on its virtual clock.

use std::process::ExitCode;
use std::time::Instant;

use kubeplane_core::time::SimDuration;
use kubeplane_core::version::KubeVersion;
use kubeplane_sim::scenario::Scenario;
use kubeplane_sim::workloads;
use kubeplane_sim::{RunOptions, Simulation};

use crate::bench_support::{
    figure, label, param, peak_memory_mib, scenario_without_kubelets, thread_cpu_secs,
    throughput_figures, Workload,
};
use crate::cli::BenchArgs;

/// Upstream scheduler_perf SchedulingBasic: `n_nodes` default nodes, `n_init` pods scheduled
/// first, then `n_measured` pods whose scheduling throughput is measured.
fn scheduling_basic(
    version: KubeVersion,
    name: &str,
    n_nodes: usize,
    n_init: usize,
    n_measured: usize,
) -> Result<(), String> {
    let mut objects = workloads::nodes(n_nodes);
    objects.extend(workloads::pods("sched-0", "init", n_init));
    let mut sim = Simulation::new(
        workloads::input(objects, scenario_without_kubelets(version)),
        &RunOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    rayon::scope(|_| sim.settle_now()).map_err(|e| e.to_string())?;
    let measured = workloads::pods("sched-1", "pod", n_measured);
    let started = Instant::now();
    let cpu_started = thread_cpu_secs().unwrap_or(0.0);
    sim.create_objects(measured).map_err(|e| e.to_string())?;
    // Run on a thread of the pool, so parallel filtering and scoring keep half the work on
    // this thread instead of handing all of it over and waiting.
    rayon::scope(|_| sim.settle_now()).map_err(|e| e.to_string())?;
    let wall = started.elapsed().as_secs_f64();
    let cpu = thread_cpu_secs().unwrap_or(0.0) - cpu_started;
    let scheduled = sim
        .events()
        .iter()
        .filter(|e| e.reason() == "Scheduled")
        .count();
    let expected = n_init + n_measured;
    label(name);
    param("nodes", n_nodes);
    param("init_pods", n_init);
    param("measured_pods", n_measured);
    throughput_figures(n_measured, wall, cpu);
    println!(
        "{name}: {n_nodes} nodes, {n_init} init pods, {n_measured} measured pods: {:.0} pods/s ({wall:.3} s wall; {:.0} pods per CPU-second, all threads), {scheduled}/{expected} pods scheduled, peak memory {:.0} MiB",
        n_measured as f64 / wall,
        n_measured as f64 / cpu.max(1e-9),
        peak_memory_mib().unwrap_or(0.0)
    );
    if scheduled != expected {
        return Err(format!(
            "{name}: only {scheduled} of {expected} pods were scheduled"
        ));
    }
    Ok(())
}

/// 24 h of virtual time for a cluster of `n_nodes` nodes running `per_node` pods each, with
/// node agents renewing Leases every 10 s and the controllers running.
fn heartbeats(
    version: KubeVersion,
    name: &str,
    n_nodes: usize,
    per_node: usize,
    hours: i64,
) -> Result<(), String> {
    let mut objects = workloads::nodes(n_nodes);
    objects.extend(workloads::bound_pods("default", n_nodes, per_node));
    let scenario = Scenario {
        duration: Some(SimDuration::from_secs(hours * 3600)),
        ..Scenario::for_version(Some(version))
    };
    let started = Instant::now();
    let mut sim = Simulation::new(workloads::input(objects, scenario), &RunOptions::default())
        .map_err(|e| e.to_string())?;
    rayon::scope(|_| sim.run(&mut |_, _| {})).map_err(|e| e.to_string())?;
    let wall = started.elapsed().as_secs_f64();
    let metrics = sim.metrics();
    let renewals = metrics
        .iter()
        .find(|(n, _)| n == "kubelet_node_lease_renewals_total")
        .map(|(_, v)| *v)
        .unwrap_or(0);
    label(name);
    param("nodes", n_nodes);
    param("pods", n_nodes * per_node);
    param("virtual_hours", hours);
    figure("wall", wall, "s");
    println!(
        "{name}: {n_nodes} nodes, {} pods, {hours} h of virtual time: {wall:.2} s wall, {renewals} lease renewals, peak memory {:.0} MiB",
        n_nodes * per_node,
        peak_memory_mib().unwrap_or(0.0)
    );
    let expected = (n_nodes as u64) * (hours as u64 * 360 + 1);
    if renewals != expected {
        return Err(format!(
            "{name}: expected {expected} lease renewals, saw {renewals}"
        ));
    }
    Ok(())
}

/// Upstream-style NoExecute storm: every node tainted at once; how long the taint-eviction
/// controller takes to decide for every pod, and whether the virtual timeline is right.
fn noexecute_eviction(n_nodes: usize, per_node: usize) -> Result<(), String> {
    let r = crate::bench_controllers::taint_eviction::bench_noexecute_eviction(n_nodes, per_node);
    label(&format!(
        "NoExecuteEviction/{n_nodes}Nodes_{}Pods",
        n_nodes * per_node
    ));
    param("nodes", n_nodes);
    param("pods", n_nodes * per_node);
    figure("decisions", r.decisions_wall.as_secs_f64(), "s");
    figure("evictions", r.evictions_wall.as_secs_f64(), "s");
    println!(
        "NoExecuteEviction/{n_nodes}Nodes_{}Pods: {}",
        n_nodes * per_node,
        r.summary()
    );
    if !r.timeline_ok {
        return Err("NoExecuteEviction: the eviction timeline is wrong".into());
    }
    Ok(())
}

/// The node lifecycle controller's monitor over a day: 1000 nodes, a pass every 5 s.
fn node_monitor(n_nodes: usize, hours: i64) -> Result<(), String> {
    let r = crate::bench_controllers::node_lifecycle::bench_node_monitor(n_nodes, hours * 3600);
    label(&format!("NodeMonitor/{n_nodes}Nodes_{hours}h"));
    param("nodes", n_nodes);
    param("virtual_hours", hours);
    figure("in the controller", r.controller_wall.as_secs_f64(), "s");
    figure("wall", r.total_wall.as_secs_f64(), "s");
    println!("NodeMonitor/{n_nodes}Nodes_{hours}h: {}", r.summary());
    Ok(())
}

/// The DaemonSet controller on `n_nodes` nodes: a pod for every node, then a rolling update of
/// all of them.
fn daemon_set(n_nodes: usize) -> Result<(), String> {
    let r = crate::bench_controllers::daemon_set::bench_daemon_set(n_nodes);
    label(&format!("DaemonSet/{n_nodes}Nodes"));
    param("nodes", n_nodes);
    figure("launch", r.launch_wall.as_secs_f64(), "s");
    figure("rolling update", r.update_wall.as_secs_f64(), "s");
    println!("DaemonSet/{n_nodes}Nodes: {}", r.summary());
    if !r.ok {
        return Err("DaemonSet: not every node ended with one pod of the new template".into());
    }
    Ok(())
}

/// 120 s following `version`: the Deployment `default/web` scaled to `up` at 1 s and to
/// `down` at 60 s.
fn scale_up_then_down(version: KubeVersion, up: i32, down: i32) -> Scenario {
    use kubeplane_sim::scenario::{Step, StepAction};
    use kubeplane_store::{Kind, ObjectKey};
    let key = ObjectKey::new(Kind::Deployment, "default", "web");
    let scale = |index: usize, secs: i64, replicas: i32| Step {
        at: kubeplane_core::SimTime::from_secs(secs),
        index,
        action: StepAction::Scale {
            key: key.clone(),
            replicas,
        },
    };
    Scenario {
        duration: Some(SimDuration::from_secs(120)),
        steps: vec![scale(0, 1, up), scale(1, 60, down)],
        ..Scenario::for_version(Some(version))
    }
}

/// A Deployment scaled from 0 to `up` replicas on `n_nodes` nodes, then down to `down`:
/// ReplicaSet slow start, scheduling, kubelets, and the scale-down victim order.
fn deployment_scale(
    version: KubeVersion,
    n_nodes: usize,
    up: i32,
    down: i32,
    metrics: bool,
) -> Result<(), String> {
    let mut objects = workloads::nodes(n_nodes);
    objects.push(workloads::deployment("default", "web", 0));
    let scenario = scale_up_then_down(version, up, down);
    let started = Instant::now();
    let mut sim = Simulation::new(workloads::input(objects, scenario), &RunOptions::default())
        .map_err(|e| e.to_string())?;
    // The wall time when the last instant before the scale-down step is done: the split
    // between the phases.
    let down_at = kubeplane_core::SimTime::from_secs(60);
    let mut up_wall = None;
    rayon::scope(|_| {
        sim.run_observed(&mut |_, now, _| {
            if now < down_at {
                up_wall = Some(started.elapsed().as_secs_f64());
            }
        })
    })
    .map_err(|e| e.to_string())?;
    let wall = started.elapsed().as_secs_f64();
    let up_wall = up_wall.unwrap_or(wall);
    let scheduled = sim
        .events()
        .iter()
        .filter(|e| e.reason() == "Scheduled")
        .count();
    let running = sim
        .store
        .pods()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .count();
    label(&format!("DeploymentScale/{n_nodes}Nodes_0_{up}_{down}"));
    param("nodes", n_nodes);
    param("replicas_up", up);
    param("replicas_down", down);
    figure("wall", wall, "s");
    figure("scale-up phase", up_wall, "s");
    figure("scale-down phase", wall - up_wall, "s");
    println!(
        "DeploymentScale/{n_nodes}Nodes_0_{up}_{down}: {wall:.2} s wall for 120 s of virtual time ({up_wall:.2} s up to the scale-down at 60 s, {:.2} s after), {scheduled} pods scheduled, {running} pods at the end, peak memory {:.0} MiB",
        wall - up_wall,
        peak_memory_mib().unwrap_or(0.0)
    );
    if metrics {
        for (name, value) in sim.metrics() {
            println!("  {name} {value}");
        }
    }
    if running != down as usize || scheduled < up as usize {
        return Err(format!("DeploymentScale: expected {down} pods at the end and {up} scheduled, saw {running} and {scheduled}"));
    }
    Ok(())
}

/// SchedulingBasic and a day of heartbeats, scaled down by `s`, following Kubernetes `v`.
fn scheduling_and_heartbeats(s: usize, v: KubeVersion) -> Vec<Workload> {
    vec![
        Workload {
            name: "scheduling-basic-10k",
            about: "SchedulingBasic: 5000 nodes, 1000 init pods, 10,000 measured pods",
            run: Box::new(move || {
                scheduling_basic(
                    v,
                    "SchedulingBasic/5000Nodes_10000Pods",
                    5000 / s,
                    1000 / s,
                    10000 / s,
                )
            }),
        },
        Workload {
            name: "scheduling-basic-50k",
            about: "SchedulingBasic: 5000 nodes, 5000 init pods, 50,000 measured pods",
            run: Box::new(move || {
                scheduling_basic(
                    v,
                    "SchedulingBasic/5000Nodes_50000Pods",
                    5000 / s,
                    5000 / s,
                    50000 / s,
                )
            }),
        },
        Workload {
            name: "heartbeats-24h",
            about: "24 h of virtual time: 1000 nodes, 30,000 pods, Leases renewed every 10 s",
            run: Box::new(move || {
                heartbeats(v, "Heartbeats/1000Nodes_30000Pods_24h", 1000 / s, 30, 24)
            }),
        },
    ]
}

/// Every benchmark, scaled down by `s`, in the order `bench` runs them; the simulated ones
/// follow Kubernetes `v`.
fn all_workloads(s: usize, metrics: bool, v: KubeVersion) -> Vec<Workload> {
    let mut own = crate::bench_serve::workloads(s, v);
    own.extend(scheduling_and_heartbeats(s, v));
    own.extend(vec![
        Workload {
            name: "noexecute-eviction",
            about: "a NoExecute taint on 1000 nodes x 30 pods: all 30,000 eviction decisions",
            run: Box::new(move || noexecute_eviction(1000 / s, 30)),
        },
        Workload {
            name: "node-monitor-24h",
            about: "the node lifecycle monitor over 24 h of 1000 nodes (a quiet-host reference)",
            run: Box::new(move || node_monitor(1000 / s, 24)),
        },
        Workload {
            name: "daemonset-5000",
            about: "DaemonSet5000: a DaemonSet on 5000 nodes, then a rolling update of every pod",
            run: Box::new(move || daemon_set(5000 / s)),
        },
        Workload {
            name: "deployment-scale",
            about: "a Deployment scaled 0 -> 10,000 -> 1000 replicas on 1000 nodes",
            run: Box::new(move || {
                deployment_scale(
                    v,
                    1000 / s,
                    (10000 / s) as i32,
                    (1000 / s) as i32,
                    metrics,
                )
            }),
        },
        Workload {
            name: "jobs-1000",
            about: "Jobs1000: 1000 Jobs of 2 pods (30 s each, one at a time) on 100 nodes, to completion",
            run: Box::new(move || crate::bench_controllers::jobs::bench_jobs(v, 100 / s, 1000 / s)),
        },
        Workload {
            name: "envelope",
            about: "5000 nodes in 3 zones, 10,000 namespaces x a 15-replica Deployment (150,000 pods) until all are Ready, then 24 h with one zone down",
            run: Box::new(move || {
                crate::bench_envelope::envelope(
                    v,
                    crate::bench_envelope::Envelope::scaled_down(s),
                    metrics,
                )
            }),
        },
    ]);
    // The scheduler plugin and preemption workloads.
    own.into_iter()
        .chain(crate::bench_scheduler::workloads(s, v))
        .collect()
}

pub fn run(args: BenchArgs) -> ExitCode {
    let version = args.kubernetes_version.unwrap_or_default();
    let all = all_workloads(args.scale_down.max(1), args.metrics, version);
    if args.list {
        let width = all.iter().map(|w| w.name.len()).max().unwrap_or(0);
        for w in &all {
            println!("{:<width$}  {}", w.name, w.about);
        }
        return ExitCode::SUCCESS;
    }
    let unknown: Vec<&str> = args
        .names
        .iter()
        .filter(|n| !all.iter().any(|w| w.name == n.as_str()))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        let names: Vec<&str> = all.iter().map(|w| w.name).collect();
        eprintln!(
            "error: no benchmark named {}; the benchmarks are: {} (see `kubeplane bench --list`)",
            unknown.join(", "),
            names.join(", ")
        );
        return ExitCode::from(2);
    }
    let selected: Vec<&Workload> = all
        .iter()
        .filter(|w| args.names.is_empty() || args.names.iter().any(|n| n == w.name))
        .collect();
    crate::bench_run::run(&selected, &args, version)
}

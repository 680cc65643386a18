//! `Jobs1000`: a thousand Jobs run to completion through the whole simulator (the Job
//! controller, the scheduler and the node agents ending pods after their run duration), timed
//! on the wall clock.

use std::sync::Arc;
use std::time::Instant;

use kubeplane_api::{DynamicObject, Object};
use kubeplane_core::time::SimDuration;
use kubeplane_core::version::KubeVersion;
use kubeplane_sim::scenario::Scenario;
use kubeplane_sim::workloads;
use kubeplane_sim::{RunOptions, Simulation};
use serde_json::json;

use crate::bench_support::{figure, label, param, peak_memory_mib};

/// One Job of `completions` pods, `parallelism` at a time, each running 30 s.
fn job(name: &str, completions: i32, parallelism: i32) -> Result<Object, String> {
    let manifest = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "completions": completions, "parallelism": parallelism,
            "template": {
                "metadata": {"annotations": {"kubeplane.io/run-duration": "30s"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main",
                    "image": "busybox", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
            }
        }
    });
    let ty = kubeplane_api::types::builtin("batch/v1", "Job").ok_or("no Job kind")?;
    let obj = DynamicObject::from_value(ty, &manifest).map_err(|e| e.to_string())?;
    Ok(Object::Other(Arc::new(obj)))
}

/// `n_jobs` Jobs of 2 completions, 1 at a time, on `n_nodes` nodes, run until all completed.
pub fn bench_jobs(version: KubeVersion, n_nodes: usize, n_jobs: usize) -> Result<(), String> {
    let mut objects = workloads::nodes(n_nodes);
    for i in 0..n_jobs {
        objects.push(job(&format!("job-{i}"), 2, 1)?);
    }
    let scenario = Scenario {
        duration: Some(SimDuration::from_secs(300)),
        ..Scenario::for_version(Some(version))
    };
    let started = Instant::now();
    let mut sim = Simulation::new(workloads::input(objects, scenario), &RunOptions::default())
        .map_err(|e| e.to_string())?;
    rayon::scope(|_| sim.run(&mut |_, _| {})).map_err(|e| e.to_string())?;
    let wall = started.elapsed().as_secs_f64();
    let completed = sim
        .events()
        .iter()
        .filter(|e| e.reason() == "Completed" && e.kind() == "Job")
        .count();
    let pods = sim
        .events()
        .iter()
        .filter(|e| e.reason() == "SuccessfulCreate" && e.kind() == "Job")
        .count();
    label(&format!("Jobs{n_jobs}/{n_nodes}Nodes"));
    param("nodes", n_nodes);
    param("jobs", n_jobs);
    figure("wall", wall, "s");
    println!(
        "Jobs{n_jobs}/{n_nodes}Nodes: {wall:.2} s wall for 300 s of virtual time, {pods} pods created, {completed}/{n_jobs} Jobs completed, peak memory {:.0} MiB",
        peak_memory_mib().unwrap_or(0.0)
    );
    if completed != n_jobs {
        return Err(format!(
            "Jobs{n_jobs}: only {completed} of {n_jobs} Jobs completed"
        ));
    }
    Ok(())
}

//! `simulate --report PATH`: one self-contained HTML page about a run (inline CSS, inline SVG
//! and a few lines of inline script; no network needed to open it): markers of the run's
//! events over time, pods, requested CPU and memory against allocatable per node with the
//! nodes' states, pending pods over time, the records in a filterable table, and each pod's
//! story (as `kubeplane why` tells it) one click away.

mod charts;
mod page;
pub mod sample;
mod svg;

use kubeplane_api::PodExt;
use std::collections::BTreeSet;

use kubeplane_sim::Simulation;
use serde_json::Value;

use crate::why::EndState;
pub use sample::Samples;

/// Pods whose story the page carries at most (the pending ones first, then those with
/// warnings, then the rest by name).
const MAX_STORIES: usize = 300;

/// The pods to tell the story of, in the order the page lists them, and how many were left out.
fn story_pods(sim: &Simulation, records: &[Value]) -> (Vec<(String, String)>, usize) {
    let s = |r: &Value, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut all: BTreeSet<(String, String)> = BTreeSet::new();
    let mut warned: BTreeSet<(String, String)> = BTreeSet::new();
    for r in records.iter().filter(|r| s(r, "kind") == "Pod") {
        let key = (s(r, "namespace"), s(r, "name"));
        if s(r, "type") == "Warning" {
            warned.insert(key.clone());
        }
        all.insert(key);
    }
    for p in sim.store.pods() {
        let m = &p.metadata;
        let ns = m.namespace.clone().unwrap_or_default();
        all.insert((ns, m.name.clone().unwrap_or_default()));
    }
    let pending = |(ns, name): &(String, String)| {
        sim.store.get_pod(ns, name).is_some_and(|p| {
            p.metadata.deletion_timestamp.is_none() && p.spec.is_some() && p.node_name().is_none()
        })
    };
    let mut order: Vec<(u8, (String, String))> = all
        .into_iter()
        .map(|k| {
            (
                if pending(&k) {
                    0
                } else if warned.contains(&k) {
                    1
                } else {
                    2
                },
                k,
            )
        })
        .collect();
    order.sort();
    let left_out = order.len().saturating_sub(MAX_STORIES);
    let chosen = order
        .into_iter()
        .take(MAX_STORIES)
        .map(|(_, k)| k)
        .collect();
    (chosen, left_out)
}

/// The page of a finished run: `records` are every record (with the explanation records),
/// `samples` the store sampled during the run.
pub fn render(sim: &Simulation, records: &[Value], samples: &Samples) -> String {
    let end = (sim.now - kubeplane_core::SimTime::ZERO).as_secs_f64();
    let (pods, left_out) = story_pods(sim, records);
    let stories: Vec<(String, String)> = pods
        .iter()
        .map(|(ns, name)| {
            let story = crate::why::story(ns, name, records, &EndState::of(&sim.store, ns, name));
            (format!("{ns}/{name}"), story)
        })
        .collect();
    page::document(&page::Parts {
        end,
        records,
        samples,
        stories: &stories,
        stories_left_out: left_out,
        pods_at_end: sim.store.pods().count(),
    })
}

/// Whether `v` is one of the records only `--explain` prints.
fn is_explanation(v: &Value) -> bool {
    matches!(
        v.get("kind").and_then(Value::as_str),
        Some(
            "SchedulingAttempt"
                | "EvictionDecision"
                | "ScaleDownDecision"
                | "JobDecision"
                | "CronJobDecision"
        )
    )
}

/// Takes the last sample from the state at the end of the run and writes the page to `path`.
/// Without `keep_explanations` the explanation records move out of `records` into the page
/// (the printed records are then those of a run without `--explain`, and the largest records
/// are not held twice).
pub fn write(
    path: &std::path::Path,
    sim: &Simulation,
    records: &mut Vec<kubeplane_sim::Record>,
    samples: &mut Samples,
    keep_explanations: bool,
) -> std::io::Result<()> {
    samples.finish(&sim.store, sim.now);
    let mut json = Vec::with_capacity(records.len());
    if keep_explanations {
        json.extend(records.iter().map(kubeplane_sim::Record::to_json));
    } else {
        let mut kept = Vec::with_capacity(records.len());
        for r in records.drain(..) {
            match r {
                kubeplane_sim::Record::Json(v) if is_explanation(&v) => json.push(*v),
                r => {
                    json.push(r.to_json());
                    kept.push(r);
                }
            }
        }
        *records = kept;
    }
    std::fs::write(path, render(sim, &json, samples))
}

//! `kubeplane simulate`: parse, resolve, run, report.

use kubeplane_api::PodExt;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use kubeplane_core::version::KubeVersion;
use kubeplane_sim::scenario::parse_files_for;
use kubeplane_sim::{RunOptions, Simulation};

use crate::cli::{OutputFormat, SimulateArgs};
use crate::output::Writer;
use crate::progress::Progress;
use crate::summary::Summary;

/// Bound pods per node, by node name (every node listed, with 0 for an empty one).
fn pods_per_node(sim: &Simulation) -> BTreeMap<String, usize> {
    let mut per_node: BTreeMap<String, usize> = sim
        .store
        .nodes()
        .filter_map(|n| n.metadata.name.clone())
        .map(|n| (n, 0))
        .collect();
    for p in sim.store.pods() {
        if let Some(node) = p.node_name().map(str::to_string) {
            *per_node.entry(node).or_default() += 1;
        }
    }
    per_node
}

/// The summary of a finished run: counted from its records, and the pods still pending and
/// the pods per node (against `start`) from the state at its end.
fn summarise(
    sim: &Simulation,
    records: &[kubeplane_sim::Record],
    start: &BTreeMap<String, usize>,
) -> Summary {
    let mut summary = Summary {
        end_secs: (sim.now - kubeplane_core::SimTime::ZERO).as_secs_f64(),
        ..Summary::default()
    };
    let mut last_failure: BTreeMap<String, String> = BTreeMap::new();
    for r in records {
        let json = r.to_json();
        summary.count(&json);
        let s = |k: &str| {
            json.get(k)
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
        };
        if s("kind") == "Pod" && s("reason") == "FailedScheduling" {
            last_failure.insert(
                format!("{}/{}", s("namespace"), s("name")),
                s("message").into(),
            );
        }
    }
    for p in sim.store.pods() {
        let pending = p.metadata.deletion_timestamp.is_none() && p.node_name().is_none();
        if pending {
            let m = &p.metadata;
            let key = format!(
                "{}/{}",
                m.namespace.as_deref().unwrap_or(""),
                m.name.as_deref().unwrap_or("")
            );
            let why = last_failure.remove(&key).unwrap_or_default();
            summary.pending_pods.push((key, why));
        }
    }
    summary.pending = summary.pending_pods.len();
    let end = pods_per_node(sim);
    let names: std::collections::BTreeSet<&String> = start.keys().chain(end.keys()).collect();
    for n in names {
        let (a, b) = (
            start.get(n).copied().unwrap_or(0),
            end.get(n).copied().unwrap_or(0),
        );
        if a != b {
            summary.nodes_changed.push((n.clone(), a, b));
        }
    }
    summary
}

pub(crate) fn input_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// The kinds stored as `Kind::Other` that a controller nevertheless simulates.
const CONTROLLED_OTHER: &[(&str, &str)] = &[
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
];

/// Says once per kind which objects of the input kubeplane stores but does not simulate
/// (`--strict`: an error naming the first such document).
fn note_stored_only(
    input: &kubeplane_sim::scenario::Input,
    strict: bool,
    quiet: bool,
) -> Result<(), String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut first = None;
    for o in &input.objects {
        if let kubeplane_api::Kind::Other(t) = o.object.kind() {
            if CONTROLLED_OTHER.contains(&(t.group, t.kind)) {
                continue;
            }
            *counts.entry(t.qualified_kind()).or_default() += 1;
            first.get_or_insert(&o.source);
        }
    }
    let Some(first) = first else {
        return Ok(());
    };
    let list: Vec<String> = counts.iter().map(|(k, n)| format!("{k} ({n})")).collect();
    if strict {
        return Err(format!(
            "{}: document {} ({}): --strict: kubeplane stores but does not simulate {}",
            first.file,
            first.doc_index + 1,
            first.what(),
            list.join(", ")
        ));
    }
    if !quiet {
        eprintln!("note: stored, not simulated: {}", list.join(", "));
    }
    Ok(())
}

/// Tells a person which upstream changes of the chosen release kubeplane does not model.
pub(crate) fn note_unmodelled(version: KubeVersion) {
    let missing = kubeplane_core::version::changes::not_modelled(version);
    if !missing.is_empty() {
        eprintln!(
            "note: Kubernetes {version}: kubeplane does not model {} upstream change(s) of this \
             release yet (docs/compatibility.md): {}",
            missing.len(),
            missing.join("; ")
        );
    }
    let unverified = kubeplane_core::version::changes::unverified(version);
    if !unverified.is_empty() {
        eprintln!(
            "note: Kubernetes {version}: {} upstream change(s) of this release are implemented \
             but not verified against the release's source: {}",
            unverified.len(),
            unverified.join("; ")
        );
    }
}

/// `--why POD`: the pod's story instead of the records.
fn tell_why(
    query: &str,
    namespace: &str,
    sim: &Simulation,
    records: &[kubeplane_sim::Record],
    result: Result<(), kubeplane_sim::SimError>,
) -> ExitCode {
    let json: Vec<serde_json::Value> = records.iter().map(|r| r.to_json()).collect();
    let stored = sim
        .store
        .pods()
        .map(|p| {
            let m = &p.metadata;
            (
                m.namespace.clone().unwrap_or_default(),
                m.name.clone().unwrap_or_default(),
            )
        })
        .collect();
    let (ns, name) = match crate::why::resolve(query, namespace, &json, stored) {
        Ok(found) => found,
        Err(e) => return input_error(format!("why: {e}")),
    };
    let end = crate::why::EndState::of(&sim.store, &ns, &name);
    let text = crate::why::story(&ns, &name, &json, &end);
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    if let Err(e) = result {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

pub fn run(args: SimulateArgs) -> ExitCode {
    let files = match crate::inputs::read_inputs(&args.files, args.recursive) {
        Ok(files) => files,
        Err(e) => return input_error(e),
    };
    let version = args.kubernetes_version;
    let mut input = match parse_files_for(&files, version) {
        Ok(i) => i,
        Err(e) => return input_error(e),
    };
    let until = match &args.until {
        Some(u) => match kubeplane_core::duration::parse_duration(u) {
            Ok(d) => Some(d),
            Err(e) => return input_error(format!("--until: {e}")),
        },
        None => None,
    };
    let drain = args.drain_flags();
    if let Err(e) = crate::whatif::add_steps(&mut input, &args.what_ifs, &drain, until) {
        return input_error(e);
    }
    if let Err(e) = note_stored_only(&input, args.strict, args.quiet) {
        return input_error(e);
    }
    if !args.quiet && std::io::stderr().is_terminal() {
        note_unmodelled(input.scenario.kubernetes_version);
    }
    if let Some(path) = &args.scheduler_config {
        match crate::inputs::read_scheduler_config(path, "--scheduler-config") {
            Ok(config) => input.scheduler_configs.push(config),
            Err(e) => return input_error(e),
        }
    }
    let opts = RunOptions {
        explain: args.explain || args.why.is_some() || args.report.is_some(),
        until,
        seed: args.seed,
        recompute_node_local: args.recompute_node_local,
    };
    let mut sim = match Simulation::new(input, &opts) {
        Ok(s) => s,
        Err(e) => return input_error(e),
    };
    let stdout = std::io::stdout();
    let format = args.output.unwrap_or(if stdout.is_terminal() {
        OutputFormat::Table
    } else {
        OutputFormat::Jsonl
    });
    let start = pods_per_node(&sim);
    let mut writer = Writer::new(std::io::BufWriter::new(stdout.lock()), format);
    let mut progress = Progress::new(!args.quiet && std::io::stderr().is_terminal());
    let mut records = Vec::new();
    let mut samples = args.report.as_ref().map(|_| crate::report::Samples::new());
    let result = {
        // On a thread of the pool: parallel filtering keeps part of the work on this thread.
        let r = rayon::scope(|_| {
            sim.run_observed(&mut |store, now, end| {
                if let Some(s) = samples.as_mut() {
                    s.observe(store, now, end);
                }
                progress.update(now, end)
            })
        });
        records.extend(sim.take_records());
        r
    };
    progress.clear();
    if let (Some(path), Some(samples)) = (&args.report, samples.as_mut()) {
        let keep = args.explain || args.why.is_some();
        if let Err(e) = crate::report::write(path, &sim, &mut records, samples, keep) {
            eprintln!("error: --report {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if let Some(pod) = &args.why {
        return tell_why(pod, args.why_namespace(), &sim, &records, result);
    }
    let summary = summarise(&sim, &records, &start);
    if writer
        .write(&records)
        .and_then(|_| writer.finish(&summary))
        .is_err()
    {
        // A closed pipe (e.g. `| head`) is not an error of the simulation.
    }
    if let Err(e) = result {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    if let Some(path) = &args.final_state {
        let objects = sim.final_state();
        let text = if path.extension().is_some_and(|e| e == "json") {
            serde_json::to_string_pretty(&objects)
                .map(|s| s + "\n")
                .unwrap_or_default()
        } else {
            let mut out = String::new();
            for o in &objects {
                out.push_str("---\n");
                out.push_str(&serde_yaml_ng::to_string(o).unwrap_or_default());
            }
            out
        };
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("error: --final-state {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if args.metrics {
        let mut err = std::io::stderr().lock();
        for (name, value) in sim.metrics() {
            let _ = writeln!(err, "{name} {value}");
        }
    }
    if sim.n_failed > 0 || sim.n_step_errors > 0 {
        // The table and json outputs say so in their summary.
        if !args.quiet && format == OutputFormat::Jsonl && std::io::stderr().is_terminal() {
            eprintln!(
                "{} expectation(s) failed, {} passed{}",
                sim.n_failed,
                sim.n_passed,
                if sim.n_step_errors > 0 {
                    format!(", {} step(s) failed", sim.n_step_errors)
                } else {
                    String::new()
                }
            );
        }
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

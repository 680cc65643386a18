//! How `kubeplane bench` runs the workloads it is asked for: each in a process of its own when
//! more than one runs (so each reports its own peak memory: the allocator keeps freed memory,
//! so resetting the kernel's high-water mark between workloads in one process would not do),
//! and the figures as text lines or as one JSON document (`--json`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use kubeplane_core::version::KubeVersion;
use serde_json::{json, Value};

use crate::bench_support::{figure, machine_facts, peak_memory_mib, take_record, Workload};
use crate::cli::BenchArgs;

/// Set in a workload's own process: the file it writes its record to.
const RECORD_ENV: &str = "KUBEPLANE_BENCH_RECORD";

/// Runs `selected` as `args` ask; exit status 1 when a workload failed.
pub fn run(selected: &[&Workload], args: &BenchArgs, version: KubeVersion) -> ExitCode {
    let scale = args.scale_down.max(1);
    if let Some(path) = std::env::var_os(RECORD_ENV) {
        // A workload's own process, started by the loop below.
        let records: Vec<Value> = selected.iter().map(|w| run_here(w, scale)).collect();
        let text = serde_json::to_string(&records).unwrap_or_default();
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("error: writing {}: {e}", Path::new(&path).display());
            return ExitCode::from(1);
        }
        return exit_status(&records);
    }
    if !args.json {
        println!("Kubernetes {version} (the release the simulated components follow)");
    }
    let records: Vec<Value> = if selected.len() == 1 && !args.json {
        vec![run_here(selected[0], scale)]
    } else {
        selected
            .iter()
            .map(|w| run_child(w, args, version))
            .collect()
    };
    if args.json {
        let doc = json!({
            "machine": machine_facts(&version.to_string(), scale),
            "workloads": records,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    }
    exit_status(&records)
}

fn exit_status(records: &[Value]) -> ExitCode {
    if records.iter().all(|r| r["ok"] == json!(true)) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Runs `w` in this process and returns its record: what it recorded, the scale-down, its
/// peak memory, and whether it passed its own checks.
fn run_here(w: &Workload, scale: usize) -> Value {
    drop(take_record());
    let result = (w.run)();
    let peak = peak_memory_mib();
    if let Some(mib) = peak {
        figure("peak memory", mib, "MiB");
    }
    if let Err(e) = &result {
        eprintln!("error: {e}");
    }
    let mut record = take_record();
    record.parameters.insert("scale_down".into(), json!(scale));
    json!({
        "name": w.name,
        "about": w.about,
        "labels": record.labels,
        "parameters": record.parameters,
        "figures": record.figures,
        "peak_memory_mib": peak,
        "ok": result.is_ok(),
        "error": result.err(),
    })
}

/// Runs `w` in a new process of this program and returns the record it leaves. Its text goes
/// to this process's stdout, or to stderr when stdout carries the JSON document.
fn run_child(w: &Workload, args: &BenchArgs, version: KubeVersion) -> Value {
    let path = record_path(w.name);
    let failed = |why: String| {
        eprintln!("error: {}: {why}", w.name);
        json!({"name": w.name, "about": w.about, "labels": [], "parameters": {}, "figures": [],
               "peak_memory_mib": null, "ok": false, "error": why})
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return failed(format!("cannot find this program: {e}")),
    };
    let mut cmd = Command::new(exe);
    cmd.arg("bench")
        .arg("--scale-down")
        .arg(args.scale_down.max(1).to_string())
        .arg("--kubernetes-version")
        .arg(version.to_string())
        .arg(w.name)
        .env(RECORD_ENV, &path);
    if args.metrics {
        cmd.arg("--metrics");
    }
    if args.json {
        cmd.stdout(stderr_stdio());
    }
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => return failed(format!("cannot start its process: {e}")),
    };
    let text = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    let parsed: Option<Value> = text
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<Value>>(&t).ok())
        .and_then(|mut v| v.pop());
    match parsed {
        Some(record) => record,
        None => failed(format!("its process ended ({status}) without a record")),
    }
}

/// Where the process of workload `name` writes its record.
fn record_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "kubeplane-bench-{}-{name}.json",
        std::process::id()
    ))
}

/// This process's stderr, for a child's stdout.
fn stderr_stdio() -> Stdio {
    use std::os::fd::AsFd;
    match std::io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => Stdio::from(fd),
        Err(_) => Stdio::inherit(),
    }
}

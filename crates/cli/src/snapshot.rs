//! `kubeplane snapshot`: reads a live cluster through crates/live's snapshot and writes it as a
//! YAML stream `simulate` reads (one document per object, then the scheduler's configuration
//! when given), to standard output or, once everything is read, to `-o FILE`.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use kubeplane_live::snapshot::{self, Snapshot};
use kubeplane_live::LiveError;

use crate::cli::SnapshotArgs;
use crate::simulate::input_error;

pub fn run(args: SnapshotArgs) -> ExitCode {
    if let Some(path) = &args.kubeconfig {
        if let Err(e) = std::fs::metadata(path) {
            return input_error(format!("--kubeconfig {}: {e}", path.display()));
        }
    }
    let config = match &args.scheduler_config {
        Some(path) => match scheduler_config(path) {
            Ok(v) => Some(v),
            Err(e) => return input_error(e),
        },
        None => None,
    };
    let quiet = args.quiet;
    let mut progress = |plural: &str, n: usize, done: bool| {
        if !quiet {
            report_progress(plural, n, done);
        }
    };
    let snap = match snapshot::take(args.kubeconfig.as_deref(), args.chunk_size, &mut progress) {
        Ok(s) => s,
        Err(LiveError::Input(e)) => return input_error(e),
        Err(LiveError::Runtime(e)) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
        Err(LiveError::LeaseLost) => unreachable!("a snapshot elects no leader"),
    };
    let text = match render(&snap, config.as_ref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let written = match &args.output {
        Some(path) => std::fs::write(path, &text).map_err(|e| format!("{}: {e}", path.display())),
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(|e| format!("standard output: {e}")),
    };
    if let Err(e) = written {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    if !quiet {
        eprintln!("kubeplane snapshot: {}", summary(&snap));
    }
    ExitCode::SUCCESS
}

/// The `--scheduler-config` document, checked as `simulate --scheduler-config` checks it.
fn scheduler_config(path: &std::path::Path) -> Result<serde_json::Value, String> {
    let (source, value) = crate::inputs::read_scheduler_config(path, "--scheduler-config")?;
    kubeplane_scheduler::config::decode(&value).map_err(|e| format!("{}: {e}", source.file))?;
    Ok(value)
}

/// A progress line on stderr: a line per resource when stderr is not a terminal, and the
/// running count of a resource listed in several pages when it is.
fn report_progress(plural: &str, n: usize, done: bool) {
    let tty = std::io::stderr().is_terminal();
    match (done, tty) {
        (false, true) => eprint!("\rkubeplane snapshot: {plural}: {n}…"),
        (false, false) => {}
        (true, true) => eprint!("\r\x1b[Kkubeplane snapshot: {plural}: {n}\n"),
        (true, false) => eprintln!("kubeplane snapshot: {plural}: {n}"),
    }
}

/// What was kept, in one line: `nodes: 3, pods: 12, finished pods left out: 2, ...`.
fn summary(snap: &Snapshot) -> String {
    let mut parts: Vec<String> = snap
        .counts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(plural, n)| format!("{plural}: {n}"))
        .collect();
    if snap.finished_pods > 0 {
        parts.push(format!("finished pods left out: {}", snap.finished_pods));
    }
    if !snap.not_served.is_empty() {
        parts.push(format!("not served: {}", snap.not_served.join(", ")));
    }
    format!("{}: {}", snap.server, parts.join(", "))
}

/// The YAML stream: a comment naming the server and what was kept, each object a document,
/// then the scheduler's configuration.
fn render(snap: &Snapshot, config: Option<&serde_json::Value>) -> Result<String, String> {
    let mut out = format!(
        "# kubeplane snapshot of {}\n# simulate it: kubeplane simulate THIS_FILE [what-if flags or a Scenario file]\n",
        summary(snap)
    );
    for doc in snap.objects.iter().chain(config) {
        out.push_str("---\n");
        let yaml = serde_yaml_ng::to_string(doc).map_err(|e| format!("writing YAML: {e}"))?;
        out.push_str(&yaml);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_stream_has_one_document_per_object_then_the_configuration() {
        let snap = Snapshot {
            server: "https://127.0.0.1:6443/".into(),
            objects: vec![
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
            ],
            counts: vec![("nodes", 1), ("replicasets", 0), ("pods", 1)],
            not_served: vec![],
            finished_pods: 2,
        };
        let cfg = json!({"apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration"});
        let text = render(&snap, Some(&cfg)).unwrap();
        assert!(text.starts_with(
            "# kubeplane snapshot of https://127.0.0.1:6443/: nodes: 1, pods: 1, finished pods left out: 2\n"
        ));
        assert_eq!(text.matches("---\n").count(), 3);
        let last = text.rsplit("---\n").next().unwrap();
        assert!(last.contains("kind: KubeSchedulerConfiguration"), "{text}");
    }
}

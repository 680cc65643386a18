//! `simulate --report PATH`: the records printed stay as asked (no explanation records without
//! `--explain`), and the page shows the run's node states, events and pod stories. The page in
//! a real browser: scripts/report-browser-test.sh.

mod support;

use support::{kubeplane, stderr, stdout};

/// The records `simulate` prints with `extra` flags, and the report it wrote (if asked).
fn run(extra: &[&str], report: Option<&std::path::Path>) -> (String, String) {
    let path = report.map(|p| p.display().to_string());
    let mut args = vec!["simulate", "--output", "jsonl"];
    args.extend_from_slice(extra);
    if let Some(p) = &path {
        args.extend(["--report", p.as_str()]);
    }
    args.push("examples/node-failure.yaml");
    let out = kubeplane(&args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let html = report
        .map(|p| std::fs::read_to_string(p).unwrap())
        .unwrap_or_default();
    (stdout(&out), html)
}

#[test]
fn the_printed_records_are_the_same_with_and_without_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.html");
    for extra in [&[][..], &["--explain"][..]] {
        let (plain, _) = run(extra, None);
        let (with_report, html) = run(extra, Some(&path));
        assert_eq!(plain, with_report, "{extra:?}");
        assert!(html.starts_with("<!DOCTYPE html>"));
    }
    let (plain, _) = run(&[], None);
    assert!(!plain.contains("EvictionDecision"));
}

#[test]
fn the_report_shows_the_unreachable_node_its_evictions_and_each_pods_story() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.html");
    let (_, html) = run(&[], Some(&path));
    for part in [
        "<title>unreachable (Ready=Unknown), 120s to 600s</title>",
        "<title>unreachable (Ready=Unknown), 120s to 300s</title>",
        "185s TaintManagerEviction batch: Marking for deletion Pod default/batch",
        "<td>EvictionDecision</td><td>EvictAt</td><td>default/batch</td>",
        "<details class=\"why\" data-pod=\"default/batch\">",
        "Pod default/batch: ",
        "node n2: Unreachable → Ready",
    ] {
        assert!(html.contains(part), "missing {part:?}");
    }
    assert_eq!(html.matches("class=\"node-series\"").count(), 3 * 3);
}

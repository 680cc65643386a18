//! The comparison as a table (one column per configuration, one row per measure) and as one
//! JSON document (one entry per configuration).

use serde_json::{json, Value};

use super::measures::{Run, Spread};

fn percent(v: f64) -> String {
    format!("{v:.1}%")
}

/// The rows of a utilisation measure: mean, standard deviation, max − min.
fn spread_rows(
    resource: &str,
    runs: &[Run],
    get: fn(&Run) -> &Spread,
) -> Vec<(String, Vec<String>)> {
    let row = |what: &str, f: fn(&Spread) -> f64| {
        let values = runs.iter().map(|r| percent(f(get(r)))).collect();
        (format!("{resource} per node, {what}"), values)
    };
    vec![
        row("mean", |s| s.mean),
        row("std dev", |s| s.std_dev),
        row("max - min", |s| s.range),
    ]
}

fn zones(run: &Run) -> String {
    if run.pods_per_zone.is_empty() {
        return "-".into();
    }
    let parts: Vec<String> = run
        .pods_per_zone
        .iter()
        .map(|(z, n)| format!("{z} {n}"))
        .collect();
    parts.join(", ")
}

fn result(run: &Run) -> String {
    let s = &run.summary;
    let mut out = format!(
        "{} held, {} failed",
        s.expectations_passed, s.expectations_failed
    );
    if s.steps_failed > 0 {
        out.push_str(&format!(", {} step(s) failed", s.steps_failed));
    }
    if let Some(e) = &run.error {
        out.push_str(&format!(", error: {e}"));
    }
    out
}

/// Every row of the table: a label and one cell per run.
fn rows(runs: &[Run]) -> Vec<(String, Vec<String>)> {
    let each = |label: &str, f: &dyn Fn(&Run) -> String| {
        (label.to_string(), runs.iter().map(f).collect::<Vec<_>>())
    };
    let first = runs.first().map_or("", |r| r.name.as_str());
    let mut rows = vec![
        each("pods scheduled", &|r| r.scheduled.to_string()),
        each("pods pending", &|r| r.pending.to_string()),
        each("nodes used", &|r| {
            format!("{} of {}", r.nodes_used, r.nodes)
        }),
    ];
    rows.extend(spread_rows("cpu", runs, |r| &r.cpu));
    rows.extend(spread_rows("memory", runs, |r| &r.memory));
    rows.extend([
        each("pods per zone", &zones),
        each("pods per zone, max - min", &|r| {
            r.zone_range().map_or("-".into(), |n| n.to_string())
        }),
        each("preemptions", &|r| r.summary.preempted.to_string()),
        each("evictions", &|r| r.summary.evicted.to_string()),
        each(&format!("pods placed unlike {first}"), &|r| {
            r.moved.map_or("-".into(), |n| n.to_string())
        }),
        each(&format!("pods without a match in {first}"), &|r| {
            r.moved.map_or("-".into(), |_| r.unmatched.to_string())
        }),
        each("expectations", &result),
    ]);
    rows
}

/// The table: a header of configuration names, then one aligned row per measure.
pub fn table(runs: &[Run]) -> String {
    let mut all = vec![(String::new(), runs.iter().map(|r| r.name.clone()).collect())];
    all.extend(rows(runs));
    let label_width = all
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = (0..runs.len())
        .map(|i| {
            all.iter()
                .map(|(_, c)| c[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (label, cells) in &all {
        let mut line = format!("{label:<label_width$}");
        for (cell, w) in cells.iter().zip(&widths) {
            line.push_str(&format!("  {cell:>w$}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn spread_json(s: &Spread) -> Value {
    json!({"mean": s.mean, "stdDev": s.std_dev, "maxMinusMin": s.range})
}

fn run_json(r: &Run) -> Value {
    let s = &r.summary;
    json!({
        "name": r.name,
        "config": r.config,
        "pods": {"scheduled": r.scheduled, "pending": r.pending},
        "nodes": {"total": r.nodes, "used": r.nodes_used},
        "utilisationPercent": {"cpu": spread_json(&r.cpu), "memory": spread_json(&r.memory)},
        "podsPerZone": r.pods_per_zone,
        "zoneMaxMinusMin": r.zone_range(),
        "preemptions": s.preempted,
        "evictions": s.evicted,
        "placedUnlikeFirst": r.moved,
        "unmatchedWithFirst": r.moved.map(|_| r.unmatched),
        "expectations": {"passed": s.expectations_passed, "failed": s.expectations_failed},
        "stepsFailed": s.steps_failed,
        "error": r.error,
        "endSeconds": s.end_secs,
        "succeeded": r.succeeded(),
    })
}

/// One JSON document: `{"kind": "Comparison", "configurations": [...]}`, in `--config` order.
pub fn json(runs: &[Run]) -> String {
    let doc = json!({
        "kind": "Comparison",
        "configurations": runs.iter().map(run_json).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

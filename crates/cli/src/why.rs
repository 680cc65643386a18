//! `kubeplane why POD FILE...` (and `simulate --why POD`): the story of one pod in plain text,
//! told from the records an `--explain` run writes: each scheduling attempt with upstream's
//! "0/N nodes are available" summary and a per-node table (the failing filter of each node, or
//! the scores of the best few), preemption as preemptor and as victim, the eviction decisions
//! with their deadlines and the tolerations that set them, the scale-down rankings that chose
//! it, the workload controllers' records about it or its owner ([`workloads`]), every event
//! about it, and where it is at the end of the run.

use kubeplane_api::PodExt;
use std::fmt::Write;

use serde_json::Value;

use crate::output::age::format_age_secs;
use crate::output::str_of as s;

mod workloads;

/// How many of the best-scoring nodes a scheduled attempt shows.
const BEST_NODES: usize = 3;

/// Where the pod is when the run ends, read from the final state.
pub enum EndState {
    /// Still stored: its node (if bound), phase, and whether it is terminating.
    Present {
        node: Option<String>,
        phase: String,
        terminating: bool,
        /// Its controller reference: the owner's kind and name.
        owner: Option<(String, String)>,
    },
    /// Not stored any more.
    Gone,
}

impl EndState {
    /// Where pod `namespace/name` is in the store at the end of a run.
    pub fn of(store: &kubeplane_store::Store, namespace: &str, name: &str) -> EndState {
        match store.get_pod(namespace, name) {
            Some(p) => EndState::Present {
                node: p.node_name().map(str::to_string),
                phase: p.phase().map(String::from).unwrap_or_default(),
                terminating: p.metadata.deletion_timestamp.is_some(),
                owner: (p.owner_references().into_iter().flatten())
                    .find(|o| o.controller == Some(true))
                    .map(|o| (o.kind.clone(), o.name.clone())),
            },
            None => EndState::Gone,
        }
    }
}

fn time(v: &Value) -> String {
    format_age_secs(v.get("time").and_then(Value::as_f64).unwrap_or(0.0))
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The namespace and name the query names among the pods of the run (those the records mention
/// and `stored`, the pods at the end): `NAME`, `NAMESPACE/NAME` or `pod/NAME` (in
/// `namespace`), or a prefix of exactly one pod's name.
pub fn resolve(
    query: &str,
    namespace: &str,
    records: &[Value],
    stored: Vec<(String, String)>,
) -> Result<(String, String), String> {
    let query = query.strip_prefix("pod/").unwrap_or(query);
    let (ns, name) = match query.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (namespace.to_string(), query.to_string()),
    };
    let mut pods = stored;
    for r in records {
        if is_about_a_pod(r) {
            pods.push((s(r, "namespace").to_string(), s(r, "name").to_string()));
        }
        for c in r
            .get("candidates")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some((ns, name)) = s(c, "pod").split_once('/') {
                pods.push((ns.to_string(), name.to_string()));
            }
        }
    }
    pods.sort();
    pods.dedup();
    if pods.iter().any(|(n, p)| *n == ns && *p == name) {
        return Ok((ns, name));
    }
    let matches: Vec<&(String, String)> = pods
        .iter()
        .filter(|(n, p)| *n == ns && p.starts_with(&name))
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(format!(
            "no pod {ns}/{name} in this run (its pods: {}{})",
            pods.iter()
                .take(10)
                .map(|(n, p)| format!("{n}/{p}"))
                .collect::<Vec<_>>()
                .join(", "),
            if pods.len() > 10 { ", ..." } else { "" }
        )),
        many => Err(format!(
            "{ns}/{name} is ambiguous: {}",
            many.iter()
                .map(|(n, p)| format!("{n}/{p}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

fn is_about_a_pod(r: &Value) -> bool {
    matches!(
        s(r, "kind"),
        "Pod" | "SchedulingAttempt" | "EvictionDecision"
    )
}

/// The whole story of `namespace/name`.
pub fn story(namespace: &str, name: &str, records: &[Value], end: &EndState) -> String {
    let full = format!("{namespace}/{name}");
    let mut out = format!(
        "Pod {full}: {}\n\n",
        headline(records, namespace, name, end)
    );
    let lineage = match end {
        EndState::Present { node, owner, .. } => {
            workloads::Lineage::of(namespace, name, records, owner.clone(), node.as_deref())
        }
        EndState::Gone => workloads::Lineage::of(namespace, name, records, None, None),
    };
    for r in records {
        let about_pod = is_about_a_pod(r) && s(r, "namespace") == namespace && s(r, "name") == name;
        let text = match s(r, "kind") {
            "SchedulingAttempt" if about_pod => attempt(r),
            "SchedulingAttempt" => victim_of(r, &full).unwrap_or_default(),
            "EvictionDecision" if about_pod => eviction(r),
            "ScaleDownDecision" => scale_down(r, &full, records).unwrap_or_default(),
            "Pod" if about_pod => event(r),
            _ => workloads::line(r, &lineage).unwrap_or_default(),
        };
        if !text.is_empty() {
            let _ = write!(out, "{:>8}  {text}", time(r));
        }
    }
    out
}

fn headline(records: &[Value], namespace: &str, name: &str, end: &EndState) -> String {
    let attempts = records
        .iter()
        .filter(|r| {
            s(r, "kind") == "SchedulingAttempt"
                && s(r, "namespace") == namespace
                && s(r, "name") == name
        })
        .count();
    let state = match end {
        EndState::Present {
            node: Some(node),
            phase,
            terminating,
            ..
        } => format!(
            "{} on {node}{} at the end of the run",
            if phase.is_empty() { "bound" } else { phase },
            if *terminating { ", terminating" } else { "" }
        ),
        EndState::Present { node: None, .. } => "pending at the end of the run".to_string(),
        EndState::Gone => "deleted before the end of the run".to_string(),
    };
    match attempts {
        0 => format!("{state}; the scheduler never tried to place it (bound in the input, or deleted first)."),
        n => format!("{state}; {n} scheduling attempt(s)."),
    }
}

fn event(r: &Value) -> String {
    format!("{} {}: {}\n", s(r, "type"), s(r, "reason"), s(r, "message"))
}

fn attempt(r: &Value) -> String {
    let n = r.get("attempt").and_then(Value::as_u64).unwrap_or(0);
    let mut out = match s(r, "result") {
        "Scheduled" => format!(
            "attempt {n} ({}): scheduled on {}\n",
            s(r, "profile"),
            s(r, "node")
        ),
        result => format!(
            "attempt {n} ({}): {}\n{:10}{}\n",
            s(r, "profile"),
            result.to_lowercase(),
            "",
            s(r, "message")
        ),
    };
    let nodes = r
        .get("nodes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let (passed, failed): (Vec<&Value>, Vec<&Value>) = nodes.iter().partition(|n| {
        n.get("filter")
            .and_then(Value::as_array)
            .is_none_or(|f| f.is_empty())
    });
    if !passed.is_empty() && passed.iter().any(|n| n.get("total").is_some()) {
        out.push_str(&score_table(&passed));
    }
    if !failed.is_empty() {
        let _ = writeln!(out, "{:10}{:<16} why not", "", "node");
        for node in &failed {
            let _ = writeln!(out, "{:10}{:<16} {}", "", s(node, "name"), failures(node));
        }
    }
    if let Some(p) = r.get("preemption").filter(|p| !p.is_null()) {
        out.push_str(&preemption(p));
    }
    if let Some(nominated) = r.get("nominatedNode").and_then(Value::as_str) {
        let _ = writeln!(out, "{:10}nominated node: {nominated}", "");
    }
    out
}

/// `Plugin: reason; reason` for each failing filter of a node.
fn failures(node: &Value) -> String {
    node.get("filter")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .map(|p| {
                    format!(
                        "{}: {}",
                        s(p, "plugin"),
                        strings(p.get("reasons")).join("; ")
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// The best-scoring nodes with their total and per-plugin scores.
fn score_table(passed: &[&Value]) -> String {
    let mut ranked: Vec<&&Value> = passed.iter().collect();
    ranked.sort_by_key(|n| std::cmp::Reverse(n.get("total").and_then(Value::as_i64).unwrap_or(0)));
    let mut out = format!(
        "{:10}{} node(s) passed the filters; the best {}:\n",
        "",
        passed.len(),
        ranked.len().min(BEST_NODES)
    );
    for node in ranked.into_iter().take(BEST_NODES) {
        let scores = node
            .get("scores")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let total = node.get("total").and_then(Value::as_i64).unwrap_or(0);
        let _ = writeln!(
            out,
            "{:10}{:<16} total {total}: {scores}",
            "",
            s(node, "name")
        );
    }
    out
}

fn preemption(p: &Value) -> String {
    let candidates = p
        .get("candidates")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if candidates.is_empty() {
        let message = s(p, "message");
        let message = message.strip_prefix("preemption: ").unwrap_or(message);
        return format!("{:10}preemption: {message}\n", "");
    }
    let mut out = format!(
        "{:10}preemption: {} candidate node(s)\n",
        "",
        candidates.len()
    );
    for c in &candidates {
        let _ = writeln!(
            out,
            "{:12}{:<16} victims {}; PodDisruptionBudget violations {}",
            "",
            s(c, "node"),
            strings(c.get("victims")).join(", "),
            c.get("pdbViolations").and_then(Value::as_i64).unwrap_or(0)
        );
    }
    if let Some(chosen) = p.get("chosen").and_then(Value::as_str) {
        let why = s(p, "why");
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(" ({why})")
        };
        let _ = writeln!(out, "{:10}chose {chosen}{why}", "");
    }
    out
}

/// When another pod's preemption chose this one as a victim.
fn victim_of(r: &Value, full: &str) -> Option<String> {
    let p = r.get("preemption")?;
    let chosen = p.get("chosen")?.as_str()?;
    let candidate = p
        .get("candidates")?
        .as_array()?
        .iter()
        .find(|c| s(c, "node") == chosen)?;
    let victims = strings(candidate.get("victims"));
    if !victims.contains(&full) {
        return None;
    }
    Some(format!(
        "chosen as a preemption victim on {chosen} by {}/{} (attempt {}), with {}\n",
        s(r, "namespace"),
        s(r, "name"),
        r.get("attempt").and_then(Value::as_u64).unwrap_or(0),
        victims.join(", ")
    ))
}

fn eviction(r: &Value) -> String {
    let at = r.get("at").and_then(Value::as_f64);
    let decision = match (s(r, "decision"), at) {
        ("EvictAt", Some(at)) => format!("evict at {}", format_age_secs(at)),
        (d, _) => d.to_string(),
    };
    let mut out = format!("eviction decision on node {}: {decision}\n", s(r, "node"));
    let _ = writeln!(out, "{:10}reason: {}", "", s(r, "reason"));
    let taints = strings(r.get("taints"));
    if !taints.is_empty() {
        let _ = writeln!(out, "{:10}NoExecute taints: {}", "", taints.join(", "));
    }
    let used = strings(r.get("tolerationsUsed"));
    if !used.is_empty() {
        let _ = writeln!(out, "{:10}tolerations used: {}", "", used.join(", "));
    }
    out
}

/// When a ReplicaSet's scale-down ranked this pod: its rank, whether it was among the deleted,
/// and the keys the ranking compared.
fn scale_down(r: &Value, full: &str, records: &[Value]) -> Option<String> {
    let candidates = r.get("candidates")?.as_array()?;
    let me = candidates.iter().find(|c| s(c, "pod") == full)?;
    let rank = me.get("rank").and_then(Value::as_u64).unwrap_or(0);
    let (rs_ns, rs) = (s(r, "namespace"), s(r, "name"));
    let pod_name = full.rsplit('/').next().unwrap_or(full);
    let deleted = records.iter().any(|e| {
        s(e, "reason") == "SuccessfulDelete"
            && s(e, "namespace") == rs_ns
            && s(e, "name") == rs
            && e.get("time") == r.get("time")
            && s(e, "message") == format!("Deleted pod: {pod_name}")
    });
    let keys = [
        "phase",
        "ready",
        "deletionCost",
        "podsOnNode",
        "readyTime",
        "restarts",
        "creationTimestamp",
    ]
    .iter()
    .filter_map(|k| {
        me.get(*k)
            .map(|v| format!("{k} {}", v.as_str().map_or(v.to_string(), str::to_string)))
    })
    .collect::<Vec<_>>()
    .join(", ");
    Some(format!(
        "ReplicaSet {rs_ns}/{rs} scaling down ranked it #{} of {} for deletion ({}){}\n{:10}{keys}\n",
        rank + 1,
        candidates.len(),
        if deleted { "deleted" } else { "kept" },
        match me.get("node").and_then(Value::as_str) {
            Some(n) => format!(" on node {n}"),
            None => String::new(),
        },
        ""
    ))
}

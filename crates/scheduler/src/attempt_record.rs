//! The `SchedulingAttempt` explain record of one scheduling cycle: every node's Filter verdict,
//! the feasible nodes' scores, the chosen node, and what preemption considered.

use std::collections::BTreeMap;

use kubeplane_api::Client;
use kubeplane_core::SimTime;
use serde_json::{json, Value};

use crate::framework::{Framework, PreemptionTrace, QueuedPodInfo, ScoreTable, Status};
use crate::schedule_one::ScheduleError;
use crate::scheduler::Scheduler;

/// What the explain record of one attempt collects.
#[derive(Default)]
pub(crate) struct AttemptTrace {
    pub filter: BTreeMap<String, Status>,
    /// The status of every node not listed in `filter` nor feasible (PreFilter outcomes).
    pub absent: Option<Status>,
    pub all_nodes: Vec<String>,
    pub scores: ScoreTable,
    /// Names of the scored nodes, in the order of `scores`.
    pub scored_nodes: Vec<String>,
    pub scored: bool,
    pub feasible: Vec<String>,
    /// Set when PostFilter (preemption) ran.
    pub preemption: Option<PreemptionRecord>,
}

/// The preemption part of an attempt's explain record.
pub(crate) struct PreemptionRecord {
    pub trace: PreemptionTrace,
    /// The PostFilter status message ("preemption: ...").
    pub message: String,
    /// The pod's nominated node after the attempt.
    pub nominated_node: Option<String>,
}

impl Scheduler {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn emit_attempt(
        &self,
        now: SimTime,
        client: &mut dyn Client,
        fwk: &Framework,
        qpi: &QueuedPodInfo,
        err: &ScheduleError,
        node: Option<&str>,
        trace: Option<AttemptTrace>,
    ) {
        let Some(trace) = trace else { return };
        let result = match err {
            ScheduleError::Internal(s) if !s.is_rejected() => "Error",
            _ => "Unschedulable",
        };
        let mut rec = self.attempt_record(now, fwk, qpi, result, node, &trace);
        if let ScheduleError::Fit(fit) = err {
            rec["message"] = Value::String(fit.message());
        } else {
            rec["message"] = Value::String(err.message());
        }
        client.emit_record(rec);
    }

    pub(crate) fn emit_attempt_ok(
        &self,
        now: SimTime,
        client: &mut dyn Client,
        fwk: &Framework,
        qpi: &QueuedPodInfo,
        node: &str,
        trace: Option<AttemptTrace>,
    ) {
        let Some(trace) = trace else { return };
        let rec = self.attempt_record(now, fwk, qpi, "Scheduled", Some(node), &trace);
        client.emit_record(rec);
    }

    fn attempt_record(
        &self,
        now: SimTime,
        fwk: &Framework,
        qpi: &QueuedPodInfo,
        result: &str,
        node: Option<&str>,
        trace: &AttemptTrace,
    ) -> Value {
        let mut rec = json!({
            "time": now.as_secs_f64(),
            "kind": "SchedulingAttempt",
            "namespace": qpi.pod_info.namespace(),
            "name": qpi.pod_info.name(),
            "attempt": qpi.attempts,
            "profile": fwk.profile_name,
            "result": result,
            "node": node,
            "nodes": node_entries(trace),
        });
        if let Some(p) = &trace.preemption {
            rec["nominatedNode"] = json!(p.nominated_node);
            rec["preemption"] = preemption_entry(p);
        }
        rec
    }
}

/// One entry per node, by name: the rejected nodes with their Filter status, then the
/// feasible ones with their scores when scoring ran.
fn node_entries(trace: &AttemptTrace) -> Vec<Value> {
    let mut nodes = Vec::new();
    for (name, s) in &trace.filter {
        nodes.push(json!({
            "name": name,
            "filter": [{"plugin": s.plugin, "code": s.code.as_str(), "reasons": s.reasons}],
        }));
    }
    if let Some(absent) = &trace.absent {
        for name in &trace.all_nodes {
            if !trace.filter.contains_key(name) && !trace.feasible.contains(name) {
                nodes.push(json!({
                    "name": name,
                    "filter": [{"plugin": absent.plugin, "code": absent.code.as_str(), "reasons": absent.reasons}],
                }));
            }
        }
    }
    let scored: BTreeMap<&str, usize> = trace
        .scored_nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    for name in &trace.feasible {
        let mut entry = json!({"name": name, "filter": []});
        if let Some(&i) = scored.get(name.as_str()).filter(|_| trace.scored) {
            let scores: serde_json::Map<String, Value> = trace
                .scores
                .node_scores(i)
                .map(|(p, v)| (p.to_string(), json!(v)))
                .collect();
            entry["scores"] = Value::Object(scores);
            entry["total"] = json!(trace.scores.totals[i]);
        }
        nodes.push(entry);
    }
    nodes.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    nodes
}

/// The candidates preemption weighed, the one it chose, and why.
fn preemption_entry(p: &PreemptionRecord) -> Value {
    let candidates: Vec<Value> = p
        .trace
        .candidates
        .iter()
        .map(|c| json!({"node": c.node, "victims": c.victims, "pdbViolations": c.pdb_violations}))
        .collect();
    json!({
        "candidates": candidates,
        "chosen": p.trace.chosen,
        "why": p.trace.why,
        "message": p.message,
    })
}

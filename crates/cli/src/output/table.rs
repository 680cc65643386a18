//! One table row per record: time, object, reason and a one-line message. Explanation records
//! are summarised in that line (their full JSON is in the jsonl and json outputs).

use serde_json::Value;

use super::age::format_age_secs;
use super::str_of;

/// The cells of one row.
pub struct Row {
    pub time: String,
    pub object: String,
    pub reason: String,
    pub message: String,
}

fn namespaced(v: &Value) -> String {
    match (str_of(v, "namespace"), str_of(v, "name")) {
        ("", name) => name.to_string(),
        (ns, name) => format!("{ns}/{name}"),
    }
}

/// A list of strings as `a, b, c`.
fn joined(v: Option<&Value>) -> String {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

pub fn row(v: &Value) -> Row {
    let time = format_age_secs(v.get("time").and_then(Value::as_f64).unwrap_or(0.0));
    let kind = str_of(v, "kind");
    let (object, reason, message) = match kind {
        "Expectation" => (
            "expect".to_string(),
            str_of(v, "reason").to_string(),
            str_of(v, "message").to_string(),
        ),
        "SchedulingAttempt" => (
            format!("Pod {}", namespaced(v)),
            kind.to_string(),
            scheduling_attempt(v),
        ),
        "EvictionDecision" => (
            format!("Pod {}", namespaced(v)),
            kind.to_string(),
            eviction_decision(v),
        ),
        "ScaleDownDecision" => (
            format!("ReplicaSet {}", namespaced(v)),
            kind.to_string(),
            scale_down_decision(v),
        ),
        "DrainResult" => (
            format!("Node {}", str_of(v, "name")),
            str_of(v, "reason").to_string(),
            str_of(v, "message").to_string(),
        ),
        "StepFailed" => (
            "step".to_string(),
            kind.to_string(),
            str_of(v, "message").to_string(),
        ),
        _ => (
            format!("{kind} {}", namespaced(v)),
            str_of(v, "reason").to_string(),
            str_of(v, "message").to_string(),
        ),
    };
    Row {
        time,
        object,
        reason,
        message,
    }
}

/// `attempt 2: Scheduled on n1 (3 nodes scored, total 431)`, or the failure message and the
/// preemption's outcome.
fn scheduling_attempt(v: &Value) -> String {
    let mut out = format!("attempt {}: {}", v["attempt"], str_of(v, "result"));
    if let Some(node) = v.get("node").and_then(Value::as_str) {
        out.push_str(&format!(" on {node}"));
        let nodes = v.get("nodes").and_then(Value::as_array);
        let scored = nodes.map_or(0, |n| n.iter().filter(|n| n.get("total").is_some()).count());
        let total = nodes
            .and_then(|n| n.iter().find(|n| str_of(n, "name") == node))
            .and_then(|n| n.get("total"));
        if let Some(total) = total {
            out.push_str(&format!(" ({scored} nodes scored, total {total})"));
        }
    } else if !str_of(v, "message").is_empty() {
        out.push_str(&format!(": {}", str_of(v, "message")));
    }
    if let Some(p) = v.get("preemption") {
        match p.get("chosen").and_then(Value::as_str) {
            Some(chosen) => {
                let victims = p
                    .get("candidates")
                    .and_then(Value::as_array)
                    .and_then(|c| c.iter().find(|c| str_of(c, "node") == chosen))
                    .map(|c| joined(c.get("victims")))
                    .unwrap_or_default();
                out.push_str(&format!("; preempting {victims} on {chosen}"));
            }
            None => out.push_str("; preemption found no candidate"),
        }
    }
    out
}

/// `EvictAt 3m5s on node n1: <why>`.
fn eviction_decision(v: &Value) -> String {
    let mut out = str_of(v, "decision").to_string();
    if let Some(at) = v.get("at").and_then(Value::as_f64) {
        out.push_str(&format!(" at {}", format_age_secs(at)));
    }
    if !str_of(v, "node").is_empty() {
        out.push_str(&format!(" on node {}", str_of(v, "node")));
    }
    if !str_of(v, "reason").is_empty() {
        out.push_str(&format!(": {}", str_of(v, "reason")));
    }
    out
}

/// `deletes a, b of 5 candidates; first survivor c`.
fn scale_down_decision(v: &Value) -> String {
    let n_candidates = v
        .get("candidates")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let mut out = format!(
        "deletes {} of {n_candidates} candidates",
        joined(v.get("victims"))
    );
    if !str_of(v, "firstSurvivor").is_empty() {
        out.push_str(&format!("; first survivor {}", str_of(v, "firstSurvivor")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unschedulable_attempt_reads_as_its_failure_and_its_preemption() {
        let v = json!({"time": 10.0, "kind": "SchedulingAttempt", "namespace": "default",
            "name": "critical", "attempt": 1, "result": "Unschedulable", "node": null,
            "preemption": {"candidates": [{"node": "a", "victims": ["default/b1", "default/b2"]}],
                "chosen": "a"},
            "message": "0/2 nodes are available: 2 Insufficient cpu."});
        let r = row(&v);
        assert_eq!(r.object, "Pod default/critical");
        assert_eq!(
            r.message,
            "attempt 1: Unschedulable: 0/2 nodes are available: 2 Insufficient cpu.; \
             preempting default/b1, default/b2 on a"
        );
    }

    #[test]
    fn a_scheduled_attempt_names_its_node_and_score() {
        let v = json!({"time": 0.0, "kind": "SchedulingAttempt", "namespace": "default",
            "name": "p", "attempt": 2, "result": "Scheduled", "node": "n1",
            "nodes": [{"name": "n1", "total": 431}, {"name": "n2", "total": 300},
                {"name": "n3", "filter": []}]});
        assert_eq!(
            row(&v).message,
            "attempt 2: Scheduled on n1 (2 nodes scored, total 431)"
        );
    }

    #[test]
    fn an_eviction_decision_reads_as_decision_time_node_and_why() {
        let v = json!({"time": 125.0, "kind": "EvictionDecision", "namespace": "default",
            "name": "batch", "node": "n1", "decision": "EvictAt", "at": 185.0,
            "reason": "every NoExecute taint is tolerated"});
        let r = row(&v);
        assert_eq!(r.time, "2m5s");
        assert_eq!(
            r.message,
            "EvictAt at 3m5s on node n1: every NoExecute taint is tolerated"
        );
    }
}

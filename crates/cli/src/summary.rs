//! The closing summary of a run: how the expectations went and what happened to the pods.
//! Counted from the output records (so it always agrees with them) and, for the pods still
//! pending, from the state at the end of the run.

use serde_json::{json, Value};

/// What a run comes to. Each count says what it counts in its field's doc.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// `Expectation` records with reason `ExpectationPassed`.
    pub expectations_passed: usize,
    /// `Expectation` records with reason `ExpectationFailed`.
    pub expectations_failed: usize,
    /// `StepFailed` records.
    pub steps_failed: usize,
    /// `Scheduled` events (a pod bound to a node).
    pub scheduled: usize,
    /// Pods at the end of the run that are bound to no node and not being deleted.
    pub pending: usize,
    /// `TaintManagerEviction` events that mark a pod for deletion (not those cancelling one).
    pub evicted: usize,
    /// `Preempted` events (a victim of preemption).
    pub preempted: usize,
    /// `SuccessfulDelete` events of ReplicaSets (a pod deleted on scale-down).
    pub deleted: usize,
    /// Virtual time at the end of the run, in seconds.
    pub end_secs: f64,
    /// Nodes whose number of bound pods differs between the start and the end of the run:
    /// (node, pods at the start, pods at the end), by node name.
    pub nodes_changed: Vec<(String, usize, usize)>,
    /// The pods pending at the end (`namespace/name`) with the message of their last
    /// FailedScheduling event ("" when they never had one).
    pub pending_pods: Vec<(String, String)>,
    /// `DrainResult` records: how each drain ended.
    pub drains: Vec<DrainSummary>,
}

/// One drain, from its `DrainResult` record.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DrainSummary {
    pub node: String,
    /// `Drained`, `DrainFailed`, `DrainTimedOut` or `DrainNotFinished`.
    pub result: String,
    pub started_secs: f64,
    /// When it ended (`None`: the run ended first).
    pub finished_secs: Option<f64>,
    pub message: String,
}

/// How many changed nodes and pending pods the table lists before "and N more".
const LIST_AT_MOST: usize = 10;

impl Summary {
    /// Counts one output record (in its JSON form).
    pub fn count(&mut self, record: &Value) {
        let s = |k: &str| record.get(k).and_then(Value::as_str).unwrap_or("");
        match (s("kind"), s("reason")) {
            ("Expectation", "ExpectationPassed") => self.expectations_passed += 1,
            ("Expectation", _) => self.expectations_failed += 1,
            ("StepFailed", _) => self.steps_failed += 1,
            ("Pod", "Scheduled") => self.scheduled += 1,
            ("Pod", "Preempted") => self.preempted += 1,
            ("Pod", "TaintManagerEviction") if s("message").starts_with("Marking for deletion") => {
                self.evicted += 1
            }
            ("ReplicaSet", "SuccessfulDelete") => self.deleted += 1,
            ("DrainResult", result) => self.drains.push(DrainSummary {
                node: s("name").to_string(),
                result: result.to_string(),
                started_secs: record.get("started").and_then(Value::as_f64).unwrap_or(0.0),
                finished_secs: record.get("finished").and_then(Value::as_f64),
                message: s("message").to_string(),
            }),
            _ => {}
        }
    }

    /// The summary as the last object of `--output json`.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "kind": "Summary",
            "time": self.end_secs,
            "expectations": {
                "passed": self.expectations_passed,
                "failed": self.expectations_failed,
            },
            "stepsFailed": self.steps_failed,
            "pods": {
                "scheduled": self.scheduled,
                "pending": self.pending,
                "evicted": self.evicted,
                "preempted": self.preempted,
                "deleted": self.deleted,
            },
            "nodesChanged": self.nodes_changed.iter().map(|(n, a, b)| json!({"node": n, "podsAtStart": a, "podsAtEnd": b})).collect::<Vec<_>>(),
            "pendingPods": self.pending_pods.iter().map(|(p, m)| json!({"pod": p, "lastFailedScheduling": m})).collect::<Vec<_>>(),
        });
        if !self.drains.is_empty() {
            v["drains"] = self
                .drains
                .iter()
                .map(|d| json!({"node": d.node, "result": d.result, "started": d.started_secs, "finished": d.finished_secs, "message": d.message}))
                .collect();
        }
        v
    }

    /// The summary as the table's closing lines.
    pub fn to_lines(&self) -> Vec<String> {
        let verdict = if self.expectations_failed == 0 && self.steps_failed == 0 {
            "OK"
        } else {
            "FAILED"
        };
        let mut first = format!(
            "{verdict}: {} expectation(s) held, {} failed",
            self.expectations_passed, self.expectations_failed
        );
        if self.steps_failed > 0 {
            first.push_str(&format!(", {} step(s) failed", self.steps_failed));
        }
        first.push_str(&format!(
            " after {} of virtual time",
            crate::output::age::format_age_secs(self.end_secs)
        ));
        let mut lines = vec![
            first,
            format!(
                "pods: {} scheduled, {} pending, {} evicted, {} preempted, {} deleted",
                self.scheduled, self.pending, self.evicted, self.preempted, self.deleted
            ),
        ];
        if !self.nodes_changed.is_empty() {
            let shown: Vec<String> = self
                .nodes_changed
                .iter()
                .take(LIST_AT_MOST)
                .map(|(n, a, b)| format!("{n} {a} → {b}"))
                .collect();
            lines.push(format!(
                "pods per node, start → end: {}{}",
                shown.join(", "),
                more(self.nodes_changed.len())
            ));
        }
        for d in &self.drains {
            let age = crate::output::age::format_age_secs;
            let end = d.finished_secs.map_or("not finished".to_string(), age);
            lines.push(format!(
                "drain {} ({} → {end}): {}",
                d.node,
                age(d.started_secs),
                d.message
            ));
        }
        for (pod, message) in self.pending_pods.iter().take(LIST_AT_MOST) {
            let why = if message.is_empty() {
                "not tried yet"
            } else {
                message
            };
            lines.push(format!("pending {pod}: {why}"));
        }
        if self.pending_pods.len() > LIST_AT_MOST {
            lines.push(format!(
                "{} more pending{}",
                self.pending_pods.len() - LIST_AT_MOST,
                ""
            ));
        }
        lines
    }
}

fn more(n: usize) -> String {
    if n > LIST_AT_MOST {
        format!(" and {} more", n - LIST_AT_MOST)
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_evictions_that_mark_a_pod_count_as_evicted() {
        let mut s = Summary::default();
        for message in [
            "Marking for deletion Pod default/a",
            "Cancelling deletion of Pod default/b",
        ] {
            s.count(&json!({"kind": "Pod", "reason": "TaintManagerEviction", "message": message}));
        }
        assert_eq!(s.evicted, 1);
    }

    #[test]
    fn records_are_counted_by_kind_and_reason() {
        let mut s = Summary::default();
        for (kind, reason) in [
            ("Expectation", "ExpectationPassed"),
            ("Expectation", "ExpectationFailed"),
            ("Pod", "Scheduled"),
            ("Pod", "Scheduled"),
            ("Pod", "Preempted"),
            ("ReplicaSet", "SuccessfulDelete"),
            ("ReplicaSet", "SuccessfulCreate"),
            ("StepFailed", "StepFailed"),
        ] {
            s.count(&json!({"kind": kind, "reason": reason}));
        }
        let want = Summary {
            expectations_passed: 1,
            expectations_failed: 1,
            steps_failed: 1,
            scheduled: 2,
            preempted: 1,
            deleted: 1,
            ..Summary::default()
        };
        assert_eq!(s, want);
        assert!(s.to_lines()[0].starts_with("FAILED: 1 expectation(s) held, 1 failed, 1 step(s)"));
    }
}

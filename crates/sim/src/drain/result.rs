//! The `DrainResult` record a drain writes when it ends: which pods were evicted and when,
//! which were blocked and by which PodDisruptionBudget, which the filters refused or left
//! alone, and how the drain ended (kubectl's own words where it has them).

use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;
use serde_json::{json, Value};

use super::{filters, Blocked, Drain, State};

/// The budget a 429's cause names (`The disruption budget web needs 2 healthy pods and has 1
/// currently`, `The disruption budget web is still being processed by the server.`).
fn budget_of(blocked: &Blocked) -> Option<&str> {
    blocked
        .cause
        .as_deref()?
        .strip_prefix("The disruption budget ")?
        .split_whitespace()
        .next()
}

fn secs(t: Option<SimTime>) -> Value {
    t.map_or(Value::Null, |t| json!(t.as_secs_f64()))
}

fn show(d: SimDuration) -> String {
    kubeplane_core::duration::format_duration(d)
}

impl Drain {
    /// How the drain ended: `Drained`, `DrainFailed`, `DrainTimedOut`, or `DrainNotFinished`
    /// when the run ended first.
    fn outcome(&self) -> &'static str {
        match (self.finished, self.errors.is_empty(), self.timed_out) {
            (None, _, _) => "DrainNotFinished",
            (Some(_), true, _) => "Drained",
            (Some(_), false, true) => "DrainTimedOut",
            (Some(_), false, false) => "DrainFailed",
        }
    }

    /// The pods whose eviction (or delete) was accepted.
    fn evicted(&self) -> Vec<Value> {
        self.targets
            .iter()
            .filter(|t| t.evicted_at.is_some())
            .map(|t| {
                let mut v = json!({
                    "pod": t.pod(),
                    "at": secs(t.evicted_at),
                    "gone": secs(t.gone_at),
                });
                if !self.opts.disable_eviction {
                    v["attempts"] = json!(t.attempts);
                }
                if let Some(b) = &t.blocked {
                    v["blockedSince"] = json!(b.since.as_secs_f64());
                    v["budget"] = json!(budget_of(b));
                }
                v
            })
            .collect()
    }

    /// The pods whose evictions were refused with 429 and never accepted.
    fn blocked(&self) -> Vec<Value> {
        self.targets
            .iter()
            .filter(|t| t.evicted_at.is_none())
            .filter_map(|t| Some((t, t.blocked.as_ref()?)))
            .map(|(t, b)| {
                json!({
                    "pod": t.pod(),
                    "budget": budget_of(b),
                    "message": b.message,
                    "cause": b.cause,
                    "since": b.since.as_secs_f64(),
                    "attempts": t.attempts,
                })
            })
            .collect()
    }

    /// One line for a person.
    fn message(&self, now: SimTime) -> String {
        let node = &self.opts.node;
        let waits: Vec<String> = self
            .targets
            .iter()
            .filter_map(|t| {
                let b = t.blocked.as_ref()?;
                let budget = budget_of(b).unwrap_or("?");
                Some(match t.evicted_at {
                    Some(at) => format!(
                        "{} waited {} for PodDisruptionBudget {budget}",
                        t.pod(),
                        show(at - b.since)
                    ),
                    None => format!("{} blocked by PodDisruptionBudget {budget}", t.pod()),
                })
            })
            .collect();
        let n_evicted = self
            .targets
            .iter()
            .filter(|t| t.evicted_at.is_some())
            .count();
        let verb = if self.opts.disable_eviction {
            "deleted"
        } else {
            "evicted"
        };
        let mut counts = format!("{n_evicted} pod(s) {verb}");
        if !self.skipped.is_empty() {
            counts.push_str(&format!(", {} skipped", self.skipped.len()));
        }
        if !waits.is_empty() {
            counts.push_str(&format!(" ({})", waits.join("; ")));
        }
        match self.outcome() {
            "Drained" => format!("node/{node} drained: {counts}"),
            "DrainNotFinished" => format!(
                "node/{node} not drained after {}: {counts}",
                show(now - self.started)
            ),
            _ => format!(
                "unable to drain node {node:?} due to error: {}",
                filters::aggregate(&self.errors)
            ),
        }
    }

    /// The `DrainResult` record, at `now` (the instant the drain ended, or the run's end).
    pub fn record(&self, now: SimTime) -> Value {
        let pairs = |v: &[(String, String)], k: &str| -> Vec<Value> {
            v.iter().map(|(a, b)| json!({"pod": b, k: a})).collect()
        };
        json!({
            "time": now.as_secs_f64(),
            "kind": "DrainResult",
            "reason": self.outcome(),
            "name": self.opts.node,
            "message": self.message(now),
            "started": self.started.as_secs_f64(),
            "finished": secs(self.finished),
            "evicted": self.evicted(),
            "blocked": self.blocked(),
            "refused": pairs(&self.refused, "message"),
            "skipped": self.skipped.iter().map(|(p, why)| json!({"pod": p, "reason": why})).collect::<Vec<_>>(),
            "warnings": filters::warnings(&self.warned),
            "errors": self.errors,
            "pending": self.targets.iter().filter(|t| matches!(t.state, State::Evict | State::Wait)).map(|t| t.pod()).collect::<Vec<_>>(),
        })
    }
}

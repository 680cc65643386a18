//! The output records of a run: its events, expectation outcomes and explanation records, in
//! order.

use std::sync::Arc;

use kubeplane_core::{EventRecord, SimTime};
use serde_json::{json, Value};

/// One line of output, in order of virtual time, then of occurrence.
///
/// A pointer and its tag (16 bytes): a run keeps every record (an envelope run, half a million
/// events), so the two larger variants are boxed rather than making every event's entry as
/// large as a JSON value (72 bytes).
#[derive(Clone, Debug)]
pub enum Record {
    /// An event, shared with the run's event list ([`crate::Simulation::events`]).
    Event(Arc<EventRecord>),
    Expectation(Box<ExpectationRecord>),
    /// An explanation record (`SchedulingAttempt`, `EvictionDecision`, `ScaleDownDecision`) or
    /// a `StepFailed` record, already in its JSON form.
    Json(Box<Value>),
}

/// The outcome of one expectation.
#[derive(Clone, Debug)]
pub struct ExpectationRecord {
    pub time: SimTime,
    pub passed: bool,
    pub message: String,
}

impl Record {
    /// An expectation's outcome.
    pub fn expectation(time: SimTime, passed: bool, message: String) -> Record {
        Record::Expectation(Box::new(ExpectationRecord {
            time,
            passed,
            message,
        }))
    }

    pub fn to_json(&self) -> Value {
        match self {
            Record::Event(e) => e.to_json(),
            Record::Expectation(e) => json!({
                "time": e.time.as_secs_f64(),
                "kind": "Expectation",
                "reason": if e.passed { "ExpectationPassed" } else { "ExpectationFailed" },
                "message": e.message,
            }),
            Record::Json(v) => Value::clone(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_a_pointer_and_its_tag() {
        assert_eq!(std::mem::size_of::<Record>(), 16);
        let r = Record::expectation(SimTime::ZERO, true, "ok".into());
        assert_eq!(r.to_json()["reason"], "ExpectationPassed");
        assert_eq!(r.to_json()["message"], "ok");
        let j = Record::Json(Box::new(json!({"kind": "StepFailed"})));
        assert_eq!(j.to_json()["kind"], "StepFailed");
    }
}

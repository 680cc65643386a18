//! The deterministic virtual-time simulator: the event loop, simulated node agents, the
//! scenario input, expectations and output records.
//!
//! Architecture invariant: nothing here reads the wall clock or an unseeded random source;
//! the same input and seed produce byte-identical output.

pub mod agents;
pub mod drain;
pub mod engine;
pub mod expect;
pub mod scenario;
pub mod verbs;
pub mod workloads;

pub use engine::{ExpectationRecord, Record, RunOptions, SimError, Simulation};

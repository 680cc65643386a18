//! The kube-scheduler: scheduling queue, cache with assumed pods, plugin framework, the default
//! plugins, and the KubeSchedulerConfiguration that selects them.
//!
//! Architecture invariant: the scheduler never reads the wall clock or an unseeded random
//! source; the current time is a parameter and tie-breaks come from a seeded generator.

pub mod api_dispatcher;
mod attempt_record;
mod binding_cycle;
pub mod cache;
pub mod config;
mod failure;
pub mod framework;
pub mod node_local;
pub mod plugins;
pub mod queue;
pub mod schedule_one;
pub mod scheduler;

pub use scheduler::Scheduler;

/// The profile name pods get when `spec.schedulerName` is empty.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

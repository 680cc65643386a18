//! Pure controllers: each observes watch events, decides at a given instant, and writes through
//! a [`kubeplane_api::Client`]. None reads the wall clock. [`manager`] lists them for every
//! runtime.

pub mod controller_utils;
pub mod cronjob;
pub mod daemon;
pub mod deployment;
pub mod disruption;
mod explain;
pub mod garbage_collector;
pub mod job;
pub mod manager;
pub mod namespace;
pub mod pod_filing;
pub mod pod_gc;
pub mod replicaset;
pub mod statefulset;
pub mod ttl_after_finished;

pub mod node_lifecycle;
#[cfg(test)]
mod node_testutil;
mod node_util;
pub mod taint_eviction;

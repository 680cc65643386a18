//! Pure controllers: each observes store changes, decides at a given instant, and writes through
//! a [`kubeplane_store::Client`]. None reads the wall clock.

pub mod controller_utils;
pub mod deployment;
pub mod replicaset;

pub mod admission;
pub mod node_lifecycle;
#[cfg(test)]
mod node_testutil;
mod node_util;
pub mod taint_eviction;

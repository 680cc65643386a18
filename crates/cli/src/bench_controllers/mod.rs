//! The controller benchmarks of `kubeplane bench` that drive one controller directly through a
//! test client (the others run the whole simulator). They read the wall clock, so they live
//! here in the binary, never in the controllers' library.

pub mod daemon_set;
pub mod jobs;
pub mod node_lifecycle;
pub mod taint_eviction;

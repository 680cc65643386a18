//! Object helpers on k8s-openapi types: quantities, label and node selectors, tolerations,
//! pod resource requests, image names, durations, virtual time, and the Kubernetes release a
//! run follows (versions, feature gates by release, behaviour changes by release).
//!
//! Architecture invariant: nothing in this crate performs I/O or reads the wall clock.

pub mod duration;
pub mod event;
pub mod features;
pub mod images;
pub mod labels;
pub mod nodeaffinity;
pub mod quantity;
pub mod resources;
pub mod taints;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod time;
pub mod validation;
pub mod version;

pub use event::EventRecord;
pub use time::SimTime;

//! What the scheduler and the controllers see of a Kubernetes API server, and nothing more.
//!
//! Components depend on this crate and on `kubeplane-core` only; every runtime (the simulator,
//! the coming `kubeplane serve`, a live cluster through kube-rs) implements these traits:
//!
//! - [`Cache`]: what upstream components read through listers. It may lag the server, but it is
//!   never behind the watch events the component has been shown.
//! - [`Client`]: the API calls a component makes (uncached GET, create, update, the status
//!   subresource, a pod status patch with a UID precondition, delete with preconditions,
//!   `pods/binding`), the event recorder, explanation records and the [`Clock`]. Every call may
//!   fail; a [`ApiError::Conflict`] means "read again and retry", as upstream treats a 409.
//! - [`Component`]: a piece of the control plane that observes [`WatchEvent`]s like an informer
//!   and does its work when the runtime runs it.
//!
//! Architecture invariants: nothing here performs I/O or reads the wall clock; a runtime's
//! informer fills in the previous object of every Modified and Deleted event, also when it
//! relists (upstream's DeltaFIFO turns a relist into the same per-object events).

pub mod client;
pub mod component;
mod delegate;
pub mod deployment;
pub mod error;
pub mod informer;
pub mod node;
pub mod object;
pub mod pod;
pub mod pod_meta;
pub mod pod_status;
pub mod replica_set;
pub mod suite;
pub mod types;
pub mod watch;

pub use client::{Cache, Client, Clock, DeleteOptions, PropagationPolicy, SlotHint};
pub use component::Component;
#[doc(hidden)]
pub use delegate::__reexport;
pub use deployment::{StoredDeployment, StoredDeploymentSpec};
pub use error::ApiError;
pub use informer::Informer;
pub use node::{
    heartbeats_mark_of, only_heartbeats_changed, only_heartbeats_changed_by_fields, StoredNode,
};
pub use object::{DynamicObject, Kind, Object, ObjectKey};
pub use pod::{PodExt, StoredPod};
pub use pod_status::{CompactTime, StoredPodStatus};
pub use replica_set::{StoredPodTemplateSpec, StoredReplicaSet, StoredReplicaSetSpec, TemplateRef};
pub use watch::{EventType, WatchEvent};

//! The seam between decision code and its runtime.
//!
//! A [`Component`] (the scheduler, a controller, a node agent) observes store changes like an
//! informer, and does its work in [`Component::run`] at an instant the runtime chooses, writing
//! through a [`Client`]. The simulator implements `Client` on the in-process [`Store`] with a
//! virtual clock; a later runtime implements it against a real API server.

use kubeplane_core::{EventRecord, SimTime};
use thiserror::Error;

use crate::object::{Object, ObjectKey};
use crate::store::{Store, WatchEvent};

/// Why a write failed. The messages follow the API server's wording.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum StoreError {
    #[error("{key} not found")]
    NotFound { key: ObjectKey },
    #[error("{key} already exists")]
    AlreadyExists { key: ObjectKey },
    #[error("Operation cannot be fulfilled on {key}: the object has been modified; please apply your changes to the latest version and try again")]
    Conflict { key: ObjectKey },
    #[error("{key} is invalid: {message}")]
    Invalid { key: ObjectKey, message: String },
}

/// Options of a delete, like the API's DeleteOptions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Overrides the pod's terminationGracePeriodSeconds; `Some(0)` removes a pod at once.
    pub grace_period_secs: Option<i64>,
    /// Only delete the object if its UID is this one.
    pub precondition_uid: Option<String>,
}

impl DeleteOptions {
    pub fn now() -> Self {
        DeleteOptions {
            grace_period_secs: Some(0),
            precondition_uid: None,
        }
    }
}

/// How components read and write cluster state. Writes are applied at once; the resulting
/// watch events reach every component (the writer included) after its `run` returns.
pub trait Client {
    /// Read access to the current state (what upstream components read through listers).
    fn store(&self) -> &Store;
    fn create(&mut self, obj: Object) -> Result<Object, StoreError>;
    /// Replaces an object. A non-empty resourceVersion on `obj` is a precondition.
    fn update(&mut self, obj: Object) -> Result<Object, StoreError>;
    /// Graceful delete: a bound pod becomes Terminating; anything else disappears at once.
    fn delete(
        &mut self,
        key: &ObjectKey,
        opts: DeleteOptions,
    ) -> Result<Option<Object>, StoreError>;
    /// The pods/binding subresource: sets spec.nodeName and the PodScheduled condition.
    fn bind(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
    ) -> Result<Object, StoreError>;
    /// Records a Kubernetes event.
    fn record_event(&mut self, ev: EventRecord);
    /// Whether explanation records are wanted (components skip building them otherwise).
    fn explain(&self) -> bool;
    /// Emits an explanation record (`SchedulingAttempt`, `EvictionDecision`, ...).
    fn emit_record(&mut self, record: serde_json::Value);
}

/// A piece of the control plane driven by the runtime.
pub trait Component {
    fn name(&self) -> &'static str;
    /// Sees one store change, in resourceVersion order. Must not write; may schedule work by
    /// making `next_wakeup` return an instant at or before `now`.
    fn observe(&mut self, ev: &WatchEvent, now: SimTime);
    /// Does the work due at `now`.
    fn run(&mut self, now: SimTime, client: &mut dyn Client);
    /// The next instant at which `run` has work to do; `None` when only new events can give it
    /// work. An instant at or before `now` means "run again now".
    fn next_wakeup(&self) -> Option<SimTime>;
    /// Counters the component keeps (upstream metric names), printed at the end of a run.
    fn metrics(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}

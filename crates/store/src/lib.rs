//! The versioned in-process object store the simulator's API runs on.
//!
//! Architecture invariants:
//! - one writer ([`Store`] methods taking `&mut self`), many readers (`&Store`, or cloned `Arc`s
//!   of the objects, which are immutable once stored);
//! - every successful write bumps one strictly increasing resourceVersion and appends exactly one
//!   [`WatchEvent`] to the store's event log, in write order;
//! - the store stores what it is given: the API server's rules (defaults, what an update keeps,
//!   graceful deletion, binding) are the registry's, which writes through the store's plain
//!   operations (`create_with`, `update`, `update_with`, `delete`);
//! - nothing here reads the wall clock: time and the random source come from the caller.
//!
//! Components never see this crate: they read through [`kubeplane_api::Cache`] (which
//! [`Store`] implements) and write through a [`kubeplane_api::Client`] that the registry
//! implements over a store.

pub mod names;
pub mod store;

pub use kubeplane_api::{
    ApiError, Cache, Client, Clock, Component, DeleteOptions, EventType, Kind, Object, ObjectKey,
    WatchEvent,
};
pub use names::NameSource;
pub use store::{Prepared, Store};

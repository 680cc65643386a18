//! The versioned in-process object store and the interface components use to talk to it.
//!
//! Architecture invariants:
//! - one writer ([`Store`] methods taking `&mut self`), many readers (`&Store`, or cloned `Arc`s
//!   of the objects, which are immutable once stored);
//! - every successful write bumps one strictly increasing resourceVersion and appends exactly one
//!   [`WatchEvent`] to the store's event log, in write order;
//! - nothing here reads the wall clock: time and the random source come from the caller.
//!
//! The [`Client`] and [`Component`] traits are the seam where a kubectl-compatible API server or
//! an etcd-backed store can later take the simulator's place.

pub mod object;
pub mod runtime;
pub mod store;
pub mod testing;

pub use object::{Kind, Object, ObjectKey};
pub use runtime::{Client, Component, DeleteOptions, StoreError};
pub use store::{EventType, Store, WatchEvent};

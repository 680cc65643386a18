//! The API server's rules over the object store, and the one [`Client`] implementation of the
//! in-process runtimes (the simulator, component unit tests).
//!
//! [`ApiClient`] is what a component talks to in the simulator: admission on create
//! ([`admission`]), the main resource and the status subresource written separately (the
//! store keeps the other part), `PatchPodStatus` with a UID precondition, binding, graceful
//! deletion, and events and explanation records handed to a [`Sink`]. [`testing::TestClient`]
//! owns a store and a clock and runs components through the same `ApiClient`.
//!
//! Architecture invariant: no wall clock and no unseeded randomness; the time is the caller's
//! and UIDs and generated names come from the store's seeded source.

pub mod admission;
pub mod client;
pub mod eviction;
pub mod testing;
pub mod validation;

pub use client::{ApiClient, Sink};
pub use kubeplane_api::Client;

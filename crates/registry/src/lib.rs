//! The API server's rules per kind, run over either backend: the simulator's object store
//! ([`ApiClient`]) or `kubeplane-storage` ([`StorageClient`], what the HTTP server builds on).
//!
//! The rules are upstream's registry strategies ([`strategy`]: pure functions over objects,
//! one module per kind) and admission ([`admission`]); [`client`] holds the operations that
//! apply them over a [`Backend`] (the store's or the storage's plain writes), and both clients
//! run those same operations: admission on create, the main resource and the status
//! subresource written separately (the strategy keeps the other part), `PatchPodStatus` with a
//! UID precondition, binding, graceful deletion, the eviction and scale subresources.
//! [`ApiClient`] is what a component talks to in the simulator, with events and explanation
//! records handed to a [`Sink`]; [`testing::TestClient`] owns a store and a clock and runs
//! components through the same `ApiClient`.
//!
//! Architecture invariant: no wall clock and no unseeded randomness; the time is the caller's
//! and UIDs and generated names come from the backend's seeded source.

pub mod admission;
pub mod apply;
pub mod backing;
pub mod client;
pub mod deletion;
pub mod eviction;
pub mod field_manager;
pub mod patch;
pub mod printers;
pub mod storage_client;
pub mod strategy;
pub mod testing;
pub mod validation;

pub use backing::ObjectJson;
pub use client::{ApiClient, Backend, Sink};
pub use kubeplane_api::Client;
pub use storage_client::{StorageClient, WriteGate};

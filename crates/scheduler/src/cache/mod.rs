//! The scheduler cache: nodes with their bound and assumed pods, and the snapshot.

pub mod snapshot;

pub use snapshot::Snapshot;

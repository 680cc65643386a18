//! The scenario input of `kubeplane simulate`: YAML streams of Kubernetes manifests,
//! KubeSchedulerConfigurations and at most one `kubeplane.io/v1alpha1` Scenario (the format is
//! `docs/scenario-format.md`), parsed and validated into an [`Input`].
//!
//! - [`model`]: the parsed types (what the simulator runs);
//! - [`parse`]: documents and the Scenario;
//! - `objects`: manifests, with the API server's validation of what kubeplane simulates;
//! - `version`: the Kubernetes release (`spec.kubernetesVersion`) and the feature gates.
//!
//! Architecture invariant: parsing never panics; every problem with the input is an
//! [`InputError`] naming the file, the document and the field.

pub mod model;
mod objects;
pub mod parse;
mod version;
mod yaml;

#[cfg(test)]
mod tests;

pub use model::*;
pub use parse::{parse_files, parse_files_for, parse_yaml_document};

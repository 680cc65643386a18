//! The scenario input of `kubeplane simulate`: YAML streams of Kubernetes manifests,
//! KubeSchedulerConfigurations and at most one `kubeplane.io/v1alpha1` Scenario (the format is
//! `docs/scenario-format.md`), parsed and validated into an [`Input`].
//!
//! - [`model`]: the parsed types (what the simulator runs);
//! - [`parse`]: files and documents: objects, scheduler configurations and the Scenario;
//! - `objects`: manifests, decoded strictly and validated by the registry
//!   ([`kubeplane_registry::validation`], the API server's rules); `crds`: the custom resource
//!   types the input's CustomResourceDefinitions define, read before the documents;
//! - `raw`: the Scenario document as written; `steps`: its spec and steps; `expectations`:
//!   the assertions of `expect` steps;
//! - `version`: the Kubernetes release (`spec.kubernetesVersion`) and the feature gates.
//!
//! Architecture invariant: parsing never panics; every problem with the input is an
//! [`InputError`] naming the file, the document and the field.

mod crds;
mod expectations;
pub mod model;
mod objects;
pub mod parse;
mod raw;
mod steps;
mod version;
mod yaml;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_crds;

pub use model::*;
pub use objects::{decode_object, FieldError};
pub use parse::{parse_files, parse_files_for, parse_yaml_document};

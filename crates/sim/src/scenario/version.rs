//! The Kubernetes release of a Scenario: `spec.kubernetesVersion` (overridden by
//! `--kubernetes-version`, as `--seed` overrides `spec.seed`), and `spec.featureGates` resolved
//! against that release's gates, defaults and locks.

use std::collections::BTreeMap;

use kubeplane_core::features::{FeatureGateError, FeatureGates};
use kubeplane_core::version::KubeVersion;
use serde_json::Value;

use super::objects::FieldError;

/// `spec.kubernetesVersion` as written: a string (`"1.35"`, `v1.34.2`) or a YAML number
/// (`1.35`).
pub(crate) fn parse_version_field(v: &Value) -> Result<KubeVersion, FieldError> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => {
            return Err(FieldError::at(
                "spec.kubernetesVersion",
                format!("expected a Kubernetes version like \"1.35\" or \"v1.34.2\", got {other}"),
            ))
        }
    };
    text.parse()
        .map_err(|e| FieldError::at("spec.kubernetesVersion", format!("{e}")))
}

/// The release a scenario follows (the override, else its own field, else the default) and
/// its feature gates with the scenario's overrides.
pub(crate) fn resolve(
    spec_version: Option<&Value>,
    overrides: Option<&BTreeMap<String, bool>>,
    version_override: Option<KubeVersion>,
) -> Result<(KubeVersion, FeatureGates), FieldError> {
    let own = spec_version.map(parse_version_field).transpose()?;
    let version = version_override.or(own).unwrap_or_default();
    let gates = match overrides {
        None => FeatureGates::for_version(version),
        Some(gates) => FeatureGates::for_version_with_overrides(version, gates).map_err(|e| {
            let gate = match &e {
                FeatureGateError::Unknown(g, ..) | FeatureGateError::Locked(g, ..) => g,
            };
            FieldError::at(format!("spec.featureGates.{gate}"), e.to_string())
        })?,
    };
    Ok((version, gates))
}

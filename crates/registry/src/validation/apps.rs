//! Deployments and ReplicaSets (upstream `pkg/apis/apps/validation`: `ValidateDeployment`,
//! `ValidateReplicaSet`, their updates, `ValidatePositiveIntOrPercent`).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DeploymentStrategy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubeplane_api::StoredDeployment;
use kubeplane_api::{StoredReplicaSet, TemplateRef};
use kubeplane_core::labels::from_label_selector;

use super::meta::{immutable, validate_annotations_size, validate_labels, validate_meta, NameRule};
use super::pod::validate_pod_spec;
use super::{quote, Check, FieldError};

/// The most replicas one ReplicaSet or Deployment may ask for, and the most the workloads of
/// the initial state may ask for in all: upstream's scalability threshold of 150,000 pods per
/// cluster. Upstream accepts any `int32`; kubeplane keeps every pod in memory (about 11 KB
/// each), so a count beyond any real cluster is an input error rather than a run that takes
/// gigabytes (docs/compatibility.md).
pub const MAX_REPLICAS: i32 = 150_000;

/// `replicas`: non-negative and at most [`MAX_REPLICAS`].
pub fn check_replicas(v: Option<i32>, path: &str) -> Check {
    non_negative(v, path)?;
    match v {
        Some(v) if v > MAX_REPLICAS => Err(FieldError::invalid(
            path,
            v.to_string(),
            &format!(
                "must be less than or equal to {MAX_REPLICAS} (kubeplane simulates clusters of at most 150,000 pods, upstream's scalability threshold)"
            ),
        )),
        _ => Ok(()),
    }
}

fn non_negative(v: Option<i32>, path: &str) -> Check {
    match v {
        Some(v) if v < 0 => Err(FieldError::invalid(
            path,
            v.to_string(),
            "must be greater than or equal to 0",
        )),
        _ => Ok(()),
    }
}

/// A workload's selector must be valid, non-empty and match its template's labels.
fn validate_workload(
    selector: &LabelSelector,
    template: Option<TemplateRef<'_>>,
    what: &str,
) -> Check {
    let compiled = from_label_selector(selector)
        .map_err(|e| FieldError::invalid_omitted("spec.selector", &e.to_string()))?;
    if compiled.is_empty() {
        return Err(FieldError::invalid_omitted(
            "spec.selector",
            &format!("empty selector is invalid for {what}"),
        ));
    }
    let Some(template) = template else {
        return Err(FieldError::required("spec.template", ""));
    };
    let empty = BTreeMap::new();
    let labels = template
        .metadata
        .and_then(|m| m.labels.as_ref())
        .unwrap_or(&empty);
    if let Some(m) = template.metadata {
        validate_labels(m.labels.as_ref(), "spec.template.metadata.labels")?;
        validate_annotations_size(m.annotations.as_ref(), "spec.template.metadata.annotations")?;
    }
    if !compiled.matches(labels) {
        return Err(FieldError::invalid(
            "spec.template.metadata.labels",
            quote(&labels_string(labels)),
            "`selector` does not match template `labels`",
        ));
    }
    let Some(spec) = template.spec else {
        return Err(FieldError::required("spec.template.spec", ""));
    };
    validate_pod_spec(spec, "spec.template.spec", true)
}

fn labels_string(labels: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.join(",")
}

/// Upstream `ValidateReplicaSet`.
pub fn validate_replica_set(rs: &StoredReplicaSet) -> Check {
    validate_meta(&rs.metadata, "metadata", NameRule::PathSegment, true)?;
    let Some(spec) = &rs.spec else {
        return Err(FieldError::required("spec", ""));
    };
    check_replicas(spec.replicas, "spec.replicas")?;
    non_negative(spec.min_ready_seconds, "spec.minReadySeconds")?;
    validate_workload(
        &spec.selector,
        spec.template.as_ref().map(TemplateRef::from),
        "replicaset",
    )
}

/// Upstream `ValidateDeployment`.
pub fn validate_deployment(d: &StoredDeployment) -> Check {
    validate_meta(&d.metadata, "metadata", NameRule::PathSegment, true)?;
    let Some(spec) = &d.spec else {
        return Err(FieldError::required("spec", ""));
    };
    check_replicas(spec.replicas, "spec.replicas")?;
    non_negative(spec.min_ready_seconds, "spec.minReadySeconds")?;
    non_negative(spec.revision_history_limit, "spec.revisionHistoryLimit")?;
    if let Some(pd) = spec.progress_deadline_seconds {
        if pd <= spec.min_ready_seconds.unwrap_or(0) {
            return Err(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                pd.to_string(),
                "must be greater than minReadySeconds",
            ));
        }
    }
    if let Some(strategy) = &spec.strategy {
        validate_strategy(strategy)?;
    }
    validate_workload(
        &spec.selector,
        Some(TemplateRef::from(&spec.template)),
        "deployment",
    )
}

/// Upstream `ValidateDeploymentStrategy` and `ValidateRollingUpdateDeployment`.
fn validate_strategy(strategy: &DeploymentStrategy) -> Check {
    match strategy.type_.as_deref() {
        None | Some("RollingUpdate") => {
            let Some(ru) = &strategy.rolling_update else {
                return Ok(());
            };
            let unavailable_path = "spec.strategy.rollingUpdate.maxUnavailable";
            let surge = int_or_percent(
                ru.max_surge.as_ref(),
                "spec.strategy.rollingUpdate.maxSurge",
            )?;
            let unavailable = int_or_percent(ru.max_unavailable.as_ref(), unavailable_path)?;
            if surge == Some(0) && unavailable == Some(0) {
                return Err(FieldError::invalid(
                    unavailable_path,
                    "0",
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
            if let Some(IntOrString::String(_)) = &ru.max_unavailable {
                if unavailable.is_some_and(|u| u > 100) {
                    return Err(FieldError::invalid_omitted(
                        unavailable_path,
                        "must not be greater than 100%",
                    ));
                }
            }
            Ok(())
        }
        Some("Recreate") => match strategy.rolling_update {
            Some(_) => Err(FieldError::forbidden(
                "spec.strategy.rollingUpdate",
                "may not be specified when strategy `type` is 'Recreate'",
            )),
            None => Ok(()),
        },
        Some(other) => Err(FieldError::not_supported(
            "spec.strategy.type",
            other,
            &["Recreate", "RollingUpdate"],
        )),
    }
}

/// Upstream `ValidatePositiveIntOrPercent`: a non-negative integer or a percentage `N%`;
/// returns the number.
pub fn int_or_percent(v: Option<&IntOrString>, path: &str) -> Result<Option<i64>, FieldError> {
    match v {
        None => Ok(None),
        Some(IntOrString::Int(i)) => {
            if *i < 0 {
                return Err(FieldError::invalid(
                    path,
                    i.to_string(),
                    "must be greater than or equal to 0",
                ));
            }
            Ok(Some(i64::from(*i)))
        }
        Some(IntOrString::String(s)) => {
            let n = s
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<i64>().ok())
                .ok_or_else(|| {
                    FieldError::invalid(
                        path,
                        quote(s),
                        "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%')",
                    )
                })?;
            Ok(Some(n))
        }
    }
}

/// apps/v1's rule for Deployment and ReplicaSet updates: `spec.selector` is immutable.
pub fn selector_unchanged(old: Option<&LabelSelector>, new: Option<&LabelSelector>) -> Check {
    if old == new {
        return Ok(());
    }
    Err(immutable(
        "spec.selector".to_string(),
        new.map_or_else(|| "null".to_string(), go_selector),
    ))
}

/// A label selector as upstream prints an invalid value of that type (Go's `%#v`).
fn go_selector(s: &LabelSelector) -> String {
    let labels = match &s.match_labels {
        None => "map[string]string(nil)".to_string(),
        Some(m) => {
            let kv: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
                .collect();
            format!("map[string]string{{{}}}", kv.join(", "))
        }
    };
    let exprs = match &s.match_expressions {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(list) => {
            let items: Vec<String> = list
                .iter()
                .map(|r| {
                    let values = match &r.values {
                        None => "[]string(nil)".to_string(),
                        Some(v) => {
                            let q: Vec<String> = v.iter().map(|x| quote(x)).collect();
                            format!("[]string{{{}}}", q.join(", "))
                        }
                    };
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
                        quote(&r.key),
                        quote(&r.operator)
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{exprs}}}")
}

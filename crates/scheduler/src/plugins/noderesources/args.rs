//! `NodeResourcesFitArgs` and `NodeResourcesBalancedAllocationArgs`
//! (kubescheduler.config.k8s.io/v1) with upstream's v1 defaults (`apis/config/v1/defaults.go`)
//! and validation (`apis/config/validation/validation_pluginargs.go`).

use std::fmt;

use kubeplane_core::labels::is_qualified_name;
use serde::Deserialize;

use crate::plugins::args::PluginArgsError;

/// The highest score a RequestedToCapacityRatio shape point may have (upstream
/// `MaxCustomPriorityScore`); shape scores are scaled by `MAX_NODE_SCORE / 10`.
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;

/// The highest resource weight NodeResourcesFit accepts.
pub const MAX_RESOURCE_WEIGHT: i64 = 100;

/// How NodeResourcesFit scores nodes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ScoringStrategyType {
    /// Prefers nodes with the most free resources.
    LeastAllocated,
    /// Prefers nodes with the fewest free resources (bin packing).
    MostAllocated,
    /// Scores utilization with a piecewise-linear shape.
    RequestedToCapacityRatio,
}

impl ScoringStrategyType {
    pub const ALL: [ScoringStrategyType; 3] = [
        ScoringStrategyType::LeastAllocated,
        ScoringStrategyType::MostAllocated,
        ScoringStrategyType::RequestedToCapacityRatio,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ScoringStrategyType::LeastAllocated => "LeastAllocated",
            ScoringStrategyType::MostAllocated => "MostAllocated",
            ScoringStrategyType::RequestedToCapacityRatio => "RequestedToCapacityRatio",
        }
    }

    pub fn parse(s: &str) -> Option<ScoringStrategyType> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl fmt::Display for ScoringStrategyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A resource and its weight in scoring.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSpec {
    #[serde(default)]
    pub name: String,
    /// 0 (unset) defaults to 1.
    #[serde(default)]
    pub weight: i64,
}

impl ResourceSpec {
    pub fn new(name: &str, weight: i64) -> ResourceSpec {
        ResourceSpec {
            name: name.to_string(),
            weight,
        }
    }
}

/// One point of the RequestedToCapacityRatio shape: utilization (0–100) → score (0–10).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UtilizationShapePoint {
    #[serde(default)]
    pub utilization: i32,
    #[serde(default)]
    pub score: i32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestedToCapacityRatioParam {
    #[serde(default)]
    pub shape: Vec<UtilizationShapePoint>,
}

/// `scoringStrategy` as written (the type is checked by validation).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScoringStrategy {
    #[serde(default, rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
    #[serde(default)]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioParam>,
}

/// `NodeResourcesFitArgs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeResourcesFitArgs {
    #[serde(default)]
    pub ignored_resources: Vec<String>,
    #[serde(default)]
    pub ignored_resource_groups: Vec<String>,
    #[serde(default)]
    pub scoring_strategy: Option<ScoringStrategy>,
}

/// `NodeResourcesBalancedAllocationArgs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeResourcesBalancedAllocationArgs {
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
}

/// cpu and memory with weight 1: the default resources of both plugins.
pub fn default_resources() -> Vec<ResourceSpec> {
    vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)]
}

fn default_weights(resources: &mut [ResourceSpec]) {
    for r in resources {
        if r.weight == 0 {
            r.weight = 1;
        }
    }
}

/// `Invalid value: <value>: <detail>` (upstream `field.Invalid`).
fn invalid(field: String, value: impl fmt::Display, detail: &str) -> PluginArgsError {
    PluginArgsError::new(field, format!("Invalid value: {value}: {detail}"))
}

fn quoted(s: &str) -> String {
    format!("{s:?}")
}

impl NodeResourcesFitArgs {
    /// Upstream `SetDefaults_NodeResourcesFitArgs`: LeastAllocated over cpu and memory when no
    /// strategy is given, cpu and memory when the strategy lists no resources, weight 0 → 1.
    pub fn set_defaults(&mut self) {
        let strategy = self
            .scoring_strategy
            .get_or_insert_with(|| ScoringStrategy {
                type_: ScoringStrategyType::LeastAllocated.as_str().to_string(),
                resources: default_resources(),
                requested_to_capacity_ratio: None,
            });
        if strategy.resources.is_empty() {
            strategy.resources = default_resources();
        }
        default_weights(&mut strategy.resources);
    }

    /// Upstream `ValidateNodeResourcesFitArgs`; returns every error, in upstream's order.
    pub fn validate(&self) -> Vec<PluginArgsError> {
        let mut errs = self.validate_ignored();
        let Some(s) = &self.scoring_strategy else {
            errs.push(PluginArgsError::new(
                "scoringStrategy",
                "Required value: ScoringStrategy field is required",
            ));
            return errs;
        };
        errs.extend(validate_scoring_strategy(s));
        errs
    }

    /// The errors of `ignoredResources` and `ignoredResourceGroups`.
    fn validate_ignored(&self) -> Vec<PluginArgsError> {
        let mut errs = Vec::new();
        for (i, r) in self.ignored_resources.iter().enumerate() {
            if let Err(e) = is_qualified_name(r) {
                errs.push(invalid(format!("ignoredResources[{i}]"), quoted(r), &e));
            }
        }
        for (i, g) in self.ignored_resource_groups.iter().enumerate() {
            let field = format!("ignoredResourceGroups[{i}]");
            if g.contains('/') {
                errs.push(invalid(
                    field.clone(),
                    quoted(g),
                    "resource group name can't contain '/'",
                ));
            }
            if let Err(e) = is_qualified_name(g) {
                errs.push(invalid(field, quoted(g), &e));
            }
        }
        errs
    }
}

/// The errors of a `scoringStrategy`: its type, its resources' weights and the shape of
/// RequestedToCapacityRatio.
fn validate_scoring_strategy(s: &ScoringStrategy) -> Vec<PluginArgsError> {
    let mut errs = Vec::new();
    let ty = ScoringStrategyType::parse(&s.type_);
    if ty.is_none() {
        let supported: Vec<String> = ScoringStrategyType::ALL
            .iter()
            .map(|t| quoted(t.as_str()))
            .collect();
        errs.push(PluginArgsError::new(
            "scoringStrategy.type",
            format!(
                "Unsupported value: {}: supported values: {}",
                quoted(&s.type_),
                supported.join(", ")
            ),
        ));
    }
    for (i, r) in s.resources.iter().enumerate() {
        if r.weight <= 0 || r.weight > MAX_RESOURCE_WEIGHT {
            errs.push(invalid(
                format!("scoringStrategy.resources[{i}].weight"),
                r.weight,
                &format!(
                    "resource weight of {} not in valid range (0, {MAX_RESOURCE_WEIGHT}]",
                    r.name
                ),
            ));
        }
    }
    if ty == Some(ScoringStrategyType::RequestedToCapacityRatio) {
        match &s.requested_to_capacity_ratio {
            None => errs.push(PluginArgsError::new(
                "scoringStrategy.requestedToCapacityRatio",
                "Required value: must be specified when type is RequestedToCapacityRatio",
            )),
            Some(p) => errs.extend(validate_shape(
                &p.shape,
                "scoringStrategy.requestedToCapacityRatio.shape",
            )),
        }
    } else if s.requested_to_capacity_ratio.is_some() {
        errs.push(PluginArgsError::new(
            "scoringStrategy.requestedToCapacityRatio",
            "Forbidden: must be nil when type is not RequestedToCapacityRatio",
        ));
    }
    errs
}

/// Upstream `validateFunctionShape`: at least one point, utilizations strictly increasing and
/// in [0, 100], scores in [0, 10].
fn validate_shape(shape: &[UtilizationShapePoint], path: &str) -> Vec<PluginArgsError> {
    let mut errs = Vec::new();
    if shape.is_empty() {
        errs.push(PluginArgsError::new(
            path,
            "Required value: at least one point must be specified",
        ));
        return errs;
    }
    if let Some(i) = (1..shape.len()).find(|&i| shape[i - 1].utilization >= shape[i].utilization) {
        errs.push(invalid(
            format!("{path}[{i}].utilization"),
            shape[i].utilization,
            "values must be sorted in increasing order",
        ));
    }
    for (i, p) in shape.iter().enumerate() {
        if !(0..=100).contains(&p.utilization) {
            errs.push(invalid(
                format!("{path}[{i}].utilization"),
                p.utilization,
                "not in valid range [0, 100]",
            ));
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&i64::from(p.score)) {
            errs.push(invalid(
                format!("{path}[{i}].score"),
                p.score,
                &format!("not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"),
            ));
        }
    }
    errs
}

impl NodeResourcesBalancedAllocationArgs {
    /// Upstream `SetDefaults_NodeResourcesBalancedAllocationArgs`: cpu and memory when empty,
    /// weight 0 → 1.
    pub fn set_defaults(&mut self) {
        if self.resources.is_empty() {
            self.resources = default_resources();
            return;
        }
        default_weights(&mut self.resources);
    }

    /// Upstream `ValidateNodeResourcesBalancedAllocationArgs`: no duplicate resource, every
    /// weight exactly 1.
    pub fn validate(&self) -> Vec<PluginArgsError> {
        let mut errs = Vec::new();
        for (i, r) in self.resources.iter().enumerate() {
            if self.resources[..i].iter().any(|o| o.name == r.name) {
                errs.push(PluginArgsError::new(
                    format!("resources[{i}].name"),
                    format!("Duplicate value: {}", quoted(&r.name)),
                ));
            }
            if r.weight != 1 {
                errs.push(invalid(
                    format!("resources[{i}].weight"),
                    r.weight,
                    "must be 1",
                ));
            }
        }
        errs
    }
}

//! KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): decoding, v1 defaulting of
//! plugin sets (merge with the default MultiPoint list), validation, and building the profiles'
//! frameworks and the queue configuration.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kubeplane_core::features::FeatureGates;
use kubeplane_core::time::SimDuration;
use serde::Deserialize;
use thiserror::Error;

use crate::framework::{Framework, Plugin, PluginSet};
use crate::plugins::registry;
use crate::queue::{ProfileQueueConfig, QueueConfig};

/// A configuration error: the field path (as upstream prints it) and what is wrong.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{field}: {message}")]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

fn err(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        message: message.into(),
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeSchedulerConfiguration {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub parallelism: Option<i32>,
    #[serde(default)]
    pub percentage_of_nodes_to_score: Option<i32>,
    #[serde(default)]
    pub pod_initial_backoff_seconds: Option<i64>,
    #[serde(default)]
    pub pod_max_backoff_seconds: Option<i64>,
    #[serde(default)]
    pub profiles: Option<Vec<Profile>>,
    /// Accepted and ignored: they have no effect in a simulation.
    #[serde(default)]
    pub leader_election: Option<serde_json::Value>,
    #[serde(default)]
    pub client_connection: Option<serde_json::Value>,
    #[serde(default)]
    pub enable_profiling: Option<bool>,
    #[serde(default)]
    pub enable_contention_profiling: Option<bool>,
    #[serde(default)]
    pub delay_cache_until_active: Option<bool>,
    #[serde(default)]
    pub extenders: Option<Vec<serde_json::Value>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Profile {
    #[serde(default)]
    pub scheduler_name: Option<String>,
    #[serde(default)]
    pub percentage_of_nodes_to_score: Option<i32>,
    #[serde(default)]
    pub plugins: Option<Plugins>,
    #[serde(default)]
    pub plugin_config: Option<Vec<PluginConfig>>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Plugins {
    #[serde(default)]
    pub pre_enqueue: PluginSetConfig,
    #[serde(default)]
    pub queue_sort: PluginSetConfig,
    #[serde(default)]
    pub pre_filter: PluginSetConfig,
    #[serde(default)]
    pub filter: PluginSetConfig,
    #[serde(default)]
    pub post_filter: PluginSetConfig,
    #[serde(default)]
    pub pre_score: PluginSetConfig,
    #[serde(default)]
    pub score: PluginSetConfig,
    #[serde(default)]
    pub reserve: PluginSetConfig,
    #[serde(default)]
    pub permit: PluginSetConfig,
    #[serde(default)]
    pub pre_bind: PluginSetConfig,
    #[serde(default)]
    pub bind: PluginSetConfig,
    #[serde(default)]
    pub post_bind: PluginSetConfig,
    #[serde(default)]
    pub multi_point: PluginSetConfig,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginSetConfig {
    #[serde(default)]
    pub enabled: Vec<PluginRef>,
    #[serde(default)]
    pub disabled: Vec<PluginRef>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginRef {
    pub name: String,
    #[serde(default)]
    pub weight: Option<i32>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginConfig {
    pub name: String,
    #[serde(default)]
    pub args: Option<serde_json::Value>,
}

/// The resolved configuration of a run.
pub struct SchedulerSetup {
    pub frameworks: Vec<Framework>,
    pub queue: QueueConfig,
    pub percentage_of_nodes_to_score: i32,
}

/// Decodes a KubeSchedulerConfiguration document (strictly: unknown fields are errors).
pub fn decode(value: &serde_json::Value) -> Result<KubeSchedulerConfiguration, ConfigError> {
    let cfg: KubeSchedulerConfiguration = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        err(
            if path == "." { String::new() } else { path },
            e.inner().to_string(),
        )
    })?;
    if let Some(v) = &cfg.api_version {
        if v != "kubescheduler.config.k8s.io/v1" {
            return Err(err(
                "apiVersion",
                format!("unsupported version {v:?}, expected kubescheduler.config.k8s.io/v1"),
            ));
        }
    }
    Ok(cfg)
}

/// Upstream `mergePluginSet`: defaults minus disabled ("*" disables all), custom enabled ones
/// replacing defaults of the same name in place, the rest appended.
fn merge_plugin_set(defaults: &[PluginRef], custom: &PluginSetConfig) -> Vec<PluginRef> {
    let disabled: BTreeSet<&str> = custom.disabled.iter().map(|p| p.name.as_str()).collect();
    let mut replaced = BTreeSet::new();
    let mut out = Vec::new();
    if !disabled.contains("*") {
        for d in defaults {
            if disabled.contains(d.name.as_str()) {
                continue;
            }
            if let Some((i, c)) = custom
                .enabled
                .iter()
                .enumerate()
                .find(|(_, c)| c.name == d.name)
            {
                replaced.insert(i);
                out.push(c.clone());
            } else {
                out.push(d.clone());
            }
        }
    }
    for (i, c) in custom.enabled.iter().enumerate() {
        if !replaced.contains(&i) {
            out.push(c.clone());
        }
    }
    out
}

type Point = fn(&dyn Plugin) -> bool;

struct ExtensionPoint {
    name: &'static str,
    implements: Point,
}

const POINTS: [ExtensionPoint; 12] = [
    ExtensionPoint {
        name: "preEnqueue",
        implements: |p| p.as_pre_enqueue().is_some(),
    },
    ExtensionPoint {
        name: "queueSort",
        implements: |p| p.as_queue_sort().is_some(),
    },
    ExtensionPoint {
        name: "preFilter",
        implements: |p| p.as_pre_filter().is_some(),
    },
    ExtensionPoint {
        name: "filter",
        implements: |p| p.as_filter().is_some(),
    },
    ExtensionPoint {
        name: "postFilter",
        implements: |p| p.as_post_filter().is_some(),
    },
    ExtensionPoint {
        name: "preScore",
        implements: |p| p.as_pre_score().is_some(),
    },
    ExtensionPoint {
        name: "score",
        implements: |p| p.as_score().is_some(),
    },
    ExtensionPoint {
        name: "reserve",
        implements: |p| p.as_reserve().is_some(),
    },
    ExtensionPoint {
        name: "permit",
        implements: |p| p.as_permit().is_some(),
    },
    ExtensionPoint {
        name: "preBind",
        implements: |p| p.as_pre_bind().is_some(),
    },
    ExtensionPoint {
        name: "bind",
        implements: |p| p.as_bind().is_some(),
    },
    ExtensionPoint {
        name: "postBind",
        implements: |p| p.as_post_bind().is_some(),
    },
];

fn point_config<'a>(plugins: &'a Plugins, name: &str) -> &'a PluginSetConfig {
    match name {
        "preEnqueue" => &plugins.pre_enqueue,
        "queueSort" => &plugins.queue_sort,
        "preFilter" => &plugins.pre_filter,
        "filter" => &plugins.filter,
        "postFilter" => &plugins.post_filter,
        "preScore" => &plugins.pre_score,
        "score" => &plugins.score,
        "reserve" => &plugins.reserve,
        "permit" => &plugins.permit,
        "preBind" => &plugins.pre_bind,
        "bind" => &plugins.bind,
        "postBind" => &plugins.post_bind,
        _ => &plugins.multi_point,
    }
}

/// Builds one profile's framework (upstream `NewFramework` with `expandMultiPointPlugins`).
fn build_profile(
    i: usize,
    profile: &Profile,
    features: &FeatureGates,
) -> Result<Framework, ConfigError> {
    let path = format!("profiles[{i}]");
    let name = profile
        .scheduler_name
        .clone()
        .unwrap_or_else(|| crate::DEFAULT_SCHEDULER_NAME.to_string());
    if name.is_empty() {
        return Err(err(format!("{path}.schedulerName"), "Required value"));
    }
    if let Some(p) = profile.percentage_of_nodes_to_score {
        if !(0..=100).contains(&p) {
            return Err(err(
                format!("{path}.percentageOfNodesToScore"),
                format!("Invalid value: {p}: not in valid range [0-100]"),
            ));
        }
    }
    let custom = profile.plugins.clone().unwrap_or_default();
    let default_mp: Vec<PluginRef> = registry::default_multi_point(features.version())
        .into_iter()
        .map(|(n, w)| PluginRef {
            name: n.to_string(),
            weight: w,
        })
        .collect();
    let multi_point = merge_plugin_set(&default_mp, &custom.multi_point);
    // Plugin args: the configured ones, checked for duplicates.
    let mut args: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    for (j, pc) in profile.plugin_config.iter().flatten().enumerate() {
        let field = format!("{path}.pluginConfig[{j}]");
        if args.contains_key(&pc.name) {
            return Err(err(field, format!("Duplicate value: {:?}", pc.name)));
        }
        if !registry::is_known(&pc.name) {
            return Err(err(
                format!("{field}.name"),
                format!("plugin {:?} does not exist", pc.name),
            ));
        }
        args.insert(
            pc.name.clone(),
            pc.args.clone().unwrap_or(serde_json::Value::Null),
        );
    }
    // Instantiate every plugin named anywhere, once.
    let mut instances: BTreeMap<String, Arc<dyn Plugin>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut want = |n: &str, field: String| -> Result<(), ConfigError> {
        if instances.contains_key(n) {
            return Ok(());
        }
        if !registry::is_known(n) {
            return Err(err(field, format!("plugin {n:?} does not exist")));
        }
        let a = args.get(n).filter(|v| !v.is_null());
        let plugin = registry::new_plugin(n, a, features).map_err(|e| {
            let j = profile
                .plugin_config
                .iter()
                .flatten()
                .position(|pc| pc.name == n)
                .unwrap_or(0);
            let sub = if e.field.is_empty() {
                String::new()
            } else {
                format!(".{}", e.field)
            };
            err(format!("{path}.pluginConfig[{j}].args{sub}"), e.message)
        })?;
        instances.insert(n.to_string(), plugin);
        order.push(n.to_string());
        Ok(())
    };
    for (j, p) in multi_point.iter().enumerate() {
        want(
            &p.name,
            format!("{path}.plugins.multiPoint.enabled[{j}].name"),
        )?;
    }
    for point in &POINTS {
        for (j, p) in point_config(&custom, point.name).enabled.iter().enumerate() {
            want(
                &p.name,
                format!("{path}.plugins.{}.enabled[{j}].name", point.name),
            )?;
        }
    }
    let mut set = PluginSet::default();
    let mut weights: BTreeMap<String, i64> = BTreeMap::new();
    for point in &POINTS {
        let specific = point_config(&custom, point.name);
        let disabled: BTreeSet<&str> = specific.disabled.iter().map(|p| p.name.as_str()).collect();
        let specified: BTreeSet<&str> = specific.enabled.iter().map(|p| p.name.as_str()).collect();
        let mut overrides = Vec::new();
        let mut from_multi = Vec::new();
        if !disabled.contains("*") {
            for p in &multi_point {
                let inst = &instances[&p.name];
                if !(point.implements)(inst.as_ref()) || disabled.contains(p.name.as_str()) {
                    continue;
                }
                if specified.contains(p.name.as_str()) {
                    continue;
                }
                if from_multi
                    .iter()
                    .any(|(n, _): &(String, Option<i32>)| *n == p.name)
                {
                    return Err(err(
                        format!("{path}.plugins.multiPoint"),
                        format!("plugin {:?} already registered as {:?}", p.name, point.name),
                    ));
                }
                from_multi.push((p.name.clone(), p.weight));
            }
        }
        let mut others = Vec::new();
        for (j, p) in specific.enabled.iter().enumerate() {
            let inst = &instances[&p.name];
            if !(point.implements)(inst.as_ref()) {
                return Err(err(
                    format!("{path}.plugins.{}.enabled[{j}]", point.name),
                    format!("plugin {:?} does not extend {} plugin", p.name, point.name),
                ));
            }
            if multi_point.iter().any(|m| m.name == p.name) {
                overrides.push((p.name.clone(), p.weight));
            } else {
                others.push((p.name.clone(), p.weight));
            }
        }
        let ordered: Vec<(String, Option<i32>)> = overrides
            .into_iter()
            .chain(from_multi)
            .chain(others)
            .collect();
        let mut seen = BTreeSet::new();
        for (n, w) in &ordered {
            if !seen.insert(n.clone()) {
                return Err(err(
                    format!("{path}.plugins.{}", point.name),
                    format!("plugin {n:?} already registered as {:?}", point.name),
                ));
            }
            let inst = instances[n].clone();
            match point.name {
                "preEnqueue" => set.pre_enqueue.push(inst),
                "queueSort" => set.queue_sort.push(inst),
                "preFilter" => set.pre_filter.push(inst),
                "filter" => set.filter.push(inst),
                "postFilter" => set.post_filter.push(inst),
                "preScore" => set.pre_score.push(inst),
                "score" => {
                    let weight = w.unwrap_or(0) as i64;
                    if weight < 0 {
                        return Err(err(
                            format!("{path}.plugins.score"),
                            format!("plugin {n:?} has a negative weight {weight}"),
                        ));
                    }
                    let weight = if weight == 0 { 1 } else { weight };
                    weights.insert(n.clone(), weight);
                    set.score.push((inst, weight));
                }
                "reserve" => set.reserve.push(inst),
                "permit" => set.permit.push(inst),
                "preBind" => set.pre_bind.push(inst),
                "bind" => set.bind.push(inst),
                _ => set.post_bind.push(inst),
            }
        }
    }
    if set.queue_sort.len() != 1 {
        return Err(err(
            format!("{path}.plugins.queueSort"),
            "exactly one queue sort plugin must be enabled",
        ));
    }
    if set.bind.is_empty() {
        return Err(err(
            format!("{path}.plugins.bind"),
            "at least one bind plugin is needed",
        ));
    }
    let all_plugins = order.iter().map(|n| instances[n].clone()).collect();
    Ok(Framework {
        profile_name: name,
        plugins: set,
        all_plugins,
        percentage_of_nodes_to_score: profile.percentage_of_nodes_to_score,
    })
}

/// Resolves a configuration (or the defaults when `None`) into frameworks and a queue config.
pub fn resolve(
    cfg: Option<&KubeSchedulerConfiguration>,
    features: &FeatureGates,
) -> Result<SchedulerSetup, ConfigError> {
    let default_cfg = KubeSchedulerConfiguration::default();
    let cfg = cfg.unwrap_or(&default_cfg);
    if let Some(p) = cfg.parallelism {
        if p <= 0 {
            return Err(err(
                "parallelism",
                format!("Invalid value: {p}: should be an integer value greater than zero"),
            ));
        }
    }
    let percentage = cfg.percentage_of_nodes_to_score.unwrap_or(0);
    if !(0..=100).contains(&percentage) {
        return Err(err(
            "percentageOfNodesToScore",
            format!("Invalid value: {percentage}: not in valid range [0-100]"),
        ));
    }
    let initial = cfg.pod_initial_backoff_seconds.unwrap_or(1);
    let max = cfg.pod_max_backoff_seconds.unwrap_or(10);
    if initial <= 0 {
        return Err(err(
            "podInitialBackoffSeconds",
            format!("Invalid value: {initial}: must be greater than 0"),
        ));
    }
    if max < initial {
        return Err(err(
            "podMaxBackoffSeconds",
            format!(
                "Invalid value: {max}: must be greater than or equal to PodInitialBackoffSeconds"
            ),
        ));
    }
    if cfg.extenders.as_ref().is_some_and(|e| !e.is_empty()) {
        return Err(err(
            "extenders",
            "scheduler extenders are not supported by kubeplane",
        ));
    }
    let profiles = match &cfg.profiles {
        Some(p) if p.is_empty() => return Err(err("profiles", "Required value")),
        Some(p) => p.clone(),
        None => vec![Profile::default()],
    };
    let mut frameworks = Vec::new();
    let mut names = BTreeMap::new();
    for (i, p) in profiles.iter().enumerate() {
        let f = build_profile(i, p, features)?;
        if let Some(j) = names.insert(f.profile_name.clone(), i) {
            return Err(err(
                format!("profiles[{i}].schedulerName"),
                format!("Duplicate value: profiles[{j}].schedulerName"),
            ));
        }
        frameworks.push(f);
    }
    let queue_sort_name = frameworks[0].plugins.queue_sort[0].name();
    for (i, f) in frameworks.iter().enumerate().skip(1) {
        if f.plugins.queue_sort[0].name() != queue_sort_name {
            return Err(err(
                format!("profiles[{i}].plugins.queueSort"),
                "Invalid value: has to match for all profiles",
            ));
        }
    }
    let queue_profiles = frameworks
        .iter()
        .map(|f| {
            let mut q = ProfileQueueConfig::from_plugins(&f.all_plugins);
            // PreEnqueue plugins run in the configured order of the preEnqueue point.
            q.pre_enqueue = f.plugins.pre_enqueue.clone();
            (f.profile_name.clone(), q)
        })
        .collect();
    let queue = QueueConfig {
        initial_backoff: SimDuration::from_secs(initial),
        max_backoff: SimDuration::from_secs(max),
        pop_from_backoff_q: features.enabled("SchedulerPopFromBackoffQ"),
        queue_sort: frameworks[0].plugins.queue_sort[0].clone(),
        profiles: queue_profiles,
    };
    Ok(SchedulerSetup {
        frameworks,
        queue,
        percentage_of_nodes_to_score: percentage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(yaml: &str) -> Result<SchedulerSetup, ConfigError> {
        let value: serde_json::Value = serde_yaml_ng::from_str(yaml).expect("test YAML parses");
        let cfg = decode(&value)?;
        resolve(Some(&cfg), &FeatureGates::default())
    }

    fn names(list: &[Arc<dyn Plugin>]) -> Vec<&'static str> {
        list.iter().map(|p| p.name()).collect()
    }

    fn scores(f: &Framework) -> Vec<(&'static str, i64)> {
        f.plugins
            .score
            .iter()
            .map(|(p, w)| (p.name(), *w))
            .collect()
    }

    #[test]
    fn the_default_profile_has_the_upstream_filter_order_and_score_weights() {
        let s = resolve(None, &FeatureGates::default()).unwrap();
        let f = &s.frameworks[0];
        assert_eq!(f.profile_name, "default-scheduler");
        let filters = names(&f.plugins.filter);
        let pos = |n: &str| filters.iter().position(|p| *p == n).unwrap();
        assert!(pos("NodeUnschedulable") < pos("NodeName"));
        assert!(pos("NodeName") < pos("TaintToleration"));
        assert!(pos("TaintToleration") < pos("NodeAffinity"));
        assert!(pos("NodeAffinity") < pos("NodePorts"));
        assert!(pos("NodePorts") < pos("NodeResourcesFit"));
        let weights: BTreeMap<_, _> = scores(f).into_iter().collect();
        assert_eq!(weights["TaintToleration"], 3);
        assert_eq!(weights["NodeAffinity"], 2);
        assert_eq!(weights["NodeResourcesFit"], 1);
        assert_eq!(weights["NodeResourcesBalancedAllocation"], 1);
        assert_eq!(weights["ImageLocality"], 1);
        assert_eq!(names(&f.plugins.queue_sort), ["PrioritySort"]);
        assert_eq!(names(&f.plugins.bind), ["DefaultBinder"]);
        assert_eq!(s.queue.initial_backoff, SimDuration::from_secs(1));
        assert_eq!(s.queue.max_backoff, SimDuration::from_secs(10));
    }

    #[test]
    fn disabling_a_plugin_in_multi_point_removes_it_from_every_extension_point() {
        let s = setup(
            "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: TaintToleration}]\n",
        )
        .unwrap();
        let f = &s.frameworks[0];
        assert!(!names(&f.plugins.filter).contains(&"TaintToleration"));
        assert!(!scores(f).iter().any(|(n, _)| *n == "TaintToleration"));
    }

    #[test]
    fn disabling_all_score_plugins_keeps_the_filters_and_enables_the_listed_ones_only() {
        let s = setup(
            "profiles:\n- schedulerName: packer\n  plugins:\n    score:\n      disabled: [{name: '*'}]\n      enabled: [{name: ImageLocality, weight: 5}]\n",
        )
        .unwrap();
        let f = &s.frameworks[0];
        assert_eq!(f.profile_name, "packer");
        assert_eq!(scores(f), [("ImageLocality", 5)]);
        assert!(names(&f.plugins.filter).contains(&"NodeResourcesFit"));
    }

    #[test]
    fn a_multi_point_weight_overrides_the_default_weight_in_place() {
        let s = setup(
            "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: ImageLocality, weight: 7}]\n",
        )
        .unwrap();
        let weights: BTreeMap<_, _> = scores(&s.frameworks[0]).into_iter().collect();
        assert_eq!(weights["ImageLocality"], 7);
        assert_eq!(weights["TaintToleration"], 3);
    }

    #[test]
    fn two_profiles_schedule_pods_by_scheduler_name() {
        let s = setup("profiles:\n- schedulerName: a\n- schedulerName: b\n").unwrap();
        let profiles: Vec<&str> = s
            .frameworks
            .iter()
            .map(|f| f.profile_name.as_str())
            .collect();
        assert_eq!(profiles, ["a", "b"]);
        assert!(s.queue.profiles.contains_key("a") && s.queue.profiles.contains_key("b"));
    }

    #[test]
    fn invalid_configurations_name_the_field_at_fault() {
        let cases = [
            ("an unknown plugin", "profiles:\n- plugins:\n    filter:\n      enabled: [{name: NoSuchPlugin}]\n", "profiles[0].plugins.filter.enabled[0].name"),
            ("a duplicate scheduler name", "profiles:\n- schedulerName: a\n- schedulerName: a\n", "profiles[1].schedulerName"),
            ("a percentage above 100", "percentageOfNodesToScore: 101\n", "percentageOfNodesToScore"),
            ("a max backoff below the initial one", "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n", "podMaxBackoffSeconds"),
            ("an unknown field", "profiles:\n- schedulerName: a\n  bogus: 1\n", "profiles[0]"),
            (
                "a negative resource weight",
                "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: LeastAllocated\n        resources: [{name: cpu, weight: -1}]\n",
                "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
            ),
            ("a duplicate plugin config", "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n  - name: NodeAffinity\n", "profiles[0].pluginConfig[1]"),
            ("an empty profile list", "profiles: []\n", "profiles"),
        ];
        for (what, yaml, field) in cases {
            let err = setup(yaml)
                .err()
                .unwrap_or_else(|| panic!("{what}: accepted"));
            assert!(err.field.starts_with(field), "{what}: {err}");
        }
    }
}

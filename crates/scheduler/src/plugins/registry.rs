//! The plugin registry: builds an in-tree plugin by name from its JSON args (as the v1
//! `pluginConfig` gives them), and lists the default profile's plugins (upstream
//! `plugins/registry.go` and `apis/config/v1/default_plugins.go`).

use std::sync::Arc;

use kubeplane_core::features::FeatureGates;

use crate::framework::Plugin;
use crate::plugins::args::PluginArgsError;
use crate::plugins::{
    defaultbinder, defaultpreemption, imagelocality, interpodaffinity, nodeaffinity, nodename,
    nodeports, noderesources, nodeunschedulable, podtopologyspread, queuesort, schedulinggates,
    tainttoleration,
};

/// The names of the plugins kubeplane implements.
const KNOWN: &[&str] = &[
    queuesort::NAME,
    schedulinggates::NAME,
    nodeunschedulable::NAME,
    nodename::NAME,
    tainttoleration::NAME,
    nodeaffinity::NAME,
    nodeports::NAME,
    noderesources::fit::NAME,
    noderesources::balanced_allocation::NAME,
    imagelocality::NAME,
    podtopologyspread::NAME,
    interpodaffinity::NAME,
    defaultpreemption::NAME,
    defaultbinder::NAME,
];

/// Whether kubeplane implements a plugin of this name.
pub fn is_known(name: &str) -> bool {
    KNOWN.contains(&name)
}

/// Builds the plugin `name` from its args. Plugins without args ignore any args given, as
/// upstream's factories do; an unknown name is an error.
pub fn new_plugin(
    name: &str,
    args: Option<&serde_json::Value>,
    features: &FeatureGates,
) -> Result<Arc<dyn Plugin>, PluginArgsError> {
    let plugin: Arc<dyn Plugin> = match name {
        queuesort::NAME => Arc::new(queuesort::PrioritySort),
        schedulinggates::NAME => Arc::new(schedulinggates::SchedulingGates),
        nodeunschedulable::NAME => Arc::new(nodeunschedulable::NodeUnschedulable),
        nodename::NAME => Arc::new(nodename::NodeName),
        tainttoleration::NAME => Arc::new(tainttoleration::TaintToleration::new(features)),
        nodeaffinity::NAME => Arc::new(nodeaffinity::NodeAffinity::new(args)?),
        nodeports::NAME => Arc::new(nodeports::NodePorts),
        noderesources::fit::NAME => Arc::new(noderesources::Fit::new(args, features)?),
        noderesources::balanced_allocation::NAME => {
            Arc::new(noderesources::BalancedAllocation::new(args, features)?)
        }
        imagelocality::NAME => Arc::new(imagelocality::ImageLocality::new(features.version())),
        podtopologyspread::NAME => {
            Arc::new(podtopologyspread::PodTopologySpread::new(args, features)?)
        }
        interpodaffinity::NAME => Arc::new(interpodaffinity::InterPodAffinity::new(args)?),
        defaultpreemption::NAME => {
            Arc::new(defaultpreemption::DefaultPreemption::new(args, features)?)
        }
        defaultbinder::NAME => Arc::new(defaultbinder::DefaultBinder),
        other => {
            return Err(PluginArgsError::new(
                "",
                format!(
                    "plugin {other:?} does not exist (kubeplane implements: {})",
                    KNOWN.join(", ")
                ),
            ))
        }
    };
    Ok(plugin)
}

/// The v1.34 default `multiPoint` plugins kubeplane implements, in upstream order, with their
/// score weights (`None`: no explicit weight, 1 for a score plugin).
pub fn default_multi_point() -> Vec<(&'static str, Option<i32>)> {
    vec![
        (schedulinggates::NAME, None),
        (queuesort::NAME, None),
        (nodeunschedulable::NAME, None),
        (nodename::NAME, None),
        (tainttoleration::NAME, Some(3)),
        (nodeaffinity::NAME, Some(2)),
        (nodeports::NAME, None),
        (noderesources::fit::NAME, Some(1)),
        // VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone: not implemented
        // (kubeplane simulates no volumes).
        (podtopologyspread::NAME, Some(2)),
        (interpodaffinity::NAME, Some(2)),
        // DynamicResources (DRA, on by default in v1.34) would go here: not implemented.
        (defaultpreemption::NAME, None),
        (noderesources::balanced_allocation::NAME, Some(1)),
        (imagelocality::NAME, Some(1)),
        (defaultbinder::NAME, None),
    ]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_default_plugin_is_known_and_builds_with_default_args() {
        let features = FeatureGates::default();
        for (name, _) in default_multi_point() {
            assert!(is_known(name), "{name}");
            let pl = new_plugin(name, None, &features).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(pl.name(), name);
        }
    }

    #[test]
    fn an_unknown_plugin_is_an_error() {
        assert!(!is_known("NoSuchPlugin"));
        assert!(new_plugin("NoSuchPlugin", None, &FeatureGates::default()).is_err());
    }

    #[test]
    fn args_errors_name_the_field() {
        let f = FeatureGates::default();
        let args = json!({"scoringStrategy": {"type": "LeastAllocated",
            "resources": [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}]}});
        let err = new_plugin("NodeResourcesFit", Some(&args), &f)
            .err()
            .unwrap();
        assert_eq!(err.field, "scoringStrategy.resources[0].weight");
        assert!(err.to_string().contains("weight"), "{err}");

        let err = new_plugin(
            "NodeResourcesFit",
            Some(&json!({"scoringStrategy": {"type": "LeastAllocated",
            "resources": [{"name": "cpu", "weight": "x"}]}})),
            &f,
        )
        .err()
        .unwrap();
        assert!(
            err.field.contains("weight"),
            "decoding errors name the field too: {err}"
        );

        let err = new_plugin(
            "NodeResourcesFit",
            Some(&json!({"ignoredResourcez": []})),
            &f,
        )
        .err()
        .unwrap();
        assert!(
            err.message.contains("ignoredResourcez"),
            "unknown fields are rejected: {err}"
        );
    }

    #[test]
    fn default_weights_follow_upstream() {
        let weights: Vec<(&str, Option<i32>)> = default_multi_point()
            .into_iter()
            .filter(|(_, w)| w.is_some())
            .collect();
        assert_eq!(
            weights,
            vec![
                ("TaintToleration", Some(3)),
                ("NodeAffinity", Some(2)),
                ("NodeResourcesFit", Some(1)),
                ("PodTopologySpread", Some(2)),
                ("InterPodAffinity", Some(2)),
                ("NodeResourcesBalancedAllocation", Some(1)),
                ("ImageLocality", Some(1)),
            ]
        );
    }
}

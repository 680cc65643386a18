//! The plugin registry: builds an in-tree plugin by name from its JSON args (as the v1
//! `pluginConfig` gives them), and lists the default profile's plugins (upstream
//! `plugins/registry.go` and `apis/config/v1/default_plugins.go`).

use std::sync::Arc;

use kubeplane_core::features::FeatureGates;
use kubeplane_core::version::KubeVersion;

use crate::framework::Plugin;
use crate::plugins::args::PluginArgsError;
use crate::plugins::{
    defaultbinder, defaultpreemption, imagelocality, interpodaffinity, nodeaffinity,
    nodedeclaredfeatures, nodename, nodeports, noderesources, nodeunschedulable, podtopologyspread,
    queuesort, schedulinggates, tainttoleration,
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
    nodedeclaredfeatures::NAME,
    defaultpreemption::NAME,
    defaultbinder::NAME,
];

/// Whether kubeplane implements a plugin of this name.
pub fn is_known(name: &str) -> bool {
    KNOWN.contains(&name)
}

/// Whether the plugin `name` exists in a release: NodeDeclaredFeatures only from v1.35.
fn exists_in(name: &str, version: KubeVersion) -> bool {
    name != nodedeclaredfeatures::NAME || version >= nodedeclaredfeatures::FIRST_RELEASE
}

/// Builds the plugin `name` from its args. Plugins without args ignore any args given, as
/// upstream's factories do; an unknown name, or one the release does not have, is an error.
pub fn new_plugin(
    name: &str,
    args: Option<&serde_json::Value>,
    features: &FeatureGates,
) -> Result<Arc<dyn Plugin>, PluginArgsError> {
    if !exists_in(name, features.version()) {
        return Err(PluginArgsError::new(
            "",
            format!(
                "plugin {name:?} does not exist in Kubernetes {} (it was added in {})",
                features.version(),
                nodedeclaredfeatures::FIRST_RELEASE
            ),
        ));
    }
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
        nodedeclaredfeatures::NAME => {
            Arc::new(nodedeclaredfeatures::NodeDeclaredFeatures::new(features))
        }
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

/// The default `multiPoint` plugins kubeplane implements in a release, in upstream order, with
/// their score weights (`None`: no explicit weight, 1 for a score plugin). From v1.35 the list
/// has NodeDeclaredFeatures, which does nothing unless its gate is on; [uncertain] its place:
/// the stored `default_plugins.go` copies predate it, kubeplane puts it after the other filters
/// (only the reason of a node that several filters refuse depends on it).
pub fn default_multi_point(version: KubeVersion) -> Vec<(&'static str, Option<i32>)> {
    let mut list = vec![
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
    ];
    if exists_in(nodedeclaredfeatures::NAME, version) {
        let at = list
            .iter()
            .position(|(n, _)| *n == defaultpreemption::NAME)
            .unwrap_or(list.len());
        list.insert(at, (nodedeclaredfeatures::NAME, None));
    }
    list
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_default_plugin_is_known_and_builds_with_default_args() {
        let features = FeatureGates::default();
        for (name, _) in default_multi_point(features.version()) {
            assert!(is_known(name), "{name}");
            let pl = new_plugin(name, None, &features).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(pl.name(), name);
        }
    }

    #[test]
    fn node_declared_features_is_a_default_plugin_from_v1_35_only() {
        let names = |v: &str| -> Vec<&str> {
            let v: KubeVersion = v.parse().unwrap();
            default_multi_point(v).into_iter().map(|(n, _)| n).collect()
        };
        assert!(!names("1.34.7").contains(&"NodeDeclaredFeatures"));
        for v in ["1.35.0", "1.36.0", "1.37.0"] {
            let n = names(v);
            let at = n.iter().position(|&p| p == "NodeDeclaredFeatures");
            assert_eq!(
                at,
                n.iter()
                    .position(|&p| p == "DefaultPreemption")
                    .map(|i| i - 1),
                "{v}"
            );
            let gates = FeatureGates::for_version(v.parse().unwrap());
            for name in n {
                assert!(new_plugin(name, None, &gates).is_ok(), "{name} in {v}");
            }
        }
        let err = new_plugin("NodeDeclaredFeatures", None, &FeatureGates::default())
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .contains("does not exist in Kubernetes v1.34.1"),
            "{err}"
        );
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
        let weights: Vec<(&str, Option<i32>)> = default_multi_point(KubeVersion::default())
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

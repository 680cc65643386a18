//! PodTopologySpread (PreFilter with AddPod/RemovePod, Filter, PreScore, Score): a pod's
//! `topologySpreadConstraints` (or the scheduler's default constraints) bound how unevenly
//! matching pods may spread over topology domains; hard constraints filter, soft ones score
//! (upstream `plugins/podtopologyspread/`).

mod filtering;
mod score_counts;
mod scoring;
#[cfg(test)]
mod scoring_tests;
mod soft_defaults;
#[cfg(test)]
mod tests;

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{Node, PodSpec, TopologySpreadConstraint};
use kubeplane_core::features::FeatureGates;
use kubeplane_core::labels::{from_optional, is_qualified_name, Requirement, Selector};
use kubeplane_core::nodeaffinity::RequiredNodeAffinity;
use kubeplane_core::taints::find_untolerated_taint;
use serde::Deserialize;

use crate::cache::Snapshot;
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, EventObject, EventResource, FilterPlugin,
    Plugin, PreFilterPlugin, PreScorePlugin, QueueingHint, ScorePlugin,
};
use crate::plugins::args::{parse_args, PluginArgsError};
use crate::plugins::helper::{node_event, pod_event, uid_of};

pub const NAME: &str = "PodTopologySpread";

/// Filter reason when placing the pod would exceed a constraint's maxSkew.
pub const REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
/// Filter reason when the node lacks a constraint's topology key.
pub const REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
pub const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
pub const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";
const HONOR: &str = "Honor";

/// `defaultingType`: the built-in defaults, or the configured list.
pub const SYSTEM_DEFAULTING: &str = "System";
pub const LIST_DEFAULTING: &str = "List";

/// `PodTopologySpreadArgs` (kubescheduler.config.k8s.io/v1).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodTopologySpreadArgs {
    #[serde(default)]
    pub default_constraints: Vec<TopologySpreadConstraint>,
    /// `System` (default) or `List`.
    #[serde(default)]
    pub defaulting_type: Option<String>,
}

/// The system default constraints: hostname with maxSkew 3 and zone with maxSkew 5, both
/// ScheduleAnyway.
pub fn system_default_constraints() -> Vec<TopologySpreadConstraint> {
    vec![
        TopologySpreadConstraint {
            topology_key: LABEL_HOSTNAME.into(),
            when_unsatisfiable: SCHEDULE_ANYWAY.into(),
            max_skew: 3,
            ..Default::default()
        },
        TopologySpreadConstraint {
            topology_key: LABEL_ZONE.into(),
            when_unsatisfiable: SCHEDULE_ANYWAY.into(),
            max_skew: 5,
            ..Default::default()
        },
    ]
}

/// A constraint with its selector compiled and its defaults applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Constraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub selector: Selector,
    /// 1 unless set.
    pub min_domains: i32,
    /// `nodeAffinityPolicy: Honor` (the default): only nodes matching the pod's node
    /// selector and required affinity count.
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (default Ignore): only nodes whose NoSchedule/NoExecute
    /// taints the pod tolerates count.
    pub honor_node_taints: bool,
}

impl Constraint {
    /// Whether the node counts for this constraint under its inclusion policies.
    pub fn matches_node_inclusion_policies(
        &self,
        pod: &PodSpec,
        node: &Node,
        required: &RequiredNodeAffinity,
    ) -> bool {
        static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
        if self.honor_node_affinity {
            let name = node.metadata.name.as_deref().unwrap_or("");
            let labels = node.metadata.labels.as_ref().unwrap_or(&NO_LABELS);
            if !required.matches(name, labels) {
                return false;
            }
        }
        if self.honor_node_taints {
            let taints = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_deref())
                .unwrap_or(&[]);
            let tols = pod.tolerations.as_deref().unwrap_or(&[]);
            if find_untolerated_taint(taints, tols, |t| {
                t.effect == "NoSchedule" || t.effect == "NoExecute"
            })
            .is_some()
            {
                return false;
            }
        }
        true
    }
}

/// Whether the node has every constraint's topology key.
pub(crate) fn node_labels_match_constraints(
    labels: &BTreeMap<String, String>,
    constraints: &[Constraint],
) -> bool {
    constraints
        .iter()
        .all(|c| labels.contains_key(&c.topology_key))
}

pub struct PodTopologySpread {
    default_constraints: Vec<TopologySpreadConstraint>,
    system_defaulted: bool,
    enable_match_label_keys: bool,
    /// PreFilter's per-node counts, kept across cycles (see [`crate::plugins::memo`]).
    filter_memo: Mutex<filtering::FilterMemo>,
    /// PreScore's per-node entries and domain counts, kept across cycles.
    score_memo: Mutex<scoring::ScoreMemos>,
    /// Ids of the domains (topology values) the score memo's entries know.
    score_domains: Mutex<scoring::DomainIds>,
}

impl Clone for PodTopologySpread {
    /// The configuration; the copy starts with empty memos.
    fn clone(&self) -> Self {
        PodTopologySpread {
            default_constraints: self.default_constraints.clone(),
            system_defaulted: self.system_defaulted,
            enable_match_label_keys: self.enable_match_label_keys,
            filter_memo: Mutex::default(),
            score_memo: Mutex::default(),
            score_domains: Mutex::default(),
        }
    }
}

impl std::fmt::Debug for PodTopologySpread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodTopologySpread")
            .field("default_constraints", &self.default_constraints)
            .field("system_defaulted", &self.system_defaulted)
            .finish_non_exhaustive()
    }
}

impl PodTopologySpread {
    /// Builds the plugin from its args, defaulted (`defaultingType: System`) and validated as
    /// upstream `ValidatePodTopologySpreadArgs`.
    pub fn new(
        args: Option<&serde_json::Value>,
        features: &FeatureGates,
    ) -> Result<PodTopologySpread, PluginArgsError> {
        let args: PodTopologySpreadArgs = parse_args(args)?;
        validate_args(&args)?;
        let system =
            args.defaulting_type.as_deref().unwrap_or(SYSTEM_DEFAULTING) == SYSTEM_DEFAULTING;
        Ok(PodTopologySpread {
            default_constraints: if system {
                system_default_constraints()
            } else {
                args.default_constraints
            },
            system_defaulted: system,
            enable_match_label_keys: features.enabled("MatchLabelKeysInPodTopologySpread"),
            filter_memo: Mutex::default(),
            score_memo: Mutex::default(),
            score_domains: Mutex::default(),
        })
    }

    /// Compiles the constraints with `action` (upstream `filterTopologySpreadConstraints`):
    /// `matchLabelKeys` add `key in (value)` for the keys the pod has.
    pub(crate) fn filter_constraints(
        &self,
        constraints: &[TopologySpreadConstraint],
        pod_labels: &BTreeMap<String, String>,
        action: &str,
    ) -> Result<Vec<Constraint>, String> {
        let mut out = Vec::new();
        for c in constraints
            .iter()
            .filter(|c| c.when_unsatisfiable == action)
        {
            let mut selector =
                from_optional(c.label_selector.as_ref()).map_err(|e| e.to_string())?;
            if self.enable_match_label_keys {
                for key in c.match_label_keys.iter().flatten() {
                    if let Some(v) = pod_labels.get(key) {
                        let r = Requirement::new(
                            key,
                            kubeplane_core::labels::Operator::Equals,
                            vec![v.clone()],
                        )
                        .map_err(|e| e.to_string())?;
                        selector = selector.with_requirement(r);
                    }
                }
            }
            out.push(Constraint {
                max_skew: c.max_skew,
                topology_key: c.topology_key.clone(),
                selector,
                min_domains: c.min_domains.unwrap_or(1),
                honor_node_affinity: c.node_affinity_policy.as_deref().unwrap_or(HONOR) == HONOR,
                honor_node_taints: c.node_taints_policy.as_deref() == Some(HONOR),
            });
        }
        Ok(out)
    }

    /// The default constraints with `action`, selecting the pods of the ReplicaSet that
    /// controls the pod; none when nothing selects it (upstream `buildDefaultConstraints`; kubeplane
    /// has no Services, ReplicationControllers or StatefulSets).
    fn default_constraints_for(
        &self,
        pod: &StoredPod,
        action: &str,
        snapshot: Option<&Snapshot>,
    ) -> Result<Vec<Constraint>, String> {
        static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
        if !self
            .default_constraints
            .iter()
            .any(|c| c.when_unsatisfiable == action)
        {
            return Ok(Vec::new());
        }
        let Some(snapshot) = snapshot else {
            return Err("the default constraints' selector needs the ReplicaSets".into());
        };
        // The selector first: most pods have none, and then nothing else is needed.
        let selector = default_selector(pod, snapshot);
        if selector.is_empty() {
            return Ok(Vec::new());
        }
        let labels = pod.labels().unwrap_or(&NO_LABELS);
        let mut constraints = self.filter_constraints(&self.default_constraints, labels, action)?;
        for c in &mut constraints {
            c.selector = selector.clone();
        }
        Ok(constraints)
    }

    /// The pod's constraints with `action`, or the default ones when it has none (upstream
    /// `getConstraints` for DoNotSchedule).
    pub(crate) fn constraints(
        &self,
        pod: &StoredPod,
        action: &str,
        snapshot: Option<&Snapshot>,
    ) -> Result<Vec<Constraint>, String> {
        static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
        let spec_constraints = pod
            .spec
            .as_ref()
            .and_then(|s| s.topology_spread_constraints.as_deref())
            .unwrap_or(&[]);
        if !spec_constraints.is_empty() {
            let labels = pod.labels().unwrap_or(&NO_LABELS);
            return self.filter_constraints(spec_constraints, labels, action);
        }
        self.default_constraints_for(pod, action, snapshot)
    }
}

/// The selector of the ReplicaSet (apps/v1) that controls the pod, empty when there is none
/// (upstream `helper.DefaultSelector`).
fn default_selector(pod: &StoredPod, snapshot: &Snapshot) -> Selector {
    let owner = pod
        .owner_references()
        .into_iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let Some(owner) = owner else {
        return Selector::everything();
    };
    if owner.kind != "ReplicaSet" || owner.api_version != "apps/v1" {
        return Selector::everything();
    }
    let key = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        owner.name
    );
    match snapshot.replica_sets.get(&key) {
        Some(Some(sel)) => Selector::from_requirements(sel.requirements().to_vec()),
        _ => Selector::everything(),
    }
}

/// The number of pods on a node in `namespace` that the selector matches, terminating pods
/// excluded (upstream `countPodsMatchSelector`).
pub(crate) fn count_pods_match_selector(
    pods: &[std::sync::Arc<crate::framework::PodInfo>],
    selector: &Selector,
    namespace: &str,
) -> i32 {
    let mut n = 0;
    for p in pods {
        if p.namespace() != namespace || p.is_terminating() {
            continue;
        }
        if selector.matches(p.labels()) {
            n += 1;
        }
    }
    n
}

fn invalid(field: String, message: String) -> PluginArgsError {
    PluginArgsError::new(field, message)
}

/// Upstream `ValidatePodTopologySpreadArgs`: the first error.
fn validate_args(args: &PodTopologySpreadArgs) -> Result<(), PluginArgsError> {
    let ty = args.defaulting_type.as_deref().unwrap_or(SYSTEM_DEFAULTING);
    if ty != SYSTEM_DEFAULTING && ty != LIST_DEFAULTING {
        return Err(invalid(
            "defaultingType".into(),
            format!("Unsupported value: {ty:?}: supported values: \"System\", \"List\""),
        ));
    }
    if ty == SYSTEM_DEFAULTING && !args.default_constraints.is_empty() {
        return Err(invalid(
            "defaultingType".into(),
            format!("Invalid value: {ty:?}: when .defaultConstraints are not empty"),
        ));
    }
    for (i, c) in args.default_constraints.iter().enumerate() {
        let p = format!("defaultConstraints[{i}]");
        if c.max_skew <= 0 {
            return Err(invalid(
                format!("{p}.maxSkew"),
                format!("Invalid value: {}: not in valid range (0, inf)", c.max_skew),
            ));
        }
        if c.topology_key.is_empty() {
            return Err(invalid(
                format!("{p}.topologyKey"),
                "Required value: can not be empty".into(),
            ));
        }
        if let Err(e) = is_qualified_name(&c.topology_key) {
            return Err(invalid(
                format!("{p}.topologyKey"),
                format!("Invalid value: {:?}: {e}", c.topology_key),
            ));
        }
        if c.when_unsatisfiable.is_empty() {
            return Err(invalid(
                format!("{p}.whenUnsatisfiable"),
                "Required value: can not be empty".into(),
            ));
        }
        if c.when_unsatisfiable != DO_NOT_SCHEDULE && c.when_unsatisfiable != SCHEDULE_ANYWAY {
            return Err(invalid(
                format!("{p}.whenUnsatisfiable"),
                format!(
                    "Unsupported value: {:?}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
                    c.when_unsatisfiable
                ),
            ));
        }
        if c.label_selector.is_some() {
            return Err(invalid(
                format!("{p}.labelSelector"),
                "Forbidden: constraint must not define a selector, as they deduced for each pod"
                    .into(),
            ));
        }
        let repeated = args.default_constraints[..i].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        });
        if repeated {
            return Err(invalid(
                format!("defaultConstraints[{i}]"),
                format!(
                    "Duplicate value: \"{{{}, {}}}\"",
                    c.topology_key, c.when_unsatisfiable
                ),
            ));
        }
    }
    Ok(())
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        // With queueing hints (GA in v1.34): Pod Add|UpdatePodLabel|UpdatePodToleration|Delete
        // and Node Add|Delete|UpdateNodeLabel|UpdateNodeTaint.
        let pl = self.clone();
        let pl2 = self.clone();
        Some(vec![
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(
                    EventResource::Pod,
                    ActionType::ADD
                        | ActionType::UPDATE_POD_LABEL
                        | ActionType::UPDATE_POD_TOLERATION
                        | ActionType::DELETE,
                    "PodAdd|UpdatePodLabel|UpdatePodToleration|Delete",
                ),
                move |pod, old, new| pl.is_schedulable_after_pod_change(pod, old, new),
            ),
            ClusterEventWithHint::with_hint(
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD
                        | ActionType::DELETE
                        | ActionType::UPDATE_NODE_LABEL
                        | ActionType::UPDATE_NODE_TAINT,
                    "NodeAdd|Delete|UpdateNodeLabel|UpdateNodeTaint",
                ),
                move |pod, old, new| pl2.is_schedulable_after_node_change(pod, old, new),
            ),
        ])
    }
}

fn labels_of(p: &StoredPod) -> &BTreeMap<String, String> {
    static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
    p.labels().unwrap_or(&NO_LABELS)
}

fn taints_of(n: &Node) -> &[k8s_openapi::api::core::v1::Taint] {
    n.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
}

fn node_labels_of(n: &Node) -> &BTreeMap<String, String> {
    static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
    n.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// Whether `other` takes part in the spreading of `pod`: the pod itself, or an assigned pod in
/// its namespace.
fn involved_in_spreading(other: &StoredPod, pod: &StoredPod) -> bool {
    uid_of(other) == uid_of(pod)
        || (other.node_name().is_some_and(|n| !n.is_empty())
            && other.metadata.namespace == pod.metadata.namespace)
}

impl PodTopologySpread {
    /// Queue when an assigned pod in the pod's namespace that a constraint selects is added or
    /// deleted, when an update changes whether a constraint selects it, or when the pod itself
    /// got new tolerations and a constraint honors taints.
    fn is_schedulable_after_pod_change(
        &self,
        pod: &StoredPod,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
    ) -> Result<QueueingHint, String> {
        let (old, new) = pod_event(old, new)?;
        if new.is_some_and(|p| !involved_in_spreading(p, pod))
            || old.is_some_and(|p| !involved_in_spreading(p, pod))
        {
            return Ok(QueueingHint::QueueSkip);
        }
        let constraints = self.constraints(pod, DO_NOT_SCHEDULE, None)?;
        let any_selects = |labels: &BTreeMap<String, String>| {
            constraints.iter().any(|c| c.selector.matches(labels))
        };
        match (old, new) {
            (Some(old), Some(new)) => {
                // Semantic equality: an absent list equals an empty one.
                fn tolerations(p: &StoredPod) -> &[k8s_openapi::api::core::v1::Toleration] {
                    p.spec
                        .as_ref()
                        .and_then(|s| s.tolerations.as_deref())
                        .unwrap_or(&[])
                }
                if uid_of(new) == uid_of(pod)
                    && tolerations(new) != tolerations(old)
                    && constraints.iter().any(|c| c.honor_node_taints)
                {
                    return Ok(QueueingHint::Queue);
                }
                if labels_of(old) == labels_of(new) {
                    return Ok(QueueingHint::QueueSkip);
                }
                let changed = constraints.iter().any(|c| {
                    c.selector.matches(labels_of(old)) != c.selector.matches(labels_of(new))
                });
                Ok(if changed {
                    QueueingHint::Queue
                } else {
                    QueueingHint::QueueSkip
                })
            }
            (None, Some(p)) | (Some(p), None) => Ok(if any_selects(labels_of(p)) {
                QueueingHint::Queue
            } else {
                QueueingHint::QueueSkip
            }),
            (None, None) => Ok(QueueingHint::Queue),
        }
    }

    /// Queue when a node starts or stops having all the topology keys, or one that has them
    /// changes a key's value or its taints; an added (deleted) node counts when it has (had)
    /// them.
    fn is_schedulable_after_node_change(
        &self,
        pod: &StoredPod,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
    ) -> Result<QueueingHint, String> {
        let constraints = self.constraints(pod, DO_NOT_SCHEDULE, None)?;
        let (old, new) = match new.and_then(EventObject::as_node) {
            Some(_) => {
                let (o, n) = node_event(old, new)?;
                (o, Some(n))
            }
            None => (
                old.and_then(EventObject::as_node)
                    .map(Some)
                    .ok_or("expected a Node as the old object of the event")?,
                None,
            ),
        };
        let matching = |n: &Node| node_labels_match_constraints(node_labels_of(n), &constraints);
        let hint = match (old, new) {
            (Some(o), Some(n)) => {
                let (om, nm) = (matching(o), matching(n));
                let key_changed = constraints.iter().any(|c| {
                    node_labels_of(o).get(&c.topology_key) != node_labels_of(n).get(&c.topology_key)
                });
                // Starts or stops matching, or still matches with other values or taints.
                if om != nm || (nm && (key_changed || taints_of(o) != taints_of(n))) {
                    QueueingHint::Queue
                } else {
                    QueueingHint::QueueSkip
                }
            }
            (None, Some(n)) | (Some(n), None) => {
                if matching(n) {
                    QueueingHint::Queue
                } else {
                    QueueingHint::QueueSkip
                }
            }
            (None, None) => QueueingHint::Queue,
        };
        Ok(hint)
    }
}

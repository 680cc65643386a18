//! NodeAffinity (PreFilter, Filter, PreScore, Score): a pod's `nodeSelector` and required node
//! affinity must match the node, preferred terms add their weights to its score; the plugin's
//! `addedAffinity` args apply to every pod (upstream `plugins/nodeaffinity/node_affinity.go`).

use k8s_openapi::api::core::v1::Node;
use kubeplane_api::StoredPod;
use kubeplane_core::nodeaffinity::{
    required_node_names, NodeNameRestriction, NodeSelectorMatcher, PreferredNodeAffinity,
    RequiredNodeAffinity,
};
use serde::Deserialize;

use crate::cache::Snapshot;
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EventObject, EventResource,
    FilterPlugin, NodeInfo, Plugin, PodInfo, PreFilterPlugin, PreFilterResult, PreScorePlugin,
    QueueingHint, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::plugins::args::{parse_args, PluginArgsError};
use crate::plugins::helper::{default_normalize_score, node_event};

pub const NAME: &str = "NodeAffinity";

/// Filter reason when the pod's own nodeSelector or required node affinity does not match.
pub const REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
/// Filter reason when the scheduler's `addedAffinity` does not match.
pub const REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
/// PreFilter reason when every required term names a disjoint set of nodes.
pub const REASON_CONFLICT: &str = "pod affinity terms conflict";

static PRE_FILTER_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreFilterNodeAffinity");
static PRE_SCORE_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreScoreNodeAffinity");

/// `NodeAffinityArgs` (kubescheduler.config.k8s.io/v1).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeAffinityArgs {
    #[serde(default)]
    pub added_affinity: Option<k8s_openapi::api::core::v1::NodeAffinity>,
}

#[derive(Debug, Default)]
pub struct NodeAffinity {
    added_node_selector: Option<NodeSelectorMatcher>,
    added_preferred: Option<PreferredNodeAffinity>,
}

#[derive(Clone)]
struct PreFilterState(RequiredNodeAffinity);

#[derive(Clone)]
struct PreScoreState(PreferredNodeAffinity);

/// Splits a core parse error "`path: message`" into its path and message.
fn split_error(prefix: &str, e: &str) -> PluginArgsError {
    match e.split_once(": ") {
        Some((path, msg)) => {
            let sep = if path.starts_with('[') { "" } else { "." };
            PluginArgsError::new(format!("{prefix}{sep}{path}"), msg)
        }
        None => PluginArgsError::new(prefix, e),
    }
}

impl NodeAffinity {
    /// Builds the plugin from its args, validated as upstream `ValidateNodeAffinityArgs`: the
    /// added affinity's terms must all parse.
    pub fn new(args: Option<&serde_json::Value>) -> Result<NodeAffinity, PluginArgsError> {
        let args: NodeAffinityArgs = parse_args(args)?;
        let mut pl = NodeAffinity::default();
        let Some(added) = args.added_affinity else {
            return Ok(pl);
        };
        if let Some(ns) = &added.required_during_scheduling_ignored_during_execution {
            let m = NodeSelectorMatcher::new(ns);
            if let Some(e) = m.parse_errors().first() {
                return Err(split_error(
                    "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                    e,
                ));
            }
            pl.added_node_selector = Some(m);
        }
        let terms = added
            .preferred_during_scheduling_ignored_during_execution
            .as_deref()
            .unwrap_or_default();
        if !terms.is_empty() {
            let p = PreferredNodeAffinity::new(terms);
            if let Some(e) = p.parse_errors().first() {
                return Err(split_error(
                    "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution",
                    e,
                ));
            }
            pl.added_preferred = Some(p);
        }
        Ok(pl)
    }

    fn added_matches(
        &self,
        node_name: &str,
        labels: &std::collections::BTreeMap<String, String>,
    ) -> bool {
        self.added_node_selector
            .as_ref()
            .is_none_or(|m| m.matches(node_name, labels))
    }
}

fn has_required_affinity(pod: &PodInfo) -> bool {
    pod.spec()
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .is_some_and(|na| {
            na.required_during_scheduling_ignored_during_execution
                .is_some()
        })
}

fn has_preferred_affinity(pod: &PodInfo) -> bool {
    pod.spec()
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .is_some_and(|na| {
            na.preferred_during_scheduling_ignored_during_execution
                .is_some()
        })
}

impl Plugin for NodeAffinity {
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
        // With queueing hints (GA in v1.34): Node Add|UpdateNodeLabel.
        let added = self.added_node_selector.clone();
        Some(vec![ClusterEventWithHint::with_hint(
            ClusterEvent::new(
                EventResource::Node,
                ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
                "NodeAdd|UpdateNodeLabel",
            ),
            move |pod, old, new| is_schedulable_after_node_change(added.as_ref(), pod, old, new),
        )])
    }
}

impl PreFilterPlugin for NodeAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        // Upstream skips only when nodeSelector is nil; an empty map still runs the (trivially
        // passing) Filter.
        if !has_required_affinity(pod)
            && self.added_node_selector.is_none()
            && pod.spec().node_selector.is_none()
        {
            return (None, Status::skip());
        }
        state.write(
            &PRE_FILTER_KEY,
            PreFilterState(RequiredNodeAffinity::from_pod(pod.spec())),
        );
        match required_node_names(pod.spec()) {
            NodeNameRestriction::Any => (None, Status::success()),
            NodeNameRestriction::Names(names) => (
                Some(PreFilterResult {
                    node_names: Some(names),
                }),
                Status::success(),
            ),
            NodeNameRestriction::Conflict => (None, Status::unresolvable(REASON_CONFLICT)),
        }
    }
}

impl FilterPlugin for NodeAffinity {
    /// The added and the pod's required affinity against the node's name and labels.
    fn node_local(&self) -> bool {
        true
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let labels = node.labels();
        if !self.added_matches(&node.name, labels) {
            return Status::unresolvable(REASON_ENFORCED);
        }
        let matched = match state.read::<PreFilterState>(&PRE_FILTER_KEY) {
            Some(PreFilterState(required)) => required.matches(&node.name, labels),
            // PreFilter disabled: compute here (parse errors are ignored, as upstream).
            None => RequiredNodeAffinity::from_pod(pod.spec()).matches(&node.name, labels),
        };
        if matched {
            Status::success()
        } else {
            Status::unresolvable(REASON_POD)
        }
    }
}

fn preferred_of(pod: &PodInfo) -> Result<PreferredNodeAffinity, Status> {
    let p = PreferredNodeAffinity::from_pod(pod.spec());
    match p.parse_errors().first() {
        // Upstream fails the attempt with an error when a preferred term does not parse.
        Some(e) => Err(Status::error(format!(
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution{e}"
        ))),
        None => Ok(p),
    }
}

impl PreScorePlugin for NodeAffinity {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
        _snapshot: &Snapshot,
    ) -> Status {
        if !has_preferred_affinity(pod) && self.added_preferred.is_none() {
            return Status::skip();
        }
        match preferred_of(pod) {
            Ok(p) => {
                state.write(&PRE_SCORE_KEY, PreScoreState(p));
                Status::success()
            }
            Err(st) => st,
        }
    }
}

impl ScorePlugin for NodeAffinity {
    /// The added and the pod's preferred terms against the node's name and labels.
    fn node_local(&self) -> bool {
        true
    }

    /// The sum of the weights of the preferred terms (the pod's and the added ones) the node
    /// matches.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let labels = node.labels();
        let mut count = self
            .added_preferred
            .as_ref()
            .map_or(0, |p| p.score(&node.name, labels));
        match state.read::<PreScoreState>(&PRE_SCORE_KEY) {
            Some(PreScoreState(p)) => count += p.score(&node.name, labels),
            None => count += preferred_of(pod)?.score(&node.name, labels),
        }
        Ok(count)
    }

    fn normalize_score(&self, _state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) -> Status {
        default_normalize_score(MAX_NODE_SCORE, false, scores);
        Status::success()
    }
    /// A column without matching preferred terms stays all 0.
    fn normalization(&self) -> crate::framework::Normalization {
        crate::framework::Normalization::ZeroTo(0)
    }
}

fn node_name_and_labels(n: &Node) -> (&str, &std::collections::BTreeMap<String, String>) {
    static EMPTY: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    (
        n.metadata.name.as_deref().unwrap_or(""),
        n.metadata.labels.as_ref().unwrap_or(&EMPTY),
    )
}

/// Queue when an added node matches the pod's required affinity (and the added affinity), or
/// an update turns a non-matching node into a matching one.
fn is_schedulable_after_node_change(
    added: Option<&NodeSelectorMatcher>,
    pod: &StoredPod,
    old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    let (old, new) = node_event(old, new)?;
    let (name, labels) = node_name_and_labels(new);
    if added.is_some_and(|m| !m.matches(name, labels)) {
        return Ok(QueueingHint::QueueSkip);
    }
    static NO_SPEC: std::sync::LazyLock<k8s_openapi::api::core::v1::PodSpec> =
        std::sync::LazyLock::new(Default::default);
    let required = RequiredNodeAffinity::from_pod(pod.spec().unwrap_or(&NO_SPEC));
    let matches = |n: &Node| -> Result<bool, String> {
        let (name, labels) = node_name_and_labels(n);
        let m = required.matches(name, labels);
        // Upstream's lazy selector reports parse errors when no valid term matched; an error
        // makes the queue treat the event as Queue.
        match required.parse_errors().first() {
            Some(e) if !m => Err(e.clone()),
            _ => Ok(m),
        }
    };
    if !matches(new)? {
        return Ok(QueueingHint::QueueSkip);
    }
    let Some(old) = old else {
        return Ok(QueueingHint::Queue);
    };
    if matches(old)? {
        Ok(QueueingHint::QueueSkip)
    } else {
        Ok(QueueingHint::Queue)
    }
}

#[cfg(test)]
mod tests;

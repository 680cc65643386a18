//! Small builders for pods and nodes in plugin (and framework) tests. They never read the wall
//! clock; UIDs derive from names.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    ContainerImage, Node, NodeSelectorRequirement, NodeSelectorTerm, NodeSpec, NodeStatus, Pod,
    PodAffinityTerm, Taint, Toleration, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};

use crate::cache::Snapshot;
use crate::framework::{NodeInfo, PodInfo};
use kubeplane_api::StoredPod;

/// A node selector requirement `key op values`.
pub fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.to_string(),
        operator: op.to_string(),
        values: if values.is_empty() {
            None
        } else {
            Some(values.iter().map(|v| v.to_string()).collect())
        },
    }
}

/// A node selector term of label expressions and field expressions.
pub fn term(
    exprs: Vec<NodeSelectorRequirement>,
    fields: Vec<NodeSelectorRequirement>,
) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: (!exprs.is_empty()).then_some(exprs),
        match_fields: (!fields.is_empty()).then_some(fields),
    }
}

/// A toleration without tolerationSeconds; empty strings are left unset.
pub fn toleration(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
    kubeplane_core::testing::toleration(key, op, value, effect, None)
}

/// A taint `key=value:effect`.
pub fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.to_string(),
        value: (!value.is_empty()).then(|| value.to_string()),
        effect: effect.to_string(),
        time_added: None,
    }
}

/// A label selector requirement `key op values` (for pod affinity terms and spread
/// constraints).
pub fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.to_string(),
        operator: op.to_string(),
        values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
    }
}

/// A label selector of expressions.
pub fn selector(exprs: Vec<LabelSelectorRequirement>) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(exprs),
        match_labels: None,
    }
}

/// A pod affinity term selecting pods with these expressions, over `topology_key`, in the
/// pod's own namespace.
pub fn pod_term(exprs: Vec<LabelSelectorRequirement>, topology_key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(selector(exprs)),
        topology_key: topology_key.to_string(),
        ..Default::default()
    }
}

/// A topology spread constraint with a selector of these expressions.
pub fn spread(
    max_skew: i32,
    topology_key: &str,
    when_unsatisfiable: &str,
    exprs: Vec<LabelSelectorRequirement>,
) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: topology_key.to_string(),
        when_unsatisfiable: when_unsatisfiable.to_string(),
        label_selector: Some(selector(exprs)),
        ..Default::default()
    }
}

pub use kubeplane_core::testing::{quantities, time, PodBuilder};

/// What only the scheduler's tests build from a pod.
pub trait PodBuilderExt {
    /// The pod as the scheduler's compact `PodInfo`.
    fn info(self) -> PodInfo;

    /// The pod in its stored form.
    fn stored(self) -> StoredPod;
}

impl PodBuilderExt for PodBuilder {
    fn info(self) -> PodInfo {
        PodInfo::new(Arc::new(self.stored()))
    }

    fn stored(self) -> StoredPod {
        self.obj().into()
    }
}

/// Builds a node: `NodeBuilder::new("n1").alloc(&[("cpu", "4")]).taint(..).info()`.
#[derive(Clone, Debug)]
pub struct NodeBuilder {
    node: Node,
}

impl NodeBuilder {
    pub fn new(name: &str) -> NodeBuilder {
        NodeBuilder {
            node: Node {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    uid: Some(format!("uid-{name}")),
                    ..Default::default()
                },
                spec: Some(NodeSpec::default()),
                status: Some(NodeStatus::default()),
            },
        }
    }

    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.node
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(k.to_string(), v.to_string());
        self
    }

    /// Sets `status.allocatable` (and capacity) to these amounts.
    pub fn alloc(mut self, list: &[(&str, &str)]) -> Self {
        let status = self.node.status.get_or_insert_with(Default::default);
        status.allocatable = Some(quantities(list));
        status.capacity = Some(quantities(list));
        self
    }

    pub fn taint(mut self, t: Taint) -> Self {
        self.node
            .spec
            .get_or_insert_with(Default::default)
            .taints
            .get_or_insert_with(Default::default)
            .push(t);
        self
    }

    pub fn unschedulable(mut self, u: bool) -> Self {
        self.node
            .spec
            .get_or_insert_with(Default::default)
            .unschedulable = Some(u);
        self
    }

    /// Adds an image with these names and size in bytes.
    pub fn image(mut self, names: &[&str], size_bytes: i64) -> Self {
        self.node
            .status
            .get_or_insert_with(Default::default)
            .images
            .get_or_insert_with(Default::default)
            .push(ContainerImage {
                names: Some(names.iter().map(|n| n.to_string()).collect()),
                size_bytes: Some(size_bytes),
            });
        self
    }

    pub fn obj(self) -> Node {
        self.node
    }

    pub fn info(self) -> NodeInfo {
        self.info_with_pods(Vec::new())
    }

    /// The node with these pods running on it.
    pub fn info_with_pods(self, pods: Vec<Pod>) -> NodeInfo {
        let name = self.node.metadata.name.clone().unwrap_or_default();
        let mut ni = NodeInfo::new(&name);
        ni.set_node(Arc::new(self.node.into()));
        for p in pods {
            ni.add_pod(Arc::new(PodInfo::new(Arc::new(p.into()))));
        }
        ni
    }
}

/// A snapshot of these nodes, in order.
pub fn snapshot(nodes: Vec<NodeInfo>) -> Snapshot {
    Snapshot::from_nodes(nodes)
}

/// Checks a Filter plugin's
/// [`FilterPlugin::filter_failures`](crate::framework::FilterPlugin::filter_failures) against
/// its per-node verdicts `per_node` (of `nodes`, in order), the nodes run in reverse order and
/// again from the second one (bits set beforehand are kept): a bit for each failing node and
/// none for the others; the constant status, returned when every failing node has one and the
/// same (and only then, when `constant_when_alike`).
pub fn check_filter_failures(
    pl: &dyn crate::framework::FilterPlugin,
    state: &crate::framework::CycleState,
    pod: &PodInfo,
    nodes: &[NodeInfo],
    per_node: &[crate::framework::Status],
    constant_when_alike: bool,
) {
    let arcs: Vec<Arc<NodeInfo>> = nodes.iter().cloned().map(Arc::new).collect();
    let reversed: Vec<usize> = (0..nodes.len()).rev().collect();
    for (places, mark) in [
        (&reversed[..], false),
        (&reversed[1.min(nodes.len())..], true),
    ] {
        // A bit past the run, set beforehand, when there is room for one.
        let before = match mark && places.len() < 64 {
            true => 1u64 << 63,
            false => 0,
        };
        let mut failed = vec![before; places.len().div_ceil(64).max(1)];
        let constant = pl.filter_failures(state, pod, &arcs, places, &mut failed);
        let mut failures = Vec::new();
        for (k, &p) in places.iter().enumerate() {
            let bit = failed[k / 64] >> (k % 64) & 1 == 1;
            assert_eq!(bit, !per_node[p].is_success(), "node {p}");
            if bit {
                failures.push(&per_node[p]);
            }
        }
        assert_eq!(
            failed[0] >> 63 & 1,
            before >> 63,
            "a bit set beforehand is kept"
        );
        if let Some(c) = &constant {
            assert!(failures.iter().all(|&f| f == c), "{c:?} for {failures:?}");
        }
        let alike = !failures.is_empty() && failures.iter().all(|&f| f == failures[0]);
        if constant_when_alike {
            assert_eq!(constant.is_some(), alike, "{failures:?}");
        }
    }
}

//! Node selection by labels and name: a pod's `nodeSelector`, its required and preferred node
//! affinity, and the scheduler's `addedAffinity`, as upstream
//! `component-helpers/scheduling/corev1/nodeaffinity` and the NodeAffinity plugin's PreFilter
//! evaluate them.
//!
//! Rules kept from upstream:
//! * the terms of a `NodeSelector` are ORed; inside a term, `matchExpressions` and
//!   `matchFields` are ANDed; an empty term matches nothing, and so does a selector whose terms
//!   are all empty or that has no terms at all;
//! * a term that fails to parse (unknown operator, `In` without values, `Gt` with a non-integer,
//!   invalid label key, a `matchFields` requirement without exactly one value, ...) is skipped,
//!   so the other terms still decide ("lazy errors", for backwards compatibility);
//! * `matchFields` compares against the node's fields, of which only `metadata.name` exists; a
//!   node with an empty name ignores field requirements. Upstream's matcher accepts any field key
//!   (an `In` on another key never matches, a `NotIn` always does); API validation is what limits
//!   pods to `metadata.name`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodSpec, PreferredSchedulingTerm,
};

use crate::labels::{selector_from_map, Operator, Requirement, Selector, SelectorError};

/// The only node field upstream exposes to `matchFields`.
pub const NODE_NAME_FIELD: &str = "metadata.name";

/// One `matchFields` requirement: the field equals (or, negated, differs from) the value.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldRequirement {
    key: String,
    value: String,
    not_equal: bool,
}

impl FieldRequirement {
    fn matches(&self, node_name: &str) -> bool {
        // A field the node does not have reads as "", as upstream's fields.Set.Get.
        let field = if self.key == NODE_NAME_FIELD {
            node_name
        } else {
            ""
        };
        (field == self.value) != self.not_equal
    }
}

/// A parsed, valid node selector term.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Term {
    labels: Option<Selector>,
    fields: Option<Vec<FieldRequirement>>,
}

impl Term {
    /// Parses a non-empty term; `Err` lists why the term is skipped.
    fn parse(term: &NodeSelectorTerm) -> Result<Term, Vec<String>> {
        let mut errs = Vec::new();
        let exprs = term.match_expressions.as_deref().unwrap_or_default();
        let fields = term.match_fields.as_deref().unwrap_or_default();
        let mut out = Term {
            labels: None,
            fields: None,
        };
        if !exprs.is_empty() {
            let mut reqs = Vec::new();
            for (i, e) in exprs.iter().enumerate() {
                match label_requirement(e) {
                    Ok(r) => reqs.push(r),
                    Err(err) => errs.push(format!("matchExpressions[{i}]: {err}")),
                }
            }
            out.labels = Some(Selector::from_requirements(reqs));
        }
        if !fields.is_empty() {
            let mut reqs = Vec::new();
            for (i, f) in fields.iter().enumerate() {
                match field_requirement(f) {
                    Ok(r) => reqs.push(r),
                    Err(err) => errs.push(format!("matchFields[{i}]: {err}")),
                }
            }
            out.fields = Some(reqs);
        }
        if errs.is_empty() {
            Ok(out)
        } else {
            Err(errs)
        }
    }

    fn matches(&self, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
        if let Some(sel) = &self.labels {
            if !sel.matches(labels) {
                return false;
            }
        }
        if let Some(fields) = &self.fields {
            if !node_name.is_empty() && !fields.iter().all(|f| f.matches(node_name)) {
                return false;
            }
        }
        true
    }
}

fn label_requirement(e: &NodeSelectorRequirement) -> Result<Requirement, SelectorError> {
    let op = match e.operator.as_str() {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        "Gt" => Operator::GreaterThan,
        "Lt" => Operator::LessThan,
        other => {
            return Err(SelectorError::UnknownOperator {
                operator: other.to_string(),
                context: "node selector",
                expected: "In, NotIn, Exists, DoesNotExist, Gt, Lt",
            })
        }
    };
    Requirement::new(&e.key, op, e.values.clone().unwrap_or_default())
}

fn field_requirement(f: &NodeSelectorRequirement) -> Result<FieldRequirement, String> {
    let not_equal = match f.operator.as_str() {
        "In" => false,
        "NotIn" => true,
        other => {
            return Err(format!(
                "{other:?} is not a valid field selector operator (expected one of In, NotIn)"
            ))
        }
    };
    match f.values.as_deref() {
        Some([value]) => Ok(FieldRequirement {
            key: f.key.clone(),
            value: value.clone(),
            not_equal,
        }),
        _ => Err(format!("key {:?}: values must have one element", f.key)),
    }
}

fn is_empty_term(t: &NodeSelectorTerm) -> bool {
    t.match_expressions
        .as_deref()
        .unwrap_or_default()
        .is_empty()
        && t.match_fields.as_deref().unwrap_or_default().is_empty()
}

/// A compiled `NodeSelector` (upstream `LazyErrorNodeSelector`): terms ORed, unparsable terms
/// skipped (their errors are kept for reporting).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSelectorMatcher {
    terms: Vec<Term>,
    parse_errors: Vec<String>,
}

impl NodeSelectorMatcher {
    pub fn new(ns: &NodeSelector) -> NodeSelectorMatcher {
        let mut terms = Vec::new();
        let mut parse_errors = Vec::new();
        for (i, t) in ns.node_selector_terms.iter().enumerate() {
            if is_empty_term(t) {
                continue;
            }
            match Term::parse(t) {
                Ok(term) => terms.push(term),
                Err(errs) => parse_errors.extend(
                    errs.into_iter()
                        .map(|e| format!("nodeSelectorTerms[{i}].{e}")),
                ),
            }
        }
        NodeSelectorMatcher {
            terms,
            parse_errors,
        }
    }

    /// Whether any valid term matches the node.
    pub fn matches(&self, node_name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.terms.iter().any(|t| t.matches(node_name, labels))
    }

    /// Why skipped terms did not parse (empty when all parsed). Upstream rejects plugin args
    /// such as `addedAffinity` with these errors, while pods' terms are silently skipped.
    pub fn parse_errors(&self) -> &[String] {
        &self.parse_errors
    }
}

/// The hard node constraints of a pod (upstream `GetRequiredNodeAffinity`): its `nodeSelector`
/// AND its `requiredDuringSchedulingIgnoredDuringExecution`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequiredNodeAffinity {
    /// From `spec.nodeSelector`, when it has entries (not validated, as upstream).
    node_selector: Option<Selector>,
    /// From the required node affinity, when the pod has one (even with zero terms, which then
    /// matches no node).
    affinity: Option<NodeSelectorMatcher>,
}

impl RequiredNodeAffinity {
    pub fn from_pod(spec: &PodSpec) -> RequiredNodeAffinity {
        let node_selector = spec
            .node_selector
            .as_ref()
            .filter(|m| !m.is_empty())
            .map(selector_from_map);
        let affinity = required_terms(spec).map(NodeSelectorMatcher::new);
        RequiredNodeAffinity {
            node_selector,
            affinity,
        }
    }

    /// Whether the node satisfies both the node selector and the required affinity.
    pub fn matches(&self, node_name: &str, node_labels: &BTreeMap<String, String>) -> bool {
        if let Some(sel) = &self.node_selector {
            if !sel.matches(node_labels) {
                return false;
            }
        }
        match &self.affinity {
            Some(m) => m.matches(node_name, node_labels),
            None => true,
        }
    }

    /// True when the pod has neither a non-empty `nodeSelector` nor a required node affinity.
    pub fn is_empty(&self) -> bool {
        self.node_selector.is_none() && self.affinity.is_none()
    }

    /// Parse errors of skipped required-affinity terms.
    pub fn parse_errors(&self) -> &[String] {
        self.affinity
            .as_ref()
            .map_or(&[], NodeSelectorMatcher::parse_errors)
    }
}

fn required_terms(spec: &PodSpec) -> Option<&NodeSelector> {
    spec.affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()
}

/// Preferred node affinity terms (upstream `PreferredSchedulingTerms`): the score of a node is
/// the sum of the weights of the terms it matches. Terms with weight 0 or an empty preference
/// are skipped; terms that fail to parse are skipped too (upstream's PreScore would fail the
/// whole scheduling attempt with an error, but the API server never admits such a pod).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreferredNodeAffinity {
    terms: Vec<(i64, Term)>,
    parse_errors: Vec<String>,
}

impl PreferredNodeAffinity {
    pub fn new(terms: &[PreferredSchedulingTerm]) -> PreferredNodeAffinity {
        let mut out = PreferredNodeAffinity {
            terms: Vec::new(),
            parse_errors: Vec::new(),
        };
        for (i, t) in terms.iter().enumerate() {
            if t.weight == 0 || is_empty_term(&t.preference) {
                continue;
            }
            match Term::parse(&t.preference) {
                Ok(term) => out.terms.push((i64::from(t.weight), term)),
                Err(errs) => out
                    .parse_errors
                    .extend(errs.into_iter().map(|e| format!("[{i}].preference.{e}"))),
            }
        }
        out
    }

    /// The pod's `preferredDuringSchedulingIgnoredDuringExecution` (empty if none).
    pub fn from_pod(spec: &PodSpec) -> PreferredNodeAffinity {
        let terms = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.preferred_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or_default();
        Self::new(terms)
    }

    /// Sum of the weights of the matching terms.
    pub fn score(&self, node_name: &str, labels: &BTreeMap<String, String>) -> i64 {
        self.terms
            .iter()
            .filter(|(_, t)| t.matches(node_name, labels))
            .map(|(w, _)| *w)
            .sum()
    }

    /// True when no term can contribute (NodeAffinity's PreScore may then skip).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn parse_errors(&self) -> &[String] {
        &self.parse_errors
    }
}

/// The node names a pod's required affinity restricts it to, as NodeAffinity's PreFilter
/// computes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeNameRestriction {
    /// No restriction by name (no required affinity, no terms, or some term without a
    /// `metadata.name In` field requirement).
    Any,
    /// Only these nodes can match: the union over terms of each term's intersection of its
    /// `metadata.name In` value sets.
    Names(BTreeSet<String>),
    /// Every term names an empty set of nodes: the pod fits nowhere
    /// (`UnschedulableAndUnresolvable`, "pod affinity terms conflict").
    Conflict,
}

/// NodeAffinity PreFilter's name restriction. Works on the raw terms, as upstream does: every
/// `metadata.name In` requirement counts with all its values, even one that fails to parse
/// (more than one value) and so makes its term match nothing in Filter.
pub fn required_node_names(spec: &PodSpec) -> NodeNameRestriction {
    let Some(ns) = required_terms(spec) else {
        return NodeNameRestriction::Any;
    };
    if ns.node_selector_terms.is_empty() {
        return NodeNameRestriction::Any;
    }
    let mut union = BTreeSet::new();
    for term in &ns.node_selector_terms {
        let mut term_names: Option<BTreeSet<String>> = None;
        for r in term.match_fields.iter().flatten() {
            if r.key == NODE_NAME_FIELD && r.operator == "In" {
                let set: BTreeSet<String> = r.values.iter().flatten().cloned().collect();
                term_names = Some(match term_names {
                    None => set,
                    Some(prev) => prev.intersection(&set).cloned().collect(),
                });
            }
        }
        match term_names {
            // The terms are ORed, so a term not restricted by name allows every node.
            None => return NodeNameRestriction::Any,
            Some(names) => union.extend(names),
        }
    }
    if union.is_empty() {
        NodeNameRestriction::Conflict
    } else {
        NodeNameRestriction::Names(union)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Affinity, NodeAffinity};

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: if values.is_empty() {
                None
            } else {
                Some(values.iter().map(|v| v.to_string()).collect())
            },
        }
    }

    fn term(
        exprs: Vec<NodeSelectorRequirement>,
        fields: Vec<NodeSelectorRequirement>,
    ) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: if exprs.is_empty() { None } else { Some(exprs) },
            match_fields: if fields.is_empty() {
                None
            } else {
                Some(fields)
            },
        }
    }

    fn exprs(e: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        term(e, vec![])
    }

    fn fields(f: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        term(vec![], f)
    }

    fn pod(node_selector: &[(&str, &str)], required: Option<Vec<NodeSelectorTerm>>) -> PodSpec {
        PodSpec {
            node_selector: if node_selector.is_empty() {
                None
            } else {
                Some(labels(node_selector))
            },
            affinity: required.map(|terms| Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: terms,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Scheduler spec 12.3 NodeAffinity facts 1-4 and upstream `TestNodeAffinity`-style cases.
    #[test]
    fn required_node_affinity_matches_as_upstream() {
        let foo_bar = labels(&[("foo", "bar")]);
        type Case = (
            &'static str,
            PodSpec,
            &'static str,
            BTreeMap<String, String>,
            bool,
        );
        let cases: Vec<Case> = vec![
            (
                "a pod without constraints fits any node",
                pod(&[], None),
                "n",
                foo_bar.clone(),
                true,
            ),
            (
                "a node selector matches an equal label",
                pod(&[("foo", "bar")], None),
                "n",
                foo_bar.clone(),
                true,
            ),
            (
                "a node selector fails on a different value",
                pod(&[("foo", "bar")], None),
                "n",
                labels(&[("foo", "baz")]),
                false,
            ),
            (
                "terms are ORed",
                pod(
                    &[],
                    Some(vec![
                        exprs(vec![req("foo", "In", &["bar", "value2"])]),
                        exprs(vec![req("diffkey", "In", &["wrong"])]),
                    ]),
                ),
                "n",
                foo_bar.clone(),
                true,
            ),
            (
                "expressions in a term are ANDed and Gt compares integers",
                pod(
                    &[],
                    Some(vec![exprs(vec![
                        req("foo", "In", &["bar"]),
                        req("kernel-version", "Gt", &["0204"]),
                    ])]),
                ),
                "n",
                labels(&[("foo", "bar"), ("kernel-version", "0206")]),
                true,
            ),
            (
                "Gt fails when the label is not greater",
                pod(
                    &[],
                    Some(vec![exprs(vec![req("kernel-version", "Gt", &["0206"])])]),
                ),
                "n",
                labels(&[("kernel-version", "0206")]),
                false,
            ),
            (
                "Lt fails on a label that is not an integer",
                pod(&[], Some(vec![exprs(vec![req("v", "Lt", &["10"])])])),
                "n",
                labels(&[("v", "abc")]),
                false,
            ),
            (
                "NotIn matches a node without the label",
                pod(&[], Some(vec![exprs(vec![req("foo", "NotIn", &["bar"])])])),
                "n",
                labels(&[]),
                true,
            ),
            (
                "DoesNotExist fails when the label exists",
                pod(
                    &[],
                    Some(vec![exprs(vec![req("foo", "DoesNotExist", &[])])]),
                ),
                "n",
                foo_bar.clone(),
                false,
            ),
            (
                "an empty term matches nothing",
                pod(&[], Some(vec![term(vec![], vec![])])),
                "n",
                foo_bar.clone(),
                false,
            ),
            (
                "zero terms match nothing",
                pod(&[], Some(vec![])),
                "n",
                foo_bar.clone(),
                false,
            ),
            (
                "a term that fails to parse is skipped and the next decides",
                pod(
                    &[],
                    Some(vec![
                        exprs(vec![req("foo", "In", &[])]),
                        exprs(vec![req("foo", "Exists", &[])]),
                    ]),
                ),
                "n",
                foo_bar.clone(),
                true,
            ),
            (
                "a term with an unknown operator matches nothing",
                pod(&[], Some(vec![exprs(vec![req("foo", "Like", &["bar"])])])),
                "n",
                foo_bar.clone(),
                false,
            ),
            (
                "a Gt with a non-integer value makes its term fail to parse",
                pod(&[], Some(vec![exprs(vec![req("foo", "Gt", &["bar"])])])),
                "n",
                labels(&[("foo", "5")]),
                false,
            ),
            (
                "the node selector and the affinity are ANDed",
                pod(
                    &[("zone", "a")],
                    Some(vec![exprs(vec![req("foo", "Exists", &[])])]),
                ),
                "n",
                foo_bar.clone(),
                false,
            ),
            (
                "matchFields metadata.name In matches the named node",
                pod(
                    &[],
                    Some(vec![fields(vec![req("metadata.name", "In", &["node1"])])]),
                ),
                "node1",
                labels(&[]),
                true,
            ),
            (
                "matchFields metadata.name In fails on another node",
                pod(
                    &[],
                    Some(vec![fields(vec![req("metadata.name", "In", &["node1"])])]),
                ),
                "node2",
                labels(&[]),
                false,
            ),
            (
                "matchFields NotIn excludes the named node",
                pod(
                    &[],
                    Some(vec![fields(vec![req(
                        "metadata.name",
                        "NotIn",
                        &["node1"],
                    )])]),
                ),
                "node2",
                labels(&[]),
                true,
            ),
            (
                "matchFields with two values fails to parse",
                pod(
                    &[],
                    Some(vec![fields(vec![req(
                        "metadata.name",
                        "In",
                        &["node1", "node2"],
                    )])]),
                ),
                "node1",
                labels(&[]),
                false,
            ),
            (
                "matchFields with Exists fails to parse",
                pod(
                    &[],
                    Some(vec![fields(vec![req("metadata.name", "Exists", &[])])]),
                ),
                "node1",
                labels(&[]),
                false,
            ),
            (
                "matchFields and matchExpressions in one term are ANDed",
                pod(
                    &[],
                    Some(vec![term(
                        vec![req("foo", "In", &["bar"])],
                        vec![req("metadata.name", "In", &["node1"])],
                    )]),
                ),
                "node1",
                labels(&[("foo", "baz")]),
                false,
            ),
            (
                "an In on a field nodes do not have never matches",
                pod(
                    &[],
                    Some(vec![fields(vec![req("metadata.uid", "In", &["x"])])]),
                ),
                "node1",
                labels(&[]),
                false,
            ),
        ];
        for (case, spec, node, node_labels, want) in cases {
            let r = RequiredNodeAffinity::from_pod(&spec);
            assert_eq!(r.matches(node, &node_labels), want, "{case}");
        }
    }

    #[test]
    fn emptiness_reflects_whether_the_pod_has_any_constraint() {
        assert!(RequiredNodeAffinity::from_pod(&pod(&[], None)).is_empty());
        assert!(!RequiredNodeAffinity::from_pod(&pod(&[("a", "b")], None)).is_empty());
        assert!(!RequiredNodeAffinity::from_pod(&pod(&[], Some(vec![]))).is_empty());
        let bad =
            RequiredNodeAffinity::from_pod(&pod(&[], Some(vec![exprs(vec![req("a", "In", &[])])])));
        assert_eq!(bad.parse_errors().len(), 1, "{:?}", bad.parse_errors());
    }

    #[test]
    fn the_node_selector_matcher_ignores_field_requirements_for_nameless_nodes() {
        let m = NodeSelectorMatcher::new(&NodeSelector {
            node_selector_terms: vec![fields(vec![req("metadata.name", "In", &["node1"])])],
        });
        assert!(m.matches("", &BTreeMap::new()));
        assert!(!m.matches("node2", &BTreeMap::new()));
    }

    #[test]
    fn prefilter_restricts_pods_to_the_nodes_named_in_match_fields() {
        let name_in = |names: &[&str]| req("metadata.name", "In", names);
        let names =
            |n: &[&str]| NodeNameRestriction::Names(n.iter().map(|s| s.to_string()).collect());
        let cases: Vec<(&str, PodSpec, NodeNameRestriction)> = vec![
            (
                "a pod without required affinity is not restricted",
                pod(&[("a", "b")], None),
                NodeNameRestriction::Any,
            ),
            (
                "zero terms do not restrict by name",
                pod(&[], Some(vec![])),
                NodeNameRestriction::Any,
            ),
            (
                "one term naming node1 restricts to node1",
                pod(&[], Some(vec![fields(vec![name_in(&["node1"])])])),
                names(&["node1"]),
            ),
            (
                "terms naming disjoint nodes give their union",
                pod(
                    &[],
                    Some(vec![
                        fields(vec![name_in(&["node1"])]),
                        fields(vec![name_in(&["node2"])]),
                    ]),
                ),
                names(&["node1", "node2"]),
            ),
            (
                "two name requirements in one term intersect",
                pod(
                    &[],
                    Some(vec![fields(vec![
                        name_in(&["node1", "node2"]),
                        name_in(&["node2", "node3"]),
                    ])]),
                ),
                names(&["node2"]),
            ),
            (
                "disjoint name requirements in one term conflict",
                pod(
                    &[],
                    Some(vec![fields(vec![name_in(&["node1"]), name_in(&["node2"])])]),
                ),
                NodeNameRestriction::Conflict,
            ),
            (
                "a term without a name requirement lifts the restriction",
                pod(
                    &[],
                    Some(vec![
                        fields(vec![name_in(&["node1"])]),
                        exprs(vec![req("foo", "Exists", &[])]),
                    ]),
                ),
                NodeNameRestriction::Any,
            ),
            (
                "NotIn on the name does not restrict",
                pod(
                    &[],
                    Some(vec![fields(vec![req(
                        "metadata.name",
                        "NotIn",
                        &["node1"],
                    )])]),
                ),
                NodeNameRestriction::Any,
            ),
            (
                "a conflicting term next to a naming term leaves the named nodes",
                pod(
                    &[],
                    Some(vec![
                        fields(vec![name_in(&["node1"]), name_in(&["node2"])]),
                        fields(vec![name_in(&["node3"])]),
                    ]),
                ),
                names(&["node3"]),
            ),
        ];
        for (case, spec, want) in cases {
            assert_eq!(required_node_names(&spec), want, "{case}");
        }
    }

    /// Scheduler spec 12.3 NodeAffinity fact 5 (raw scores).
    #[test]
    fn preferred_terms_score_the_sum_of_matching_weights() {
        let pref = |w: i32, t: NodeSelectorTerm| PreferredSchedulingTerm {
            weight: w,
            preference: t,
        };
        let terms = vec![
            pref(2, exprs(vec![req("foo", "In", &["bar"])])),
            pref(4, exprs(vec![req("key", "In", &["value"])])),
            pref(5, exprs(vec![req("az", "In", &["az1"])])),
            pref(0, exprs(vec![req("foo", "Exists", &[])])),
            pref(7, term(vec![], vec![])),
            pref(9, exprs(vec![req("foo", "Gt", &["x"])])),
        ];
        let p = PreferredNodeAffinity::new(&terms);
        let cases: Vec<(&str, BTreeMap<String, String>, i64)> = vec![
            (
                "a node matching the weight-2 term scores 2",
                labels(&[("foo", "bar")]),
                2,
            ),
            (
                "a node matching the weight-4 term scores 4",
                labels(&[("key", "value")]),
                4,
            ),
            (
                "a node matching all three terms scores 11",
                labels(&[("foo", "bar"), ("key", "value"), ("az", "az1")]),
                11,
            ),
            (
                "a node matching nothing scores 0",
                labels(&[("other", "x")]),
                0,
            ),
        ];
        for (case, l, want) in cases {
            assert_eq!(p.score("n", &l), want, "{case}");
        }
        assert_eq!(p.parse_errors().len(), 1);
        assert!(PreferredNodeAffinity::from_pod(&pod(&[], None)).is_empty());
    }
}

//! Table tests of PodTopologySpread filtering and scoring, with upstream's cases.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use kubeplane_core::features::FeatureGates;
use serde_json::json;

use super::filtering::{CriticalPath, CriticalPaths, PreFilterState, PRE_FILTER_KEY};
use super::scoring_tests::scores;
use super::*;
use crate::framework::{Code, CycleState, NodeInfo, Status};
use crate::plugins::testing::{
    check_filter_failures, expr, snapshot, spread, taint, NodeBuilder, PodBuilder, PodBuilderExt,
};

pub(super) fn plugin() -> PodTopologySpread {
    PodTopologySpread::new(None, &FeatureGates::default()).unwrap()
}

pub(super) fn zone_node(name: &str, zone: &str) -> NodeBuilder {
    NodeBuilder::new(name)
        .label("zone", zone)
        .label(LABEL_HOSTNAME, name)
}

pub(super) fn foo_pod(name: &str) -> PodBuilder {
    PodBuilder::new(name).label("foo", "")
}

pub(super) fn foo_exists(
) -> Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement> {
    vec![expr("foo", "Exists", &[])]
}

/// Nodes with `n` matching pods each.
pub(super) fn nodes_with(specs: &[(NodeBuilder, usize)]) -> Vec<NodeInfo> {
    specs
        .iter()
        .map(|(n, count)| {
            let name = n.clone().obj().metadata.name.unwrap();
            let pods = (0..*count)
                .map(|i| foo_pod(&format!("{name}-p{i}")).node(&name).obj())
                .collect();
            n.clone().info_with_pods(pods)
        })
        .collect()
}

fn filter_all(pl: &PodTopologySpread, pod: PodBuilder, nodes: &[NodeInfo]) -> Vec<Status> {
    let pod = pod.info();
    let snap = snapshot(nodes.to_vec());
    let mut state = CycleState::new();
    let (_, s) = pl.pre_filter(&mut state, &pod, &snap);
    if s.is_skip() {
        return vec![Status::success(); nodes.len()];
    }
    assert!(s.is_success(), "{s:?}");
    let out: Vec<Status> = nodes.iter().map(|n| pl.filter(&state, &pod, n)).collect();
    check_filter_failures(pl, &state, &pod, nodes, &out, true);
    // Without the per-domain verdicts (as with many domains), each node's check gives the same.
    let s = state.read_mut::<PreFilterState>(&PRE_FILTER_KEY).unwrap();
    s.verdicts.iter_mut().for_each(|v| *v = None);
    let per_node: Vec<Status> = nodes.iter().map(|n| pl.filter(&state, &pod, n)).collect();
    assert_eq!(out, per_node, "verdicts per domain and per node");
    check_filter_failures(pl, &state, &pod, nodes, &out, true);
    out
}

#[test]
fn many_domains_are_checked_per_node_and_few_by_verdict() {
    let pl = plugin();
    // zone0 holds no matching pod, zone1..zone8 one, zone9 two: only zone0 stays within
    // maxSkew 1 for a pod that matches its own selector (0 + 1 - 0).
    let specs: Vec<(NodeBuilder, usize)> = (0..10)
        .map(|z| {
            let n = zone_node(&format!("node-{z}"), &format!("zone{z}"));
            (n, [0, 1, 1, 1, 1, 1, 1, 1, 1, 2][z])
        })
        .collect();
    let nodes = nodes_with(&specs);
    let pod = foo_pod("p").spread(spread(1, "zone", DO_NOT_SCHEDULE, foo_exists()));
    let mut want = vec![skewed(); 10];
    want[0] = ok();
    assert_eq!(filter_all(&pl, pod.clone(), &nodes), want);
    let pod_info = pod.clone().info();
    let mut state = CycleState::new();
    assert!(pl
        .pre_filter(&mut state, &pod_info, &snapshot(nodes.clone()))
        .1
        .is_success());
    let s = state.read::<PreFilterState>(&PRE_FILTER_KEY).unwrap();
    assert!(s.verdicts[0].is_none(), "ten domains are checked per node");
    // The first three zones alone: verdicts per domain, the same answers.
    let few = nodes_with(&specs[..3]);
    let mut state = CycleState::new();
    assert!(pl
        .pre_filter(&mut state, &pod_info, &snapshot(few.clone()))
        .1
        .is_success());
    let s = state.read::<PreFilterState>(&PRE_FILTER_KEY).unwrap();
    assert!(s.verdicts[0].is_some(), "three domains get verdicts");
    assert_eq!(filter_all(&pl, pod, &few), vec![ok(), skewed(), skewed()]);
}

fn ok() -> Status {
    Status::success()
}

fn skewed() -> Status {
    Status::unschedulable(REASON_CONSTRAINTS_NOT_MATCH)
}

#[test]
fn single_constraint() {
    let pl = plugin();
    let two_zones = nodes_with(&[
        (zone_node("node-a", "zone1"), 2),
        (zone_node("node-b", "zone1"), 1),
        (zone_node("node-x", "zone2"), 1),
        (zone_node("node-y", "zone2"), 0),
    ]);
    // zone1 holds 3 matching pods, zone2 1: adding to zone1 gives skew 3+1-1 = 3 > 1.
    let pod = foo_pod("p").spread(spread(1, "zone", DO_NOT_SCHEDULE, foo_exists()));
    assert_eq!(
        filter_all(&pl, pod, &two_zones),
        vec![skewed(), skewed(), ok(), ok()],
        "a domain with too many matching pods fails"
    );

    // With minDomains 3 and only 2 zones the global minimum is 0: zone2 has skew 1+1-0 = 2.
    let pod = foo_pod("p").spread(TopologySpreadConstraint {
        min_domains: Some(3),
        ..spread(1, "zone", DO_NOT_SCHEDULE, foo_exists())
    });
    assert_eq!(
        filter_all(&pl, pod, &two_zones),
        vec![skewed(), skewed(), skewed(), skewed()],
        "fewer domains than minDomains make the minimum 0"
    );

    // A pod that does not match its own selector adds no skew: zone2 1-1=0, zone1 3-1=2 > 1.
    let pod = PodBuilder::new("p").spread(spread(1, "zone", DO_NOT_SCHEDULE, foo_exists()));
    assert_eq!(
        filter_all(&pl, pod, &two_zones),
        vec![skewed(), skewed(), ok(), ok()]
    );
    let pod = PodBuilder::new("p").spread(spread(2, "zone", DO_NOT_SCHEDULE, foo_exists()));
    assert_eq!(
        filter_all(&pl, pod, &two_zones),
        vec![ok(), ok(), ok(), ok()],
        "self-match 0 allows one more pod"
    );

    // A node without the topology key cannot hold the pod.
    let nodes = nodes_with(&[
        (zone_node("node-a", "zone1"), 0),
        (NodeBuilder::new("node-b"), 0),
    ]);
    let pod = foo_pod("p").spread(spread(1, "zone", DO_NOT_SCHEDULE, foo_exists()));
    assert_eq!(
        filter_all(&pl, pod, &nodes),
        vec![ok(), Status::unresolvable(REASON_NODE_LABEL_NOT_MATCH)]
    );

    // Spreading by hostname: the node with 2 pods is 2 above the minimum 0.
    let nodes = nodes_with(&[
        (zone_node("node-a", "zone1"), 2),
        (zone_node("node-b", "zone1"), 1),
        (zone_node("node-c", "zone2"), 0),
    ]);
    let pod = foo_pod("p").spread(spread(1, LABEL_HOSTNAME, DO_NOT_SCHEDULE, foo_exists()));
    assert_eq!(filter_all(&pl, pod, &nodes), vec![skewed(), skewed(), ok()]);
}

#[test]
fn multiple_constraints_must_all_hold() {
    let pl = plugin();
    let nodes = nodes_with(&[
        (zone_node("node-a", "zone1"), 0),
        (zone_node("node-b", "zone1"), 1),
        (zone_node("node-x", "zone2"), 2),
        (zone_node("node-y", "zone2"), 0),
    ]);
    // zone: zone1 1, zone2 2 (both fine with maxSkew 1 for zone1 only); hostname: min 0.
    let pod = foo_pod("p")
        .spread(spread(1, "zone", DO_NOT_SCHEDULE, foo_exists()))
        .spread(spread(1, LABEL_HOSTNAME, DO_NOT_SCHEDULE, foo_exists()));
    assert_eq!(
        filter_all(&pl, pod, &nodes),
        vec![ok(), skewed(), skewed(), skewed()]
    );
}

#[test]
fn node_taints_policy_honor_ignores_nodes_whose_taints_the_pod_does_not_tolerate() {
    let pl = plugin();
    let nodes = nodes_with(&[
        (zone_node("node-a", "zone1"), 1),
        (
            zone_node("node-b", "zone2").taint(taint("foo", "", "NoSchedule")),
            0,
        ),
        (zone_node("node-c", "zone3"), 1),
    ]);
    let constraint = |policy: &str| TopologySpreadConstraint {
        node_taints_policy: Some(policy.into()),
        ..spread(1, "zone", DO_NOT_SCHEDULE, foo_exists())
    };
    // Ignore (the default): the empty tainted zone2 is the minimum (0): 1+1-0 > 1.
    let got = filter_all(&pl, foo_pod("p").spread(constraint("Ignore")), &nodes);
    assert_eq!(got, vec![skewed(), ok(), skewed()]);
    // Honor: zone2 is not a domain, the minimum is 1: 1+1-1 = 1 fits.
    let got = filter_all(&pl, foo_pod("p").spread(constraint("Honor")), &nodes);
    assert_eq!(got[0], ok());
    assert_eq!(got[2], ok());
    let pod = foo_pod("p").spread(constraint("Honor")).info();
    let snap = snapshot(nodes.clone());
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
    let s = state.read::<PreFilterState>(&PRE_FILTER_KEY).unwrap();
    assert_eq!(s.tp_value_to_match_num[0].len(), 2, "zone2 is not counted");
}

#[test]
fn node_affinity_policy_honor_counts_only_matching_nodes() {
    let pl = plugin();
    let nodes = nodes_with(&[
        (zone_node("node-a", "zone1").label("disk", "ssd"), 0),
        (zone_node("node-b", "zone2"), 3),
    ]);
    let pod = || {
        foo_pod("p").node_selector("disk", "ssd").spread(spread(
            1,
            "zone",
            DO_NOT_SCHEDULE,
            foo_exists(),
        ))
    };
    // Honor (default): only node-a's zone is a domain.
    let got = filter_all(&pl, pod(), &nodes);
    assert_eq!(got[0], ok());
    let ignore = |p: PodBuilder| {
        let mut pod = p.obj();
        pod.spec
            .as_mut()
            .unwrap()
            .topology_spread_constraints
            .as_mut()
            .unwrap()[0]
            .node_affinity_policy = Some("Ignore".into());
        pod
    };
    let p = PodInfoBuilder(ignore(pod()));
    let snap = snapshot(nodes.clone());
    let mut state = CycleState::new();
    let info = p.info();
    assert!(pl.pre_filter(&mut state, &info, &snap).1.is_success());
    let s = state.read::<PreFilterState>(&PRE_FILTER_KEY).unwrap();
    assert_eq!(s.tp_value_to_match_num[0].len(), 2);
}

struct PodInfoBuilder(k8s_openapi::api::core::v1::Pod);

impl PodInfoBuilder {
    fn info(self) -> crate::framework::PodInfo {
        crate::framework::PodInfo::new(Arc::new(self.0.into()))
    }
}

/// Asserts that the counts Filter reads (by pair id) are the counts by value.
fn assert_pair_counts_match_values(s: &PreFilterState) {
    for i in 0..s.constraints.len() {
        let by_pair: HashMap<String, i32> = s.match_num_by_pair[i]
            .iter()
            .map(|(&p, &n)| (crate::framework::topology::value_of(p).to_string(), n))
            .collect();
        let by_value: HashMap<String, i32> = s.tp_value_to_match_num[i]
            .iter()
            .map(|(v, &n)| (v.clone(), n))
            .collect();
        assert_eq!(by_pair, by_value, "constraint {i}");
    }
}

#[test]
fn pre_filter_state_and_add_pod() {
    let pl = plugin();
    let nodes = nodes_with(&[
        (zone_node("node-a", "zone1"), 1),
        (zone_node("node-b", "zone1"), 0),
        (zone_node("node-x", "zone2"), 2),
    ]);
    let pod = foo_pod("p")
        .spread(spread(1, "zone", DO_NOT_SCHEDULE, foo_exists()))
        .info();
    let snap = snapshot(nodes.clone());
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
    let s = state.read::<PreFilterState>(&PRE_FILTER_KEY).unwrap();
    let counts: HashMap<&str, i32> = s.tp_value_to_match_num[0]
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(counts, HashMap::from([("zone1", 1), ("zone2", 2)]));
    assert_pair_counts_match_values(s);
    assert_eq!(pl.filter(&state, &pod, &nodes[0]), ok());
    assert_eq!(pl.filter(&state, &pod, &nodes[2]), skewed());
    assert_eq!(
        s.critical_paths[0],
        CriticalPaths([
            CriticalPath {
                topology_value: "zone1".into(),
                match_num: 1
            },
            CriticalPath {
                topology_value: "zone2".into(),
                match_num: 2
            },
        ])
    );
    // Adding two matching pods to zone1 makes zone2 the minimum.
    for i in 0..2 {
        let added = foo_pod(&format!("new{i}")).node("node-b").info();
        assert!(pl.add_pod(&mut state, &pod, &added, &nodes[1]).is_success());
    }
    let s = state.read::<PreFilterState>(&PRE_FILTER_KEY).unwrap();
    assert_eq!(s.critical_paths[0].0[0].topology_value, "zone2");
    assert_eq!(s.critical_paths[0].0[0].match_num, 2);
    // The verdicts follow: zone1 (3 + 1 - 2) is now too skewed, zone2 (2 + 1 - 2) fits.
    assert_eq!(pl.filter(&state, &pod, &nodes[0]), skewed());
    assert_eq!(pl.filter(&state, &pod, &nodes[2]), ok());
    // A pod of another namespace or not matching changes nothing.
    let other = foo_pod("other").namespace("ns2").node("node-b").info();
    assert!(pl.add_pod(&mut state, &pod, &other, &nodes[1]).is_success());
    let s = state.read::<PreFilterState>(&PRE_FILTER_KEY).unwrap();
    assert_eq!(s.tp_value_to_match_num[0]["zone1"], 3);
    // Removing one from zone2 makes it the only minimum at 1.
    let removed = foo_pod("node-x-p0").node("node-x").info();
    assert!(pl
        .remove_pod(&mut state, &pod, &removed, &nodes[2])
        .is_success());
    let s = state.read::<PreFilterState>(&PRE_FILTER_KEY).unwrap();
    assert_eq!(s.min_match_num(0, 1), 1);
    assert_pair_counts_match_values(s);
}

#[test]
fn terminating_pods_are_not_counted() {
    let pl = plugin();
    let node = zone_node("node-a", "zone1").info_with_pods(vec![foo_pod("t")
        .terminating_by_preemption()
        .node("node-a")
        .obj()]);
    let pod = foo_pod("p")
        .spread(spread(1, "zone", DO_NOT_SCHEDULE, foo_exists()))
        .info();
    let mut state = CycleState::new();
    assert!(pl
        .pre_filter(&mut state, &pod, &snapshot(vec![node]))
        .1
        .is_success());
    let s = state.read::<PreFilterState>(&PRE_FILTER_KEY).unwrap();
    assert_eq!(s.tp_value_to_match_num[0]["zone1"], 0);
}

#[test]
fn system_default_constraints_use_the_replica_set_selector() {
    let pl = plugin();
    let nodes = vec![
        zone_node("node-a", "zone1").info_with_pods(vec![PodBuilder::new("w1")
            .label("app", "web")
            .node("node-a")
            .obj()]),
        zone_node("node-b", "zone2").info(),
    ];
    let pod = || {
        PodBuilder::new("p")
            .label("app", "web")
            .owner("apps/v1", "ReplicaSet", "web")
    };
    // Without the ReplicaSet known, the selector is empty: no constraints.
    assert_eq!(scores(&pl, pod(), &nodes, &nodes), Vec::<i64>::new());
    let mut snap = snapshot(nodes.clone());
    let mut rs = crate::cache::ReplicaSetSelectors::default();
    rs.insert(
        "default/web".into(),
        Some(kubeplane_core::labels::parse("app=web").unwrap()),
    );
    snap.replica_sets = Arc::new(rs);
    let info = pod().info();
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    let mut state = CycleState::new();
    assert!(pl.pre_score(&mut state, &info, &refs, &snap).is_success());
    let mut out: Vec<i64> = nodes
        .iter()
        .map(|n| pl.score(&state, &info, n).unwrap())
        .collect();
    assert!(pl.normalize_score(&state, &info, &mut out).is_success());
    // hostname maxSkew 3 (weight ln 4) + zone maxSkew 5 (weight ln 4): node-a has the pod.
    // raw a: 1.386+2 + 1.386+4 = 8.77 → 9; b: 2+4 = 6 ⇒ a 100*(9+6-9)/9=66, b 100.
    assert_eq!(out, vec![66, 100]);
    // Hard default constraints: none (both system defaults are ScheduleAnyway).
    let (_, s) = pl.pre_filter(&mut CycleState::new(), &info, &snap);
    assert_eq!(s.code, Code::Skip);
}

#[test]
fn match_label_keys_narrow_the_selector() {
    let pl = plugin();
    let nodes = vec![
        zone_node("node-a", "zone1").info_with_pods(vec![
            foo_pod("old").label("rev", "1").node("node-a").obj(),
            foo_pod("old2").label("rev", "1").node("node-a").obj(),
        ]),
        zone_node("node-b", "zone2").info(),
    ];
    let constraint = TopologySpreadConstraint {
        match_label_keys: Some(vec!["rev".into()]),
        ..spread(1, "zone", DO_NOT_SCHEDULE, foo_exists())
    };
    // Revision 2 pods do not count revision 1 pods.
    let got = filter_all(
        &pl,
        foo_pod("p").label("rev", "2").spread(constraint.clone()),
        &nodes,
    );
    assert_eq!(got, vec![ok(), ok()]);
    let got = filter_all(
        &pl,
        foo_pod("p").label("rev", "1").spread(constraint),
        &nodes,
    );
    assert_eq!(got, vec![skewed(), ok()]);
}

#[test]
fn args_are_defaulted_and_validated() {
    let f = FeatureGates::default();
    assert!(PodTopologySpread::new(None, &f).unwrap().system_defaulted);
    let list = json!({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]});
    let pl = PodTopologySpread::new(Some(&list), &f).unwrap();
    assert!(!pl.system_defaulted);
    assert_eq!(pl.default_constraints.len(), 1);
    let cases = [
        (
            json!({"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}),
            "defaultingType",
            "Invalid value: \"System\": when .defaultConstraints are not empty",
        ),
        (
            json!({"defaultingType": "Other"}),
            "defaultingType",
            "Unsupported value: \"Other\": supported values: \"System\", \"List\"",
        ),
        (
            json!({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}),
            "defaultConstraints[0].maxSkew",
            "Invalid value: 0: not in valid range (0, inf)",
        ),
        (
            json!({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}]}),
            "defaultConstraints[0].topologyKey",
            "Required value: can not be empty",
        ),
        (
            json!({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}]}),
            "defaultConstraints[0].whenUnsatisfiable",
            "Unsupported value: \"Maybe\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
        ),
        (
            json!({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]}),
            "defaultConstraints[0].labelSelector",
            "Forbidden: constraint must not define a selector, as they deduced for each pod",
        ),
        (
            json!({"defaultingType": "List", "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}),
            "defaultConstraints[1]",
            "Duplicate value: \"{zone, DoNotSchedule}\"",
        ),
    ];
    for (args, field, message) in cases {
        let err = PodTopologySpread::new(Some(&args), &f).err().unwrap();
        assert_eq!(
            (err.field.as_str(), err.message.as_str()),
            (field, message),
            "{args}"
        );
    }
}

#[test]
fn queueing_hints() {
    use crate::framework::EventObject;
    let pl = plugin();
    let pod: kubeplane_api::StoredPod = foo_pod("p")
        .spread(spread(1, "zone", DO_NOT_SCHEDULE, foo_exists()))
        .obj()
        .into();
    let matching = foo_pod("a").node("n1").obj();
    let other = PodBuilder::new("b").node("n1").obj();
    let other_ns = foo_pod("c").namespace("ns2").node("n1").obj();
    let pod_hint = |old: Option<&k8s_openapi::api::core::v1::Pod>,
                    new: Option<&k8s_openapi::api::core::v1::Pod>| {
        pl.is_schedulable_after_pod_change(
            &pod,
            old.cloned()
                .map(kubeplane_api::StoredPod::from)
                .as_ref()
                .map(EventObject::Pod),
            new.cloned()
                .map(kubeplane_api::StoredPod::from)
                .as_ref()
                .map(EventObject::Pod),
        )
        .unwrap()
    };
    assert_eq!(pod_hint(None, Some(&matching)), QueueingHint::Queue);
    assert_eq!(pod_hint(None, Some(&other)), QueueingHint::QueueSkip);
    assert_eq!(pod_hint(None, Some(&other_ns)), QueueingHint::QueueSkip);
    assert_eq!(pod_hint(Some(&matching), None), QueueingHint::Queue);
    assert_eq!(pod_hint(Some(&other), Some(&matching)), QueueingHint::Queue);

    let with_zone = zone_node("n1", "z1").obj();
    let without = NodeBuilder::new("n2").obj();
    let node_hint = |old: Option<&k8s_openapi::api::core::v1::Node>,
                     new: Option<&k8s_openapi::api::core::v1::Node>| {
        pl.is_schedulable_after_node_change(
            &pod,
            old.cloned()
                .map(kubeplane_api::StoredNode::from)
                .as_ref()
                .map(EventObject::Node),
            new.cloned()
                .map(kubeplane_api::StoredNode::from)
                .as_ref()
                .map(EventObject::Node),
        )
        .unwrap()
    };
    assert_eq!(node_hint(None, Some(&with_zone)), QueueingHint::Queue);
    assert_eq!(node_hint(None, Some(&without)), QueueingHint::QueueSkip);
    assert_eq!(node_hint(Some(&with_zone), None), QueueingHint::Queue);
    let moved = zone_node("n1", "z2").obj();
    assert_eq!(
        node_hint(Some(&with_zone), Some(&moved)),
        QueueingHint::Queue
    );
    assert_eq!(
        node_hint(Some(&with_zone), Some(&with_zone)),
        QueueingHint::QueueSkip
    );
}

#[test]
fn the_memo_gives_the_same_counts_as_a_fresh_count() {
    let pod = foo_pod("p")
        .spread(spread(1, "zone", DO_NOT_SCHEDULE, foo_exists()))
        .spread(spread(1, LABEL_HOSTNAME, DO_NOT_SCHEDULE, foo_exists()))
        .info();
    let first = nodes_with(&[
        (zone_node("node-a", "zone1"), 1),
        (zone_node("node-b", "zone1"), 0),
        (zone_node("node-x", "zone2"), 2),
        (zone_node("node-y", "zone3"), 0),
    ]);
    let mut snap = snapshot(first);
    let reused = plugin();
    let mut state = CycleState::new();
    assert!(reused.pre_filter(&mut state, &pod, &snap).1.is_success());
    // node-b gains two matching pods, node-y leaves the cluster, and a node-z joins.
    snap.node_infos[1] = Arc::new(zone_node("node-b", "zone1").info_with_pods(vec![
        foo_pod("b1").node("node-b").obj(),
        foo_pod("b2").node("node-b").obj(),
    ]));
    snap.node_infos[3] = Arc::new(zone_node("node-z", "zone4").info());
    let states: Vec<PreFilterState> = [&reused, &plugin()]
        .iter()
        .map(|pl| {
            let mut state = CycleState::new();
            assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
            state
                .read::<PreFilterState>(&PRE_FILTER_KEY)
                .unwrap()
                .clone()
        })
        .collect();
    for i in 0..2 {
        assert_eq!(
            states[0].tp_value_to_match_num[i], states[1].tp_value_to_match_num[i],
            "constraint {i}"
        );
        assert_eq!(states[0].critical_paths[i], states[1].critical_paths[i]);
        assert_eq!(
            states[0].match_num_by_pair[i], states[1].match_num_by_pair[i],
            "constraint {i}"
        );
    }
    states.iter().for_each(assert_pair_counts_match_values);
    assert!(!states[0].tp_value_to_match_num[0].contains_key("zone3"));
    assert_eq!(states[0].tp_value_to_match_num[0]["zone1"], 3);
}

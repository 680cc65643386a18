//! Table tests of NodeDeclaredFeatures: the features each release's registry infers, and the
//! plugin's PreFilter, Filter and queueing hints (upstream `nodedeclaredfeatures_test.go` and
//! the component-helpers feature tests).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, ContainerRestartRule, Pod};
use kubeplane_api::StoredNode;

use super::*;
use crate::framework::Code;
use crate::plugins::testing::{snapshot, NodeBuilder, PodBuilder};

fn gates(version: &str, overrides: &[(&str, bool)]) -> FeatureGates {
    let overrides: BTreeMap<String, bool> =
        overrides.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    FeatureGates::for_version_with_overrides(version.parse().unwrap(), &overrides).unwrap()
}

fn plugin(version: &str) -> NodeDeclaredFeatures {
    NodeDeclaredFeatures::new(&gates(version, &[]))
}

/// A pod whose first container has a restart rule with this action.
fn restart_rule_pod(action: &str, init: bool) -> Pod {
    let mut pod = PodBuilder::new("p").obj();
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.containers.push(Container {
        name: "c".into(),
        ..Default::default()
    });
    let rule = ContainerRestartRule {
        action: action.to_string(),
        exit_codes: None,
    };
    let container = if init {
        spec.init_containers.get_or_insert_with(Vec::new);
        let mut c = spec.containers[0].clone();
        c.name = "init".into();
        spec.init_containers.as_mut().unwrap().push(c);
        spec.init_containers.as_mut().unwrap().last_mut().unwrap()
    } else {
        &mut spec.containers[0]
    };
    container.restart_policy_rules = Some(vec![rule]);
    pod
}

fn host_network_pod(host_network: bool, host_users: Option<bool>) -> Pod {
    let mut pod = PodBuilder::new("p").obj();
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.host_network = Some(host_network);
    spec.host_users = host_users;
    pod
}

fn node(declared: Option<&[&str]>) -> NodeInfo {
    let stored = StoredNode {
        node: NodeBuilder::new("n").obj(),
        declared_features: declared.map(|d| d.iter().map(|s| s.to_string()).collect()),
        heartbeats_of: None,
    };
    let mut info = NodeInfo::new("n");
    info.set_node(Arc::new(stored));
    info
}

/// PreFilter, then Filter unless skipped.
fn run(pl: &NodeDeclaredFeatures, pod: Pod, node: &NodeInfo) -> Status {
    let pod = PodInfo::new(Arc::new(pod.into()));
    let mut state = CycleState::new();
    let (result, st) = pl.pre_filter(&mut state, &pod, &snapshot(vec![]));
    assert!(result.is_none(), "PreFilter never narrows the nodes");
    if !st.is_success() {
        return st;
    }
    pl.filter(&state, &pod, node)
}

#[test]
fn each_release_infers_the_features_of_its_registry() {
    let restart = restart_rule_pod("RestartAllContainers", false);
    let init_restart = restart_rule_pod("RestartAllContainers", true);
    let plain_restart = restart_rule_pod("Restart", false);
    let userns = host_network_pod(true, Some(false));
    let cases: [(&str, &Pod, &str, Vec<&str>); 10] = [
        (
            "a RestartAllContainers rule of a container requires its feature from v1.35",
            &restart,
            "1.35.0",
            vec!["RestartAllContainersOnContainerExits"],
        ),
        (
            "a RestartAllContainers rule of an init container requires it too",
            &init_restart,
            "1.36.0",
            vec!["RestartAllContainersOnContainerExits"],
        ),
        (
            "a plain Restart rule requires nothing",
            &plain_restart,
            "1.37.0",
            vec![],
        ),
        (
            "host networking in a user namespace is not in the v1.35 registry",
            &userns,
            "1.35.4",
            vec![],
        ),
        (
            "host networking in a user namespace requires its feature from v1.36",
            &userns,
            "1.36.0",
            vec!["UserNamespacesHostNetworkSupport"],
        ),
        (
            "and still in v1.37",
            &userns,
            "1.37.0",
            vec!["UserNamespacesHostNetworkSupport"],
        ),
        (
            "host networking with host users unset requires nothing",
            &host_network_pod(true, None),
            "1.37.0",
            vec![],
        ),
        (
            "host networking with host users requires nothing",
            &host_network_pod(true, Some(true)),
            "1.37.0",
            vec![],
        ),
        (
            "user namespaces without host networking require nothing",
            &host_network_pod(false, Some(false)),
            "1.37.0",
            vec![],
        ),
        (
            "a pod without any of these requires nothing",
            &PodBuilder::new("p").obj(),
            "1.37.0",
            vec![],
        ),
    ];
    for (case, pod, version, want) in cases {
        assert_eq!(
            plugin(version).required(pod.spec.as_ref().unwrap()),
            want,
            "{case}"
        );
    }
}

#[test]
fn the_registries_hold_upstreams_feature_names() {
    let names = |v: &str| -> Vec<&str> {
        let v: KubeVersion = v.parse().unwrap();
        let mut n: Vec<&str> = features::FEATURES
            .iter()
            .filter(|f| v.has(f.registered))
            .map(|f| f.name)
            .collect();
        n.sort_unstable();
        n
    };
    assert!(names("1.34.7").is_empty());
    assert_eq!(
        names("1.35.0"),
        [
            "GuaranteedQoSPodCPUResize",
            "InPlacePodLevelResourcesVerticalScaling",
            "RestartAllContainersOnContainerExits"
        ]
    );
    assert_eq!(
        names("1.36.0"),
        [
            "ExtendWebSocketsToKubelet",
            "InPlacePodLevelResourcesVerticalScaling",
            "InPlacePodVerticalScalingInitContainers",
            "RestartAllContainersOnContainerExits",
            "UserNamespacesHostNetworkSupport"
        ]
    );
    assert_eq!(names("1.37.0").len(), 9);
}

#[test]
fn pre_filter_and_filter_by_release() {
    let restart = || restart_rule_pod("RestartAllContainers", false);
    let declares = node(Some(&[
        "InPlacePodLevelResourcesVerticalScaling",
        "RestartAllContainersOnContainerExits",
    ]));
    let declares_other = node(Some(&["ExtendWebSocketsToKubelet"]));
    let declares_nothing = node(None);
    let v135_missing = Status::new(
        Code::UnschedulableAndUnresolvable,
        "node declared features check failed - unsatisfied requirements: RestartAllContainersOnContainerExits",
    );
    let missing = Status::new(Code::UnschedulableAndUnresolvable, REASON);
    let on_in_1_35 = NodeDeclaredFeatures::new(&gates("1.35.0", &[(GATE, true)]));
    let off_in_1_36 = NodeDeclaredFeatures::new(&gates("1.36.0", &[(GATE, false)]));
    let cases = [
        (
            "the gate is off by default in v1.35: every pod is skipped",
            plugin("1.35.4"),
            restart(),
            &declares_nothing,
            Status::skip(),
        ),
        (
            "turned on in v1.35 a node lacking the feature is refused, named",
            on_in_1_35.clone(),
            restart(),
            &declares_nothing,
            v135_missing.clone(),
        ),
        (
            "a node declaring other features only is refused as well",
            on_in_1_35.clone(),
            restart(),
            &declares_other,
            v135_missing,
        ),
        (
            "a node declaring the feature passes",
            on_in_1_35,
            restart(),
            &declares,
            Status::success(),
        ),
        (
            "on by default in v1.36: a node lacking the feature is refused",
            plugin("1.36.0"),
            restart(),
            &declares_nothing,
            missing.clone(),
        ),
        (
            "v1.36 with the gate turned off skips every pod",
            off_in_1_36,
            restart(),
            &declares_nothing,
            Status::skip(),
        ),
        (
            "v1.37 refuses a node lacking the feature",
            plugin("1.37.0"),
            restart(),
            &declares_other,
            missing.clone(),
        ),
        (
            "v1.37 lets a node declaring it pass",
            plugin("1.37.0"),
            restart(),
            &declares,
            Status::success(),
        ),
        (
            "a pod requiring nothing is skipped and goes anywhere",
            plugin("1.37.0"),
            PodBuilder::new("p").obj(),
            &declares_nothing,
            Status::skip(),
        ),
        (
            "host networking in a user namespace needs its feature declared",
            plugin("1.36.0"),
            host_network_pod(true, Some(false)),
            &declares,
            missing,
        ),
    ];
    for (case, pl, pod, node, want) in cases {
        let got = run(&pl, pod, node);
        assert_eq!(
            (got.code, got.message()),
            (want.code, want.message()),
            "{case}"
        );
    }
}

#[test]
fn filter_without_its_pre_filter_state_is_an_error() {
    let pl = plugin("1.37.0");
    let pod = PodInfo::new(Arc::new(PodBuilder::new("p").obj().into()));
    let st = pl.filter(&CycleState::new(), &pod, &node(None));
    assert_eq!(st.code, Code::Error);
    assert!(
        st.message().contains("PreFilterNodeDeclaredFeatures"),
        "{}",
        st.message()
    );
}

#[test]
fn queueing_hints_follow_declared_features_and_the_pods_own_requirements() {
    let pl = plugin("1.37.0");
    let events = pl.events_to_register().unwrap();
    assert_eq!(events.len(), 2);
    let node_hint = events[0].hint.clone().unwrap();
    let pod_hint = events[1].hint.clone().unwrap();
    let waiting: kubeplane_api::StoredPod = restart_rule_pod("RestartAllContainers", false).into();
    let stored = |d: &[&str]| StoredNode {
        node: NodeBuilder::new("n").obj(),
        declared_features: Some(d.iter().map(|s| s.to_string()).collect()),
        heartbeats_of: None,
    };
    let (a, a2, b) = (stored(&["A"]), stored(&["A"]), stored(&["A", "B"]));
    let node_cases = [
        ("a node added queues", None, &a, QueueingHint::Queue),
        (
            "declared features changed queue",
            Some(&a),
            &b,
            QueueingHint::Queue,
        ),
        (
            "the same declared features skip",
            Some(&a),
            &a2,
            QueueingHint::QueueSkip,
        ),
    ];
    for (case, old, new, want) in node_cases {
        let got = node_hint(
            &waiting,
            old.map(EventObject::Node),
            Some(EventObject::Node(new)),
        );
        assert_eq!(got, Ok(want), "{case}");
    }
    let mut waiting_uid = waiting.clone();
    waiting_uid.metadata.uid = Some("w".into());
    let mut relaxed: kubeplane_api::StoredPod = PodBuilder::new("p").obj().into();
    relaxed.metadata.uid = Some("w".into());
    let mut other = relaxed.clone();
    other.metadata.uid = Some("other".into());
    let pod_cases = [
        (
            "the pod dropping its requirement queues",
            &waiting_uid,
            &relaxed,
            QueueingHint::Queue,
        ),
        (
            "the same requirements skip",
            &waiting_uid,
            &waiting_uid,
            QueueingHint::QueueSkip,
        ),
        (
            "another pod's update skips",
            &other,
            &other,
            QueueingHint::QueueSkip,
        ),
    ];
    for (case, old, new, want) in pod_cases {
        let got = pod_hint(
            &waiting_uid,
            Some(EventObject::Pod(old)),
            Some(EventObject::Pod(new)),
        );
        assert_eq!(got, Ok(want), "{case}");
    }
}

#[test]
fn a_disabled_plugin_registers_no_events() {
    let pl = plugin("1.35.0");
    assert_eq!(pl.events_to_register().map(|e| e.len()), Some(0));
}

#[test]
fn a_change_of_declared_features_is_a_node_update_event_of_its_own() {
    use crate::queue::{node_update_events, NODE_UPDATE_DECLARED_FEATURE};
    let with = |d: Option<&[&str]>| StoredNode {
        node: NodeBuilder::new("n").obj(),
        declared_features: d.map(|d| d.iter().map(|s| s.to_string()).collect()),
        heartbeats_of: None,
    };
    let cases = [
        (
            "none to some",
            with(None),
            with(Some(&["A"])),
            vec![NODE_UPDATE_DECLARED_FEATURE],
        ),
        (
            "one more",
            with(Some(&["A"])),
            with(Some(&["A", "B"])),
            vec![NODE_UPDATE_DECLARED_FEATURE],
        ),
        ("unchanged", with(Some(&["A"])), with(Some(&["A"])), vec![]),
        ("an empty list is none", with(None), with(Some(&[])), vec![]),
    ];
    for (case, old, new, want) in cases {
        assert_eq!(node_update_events(&old, &new), want, "{case}");
    }
    let registered = &plugin("1.37.0").events_to_register().unwrap()[0].event;
    assert!(crate::queue::event_matches(
        registered,
        &NODE_UPDATE_DECLARED_FEATURE
    ));
}

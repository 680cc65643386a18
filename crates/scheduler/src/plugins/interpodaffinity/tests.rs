//! Table tests of InterPodAffinity filtering and scoring, with upstream's cases.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PodAffinityTerm;
use serde_json::json;

use super::filtering::{PreFilterState, PRE_FILTER_KEY};
use super::*;
use crate::framework::{Code, CycleState, NodeInfo, PodInfo, Status};
use crate::plugins::testing::{
    check_filter_failures, expr, pod_term, snapshot, NodeBuilder, PodBuilder, PodBuilderExt,
};

fn node1() -> NodeBuilder {
    NodeBuilder::new("machine1")
        .label("region", "r1")
        .label("zone", "z11")
}

fn security_s1(topology: &str) -> PodAffinityTerm {
    pod_term(vec![expr("security", "In", &["S1"])], topology)
}

fn service_in(values: &[&str], topology: &str) -> PodAffinityTerm {
    pod_term(vec![expr("service", "In", values)], topology)
}

/// PreFilter over `nodes` (each with its pods), then Filter on each node.
fn filter_all(pod: PodBuilder, nodes: Vec<(NodeBuilder, Vec<PodBuilder>)>) -> Vec<Status> {
    let pod = pod.info();
    let infos: Vec<NodeInfo> = nodes
        .into_iter()
        .map(|(n, pods)| {
            let name = n.clone().obj().metadata.name.unwrap();
            n.info_with_pods(pods.into_iter().map(|p| p.node(&name).obj()).collect())
        })
        .collect();
    let snap = snapshot(infos.clone());
    let pl = InterPodAffinity::default();
    let mut state = CycleState::new();
    let (_, s) = pl.pre_filter(&mut state, &pod, &snap);
    if s.is_skip() {
        return vec![Status::success(); infos.len()];
    }
    assert!(s.is_success(), "{s:?}");
    let out: Vec<Status> = infos.iter().map(|n| pl.filter(&state, &pod, n)).collect();
    check_filter_failures(&pl, &state, &pod, &infos, &out, true);
    out
}

fn filter_one(pod: PodBuilder, node: NodeBuilder, pods: Vec<PodBuilder>) -> Status {
    filter_all(pod, vec![(node, pods)]).remove(0)
}

#[test]
fn required_affinity_single_node() {
    let fail_affinity = Status::unresolvable(REASON_AFFINITY);
    let fail_anti = Status::unschedulable(REASON_ANTI_AFFINITY);
    let fail_existing = Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY);
    let scan = || PodBuilder::new("existing").label("service", "securityscan");
    struct Case {
        name: &'static str,
        pod: PodBuilder,
        pods: Vec<PodBuilder>,
        want: Status,
    }
    let cases = vec![
        Case {
            name: "a pod without required pod affinity fits a node without pods",
            pod: PodBuilder::new("p"),
            pods: vec![],
            want: Status::success(),
        },
        Case {
            name: "an In affinity term matching the existing pod in the same region is satisfied",
            pod: PodBuilder::new("p")
                .label("security", "S1")
                .pod_affinity_required(service_in(&["securityscan", "value2"], "region")),
            pods: vec![scan()],
            want: Status::success(),
        },
        Case {
            name: "a NotIn affinity term the existing pod satisfies is satisfied",
            pod: PodBuilder::new("p")
                .label("security", "S1")
                .pod_affinity_required(pod_term(
                    vec![expr("service", "NotIn", &["securityscan3", "value3"])],
                    "region",
                )),
            pods: vec![scan()],
            want: Status::success(),
        },
        Case {
            name: "a term naming another namespace does not see the existing pod",
            pod: PodBuilder::new("p")
                .label("security", "S1")
                .pod_affinity_required(PodAffinityTerm {
                    namespaces: Some(vec!["DiffNameSpace".into()]),
                    ..service_in(&["securityscan", "value2"], "region")
                }),
            pods: vec![scan().namespace("ns")],
            want: fail_affinity.clone(),
        },
        Case {
            name: "a selector the existing pod does not match is not satisfied",
            pod: PodBuilder::new("p")
                .label("service", "securityscan")
                .pod_affinity_required(service_in(&["antivirusscan", "value2"], "region")),
            pods: vec![scan()],
            want: fail_affinity.clone(),
        },
        Case {
            name: "the requirements of a selector are ANDed",
            pod: PodBuilder::new("p")
                .label("security", "S1")
                .pod_affinity_required(pod_term(
                    vec![
                        expr("service", "Exists", &[]),
                        expr("wrongkey", "DoesNotExist", &[]),
                    ],
                    "region",
                ))
                .pod_affinity_required(pod_term(
                    vec![
                        expr("service", "In", &["securityscan2"]),
                        expr("service", "NotIn", &["WrongValue"]),
                    ],
                    "region",
                )),
            pods: vec![scan()],
            want: fail_affinity.clone(),
        },
        Case {
            name: "affinity satisfied and anti-affinity not violated by the existing pod",
            pod: PodBuilder::new("p")
                .label("security", "S1")
                .pod_affinity_required(service_in(&["securityscan", "value2"], "region"))
                .pod_anti_affinity_required(service_in(&["antivirusscan", "value2"], "node")),
            pods: vec![scan()],
            want: Status::success(),
        },
        Case {
            name: "affinity satisfied but the anti-affinity matches the existing pod's zone",
            pod: PodBuilder::new("p")
                .label("security", "S1")
                .pod_affinity_required(service_in(&["securityscan", "value2"], "region"))
                .pod_anti_affinity_required(service_in(&["securityscan", "value2"], "zone")),
            pods: vec![scan()],
            want: fail_anti.clone(),
        },
        Case {
            name: "the existing pod's anti-affinity matching the incoming pod is respected",
            pod: PodBuilder::new("p")
                .label("service", "securityscan")
                .pod_affinity_required(service_in(&["securityscan", "value2"], "region")),
            pods: vec![
                scan().pod_anti_affinity_required(service_in(&["securityscan", "value2"], "zone"))
            ],
            want: fail_existing.clone(),
        },
        Case {
            name: "an existing pod's anti-affinity is respected by a pod without constraints",
            pod: PodBuilder::new("p").label("service", "securityscan"),
            pods: vec![
                scan().pod_anti_affinity_required(service_in(&["securityscan", "value2"], "zone"))
            ],
            want: fail_existing.clone(),
        },
        Case {
            name: "an existing pod's anti-affinity not matching the incoming pod is fine",
            pod: PodBuilder::new("p").label("service", "securityscan"),
            pods: vec![scan().pod_anti_affinity_required(pod_term(
                vec![expr("service", "NotIn", &["securityscan", "value2"])],
                "zone",
            ))],
            want: Status::success(),
        },
        Case {
            name: "the first pod of a group with affinity to itself may go anywhere",
            pod: PodBuilder::new("p")
                .label("security", "S1")
                .pod_affinity_required(security_s1("region")),
            pods: vec![],
            want: Status::success(),
        },
        Case {
            name: "a pod not matching its own affinity terms needs a matching pod",
            pod: PodBuilder::new("p").pod_affinity_required(security_s1("region")),
            pods: vec![],
            want: fail_affinity.clone(),
        },
        Case {
            name: "a node without the term's topology key fails",
            pod: PodBuilder::new("p")
                .label("security", "S1")
                .pod_affinity_required(security_s1("rack")),
            pods: vec![],
            want: fail_affinity.clone(),
        },
    ];
    for c in cases {
        assert_eq!(filter_one(c.pod, node1(), c.pods), c.want, "{}", c.name);
    }
}

#[test]
fn required_affinity_multiple_nodes() {
    // A pod requiring affinity to `security=S1` in its region: nodes of r1 (where such a pod
    // runs) pass, the r2 node fails.
    let pod = PodBuilder::new("p").pod_affinity_required(security_s1("region"));
    let statuses = filter_all(
        pod,
        vec![
            (
                NodeBuilder::new("m1").label("region", "r1"),
                vec![PodBuilder::new("a").label("security", "S1")],
            ),
            (NodeBuilder::new("m2").label("region", "r1"), vec![]),
            (NodeBuilder::new("m3").label("region", "r2"), vec![]),
        ],
    );
    assert_eq!(
        statuses,
        vec![
            Status::success(),
            Status::success(),
            Status::unresolvable(REASON_AFFINITY)
        ]
    );

    // Anti-affinity against `service=securityscan` on hostname: only the node running such a
    // pod fails.
    let pod = PodBuilder::new("p")
        .pod_anti_affinity_required(service_in(&["securityscan"], "kubernetes.io/hostname"));
    let statuses = filter_all(
        pod,
        vec![
            (
                NodeBuilder::new("m1").label("kubernetes.io/hostname", "m1"),
                vec![PodBuilder::new("a").label("service", "securityscan")],
            ),
            (
                NodeBuilder::new("m2").label("kubernetes.io/hostname", "m2"),
                vec![],
            ),
        ],
    );
    assert_eq!(
        statuses,
        vec![
            Status::unschedulable(REASON_ANTI_AFFINITY),
            Status::success()
        ]
    );

    // An existing pod with anti-affinity to `foo=bar` on zone: the incoming `foo=bar` pod may
    // not go to any node of that zone.
    let existing = PodBuilder::new("a")
        .pod_anti_affinity_required(pod_term(vec![expr("foo", "In", &["bar"])], "zone"));
    let statuses = filter_all(
        PodBuilder::new("p").label("foo", "bar"),
        vec![
            (NodeBuilder::new("m1").label("zone", "z1"), vec![existing]),
            (NodeBuilder::new("m2").label("zone", "z1"), vec![]),
            (NodeBuilder::new("m3").label("zone", "z2"), vec![]),
        ],
    );
    assert_eq!(
        statuses,
        vec![
            Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY),
            Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY),
            Status::success()
        ]
    );
}

#[test]
fn pre_filter_skips_pods_without_required_terms_when_no_existing_anti_affinity() {
    let pod = PodBuilder::new("p")
        .pod_affinity_preferred(5, security_s1("region"))
        .info();
    let snap = snapshot(vec![node1().info()]);
    let mut state = CycleState::new();
    let (_, s) = InterPodAffinity::default().pre_filter(&mut state, &pod, &snap);
    assert_eq!(s.code, Code::Skip);
}

#[test]
fn add_and_remove_pod_update_the_counts() {
    // The incoming pod has anti-affinity to `app=db` on hostname; a nominated `app=db` pod
    // added to m1 makes m1 fail, removing it again makes it pass.
    let pod = PodBuilder::new("p")
        .pod_anti_affinity_required(pod_term(
            vec![expr("app", "In", &["db"])],
            "kubernetes.io/hostname",
        ))
        .info();
    let node = NodeBuilder::new("m1")
        .label("kubernetes.io/hostname", "m1")
        .info();
    let snap = snapshot(vec![node.clone()]);
    let pl = InterPodAffinity::default();
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
    assert!(pl.filter(&state, &pod, &node).is_success());
    let db = PodBuilder::new("db").label("app", "db").node("m1").info();
    assert!(pl.add_pod(&mut state, &pod, &db, &node).is_success());
    assert_eq!(
        pl.filter(&state, &pod, &node),
        Status::unschedulable(REASON_ANTI_AFFINITY)
    );
    assert!(pl.remove_pod(&mut state, &pod, &db, &node).is_success());
    assert!(pl.filter(&state, &pod, &node).is_success());
    let s = state.read::<PreFilterState>(&PRE_FILTER_KEY).unwrap();
    assert!(s.anti_affinity_counts.is_empty(), "a pair at 0 is removed");

    // An added pod whose own anti-affinity matches the incoming pod blocks its zone.
    let pod = PodBuilder::new("q")
        .label("app", "web")
        .pod_affinity_required(pod_term(vec![expr("app", "Exists", &[])], "zone"))
        .info();
    let node = NodeBuilder::new("m1").label("zone", "z1").info();
    let snap = snapshot(vec![node.clone()]);
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
    let guard = PodBuilder::new("guard")
        .label("app", "guard")
        .pod_anti_affinity_required(pod_term(vec![expr("app", "In", &["web"])], "zone"))
        .node("m1")
        .info();
    assert!(pl.add_pod(&mut state, &pod, &guard, &node).is_success());
    assert_eq!(
        pl.filter(&state, &pod, &node),
        Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY)
    );
}

/// PreScore, Score and NormalizeScore over these nodes.
fn scores(
    pl: &InterPodAffinity,
    pod: PodBuilder,
    nodes: Vec<(NodeBuilder, Vec<PodBuilder>)>,
) -> Vec<i64> {
    let pod = pod.info();
    let infos: Vec<NodeInfo> = nodes
        .into_iter()
        .map(|(n, pods)| {
            let name = n.clone().obj().metadata.name.unwrap();
            n.info_with_pods(pods.into_iter().map(|p| p.node(&name).obj()).collect())
        })
        .collect();
    let snap = snapshot(infos.clone());
    let refs: Vec<&NodeInfo> = infos.iter().collect();
    let mut state = CycleState::new();
    let s = pl.pre_score(&mut state, &pod, &refs, &snap);
    if s.is_skip() {
        return vec![0; infos.len()];
    }
    assert!(s.is_success(), "{s:?}");
    let mut out: Vec<i64> = infos
        .iter()
        .map(|n| pl.score(&state, &pod, n).unwrap())
        .collect();
    // The batch gives the same raw scores.
    let mut batch = vec![i64::MIN; infos.len()];
    assert!(pl.score_nodes(&state, &pod, &refs, 0, &mut batch).is_ok());
    assert_eq!(batch, out, "score_nodes and score");
    assert!(pl.normalize_score(&state, &pod, &mut out).is_success());
    out
}

fn region_nodes() -> Vec<NodeBuilder> {
    vec![
        NodeBuilder::new("m1").label("region", "China"),
        NodeBuilder::new("m2").label("region", "India"),
        NodeBuilder::new("m3").label("region", "China"),
    ]
}

#[test]
fn preferred_affinity_scores() {
    let pl = InterPodAffinity::default();
    // Preferred affinity (weight 5) to `security=S1` in the region: the region of the matching
    // pod scores 100, the other 0.
    let pod = PodBuilder::new("p").pod_affinity_preferred(5, security_s1("region"));
    let [n1, n2, n3]: [NodeBuilder; 3] = region_nodes().try_into().unwrap();
    let got = scores(
        &pl,
        pod,
        vec![
            (n1, vec![PodBuilder::new("a").label("security", "S1")]),
            (n2, vec![]),
            (n3, vec![]),
        ],
    );
    assert_eq!(got, vec![100, 0, 100]);

    // Preferred anti-affinity: the region of the matching pod scores 0.
    let pod = PodBuilder::new("p").pod_anti_affinity_preferred(5, security_s1("region"));
    let [n1, n2, n3]: [NodeBuilder; 3] = region_nodes().try_into().unwrap();
    let got = scores(
        &pl,
        pod,
        vec![
            (n1, vec![PodBuilder::new("a").label("security", "S1")]),
            (n2, vec![]),
            (n3, vec![]),
        ],
    );
    assert_eq!(got, vec![0, 100, 0]);

    // No pod matches: every node scores the same (0).
    let pod = PodBuilder::new("p").pod_affinity_preferred(5, security_s1("region"));
    let got = scores(
        &pl,
        pod,
        region_nodes().into_iter().map(|n| (n, vec![])).collect(),
    );
    assert_eq!(got, vec![0, 0, 0]);
}

#[test]
fn preferred_terms_on_two_keys_add_up() {
    let pl = InterPodAffinity::default();
    // Weight 5 in the region, 3 in the zone: raw scores 5 + 3, 3 and 5.
    let pod = PodBuilder::new("p")
        .pod_affinity_preferred(5, security_s1("region"))
        .pod_affinity_preferred(3, security_s1("zone"));
    let nodes = vec![
        NodeBuilder::new("m1")
            .label("region", "China")
            .label("zone", "z1"),
        NodeBuilder::new("m2")
            .label("region", "India")
            .label("zone", "z1"),
        NodeBuilder::new("m3")
            .label("region", "China")
            .label("zone", "z2"),
        NodeBuilder::new("m4").label("other", "x"),
    ];
    let mut pods = vec![
        vec![PodBuilder::new("a").label("security", "S1")],
        vec![],
        vec![],
        vec![],
    ];
    let got = scores(&pl, pod, nodes.into_iter().zip(pods.drain(..)).collect());
    // Min 0 (m4, no key), max 8: 100 * 3 / 8 = 37.5 and 100 * 5 / 8 = 62.5, truncated.
    assert_eq!(got, vec![100, 37, 62, 0]);
}

#[test]
fn one_key_scores_by_the_previous_nodes_place_and_pair() {
    let pl = InterPodAffinity::default();
    // One recorded key (the zone): weight 3 where a `security=S1` pod runs (z1, z3 twice).
    let pod = PodBuilder::new("p").pod_affinity_preferred(3, security_s1("zone"));
    let s1 = || PodBuilder::new("a").label("security", "S1");
    let nodes = vec![
        // The zone at another place among a node's labels (a label before it), then
        // missing, then back; the same pair twice in a row and pairs in turn.
        (NodeBuilder::new("m1").label("zone", "z1"), vec![s1()]),
        (
            NodeBuilder::new("m2").label("a", "x").label("zone", "z1"),
            vec![],
        ),
        (
            NodeBuilder::new("m3").label("a", "x").label("zone", "z2"),
            vec![],
        ),
        (NodeBuilder::new("m4").label("a", "x"), vec![]),
        (NodeBuilder::new("m5").label("zone", "z3"), vec![s1(), s1()]),
        (NodeBuilder::new("m6").label("zone", "z1"), vec![]),
        (NodeBuilder::new("m7").label("zone", "z3"), vec![]),
        (NodeBuilder::new("m8").label("zone", "z2"), vec![]),
    ];
    // Raw 3, 3, 0, 0, 6, 3, 6, 0 (checked against `score` by `scores`), min 0, max 6.
    assert_eq!(scores(&pl, pod, nodes), vec![50, 50, 0, 0, 100, 50, 100, 0]);
}

#[test]
fn hard_pod_affinity_weight_scores_the_existing_pods_required_terms() {
    // An existing pod requires affinity to `security=S1` pods in its region; the incoming
    // `security=S1` pod gets hardPodAffinityWeight there.
    let existing = || {
        PodBuilder::new("a")
            .label("app", "db")
            .pod_affinity_required(security_s1("region"))
    };
    let pod = || PodBuilder::new("p").label("security", "S1");
    let nodes = || {
        let [n1, n2, n3]: [NodeBuilder; 3] = region_nodes().try_into().unwrap();
        vec![(n1, vec![existing()]), (n2, vec![]), (n3, vec![])]
    };
    assert_eq!(
        scores(&InterPodAffinity::default(), pod(), nodes()),
        vec![100, 0, 100]
    );
    let zero = InterPodAffinity::new(Some(&json!({"hardPodAffinityWeight": 0}))).unwrap();
    assert_eq!(scores(&zero, pod(), nodes()), vec![0, 0, 0]);
    // With ignorePreferredTermsOfExistingPods and no preferred terms of its own, the pod
    // skips scoring.
    let ignore =
        InterPodAffinity::new(Some(&json!({"ignorePreferredTermsOfExistingPods": true}))).unwrap();
    let pod_info = pod().info();
    let infos: Vec<NodeInfo> = nodes()
        .into_iter()
        .map(|(n, pods)| {
            let name = n.clone().obj().metadata.name.unwrap();
            n.info_with_pods(pods.into_iter().map(|p| p.node(&name).obj()).collect())
        })
        .collect();
    let refs: Vec<&NodeInfo> = infos.iter().collect();
    let snap = snapshot(infos.clone());
    let mut state = CycleState::new();
    assert!(ignore
        .pre_score(&mut state, &pod_info, &refs, &snap)
        .is_skip());
}

#[test]
fn existing_pods_preferred_anti_affinity_lowers_scores() {
    let existing = PodBuilder::new("a").pod_anti_affinity_preferred(10, security_s1("region"));
    let [n1, n2, n3]: [NodeBuilder; 3] = region_nodes().try_into().unwrap();
    let got = scores(
        &InterPodAffinity::default(),
        PodBuilder::new("p").label("security", "S1"),
        vec![(n1, vec![existing]), (n2, vec![]), (n3, vec![])],
    );
    assert_eq!(got, vec![0, 100, 0]);
}

#[test]
fn namespace_selectors_use_the_namespace_labels() {
    // The incoming pod's term selects namespaces labelled team=x; the matching pod runs in
    // such a namespace.
    let term = PodAffinityTerm {
        namespace_selector: Some(crate::plugins::testing::selector(vec![expr(
            "team",
            "In",
            &["x"],
        )])),
        ..security_s1("region")
    };
    let pod = PodBuilder::new("p").pod_affinity_required(term).info();
    let infos = vec![
        NodeBuilder::new("m1")
            .label("region", "r1")
            .info_with_pods(vec![PodBuilder::new("a")
                .namespace("team-x")
                .label("security", "S1")
                .node("m1")
                .obj()]),
        NodeBuilder::new("m2").label("region", "r2").info(),
    ];
    let mut snap = snapshot(infos.clone());
    let mut ns = crate::cache::NamespaceLabels::new();
    ns.insert(
        "team-x".into(),
        [("team".to_string(), "x".to_string())].into(),
    );
    ns.insert("other".into(), Default::default());
    snap.namespace_labels = Arc::new(ns);
    let pl = InterPodAffinity::default();
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
    assert!(pl.filter(&state, &pod, &infos[0]).is_success());
    assert_eq!(
        pl.filter(&state, &pod, &infos[1]),
        Status::unresolvable(REASON_AFFINITY)
    );
}

#[test]
fn args_are_validated() {
    assert!(InterPodAffinity::new(None).is_ok());
    let err = InterPodAffinity::new(Some(&json!({"hardPodAffinityWeight": 101})))
        .err()
        .unwrap();
    assert_eq!(err.field, "hardPodAffinityWeight");
    assert_eq!(
        err.message,
        "Invalid value: 101: not in valid range [0, 100]"
    );
    assert!(InterPodAffinity::new(Some(&json!({"hardPodAffinityWeight": -1}))).is_err());
    assert!(InterPodAffinity::new(Some(&json!({"unknown": 1}))).is_err());
}

#[test]
fn queueing_hints() {
    use crate::framework::EventObject;
    let pod: kubeplane_api::StoredPod = PodBuilder::new("p")
        .pod_affinity_required(security_s1("region"))
        .pod_anti_affinity_required(service_in(&["scan"], "region"))
        .obj()
        .into();
    let s1 = PodBuilder::new("a")
        .label("security", "S1")
        .node("m1")
        .obj();
    let plain = PodBuilder::new("b").node("m1").obj();
    let unscheduled = PodBuilder::new("c").label("security", "S1").obj();
    let scan = PodBuilder::new("d")
        .label("service", "scan")
        .node("m1")
        .obj();
    let hint = |old: Option<&k8s_openapi::api::core::v1::Pod>,
                new: Option<&k8s_openapi::api::core::v1::Pod>| {
        is_schedulable_after_pod_change(
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
    assert_eq!(
        hint(None, Some(&s1)),
        QueueingHint::Queue,
        "matching pod added"
    );
    assert_eq!(hint(None, Some(&plain)), QueueingHint::QueueSkip);
    assert_eq!(
        hint(None, Some(&unscheduled)),
        QueueingHint::QueueSkip,
        "unscheduled pods never help"
    );
    assert_eq!(
        hint(Some(&scan), None),
        QueueingHint::Queue,
        "anti-affinity pod deleted"
    );
    assert_eq!(hint(Some(&plain), None), QueueingHint::QueueSkip);
    assert_eq!(
        hint(Some(&plain), Some(&s1)),
        QueueingHint::Queue,
        "label update"
    );

    let node = |labels: &[(&str, &str)]| {
        let mut b = NodeBuilder::new("n");
        for (k, v) in labels {
            b = b.label(k, v);
        }
        b.obj()
    };
    let with_region = node(&[("region", "r1")]);
    let without = node(&[("zone", "z")]);
    assert_eq!(
        is_schedulable_after_node_change(
            &pod,
            None,
            Some(EventObject::Node(&with_region.clone().into()))
        ),
        Ok(QueueingHint::Queue)
    );
    assert_eq!(
        is_schedulable_after_node_change(
            &pod,
            None,
            Some(EventObject::Node(&without.clone().into()))
        ),
        Ok(QueueingHint::QueueSkip)
    );
}

#[test]
fn the_term_namespace_defaults_to_the_pods_own() {
    let p: PodInfo = PodBuilder::new("p")
        .namespace("ns1")
        .pod_affinity_required(security_s1("region"))
        .info();
    let terms = p.affinity_terms.as_ref().unwrap();
    assert_eq!(
        terms.required_affinity[0].namespaces,
        std::collections::BTreeSet::from(["ns1".to_string()])
    );
}

#[test]
fn the_memo_gives_the_same_results_as_a_fresh_plugin() {
    let pod = PodBuilder::new("p")
        .label("app", "web")
        .pod_affinity_required(pod_term(vec![expr("app", "In", &["db"])], "zone"))
        .pod_anti_affinity_required(pod_term(
            vec![expr("app", "In", &["web"])],
            "kubernetes.io/hostname",
        ))
        .info();
    let node = |name: &str, zone: &str, pods: Vec<PodBuilder>| {
        Arc::new(
            NodeBuilder::new(name)
                .label("zone", zone)
                .label("kubernetes.io/hostname", name)
                .info_with_pods(pods.into_iter().map(|p| p.node(name).obj()).collect()),
        )
    };
    let mut snap = snapshot(vec![]);
    snap.node_infos = vec![
        node("m1", "z1", vec![PodBuilder::new("db").label("app", "db")]),
        node("m2", "z1", vec![PodBuilder::new("w").label("app", "web")]),
        node("m3", "z2", vec![]),
    ];
    snap.count_affinity_nodes();
    let reused = InterPodAffinity::default();
    let mut state = CycleState::new();
    assert!(reused.pre_filter(&mut state, &pod, &snap).1.is_success());
    // The web pod leaves m2, a db pod and a guard with anti-affinity to web pods start on m3.
    snap.node_infos[1] = node("m2", "z1", vec![]);
    snap.node_infos[2] = node(
        "m3",
        "z2",
        vec![
            PodBuilder::new("db2").label("app", "db"),
            PodBuilder::new("guard").pod_anti_affinity_required(pod_term(
                vec![expr("app", "In", &["web"])],
                "kubernetes.io/hostname",
            )),
        ],
    );
    snap.count_affinity_nodes();
    let results: Vec<Vec<Status>> = [&reused, &InterPodAffinity::default()]
        .iter()
        .map(|pl| {
            let mut state = CycleState::new();
            assert!(pl.pre_filter(&mut state, &pod, &snap).1.is_success());
            snap.node_infos
                .iter()
                .map(|n| pl.filter(&state, &pod, n))
                .collect()
        })
        .collect();
    assert_eq!(results[0], results[1]);
    assert_eq!(
        results[0],
        vec![
            Status::success(),
            Status::success(),
            Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY)
        ]
    );
}

#[test]
fn the_positive_bits_follow_the_counts_through_every_change() {
    let mut c = TopologyCounts::default();
    assert!(!c.positive(0) && !c.positive(1_000_000));
    // Pairs in several words, counts going up, down, below 0 and back.
    let steps: [(u32, i64); 12] = [
        (3, 1),
        (130, 2),
        (3, -1),
        (64, -1),
        (130, -1),
        (64, 2),
        (7, 0),
        (130, -1),
        (63, 5),
        (64, -1),
        (200, 1),
        (200, -2),
    ];
    for (k, &(pair, delta)) in steps.iter().enumerate() {
        c.add(pair, delta);
        for p in [3, 7, 63, 64, 130, 200, 201] {
            assert_eq!(c.positive(p), c.get(p) > 0, "pair {p} after step {k}");
        }
    }
    assert_eq!((c.get(63), c.get(64), c.get(200)), (5, 0, -1));
    assert!(c.positive(63) && !c.positive(64) && !c.positive(200) && !c.positive(3));
    // A clone (AddPod copies the shared counts) keeps its own bits.
    let mut d = c.clone();
    d.add(63, -5);
    assert!(c.positive(63) && !d.positive(63));
    // A node's pairs: any positive one.
    let node = NodeBuilder::new("n1").label("t-positive-zone", "z1").info();
    let pair = node
        .label_pair(crate::framework::topology::key_id("t-positive-zone"))
        .unwrap();
    assert!(!c.any_positive(&node));
    c.add(pair, 1);
    assert!(c.any_positive(&node));
    c.add(pair, -1);
    assert!(!c.any_positive(&node) && c.get(pair) == 0);
}

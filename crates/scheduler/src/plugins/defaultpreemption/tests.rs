//! Tests of DefaultPreemption: eligibility, candidates, victim selection and node choice, with upstream's cases.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::policy::v1::{
    PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubeplane_api::Object;
use kubeplane_core::features::FeatureGates;
use kubeplane_core::SimTime;
use kubeplane_registry::testing::TestClient;
use serde_json::json;

use super::*;
use crate::framework::{
    Code, CycleState, Framework, NodeInfo, NominatingMode, PodInfo, PostFilterInput,
    PostFilterResult, PreemptionTrace, Status,
};
use crate::plugins::testing::{snapshot, NodeBuilder, PodBuilder, PodBuilderExt};

fn features(async_preemption: bool) -> FeatureGates {
    let mut overrides = BTreeMap::new();
    overrides.insert("SchedulerAsyncPreemption".to_string(), async_preemption);
    FeatureGates::with_overrides(&overrides).unwrap()
}

fn default_framework() -> Framework {
    crate::config::resolve(None, &FeatureGates::default())
        .unwrap()
        .frameworks
        .remove(0)
}

/// A small cluster: nodes (with the pods bound to them) known to the snapshot and the store.
struct Env {
    client: TestClient,
    fwk: Framework,
    nodes: Vec<NodeInfo>,
    nominated: BTreeMap<String, Vec<Arc<PodInfo>>>,
}

fn node(name: &str, cpu: &str) -> NodeBuilder {
    NodeBuilder::new(name)
        .label("kubernetes.io/hostname", name)
        .alloc(&[("cpu", cpu), ("memory", "10Gi"), ("pods", "110")])
}

fn pod(name: &str, priority: i32, cpu: &str) -> PodBuilder {
    PodBuilder::new(name)
        .priority(priority)
        .req(&[("cpu", cpu)])
        .start_time("2025-01-01T00:00:00Z")
}

impl Env {
    fn new(nodes: Vec<(NodeBuilder, Vec<PodBuilder>)>) -> Env {
        let mut client = TestClient::new(1);
        let mut infos = Vec::new();
        for (n, pods) in nodes {
            let name = n.clone().obj().metadata.name.unwrap();
            let pods: Vec<_> = pods.into_iter().map(|p| p.node(&name).obj()).collect();
            for p in &pods {
                kubeplane_registry::client::create(
                    &mut client.store,
                    Object::Pod(Arc::new(p.clone().into())),
                    SimTime::ZERO,
                )
                .unwrap();
            }
            infos.push(n.info_with_pods(pods));
        }
        client.store.take_events();
        Env {
            client,
            fwk: default_framework(),
            nodes: infos,
            nominated: BTreeMap::new(),
        }
    }

    fn pdb(&mut self, name: &str, app: &str, disruptions_allowed: i32) {
        let pdb = PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                selector: Some(LabelSelector {
                    match_labels: Some([("app".to_string(), app.to_string())].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: Some(PodDisruptionBudgetStatus {
                disruptions_allowed,
                ..Default::default()
            }),
        };
        kubeplane_registry::client::create(
            &mut self.client.store,
            Object::PodDisruptionBudget(Arc::new(pdb)),
            SimTime::ZERO,
        )
        .unwrap();
    }

    /// Adds the preemptor to the store, filters it on every node, and runs PostFilter.
    fn post_filter(
        &mut self,
        pl: &DefaultPreemption,
        preemptor: PodBuilder,
        random: u64,
    ) -> (Option<PostFilterResult>, Status, PreemptionTrace) {
        let obj = preemptor.obj();
        kubeplane_registry::client::create(
            &mut self.client.store,
            Object::Pod(Arc::new(obj.clone().into())),
            SimTime::ZERO,
        )
        .unwrap();
        let pod = PodInfo::new(Arc::new(obj.into()));
        let snap = snapshot(self.nodes.clone());
        let mut state = CycleState::new();
        let pre = self.fwk.run_pre_filter_plugins(&mut state, &pod, &snap);
        let mut statuses = crate::framework::NodeToStatus::default();
        let absent = if pre.status.is_success() {
            for (place, n) in self.nodes.iter().enumerate() {
                let s = self.fwk.run_filter_plugins(&state, &pod, n);
                assert!(
                    !s.is_success(),
                    "the preemptor fits {} without preemption",
                    n.name
                );
                statuses.insert(place, s);
            }
            Status::unresolvable("unused")
        } else {
            pre.status
        };
        let nominated = self.nominated.clone();
        let nominated_fn = move |node: &str| nominated.get(node).cloned().unwrap_or_default();
        let trace = RefCell::new(None);
        let input = PostFilterInput {
            framework: &self.fwk,
            snapshot: &snap,
            nominated_pods: &nominated_fn,
            now: SimTime::ZERO,
            random,
            statuses: &statuses,
            absent_status: &absent,
            preemption_trace: Some(&trace),
        };
        let (r, s) = pl.post_filter(&state, &pod, &input, &mut self.client);
        (r, s, trace.into_inner().unwrap_or_default())
    }

    fn pod_exists(&self, name: &str) -> bool {
        self.client.store.get_pod("default", name).is_some()
    }
}

fn sync_plugin() -> DefaultPreemption {
    DefaultPreemption::new(None, &features(false)).unwrap()
}

fn nominated_to(r: &Option<PostFilterResult>) -> Option<&str> {
    match r.as_ref().map(|r| &r.nominating) {
        Some(NominatingMode::Override(n)) => Some(n.as_str()),
        _ => None,
    }
}

#[test]
fn the_number_of_candidates_is_ten_percent_of_the_potential_nodes_but_at_least_100() {
    let pl = sync_plugin();
    for (n, want) in [(10, 10), (50, 50), (1000, 100), (5000, 500), (0, 0)] {
        assert_eq!(pl.num_candidates(n), want, "{n} potential nodes");
    }
    assert_eq!(calculate_num_candidates(1000, 40, 100), 400);
    assert_eq!(calculate_num_candidates(1000, 0, 5), 5);
}

#[test]
fn args_are_validated() {
    let f = FeatureGates::default();
    let cases = [
        (
            json!({"minCandidateNodesPercentage": 101}),
            "minCandidateNodesPercentage",
            "Invalid value: 101: not in valid range [0, 100]",
        ),
        (
            json!({"minCandidateNodesAbsolute": -1}),
            "minCandidateNodesAbsolute",
            "Invalid value: -1: not in valid range [0, inf)",
        ),
        (
            json!({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}),
            "minCandidateNodesPercentage",
            "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
        ),
    ];
    for (args, field, message) in cases {
        let err = DefaultPreemption::new(Some(&args), &f).err().unwrap();
        assert_eq!((err.field.as_str(), err.message.as_str()), (field, message));
    }
    let pl = DefaultPreemption::new(Some(&json!({"minCandidateNodesPercentage": 40})), &f).unwrap();
    assert_eq!(pl.num_candidates(1000), 400);
}

/// A candidate on `nodeK`, the node at place K - 1.
fn candidate(node: &str, victims: Vec<PodBuilder>, violations: i64) -> Candidate {
    let k: usize = node.trim_start_matches("node").parse().unwrap();
    Candidate {
        place: k - 1,
        victims: victims.into_iter().map(|p| Arc::new(p.info())).collect(),
        num_pdb_violations: violations,
    }
}

fn now() -> jiff::Timestamp {
    "2025-06-01T00:00:00Z".parse().unwrap()
}

#[test]
fn pick_one_node_criteria_in_order() {
    let p = |name: &str, prio: i32| pod(name, prio, "100m");
    struct Case {
        name: &'static str,
        candidates: Vec<Candidate>,
        want: &'static str,
    }
    let cases = vec![
        Case {
            name: "fewest PDB violations wins first",
            candidates: vec![
                candidate("node1", vec![p("a", 1)], 1),
                candidate("node2", vec![p("b", 100), p("c", 100)], 0),
            ],
            want: "node2",
        },
        Case {
            name: "the lowest highest-priority victim wins",
            candidates: vec![
                candidate("node1", vec![p("a", 10)], 0),
                candidate("node2", vec![p("b", 5), p("c", 5)], 0),
            ],
            want: "node2",
        },
        Case {
            name: "then the smallest sum of priorities",
            candidates: vec![
                candidate("node1", vec![p("a", 5), p("b", 5), p("c", 5)], 0),
                candidate("node2", vec![p("d", 5), p("e", 1)], 0),
            ],
            want: "node2",
        },
        Case {
            name: "negative priorities are offset so more pods weigh more",
            candidates: vec![
                candidate("node1", vec![p("a", -5), p("b", -5)], 0),
                candidate("node2", vec![p("c", -5)], 0),
            ],
            want: "node2",
        },
        Case {
            name: "then the fewest victims",
            candidates: vec![
                candidate("node1", vec![p("a", 5), p("b", 0), p("c", 0)], 0),
                candidate("node2", vec![p("d", 5), p("e", 0)], 0),
            ],
            want: "node2",
        },
        Case {
            name: "then the latest start of the highest-priority victims",
            candidates: vec![
                candidate(
                    "node1",
                    vec![
                        p("a", 5).start_time("2019-01-01T00:00:00Z"),
                        p("b", 1).start_time("2019-06-01T00:00:00Z"),
                    ],
                    0,
                ),
                candidate(
                    "node2",
                    vec![
                        p("c", 5).start_time("2019-03-01T00:00:00Z"),
                        p("d", 1).start_time("2019-01-01T00:00:00Z"),
                    ],
                    0,
                ),
            ],
            want: "node2",
        },
        Case {
            name: "full ties go to the first candidate",
            candidates: vec![
                candidate("node1", vec![p("a", 5)], 0),
                candidate("node2", vec![p("b", 5)], 0),
            ],
            want: "node1",
        },
    ];
    for c in cases {
        let i = pick_one_node_for_preemption(&c.candidates, now()).unwrap();
        let node = format!("node{}", c.candidates[i].place + 1);
        assert_eq!(node, c.want, "{}", c.name);
    }
    assert_eq!(pick_one_node_for_preemption(&[], now()), None);
}

#[test]
fn more_important_pods_have_higher_priority_or_started_earlier() {
    let a = pod("a", 10, "1").start_time("2020-01-01T00:00:00Z").info();
    let b = pod("b", 5, "1").start_time("2019-01-01T00:00:00Z").info();
    let c = pod("c", 5, "1").start_time("2021-01-01T00:00:00Z").info();
    assert!(more_important_pod(&a, &b, now()));
    assert!(more_important_pod(&b, &c, now()));
    assert!(!more_important_pod(&c, &b, now()));
    // A pod that has not started counts as starting now.
    let d = PodBuilder::new("d").priority(5).info();
    assert!(more_important_pod(&c, &d, now()));
}

#[test]
fn sorting_by_importance_orders_as_more_important_pod_with_ties_kept() {
    let starts = [
        None,
        Some("2019-01-01T00:00:00Z"),
        Some("2030-01-01T00:00:00Z"),
    ];
    let mut pods: Vec<Arc<PodInfo>> = Vec::new();
    for (i, priority) in [5, 0, 10, 5, 0, 10, 5, 5, 0].into_iter().enumerate() {
        for (j, start) in starts.iter().enumerate() {
            let mut b = PodBuilder::new(&format!("p{i}-{j}")).priority(priority);
            if let Some(t) = start {
                b = b.start_time(t);
            }
            pods.push(Arc::new(b.info()));
        }
    }
    let mut want = pods.clone();
    want.sort_by(|a, b| {
        match (
            more_important_pod(a, b, now()),
            more_important_pod(b, a, now()),
        ) {
            (true, _) => std::cmp::Ordering::Less,
            (_, true) => std::cmp::Ordering::Greater,
            _ => std::cmp::Ordering::Equal,
        }
    });
    let mut got = pods;
    super::evaluator::sort_by_importance(&mut got, now());
    let names = |v: &[Arc<PodInfo>]| v.iter().map(|p| p.name().to_string()).collect::<Vec<_>>();
    assert_eq!(names(&got), names(&want));
    assert_eq!(got[0].name(), "p2-1", "priority 10, started first");
}

fn pdb_info(app: &str, allowed: i32, disrupted: &[&str]) -> PdbInfo {
    PdbInfo {
        namespace: "default".into(),
        selector: Some(kubeplane_core::labels::parse(&format!("app={app}")).unwrap()),
        disruptions_allowed: allowed,
        disrupted_pods: disrupted
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>(),
    }
}

#[test]
fn pods_are_split_by_whether_their_eviction_violates_a_budget() {
    let pods: Vec<Arc<PodInfo>> = ["a", "b", "c"]
        .iter()
        .map(|n| Arc::new(PodBuilder::new(n).label("app", "web").info()))
        .collect();
    let names = |v: &[Arc<PodInfo>]| v.iter().map(|p| p.name().to_string()).collect::<Vec<_>>();
    // One disruption allowed: the first pod uses it, the others violate.
    let (violating, ok) = filter_pods_with_pdb_violation(&pods, &[pdb_info("web", 1, &[])]);
    assert_eq!(
        (names(&violating), names(&ok)),
        (vec!["b".into(), "c".into()], vec!["a".to_string()])
    );
    // A pod already listed as disrupted does not use up the budget.
    let (violating, _) = filter_pods_with_pdb_violation(&pods, &[pdb_info("web", 1, &["a"])]);
    assert_eq!(names(&violating), vec!["c".to_string()]);
    // Another namespace's budget, an empty selector, and unlabelled pods do not count.
    let mut other = pdb_info("web", 0, &[]);
    other.namespace = "other".into();
    let mut empty = pdb_info("web", 0, &[]);
    empty.selector = Some(kubeplane_core::labels::Selector::everything());
    let (violating, _) = filter_pods_with_pdb_violation(&pods, &[other, empty]);
    assert!(violating.is_empty());
    let bare = vec![Arc::new(PodBuilder::new("x").info())];
    let (violating, _) = filter_pods_with_pdb_violation(&bare, &[pdb_info("web", 0, &[])]);
    assert!(violating.is_empty());
}

#[test]
fn a_pod_with_preemption_policy_never_is_not_eligible() {
    let mut env = Env::new(vec![(node("node1", "1"), vec![pod("low", 0, "800m")])]);
    let (r, s, _) = env.post_filter(
        &sync_plugin(),
        pod("p", 100, "500m").preemption_policy("Never"),
        0,
    );
    assert!(r.is_none(), "the nomination stays as it is");
    assert_eq!(
        s,
        Status::unschedulable("preemption: not eligible due to preemptionPolicy=Never.")
    );
    assert!(env.pod_exists("low"));
}

#[test]
fn a_terminating_victim_on_the_nominated_node_makes_the_pod_wait() {
    let nodes = || {
        vec![(
            node("node1", "1"),
            vec![pod("low", 0, "800m").terminating_by_preemption()],
        )]
    };
    let mut env = Env::new(nodes());
    let (r, s, _) = env.post_filter(&sync_plugin(), pod("p", 100, "500m").nominated("node1"), 0);
    assert!(r.is_none());
    assert_eq!(
        s.message(),
        "preemption: not eligible due to a terminating pod on the nominated node."
    );

    // When the nominated node cannot work anyway (unresolvable), the pod may preempt again.
    let mut env = Env::new(nodes());
    env.nodes[0] = node("node1", "1")
        .unschedulable(true)
        .info_with_pods(vec![pod("low", 0, "800m")
            .terminating_by_preemption()
            .node("node1")
            .obj()]);
    let (_, s, _) = env.post_filter(&sync_plugin(), pod("p", 100, "500m").nominated("node1"), 0);
    assert_ne!(
        s.message(),
        "preemption: not eligible due to a terminating pod on the nominated node."
    );
}

#[test]
fn nodes_rejected_as_unresolvable_are_never_candidates() {
    // node1 is unschedulable (UnschedulableAndUnresolvable); node2 has no lower-priority pod.
    let mut env = Env::new(vec![
        (
            node("node1", "1").unschedulable(true),
            vec![pod("low1", 0, "800m")],
        ),
        (node("node2", "1"), vec![pod("high", 1000, "800m")]),
    ]);
    let (r, s, trace) = env.post_filter(&sync_plugin(), pod("p", 100, "500m"), 0);
    assert_eq!(nominated_to(&r), Some(""), "the nomination is cleared");
    assert_eq!(s.code, Code::Unschedulable);
    assert_eq!(
        s.message(),
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    );
    assert!(trace.candidates.is_empty());
    assert!(env.pod_exists("low1"));

    let mut env = Env::new(vec![(node("node1", "1").unschedulable(true), vec![])]);
    let (_, s, _) = env.post_filter(&sync_plugin(), pod("p", 100, "500m"), 0);
    assert_eq!(
        s.message(),
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    );
}

#[test]
fn the_lower_priority_pods_of_the_best_node_are_evicted() {
    // node1's victim has priority 10, node2's two victims 5: node2 is chosen.
    let mut env = Env::new(vec![
        (node("node1", "1"), vec![pod("m1", 10, "800m")]),
        (
            node("node2", "1"),
            vec![pod("m2a", 5, "400m"), pod("m2b", 5, "400m")],
        ),
    ]);
    let (r, s, trace) = env.post_filter(&sync_plugin(), pod("p", 100, "900m"), 0);
    assert!(s.is_success(), "{s:?}");
    assert_eq!(nominated_to(&r), Some("node2"));
    assert_eq!(trace.chosen.as_deref(), Some("node2"));
    assert_eq!(trace.candidates.len(), 2);
    assert!(env.pod_exists("m1"));
    // The victims have terminationGracePeriodSeconds unset (30 s): they are Terminating with
    // the DisruptionTarget condition.
    for v in ["m2a", "m2b"] {
        let p = env.client.store.get_pod("default", v).unwrap();
        assert!(
            p.metadata.deletion_timestamp.is_some(),
            "{v} is terminating"
        );
        assert!(pod_terminating_by_preemption(p));
    }
    let events = env.client.events_with_reason(EVENT_PREEMPTED);
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].message(), "Preempted by pod uid-p on node node2");
    assert_eq!(events[0].type_(), "Normal");
}

#[test]
fn victims_are_reprieved_most_important_first() {
    // node1 (1 cpu) runs a medium-priority 600m pod and a low-priority 100m pod; a 700m
    // preemptor only needs the medium one gone.
    let mut env = Env::new(vec![(
        node("node1", "1"),
        vec![pod("low", 1, "100m"), pod("medium", 5, "600m")],
    )]);
    let (r, s, trace) = env.post_filter(&sync_plugin(), pod("p", 100, "700m"), 0);
    assert!(s.is_success(), "{s:?}");
    assert_eq!(nominated_to(&r), Some("node1"));
    assert_eq!(
        trace.candidates[0].victims,
        vec!["default/medium".to_string()]
    );
    assert!(env.pod_exists("low"));
}

#[test]
fn a_node_whose_victims_would_violate_a_budget_is_avoided() {
    let mut env = Env::new(vec![
        (
            node("node1", "1"),
            vec![pod("guarded", 1, "800m").label("app", "db")],
        ),
        (
            node("node2", "1"),
            vec![pod("free", 5, "800m").label("app", "web")],
        ),
    ]);
    env.pdb("db", "db", 0);
    let (r, s, trace) = env.post_filter(&sync_plugin(), pod("p", 100, "500m"), 0);
    assert!(s.is_success());
    // node1's victim has the lower priority, but evicting it violates the budget.
    assert_eq!(nominated_to(&r), Some("node2"));
    let violations: BTreeMap<&str, i64> = trace
        .candidates
        .iter()
        .map(|c| (c.node.as_str(), c.pdb_violations))
        .collect();
    assert_eq!(violations, BTreeMap::from([("node1", 1), ("node2", 0)]));
    assert_eq!(
        trace.candidates[0].node, "node2",
        "non-violating candidates come first"
    );
    assert!(env.pod_exists("guarded"));
}

#[test]
fn lower_priority_pods_nominated_to_the_node_lose_their_nomination() {
    let mut env = Env::new(vec![(node("node1", "1"), vec![pod("low", 0, "800m")])]);
    let waiting = pod("waiting", 50, "100m").nominated("node1");
    kubeplane_registry::client::create(
        &mut env.client.store,
        Object::Pod(Arc::new(waiting.clone().obj().into())),
        SimTime::ZERO,
    )
    .unwrap();
    env.nominated
        .insert("node1".into(), vec![Arc::new(waiting.info())]);
    let (r, s, _) = env.post_filter(&sync_plugin(), pod("p", 100, "900m"), 0);
    assert!(s.is_success());
    assert_eq!(nominated_to(&r), Some("node1"));
    let w = env.client.store.get_pod("default", "waiting").unwrap();
    assert_eq!(w.status().unwrap().nominated_node_name(), None);
}

#[test]
fn async_preemption_evicts_after_the_cycle_and_gates_the_preemptor_meanwhile() {
    let pl = DefaultPreemption::new(None, &features(true)).unwrap();
    let mut env = Env::new(vec![(node("node1", "1"), vec![pod("low", 0, "800m")])]);
    let (r, s, _) = env.post_filter(&pl, pod("p", 100, "900m"), 0);
    assert!(s.is_success());
    assert_eq!(nominated_to(&r), Some("node1"));
    // Nothing evicted yet; the preemptor is gated.
    assert!(env
        .client
        .store
        .get_pod("default", "low")
        .unwrap()
        .metadata
        .deletion_timestamp
        .is_none());
    let preemptor = PodBuilder::new("p").info();
    assert_eq!(
        pl.pre_enqueue(&preemptor),
        Status::unresolvable(REASON_WAITING)
    );
    let activate = pl.finish_async_work(SimTime::ZERO, &mut env.client);
    assert!(activate.is_empty());
    assert!(pod_terminating_by_preemption(
        env.client.store.get_pod("default", "low").unwrap()
    ));
    assert!(pl.pre_enqueue(&preemptor).is_success());
    assert_eq!(env.client.events_with_reason(EVENT_PREEMPTED).len(), 1);
}

#[test]
fn only_potential_nodes_from_the_offset_are_dry_run_until_enough_candidates() {
    // 3 nodes, 2 candidates wanted (absolute 2): starting at offset 1, node2 and node3 are
    // dry-run, node1 is not.
    let pl = DefaultPreemption::new(
        Some(&json!({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 2})),
        &features(false),
    )
    .unwrap();
    let mut env = Env::new(vec![
        (node("node1", "1"), vec![pod("v1", 0, "800m")]),
        (node("node2", "1"), vec![pod("v2", 0, "800m")]),
        (node("node3", "1"), vec![pod("v3", 0, "800m")]),
    ]);
    let (_, _, trace) = env.post_filter(&pl, pod("p", 100, "900m"), 1);
    let nodes: Vec<&str> = trace.candidates.iter().map(|c| c.node.as_str()).collect();
    assert_eq!(nodes, vec!["node2", "node3"]);
}

#[test]
fn the_explained_choice_names_the_criterion_that_decided() {
    let p = |name: &str, prio: i32| pod(name, prio, "100m");
    let pick = |c: Vec<Candidate>| {
        let (i, why) = pick_one_node_for_preemption_explained(&c, now()).unwrap();
        (format!("node{}", c[i].place + 1), why)
    };
    let (node, why) = pick(vec![
        candidate("node1", vec![p("a", 1)], 1),
        candidate("node2", vec![p("b", 100)], 0),
    ]);
    assert_eq!(
        (node.as_str(), why.as_str()),
        ("node2", "fewest PodDisruptionBudget violations")
    );
    let (node, why) = pick(vec![
        candidate("node1", vec![p("a", 5), p("b", 5)], 0),
        candidate("node2", vec![p("c", 5)], 0),
    ]);
    assert_eq!(node, "node2");
    assert_eq!(
        why,
        "smallest sum of victim priorities (tied with 1 other(s) on: fewest PodDisruptionBudget violations, lowest priority of its most important victim)"
    );
    let (_, why) = pick(vec![candidate("node1", vec![p("a", 1)], 0)]);
    assert_eq!(why, "the only candidate");
}

#[test]
fn victims_already_terminating_get_api_calls_only_from_1_34_2_to_1_34_7() {
    // node1's only lower-priority pod is already terminating (preempted for another pod):
    // it is the victim again. kubernetes#133213 (v1.34.0) skipped such victims, its revert
    // #134247 (v1.34.2) did not, #134927 (v1.35.0) skips them again.
    use kubeplane_core::version::v1;
    for (version, skipped) in [
        (v1(34, 0), true),
        (v1(34, 1), true),
        (v1(34, 2), false),
        (v1(34, 7), false),
        (v1(35, 0), true),
        (v1(37, 0), true),
    ] {
        for async_preemption in [false, true] {
            let what = format!("{version}, async preemption {async_preemption}");
            let mut overrides = BTreeMap::new();
            overrides.insert("SchedulerAsyncPreemption".to_string(), async_preemption);
            let gates = FeatureGates::for_version_with_overrides(version, &overrides).unwrap();
            let pl = DefaultPreemption::new(None, &gates).unwrap();
            let victim = pod("low", 0, "800m").terminating_by_preemption();
            let mut env = Env::new(vec![(node("node1", "1"), vec![victim])]);
            let (r, s, _) = env.post_filter(&pl, pod("p", 100, "900m"), 0);
            assert!(s.is_success(), "{what}: {s:?}");
            assert_eq!(nominated_to(&r), Some("node1"), "{what}");
            let preemptor = PodBuilder::new("p").info();
            assert_eq!(
                pl.pre_enqueue(&preemptor).is_success(),
                !async_preemption || skipped,
                "{what}: the preemptor waits for its goroutine only when one was started"
            );
            assert!(pl
                .finish_async_work(SimTime::ZERO, &mut env.client)
                .is_empty());
            let events = env.client.events_with_reason(EVENT_PREEMPTED);
            assert_eq!(events.len(), usize::from(!skipped), "{what}");
            if let Some(e) = events.first() {
                assert_eq!(
                    e.message(),
                    "Preempted by pod uid-p on node node1",
                    "{what}"
                );
            }
        }
    }
}

//! Tests of the taint-eviction controller: upstream `taint_eviction_test.go` (controllers.md
//! 4.1) on the virtual timeline, the timelines of 1.15, two regressions, and invariants over
//! random taint timelines.

use kubeplane_api::{Client, Kind};
use kubeplane_registry::testing::TestClient;

use super::*;
use crate::node_testutil::*;

struct Harness {
    client: TestClient,
    tc: TaintEvictionController,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            client: TestClient::new(1),
            tc: TaintEvictionController::new(),
        }
    }

    /// Advances the clock to `t` (firing due work on the way) and settles there.
    fn at(&mut self, t: SimTime) -> &mut Self {
        self.client.run_until(t, &mut [&mut self.tc]);
        self
    }

    fn settle(&mut self) {
        self.client.settle(&mut [&mut self.tc]);
    }

    fn create(&mut self, obj: Object) {
        create(&mut self.client, obj);
        self.settle();
    }

    fn taint(&mut self, node: &str, taints: Vec<Taint>) {
        set_node_taints(&mut self.client, node, taints);
        self.settle();
    }

    fn evictions(&self, pod: &str) -> Vec<f64> {
        event_times(
            &self.client,
            REASON_TAINT_MANAGER_EVICTION,
            pod,
            "Marking for deletion",
        )
    }

    fn cancels(&self, pod: &str) -> Vec<f64> {
        event_times(
            &self.client,
            REASON_TAINT_MANAGER_EVICTION,
            pod,
            "Cancelling deletion",
        )
    }

    fn deleted(&self, pod: &str) -> bool {
        deletion_requested(&self.client, "default", pod)
    }
}

#[test]
fn only_no_execute_taints_count() {
    let taints = [
        taint("one", "", "NoExecute"),
        taint("two", "", "NoSchedule"),
    ];
    assert_eq!(
        no_execute_taints(&taints),
        vec![taint("one", "", "NoExecute")]
    );
}

/// Upstream `TestGetMinTolerationTime`, plus the `<= 0` rule.
#[test]
fn the_minimum_toleration_time_follows_upstream() {
    let t = |s: Option<i64>| test_toleration(1, s);
    let (one, two, forever, zero, negative) =
        (t(Some(1)), t(Some(2)), t(None), t(Some(0)), t(Some(-5)));
    let after = |s| MinToleration::After(SimDuration::from_secs(s));
    let cases: Vec<(&str, Vec<&Toleration>, MinToleration)> = vec![
        ("no tolerations: at once", vec![], after(0)),
        (
            "one without seconds: forever",
            vec![&forever],
            MinToleration::Forever,
        ),
        ("1 s and 2 s: 1 s", vec![&one, &two], after(1)),
        ("1 s and forever: 1 s", vec![&one, &forever], after(1)),
        ("forever and 1 s: 1 s", vec![&forever, &one], after(1)),
        ("0 s: at once", vec![&two, &zero], after(0)),
        ("a negative value: at once", vec![&negative, &two], after(0)),
    ];
    for (name, used, want) in cases {
        assert_eq!(min_toleration_time(&used), want, "{name}");
    }
}

/// Upstream `TestCreatePod`: the node is tainted before the pod appears.
#[test]
fn a_pod_created_on_a_tainted_node_is_evicted_per_its_tolerations() {
    struct Case {
        name: &'static str,
        bound: bool,
        node_tainted: bool,
        tolerations: Vec<Toleration>,
        evicted_at: Option<f64>,
    }
    let cases = vec![
        Case {
            name: "an unscheduled pod is ignored",
            bound: false,
            node_tainted: true,
            tolerations: vec![],
            evicted_at: None,
        },
        Case {
            name: "a pod on an untainted node stays",
            bound: true,
            node_tainted: false,
            tolerations: vec![],
            evicted_at: None,
        },
        Case {
            name: "no toleration: deleted at once",
            bound: true,
            node_tainted: true,
            tolerations: vec![],
            evicted_at: Some(5.0),
        },
        Case {
            name: "tolerated for 100 s: deleted 100 s later",
            bound: true,
            node_tainted: true,
            tolerations: vec![test_toleration(1, Some(100))],
            evicted_at: Some(105.0),
        },
        Case {
            name: "tolerated forever: stays",
            bound: true,
            node_tainted: true,
            tolerations: vec![test_toleration(1, None)],
            evicted_at: None,
        },
        Case {
            name: "only another taint tolerated: deleted at once",
            bound: true,
            node_tainted: true,
            tolerations: vec![test_toleration(2, None)],
            evicted_at: Some(5.0),
        },
    ];
    for case in cases {
        let mut h = Harness::new();
        let mut n = node("node1");
        if case.node_tainted {
            n = n.taint(test_taint(1));
        }
        h.create(n.build());
        h.at(secs(5));
        let mut p = pod("default", "pod1");
        if case.bound {
            p = p.node("node1");
        }
        for t in case.tolerations {
            p = p.toleration(t);
        }
        h.create(p.build());
        h.at(secs(500));
        let got = h.evictions("pod1").first().copied();
        assert_eq!(got, case.evicted_at, "{}", case.name);
        assert_eq!(
            h.deleted("pod1"),
            case.evicted_at.is_some(),
            "{}",
            case.name
        );
        if case.evicted_at.is_some() {
            let cond = pod_condition(&h.client, "default", "pod1", "DisruptionTarget")
                .unwrap_or_else(|| panic!("{}: DisruptionTarget set", case.name));
            assert_eq!(cond.status, "True");
            assert_eq!(cond.reason.as_deref(), Some(DISRUPTION_REASON));
            assert_eq!(cond.message.as_deref(), Some(DISRUPTION_MESSAGE));
        }
    }
}

/// Upstream `TestUpdatePod`.
#[test]
fn pod_updates_are_evaluated_against_the_node_taints() {
    // Scheduled onto a tainted node: deleted at binding, unless tolerated forever.
    for (tolerations, evicted) in [(vec![], true), (vec![test_toleration(1, None)], false)] {
        let mut h = Harness::new();
        h.create(node("node1").taint(test_taint(1)).build());
        let mut p = pod("default", "pod1");
        for t in tolerations {
            p = p.toleration(t);
        }
        h.create(p.build());
        h.at(secs(3));
        let uid = h
            .client
            .store
            .get_pod("default", "pod1")
            .unwrap()
            .metadata
            .uid
            .clone()
            .unwrap();
        h.client.bind("default", "pod1", &uid, "node1").unwrap();
        h.settle();
        h.at(secs(300));
        let want: Vec<f64> = if evicted { vec![3.0] } else { vec![] };
        assert_eq!(h.evictions("pod1"), want);
    }

    // A 100 s toleration removed after scheduling: deleted when removed.
    let mut h = Harness::new();
    h.create(node("node1").taint(test_taint(1)).build());
    h.create(
        pod("default", "pod1")
            .node("node1")
            .toleration(test_toleration(1, Some(100)))
            .build(),
    );
    h.at(secs(10));
    set_pod_tolerations(&mut h.client, "default", "pod1", vec![]);
    h.settle();
    assert_eq!(h.evictions("pod1"), vec![10.0]);

    // Lengthening the toleration from 1 s to 100 s after scheduling does not postpone.
    let mut h = Harness::new();
    h.create(node("node1").taint(test_taint(1)).build());
    h.create(
        pod("default", "pod1")
            .node("node1")
            .toleration(test_toleration(1, Some(1)))
            .build(),
    );
    h.at(millis(500));
    set_pod_tolerations(
        &mut h.client,
        "default",
        "pod1",
        vec![test_toleration(1, Some(100))],
    );
    h.settle();
    h.at(secs(200));
    assert_eq!(h.evictions("pod1"), vec![1.0]);
}

/// Upstream `TestCreateNode`: the pod is bound before its node exists.
#[test]
fn a_node_created_tainted_evicts_the_pods_already_bound_to_it() {
    for (tainted, tolerations, evicted) in [
        (false, vec![], false),
        (true, vec![], true),
        (true, vec![test_toleration(1, None)], false),
    ] {
        let mut h = Harness::new();
        let mut p = pod("default", "pod1").node("node1");
        for t in tolerations {
            p = p.toleration(t);
        }
        h.create(p.build());
        h.at(secs(1));
        let mut n = node("node1");
        if tainted {
            n = n.taint(test_taint(1));
        }
        h.create(n.build());
        h.at(secs(100));
        let want: Vec<f64> = if evicted { vec![1.0] } else { vec![] };
        assert_eq!(h.evictions("pod1"), want, "tainted={tainted}");
    }
}

/// Upstream `TestDeleteNode`.
#[test]
fn a_deleted_node_is_forgotten_but_its_scheduled_evictions_stand() {
    let mut h = Harness::new();
    h.create(node("node1").taint(test_taint(1)).build());
    h.create(
        pod("default", "pod1")
            .node("node1")
            .toleration(test_toleration(1, Some(30)))
            .build(),
    );
    assert!(h.tc.is_node_tainted("node1"));
    h.at(secs(10));
    delete_object(&mut h.client, Kind::Node, "", "node1");
    h.settle();
    assert!(!h.tc.is_node_tainted("node1"));
    // Upstream does not cancel on node deletion: the pod's own deletion (PodGC) would.
    h.at(secs(100));
    assert_eq!(h.evictions("pod1"), vec![30.0]);
}

/// Upstream `TestUpdateNode`.
#[test]
fn node_taint_updates_evict_per_the_tolerations() {
    struct Case {
        name: &'static str,
        tolerations: Vec<Toleration>,
        initial: Vec<Taint>,
        updated: Vec<Taint>,
        evictions: Vec<f64>,
        cancels: Vec<f64>,
    }
    let cases = vec![
        Case {
            name: "added taint, no toleration: deleted at once",
            tolerations: vec![],
            initial: vec![],
            updated: vec![test_taint(1)],
            evictions: vec![10.0],
            cancels: vec![],
        },
        Case {
            name: "added taint tolerated for 100 s: deleted 100 s later",
            tolerations: vec![test_toleration(1, Some(100))],
            initial: vec![],
            updated: vec![test_taint(1)],
            evictions: vec![110.0],
            cancels: vec![],
        },
        Case {
            name: "only one of two added taints tolerated: deleted at once",
            tolerations: vec![test_toleration(1, Some(100))],
            initial: vec![],
            updated: vec![test_taint(1), test_taint(2)],
            evictions: vec![10.0],
            cancels: vec![],
        },
        Case {
            name: "taint removed before the 1 s toleration ran out: cancelled",
            tolerations: vec![test_toleration(1, Some(1))],
            initial: vec![test_taint(1)],
            updated: vec![],
            evictions: vec![],
            cancels: vec![10.0],
        },
        Case {
            name: "tolerations of 1 s and 100 s for two taints: deleted after 1 s",
            tolerations: vec![test_toleration(1, Some(1)), test_toleration(2, Some(100))],
            initial: vec![],
            updated: vec![test_taint(1), test_taint(2)],
            evictions: vec![11.0],
            cancels: vec![],
        },
    ];
    for case in cases {
        let mut h = Harness::new();
        let mut n = node("node1");
        for t in case.initial {
            n = n.taint(t);
        }
        h.create(n.build());
        h.at(millis(9_500));
        let mut p = pod("default", "pod1").node("node1");
        for t in case.tolerations {
            p = p.toleration(t);
        }
        h.create(p.build());
        h.at(secs(10));
        h.taint("node1", case.updated);
        h.at(secs(300));
        assert_eq!(h.evictions("pod1"), case.evictions, "{}", case.name);
        assert_eq!(h.cancels("pod1"), case.cancels, "{}", case.name);
    }
}

/// Upstream `TestUpdateNodeWithMultipleTaints`: forever for taint 1, 60 s for taint 2.
#[test]
fn an_eviction_is_queued_and_dequeued_as_taints_come_and_go() {
    let mut h = Harness::new();
    h.create(node("node1").build());
    h.create(
        pod("default", "pod1")
            .node("node1")
            .toleration(toleration("testTaint1", "Exists", "", "NoExecute", None))
            .toleration(toleration(
                "testTaint2",
                "Exists",
                "",
                "NoExecute",
                Some(60),
            ))
            .build(),
    );
    let queued = |h: &Harness| {
        h.tc.scheduled_eviction("default", "pod1")
            .map(|w| w.fire_at)
    };
    assert_eq!(queued(&h), None, "no taint: not queued");
    h.at(secs(1));
    h.taint("node1", vec![test_taint(1)]);
    assert_eq!(queued(&h), None, "a taint tolerated forever: not queued");
    h.at(secs(2));
    h.taint("node1", vec![test_taint(1), test_taint(2)]);
    assert_eq!(queued(&h), Some(secs(62)), "60 s after the second taint");
    h.at(secs(3));
    h.taint("node1", vec![test_taint(1)]);
    assert_eq!(queued(&h), None, "back to the forever taint: dequeued");
    h.at(secs(120));
    assert_eq!(h.cancels("pod1"), vec![3.0]);
    assert!(h.evictions("pod1").is_empty());
    assert!(!h.deleted("pod1"));
}

/// Upstream `TestUpdateNodeWithMultiplePods`.
#[test]
fn each_pod_on_a_tainted_node_gets_its_own_deadline() {
    for (taints, want) in [
        (vec![test_taint(1)], [Some(10.0), Some(11.0), None]),
        (
            vec![test_taint(1), test_taint(2)],
            [Some(10.0), Some(10.0), Some(10.0)],
        ),
    ] {
        let mut h = Harness::new();
        h.create(node("node1").build());
        h.create(pod("default", "pod1").node("node1").build());
        h.create(
            pod("default", "pod2")
                .node("node1")
                .toleration(test_toleration(1, Some(1)))
                .build(),
        );
        h.create(
            pod("default", "pod3")
                .node("node1")
                .toleration(test_toleration(1, None))
                .build(),
        );
        h.at(secs(10));
        h.taint("node1", taints);
        h.at(secs(200));
        for (i, want) in want.iter().enumerate() {
            let name = format!("pod{}", i + 1);
            assert_eq!(h.evictions(&name).first().copied(), *want, "{name}");
        }
    }
}

/// Upstream `TestEventualConsistency`: a pod that lands on a node after its taint update.
#[test]
fn a_pod_arriving_after_the_taint_is_still_evaluated() {
    let mut h = Harness::new();
    h.create(node("node1").build());
    h.create(pod("default", "pod1").node("node1").build());
    h.at(secs(1));
    h.taint("node1", vec![test_taint(1)]);
    assert_eq!(h.evictions("pod1"), vec![1.0]);
    h.at(secs(2));
    h.create(pod("default", "pod2").node("node1").build());
    h.create(
        pod("default", "pod3")
            .node("node1")
            .toleration(test_toleration(1, Some(100)))
            .build(),
    );
    h.at(secs(500));
    assert_eq!(h.evictions("pod2"), vec![2.0]);
    assert_eq!(h.evictions("pod3"), vec![102.0]);
}

/// Upstream `TestPodDeletionEvent`: one event with upstream's wording and involved object.
#[test]
fn the_eviction_and_cancel_events_read_as_upstream() {
    let mut h = Harness::new();
    h.create(node("node1").taint(test_taint(1)).build());
    h.create(pod("test", "test").node("node1").build());
    let evs: Vec<_> = h.client.events_with_reason(REASON_TAINT_MANAGER_EVICTION);
    assert_eq!(evs.len(), 1);
    let e = evs[0];
    assert_eq!(
        (
            e.type_(),
            e.kind(),
            e.namespace(),
            e.name(),
            e.message(),
            e.source()
        ),
        (
            "Normal",
            "Pod",
            "test",
            "test",
            "Marking for deletion Pod test/test",
            CONTROLLER_NAME
        )
    );

    let mut h = Harness::new();
    h.create(node("node1").taint(test_taint(1)).build());
    h.create(
        pod("test", "test")
            .node("node1")
            .toleration(test_toleration(1, Some(60)))
            .build(),
    );
    h.at(secs(5));
    h.taint("node1", vec![]);
    let evs: Vec<_> = h.client.events_with_reason(REASON_TAINT_MANAGER_EVICTION);
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].message(), "Cancelling deletion of Pod test/test");
}

/// Spec 1.15, row by row, on one pod P on node N; the taint step is at t0 = 10 s.
#[test]
fn eviction_timelines() {
    // k:NoExecute added, no toleration: event, DisruptionTarget, delete, all at t0.
    let mut h = Harness::new();
    h.create(node("n").build());
    h.create(pod("default", "p").node("n").build());
    h.at(secs(10));
    h.taint("n", vec![taint("k", "", "NoExecute")]);
    assert_eq!(h.evictions("p"), vec![10.0]);
    assert!(h.deleted("p"));
    assert!(pod_condition(&h.client, "default", "p", "DisruptionTarget").is_some());
    assert_eq!(
        h.tc.metrics(),
        vec![
            (METRIC_POD_DELETIONS_TOTAL.to_string(), 1),
            (METRIC_POD_DELETION_DURATION_COUNT.to_string(), 1)
        ]
    );

    // Tolerates k for 100 s: nothing at t0, eviction at t0 + 100 s; taint removed at t0+50 s:
    // cancelled with an event.
    for removed_at in [None, Some(60)] {
        let mut h = Harness::new();
        h.create(node("n").build());
        h.create(
            pod("default", "p")
                .node("n")
                .toleration(toleration("k", "Exists", "", "NoExecute", Some(100)))
                .build(),
        );
        h.at(secs(10));
        h.taint("n", vec![taint("k", "", "NoExecute")]);
        assert!(h.client.events.is_empty());
        if let Some(t) = removed_at {
            h.at(secs(t));
            h.taint("n", vec![]);
        }
        h.at(secs(500));
        match removed_at {
            None => assert_eq!(h.evictions("p"), vec![110.0]),
            Some(t) => {
                assert!(h.evictions("p").is_empty());
                assert_eq!(h.cancels("p"), vec![t as f64]);
            }
        }
    }

    // Tolerations k1 = 1 s and k2 = 100 s, node tainted k1+k2: deleted after 1 s.
    let mut h = Harness::new();
    h.create(node("n").build());
    h.create(
        pod("default", "p")
            .node("n")
            .toleration(toleration("k1", "Exists", "", "NoExecute", Some(1)))
            .toleration(toleration("k2", "Exists", "", "NoExecute", Some(100)))
            .build(),
    );
    h.at(secs(10));
    h.taint(
        "n",
        vec![taint("k1", "", "NoExecute"), taint("k2", "", "NoExecute")],
    );
    h.at(secs(500));
    assert_eq!(h.evictions("p"), vec![11.0]);

    // Toleration only for k1, node tainted k1+k2: at once.
    let mut h = Harness::new();
    h.create(node("n").build());
    h.create(
        pod("default", "p")
            .node("n")
            .toleration(toleration("k1", "Exists", "", "NoExecute", None))
            .build(),
    );
    h.at(secs(10));
    h.taint(
        "n",
        vec![taint("k1", "", "NoExecute"), taint("k2", "", "NoExecute")],
    );
    assert_eq!(h.evictions("p"), vec![10.0]);

    // P deleted while scheduled: cancelled with an event.
    let mut h = Harness::new();
    h.create(node("n").build());
    h.create(
        pod("default", "p")
            .node("n")
            .toleration(toleration("k", "Exists", "", "NoExecute", Some(100)))
            .build(),
    );
    h.at(secs(10));
    h.taint("n", vec![taint("k", "", "NoExecute")]);
    h.at(secs(20));
    delete_object(&mut h.client, Kind::Pod, "default", "p");
    h.settle();
    h.at(secs(500));
    assert!(h.evictions("p").is_empty());
    assert_eq!(h.cancels("p"), vec![20.0]);

    // P unscheduled: ignored.
    let mut h = Harness::new();
    h.create(node("n").build());
    h.create(pod("default", "p").build());
    h.at(secs(10));
    h.taint("n", vec![taint("k", "", "NoExecute")]);
    h.at(secs(500));
    assert!(h.client.events.is_empty());
}

/// Kubernetes issue 90794 (fixed in 1.19): removing the only finitely tolerated taint while a
/// forever-tolerated one stays cancels the scheduled deletion.
#[test]
fn regression_90794_untainting_before_the_deadline_cancels() {
    let mut h = Harness::new();
    h.create(
        node("n")
            .taint(taint("OnlyForMyUsage", "", "NoExecute"))
            .build(),
    );
    let mut p = pod("default", "p").node("n").toleration(toleration(
        "OnlyForMyUsage",
        "Exists",
        "",
        "NoExecute",
        None,
    ));
    let mut spec_pod: StoredPod = p.build_pod().into();
    kubeplane_registry::admission::default_toleration_seconds(&mut spec_pod);
    p = PodBuilder::from(spec_pod.to_k8s());
    h.create(p.build());
    h.at(secs(10));
    h.taint(
        "n",
        vec![
            taint("OnlyForMyUsage", "", "NoExecute"),
            taint("node.kubernetes.io/not-ready", "", "NoExecute"),
        ],
    );
    assert_eq!(
        h.tc.scheduled_eviction("default", "p").map(|w| w.fire_at),
        Some(secs(310))
    );
    h.at(secs(100));
    h.taint("n", vec![taint("OnlyForMyUsage", "", "NoExecute")]);
    h.at(secs(1000));
    assert!(h.evictions("p").is_empty());
    assert_eq!(h.cancels("p"), vec![100.0]);
    assert!(!h.deleted("p"));
}

/// Kubernetes issue 102993 (kept on purpose): raising tolerationSeconds after the eviction was
/// scheduled does not postpone it; neither does a later, longer-tolerated taint.
#[test]
fn regression_102993_raising_toleration_seconds_does_not_postpone() {
    let mut h = Harness::new();
    h.create(node("n").build());
    h.create(
        pod("default", "p")
            .node("n")
            .toleration(toleration("k", "Exists", "", "NoExecute", Some(60)))
            .build(),
    );
    h.at(secs(10));
    h.taint("n", vec![taint("k", "", "NoExecute")]);
    h.at(secs(20));
    set_pod_tolerations(
        &mut h.client,
        "default",
        "p",
        vec![toleration("k", "Exists", "", "NoExecute", Some(3600))],
    );
    h.settle();
    h.at(secs(30));
    h.taint(
        "n",
        vec![taint("k", "", "NoExecute"), taint("k", "v2", "NoExecute")],
    );
    h.at(secs(4000));
    assert_eq!(h.evictions("p"), vec![70.0]);
    assert!(h.cancels("p").is_empty());
}

#[test]
fn a_shorter_toleration_added_later_does_not_bring_the_eviction_forward() {
    let mut h = Harness::new();
    h.create(node("n").build());
    h.create(
        pod("default", "p")
            .node("n")
            .toleration(toleration("k1", "Exists", "", "NoExecute", Some(100)))
            .toleration(toleration("k2", "Exists", "", "NoExecute", Some(5)))
            .build(),
    );
    h.at(secs(10));
    h.taint("n", vec![taint("k1", "", "NoExecute")]);
    h.at(secs(20));
    h.taint(
        "n",
        vec![taint("k1", "", "NoExecute"), taint("k2", "", "NoExecute")],
    );
    h.at(secs(500));
    assert_eq!(h.evictions("p"), vec![110.0]);
}

/// Upstream `processPodOnNode` keeps scheduled work only when `createdAt + min` is strictly
/// before `now + min`: work created at this very instant is replaced (a tie replaces), work
/// created earlier, even by a nanosecond, is kept.
#[test]
fn scheduled_work_is_kept_only_when_created_strictly_before_now() {
    let mut tc = TaintEvictionController::new();
    let (t10, ns) = (secs(10), SimDuration(1));
    let (decision, at, _) = tc.schedule_eviction("default/p", SimDuration::from_secs(100), t10);
    assert_eq!((decision, at), (Decision::EvictAt, Some(secs(110))));
    // The same instant: createdAt + 5 s equals now + 5 s, so the new deadline replaces it.
    let (decision, at, reason) = tc.schedule_eviction("default/p", SimDuration::from_secs(5), t10);
    assert_eq!((decision, at), (Decision::EvictAt, Some(secs(15))));
    assert!(
        reason.ends_with("it replaces the deletion for 110s scheduled earlier at this instant"),
        "{reason}"
    );
    let w = tc.scheduled_eviction("default", "p").unwrap();
    assert_eq!((w.created_at, w.fire_at), (t10, secs(15)));
    // Still the same instant, a longer minimum: replaced again, by a later deadline.
    let (_, at, _) = tc.schedule_eviction("default/p", SimDuration::from_secs(50), t10);
    assert_eq!(at, Some(secs(60)));
    // One nanosecond later the existing work was created before now: kept, whichever way.
    for min in [1, 500] {
        let (decision, at, reason) =
            tc.schedule_eviction("default/p", SimDuration::from_secs(min), t10 + ns);
        assert_eq!((decision, at), (Decision::EvictAt, Some(secs(60))));
        assert!(reason.contains("is kept"), "{reason}");
    }
    // A zero minimum at the creating instant replaces it with an immediate deletion.
    let mut tc = TaintEvictionController::new();
    tc.schedule_eviction("default/q", SimDuration::from_secs(30), t10);
    let (decision, at, _) = tc.schedule_eviction("default/q", SimDuration::ZERO, t10);
    assert_eq!((decision, at), (Decision::EvictNow, Some(t10)));
    assert!(tc.scheduled_eviction("default", "q").is_none());
    assert_eq!(tc.pending_evictions(), 1);
}

/// Two evaluations of one pod at one instant (the controller ran between two node updates of
/// that instant): the deadline follows the instant's final taints, with no cancel event.
#[test]
fn the_final_taints_of_an_instant_decide_the_deadline() {
    let mut h = Harness::new();
    h.create(node("n").build());
    h.create(
        pod("default", "p")
            .node("n")
            .toleration(toleration("k1", "Exists", "", "NoExecute", Some(100)))
            .toleration(toleration("k2", "Exists", "", "NoExecute", Some(5)))
            .build(),
    );
    h.at(secs(10));
    h.taint("n", vec![taint("k1", "", "NoExecute")]);
    h.taint(
        "n",
        vec![taint("k1", "", "NoExecute"), taint("k2", "", "NoExecute")],
    );
    assert_eq!(
        h.tc.scheduled_eviction("default", "p").unwrap().fire_at,
        secs(15)
    );
    h.at(secs(500));
    assert_eq!(h.evictions("p"), vec![15.0]);
    assert!(h.cancels("p").is_empty());
    // The other way round: the shorter toleration's taint goes at the same instant.
    let mut h = Harness::new();
    h.create(node("n").build());
    h.create(
        pod("default", "p")
            .node("n")
            .toleration(toleration("k1", "Exists", "", "NoExecute", Some(100)))
            .toleration(toleration("k2", "Exists", "", "NoExecute", Some(5)))
            .build(),
    );
    h.at(secs(10));
    h.taint(
        "n",
        vec![taint("k1", "", "NoExecute"), taint("k2", "", "NoExecute")],
    );
    h.taint("n", vec![taint("k1", "", "NoExecute")]);
    h.at(secs(500));
    assert_eq!(h.evictions("p"), vec![110.0]);
    assert!(h.cancels("p").is_empty());
}

#[test]
fn explanation_records_describe_each_decision() {
    let mut h = Harness::new();
    h.create(node("n").build());
    h.create(
        pod("default", "p")
            .node("n")
            .toleration(toleration("k", "Exists", "", "NoExecute", Some(30)))
            .build(),
    );
    h.create(pod("default", "q").node("n").build());
    h.at(secs(10));
    h.taint("n", vec![taint("k", "v", "NoExecute")]);
    let recs: Vec<&serde_json::Value> = h.client.records.iter().collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(
        *recs[0],
        serde_json::json!({
            "time": 10.0, "kind": "EvictionDecision", "namespace": "default", "name": "p", "node": "n",
            "taints": ["k=v:NoExecute"], "tolerationsUsed": ["k:NoExecute op=Exists for 30s"],
            "decision": "EvictAt", "at": 40.0,
            "reason": "every NoExecute taint is tolerated; the shortest tolerationSeconds used is 30s, counted from now"
        })
    );
    assert_eq!(recs[1]["decision"], "EvictNow");
    assert_eq!(
        recs[1]["reason"],
        "the pod does not tolerate the taint k=v:NoExecute"
    );
    h.at(secs(15));
    h.taint("n", vec![]);
    let last = h.client.records.last().unwrap();
    assert_eq!(last["decision"], "Cancelled");
    assert_eq!(last["at"], serde_json::Value::Null);
    // No records when not asked for.
    let mut h = Harness::new();
    h.client.explain = false;
    h.create(node("n").taint(taint("k", "", "NoExecute")).build());
    h.create(pod("default", "q").node("n").build());
    assert!(h.client.records.is_empty());
    assert_eq!(h.evictions("q"), vec![0.0]);
}

#[test]
fn the_next_wakeup_is_the_earliest_deadline() {
    let mut h = Harness::new();
    h.create(node("n").taint(taint("k", "", "NoExecute")).build());
    h.create(
        pod("default", "a")
            .node("n")
            .toleration(toleration("k", "Exists", "", "NoExecute", Some(50)))
            .build(),
    );
    h.create(
        pod("default", "b")
            .node("n")
            .toleration(toleration("k", "Exists", "", "NoExecute", Some(20)))
            .build(),
    );
    assert_eq!(h.tc.next_wakeup(), Some(secs(20)));
    h.at(secs(20));
    assert_eq!(h.tc.next_wakeup(), Some(secs(50)));
    h.at(secs(50));
    assert_eq!(h.tc.next_wakeup(), None);
}

/// A small deterministic generator (splitmix64), so failures name a reproducible seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const KEYS: [&str; 3] = ["a", "b", "c"];

fn random_toleration(rng: &mut Rng) -> Toleration {
    let key = KEYS[rng.below(3) as usize];
    let secs = match rng.below(4) {
        0 => None,
        1 => Some(0),
        _ => Some(1 + rng.below(40) as i64),
    };
    if rng.chance(50) {
        toleration(key, "Exists", "", "NoExecute", secs)
    } else {
        toleration(
            key,
            "Equal",
            "v",
            if rng.chance(80) { "NoExecute" } else { "" },
            secs,
        )
    }
}

fn random_taints(rng: &mut Rng) -> Vec<Taint> {
    let mut out = Vec::new();
    for key in KEYS {
        if rng.chance(35) {
            let value = if rng.chance(70) { "v" } else { "w" };
            let effect = if rng.chance(85) {
                "NoExecute"
            } else {
                "NoSchedule"
            };
            out.push(taint(key, value, effect));
        }
    }
    out
}

/// The reference model of one pod's evictions: fed the NoExecute taint set at each change.
/// A pod with a grace period stays Terminating after an eviction and is evaluated again on
/// later changes, as upstream (no deletionTimestamp filter).
struct ModelPod {
    scheduled: Option<SimTime>,
    evictions: Vec<SimTime>,
    /// Removed at once when deleted (terminationGracePeriodSeconds 0).
    grace_zero: bool,
    gone: bool,
}

impl ModelPod {
    fn evict(&mut self, at: SimTime) {
        self.evictions.push(at);
        self.scheduled = None;
        self.gone = self.grace_zero;
    }

    fn fire_until(&mut self, t: SimTime) {
        if let Some(at) = self.scheduled.filter(|&at| at <= t && !self.gone) {
            self.evict(at);
        }
    }

    fn on_taints(&mut self, now: SimTime, taints: &[Taint], tolerations: &[Toleration]) {
        if self.gone {
            return;
        }
        if taints.is_empty() {
            self.scheduled = None;
            return;
        }
        let Some(used) = matching_tolerations(taints, tolerations) else {
            self.evict(now);
            return;
        };
        match min_toleration_time(&used) {
            MinToleration::Forever => self.scheduled = None,
            MinToleration::After(d) => {
                if self.scheduled.is_none() {
                    if d == SimDuration::ZERO {
                        self.evict(now);
                    } else {
                        self.scheduled = Some(now + d);
                    }
                }
            }
        }
    }
}

/// The start of the window of NoExecute taint sets, all tolerated with a finite minimum, that
/// ends at history entry `idx` (None: the set at `idx` is not such a set).
fn tolerated_window(
    history: &[(SimTime, Vec<Taint>)],
    idx: usize,
    tols: &[Toleration],
) -> Option<usize> {
    let finite = |taints: &Vec<Taint>| {
        !taints.is_empty()
            && matches!(
                matching_tolerations(taints, tols).map(|u| min_toleration_time(&u)),
                Some(MinToleration::After(_))
            )
    };
    if !finite(&history[idx].1) {
        return None;
    }
    let mut start = idx;
    while start > 0 && finite(&history[start - 1].1) {
        start -= 1;
    }
    Some(start)
}

/// Random taint timelines on one node with several pods: the controller agrees with the
/// model, and the invariants hold: a pod that does not tolerate a NoExecute taint is evicted at
/// the instant the taint is seen; no pod goes before taint time + its minimum
/// tolerationSeconds; a cancelled eviction never fires.
#[test]
fn random_taint_timelines_keep_the_eviction_invariants() {
    for seed in 0..400u64 {
        let mut rng = Rng(seed);
        let mut h = Harness::new();
        h.client.explain = false;
        h.create(node("n").build());
        let n_pods = 1 + rng.below(5) as usize;
        let mut tolerations = Vec::new();
        let mut models = Vec::new();
        for i in 0..n_pods {
            let tols: Vec<Toleration> = (0..rng.below(4))
                .map(|_| random_toleration(&mut rng))
                .collect();
            let mut p = pod("default", &format!("p{i}")).node("n");
            for t in &tols {
                p = p.toleration(t.clone());
            }
            let grace_zero = rng.chance(50);
            let mut p = p.build_pod();
            if grace_zero {
                p.spec.as_mut().unwrap().termination_grace_period_seconds = Some(0);
            }
            h.create(Object::Pod(Arc::new(p.into())));
            tolerations.push(tols);
            models.push(ModelPod {
                scheduled: None,
                evictions: Vec::new(),
                grace_zero,
                gone: false,
            });
        }
        let mut t = SimTime::ZERO;
        let mut history: Vec<(SimTime, Vec<Taint>)> = vec![(t, vec![])];
        for _ in 0..(3 + rng.below(8)) {
            t = t + SimDuration::from_secs(1 + rng.below(30) as i64);
            h.at(t);
            for m in models.iter_mut() {
                m.fire_until(t);
            }
            let taints = random_taints(&mut rng);
            h.taint("n", taints.clone());
            let no_exec = no_execute_taints(&taints);
            // The controller ignores node updates that leave the NoExecute taints as they were.
            if history.last().is_some_and(|(_, prev)| *prev != no_exec) {
                for (i, m) in models.iter_mut().enumerate() {
                    m.on_taints(t, &no_exec, &tolerations[i]);
                }
            }
            history.push((t, no_exec.clone()));
            // Invariant: a pod that does not tolerate a NoExecute taint is evicted now.
            for (i, tols) in tolerations.iter().enumerate() {
                if no_exec.iter().any(|taint| !tolerates_any(tols, taint)) && !models[i].gone {
                    let name = format!("p{i}");
                    assert!(
                        h.deleted(&name),
                        "seed {seed}: {name} survives an untolerated taint at {t}"
                    );
                }
            }
        }
        let end = t + SimDuration::from_secs(100);
        h.at(end);
        for m in models.iter_mut() {
            m.fire_until(end);
        }
        for (i, m) in models.iter().enumerate() {
            let name = format!("p{i}");
            let tols = &tolerations[i];
            let got = h.evictions(&name);
            let want: Vec<f64> = m.evictions.iter().map(|t| t.as_secs_f64()).collect();
            assert_eq!(
                got, want,
                "seed {seed}: {name} tolerations {tols:?} history {history:?}"
            );
            let cancels = h.cancels(&name);
            for &e in &got {
                let e = SimTime((e * 1e9).round() as i64);
                let idx = history
                    .iter()
                    .rposition(|(ht, _)| *ht <= e)
                    .expect("history from 0");
                let untolerated = history[idx]
                    .1
                    .iter()
                    .any(|taint| !tolerates_any(tols, taint));
                if untolerated && history[idx].0 == e {
                    continue;
                }
                // Invariant: a timed eviction ends a window of tolerated taints that started at
                // s, no earlier than s + min tolerationSeconds at s, and after any cancel. A
                // deadline at the instant of a change fires before the change.
                let mut candidates = vec![idx];
                if history[idx].0 == e && idx > 0 {
                    candidates.push(idx - 1);
                }
                let justified = candidates.iter().any(|&end| {
                    let Some(start) = tolerated_window(&history, end, tols) else {
                        return false;
                    };
                    let (s, taints_at_s) = &history[start];
                    let min =
                        matching_tolerations(taints_at_s, tols).map(|u| min_toleration_time(&u));
                    let Some(MinToleration::After(d)) = min else {
                        return false;
                    };
                    let cancelled_inside = cancels.iter().any(|&c| {
                        let c = SimTime((c * 1e9).round() as i64);
                        c >= *s && c < e
                    });
                    e >= *s + d && !cancelled_inside
                });
                assert!(
                    justified,
                    "seed {seed}: {name} evicted at {e} without a cause; history {history:?}"
                );
            }
        }
    }
}

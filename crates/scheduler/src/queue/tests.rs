//! Queue tests (upstream `scheduling_queue_test.go`, `backoff_queue_test.go`, nominator tests),
//! with stub plugins and explicit virtual times.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Node, NodeSpec, NodeStatus, Pod, PodSchedulingGate, PodSpec, PodStatus, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;

use super::*;
use crate::framework::events::labels;
use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, EventObject, EventResource, Plugin, PodInfo,
    PreEnqueuePlugin, QueueSortPlugin, QueuedPodInfo, QueueingHint, Status,
};

// ---- Stubs ----

/// PrioritySort: higher priority first, then the earlier timestamp.
struct PrioritySort;

impl Plugin for PrioritySort {
    fn name(&self) -> &'static str {
        "PrioritySort"
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
}

impl QueueSortPlugin for PrioritySort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority, b.pod_info.priority);
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }
}

/// A PreEnqueue plugin gating pods with scheduling gates, requeued when they are all removed.
struct Gate;

const GATES_ELIMINATED: ClusterEvent = ClusterEvent::new(
    EventResource::Pod,
    ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    "PodUpdatePodSchedulingGatesEliminated",
);

impl Plugin for Gate {
    fn name(&self) -> &'static str {
        "Gate"
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(vec![ClusterEventWithHint::with_hint(
            GATES_ELIMINATED,
            |pod, _old, new| {
                let same = new
                    .and_then(EventObject::as_pod)
                    .is_some_and(|p| p.metadata.uid == pod.metadata.uid);
                Ok(if same {
                    QueueingHint::Queue
                } else {
                    QueueingHint::QueueSkip
                })
            },
        )])
    }
}

impl PreEnqueuePlugin for Gate {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        if pod
            .spec()
            .scheduling_gates
            .as_ref()
            .is_some_and(|g| !g.is_empty())
        {
            Status::unresolvable("gated")
        } else {
            Status::success()
        }
    }
}

/// A plugin that rejects pods (the tests say so) and registers the given events.
struct Fake {
    name: &'static str,
    events: Vec<ClusterEventWithHint>,
}

impl Plugin for Fake {
    fn name(&self) -> &'static str {
        self.name
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(self.events.clone())
    }
}

/// Queue only for the node named "good"; an error for the node named "broken".
fn good_node_hint(
    _pod: &StoredPod,
    _old: Option<EventObject<'_>>,
    new: Option<EventObject<'_>>,
) -> Result<QueueingHint, String> {
    match new
        .and_then(EventObject::as_node)
        .and_then(|n| n.metadata.name.as_deref())
    {
        Some("good") => Ok(QueueingHint::Queue),
        Some("broken") => Err("cannot tell".into()),
        _ => Ok(QueueingHint::QueueSkip),
    }
}

/// "Fake" registers NodeAdd with [`good_node_hint`]; "Other" registers NodeDelete.
fn fake_plugins() -> Vec<Arc<dyn Plugin>> {
    vec![
        Arc::new(Fake {
            name: "Fake",
            events: vec![ClusterEventWithHint::with_hint(
                labels::NODE_ADD,
                good_node_hint,
            )],
        }),
        Arc::new(Fake {
            name: "Other",
            events: vec![ClusterEventWithHint::new(labels::NODE_DELETE)],
        }),
        Arc::new(Gate),
    ]
}

fn queue_with(pop_from_backoff_q: bool, initial_secs: i64, max_secs: i64) -> SchedulingQueue {
    let mut plugins = fake_plugins();
    plugins.push(Arc::new(PrioritySort));
    let profile = ProfileQueueConfig::from_plugins(&plugins);
    SchedulingQueue::new(QueueConfig {
        initial_backoff: SimDuration::from_secs(initial_secs),
        max_backoff: SimDuration::from_secs(max_secs),
        pop_from_backoff_q,
        queue_sort: Arc::new(PrioritySort),
        profiles: BTreeMap::from([(crate::DEFAULT_SCHEDULER_NAME.to_string(), profile)]),
    })
}

fn queue(pop_from_backoff_q: bool) -> SchedulingQueue {
    queue_with(pop_from_backoff_q, 1, 10)
}

// ---- Builders ----

fn secs(s: i64) -> SimTime {
    SimTime::from_secs(s)
}

fn ms(m: i64) -> SimTime {
    SimTime::from_millis(m)
}

struct PodB(Pod);

impl PodB {
    fn new(name: &str) -> PodB {
        PodB(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            spec: Some(PodSpec::default()),
            ..Default::default()
        })
    }
    fn spec(&mut self) -> &mut PodSpec {
        self.0.spec.as_mut().unwrap()
    }
    fn priority(mut self, p: i32) -> PodB {
        self.spec().priority = Some(p);
        self
    }
    fn gate(mut self, name: &str) -> PodB {
        self.spec()
            .scheduling_gates
            .get_or_insert_with(Vec::new)
            .push(PodSchedulingGate { name: name.into() });
        self
    }
    fn label(mut self, k: &str, v: &str) -> PodB {
        self.0
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(k.into(), v.into());
        self
    }
    fn nominated(mut self, node: &str) -> PodB {
        self.0.status = Some(PodStatus {
            nominated_node_name: Some(node.into()),
            ..Default::default()
        });
        self
    }
    fn node_name(mut self, node: &str) -> PodB {
        self.spec().node_name = Some(node.into());
        self
    }
    fn toleration(mut self, key: &str) -> PodB {
        self.spec()
            .tolerations
            .get_or_insert_with(Vec::new)
            .push(Toleration {
                key: Some(key.into()),
                ..Default::default()
            });
        self
    }
    fn cpu(mut self, q: &str) -> PodB {
        let c = k8s_openapi::api::core::v1::Container {
            name: "c".into(),
            resources: Some(k8s_openapi::api::core::v1::ResourceRequirements {
                requests: Some(BTreeMap::from([("cpu".to_string(), Quantity(q.into()))])),
                ..Default::default()
            }),
            ..Default::default()
        };
        self.spec().containers = vec![c];
        self
    }
    fn obj(self) -> StoredPod {
        self.0.into()
    }
    fn info(self) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(Arc::new(self.0.into())))
    }
}

fn node(name: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn set(plugins: &[&'static str]) -> std::collections::BTreeSet<&'static str> {
    plugins.iter().copied().collect()
}

/// Pops the pod and returns it after a failed attempt with the given rejecting plugins.
fn fail(q: &mut SchedulingQueue, mut p: QueuedPodInfo, plugins: &[&'static str], now: SimTime) {
    p.unschedulable_plugins = set(plugins);
    let cycle = q.scheduling_cycle();
    q.add_unschedulable_if_not_present(p, cycle, now).unwrap();
}

fn where_is(q: &SchedulingQueue, name: &str) -> Option<QueueName> {
    q.get(&format!("default/{name}")).map(|(w, _)| w)
}

// ---- Tests ----

#[test]
fn pop_order_is_priority_then_timestamp() {
    // (case, pods as (name, priority, added at second), want pop order)
    type Case = (
        &'static str,
        Vec<(&'static str, i32, i64)>,
        Vec<&'static str>,
    );
    let cases: [Case; 3] = [
        (
            "higher priority first; equal priorities in the order they were added",
            vec![("mid", 5, 0), ("high", 10, 1), ("high-later", 10, 2)],
            vec!["high", "high-later", "mid"],
        ),
        (
            "equal priorities pop oldest first regardless of insertion order",
            vec![("b", 0, 2), ("a", 0, 1), ("c", 0, 3)],
            vec!["a", "b", "c"],
        ),
        (
            "ties in priority and timestamp pop in insertion order",
            vec![("x", 1, 0), ("y", 1, 0), ("z", 1, 0)],
            vec!["x", "y", "z"],
        ),
    ];
    for (case, pods, want) in cases {
        let mut q = queue(true);
        for (name, prio, t) in pods {
            q.add(PodB::new(name).priority(prio).info(), secs(t));
        }
        let mut got = Vec::new();
        while let Some(p) = q.pop(secs(10)) {
            assert_eq!(p.attempts, 1, "{case}");
            got.push(p.pod_info.name().to_string());
        }
        assert_eq!(got, want, "{case}");
        assert_eq!(q.scheduling_cycle(), 3, "{case}");
    }
}

#[test]
fn repeated_failures_back_off_1_2_4_8_10_10_seconds() {
    for pop_from_backoff_q in [true, false] {
        for (case, plugins) in [
            ("a pod failing with an error", &[][..]),
            ("a pod rejected while an event was in flight", &["Fake"][..]),
        ] {
            let mut q = queue(pop_from_backoff_q);
            q.add(PodB::new("p").info(), secs(0));
            let mut now = secs(0);
            let mut ladder = Vec::new();
            for _ in 0..6 {
                let p = q.pop(now).expect("pod is poppable");
                if !plugins.is_empty() {
                    q.move_all_to_active_or_backoff_queue(
                        labels::NODE_ADD,
                        None,
                        Some(EventObject::Node(&node("good").into())),
                        None,
                        now,
                    );
                }
                fail(&mut q, p, plugins, now);
                let (w, p) = q.get("default/p").unwrap();
                assert_eq!(w, QueueName::Backoff, "{case}");
                let expiry = p.backoff_expiration.unwrap();
                ladder.push((expiry - now).whole_secs());
                // Error pods are never popped early; rejected pods are with PopFromBackoffQ.
                assert_eq!(
                    q.has_poppable(),
                    pop_from_backoff_q && !plugins.is_empty(),
                    "{case}, pop_from_backoff_q={pop_from_backoff_q}"
                );
                // The flush at the first whole second after the expiry moves it.
                let tick = q.next_timer().unwrap();
                assert_eq!(tick, expiry + SimDuration::from_secs(1), "{case}");
                q.run_timers(tick - SimDuration::from_millis(1));
                assert_eq!(where_is(&q, "p"), Some(QueueName::Backoff), "{case}");
                q.run_timers(tick);
                assert_eq!(where_is(&q, "p"), Some(QueueName::Active), "{case}");
                now = tick;
            }
            assert_eq!(
                ladder,
                vec![1, 2, 4, 8, 10, 10],
                "{case}, pop_from_backoff_q={pop_from_backoff_q}"
            );
        }
    }
}

#[test]
fn backoff_expiry_alignment_and_flush_tick() {
    // Failing at 1.5 s with a 1 s backoff gives an expiry of 2.5 s.
    let cases = [
        (
            "with PopFromBackoffQ the expiry is truncated to its window and the pod still backs \
             off during that window",
            true,
            ms(2_000),
            secs(3),
        ),
        (
            "without PopFromBackoffQ the expiry is exact and the pod moves at the next tick",
            false,
            ms(2_500),
            secs(3),
        ),
    ];
    for (case, pop, want_expiry, want_tick) in cases {
        let mut q = queue(pop);
        q.add(PodB::new("p").info(), secs(0));
        let p = q.pop(ms(1_500)).unwrap();
        fail(&mut q, p, &[], ms(1_500));
        let (_, p) = q.get("default/p").unwrap();
        assert_eq!(p.backoff_expiration, Some(want_expiry), "{case}");
        assert_eq!(q.next_timer(), Some(want_tick), "{case}");
        q.run_timers(secs(2));
        assert_eq!(where_is(&q, "p"), Some(QueueName::Backoff), "{case}");
        q.run_timers(want_tick);
        assert_eq!(where_is(&q, "p"), Some(QueueName::Active), "{case}");
    }
}

#[test]
fn pop_from_backoff_q_takes_the_backoff_head_only_when_active_q_is_empty() {
    let mut q = queue(true);
    q.add(PodB::new("low").priority(1).info(), secs(0));
    q.add(PodB::new("high").priority(9).info(), secs(0));
    for _ in 0..2 {
        let p = q.pop(secs(0)).unwrap();
        q.move_all_to_active_or_backoff_queue(
            labels::NODE_ADD,
            None,
            Some(EventObject::Node(&node("good").into())),
            None,
            secs(0),
        );
        fail(&mut q, p, &["Fake"], secs(0));
    }
    q.add(PodB::new("new").info(), secs(0));
    // activeQ first; then the backoff heap in (window, priority) order.
    let order: Vec<String> =
        std::iter::from_fn(|| q.pop(secs(0)).map(|p| p.pod_info.name().to_string())).collect();
    assert_eq!(order, vec!["new", "high", "low"]);

    let mut q = queue(false);
    q.add(PodB::new("p").info(), secs(0));
    let p = q.pop(secs(0)).unwrap();
    q.move_all_to_active_or_backoff_queue(
        labels::NODE_ADD,
        None,
        Some(EventObject::Node(&node("good").into())),
        None,
        secs(0),
    );
    fail(&mut q, p, &["Fake"], secs(0));
    assert!(
        q.pop(secs(0)).is_none(),
        "without PopFromBackoffQ a backing-off pod is not popped"
    );
}

#[test]
fn events_during_the_attempt_decide_where_a_rejected_pod_goes() {
    let good = node("good");
    let bad = node("bad");
    // (case, event while in flight, rejecting plugins, where the pod goes)
    type Case<'a> = (
        &'a str,
        Option<(ClusterEvent, &'a Node)>,
        &'a [&'static str],
        QueueName,
    );
    let cases: [Case; 5] = [
        (
            "no event while in flight: the pod is parked",
            None,
            &["Fake"],
            QueueName::Unschedulable,
        ),
        (
            "a helpful event of the rejecting plugin while in flight: backoffQ, not unschedulablePods",
            Some((labels::NODE_ADD, &good)),
            &["Fake"],
            QueueName::Backoff,
        ),
        (
            "the rejecting plugin's hint says the event does not help: parked",
            Some((labels::NODE_ADD, &bad)),
            &["Fake"],
            QueueName::Unschedulable,
        ),
        (
            "an event only another plugin registered: parked",
            Some((labels::NODE_DELETE, &good)),
            &["Fake"],
            QueueName::Unschedulable,
        ),
        (
            "a failure without rejecting plugins (an error) always goes to backoffQ",
            None,
            &[],
            QueueName::Backoff,
        ),
    ];
    for (case, event, plugins, want) in cases {
        let mut q = queue(true);
        q.add(PodB::new("p").info(), secs(0));
        let p = q.pop(secs(0)).unwrap();
        assert!(q.is_in_flight("uid-p"), "{case}");
        if let Some((e, n)) = event {
            q.move_all_to_active_or_backoff_queue(
                e,
                None,
                Some(EventObject::Node(&n.clone().into())),
                None,
                ms(500),
            );
        }
        fail(&mut q, p, plugins, secs(1));
        assert_eq!(where_is(&q, "p"), Some(want), "{case}");
        assert!(!q.is_in_flight("uid-p"), "{case}");
        assert!(
            q.in_flight_events.is_empty(),
            "{case}: events are dropped once no pod is in flight"
        );
    }
}

#[test]
fn hints_decide_whether_a_parked_pod_moves() {
    // The pod fails at t=0 and is parked; its backoff expires at 1 s.
    let cases: [(&str, bool, &str, SimTime, bool, QueueName); 7] = [
        (
            "a QueueSkip hint leaves the pod parked",
            true,
            "bad",
            ms(500),
            false,
            QueueName::Unschedulable,
        ),
        (
            "Queue while still backing off: backoffQ",
            true,
            "good",
            ms(500),
            false,
            QueueName::Backoff,
        ),
        (
            "Queue after the backoff: activeQ",
            true,
            "good",
            secs(5),
            false,
            QueueName::Active,
        ),
        (
            "with PopFromBackoffQ the pod backs off for the whole window of its expiry",
            true,
            "good",
            ms(1_500),
            false,
            QueueName::Backoff,
        ),
        (
            "without PopFromBackoffQ the backoff ends at the expiry itself",
            false,
            "good",
            ms(1_500),
            false,
            QueueName::Active,
        ),
        (
            "a hint error counts as Queue",
            true,
            "broken",
            ms(500),
            false,
            QueueName::Backoff,
        ),
        (
            "Queue from a Pending plugin skips the backoff",
            true,
            "good",
            ms(500),
            true,
            QueueName::Active,
        ),
    ];
    for (case, pop, node_name, at, pending, want) in cases {
        let mut q = queue(pop);
        q.add(PodB::new("p").info(), secs(0));
        let mut p = q.pop(secs(0)).unwrap();
        if pending {
            p.pending_plugins = set(&["Fake"]);
        } else {
            p.unschedulable_plugins = set(&["Fake"]);
        }
        q.add_unschedulable_if_not_present(p, 1, secs(0)).unwrap();
        assert_eq!(where_is(&q, "p"), Some(QueueName::Unschedulable), "{case}");
        let n = node(node_name);
        q.move_all_to_active_or_backoff_queue(
            labels::NODE_ADD,
            None,
            Some(EventObject::Node(&n.clone().into())),
            None,
            at,
        );
        assert_eq!(where_is(&q, "p"), Some(want), "{case}");
    }
}

#[test]
fn move_all_respects_pre_check_and_uninteresting_events() {
    let mut q = queue(true);
    for name in ["a", "b"] {
        q.add(PodB::new(name).info(), secs(0));
        let p = q.pop(secs(0)).unwrap();
        fail(&mut q, p, &["Fake"], secs(0));
    }
    let good = node("good");
    // Fake did not register node label updates: both pods stay.
    q.move_all_to_active_or_backoff_queue(
        NODE_UPDATE_LABEL,
        None,
        Some(EventObject::Node(&good.clone().into())),
        None,
        secs(5),
    );
    assert_eq!(q.pending_pods().unschedulable, 2);
    let only_a = |p: &PodInfo| p.name() == "a";
    q.move_all_to_active_or_backoff_queue(
        labels::NODE_ADD,
        None,
        Some(EventObject::Node(&good.clone().into())),
        Some(&only_a),
        secs(5),
    );
    assert_eq!(where_is(&q, "a"), Some(QueueName::Active));
    assert_eq!(where_is(&q, "b"), Some(QueueName::Unschedulable));
}

#[test]
fn a_plugin_registering_node_add_also_gets_node_taint_updates() {
    let mut q = queue(true);
    q.add(PodB::new("p").info(), secs(0));
    let p = q.pop(secs(0)).unwrap();
    fail(&mut q, p, &["Fake"], secs(0));
    // Fake registered only NodeAdd; upstream adds Node/UpdateNodeTaint with an always-Queue hint.
    q.move_all_to_active_or_backoff_queue(
        NODE_UPDATE_TAINT,
        None,
        Some(EventObject::Node(&node("bad").into())),
        None,
        secs(5),
    );
    assert_eq!(where_is(&q, "p"), Some(QueueName::Active));
}

#[test]
fn leftover_flush_retries_pods_parked_more_than_five_minutes() {
    let cases = [
        ("backoff over: activeQ", 1, QueueName::Active),
        ("still backing off: backoffQ", 1000, QueueName::Backoff),
    ];
    for (case, backoff_secs, want) in cases {
        let mut q = queue_with(true, backoff_secs, backoff_secs);
        q.add(PodB::new("p").info(), secs(0));
        let p = q.pop(secs(0)).unwrap();
        fail(&mut q, p, &["Fake"], secs(0));
        assert_eq!(q.next_timer(), Some(secs(330)), "{case}");
        // The 300 s tick is exactly 5 minutes after, which is not more than 5 minutes.
        q.run_timers(secs(300));
        assert_eq!(where_is(&q, "p"), Some(QueueName::Unschedulable), "{case}");
        assert_eq!(q.next_timer(), Some(secs(330)), "{case}");
        q.run_timers(secs(330));
        assert_eq!(where_is(&q, "p"), Some(want), "{case}");
    }
}

#[test]
fn next_timer_is_none_when_nothing_would_move() {
    let mut q = queue(true);
    assert_eq!(q.next_timer(), None, "an empty queue");
    q.add(PodB::new("p").info(), secs(0));
    assert_eq!(q.next_timer(), None, "a pod in activeQ needs no timer");
    q.add(PodB::new("g").gate("wait").info(), secs(0));
    assert_eq!(
        q.next_timer(),
        None,
        "a gated pod whose gating plugin does not register the wildcard is never retried by the leftover flush"
    );
}

#[test]
fn gated_pods_stay_out_until_their_gates_are_removed() {
    let mut q = queue(true);
    let gated = PodB::new("p").gate("a").gate("b");
    q.add(gated.0.clone().into_info(), secs(0));
    assert_eq!(
        q.pending_pods(),
        PendingCounts {
            gated: 1,
            ..Default::default()
        },
        "a gated pod is held in unschedulablePods"
    );
    assert!(!q.has_poppable());
    assert!(q.pop(secs(0)).is_none());

    // An unrelated cluster event does not concern the gating plugin.
    q.move_all_to_active_or_backoff_queue(
        labels::NODE_ADD,
        None,
        Some(EventObject::Node(&node("good").into())),
        None,
        secs(1),
    );
    assert_eq!(q.pending_pods().gated, 1);

    // One gate removed: still gated.
    let one_gate = PodB::new("p").gate("a").label("x", "y");
    q.update(
        &StoredPod::from(gated.0.clone()),
        one_gate.0.clone().into_info(),
        secs(2),
    );
    assert_eq!(
        q.pending_pods().gated,
        1,
        "a label change and one gate left"
    );

    // All gates removed: the gating plugin's event fires and PreEnqueue now passes.
    let ungated = PodB::new("p").label("x", "y");
    q.update(
        &StoredPod::from(one_gate.0.clone()),
        ungated.0.clone().into_info(),
        secs(3),
    );
    assert_eq!(where_is(&q, "p"), Some(QueueName::Active));
    let p = q.pop(secs(3)).unwrap();
    assert_eq!(p.attempts, 1);
    assert_eq!(
        p.initial_attempt_timestamp,
        Some(secs(3)),
        "the first entry into activeQ"
    );
    assert!(p.unschedulable_plugins.is_empty() && p.gating_plugin.is_none());
}

trait IntoInfo {
    fn into_info(self) -> Arc<PodInfo>;
}

impl IntoInfo for Pod {
    fn into_info(self) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(Arc::new(self.into())))
    }
}

#[test]
fn updates_of_queued_and_in_flight_pods() {
    let mut q = queue(true);
    let old = PodB::new("p").priority(1);
    q.add(old.0.clone().into_info(), secs(0));
    q.add(PodB::new("o").priority(5).info(), secs(0));
    // Raising the priority in activeQ re-sorts it.
    let new = PodB::new("p").priority(10);
    q.update(
        &StoredPod::from(old.0.clone()),
        new.0.clone().into_info(),
        secs(1),
    );
    let p = q.pop(secs(1)).unwrap();
    assert_eq!((p.pod_info.name(), p.pod_info.priority), ("p", 10));
    assert_eq!(
        p.timestamp,
        secs(0),
        "an in-place update keeps the queue timestamp"
    );

    // While in flight, an update is only recorded; a toleration update does not concern Fake,
    // so after Fake rejects the pod it is parked.
    let newer = PodB::new("p").priority(10).toleration("k");
    q.update(
        &StoredPod::from(new.0.clone()),
        newer.0.clone().into_info(),
        secs(2),
    );
    assert!(
        q.get("default/p").is_none(),
        "an in-flight pod is not re-added by an update"
    );
    fail(&mut q, p, &["Fake"], secs(3));
    assert_eq!(where_is(&q, "p"), Some(QueueName::Unschedulable));

    // A pod in no queue is added as new.
    q.update(&PodB::new("n").obj(), PodB::new("n").info(), secs(4));
    assert_eq!(where_is(&q, "n"), Some(QueueName::Active));

    q.delete(&PodB::new("n").info());
    q.delete(&PodB::new("p").info());
    assert_eq!(where_is(&q, "n"), None);
    assert_eq!(where_is(&q, "p"), None);
}

#[test]
fn activate_moves_parked_pods_and_marks_in_flight_ones() {
    let mut q = queue(true);
    q.add(PodB::new("parked").info(), secs(0));
    q.add(PodB::new("flying").info(), secs(0));
    let p = q.pop(secs(0)).unwrap();
    fail(&mut q, p, &["Fake"], secs(0));
    let flying = q.pop(secs(0)).unwrap();
    assert_eq!(flying.pod_info.name(), "flying");
    q.activate(
        &["default/parked".to_string(), "default/flying".to_string()],
        secs(1),
    );
    assert_eq!(where_is(&q, "parked"), Some(QueueName::Active));
    // The recorded ForceActivate targets "flying": it is requeued after its failure.
    fail(&mut q, flying, &["Fake"], secs(1));
    assert_eq!(where_is(&q, "flying"), Some(QueueName::Backoff));
}

#[test]
fn a_targeted_force_activate_does_not_requeue_other_in_flight_pods() {
    let mut q = queue(true);
    q.add(PodB::new("a").info(), secs(0));
    q.add(PodB::new("b").info(), secs(0));
    let a = q.pop(secs(0)).unwrap();
    let b = q.pop(secs(0)).unwrap();
    q.activate(&["default/a".to_string()], secs(0));
    fail(&mut q, b, &["Fake"], secs(1));
    fail(&mut q, a, &["Fake"], secs(1));
    assert_eq!(where_is(&q, "b"), Some(QueueName::Unschedulable));
    assert_eq!(where_is(&q, "a"), Some(QueueName::Backoff));
}

#[test]
fn adding_a_pod_already_queued_is_an_error() {
    let mut q = queue(true);
    q.add(PodB::new("p").info(), secs(0));
    let p = q.pop(secs(0)).unwrap();
    q.add(PodB::new("p").info(), secs(0));
    let err = q
        .add_unschedulable_if_not_present(p, 1, secs(1))
        .unwrap_err();
    assert_eq!(err, "Pod default/p is already present in the active queue");
    assert!(!q.is_in_flight("uid-p"), "done is called anyway");
}

#[test]
fn nominator_add_update_delete() {
    let mut q = queue(true);
    let p = PodB::new("p").nominated("n1");
    q.add(p.0.clone().into_info(), secs(0));
    let names = |q: &SchedulingQueue, n: &str| -> Vec<String> {
        q.nominated_pods_for_node(n)
            .iter()
            .map(|p| p.name().to_string())
            .collect()
    };
    assert_eq!(
        names(&q, "n1"),
        vec!["p"],
        "Add records status.nominatedNodeName"
    );
    assert!(q.has_nominated_pods());

    q.add_nominated_pod(p.0.clone().into_info(), Some("n2".into()));
    assert_eq!(
        names(&q, "n1"),
        Vec::<String>::new(),
        "an override replaces the nomination"
    );
    assert_eq!(names(&q, "n2"), vec!["p"]);

    // An update where neither version carries nominatedNodeName keeps the remembered node and
    // returns the newest version.
    let before = PodB::new("p").label("v", "1");
    q.update(
        &StoredPod::from(before.0.clone()),
        PodB::new("p").label("v", "2").priority(3).info(),
        secs(1),
    );
    let got = q.nominated_pods_for_node("n2");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].priority, 3, "the latest queued version");
    assert_eq!(q.nominated_node_of("uid-p"), Some("n2"));

    // An update that sets nominatedNodeName follows it.
    q.update(
        &StoredPod::from(before.0.clone()),
        PodB::new("p").nominated("n3").info(),
        secs(2),
    );
    assert_eq!(names(&q, "n3"), vec!["p"]);
    assert!(names(&q, "n2").is_empty());

    // A pod in flight is returned as a bare pod.
    let popped = q.pop(secs(3)).unwrap();
    let bare = q.nominated_pods_for_node("n3");
    assert_eq!((bare[0].name(), bare[0].priority), ("p", 0));
    q.done(popped.pod_info.uid());

    q.delete_nominated_pod_if_exists(&popped.pod_info);
    assert!(names(&q, "n3").is_empty());
    assert!(!q.has_nominated_pods());

    // Override with "" clears; a bound pod is never nominated.
    q.add_nominated_pod(PodB::new("x").info(), Some("n1".into()));
    q.add_nominated_pod(PodB::new("x").info(), Some(String::new()));
    assert!(names(&q, "n1").is_empty());
    q.add_nominated_pod(PodB::new("y").node_name("n1").info(), Some("n1".into()));
    assert!(names(&q, "n1").is_empty());

    // Deleting the pod drops its nomination.
    q.add(PodB::new("z").nominated("n4").info(), secs(4));
    q.delete(&PodB::new("z").info());
    assert!(names(&q, "n4").is_empty());
}

#[test]
fn backoff_duration_unit_facts() {
    let ns = |n: i64| SimDuration(n);
    let cases = [
        ("no attempt, no backoff", ns(1), ns(32), 0, ns(0)),
        (
            "first attempt: the initial backoff",
            ns(1),
            ns(32),
            1,
            ns(1),
        ),
        ("doubles per attempt", ns(1), ns(32), 3, ns(4)),
        ("capped at the maximum", ns(1), ns(32), 16, ns(32)),
        (
            "no overflow with many attempts",
            ns(1),
            ns(i32::MAX as i64),
            32,
            ns(i32::MAX as i64),
        ),
        (
            "no overflow past 64 doublings",
            ns(1),
            ns(i64::MAX),
            200,
            ns(i64::MAX),
        ),
        (
            "no overflow at the largest attempt count",
            SimDuration::from_secs(1),
            SimDuration::from_secs(10),
            u32::MAX,
            SimDuration::from_secs(10),
        ),
        (
            "a zero maximum means no backoff",
            SimDuration::from_secs(1),
            ns(0),
            3,
            ns(0),
        ),
    ];
    for (case, initial, max, attempts, want) in cases {
        let q = SchedulingQueue::new(QueueConfig {
            initial_backoff: initial,
            max_backoff: max,
            pop_from_backoff_q: true,
            queue_sort: Arc::new(PrioritySort),
            profiles: BTreeMap::new(),
        });
        let mut p = QueuedPodInfo::new(PodB::new("p").info(), secs(0));
        p.attempts = attempts;
        assert_eq!(q.backoff_duration(&p), want, "{case}");
    }
}

#[test]
fn done_drops_events_no_in_flight_pod_needs() {
    let mut q = queue(true);
    q.add(PodB::new("a").info(), secs(0));
    q.add(PodB::new("b").info(), secs(0));
    let a = q.pop(secs(0)).unwrap();
    q.move_all_to_active_or_backoff_queue(labels::NODE_DELETE, None, None, None, secs(0));
    let b = q.pop(secs(0)).unwrap();
    q.move_all_to_active_or_backoff_queue(labels::NODE_DELETE, None, None, None, secs(0));
    assert_eq!(q.in_flight_events.len(), 4);
    q.done(b.pod_info.uid());
    assert_eq!(
        q.in_flight_events.len(),
        3,
        "events after b are still needed by a"
    );
    q.done(a.pod_info.uid());
    assert!(q.in_flight_events.is_empty());
}

#[test]
fn node_update_events_in_upstream_order() {
    let base = node("n");
    let mut changed = base.clone();
    changed.metadata.labels = Some(BTreeMap::from([("a".into(), "b".into())]));
    changed.metadata.annotations = Some(BTreeMap::from([("a".into(), "b".into())]));
    changed.spec = Some(NodeSpec {
        taints: Some(vec![Taint {
            key: "k".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    changed.status = Some(NodeStatus {
        allocatable: Some(BTreeMap::from([("cpu".into(), Quantity("1".into()))])),
        ..Default::default()
    });
    let mut cordoned = base.clone();
    cordoned.spec = Some(NodeSpec {
        unschedulable: Some(true),
        ..Default::default()
    });
    let mut millis = base.clone();
    millis.status = Some(NodeStatus {
        allocatable: Some(BTreeMap::from([("cpu".into(), Quantity("1000m".into()))])),
        ..Default::default()
    });
    let cases = [
        (
            "nothing relevant changed",
            base.clone(),
            base.clone(),
            vec![],
        ),
        (
            "allocatable, labels, taints, annotations, in that order",
            base.clone(),
            changed.clone(),
            vec![
                NODE_UPDATE_ALLOCATABLE,
                NODE_UPDATE_LABEL,
                NODE_UPDATE_TAINT,
                NODE_UPDATE_ANNOTATION,
            ],
        ),
        (
            "uncordoning counts as a taint change",
            cordoned.clone(),
            base.clone(),
            vec![NODE_UPDATE_TAINT],
        ),
        (
            "cordoning is not an event",
            base.clone(),
            cordoned.clone(),
            vec![],
        ),
        (
            "1 and 1000m cpu are the same allocatable",
            changed.clone(),
            {
                let mut m = changed.clone();
                m.status = millis.status.clone();
                m
            },
            vec![],
        ),
    ];
    for (case, old, new, want) in cases {
        assert_eq!(node_update_events(&old.into(), &new.into()), want, "{case}");
    }
}

#[test]
fn pod_update_events_in_upstream_order() {
    let base = PodB::new("p").cpu("2").gate("g");
    let cases = [
        (
            "nothing specific: the general update of an unscheduled pod",
            StoredPod::from(base.0.clone()),
            PodB::new("p").cpu("2").gate("g").obj(),
            vec![UNSCHEDULED_POD_UPDATE],
        ),
        (
            "labels, scale down, gates eliminated, tolerations, in that order",
            StoredPod::from(base.0.clone()),
            PodB::new("p")
                .cpu("1")
                .label("a", "b")
                .toleration("t")
                .obj(),
            vec![
                ClusterEvent::new(
                    EventResource::UnscheduledPod,
                    ActionType::UPDATE_POD_LABEL,
                    "UnschedulablePodUpdatePodLabel",
                ),
                ClusterEvent::new(
                    EventResource::UnscheduledPod,
                    ActionType::UPDATE_POD_SCALE_DOWN,
                    "UnschedulablePodUpdatePodScaleDown",
                ),
                ClusterEvent::new(
                    EventResource::UnscheduledPod,
                    ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
                    "UnschedulablePodUpdatePodSchedulingGatesEliminated",
                ),
                ClusterEvent::new(
                    EventResource::UnscheduledPod,
                    ActionType::UPDATE_POD_TOLERATION,
                    "UnschedulablePodUpdatePodToleration",
                ),
            ],
        ),
        (
            "a bound pod's update is an assigned pod event; a larger request is no scale down",
            StoredPod::from(base.0.clone()),
            PodB::new("p").cpu("3").gate("g").node_name("n").obj(),
            vec![ASSIGNED_POD_UPDATE],
        ),
    ];
    for (case, old, new, want) in cases {
        assert_eq!(pod_update_events(&old, &new), want, "{case}");
    }
}

#[test]
fn event_matching_follows_upstream() {
    let pod_label = ClusterEvent::new(EventResource::Pod, ActionType::UPDATE_POD_LABEL, "");
    let pod_update = ClusterEvent::new(EventResource::Pod, ActionType::UPDATE, "");
    let cases = [
        (
            "a specific update matches a general registration",
            pod_update,
            ClusterEvent::new(EventResource::AssignedPod, ActionType::UPDATE_POD_LABEL, ""),
            true,
        ),
        (
            "a general update does not match a specific registration",
            pod_label,
            UNSCHEDULED_POD_UPDATE,
            false,
        ),
        (
            "a general update matches a general registration",
            pod_update,
            UNSCHEDULED_POD_UPDATE,
            true,
        ),
        (
            "Pod covers assigned and unscheduled pods",
            pod_label,
            ClusterEvent::new(
                EventResource::UnscheduledPod,
                ActionType::UPDATE_POD_LABEL,
                "",
            ),
            true,
        ),
        (
            "an incoming wildcard matches only a registered wildcard",
            labels::NODE_ADD,
            labels::UNSCHEDULABLE_TIMEOUT,
            false,
        ),
        (
            "a registered wildcard matches everything",
            labels::WILDCARD,
            labels::NODE_ADD,
            true,
        ),
        (
            "different resources do not match",
            labels::NODE_ADD,
            labels::ASSIGNED_POD_ADD,
            false,
        ),
    ];
    for (case, registered, incoming, want) in cases {
        assert_eq!(event_matches(&registered, &incoming), want, "{case}");
    }
}

#[test]
fn the_next_leftover_tick_follows_the_earliest_parked_pod_as_pods_come_and_go() {
    let mut q = queue(true);
    // A gated pod parked first: its gating plugin does not register the wildcard, so the
    // leftover flush never moves it and it sets no timer.
    q.add(PodB::new("g").gate("wait").info(), secs(0));
    for (name, parked_secs) in [("a", 40), ("b", 10), ("c", 70)] {
        q.add(PodB::new(name).info(), secs(parked_secs));
        let p = q.pop(secs(parked_secs)).unwrap();
        fail(&mut q, p, &["Fake"], secs(parked_secs));
    }
    // b was parked at 10 s: more than 5 minutes later, at a multiple of 30 s, is 330 s.
    assert_eq!(q.next_timer(), Some(secs(330)));
    q.delete(&PodB::new("b").info());
    assert_eq!(q.next_timer(), Some(secs(360)), "a, parked at 40 s");
    q.delete(&PodB::new("a").info());
    assert_eq!(q.next_timer(), Some(secs(390)), "c, parked at 70 s");
    q.delete(&PodB::new("c").info());
    assert_eq!(q.next_timer(), None, "only the gated pod is left");
    assert_eq!(q.pending_pods().gated, 1);
}

#[test]
fn a_gated_pods_nomination_is_recorded_on_add_only_from_v1_37() {
    let mut pod = PodB::new("p").gate("a").0;
    pod.status
        .get_or_insert_with(Default::default)
        .nominated_node_name = Some("n1".into());
    for (records_on_add, want) in [(false, None), (true, Some("n1"))] {
        let mut q = queue(true);
        q.set_records_nomination_on_add(records_on_add);
        q.add(pod.clone().into_info(), secs(0));
        assert_eq!(q.pending_pods().gated, 1);
        let uid = pod.metadata.uid.as_deref().unwrap();
        assert_eq!(
            q.nominated_node_of(uid),
            want,
            "records on add: {records_on_add}"
        );
        let held: Vec<String> = q
            .nominated_pods_for_node("n1")
            .iter()
            .map(|p| p.name().to_string())
            .collect();
        assert_eq!(
            held.is_empty(),
            want.is_none(),
            "records on add: {records_on_add}"
        );
        // Once the pod leaves the nominator's view by deletion, its room is free again.
        q.delete(&PodInfo::new(Arc::new(pod.clone().into())));
        assert_eq!(q.nominated_node_of(uid), None);
    }
    // In every release a nomination patched onto a gated pod the queue holds is recorded.
    let mut q = queue(true);
    let gated = PodB::new("p").gate("a").0;
    q.add(gated.clone().into_info(), secs(0));
    q.update(
        &StoredPod::from(gated.clone()),
        pod.clone().into_info(),
        secs(1),
    );
    assert_eq!(
        q.nominated_node_of(pod.metadata.uid.as_deref().unwrap()),
        Some("n1")
    );
}

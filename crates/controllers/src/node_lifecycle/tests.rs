//! Tests of the node lifecycle controller, after upstream
//! `node_lifecycle_controller_test.go` (controllers.md 4.4), on the virtual clock.

use std::collections::HashMap;

use kubeplane_registry::testing::TestClient;

use super::*;
use crate::node_testutil::*;
use crate::taint_eviction::TaintEvictionController;

struct Harness {
    client: TestClient,
    nlc: NodeLifecycleController,
    tec: Option<TaintEvictionController>,
    /// Nodes whose agent stopped, and when.
    down_at: HashMap<String, SimTime>,
    next_tick: SimTime,
}

impl Harness {
    fn new(config: NodeLifecycleConfig) -> Harness {
        Harness {
            client: TestClient::new(3),
            nlc: NodeLifecycleController::new(config),
            tec: None,
            down_at: HashMap::new(),
            next_tick: SimTime::ZERO,
        }
    }

    fn with_taint_eviction(mut self) -> Harness {
        self.tec = Some(TaintEvictionController::new());
        self
    }

    fn components(&mut self) -> (&mut TestClient, Vec<&mut dyn Component>) {
        let mut cs: Vec<&mut dyn Component> = vec![&mut self.nlc];
        if let Some(t) = self.tec.as_mut() {
            cs.push(t);
        }
        (&mut self.client, cs)
    }

    /// Renews `node`'s Lease at `t` as simulate's agents do: in the store, without a watch
    /// event.
    fn renew_lease_quietly(&mut self, node: &str, t: SimTime) {
        let store = &mut self.client.store;
        let lease = store.get(Kind::Lease, NODE_LEASE_NAMESPACE, node);
        let rv = lease.unwrap().resource_version().parse().unwrap();
        let renew = t.to_timestamp(store.start_time());
        kubeplane_registry::client::renew_lease_quietly(
            store,
            NODE_LEASE_NAMESPACE,
            node,
            renew,
            rv,
            &mut Default::default(),
        )
        .unwrap();
    }

    fn at(&mut self, t: SimTime) {
        let (client, mut cs) = self.components();
        client.run_until(t, &mut cs);
    }

    fn settle(&mut self) {
        let (client, mut cs) = self.components();
        client.settle(&mut cs);
    }

    fn create(&mut self, obj: Object) {
        create(&mut self.client, obj);
        self.settle();
    }

    /// Runs until `until`, renewing the Lease of every node whose agent is up every 10 s (at
    /// each multiple of 10 s, after the controllers ran at that instant).
    fn run(&mut self, until: SimTime) {
        while self.next_tick <= until {
            let tick = self.next_tick;
            self.at(tick);
            let names: Vec<String> = self
                .client
                .store
                .nodes()
                .map(|n| n.metadata.name.clone().unwrap())
                .collect();
            for n in names {
                if self.down_at.get(&n).is_none_or(|&d| tick < d) {
                    renew_lease(&mut self.client, &n);
                }
            }
            self.settle();
            self.next_tick = tick + SimDuration::from_secs(10);
        }
        self.at(until);
    }

    fn node_down(&mut self, name: &str, at: SimTime) {
        self.down_at.insert(name.to_string(), at);
    }

    /// The node agent is back: posts Ready=True and renews its lease from now on.
    fn node_up(&mut self, name: &str) {
        self.down_at.remove(name);
        post_condition(&mut self.client, name, "Ready", "True");
        renew_lease(&mut self.client, name);
        self.settle();
    }

    fn events(&self, reason: &str, name: &str) -> Vec<f64> {
        event_times(&self.client, reason, name, "")
    }

    fn taints(&self, node: &str) -> Vec<String> {
        node_taint_keys(&self.client, node)
    }
}

fn fast_config() -> NodeLifecycleConfig {
    NodeLifecycleConfig {
        node_eviction_rate: 100_000.0,
        large_cluster_size_threshold: 20,
        ..NodeLifecycleConfig::default()
    }
}

const UNREACHABLE_NE: &str = "node.kubernetes.io/unreachable:NoExecute";
const UNREACHABLE_NS: &str = "node.kubernetes.io/unreachable:NoSchedule";
const NOT_READY_NE: &str = "node.kubernetes.io/not-ready:NoExecute";
const NOT_READY_NS: &str = "node.kubernetes.io/not-ready:NoSchedule";

#[test]
fn the_defaults_are_upstream_v1_34() {
    let c = NodeLifecycleConfig::default();
    assert_eq!(c.node_monitor_period, SimDuration::from_secs(5));
    assert_eq!(c.node_monitor_grace_period, SimDuration::from_secs(50));
    assert_eq!(c.node_startup_grace_period, SimDuration::from_secs(60));
    assert_eq!(
        (c.node_eviction_rate, c.secondary_node_eviction_rate),
        (0.1, 0.01)
    );
    assert_eq!(
        (c.unhealthy_zone_threshold, c.large_cluster_size_threshold),
        (0.55, 50)
    );
}

#[test]
fn zone_keys_prefer_the_beta_labels_and_join_region_and_zone() {
    let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(zone_key(None), "");
    assert_eq!(zone_key(Some(&labels(&[("other", "x")]))), "");
    assert_eq!(
        zone_key(Some(&labels(&[(LABEL_REGION, "r1"), (LABEL_ZONE, "z1")]))),
        "r1:\u{0}:z1"
    );
    assert_eq!(
        zone_key(Some(&labels(&[
            (LABEL_REGION, "r1"),
            (LABEL_ZONE, "z1"),
            (LABEL_ZONE_BETA, "old")
        ]))),
        "r1:\u{0}:old"
    );
    assert_eq!(zone_key(Some(&labels(&[(LABEL_ZONE, "z1")]))), ":\u{0}:z1");
}

/// Upstream `ComputeZoneState` and the zone rows of `TestMonitorNodeHealth`.
#[test]
fn zone_states_follow_the_not_ready_counts() {
    let cases = [
        ("nothing ready", 0, 4, ZoneState::FullDisruption),
        ("3 of 4 not ready", 1, 3, ZoneState::PartialDisruption),
        ("2 not ready is never partial", 3, 2, ZoneState::Normal),
        ("3 of 5 not ready (0.6)", 2, 3, ZoneState::PartialDisruption),
        ("3 of 6 not ready (0.5)", 3, 3, ZoneState::Normal),
        ("all ready", 5, 0, ZoneState::Normal),
    ];
    for (name, ready, not_ready, want) in cases {
        assert_eq!(compute_zone_state(ready, not_ready, 0.55), want, "{name}");
    }
}

/// Upstream `TestMonitorNodeHealth`: zone states at a first pass and after status updates
/// one hour later.
#[test]
fn monitor_passes_compute_zone_states() {
    struct Case {
        name: &'static str,
        /// (zone, Ready status at creation, or None for no condition; status an hour later)
        nodes: Vec<(&'static str, Option<&'static str>, &'static str)>,
        initial: Vec<(&'static str, ZoneState)>,
        following: Vec<(&'static str, ZoneState)>,
    }
    use ZoneState::*;
    let cases = vec![
        Case {
            name: "one node without zone labels stays Normal",
            nodes: vec![("", Some("True"), "True")],
            initial: vec![("", Normal)],
            following: vec![("", Normal)],
        },
        Case {
            name: "both zones down, one comes back",
            nodes: vec![
                ("z1", Some("Unknown"), "Unknown"),
                ("z2", Some("Unknown"), "True"),
            ],
            initial: vec![("z1", FullDisruption), ("z2", FullDisruption)],
            following: vec![("z1", FullDisruption), ("z2", Normal)],
        },
        Case {
            name: "nodes without conditions are fully disrupted, then partially",
            nodes: vec![
                ("z1", None, "Unknown"),
                ("z1", None, "Unknown"),
                ("z1", None, "Unknown"),
                ("z1", None, "True"),
            ],
            initial: vec![("z1", FullDisruption)],
            following: vec![("z1", PartialDisruption)],
        },
        Case {
            name: "a third failure crosses the threshold",
            nodes: vec![
                ("z1", Some("Unknown"), "Unknown"),
                ("z1", Some("Unknown"), "Unknown"),
                ("z1", Some("True"), "Unknown"),
                ("z1", Some("True"), "True"),
                ("z1", Some("True"), "True"),
            ],
            initial: vec![("z1", Normal)],
            following: vec![("z1", PartialDisruption)],
        },
        Case {
            name: "the last healthy node fails",
            nodes: vec![
                ("z1", Some("Unknown"), "Unknown"),
                ("z1", Some("True"), "Unknown"),
            ],
            initial: vec![("z1", Normal)],
            following: vec![("z1", FullDisruption)],
        },
    ];
    for case in cases {
        let mut h = Harness::new(fast_config());
        for (i, (zone, initial, _)) in case.nodes.iter().enumerate() {
            let mut n = node(&format!("node{i}"));
            if !zone.is_empty() {
                n = n.zone("region1", zone);
            }
            if let Some(status) = initial {
                n = n.condition("Ready", status, SimTime::ZERO);
            }
            h.create(n.build());
        }
        h.nlc.monitor_now(SimTime::ZERO, &mut h.client);
        let key = |z: &str| {
            if z.is_empty() {
                String::new()
            } else {
                format!("region1:\u{0}:{z}")
            }
        };
        for (z, want) in &case.initial {
            assert_eq!(
                h.nlc.zone_state(&key(z)),
                Some(*want),
                "{}: initial {z}",
                case.name
            );
        }
        h.client.now = secs(3600);
        for (i, (_, _, later)) in case.nodes.iter().enumerate() {
            let name = format!("node{i}");
            if *later == "True" {
                post_condition(&mut h.client, &name, "Ready", "True");
            } else if node_condition(&h.client, &name, "Ready").is_none() {
                // Never posted: report Unknown with a stale heartbeat, as upstream's test.
                let mut n = Node::clone(h.client.store.get_node(&name).unwrap());
                n.status.get_or_insert_with(Default::default).conditions =
                    Some(vec![NodeCondition {
                        type_: "Ready".into(),
                        status: "Unknown".into(),
                        last_heartbeat_time: Some(h.client.store.timestamp(SimTime::ZERO)),
                        last_transition_time: Some(h.client.store.timestamp(SimTime::ZERO)),
                        ..Default::default()
                    }]);
                n.metadata.resource_version = None;
                h.client
                    .update_status(Object::Node(Arc::new(n.into())))
                    .unwrap();
            }
        }
        h.client.dispatch(&mut [&mut h.nlc]);
        h.nlc.monitor_now(secs(3600), &mut h.client);
        for (z, want) in &case.following {
            assert_eq!(
                h.nlc.zone_state(&key(z)),
                Some(*want),
                "{}: following {z}",
                case.name
            );
        }
    }
}

/// Upstream `TestTaintsNodeByCondition`.
#[test]
fn conditions_give_no_schedule_taints() {
    // (name, conditions, cordoned, expected NoSchedule taints)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, bool, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (
            "ready and network unavailable",
            vec![("Ready", "True"), ("NetworkUnavailable", "True")],
            false,
            vec!["node.kubernetes.io/network-unavailable:NoSchedule"],
        ),
        (
            "not ready",
            vec![("Ready", "False")],
            false,
            vec![NOT_READY_NS],
        ),
        (
            "unreachable",
            vec![("Ready", "Unknown")],
            false,
            vec![UNREACHABLE_NS],
        ),
        (
            "pressure",
            vec![
                ("Ready", "True"),
                ("MemoryPressure", "True"),
                ("DiskPressure", "True"),
                ("PIDPressure", "True"),
            ],
            false,
            vec![
                "node.kubernetes.io/memory-pressure:NoSchedule",
                "node.kubernetes.io/disk-pressure:NoSchedule",
                "node.kubernetes.io/pid-pressure:NoSchedule",
            ],
        ),
        (
            "cordoned",
            vec![("Ready", "True")],
            true,
            vec!["node.kubernetes.io/unschedulable:NoSchedule"],
        ),
        (
            "healthy",
            vec![("Ready", "True"), ("MemoryPressure", "False")],
            false,
            vec![],
        ),
    ];
    for (name, conditions, cordoned, want) in cases {
        let mut h = Harness::new(fast_config());
        let mut n = node("node0").taint(taint("other", "", "NoSchedule"));
        for (t, s) in conditions {
            n = n.condition(t, s, SimTime::ZERO);
        }
        if cordoned {
            n = n.unschedulable();
        }
        h.create(n.build());
        let mut got = h.taints("node0");
        assert_eq!(
            got.remove(0),
            "other:NoSchedule",
            "{name}: other taints are kept"
        );
        assert_eq!(got, want, "{name}");
    }
    // Recovery removes the condition taint, and only it.
    let mut h = Harness::new(fast_config());
    h.create(
        node("node0")
            .condition("Ready", "False", SimTime::ZERO)
            .taint(taint("other", "", "NoSchedule"))
            .build(),
    );
    assert_eq!(h.taints("node0"), vec!["other:NoSchedule", NOT_READY_NS]);
    post_condition(&mut h.client, "node0", "Ready", "True");
    h.settle();
    assert_eq!(h.taints("node0"), vec!["other:NoSchedule"]);
}

/// A status post that renews only heartbeats is not queued for the NoSchedule taint and label
/// reconciliation when the version before it was found clean, yet its heartbeat counts for the
/// health check; a condition change is queued and taints the node.
#[test]
fn a_heartbeat_only_post_skips_the_reconciliation_but_still_counts() {
    let mut h = Harness::new(fast_config());
    h.create(node("node0").ready(SimTime::ZERO).build());
    assert!(h.nlc.nodes.get("node0").unwrap().reconciled.is_some());
    for t in [30, 60, 90, 120] {
        h.at(secs(t));
        post_condition(&mut h.client, "node0", "Ready", "True");
        h.client.dispatch(&mut [&mut h.nlc]);
        assert!(h.nlc.node_queue.is_empty(), "at {t} s");
        let rv = h
            .client
            .store
            .get_node("node0")
            .unwrap()
            .metadata
            .resource_version
            .clone();
        let entry = h.nlc.nodes.get("node0").unwrap();
        assert_eq!(Some(entry.resource_version.to_string()), rv);
        assert_eq!(entry.reconciled, Some(entry.resource_version));
        h.settle();
    }
    // No Lease: only the heartbeats kept the node ready past the 50 s grace period.
    h.at(secs(150));
    assert_eq!(h.nlc.probe_time("node0"), Some(secs(125)));
    let ready = node_condition(&h.client, "node0", "Ready").unwrap();
    assert_eq!(ready.status, "True");
    post_condition(&mut h.client, "node0", "Ready", "False");
    h.client.dispatch(&mut [&mut h.nlc]);
    assert!(!h.nlc.node_queue.is_empty());
    h.settle();
    assert_eq!(h.taints("node0"), vec![NOT_READY_NS]);
    // The taint's own write was visited again and found clean.
    let entry = h.nlc.nodes.get("node0").unwrap();
    assert_eq!(entry.reconciled, Some(entry.resource_version));
}

/// Upstream `TestApplyNoExecuteTaints` and `TestSwapUnreachableNotReadyTaints`.
#[test]
fn unhealthy_nodes_get_no_execute_taints_that_recovery_removes() {
    let mut h = Harness::new(fast_config());
    h.create(node("node0").ready(SimTime::ZERO).build());
    h.create(node("node1").ready(SimTime::ZERO).build());
    h.create(node("node2").ready(SimTime::ZERO).build());
    h.node_down("node0", secs(1));
    h.run(secs(30));
    // node2's agent reports NotReady.
    post_condition(&mut h.client, "node2", "Ready", "False");
    h.settle();
    h.run(secs(200));
    assert!(h.taints("node0").contains(&UNREACHABLE_NE.to_string()));
    assert!(h.taints("node0").contains(&UNREACHABLE_NS.to_string()));
    assert_eq!(h.taints("node2"), vec![NOT_READY_NS, NOT_READY_NE]);
    assert!(h.taints("node1").is_empty());
    // node0 comes back as NotReady: the unreachable taint is swapped at the next pass.
    h.down_at.remove("node0");
    post_condition(&mut h.client, "node0", "Ready", "False");
    h.settle();
    h.run(secs(210));
    let t0 = h.taints("node0");
    assert!(
        t0.contains(&NOT_READY_NE.to_string()) && !t0.contains(&UNREACHABLE_NE.to_string()),
        "{t0:?}"
    );
    // Both recover.
    h.node_up("node0");
    h.node_up("node2");
    h.run(secs(220));
    assert!(h.taints("node0").is_empty(), "{:?}", h.taints("node0"));
    assert!(h.taints("node2").is_empty());
}

/// A Lease renewed quietly (no watch event) keeps its node Ready: the pass reads the cache.
#[test]
fn a_lease_renewed_without_a_watch_event_is_read_from_the_cache_at_each_pass() {
    let mut h = Harness::new(NodeLifecycleConfig::default());
    h.create(node("n1").ready(SimTime::ZERO).build());
    renew_lease(&mut h.client, "n1");
    h.settle();
    // The node posts no status after 0 s; its Lease is renewed quietly (as simulate's agents
    // do) every 10 s, after the pass at that instant.
    for tick in (10..=300).step_by(10) {
        h.at(secs(tick));
        h.renew_lease_quietly("n1", secs(tick));
        assert!(!h.client.store.has_events(), "no watch event");
    }
    h.at(secs(300));
    // The renewal at 290 s was seen by the pass at 295 s; the node never went silent.
    assert_eq!(h.nlc.probe_time("n1"), Some(secs(295)));
    let ready = node_condition(&h.client, "n1", "Ready").unwrap();
    assert_eq!(ready.status, "True");
    assert!(h.events("NodeNotReady", "n1").is_empty());
}

/// The default timeline of a node that dies silently (controllers.md 2.9), end to end with the
/// taint-eviction controller and the default tolerations.
#[test]
fn a_silent_node_is_tainted_after_the_grace_period_and_its_pods_go_300_s_later() {
    let mut h = Harness::new(NodeLifecycleConfig::default()).with_taint_eviction();
    h.create(node("n1").ready(SimTime::ZERO).build());
    h.create(node("n2").ready(SimTime::ZERO).build());
    let mut p: kubeplane_api::StoredPod =
        pod("default", "web").node("n1").ready().build_pod().into();
    kubeplane_registry::admission::default_toleration_seconds(&mut p);
    h.create(Object::Pod(Arc::new(p)));
    h.create(
        pod("default", "db")
            .node("n1")
            .ready()
            .toleration(toleration("", "Exists", "", "", None))
            .build(),
    );
    // The last lease renewal is at 30 s, seen by the pass at 35 s.
    h.node_down("n1", secs(31));
    h.run(secs(600));
    assert_eq!(h.nlc.probe_time("n1"), Some(secs(35)));
    let ready = node_condition(&h.client, "n1", "Ready").unwrap();
    assert_eq!(ready.status, "Unknown");
    assert_eq!(ready.reason.as_deref(), Some("NodeStatusUnknown"));
    assert_eq!(
        ready.message.as_deref(),
        Some("Kubelet stopped posting node status.")
    );
    assert_eq!(
        h.client
            .store
            .instant(ready.last_transition_time.as_ref().unwrap()),
        secs(90)
    );
    for c in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
        let cond = node_condition(&h.client, "n1", c).unwrap();
        assert_eq!(
            (cond.status.as_str(), cond.reason.as_deref()),
            ("Unknown", Some("NodeStatusNeverUpdated"))
        );
    }
    assert!(node_condition(&h.client, "n1", "NetworkUnavailable").is_none());
    let e = h
        .client
        .events
        .iter()
        .find(|e| e.reason() == "NodeNotReady" && e.kind() == "Node")
        .unwrap();
    assert_eq!(
        (e.time(), e.message(), e.source()),
        (
            secs(90),
            "Node n1 status is now: NodeNotReady",
            EVENT_SOURCE
        )
    );
    // Pods on the node are marked not ready, with a Warning event each.
    let pod_events: Vec<_> = h
        .client
        .events
        .iter()
        .filter(|e| e.reason() == "NodeNotReady" && e.kind() == "Pod")
        .collect();
    assert_eq!(pod_events.len(), 2);
    assert!(pod_events.iter().all(|e| e.type_() == "Warning"
        && e.message() == "Node is not ready"
        && e.time() == secs(90)));
    assert_eq!(
        pod_condition(&h.client, "default", "db", "Ready")
            .unwrap()
            .status,
        "False"
    );
    // NoSchedule at once, NoExecute at the next pass; the web pod goes 300 s later.
    let taints = node_taints(&h.client, "n1");
    let added = |key: &str| {
        let t = taints
            .iter()
            .find(|t| format!("{}:{}", t.key, t.effect) == key)
            .unwrap();
        h.client.store.instant(t.time_added.as_ref().unwrap())
    };
    assert_eq!(added(UNREACHABLE_NS), secs(90));
    assert_eq!(added(UNREACHABLE_NE), secs(95));
    assert_eq!(
        event_times(&h.client, "TaintManagerEviction", "web", "Marking"),
        vec![395.0]
    );
    assert!(event_times(&h.client, "TaintManagerEviction", "db", "Marking").is_empty());
    assert!(h.taints("n2").is_empty());
    assert_eq!(h.nlc.zone_state(""), Some(ZoneState::Normal));
    let metrics = h.nlc.metrics();
    assert!(metrics.contains(&("node_collector_evictions_total{zone=\"\"}".to_string(), 1)));
}

/// The zone's token bucket paces NoExecute tainting: 0.1/s, burst 1.
#[test]
fn no_execute_tainting_is_rate_limited_per_zone() {
    let mut h = Harness::new(NodeLifecycleConfig::default());
    for i in 0..10 {
        h.create(node(&format!("n{i}")).ready(SimTime::ZERO).build());
    }
    for i in 0..3 {
        h.node_down(&format!("n{i}"), secs(31));
    }
    h.run(secs(200));
    let mut times: Vec<SimTime> = (0..3)
        .map(|i| {
            let t = node_taints(&h.client, &format!("n{i}"));
            let ne = t.iter().find(|t| t.effect == "NoExecute").expect("tainted");
            h.client.store.instant(ne.time_added.as_ref().unwrap())
        })
        .collect();
    times.sort();
    // Tokens every 10 s (float32 0.1: 9.999999851 s), tainting passes every 100 ms.
    assert_eq!(times, vec![secs(95), secs(105), secs(115)]);
    assert_eq!(h.nlc.zone_state(""), Some(ZoneState::Normal));
}

/// A small zone in partial disruption stops tainting; a whole cluster down removes taints.
#[test]
fn disrupted_zones_stop_tainting() {
    // 3 of 5 down: PartialDisruption, zone size 5 <= 50 gives rate 0.
    let mut h = Harness::new(NodeLifecycleConfig::default());
    for i in 0..5 {
        h.create(node(&format!("n{i}")).ready(SimTime::ZERO).build());
    }
    for i in 0..3 {
        h.node_down(&format!("n{i}"), secs(31));
    }
    h.run(secs(300));
    assert_eq!(h.nlc.zone_state(""), Some(ZoneState::PartialDisruption));
    for i in 0..3 {
        let t = h.taints(&format!("n{i}"));
        assert_eq!(t, vec![UNREACHABLE_NS], "n{i} gets only NoSchedule");
    }
    // Everything down: master disruption mode, no NoExecute taints anywhere.
    let mut h = Harness::new(NodeLifecycleConfig::default());
    for i in 0..2 {
        h.create(node(&format!("n{i}")).ready(SimTime::ZERO).build());
    }
    h.node_down("n0", secs(31));
    h.run(secs(120));
    assert!(h.taints("n0").contains(&UNREACHABLE_NE.to_string()));
    h.node_down("n1", secs(121));
    h.run(secs(400));
    assert_eq!(h.nlc.zone_state(""), Some(ZoneState::FullDisruption));
    assert!(!h.taints("n0").contains(&UNREACHABLE_NE.to_string()));
    assert!(!h.taints("n1").contains(&UNREACHABLE_NE.to_string()));
    // One node back: out of disruption mode, the other gets a fresh grace period.
    h.node_up("n1");
    h.run(secs(405));
    assert_eq!(h.nlc.zone_state(""), Some(ZoneState::Normal));
    assert_eq!(h.nlc.probe_time("n0"), Some(secs(405)));
    // n0's Ready is still Unknown, so it is queued again at once; the new limiter starts
    // drained (the never-accepting one had no token), so the taint waits for one token.
    h.run(secs(414));
    assert!(!h.taints("n0").contains(&UNREACHABLE_NE.to_string()));
    h.run(secs(420));
    let t = node_taints(&h.client, "n0");
    let ne = t
        .iter()
        .find(|t| t.effect == "NoExecute")
        .expect("tainted again");
    assert_eq!(
        h.client.store.instant(ne.time_added.as_ref().unwrap()),
        secs(415)
    );
}

/// Upstream `TestApplyNoExecuteTaintsToNodesEnqueueTwice`: a node that recovers while queued
/// is dropped without blocking the others.
#[test]
fn a_node_recovered_while_queued_is_not_tainted() {
    let config = NodeLifecycleConfig {
        node_eviction_rate: 0.01,
        ..NodeLifecycleConfig::default()
    };
    let mut h = Harness::new(config);
    for i in 0..6 {
        h.create(node(&format!("n{i}")).ready(SimTime::ZERO).build());
    }
    h.node_down("n0", secs(31));
    h.node_down("n3", secs(31));
    h.run(secs(100));
    // One token per 100 s: n0 was tainted at 95 s, n3 waits.
    assert!(h.taints("n0").contains(&UNREACHABLE_NE.to_string()));
    assert!(!h.taints("n3").contains(&UNREACHABLE_NE.to_string()));
    h.node_up("n0");
    h.node_up("n3");
    post_condition(&mut h.client, "n5", "Ready", "False");
    h.settle();
    h.run(secs(400));
    assert!(h.taints("n3").is_empty(), "{:?}", h.taints("n3"));
    assert!(h.taints("n0").is_empty());
    assert!(h.taints("n5").contains(&NOT_READY_NE.to_string()));
    assert!(h.taints("n4").is_empty());
}

/// Upstream `TestTryUpdateNodeHealth`: the returned Ready status is the one saved.
#[test]
fn the_health_record_keeps_the_current_ready_status() {
    for status in [Some("True"), Some("False"), Some("Unknown"), None] {
        for stale in [false, true] {
            let mut h = Harness::new(fast_config());
            let mut n = node("n");
            if let Some(s) = status {
                n = n.condition("Ready", s, SimTime::ZERO);
            }
            h.create(n.build());
            let now = if stale {
                secs(365 * 24 * 3600)
            } else {
                SimTime::ZERO
            };
            h.nlc.monitor_now(SimTime::ZERO, &mut h.client);
            h.client.now = now;
            h.nlc.monitor_now(now, &mut h.client);
            let current = node_condition(&h.client, "n", "Ready").map(|c| c.status);
            let saved = h
                .nlc
                .nodes
                .get("n")
                .unwrap()
                .health
                .as_ref()
                .unwrap()
                .saved_ready
                .map(|r| r.status);
            assert_eq!(
                current.as_deref().map(CondStatus::parse),
                saved,
                "{status:?} stale={stale}"
            );
        }
    }
}

/// A node that never posted a Ready condition gets the startup grace period.
#[test]
fn a_node_that_never_reported_goes_unknown_after_the_startup_grace_period() {
    let mut h = Harness::new(NodeLifecycleConfig::default());
    // Both exist at the first pass (alone, "quiet" would put the cluster in full disruption,
    // and leaving it when "ok" arrives restarts every grace period).
    create(&mut h.client, node("quiet").build());
    create(&mut h.client, node("ok").ready(SimTime::ZERO).build());
    h.node_down("quiet", SimTime::ZERO);
    h.run(secs(60));
    assert!(node_condition(&h.client, "quiet", "Ready").is_none());
    h.run(secs(65));
    let ready = node_condition(&h.client, "quiet", "Ready").unwrap();
    assert_eq!(ready.status, "Unknown");
    assert_eq!(
        ready.reason.as_deref(),
        Some(REASON_NODE_STATUS_NEVER_UPDATED)
    );
    assert_eq!(
        ready.message.as_deref(),
        Some(MESSAGE_NODE_STATUS_NEVER_UPDATED)
    );
}

/// Upstream `Test_isNodeExcludedFromDisruptionChecks`: excluded nodes do not count.
#[test]
fn excluded_nodes_do_not_count_in_their_zone() {
    let mut h = Harness::new(NodeLifecycleConfig::default());
    h.create(node("master-abc").ready(SimTime::ZERO).build());
    h.create(
        node("x")
            .label(LABEL_EXCLUDE_DISRUPTION, "")
            .ready(SimTime::ZERO)
            .build(),
    );
    h.node_down("x", secs(1));
    h.node_down("master-abc", secs(1));
    h.run(secs(100));
    // Only master-abc counts: one not-ready node, the zone is fully disrupted.
    assert_eq!(h.nlc.zone_state(""), Some(ZoneState::FullDisruption));
    let m: Vec<_> = h.nlc.metrics();
    assert!(m.contains(&("node_collector_zone_size{zone=\"\"}".to_string(), 1)));
}

/// Upstream `TestNodeEventGeneration`.
#[test]
fn a_new_node_is_registered_once() {
    let mut h = Harness::new(NodeLifecycleConfig::default());
    h.create(node("n").ready(SimTime::ZERO).build());
    h.run(secs(30));
    let evs = h.client.events_with_reason("RegisteredNode");
    assert_eq!(evs.len(), 1);
    assert_eq!(
        evs[0].message(),
        "Node n event: Registered Node n in Controller"
    );
    assert_eq!((evs[0].kind(), evs[0].source()), ("Node", EVENT_SOURCE));
    delete_object(&mut h.client, Kind::Node, "", "n");
    h.settle();
    h.run(secs(40));
    let evs = h.client.events_with_reason("RemovingNode");
    assert_eq!(evs.len(), 1);
    assert_eq!(
        evs[0].message(),
        "Node n event: Removing Node n from Controller"
    );
}

/// Upstream `TestProcessPodMarkPodNotReady`.
#[test]
fn a_pod_bound_to_a_not_ready_node_is_marked_not_ready() {
    // Health not gathered yet: nothing.
    let mut h = Harness::new(NodeLifecycleConfig::default());
    create(
        &mut h.client,
        node("n").condition("Ready", "False", SimTime::ZERO).build(),
    );
    h.client.dispatch(&mut [&mut h.nlc]);
    h.nlc.process_pod(
        &("default".into(), "p".into()),
        SimTime::ZERO,
        &mut h.client,
    );
    create(&mut h.client, pod("default", "p").node("n").ready().build());
    h.client.dispatch(&mut [&mut h.nlc]);
    h.nlc.process_pod(
        &("default".into(), "p".into()),
        SimTime::ZERO,
        &mut h.client,
    );
    assert_eq!(
        pod_condition(&h.client, "default", "p", "Ready")
            .unwrap()
            .status,
        "True"
    );
    // After a pass saw the node False: the next bound pod is marked not ready.
    h.run(secs(1));
    h.create(pod("default", "q").node("n").ready().build());
    assert_eq!(
        pod_condition(&h.client, "default", "q", "Ready")
            .unwrap()
            .status,
        "False"
    );
    assert_eq!(h.events("NodeNotReady", "q"), vec![1.0]);
    // A Ready node: nothing.
    let mut h = Harness::new(NodeLifecycleConfig::default());
    h.create(node("n").ready(SimTime::ZERO).build());
    h.run(secs(1));
    h.create(pod("default", "q").node("n").ready().build());
    assert_eq!(
        pod_condition(&h.client, "default", "q", "Ready")
            .unwrap()
            .status,
        "True"
    );
}

/// Upstream `TestReconcileNodeLabels`.
#[test]
fn beta_os_and_arch_labels_follow_the_stable_ones() {
    let labels_of = |h: &Harness| {
        h.client
            .store
            .get_node("n")
            .unwrap()
            .metadata
            .labels
            .clone()
            .unwrap_or_default()
    };
    let mut h = Harness::new(NodeLifecycleConfig::default());
    h.create(node("n").build());
    assert!(labels_of(&h).is_empty());
    let mut h = Harness::new(NodeLifecycleConfig::default());
    h.create(node("n").label(LABEL_REGION, "r").build());
    assert_eq!(labels_of(&h).len(), 1);
    for (beta, want) in [(None, "linux"), (Some("windows"), "linux")] {
        let mut h = Harness::new(NodeLifecycleConfig::default());
        let mut n = node("n")
            .label("kubernetes.io/os", "linux")
            .label("kubernetes.io/arch", "amd64");
        if let Some(b) = beta {
            n = n
                .label("beta.kubernetes.io/os", b)
                .label("beta.kubernetes.io/arch", "arm");
        }
        h.create(n.build());
        let l = labels_of(&h);
        assert_eq!(l["beta.kubernetes.io/os"], want);
        assert_eq!(l["beta.kubernetes.io/arch"], "amd64");
    }
}

#[test]
fn the_monitor_runs_every_period_from_zero() {
    let mut h = Harness::new(NodeLifecycleConfig::default());
    assert_eq!(h.nlc.next_wakeup(), Some(SimTime::ZERO));
    h.create(node("n").ready(SimTime::ZERO).build());
    h.run(secs(60));
    assert_eq!(h.nlc.monitor_passes(), 13);
    assert_eq!(h.nlc.next_wakeup(), Some(secs(65)));
}

mod lease_reads;
mod steady_passes;

//! Exactness of the stored pod status: every status the control plane writes, and arbitrary
//! ones (proptest), come back exactly as written.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, HostIP, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use proptest::prelude::*;

use super::*;

fn ts(s: i64) -> Time {
    Time(Timestamp::new(s, 0).unwrap())
}

fn cond(type_: &str, status: &str, at: i64) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        last_transition_time: Some(ts(at)),
        ..Default::default()
    }
}

/// A pod as the simulated kubelet leaves it Running.
fn running() -> PodStatus {
    PodStatus {
        phase: Some("Running".into()),
        host_ip: Some("10.0.0.1".into()),
        host_ips: Some(vec![HostIP {
            ip: "10.0.0.1".into(),
        }]),
        pod_ip: Some("10.244.0.5".into()),
        pod_ips: Some(vec![PodIP {
            ip: "10.244.0.5".into(),
        }]),
        start_time: Some(ts(100)),
        conditions: Some(vec![
            cond("PodScheduled", "True", 90),
            cond("Initialized", "True", 100),
            cond("Ready", "True", 100),
            cond("ContainersReady", "True", 100),
        ]),
        container_statuses: Some(vec![ContainerStatus {
            name: "c".into(),
            image: "registry.k8s.io/pause:3.10".into(),
            ready: true,
            started: Some(true),
            state: Some(ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(ts(100)),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

fn roundtrip(s: &PodStatus) -> StoredPodStatus {
    let stored = StoredPodStatus::from_k8s(s.clone());
    assert_eq!(&stored.to_k8s(), s);
    assert_eq!(
        serde_json::to_string(&stored.to_k8s()).unwrap(),
        serde_json::to_string(s).unwrap()
    );
    stored
}

#[test]
fn the_statuses_the_control_plane_writes_are_compact_and_exact() {
    let mut cases = vec![
        PodStatus::default(),
        PodStatus {
            phase: Some("Pending".into()),
            ..Default::default()
        },
        PodStatus {
            phase: Some("Pending".into()),
            conditions: Some(vec![cond("PodScheduled", "True", 5)]),
            ..Default::default()
        },
        running(),
    ];
    // Node lifecycle's mark_pods_not_ready: Ready False, no reason.
    let mut not_ready = running();
    not_ready.conditions.as_mut().unwrap()[2] = cond("Ready", "False", 300);
    cases.push(not_ready.clone());
    // Taint eviction's DisruptionTarget, with reason and message.
    let mut target = not_ready;
    target.conditions.as_mut().unwrap().push(PodCondition {
        reason: Some("DeletionByTaintManager".into()),
        message: Some("Taint manager: deleting due to NoExecute taint".into()),
        ..cond("DisruptionTarget", "True", 400)
    });
    cases.push(target);
    // The kubelet's finished and restarted pods.
    let mut finished = running();
    finished.phase = Some("Succeeded".into());
    let cs = &mut finished.container_statuses.as_mut().unwrap()[0];
    cs.ready = false;
    cs.started = Some(false);
    cs.state = Some(ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: 0,
            reason: Some("Completed".into()),
            started_at: Some(ts(100)),
            finished_at: Some(ts(200)),
            ..Default::default()
        }),
        ..Default::default()
    });
    for c in finished.conditions.as_mut().unwrap().iter_mut().skip(2) {
        c.status = "False".into();
        c.reason = Some("PodCompleted".into());
    }
    cases.push(finished.clone());
    let mut restarted = running();
    let cs = &mut restarted.container_statuses.as_mut().unwrap()[0];
    cs.last_state = finished.container_statuses.as_ref().unwrap()[0]
        .state
        .clone();
    cs.restart_count = 3;
    cases.push(restarted);
    // Empty lists and an empty state are kept as written.
    cases.push(PodStatus {
        conditions: Some(vec![]),
        container_statuses: Some(vec![ContainerStatus {
            state: Some(ContainerState::default()),
            ..Default::default()
        }]),
        ..Default::default()
    });
    for s in &cases {
        assert!(roundtrip(s).is_compact(), "{s:?}");
    }
}

#[test]
fn other_statuses_are_kept_whole() {
    let mut cases = Vec::new();
    let mut nominated = running();
    nominated.nominated_node_name = Some("n1".into());
    cases.push(nominated);
    let mut two_ips = running();
    two_ips.pod_ips.as_mut().unwrap().push(PodIP {
        ip: "fd00::5".into(),
    });
    cases.push(two_ips);
    let mut other_ip = running();
    other_ip.host_ips = Some(vec![HostIP { ip: "x".into() }]);
    cases.push(other_ip);
    let mut only_list = running();
    only_list.pod_ip = None;
    cases.push(only_list);
    let mut probe = running();
    probe.conditions.as_mut().unwrap()[0].last_probe_time = Some(ts(1));
    cases.push(probe);
    let mut custom = running();
    custom.conditions.as_mut().unwrap()[0].type_ = "example.com/Gate".into();
    cases.push(custom);
    let mut phase = running();
    phase.phase = Some("running".into());
    cases.push(phase);
    let mut id = running();
    id.container_statuses.as_mut().unwrap()[0].image_id = "sha256:1".into();
    cases.push(id);
    let mut two_states = running();
    two_states.container_statuses.as_mut().unwrap()[0]
        .state
        .as_mut()
        .unwrap()
        .waiting = Some(ContainerStateWaiting::default());
    cases.push(two_states);
    let mut qos = running();
    qos.qos_class = Some("BestEffort".into());
    cases.push(qos);
    for s in &cases {
        assert!(!roundtrip(s).is_compact(), "{s:?}");
    }
}

#[test]
fn the_accessors_read_both_forms_alike() {
    let mut full = running();
    full.qos_class = Some("BestEffort".into());
    let compact = StoredPodStatus::from_k8s(running());
    let full = StoredPodStatus::from_k8s(full);
    assert!(compact.is_compact() && !full.is_compact());
    for s in [&compact, &full] {
        assert_eq!(s.phase(), Some("Running"));
        assert_eq!(s.condition_status("Ready"), Some("True"));
        assert_eq!(s.condition_status("DisruptionTarget"), None);
        assert_eq!(s.condition_status("example.com/Gate"), None);
        assert_eq!(s.condition("Ready"), Some(cond("Ready", "True", 100)));
        assert_eq!(
            s.condition_status_time("Ready"),
            Some(("True", Some(ts(100))))
        );
        assert_eq!(s.condition_status_time("DisruptionTarget"), None);
        assert_eq!(s.max_restart_count(), Some(0));
        assert_eq!(s.pod_ip(), Some("10.244.0.5"));
        assert_eq!(s.host_ip(), Some("10.0.0.1"));
        assert_eq!(s.start_time(), Some(ts(100)));
        assert_eq!(s.nominated_node_name(), None);
        assert_eq!(s.containers_restarts_and_ready(), Some((0, true)));
    }
    let empty = StoredPodStatus::from_k8s(PodStatus::default());
    assert_eq!(empty.phase(), None);
    assert_eq!(empty.containers_restarts_and_ready(), None);
}

#[test]
fn the_compact_form_is_a_tenth_of_the_k8s_status() {
    let full = std::mem::size_of::<PodStatus>();
    let stored = std::mem::size_of::<StoredPodStatus>();
    let cond = std::mem::size_of::<CompactCondition>();
    let container = std::mem::size_of::<CompactContainer>();
    eprintln!(
        "size_of PodStatus {full}, StoredPodStatus {stored}, CompactCondition {cond} \
         (PodCondition {}), CompactContainer {container} (ContainerStatus {})",
        std::mem::size_of::<PodCondition>(),
        std::mem::size_of::<ContainerStatus>()
    );
    assert!(stored * 4 < full, "{stored} against {full}");
    assert!(cond <= 32 && container <= 80, "{cond}, {container}");
}

fn arb_str() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("True".to_string()),
        Just("Ready".to_string()),
        Just("Running".to_string()),
        Just("10.0.0.1".to_string()),
        "[a-zA-Z]{1,6}",
    ]
}

fn arb_time() -> impl Strategy<Value = Option<Time>> {
    prop_oneof![
        Just(None),
        (-100_000_000_000i64..100_000_000_000, 0i32..1_000_000_000).prop_map(|(s, n)| {
            let n = if s < 0 { -n } else { n };
            Some(Time(Timestamp::new(s, n).unwrap()))
        }),
    ]
}

fn arb_condition() -> impl Strategy<Value = PodCondition> {
    let types = prop_oneof![
        Just("Ready".to_string()),
        Just("PodScheduled".to_string()),
        Just("DisruptionTarget".to_string()),
        arb_str()
    ];
    let statuses = prop_oneof![
        Just("True".to_string()),
        Just("False".to_string()),
        arb_str()
    ];
    (
        types,
        statuses,
        arb_time(),
        prop::option::weighted(0.1, arb_time()),
        prop::option::of(arb_str()),
        prop::option::of(arb_str()),
        prop::option::weighted(0.1, any::<i64>()),
    )
        .prop_map(
            |(type_, status, ltt, probe, reason, message, gen)| PodCondition {
                type_,
                status,
                last_transition_time: ltt,
                last_probe_time: probe.flatten(),
                reason,
                message,
                observed_generation: gen,
            },
        )
}

fn arb_state() -> impl Strategy<Value = Option<ContainerState>> {
    let running =
        prop::option::of(arb_time().prop_map(|t| ContainerStateRunning { started_at: t }));
    let terminated = prop::option::of(
        (any::<i32>(), arb_time(), prop::option::of(arb_str())).prop_map(|(code, at, reason)| {
            ContainerStateTerminated {
                exit_code: code,
                finished_at: at,
                reason,
                ..Default::default()
            }
        }),
    );
    let waiting =
        prop::option::of(
            prop::option::of(arb_str()).prop_map(|reason| ContainerStateWaiting {
                reason,
                message: None,
            }),
        );
    prop::option::of(
        (running, terminated, waiting).prop_map(|(running, terminated, waiting)| ContainerState {
            running,
            terminated,
            waiting,
        }),
    )
}

fn arb_container() -> impl Strategy<Value = ContainerStatus> {
    (
        arb_str(),
        arb_str(),
        prop::option::weighted(0.1, arb_str()),
        any::<bool>(),
        prop::option::of(any::<bool>()),
        any::<i32>(),
        arb_state(),
        arb_state(),
    )
        .prop_map(
            |(name, image, id, ready, started, restarts, state, last)| ContainerStatus {
                name,
                image,
                image_id: id.unwrap_or_default(),
                ready,
                started,
                restart_count: restarts,
                state,
                last_state: last,
                ..Default::default()
            },
        )
}

fn arb_ips() -> impl Strategy<Value = Option<Vec<String>>> {
    prop::option::of(prop::collection::vec(arb_str(), 0..3))
}

fn arb_status() -> impl Strategy<Value = PodStatus> {
    (
        prop::option::of(prop_oneof![Just("Running".to_string()), arb_str()]),
        prop::option::of(prop::collection::vec(arb_condition(), 0..5)),
        prop::option::of(prop::collection::vec(arb_container(), 0..3)),
        (prop::option::of(arb_str()), arb_ips()),
        (prop::option::of(arb_str()), arb_ips()),
        arb_time(),
        prop::option::weighted(0.1, arb_str()),
        prop::option::weighted(0.1, arb_str()),
    )
        .prop_map(
            |(phase, conditions, containers, (host, hosts), (pod, pods), start, nnn, qos)| {
                PodStatus {
                    phase,
                    conditions,
                    container_statuses: containers,
                    host_ips: hosts.map(|l| l.into_iter().map(|ip| HostIP { ip }).collect()),
                    host_ip: host,
                    pod_ips: pods.map(|l| l.into_iter().map(|ip| PodIP { ip }).collect()),
                    pod_ip: pod,
                    start_time: start,
                    nominated_node_name: nnn,
                    qos_class: qos,
                    ..Default::default()
                }
            },
        )
}

proptest! {
    #[test]
    fn any_status_comes_back_exactly(s in arb_status()) {
        let stored = StoredPodStatus::from_k8s(s.clone());
        prop_assert_eq!(stored.to_k8s(), s.clone());
        prop_assert_eq!(stored.phase(), s.phase.as_deref());
        prop_assert_eq!(stored.pod_ip(), s.pod_ip.as_deref());
        prop_assert_eq!(stored.host_ip(), s.host_ip.as_deref());
        let first = |t: &str| {
            s.conditions.as_ref().and_then(|cs| cs.iter().find(|c| c.type_ == t)).cloned()
        };
        for (t, st) in [("Ready", "True"), ("PodScheduled", "False"), ("x", "True")] {
            let any = s.conditions.iter().flatten().any(|c| c.type_ == t && c.status == st);
            prop_assert_eq!(stored.any_condition(|a, b| a == t && b == st), any);
        }
        let restarts = s
            .container_statuses
            .as_ref()
            .and_then(|cs| cs.iter().map(|c| c.restart_count).max());
        prop_assert_eq!(stored.max_restart_count(), restarts);
        for t in ["Ready", "PodScheduled", "DisruptionTarget"] {
            let want = first(t);
            prop_assert_eq!(
                stored.condition_status_time(t),
                want.as_ref().map(|c| (c.status.as_str(), c.last_transition_time.clone()))
            );
            prop_assert_eq!(stored.condition(t), want.clone());
            prop_assert_eq!(
                stored.condition_status(t),
                want.as_ref().map(|c| c.status.as_str())
            );
        }
        // One status, one form: equality of stored forms is equality of statuses.
        prop_assert_eq!(StoredPodStatus::from_k8s(s.clone()), stored);
    }
}

//! Tests of one scheduling cycle: the number of nodes to find, the fit error's message, the
//! host selection, and the node-local memo's reuse of failures.

use super::*;

/// `body` run on a pool of `threads` threads with a scheduler of the default profile (one
/// replica per pod), its node-local memo on or off (`reuse`).
pub(super) fn in_pool<T: Send>(
    threads: usize,
    reuse: bool,
    body: impl FnOnce(&mut crate::scheduler::Scheduler) -> T + Send,
) -> T {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let features = kubeplane_core::features::FeatureGates::default();
        let setup = crate::config::resolve(None, &features).unwrap();
        let mut sched = crate::scheduler::Scheduler::new(
            setup.frameworks,
            crate::queue::SchedulingQueue::new(setup.queue),
            setup.percentage_of_nodes_to_score,
            1,
        );
        sched.set_reuse_node_local(reuse);
        body(&mut sched)
    })
}

#[test]
fn the_number_of_nodes_to_find_follows_the_adaptive_percentage() {
    assert_eq!(num_feasible_nodes_to_find(0, 10), 10);
    assert_eq!(num_feasible_nodes_to_find(40, 10), 10);
    assert_eq!(num_feasible_nodes_to_find(0, 1000), 420);
    assert_eq!(num_feasible_nodes_to_find(40, 1000), 400);
    assert_eq!(num_feasible_nodes_to_find(0, 6000), 300);
    assert_eq!(num_feasible_nodes_to_find(40, 6000), 2400);
    assert_eq!(num_feasible_nodes_to_find(0, 5000), 500);
}

#[test]
fn the_fit_error_counts_reasons_and_sorts_them_as_strings() {
    let mut d = Diagnosis::default();
    let taint = || Status::unresolvable("node(s) had untolerated taint(s)");
    d.node_to_status.insert(2, taint());
    d.node_to_status
        .insert(0, Status::unschedulable("Insufficient cpu"));
    d.node_to_status.insert(1, taint());
    let fit = FitError {
        num_all_nodes: 3,
        diagnosis: d,
    };
    assert_eq!(
        fit.message(),
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s)."
    );
}

#[test]
fn a_pre_filter_rejection_is_the_whole_message() {
    let d = Diagnosis {
        pre_filter_msg: "pod affinity terms conflict".into(),
        ..Default::default()
    };
    let fit = FitError {
        num_all_nodes: 2,
        diagnosis: d,
    };
    assert_eq!(
        fit.message(),
        "0/2 nodes are available: pod affinity terms conflict."
    );
}

#[test]
fn select_host_only_picks_among_the_best_scores() {
    use rand::SeedableRng;
    let totals = [3, 3, 1];
    let mut seen = BTreeSet::new();
    for seed in 0..64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        seen.insert(select_host(&totals, &mut rng));
    }
    assert_eq!(seen, BTreeSet::from([0, 1]));
}

#[test]
fn select_host_draws_as_the_index_form_did() {
    use rand::{Rng, SeedableRng};
    // The form before the best total was kept in a local: same choice, same draws.
    fn by_index(totals: &[i64], rng: &mut impl Rng) -> usize {
        let (mut best, mut ties) = (0, 0u32);
        for (i, &t) in totals.iter().enumerate() {
            if i == 0 || t > totals[best] {
                (best, ties) = (i, 1);
            } else if t == totals[best] {
                ties += 1;
                if rng.random_range(0..ties) == 0 {
                    best = i;
                }
            }
        }
        best
    }
    let mut draws = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    for seed in 0..200 {
        let n = 1 + seed as usize % 40;
        let totals: Vec<i64> = (0..n).map(|_| draws.random_range(0..4)).collect();
        let mut a = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut b = a.clone();
        assert_eq!(
            select_host(&totals, &mut a),
            by_index(&totals, &mut b),
            "{totals:?}"
        );
        assert_eq!(a.random::<u64>(), b.random::<u64>(), "{totals:?}");
    }
    assert_eq!(select_host(&[], &mut draws), 0);
}

mod reused_failures {
    use std::sync::Arc;

    use kubeplane_api::{Client, Object};
    use kubeplane_core::features::FeatureGates;
    use kubeplane_registry::testing::TestClient;

    use crate::plugins::testing::{expr, pod_term, taint, NodeBuilder, PodBuilder};
    use crate::queue::SchedulingQueue;
    use crate::scheduler::Scheduler;

    fn scheduler(reuse: bool) -> Scheduler {
        let setup = crate::config::resolve(None, &FeatureGates::default()).unwrap();
        let mut s = Scheduler::new(
            setup.frameworks,
            SchedulingQueue::new(setup.queue),
            setup.percentage_of_nodes_to_score,
            1,
        );
        s.set_reuse_node_local(reuse);
        s
    }

    /// Nodes that each fail a 2-cpu pod differently (full, tainted, cordoned, too small),
    /// then three such pods of one spec: what the scheduler said about them, and how many
    /// filter verdicts it reused.
    fn run(reuse: bool) -> (Vec<String>, u64) {
        let mut sched = scheduler(reuse);
        let mut client = TestClient::new(1);
        let alloc = [("cpu", "4"), ("memory", "8Gi"), ("pods", "110")];
        let nodes = [
            NodeBuilder::new("full-1").alloc(&alloc),
            NodeBuilder::new("full-2").alloc(&alloc),
            NodeBuilder::new("tainted")
                .alloc(&alloc)
                .taint(taint("dedicated", "x", "NoSchedule")),
            NodeBuilder::new("cordoned")
                .alloc(&alloc)
                .unschedulable(true),
            NodeBuilder::new("small").alloc(&[("cpu", "1"), ("memory", "8Gi"), ("pods", "110")]),
        ];
        for n in nodes {
            client
                .create(Object::Node(Arc::new(n.obj().into())))
                .unwrap();
        }
        for (i, node) in ["full-1", "full-2"].iter().enumerate() {
            let pod = PodBuilder::new(&format!("big-{i}"))
                .req(&[("cpu", "3")])
                .node(node);
            client
                .create(Object::Pod(Arc::new(pod.obj().into())))
                .unwrap();
        }
        client.settle(&mut [&mut sched]);
        for i in 0..3 {
            let pod = PodBuilder::new(&format!("web-{i}")).req(&[("cpu", "2")]);
            client
                .create(Object::Pod(Arc::new(pod.obj().into())))
                .unwrap();
            client.settle(&mut [&mut sched]);
        }
        let messages = client
            .events_with_reason("FailedScheduling")
            .iter()
            .map(|e| format!("{}: {}", e.name(), e.message()))
            .collect();
        (messages, sched.node_local.filters_reused)
    }

    #[test]
    fn identical_pods_reuse_the_failures_with_the_same_messages() {
        let (with_reuse, reused) = run(true);
        let (without, none) = run(false);
        assert!(with_reuse.len() >= 3, "{with_reuse:?}");
        let want = "0/5 nodes are available: 1 node(s) had untolerated taint {dedicated: x}, \
                    1 node(s) were unschedulable, 3 Insufficient cpu.";
        assert!(
            with_reuse.iter().all(|m| m.contains(want)),
            "{with_reuse:?}"
        );
        assert_eq!(with_reuse, without);
        // The second and third pods fail on all five nodes without running the filters.
        assert!(reused >= 10 && none == 0, "{reused} {none}");
    }

    /// Five nodes (full, tainted, cordoned and two that fit, each labelled with its hostname),
    /// then four pods of one spec that refuse to share a host with each other: the first two
    /// land, the last two fail on every node. What the scheduler said about the pods, and how
    /// many node-local verdicts it reused beside InterPodAffinity.
    fn run_anti_affinity(reuse: bool) -> (Vec<String>, u64) {
        let mut sched = scheduler(reuse);
        let mut client = TestClient::new(1);
        let alloc = [("cpu", "4"), ("memory", "8Gi"), ("pods", "110")];
        let host = |name: &str| NodeBuilder::new(name).label("kubernetes.io/hostname", name);
        let nodes = [
            host("full").alloc(&alloc),
            host("tainted")
                .alloc(&alloc)
                .taint(taint("dedicated", "x", "NoSchedule")),
            host("cordoned").alloc(&alloc).unschedulable(true),
            host("fits-1").alloc(&alloc),
            host("fits-2").alloc(&alloc),
        ];
        for n in nodes {
            client
                .create(Object::Node(Arc::new(n.obj().into())))
                .unwrap();
        }
        let big = PodBuilder::new("big").req(&[("cpu", "3")]).node("full");
        client
            .create(Object::Pod(Arc::new(big.obj().into())))
            .unwrap();
        client.settle(&mut [&mut sched]);
        for i in 0..4 {
            let pod = PodBuilder::new(&format!("web-{i}"))
                .label("app", "web")
                .req(&[("cpu", "2")])
                .pod_anti_affinity_required(pod_term(
                    vec![expr("app", "In", &["web"])],
                    "kubernetes.io/hostname",
                ));
            client
                .create(Object::Pod(Arc::new(pod.obj().into())))
                .unwrap();
            client.settle(&mut [&mut sched]);
        }
        let mut said: Vec<String> = client
            .events_with_reason("FailedScheduling")
            .iter()
            .map(|e| format!("{}: {}", e.name(), e.message()))
            .collect();
        said.extend(
            client
                .events_with_reason("Scheduled")
                .iter()
                .map(|e| e.message().to_string()),
        );
        (said, sched.node_local.filters_reused)
    }

    #[test]
    fn node_local_verdicts_are_reused_beside_inter_pod_affinity_with_the_same_outcome() {
        let (with_reuse, reused) = run_anti_affinity(true);
        let (without, none) = run_anti_affinity(false);
        let want = "0/5 nodes are available: 1 Insufficient cpu, \
                    1 node(s) had untolerated taint {dedicated: x}, \
                    1 node(s) were unschedulable, 2 node(s) didn't match pod anti-affinity rules.";
        let failed: Vec<&String> = with_reuse.iter().filter(|m| m.contains("0/5")).collect();
        assert!(failed.len() >= 2, "{with_reuse:?}");
        assert!(failed.iter().all(|m| m.contains(want)), "{with_reuse:?}");
        assert_eq!(with_reuse, without);
        // From the second pod on, the three nodes that fail node-locally are known, and so is
        // the fitting node the previous pod did not change.
        assert!(reused >= 3 + 4 + 3, "{reused}");
        assert_eq!(none, 0);
    }
}

/// The filter pass on the thread pool (windows of 500 nodes and more, in runs of 64 per
/// parallel chunk) against one thread, with the node-local memo and without.
mod pool_windows {
    use std::sync::Arc;

    use kubeplane_api::{Client, Object};
    use kubeplane_registry::testing::TestClient;

    use crate::plugins::testing::{expr, pod_term, taint, NodeBuilder, PodBuilder};

    /// 1,300 nodes in 3 zones (every 7th tainted, every 11th too small), so that the first
    /// window of a cycle (520 nodes to find) goes to the pool when it has two threads; then
    /// pods that refuse to share a host with each other (their hosts fail alike), and pods
    /// that refuse to share a zone (the fourth fails on every node). What the scheduler said
    /// and where the pods went.
    fn run(threads: usize, reuse: bool) -> Vec<String> {
        super::in_pool(threads, reuse, |sched| {
            let mut client = TestClient::new(1);
            for i in 0..1300 {
                let name = format!("n{i}");
                let cpu = if i % 11 == 5 { "1" } else { "8" };
                let mut n = NodeBuilder::new(&name)
                    .label("kubernetes.io/hostname", &name)
                    .label("topology.kubernetes.io/zone", &format!("z{}", i % 3))
                    .alloc(&[("cpu", cpu), ("memory", "32Gi"), ("pods", "110")]);
                if i % 7 == 3 {
                    n = n.taint(taint("dedicated", "x", "NoSchedule"));
                }
                client
                    .create(Object::Node(Arc::new(n.obj().into())))
                    .unwrap();
            }
            client.settle(&mut [&mut *sched]);
            let apart = |name: &str, app: &str, key: &str| {
                PodBuilder::new(name)
                    .label("app", app)
                    .req(&[("cpu", "2")])
                    .pod_anti_affinity_required(pod_term(vec![expr("app", "In", &[app])], key))
            };
            for i in 0..24 {
                let pod = apart(&format!("web-{i}"), "web", "kubernetes.io/hostname");
                client
                    .create(Object::Pod(Arc::new(pod.obj().into())))
                    .unwrap();
                client.settle(&mut [&mut *sched]);
            }
            for i in 0..4 {
                let pod = apart(&format!("db-{i}"), "db", "topology.kubernetes.io/zone");
                client
                    .create(Object::Pod(Arc::new(pod.obj().into())))
                    .unwrap();
                client.settle(&mut [&mut *sched]);
            }
            ["FailedScheduling", "Scheduled"]
                .iter()
                .flat_map(|r| client.events_with_reason(r))
                .map(|e| format!("{}: {}", e.name(), e.message()))
                .collect()
        })
    }

    #[test]
    fn two_threads_place_and_report_as_one_thread_does() {
        let one = run(1, true);
        assert!(
            one.iter()
                .filter(|m| m.contains("Successfully assigned"))
                .count()
                == 27,
            "{one:?}"
        );
        let failed: Vec<&String> = one.iter().filter(|m| m.starts_with("db-3")).collect();
        assert!(
            failed
                .iter()
                .any(|m| m.contains("0/1300 nodes are available")),
            "{one:?}"
        );
        assert_eq!(run(2, true), one);
        assert_eq!(run(2, false), one);
    }
}

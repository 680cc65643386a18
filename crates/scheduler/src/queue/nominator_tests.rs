//! The nominations' kept resolutions equal a lookup in the queues by key: a property test on
//! random sequences of queue operations (seeded), compared after every operation.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodSchedulingGate, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::framework::events::labels;
use crate::framework::{
    ClusterEventWithHint, Plugin, PodInfo, PreEnqueuePlugin, QueueSortPlugin, QueuedPodInfo,
    QueueingHint, Status,
};

/// Higher priority first, then the earlier timestamp; gates pods with scheduling gates; a node
/// addition may help any pod.
struct Stub;

impl Plugin for Stub {
    fn name(&self) -> &'static str {
        "Stub"
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        Some(vec![ClusterEventWithHint::with_hint(
            labels::NODE_ADD,
            |_, _, _| Ok(QueueingHint::Queue),
        )])
    }
}

impl QueueSortPlugin for Stub {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority, b.pod_info.priority);
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }
}

impl PreEnqueuePlugin for Stub {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        match pod
            .spec()
            .scheduling_gates
            .as_ref()
            .is_some_and(|g| !g.is_empty())
        {
            true => Status::unresolvable("gated"),
            false => Status::success(),
        }
    }
}

fn new_queue(pop_from_backoff_q: bool) -> SchedulingQueue {
    let plugins: Vec<Arc<dyn Plugin>> = vec![Arc::new(Stub)];
    let profile = ProfileQueueConfig::from_plugins(&plugins);
    SchedulingQueue::new(QueueConfig {
        initial_backoff: SimDuration::from_secs(1),
        max_backoff: SimDuration::from_secs(4),
        pop_from_backoff_q,
        queue_sort: Arc::new(Stub),
        profiles: BTreeMap::from([(crate::DEFAULT_SCHEDULER_NAME.to_string(), profile)]),
    })
}

const NODES: [&str; 3] = ["n0", "n1", "n2"];

/// Pod `i` (UID per generation, so a re-created pod has a new one), with a random priority,
/// sometimes nominated, sometimes gated.
fn random_pod(rng: &mut ChaCha8Rng, i: usize, generation: u32) -> Pod {
    let nominated = rng
        .random_bool(0.5)
        .then(|| NODES[rng.random_range(0..NODES.len())].to_string());
    let gates = rng
        .random_bool(0.15)
        .then(|| vec![PodSchedulingGate { name: "g".into() }]);
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("p{i}")),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{i}-{generation}")),
            ..Default::default()
        },
        spec: Some(PodSpec {
            priority: Some(rng.random_range(0..4)),
            scheduling_gates: gates,
            ..Default::default()
        }),
        status: Some(PodStatus {
            nominated_node_name: nominated,
            ..Default::default()
        }),
    }
}

fn info(pod: &Pod) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(Arc::new(pod.clone().into())))
}

/// The kept resolutions equal the lookups on every node; returns how many were queued pods.
fn check(q: &SchedulingQueue, context: &str) -> usize {
    let mut queued = 0;
    for n in NODES {
        let kept = q.nominated_pods_for_node(n);
        let looked_up = q.nominated_pods_for_node_by_lookup(n);
        assert_eq!(kept.len(), looked_up.len(), "{context}, {n}");
        for (a, b) in kept.iter().zip(&looked_up) {
            assert!(a.pod == b.pod && a.priority == b.priority, "{context}, {n}");
            queued += usize::from(a.pod.spec.is_some());
        }
    }
    // The nodes with their pods read in place: each node once, with the same pods.
    let mut nodes: Vec<&str> = Vec::new();
    for (node, pods) in q.nominated_nodes() {
        let kept = q.nominated_pods_for_node(node);
        let same = pods
            .iter()
            .map(Arc::as_ptr)
            .eq(kept.iter().map(Arc::as_ptr));
        assert!(same, "{context}, {node}");
        if !kept.is_empty() {
            nodes.push(node);
        }
    }
    nodes.sort_unstable();
    let with_pods = NODES
        .iter()
        .filter(|n| !q.nominated_pods_for_node(n).is_empty());
    assert!(nodes.iter().copied().eq(with_pods.copied()), "{context}");
    queued
}

/// The state of one random run: the pods as last told to the queue, the pods in flight.
struct Run {
    rng: ChaCha8Rng,
    q: SchedulingQueue,
    pods: Vec<Option<Pod>>,
    generations: Vec<u32>,
    in_flight: Vec<QueuedPodInfo>,
    now: i64,
}

impl Run {
    fn step(&mut self) {
        let i = self.rng.random_range(0..self.pods.len());
        let now = SimTime::from_millis(self.now);
        match (self.rng.random_range(0..9), self.pods[i].clone()) {
            (0, None) => {
                let pod = random_pod(&mut self.rng, i, self.generations[i]);
                self.q.add(info(&pod), now);
                self.pods[i] = Some(pod);
            }
            (1, Some(old)) => {
                let mut new = random_pod(&mut self.rng, i, self.generations[i]);
                if self.rng.random_bool(0.5) {
                    new.status = old.status.clone();
                }
                self.q.update(&old.clone().into(), info(&new), now);
                self.pods[i] = Some(new);
            }
            (2, Some(old)) => {
                self.q.delete(&PodInfo::new(Arc::new(old.into())));
                let name = format!("p{i}");
                for p in self.in_flight.iter().filter(|p| p.pod_info.name() == name) {
                    self.q.done(p.pod_info.uid());
                }
                self.in_flight.retain(|p| p.pod_info.name() != name);
                self.pods[i] = None;
                self.generations[i] += 1;
            }
            (3, _) => self.in_flight.extend(self.q.pop(now)),
            (4, _) if !self.in_flight.is_empty() => self.fail(now),
            (5, _) if !self.in_flight.is_empty() => {
                let p = self.in_flight.remove(0);
                self.q.done(p.pod_info.uid());
                self.q.delete_nominated_pod_if_exists(&p.pod_info);
            }
            (6, Some(pod)) => {
                let node = ["", "n0", "n1", "n2"][self.rng.random_range(0..4)];
                self.q.add_nominated_pod(info(&pod), Some(node.to_string()));
            }
            (7, _) => self.q.activate(&[format!("default/p{i}")], now),
            (8, _) => {
                self.q
                    .move_all_to_active_or_backoff_queue(labels::NODE_ADD, None, None, None, now)
            }
            _ => self.q.run_timers(now),
        }
        self.now += self.rng.random_range(0..700);
    }

    /// The first pod in flight comes back after a rejection (sometimes as a newer version, as
    /// the failure handler does).
    fn fail(&mut self, now: SimTime) {
        let mut p = self.in_flight.remove(0);
        p.unschedulable_plugins.insert("Stub");
        let i: usize = p.pod_info.name()[1..].parse().unwrap();
        if let Some(pod) = self.pods[i].as_ref().filter(|_| self.rng.random_bool(0.5)) {
            p.pod_info = info(pod);
        }
        let cycle = self.q.scheduling_cycle();
        let _ = self.q.add_unschedulable_if_not_present(p, cycle, now);
    }
}

#[test]
fn the_kept_resolutions_equal_the_lookups_after_random_operations() {
    let (mut queued, mut bare) = (0, 0);
    for seed in 0..60 {
        let mut run = Run {
            rng: ChaCha8Rng::seed_from_u64(seed),
            q: new_queue(seed % 2 == 0),
            pods: vec![None; 6],
            generations: vec![0; 6],
            in_flight: Vec::new(),
            now: 0,
        };
        for step in 0..300 {
            run.step();
            let n = check(&run.q, &format!("seed {seed}, step {step}"));
            let all: usize = NODES
                .iter()
                .map(|n| run.q.nominated_pods_for_node(n).len())
                .sum();
            queued += n;
            bare += all - n;
        }
    }
    assert!(queued > 5_000, "{queued} queued resolutions compared");
    assert!(bare > 500, "{bare} bare resolutions compared");
}

/// A nomination of a pod already nominated to the same node, by `add` or by `update`, moves it
/// to the end of the node's list, as deleting and adding it does; another node or a cleared
/// nomination takes the general way.
#[test]
fn renominating_to_the_same_node_moves_the_pod_last() {
    let pod = |name: &str, node: &str| {
        let mut p = Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            ..Default::default()
        };
        p.status = Some(PodStatus {
            nominated_node_name: Some(node.into()),
            ..Default::default()
        });
        p
    };
    let names = |n: &Nominator, node: &str| -> Vec<String> {
        n.pods_for_node(node)
            .iter()
            .map(|r| r.name.clone())
            .collect()
    };
    let mut n = Nominator::default();
    for name in ["a", "b", "c"] {
        n.add(&info(&pod(name, "n0")), None);
    }
    assert_eq!(names(&n, "n0"), ["a", "b", "c"]);
    n.add(&info(&pod("a", "n0")), None);
    assert_eq!(names(&n, "n0"), ["b", "c", "a"]);
    n.update(&pod("b", "n0").into(), &info(&pod("b", "n0")));
    assert_eq!(names(&n, "n0"), ["c", "a", "b"]);
    assert!(n.has_name("default", "b") && n.node_of("uid-b") == Some("n0"));
    n.update(&pod("c", "n0").into(), &info(&pod("c", "n1")));
    assert_eq!(names(&n, "n0"), ["a", "b"]);
    assert_eq!(names(&n, "n1"), ["c"]);
    n.add(&info(&pod("a", "n0")), Some(""));
    assert_eq!(names(&n, "n0"), ["b"]);
    assert!(!n.has_name("default", "a") && n.node_of("uid-a").is_none());
}

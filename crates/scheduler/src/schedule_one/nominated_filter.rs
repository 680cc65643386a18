//! The filter pass on a node with nominated pods (upstream `RunFilterPluginsWithNominatedPods`
//! and `addGENominatedPods`) without copying the node when the cycle allows it.
//!
//! Upstream filters such a node twice: first with the nominated pods of at least the pod's
//! priority added to a copy of the node (and of the cycle state, told about them through the
//! PreFilter extensions), then, if that passed, on the node itself. The second pass is the
//! node's own verdict, which the node-local memo may already know; the filter pass asks the
//! memo for it as for any other node.
//!
//! The first pass needs no copy when no PreFilter extension runs in the cycle (the cycle state
//! is then the same with the nominated pods) and every Filter plugin that runs either looks
//! only at the node itself and at the pod (NodeUnschedulable, NodeName, TaintToleration,
//! NodeAffinity: their status is the same with more pods) or reads the pods only through the
//! sum of their requests and their number ([`FilterPlugin::filter_with_requests`], which
//! NodeResourcesFit answers): the nominated pods' requests are added to the node's, in the
//! order the copy would add them (the sums saturate). Otherwise the framework's two passes run
//! as before.

use std::sync::Arc;

use crate::framework::{CycleState, Framework, NodeInfo, PodInfo, Status};
use crate::node_local::NamedFilter;
use crate::plugins::defaultpreemption::{status_with_requests, POD_INDEPENDENT_FILTERS};

/// The first of the two passes on a node with nominated pods, for one cycle (the default one
/// always takes the framework's copies).
#[derive(Default)]
pub(crate) struct FirstPass<'a> {
    /// The cycle's Filter plugins in order, each with whether it looks only at the node; `None`
    /// when a PreFilter extension runs in the cycle.
    filters: Option<Vec<(NamedFilter<'a>, bool)>>,
}

impl<'a> FirstPass<'a> {
    pub fn new(fwk: &Framework, state: &CycleState, all: &[NamedFilter<'a>]) -> FirstPass<'a> {
        let filters = (!fwk.has_active_pre_filter_extensions(state)).then(|| {
            all.iter()
                .map(|&(name, f)| ((name, f), POD_INDEPENDENT_FILTERS.contains(&name)))
                .collect()
        });
        FirstPass { filters }
    }

    /// The first pass's status on `node` with `nominated`, the pods nominated to it: a success
    /// when none of them counts (the node's own verdict then decides alone). `None` when it
    /// needs the framework's copies.
    pub fn status(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        nominated: &[Arc<PodInfo>],
    ) -> Option<Status> {
        self.status_knowing(state, pod, node, nominated.iter(), Own::Unknown)
    }

    /// [`Self::status`] knowing the node's own verdict `own`: the pod-independent filters
    /// before the one that failed the node (all of them when it passed) pass with the
    /// nominated pods too, and do not run.
    pub fn status_knowing<'n>(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        nominated: impl Iterator<Item = &'n Arc<PodInfo>> + Clone,
        own: Own<'_>,
    ) -> Option<Status> {
        let relevant = |np: &&Arc<PodInfo>| np.priority >= pod.priority && np.uid() != pod.uid();
        if !nominated.clone().any(|np| relevant(&np)) {
            return Some(Status::success());
        }
        let filters = self.filters.as_ref()?;
        let mut requested = node.requested.clone();
        let mut num_pods = node.pods.len();
        for np in nominated.filter(relevant) {
            requested.add(np.requests());
            num_pods += 1;
        }
        let known = match own {
            Own::Unknown => 0,
            Own::Passed => filters.len(),
            Own::Failed(s) => filters
                .iter()
                .position(|((name, _), _)| *name == s.plugin)
                .unwrap_or(0),
        };
        status_with_requests(filters, state, pod, node, &requested, num_pods, known)
    }
}

/// What is known of a node's own verdict (every Filter plugin on the node without its
/// nominated pods).
#[derive(Clone, Copy)]
pub(crate) enum Own<'s> {
    Unknown,
    Passed,
    /// Failed with this status (its plugin set).
    Failed(&'s Status),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::{expr, snapshot, spread, taint, toleration};
    use crate::plugins::testing::{NodeBuilder, PodBuilder};
    use kubeplane_core::features::FeatureGates;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> T {
        items[rng.random_range(0..items.len())]
    }

    fn random_pod(rng: &mut ChaCha8Rng, name: &str) -> PodBuilder {
        let cpu = format!("{}m", rng.random_range(1..16) * 100);
        let mut p = PodBuilder::new(name)
            .priority(pick(rng, &[0, 10, 20]))
            .req(&[("cpu", cpu.as_str()), ("memory", "512Mi")])
            .label("app", "a");
        if rng.random_bool(0.1) {
            p = p.host_port("", "TCP", 8080);
        }
        p
    }

    fn random_node(rng: &mut ChaCha8Rng, name: &str) -> NodeInfo {
        let mut node = NodeBuilder::new(name)
            .label("zone", pick(rng, &["z1", "z2"]))
            .alloc(&[
                ("cpu", "4"),
                ("memory", "4Gi"),
                ("pods", pick(rng, &["3", "110"])),
            ]);
        if rng.random_bool(0.2) {
            node = node.taint(taint("dedicated", "x", "NoSchedule"));
        }
        let pods = (0..rng.random_range(0..4))
            .map(|i| random_pod(rng, &format!("{name}-{i}")).node(name).obj())
            .collect();
        node.info_with_pods(pods)
    }

    /// The pod: sometimes with a host port, a toleration, a node selector, or a spread
    /// constraint (PodTopologySpread's PreFilter extensions then run: no arithmetic).
    fn random_preemptor(rng: &mut ChaCha8Rng) -> PodInfo {
        let cpu = format!("{}m", rng.random_range(5..30) * 100);
        let mut p = PodBuilder::new("pod")
            .priority(10)
            .req(&[("cpu", cpu.as_str()), ("memory", "1Gi")])
            .label("app", "a");
        if rng.random_bool(0.2) {
            p = p.host_port("", "TCP", 8080);
        }
        if rng.random_bool(0.3) {
            p = p.toleration(toleration("dedicated", "Exists", "", "NoSchedule"));
        }
        if rng.random_bool(0.2) {
            p = p.node_selector("zone", "z1");
        }
        if rng.random_bool(0.1) {
            p = p.spread(spread(
                1,
                "zone",
                "DoNotSchedule",
                vec![expr("app", "In", &["a"])],
            ));
        }
        PodInfo::new(Arc::new(p.obj().into()))
    }

    fn describe(s: &Status) -> (Code, &'static str, String) {
        (s.code, s.plugin, s.message())
    }

    /// The first pass (then the node's own verdict when it passes) gives the framework's two
    /// passes' status, on random nodes with random nominated pods (some of lower priority,
    /// some the pod itself); and it decides most of them without the framework's copies.
    #[test]
    fn the_first_pass_and_the_own_verdict_give_the_two_passes_status() {
        let fwk = crate::config::resolve(None, &FeatureGates::default())
            .unwrap()
            .frameworks
            .remove(0);
        let (mut by_requests, mut failed_first, mut copies, mut skipped) = (0, 0, 0, 0);
        for seed in 0..400 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let nodes: Vec<NodeInfo> = (0..4)
                .map(|n| random_node(&mut rng, &format!("node-{n}")))
                .collect();
            let pod = Arc::new(random_preemptor(&mut rng));
            let snap = snapshot(nodes.clone());
            let mut state = CycleState::new();
            let pre = fwk.run_pre_filter_plugins(&mut state, &pod, &snap);
            if !pre.status.is_success() {
                continue;
            }
            let first = FirstPass::new(&fwk, &state, &fwk.active_filters(&state));
            for node in &nodes {
                let mut nominated: Vec<Arc<PodInfo>> = (0..rng.random_range(0..3))
                    .map(|i| random_pod(&mut rng, &format!("nom-{i}")).nominated(&node.name))
                    .map(|p| Arc::new(PodInfo::new(Arc::new(p.obj().into()))))
                    .collect();
                if rng.random_bool(0.1) {
                    nominated.push(Arc::clone(&pod));
                }
                let want =
                    fwk.run_filter_plugins_with_nominated_pods(&state, &pod, node, &nominated);
                // Knowing the node's own verdict skips pod-independent filters, same status.
                let own_status = fwk.run_filter_plugins(&state, &pod, node);
                let own = match own_status.is_success() {
                    true => Own::Passed,
                    false => Own::Failed(&own_status),
                };
                let plain = first.status(&state, &pod, node, &nominated);
                let knowing = first.status_knowing(&state, &pod, node, nominated.iter(), own);
                assert_eq!(
                    plain.as_ref().map(describe),
                    knowing.as_ref().map(describe),
                    "seed {seed}, {}: knowing {own_status:?}",
                    node.name
                );
                skipped += usize::from(
                    !own_status.is_success() && own_status.plugin != "NodeResourcesFit",
                );
                let got = match first.status(&state, &pod, node, &nominated) {
                    Some(s) if s.is_success() => fwk.run_filter_plugins(&state, &pod, node),
                    Some(s) => {
                        failed_first += 1;
                        s
                    }
                    None => {
                        copies += 1;
                        continue;
                    }
                };
                by_requests += 1;
                assert_eq!(
                    describe(&got),
                    describe(&want),
                    "seed {seed}, {}",
                    node.name
                );
            }
        }
        assert!(by_requests > 800, "{by_requests} nodes without copies");
        assert!(failed_first > 100, "{failed_first} first passes failed");
        assert!(copies > 20, "{copies} nodes needed the copies");
        assert!(
            skipped > 50,
            "{skipped} nodes failed their own pod-independent filter"
        );
    }

    /// 1,300 nodes, each full with one low-priority pod (every 7th tainted, every 11th
    /// cordoned), then high-priority pods of one spec, several created before the scheduler
    /// runs: the first ones preempt and are nominated, the next ones filter nodes with
    /// nominated pods knowing the memo's verdicts (one thread: node by node; two: the pool's
    /// windows). What the scheduler said is the same on one and two threads and without the
    /// memo.
    #[test]
    fn nominated_nodes_filtered_knowing_the_memo_report_as_without_it() {
        use kubeplane_api::{Client, Object};
        use kubeplane_registry::testing::TestClient;

        let run = |threads: usize, reuse: bool| -> Vec<String> {
            crate::schedule_one::tests::in_pool(threads, reuse, |sched| {
                let mut client = TestClient::new(1);
                let alloc = [("cpu", "4"), ("memory", "8Gi"), ("pods", "110")];
                for i in 0..1300 {
                    let name = format!("n{i}");
                    let mut n = NodeBuilder::new(&name).alloc(&alloc);
                    if i % 7 == 3 {
                        n = n.taint(taint("dedicated", "x", "NoSchedule"));
                    }
                    if i % 11 == 5 {
                        n = n.unschedulable(true);
                    }
                    client
                        .create(Object::Node(Arc::new(n.obj().into())))
                        .unwrap();
                    let low = PodBuilder::new(&format!("low-{i}"))
                        .priority(0)
                        .req(&[("cpu", "3")])
                        .node(&name);
                    client
                        .create(Object::Pod(Arc::new(low.obj().into())))
                        .unwrap();
                }
                client.settle(&mut [&mut *sched]);
                for round in 0..3 {
                    for i in 0..4 {
                        let pod = PodBuilder::new(&format!("high-{round}-{i}"))
                            .priority(100)
                            .req(&[("cpu", "2")]);
                        client
                            .create(Object::Pod(Arc::new(pod.obj().into())))
                            .unwrap();
                    }
                    client.settle(&mut [&mut *sched]);
                }
                ["FailedScheduling", "Scheduled", "Preempted"]
                    .iter()
                    .flat_map(|r| client.events_with_reason(r))
                    .map(|e| format!("{}: {}", e.name(), e.message()))
                    .collect()
            })
        };
        let one = run(1, true);
        assert!(
            one.iter()
                .filter(|m| m.contains("Preempted by pod"))
                .count()
                >= 4,
            "{one:?}"
        );
        assert_eq!(run(2, true), one);
        assert_eq!(run(1, false), one);
    }
}

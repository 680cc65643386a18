//! The scheduler as a [`Component`]: informer event routing (upstream `eventhandlers.go`), the
//! queue's timers, and one scheduling cycle per run.

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Arc;

use kubeplane_api::{Client, Component, EventType, Object, WatchEvent};
use kubeplane_core::version::KubeVersion;
use kubeplane_core::SimTime;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashSet;

use crate::cache::{Cache, Snapshot};
use crate::framework::events::labels as ev;
use crate::framework::{EventObject, Framework, PodInfo};
use crate::queue::{node_update_events, pod_update_events, SchedulingQueue};

/// Counters the scheduler keeps (upstream `scheduler_schedule_attempts_total` by result).
#[derive(Clone, Debug, Default)]
pub struct SchedulerMetrics {
    pub scheduled: u64,
    pub unschedulable: u64,
    pub errors: u64,
}

pub struct Scheduler {
    pub(crate) profiles: BTreeMap<String, Arc<Framework>>,
    pub(crate) queue: SchedulingQueue,
    pub(crate) cache: Cache,
    pub(crate) snapshot: Snapshot,
    pub(crate) next_start_node_index: usize,
    pub(crate) percentage_of_nodes_to_score: i32,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) metrics: SchedulerMetrics,
    /// The event source (reporting controller) name.
    pub(crate) source: &'static str,
    /// Node-local Filter and Score results kept for the next identical pod.
    pub(crate) node_local: crate::node_local::NodeLocalMemo,
    /// Whether `node_local` is used (tests compare with and without it).
    pub(crate) reuse_node_local: bool,
    /// The score table of the last cycle, kept so that the next one reuses its buffers.
    pub(crate) score_table: crate::framework::ScoreTable,
    /// The last pod added to the queue: the next one, usually a replica of the same
    /// workload, takes its parsed requests when its resource lists are the same.
    last_added: Option<Arc<PodInfo>>,
    /// `0..n`, the places of all `n` nodes of the snapshot, kept between cycles.
    pub(crate) every_place: Vec<usize>,
    /// The API-call dispatcher, with `SchedulerAsyncAPICalls` (none: calls are made at once).
    pub(crate) api_dispatcher: Option<crate::api_dispatcher::ApiDispatcher>,
    /// Binding cycles waiting for their queued binding call, found by pod UID.
    pub(crate) binding_cycles: FxHashSet<crate::binding_cycle::BindingCycle>,
    /// Whether a failed scheduling or binding cycle leaves the pod's nomination alone instead
    /// of clearing it (v1.34: kubernetes#133276; v1.35 clears again, #135007).
    pub(crate) keeps_nomination_on_failure: bool,
}

fn is_assigned(pod: &StoredPod) -> bool {
    pod.node_name().is_some_and(|n| !n.is_empty())
}

/// Whether a pod has ended (phase Succeeded or Failed).
fn is_terminal(pod: &StoredPod) -> bool {
    matches!(pod.phase(), Some("Succeeded" | "Failed"))
}

/// A pod event as the scheduler's informer sees it. Upstream's `newPodInformer` watches pods
/// with the field selector `status.phase!=Succeeded,status.phase!=Failed`: a pod that is
/// terminal when it appears is never seen, a pod that turns terminal is deleted from the
/// informer (the watch cache's Deleted event carries the last state that matched, so a bound
/// pod leaves the scheduler's cache and its requests stop counting against its node), and the
/// later deletion of a terminal pod is not seen again. `None`: the informer sees nothing.
fn non_terminal_pod_event(ev: &WatchEvent) -> Option<std::borrow::Cow<'_, WatchEvent>> {
    use std::borrow::Cow;
    let passes = |o: &Object| o.as_pod().is_some_and(|p| !is_terminal(p));
    let now_passes = passes(&ev.object);
    let before_passes = ev.old.as_ref().is_none_or(passes);
    match ev.type_ {
        EventType::Added | EventType::Deleted if now_passes => Some(Cow::Borrowed(ev)),
        EventType::Modified if now_passes && before_passes => Some(Cow::Borrowed(ev)),
        EventType::Modified if now_passes => Some(Cow::Owned(WatchEvent {
            type_: EventType::Added,
            object: ev.object.clone(),
            old: None,
            resource_version: ev.resource_version,
        })),
        EventType::Modified if before_passes => Some(Cow::Owned(WatchEvent {
            type_: EventType::Deleted,
            object: ev.old.clone().expect("checked above"),
            old: ev.old.clone(),
            resource_version: ev.resource_version,
        })),
        _ => None,
    }
}

impl Scheduler {
    /// A scheduler with these profiles and queue; tie-breaks derive from `seed`.
    pub fn new(
        profiles: Vec<Framework>,
        queue: SchedulingQueue,
        percentage_of_nodes_to_score: i32,
        seed: u64,
    ) -> Scheduler {
        Scheduler {
            profiles: profiles
                .into_iter()
                .map(|f| (f.profile_name.clone(), Arc::new(f)))
                .collect(),
            queue,
            cache: Cache::new(),
            snapshot: Snapshot::default(),
            next_start_node_index: 0,
            percentage_of_nodes_to_score,
            // A stream of its own, so adding objects elsewhere does not shift tie-breaks.
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5343_4845_4455_4c45),
            metrics: SchedulerMetrics::default(),
            source: crate::DEFAULT_SCHEDULER_NAME,
            node_local: Default::default(),
            reuse_node_local: true,
            score_table: Default::default(),
            last_added: None,
            every_place: Vec::new(),
            api_dispatcher: None,
            binding_cycles: Default::default(),
            keeps_nomination_on_failure: false,
        }
    }

    /// Follows `version`'s behaviour where it differs between releases: whether failed
    /// scheduling and binding cycles keep the pod's `nominatedNodeName`
    /// (`changes::SCHEDULER_KEEPS_NOMINATION_ON_FAILURE`) rather than clear it, and whether the
    /// queue records a gated pod's nomination when the pod is added
    /// (`changes::GATED_POD_NOMINATION_HOLDS_ROOM`). Without it the scheduler clears the
    /// nomination, as v1.33 and v1.35 and later do, and records nominations of pods reaching
    /// activeQ only, as before v1.37. Every runtime (the simulator, `serve`, the live scheduler)
    /// calls it with the release it follows.
    pub fn follow_version(&mut self, version: KubeVersion) {
        use kubeplane_core::version::changes;
        self.keeps_nomination_on_failure =
            version.has(changes::SCHEDULER_KEEPS_NOMINATION_ON_FAILURE);
        self.queue
            .set_records_nomination_on_add(version.has(changes::GATED_POD_NOMINATION_HOLDS_ROOM));
    }

    /// Whether a failed cycle keeps the pod's nomination (see [`Scheduler::follow_version`]).
    pub fn keeps_nomination_on_failure(&self) -> bool {
        self.keeps_nomination_on_failure
    }

    /// What a failed cycle does to the pod's nomination where upstream passes
    /// `clearNominatedNode`: clears it, or, in the releases that stopped clearing it, nothing.
    pub(crate) fn failure_nominating(&self) -> crate::framework::NominatingMode {
        if self.keeps_nomination_on_failure {
            crate::framework::NominatingMode::Noop
        } else {
            crate::framework::NominatingMode::Override(String::new())
        }
    }

    /// Whether node-local Filter and Score results are reused for identical pods (on by
    /// default; the results are the same either way, see [`crate::node_local`]).
    pub fn set_reuse_node_local(&mut self, on: bool) {
        self.reuse_node_local = on;
        self.node_local = Default::default();
    }

    pub fn queue(&self) -> &SchedulingQueue {
        &self.queue
    }

    fn responsible_for(&self, pod: &StoredPod) -> bool {
        let name = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .filter(|s| !s.is_empty())
            .unwrap_or(crate::DEFAULT_SCHEDULER_NAME);
        self.profiles.contains_key(name)
    }

    fn on_pod(&mut self, ev: &WatchEvent, pod: &Arc<StoredPod>, now: SimTime) {
        let old = ev.old.as_ref().and_then(Object::as_pod);
        if is_assigned(pod) {
            // The cache is about to change the pod's nodes: the snapshot lets go of them first.
            let uid = pod.metadata.uid.as_deref().unwrap_or("");
            let node = pod.node_name();
            self.cache
                .release_from_snapshot(uid, node, &mut self.snapshot);
        }
        match ev.type_ {
            EventType::Added => {
                if is_assigned(pod) {
                    let info = Arc::new(PodInfo::new(pod.clone()));
                    let _ = self.cache.add_pod(info);
                    self.queue.move_all_to_active_or_backoff_queue(
                        ev::ASSIGNED_POD_ADD,
                        None,
                        Some(EventObject::Pod(pod)),
                        None,
                        now,
                    );
                } else if self.responsible_for(pod) {
                    let like = self.last_added.as_deref();
                    let info = Arc::new(PodInfo::new_like(pod.clone(), like));
                    self.last_added = Some(info.clone());
                    self.queue.add(info, now);
                }
            }
            EventType::Modified => {
                let old = old.expect("a Modified event carries the old object");
                self.sync_with_api_dispatcher(pod);
                match (is_assigned(old), is_assigned(pod)) {
                    (true, true) => {
                        let uid = pod.metadata.uid.as_deref().unwrap_or("");
                        let info = match self.cache.pod(uid) {
                            Some(known) => known.updated(pod.clone()),
                            None => PodInfo::new(pod.clone()),
                        };
                        self.cache.update_pod(Arc::new(info));
                        if !self.queue.wants_cluster_events() {
                            return;
                        }
                        for e in pod_update_events(old, pod) {
                            self.queue.move_all_to_active_or_backoff_queue(
                                e,
                                Some(EventObject::Pod(old)),
                                Some(EventObject::Pod(pod)),
                                None,
                                now,
                            );
                        }
                    }
                    (false, true) => {
                        // Bound: it leaves the unscheduled informer and enters the cache.
                        let uid = pod.metadata.uid.as_deref().unwrap_or("");
                        let info = Arc::new(match self.cache.pod(uid) {
                            Some(assumed) => assumed.updated(pod.clone()),
                            None => PodInfo::new(pod.clone()),
                        });
                        self.queue.delete(&info);
                        let _ = self.cache.add_pod(info);
                        self.queue.move_all_to_active_or_backoff_queue(
                            ev::ASSIGNED_POD_ADD,
                            None,
                            Some(EventObject::Pod(pod)),
                            None,
                            now,
                        );
                    }
                    (false, false) => {
                        if !self.responsible_for(pod) {
                            return;
                        }
                        let uid = pod.metadata.uid.as_deref().unwrap_or("");
                        if self.cache.is_assumed(uid) {
                            return;
                        }
                        let info = Arc::new(PodInfo::new(pod.clone()));
                        self.queue.update(old, info, now);
                        let old_nnn = old
                            .status()
                            .and_then(|s| s.nominated_node_name())
                            .unwrap_or("");
                        let new_nnn = pod
                            .status()
                            .and_then(|s| s.nominated_node_name())
                            .unwrap_or("");
                        if !old_nnn.is_empty() && old_nnn != new_nnn {
                            let prio = old.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
                            let check = move |p: &PodInfo| p.priority <= prio;
                            self.queue.move_all_to_active_or_backoff_queue(
                                ev::ASSIGNED_POD_DELETE,
                                Some(EventObject::Pod(old)),
                                None,
                                Some(&check),
                                now,
                            );
                        }
                    }
                    (true, false) => {}
                }
            }
            EventType::Deleted => {
                if is_assigned(pod) {
                    self.cache
                        .remove_pod(pod.metadata.uid.as_deref().unwrap_or_default());
                    self.queue.move_all_to_active_or_backoff_queue(
                        ev::ASSIGNED_POD_DELETE,
                        Some(EventObject::Pod(pod)),
                        None,
                        None,
                        now,
                    );
                } else {
                    let info = PodInfo::new(pod.clone());
                    self.queue.delete(&info);
                    if info.nominated_node_name().is_some() {
                        let prio = info.priority;
                        let check = move |p: &PodInfo| p.priority <= prio;
                        self.queue.move_all_to_active_or_backoff_queue(
                            ev::ASSIGNED_POD_DELETE,
                            Some(EventObject::Pod(pod)),
                            None,
                            Some(&check),
                            now,
                        );
                    }
                }
            }
        }
    }

    /// Upstream `syncPodWithDispatcher` on a pod update: a call queued for the pod compares
    /// with the newer pod from now on (and is dropped when it has nothing left to change).
    /// As in v1.34, the pod with the call's changes applied is not used further.
    fn sync_with_api_dispatcher(&mut self, pod: &StoredPod) {
        if let Some(d) = self.api_dispatcher.as_mut().filter(|d| !d.queue.is_empty()) {
            let _ = d.queue.sync_object(pod);
        }
    }

    fn on_node(&mut self, ev: &WatchEvent, node: &Arc<kubeplane_api::StoredNode>, now: SimTime) {
        match ev.type_ {
            EventType::Added => {
                self.cache.add_node(node.clone());
                self.queue.move_all_to_active_or_backoff_queue(
                    ev::NODE_ADD,
                    None,
                    Some(EventObject::Node(node)),
                    None,
                    now,
                );
            }
            EventType::Modified => {
                let old = ev
                    .old
                    .as_ref()
                    .and_then(Object::as_node)
                    .expect("a Modified event carries the old object");
                // A renewal of the conditions' heartbeats only is no scheduling property
                // change (upstream `NodeSchedulingPropertiesChange` finds no event in it). The
                // cache's verdict against its held version is the one against `old` (the
                // held version differs from `old` at most in heartbeats); only a node it did
                // not keep is compared with `old` again.
                let heartbeats_only = self.cache.update_node(node.clone());
                if !self.queue.wants_cluster_events()
                    || heartbeats_only
                    || kubeplane_api::only_heartbeats_changed(old, node)
                {
                    return;
                }
                for e in node_update_events(old, node) {
                    self.queue.move_all_to_active_or_backoff_queue(
                        e,
                        Some(EventObject::Node(old)),
                        Some(EventObject::Node(node)),
                        None,
                        now,
                    );
                }
            }
            EventType::Deleted => {
                self.queue.move_all_to_active_or_backoff_queue(
                    ev::NODE_DELETE,
                    Some(EventObject::Node(node)),
                    None,
                    None,
                    now,
                );
                self.cache
                    .remove_node(node.metadata.name.as_deref().unwrap_or(""));
            }
        }
    }
}

impl Component for Scheduler {
    fn name(&self) -> &'static str {
        "scheduler"
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        match &ev.object {
            Object::Pod(_) => {
                // Upstream's pod informer lists and watches only non-terminal pods.
                let Some(ev) = non_terminal_pod_event(ev) else {
                    return;
                };
                let pod = ev.object.as_pod().expect("a pod event").clone();
                self.on_pod(&ev, &pod, now);
            }
            Object::Node(node) => {
                let node = node.clone();
                self.on_node(ev, &node, now);
            }
            // Namespace labels (InterPodAffinity's namespaceSelector) and ReplicaSet selectors
            // (PodTopologySpread's default constraints), as upstream's listers.
            Object::Namespace(ns) => {
                let name = ns.metadata.name.as_deref().unwrap_or("");
                if ev.type_ == EventType::Deleted {
                    self.cache.remove_namespace(name);
                } else {
                    self.cache
                        .update_namespace(name, ns.metadata.labels.as_ref());
                }
            }
            Object::ReplicaSet(rs) => {
                let key = format!(
                    "{}/{}",
                    rs.metadata.namespace.as_deref().unwrap_or("default"),
                    rs.metadata.name.as_deref().unwrap_or("")
                );
                if ev.type_ == EventType::Deleted {
                    self.cache.remove_replica_set(&key);
                } else {
                    let selector = rs.spec.as_ref().and_then(|s| {
                        kubeplane_core::labels::from_label_selector(&s.selector).ok()
                    });
                    self.cache.update_replica_set(&key, selector);
                }
            }
            _ => {}
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        if self.queue.next_timer().is_some_and(|t| t <= now) {
            self.queue.run_timers(now);
        }
        if self.queue.has_poppable() {
            self.schedule_one(now, client);
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        if self.queue.has_poppable() {
            return Some(SimTime(i64::MIN));
        }
        self.queue.next_timer()
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        let mut out = vec![
            (
                "scheduler_schedule_attempts_total{result=\"scheduled\"}".into(),
                self.metrics.scheduled,
            ),
            (
                "scheduler_schedule_attempts_total{result=\"unschedulable\"}".into(),
                self.metrics.unschedulable,
            ),
            (
                "scheduler_schedule_attempts_total{result=\"error\"}".into(),
                self.metrics.errors,
            ),
        ];
        // Upstream's gauge of the pods waiting in each queue.
        let pending = self.queue.pending_pods();
        for (queue, n) in [
            ("active", pending.active),
            ("backoff", pending.backoff),
            ("unschedulable", pending.unschedulable),
            ("gated", pending.gated),
        ] {
            out.push((
                format!("scheduler_pending_pods{{queue=\"{queue}\"}}"),
                n as u64,
            ));
        }
        out.extend([
            (
                "kubeplane_scheduler_node_local_filters_reused_total".into(),
                self.node_local.filters_reused,
            ),
            (
                "kubeplane_scheduler_node_local_scores_reused_total".into(),
                self.node_local.scores_reused,
            ),
        ]);
        out
    }
}

impl Scheduler {
    /// Whether pods are waiting to be scheduled soon (activeQ or backoffQ); pods parked in
    /// unschedulablePods wait for a cluster event and do not count.
    pub fn has_pending_work(&self) -> bool {
        let counts = self.queue.pending_pods();
        self.queue.has_poppable() || counts.backoff > 0
    }
}

#[cfg(test)]
mod tests {
    use kubeplane_api::Kind;
    use kubeplane_core::features::FeatureGates;
    use kubeplane_registry::testing::TestClient;

    use super::*;
    use crate::plugins::testing::{NodeBuilder, PodBuilder};
    use kubeplane_api::PodExt;

    fn scheduler() -> Scheduler {
        let setup = crate::config::resolve(None, &FeatureGates::default()).unwrap();
        Scheduler::new(
            setup.frameworks,
            SchedulingQueue::new(setup.queue),
            setup.percentage_of_nodes_to_score,
            1,
        )
    }

    /// One 4-cpu node with `first` (3 cpu) on it in phase `phase`.
    fn cluster(sched: &mut Scheduler, phase: &str) -> TestClient {
        let mut client = TestClient::new(1);
        let node =
            NodeBuilder::new("n1").alloc(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]);
        client
            .create(Object::Node(Arc::new(node.obj().into())))
            .unwrap();
        let first = PodBuilder::new("first")
            .req(&[("cpu", "3")])
            .node("n1")
            .phase(phase)
            .obj();
        client.create(Object::Pod(Arc::new(first.into()))).unwrap();
        client.settle(&mut [sched]);
        client
    }

    fn node_of(client: &TestClient, name: &str) -> Option<String> {
        let obj = client.store.get(Kind::Pod, "default", name).unwrap();
        obj.as_pod().unwrap().node_name().map(str::to_string)
    }

    fn end(client: &mut TestClient, name: &str, phase: &str) {
        let obj = client.store.get(Kind::Pod, "default", name).unwrap();
        let mut pod = StoredPod::clone(obj.as_pod().unwrap());
        pod.update_status(|s| s.phase = Some(phase.into()));
        pod.metadata.resource_version = None;
        client.update_status(Object::Pod(Arc::new(pod))).unwrap();
    }

    fn second() -> Object {
        Object::Pod(Arc::new(
            PodBuilder::new("second").req(&[("cpu", "2")]).obj().into(),
        ))
    }

    #[test]
    fn a_pod_that_ends_frees_its_node_for_a_pod_that_did_not_fit() {
        for phase in ["Succeeded", "Failed"] {
            let mut sched = scheduler();
            let mut client = cluster(&mut sched, "Running");
            client.create(second()).unwrap();
            client.settle(&mut [&mut sched]);
            assert_eq!(
                node_of(&client, "second"),
                None,
                "{phase}: 2 cpu do not fit"
            );
            assert_eq!(client.events_with_reason("FailedScheduling").len(), 1);

            end(&mut client, "first", phase);
            client.run_until(SimTime::from_secs(60), &mut [&mut sched]);
            assert_eq!(
                node_of(&client, "second").as_deref(),
                Some("n1"),
                "{phase}: the ended pod's 3 cpu no longer count"
            );
        }
    }

    #[test]
    fn a_pod_that_is_terminal_when_it_appears_takes_nothing() {
        for phase in ["Succeeded", "Failed"] {
            let mut sched = scheduler();
            let mut client = cluster(&mut sched, phase);
            client.create(second()).unwrap();
            client.settle(&mut [&mut sched]);
            assert_eq!(node_of(&client, "second").as_deref(), Some("n1"), "{phase}");
        }
    }

    #[test]
    fn a_running_pod_still_counts_against_its_node() {
        let mut sched = scheduler();
        let mut client = cluster(&mut sched, "Running");
        client.create(second()).unwrap();
        client.run_until(SimTime::from_secs(600), &mut [&mut sched]);
        assert_eq!(node_of(&client, "second"), None);
    }

    #[test]
    fn between_cycles_the_snapshot_keeps_no_superseded_version_of_a_bound_pod() {
        let mut sched = scheduler();
        let mut client = cluster(&mut sched, "Running");
        // A cycle after "first" was bound: the snapshot holds n1 with its bound version.
        client.create(second()).unwrap();
        client.settle(&mut [&mut sched]);
        let bound = client
            .store
            .get(Kind::Pod, "default", "first")
            .unwrap()
            .clone();
        let held = |sched: &Scheduler, version: &Object| {
            let version = Arc::as_ptr(version.as_pod().unwrap());
            (sched.snapshot.node_infos.iter())
                .flat_map(|n| n.pods.iter())
                .any(|p| std::ptr::eq(Arc::as_ptr(&p.pod), version))
        };
        assert!(held(&sched, &bound));
        let mut pod = StoredPod::clone(bound.as_pod().unwrap());
        pod.update_status(|s| s.message = Some("later".into()));
        let newer = Object::Pod(Arc::new(pod));
        let ev = WatchEvent {
            type_: EventType::Modified,
            object: newer.clone(),
            old: Some(bound.clone()),
            resource_version: 9,
        };
        sched.observe(&ev, SimTime::from_secs(1));
        assert!(
            !held(&sched, &bound),
            "the snapshot keeps the superseded version"
        );
        let n1 = sched.cache.node("n1").unwrap();
        assert_eq!(Arc::strong_count(n1), 1, "another holder of n1");
        // The next cycle sees n1 again, with the newer version.
        sched.cache.update_snapshot(&mut sched.snapshot);
        assert!(held(&sched, &newer));
        let n1 = sched.cache.node("n1").unwrap();
        assert!(Arc::ptr_eq(sched.snapshot.get("n1").unwrap(), n1));
    }

    #[test]
    fn a_pending_pod_that_fails_leaves_the_queue() {
        let mut sched = scheduler();
        let mut client = cluster(&mut sched, "Running");
        client.create(second()).unwrap();
        client.settle(&mut [&mut sched]);
        end(&mut client, "second", "Failed");
        end(&mut client, "first", "Succeeded");
        client.run_until(SimTime::from_secs(600), &mut [&mut sched]);
        assert_eq!(
            node_of(&client, "second"),
            None,
            "a failed pod is not scheduled"
        );
        let counts = sched.queue.pending_pods();
        assert_eq!(counts.active + counts.backoff + counts.unschedulable, 0);
    }

    #[test]
    fn the_informer_sees_pod_events_through_its_field_selector() {
        let pod = |phase: &str| {
            Object::Pod(Arc::new(
                PodBuilder::new("p").node("n1").phase(phase).obj().into(),
            ))
        };
        let event = |type_, object: Object, old: Option<Object>| WatchEvent {
            type_,
            object,
            old,
            resource_version: 7,
        };
        use EventType::{Added, Deleted, Modified};
        let cases = [
            (
                "a running pod's add is seen",
                event(Added, pod("Running"), None),
                Some((Added, "Running")),
            ),
            (
                "a succeeded pod's add is not",
                event(Added, pod("Succeeded"), None),
                None,
            ),
            (
                "an update between running states is seen",
                event(Modified, pod("Running"), Some(pod("Pending"))),
                Some((Modified, "Running")),
            ),
            (
                "a pod turning failed is deleted as it was before",
                event(Modified, pod("Failed"), Some(pod("Running"))),
                Some((Deleted, "Running")),
            ),
            (
                "an update of a terminal pod is not seen",
                event(Modified, pod("Failed"), Some(pod("Succeeded"))),
                None,
            ),
            (
                "the deletion of a terminal pod is not seen again",
                event(Deleted, pod("Succeeded"), Some(pod("Succeeded"))),
                None,
            ),
            (
                "a running pod's deletion is seen",
                event(Deleted, pod("Running"), None),
                Some((Deleted, "Running")),
            ),
        ];
        for (case, ev, want) in cases {
            let got = non_terminal_pod_event(&ev).map(|e| {
                let phase = e.object.as_pod().unwrap().phase().map(String::from);
                (e.type_, phase.unwrap())
            });
            let want = want.map(|(t, p)| (t, p.to_string()));
            assert_eq!(got, want, "{case}");
            assert!(got.is_none() || non_terminal_pod_event(&ev).unwrap().resource_version == 7);
        }
    }
}

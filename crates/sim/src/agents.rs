//! Simulated node agents (kubelets): they start bound pods, stop deleted ones, renew node
//! Leases and post node status, and report what `podStatus` and `nodeCondition` steps say.
//!
//! A pod annotated `kubeplane.io/run-duration: 45s` ends that long after it started, with the
//! exit code of `kubeplane.io/exit-code` (0 by default) in every container: Succeeded for 0,
//! Failed otherwise, as the kubelet reports it. Under `restartPolicy: OnFailure` a failed run
//! (and under `Always` any run) restarts the containers at once instead, counting a restart.

mod addresses;
mod lease;
mod pod_status;
#[cfg(test)]
mod status_post_tests;
mod timers;

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStatus, PodCondition,
};
use kubeplane_api::{SlotHint, StoredNode};
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;
use kubeplane_store::{
    Client, Component, DeleteOptions, EventType, Kind, Object, ObjectKey, WatchEvent,
};
use rustc_hash::{FxHashMap, FxHashSet};

pub(crate) use pod_status::finished_pod;
use pod_status::{default_reason, exit_code, restarted_pod, run_duration, set_condition};

/// Where node Leases live.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// Upstream kubelet: the Lease is renewed every 10 s (a quarter of its 40 s duration).
pub const LEASE_RENEW_INTERVAL: SimDuration = SimDuration(10_000_000_000);
pub const LEASE_DURATION_SECS: i32 = 40;
/// Upstream kubelet `nodeStatusReportFrequency`: status is posted at least this often even
/// when nothing changed.
pub const NODE_STATUS_REPORT_INTERVAL: SimDuration = SimDuration(300_000_000_000);
/// How long a pod's containers run before they exit (a Go duration such as `45s`).
pub const RUN_DURATION_ANNOTATION: &str = "kubeplane.io/run-duration";
/// The exit code of a pod's containers when its run duration ends (default 0).
pub const EXIT_CODE_ANNOTATION: &str = "kubeplane.io/exit-code";

/// The condition types a node agent reports, in upstream order.
pub const NODE_CONDITION_TYPES: [&str; 5] = [
    "MemoryPressure",
    "DiskPressure",
    "PIDPressure",
    "NetworkUnavailable",
    "Ready",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    RenewLease(usize),
    PostStatus(usize),
    StartPod(usize),
    StopPod(usize),
    /// The pod's run duration is over: its containers exit.
    EndPod(usize),
    /// After `nodeUp`: report the node's pods as the agent sees them again.
    ResyncPods(usize),
}

/// A node agent's state.
#[derive(Clone, Debug)]
struct NodeAgent {
    name: String,
    /// Reporting (heartbeats on); false after `nodeDown`.
    up: bool,
    /// What the agent reports: condition type → (status, reason).
    conditions: BTreeMap<String, (String, Option<String>)>,
    /// Bumped when the timers of this node are rescheduled (stale heap entries are skipped).
    epoch: u64,
    /// The epoch the node's heartbeat timers belong to (`None`: never scheduled).
    timer_epoch: Option<u64>,
    /// The Lease the agent last wrote, and its resourceVersion (quiet renewals move only the
    /// latter).
    lease: Option<(Arc<Lease>, u64)>,
    /// Where the store keeps the Lease (quiet renewals look it up there first).
    lease_slot: SlotHint,
    exists: bool,
    /// The node as the agent's last two status posts stored it (last, the one before): the
    /// one before is the copy the next post edits when nothing else holds it any more.
    posts: Posts,
}

/// The node versions of an agent's last two status posts.
#[derive(Clone, Debug, Default)]
struct Posts {
    last: Option<Arc<StoredNode>>,
    spare: Option<Arc<StoredNode>>,
}

impl Posts {
    /// A copy of `base` to post. The version before the last post, when the agent holds it
    /// alone and it differs from `base` at most in heartbeats (by their marks, or else by
    /// their fields): given `base`'s heartbeats it equals `base` in every field but the
    /// resourceVersion, as a clone would, without the clone's allocations (nor the dropped
    /// version's frees). Else a clone.
    fn copy_of(&mut self, base: &StoredNode) -> Arc<StoredNode> {
        if let Some(mut spare) = self.spare.take() {
            if let Some(n) = Arc::get_mut(&mut spare) {
                if kubeplane_api::only_heartbeats_changed(n, base) {
                    copy_heartbeats(n, base);
                    return spare;
                }
            }
        }
        Arc::new(StoredNode::clone(base))
    }

    /// After a successful post that stored `stored`.
    fn posted(&mut self, stored: Arc<StoredNode>) {
        self.spare = self.last.replace(stored);
    }
}

/// Gives `n` the conditions' heartbeats of `base`, from which it differs at most in those
/// (same conditions, in the same order) and the resourceVersion.
fn copy_heartbeats(n: &mut StoredNode, base: &StoredNode) {
    let from = base.status.as_ref().and_then(|s| s.conditions.as_deref());
    let to = n.status.as_mut().and_then(|s| s.conditions.as_mut());
    if let (Some(from), Some(to)) = (from, to) {
        for (c, b) in to.iter_mut().zip(from) {
            c.last_heartbeat_time.clone_from(&b.last_heartbeat_time);
        }
    }
}

/// A pod the agents track. An envelope run tracks 200,000 at once, so an entry holds one
/// allocation of its own (the UID): its key `namespace/name` is the index's, and its node's
/// name is shared by the node's pods ([`NodeAgents::node_names`]).
#[derive(Clone, Debug)]
struct PodEntry {
    /// `namespace/name`, the same allocation as the key of [`NodeAgents::pod_index`].
    key: Arc<str>,
    uid: Box<str>,
    node: Arc<str>,
    /// When the pod should start (bound and Pending).
    start_at: Option<SimTime>,
    /// When the pod should be removed (Terminating).
    stop_at: Option<SimTime>,
    /// When the pod's containers exit (`kubeplane.io/run-duration`).
    end_at: Option<SimTime>,
}

pub struct NodeAgents {
    nodes: Vec<NodeAgent>,
    node_index: FxHashMap<String, usize>,
    pods: Vec<PodEntry>,
    pod_index: FxHashMap<Arc<str>, usize>,
    free_pods: Vec<usize>,
    /// The node names the tracked pods name, one allocation each.
    node_names: FxHashSet<Arc<str>>,
    timers: timers::Timers,
    startup_latency: Option<SimDuration>,
    /// Pods the scenario reported not ready (`podStatus` with `ready: false`).
    reported_not_ready: FxHashSet<String>,
    /// Renew Leases with quiet writes where the client has them (`simulate`'s agents; see
    /// [`NodeAgents::with_quiet_renewals`]).
    quiet_renewals: bool,
    /// The renewTime of the last instant's renewals: (instant, the clock's start, timestamp).
    renew_stamp: Option<(SimTime, jiff::Timestamp, jiff::Timestamp)>,
    pub leases_renewed: u64,
    pub statuses_posted: u64,
    /// Pod and host IPs handed out (`kubeplane serve`'s agents; `None` in `simulate`).
    pod_ips: Option<addresses::PodIps>,
}

fn pod_key(ns: &str, name: &str) -> String {
    format!("{ns}/{name}")
}

impl PodEntry {
    /// The namespace and the name (a namespace has no `/`).
    fn namespace_name(&self) -> (&str, &str) {
        self.key.split_once('/').unwrap_or(("", &self.key))
    }
}

fn node_of(pod: &StoredPod) -> Option<&str> {
    pod.node_name().filter(|n| !n.is_empty())
}

fn phase_of(pod: &StoredPod) -> &str {
    pod.phase().unwrap_or("Pending")
}

impl NodeAgents {
    /// `startup_latency`: how long a bound Pending pod takes to become Running and Ready
    /// (`None`: pods are never started).
    pub fn new(startup_latency: Option<SimDuration>) -> NodeAgents {
        NodeAgents {
            nodes: Vec::new(),
            node_index: FxHashMap::default(),
            pods: Vec::new(),
            pod_index: FxHashMap::default(),
            free_pods: Vec::new(),
            node_names: FxHashSet::default(),
            timers: Default::default(),
            startup_latency,
            reported_not_ready: Default::default(),
            quiet_renewals: false,
            renew_stamp: None,
            leases_renewed: 0,
            statuses_posted: 0,
            pod_ips: None,
        }
    }

    /// Agents that give each pod they start a pod IP and a host IP, as a kubelet does
    /// (`simulate`'s agents set none, so its output stays as it was).
    pub fn with_pod_ips(mut self) -> NodeAgents {
        self.pod_ips = Some(addresses::PodIps::default());
        self
    }

    /// Agents that renew their Leases with quiet writes ([`Client::renew_lease_quietly`]: the
    /// stored Lease and the resourceVersions are what updates would make, without the watch
    /// events) where the client has them, as `simulate` and `bench` run them. Nothing in a
    /// simulation reads a renewal but through the store: the node lifecycle controller reads
    /// Leases from its cache, and the other observers of Leases (garbage collector, namespace
    /// controller) ignore a change that keeps owners, finalizers and deletion state. `kubeplane
    /// serve`'s agents write real updates, which watchers see.
    pub fn with_quiet_renewals(mut self) -> NodeAgents {
        self.quiet_renewals = true;
        self
    }

    fn push(&mut self, at: SimTime, t: Timer) {
        self.timers.push(at, t);
    }

    fn node_idx(&mut self, name: &str) -> usize {
        if let Some(&i) = self.node_index.get(name) {
            return i;
        }
        let i = self.nodes.len();
        self.nodes.push(NodeAgent {
            name: name.to_string(),
            up: true,
            conditions: BTreeMap::new(),
            epoch: 0,
            timer_epoch: None,
            lease: None,
            lease_slot: SlotHint::default(),
            exists: false,
            posts: Posts::default(),
        });
        self.node_index.insert(name.to_string(), i);
        i
    }

    fn node_up(&self, name: &str) -> bool {
        self.node_index
            .get(name)
            .is_some_and(|&i| self.nodes[i].up && self.nodes[i].exists)
    }

    /// Starts (re)scheduling the heartbeats of a node from `now`.
    fn schedule_heartbeats(&mut self, i: usize, now: SimTime) {
        self.nodes[i].epoch += 1;
        self.nodes[i].timer_epoch = Some(self.nodes[i].epoch);
        self.push(now, Timer::RenewLease(i));
        self.push(now, Timer::PostStatus(i));
    }

    /// The `nodeDown` step: the agent stops reporting.
    pub fn set_node_down(&mut self, node: &str) {
        let i = self.node_idx(node);
        self.nodes[i].up = false;
        self.nodes[i].epoch += 1;
        self.nodes[i].timer_epoch = Some(self.nodes[i].epoch);
    }

    /// The `nodeUp` step: the agent reports again at once, and pods it could not start or stop
    /// while down make progress.
    pub fn set_node_up(&mut self, node: &str, now: SimTime) {
        let i = self.node_idx(node);
        if self.nodes[i].up {
            return;
        }
        self.nodes[i].up = true;
        if self.nodes[i].exists {
            self.schedule_heartbeats(i, now);
            self.push(now, Timer::ResyncPods(i));
        }
        let pods: Vec<usize> = self
            .pod_index
            .values()
            .copied()
            .filter(|&p| *self.pods[p].node == *node)
            .collect();
        let mut pods = pods;
        pods.sort_unstable();
        for p in pods {
            if self.pods[p].stop_at.is_some() {
                self.push(now, Timer::StopPod(p));
            } else if self.pods[p].start_at.is_some() {
                self.push(now, Timer::StartPod(p));
            } else if self.pods[p].end_at.is_some_and(|t| t <= now) {
                // The run ended while the agent was down: it reports the end now.
                self.push(now, Timer::EndPod(p));
            }
        }
    }

    /// A `podStatus` step set the pod's readiness: the agent keeps reporting it.
    pub fn set_pod_ready_report(&mut self, namespace: &str, name: &str, ready: bool) {
        let key = pod_key(namespace, name);
        if ready {
            self.reported_not_ready.remove(&key);
        } else {
            self.reported_not_ready.insert(key);
        }
    }

    /// The kubelet's status sync after it comes back: Running pods it considers ready that the
    /// node lifecycle controller marked not ready become Ready again.
    fn resync_pods(&mut self, i: usize, now: SimTime, client: &mut dyn Client) {
        let node = self.nodes[i].name.clone();
        let stale: Vec<Arc<StoredPod>> = client
            .cache()
            .list(Kind::Pod)
            .filter_map(Object::as_pod)
            .filter(|p| node_of(p) == Some(node.as_str()) && phase_of(p) == "Running")
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| {
                let key = pod_key(
                    p.metadata.namespace.as_deref().unwrap_or("default"),
                    p.metadata.name.as_deref().unwrap_or(""),
                );
                !self.reported_not_ready.contains(&key)
            })
            .filter(|p| {
                p.status()
                    .is_some_and(|s| s.any_condition(|t, st| t == "Ready" && st != "True"))
            })
            .cloned()
            .collect();
        let ts = client.clock().timestamp(now);
        for pod in stale {
            let mut p = StoredPod::clone(&pod);
            if p.status().is_some() {
                p.update_status(|s| {
                    for c in s
                        .conditions
                        .iter_mut()
                        .flatten()
                        .filter(|c| c.type_ == "Ready" || c.type_ == "ContainersReady")
                    {
                        if c.status != "True" {
                            c.status = "True".into();
                            c.reason = None;
                            c.message = None;
                            c.last_transition_time = Some(ts.clone());
                        }
                    }
                });
            }
            p.metadata.resource_version = None;
            let _ = client.update_status(Object::Pod(Arc::new(p)));
        }
    }

    /// The `nodeCondition` step: from now on the agent reports this condition.
    pub fn set_node_condition(
        &mut self,
        node: &str,
        type_: &str,
        status: &str,
        reason: Option<String>,
        now: SimTime,
    ) {
        let i = self.node_idx(node);
        self.nodes[i]
            .conditions
            .insert(type_.to_string(), (status.to_string(), reason));
        if self.nodes[i].up && self.nodes[i].exists {
            self.schedule_heartbeats(i, now);
        }
    }

    fn track_pod(&mut self, pod: &StoredPod, now: SimTime) {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let key = pod_key(ns, name);
        let Some(node) = node_of(pod) else {
            return;
        };
        let idx = match self.pod_index.get(key.as_str()) {
            Some(&i) => i,
            None => {
                let key: Arc<str> = Arc::from(key);
                let node = match self.node_names.get(node) {
                    Some(n) => Arc::clone(n),
                    None => {
                        let n: Arc<str> = Arc::from(node);
                        self.node_names.insert(Arc::clone(&n));
                        n
                    }
                };
                let entry = PodEntry {
                    key: Arc::clone(&key),
                    uid: pod.metadata.uid.as_deref().unwrap_or_default().into(),
                    node,
                    start_at: None,
                    stop_at: None,
                    end_at: None,
                };
                let i = match self.free_pods.pop() {
                    Some(i) => {
                        self.pods[i] = entry;
                        i
                    }
                    None => {
                        self.pods.push(entry);
                        self.pods.len() - 1
                    }
                };
                self.pod_index.insert(key, i);
                i
            }
        };
        let terminating = pod.metadata.deletion_timestamp.is_some();
        if terminating {
            if self.pods[idx].stop_at.is_none() {
                let grace = pod
                    .metadata
                    .deletion_grace_period_seconds
                    .unwrap_or(0)
                    .max(0);
                let at = now + SimDuration::from_secs(grace);
                self.pods[idx].stop_at = Some(at);
                self.push(at, Timer::StopPod(idx));
            }
            return;
        }
        if phase_of(pod) == "Pending" && self.pods[idx].start_at.is_none() {
            if let Some(latency) = self.startup_latency {
                let at = now + latency;
                self.pods[idx].start_at = Some(at);
                self.push(at, Timer::StartPod(idx));
            }
        }
    }

    fn untrack_pod(&mut self, ns: &str, name: &str) {
        if let Some(i) = self.pod_index.remove(pod_key(ns, name).as_str()) {
            self.pods[i].start_at = None;
            self.pods[i].stop_at = None;
            self.pods[i].end_at = None;
            self.free_pods.push(i);
        }
    }

    fn post_status(&mut self, i: usize, now: SimTime, client: &mut dyn Client) {
        let agent = &mut self.nodes[i];
        let Some(node) = client.cache().get_node(&agent.name).cloned() else {
            return;
        };
        let ts = client.clock().timestamp(now);
        let mut post = agent.posts.copy_of(&node);
        let n = Arc::get_mut(&mut post).expect("a new or unshared copy");
        // Whether this post changes more than the heartbeats (a status or conditions added).
        let mut changed = n.status.as_ref().is_none_or(|s| s.conditions.is_none());
        let conditions = n
            .status
            .get_or_insert_with(Default::default)
            .conditions
            .get_or_insert_with(Vec::new);
        for type_ in NODE_CONDITION_TYPES {
            let (want_status, reason) = match agent.conditions.get(type_) {
                Some((s, r)) => (s.as_str(), r.as_deref()),
                None if type_ == "Ready" => ("True", None),
                // Only report pressure conditions the node already has, as False.
                None if conditions.iter().any(|c| c.type_ == type_) => ("False", None),
                None => continue,
            };
            let reason = reason.unwrap_or_else(|| default_reason(type_, want_status));
            changed |= set_condition(conditions, type_, want_status, reason, &ts);
        }
        // A post that renews only heartbeats says so to the watchers.
        n.heartbeats_of = match changed {
            false => kubeplane_api::heartbeats_mark_of(&node),
            true => None,
        };
        n.metadata.resource_version = None;
        match client.update_status(Object::Node(post)) {
            Ok(Object::Node(stored)) => {
                agent.posts.posted(stored);
                self.statuses_posted += 1;
            }
            Ok(_) => self.statuses_posted += 1,
            Err(_) => {}
        }
    }

    /// The tracked pod `p` as the cache has it, if it is still the same pod (UID), not being
    /// deleted, and in `phase`.
    fn tracked_pod(&self, p: usize, phase: &str, client: &dyn Client) -> Option<Arc<StoredPod>> {
        let entry = &self.pods[p];
        let (namespace, name) = entry.namespace_name();
        let pod = client.cache().get_pod(namespace, name)?.clone();
        let same = pod.metadata.uid.as_deref() == Some(&*entry.uid);
        (same && pod.metadata.deletion_timestamp.is_none() && phase_of(&pod) == phase)
            .then_some(pod)
    }

    fn start_pod(&mut self, p: usize, now: SimTime, client: &mut dyn Client) {
        let entry = &self.pods[p];
        if entry.start_at.is_none_or(|t| t > now) || !self.node_up(&entry.node) {
            return;
        }
        self.pods[p].start_at = None;
        let Some(pod) = self.tracked_pod(p, "Pending", client) else {
            return;
        };
        let ts = client.clock().timestamp(now);
        let mut np = StoredPod::clone(&pod);
        let spec_containers: Vec<(String, String)> = np
            .spec
            .as_ref()
            .map(|s| {
                s.containers
                    .iter()
                    .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default();
        let mut status = np.status_k8s().unwrap_or_default();
        if let Some(ips) = &mut self.pod_ips {
            let node = &*self.pods[p].node;
            let index = self.node_index.get(node).copied().unwrap_or(0);
            ips.assign(
                index,
                client.cache().get_node(node).map(|n| &n.node),
                &mut status,
            );
        }
        status.phase = Some("Running".into());
        status.start_time = Some(ts.clone());
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        for type_ in ["Initialized", "Ready", "ContainersReady"] {
            conditions.retain(|c| c.type_ != type_);
            conditions.push(PodCondition {
                type_: type_.into(),
                status: "True".into(),
                last_transition_time: Some(ts.clone()),
                ..Default::default()
            });
        }
        status.container_statuses = Some(
            spec_containers
                .into_iter()
                .map(|(name, image)| ContainerStatus {
                    name,
                    image,
                    image_id: String::new(),
                    ready: true,
                    started: Some(true),
                    restart_count: 0,
                    state: Some(ContainerState {
                        running: Some(ContainerStateRunning {
                            started_at: Some(ts.clone()),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect(),
        );
        np.set_status(Some(status));
        np.metadata.resource_version = None;
        let _ = client.update_status(Object::Pod(Arc::new(np)));
        self.schedule_end(p, &pod, now);
    }

    /// Schedules the end of a run of the pod's containers, if it has a run duration.
    fn schedule_end(&mut self, p: usize, pod: &StoredPod, now: SimTime) {
        let Some(d) = run_duration(pod) else {
            return;
        };
        let at = now + d;
        self.pods[p].end_at = Some(at);
        self.push(at, Timer::EndPod(p));
    }

    /// The run of a pod's containers ends: the pod turns Succeeded or Failed, or its
    /// containers restart (the kubelet's restart policy).
    fn end_pod(&mut self, p: usize, now: SimTime, client: &mut dyn Client) {
        let entry = &self.pods[p];
        if entry.end_at.is_none_or(|t| t > now) || !self.node_up(&entry.node) {
            return;
        }
        self.pods[p].end_at = None;
        let Some(pod) = self.tracked_pod(p, "Running", client) else {
            return;
        };
        let code = exit_code(&pod);
        let policy = pod
            .spec
            .as_ref()
            .and_then(|s| s.restart_policy.as_deref())
            .unwrap_or("Always");
        let terminal = policy == "Never" || (policy == "OnFailure" && code == 0);
        let ts = client.clock().timestamp(now);
        let np = if terminal {
            finished_pod(&pod, code, &ts)
        } else {
            restarted_pod(&pod, code, &ts)
        };
        let _ = client.update_status(Object::Pod(Arc::new(np)));
        if !terminal {
            self.schedule_end(p, &pod, now);
        }
    }

    fn stop_pod(&mut self, p: usize, now: SimTime, client: &mut dyn Client) {
        let entry = &self.pods[p];
        if entry.stop_at.is_none_or(|t| t > now) || !self.node_up(&entry.node) {
            return;
        }
        let (namespace, name) = entry.namespace_name();
        let key = ObjectKey::new(Kind::Pod, namespace, name);
        let _ = client.delete(
            &key,
            DeleteOptions {
                grace_period_secs: Some(0),
                precondition_uid: Some(entry.uid.to_string()),
                ..DeleteOptions::default()
            },
        );
    }
}

impl Component for NodeAgents {
    fn name(&self) -> &'static str {
        "node-agents"
    }

    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        match (&ev.object, ev.type_) {
            (Object::Node(n), EventType::Added) => {
                let i = self.node_idx(n.metadata.name.as_deref().unwrap_or(""));
                self.nodes[i].exists = true;
                if self.nodes[i].up {
                    self.schedule_heartbeats(i, now);
                }
            }
            (Object::Node(n), EventType::Deleted) => {
                if let Some(&i) = self
                    .node_index
                    .get(n.metadata.name.as_deref().unwrap_or(""))
                {
                    self.nodes[i].exists = false;
                    self.nodes[i].posts = Posts::default();
                    self.nodes[i].epoch += 1;
                    self.nodes[i].timer_epoch = Some(self.nodes[i].epoch);
                }
            }
            (Object::Pod(p), EventType::Deleted) => {
                self.untrack_pod(
                    p.metadata.namespace.as_deref().unwrap_or("default"),
                    p.metadata.name.as_deref().unwrap_or(""),
                );
            }
            (Object::Pod(p), _) => self.track_pod(p, now),
            _ => {}
        }
    }

    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        self.run_some(now, client, usize::MAX);
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        self.timers.next_at()
    }

    fn metrics(&self) -> Vec<(String, u64)> {
        vec![
            (
                "kubelet_node_lease_renewals_total".into(),
                self.leases_renewed,
            ),
            (
                "kubelet_node_status_posts_total".into(),
                self.statuses_posted,
            ),
        ]
    }
}

impl NodeAgents {
    /// [`Component::run`] for at most `limit` timers; whether timers due at `now` are left.
    pub fn run_some(&mut self, now: SimTime, client: &mut dyn Client, limit: usize) -> bool {
        for _ in 0..limit {
            let Some(t) = self.timers.pop_due(now) else {
                return false;
            };
            self.fire(t, now, client);
        }
        self.timers.next_at().is_some_and(|t| t <= now)
    }

    // Inlined into its one caller, as the loop it came from was (heartbeats take ~2% more
    // instructions with a call per timer).
    #[inline(always)]
    fn fire(&mut self, t: Timer, now: SimTime, client: &mut dyn Client) {
        match t {
            Timer::RenewLease(i) | Timer::PostStatus(i) => {
                let current = self.nodes[i].up && self.nodes[i].exists;
                let epoch_ok = self.nodes[i].timer_epoch == Some(self.nodes[i].epoch);
                if !current || !epoch_ok {
                    return;
                }
                if let Timer::RenewLease(_) = t {
                    self.renew_lease(i, now, client);
                    self.timers
                        .push_periodic(now + LEASE_RENEW_INTERVAL, Timer::RenewLease(i));
                } else {
                    self.post_status(i, now, client);
                    self.timers
                        .push_periodic(now + NODE_STATUS_REPORT_INTERVAL, Timer::PostStatus(i));
                }
            }
            Timer::StartPod(p) => self.start_pod(p, now, client),
            Timer::StopPod(p) => self.stop_pod(p, now, client),
            Timer::EndPod(p) => self.end_pod(p, now, client),
            Timer::ResyncPods(i) => {
                if self.nodes[i].up && self.nodes[i].exists {
                    self.resync_pods(i, now, client);
                }
            }
        }
    }
}

/// Whether the agents have pods to start or stop (as opposed to periodic heartbeats only).
impl NodeAgents {
    pub fn has_pod_work(&self) -> bool {
        self.pod_index.values().any(|&i| {
            let p = &self.pods[i];
            (p.start_at.is_some() || p.stop_at.is_some() || p.end_at.is_some())
                && self.node_up(&p.node)
        })
    }
}

#[cfg(test)]
mod tests;

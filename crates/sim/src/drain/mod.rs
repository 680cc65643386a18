//! `kubectl drain` over virtual time (upstream `k8s.io/kubectl/pkg/drain` and
//! `pkg/cmd/drain`): a drain step cordons the node, lists its pods, runs kubectl's filters
//! ([`filters`]) and, unless they refuse a pod, evicts every pod left through `pods/eviction`
//! and waits for them to be gone.
//!
//! kubectl runs one goroutine per pod: evict; on 429 TooManyRequests (a PodDisruptionBudget
//! allows no disruption) sleep 5 s, GET the pod again and retry; on success poll the pod
//! every second (the first poll at once) until it is gone or has another UID. A global timeout
//! (`--timeout`, 0 = none) is checked before each attempt and ends the polls; a sleeping retry
//! notices it only when it wakes. Here each pod is a small state machine whose waits are
//! timers: [`Drain::next_wakeup`] tells the engine when the next attempt or poll is due and
//! [`Drain::step`] makes them, through the same [`Client`] as every component. The
//! engine keeps the drains in progress in a [`Drains`], runs them after the node agents in a
//! round of work, and each drain writes one `DrainResult` record when it ends (or when the
//! run ends first).

pub mod filters;
mod result;

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::sync::Arc;

use kubeplane_api::{ApiError, Client, DeleteOptions, Kind, Object, ObjectKey, StoredNode};
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;

use filters::Reason;

/// kubectl drain's `EvictErrorRetryDelay`.
pub const EVICT_RETRY_DELAY: SimDuration = SimDuration(5_000_000_000);
/// The interval of kubectl's wait for deleted pods.
pub const POLL_INTERVAL: SimDuration = SimDuration(1_000_000_000);

/// The options of `kubectl drain`, with its defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrainOptions {
    pub node: String,
    /// `--ignore-daemonsets`.
    pub ignore_daemon_sets: bool,
    /// `--delete-emptydir-data`.
    pub delete_empty_dir_data: bool,
    /// `--force`: delete pods that declare no controller (and orphaned DaemonSet pods).
    pub force: bool,
    /// `--grace-period`: negative (the default, -1) uses each pod's own
    /// terminationGracePeriodSeconds; 0 deletes at once.
    pub grace_period_seconds: i64,
    /// `--timeout`: zero (the default) waits for ever (the run's end still ends it).
    pub timeout: SimDuration,
    /// `--pod-selector`: a label selector in kubectl's string form; empty selects every pod.
    pub pod_selector: String,
    /// `--disable-eviction`: DELETE the pods instead of evicting them (budgets are bypassed).
    pub disable_eviction: bool,
}

impl Default for DrainOptions {
    fn default() -> Self {
        DrainOptions {
            node: String::new(),
            ignore_daemon_sets: false,
            delete_empty_dir_data: false,
            force: false,
            grace_period_seconds: -1,
            timeout: SimDuration::ZERO,
            pod_selector: String::new(),
            disable_eviction: false,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    /// The next eviction attempt is due at `next`.
    Evict,
    /// Evicted (or deleted); the next poll is due at `next`.
    Wait,
    Done,
    Failed,
}

/// The last 429 a pod's eviction got.
#[derive(Clone, Debug)]
struct Blocked {
    since: SimTime,
    message: String,
    cause: Option<String>,
}

/// One pod the drain evicts.
#[derive(Clone, Debug)]
struct Target {
    namespace: String,
    name: String,
    uid: String,
    state: State,
    next: SimTime,
    attempts: u32,
    blocked: Option<Blocked>,
    evicted_at: Option<SimTime>,
    gone_at: Option<SimTime>,
}

impl Target {
    fn pod(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn key(&self) -> ObjectKey {
        ObjectKey::new(Kind::Pod, &self.namespace, &self.name)
    }
}

/// One drain in progress (or ended, until its record is written).
#[derive(Clone, Debug)]
pub struct Drain {
    opts: DrainOptions,
    started: SimTime,
    deadline: Option<SimTime>,
    targets: Vec<Target>,
    /// The filters' errors: (message, pod).
    refused: Vec<(String, String)>,
    /// The filters' warnings: (message, pod).
    warned: Vec<(String, String)>,
    /// Pods left alone: (pod, why).
    skipped: Vec<(String, String)>,
    /// The errors the drain ends with, in the order they happened.
    errors: Vec<String>,
    timed_out: bool,
    finished: Option<SimTime>,
}

/// The message of kubectl's NotFound for a node.
fn node_not_found(node: &str) -> String {
    format!("nodes {node:?} not found")
}

impl Drain {
    /// `kubectl drain NODE`: cordons the node (unless it is already), lists and filters its
    /// pods, then makes the first eviction attempts (or, with `disable_eviction`, the deletes)
    /// and the first polls, all at `now`. A node that does not exist is an error; refusals
    /// by the filters end the drain at once, having evicted nothing.
    pub fn start(
        opts: DrainOptions,
        now: SimTime,
        client: &mut dyn Client,
    ) -> Result<Drain, String> {
        let selector = kubeplane_core::labels::parse(&opts.pod_selector).map_err(|_| {
            "--pod-selector=<pod_selector> must be a valid label selector".to_string()
        })?;
        cordon(&opts.node, client)?;
        let pods: Vec<Arc<StoredPod>> = client
            .cache()
            .list(Kind::Pod)
            .filter_map(Object::as_pod)
            .filter(|p| p.node_name() == Some(&opts.node))
            .filter(|p| {
                let empty = Default::default();
                selector.matches(p.labels().unwrap_or(&empty))
            })
            .cloned()
            .collect();
        let mut drain = Drain {
            deadline: (opts.timeout > SimDuration::ZERO).then(|| now + opts.timeout),
            opts,
            started: now,
            targets: Vec::new(),
            refused: Vec::new(),
            warned: Vec::new(),
            skipped: Vec::new(),
            errors: Vec::new(),
            timed_out: false,
            finished: None,
        };
        drain.filter(&pods, now, client);
        if !drain.refused.is_empty() {
            drain.errors = filters::errors(&drain.refused);
            drain.finished = Some(now);
            return Ok(drain);
        }
        if drain.opts.disable_eviction {
            drain.delete_all(now, client);
        }
        drain.step(now, client);
        Ok(drain)
    }

    /// Sorts the node's pods by kubectl's filters into targets, refusals and skipped pods.
    fn filter(&mut self, pods: &[Arc<StoredPod>], now: SimTime, client: &mut dyn Client) {
        let ds_type =
            kubeplane_api::types::builtin("apps/v1", "DaemonSet").expect("a built-in kind");
        for pod in pods {
            let namespace = pod
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into());
            let name = pod.metadata.name.clone().unwrap_or_default();
            let id = format!("{namespace}/{name}");
            let status = filters::filter_pod(pod, &self.opts, &mut |ns, n| {
                client
                    .get(&ObjectKey::new(Kind::Other(ds_type), ns, n))
                    .is_ok()
            });
            match status.reason {
                Reason::Error => self.refused.push((status.message.clone(), id.clone())),
                Reason::Warning => self.warned.push((status.message.clone(), id.clone())),
                Reason::Okay | Reason::Skip => {}
            }
            if status.delete {
                self.targets.push(Target {
                    namespace,
                    name,
                    uid: pod.metadata.uid.clone().unwrap_or_default(),
                    state: State::Evict,
                    next: now,
                    attempts: 0,
                    blocked: None,
                    evicted_at: None,
                    gone_at: None,
                });
            } else if status.reason != Reason::Error {
                let why = match status.reason {
                    Reason::Skip => "mirror pod".to_string(),
                    _ => status.message,
                };
                self.skipped.push((id, why));
            }
        }
    }

    fn delete_options(&self) -> DeleteOptions {
        DeleteOptions {
            grace_period_secs: (self.opts.grace_period_seconds >= 0)
                .then_some(self.opts.grace_period_seconds),
            ..DeleteOptions::default()
        }
    }

    /// kubectl's `deletePods`: every pod deleted in order (the first error other than
    /// NotFound ends the drain), then one wait for all of them.
    fn delete_all(&mut self, now: SimTime, client: &mut dyn Client) {
        let opts = self.delete_options();
        for i in 0..self.targets.len() {
            match client.delete(&self.targets[i].key(), opts.clone()) {
                Ok(_) => self.targets[i].evicted_at = Some(now),
                Err(e) if e.is_not_found() => {}
                Err(e) => {
                    self.errors.push(e.to_string());
                    for t in &mut self.targets {
                        if t.state != State::Done {
                            t.state = State::Failed;
                        }
                    }
                    return;
                }
            }
            self.targets[i].state = State::Wait;
        }
    }

    /// The next instant an attempt or poll is due (`None` once the drain has ended).
    pub fn next_wakeup(&self) -> Option<SimTime> {
        if self.finished.is_some() {
            return None;
        }
        self.targets
            .iter()
            .filter(|t| matches!(t.state, State::Evict | State::Wait))
            .map(|t| t.next)
            .min()
    }

    /// Whether the drain has ended (drained, failed or timed out).
    pub fn finished(&self) -> bool {
        self.finished.is_some()
    }

    /// Makes the attempts and polls due at `now`, in the order kubectl listed the pods; the
    /// drain ends when no pod is left to evict or wait for.
    pub fn step(&mut self, now: SimTime, client: &mut dyn Client) {
        if self.finished.is_some() {
            return;
        }
        for i in 0..self.targets.len() {
            if self.targets[i].next > now {
                continue;
            }
            match self.targets[i].state {
                State::Evict => self.attempt(i, now, client),
                State::Wait => self.poll(i, now, client),
                State::Done | State::Failed => {}
            }
        }
        if self
            .targets
            .iter()
            .all(|t| matches!(t.state, State::Done | State::Failed))
        {
            self.finished = Some(now);
        }
    }

    fn past_deadline(&self, now: SimTime) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    fn fail(&mut self, i: usize, error: String) {
        self.targets[i].state = State::Failed;
        self.errors.push(error);
    }

    /// One eviction attempt of kubectl's per-pod loop.
    fn attempt(&mut self, i: usize, now: SimTime, client: &mut dyn Client) {
        let t = &self.targets[i];
        let (ns, name) = (t.namespace.clone(), t.name.clone());
        if self.past_deadline(now) {
            self.timed_out = true;
            let timeout = kubeplane_core::duration::format_duration(self.opts.timeout);
            return self.fail(
                i,
                format!("error when evicting pods/{name:?} -n {ns:?}: global timeout reached: {timeout}"),
            );
        }
        if t.attempts > 0 {
            // After a 429 kubectl GETs the pod again and evicts what it finds.
            if let Ok(Object::Pod(p)) = client.get(&t.key()) {
                self.targets[i].uid = p.metadata.uid.clone().unwrap_or_default();
            }
        }
        self.targets[i].attempts += 1;
        match client.evict(&ns, &name, self.delete_options()) {
            Ok(()) => {
                self.targets[i].evicted_at = Some(now);
                self.targets[i].state = State::Wait;
                self.poll(i, now, client);
            }
            Err(e) if e.is_not_found() => {
                self.targets[i].state = State::Done;
                self.targets[i].gone_at = Some(now);
            }
            Err(ApiError::TooManyRequests { message, cause }) => {
                let t = &mut self.targets[i];
                let since = t.blocked.as_ref().map_or(now, |b| b.since);
                t.blocked = Some(Blocked {
                    since,
                    message,
                    cause,
                });
                t.next = now + EVICT_RETRY_DELAY;
            }
            Err(e) => self.fail(
                i,
                format!("error when evicting pods/{name:?} -n {ns:?}: {e}"),
            ),
        }
    }

    /// One poll of kubectl's wait for a deleted pod: gone, or replaced by a pod of another
    /// UID, ends the wait; the global timeout ends it with an error.
    fn poll(&mut self, i: usize, now: SimTime, client: &mut dyn Client) {
        if self.past_deadline(now) {
            self.timed_out = true;
            let t = &self.targets[i];
            let error = if self.opts.disable_eviction {
                "context deadline exceeded".to_string()
            } else {
                format!(
                    "error when waiting for pod {:?} in namespace {:?} to terminate: context deadline exceeded",
                    t.name, t.namespace
                )
            };
            return self.fail(i, error);
        }
        let t = &mut self.targets[i];
        let gone = match client.get(&t.key()) {
            Ok(Object::Pod(p)) => p.metadata.uid.as_deref().unwrap_or("") != t.uid,
            Ok(_) => false,
            Err(e) => e.is_not_found(),
        };
        if gone {
            t.state = State::Done;
            t.gone_at = Some(now);
        } else {
            let next = now + POLL_INTERVAL;
            t.next = self.deadline.map_or(next, |d| next.min(d));
        }
    }
}

/// kubectl's cordon: `spec.unschedulable` set, unless it already is.
fn cordon(node: &str, client: &mut dyn Client) -> Result<(), String> {
    let key = ObjectKey::new(Kind::Node, "", node);
    let Ok(Object::Node(n)) = client.get(&key) else {
        return Err(node_not_found(node));
    };
    if n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        return Ok(());
    }
    let mut n = StoredNode::clone(&n);
    n.metadata.resource_version = None;
    n.spec.get_or_insert_with(Default::default).unschedulable = Some(true);
    client
        .update(Object::Node(Arc::new(n)))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The drains of a run that have not ended yet, in the order they started.
#[derive(Default)]
pub struct Drains {
    active: Vec<Drain>,
}

impl Drains {
    /// Starts a drain at `now`; one that ends at once writes its record at once.
    pub fn start(
        &mut self,
        opts: DrainOptions,
        now: SimTime,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let drain = Drain::start(opts, now, client)?;
        self.active.push(drain);
        self.close_finished(now, client);
        Ok(())
    }

    /// The next instant any drain has an attempt or a poll due.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.active.iter().filter_map(Drain::next_wakeup).min()
    }

    /// Makes the attempts and polls due at `now`; the drains that end write their records.
    pub fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        for d in &mut self.active {
            if d.next_wakeup().is_some_and(|t| t <= now) {
                d.step(now, client);
            }
        }
        self.close_finished(now, client);
    }

    fn close_finished(&mut self, now: SimTime, client: &mut dyn Client) {
        let (done, active): (Vec<Drain>, Vec<Drain>) = std::mem::take(&mut self.active)
            .into_iter()
            .partition(Drain::finished);
        self.active = active;
        for d in done {
            client.emit_record(d.record(now));
        }
    }

    /// The run ends: every drain still in progress writes its record, as not finished.
    pub fn end(&mut self, now: SimTime, client: &mut dyn Client) {
        for d in std::mem::take(&mut self.active) {
            client.emit_record(d.record(now));
        }
    }
}

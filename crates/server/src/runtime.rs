//! The control plane inside the server: the scheduler, the controller manager's controllers
//! and a simulated kubelet for every Node, driven on the server's clock by one thread.
//!
//! The thread follows the storage's event log with its own cursor (its informers), hands each
//! change to every component as the simulator does (a relist, at start or after the cursor
//! fell behind the storage's window, replaces the informer's cache: see [`crate::reflector`];
//! a failed list or watch is retried with upstream's reflector backoff until the server
//! stops), runs the components whose work is due at the clock's current instant until none
//! is, stores the events they recorded as `v1` Events, and sleeps until the next component's
//! wake-up or the next change, whichever comes first.
//! The Node annotation `kubeplane.io/agent` (`down`, `none`) stops a node's agent. A
//! Scenario's steps in the FILEs run on the server's clock, through the simulator's step verbs.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubeplane_api::{Client, Component, EventType, Informer, Kind, Object, WatchEvent};
use kubeplane_core::SimTime;
use kubeplane_registry::StorageClient;
use kubeplane_scheduler::Scheduler;
use kubeplane_sim::agents::NodeAgents;
use kubeplane_sim::drain::Drains;
use kubeplane_sim::scenario::{Step, StepAction};
use kubeplane_storage::{Event, EventKind, ListOptions, Prefix, Storage, StorageError, Watcher};

use crate::clock::ServerClock;
use crate::reflector::{pause, relist, Backoff};
use crate::state::{flush_events, State};

/// The annotation that controls a node's simulated agent.
pub const AGENT_ANNOTATION: &str = "kubeplane.io/agent";

/// The field managers the components' writes record in managedFields: the User-Agent prefix
/// of upstream's kube-controller-manager, kubelet and kube-scheduler. A Scenario's steps and
/// `drain` steps, and the Events the components record, write without one.
const CONTROLLER_MANAGER: &str = "kube-controller-manager";
const KUBELET: &str = "kubelet";
const SCHEDULER: &str = "kube-scheduler";

/// Pods the scheduler may schedule in one round before the changes of the round are
/// delivered to the components.
const SCHEDULING_BATCH: usize = 64;

/// Rounds at one instant after which the loop reads the clock again: a backlog (or a
/// component that keeps asking to run at the same instant) must not hold the cluster's time.
const MAX_ROUNDS: u32 = 10_000;

/// The components and their thread's client.
pub struct ControlPlane {
    pub client: StorageClient,
    pub scheduler: Scheduler,
    pub controllers: Vec<Box<dyn Component + Send>>,
    pub periodic: Vec<Box<dyn Component + Send>>,
    pub agents: NodeAgents,
    /// Nodes whose agent the annotation has stopped.
    stopped_agents: std::collections::BTreeSet<String>,
    /// The cursor fell behind the storage's window.
    behind: bool,
    /// The Scenario's steps still to run, in time order.
    steps: std::collections::VecDeque<Step>,
    /// `drain` steps in progress.
    drains: Drains,
    /// What the components have been told, as a relist replaces it.
    informer: Informer,
    /// Every kind the components have been told of.
    kinds: BTreeSet<Kind>,
    /// Spaces the attempts after a failed list or watch.
    backoff: Backoff,
    /// The origin of the backoff's monotonic time.
    started: Instant,
    /// With several servers on one etcd: the lease this control plane runs under; it stops
    /// once the lease is lost.
    pub leader: Option<Arc<crate::leader::Leadership>>,
}

impl ControlPlane {
    pub fn new(
        client: StorageClient,
        scheduler: Scheduler,
        controllers: Vec<Box<dyn Component + Send>>,
        periodic: Vec<Box<dyn Component + Send>>,
        agents: NodeAgents,
    ) -> ControlPlane {
        ControlPlane {
            client,
            scheduler,
            controllers,
            periodic,
            agents,
            stopped_agents: Default::default(),
            behind: false,
            steps: Default::default(),
            drains: Drains::default(),
            informer: Informer::new(),
            kinds: BTreeSet::new(),
            backoff: Backoff::new(0),
            started: Instant::now(),
            leader: None,
        }
    }

    /// Seeds the jitter of the list-and-watch backoff (the Scenario's seed).
    pub fn with_backoff_seed(mut self, seed: u64) -> ControlPlane {
        self.backoff = Backoff::new(seed);
        self
    }

    /// Runs a Scenario's steps at their instants of the server's clock (expectations are
    /// `simulate`'s: they are left out).
    pub fn with_steps(mut self, steps: Vec<Step>) -> ControlPlane {
        self.steps = steps
            .into_iter()
            .filter(|s| !matches!(s.action, StepAction::Expect(_)))
            .collect();
        self
    }

    fn all(&self) -> impl Iterator<Item = &dyn Component> {
        self.periodic
            .iter()
            .chain(self.controllers.iter())
            .map(|c| c.as_ref() as &dyn Component)
            .chain([
                &self.agents as &dyn Component,
                &self.scheduler as &dyn Component,
            ])
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        let step = self.steps.front().map(|s| s.at);
        let components = self.all().filter_map(|c| c.next_wakeup());
        components
            .chain(step)
            .chain(self.drains.next_wakeup())
            .min()
    }

    /// Applies the steps due at `now`, all of them before any component reacts (the steps of
    /// one instant are one change, as in the simulator). A step that fails is reported on
    /// stderr, as `simulate` reports a `StepFailed` record, and the others go on.
    fn apply_due_steps(&mut self, now: SimTime) {
        self.client.now = now;
        self.client.set_field_manager(None);
        while self.steps.front().is_some_and(|s| s.at <= now) {
            let Some(step) = self.steps.pop_front() else {
                break;
            };
            let mut target = kubeplane_sim::verbs::Target {
                client: &mut self.client,
                agents: &mut self.agents,
                drains: &mut self.drains,
            };
            if let Err(message) = target.apply(&step.action, now) {
                eprintln!(
                    "kubeplane serve: step {} ({}) at {}: {message}",
                    step.index + 1,
                    step.action.name(),
                    kubeplane_core::duration::format_duration(step.at - SimTime::ZERO)
                );
            }
        }
    }

    /// The components' counters (upstream metric names).
    pub fn metrics(&self) -> Vec<(String, u64)> {
        self.all().flat_map(|c| c.metrics()).collect()
    }

    /// Hands a change from the storage's log to the components and the informer.
    fn observe(&mut self, ev: &Event<Object>, now: SimTime) {
        let we = WatchEvent {
            type_: match ev.kind {
                EventKind::Added => EventType::Added,
                EventKind::Modified => EventType::Modified,
                EventKind::Deleted => EventType::Deleted,
            },
            object: ev.object().value.clone(),
            old: ev.prev.as_ref().map(|v| v.value.clone()),
            resource_version: ev.revision,
        };
        self.kinds.insert(we.object.kind());
        self.informer.apply(we.clone());
        self.deliver(&we, now);
    }

    fn deliver(&mut self, we: &WatchEvent, now: SimTime) {
        if we.object.kind() == Kind::Node {
            self.follow_agent_annotation(we, now);
        }
        for c in self.periodic.iter_mut().chain(self.controllers.iter_mut()) {
            c.observe(we, now);
        }
        self.scheduler.observe(we, now);
        self.agents.observe(we, now);
    }

    /// Stops or restarts a node's agent as its `kubeplane.io/agent` annotation says.
    fn follow_agent_annotation(&mut self, ev: &WatchEvent, now: SimTime) {
        let name = ev.object.name().to_string();
        let value = ev
            .object
            .meta()
            .annotations
            .as_ref()
            .and_then(|a| a.get(AGENT_ANNOTATION))
            .map(String::as_str);
        let stop = ev.type_ != EventType::Deleted && matches!(value, Some("down" | "none"));
        if stop && self.stopped_agents.insert(name.clone()) {
            self.agents.set_node_down(&name);
        } else if !stop && self.stopped_agents.remove(&name) && ev.type_ != EventType::Deleted {
            self.agents.set_node_up(&name, now);
        }
    }

    /// Runs every component with work due at `now` until none has any, delivering the changes
    /// they make as they go (the simulator's settle, with a bound instead of an error).
    fn settle(&mut self, now: SimTime, cursor: &mut dyn Watcher<Object>) {
        self.client.now = now;
        let mut batch = Vec::new();
        for _ in 0..MAX_ROUNDS {
            let mut delivered = false;
            loop {
                batch.clear();
                match cursor.try_next_batch(&mut batch, 1024) {
                    Ok(0) => break,
                    Err(_) => {
                        // Behind the storage's window: the caller lists again.
                        self.behind = true;
                        return;
                    }
                    Ok(_) => {
                        delivered = true;
                        for ev in &batch {
                            self.observe(ev, now);
                        }
                    }
                }
            }
            if delivered {
                // The components read through the client's cache: it must hold what they were
                // just told (a pod created already bound is started by its node's agent,
                // which looks it up there).
                self.client.sync();
            }
            let mut ran = false;
            for c in self.periodic.iter_mut().chain(self.controllers.iter_mut()) {
                if c.next_wakeup().is_some_and(|t| t <= now) {
                    self.client.set_field_manager(Some(CONTROLLER_MANAGER));
                    c.run(now, &mut self.client);
                    ran = true;
                }
            }
            if self.agents.next_wakeup().is_some_and(|t| t <= now) {
                self.client.set_field_manager(Some(KUBELET));
                self.agents.run(now, &mut self.client);
                ran = true;
            }
            if self.drains.next_wakeup().is_some_and(|t| t <= now) {
                self.client.set_field_manager(None);
                self.drains.run(now, &mut self.client);
                ran = true;
            }
            if !ran && self.scheduler.next_wakeup().is_some_and(|t| t <= now) {
                self.client.set_field_manager(Some(SCHEDULER));
                self.schedule_batch(now);
                ran = true;
            }
            self.client.set_field_manager(None);
            flush_events(&mut self.client);
            if !ran && !delivered {
                return;
            }
        }
        // Not settled yet (a large backlog, one pod per scheduling round): the caller's loop
        // comes back at once, after a look at the clock.
    }

    /// Runs the scheduler for up to [`SCHEDULING_BATCH`] pods while it has work due. As
    /// upstream's, the scheduler goes on with the next pod while the changes it made are still
    /// on their way to its informer (its cache assumes the pods it bound), and schedules
    /// while new pods keep arriving: the simulator's rule, which runs it only once nothing
    /// else is left to deliver, would hold every binding back until a stream of creations
    /// ends.
    fn schedule_batch(&mut self, now: SimTime) {
        for _ in 0..SCHEDULING_BATCH {
            self.scheduler.run(now, &mut self.client);
            if self.scheduler.next_wakeup().is_none_or(|t| t > now) {
                break;
            }
        }
    }

    /// Lists every stored object, delivers the difference from what the components were
    /// told ([`relist`]: at start every object is Added) and returns a watch from the list's
    /// revision (a restart on a long-lived `--data-dir` does not replay the history). A failed
    /// list or watch (storage unavailable, or compacted between the two) is retried after the
    /// backoff; `None` once `stopping` is set.
    pub fn list_and_watch(
        &mut self,
        storage: &dyn Storage<Object>,
        clock: &ServerClock,
        stopping: &AtomicBool,
    ) -> Option<Box<dyn Watcher<Object>>> {
        while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
            match list_then_watch(storage) {
                Ok((items, revision, cursor)) => {
                    let events = relist(&mut self.informer, &mut self.kinds, items, revision);
                    let now = clock.now();
                    self.client.now = now;
                    for ev in &events {
                        self.deliver(ev, now);
                    }
                    return Some(cursor);
                }
                Err(e) => {
                    let wait = self.backoff.next(self.started.elapsed());
                    eprintln!(
                        "kubeplane serve: the control plane's list and watch failed: {e}; retrying in {:.1}s",
                        wait.as_secs_f64()
                    );
                    if !pause(stopping, wait) {
                        return None;
                    }
                }
            }
        }
        None
    }

    /// Runs until the server stops.
    pub fn run(mut self, state: Arc<State>) {
        let Some(mut cursor) = self.list_and_watch(state.storage(), &state.clock, &state.stopping)
        else {
            return;
        };
        let mut published = std::time::Instant::now();
        let leads = |cp: &ControlPlane| cp.leader.as_ref().is_none_or(|l| l.leading());
        while !state.is_stopping() && leads(&self) {
            let now = state.clock.now();
            if self.steps.front().is_some_and(|s| s.at <= now) {
                self.settle(now, cursor.as_mut());
                self.apply_due_steps(now);
            }
            self.settle(now, cursor.as_mut());
            if std::mem::take(&mut self.behind) {
                eprintln!("kubeplane serve: the control plane fell behind the storage's window; listing again");
                match self.list_and_watch(state.storage(), &state.clock, &state.stopping) {
                    Some(c) => cursor = c,
                    None => return,
                }
            }
            if published.elapsed() >= Duration::from_secs(1) {
                if let Ok(mut m) = state.component_metrics.lock() {
                    *m = self.metrics();
                }
                published = std::time::Instant::now();
            }
            let wait = self
                .next_wakeup()
                .map(|t| state.clock.wall_until(t))
                .unwrap_or(Duration::from_millis(200))
                .min(Duration::from_millis(200));
            if !wait.is_zero() {
                // Wakes early for a change; the change is delivered at the next settle.
                if let Ok(Some(ev)) = cursor.wait_next(wait) {
                    let now = state.clock.now();
                    self.client.now = now;
                    self.observe(&ev, now);
                    self.client.sync();
                }
            }
        }
    }

    /// The client the components write through (its cache is what their listers read).
    pub fn client(&mut self) -> &mut dyn Client {
        &mut self.client
    }
}

/// Every stored object and the revision it was read at, with a watch from that revision.
#[allow(clippy::type_complexity)]
fn list_then_watch(
    storage: &dyn Storage<Object>,
) -> Result<(Vec<Object>, u64, Box<dyn Watcher<Object>>), StorageError> {
    let page = storage.list(&Prefix::All, &ListOptions::default())?;
    let cursor = storage.watch(&Prefix::All, Some(page.revision))?;
    let items = page.items.into_iter().map(|(_, v)| v.value).collect();
    Ok((items, page.revision, cursor))
}

#[cfg(test)]
mod tests;

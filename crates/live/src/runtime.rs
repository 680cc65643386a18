//! The scheduling loop and the API-call workers.
//!
//! One thread owns the scheduler and its [`LiveClient`] (whose informer is the lister view):
//! it takes the reflectors' events, relists and the workers' results from one channel, hands
//! each change to the scheduler, and runs the scheduler while it has work due and this process
//! leads. The bindings and status patches the scheduler queues (its API-call dispatcher,
//! drained by the runtime) go to worker threads, each with a client of its own: the loop never
//! waits on the network for them, and a finished call comes back as a message, which resumes
//! its binding cycle. Events the scheduler records go to the event task.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubeplane_api::{ApiError, Cache, Component, Kind, Object, WatchEvent};
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;
use kubeplane_scheduler::api_dispatcher::{ApiCall, InFlightCall};
use kubeplane_scheduler::Scheduler;

use crate::attempts::{AttemptMetrics, Step};
use crate::client::LiveClient;
use crate::clock::LiveClock;
use crate::health::Health;

/// What reaches the scheduling loop.
pub enum Msg {
    /// A watched change, as the server sent it (no old object).
    Event(WatchEvent),
    /// A complete list of one kind (at start, and after a lost watch).
    Relist(Kind, Vec<Object>),
    /// A queued call a worker has made.
    CallDone(InFlightCall, Result<(), ApiError>),
    /// This process took (`true`) or lost (`false`) the lease.
    Leading(bool),
    /// SIGINT or SIGTERM.
    Stop,
}

/// How the loop ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    Stopped,
    LeaseLost,
}

/// Scheduler runs in a row before the loop looks at its messages again.
const RUNS_PER_TURN: u32 = 64;

/// The scheduling loop's state.
pub struct Loop {
    pub scheduler: Scheduler,
    pub client: LiveClient,
    pub clock: LiveClock,
    /// The kinds whose reflector has listed.
    pub synced: BTreeSet<Kind>,
    /// Whether this process leads (always, without leader election).
    pub leading: Arc<AtomicBool>,
    /// The scheduler names of the profiles.
    pub profiles: Vec<String>,
    pub calls: Sender<InFlightCall>,
    pub events: tokio::sync::mpsc::UnboundedSender<serde_json::Value>,
    pub health: Arc<Health>,
    pub host: String,
    /// When the metrics were last published.
    pub published: Option<SimTime>,
    /// The attempts by profile and result, with their durations.
    pub attempts: AttemptMetrics,
}

/// The scheduler's attempt counters, in [`crate::attempts::RESULTS`] order.
fn counters(scheduler: &Scheduler) -> [u64; 3] {
    let mut out = [0; 3];
    for (sample, n) in scheduler.metrics() {
        let Some(labels) = sample.strip_prefix("scheduler_schedule_attempts_total") else {
            continue;
        };
        for (i, r) in crate::attempts::RESULTS.iter().enumerate() {
            if labels == format!("{{result=\"{r}\"}}") {
                out[i] = n;
            }
        }
    }
    out
}

impl Loop {
    fn all_synced(&self) -> bool {
        crate::reflector::KINDS
            .iter()
            .all(|k| self.synced.contains(k))
    }

    fn may_schedule(&self) -> bool {
        self.all_synced() && self.leading.load(Ordering::SeqCst)
    }

    /// Takes one message; `Some` when the loop must end.
    fn handle(&mut self, msg: Msg, now: SimTime) -> Option<Exit> {
        match msg {
            Msg::Event(ev) => {
                let ev = self.client.informer.apply(ev);
                if ev.type_ == kubeplane_api::EventType::Deleted && ev.object.kind() == Kind::Pod {
                    let key = ev.object.key();
                    self.attempts
                        .forget(&format!("{}/{}", key.namespace, key.name));
                }
                self.scheduler.observe(&ev, now);
            }
            Msg::Relist(kind, list) => {
                let rv = list.iter().map(crate::convert::resource_version).max();
                let rv = rv.unwrap_or(0).max(self.client.informer.resource_version());
                for ev in self.client.informer.replace(kind, list, rv) {
                    self.scheduler.observe(&ev, now);
                }
                self.synced.insert(kind);
                if self.all_synced() {
                    self.health.synced.store(true, Ordering::SeqCst);
                }
            }
            Msg::CallDone(call, result) => {
                let before = counters(&self.scheduler);
                self.scheduler
                    .finish_api_call(now, &mut self.client, call, result);
                self.dispatch(None, before);
            }
            Msg::Leading(true) => {}
            Msg::Leading(false) => return Some(Exit::LeaseLost),
            Msg::Stop => return Some(Exit::Stopped),
        }
        None
    }

    /// Hands the queued calls to the workers and the recorded events to the event task, and
    /// counts the attempts of the scheduler step (a run begun at `run_start`, or a finished
    /// call) whose counters were `before`.
    fn dispatch(&mut self, run_start: Option<SimTime>, before: [u64; 3]) {
        if self.leading.load(Ordering::SeqCst) {
            while let Some(call) = self.scheduler.pop_api_call() {
                if let (ApiCall::PodBinding(b), Some(t)) = (&call.call, run_start) {
                    let pod = format!("{}/{}", b.pod.namespace, b.pod.name);
                    self.attempts.binding_queued(pod, t);
                }
                let _ = self.calls.send(call);
            }
        }
        let after = counters(&self.scheduler);
        let mut step = Step {
            started: run_start,
            deltas: std::array::from_fn(|i| after[i].saturating_sub(before[i])),
            pods: Vec::new(),
        };
        let at = self.clock.timestamp();
        for ev in self.client.take_events() {
            let pod = (ev.kind() == "Pod")
                .then(|| self.client.informer.get_pod(ev.namespace(), ev.name()))
                .flatten();
            let controller = pod
                .and_then(|p| p.spec.as_ref()?.scheduler_name.clone())
                .filter(|n| self.profiles.contains(n))
                .unwrap_or_else(|| ev.source().to_string());
            if ev.kind() == "Pod" && matches!(ev.reason(), "Scheduled" | "FailedScheduling") {
                let key = format!("{}/{}", ev.namespace(), ev.name());
                step.pods
                    .push((key, controller.clone(), ev.reason() == "Scheduled"));
            }
            let uid = pod.and_then(|p| p.metadata.uid.as_deref());
            let obj = crate::events::event_object(&ev, at, &controller, &self.host, uid);
            let _ = self.events.send(obj);
        }
        self.attempts.record(step, self.clock.now());
    }

    /// Publishes the metrics at most once a second.
    fn publish(&mut self, now: SimTime) {
        if self
            .published
            .is_some_and(|t| now < t + SimDuration::from_secs(1))
        {
            return;
        }
        self.published = Some(now);
        let leading = self.leading.load(Ordering::SeqCst);
        let text = crate::metrics::render(&self.scheduler, leading, &self.attempts);
        if let Ok(mut m) = self.health.metrics.lock() {
            *m = text;
        }
    }

    /// Runs until SIGINT/SIGTERM, a lost lease, or the channel's end.
    pub fn run(mut self, rx: Receiver<Msg>) -> Exit {
        loop {
            let now = self.clock.now();
            while let Ok(msg) = rx.try_recv() {
                if let Some(exit) = self.handle(msg, now) {
                    return exit;
                }
            }
            let mut ran = 0;
            while ran < RUNS_PER_TURN
                && self.may_schedule()
                && self.scheduler.next_wakeup().is_some_and(|t| t <= now)
            {
                let (start, before) = (self.clock.now(), counters(&self.scheduler));
                self.scheduler.run(now, &mut self.client);
                self.dispatch(Some(start), before);
                ran += 1;
            }
            let before = counters(&self.scheduler);
            self.dispatch(None, before);
            self.publish(now);
            if ran > 0 {
                continue;
            }
            let wait = match self.scheduler.next_wakeup() {
                Some(t) if self.may_schedule() => self.clock.until(t),
                _ => Duration::from_secs(1),
            };
            match rx.recv_timeout(wait.min(Duration::from_secs(1))) {
                Ok(msg) => {
                    if let Some(exit) = self.handle(msg, self.clock.now()) {
                        return exit;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Exit::Stopped,
            }
        }
    }
}

/// A worker: makes the calls it is handed, one at a time, and sends each back with its result.
/// A status patch is computed from the pod status the call saw (upstream's PatchPodStatus
/// compares the scheduler's view with the wanted status).
pub fn worker(mut client: LiveClient, calls: Arc<Mutex<Receiver<InFlightCall>>>, tx: Sender<Msg>) {
    loop {
        let next = match calls.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(call) = next else {
            return;
        };
        client.base_status = match &call.call {
            ApiCall::PodStatusPatch(c) => Some(c.pod_status.clone()),
            ApiCall::PodBinding(_) => None,
        };
        let result = call.call.execute(&mut client);
        if tx.send(Msg::CallDone(call, result)).is_err() {
            return;
        }
    }
}

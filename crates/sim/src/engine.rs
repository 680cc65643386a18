//! The discrete-event loop: store events, component timers and scenario steps on one virtual
//! clock. Everything that happens at an instant happens in a fixed order, so a run is a pure
//! function of its input and seed.

mod record;

use std::collections::VecDeque;
use std::sync::Arc;

use kubeplane_core::features::FeatureGates;
use kubeplane_core::time::SimDuration;
use kubeplane_core::{EventRecord, SimTime};
use kubeplane_registry::{ApiClient, Sink};
use kubeplane_scheduler::api_dispatcher::ApiCallDrain;
use kubeplane_scheduler::Scheduler;
use kubeplane_store::{Client, Component, Kind, Object, Store, WatchEvent};
use serde_json::{json, Value};
use thiserror::Error;

use crate::agents::NodeAgents;
use crate::drain::Drains;
use crate::scenario::{Assertion, Input, Step, StepAction};
pub use record::{ExpectationRecord, Record};

/// A run without `duration` stops when nothing is pending, and at the latest after this long.
pub const DEFAULT_DURATION_CAP: SimDuration = SimDuration(24 * 3600 * 1_000_000_000);
/// How many rounds of work (one pass over the components with work due) one instant may take
/// before the run is declared stuck, besides [`ROUNDS_PER_POD`] per pod in the store. A
/// legitimate instant takes about one round per pod it creates, schedules or deletes (10,000
/// replicas created at once take about 10,100 rounds, which the per-pod share covers); a
/// livelock takes rounds without end, and every round adds records, so the budget also bounds
/// the time and memory a livelock takes: an evict-recreate loop of one pod stops in 0.1 s, and
/// one whose evicted pods linger Terminating (their rounds grow slower) in 0.6 s.
const BASE_ROUNDS_PER_INSTANT: u64 = 10_000;
/// The rounds an instant may take per pod in the store that is not being deleted, on top of
/// [`BASE_ROUNDS_PER_INSTANT`]. Pods being deleted do not count: an evict-recreate livelock
/// whose pods have a grace period leaves one more Terminating pod every round, and a budget
/// that grew with them would never run out.
const ROUNDS_PER_POD: u64 = 16;
/// Past [`BASE_ROUNDS_PER_INSTANT`], the pods are recounted every this many rounds.
const ROUNDS_PER_RECOUNT: u64 = 1024;
/// The most rounds any instant may take, however many pods there are.
const MAX_ROUNDS_PER_INSTANT: u64 = 20_000_000;

/// How many of their timers the node agents fire before the watch events of their writes are
/// delivered. All the pods bound at one instant start together one startup latency later (all
/// of them in phase 1 of the envelope workload); delivered only after the agents' run, every
/// pod's watch event would hold its superseded version meanwhile: two versions of every pod at
/// once. Each component still sees the same events in the same order, and none runs in between.
const AGENT_TIMERS_PER_DELIVERY: usize = 1024;

/// How many watch events an empty dispatch buffer keeps room for. A burst (every pod bound
/// or started at one instant) grows the buffers to its size; kept, that room would stay
/// allocated for the rest of the run (about 50 bytes per event, several events per pod).
const EVENT_BUFFER_KEPT: usize = 4096;

/// The components that observe watch events besides the node agents.
struct Observers<'a> {
    observers: &'a [(Vec<usize>, Vec<usize>)],
    periodic: &'a mut [Box<dyn Component + Send>],
    controllers: &'a mut [Box<dyn Component + Send>],
    scheduler: &'a mut Scheduler,
}

/// Runs the node agents' due timers. Their writes are delivered every so many timers (see
/// [`AGENT_TIMERS_PER_DELIVERY`]) to every component but the agents, which see theirs after
/// their run; no component runs in between.
fn run_agents(
    agents: &mut NodeAgents,
    mut observers: Observers<'_>,
    client: &mut ApiClient<'_>,
    (buf, deferred): (&mut Vec<WatchEvent>, &mut Vec<WatchEvent>),
    (now, per_delivery): (SimTime, usize),
) {
    while agents.run_some(now, client, per_delivery) {
        observers.deliver(client.store, buf, Err(deferred), now);
    }
    for ev in deferred.drain(..) {
        agents.observe(&ev, now);
    }
    deferred.shrink_to(EVENT_BUFFER_KEPT);
}

impl Observers<'_> {
    /// Delivers pending store events, in resourceVersion order, to these components and to
    /// the node agents (`Ok`), or keeps them for the agents (`Err`: they are running).
    #[inline]
    fn deliver(
        &mut self,
        store: &mut Store,
        buf: &mut Vec<WatchEvent>,
        mut agents: Result<&mut NodeAgents, &mut Vec<WatchEvent>>,
        now: SimTime,
    ) {
        let mut events = std::mem::take(buf);
        while store.has_events() {
            // The buffer given to the store is cleared first: bound what it keeps.
            events.clear();
            events.shrink_to(EVENT_BUFFER_KEPT);
            store.swap_events(&mut events);
            for ev in &events {
                match ev.object.kind().index().and_then(|i| self.observers.get(i)) {
                    // A simulated kind: the controllers that observe it.
                    Some((periodic, controllers)) => {
                        for &i in periodic {
                            self.periodic[i].observe(ev, now);
                        }
                        for &i in controllers {
                            self.controllers[i].observe(ev, now);
                        }
                    }
                    None => {
                        for c in self.periodic.iter_mut() {
                            c.observe(ev, now);
                        }
                        for c in self.controllers.iter_mut() {
                            c.observe(ev, now);
                        }
                    }
                }
                self.scheduler.observe(ev, now);
                match &mut agents {
                    Ok(agents) => agents.observe(ev, now),
                    Err(deferred) => deferred.push(WatchEvent {
                        old: None,
                        ..ev.clone()
                    }),
                }
            }
        }
        events.clear();
        events.shrink_to(EVENT_BUFFER_KEPT);
        *buf = events;
    }
}

#[derive(Debug, Error)]
pub enum SimError {
    #[error("the simulation did not settle at t={time}: after {rounds} rounds of work at this instant, components kept rescheduling work (a livelock): {components}; seed {seed}")]
    Livelock {
        time: SimTime,
        rounds: u64,
        /// The components that ran at this instant, busiest first, with their number of runs.
        components: String,
        seed: u64,
    },
    #[error("{0}")]
    Setup(String),
}

/// How a run is set up beyond its input.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub explain: bool,
    /// Overrides the scenario's duration.
    pub until: Option<SimDuration>,
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Recomputes node-local Filter and Score results every cycle, as upstream does, instead
    /// of reusing them for identical pods (the results are the same; tests compare the two).
    pub recompute_node_local: bool,
}

/// Where the components' events and explanation records go: the output records, and the
/// event list that expectations read. Both hold the same allocation of an event.
struct Output<'a> {
    records: &'a mut Vec<Record>,
    events: &'a mut Vec<Arc<EventRecord>>,
}

impl Sink for Output<'_> {
    fn event(&mut self, ev: EventRecord) {
        // Kept for the whole run (half a million at the envelope's full size); the record's
        // message is already cut to its text (a `Box<str>`).
        let ev = Arc::new(ev);
        self.events.push(Arc::clone(&ev));
        self.records.push(Record::Event(ev));
    }
    fn record(&mut self, record: Value) {
        self.records.push(Record::Json(Box::new(record)));
    }
}

/// A simulation in progress.
pub struct Simulation {
    pub store: Store,
    pub now: SimTime,
    scheduler: Scheduler,
    agents: NodeAgents,
    /// The `drain` steps in progress (kubectl's evictions, retries and waits).
    drains: Drains,
    /// Controllers whose timers mean pending work (not periodic housekeeping).
    controllers: Vec<Box<dyn Component + Send>>,
    /// Controllers that run periodically for ever (node lifecycle).
    periodic: Vec<Box<dyn Component + Send>>,
    /// For each simulated kind (by [`Kind::index`]), the periodic controllers and the
    /// controllers that observe its events ([`Component::observes`]), in their order.
    observers: Vec<(Vec<usize>, Vec<usize>)>,
    steps: VecDeque<Step>,
    end: Option<SimTime>,
    cap: SimTime,
    records: Vec<Record>,
    /// Every event of the run, in order; the output records share them.
    events: Vec<Arc<EventRecord>>,
    explain: bool,
    seed: u64,
    pub n_passed: usize,
    pub n_failed: usize,
    pub n_step_errors: usize,
    rounds: u64,
    /// The rounds the current instant may take, recounted past [`BASE_ROUNDS_PER_INSTANT`].
    round_budget: u64,
    /// How often each component ran at the current instant (periodic controllers, controllers,
    /// node agents, scheduler), to name the busy ones when an instant does not settle.
    runs_per_component: Vec<u64>,
    /// Reused buffer for dispatching watch events.
    event_buf: Vec<WatchEvent>,
    /// The watch events delivered while the node agents ran, for the agents to see after
    /// their run (without the old object, which the agents do not read).
    agents_deferred: Vec<WatchEvent>,
    /// [`AGENT_TIMERS_PER_DELIVERY`], or what a test set.
    agent_timers_per_delivery: usize,
    /// What the API server's binding does besides setting the node, by the run's gates.
    binding: kubeplane_registry::strategy::pod::BindFeatures,
}

/// The scheduler of a run: the last KubeSchedulerConfiguration given (or the defaults),
/// resolved under the run's feature gates, with the API calls of the SchedulerAsyncAPICalls
/// gate taking no time (queued calls run at the instant they are queued). Also used by
/// `kubeplane serve`.
pub fn build_scheduler(
    configs: &[(crate::scenario::Source, serde_json::Value)],
    features: &FeatureGates,
    seed: u64,
) -> Result<Scheduler, SimError> {
    let cfg = match configs.last() {
        Some((source, value)) => Some(
            kubeplane_scheduler::config::decode(value)
                .map_err(|e| SimError::Setup(format!("{source}: {e}")))?,
        ),
        None => None,
    };
    let setup = kubeplane_scheduler::config::resolve(cfg.as_ref(), features).map_err(|e| {
        let source = configs
            .last()
            .map(|(s, _)| s.to_string())
            .unwrap_or_else(|| "scheduler configuration".into());
        SimError::Setup(format!("{source}: {e}"))
    })?;
    let queue = kubeplane_scheduler::queue::SchedulingQueue::new(setup.queue);
    let mut scheduler = Scheduler::new(
        setup.frameworks,
        queue,
        setup.percentage_of_nodes_to_score,
        seed,
    );
    if features.enabled("SchedulerAsyncAPICalls") {
        scheduler.set_async_api_calls(Some(ApiCallDrain::AtOnce));
    }
    scheduler.follow_version(features.version());
    Ok(scheduler)
}

/// For each kind of [`Kind::ALL`], the indexes of the periodic controllers and of the
/// controllers that observe its events (the others' `observe` would ignore them).
fn observers(
    periodic: &[Box<dyn Component + Send>],
    controllers: &[Box<dyn Component + Send>],
) -> Vec<(Vec<usize>, Vec<usize>)> {
    let of = |cs: &[Box<dyn Component + Send>], kind: Kind| -> Vec<usize> {
        (0..cs.len()).filter(|&i| cs[i].observes(kind)).collect()
    };
    Kind::ALL
        .iter()
        .map(|&kind| (of(periodic, kind), of(controllers, kind)))
        .collect()
}

impl Simulation {
    /// Sets up the store with the initial objects (created at t=0 in file order), the
    /// scheduler with its configuration, the controllers and the node agents.
    pub fn new(input: Input, opts: &RunOptions) -> Result<Simulation, SimError> {
        let scenario = input.scenario;
        let seed = opts.seed.unwrap_or(scenario.seed);
        let features: FeatureGates = scenario.feature_gates.clone();
        let mut scheduler = build_scheduler(&input.scheduler_configs, &features, seed)?;
        if opts.recompute_node_local {
            scheduler.set_reuse_node_local(false);
        }
        let duration = opts.until.or(scenario.duration);
        let controllers = kubeplane_controllers::manager::controllers(&features);
        let periodic = kubeplane_controllers::manager::periodic_controllers(&features);
        let mut sim = Simulation {
            store: Store::new(seed, scenario.start_time),
            now: SimTime::ZERO,
            scheduler,
            agents: NodeAgents::new(scenario.pod_startup_latency).with_quiet_renewals(),
            drains: Drains::default(),
            observers: observers(&periodic, &controllers),
            controllers,
            periodic,
            steps: scenario.steps.into_iter().collect(),
            end: duration.map(|d| SimTime::ZERO + d),
            cap: SimTime::ZERO + DEFAULT_DURATION_CAP,
            records: Vec::new(),
            events: Vec::new(),
            explain: opts.explain,
            seed,
            n_passed: 0,
            n_failed: 0,
            n_step_errors: 0,
            rounds: 0,
            round_budget: BASE_ROUNDS_PER_INSTANT,
            runs_per_component: Vec::new(),
            event_buf: Vec::new(),
            agents_deferred: Vec::new(),
            agent_timers_per_delivery: AGENT_TIMERS_PER_DELIVERY,
            binding: kubeplane_registry::strategy::pod::BindFeatures::from_gates(&features),
        };
        for o in input.objects {
            if let Err(e) = sim.with_client(|client| client.create(o.object)) {
                return Err(SimError::Setup(format!("{}: {e}", o.source)));
            }
        }
        Ok(sim)
    }

    /// Runs `f` with the API client of the current instant (steps write through it too).
    fn with_client<T>(&mut self, f: impl FnOnce(&mut ApiClient<'_>) -> T) -> T {
        self.with_parts(|client, _, _| f(client))
    }

    /// Runs `f` with the API client of the current instant and what a step changes besides
    /// (the node agents and the drains).
    fn with_parts<T>(
        &mut self,
        f: impl FnOnce(&mut ApiClient<'_>, &mut NodeAgents, &mut Drains) -> T,
    ) -> T {
        let mut output = Output {
            records: &mut self.records,
            events: &mut self.events,
        };
        let mut client = ApiClient {
            store: &mut self.store,
            now: self.now,
            sink: &mut output,
            explain: self.explain,
            admission: true,
            binding: self.binding,
        };
        f(&mut client, &mut self.agents, &mut self.drains)
    }

    /// Delivers the node agents' writes every `n` of their timers instead of every
    /// [`AGENT_TIMERS_PER_DELIVERY`] (at least 1). The output must not depend on it; tests
    /// check that it does not.
    #[doc(hidden)]
    pub fn set_agent_timers_per_delivery(&mut self, n: usize) {
        self.agent_timers_per_delivery = n.max(1);
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Takes the records produced so far (for streaming output).
    pub fn take_records(&mut self) -> Vec<Record> {
        std::mem::take(&mut self.records)
    }

    pub fn events(&self) -> &[Arc<EventRecord>] {
        &self.events
    }

    /// The counters of every component, in a fixed order.
    pub fn metrics(&self) -> Vec<(String, u64)> {
        let mut out = self.scheduler.metrics();
        for c in self.controllers.iter().chain(self.periodic.iter()) {
            out.extend(c.metrics());
        }
        out.extend(self.agents.metrics());
        out
    }

    /// Delivers pending store events to every component, in resourceVersion order.
    fn dispatch(&mut self) {
        Observers {
            observers: &self.observers,
            periodic: &mut self.periodic,
            controllers: &mut self.controllers,
            scheduler: &mut self.scheduler,
        }
        .deliver(
            &mut self.store,
            &mut self.event_buf,
            Ok(&mut self.agents),
            self.now,
        );
    }

    /// Runs every component with work due now, until none has any. An instant that takes more
    /// rounds than its budget (see [`BASE_ROUNDS_PER_INSTANT`]) ends the run with
    /// [`SimError::Livelock`], naming the components that kept running.
    fn settle(&mut self) -> Result<(), SimError> {
        let now = self.now;
        let n_components = self.periodic.len() + self.controllers.len() + 2;
        if self.rounds == 0 {
            self.runs_per_component.clear();
        }
        self.runs_per_component.resize(n_components, 0);
        loop {
            self.dispatch();
            let mut ran = false;
            let mut output = Output {
                records: &mut self.records,
                events: &mut self.events,
            };
            let mut client = ApiClient {
                store: &mut self.store,
                now,
                sink: &mut output,
                explain: self.explain,
                admission: true,
                binding: self.binding,
            };
            let runs = &mut self.runs_per_component;
            for (i, c) in self
                .periodic
                .iter_mut()
                .chain(self.controllers.iter_mut())
                .enumerate()
            {
                if c.next_wakeup().is_some_and(|t| t <= now) {
                    c.run(now, &mut client);
                    runs[i] += 1;
                    ran = true;
                }
            }
            if self.agents.next_wakeup().is_some_and(|t| t <= now) {
                let observers = Observers {
                    observers: &self.observers,
                    periodic: &mut self.periodic,
                    controllers: &mut self.controllers,
                    scheduler: &mut self.scheduler,
                };
                let buffers = (&mut self.event_buf, &mut self.agents_deferred);
                let timing = (now, self.agent_timers_per_delivery);
                run_agents(&mut self.agents, observers, &mut client, buffers, timing);
                runs[n_components - 2] += 1;
                ran = true;
            }
            if self.drains.next_wakeup().is_some_and(|t| t <= now) {
                self.drains.run(now, &mut client);
                ran = true;
            }
            if !ran
                && !client.store.has_events()
                && self.scheduler.next_wakeup().is_some_and(|t| t <= now)
            {
                self.scheduler.run(now, &mut client);
                runs[n_components - 1] += 1;
                ran = true;
            }
            if !ran && !self.store.has_events() {
                return Ok(());
            }
            self.count_round()?;
        }
    }

    /// Counts one round of work at this instant: past [`BASE_ROUNDS_PER_INSTANT`] the budget
    /// is recounted now and then, and an instant over its budget is a livelock.
    fn count_round(&mut self) -> Result<(), SimError> {
        self.rounds += 1;
        if self.rounds > BASE_ROUNDS_PER_INSTANT
            && (self.rounds - BASE_ROUNDS_PER_INSTANT) % ROUNDS_PER_RECOUNT == 1
        {
            // The store keeps this count as pods are written: a pass over every pod here,
            // once per 1024 rounds of an instant that creates pods by the thousand, grew with
            // the square of the cluster (the envelope's first instant).
            let n_pods = self.store.count_not_deleting(Kind::Pod) as u64;
            self.round_budget = BASE_ROUNDS_PER_INSTANT
                .saturating_add(n_pods.saturating_mul(ROUNDS_PER_POD))
                .min(MAX_ROUNDS_PER_INSTANT);
        }
        if self.rounds > BASE_ROUNDS_PER_INSTANT && self.rounds > self.round_budget {
            return Err(self.livelock());
        }
        Ok(())
    }

    /// The error for an instant that did not settle: which components ran, busiest first.
    fn livelock(&self) -> SimError {
        let names = self
            .periodic
            .iter()
            .chain(self.controllers.iter())
            .map(|c| c.name())
            .chain([self.agents.name(), self.scheduler.name()]);
        let mut busy: Vec<(&str, u64)> = names
            .zip(self.runs_per_component.iter().copied())
            .filter(|&(_, n)| n > 0)
            .collect();
        busy.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
        let components = busy
            .iter()
            .map(|(name, n)| format!("{name} ({n} run{})", if *n == 1 { "" } else { "s" }))
            .collect::<Vec<_>>()
            .join(", ");
        SimError::Livelock {
            time: self.now,
            rounds: self.rounds,
            components,
            seed: self.seed,
        }
    }

    /// The next instant after `now` at which anything is due.
    fn next_instant(&self) -> Option<SimTime> {
        let now = self.now;
        let after = |t: Option<SimTime>| t.filter(|&t| t > now);
        let mut next = self.steps.front().map(|s| s.at).filter(|&t| t > now);
        let candidates = [
            self.scheduler.next_wakeup(),
            self.agents.next_wakeup(),
            self.drains.next_wakeup(),
        ]
        .into_iter()
        .chain(self.controllers.iter().map(|c| c.next_wakeup()))
        .chain(self.periodic.iter().map(|c| c.next_wakeup()));
        for t in candidates {
            if let Some(t) = after(t) {
                next = Some(next.map_or(t, |n: SimTime| n.min(t)));
            }
        }
        next
    }

    /// Whether anything besides periodic housekeeping is still to happen.
    fn has_pending_work(&self) -> bool {
        !self.steps.is_empty()
            || self.scheduler.has_pending_work()
            || self.agents.has_pod_work()
            || self.controllers.iter().any(|c| c.next_wakeup().is_some())
            || self.drains.next_wakeup().is_some()
    }

    /// Runs to the end: the scenario's duration, or until nothing is pending (at most 24 h).
    /// `progress` is called now and then with the current and the end time.
    pub fn run(
        &mut self,
        progress: &mut dyn FnMut(SimTime, Option<SimTime>),
    ) -> Result<(), SimError> {
        self.run_observed(&mut |_, now, end| progress(now, end))
    }

    /// Like [`Simulation::run`], calling `observe` with the settled state after every instant
    /// (invariant checks in tests).
    pub fn run_observed(
        &mut self,
        observe: &mut dyn FnMut(&Store, SimTime, Option<SimTime>),
    ) -> Result<(), SimError> {
        loop {
            self.rounds = 0;
            self.apply_due_steps()?;
            observe(&self.store, self.now, self.end);
            if self.end.is_none() && !self.has_pending_work() {
                return Ok(());
            }
            let limit = self.end.unwrap_or(self.cap);
            match self.next_instant() {
                Some(t) if t <= limit => self.now = t,
                _ => {
                    if self.end.is_some() && self.now < limit {
                        self.now = limit;
                        self.rounds = 0;
                        self.apply_due_steps()?;
                        observe(&self.store, self.now, self.end);
                    }
                    self.end_drains();
                    self.fail_unchecked_expectations();
                    return Ok(());
                }
            }
        }
    }

    /// Runs the instant: first the work already due now (a deadline that falls at the instant
    /// of a change goes first), then every step action due now, in order, with no component
    /// running in between (the steps of one instant are one change, as one request changing
    /// all of it would be: the components see all of their watch events before they react),
    /// then settles, then checks the expectations.
    fn apply_due_steps(&mut self) -> Result<(), SimError> {
        self.settle()?;
        let mut expects = Vec::new();
        while self.steps.front().is_some_and(|s| s.at <= self.now) {
            let step = self.steps.pop_front().expect("checked");
            match step.action {
                StepAction::Expect(list) => expects.push(list),
                action => {
                    if let Err(message) = self.apply(&action) {
                        self.n_step_errors += 1;
                        self.records.push(Record::Json(Box::new(json!({
                            "time": self.now.as_secs_f64(),
                            "kind": "StepFailed",
                            "reason": "StepFailed",
                            "message": format!("step {} ({}) at {}: {}", step.index + 1, action.name(), kubeplane_core::duration::format_duration(self.now - SimTime::ZERO), message),
                        }))));
                    }
                }
            }
        }
        self.settle()?;
        for list in expects {
            for a in &list {
                self.check(a);
            }
        }
        Ok(())
    }

    /// The drains still in progress when the run ends write their records.
    fn end_drains(&mut self) {
        self.with_parts(|c, _, drains| drains.end(c.now, c));
    }

    /// Expectations due after the run ended (`--until` shorter than the steps, or the 24 h cap
    /// of a run without `duration`) were never checked: each is a failed expectation, so that
    /// the run cannot pass without checking what it was asked to.
    fn fail_unchecked_expectations(&mut self) {
        let show = |t: SimTime| kubeplane_core::duration::format_duration(t - SimTime::ZERO);
        for step in std::mem::take(&mut self.steps) {
            let StepAction::Expect(list) = &step.action else {
                continue;
            };
            for j in 0..list.len() {
                self.n_failed += 1;
                let message = format!(
                    "not checked: expectation {} of step {} is due at {}, after the run ended at {}",
                    j + 1,
                    step.index + 1,
                    show(step.at),
                    show(self.now)
                );
                self.records
                    .push(Record::expectation(self.now, false, message));
            }
        }
    }

    fn check(&mut self, a: &Assertion) {
        let outcome = crate::expect::evaluate(a, &self.store, &self.events, self.now);
        if outcome.passed {
            self.n_passed += 1;
        } else {
            self.n_failed += 1;
        }
        self.records.push(Record::expectation(
            self.now,
            outcome.passed,
            outcome.message,
        ));
    }

    /// Applies one step action through the same client the components use.
    fn apply(&mut self, action: &StepAction) -> Result<(), String> {
        let now = self.now;
        self.with_parts(|client, agents, drains| {
            let mut target = crate::verbs::Target {
                client,
                agents,
                drains,
            };
            target.apply(action, now)
        })
    }

    /// Creates objects now, as a step would (benchmarks and tests add load this way).
    pub fn create_objects(&mut self, objects: Vec<Object>) -> Result<(), String> {
        self.with_client(|client| {
            for o in objects {
                client.create(o).map_err(|e| e.to_string())?;
            }
            Ok(())
        })
    }

    /// Runs everything due at the current instant (no time passes).
    pub fn settle_now(&mut self) -> Result<(), SimError> {
        self.rounds = 0;
        self.settle()
    }

    /// The scheduler, for inspection.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// Every object in the store, for `--final-state`.
    pub fn final_state(&self) -> Vec<Value> {
        self.store.all().map(Object::to_json).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use crate::workloads;

    /// 130 nodes (40 of the pods below fit on each) and `pods` pending pods created at once,
    /// settled.
    fn burst(pods: usize) -> Simulation {
        let scenario = Scenario {
            pod_startup_latency: None,
            ..Scenario::default()
        };
        let input = workloads::input(workloads::nodes(130), scenario);
        let mut sim = Simulation::new(input, &RunOptions::default()).unwrap();
        sim.settle_now().unwrap();
        sim.create_objects(workloads::pods("burst", "pod", pods))
            .unwrap();
        sim.settle_now().unwrap();
        sim
    }

    #[test]
    fn a_burst_of_watch_events_leaves_the_dispatch_buffers_no_larger_than_kept() {
        let sim = burst(EVENT_BUFFER_KEPT + 904);
        let scheduled = sim.events().iter().filter(|e| e.reason() == "Scheduled");
        assert_eq!(scheduled.count(), EVENT_BUFFER_KEPT + 904);
        assert!(sim.event_buf.capacity() <= EVENT_BUFFER_KEPT);
        assert!(sim.agents_deferred.capacity() <= EVENT_BUFFER_KEPT);
        assert!(!sim.store.has_events());
    }

    #[test]
    fn the_output_records_share_the_event_lists_events() {
        let mut sim = burst(20);
        let events: Vec<Arc<EventRecord>> = sim.events().to_vec();
        let recorded: Vec<Arc<EventRecord>> = sim
            .take_records()
            .into_iter()
            .filter_map(|r| match r {
                Record::Event(e) => Some(e),
                _ => None,
            })
            .collect();
        assert_eq!(recorded.len(), events.len());
        assert!(events.len() >= 20);
        for (a, b) in events.iter().zip(&recorded) {
            assert!(
                Arc::ptr_eq(a, b),
                "{} {}: two allocations",
                a.reason(),
                a.name()
            );
        }
    }
}

//! The controller manager's loop: one thread owns the controllers and their [`LiveClient`]
//! (whose informer is the lister view). It takes the reflectors' events and relists from one
//! channel, hands each change (with its old object) to every controller, as `serve`'s control
//! plane does, and, once every kind has listed and while this process leads, runs each
//! controller whose work is due. The controllers' writes go through the client to the API
//! server; their own changes come back through the watches. Events they record go to the event
//! task as `v1` Events.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use kubeplane_api::{Cache, Component, Kind};
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;

use crate::client::LiveClient;
use crate::clock::LiveClock;
use crate::health::Health;
use crate::runtime::{Exit, Msg};

/// Turns in a row that ran a controller before the loop rests a little (a controller that
/// keeps asking to run at once must not spin the thread).
const BUSY_TURNS: u32 = 256;

/// The controller manager's loop state.
pub struct ControlLoop {
    /// The controllers, each with its kube-controller-manager name, in the order they run.
    pub controllers: Vec<(&'static str, Box<dyn Component + Send>)>,
    pub client: LiveClient,
    pub clock: LiveClock,
    /// The kinds the reflectors watch, and those that have listed.
    pub kinds: Vec<Kind>,
    pub synced: BTreeSet<Kind>,
    /// Whether this process leads (always, without leader election).
    pub leading: Arc<AtomicBool>,
    pub events: tokio::sync::mpsc::UnboundedSender<serde_json::Value>,
    pub health: Arc<Health>,
    /// When the metrics were last published.
    pub published: Option<SimTime>,
}

impl ControlLoop {
    fn all_synced(&self) -> bool {
        self.kinds.iter().all(|k| self.synced.contains(k))
    }

    fn may_run(&self) -> bool {
        self.all_synced() && self.leading.load(Ordering::SeqCst)
    }

    fn deliver(&mut self, ev: &kubeplane_api::WatchEvent, now: SimTime) {
        for (_, c) in &mut self.controllers {
            c.observe(ev, now);
        }
    }

    /// Takes one message; `Some` when the loop must end.
    fn handle(&mut self, msg: Msg, now: SimTime) -> Option<Exit> {
        match msg {
            Msg::Event(ev) => {
                let ev = self.client.informer.apply(ev);
                self.deliver(&ev, now);
            }
            Msg::Relist(kind, list) => {
                let rv = list.iter().map(crate::convert::resource_version).max();
                let rv = rv.unwrap_or(0).max(self.client.informer.resource_version());
                for ev in self.client.informer.replace(kind, list, rv) {
                    self.deliver(&ev, now);
                }
                self.synced.insert(kind);
                if self.all_synced() {
                    self.health.synced.store(true, Ordering::SeqCst);
                }
            }
            Msg::CallDone(..) | Msg::Leading(true) => {}
            Msg::Leading(false) => return Some(Exit::LeaseLost),
            Msg::Stop => return Some(Exit::Stopped),
        }
        None
    }

    /// Runs every controller whose work is due at `now`; whether one ran.
    fn run_due(&mut self, now: SimTime) -> bool {
        let mut ran = false;
        for (_, c) in &mut self.controllers {
            if !self.leading.load(Ordering::SeqCst) {
                break;
            }
            if c.next_wakeup().is_some_and(|t| t <= now) {
                c.run(now, &mut self.client);
                ran = true;
            }
        }
        ran
    }

    /// Hands the recorded events to the event task. Events recorded in one turn are a
    /// nanosecond apart: their names (`<object>.<hex nanoseconds>`) stay distinct.
    fn dispatch(&mut self) {
        let start = self.clock.timestamp();
        for (i, ev) in self.client.take_events().into_iter().enumerate() {
            let at = start + jiff::SignedDuration::from_nanos(i as i64);
            let kind = Kind::parse(ev.kind());
            let obj = kind.and_then(|k| self.client.informer.get(k, ev.namespace(), ev.name()));
            let uid = obj.map(|o| o.uid().to_string());
            let api_version = kind.map(Kind::api_version).unwrap_or("v1");
            let obj = crate::events::core_event_object(&ev, at, api_version, uid.as_deref());
            let _ = self.events.send(obj);
        }
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
        let samples: Vec<(String, u64)> = self
            .controllers
            .iter()
            .flat_map(|(_, c)| c.metrics())
            .collect();
        let text = crate::metrics::render_controllers(samples, self.leading.load(Ordering::SeqCst));
        if let Ok(mut m) = self.health.metrics.lock() {
            *m = text;
        }
    }

    /// How long to wait for a message: until the next controller's work is due (at most a
    /// second), or a second while the loop may not run them.
    fn wait(&self) -> Duration {
        let next = self
            .controllers
            .iter()
            .filter_map(|(_, c)| c.next_wakeup())
            .min();
        match next {
            Some(t) if self.may_run() => self.clock.until(t),
            _ => Duration::from_secs(1),
        }
        .min(Duration::from_secs(1))
    }

    /// Runs until SIGINT/SIGTERM, a lost lease, or the channel's end.
    pub fn run(mut self, rx: Receiver<Msg>) -> Exit {
        let mut busy = 0u32;
        loop {
            let now = self.clock.now();
            while let Ok(msg) = rx.try_recv() {
                if let Some(exit) = self.handle(msg, now) {
                    return exit;
                }
            }
            let ran = self.may_run() && self.run_due(now);
            self.dispatch();
            self.publish(now);
            busy = if ran { busy + 1 } else { 0 };
            if ran && busy < BUSY_TURNS {
                continue;
            }
            let wait = if ran {
                Duration::from_millis(10)
            } else {
                self.wait()
            };
            busy = 0;
            match rx.recv_timeout(wait) {
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

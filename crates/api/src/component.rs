//! A piece of the control plane driven by a runtime.

use kubeplane_core::SimTime;

use crate::client::Client;
use crate::watch::WatchEvent;

/// A piece of the control plane driven by the runtime: it observes changes like an informer's
/// handlers and does its work in [`Component::run`] at an instant the runtime chooses.
pub trait Component {
    fn name(&self) -> &'static str;
    /// Sees one change, in resourceVersion order. Must not write; may schedule work by making
    /// `next_wakeup` return an instant at or before `now`.
    fn observe(&mut self, ev: &WatchEvent, now: SimTime);
    /// Does the work due at `now`.
    fn run(&mut self, now: SimTime, client: &mut dyn Client);
    /// The next instant at which `run` has work to do; `None` when only new events can give it
    /// work. An instant at or before `now` means "run again now".
    fn next_wakeup(&self) -> Option<SimTime>;
    /// Counters the component keeps (upstream metric names), printed at the end of a run.
    fn metrics(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}

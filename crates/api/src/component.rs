//! A piece of the control plane driven by a runtime.

use kubeplane_core::SimTime;

use crate::client::Client;
use crate::object::Kind;
use crate::watch::WatchEvent;

/// A piece of the control plane driven by the runtime: it observes changes like an informer's
/// handlers and does its work in [`Component::run`] at an instant the runtime chooses.
pub trait Component {
    fn name(&self) -> &'static str;
    /// Sees one change, in resourceVersion order. Must not write; may schedule work by making
    /// `next_wakeup` return an instant at or before `now`.
    fn observe(&mut self, ev: &WatchEvent, now: SimTime);
    /// Whether [`Component::observe`] can do anything with an event of an object of `kind`
    /// (all kinds unless a component says otherwise). A runtime may skip delivering the
    /// events of the kinds answered `false`: `observe` must leave the component as it was for
    /// them (what it notes of `now` aside, which only the events it handles may read).
    fn observes(&self, kind: Kind) -> bool {
        let _ = kind;
        true
    }
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

/// Appends `samples` (as [`Component::metrics`] gives them, several components' one after the
/// other) to `out` in Prometheus' text format: each family once, introduced by its `# TYPE`
/// line (a counter when its name ends in `_total`, a gauge otherwise), with all its samples
/// (`workqueue_adds_total` of every controller), families in order of first appearance.
pub fn write_prometheus(out: &mut String, samples: &[(String, u64)]) {
    use std::fmt::Write;
    let family = |sample: &str| sample.split('{').next().unwrap_or_default().to_string();
    let mut families: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, (sample, _)) in samples.iter().enumerate() {
        let f = family(sample);
        match families.iter_mut().find(|(name, _)| *name == f) {
            Some((_, members)) => members.push(i),
            None => families.push((f, vec![i])),
        }
    }
    for (f, members) in &families {
        let kind = if f.ends_with("_total") {
            "counter"
        } else {
            "gauge"
        };
        let _ = writeln!(out, "# TYPE {f} {kind}");
        for &i in members {
            let (sample, value) = &samples[i];
            let _ = writeln!(out, "{sample} {value}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_family_is_typed_once_with_all_its_samples_counters_by_their_total_suffix() {
        let samples = [
            ("a_total{x=\"1\"}".to_string(), 1),
            ("a_total{x=\"2\"}".to_string(), 2),
            ("b{q=\"default-scheduler\"}".to_string(), 3),
            ("a_total{x=\"3\"}".to_string(), 4),
        ];
        let mut out = String::new();
        write_prometheus(&mut out, &samples);
        assert_eq!(
            out,
            "# TYPE a_total counter\na_total{x=\"1\"} 1\na_total{x=\"2\"} 2\na_total{x=\"3\"} 4\n\
             # TYPE b gauge\nb{q=\"default-scheduler\"} 3\n"
        );
    }
}

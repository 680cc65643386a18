//! Queueing hints (upstream `isPodWorthRequeuing` and its helpers in `scheduling_queue.go`):
//! which cluster events the profiles care about, and whether an event makes a rejected pod
//! worth retrying, and how soon.

use super::*;

impl SchedulingQueue {
    pub(super) fn is_event_of_interest(&self, event: &ClusterEvent) -> bool {
        event.is_wildcard()
            || self
                .profiles
                .values()
                .any(|p| p.hints.iter().any(|h| event_matches(&h.event, event)))
    }

    /// Whether the gating plugin of a gated pod registered an event matching `event`.
    pub(super) fn gating_plugin_interested(&self, p: &QueuedPodInfo, event: &ClusterEvent) -> bool {
        p.gating_plugin
            .and_then(|g| self.plugin_events.get(g))
            .is_some_and(|evs| evs.iter().any(|r| event_matches(r, event)))
    }

    /// upstream `isPodWorthRequeuing`: asks the hints of the plugins that rejected the pod.
    pub(super) fn worth_requeuing(
        &self,
        p: &QueuedPodInfo,
        event: &ClusterEvent,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
    ) -> Strategy {
        let hints = self.hints_for(event);
        self.worth_requeuing_with(p, p.pod_info.scheduler_name(), event, &hints, old, new)
    }

    /// Each profile's hints registered for an event matching `event`, in registration order
    /// (what [`SchedulingQueue::worth_requeuing`] asks), worked out once for many pods.
    pub(super) fn hints_for(&self, event: &ClusterEvent) -> BTreeMap<&str, Vec<&HintEntry>> {
        self.profiles
            .iter()
            .map(|(name, profile)| {
                let hints = profile
                    .hints
                    .iter()
                    .filter(|h| event_matches(&h.event, event))
                    .collect();
                (name.as_str(), hints)
            })
            .collect()
    }

    /// [`SchedulingQueue::worth_requeuing`] with the hints of [`SchedulingQueue::hints_for`].
    pub(super) fn worth_requeuing_with(
        &self,
        p: &QueuedPodInfo,
        scheduler_name: &str,
        event: &ClusterEvent,
        hints: &BTreeMap<&str, Vec<&HintEntry>>,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
    ) -> Strategy {
        if p.unschedulable_plugins.is_empty() && p.pending_plugins.is_empty() {
            return Strategy::AfterBackoff;
        }
        if event.is_wildcard() {
            // A wildcard event carrying a pod is meant for that pod only (ForceActivate).
            if let Some(obj) = new {
                match obj.as_pod() {
                    Some(pod) if pod_uid(pod) == p.pod_info.uid() => {}
                    _ => return Strategy::Skip,
                }
            }
            return Strategy::AfterBackoff;
        }
        let Some(hints) = hints.get(scheduler_name) else {
            return Strategy::AfterBackoff;
        };
        let mut strategy = Strategy::Skip;
        for h in hints {
            let pending = p.pending_plugins.contains(h.plugin);
            if !pending && !p.unschedulable_plugins.contains(h.plugin) {
                continue;
            }
            // A hint error counts as Queue so that the pod cannot get stuck.
            let hint = match &h.hint {
                None => QueueingHint::Queue,
                Some(f) => f(&p.pod_info.pod, old, new).unwrap_or(QueueingHint::Queue),
            };
            if hint == QueueingHint::QueueSkip {
                continue;
            }
            if pending {
                return Strategy::Immediately;
            }
            if p.pending_plugins.is_empty() {
                return Strategy::AfterBackoff;
            }
            strategy = Strategy::AfterBackoff;
        }
        strategy
    }

    /// Replays the events recorded while the pod was in flight (upstream
    /// `determineSchedulingHintForInFlightPod`).
    pub(super) fn hint_for_in_flight_pod(&self, p: &QueuedPodInfo) -> Strategy {
        if p.unschedulable_plugins.is_empty() && p.pending_plugins.is_empty() {
            return Strategy::AfterBackoff;
        }
        let Some(seq) = self.in_flight_pods.get(p.pod_info.uid()).map(|f| f.seq) else {
            return Strategy::AfterBackoff;
        };
        let mut strategy = Strategy::Skip;
        for entry in self.in_flight_events.range(seq + 1..).map(|(_, e)| e) {
            let InFlightEntry::Event { event, old, new } = entry else {
                continue;
            };
            let old = old.as_ref().map(OwnedObject::get);
            let new = new.as_ref().map(OwnedObject::get);
            match self.worth_requeuing(p, event, old, new) {
                Strategy::Skip => {}
                Strategy::Immediately => return Strategy::Immediately,
                Strategy::AfterBackoff => {
                    strategy = Strategy::AfterBackoff;
                    if p.pending_plugins.is_empty() {
                        return strategy;
                    }
                }
            }
        }
        strategy
    }
}

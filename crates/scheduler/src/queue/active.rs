//! activeQ (upstream `active_queue.go`): moving a pod into activeQ after PreEnqueue, popping
//! the next pod, and the in-flight tracking of popped pods and the cluster events that arrive
//! while they are being scheduled.

use super::*;
use kubeplane_api::StoredPod;

/// A popped pod not yet done: its entry in `in_flight_events` and the pod as popped. Found
/// and ordered by the pod's UID (as a map keyed by a copy of the UID would be, without the
/// copy per pop).
pub(super) struct InFlightPod {
    pub seq: u64,
    pub pod: Arc<PodInfo>,
}

crate::framework::types::keyed_by_pod_uid!(InFlightPod, pod, ord);

impl SchedulingQueue {
    /// Puts the pod into activeQ after re-running PreEnqueue (skipped for a pod coming straight
    /// from backoffQ with PopFromBackoffQ: it passed PreEnqueue on entering backoffQ). A gated
    /// pod goes to unschedulablePods instead. Returns whether it reached activeQ.
    pub(super) fn move_to_active_q(
        &mut self,
        mut p: QueuedPodInfo,
        event: &str,
        moves_from_backoff_q: bool,
        now: SimTime,
    ) -> bool {
        if !(self.pop_from_backoff_q && moves_from_backoff_q) {
            self.run_pre_enqueue(&mut p);
        }
        let key = key_of(&p);
        if p.gated() {
            if !self.active_q.contains(&key) && !self.backoff_contains(&key) {
                self.unschedulable_pods.insert_if_absent(key, p);
            }
            return false;
        }
        if p.initial_attempt_timestamp.is_none() {
            p.initial_attempt_timestamp = Some(now);
        }
        self.unschedulable_pods.remove(&key);
        self.backoff_q.remove(&key);
        self.error_backoff_q.remove(&key);
        if event == labels::UNSCHEDULED_POD_ADD.label || event == UNSCHEDULED_POD_UPDATE.label {
            self.nominator.add(&p.pod_info, None);
        }
        let seq = self.next_seq();
        self.active_q.add_or_update_keyed(seq, key, p);
        true
    }

    /// Pops the next pod: the head of activeQ by QueueSort, else (PopFromBackoffQ) the head of
    /// the plugin-rejected backoff heap even if its backoff is not over. Counts the attempt,
    /// advances the scheduling cycle, clears the rejecting plugins and marks the pod in flight.
    pub fn pop(&mut self, _now: SimTime) -> Option<QueuedPodInfo> {
        loop {
            let mut p = match self.active_q.pop() {
                Some(p) => p,
                None if self.pop_from_backoff_q => self.backoff_q.pop()?,
                None => return None,
            };
            self.refresh_nominated(&p.pod_info);
            if self.in_flight_pods.contains(p.pod_info.uid()) {
                // The same pod tracked twice: discard this copy, as upstream does.
                continue;
            }
            p.attempts += 1;
            p.backoff_expiration = None;
            p.unschedulable_plugins.clear();
            p.pending_plugins.clear();
            self.scheduling_cycle += 1;
            let seq = self.next_seq();
            self.in_flight_events.insert(seq, InFlightEntry::Pod);
            let pod = p.pod_info.clone();
            self.in_flight_pods.insert(InFlightPod { seq, pod });
            return Some(p);
        }
    }

    /// The pod's attempt is over: it is no longer in flight, and events no remaining in-flight
    /// pod needs are dropped.
    pub fn done(&mut self, uid: &str) {
        let Some(InFlightPod { seq, .. }) = self.in_flight_pods.take(uid) else {
            return;
        };
        self.in_flight_events.remove(&seq);
        while let Some(entry) = self.in_flight_events.first_entry() {
            if matches!(entry.get(), InFlightEntry::Pod) {
                break;
            }
            entry.remove();
        }
    }

    pub fn scheduling_cycle(&self) -> i64 {
        self.scheduling_cycle
    }

    /// Whether activeQ (or, with PopFromBackoffQ, the plugin-rejected backoff heap) has a pod.
    pub fn has_poppable(&self) -> bool {
        !self.active_q.is_empty() || (self.pop_from_backoff_q && !self.backoff_q.is_empty())
    }

    pub(super) fn record_event_if_any_in_flight(
        &mut self,
        event: ClusterEvent,
        old: Option<EventObject<'_>>,
        new: Option<EventObject<'_>>,
    ) {
        if self.in_flight_pods.is_empty() {
            return;
        }
        let seq = self.next_seq();
        self.in_flight_events.insert(
            seq,
            InFlightEntry::Event {
                event,
                old: old.map(OwnedObject::of),
                new: new.map(OwnedObject::of),
            },
        );
    }

    pub(super) fn record_events_if_pod_in_flight(
        &mut self,
        uid: &str,
        events: &[ClusterEvent],
        old: Option<&StoredPod>,
        new: &Arc<StoredPod>,
    ) -> bool {
        if !self.in_flight_pods.contains(uid) {
            return false;
        }
        for &event in events {
            let seq = self.next_seq();
            self.in_flight_events.insert(
                seq,
                InFlightEntry::Event {
                    event,
                    old: old.map(|o| OwnedObject::Pod(Arc::new(o.clone()))),
                    new: Some(OwnedObject::Pod(new.clone())),
                },
            );
        }
        true
    }

    pub fn is_in_flight(&self, uid: &str) -> bool {
        self.in_flight_pods.contains(uid)
    }

    /// The pods popped and not yet done, by UID.
    pub fn in_flight_pods(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.in_flight_pods.iter().map(|f| &f.pod)
    }
}

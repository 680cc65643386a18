//! The timed work queue of the taint-eviction controller (upstream `TimedWorkerQueue`), on the
//! virtual clock: a map from pod key ("ns/name") to a pending deletion with its creation and
//! firing instants. Nothing runs by itself; the controller pops due work in `run`.
//!
//! Upstream starts a goroutine per due item and stores a nil worker while an immediate deletion
//! is "in flight". Here an immediate item stays in the queue, marked immediate, until the
//! controller fires it at the end of the same `run`: like the in-flight deletion upstream it
//! cannot be cancelled, and [`TimedWorkerQueue::get_worker`] does not report it.

use std::collections::{BTreeMap, HashMap};

use kubeplane_core::SimTime;

/// One pending deletion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedWorker {
    /// When the eviction was first scheduled (upstream `CreatedAt`).
    pub created_at: SimTime,
    /// When it fires (upstream `FireAt`).
    pub fire_at: SimTime,
    seq: u64,
}

impl TimedWorker {
    /// Immediate work (`fire_at <= created_at`) fires in the same pass and cannot be cancelled.
    pub fn is_immediate(&self) -> bool {
        self.fire_at <= self.created_at
    }
}

/// Pending deletions keyed by pod, ordered by firing time then insertion.
#[derive(Debug, Default)]
pub struct TimedWorkerQueue {
    workers: HashMap<String, TimedWorker>,
    by_fire: BTreeMap<(SimTime, u64), String>,
    next_seq: u64,
}

impl TimedWorkerQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules work for `key` firing at `fire_at`. Existing work for the key, immediate or
    /// not, is left alone ("already existing work, skipping"); returns whether work was added.
    /// The delay is measured from `created_at`, as upstream.
    pub fn add_work(&mut self, key: &str, created_at: SimTime, fire_at: SimTime) -> bool {
        if self.workers.contains_key(key) {
            return false;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_fire.insert((fire_at, seq), key.to_string());
        self.workers.insert(
            key.to_string(),
            TimedWorker {
                created_at,
                fire_at,
                seq,
            },
        );
        true
    }

    /// Cancels timer-backed work for `key`. Returns true only when such work was removed;
    /// immediate work (a deletion already under way) is not stopped and gives false, as does a
    /// key with no work.
    pub fn cancel_work(&mut self, key: &str) -> bool {
        match self.workers.get(key) {
            Some(w) if !w.is_immediate() => {
                let w = self.workers.remove(key).expect("present");
                self.by_fire.remove(&(w.fire_at, w.seq));
                true
            }
            _ => false,
        }
    }

    /// The scheduled (timer-backed) work for `key`; `None` for no work or immediate work, like
    /// upstream's `GetWorkerUnsafe` returning nil.
    pub fn get_worker(&self, key: &str) -> Option<&TimedWorker> {
        self.workers.get(key).filter(|w| !w.is_immediate())
    }

    /// Whether any work, immediate or scheduled, exists for `key`.
    pub fn contains(&self, key: &str) -> bool {
        self.workers.contains_key(key)
    }

    /// The earliest firing instant of any pending work.
    pub fn next_fire_at(&self) -> Option<SimTime> {
        self.by_fire.keys().next().map(|&(t, _)| t)
    }

    /// Removes and returns the earliest work due at `now`, if any. The key is free for new
    /// work as soon as it is popped, so a replacement added later is never removed by the
    /// completion of this one (the upstream fix of `TestRunningWorkerCompletionDoesNotRemoveReplacement`).
    pub fn pop_due(&mut self, now: SimTime) -> Option<(String, TimedWorker)> {
        let (&(fire_at, seq), _) = self.by_fire.iter().next()?;
        if fire_at > now {
            return None;
        }
        let key = self.by_fire.remove(&(fire_at, seq)).expect("present");
        let w = self.workers.remove(&key).expect("indexed work exists");
        Some((key, w))
    }

    pub fn len(&self) -> usize {
        self.workers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fire_all(q: &mut TimedWorkerQueue, now: SimTime) -> Vec<String> {
        std::iter::from_fn(|| q.pop_due(now).map(|(k, _)| k)).collect()
    }

    fn add_five_twice(q: &mut TimedWorkerQueue, now: SimTime, then: SimTime) {
        for _ in 0..2 {
            for k in ["1", "2", "3", "4", "5"] {
                q.add_work(k, now, then);
            }
        }
    }

    /// Upstream `TestExecute`.
    #[test]
    fn immediate_work_runs_at_once() {
        let mut q = TimedWorkerQueue::new();
        let now = SimTime::from_secs(7);
        for k in ["1", "2", "3", "4", "5"] {
            assert!(q.add_work(k, now, now));
        }
        assert_eq!(fire_all(&mut q, now), ["1", "2", "3", "4", "5"]);
    }

    /// Upstream `TestExecuteDelayed`: duplicates are skipped, work fires once the clock passes.
    #[test]
    fn delayed_work_fires_once_per_key_after_its_delay() {
        let mut q = TimedWorkerQueue::new();
        let now = SimTime::ZERO;
        let then = SimTime::from_secs(10);
        add_five_twice(&mut q, now, then);
        assert_eq!(q.len(), 5);
        assert!(fire_all(&mut q, SimTime::from_millis(9_999)).is_empty());
        assert_eq!(fire_all(&mut q, SimTime::from_secs(11)).len(), 5);
    }

    /// Upstream `TestCancel`.
    #[test]
    fn cancelled_work_never_fires() {
        let mut q = TimedWorkerQueue::new();
        add_five_twice(&mut q, SimTime::ZERO, SimTime::from_secs(10));
        assert!(q.cancel_work("2"));
        assert!(q.cancel_work("4"));
        assert!(!q.cancel_work("4"), "a second cancel finds nothing");
        assert_eq!(fire_all(&mut q, SimTime::from_secs(11)), ["1", "3", "5"]);
    }

    /// Upstream `TestCancelAndReadd`.
    #[test]
    fn work_cancelled_and_added_again_fires() {
        let mut q = TimedWorkerQueue::new();
        let then = SimTime::from_secs(10);
        add_five_twice(&mut q, SimTime::ZERO, then);
        q.cancel_work("2");
        q.cancel_work("4");
        assert!(q.add_work("2", SimTime::ZERO, then));
        assert_eq!(fire_all(&mut q, SimTime::from_secs(11)).len(), 4);
    }

    /// Upstream `TestRunningWorkerCompletionDoesNotRemoveReplacement`, first case: an
    /// immediate deletion cannot be cancelled.
    #[test]
    fn immediate_work_cannot_be_cancelled_and_is_not_reported() {
        let mut q = TimedWorkerQueue::new();
        let now = SimTime::from_secs(3);
        q.add_work("ns/pod", now, now);
        assert!(!q.cancel_work("ns/pod"));
        assert!(q.get_worker("ns/pod").is_none());
        assert!(q.contains("ns/pod"));
        assert!(!q.add_work("ns/pod", now, now), "still in flight");
        assert_eq!(fire_all(&mut q, now), ["ns/pod"]);
    }

    /// Second case: once work has fired, a replacement is independent of it.
    #[test]
    fn a_replacement_added_after_firing_survives_and_can_be_cancelled() {
        let mut q = TimedWorkerQueue::new();
        let t0 = SimTime::ZERO;
        q.add_work("ns/pod", t0, SimTime::from_secs(1));
        let (_, fired) = q.pop_due(SimTime::from_secs(1)).unwrap();
        assert_eq!(fired.fire_at, SimTime::from_secs(1));
        let replacement_at = SimTime::from_secs(10);
        assert!(q.add_work("ns/pod", SimTime::from_secs(2), replacement_at));
        assert_eq!(q.get_worker("ns/pod").unwrap().fire_at, replacement_at);
        assert!(q.cancel_work("ns/pod"));
        assert!(q.get_worker("ns/pod").is_none());
        assert!(q.is_empty());
    }

    #[test]
    fn work_fires_in_order_of_firing_time_then_of_insertion() {
        let mut q = TimedWorkerQueue::new();
        q.add_work("b", SimTime::ZERO, SimTime::from_secs(5));
        q.add_work("a", SimTime::ZERO, SimTime::from_secs(5));
        q.add_work("c", SimTime::ZERO, SimTime::from_secs(2));
        assert_eq!(q.next_fire_at(), Some(SimTime::from_secs(2)));
        assert_eq!(fire_all(&mut q, SimTime::from_secs(5)), ["c", "b", "a"]);
        assert_eq!(q.next_fire_at(), None);
    }
}

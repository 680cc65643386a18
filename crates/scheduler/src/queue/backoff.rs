//! backoffQ (upstream `backoff_queue.go`): a pod's backoff (`initial × 2^(attempts−1)`, capped,
//! aligned to the ordering window), moving a pod into one of the two backoff heaps (plugin
//! rejections and errors), and the flush that moves pods whose backoff is over to activeQ.

use super::*;

impl SchedulingQueue {
    /// The backoff of a pod after `attempts` attempts: 0 for none, else
    /// `initial × 2^(attempts−1)` capped at the maximum, computed without overflow.
    pub fn backoff_duration(&self, pinfo: &QueuedPodInfo) -> SimDuration {
        if pinfo.attempts == 0 {
            return SimDuration::ZERO;
        }
        let shift = pinfo.attempts - 1;
        let (initial, max) = (self.initial_backoff.0, self.max_backoff.0);
        if initial > max.checked_shr(shift).unwrap_or(0) {
            return self.max_backoff;
        }
        SimDuration(initial.checked_shl(shift).unwrap_or(0))
    }

    /// Truncates to the backoffQ ordering window when PopFromBackoffQ is on.
    pub(super) fn align(&self, t: SimTime) -> SimTime {
        if self.pop_from_backoff_q {
            floor_to(t, BACKOFF_FLUSH_PERIOD)
        } else {
            t
        }
    }

    /// The backoff expiry, `None` for a pod never attempted (no backoff at all).
    pub(super) fn compute_backoff_time(&self, p: &QueuedPodInfo) -> Option<SimTime> {
        if p.attempts == 0 {
            return None;
        }
        if let Some(t) = p.backoff_expiration {
            return Some(t);
        }
        Some(self.align(p.timestamp + self.backoff_duration(p)))
    }

    /// Like [`Self::compute_backoff_time`], caching the result in the pod (upstream
    /// `getBackoffTime`); the cache is cleared on Pop and when the pod comes back.
    pub(super) fn backoff_time(&self, p: &mut QueuedPodInfo) -> Option<SimTime> {
        let t = self.compute_backoff_time(p);
        if t.is_some() {
            p.backoff_expiration = t;
        }
        t
    }

    /// Whether the pod is still backing off at `now`: with PopFromBackoffQ, while its expiry is
    /// not before the start of the current 1-second window; without, while it is not before
    /// `now` (an expiry equal to `now` still backs off, as upstream's `!Before`).
    pub(super) fn expiry_backing_off(&self, expiry: Option<SimTime>, now: SimTime) -> bool {
        expiry.is_some_and(|t| t >= self.align(now))
    }

    pub(super) fn is_backing_off(&self, p: &mut QueuedPodInfo, now: SimTime) -> bool {
        let t = self.backoff_time(p);
        self.expiry_backing_off(t, now)
    }

    /// Puts the pod into backoffQ (the error heap when no plugin rejected it). With
    /// PopFromBackoffQ, PreEnqueue runs first and a gated pod goes to unschedulablePods instead.
    /// Returns whether it reached backoffQ.
    pub(super) fn move_to_backoff_q(&mut self, mut p: QueuedPodInfo) -> bool {
        let key = key_of(&p);
        if self.pop_from_backoff_q {
            self.run_pre_enqueue(&mut p);
            if p.gated() {
                self.unschedulable_pods.insert_if_absent(key, p);
                return false;
            }
        }
        self.unschedulable_pods.remove(&key);
        self.backoff_time(&mut p);
        let seq = self.next_seq();
        if p.unschedulable_plugins.is_empty() && p.pending_plugins.is_empty() {
            self.backoff_q.remove(&key);
            self.error_backoff_q.add_or_update(seq, p);
        } else {
            self.error_backoff_q.remove(&key);
            self.backoff_q.add_or_update(seq, p);
        }
        true
    }

    pub(super) fn backoff_contains(&self, key: &str) -> bool {
        self.backoff_q.contains(key) || self.error_backoff_q.contains(key)
    }

    pub(super) fn backoff_get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.backoff_q
            .get(key)
            .or_else(|| self.error_backoff_q.get(key))
    }

    /// Moves every pod whose backoff is over (both heaps) to activeQ.
    pub fn flush_backoff_q_completed(&mut self, now: SimTime) {
        let window_start = self.align(now);
        let mut done = Vec::new();
        for heap in [&mut self.backoff_q, &mut self.error_backoff_q] {
            while let Some(head) = heap.peek() {
                // Same rule as `expiry_backing_off`.
                if head.backoff_expiration.is_some_and(|t| t >= window_start) {
                    break;
                }
                done.push(heap.pop().expect("peeked"));
            }
        }
        for p in done {
            self.move_to_active_q(p, move_labels::BACKOFF_COMPLETE, true, now);
        }
    }
}

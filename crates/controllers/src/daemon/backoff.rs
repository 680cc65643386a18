//! The per-item exponential backoff of client-go's `flowcontrol.Backoff`, as the DaemonSet
//! controller uses it for failed daemon pods (`NewBackOff(1s, 15m)`, no jitter), on the
//! virtual clock.

use std::collections::HashMap;

use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;

/// The initial delay of the failed-pods backoff (kube-controller-manager's
/// `flowcontrol.NewBackOff(1*time.Second, 15*time.Minute)`).
pub const FAILED_PODS_BACKOFF_INITIAL: SimDuration = SimDuration(1_000_000_000);
/// Its longest delay.
pub const FAILED_PODS_BACKOFF_MAX: SimDuration = SimDuration(15 * 60 * 1_000_000_000);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    backoff: SimDuration,
    last_update: SimTime,
}

#[derive(Clone, Debug)]
pub struct Backoff {
    initial: SimDuration,
    max: SimDuration,
    entries: HashMap<String, Entry>,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(FAILED_PODS_BACKOFF_INITIAL, FAILED_PODS_BACKOFF_MAX)
    }
}

impl Backoff {
    pub fn new(initial: SimDuration, max: SimDuration) -> Backoff {
        Backoff {
            initial,
            max,
            entries: HashMap::new(),
        }
    }

    /// An entry untouched for twice the longest delay is forgotten (`hasExpired`).
    fn expired(&self, e: &Entry, now: SimTime) -> bool {
        now - e.last_update > SimDuration(self.max.0 * 2)
    }

    /// The current delay of `id` (0 without an entry).
    pub fn get(&self, id: &str) -> SimDuration {
        self.entries.get(id).map_or(SimDuration(0), |e| e.backoff)
    }

    /// Upstream `IsInBackOffSinceUpdate`: less than the current delay has passed since the last
    /// [`Backoff::next`].
    pub fn is_in_back_off_since_update(&self, id: &str, now: SimTime) -> bool {
        match self.entries.get(id) {
            Some(e) if !self.expired(e, now) => now - e.last_update < e.backoff,
            _ => false,
        }
    }

    /// Upstream `Next`: the first call (or the first after expiry) sets the initial delay, each
    /// later one doubles it up to the maximum.
    pub fn next(&mut self, id: &str, now: SimTime) {
        let backoff = match self.entries.get(id) {
            Some(e) if !self.expired(e, now) => SimDuration((e.backoff.0 * 2).min(self.max.0)),
            _ => self.initial,
        };
        self.entries.insert(
            id.to_string(),
            Entry {
                backoff,
                last_update: now,
            },
        );
    }

    /// Upstream `GC` (every minute there): drops expired entries. Expired entries already count
    /// as absent, so when it runs changes no decision.
    pub fn gc(&mut self, now: SimTime) {
        let max2 = SimDuration(self.max.0 * 2);
        self.entries.retain(|_, e| now - e.last_update <= max2);
    }
}

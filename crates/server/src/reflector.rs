//! How the control plane's informers list and watch the server's storage, after client-go's
//! reflector (`tools/cache/reflector.go`) and `DeltaFIFO.Replace`.
//!
//! [`relist`] turns a list of every stored object into the events that bring the components
//! from what they saw to what is stored: the control plane keeps an [`Informer`] of what it
//! delivered, and a relist (at start, or after the watch fell behind the storage's window,
//! upstream's 410 Expired) replaces it kind by kind, so an object deleted while the watch was
//! broken is delivered as Deleted and an object still there as Modified with its old version.
//!
//! [`Backoff`] spaces the attempts after a list or a watch failed as upstream's reflector does
//! (`NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)`): 800 ms doubling up to 30 s,
//! each wait lengthened by a random fraction of itself up to 100% (a seeded random source),
//! starting over once no wait was needed for two minutes. The caller passes the monotonic
//! time in (this module reads no clock); [`pause`] waits in short slices so that a stopping server is not held up.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kubeplane_api::{EventType, Informer, Kind, Object, WatchEvent};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The first wait after a failure.
pub const INITIAL_BACKOFF: Duration = Duration::from_millis(800);
/// The longest wait before jitter.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A failure this long after the previous wait starts again from [`INITIAL_BACKOFF`].
pub const BACKOFF_RESET: Duration = Duration::from_secs(120);

/// Upstream's exponential backoff manager with jitter 1.0 and factor 2.
#[derive(Debug)]
pub struct Backoff {
    /// The next wait before jitter.
    step: Duration,
    /// When the last wait was handed out.
    last: Option<Duration>,
    rng: ChaCha8Rng,
}

impl Backoff {
    pub fn new(seed: u64) -> Backoff {
        Backoff {
            step: INITIAL_BACKOFF,
            last: None,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// How long to wait before the next attempt, a failure having happened at `now` (a
    /// monotonic time since any fixed origin).
    pub fn next(&mut self, now: Duration) -> Duration {
        if self
            .last
            .is_none_or(|last| now.saturating_sub(last) > BACKOFF_RESET)
        {
            self.step = INITIAL_BACKOFF;
        }
        self.last = Some(now);
        let base = self.step;
        self.step = (self.step * 2).min(MAX_BACKOFF);
        base + base.mul_f64(self.rng.random::<f64>())
    }
}

/// Sleeps for `wait` unless `stopping` turns true first (checked every 20 ms); returns
/// whether the whole wait passed.
pub fn pause(stopping: &AtomicBool, wait: Duration) -> bool {
    const SLICE: Duration = Duration::from_millis(20);
    let mut left = wait;
    while !left.is_zero() {
        if stopping.load(Ordering::Relaxed) {
            return false;
        }
        let slice = left.min(SLICE);
        std::thread::sleep(slice);
        left -= slice;
    }
    !stopping.load(Ordering::Relaxed)
}

/// Waits until `ready()` holds (checked every 20 ms); `false` once `stopping` is set.
pub fn wait_until(stopping: &AtomicBool, ready: impl Fn() -> bool) -> bool {
    while !stopping.load(Ordering::Relaxed) {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Replaces what `informer` holds with `items` (every stored object, in the storage's key
/// order, read at `revision`) and returns the events a component needs to follow: for each
/// kind in the order it first appears in the list, its listed objects (Added when new,
/// Modified with the old object otherwise) then its vanished ones (Deleted); then the kinds
/// `seen` before and absent from the list now, all Deleted. An event carries its object's
/// own resourceVersion, a deletion the list's. `seen` gains the listed kinds.
pub fn relist(
    informer: &mut Informer,
    seen: &mut BTreeSet<Kind>,
    items: Vec<Object>,
    revision: u64,
) -> Vec<WatchEvent> {
    let mut by_kind: Vec<(Kind, Vec<Object>)> = Vec::new();
    for obj in items {
        let kind = obj.kind();
        match by_kind.last_mut() {
            Some((k, objects)) if *k == kind => objects.push(obj),
            _ => match by_kind.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, objects)) => objects.push(obj),
                None => by_kind.push((kind, vec![obj])),
            },
        }
    }
    let listed: BTreeSet<Kind> = by_kind.iter().map(|(k, _)| *k).collect();
    let gone = seen.difference(&listed).map(|k| (*k, Vec::new()));
    let replaced: Vec<(Kind, Vec<Object>)> = by_kind.into_iter().chain(gone).collect();
    seen.extend(listed);
    let mut events = Vec::new();
    for (kind, objects) in replaced {
        for mut ev in informer.replace(kind, objects, revision) {
            if ev.type_ != EventType::Deleted {
                ev.resource_version = ev.object.resource_version().parse().unwrap_or(revision);
            }
            events.push(ev);
        }
    }
    events
}

#[cfg(test)]
mod tests;

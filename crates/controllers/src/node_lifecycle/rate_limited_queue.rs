//! The per-zone NoExecute tainting queue of the node lifecycle controller (upstream
//! `RateLimitedTimedQueue` with a token-bucket limiter of burst 1), on the virtual clock.

use std::collections::BTreeMap;

use kubeplane_core::time::{SimDuration, NANOS_PER_SEC};
use kubeplane_core::SimTime;
use rustc_hash::{FxHashMap, FxHashSet};

/// The eviction limiters' burst (upstream `EvictionRateLimiterBurst`). The limiter below
/// implements only burst 1.
pub const EVICTION_RATE_LIMITER_BURST: u32 = 1;

/// A token bucket of burst 1, or one that never accepts.
///
/// With burst 1 the bucket is either full or empty, so its state is the instant at which the
/// next token is available. It starts full.
#[derive(Clone, Debug, PartialEq)]
pub enum Limiter {
    TokenBucket {
        qps: f32,
        /// 1/qps, rounded up to the nanosecond, computed from the float32 rate as upstream's
        /// `rate.Limit(float64(qps))` (0.01 gives 100.000002 s).
        period: SimDuration,
        /// None: full.
        available_at: Option<SimTime>,
    },
    /// Upstream `NewFakeNeverRateLimiter`, installed for QPS <= 0.
    Never,
}

impl Limiter {
    /// A full bucket refilling at `qps` tokens per second; `qps <= 0` never accepts.
    pub fn new(qps: f32) -> Limiter {
        if qps <= 0.0 {
            return Limiter::Never;
        }
        let period_ns = (NANOS_PER_SEC as f64 / f64::from(qps)).ceil();
        let period = SimDuration(period_ns.min(i64::MAX as f64) as i64);
        Limiter::TokenBucket {
            qps,
            period,
            available_at: None,
        }
    }

    /// The rate the limiter reports. The never-accepting limiter reports 1, as upstream's
    /// fake limiter does: swapping it for a real rate of exactly 1 is then a no-op (kept).
    pub fn qps(&self) -> f32 {
        match self {
            Limiter::TokenBucket { qps, .. } => *qps,
            Limiter::Never => 1.0,
        }
    }

    /// Takes a token if one is available at `now`.
    pub fn try_accept(&mut self, now: SimTime) -> bool {
        match self {
            Limiter::TokenBucket {
                period,
                available_at,
                ..
            } => {
                if available_at.is_some_and(|t| now < t) {
                    return false;
                }
                *available_at = Some(now + *period);
                true
            }
            Limiter::Never => false,
        }
    }

    /// When the next token is available (`None`: never).
    pub fn next_token_at(&self) -> Option<SimTime> {
        match self {
            Limiter::TokenBucket { available_at, .. } => {
                Some(available_at.unwrap_or(SimTime(i64::MIN)))
            }
            Limiter::Never => None,
        }
    }
}

/// An item waiting to be processed (upstream `TimedValue`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedValue {
    pub value: String,
    pub uid: String,
    pub added_at: SimTime,
    pub process_at: SimTime,
}

/// A queue of unique values ordered by `process_at`, processed at the limiter's pace.
///
/// A value stays in the de-duplication set after it was processed successfully, so it cannot
/// be added again until [`RateLimitedTimedQueue::remove`] is called (the node recovered).
///
/// The queue is ordered by `(process_at, insertion sequence)` and indexed by value, so that
/// the head, a removal and a re-queue cost a logarithm of its length: a zone outage queues
/// every node of the zone, and the monitor pass re-queues each untainted one every 5 s
/// (upstream's `Remove` and `Add` in `markNodeForTainting`).
#[derive(Clone, Debug)]
pub struct RateLimitedTimedQueue {
    /// The queued values by `(process_at, insertion sequence)`.
    items: BTreeMap<(SimTime, u64), TimedValue>,
    /// Queued value → its key in `items`.
    keys: FxHashMap<String, (SimTime, u64)>,
    set: FxHashSet<String>,
    limiter: Limiter,
    next_seq: u64,
}

impl RateLimitedTimedQueue {
    pub fn new(limiter: Limiter) -> Self {
        RateLimitedTimedQueue {
            items: BTreeMap::new(),
            keys: FxHashMap::default(),
            set: FxHashSet::default(),
            limiter,
            next_seq: 0,
        }
    }

    /// Adds a value to process at `now`, unless it was added and not removed since.
    pub fn add(&mut self, value: &str, uid: &str, now: SimTime) -> bool {
        if self.set.contains(value) {
            return false;
        }
        self.set.insert(value.to_string());
        self.push(TimedValue {
            value: value.to_string(),
            uid: uid.to_string(),
            added_at: now,
            process_at: now,
        });
        true
    }

    fn push(&mut self, v: TimedValue) {
        let key = (v.process_at, self.next_seq);
        self.next_seq += 1;
        self.keys.insert(v.value.clone(), key);
        self.items.insert(key, v);
    }

    /// Removes a value from the queue and from the set, so it can be added again. Returns
    /// whether it was in the set.
    #[inline]
    pub fn remove(&mut self, value: &str) -> bool {
        if self.set.is_empty() || !self.set.remove(value) {
            return false;
        }
        if let Some(key) = self.keys.remove(value) {
            self.items.remove(&key);
        }
        true
    }

    /// [`Self::remove`] then [`Self::add`] (upstream `markNodeForTainting` for a node that
    /// lacks its taint, at every monitor pass while it waits for a token): the value goes to
    /// the back of the queue at `now`, as a new item would, with `uid`. A queued value keeps
    /// its item and its strings, moved to its new place, instead of being freed and made
    /// anew. Always true, as the add after a removal is.
    pub fn requeue(&mut self, value: &str, uid: &str, now: SimTime) -> bool {
        if !self.set.contains(value) {
            return self.add(value, uid, now);
        }
        let Some(key) = self.keys.get_mut(value) else {
            // Processed and kept in the set only: the add makes its item.
            self.push(TimedValue {
                value: value.to_string(),
                uid: uid.to_string(),
                added_at: now,
                process_at: now,
            });
            return true;
        };
        let mut v = self.items.remove(key).expect("an indexed value is queued");
        *key = (now, self.next_seq);
        self.next_seq += 1;
        if v.uid != uid {
            v.uid = uid.to_string();
        }
        v.added_at = now;
        v.process_at = now;
        self.items.insert(*key, v);
        true
    }

    /// Whether the value is in the de-duplication set (queued, or processed and not removed).
    pub fn contains(&self, value: &str) -> bool {
        self.set.contains(value)
    }

    /// The value processed next: earliest `process_at`, then earliest added.
    pub fn head(&self) -> Option<&TimedValue> {
        self.items.first_key_value().map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Upstream `Try`: while the queue has a head, take a token (stop without one), stop if
    /// the head is not due, else act on it. `action` returns `(done, wait)`: done items leave
    /// the queue but stay in the set; the others are retried at `now + wait + 1ns`.
    ///
    /// As upstream, the token is taken before looking at the head's time, so a pass that finds
    /// the head not yet due still uses one.
    pub fn try_process(
        &mut self,
        now: SimTime,
        mut action: impl FnMut(&TimedValue) -> (bool, SimDuration),
    ) {
        while let Some(&key) = self.items.keys().next() {
            if !self.limiter.try_accept(now) {
                break;
            }
            if now < key.0 {
                break;
            }
            let mut head = self.items.remove(&key).expect("the head is queued");
            let (done, wait) = action(&head);
            if done {
                self.keys.remove(&head.value);
            } else {
                head.process_at = now + wait + SimDuration(1);
                self.push(head);
            }
        }
    }

    /// Upstream `SwapLimiter`: installs a limiter of rate `qps` unless the current one reports
    /// the same rate. A new bucket starts empty when the old one had no token available.
    pub fn swap_limiter(&mut self, qps: f32, now: SimTime) {
        if self.limiter.qps() == qps {
            return;
        }
        let mut new = Limiter::new(qps);
        if !matches!(new, Limiter::Never) && !self.limiter.try_accept(now) {
            new.try_accept(now);
        }
        self.limiter = new;
    }

    pub fn limiter(&self) -> &Limiter {
        &self.limiter
    }

    /// The first instant at which a pass could act: never when empty or never accepting.
    pub fn next_attempt_at(&self) -> Option<SimTime> {
        if self.items.is_empty() {
            return None;
        }
        self.limiter.next_token_at()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: i64) -> SimTime {
        SimTime::from_secs(s)
    }

    fn drain(q: &mut RateLimitedTimedQueue, now: SimTime) -> Vec<String> {
        let mut done = Vec::new();
        q.try_process(now, |v| {
            done.push(v.value.clone());
            (true, SimDuration::ZERO)
        });
        done
    }

    /// Upstream `TestAddNode`: values are unique until removed.
    #[test]
    fn a_value_can_be_added_once_until_it_is_removed() {
        let mut q = RateLimitedTimedQueue::new(Limiter::new(1000.0));
        assert!(q.add("first", "11111", secs(0)));
        assert!(q.add("second", "22222", secs(0)));
        assert!(!q.add("first", "11111", secs(1)));
        assert_eq!(q.len(), 2);
        assert!(q.remove("first"));
        assert!(!q.remove("first"));
        assert!(q.add("first", "11111", secs(1)));
    }

    /// Upstream `TestTry` and `TestTryOrdering`: items are processed in `process_at` order.
    #[test]
    fn try_processes_in_order_of_process_at() {
        let mut q = RateLimitedTimedQueue::new(Limiter::new(1000.0));
        q.add("first", "1", secs(0));
        q.add("second", "2", secs(0));
        q.add("third", "3", secs(0));
        // A 100 s token period would stop after one item; 1000 qps refills every 1 ms.
        let mut order = Vec::new();
        let mut t = secs(1);
        while !q.is_empty() {
            q.try_process(t, |v| {
                order.push(v.value.clone());
                (true, SimDuration::ZERO)
            });
            t = t + SimDuration::from_millis(1);
        }
        assert_eq!(order, ["first", "second", "third"]);
    }

    /// Upstream `TestAddAfterTry`: a processed value is not re-added until removed.
    #[test]
    fn a_processed_value_is_not_added_again_until_removed() {
        let mut q = RateLimitedTimedQueue::new(Limiter::new(1000.0));
        q.add("first", "1", secs(0));
        assert_eq!(drain(&mut q, secs(0)), ["first"]);
        assert!(q.is_empty());
        assert!(q.contains("first"));
        assert!(!q.add("first", "1", secs(1)));
        q.remove("first");
        assert!(q.add("first", "1", secs(1)));
    }

    #[test]
    fn a_failed_item_is_retried_after_its_wait() {
        let mut q = RateLimitedTimedQueue::new(Limiter::new(1000.0));
        q.add("n", "1", secs(0));
        q.try_process(secs(0), |_| (false, SimDuration::from_millis(50)));
        assert_eq!(q.head().unwrap().process_at, SimTime(50_000_001));
    }

    /// Upstream `TestSwapLimiter`.
    #[test]
    fn swapping_to_zero_installs_a_limiter_that_never_accepts() {
        let mut q = RateLimitedTimedQueue::new(Limiter::new(0.1));
        q.swap_limiter(0.1, secs(0));
        assert_eq!(q.limiter(), &Limiter::new(0.1), "same rate: no-op");
        q.swap_limiter(0.0, secs(0));
        assert_eq!(q.limiter(), &Limiter::Never);
        q.add("n", "1", secs(0));
        assert!(drain(&mut q, secs(1000)).is_empty());
        assert_eq!(q.next_attempt_at(), None);
        q.swap_limiter(0.5, secs(1000));
        assert_eq!(q.limiter().qps(), 0.5);
    }

    #[test]
    fn the_bucket_pace_is_one_token_per_period_with_burst_one() {
        let mut l = Limiter::new(0.1);
        assert!(l.try_accept(secs(3)), "starts full");
        assert!(!l.try_accept(secs(12)));
        // 0.1 as float32 is 0.100000001: a token every 9.999999851 s.
        assert_eq!(l.next_token_at(), Some(SimTime(12_999_999_851)));
        assert!(l.try_accept(secs(13)));
        // A long pause does not bank more than one token.
        assert!(l.try_accept(secs(100)));
        assert!(!l.try_accept(secs(101)));
    }

    #[test]
    fn the_secondary_rate_period_follows_float32_rounding() {
        // 0.01 as float32 is 0.0099999998: a token every 100.000002 s.
        match Limiter::new(0.01) {
            Limiter::TokenBucket { period, .. } => assert_eq!(period, SimDuration(100_000_002_236)),
            Limiter::Never => panic!("a positive rate"),
        }
    }

    /// The queue against a plain list scanned for its minimum (what it was before it was
    /// indexed): adds, removals, re-adds and passes with failures, in a fixed pseudo-random
    /// order over a few hundred values, process in the same order.
    #[test]
    fn the_indexed_queue_processes_as_a_scanned_list_does() {
        struct Model {
            items: Vec<(TimedValue, u64)>,
            set: std::collections::HashSet<String>,
            seq: u64,
        }
        impl Model {
            fn push(&mut self, v: TimedValue) {
                self.items.push((v, self.seq));
                self.seq += 1;
            }
            fn add(&mut self, value: &str, now: SimTime) -> bool {
                if !self.set.insert(value.to_string()) {
                    return false;
                }
                let v = TimedValue {
                    value: value.to_string(),
                    uid: String::new(),
                    added_at: now,
                    process_at: now,
                };
                self.push(v);
                true
            }
            fn remove(&mut self, value: &str) -> bool {
                let was = self.set.remove(value);
                self.items.retain(|(v, _)| v.value != value);
                was
            }
            fn head(&self) -> Option<usize> {
                (0..self.items.len()).min_by_key(|&i| (self.items[i].0.process_at, self.items[i].1))
            }
        }
        let mut q = RateLimitedTimedQueue::new(Limiter::new(1000.0));
        let mut m = Model {
            items: Vec::new(),
            set: Default::default(),
            seq: 0,
        };
        let mut x: u64 = 12345;
        let mut next = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for step in 0..4000 {
            let now = SimTime::from_millis(step);
            let value = format!("node-{}", next(300));
            match next(5) {
                0 | 1 => assert_eq!(q.add(&value, "", now), m.add(&value, now)),
                2 => assert_eq!(q.remove(&value), m.remove(&value)),
                3 => {
                    m.remove(&value);
                    assert_eq!(q.requeue(&value, "", now), m.add(&value, now));
                }
                _ => {
                    let fail = next(3) == 0;
                    q.try_process(now, |v| {
                        got.push(v.value.clone());
                        (!fail, SimDuration::from_millis(7))
                    });
                    // The model's pass, as the queue's was before the index: one token per
                    // millisecond at 1000 qps, so at most one item per instant here.
                    if let Some(i) = m.head().filter(|&i| m.items[i].0.process_at <= now) {
                        let (mut v, _) = m.items.remove(i);
                        want.push(v.value.clone());
                        if fail {
                            v.process_at = now + SimDuration::from_millis(7) + SimDuration(1);
                            m.push(v);
                        }
                    }
                }
            }
            assert_eq!(q.len(), m.items.len());
            assert_eq!(
                q.head().map(|v| (&v.value, v.process_at)),
                m.head()
                    .map(|i| (&m.items[i].0.value, m.items[i].0.process_at))
            );
        }
        assert_eq!(got, want);
        assert!(
            got.len() > 100,
            "the passes processed values: {}",
            got.len()
        );
    }

    /// A re-queued value goes behind the values added before, at its new time and with its
    /// new uid, whether it was queued, processed (kept in the set) or unknown.
    #[test]
    fn a_requeue_is_a_removal_and_an_add() {
        let mut q = RateLimitedTimedQueue::new(Limiter::new(1000.0));
        q.add("a", "1", secs(0));
        q.add("b", "2", secs(0));
        assert_eq!(drain(&mut q, secs(0)), ["a"]);
        q.add("c", "3", secs(1));
        assert!(q.requeue("b", "2b", secs(2)));
        assert!(q.requeue("a", "1a", secs(2)));
        assert!(q.requeue("d", "4", secs(2)));
        assert_eq!(q.len(), 4);
        let head = q.head().expect("queued");
        assert_eq!((head.value.as_str(), head.process_at), ("c", secs(1)));
        let mut seen = Vec::new();
        let mut t = secs(3);
        while !q.is_empty() {
            q.try_process(t, |v| {
                seen.push((v.value.clone(), v.uid.clone(), v.added_at));
                (true, SimDuration::ZERO)
            });
            t = t + SimDuration::from_millis(1);
        }
        let want = [("c", "3", 1), ("b", "2b", 2), ("a", "1a", 2), ("d", "4", 2)];
        let want: Vec<_> = want
            .iter()
            .map(|&(v, u, at)| (v.to_string(), u.to_string(), secs(at)))
            .collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn swapping_from_an_empty_bucket_drains_the_new_one() {
        let mut q = RateLimitedTimedQueue::new(Limiter::new(0.1));
        q.add("a", "1", secs(0));
        assert_eq!(drain(&mut q, secs(0)), ["a"]);
        q.swap_limiter(0.01, secs(1));
        q.add("b", "2", secs(1));
        assert!(drain(&mut q, secs(2)).is_empty());
        assert_eq!(
            q.next_attempt_at(),
            Some(SimTime(1_000_000_000 + 100_000_002_236))
        );
    }
}

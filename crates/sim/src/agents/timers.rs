//! The node agents' timers: a heap for the one-off ones (a pod's start, stop and end, a
//! resync, a node's first heartbeats) and a FIFO per periodic heartbeat (Lease renewal,
//! status post). A periodic timer is re-armed at `now + period` with one period per kind and
//! `now` never going back, so each FIFO stays in (instant, arming order) and costs O(1) per
//! timer where the heap costs two sifts; the timers come out in the order one heap of all of
//! them gave (instant, then the order they were armed), which the resourceVersions follow.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use kubeplane_core::SimTime;

use super::Timer;

/// A timer: when it is due, the order it was armed in, what it does.
type Entry = (SimTime, u64, Timer);

/// [`Timers::first`]'s name for the heap (the FIFOs are 0 and 1).
const HEAP: usize = usize::MAX;

#[derive(Debug, Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Reverse<Entry>>,
    /// Re-armed Lease renewals and status posts, each in (instant, arming order).
    periodic: [VecDeque<Entry>; 2],
    seq: u64,
    /// While the renewals' FIFO holds the earliest timer: the (instant, arming order) of the
    /// earliest timer elsewhere (the heap's and the status posts' heads), so that the run of
    /// renewals before it pops without comparing those heads again. Valid until the heap or
    /// the status posts' FIFO changes (cleared then); `None`: not known.
    renewals_before: Option<(SimTime, u64)>,
}

/// The FIFO of a periodic timer kind.
fn lane(t: Timer) -> Option<usize> {
    match t {
        Timer::RenewLease(_) => Some(0),
        Timer::PostStatus(_) => Some(1),
        _ => None,
    }
}

impl Timers {
    /// Arms a timer (any instant).
    pub(super) fn push(&mut self, at: SimTime, t: Timer) {
        self.seq += 1;
        self.renewals_before = None;
        self.heap.push(Reverse((at, self.seq, t)));
    }

    /// Re-arms a periodic timer one period on: into its FIFO when that keeps the FIFO in
    /// order (always, when `now` does not go back), else into the heap.
    pub(super) fn push_periodic(&mut self, at: SimTime, t: Timer) {
        self.seq += 1;
        let entry = (at, self.seq, t);
        let l = lane(t);
        if l != Some(0) {
            self.renewals_before = None;
        }
        match l.map(|l| &mut self.periodic[l]) {
            Some(q) if q.back().is_none_or(|b| b.0 <= at) => q.push_back(entry),
            _ => {
                self.renewals_before = None;
                self.heap.push(Reverse(entry));
            }
        }
    }

    /// Where the earliest timer is (the heap: [`HEAP`], or a FIFO's index) and its instant,
    /// compared by (instant, arming order) without copying the timers.
    #[inline]
    fn first(&self) -> Option<(usize, SimTime)> {
        let mut best = self.heap.peek().map(|Reverse(e)| (HEAP, e.0, e.1));
        for (l, q) in self.periodic.iter().enumerate() {
            if let Some(&(at, seq, _)) = q.front() {
                if best.is_none_or(|(_, b_at, b_seq)| (at, seq) < (b_at, b_seq)) {
                    best = Some((l, at, seq));
                }
            }
        }
        best.map(|(source, at, _)| (source, at))
    }

    /// The instant of the earliest timer.
    pub(super) fn next_at(&self) -> Option<SimTime> {
        self.first().map(|(_, at)| at)
    }

    /// Takes the earliest timer if it is due at `now`.
    pub(super) fn pop_due(&mut self, now: SimTime) -> Option<Timer> {
        if let (Some(bound), Some(&(at, seq, t))) = (self.renewals_before, self.periodic[0].front())
        {
            if at <= now && (at, seq) < bound {
                self.periodic[0].pop_front();
                return Some(t);
            }
        }
        let (source, at) = self.first()?;
        if at > now {
            return None;
        }
        let entry = match self.periodic.get_mut(source) {
            Some(q) => q.pop_front(),
            None => self.heap.pop().map(|Reverse(e)| e),
        };
        self.renewals_before = (source == 0).then(|| self.earliest_but_renewals());
        entry.map(|(_, _, t)| t)
    }

    /// The (instant, arming order) of the earliest timer outside the renewals' FIFO (the
    /// greatest key when there is none).
    fn earliest_but_renewals(&self) -> (SimTime, u64) {
        let heap = self.heap.peek().map(|Reverse(e)| (e.0, e.1));
        let posts = self.periodic[1].front().map(|e| (e.0, e.1));
        let none = (SimTime(i64::MAX), u64::MAX);
        heap.unwrap_or(none).min(posts.unwrap_or(none))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timers as one heap of all of them would give them out.
    fn by_heap(arms: &[(i64, Timer, bool)]) -> Vec<(i64, Timer)> {
        let mut heap = BinaryHeap::new();
        for (seq, &(at, t, _)) in arms.iter().enumerate() {
            heap.push(Reverse((at, seq, t)));
        }
        std::iter::from_fn(|| heap.pop().map(|Reverse((at, _, t))| (at, t))).collect()
    }

    #[test]
    fn periodic_and_one_off_timers_come_out_as_one_heap_would_give_them() {
        // Periodic re-arms at the same and later instants as one-off timers, and one re-arm
        // earlier than the FIFO's last (it must go to the heap to stay in order).
        let arms = [
            (10, Timer::RenewLease(1), true),
            (10, Timer::StartPod(0), false),
            (10, Timer::RenewLease(0), true),
            (5, Timer::PostStatus(2), true),
            (20, Timer::RenewLease(2), true),
            (15, Timer::RenewLease(3), true),
            (10, Timer::PostStatus(0), true),
            (0, Timer::EndPod(4), false),
            (20, Timer::StopPod(1), false),
        ];
        let mut timers = Timers::default();
        for &(at, t, periodic) in &arms {
            if periodic {
                timers.push_periodic(SimTime(at), t);
            } else {
                timers.push(SimTime(at), t);
            }
        }
        assert_eq!(timers.next_at(), Some(SimTime(0)));
        let mut out = Vec::new();
        for now in [0, 5, 10, 15, 20] {
            while let Some(t) = timers.pop_due(SimTime(now)) {
                out.push((now, t));
            }
        }
        assert_eq!(out, by_heap(&arms));
        assert_eq!(timers.next_at(), None);
    }

    /// What one heap gives for `arms` armed at the same moments as in a run: the first
    /// `before` of them before any pop, each later one right after the pop `after_pop` names
    /// (counted over the whole run), popping at each of `instants` what is due.
    fn replay_in_one_heap(
        arms: &[(i64, Timer, bool)],
        before: usize,
        after_pop: &[usize],
        instants: &[i64],
    ) -> Vec<(i64, Timer)> {
        let mut heap = BinaryHeap::new();
        let mut armed = arms
            .iter()
            .enumerate()
            .map(|(seq, &(at, t, _))| (at, seq, t));
        heap.extend(armed.by_ref().take(before).map(Reverse));
        let (mut out, mut popped) = (Vec::new(), 0);
        for &now in instants {
            while heap.peek().is_some_and(|Reverse((at, _, _))| *at <= now) {
                let Reverse((_, _, t)) = heap.pop().unwrap();
                out.push((now, t));
                popped += 1;
                if after_pop.contains(&popped) {
                    heap.extend(armed.next().map(Reverse));
                }
            }
        }
        out
    }

    #[test]
    fn runs_of_renewals_stop_at_timers_armed_between_them() {
        // Renewals popped in a run, with timers of every other kind armed in between, some
        // before the run's next renewal: the order is still one heap's.
        let mut timers = Timers::default();
        let mut arms = Vec::new();
        let mut arm = |timers: &mut Timers, at: i64, t: Timer, periodic: bool| {
            arms.push((at, t, periodic));
            if periodic {
                timers.push_periodic(SimTime(at), t);
            } else {
                timers.push(SimTime(at), t);
            }
        };
        for i in 0..6 {
            arm(&mut timers, 10, Timer::RenewLease(i), true);
        }
        arm(&mut timers, 20, Timer::PostStatus(0), true);
        let mut out = Vec::new();
        for now in [10, 20, 30] {
            let mut n = 0;
            while let Some(t) = timers.pop_due(SimTime(now)) {
                out.push((now, t));
                n += 1;
                match (now, n) {
                    (10, 2) => arm(&mut timers, 10, Timer::StartPod(7), false),
                    (10, 4) => arm(&mut timers, 10, Timer::PostStatus(8), true),
                    (10, 5) => arm(&mut timers, 20, Timer::RenewLease(9), true),
                    (20, 1) => arm(&mut timers, 20, Timer::EndPod(3), false),
                    (20, 2) => arm(&mut timers, 30, Timer::RenewLease(4), true),
                    (20, 3) => arm(&mut timers, 25, Timer::StopPod(5), false),
                    _ => {}
                }
            }
        }
        // The first seven arms came before any pop; each later arm followed the pop noted.
        let expected = replay_in_one_heap(&arms, 7, &[2, 4, 5, 9, 10, 11], &[10, 20, 30]);
        assert_eq!(out, expected);
        assert_eq!(out.len(), 13);
    }

    #[test]
    fn a_timer_not_yet_due_stays() {
        let mut timers = Timers::default();
        timers.push_periodic(SimTime(10), Timer::RenewLease(0));
        assert_eq!(timers.pop_due(SimTime(9)), None);
        assert_eq!(timers.next_at(), Some(SimTime(10)));
        assert_eq!(timers.pop_due(SimTime(10)), Some(Timer::RenewLease(0)));
    }
}

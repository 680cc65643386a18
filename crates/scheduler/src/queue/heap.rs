//! A binary heap of queued pods keyed by `namespace/name` (upstream `backend/heap`): ordered by
//! a less function, with lookup, in-place update and removal by key. Ties under the less
//! function are broken by insertion sequence, so the order is total and deterministic.

use std::sync::Arc;

use kubeplane_core::SimTime;

use crate::framework::{Plugin, QueuedPodInfo};
use crate::plugins::helper::FxHashMap;

/// How a heap orders its pods.
pub(crate) enum Order {
    /// activeQ: the profile's QueueSort `less`.
    QueueSort(Arc<dyn Plugin>),
    /// Backoff expiry, earliest first.
    Expiry,
    /// Backoff expiry (already truncated to its 1-second window), then QueueSort within a window
    /// (podBackoffQ with SchedulerPopFromBackoffQ).
    ExpiryThenQueueSort(Arc<dyn Plugin>),
}

fn sort_less(sort: &dyn Plugin, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
    sort.as_queue_sort().is_some_and(|s| s.less(a, b))
}

fn expiry(p: &QueuedPodInfo) -> SimTime {
    p.backoff_expiration.unwrap_or(SimTime(i64::MIN))
}

impl Order {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        match self {
            Order::QueueSort(sort) => sort_less(&**sort, a, b),
            Order::Expiry => expiry(a) < expiry(b),
            Order::ExpiryThenQueueSort(sort) => {
                let (x, y) = (expiry(a), expiry(b));
                x < y || (x == y && sort_less(&**sort, a, b))
            }
        }
    }
}

struct Entry {
    /// Insertion sequence; kept when the entry is updated in place.
    seq: u64,
    /// `namespace/name`.
    key: String,
    info: QueuedPodInfo,
}

/// An emptied heap with more slots than this gives them back (see [`PodHeap::release`]).
const KEEP_SLOTS: usize = 1024;

/// The heap orders slots, not entries: an entry stays in its slot of `entries` while it
/// moves, so a move is two slot numbers and two positions, whatever the size of a pod's
/// queue entry.
pub(crate) struct PodHeap {
    order: Order,
    /// Slots in heap order.
    items: Vec<usize>,
    /// slot → its entry (`None` while the slot is free).
    entries: Vec<Option<Entry>>,
    /// key → slot (never iterated, so its order does not matter).
    index: FxHashMap<String, usize>,
    /// slot → position in `items`.
    positions: Vec<usize>,
    /// Slots free for reuse.
    free: Vec<usize>,
}

impl PodHeap {
    pub fn new(order: Order) -> PodHeap {
        PodHeap {
            order,
            items: Vec::new(),
            entries: Vec::new(),
            index: FxHashMap::default(),
            positions: Vec::new(),
            free: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// The entry at position `i` of `items`.
    fn at(&self, i: usize) -> &Entry {
        self.entries[self.items[i]]
            .as_ref()
            .expect("a slot in the heap holds its entry")
    }

    /// The entry at position `i` of `items`, to change.
    fn at_mut(&mut self, i: usize) -> &mut Entry {
        self.entries[self.items[i]]
            .as_mut()
            .expect("a slot in the heap holds its entry")
    }

    /// The position in `items` of the entry with this key.
    fn position(&self, key: &str) -> Option<usize> {
        self.index.get(key).map(|&slot| self.positions[slot])
    }

    pub fn get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.position(key).map(|i| &self.at(i).info)
    }

    pub fn peek(&self) -> Option<&QueuedPodInfo> {
        (!self.items.is_empty()).then(|| &self.at(0).info)
    }

    /// Adds the pod, or replaces the entry with the same key (keeping its sequence number).
    pub fn add_or_update(&mut self, seq: u64, info: QueuedPodInfo) {
        let key = info.pod_info.key();
        self.add_or_update_keyed(seq, key, info);
    }

    /// [`Self::add_or_update`] with the pod's key (`namespace/name`) made by the caller.
    pub fn add_or_update_keyed(&mut self, seq: u64, key: String, info: QueuedPodInfo) {
        debug_assert_eq!(key, info.pod_info.key());
        if let Some(i) = self.position(&key) {
            self.at_mut(i).info = info;
            self.fix(i);
            return;
        }
        let i = self.items.len();
        let entry = Some(Entry { seq, key, info });
        let slot = match self.free.pop() {
            Some(slot) => {
                self.positions[slot] = i;
                self.entries[slot] = entry;
                slot
            }
            None => {
                self.positions.push(i);
                self.entries.push(entry);
                self.positions.len() - 1
            }
        };
        let key = &self.entries[slot].as_ref().expect("just filled").key;
        self.index.insert(key.clone(), slot);
        self.items.push(slot);
        self.sift_up(i);
    }

    /// Changes the entry with this key in place and restores the heap order.
    pub fn update(&mut self, key: &str, f: impl FnOnce(&mut QueuedPodInfo)) -> bool {
        let Some(i) = self.position(key) else {
            return false;
        };
        f(&mut self.at_mut(i).info);
        self.fix(i);
        true
    }

    pub fn pop(&mut self) -> Option<QueuedPodInfo> {
        if self.items.is_empty() {
            return None;
        }
        Some(self.remove_at(0))
    }

    pub fn remove(&mut self, key: &str) -> Option<QueuedPodInfo> {
        let i = self.position(key)?;
        Some(self.remove_at(i))
    }

    fn remove_at(&mut self, i: usize) -> QueuedPodInfo {
        let last = self.items.len() - 1;
        self.swap(i, last);
        let slot = self.items.pop().expect("heap is not empty");
        let entry = self.entries[slot]
            .take()
            .expect("a slot in the heap holds its entry");
        self.index.remove(&entry.key);
        self.free.push(slot);
        if self.items.is_empty() && self.entries.len() > KEEP_SLOTS {
            self.release();
        }
        if i == 0 && !self.items.is_empty() {
            self.sift_down_to_leaf();
        } else if i < self.items.len() {
            self.fix(i);
        }
        entry.info
    }

    /// Gives back the slots of an emptied heap: they stay at the size of the largest burst
    /// otherwise (a slot, its position and its index entry are about 200 bytes; the envelope
    /// queues 150,000 pods at once and then a few at a time). Slot numbers never decide an
    /// order (`before` compares the pods, then their sequence numbers).
    #[cold]
    fn release(&mut self) {
        self.entries = Vec::new();
        self.positions = Vec::new();
        self.free = Vec::new();
        self.index = FxHashMap::default();
    }

    fn before(&self, a: usize, b: usize) -> bool {
        let (x, y) = (self.at(a), self.at(b));
        if self.order.less(&x.info, &y.info) {
            return true;
        }
        if self.order.less(&y.info, &x.info) {
            return false;
        }
        x.seq < y.seq
    }

    fn swap(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        self.items.swap(a, b);
        self.positions[self.items[a]] = a;
        self.positions[self.items[b]] = b;
    }

    fn fix(&mut self, i: usize) {
        if !self.sift_down(i) {
            self.sift_up(i);
        }
    }

    fn sift_up(&mut self, i: usize) {
        self.sift_up_to(i, 0);
    }

    /// Moves the entry at `i` up while it comes before its parent, not above position `top`.
    fn sift_up_to(&mut self, mut i: usize, top: usize) {
        while i > top {
            let parent = (i - 1) / 2;
            if !self.before(i, parent) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    /// Restores the order after the last entry was put at the root (a pop): the root goes
    /// down the path of the children that come first to a leaf, one comparison a level,
    /// then up from there as far as it comes before its parents. The entry put at the root
    /// was a leaf, so it usually belongs near the bottom: about half the comparisons of a
    /// sift-down, and the same heap order (the order is total, so any heap pops the same).
    fn sift_down_to_leaf(&mut self) {
        let n = self.items.len();
        let mut i = 0;
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let child = if left + 1 < n && self.before(left + 1, left) {
                left + 1
            } else {
                left
            };
            self.swap(i, child);
            i = child;
        }
        self.sift_up_to(i, 0);
    }

    /// Returns whether the entry moved.
    fn sift_down(&mut self, start: usize) -> bool {
        let n = self.items.len();
        let mut i = start;
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let mut child = left;
            if left + 1 < n && self.before(left + 1, left) {
                child = left + 1;
            }
            if !self.before(child, i) {
                break;
            }
            self.swap(i, child);
            i = child;
        }
        i != start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::PodInfo;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use std::collections::BTreeMap;

    fn info(name: String, expiry: i64) -> QueuedPodInfo {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut p = QueuedPodInfo::new(Arc::new(PodInfo::new(Arc::new(pod.into()))), SimTime::ZERO);
        p.backoff_expiration = Some(SimTime(expiry));
        p
    }

    #[test]
    fn pops_in_expiry_then_insertion_order_after_updates_and_removals() {
        // A model: (expiry, seq) per key; the heap must pop the minimum every time.
        let mut heap = PodHeap::new(Order::Expiry);
        let mut model: BTreeMap<String, (i64, u64)> = BTreeMap::new();
        let mut rng: u64 = 42;
        let mut next = || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            rng >> 33
        };
        for seq in 0..2000u64 {
            let key = format!("p{}", next() % 50);
            let expiry = (next() % 20) as i64;
            match next() % 4 {
                0 => {
                    let got = heap.remove(&format!("ns/{key}")).is_some();
                    assert_eq!(got, model.remove(&key).is_some());
                }
                1 => {
                    let want = model
                        .iter()
                        .min_by_key(|(_, v)| **v)
                        .map(|(k, _)| k.clone());
                    let got = heap.pop().map(|p| p.pod_info.name().to_string());
                    assert_eq!(got, want);
                    if let Some(k) = want {
                        model.remove(&k);
                    }
                }
                _ => {
                    let s = model.get(&key).map_or(seq, |v| v.1);
                    model.insert(key.clone(), (expiry, s));
                    heap.add_or_update(seq, info(key, expiry));
                }
            }
            assert_eq!(heap.len(), model.len());
            // Lookups by key find the right entries wherever they moved.
            for (k, (expiry, _)) in &model {
                let got = heap
                    .get(&format!("ns/{k}"))
                    .and_then(|p| p.backoff_expiration);
                assert_eq!(got, Some(SimTime(*expiry)), "{k}");
            }
        }
    }

    #[test]
    fn an_emptied_heap_gives_back_a_large_bursts_slots_and_keeps_its_order_after() {
        let mut heap = PodHeap::new(Order::Expiry);
        for seq in 0..3000u64 {
            heap.add_or_update(seq, info(format!("p{seq}"), (3000 - seq) as i64 % 7));
        }
        let mut last = (i64::MIN, 0);
        while let Some(p) = heap.pop() {
            let expiry = p.backoff_expiration.expect("set").0;
            let n: i64 = p.pod_info.name()[1..].parse().expect("numbered");
            assert!((expiry, n) > last, "expiry, then insertion order");
            last = (expiry, n);
        }
        assert_eq!(
            heap.entries.capacity(),
            0,
            "the burst's slots are given back"
        );
        assert_eq!(heap.positions.capacity(), 0);
        assert_eq!(heap.index.capacity(), 0);
        heap.add_or_update(1, info("b".into(), 5));
        heap.add_or_update(2, info("a".into(), 5));
        heap.add_or_update(3, info("c".into(), 1));
        let order: Vec<String> = std::iter::from_fn(|| heap.pop())
            .map(|p| p.pod_info.name().to_string())
            .collect();
        assert_eq!(order, ["c", "b", "a"]);
        // A small heap keeps its slots when it empties.
        heap.add_or_update(4, info("d".into(), 1));
        heap.pop();
        assert!(heap.entries.capacity() > 0);
    }
}

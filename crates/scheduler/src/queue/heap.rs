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
    /// The entry's slot in `PodHeap::positions`.
    slot: usize,
    info: QueuedPodInfo,
}

pub(crate) struct PodHeap {
    order: Order,
    items: Vec<Entry>,
    /// key → slot (never iterated, so its order does not matter). An entry keeps its slot
    /// while it moves, so moving it updates `positions` without hashing its key.
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

    /// The position in `items` of the entry with this key.
    fn position(&self, key: &str) -> Option<usize> {
        self.index.get(key).map(|&slot| self.positions[slot])
    }

    pub fn get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.position(key).map(|i| &self.items[i].info)
    }

    pub fn peek(&self) -> Option<&QueuedPodInfo> {
        self.items.first().map(|e| &e.info)
    }

    /// Adds the pod, or replaces the entry with the same key (keeping its sequence number).
    pub fn add_or_update(&mut self, seq: u64, info: QueuedPodInfo) {
        let key = info.pod_info.key();
        if let Some(i) = self.position(&key) {
            self.items[i].info = info;
            self.fix(i);
            return;
        }
        let i = self.items.len();
        let slot = match self.free.pop() {
            Some(slot) => {
                self.positions[slot] = i;
                slot
            }
            None => {
                self.positions.push(i);
                self.positions.len() - 1
            }
        };
        self.index.insert(key.clone(), slot);
        self.items.push(Entry {
            seq,
            key,
            slot,
            info,
        });
        self.sift_up(i);
    }

    /// Changes the entry with this key in place and restores the heap order.
    pub fn update(&mut self, key: &str, f: impl FnOnce(&mut QueuedPodInfo)) -> bool {
        let Some(i) = self.position(key) else {
            return false;
        };
        f(&mut self.items[i].info);
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
        let entry = self.items.pop().expect("heap is not empty");
        self.index.remove(&entry.key);
        self.free.push(entry.slot);
        if i < self.items.len() {
            self.fix(i);
        }
        entry.info
    }

    fn before(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.items[a], &self.items[b]);
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
        self.positions[self.items[a].slot] = a;
        self.positions[self.items[b].slot] = b;
    }

    fn fix(&mut self, i: usize) {
        if !self.sift_down(i) {
            self.sift_up(i);
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.before(i, parent) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
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
                    let got = heap.pop().map(|p| p.pod_info.name.clone());
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
}

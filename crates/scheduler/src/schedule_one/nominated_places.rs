//! The snapshot places of the nodes that have nominated pods, marked once per scheduling
//! cycle (upstream's filter pass asks the nominator per node, `addGENominatedPods`). A bit per
//! place: the filter pass tests every node it checks, and the nodes with nominated pods are
//! usually few; each marked place keeps its node's pods, so that a node checked is not looked
//! up by name again.

use crate::cache::Snapshot;
use crate::queue::NominatedPods;

/// A bit per snapshot place, set for the nodes with nominated pods, and those nodes' pods by
/// place. Empty (and every test false) when no pod is nominated, or none to a node of the
/// snapshot.
#[derive(Debug, Default)]
pub(crate) struct NominatedPlaces<'q> {
    bits: Vec<u64>,
    /// Per place (once a node is marked): 0, or one more than the index in `pods` of the
    /// node's nominated pods.
    slots: Vec<u32>,
    pods: Vec<NominatedPods<'q>>,
}

impl<'q> NominatedPlaces<'q> {
    /// Marks the places of `nodes` (the nominator's nodes, with their pods); names the
    /// snapshot does not have are skipped (such a node cannot be checked).
    pub fn mark(
        snapshot: &Snapshot,
        nodes: impl Iterator<Item = (&'q str, NominatedPods<'q>)>,
    ) -> Self {
        let mut marked = NominatedPlaces::default();
        for (name, pods) in nodes {
            if let Some(&place) = snapshot.index.get(name) {
                if marked.bits.is_empty() {
                    marked.bits = vec![0u64; snapshot.num_nodes().div_ceil(64)];
                    marked.slots = vec![0u32; snapshot.num_nodes()];
                }
                marked.bits[place / 64] |= 1 << (place % 64);
                marked.pods.push(pods);
                marked.slots[place] = marked.pods.len() as u32;
            }
        }
        marked
    }

    /// Whether no node is marked.
    pub fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }

    /// Whether the node at `place` has nominated pods.
    #[inline]
    pub fn has(&self, place: usize) -> bool {
        self.bits
            .get(place / 64)
            .is_some_and(|w| w >> (place % 64) & 1 == 1)
    }

    /// The pods nominated to the node at `place` (none unless it is marked).
    #[inline]
    pub fn pods(&self, place: usize) -> NominatedPods<'q> {
        match self.slots.get(place) {
            Some(&slot) if slot > 0 => self.pods[slot as usize - 1],
            _ => NominatedPods::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::NodeInfo;

    fn snapshot(n: usize) -> Snapshot {
        Snapshot::from_nodes((0..n).map(|i| NodeInfo::new(&format!("n{i}"))).collect())
    }

    #[test]
    fn the_places_of_named_nodes_are_marked_and_no_others() {
        let s = snapshot(130);
        let names = ["n0", "n64", "n129", "gone"].into_iter();
        let marked = NominatedPlaces::mark(&s, names.map(|n| (n, NominatedPods::default())));
        let places: Vec<usize> = (0..130).filter(|&p| marked.has(p)).collect();
        let expected: Vec<usize> = ["n0", "n64", "n129"].iter().map(|n| s.index[*n]).collect();
        let mut expected = expected;
        expected.sort_unstable();
        assert_eq!(places, expected);
        assert!(!marked.has(130) && !marked.has(10_000));
    }

    #[test]
    fn nothing_is_marked_without_nominations_or_known_nodes() {
        let s = snapshot(3);
        assert!(!(0..3).any(|p| NominatedPlaces::mark(&s, std::iter::empty()).has(p)));
        let unknown = [("x", NominatedPods::default())].into_iter();
        assert!(!(0..3).any(|p| NominatedPlaces::mark(&s, unknown.clone()).has(p)));
    }
}

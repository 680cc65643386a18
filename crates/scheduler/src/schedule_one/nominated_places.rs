//! The snapshot places of the nodes that have nominated pods, marked once per scheduling
//! cycle (upstream's filter pass asks the nominator per node, `addGENominatedPods`). A bit per
//! place: the filter pass tests every node it checks, and the nodes with nominated pods are
//! usually few.

use crate::cache::Snapshot;

/// A bit per snapshot place, set for the nodes with nominated pods. Empty (and every test
/// false) when no pod is nominated, or none to a node of the snapshot.
#[derive(Debug, Default)]
pub(crate) struct NominatedPlaces {
    bits: Vec<u64>,
}

impl NominatedPlaces {
    /// Marks the places of `names` (the nominator's nodes); names the snapshot does not have
    /// are skipped (such a node cannot be checked).
    pub fn mark<'a>(snapshot: &Snapshot, names: impl Iterator<Item = &'a str>) -> Self {
        let mut bits = Vec::new();
        for name in names {
            if let Some(&place) = snapshot.index.get(name) {
                if bits.is_empty() {
                    bits = vec![0u64; snapshot.num_nodes().div_ceil(64)];
                }
                bits[place / 64] |= 1 << (place % 64);
            }
        }
        NominatedPlaces { bits }
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
        let marked = NominatedPlaces::mark(&s, ["n0", "n64", "n129", "gone"].into_iter());
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
        assert!(!(0..3).any(|p| NominatedPlaces::mark(&s, ["x"].into_iter()).has(p)));
    }
}

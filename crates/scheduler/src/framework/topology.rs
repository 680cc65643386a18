//! Interned node label pairs (kubeplane has no upstream equivalent): every node label key and
//! every (key, value) pair gets a small number once, when a node is added or relabelled, so
//! that the topology plugins (PodTopologySpread, InterPodAffinity) find a node's domain for a
//! topology key and count pods per domain with integer comparisons instead of hashing strings
//! for every node they filter or score.
//!
//! The numbers are process-wide and never reused: a pair keeps its number while the process
//! runs, whichever scheduler or simulation interned it first. They only ever stand for the
//! strings; nothing orders by them, so no output depends on which number a pair got.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, RwLock};

use rustc_hash::FxHashMap;

/// The interned keys and pairs.
#[derive(Default)]
struct Table {
    keys: FxHashMap<String, u32>,
    /// By key id: value → pair id.
    pairs: Vec<FxHashMap<String, u32>>,
    /// How many pairs have an id (the next pair's id).
    n_pairs: u32,
    /// By pair id: its value (tests only: production code never needs the string back).
    #[cfg(test)]
    values: Vec<Arc<str>>,
}

static TABLE: LazyLock<RwLock<Table>> = LazyLock::new(RwLock::default);

/// A node's label pairs by id: `(key id, pair id)`, sorted by key id.
pub type LabelIds = Arc<[(u32, u32)]>;

/// Interns every label of a node.
pub fn intern_labels(labels: &BTreeMap<String, String>) -> LabelIds {
    if labels.is_empty() {
        return Arc::from([]);
    }
    let mut out = Vec::with_capacity(labels.len());
    let mut t = TABLE.write().expect("label table lock");
    for (k, v) in labels {
        let key = match t.keys.get(k.as_str()) {
            Some(&id) => id,
            None => {
                let id = t.keys.len() as u32;
                t.keys.insert(k.clone(), id);
                t.pairs.push(FxHashMap::default());
                id
            }
        };
        let pair = match t.pairs[key as usize].get(v.as_str()) {
            Some(&id) => id,
            None => {
                let next = t.n_pairs;
                t.n_pairs += 1;
                t.pairs[key as usize].insert(v.clone(), next);
                #[cfg(test)]
                t.values.push(Arc::from(v.as_str()));
                next
            }
        };
        out.push((key, pair));
    }
    out.sort_unstable();
    Arc::from(out)
}

/// The id of a label key, `None` when no node ever had it (then no node has it now).
pub fn key_id(key: &str) -> Option<u32> {
    TABLE
        .read()
        .expect("label table lock")
        .keys
        .get(key)
        .copied()
}

/// The ids of several keys under one lock.
pub fn key_ids<'a>(keys: impl IntoIterator<Item = &'a str>) -> Vec<Option<u32>> {
    let t = TABLE.read().expect("label table lock");
    keys.into_iter().map(|k| t.keys.get(k).copied()).collect()
}

/// The value of a pair.
#[cfg(test)]
pub fn value_of(pair: u32) -> Arc<str> {
    TABLE.read().expect("label table lock").values[pair as usize].clone()
}

/// The pair id of the node's label `key` (a key id), if the node has that label.
#[inline]
pub fn pair_of(ids: &[(u32, u32)], key: Option<u32>) -> Option<u32> {
    let key = key?;
    ids.iter().find(|(k, _)| *k == key).map(|&(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_same_pair_gets_the_same_id_and_other_values_other_ids() {
        let a = intern_labels(&labels(&[("t-zone", "z1"), ("t-host", "a")]));
        let b = intern_labels(&labels(&[("t-zone", "z1"), ("t-host", "b")]));
        let zone = key_id("t-zone");
        let host = key_id("t-host");
        assert!(zone.is_some() && host.is_some() && zone != host);
        assert_eq!(pair_of(&a, zone), pair_of(&b, zone));
        assert_ne!(pair_of(&a, host), pair_of(&b, host));
        assert_eq!(&*value_of(pair_of(&b, host).unwrap()), "b");
    }

    #[test]
    fn a_relabelled_node_gets_the_ids_of_its_new_labels() {
        use crate::plugins::testing::NodeBuilder;
        let mut info = NodeBuilder::new("n").label("t-relabel", "old").info();
        let key = key_id("t-relabel");
        assert_eq!(&*value_of(info.label_pair(key).unwrap()), "old");
        // Same spec and status: only the labels change.
        info.set_node(std::sync::Arc::new(
            NodeBuilder::new("n").label("t-relabel", "new").obj().into(),
        ));
        assert_eq!(&*value_of(info.label_pair(key).unwrap()), "new");
        info.set_node(std::sync::Arc::new(NodeBuilder::new("n").obj().into()));
        assert_eq!(info.label_pair(key), None);
    }

    #[test]
    fn a_key_no_node_has_has_no_pair() {
        let a = intern_labels(&labels(&[("t-only", "x")]));
        assert_eq!(pair_of(&a, key_id("t-never-interned-key")), None);
        assert_eq!(pair_of(&a, None), None);
        let other = intern_labels(&labels(&[("t-other", "x")]));
        assert_eq!(pair_of(&a, key_id("t-other")), None);
        assert_ne!(
            pair_of(&other, key_id("t-other")),
            pair_of(&a, key_id("t-only"))
        );
    }
}

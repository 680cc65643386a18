//! PodTopologySpread PreScore's matching pods per node and per domain, kept across cycles
//! (upstream counts them afresh each cycle in `initPreScoreState`; kubeplane has two paths to
//! the same counts).
//!
//! The counts depend on the incoming pod's namespace and selectors ([`CountKey`]) and on what
//! each node is for the constraints (its domains, whether its pods count: the entries of the
//! [`ScoreMemo`], which depend on neither). While the key stays the same (the replicas of one
//! workload), only the places the entries memo recomputed are recounted from their pods, as
//! the memo's own counts once were. When it changes (pods of many namespaces interleaved), the
//! counts start over from the pods of the new namespace alone, through an index of the
//! snapshot's pods by namespace ([`PodsByNamespace`]), instead of from every pod of every
//! node: the places counted before are reset and the namespace's matching pods added, so a
//! new key costs what the old and the new namespace hold, not what the cluster holds.

use std::sync::Arc;

use crate::cache::Snapshot;
use crate::plugins::pods_by_namespace::PodsByNamespace;

use super::scoring::{EntryCell, ScoreMemo};
use super::{count_pods_match_selector, Constraint, LABEL_HOSTNAME};

/// What the counts are valid for besides the entries they follow.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CountKey {
    pub namespace: String,
    pub constraints: Arc<[Constraint]>,
    /// Whether only nodes with every topology key count toward their domains.
    pub require_all: bool,
}

/// One place's matching pods for one constraint, and the domain they were added to.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Counted {
    count: i64,
    /// [`NO_DOMAIN`] when the pods count toward no domain (hostname constraints, nodes whose
    /// pods do not count).
    domain: u32,
}

const NO_DOMAIN: u32 = u32::MAX;
const ZERO: Counted = Counted {
    count: 0,
    domain: NO_DOMAIN,
};

/// The matching pods per place and constraint, and per constraint and domain id.
#[derive(Default)]
pub(crate) struct ScoreCounts {
    key: Option<CountKey>,
    /// The entries memo's restarts and the node list's length the counts follow.
    follows: (u64, usize),
    /// Constraints per place: the stride of `cells`.
    stride: usize,
    /// By place × stride + constraint.
    cells: Vec<Counted>,
    /// The places whose cells may not be [`ZERO`], and a flag per place for the same.
    touched: Vec<u32>,
    is_touched: Vec<bool>,
    /// Per constraint: domain id → matching pods over the counted nodes (those that have
    /// every key when required); zero but for the domains of touched places.
    domain_counts: Vec<Vec<i64>>,
    pods: PodsByNamespace,
    /// Per constraint of the key: an earlier constraint with the same selector, if any.
    same_selector: Vec<Option<usize>>,
    /// What each place is for PreScore's pass over the filtered nodes, by column.
    pub(crate) by_place: PlaceCols,
}

/// What PreScore's pass over the filtered nodes reads of each place, one column per
/// constraint over the snapshot's places, so that the pass copies a column's cells for the
/// filtered places instead of finding each node's entry (see `Tally` in `scoring.rs`). It
/// follows the entries memo as the counts do, and the key's `require_all`; counts are not
/// in it (a hostname cell says only whether the node's count is read).
#[derive(Default)]
pub(crate) struct PlaceCols {
    /// The memo's restarts and node list's length, `require_all` and the constraints' count
    /// the columns were built for.
    built_for: Option<((u64, usize), bool, usize)>,
    /// Per place: whether the node is ignored (it lacks a key every node must have).
    ignored: Vec<bool>,
    /// By constraint × place: the id of the node's domain (unused for hostname constraints).
    ids: Vec<u32>,
    /// By constraint × place: [`NO_VALUE`] when the node has no value for the topology key or
    /// is ignored, else its domain id (0 for hostname constraints).
    values: Vec<i64>,
}

/// A place's cell in [`PlaceCols::values`] that the pass does not read.
pub(crate) const NO_VALUE: i64 = -1;

impl PlaceCols {
    /// Whether the node at each place is ignored.
    pub(crate) fn ignored(&self) -> &[bool] {
        &self.ignored
    }

    /// Constraint `i`'s column: the domain ids and the values, by place.
    pub(crate) fn column(&self, i: usize) -> (&[u32], &[i64]) {
        let len = self.ignored.len();
        (
            &self.ids[i * len..(i + 1) * len],
            &self.values[i * len..(i + 1) * len],
        )
    }

    /// Brings the columns up to date with `memo` for `key`: every place when what they were
    /// built for changed, else the places the memo recomputed.
    fn update(&mut self, key: &CountKey, follows: (u64, usize), memo: &ScoreMemo) {
        let built_for = (follows, key.require_all, key.constraints.len());
        if self.built_for == Some(built_for) {
            for &place in memo.last_update().0 {
                self.set(key, memo, place);
            }
            return;
        }
        self.built_for = Some(built_for);
        let cells = follows.1 * key.constraints.len();
        self.ignored = vec![false; follows.1];
        self.ids = vec![0; cells];
        self.values = vec![NO_VALUE; cells];
        for place in 0..follows.1 {
            self.set(key, memo, place);
        }
    }

    /// One place's cells from its entry.
    fn set(&mut self, key: &CountKey, memo: &ScoreMemo, place: usize) {
        let (all_keys, entry) = entry_at(memo, place);
        let ignored = key.require_all && !all_keys;
        self.ignored[place] = ignored;
        let len = self.ignored.len();
        for (i, (c, cell)) in key.constraints.iter().zip(entry).enumerate() {
            self.ids[i * len + place] = cell.id;
            let hostname = c.topology_key == LABEL_HOSTNAME;
            self.values[i * len + place] = match (ignored || !cell.has_value, hostname) {
                (true, _) => NO_VALUE,
                (false, true) => 0,
                (false, false) => i64::from(cell.id),
            };
        }
    }
}

/// Per constraint: the first earlier constraint with the same selector, if any.
fn same_selectors(constraints: &[Constraint]) -> Vec<Option<usize>> {
    constraints
        .iter()
        .enumerate()
        .map(|(i, c)| {
            constraints[..i]
                .iter()
                .position(|d| d.selector == c.selector)
        })
        .collect()
}

/// The domain a node's matching pods count toward under constraint `c`.
fn domain_of(c: &Constraint, require_all: bool, all_keys: bool, cell: &EntryCell) -> u32 {
    if c.topology_key == LABEL_HOSTNAME || !cell.counted || (require_all && !all_keys) {
        NO_DOMAIN
    } else {
        cell.id
    }
}

/// The entry of the place (whether the node has every key, and its cells).
fn entry_at(memo: &ScoreMemo, place: usize) -> (bool, &[EntryCell]) {
    let (_, e) = memo
        .contribution(place)
        .expect("the entries memo knows every place of the snapshot");
    memo.agg.cells_of(e)
}

impl ScoreCounts {
    /// The key of the last update.
    pub(crate) fn key(&self) -> Option<&CountKey> {
        self.key.as_ref()
    }

    /// The matching pods on the node at `place` for constraint `i`.
    pub(crate) fn at(&self, place: usize, i: usize) -> i64 {
        self.cells[place * self.stride + i].count
    }

    /// The matching pods of domain `id` for constraint `i`.
    pub(crate) fn domain_total(&self, i: usize, id: usize) -> i64 {
        self.domain_counts
            .get(i)
            .and_then(|m| m.get(id))
            .copied()
            .unwrap_or(0)
    }

    /// Brings the counts up to date for `key` with `memo`, which was just brought up to date
    /// with `snapshot` (and whose every update these counts followed).
    pub(crate) fn update(&mut self, key: CountKey, memo: &ScoreMemo, snapshot: &Snapshot) {
        let (changed, restarts) = memo.last_update();
        let follows = (restarts, snapshot.node_infos.len());
        self.by_place.update(&key, follows, memo);
        if self.key.as_ref() == Some(&key) && self.follows == follows {
            for &place in changed {
                self.recount(place, snapshot, memo);
            }
            return;
        }
        self.follows = follows;
        self.same_selector = same_selectors(&key.constraints);
        self.key = Some(key);
        self.reset(follows.1);
        self.count_namespace(memo, snapshot);
    }

    /// Recounts one place from its node's pods.
    fn recount(&mut self, place: usize, snapshot: &Snapshot, memo: &ScoreMemo) {
        let key = self.key.as_ref().expect("a key");
        let (all_keys, entry) = entry_at(memo, place);
        let pods = &snapshot.node_infos[place].pods;
        for (i, (c, cell)) in key.constraints.iter().zip(entry).enumerate() {
            let slot = &mut self.cells[place * self.stride + i];
            // A domain that was added nothing may have no count to take from.
            if slot.domain != NO_DOMAIN && slot.count != 0 {
                self.domain_counts[i][slot.domain as usize] -= slot.count;
            }
            *slot = Counted {
                count: count_pods_match_selector(pods, &c.selector, &key.namespace) as i64,
                domain: domain_of(c, key.require_all, all_keys, cell),
            };
            add_to_domain(&mut self.domain_counts[i], *slot, slot.count);
        }
        if !self.is_touched[place] {
            self.is_touched[place] = true;
            self.touched.push(place as u32);
        }
    }

    /// Zero counts for a node list of `len` places and the key's constraints.
    fn reset(&mut self, len: usize) {
        let stride = self.key.as_ref().map_or(0, |k| k.constraints.len());
        if stride != self.stride || len != self.is_touched.len() {
            self.stride = stride;
            self.cells = vec![ZERO; len * stride];
            self.is_touched = vec![false; len];
            self.touched.clear();
            self.domain_counts = vec![Vec::new(); stride];
            return;
        }
        for &place in &self.touched {
            let place = place as usize;
            for (i, slot) in self.cells[place * stride..(place + 1) * stride]
                .iter_mut()
                .enumerate()
            {
                if slot.domain != NO_DOMAIN && slot.count != 0 {
                    self.domain_counts[i][slot.domain as usize] = 0;
                }
                *slot = ZERO;
            }
            self.is_touched[place] = false;
        }
        self.touched.clear();
    }

    /// Adds the matching pods of the key's namespace to zero counts.
    fn count_namespace(&mut self, memo: &ScoreMemo, snapshot: &Snapshot) {
        self.pods.update(snapshot);
        let key = self.key.as_ref().expect("a key");
        let stride = self.stride;
        for (place, p) in self.pods.pods_in(&key.namespace) {
            if p.is_terminating() {
                continue;
            }
            let (all_keys, entry) = entry_at(memo, place);
            let cells = &mut self.cells[place * stride..(place + 1) * stride];
            if !self.is_touched[place] {
                self.is_touched[place] = true;
                self.touched.push(place as u32);
                for ((slot, c), cell) in cells.iter_mut().zip(key.constraints.iter()).zip(entry) {
                    slot.domain = domain_of(c, key.require_all, all_keys, cell);
                }
            }
            // Constraints with the selector of an earlier one (the system defaults' two) take
            // its answer: a match reads the pod's labels for every requirement.
            let mut matched = [false; 8];
            for (i, (slot, c)) in cells.iter_mut().zip(key.constraints.iter()).enumerate() {
                let same = self.same_selector.get(i).copied().flatten();
                let m = match same {
                    Some(j) if j < matched.len() => matched[j],
                    _ => c.selector.matches(p.labels()),
                };
                if let Some(cell) = matched.get_mut(i) {
                    *cell = m;
                }
                if m {
                    slot.count += 1;
                    add_to_domain(&mut self.domain_counts[i], *slot, 1);
                }
            }
        }
    }
}

/// Adds `n` to the domain of `slot`, if it has one.
fn add_to_domain(counts: &mut Vec<i64>, slot: Counted, n: i64) {
    if slot.domain == NO_DOMAIN {
        return;
    }
    let id = slot.domain as usize;
    if counts.len() <= id {
        counts.resize(id + 1, 0);
    }
    counts[id] += n;
}

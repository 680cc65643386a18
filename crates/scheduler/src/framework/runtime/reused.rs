//! Raw scores of the node-local Score plugins kept between cycles, as the score pass reads
//! them ([`ReusedScores`]), and one plugin's pass over a run of nodes that reuses them
//! ([`score_reusing`]).
//!
//! The scores are kept plugin-major: plugin `m`'s column holds one cell per place of the
//! snapshot's node list, so the known scores of nodes at consecutive places (the sampled
//! window of an unrestricted cycle) are one slice copy per plugin, not a gather per cell.

use std::ops::Range;

use crate::framework::cycle_state::CycleState;
use crate::framework::interface::{Normalization, ScorePlugin, MAX_NODE_SCORE, MIN_NODE_SCORE};
use crate::framework::status::Status;
use crate::framework::types::{NodeInfo, PodInfo};

use super::{add_constant, add_weighted, out_of_range};

/// Raw scores of the node-local Score plugins ([`ScorePlugin::node_local`]) for a list of
/// nodes, known from earlier cycles or filled in by
/// [`super::Framework::run_score_plugins_into`]. The scores are read where they are kept:
/// node `i` of the list has the cell `rows[i]` of each plugin's column of `scores` (the
/// node-local memo lends its per-place table, rows being the places).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReusedScores {
    /// The node-local plugins that scored, in the profile's order.
    pub plugins: Vec<&'static str>,
    /// Per node: whether its row of `scores` is known.
    pub known: Vec<bool>,
    /// Per node: its row in `scores`.
    pub rows: Vec<usize>,
    /// How many rows each plugin's column of `scores` has.
    pub places: usize,
    /// One column of `places` raw scores per plugin of `plugins`.
    pub scores: Vec<i64>,
    /// Set when the raw scores of every node not `known` were written into its row.
    pub filled: bool,
    /// Set by the caller when it reads only the totals of the score table (no trace): the
    /// score pass may then take them straight from the kept raw scores
    /// ([`Self::totals_from_kept`]) and leave the table's scores of known nodes unwritten.
    pub totals_only: bool,
    /// The list cut into runs of known nodes at consecutive rows and runs of unknown nodes
    /// (made by [`Self::prepare`], or with `known` by [`Self::set_known`]).
    segments: Vec<Segment>,
    /// `segments` were made by [`Self::set_known`] for the present `known` and `rows`, so
    /// the next [`Self::prepare`] keeps them.
    segmented: bool,
    /// Per row, where `partial_ok` is set: the weighted sum of its raw scores of the plugins
    /// that keep their column under `partial_plan` (the others add a constant), written by
    /// [`Self::totals_from_kept`] for the rows it computed, so that a known run's totals are
    /// one copy. A row's flag is cleared whenever its raw scores are written.
    partials: Vec<i64>,
    partial_ok: Vec<bool>,
    /// The plan (as [`Self::totals_from_kept`] takes it) the partials were summed under.
    partial_plan: Vec<(usize, Normalization, i64)>,
}

/// Nodes `start..end` of the list: known, at the consecutive rows from `row`, or not known
/// (`row` is `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    start: usize,
    end: usize,
    row: Option<usize>,
    /// A known run whose totals are its rows' kept partial totals (set by
    /// [`ReusedScores::totals_from_kept`] for its own pass).
    partial: bool,
}

impl ReusedScores {
    /// Readies `self` for a list of `n` nodes scored by the node-local plugins `local`: when
    /// those differ from `plugins`, or `n` from the length of `known`, nothing is known any
    /// more (rows are kept when there is one per node, else they become `0..n`; the columns
    /// keep `places` rows when the rows fit).
    pub fn prepare(&mut self, local: &[&'static str], n: usize) {
        if self.plugins != local || self.known.len() != n {
            self.plugins.clear();
            self.plugins.extend_from_slice(local);
            self.known.clear();
            self.known.resize(n, false);
            if self.rows.len() != n {
                self.rows.clear();
                self.rows.extend(0..n);
            }
            let rows = self.rows.iter().max().map_or(0, |&r| r + 1);
            self.places = self.places.max(rows);
            self.scores.clear();
            self.scores.resize(self.places * local.len(), 0);
            self.segmented = false;
            self.forget_partials();
        }
        if !std::mem::take(&mut self.segmented) {
            self.segment();
        }
        self.filled = false;
    }

    /// Sets `known` for the list `rows` holds, node by node by `is_known(row)`, and cuts the
    /// list into its segments in the same pass (the next [`Self::prepare`] keeps them).
    /// Returns how many nodes are known.
    pub fn set_known(&mut self, mut is_known: impl FnMut(usize) -> bool) -> u64 {
        // `want`: the key a node continuing the open segment has (its row when known, the
        // `UNKNOWN` key when not); no node has the first value, so the first opens one.
        const UNKNOWN: usize = usize::MAX;
        let n = self.rows.len();
        self.known.clear();
        self.known.resize(n, false);
        self.segments.clear();
        let (mut want, mut start, mut first) = (usize::MAX - 1, 0, None);
        let mut count = 0;
        for (j, (&row, k)) in self.rows.iter().zip(self.known.iter_mut()).enumerate() {
            let known = is_known(row);
            *k = known;
            count += u64::from(known);
            let key = if known { row } else { UNKNOWN };
            if key != want {
                if j > 0 {
                    self.segments.push(Segment {
                        start,
                        end: j,
                        row: first,
                        partial: false,
                    });
                }
                (start, first) = (j, known.then_some(row));
            }
            want = if known { row + 1 } else { UNKNOWN };
        }
        if n > 0 {
            self.segments.push(Segment {
                start,
                end: n,
                row: first,
                partial: false,
            });
        }
        self.segmented = true;
        count
    }

    /// [`Self::set_known`] with the known rows given as a bitmap: row `r` is known when bit
    /// `r % 64` of `bits[r / 64]` is set (rows past the bitmap are not). The list is walked by
    /// its runs of consecutive rows, and each run by words of the bitmap, so a long run costs
    /// a few instructions per 64 rows besides the check that its rows are consecutive.
    pub fn set_known_from_bits(&mut self, bits: &[u64]) -> u64 {
        let n = self.rows.len();
        self.known.clear();
        self.known.resize(n, false);
        self.segments.clear();
        let (mut count, mut j) = (0, 0);
        while j < n {
            let first = self.rows[j];
            let len = consecutive_run(&self.rows[j..]);
            let mut off = 0;
            while off < len {
                let known = bit_at(bits, first + off);
                let run = same_bits(bits, first + off, len - off, known);
                let (start, end) = (j + off, j + off + run);
                if known {
                    self.known[start..end].fill(true);
                    count += run as u64;
                    self.segments.push(Segment {
                        start,
                        end,
                        row: Some(first + off),
                        partial: false,
                    });
                } else {
                    // Unknown nodes continue an unknown segment whatever their rows.
                    match self.segments.last_mut() {
                        Some(last) if last.row.is_none() => last.end = end,
                        _ => self.segments.push(Segment {
                            start,
                            end,
                            row: None,
                            partial: false,
                        }),
                    }
                }
                off += run;
            }
            j += len;
        }
        self.segmented = true;
        count
    }

    /// Cuts the list into [`Segment`]s by `known` and `rows`.
    fn segment(&mut self) {
        self.segments.clear();
        let n = self.known.len();
        let (known, rows) = (&self.known[..n], &self.rows[..n]);
        let mut start = 0;
        while start < n {
            let (row, len) = match known[start] {
                true => {
                    let first = rows[start];
                    let len = known[start..]
                        .iter()
                        .zip(&rows[start..])
                        .zip(first..)
                        .take_while(|((&k, &r), want)| k && r == *want)
                        .count();
                    (Some(first), len)
                }
                false => (None, known[start..].iter().take_while(|&&k| !k).count()),
            };
            self.segments.push(Segment {
                start,
                end: start + len,
                row,
                partial: false,
            });
            start += len;
        }
    }

    /// How many nodes of the list are not known.
    pub fn unknown_count(&self) -> usize {
        self.segments
            .iter()
            .filter(|s| s.row.is_none())
            .map(|s| s.end - s.start)
            .sum()
    }

    /// The nodes of the list not known, in order (by the segments of the last
    /// [`Self::prepare`]: only the unknown runs are walked).
    pub fn unknown_nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.segments
            .iter()
            .filter(|s| s.row.is_none())
            .flat_map(|s| s.start..s.end)
    }

    /// The runs of nodes not known among the nodes `start..end` of the list, as ranges of it,
    /// in order (by the segments of the last [`Self::prepare`]).
    pub(super) fn unknown_runs(&self, start: usize, end: usize) -> Vec<Range<usize>> {
        let first = self.segments.partition_point(|s| s.end <= start);
        self.segments[first..]
            .iter()
            .take_while(|s| s.start < end)
            .filter(|s| s.row.is_none())
            .map(|s| s.start.max(start)..s.end.min(end))
            .collect()
    }

    /// Plugin `m`'s column: one raw score per row.
    fn column(&self, m: usize) -> &[i64] {
        &self.scores[m * self.places..(m + 1) * self.places]
    }

    /// The raw score of plugin `m` (of `plugins`) of node `i`.
    pub fn get(&self, i: usize, m: usize) -> i64 {
        self.scores[m * self.places + self.rows[i]]
    }

    /// Sets the raw score of plugin `m` of node `i`.
    pub fn set(&mut self, i: usize, m: usize, score: i64) {
        let row = self.rows[i];
        self.scores[m * self.places + row] = score;
        if let Some(ok) = self.partial_ok.get_mut(row) {
            *ok = false;
        }
    }

    /// Forgets every row's partial total (the raw scores were reset).
    pub fn forget_partials(&mut self) {
        self.partial_ok.iter_mut().for_each(|ok| *ok = false);
    }

    /// Copies the kept raw scores of the known nodes into `scores` (plugin-major, a column of
    /// the list's length per active plugin; `slots` as for [`Self::fill`]), where a pass that
    /// did not copy them ([`score_reusing`] without `copy_known`) left them out.
    pub(super) fn copy_known(&self, slots: &[Option<usize>], scores: &mut [i64]) {
        let n = self.known.len();
        for seg in &self.segments {
            let Some(row) = seg.row else { continue };
            for (k, slot) in slots.iter().enumerate() {
                if let Some(m) = *slot {
                    let len = seg.end - seg.start;
                    scores[k * n + seg.start..k * n + seg.end]
                        .copy_from_slice(&self.column(m)[row..row + len]);
                }
            }
        }
    }

    /// The weighted totals of the list into `totals`, straight from the kept raw scores of the
    /// known nodes and `scores` (the other nodes' raw scores, plugin-major as the score pass
    /// wrote them), without NormalizeScore, when they are what it and the range check would
    /// leave: `plugins` gives per active plugin (in order) its column here, its
    /// normalization and its weight, and every plugin must keep its column with every score
    /// in range, or make an all-zero column one score in range from an all-zero column.
    /// Returns false otherwise (`totals` then unspecified): the caller normalises the table.
    ///
    /// A known run whose rows all have their partial totals kept under this plan (their raw
    /// scores passed these checks when the partials were summed, and are unchanged since)
    /// gets its totals as the partials plus the constant plugins' weighted constants; on
    /// success the rows summed plugin by plugin keep theirs.
    pub(super) fn totals_from_kept(
        &mut self,
        plugins: &[(usize, Normalization, i64)],
        scores: &[i64],
        totals: &mut Vec<i64>,
    ) -> bool {
        let n = self.known.len();
        totals.resize(n, 0);
        let mut constant = 0;
        for &(_, normalization, weight) in plugins {
            match normalization {
                Normalization::Keeps => {}
                Normalization::ZeroTo(c) if (MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&c) => {
                    constant += c * weight;
                }
                _ => return false,
            }
        }
        if self.partial_plan != plugins || self.partial_ok.len() != self.places {
            self.partial_plan.clear();
            self.partial_plan.extend_from_slice(plugins);
            self.partial_ok.clear();
            self.partial_ok.resize(self.places, false);
            self.partials.resize(self.places, 0);
        }
        // Per segment: whether its totals are the kept partials (a known run of kept rows).
        let mut by_plugin = false;
        for seg in &mut self.segments {
            seg.partial = seg.row.is_some_and(|row| {
                !self.partial_ok[row..row + (seg.end - seg.start)].contains(&false)
            });
            by_plugin |= !seg.partial;
        }
        for seg in self.segments.iter().filter(|s| s.partial) {
            let row = seg.row.unwrap_or_default();
            let kept = &self.partials[row..row + (seg.end - seg.start)];
            for (t, &p) in totals[seg.start..seg.end].iter_mut().zip(kept) {
                *t = p + constant;
            }
        }
        if by_plugin && !self.totals_by_plugin(plugins, scores, totals) {
            return false;
        }
        // The rows summed plugin by plugin now keep their partial totals.
        for seg in self.segments.iter().filter(|s| !s.partial) {
            let range = seg.start..seg.end;
            for (&row, &total) in self.rows[range.clone()].iter().zip(&totals[range]) {
                self.partials[row] = total - constant;
                self.partial_ok[row] = true;
            }
        }
        true
    }

    /// [`Self::totals_from_kept`]'s checks and weighted adds, plugin by plugin, over the
    /// segments whose totals are not the kept partials: whether every check passed.
    fn totals_by_plugin(
        &self,
        plugins: &[(usize, Normalization, i64)],
        scores: &[i64],
        totals: &mut [i64],
    ) -> bool {
        let n = self.known.len();
        for (k, &(m, normalization, weight)) in plugins.iter().enumerate() {
            let zero_to = match normalization {
                Normalization::ZeroTo(c) => Some(c),
                _ => None,
            };
            for seg in self.segments.iter().filter(|s| !s.partial) {
                let raw = match seg.row {
                    Some(row) => &self.column(m)[row..row + (seg.end - seg.start)],
                    None => &scores[k * n + seg.start..k * n + seg.end],
                };
                let cells = &mut totals[seg.start..seg.end];
                match zero_to {
                    None if out_of_range(raw).is_some() => return false,
                    None => add_weighted(cells, raw, weight, k == 0),
                    Some(_) if raw.iter().fold(0, |acc, &s| acc | s) != 0 => return false,
                    Some(c) => add_constant(cells, c * weight, k == 0),
                }
            }
        }
        true
    }

    /// Writes the raw scores of the nodes not known from `scores` (plugin-major, a column per
    /// active plugin; `slots` give each active plugin's column here, if it is node-local).
    pub(super) fn fill(&mut self, slots: &[Option<usize>], scores: &[i64]) {
        let n = self.known.len();
        for s in 0..self.segments.len() {
            let seg = self.segments[s];
            if seg.row.is_some() {
                continue;
            }
            for i in seg.start..seg.end {
                for (k, slot) in slots.iter().enumerate() {
                    if let Some(m) = *slot {
                        self.set(i, m, scores[k * n + i]);
                    }
                }
            }
        }
        self.filled = true;
    }
}

/// How many rows from the first of `rows` (not empty) are consecutive: `rows[k]` is
/// `rows[0] + k`. Checked by blocks of 8 rows without a branch per row.
fn consecutive_run(rows: &[usize]) -> usize {
    let first = rows[0];
    let mut k = 1;
    while let Some(block) = rows.get(k..k + 8) {
        let off = block
            .iter()
            .zip(first + k..)
            .fold(0, |acc, (&r, want)| acc | (r ^ want));
        if off != 0 {
            break;
        }
        k += 8;
    }
    k + rows[k..]
        .iter()
        .zip(first + k..)
        .take_while(|&(&r, want)| r == want)
        .count()
}

/// Bit `row` of the bitmap `bits` (false past its end).
fn bit_at(bits: &[u64], row: usize) -> bool {
    bits.get(row / 64)
        .is_some_and(|&w| (w >> (row % 64)) & 1 == 1)
}

/// How many bits from `start` (at most `max`) are `value` in the bitmap `bits` (the bits past
/// its end are false), a word at a time.
fn same_bits(bits: &[u64], start: usize, max: usize, value: bool) -> usize {
    let mut len = 0;
    while len < max {
        let at = start + len;
        let word = bits.get(at / 64).copied().unwrap_or(0);
        // The bits that differ from `value`, from `at` on.
        let differ = if value { !word } else { word } >> (at % 64);
        let left = 64 - at % 64;
        let same = (differ.trailing_zeros() as usize).min(left);
        len += same;
        if same < left {
            break;
        }
    }
    len.min(max)
}

/// One node-local plugin's raw scores of the nodes `start..start + run.len()` of the list:
/// the known ones copied from `reused` (its column `m`, a slice per run of consecutive rows);
/// the others from the plugin's [`ScorePlugin::score_nodes`], one call per run of unknown
/// nodes. Without `copy_known` the known cells are left as they are. On failure, as
/// `score_nodes`: the first failing node of the run.
#[allow(clippy::too_many_arguments)]
pub(super) fn score_reusing(
    sp: &dyn ScorePlugin,
    state: &CycleState,
    pod: &PodInfo,
    run: &[&NodeInfo],
    start: usize,
    column: &mut [i64],
    (reused, m): (&ReusedScores, usize),
    copy_known: bool,
) -> Result<(), (usize, Status)> {
    let end = start + run.len();
    let kept = reused.column(m);
    let first = reused.segments.partition_point(|s| s.end <= start);
    for seg in &reused.segments[first..] {
        if seg.start >= end {
            break;
        }
        let (a, b) = (seg.start.max(start), seg.end.min(end));
        let cells = &mut column[a - start..b - start];
        match seg.row {
            Some(row) if copy_known => {
                let from = row + (a - seg.start);
                cells.copy_from_slice(&kept[from..from + (b - a)]);
            }
            Some(_) => {}
            None => sp
                .score_nodes(state, pod, &run[a - start..b - start], a, cells)
                .map_err(|(i, s)| (a - start + i, s))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reused(known: &[bool], rows: &[usize], places: usize) -> ReusedScores {
        let mut r = ReusedScores {
            plugins: vec!["A", "B"],
            known: known.to_vec(),
            rows: rows.to_vec(),
            places,
            scores: vec![0; 2 * places],
            ..ReusedScores::default()
        };
        r.prepare(&["A", "B"], known.len());
        r
    }

    #[test]
    fn the_list_is_cut_into_known_runs_of_consecutive_rows_and_unknown_runs() {
        let r = reused(
            &[true, true, true, false, false, true, true, true, true],
            &[4, 5, 6, 7, 0, 1, 2, 9, 8],
            10,
        );
        let seg = |start, end, row| Segment {
            start,
            end,
            row,
            partial: false,
        };
        assert_eq!(
            r.segments,
            [
                seg(0, 3, Some(4)),
                seg(3, 5, None),
                seg(5, 7, Some(1)),
                seg(7, 8, Some(9)),
                seg(8, 9, Some(8)),
            ]
        );
        assert_eq!(r.unknown_count(), 2);
    }

    #[test]
    fn known_set_by_the_memo_is_cut_as_prepare_cuts_it_and_prepare_keeps_the_cut() {
        let known = [
            true, true, true, false, false, true, true, true, true, false,
        ];
        let rows = [4, 5, 6, 7, 0, 1, 2, 9, 8, 3];
        let mut pushed = reused(&[false; 3], &[0, 1, 2], 10);
        pushed.rows = rows.to_vec();
        let by_row = |row| known[rows.iter().position(|&r| r == row).unwrap()];
        assert_eq!(pushed.set_known(by_row), 7);
        let cut = pushed.segments.clone();
        assert_eq!(pushed.known, known);
        assert_eq!(cut, reused(&known, &rows, 10).segments);
        // `prepare` keeps the cut made with `known` (a wrong one is not recomputed) ...
        pushed.segments[0].end = 2;
        pushed.prepare(&["A", "B"], rows.len());
        assert_eq!(pushed.segments[0].end, 2);
        // ... once: the next `prepare` cuts the list itself.
        pushed.prepare(&["A", "B"], rows.len());
        assert_eq!(pushed.segments, cut);
        assert_eq!(pushed.unknown_count(), 3);
        assert_eq!(pushed.unknown_nodes().collect::<Vec<_>>(), [3, 4, 9]);
    }

    #[test]
    fn known_from_a_bitmap_is_known_and_its_cut_as_by_row() {
        // Lists of runs of consecutive rows (long ones crossing words, a wrap to row 0,
        // repeated and descending rows, rows past the bitmap) against bitmaps of every kind.
        let mut seed: u64 = 7;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for case in 0..300 {
            let places = 1 + next(400) as usize;
            let bits: Vec<u64> = (0..places.div_ceil(64) - usize::from(case % 7 == 0))
                .map(|_| match next(4) {
                    0 => 0,
                    1 => u64::MAX,
                    2 => u64::MAX << next(64),
                    _ => (next(1 << 31) << 33) ^ next(1 << 31),
                })
                .collect();
            let mut rows = Vec::new();
            while rows.len() < 300 && next(8) != 0 {
                let start = next(places as u64 + 70) as usize;
                let len = 1 + next(150) as usize;
                match next(5) {
                    0 => rows.extend((0..len).map(|k| (start + k) % places)),
                    1 => rows.extend((start.saturating_sub(len)..start).rev()),
                    _ => rows.extend(start..start + len),
                }
            }
            let mut from_bits = reused(&[false; 2], &[0, 1], places + 300);
            from_bits.rows.clone_from(&rows);
            let mut by_row = from_bits.clone();
            let count = from_bits.set_known_from_bits(&bits);
            assert_eq!(count, by_row.set_known(|r| bit_at(&bits, r)), "{case}");
            assert_eq!(from_bits.known, by_row.known, "{case}");
            assert_eq!(from_bits.segments, by_row.segments, "{case}: {rows:?}");
            assert!(from_bits.segmented);
        }
    }

    #[test]
    fn scores_are_kept_plugin_major_by_row() {
        let mut r = reused(&[false, false, false], &[2, 0, 1], 4);
        r.set(0, 0, 10);
        r.set(0, 1, 11);
        r.set(2, 1, 21);
        assert_eq!(r.scores, [0, 0, 10, 0, 0, 21, 11, 0]);
        assert_eq!((r.get(0, 1), r.get(2, 1), r.get(1, 0)), (11, 21, 0));
        assert_eq!(r.column(1), [0, 21, 11, 0]);
    }

    #[test]
    fn a_known_run_s_totals_are_its_kept_partials_while_its_rows_and_the_plan_are_unchanged() {
        let plan = [
            (0, Normalization::Keeps, 2),
            (1, Normalization::ZeroTo(100), 1),
        ];
        let mut r = reused(&[false; 4], &[0, 1, 2, 3], 4);
        let table = [10, 20, 30, 40, 0, 0, 0, 0];
        r.fill(&[Some(0), Some(1)], &table);
        let mut totals = Vec::new();
        assert!(r.totals_from_kept(&plan, &table, &mut totals));
        assert_eq!(totals, [120, 140, 160, 180]);
        // All known: the partials (a raw score changed behind `set`'s back does not count) ...
        r.set_known(|_| true);
        r.prepare(&["A", "B"], 4);
        r.scores[1] = 99;
        totals.clear();
        assert!(r.totals_from_kept(&plan, &[], &mut totals));
        assert_eq!(totals, [120, 140, 160, 180]);
        // ... a row written through `set` is summed afresh, and keeps its new partial.
        r.set(1, 0, 50);
        assert!(r.totals_from_kept(&plan, &[], &mut totals));
        assert_eq!(totals, [120, 200, 160, 180]);
        // Another plan: every row summed afresh.
        let heavier = [(0, Normalization::Keeps, 3), plan[1]];
        assert!(r.totals_from_kept(&heavier, &[], &mut totals));
        assert_eq!(totals, [130, 250, 190, 220]);
        // A non-zero score of the constant plugin, written through `set`: no shortcut.
        r.set(2, 1, 5);
        assert!(!r.totals_from_kept(&heavier, &[], &mut totals));
        r.forget_partials();
        assert!(!r.partial_ok.contains(&true));
    }
}

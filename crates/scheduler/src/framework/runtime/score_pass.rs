//! The score pass of a scheduling cycle: the active Score plugins' raw scores over the
//! nodes (on the thread pool in chunks when wide), NormalizeScore, the range check and the
//! weighted totals (upstream `RunScorePlugins`).

use std::ops::Range;

use rayon::prelude::*;

use super::reused::{score_reusing, ReusedScores};
use super::{use_parallel, ScoreTable, PARALLEL_CHUNK_NODES};
use crate::framework::cycle_state::CycleState;
use crate::framework::interface::*;
use crate::framework::status::Status;
use crate::framework::types::{NodeInfo, PodInfo};

/// An active Score plugin: its name, the plugin and its weight.
pub(super) type ActiveScore<'a> = (&'static str, &'a dyn ScorePlugin, i64);

/// Per active plugin its column in `reused`, its normalization and its weight, when the
/// totals may be taken straight from the kept raw scores
/// ([`ReusedScores::totals_from_kept`]): the caller reads only the totals, some plugin is
/// active, and every active plugin is node-local and promises what its NormalizeScore does.
pub(super) fn totals_plan(
    active: &[ActiveScore<'_>],
    slots: &[Option<usize>],
    reused: &ReusedScores,
) -> Option<Vec<(usize, Normalization, i64)>> {
    if !reused.totals_only || active.is_empty() {
        return None;
    }
    let mut plan = Vec::with_capacity(active.len());
    for (&(_, sp, weight), slot) in active.iter().zip(slots) {
        let normalization = sp.normalization();
        if normalization == Normalization::Unknown {
            return None;
        }
        plan.push(((*slot)?, normalization, weight));
    }
    Some(plan)
}

/// What one pass of raw scores over the nodes reads.
pub(super) struct ScoreRun<'a> {
    pub(super) active: &'a [ActiveScore<'a>],
    /// Per active plugin: its column in `reused`, if it is node-local.
    pub(super) slots: &'a [Option<usize>],
    pub(super) reused: Option<&'a ReusedScores>,
    /// Whether the known nodes' kept scores are copied into the columns (else left out).
    pub(super) copy_known: bool,
    pub(super) state: &'a CycleState,
    pub(super) pod: &'a PodInfo,
    pub(super) nodes: &'a [&'a NodeInfo],
}

impl ScoreRun<'_> {
    /// The raw scores of the nodes `start..start + len` into `columns` (one per active plugin,
    /// `len` cells each). A failure is reported for the first failing node, and for that node
    /// the first failing plugin, as a node-by-node pass would.
    pub(super) fn run(&self, start: usize, columns: &mut [&mut [i64]]) -> Option<(usize, Status)> {
        let mut first_err: Option<(usize, Status)> = None;
        // Without copying the known nodes' scores, the node-local plugins score only the
        // runs of unknown nodes, found once for all of them.
        let mut unknown: Option<Vec<Range<usize>>> = None;
        for (k, column) in columns.iter_mut().enumerate() {
            let (name, sp, _) = self.active[k];
            let run = &self.nodes[start..start + column.len()];
            let result = match (self.slots[k], self.reused) {
                (Some(_), Some(r)) if !self.copy_known => {
                    let end = start + column.len();
                    let runs = unknown.get_or_insert_with(|| r.unknown_runs(start, end));
                    self.score_runs(sp, runs, start, column)
                }
                (Some(m), Some(r)) => {
                    let kept = (r, m);
                    score_reusing(
                        sp,
                        self.state,
                        self.pod,
                        run,
                        start,
                        column,
                        kept,
                        self.copy_known,
                    )
                }
                _ => sp.score_nodes(self.state, self.pod, run, start, column),
            };
            if let Err((i, s)) = result {
                if first_err.as_ref().is_none_or(|(j, _)| start + i < *j) {
                    let msg = format!("running Score plugin {name:?}: {}", s.message());
                    first_err = Some((start + i, Status::error(msg).plugin(name)));
                }
            }
        }
        first_err
    }

    /// `sp`'s raw scores of the nodes of `runs` (ranges of the list within the nodes from
    /// `start` on, whose cells `column` holds from its first); the other cells are left as
    /// they are. On failure, the first failing node (from `start`) and its status.
    pub(super) fn score_runs(
        &self,
        sp: &dyn ScorePlugin,
        runs: &[Range<usize>],
        start: usize,
        column: &mut [i64],
    ) -> Result<(), (usize, Status)> {
        for r in runs {
            let cells = &mut column[r.start - start..r.end - start];
            sp.score_nodes(self.state, self.pod, &self.nodes[r.clone()], r.start, cells)
                .map_err(|(i, s)| (r.start - start + i, s))?;
        }
        Ok(())
    }

    /// How many nodes some plugin computes a raw score of: all of them, unless every active
    /// plugin is node-local and rows are known, which are gathered, not computed.
    pub(super) fn computed_nodes(&self) -> usize {
        match self.reused {
            Some(r) if self.slots.iter().all(Option::is_some) => r.unknown_count(),
            _ => self.nodes.len(),
        }
    }

    /// All raw scores into `scores` (plugin-major, a column of `nodes.len()` cells per active
    /// plugin), computed in parallel over chunks of nodes when there are many (upstream scores
    /// nodes in parallel too). Every cell is written by exactly one task, in place, so the
    /// result does not depend on scheduling; of several failures the earliest node's wins.
    pub(super) fn all(&self, scores: &mut [i64]) -> Option<(usize, Status)> {
        let n = self.nodes.len();
        let k_plugins = self.active.len();
        if k_plugins == 0 || n == 0 {
            return None;
        }
        // (Counting the nodes to compute only when there are enough nodes and threads.)
        if !use_parallel(n) || !use_parallel(self.computed_nodes()) {
            let mut columns: Vec<&mut [i64]> = scores.chunks_mut(n).collect();
            return self.run(0, &mut columns);
        }
        let chunk_nodes = PARALLEL_CHUNK_NODES.max(n.div_ceil(rayon::current_num_threads() * 2));
        // Per chunk of nodes: its part of every plugin's column.
        let mut chunks: Vec<Vec<&mut [i64]>> = (0..n.div_ceil(chunk_nodes))
            .map(|_| Vec::with_capacity(k_plugins))
            .collect();
        for column in scores.chunks_mut(n) {
            for (c, part) in column.chunks_mut(chunk_nodes).enumerate() {
                chunks[c].push(part);
            }
        }
        chunks
            .into_par_iter()
            .enumerate()
            .filter_map(|(c, mut columns)| self.run(c * chunk_nodes, &mut columns))
            .min_by_key(|(i, _)| *i)
    }
}

/// NormalizeScore of every active plugin's column of `table.scores` (`n` nodes), the range
/// check, and the weighted totals.
pub(super) fn normalize_and_weigh(
    active: &[ActiveScore<'_>],
    state: &CycleState,
    pod: &PodInfo,
    n: usize,
    table: &mut ScoreTable,
) -> Result<(), Status> {
    // The first plugin's weighted scores are assigned, the others' added: the kept buffer
    // is not cleared first.
    table.totals.truncate(n);
    if active.is_empty() {
        table.totals.clear();
    }
    table.totals.resize(n, 0);
    for (k, &(name, sp, weight)) in active.iter().enumerate() {
        let column = &mut table.scores[k * n..(k + 1) * n];
        let s = sp.normalize_score(state, pod, column);
        if !s.is_success() {
            return Err(Status::error(format!(
                "running Normalize on Score plugins: plugin {name:?} failed with: {}",
                s.message()
            ))
            .plugin(name));
        }
        if let Some(score) = out_of_range(column) {
            return Err(Status::error(format!(
                "plugin {name:?} returns an invalid score {score}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
            ))
            .plugin(name));
        }
        add_weighted(&mut table.totals, column, weight, k == 0);
    }
    Ok(())
}

/// The first score of `column` outside `MIN_NODE_SCORE..=MAX_NODE_SCORE`, if any. The common
/// case (every score in range) is one OR over the column, which the compiler vectorises: a
/// score is in range exactly when neither `score - MIN` nor `MAX - score` is negative.
pub(super) fn out_of_range(column: &[i64]) -> Option<i64> {
    let signs = column.iter().fold(0i64, |acc, &s| {
        acc | s.wrapping_sub(MIN_NODE_SCORE) | MAX_NODE_SCORE.wrapping_sub(s)
    });
    if signs >= 0 {
        return None;
    }
    let valid = |score: i64| (MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&score);
    column.iter().copied().find(|&s| !valid(s))
}

/// `totals[i] (+)= column[i] * weight` (assigned when `first`). The default profile's
/// weights (1, 2, 3) have loops of their own, with the weight a constant: the compiler then
/// adds without a multiply for 1 and vectorises all three (a 64-bit multiply by a variable
/// does not vectorise on baseline x86-64).
pub(super) fn add_weighted(totals: &mut [i64], column: &[i64], weight: i64, first: bool) {
    match weight {
        1 => add_times::<1>(totals, column, first),
        2 => add_times::<2>(totals, column, first),
        3 => add_times::<3>(totals, column, first),
        w => {
            let pairs = totals.iter_mut().zip(column);
            match first {
                true => pairs.for_each(|(t, &s)| *t = s * w),
                false => pairs.for_each(|(t, &s)| *t += s * w),
            }
        }
    }
}

/// `totals[i] (+)= value` (assigned when `first`): a column whose scores are all one value.
pub(super) fn add_constant(totals: &mut [i64], value: i64, first: bool) {
    match first {
        true => totals.fill(value),
        false => totals.iter_mut().for_each(|t| *t += value),
    }
}

/// [`add_weighted`] with the weight `W` known to the compiler.
pub(super) fn add_times<const W: i64>(totals: &mut [i64], column: &[i64], first: bool) {
    let pairs = totals.iter_mut().zip(column);
    match first {
        true => pairs.for_each(|(t, &s)| *t = s * W),
        false => pairs.for_each(|(t, &s)| *t += s * W),
    }
}

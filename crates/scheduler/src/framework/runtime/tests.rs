//! Tests of the framework runner: scoring, its reuse of raw scores and its errors.

use super::*;
use crate::plugins::testing::{NodeBuilder, PodBuilder, PodBuilderExt};

/// Scores node `i` (by its name's number) as `i * factor`, failing on the nodes listed.
struct Numbered {
    name: &'static str,
    factor: i64,
    fail_on: Vec<usize>,
}

/// [`Numbered`], declared node-local.
struct Local(Numbered);

impl Plugin for Local {
    fn name(&self) -> &'static str {
        self.0.name
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl ScorePlugin for Local {
    fn score(&self, s: &CycleState, p: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.0.score(s, p, node)
    }
    fn node_local(&self) -> bool {
        true
    }
}

fn index_of(node: &NodeInfo) -> usize {
    node.name.trim_start_matches("n").parse().unwrap()
}

impl Plugin for Numbered {
    fn name(&self) -> &'static str {
        self.name
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl ScorePlugin for Numbered {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let i = index_of(node);
        if self.fail_on.contains(&i) {
            return Err(Status::error(format!("node {i}")));
        }
        Ok((i as i64 * self.factor) % 101)
    }
}

fn framework(plugins: Vec<Numbered>) -> Framework {
    let mut set = PluginSet::default();
    for (k, p) in plugins.into_iter().enumerate() {
        set.score
            .push((Arc::new(p) as Arc<dyn Plugin>, k as i64 + 1));
    }
    Framework {
        profile_name: "default-scheduler".into(),
        plugins: set,
        all_plugins: Vec::new(),
        percentage_of_nodes_to_score: None,
    }
}

fn run(fw: &Framework, n: usize) -> Result<ScoreTable, Status> {
    let nodes: Vec<NodeInfo> = (0..n)
        .map(|i| NodeBuilder::new(&format!("n{i}")).info())
        .collect();
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    let pod = PodBuilder::new("p").info();
    fw.run_score_plugins(&CycleState::new(), &pod, &refs)
}

fn two(fail_a: Vec<usize>, fail_b: Vec<usize>) -> Framework {
    framework(vec![
        Numbered {
            name: "A",
            factor: 3,
            fail_on: fail_a,
        },
        Numbered {
            name: "B",
            factor: 7,
            fail_on: fail_b,
        },
    ])
}

#[test]
fn known_raw_scores_of_node_local_plugins_are_taken_and_the_rest_filled_in() {
    let numbered = |name, factor| Numbered {
        name,
        factor,
        fail_on: vec![],
    };
    let mut set = PluginSet::default();
    set.score
        .push((Arc::new(Local(numbered("L", 3))) as Arc<dyn Plugin>, 1));
    set.score
        .push((Arc::new(numbered("N", 7)) as Arc<dyn Plugin>, 2));
    let fw = Framework {
        profile_name: "default-scheduler".into(),
        plugins: set,
        all_plugins: Vec::new(),
        percentage_of_nodes_to_score: None,
    };
    for n in [6, PARALLEL_MIN_NODES + 37] {
        let nodes: Vec<NodeInfo> = (0..n)
            .map(|i| NodeBuilder::new(&format!("n{i}")).info())
            .collect();
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let pod = PodBuilder::new("p").info();
        let state = CycleState::new();
        let plain = fw.run_score_plugins(&state, &pod, &refs).unwrap();
        // Nothing known: the same table, and every row filled in.
        let mut r = ReusedScores::default();
        let mut t = ScoreTable::default();
        fw.run_score_plugins_into(&state, &pod, &refs, Some(&mut r), &mut t)
            .unwrap();
        assert_eq!(t, plain);
        assert_eq!(r.plugins, ["L"]);
        assert!(r.filled);
        assert_eq!(r.rows, (0..n).collect::<Vec<_>>());
        assert_eq!(r.scores, plain.scores[..n]);
        // Node 1's raw score said to be 50 (kept in row 3): taken as it is (only L is
        // node-local); the same table is used again.
        r.rows.swap(1, 3);
        r.known = vec![false; n];
        r.known[1] = true;
        r.set(1, 0, 50);
        fw.run_score_plugins_into(&state, &pod, &refs, Some(&mut r), &mut t)
            .unwrap();
        assert_eq!(t.scores[1], 50);
        assert_eq!(t.scores[n + 1], plain.scores[n + 1]);
        assert_eq!(t.totals[1], 50 + 2 * plain.scores[n + 1]);
        // Node 3's score was written into its row, 1.
        assert_eq!(
            (r.get(3, 0), r.scores[1]),
            (plain.scores[3], plain.scores[3])
        );
        for i in (0..n).filter(|&i| i != 1) {
            assert_eq!(t.totals[i], plain.totals[i], "node {i}");
        }
    }
}

/// A node-local plugin `L` (factor 3, failing on the nodes listed) and a plain one.
fn local_and_plain(fail_on: Vec<usize>) -> Framework {
    let mut set = PluginSet::default();
    let local = Numbered {
        name: "L",
        factor: 3,
        fail_on,
    };
    set.score
        .push((Arc::new(Local(local)) as Arc<dyn Plugin>, 1));
    let plain = Numbered {
        name: "N",
        factor: 7,
        fail_on: vec![],
    };
    set.score.push((Arc::new(plain) as Arc<dyn Plugin>, 2));
    Framework {
        profile_name: "default-scheduler".into(),
        plugins: set,
        all_plugins: Vec::new(),
        percentage_of_nodes_to_score: None,
    }
}

#[test]
fn runs_of_known_and_unknown_rows_are_gathered_and_scored_apart() {
    let n = 12;
    let nodes: Vec<NodeInfo> = (0..n)
        .map(|i| NodeBuilder::new(&format!("n{i}")).info())
        .collect();
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    let (pod, state) = (PodBuilder::new("p").info(), CycleState::new());
    let fw = local_and_plain(vec![]);
    let plain = fw.run_score_plugins(&state, &pod, &refs).unwrap();
    // Unknown first and last, alone and in runs; the known rows hold 1000 + the node.
    let unknown = [0, 3, 4, 5, 8, 11];
    let reused = || {
        let mut r = ReusedScores::default();
        r.prepare(&["L"], n);
        r.rows = (0..n).rev().collect();
        r.known = (0..n).map(|i| !unknown.contains(&i)).collect();
        for i in (0..n).filter(|i| !unknown.contains(i)) {
            r.set(i, 0, 1000 + i as i64);
        }
        r
    };
    let mut r = reused();
    let mut t = ScoreTable::default();
    // (The out-of-range known scores make the table fail its range check: read the raw
    // scores the pass left, before normalizing.)
    let _ = fw.run_score_plugins_into(&state, &pod, &refs, Some(&mut r), &mut t);
    for i in 0..n {
        let want = match unknown.contains(&i) {
            true => plain.scores[i],
            false => 1000 + i as i64,
        };
        assert_eq!(t.scores[i], want, "node {i}");
        assert_eq!(r.get(i, 0), want, "node {i}'s row");
    }
    // A failing unknown node is reported as itself, after a run of known ones.
    let fw = local_and_plain(vec![8, 11]);
    let err = fw
        .run_score_plugins_into(&state, &pod, &refs, Some(&mut reused()), &mut t)
        .unwrap_err();
    assert_eq!(err.message(), "running Score plugin \"L\": node 8");
    // Failing only on a known node: its kept score is used, no error.
    let fw = local_and_plain(vec![2]);
    let mut r = reused();
    for i in 0..n {
        r.set(i, 0, plain.scores[i]);
    }
    let t = fw.run_score_plugins(&state, &pod, &refs);
    assert!(t.is_err());
    let mut t = ScoreTable::default();
    fw.run_score_plugins_into(&state, &pod, &refs, Some(&mut r), &mut t)
        .unwrap();
    assert_eq!(t, plain);
}

#[test]
fn a_kept_table_gives_what_a_fresh_one_does_whatever_it_held_before() {
    let fw = two(vec![], vec![]);
    let pod = PodBuilder::new("p").info();
    let nodes: Vec<NodeInfo> = (0..PARALLEL_MIN_NODES + 37)
        .map(|i| NodeBuilder::new(&format!("n{}", i * 5 % 101)).info())
        .collect();
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    let mut kept = ScoreTable::default();
    for n in [7, PARALLEL_MIN_NODES + 37, 7, 3, 0] {
        let fresh = fw
            .run_score_plugins(&CycleState::new(), &pod, &refs[..n])
            .unwrap();
        fw.run_score_plugins_into(&CycleState::new(), &pod, &refs[..n], None, &mut kept)
            .unwrap();
        assert_eq!(kept, fresh, "{n} nodes");
        assert_eq!(kept.totals.len(), n);
    }
    // No score plugin ran: every total is 0.
    let none = framework(vec![]);
    none.run_score_plugins_into(&CycleState::new(), &pod, &refs[..4], None, &mut kept)
        .unwrap();
    assert_eq!((kept.plugins.len(), kept.totals), (0, vec![0; 4]));
}

/// Scores every node `score`, except node 3, which scores `odd`.
struct Fixed(i64, i64);

impl Plugin for Fixed {
    fn name(&self) -> &'static str {
        "Fixed"
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl ScorePlugin for Fixed {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(if index_of(node) == 3 { self.1 } else { self.0 })
    }
}

#[test]
fn a_score_out_of_range_after_normalizing_is_an_error_naming_it() {
    let mut fw = two(vec![], vec![]);
    let pod = PodBuilder::new("p").info();
    let nodes: Vec<NodeInfo> = (0..6)
        .map(|i| NodeBuilder::new(&format!("n{i}")).info())
        .collect();
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    let mut table = ScoreTable::default();
    for (odd, ok) in [(100, true), (0, true), (101, false), (-1, false)] {
        fw.plugins.score.truncate(2);
        fw.plugins
            .score
            .push((Arc::new(Fixed(50, odd)) as Arc<dyn Plugin>, 1));
        let r = fw.run_score_plugins_into(&CycleState::new(), &pod, &refs, None, &mut table);
        if ok {
            assert!(r.is_ok(), "{odd}");
            assert_eq!(table.totals[3], 9 + 2 * 21 + odd);
        } else {
            assert_eq!(
                r.unwrap_err().message(),
                format!("plugin \"Fixed\" returns an invalid score {odd}, it should in the range of [0, 100] after normalizing")
            );
        }
    }
}

#[test]
fn scores_are_plugin_major_and_weighted() {
    for n in [5, PARALLEL_MIN_NODES + 37] {
        let table = run(&two(vec![], vec![]), n).unwrap();
        assert_eq!(table.plugins, vec!["A", "B"]);
        for i in 0..n {
            let (a, b) = ((i as i64 * 3) % 101, (i as i64 * 7) % 101);
            assert_eq!(table.scores[i], a, "A of node {i}");
            assert_eq!(table.scores[n + i], b, "B of node {i}");
            assert_eq!(table.totals[i], a + 2 * b, "total of node {i}");
        }
    }
}

#[test]
fn the_first_failing_node_is_reported_then_the_first_plugin() {
    for n in [10, PARALLEL_MIN_NODES + 37] {
        // B fails on an earlier node than A: B's failure is reported.
        let err = run(&two(vec![7, 9], vec![4, 8]), n).unwrap_err();
        assert_eq!(err.message(), "running Score plugin \"B\": node 4");
        // The failing nodes of a plugin need not be listed in order.
        let err = run(&two(vec![6], vec![6, 2]), n).unwrap_err();
        assert_eq!(err.message(), "running Score plugin \"B\": node 2");
        // Both fail on the same node first: the first plugin wins.
        let err = run(&two(vec![3], vec![3]), n).unwrap_err();
        assert_eq!(err.message(), "running Score plugin \"A\": node 3");
    }
    // A failure in a later chunk of a parallel pass loses to an earlier one.
    let n = PARALLEL_MIN_NODES + 37;
    let err = run(&two(vec![n - 1], vec![n - 2, 1]), n).unwrap_err();
    assert_eq!(err.message(), "running Score plugin \"B\": node 1");
}

/// [`Local`] that notes the pool thread each score is computed on.
struct Watched(Local, std::sync::Mutex<Vec<Option<usize>>>);

impl Plugin for Watched {
    fn name(&self) -> &'static str {
        "W"
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl ScorePlugin for Watched {
    fn score(&self, s: &CycleState, p: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.1.lock().unwrap().push(rayon::current_thread_index());
        self.0.score(s, p, node)
    }
    fn node_local(&self) -> bool {
        true
    }
}

#[test]
fn only_the_nodes_to_compute_decide_whether_scoring_goes_to_the_pool() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    let watched = Arc::new(Watched(
        Local(Numbered {
            name: "W",
            factor: 3,
            fail_on: vec![],
        }),
        Default::default(),
    ));
    let mut set = PluginSet::default();
    set.score.push((watched.clone() as Arc<dyn Plugin>, 1));
    let fw = Framework {
        profile_name: "default-scheduler".into(),
        plugins: set,
        all_plugins: Vec::new(),
        percentage_of_nodes_to_score: None,
    };
    let n = 4 * PARALLEL_MIN_NODES;
    let nodes: Vec<NodeInfo> = (0..n)
        .map(|i| NodeBuilder::new(&format!("n{i}")).info())
        .collect();
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    let pod = PodBuilder::new("p").info();
    let state = CycleState::new();
    let plain = fw.run_score_plugins(&state, &pod, &refs).unwrap();
    pool.install(|| {
        // Nothing known: every node is scored, on the pool's threads.
        let mut r = ReusedScores::default();
        let mut t = ScoreTable::default();
        fw.run_score_plugins_into(&state, &pod, &refs, Some(&mut r), &mut t)
            .unwrap();
        assert_eq!(t, plain);
        // All but three rows known: those three are scored on the calling thread, and the
        // table is the same.
        r.known = vec![true; n];
        for i in [0, 7, n - 1] {
            r.known[i] = false;
        }
        watched.1.lock().unwrap().clear();
        fw.run_score_plugins_into(&state, &pod, &refs, Some(&mut r), &mut t)
            .unwrap();
        assert_eq!(t, plain);
        let threads = std::mem::take(&mut *watched.1.lock().unwrap());
        assert_eq!(threads, vec![rayon::current_thread_index(); 3]);
    });
}

#[test]
fn out_of_range_finds_the_first_score_outside_the_bounds_by_both_signs() {
    assert_eq!(out_of_range(&[]), None);
    assert_eq!(out_of_range(&[0, 100, 50, 1, 99]), None);
    for bad in [
        101,
        -1,
        i64::MIN,
        i64::MAX,
        i64::MIN + 50,
        MAX_NODE_SCORE + (1 << 62),
    ] {
        assert_eq!(out_of_range(&[3, 100, bad, 0, -7]), Some(bad), "{bad}");
    }
    assert_eq!(out_of_range(&[3, 200, -5]), Some(200));
}

#[test]
fn weighted_totals_are_assigned_first_then_added_for_constant_and_other_weights() {
    let mut totals = vec![7, 7, 7];
    add_weighted(&mut totals, &[1, 2, 3], 1, true);
    assert_eq!(totals, [1, 2, 3]);
    add_weighted(&mut totals, &[10, 20, 30], 1, false);
    assert_eq!(totals, [11, 22, 33]);
    add_weighted(&mut totals, &[1, 0, 2], 3, false);
    assert_eq!(totals, [14, 22, 39]);
    add_weighted(&mut totals, &[4, 5, 6], 2, true);
    assert_eq!(totals, [8, 10, 12]);
    add_weighted(&mut totals, &[1, 2, 3], 7, false);
    assert_eq!(totals, [15, 24, 33]);
    add_weighted(&mut totals, &[1, 2, 3], 5, true);
    assert_eq!(totals, [5, 10, 15]);
    add_weighted(&mut totals, &[1, 1, 0], 2, false);
    assert_eq!(totals, [7, 12, 15]);
    add_weighted(&mut totals, &[2, 0, 1], 3, true);
    assert_eq!(totals, [6, 0, 3]);
}

/// [`Numbered`], node-local, promising `normalization` (`ZeroTo` normalizes reversed, as
/// TaintToleration does).
struct Promising(Numbered, Normalization);

impl Plugin for Promising {
    fn name(&self) -> &'static str {
        self.0.name
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl ScorePlugin for Promising {
    fn score(&self, s: &CycleState, p: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.0.score(s, p, node)
    }
    fn node_local(&self) -> bool {
        true
    }
    fn normalize_score(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) -> Status {
        if let Normalization::ZeroTo(_) = self.1 {
            crate::plugins::helper::default_normalize_score(MAX_NODE_SCORE, true, scores);
        }
        Status::success()
    }
    fn normalization(&self) -> Normalization {
        self.1
    }
}

/// K (keeps, factor 3, weight 1), Z (all-zero column to 100, weight 2), J (keeps, factor 7,
/// weight 3).
fn promising() -> Framework {
    let numbered = |name, factor| Numbered {
        name,
        factor,
        fail_on: vec![],
    };
    let mut set = PluginSet::default();
    for (name, factor, normalization, weight) in [
        ("K", 3, Normalization::Keeps, 1),
        ("Z", 0, Normalization::ZeroTo(MAX_NODE_SCORE), 2),
        ("J", 7, Normalization::Keeps, 3),
    ] {
        let p = Promising(numbered(name, factor), normalization);
        set.score.push((Arc::new(p) as Arc<dyn Plugin>, weight));
    }
    Framework {
        profile_name: "default-scheduler".into(),
        plugins: set,
        all_plugins: Vec::new(),
        percentage_of_nodes_to_score: None,
    }
}

#[test]
fn totals_from_the_kept_scores_are_the_full_pass_s_or_it_runs_in_full() {
    let n = 12;
    let nodes: Vec<NodeInfo> = (0..n)
        .map(|i| NodeBuilder::new(&format!("n{i}")).info())
        .collect();
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    let (pod, state, fw) = (PodBuilder::new("p").info(), CycleState::new(), promising());
    let plain = fw.run_score_plugins(&state, &pod, &refs).unwrap();
    assert_eq!(plain.totals[5], 15 + 2 * 100 + 3 * 35);
    // Nothing known yet: the totals of the full pass, and every row filled in.
    let mut r = ReusedScores::default();
    r.totals_only = true;
    let mut t = ScoreTable::default();
    fw.run_score_plugins_into(&state, &pod, &refs, Some(&mut r), &mut t)
        .unwrap();
    assert_eq!(t.totals, plain.totals);
    // Known but nodes 3, 4 and 9: the known cells of the table are not written.
    let known: Vec<bool> = (0..n).map(|i| ![3, 4, 9].contains(&i)).collect();
    let again = |r: &ReusedScores, totals_only: bool, t: &mut ScoreTable| {
        let mut r = r.clone();
        (r.known, r.totals_only) = (known.clone(), totals_only);
        t.scores.iter_mut().for_each(|s| *s = -7);
        fw.run_score_plugins_into(&state, &pod, &refs, Some(&mut r), t)
    };
    again(&r, true, &mut t).unwrap();
    assert_eq!(t.totals, plain.totals);
    assert_eq!((t.scores[0], t.scores[3], t.scores[n + 4]), (-7, 9, 0));
    again(&r, false, &mut t).unwrap();
    assert_eq!(t, plain);
    // A non-zero kept score of Z: normalized in full, as without the shortcut.
    let mut nonzero = r.clone();
    nonzero.set(2, 1, 4);
    let mut full = ScoreTable::default();
    again(&nonzero, false, &mut full).unwrap();
    assert_ne!(full.totals, plain.totals);
    again(&nonzero, true, &mut t).unwrap();
    assert_eq!(t, full);
    // A kept score out of range: the full pass's error.
    let mut wrong = r.clone();
    wrong.set(6, 2, 101);
    let want = again(&wrong, false, &mut full).unwrap_err();
    assert_eq!(again(&wrong, true, &mut t).unwrap_err(), want);
    assert!(want
        .message()
        .contains("\"J\" returns an invalid score 101"));
}

/// [`promising`]'s K and J, failing on the nodes listed (K's, then J's).
fn promising_failing(fail_k: Vec<usize>, fail_j: Vec<usize>) -> Framework {
    let mut set = PluginSet::default();
    for (name, factor, fail_on, weight) in [("K", 3, fail_k, 1), ("J", 7, fail_j, 3)] {
        let numbered = Numbered {
            name,
            factor,
            fail_on,
        };
        let p = Promising(numbered, Normalization::Keeps);
        set.score.push((Arc::new(p) as Arc<dyn Plugin>, weight));
    }
    Framework {
        profile_name: "default-scheduler".into(),
        plugins: set,
        all_plugins: Vec::new(),
        percentage_of_nodes_to_score: None,
    }
}

#[test]
fn without_copying_known_scores_only_the_unknown_runs_are_scored_and_fail() {
    let n = 12;
    let nodes: Vec<NodeInfo> = (0..n)
        .map(|i| NodeBuilder::new(&format!("n{i}")).info())
        .collect();
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    let (pod, state) = (PodBuilder::new("p").info(), CycleState::new());
    let plain = promising_failing(vec![], vec![])
        .run_score_plugins(&state, &pod, &refs)
        .unwrap();
    // Every row filled in once, then nodes 0, 3, 4, 9 and 11 not known.
    let mut r = ReusedScores::default();
    r.totals_only = true;
    let mut t = ScoreTable::default();
    promising_failing(vec![], vec![])
        .run_score_plugins_into(&state, &pod, &refs, Some(&mut r), &mut t)
        .unwrap();
    let known: Vec<bool> = (0..n).map(|i| ![0, 3, 4, 9, 11].contains(&i)).collect();
    let again = |fw: &Framework, t: &mut ScoreTable| {
        let mut r = r.clone();
        r.known = known.clone();
        t.scores.iter_mut().for_each(|s| *s = -7);
        fw.run_score_plugins_into(&state, &pod, &refs, Some(&mut r), t)
    };
    again(&promising_failing(vec![], vec![]), &mut t).unwrap();
    assert_eq!(t.totals, plain.totals);
    // The unknown cells written, the known ones left.
    let want: Vec<i64> = (0..2 * n)
        .map(|c| match known[c % n] {
            true => -7,
            false => plain.scores[c],
        })
        .collect();
    assert_eq!(t.scores, want);
    // Failing on known nodes only: their kept scores are taken, no error.
    again(&promising_failing(vec![1, 2], vec![5, 10]), &mut t).unwrap();
    assert_eq!(t.totals, plain.totals);
    // The first failing unknown node wins, whichever plugin it is; on one node, the first
    // plugin.
    let err = |fw: Framework, t: &mut ScoreTable| again(&fw, t).unwrap_err().message();
    let message = err(promising_failing(vec![9, 2], vec![4, 11]), &mut t);
    assert_eq!(message, "running Score plugin \"J\": node 4");
    let message = err(promising_failing(vec![11, 3], vec![3]), &mut t);
    assert_eq!(message, "running Score plugin \"K\": node 3");
    let message = err(promising_failing(vec![], vec![11]), &mut t);
    assert_eq!(message, "running Score plugin \"J\": node 11");
}

//! Tests of the node-local memo: verdicts, scored places, kept scores and the change log.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::framework::Code;
use crate::plugins::testing::{snapshot, NodeBuilder, PodBuilder, PodBuilderExt};

fn snap(n: usize) -> Snapshot {
    snapshot(
        (0..n)
            .map(|i| NodeBuilder::new(&format!("n{i}")).info())
            .collect(),
    )
}

#[test]
fn a_verdict_holds_for_the_same_nodeinfo_at_the_same_place_and_an_identical_spec() {
    let mut s = snap(3);
    let web = PodBuilder::new("web-1").label("app", "web").info();
    let mut memo = NodeLocalMemo::default();
    memo.begin(&web, &s);
    let n0 = s.node_infos[0].clone();
    assert!(!memo.passed(0, &n0));
    memo.record_filter(0, &n0, FilterVerdict::Passed);
    memo.record_filter(1, &s.node_infos[1].clone(), FilterVerdict::Unknown);
    assert!(memo.passed(0, &n0));
    assert!(!memo.passed(1, &s.node_infos[1]));
    assert!(!memo.passed(2, &n0), "another place");
    // Another replica (same spec, other name and labels): still known.
    let web2 = PodBuilder::new("web-2").label("app", "other").info();
    memo.begin(&web2, &s);
    assert!(memo.passed(0, &n0));
    // The node changed: a new NodeInfo at the same place.
    s.node_infos[0] = Arc::new((*n0).clone());
    assert!(!memo.passed(0, &s.node_infos[0]));
    memo.record_filter(0, &s.node_infos[0].clone(), FilterVerdict::Passed);
    // A different spec, or other image counts, start over.
    let big = PodBuilder::new("big").req(&[("cpu", "2")]).info();
    memo.begin(&big, &s);
    assert!(!memo.passed(0, &s.node_infos[0]));
    memo.record_filter(0, &s.node_infos[0].clone(), FilterVerdict::Passed);
    s.image_generation += 1;
    memo.begin(&big, &s);
    assert!(!memo.passed(0, &s.node_infos[0]));
}

#[test]
fn a_failure_is_kept_with_its_status_for_the_same_nodeinfo() {
    let mut s = snap(2);
    let mut memo = NodeLocalMemo::default();
    memo.begin(&PodBuilder::new("p").info(), &s);
    let cpu = Status::unschedulable("Insufficient cpu").plugin("NodeResourcesFit");
    let id = memo.intern_failure(&cpu);
    assert_eq!(memo.intern_failure(&cpu.clone()), id);
    let n0 = s.node_infos[0].clone();
    memo.record_filter(0, &n0, FilterVerdict::Failed(id));
    assert_eq!(memo.verdict(0, &n0), FilterVerdict::Failed(id));
    assert!(!memo.passed(0, &n0));
    assert_eq!(*memo.failure(id), cpu);
    // Another replica: still known. The node changes: unknown.
    memo.begin(&PodBuilder::new("q").info(), &s);
    assert_eq!(memo.verdict(0, &n0), FilterVerdict::Failed(id));
    s.node_infos[0] = Arc::new((*n0).clone());
    assert_eq!(memo.verdict(0, &s.node_infos[0]), FilterVerdict::Unknown);
    // Another spec forgets the failures.
    let big = PodBuilder::new("big").req(&[("cpu", "2")]).info();
    memo.begin(&big, &s);
    assert_eq!(memo.failure_count(), 0);
    // Too many distinct failures: forgotten at the next cycle, successes kept.
    let n1 = s.node_infos[1].clone();
    memo.record_filter(1, &n1, FilterVerdict::Passed);
    for i in 0..=MAX_FAILURES {
        memo.intern_failure(&Status::unresolvable(format!("reason {i}")));
    }
    memo.record_filter(0, &s.node_infos[0].clone(), FilterVerdict::Failed(3));
    memo.begin(&big, &s);
    assert_eq!(memo.failure_count(), 0);
    assert_eq!(memo.verdict(0, &s.node_infos[0]), FilterVerdict::Unknown);
    assert!(memo.passed(1, &n1));
}

#[test]
fn the_unknown_count_follows_the_verdicts_and_the_replaced_places() {
    let mut s = snap(5);
    let nodes = s.node_infos.clone();
    s.set_nodes(nodes);
    let pod = PodBuilder::new("p").info();
    let mut memo = NodeLocalMemo::default();
    memo.begin(&pod, &s);
    assert_eq!(memo.unknown_count(), 5);
    let cpu = memo.intern_failure(&Status::unschedulable("Insufficient cpu"));
    for place in 0..4 {
        let verdict = match place % 2 {
            0 => FilterVerdict::Passed,
            _ => FilterVerdict::Failed(cpu),
        };
        memo.record_filter(place, &s.node_infos[place].clone(), verdict);
    }
    memo.record_filter(1, &s.node_infos[1].clone(), FilterVerdict::Failed(cpu));
    memo.begin(&pod, &s);
    assert_eq!(memo.unknown_count(), 1);
    // Places 0 and 4 replaced through the log (4 twice): 0's verdict is forgotten.
    for place in [0, 4, 4] {
        s.replace_node(place, Arc::new((*s.node_infos[place]).clone()));
    }
    memo.begin(&pod, &s);
    assert_eq!(memo.unknown_count(), 2);
    assert_eq!(memo.verdict(0, &s.node_infos[0]), FilterVerdict::Unknown);
    assert_eq!(
        memo.verdict(1, &s.node_infos[1]),
        FilterVerdict::Failed(cpu)
    );
    memo.record_filter(4, &s.node_infos[4].clone(), FilterVerdict::Passed);
    memo.begin(&pod, &s);
    assert_eq!(memo.unknown_count(), 1);
    // A new list (no log to read) with place 2 replaced: found by comparing NodeInfos.
    let mut nodes = s.node_infos.clone();
    nodes[2] = Arc::new((*nodes[2]).clone());
    s.set_nodes(nodes);
    memo.begin(&pod, &s);
    assert_eq!(memo.unknown_count(), 2);
    // Another spec knows nothing.
    memo.begin(&PodBuilder::new("big").req(&[("cpu", "2")]).info(), &s);
    assert_eq!(memo.unknown_count(), 5);
}

/// Rejects the nodes whose names are listed (with `code`), counting its calls.
struct Rejecting {
    local: bool,
    code: Code,
    nodes: &'static [&'static str],
    calls: AtomicUsize,
}

fn rejecting(local: bool, code: Code, nodes: &'static [&'static str]) -> Rejecting {
    Rejecting {
        local,
        code,
        nodes,
        calls: AtomicUsize::new(0),
    }
}

impl FilterPlugin for Rejecting {
    fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.nodes.contains(&node.name.as_str()) {
            Status::new(self.code, format!("no {}", node.name))
        } else {
            Status::success()
        }
    }
    fn node_local(&self) -> bool {
        self.local
    }
}

#[test]
fn a_filter_run_notes_the_node_local_verdict_and_runs_only_what_is_not_known() {
    let first = rejecting(true, Code::UnschedulableAndUnresolvable, &["a", "f"]);
    let spread = rejecting(false, Code::Unschedulable, &["b", "c", "f"]);
    let last = rejecting(true, Code::Unschedulable, &["c", "d", "g"]);
    let failing = rejecting(false, Code::Error, &["e", "g"]);
    let broken = rejecting(true, Code::Error, &["h"]);
    let run = FilterRun::new(vec![
        ("First", &first),
        ("Spread", &spread),
        ("Last", &last),
        ("Failing", &failing),
        ("Broken", &broken),
    ]);
    assert!(!run.all_local() && !run.locals_first);
    let (state, pod) = (CycleState::new(), PodBuilder::new("p").info());
    let node = |name: &str| NodeBuilder::new(name).info();
    let check = |name: &str| {
        let (s, local) = run.noting_local(&state, &pod, &node(name));
        // The full run in order gives the same status.
        assert_eq!(s, run.full(&state, &pod, &node(name)), "{name}");
        (s.plugin, s.message(), local)
    };
    let no = |plugin: &'static str, m: &str| Status::unschedulable(m.to_string()).plugin(plugin);
    assert_eq!(check("ok"), ("", String::new(), LocalVerdict::AsNode));
    assert_eq!(check("a"), ("First", "no a".into(), LocalVerdict::AsNode));
    // A filter that is not node-local decides; the node-local ones after it still tell.
    assert_eq!(check("b"), ("Spread", "no b".into(), LocalVerdict::Passed));
    let c = LocalVerdict::Failed(no("Last", "no c"));
    assert_eq!(check("c"), ("Spread", "no c".into(), c));
    assert_eq!(check("d"), ("Last", "no d".into(), LocalVerdict::AsNode));
    let e = "running \"Failing\" filter plugin: no e";
    assert_eq!(check("e"), ("Failing", e.into(), LocalVerdict::Passed));
    assert_eq!(
        check("h"),
        (
            "Broken",
            "running \"Broken\" filter plugin: no h".into(),
            LocalVerdict::AsNode
        )
    );
    // Node-local filters known to pass: only the others run, with the full run's status.
    // Known to fail: the others placed before the failing one decide if they reject.
    let full: Vec<Status> = ["ok", "b", "e", "c"]
        .iter()
        .map(|name| run.full(&state, &pod, &node(name)))
        .collect();
    let calls = || {
        (
            first.calls.load(Ordering::Relaxed),
            last.calls.load(Ordering::Relaxed),
        )
    };
    let before = calls();
    for (name, full) in ["ok", "b", "e"].iter().zip(&full) {
        assert_eq!(run.others_only(&state, &pod, &node(name)), *full, "{name}");
        let failure = run.others_failure(&state, &pod, &node(name));
        assert_eq!(failure.is_none(), full.is_success(), "{name}");
    }
    let known =
        |failure: Status, name: &str| run.before_local_failure(&failure, &state, &pod, &node(name));
    assert_eq!(known(no("Last", "no d"), "d"), None);
    assert_eq!(known(no("First", "no f"), "f"), None);
    assert_eq!(known(no("Last", "no g"), "g"), None);
    assert_eq!(known(no("Last", "no c"), "c"), Some(full[3].clone()));
    assert_eq!(calls(), before, "no node-local filter ran");
    // Node-local filters first (the default order): their failure is the node's.
    let ordered = FilterRun::new(vec![
        ("First", &first),
        ("Last", &last),
        ("Spread", &spread),
    ]);
    assert!(ordered.locals_first);
    let spread_calls = spread.calls.load(Ordering::Relaxed);
    let c_local = no("Last", "no c");
    assert_eq!(
        ordered.before_local_failure(&c_local, &state, &pod, &node("c")),
        None
    );
    assert_eq!(spread.calls.load(Ordering::Relaxed), spread_calls);
    assert!(FilterRun::new(vec![("First", &first)]).all_local());
}

/// What the scoring does with lent scores: the rows of the nodes not known are written
/// (`rows[j]` is node `j`'s scores).
fn score(r: &mut ReusedScores, plugins: &[&'static str], rows: &[&[i64]]) {
    r.prepare(plugins, rows.len());
    for (j, row) in rows.iter().enumerate() {
        if !r.known[j] {
            for (m, &v) in row.iter().enumerate() {
                r.set(j, m, v);
            }
        }
    }
    r.filled = true;
}

/// The known rows of raw scores of the nodes at `places`.
fn known(memo: &mut NodeLocalMemo, places: &[usize], s: &Snapshot) -> Vec<Option<Vec<i64>>> {
    let r = memo.reused_scores(places, &s.node_infos);
    let m = r.plugins.len();
    let rows = (0..places.len())
        .map(|j| r.known[j].then(|| (0..m).map(|k| r.get(j, k)).collect()))
        .collect();
    memo.record_scores(places, &s.node_infos, r);
    rows
}

#[test]
fn raw_scores_are_kept_per_place_and_dropped_for_changed_nodes_or_other_plugins() {
    let mut s = snap(4);
    let pod = PodBuilder::new("p").info();
    let mut memo = NodeLocalMemo::default();
    memo.begin(&pod, &s);
    let places = [2, 0, 3];
    let mut r = memo.reused_scores(&places, &s.node_infos);
    assert_eq!(r.known, [false, false, false]);
    score(&mut r, &["A", "B"], &[&[20, 21], &[0, 1], &[30, 31]]);
    memo.record_scores(&places, &s.node_infos, r);
    assert_eq!(
        known(&mut memo, &[0, 1, 3], &s),
        [Some(vec![0, 1]), None, Some(vec![30, 31])]
    );
    assert_eq!(memo.scores_reused, 2);
    // Scores not filled in (the cycle failed) are not kept.
    let mut r = memo.reused_scores(&[1], &s.node_infos);
    score(&mut r, &["A", "B"], &[&[10, 11]]);
    r.filled = false;
    memo.record_scores(&[1], &s.node_infos, r);
    assert_eq!(known(&mut memo, &[1], &s), [None]);
    // Node 3 changes; another plugin list replaces what was kept.
    s.node_infos[3] = Arc::new((*s.node_infos[3]).clone());
    assert_eq!(known(&mut memo, &[3, 2], &s), [None, Some(vec![20, 21])]);
    let mut r = memo.reused_scores(&[1], &s.node_infos);
    score(&mut r, &["A"], &[&[7]]);
    memo.record_scores(&[1], &s.node_infos, r);
    assert_eq!(known(&mut memo, &[1, 2], &s), [Some(vec![7]), None]);
}

#[test]
fn the_scored_bits_of_places_in_several_words_follow_the_change_log() {
    // 150 places (three words of bits), a list wrapping around and crossing words.
    let mut s = snap(150);
    let nodes = s.node_infos.clone();
    s.set_nodes(nodes);
    let pod = PodBuilder::new("p").info();
    let mut memo = NodeLocalMemo::default();
    memo.begin(&pod, &s);
    let first: Vec<usize> = (60..140).chain(0..10).collect();
    let mut r = memo.reused_scores(&first, &s.node_infos);
    let rows: Vec<[i64; 1]> = first.iter().map(|&p| [p as i64]).collect();
    let rows: Vec<&[i64]> = rows.iter().map(|r| r.as_slice()).collect();
    score(&mut r, &["A"], &rows);
    memo.record_scores(&first, &s.node_infos, r);
    let replaced = [63, 64, 127];
    for place in replaced {
        s.replace_node(place, Arc::new((*s.node_infos[place]).clone()));
    }
    memo.begin(&pod, &s);
    assert!(memo.scored_current);
    let all: Vec<usize> = (0..150).collect();
    for (place, row) in known(&mut memo, &all, &s).into_iter().enumerate() {
        let kept = first.contains(&place) && !replaced.contains(&place);
        assert_eq!(row, kept.then(|| vec![place as i64]), "{place}");
    }
    // A filter verdict recorded for a new NodeInfo at a scored place clears its bit.
    memo.begin(&pod, &s);
    let fresh = Arc::new((*s.node_infos[65]).clone());
    memo.record_filter(65, &fresh, FilterVerdict::Passed);
    assert_eq!(known(&mut memo, &[64, 65, 66], &s)[1], None);
}

#[test]
fn on_a_tracked_snapshot_the_places_its_change_log_names_lose_their_scores() {
    // A tracked list (as the cache builds it): the memo reads the change log.
    let mut s = snap(4);
    let nodes = s.node_infos.clone();
    s.set_nodes(nodes);
    let pod = PodBuilder::new("p").info();
    let mut memo = NodeLocalMemo::default();
    let all = [0, 1, 2, 3];
    memo.begin(&pod, &s);
    let mut r = memo.reused_scores(&all, &s.node_infos);
    score(&mut r, &["A"], &[&[10], &[11], &[12], &[13]]);
    memo.record_scores(&all, &s.node_infos, r);
    memo.begin(&pod, &s);
    assert!(memo.scored_current);
    let every = |v: &[i64]| v.iter().map(|&x| Some(vec![x])).collect::<Vec<_>>();
    assert_eq!(known(&mut memo, &all, &s), every(&[10, 11, 12, 13]));
    // Place 1 replaced through the log (with the same contents): its row is not known.
    s.replace_node(1, Arc::new((*s.node_infos[1]).clone()));
    memo.begin(&pod, &s);
    let rows = known(&mut memo, &all, &s);
    assert_eq!(rows[1], None);
    assert_eq!(rows[3], Some(vec![13]));
    // A new list (another epoch) with place 2 replaced: found by comparing NodeInfos.
    let mut nodes = s.node_infos.clone();
    nodes[2] = Arc::new((*nodes[2]).clone());
    s.set_nodes(nodes);
    memo.begin(&pod, &s);
    assert!(memo.scored_current);
    let rows = known(&mut memo, &all, &s);
    assert_eq!((rows[0].is_some(), rows[2].is_some()), (true, false));
    // An untracked snapshot: each cycle compares (a node replaced after `begin` counts).
    let mut copy = Snapshot::from_nodes(s.node_infos.iter().map(|n| (**n).clone()).collect());
    memo.begin(&pod, &copy);
    assert!(!memo.scored_current);
    let mut r = memo.reused_scores(&all, &copy.node_infos);
    score(&mut r, &["A"], &[&[20], &[21], &[22], &[23]]);
    memo.record_scores(&all, &copy.node_infos, r);
    memo.begin(&pod, &copy);
    copy.node_infos[3] = Arc::new((*copy.node_infos[3]).clone());
    let rows = known(&mut memo, &all, &copy);
    assert_eq!((rows[0].clone(), rows[3].clone()), (Some(vec![20]), None));
}

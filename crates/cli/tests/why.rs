//! `kubeplane why POD FILE...` and `simulate --why POD`: the story of a pending pod, a
//! preemptor and its victim, an evicted pod and a scaled-down pod, told from the examples.

mod support;

use support::{kubeplane, stderr, stdout};

/// The story `kubeplane why` tells, after checking it exits 0.
fn why(args: &[&str]) -> String {
    let mut all = vec!["why"];
    all.extend_from_slice(args);
    let out = kubeplane(&all);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn assert_contains(text: &str, parts: &[&str]) {
    for p in parts {
        assert!(text.contains(p), "missing {p:?} in:\n{text}");
    }
}

#[test]
fn a_scheduled_pod_shows_the_best_scores_and_why_the_other_nodes_failed() {
    let text = why(&["web-1", "examples/scheduling.yaml"]);
    assert_contains(
        &text,
        &[
            "Pod default/web-1: Running on gpu at the end of the run; 1 scheduling attempt(s).",
            "attempt 1 (default-scheduler): scheduled on gpu",
            "gpu              total 492: TaintToleration 100",
            "big              TaintToleration: node(s) had untolerated taint {dedicated: db}",
            "Normal Scheduled: Successfully assigned default/web-1 to gpu",
        ],
    );
}

#[test]
fn a_preemptor_shows_its_candidates_and_a_victim_who_chose_it() {
    let preemptor = why(&["critical", "examples/priority-preemption.yaml"]);
    assert_contains(
        &preemptor,
        &[
            "attempt 1 (default-scheduler): unschedulable",
            "0/2 nodes are available: 2 Insufficient cpu.",
            "a                NodeResourcesFit: Insufficient cpu",
            "victims default/batch-1, default/batch-2; PodDisruptionBudget violations 0",
            "chose a (fewest PodDisruptionBudget violations)",
            "attempt 2 (default-scheduler): scheduled on a",
        ],
    );
    let victim = why(&["default/batch-1", "examples/priority-preemption.yaml"]);
    assert_contains(
        &victim,
        &[
            "deleted before the end of the run",
            "chosen as a preemption victim on a by default/critical (attempt 1)",
            "Normal Preempted: Preempted by pod",
        ],
    );
}

#[test]
fn an_evicted_pod_shows_its_deadline_and_the_toleration_that_set_it() {
    let text = why(&["pod/batch", "examples/node-failure.yaml"]);
    assert_contains(
        &text,
        &[
            "eviction decision on node n1: evict at 3m5s",
            "tolerations used: node.kubernetes.io/unreachable:NoExecute op=Exists for 60s",
            "3m5s  Normal TaintManagerEviction: Marking for deletion Pod default/batch",
        ],
    );
}

#[test]
fn a_scaled_down_pod_shows_its_rank_each_time() {
    let text = why(&["not-ready", "examples/scale-down.yaml"]);
    assert_contains(
        &text,
        &[
            "scaling down ranked it #2 of 7 for deletion (kept) on node n2",
            "scaling down ranked it #1 of 6 for deletion (deleted) on node n2",
            "phase Running, ready false",
        ],
    );
}

#[test]
fn simulate_why_is_the_same_story_and_a_prefix_finds_the_one_pod() {
    let by_command = why(&["critical", "examples/priority-preemption.yaml"]);
    let out = kubeplane(&[
        "simulate",
        "--why",
        "crit",
        "examples/priority-preemption.yaml",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), by_command);
}

#[test]
fn an_unknown_or_ambiguous_pod_exits_2_naming_the_pods() {
    let out = kubeplane(&["why", "nosuch", "examples/scale-down.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("no pod default/nosuch in this run (its pods: default/cheap"),
        "{}",
        stderr(&out)
    );
    let out = kubeplane(&["why", "crowded", "examples/scale-down.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("default/crowded is ambiguous: default/crowded-1, default/crowded-2"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_pending_pod_shows_why_each_node_refused_it() {
    let text = why(&["too-big", "examples/scheduling.yaml", "--until", "30s"]);
    assert_contains(
        &text,
        &[
            "Pod default/too-big: pending at the end of the run; 1 scheduling attempt(s).",
            "attempt 1 (default-scheduler): unschedulable",
            "big              TaintToleration: node(s) had untolerated taint {dedicated: db}",
            "gpu              NodeResourcesFit: Insufficient cpu",
            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
        ],
    );
    assert!(!text.contains("preemption: preemption:"), "{text}");
}

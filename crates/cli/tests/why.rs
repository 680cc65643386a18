//! `kubeplane why POD FILE...` and `simulate --why POD`: the story of a pending pod, a
//! preemptor and its victim, an evicted pod, a scaled-down pod, and pods of Jobs, a CronJob, a
//! StatefulSet and a DaemonSet with their controllers' records, told from the examples.

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

#[test]
fn a_job_pod_shows_its_creation_the_backoff_that_delayed_it_the_failure_and_the_ttl_deletion() {
    // flaky fails every time: a pod at 0s, a replacement after a 10s backoff (16s), another
    // after 20s (42s), then the Job fails at 49s (3 failures, backoffLimit 2).
    let first = why(&["flaky-z6j9q", "examples/job.yaml"]);
    assert_contains(
        &first,
        &[
            "0s  Normal SuccessfulCreate (Job default/flaky): Created pod: flaky-z6j9q",
            "7s  Job default/flaky WaitBackoff (PodFailureBackoff): failed pods are not replaced before 16s: 1 pod failure(s)",
            "49s  Job default/flaky Failed (BackoffLimitExceeded): Job has reached the specified backoff limit: 3 failed pod(s), more than backoffLimit 2",
        ],
    );
    let retry = why(&["flaky-fdfkf", "examples/job.yaml"]);
    assert_contains(
        &retry,
        &[
            "23s  Job default/flaky WaitBackoff (PodFailureBackoff): failed pods are not replaced before 42s: 2 pod failure(s)",
            "          this pod was created when the backoff ended, at 42s\n",
            "42s  Normal SuccessfulCreate (Job default/flaky): Created pod: flaky-fdfkf",
            "49s  Job default/flaky Failed (BackoffLimitExceeded)",
        ],
    );
    // The backoff that came before the retry was created is not part of its story.
    assert!(!retry.contains("not replaced before 16s"), "{retry}");
    // A pod of another Job hears nothing of flaky, and is deleted with its Job by the TTL.
    let other = why(&["pi-8phzf", "examples/job.yaml"]);
    assert!(!other.contains("flaky"), "{other}");
    assert_contains(
        &other,
        &["2m4s  Job default/pi Delete (TTLAfterFinished): the Job finished (Complete) at 64s and its ttlSecondsAfterFinished 60 ran out at 124s: deleted with its pods"],
    );
}

#[test]
fn an_indexed_job_pod_shows_its_index_failure_and_the_retry_its_index_backoff() {
    let failed = why(&["render-3", "examples/job-indexed.yaml"]);
    assert_contains(
        &failed,
        &["9s  Job default/render IndexFailed (FailIndex): index 3 failed and is not retried: pod default/render-3-t4vdm matched a FailIndex rule"],
    );
    let retry = why(&["render-1-jzthm", "examples/job-indexed.yaml"]);
    assert_contains(
        &retry,
        &[
            "6s  Job default/render WaitBackoff (PodFailureBackoff): index 1 is not retried before 15s",
            "          this pod was created when the backoff ended, at 15s\n",
        ],
    );
    // Index 1's backoff and index 3's failure are not the story of index 0's pod.
    let other = why(&["render-0", "examples/job-indexed.yaml"]);
    assert!(
        !other.contains("WaitBackoff") && !other.contains("IndexFailed"),
        "{other}"
    );
}

#[test]
fn a_cronjob_pod_shows_the_history_limit_that_deleted_its_job() {
    let text = why(&["report-28928165", "examples/cronjob.yaml"]);
    assert_contains(
        &text,
        &[
            "5m0.1s  Normal SuccessfulCreate (Job default/report-28928165): Created pod: report-28928165-v8phz",
            "17m2.1s  CronJob default/report Delete (HistoryLimit): Job report-28928165 was deleted",
        ],
    );
    // The deletion of the next Job is not this pod's story.
    assert!(!text.contains("Job report-28928170 was deleted"), "{text}");
}

#[test]
fn a_statefulset_pod_shows_ordered_ready_waits_on_both_sides_and_the_rollout() {
    let text = why(&["web-1", "examples/statefulset.yaml"]);
    assert_contains(
        &text,
        &[
            // web-1 waits for web-0, then web-2 waits for web-1.
            "0s  StatefulSet default/web WaitingForPod (OrderedReady): pod web-1 is not created until pod web-0 is Running and Ready (podManagementPolicy OrderedReady); it is Pending",
            "1s  StatefulSet default/web WaitingForPod (OrderedReady): pod web-2 is not created until pod web-1 is Running and Ready",
            "1s  Normal SuccessfulCreate (StatefulSet default/web): create Pod web-1 in StatefulSet web successful",
            "20s  StatefulSet default/web RolloutWaiting (PodUnavailable): the rolling update does not replace pod web-1 until pod web-2 is Running and Ready; it is terminating",
        ],
    );
    let first = why(&["web-0", "examples/statefulset.yaml"]);
    assert!(!first.contains("pod web-2 is not created"), "{first}");
}

#[test]
fn a_daemonset_pod_shows_the_rollout_it_waits_in_and_its_node_skipped() {
    let old = why(&["kube-system/log-agent-pcwlv", "examples/daemonset.yaml"]);
    assert_contains(
        &old,
        &[
            "20s  Normal SuccessfulCreate (DaemonSet kube-system/log-agent): Created pod: log-agent-pcwlv",
            "40s  DaemonSet kube-system/log-agent RolloutWaiting (MaxUnavailable): 2 old pod(s) wait for their replacement",
            "46s  DaemonSet kube-system/log-agent RolloutWaiting (MaxUnavailable): 1 old pod(s) wait",
            "          this pod is one of the old pods that wait\n",
        ],
    );
    // gpu-1 is skipped at 0s; that is not the story of a pod on n1.
    assert!(!old.contains("NodeSkipped"), "{old}");
    // A NoSchedule taint on n3 at 80s: n3 gets no new daemon pod, the one there stays.
    let tainted = why(&[
        "kube-system/log-agent-jkqfd",
        "examples/daemonset.yaml",
        "--until",
        "100s",
        "--at",
        "80s",
        "--taint",
        "n3:maint=true:NoSchedule",
    ]);
    assert_contains(
        &tainted,
        &["1m20s  DaemonSet kube-system/log-agent NodeSkipped (UntoleratedTaint): node n3 gets no daemon pod: the pod does not tolerate its taint maint=true:NoSchedule (a daemon pod already there stays: the taint is NoSchedule)"],
    );
}

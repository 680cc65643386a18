//! Scale-down ranking: the comparator (upstream `controller_utils_test.go`) and getPodsToDelete
//! (`replica_set_test.go`).

use super::*;

// ----- the comparator (controller_utils_test.go) ------------------------------------------------

#[test]
fn active_pods_sort_in_the_full_upstream_order_whatever_the_input_order() {
    // Upstream TestSortingActivePods, with the ranked comparator at equal ranks.
    let now = start();
    let then = ago(now, MONTH_SECS);
    let expected = [
        pod_builder("unscheduled").not_ready(),
        pod_builder("scheduled-but-pending")
            .node("node")
            .not_ready(),
        pod_builder("unknown-phase")
            .node("node")
            .phase("Unknown")
            .not_ready(),
        pod_builder("running-but-not-ready")
            .node("node")
            .phase("Running")
            .not_ready(),
        pod_builder("running-no-last-transition-time")
            .node("node")
            .ready_since(None),
        pod_builder("running-with-last-transition-time")
            .node("node")
            .ready_since(Some(now)),
        pod_builder("running-longer-time")
            .node("node")
            .ready_since(Some(then))
            .restarts(3),
        pod_builder("lower-container-restart-count")
            .node("node")
            .ready_since(Some(then))
            .restarts(2)
            .created(Some(now)),
        pod_builder("oldest")
            .node("node")
            .ready_since(Some(then))
            .restarts(2)
            .created(Some(then)),
    ];
    let names: Vec<String> = expected
        .iter()
        .map(|b| b.as_pod().metadata.name.clone().unwrap())
        .collect();
    let pods: Vec<Arc<StoredPod>> = expected.into_iter().map(PodBuilder::arc).collect();
    let ctx = ctx_at(now);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for _ in 0..50 {
        let mut shuffled = pods.clone();
        shuffled.shuffle(&mut rng);
        let choice = get_pods_to_delete(&shuffled, &[], pods.len() - 1, &ctx);
        let order: Vec<String> = choice.ordered().map(|k| k.name.to_string()).collect();
        assert_eq!(order, names);
    }
}

fn stored(b: &PodBuilder) -> StoredPod {
    b.as_pod().clone().into()
}

fn key(p: &StoredPod, rank: usize) -> PodSortKey<'_> {
    PodSortKey::new(p, rank)
}

#[test]
fn ranked_pairs_follow_the_upstream_table() {
    // Upstream TestSortingActivePodsWithRanks (LogarithmicScaleDown and PodDeletionCost on).
    let now = start();
    let month = ago(now, MONTH_SECS);
    let h2 = ago(now, 2 * HOUR_SECS);
    let h5 = ago(now, 5 * HOUR_SECS);
    let h8 = ago(now, 8 * HOUR_SECS);
    // Upstream's test pods have no UIDs.
    let p = |name: &str| pod_builder(name).uid("").created(None);
    let unscheduled = p("unscheduled").not_ready();
    let pending = p("pending").node("node").not_ready();
    let unknown = p("unknown-phase").node("node").phase("Unknown").not_ready();
    let not_ready = p("not-ready").node("node").phase("Running").not_ready();
    let ready_no_ltt = p("ready-no-ltt").node("node").ready_since(None);
    let ready_now = p("ready-now")
        .node("node")
        .ready_since(Some(now))
        .created(Some(now));
    let ready_then = p("ready-then")
        .node("node")
        .ready_since(Some(month))
        .created(Some(month));
    let high_restarts = p("ready-high-restarts")
        .node("node")
        .ready_since(Some(now))
        .created(Some(now))
        .restarts(9001);
    let created_then = p("ready-now-created-then")
        .node("node")
        .ready_since(Some(now))
        .created(Some(month));
    let low_cost = created_then.clone().cost("10");
    let high_cost = created_then.clone().cost("100");
    let unscheduled_5h = p("unscheduled-5h").not_ready().created(Some(h5));
    let unscheduled_8h = p("unscheduled-8h").not_ready().created(Some(h8));
    let ready_2h = p("ready-2h").ready_since(Some(h2)).created(Some(month));
    let ready_5h = p("ready-5h").ready_since(Some(h5)).created(Some(month));
    let ready_8h = p("ready-8h").ready_since(Some(h8)).created(Some(month));

    let on = ctx_at(now);
    let off = RankContext {
        pod_deletion_cost: false,
        ..on
    };
    let equivalent = [
        (&ready_now, 1, &ready_now, 1),
        (&unscheduled_5h, 1, &unscheduled_8h, 1),
        (&ready_5h, 1, &ready_8h, 1),
    ];
    for (a, ra, b, rb) in equivalent {
        let (a, b) = (stored(a), stored(b));
        let (ka, kb) = (key(&a, ra), key(&b, rb));
        assert!(
            !less(&ka, &kb, &on) && !less(&kb, &ka, &on),
            "{} ~ {}",
            ka.name,
            kb.name
        );
    }
    let strict = [
        (
            &unscheduled,
            1,
            &pending,
            2,
            "unscheduled(1) < pending(2)",
            on,
        ),
        (&unscheduled, 2, &pending, 1, "assignment beats rank", on),
        (&pending, 1, &unknown, 2, "pending(1) < unknown(2)", on),
        (&unknown, 1, &not_ready, 2, "unknown(1) < notReady(2)", on),
        (&not_ready, 1, &ready_no_ltt, 1, "notReady < ready", on),
        (
            &ready_no_ltt,
            1,
            &ready_now,
            1,
            "no transition time first",
            on,
        ),
        (&ready_now, 2, &ready_no_ltt, 1, "rank beats ready time", on),
        (&ready_now, 1, &ready_then, 1, "ready more recently", on),
        (
            &ready_now,
            2,
            &ready_then,
            1,
            "rank and ready time agree",
            on,
        ),
        (&high_restarts, 1, &ready_now, 1, "more restarts", on),
        (&ready_now, 2, &high_restarts, 1, "rank beats restarts", on),
        (&ready_now, 1, &created_then, 1, "newer first", on),
        (&created_then, 2, &ready_now, 1, "rank beats age", on),
        (&low_cost, 2, &high_cost, 1, "cost beats rank", on),
        (
            &high_cost,
            2,
            &low_cost,
            1,
            "without the gate rank decides",
            off,
        ),
        (&ready_2h, 1, &ready_5h, 1, "log2 buckets 42 < 44", on),
    ];
    for (a, ra, b, rb, why, ctx) in strict {
        let (a, b) = (stored(a), stored(b));
        let (ka, kb) = (key(&a, ra), key(&b, rb));
        assert!(less(&ka, &kb, &ctx), "{why}: {} < {}", ka.name, kb.name);
        assert!(
            !less(&kb, &ka, &ctx),
            "{why}: not {} < {}",
            kb.name,
            ka.name
        );
    }
}

#[test]
fn log2_buckets_match_the_reference_values() {
    let now = start();
    for (secs, bucket) in [
        (1, 29),
        (2 * 3600, 42),
        (5 * 3600, 44),
        (8 * 3600, 44),
        (30 * 86400, 51),
    ] {
        assert_eq!(log2_bucket(ago(now, secs), now), bucket, "{secs}s");
    }
    assert_eq!(log2_bucket(now, now), -1);
}

#[test]
fn a_same_bucket_tie_is_decided_by_uid_and_stops_there() {
    // Ready 5 h (uid b) and 8 h (uid a) ago share bucket 44: the smaller UID goes first even
    // though the other pod has more restarts.
    let now = start();
    let a = pod_builder("eight")
        .uid("a")
        .ready_since(Some(ago(now, 8 * HOUR_SECS)));
    let b = pod_builder("five")
        .uid("b")
        .ready_since(Some(ago(now, 5 * HOUR_SECS)))
        .restarts(5);
    let (a, b) = (stored(&a), stored(&b));
    let (ka, kb) = (key(&a, 1), key(&b, 1));
    let (ord, rule) = compare(&ka, &kb, &ctx_at(now));
    assert_eq!(ord, std::cmp::Ordering::Less);
    assert_eq!(
        rule.unwrap().to_string(),
        "same ready-time log2 bucket 44, uid a < b"
    );
}

// ----- getPodsToDelete (replica_set_test.go) ----------------------------------------------------

#[test]
fn get_pods_to_delete_follows_the_upstream_cases() {
    let now = start();
    let unscheduled_pending = pod_builder("unscheduled-pending").not_ready().arc();
    let scheduled_pending = pod_builder("scheduled-pending")
        .node("fake-node")
        .not_ready()
        .arc();
    let not_ready = pod_builder("not-ready")
        .node("fake-node")
        .phase("Running")
        .not_ready()
        .arc();
    let not_ready_2 = pod_builder("not-ready-2")
        .node("fake-node")
        .phase("Running")
        .not_ready()
        .arc();
    let ready_n1 = pod_builder("ready-n1")
        .node("fake-node-1")
        .ready_since(Some(now))
        .arc();
    let ready_n2 = pod_builder("ready-n2")
        .node("fake-node-2")
        .ready_since(Some(now))
        .arc();
    let ready_n2_other = pod_builder("ready-n2-other")
        .node("fake-node-2")
        .ready_since(Some(now))
        .arc();
    let ctx = ctx_at(now);
    let names =
        |pods: &[Arc<StoredPod>], related: Option<&[Arc<StoredPod>]>, diff: usize| -> Vec<String> {
            get_pods_to_delete(pods, related.unwrap_or(pods), diff, &ctx)
                .victims
                .iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect()
        };
    assert!(names(&[], None, 0).is_empty(), "no pods, diff 0");
    assert_eq!(
        names(&[ready_n1.clone(), not_ready.clone()], None, 2),
        ["ready-n1", "not-ready"],
        "diff == len keeps the input order"
    );
    assert_eq!(
        names(&[ready_n1.clone(), not_ready.clone()], None, 1),
        ["not-ready"]
    );
    assert_eq!(
        names(
            &[scheduled_pending.clone(), unscheduled_pending.clone()],
            None,
            1
        ),
        ["unscheduled-pending"]
    );
    assert_eq!(
        names(
            &[ready_n1.clone(), not_ready.clone(), not_ready_2.clone()],
            None,
            2
        ),
        ["not-ready", "not-ready-2"]
    );
    assert_eq!(
        names(
            &[ready_n1.clone(), ready_n2.clone()],
            Some(&[ready_n1.clone(), ready_n2.clone(), ready_n2_other]),
            1
        ),
        ["ready-n2"],
        "rank 2 beats rank 1"
    );
    assert_eq!(
        names(&[scheduled_pending.clone(), not_ready.clone()], None, 1),
        ["scheduled-pending"]
    );
    assert_eq!(
        names(
            &[
                ready_n1,
                ready_n2,
                not_ready,
                scheduled_pending,
                unscheduled_pending
            ],
            None,
            3
        ),
        ["unscheduled-pending", "scheduled-pending", "not-ready"]
    );
}

#[test]
fn sort_facts_hold_the_times_packed_and_give_them_back_exactly() {
    // Fractions of a second and times before 1970 (negative seconds) included.
    for t in [
        "2024-03-01T12:00:00.123456789Z",
        "1969-12-31T23:59:59.5Z",
        "0001-01-01T00:00:00Z",
        "9999-12-30T21:59:59.999999999Z",
    ] {
        let t: Timestamp = t.parse().unwrap();
        let p = stored(&pod_builder("p").ready_since(Some(t)).created(Some(t)));
        let facts = ranking::SortFacts::of(&p);
        assert!(facts.ready, "{t}");
        assert_eq!((facts.ready_time(), facts.created()), (Some(t), Some(t)));
    }
    let facts = ranking::SortFacts::of(&stored(&pod_builder("p").created(None)));
    assert_eq!((facts.ready_time(), facts.created()), (None, None));
    // The cache keeps one per pod: 36 bytes, and its record 64 (an 80-byte `Arc` block).
    assert_eq!(std::mem::size_of::<ranking::SortFacts>(), 36);
    assert_eq!(
        std::mem::size_of::<crate::replicaset::cache::CachedPod>(),
        64
    );
}

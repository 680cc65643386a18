//! Table tests of PodTopologySpread scoring (upstream `scoring_test.go`), with the helpers of
//! the filtering tests.

use std::sync::Arc;

use kubeplane_core::nodeaffinity::RequiredNodeAffinity;

use super::scoring::{round_half_away, topology_normalizing_weight, PreScoreState, PRE_SCORE_KEY};
use super::tests::*;
use super::*;
use crate::framework::{CycleState, NodeInfo, PodInfo};
use crate::plugins::helper::FxHashMap;
use crate::plugins::testing::{
    expr, snapshot, spread, taint, NodeBuilder, PodBuilder, PodBuilderExt,
};

pub(super) fn scores(
    pl: &PodTopologySpread,
    pod: PodBuilder,
    filtered: &[NodeInfo],
    all: &[NodeInfo],
) -> Vec<i64> {
    let pod = pod.info();
    let snap = snapshot(all.to_vec());
    let refs: Vec<&NodeInfo> = filtered.iter().collect();
    let mut state = CycleState::new();
    let s = pl.pre_score(&mut state, &pod, &refs, &snap);
    if s.is_skip() {
        return vec![];
    }
    assert!(s.is_success(), "{s:?}");
    let mut out: Vec<i64> = filtered
        .iter()
        .map(|n| pl.score(&state, &pod, n).unwrap())
        .collect();
    assert_eq!(batch_scores(pl, &state, &pod, &refs), out);
    assert!(pl.normalize_score(&state, &pod, &mut out).is_success());
    out
}

/// The raw scores through `score_nodes`, in two runs (the second starting mid-list), which
/// must equal the per-node scores.
fn batch_scores(
    pl: &PodTopologySpread,
    state: &CycleState,
    pod: &crate::framework::PodInfo,
    nodes: &[&NodeInfo],
) -> Vec<i64> {
    let mut out = vec![-1; nodes.len()];
    let mid = nodes.len() / 2;
    let (a, b) = out.split_at_mut(mid);
    pl.score_nodes(state, pod, &nodes[..mid], 0, a).unwrap();
    pl.score_nodes(state, pod, &nodes[mid..], mid, b).unwrap();
    out
}

#[test]
fn soft_constraint_scores() {
    let pl = plugin();
    // Hostname, maxSkew 1, filtered nodes with 2, 1, 0 matching pods: weight ln(3+2);
    // raw round(3.22)=3, round(1.61)=2, 0 ⇒ normalized 0, 33, 100.
    let nodes = nodes_with(&[
        (zone_node("node-a", "zone1"), 2),
        (zone_node("node-b", "zone1"), 1),
        (zone_node("node-c", "zone2"), 0),
    ]);
    let pod = foo_pod("p").spread(spread(1, LABEL_HOSTNAME, SCHEDULE_ANYWAY, foo_exists()));
    assert_eq!(scores(&pl, pod, &nodes, &nodes), vec![0, 33, 100]);

    // Zone: zone1 has 3 matching pods, zone2 none ⇒ zone2 nodes win.
    let pod = foo_pod("p").spread(spread(1, "zone", SCHEDULE_ANYWAY, foo_exists()));
    assert_eq!(scores(&pl, pod, &nodes, &nodes), vec![0, 0, 100]);

    // A filtered node without the key is ignored (0); the others are scored.
    let mut with_unlabelled = nodes.clone();
    with_unlabelled.push(NodeBuilder::new("node-d").info());
    let pod = foo_pod("p").spread(spread(1, "zone", SCHEDULE_ANYWAY, foo_exists()));
    assert_eq!(
        scores(&pl, pod, &with_unlabelled, &with_unlabelled),
        vec![0, 0, 100, 0]
    );

    // No soft constraints: PreScore skips.
    let pod = foo_pod("p").spread(spread(1, "zone", DO_NOT_SCHEDULE, foo_exists()));
    assert_eq!(scores(&pl, pod, &nodes, &nodes), Vec::<i64>::new());

    // maxSkew waters differences down: with maxSkew 5 the counts matter less.
    let pod = foo_pod("p").spread(spread(5, LABEL_HOSTNAME, SCHEDULE_ANYWAY, foo_exists()));
    // raw: 3.22+4=7, 1.61+4=6, 4 ⇒ 100*(7+4-7)/7=57, 100*(7+4-6)/7=71, 100.
    assert_eq!(scores(&pl, pod, &nodes, &nodes), vec![57, 71, 100]);
}

/// Scores of `pod` on the filtered nodes (indices into the snapshot) with `pl`'s PreScore, or
/// with the full recount when `pl` is `None`; with the PreScore state.
fn scores_of(
    pl: Option<&PodTopologySpread>,
    pod: &crate::framework::PodInfo,
    filtered: &[usize],
    snap: &crate::cache::Snapshot,
) -> Option<(super::scoring::PreScoreState, Vec<i64>)> {
    let scorer = plugin();
    let refs: Vec<&NodeInfo> = filtered.iter().map(|&i| &*snap.node_infos[i]).collect();
    let mut state = CycleState::new();
    match pl {
        Some(pl) => {
            let s = pl.pre_score(&mut state, pod, &refs, snap);
            if s.is_skip() {
                return None;
            }
            assert!(s.is_success(), "{s:?}");
        }
        // The recount's state knows no node entries: Score counts on each node.
        None => state.write(
            &PRE_SCORE_KEY,
            pre_score_recount(&scorer, pod, &refs, snap)?,
        ),
    }
    let pl = pl.unwrap_or(&scorer);
    let mut out: Vec<i64> = refs
        .iter()
        .map(|n| pl.score(&state, pod, n).unwrap())
        .collect();
    assert_eq!(batch_scores(pl, &state, pod, &refs), out);
    assert!(pl.normalize_score(&state, pod, &mut out).is_success());
    let s = state
        .read::<super::scoring::PreScoreState>(&PRE_SCORE_KEY)
        .unwrap()
        .clone();
    Some((s, out))
}

#[test]
fn the_pre_score_memo_gives_the_same_scores_as_a_full_recount() {
    use kubeplane_core::labels::parse;
    let web = |name: &str, node: &str| {
        PodBuilder::new(name)
            .label("app", "web")
            .owner("apps/v1", "ReplicaSet", "web")
            .node(node)
            .obj()
    };
    let other = |name: &str, node: &str| PodBuilder::new(name).label("app", "db").node(node).obj();
    let node = |name: &str, zone: Option<&str>| {
        let n = NodeBuilder::new(name).label(LABEL_HOSTNAME, name);
        match zone {
            Some(z) => n.label(LABEL_ZONE, z).label("zone", z),
            None => n,
        }
    };
    // Pods per node index; the cluster: zones a, b, c, one node without a zone, one tainted
    // node and one with a disk label.
    let builders = [
        node("n0", Some("a")).label("disk", "ssd"),
        node("n1", Some("a")),
        node("n2", Some("b")).taint(taint("dedicated", "x", "NoSchedule")),
        node("n3", Some("b")),
        node("n4", Some("c")).label("disk", "ssd"),
        node("n5", None),
    ];
    let mut pods: Vec<Vec<k8s_openapi::api::core::v1::Pod>> = vec![Vec::new(); builders.len()];
    // The NodeInfos, replaced only when their pods change and with an id per node (as the
    // cache does), so that the memo recounts only those.
    let with_id = |mut info: NodeInfo, id: usize| {
        info.id = id as u32;
        Arc::new(info)
    };
    let mut infos: Vec<Arc<NodeInfo>> = builders
        .iter()
        .enumerate()
        .map(|(i, b)| with_id(b.clone().info(), i))
        .collect();
    let mut refresh = |pods: &[Vec<k8s_openapi::api::core::v1::Pod>], i: usize| {
        infos[i] = with_id(builders[i].clone().info_with_pods(pods[i].clone()), i);
        infos.clone()
    };
    let build = |infos: &[Arc<NodeInfo>], order: &[usize]| {
        let mut snap = snapshot(Vec::new());
        snap.node_infos = order.iter().map(|&i| infos[i].clone()).collect();
        let mut rs = crate::cache::ReplicaSetSelectors::default();
        rs.insert("default/web".into(), Some(parse("app=web").unwrap()));
        snap.replica_sets = Arc::new(rs);
        snap
    };
    let incoming: Vec<crate::framework::PodInfo> = vec![
        // The system defaults (hostname and zone, nodes without a zone still count).
        PodBuilder::new("p")
            .label("app", "web")
            .owner("apps/v1", "ReplicaSet", "web")
            .info(),
        // Own soft constraints: every node needs both keys; taints honored; node affinity.
        PodBuilder::new("q")
            .label("app", "web")
            .node_selector("disk", "ssd")
            .spread(spread(
                2,
                "zone",
                SCHEDULE_ANYWAY,
                vec![expr("app", "In", &["web"])],
            ))
            .spread({
                let mut c = spread(
                    1,
                    LABEL_HOSTNAME,
                    SCHEDULE_ANYWAY,
                    vec![expr("app", "Exists", &[])],
                );
                c.node_taints_policy = Some("Honor".into());
                c
            })
            .info(),
    ];
    // One plugin per incoming pod, so that each one's memo carries over between cycles.
    let memoized: Vec<PodTopologySpread> = incoming.iter().map(|_| plugin()).collect();
    let mut order: Vec<usize> = (0..builders.len()).collect();
    let mut cycle = 0;
    let mut check = |infos: &[Arc<NodeInfo>], order: &[usize]| {
        let snap = build(infos, order);
        for (pod, memoized) in incoming.iter().zip(&memoized) {
            // Different filtered subsets: all, and every other node.
            for filtered in [
                (0..order.len()).collect::<Vec<_>>(),
                (0..order.len()).step_by(2).collect(),
            ] {
                let got = scores_of(Some(memoized), pod, &filtered, &snap);
                let want = scores_of(None, pod, &filtered, &snap);
                let (got, want) = (got.unwrap(), want.unwrap());
                assert_eq!(got.1, want.1, "scores, cycle {cycle}, pod {}", pod.name());
                assert_eq!(got.0.ignored, want.0.ignored);
                assert_eq!(
                    got.0.topology_value_to_pod_counts,
                    want.0.topology_value_to_pod_counts
                );
                assert_eq!(
                    got.0.topology_normalizing_weight,
                    want.0.topology_normalizing_weight
                );
            }
        }
        cycle += 1;
    };
    let mut current = refresh(&pods, 0);
    check(&current, &order);
    // Pods arrive one at a time, as a Deployment's replicas do.
    for k in 0..12 {
        let i = (k * 5) % builders.len();
        let name = format!("n{i}");
        pods[i].push(web(&format!("web-{k}"), &name));
        if k % 4 == 3 {
            pods[i].push(other(&format!("db-{k}"), &name));
        }
        current = refresh(&pods, i);
        check(&current, &order);
    }
    // Removals, a terminating pod, a reordering and a node leaving.
    pods[0].pop();
    current = refresh(&pods, 0);
    check(&current, &order);
    pods[1].pop();
    pods[1].push(
        PodBuilder::new("terminating")
            .label("app", "web")
            .owner("apps/v1", "ReplicaSet", "web")
            .node("n1")
            .terminating_by_preemption()
            .obj(),
    );
    current = refresh(&pods, 1);
    check(&current, &order);
    order.swap(0, 3);
    check(&current, &order);
    let left = order.pop().expect("nodes");
    pods[2].clear();
    current = refresh(&pods, 2);
    check(&current, &order);
    // The memo remembers only the nodes of the last snapshot.
    for pl in &memoized {
        assert_eq!(
            pl.score_memo.lock().unwrap().entries.agg.entries_len(),
            order.len()
        );
    }
    // A new node takes the id of the one that left, at another place in the order.
    let newcomer = node("n6", Some("c")).info_with_pods(vec![web("web-n6", "n6")]);
    current.push(with_id(newcomer, left));
    order.insert(1, current.len() - 1);
    check(&current, &order);
    for pl in &memoized {
        assert_eq!(
            pl.score_memo.lock().unwrap().entries.agg.entries_len(),
            order.len()
        );
    }
}

/// Scores of `pod` on the filtered places of a tracked snapshot through the memoized
/// PreScore, with the places in the cycle state as the scheduler gives them.
fn scores_at_places(
    pl: &PodTopologySpread,
    pod: &crate::framework::PodInfo,
    filtered: &[usize],
    snap: &crate::cache::Snapshot,
) -> (super::scoring::PreScoreState, Vec<i64>) {
    let refs: Vec<&NodeInfo> = filtered.iter().map(|&i| &*snap.node_infos[i]).collect();
    let mut state = CycleState::new();
    state.node_places = filtered.to_vec();
    assert!(pl.pre_score(&mut state, pod, &refs, snap).is_success());
    let mut out = batch_scores(pl, &state, pod, &refs);
    assert!(pl.normalize_score(&state, pod, &mut out).is_success());
    let s = state.read::<super::scoring::PreScoreState>(&PRE_SCORE_KEY);
    (s.unwrap().clone(), out)
}

#[test]
fn the_counts_are_the_same_whether_kept_for_one_namespace_or_started_from_another() {
    use kubeplane_core::labels::parse;
    let namespaces = ["ns0", "ns1", "ns2"];
    let incoming = |ns: &str, name: &str| {
        PodBuilder::new(name)
            .namespace(ns)
            .label("app", "web")
            .owner("apps/v1", "ReplicaSet", "web")
    };
    let web = |ns: &str, name: &str, node: &str| incoming(ns, name).node(node);
    let zones = [Some("a"), Some("a"), Some("b"), Some("c"), None, Some("b")];
    let builders: Vec<NodeBuilder> = zones
        .iter()
        .enumerate()
        .map(|(i, z)| {
            let name = format!("n{i}");
            let n = NodeBuilder::new(&name).label(LABEL_HOSTNAME, &name);
            z.map_or(n.clone(), |z| n.label(LABEL_ZONE, z))
        })
        .collect();
    let mut pods: Vec<Vec<k8s_openapi::api::core::v1::Pod>> = vec![Vec::new(); zones.len()];
    let info = |pods: &[Vec<k8s_openapi::api::core::v1::Pod>], i: usize| {
        let mut info = builders[i].clone().info_with_pods(pods[i].clone());
        info.id = i as u32;
        Arc::new(info)
    };
    let mut snap = snapshot(Vec::new());
    snap.set_nodes((0..zones.len()).map(|i| info(&pods, i)).collect());
    let mut rs = crate::cache::ReplicaSetSelectors::default();
    for ns in namespaces {
        rs.insert(format!("{ns}/web"), Some(parse("app=web").unwrap()));
    }
    snap.replica_sets = Arc::new(rs);
    let memoized = plugin();
    // The namespace of each cycle: runs of one (the kept counts) between switches (a start
    // from the index), as interleaved Deployments give.
    let plan = [0, 0, 1, 2, 2, 2, 0, 1, 1, 0, 2, 1, 0, 0, 0, 2, 1, 2, 0, 1];
    for (k, &n) in plan.iter().enumerate() {
        let ns = namespaces[n];
        let pod = incoming(ns, &format!("in-{k}")).info();
        for filtered in [(0..zones.len()).collect::<Vec<_>>(), vec![1, 2, 4]] {
            let got = scores_at_places(&memoized, &pod, &filtered, &snap);
            let want = scores_of(None, &pod, &filtered, &snap).expect("constraints");
            assert_eq!(got.1, want.1, "scores, cycle {k}, {ns}");
            assert_eq!(got.0.ignored, want.0.ignored);
            assert_eq!(
                got.0.topology_value_to_pod_counts, want.0.topology_value_to_pod_counts,
                "cycle {k}"
            );
        }
        // The pod binds; now and then a pod leaves, one terminates, the list is rebuilt; a
        // pod of the namespace that matches no selector touches a place without counting.
        let i = (k * 5 + n) % zones.len();
        pods[i].push(web(ns, &format!("in-{k}"), &format!("n{i}")).obj());
        if k % 4 == 1 {
            let other = PodBuilder::new(&format!("db-{k}")).namespace(ns);
            pods[(i + 2) % zones.len()].push(other.node(&format!("n{}", (i + 2) % 6)).obj());
            snap.replace_node((i + 2) % zones.len(), info(&pods, (i + 2) % zones.len()));
        }
        if k % 3 == 2 {
            pods[(i + 1) % zones.len()].clear();
            snap.replace_node((i + 1) % zones.len(), info(&pods, (i + 1) % zones.len()));
        }
        if k % 7 == 6 {
            let last = web(ns, &format!("t-{k}"), &format!("n{i}"));
            pods[i].push(last.terminating_by_preemption().obj());
        }
        snap.replace_node(i, info(&pods, i));
        if k == 11 {
            // A rebuilt list: a new epoch of the change log.
            snap.set_nodes(snap.node_infos.clone());
        }
    }
}

/// The raw scores of the recount's state, node by node (`score`), on the filtered places.
fn recount_raw(
    pod: &crate::framework::PodInfo,
    filtered: &[usize],
    snap: &crate::cache::Snapshot,
) -> Vec<i64> {
    let scorer = plugin();
    let refs: Vec<&NodeInfo> = filtered.iter().map(|&i| &*snap.node_infos[i]).collect();
    let mut state = CycleState::new();
    let s = pre_score_recount(&scorer, pod, &refs, snap).expect("constraints");
    state.write(&PRE_SCORE_KEY, s);
    refs.iter()
        .map(|n| scorer.score(&state, pod, n).unwrap())
        .collect()
}

#[test]
fn raw_scores_from_one_pass_equal_the_per_node_sums_across_many_domains() {
    // 30 nodes in 7 zones and 4 regions; every fifth node has no region (ignored: the pod's
    // own constraints need every key); 0 to 4 matching pods per node.
    let infos: Vec<Arc<NodeInfo>> = (0..30)
        .map(|i| {
            let name = format!("n{i}");
            let mut b = NodeBuilder::new(&name)
                .label(LABEL_HOSTNAME, &name)
                .label("zone", &format!("z{}", (i * 3) % 7));
            if i % 5 != 4 {
                b = b.label("region", &format!("r{}", i % 4));
            }
            let pods = (0..(i * 7) % 5)
                .map(|k| foo_pod(&format!("p{i}-{k}")).node(&name).obj())
                .collect();
            let mut info = b.info_with_pods(pods);
            info.id = i as u32;
            Arc::new(info)
        })
        .collect();
    let mut snap = snapshot(Vec::new());
    snap.set_nodes(infos);
    let pod = foo_pod("in")
        .spread(spread(2, LABEL_HOSTNAME, SCHEDULE_ANYWAY, foo_exists()))
        .spread(spread(1, "zone", SCHEDULE_ANYWAY, foo_exists()))
        .spread(spread(3, "region", SCHEDULE_ANYWAY, foo_exists()))
        .info();
    let pl = plugin();
    let subsets: [Vec<usize>; 3] = [
        (0..30).collect(),
        (0..30).step_by(3).collect(),
        vec![29, 4, 17, 9, 0, 14, 22, 5],
    ];
    // Twice: the second time the memo knows every node (the kept hostname counts).
    for round in 0..2 {
        for filtered in &subsets {
            let want = recount_raw(&pod, filtered, &snap);
            assert!(want.iter().any(|&s| s > 0) && want.contains(&0));
            let (got, _) = scores_at_places(&pl, &pod, filtered, &snap);
            let raw: Vec<i64> = got.raw.iter().map(|r| r.1).collect();
            assert_eq!(raw, want, "at places, round {round}, {filtered:?}");
            // Without places the entries are found by NodeInfo.
            let fresh = plugin();
            let refs: Vec<&NodeInfo> = filtered.iter().map(|&i| &*snap.node_infos[i]).collect();
            let mut state = CycleState::new();
            assert!(fresh.pre_score(&mut state, &pod, &refs, &snap).is_success());
            assert_eq!(
                batch_scores(&fresh, &state, &pod, &refs),
                want,
                "{filtered:?}"
            );
        }
    }
}

#[test]
fn the_default_soft_constraints_are_reused_only_for_the_same_replica_set_and_selectors() {
    use super::soft_defaults::SoftDefaults;
    use kubeplane_core::labels::parse;
    let pl = plugin();
    let mut snap = snapshot(vec![zone_node("n0", "z0").info()]);
    let selectors = |web1: &str| {
        let mut rs = crate::cache::ReplicaSetSelectors::default();
        rs.insert("ns0/web".into(), Some(parse("app=web").unwrap()));
        rs.insert("ns0/db".into(), Some(parse("app=db").unwrap()));
        rs.insert("ns1/web".into(), Some(parse(web1).unwrap()));
        Arc::new(rs)
    };
    snap.replica_sets = selectors("app=web");
    let replica = |ns: &str, rs: &str, name: &str| {
        PodBuilder::new(name)
            .namespace(ns)
            .label("app", rs)
            .owner("apps/v1", "ReplicaSet", rs)
    };
    let mut defaults = SoftDefaults::default();
    let mut last: Option<Arc<[Constraint]>> = None;
    // (pod, whether the previous pod's constraints are reused)
    let mut check = |snap: &crate::cache::Snapshot, pod: PodBuilder, reused: bool| {
        let pod = pod.info();
        let (got, _) = pl.soft_constraints(&pod, snap, &mut defaults).unwrap();
        let want = pl
            .constraints(&pod.pod, SCHEDULE_ANYWAY, Some(snap))
            .unwrap();
        assert_eq!(&got[..], &want[..], "{}", pod.name());
        let same = last.as_ref().is_some_and(|l| Arc::ptr_eq(l, &got));
        assert_eq!(same, reused, "{}", pod.name());
        last = Some(got);
    };
    check(&snap, replica("ns0", "web", "a"), false);
    check(&snap, replica("ns0", "web", "b"), true);
    check(&snap, replica("ns0", "db", "c"), false);
    check(&snap, replica("ns1", "web", "d"), false);
    check(&snap, replica("ns1", "web", "e"), true);
    // New selectors (the scheduler's cache copies them on write): built again.
    snap.replica_sets = selectors("app=other");
    check(&snap, replica("ns1", "web", "f"), false);
    check(&snap, replica("ns1", "web", "g"), true);
    // A pod no ReplicaSet controls, and one with constraints of its own.
    check(&snap, PodBuilder::new("h").namespace("ns1"), false);
    let own = replica("ns1", "web", "i").spread(spread(1, "zone", SCHEDULE_ANYWAY, foo_exists()));
    check(&snap, own, false);
    check(&snap, replica("ns1", "web", "j"), false);
}

/// PreScore without the memo: the full count over every node of the snapshot, to check the
/// memo against.
fn pre_score_recount(
    pl: &PodTopologySpread,
    pod: &PodInfo,
    nodes: &[&NodeInfo],
    snapshot: &Snapshot,
) -> Option<PreScoreState> {
    let constraints = pl
        .constraints(&pod.pod, SCHEDULE_ANYWAY, Some(snapshot))
        .ok()?;
    if snapshot.node_infos.is_empty() || constraints.is_empty() {
        return None;
    }
    let has_own = pod
        .spec()
        .topology_spread_constraints
        .as_ref()
        .is_some_and(|c| !c.is_empty());
    let require_all = has_own || !pl.system_defaulted;
    let mut s = PreScoreState {
        topology_value_to_pod_counts: vec![FxHashMap::default(); constraints.len()],
        require_all,
        ..Default::default()
    };
    let mut topo_size = vec![0usize; constraints.len()];
    let mut n_ignored = 0;
    for node in nodes {
        let labels = node.labels();
        let ignored = require_all && !node_labels_match_constraints(labels, &constraints);
        s.ignored.push(ignored);
        if ignored {
            n_ignored += 1;
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if c.topology_key == LABEL_HOSTNAME {
                continue;
            }
            let value = labels.get(&c.topology_key).map_or("", String::as_str);
            if !s.topology_value_to_pod_counts[i].contains_key(value) {
                s.topology_value_to_pod_counts[i].insert(value.to_string(), 0);
                topo_size[i] += 1;
            }
        }
    }
    s.topology_normalizing_weight = constraints
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let size = if c.topology_key == LABEL_HOSTNAME {
                nodes.len() - n_ignored
            } else {
                topo_size[i]
            };
            topology_normalizing_weight(size)
        })
        .collect();
    add_matching_pods(&mut s, pod, &constraints, snapshot);
    s.constraints = constraints.into();
    Some(s)
}

/// Adds every counted node's matching pods to the counts of its domains that `s` holds.
fn add_matching_pods(
    s: &mut PreScoreState,
    pod: &PodInfo,
    constraints: &[Constraint],
    snapshot: &Snapshot,
) {
    let required = RequiredNodeAffinity::from_pod(pod.spec());
    for node in &snapshot.node_infos {
        let Some(n) = node.node.as_ref() else {
            continue;
        };
        let labels = node.labels();
        if s.require_all && !node_labels_match_constraints(labels, constraints) {
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if !c.matches_node_inclusion_policies(pod.spec(), n, &required) {
                continue;
            }
            let value = labels.get(&c.topology_key).map_or("", String::as_str);
            let Some(count) = s.topology_value_to_pod_counts[i].get_mut(value) else {
                continue;
            };
            *count += count_pods_match_selector(&node.pods, &c.selector, pod.namespace()) as i64;
        }
    }
}

/// NormalizeScore of scores other than PreScore's raw ones (a cell differs mid-list) is that
/// of those scores, as NormalizeScore finds their range.
#[test]
fn normalize_score_of_other_scores_than_the_raw_ones() {
    let pl = plugin();
    let nodes = nodes_with(&[
        (zone_node("node-a", "zone1"), 2),
        (zone_node("node-b", "zone1"), 1),
        (zone_node("node-c", "zone2"), 0),
    ]);
    let pod = foo_pod("p")
        .spread(spread(1, LABEL_HOSTNAME, SCHEDULE_ANYWAY, foo_exists()))
        .info();
    let snap = snapshot(nodes.clone());
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    let mut state = CycleState::new();
    assert!(pl.pre_score(&mut state, &pod, &refs, &snap).is_success());
    // Raw 3, 2, 0 (see `soft_constraint_scores`); with 6 for the second: min 0, max 6.
    let mut out = vec![3, 6, 0];
    assert!(pl.normalize_score(&state, &pod, &mut out).is_success());
    assert_eq!(out, vec![50, 0, 100]);
    let mut out = vec![3, 2, 0];
    assert!(pl.normalize_score(&state, &pod, &mut out).is_success());
    assert_eq!(out, vec![0, 33, 100]);
}

#[test]
fn round_half_away_is_f64_round_as_i64() {
    let below_half = 0.5 - f64::EPSILON / 4.0;
    let mut xs = vec![
        0.0,
        -0.0,
        below_half,
        0.5,
        1.5,
        2.5,
        -0.5,
        -2.5,
        -below_half,
        4_503_599_627_370_495.5,
        4_503_599_627_370_497.0,
        9.223_372_036_854_775e18,
        -9.223_372_036_854_775e18,
        1e300,
        -1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
    ];
    xs.extend((0..2000).map(|k| k as f64 * 0.25 + k as f64 * 1e-3));
    for x in xs {
        assert_eq!(round_half_away(x), x.round() as i64, "{x:e}");
    }
}

//! The monitor's steady passes against a monitor that checks every node's common case at
//! every pass.

use super::*;

type NodeState = (Option<SimTime>, Option<String>, usize, Vec<String>);
type ZonesState = (Vec<Option<ZoneState>>, Vec<(u32, u32)>);

/// What a step may change: each node's probe time, Ready status, NodeNotReady events and
/// taints, and the zones' states and their last pass's ready and not ready counts.
fn steady_state(h: &Harness, names: &[&str]) -> (Vec<NodeState>, ZonesState) {
    let nodes = names
        .iter()
        .map(|n| {
            (
                h.nlc.probe_time(n),
                node_condition(&h.client, n, "Ready").map(|c| c.status),
                h.events("NodeNotReady", n).len(),
                h.taints(n),
            )
        })
        .collect();
    let zones = ["r:\u{0}:a", "r:\u{0}:b", "r:\u{0}:c"]
        .iter()
        .map(|z| h.nlc.zone_state(z))
        .collect();
    let counts = h.nlc.zones.list.iter();
    let counts = counts.map(|z| (z.n_ready, z.n_not_ready)).collect();
    (nodes, (zones, counts))
}

/// One step of the scenario at `t` s: which agents renew (quietly, every 10 s) and post, and
/// the changes made by watch events.
fn steady_step(h: &mut Harness, t: i64) {
    let up = |n: &str| match n {
        "a0" => !(100..400).contains(&t),
        "b0" | "b1" => !(600..800).contains(&t),
        _ => true,
    } && !(1000..1150).contains(&t);
    if t % 10 == 0 {
        for n in ["a0", "a1", "a2", "a3", "b0", "b1", "x0"] {
            if up(n) {
                h.renew_lease_quietly(n, secs(t));
            }
        }
    }
    match t {
        200 => post_condition(&mut h.client, "a1", "Ready", "False"),
        500 => post_condition(&mut h.client, "a1", "Ready", "True"),
        400 => post_condition(&mut h.client, "a0", "Ready", "True"),
        800 | 1150 => {
            for n in ["a0", "a1", "a2", "a3", "b0", "b1", "x0"] {
                post_condition(&mut h.client, n, "Ready", "True");
            }
        }
        700 => {
            create(
                &mut h.client,
                node("c0").zone("r", "c").ready(secs(t)).build(),
            );
            renew_lease(&mut h.client, "c0");
        }
        // A Lease written by update (a watch event) and one deleted.
        350 => renew_lease(&mut h.client, "a3"),
        1300 => {
            let key = kubeplane_api::ObjectKey::new(Kind::Lease, NODE_LEASE_NAMESPACE, "c0");
            h.client.delete(&key, Default::default()).unwrap();
        }
        _ => {}
    }
    // Heartbeat-only posts (every 60 s) and a NoSchedule taint added by hand.
    if t % 60 == 0 && up("a2") {
        post_condition(&mut h.client, "a2", "Ready", "True");
    }
    if t == 900 {
        set_node_taints(
            &mut h.client,
            "a3",
            vec![taint("example", "", "NoSchedule")],
        );
    }
}

/// A steady node's visit (a Lease read, or none, and the grace period) gives the verdicts of
/// the common case's full checks, over nodes that go silent and come back, post NotReady,
/// renew only heartbeats, get a taint, a zone that is fully disrupted, every zone down (the
/// disruption modes), a new node and a deleted Lease; NoExecute taints at a fast rate. The
/// passes that find every node steady without a Lease read count the zones' nodes alike, and
/// so do the visits of silent tainted nodes under the not-ready mark.
#[test]
fn steady_passes_give_the_verdicts_of_checking_every_node_at_every_pass() {
    let mut steady = Harness::new(fast_config());
    let mut checking = Harness::new(fast_config());
    let names = ["a0", "a1", "a2", "a3", "b0", "b1", "x0", "c0"];
    for h in [&mut steady, &mut checking] {
        for n in ["a0", "a1", "a2", "a3"] {
            h.create(node(n).zone("r", "a").ready(SimTime::ZERO).build());
        }
        for n in ["b0", "b1"] {
            h.create(node(n).zone("r", "b").ready(SimTime::ZERO).build());
        }
        let x0 = node("x0")
            .zone("r", "a")
            .label(LABEL_EXCLUDE_DISRUPTION, "");
        h.create(x0.ready(SimTime::ZERO).build());
        for n in ["a0", "a1", "a2", "a3", "b0", "b1", "x0"] {
            renew_lease(&mut h.client, n);
        }
        h.settle();
    }
    for t in (5..=1400).step_by(5) {
        for (i, h) in [&mut steady, &mut checking].into_iter().enumerate() {
            if i == 1 {
                // The reference: no node keeps a steady mark from the last pass.
                for e in h.nlc.nodes.values_mut() {
                    e.steady = 0;
                }
            }
            h.at(secs(t));
            steady_step(h, t);
            h.settle();
        }
        let (got, want) = (
            steady_state(&steady, &names),
            steady_state(&checking, &names),
        );
        assert_eq!(got, want, "at {t} s");
    }
    // The scenario went through what it meant to, and most visits were steady ones.
    assert_eq!(steady.events("NodeNotReady", "a0").len(), 2);
    assert!(steady.events("NodeNotReady", "b0").len() >= 2);
    assert_eq!(checking.nlc.steady_visits(), 0);
    assert_eq!(checking.nlc.all_steady_passes(), 0);
    assert_eq!(checking.nlc.steady_down_visits(), 0);
    // Silent nodes tainted unreachable (a0, then b0 and b1) passed as steady and not ready.
    assert!(
        steady.nlc.steady_down_visits() > 40,
        "{}",
        steady.nlc.steady_down_visits()
    );
    // Passes between renewal rounds with every node steady, counted without visits.
    assert!(
        steady.nlc.all_steady_passes() > 20,
        "{}",
        steady.nlc.all_steady_passes()
    );
    assert!(
        steady.nlc.steady_visits() > 7 * 150,
        "{}",
        steady.nlc.steady_visits()
    );
}

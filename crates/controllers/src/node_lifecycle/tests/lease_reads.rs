//! The monitor's skipped Lease reads against a monitor that reads every Lease at every pass.

use super::*;

/// The monitor skips a node's Lease read while the cache's count of Lease writes is the one of
/// its last read; its verdicts are those of a monitor that reads every Lease at every pass,
/// across quiet renewals (n1, which goes silent for 200 s and comes back), renewals by update
/// (n2, for 100 s at the other half of the 10 s), and a Lease deleted and created again (n3).
#[test]
fn skipped_lease_reads_give_the_verdicts_of_reading_every_lease_at_every_pass() {
    let mut skipping = Harness::new(NodeLifecycleConfig::default());
    let mut reading = Harness::new(NodeLifecycleConfig::default());
    let names = ["n1", "n2", "n3"];
    for h in [&mut skipping, &mut reading] {
        for n in names {
            h.create(node(n).ready(SimTime::ZERO).build());
            renew_lease(&mut h.client, n);
        }
        h.settle();
    }
    let state = |h: &Harness| -> Vec<(Option<SimTime>, Option<String>, usize)> {
        names
            .iter()
            .map(|n| {
                let ready = node_condition(&h.client, n, "Ready").map(|c| c.status);
                (
                    h.nlc.probe_time(n),
                    ready,
                    h.events("NodeNotReady", n).len(),
                )
            })
            .collect()
    };
    for t in (5..=900).step_by(5) {
        for (i, h) in [&mut skipping, &mut reading].into_iter().enumerate() {
            if i == 1 {
                // The reference: every Lease read at every pass.
                for e in h.nlc.nodes.values_mut() {
                    e.lease_read = None;
                }
            }
            h.at(secs(t));
            let n1_silent = (100..300).contains(&t);
            if t % 10 == 0 && !n1_silent {
                h.renew_lease_quietly("n1", secs(t));
            }
            if t == 300 {
                post_condition(&mut h.client, "n1", "Ready", "True");
            }
            // n2 renews at the other half of the 10 s from 500 s to 600 s (every pass then
            // finds a Lease written since the last one), with the others elsewhere.
            if t % 10 == if (500..600).contains(&t) { 5 } else { 0 } {
                renew_lease(&mut h.client, "n2");
            }
            if t == 400 {
                let key = kubeplane_api::ObjectKey::new(Kind::Lease, NODE_LEASE_NAMESPACE, "n3");
                h.client.delete(&key, Default::default()).unwrap();
            }
            if t % 10 == 0 && !(400..450).contains(&t) {
                renew_lease(&mut h.client, "n3");
            }
            h.settle();
        }
        assert_eq!(state(&skipping), state(&reading), "at {t} s");
    }
    // The scenario is one where n1 went not ready and came back, and reads were skipped.
    assert_eq!(skipping.events("NodeNotReady", "n1").len(), 1);
    assert_eq!(
        node_condition(&skipping.client, "n1", "Ready")
            .unwrap()
            .status,
        "True"
    );
    assert!(skipping.nlc.lease_reads() < reading.nlc.lease_reads());
}

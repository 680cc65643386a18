//! Zones (upstream `handleDisruption` and `setLimiterInZone`): each zone's state from its
//! nodes' Ready conditions, and the tainting rate each state allows.

use super::tainting::mark_node_as_reachable;
use super::*;

impl NodeLifecycleController {
    /// Upstream `handleDisruption`.
    pub(super) fn handle_disruption(&mut self, now: SimTime, client: &mut dyn Client) {
        let threshold = self.config.unhealthy_zone_threshold;
        let (new_states, all_are_fully_disrupted) = new_zone_states(&mut self.zones, threshold);
        // Upstream stops this walk at the first zone that was not fully disrupted, in random
        // map order, so some empty zones survive a pass longer; here every empty zone is
        // forgotten at once, which gives the same flag deterministically.
        let mut all_was_fully_disrupted = true;
        for (i, z) in self.zones.list.iter_mut().enumerate() {
            let Some(state) = z.state else {
                continue;
            };
            if new_states[i].is_none() {
                self.steady_epoch += 1;
                z.state = None;
                z.size = 0;
                z.unhealthy = 0;
                continue;
            }
            if state != ZoneState::FullDisruption {
                all_was_fully_disrupted = false;
            }
        }
        if all_are_fully_disrupted && all_was_fully_disrupted {
            return;
        }
        let rate = self.config.node_eviction_rate;
        if all_are_fully_disrupted {
            // "All Nodes are not-Ready. Entering master disruption mode": stop tainting and
            // remove the NoExecute taints everywhere.
            self.steady_epoch += 1;
            let Self { nodes, zones, .. } = self;
            for (name, entry) in nodes.iter_mut() {
                if entry.exists {
                    mark_node_as_reachable(name, entry, zones, rate, now, client);
                }
            }
            for z in self.zones.list.iter_mut().filter(|z| z.state.is_some()) {
                if let Some(t) = z.tainter.as_mut() {
                    t.swap_limiter(0.0, now);
                }
                z.state = Some(ZoneState::FullDisruption);
            }
            return;
        }
        if all_was_fully_disrupted {
            // "Some Nodes are Ready. Exiting master disruption mode": every node gets a fresh
            // grace period.
            self.steady_epoch += 1;
            for h in self.nodes.values_mut().filter_map(|e| e.health.as_mut()) {
                h.probe = now;
                h.ready_transition = now;
            }
            for (i, new) in new_states.iter().enumerate() {
                if let (Some(_), Some(state)) = (self.zones.list[i].state, *new) {
                    self.set_limiter_in_zone(i, state, now);
                    self.zones.list[i].state = Some(state);
                }
            }
            return;
        }
        for (i, new) in new_states.iter().enumerate() {
            let (Some(old), Some(new)) = (self.zones.list[i].state, *new) else {
                continue;
            };
            if old != new {
                self.set_limiter_in_zone(i, new, now);
                self.zones.list[i].state = Some(new);
            }
        }
    }

    /// Upstream `setLimiterInZone`.
    pub(super) fn set_limiter_in_zone(&mut self, zone: usize, state: ZoneState, now: SimTime) {
        let size = self.zones.list[zone].size;
        let qps = match state {
            ZoneState::Normal | ZoneState::FullDisruption => self.config.node_eviction_rate,
            ZoneState::PartialDisruption => {
                if size > self.config.large_cluster_size_threshold.max(0) as u64 {
                    self.config.secondary_node_eviction_rate
                } else {
                    0.0
                }
            }
            ZoneState::Initial => return,
        };
        let rate = self.config.node_eviction_rate;
        self.zones.tainter(zone, rate).swap_limiter(qps, now);
    }
}

/// Each zone's new state from this pass's counts (`None` for a zone with no counted node), and
/// whether every such zone is fully disrupted. Records the sizes; a new zone starts Initial.
fn new_zone_states(zones: &mut Zones, threshold: f32) -> (Vec<Option<ZoneState>>, bool) {
    let mut new_states: Vec<Option<ZoneState>> = vec![None; zones.list.len()];
    let mut all_are_fully_disrupted = true;
    for (i, z) in zones.list.iter_mut().enumerate() {
        let size = z.n_ready + z.n_not_ready;
        if size == 0 {
            continue;
        }
        z.size = u64::from(size);
        z.unhealthy = u64::from(z.n_not_ready);
        let state = compute_zone_state(z.n_ready, z.n_not_ready, threshold);
        if state != ZoneState::FullDisruption {
            all_are_fully_disrupted = false;
        }
        new_states[i] = Some(state);
        if z.state.is_none() {
            z.state = Some(ZoneState::Initial);
        }
    }
    (new_states, all_are_fully_disrupted)
}

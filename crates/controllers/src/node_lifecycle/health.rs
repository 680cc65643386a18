//! Node health (upstream `monitorNodeHealth`, `tryUpdateNodeHealth`, `classifyNodes`,
//! `processPod` and `MarkPodsNotReady`): each monitor pass reads the nodes' Ready conditions
//! and Leases, sets the conditions of a node silent past its grace period to Unknown and marks
//! its pods not ready, then hands the zones' states to the disruption handling; a pod bound
//! to a node that was not ready is marked not ready too.

use super::tainting::{mark_node_as_reachable, process_taint_base_eviction};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::StoredPod;

use super::*;

impl NodeLifecycleController {
    /// Upstream `monitorNodeHealth`.
    pub(super) fn monitor_node_health(&mut self, now: SimTime, client: &mut dyn Client) {
        self.monitor_passes += 1;
        let rate = self.config.node_eviction_rate;
        self.nodes.sort();
        if self.classify_dirty {
            self.classify_dirty = false;
            self.classify_nodes(now, client);
        }
        let lease_writes = client.cache().lease_writes();
        if self.pass_all_steady(lease_writes, now) {
            return self.handle_disruption(now, client);
        }
        let start = client.clock().start();
        let Self {
            nodes,
            zones,
            pods,
            config,
            lease_reads,
            steady_epoch,
            steady_visits: visits,
            steady_down_visits: down_visits,
            ..
        } = self;
        for (name, entry) in nodes.iter_mut() {
            if !entry.exists {
                continue;
            }
            let read = refresh_lease(name, entry, &*client, lease_writes, lease_reads);
            if entry.steady == *steady_epoch
                && steady_visit(entry, zones, config, read, now, visits, down_visits)
            {
                continue;
            }
            entry.steady = 0;
            if quick_pass(name, entry, zones, config, now, client) {
                entry.mark_steady(*steady_epoch, false);
                continue;
            }
            let outcome = update_node_health(name, entry, config, start, now, client);
            // A node whose health could not be updated is skipped: not counted, no decisions.
            let Some((observed, current)) = outcome else {
                continue;
            };
            if !entry.excluded {
                zones.list[entry.zone].count(current == Some(CondStatus::True));
            }
            let Some(current) = current else {
                entry.retry = false;
                continue;
            };
            process_taint_base_eviction(name, entry, observed, zones, rate, now, client);
            let mark = if current != CondStatus::True && observed == CondStatus::True {
                record_node_not_ready(name, now, client);
                true
            } else {
                entry.retry && observed != CondStatus::True
            };
            if mark && mark_pods_not_ready(&pods.pods_on(name), name, now, client).is_err() {
                entry.retry = true;
                continue;
            }
            entry.retry = false;
            if marks_steady_down(name, entry, zones) {
                entry.mark_steady(*steady_epoch, true);
            }
        }
        self.handle_disruption(now, client);
    }

    /// The pass when every node would take the steady visit without a Lease read (its mark
    /// holds, the cache's Lease count is the one of its last read, and it is within its
    /// deadline): each node is then only counted ready in its zone (unless excluded), which
    /// this does in one tight loop over the records, without their names, the Lease check or
    /// the general steps. Resets the zones' counts first; false (counts reset again, nothing
    /// else touched) at the first node that would take another path, for the general loop.
    /// The passes between two renewal rounds of a steady cluster are these.
    fn pass_all_steady(&mut self, lease_writes: Option<u64>, now: SimTime) -> bool {
        for z in &mut self.zones.list {
            z.n_ready = 0;
            z.n_not_ready = 0;
        }
        let epoch = self.steady_epoch;
        let (mut visits, mut down_visits) = (0, 0);
        let all = lease_writes.is_some()
            && self.nodes.values().all(|e| {
                if !e.exists {
                    return true;
                }
                if e.steady != epoch || e.lease_read != lease_writes {
                    return false;
                }
                let z = &mut self.zones.list[e.zone];
                if e.steady_down {
                    // Without a Lease read nothing can have renewed it: `steady_down_pass`.
                    down_visits += 1;
                    z.n_not_ready += u32::from(!e.excluded);
                    return true;
                }
                if now > e.steady_until {
                    return false;
                }
                visits += 1;
                z.n_ready += u32::from(!e.excluded);
                true
            });
        if !all {
            for z in &mut self.zones.list {
                z.n_ready = 0;
                z.n_not_ready = 0;
            }
            return false;
        }
        self.steady_visits += visits;
        self.steady_down_visits += down_visits;
        self.all_steady_passes += 1;
        true
    }

    /// Upstream `classifyNodes` and its handling: new nodes are registered (event, zone
    /// evictor, NoExecute taints removed); deleted nodes are forgotten.
    pub(super) fn classify_nodes(&mut self, now: SimTime, client: &mut dyn Client) {
        let rate = self.config.node_eviction_rate;
        self.steady_epoch += 1;
        let added: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, e)| e.exists && !e.known)
            .map(|(n, _)| n.clone())
            .collect();
        let gone: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, e)| !e.exists)
            .map(|(n, _)| n.clone())
            .collect();
        for name in &added {
            record_node_event(
                name,
                now,
                "RegisteredNode",
                format!("Node {name} event: Registered Node {name} in Controller"),
                client,
            );
            let entry = self.nodes.get_mut(name).expect("listed");
            entry.known = true;
            self.zones.ensure_evictor(entry.zone, rate);
            mark_node_as_reachable(name, entry, &mut self.zones, rate, now, client);
        }
        for name in &gone {
            let entry = self.nodes.remove(name).expect("listed");
            if entry.known {
                record_node_event(
                    name,
                    now,
                    "RemovingNode",
                    format!("Node {name} event: Removing Node {name} from Controller"),
                    client,
                );
            }
            if let Some(lease) = entry.lease {
                self.pending_leases.insert(name.clone(), lease);
            }
        }
    }

    /// Upstream `processPod`: a pod newly bound to a node that was not ready at the last pass
    /// is marked not ready.
    pub(super) fn process_pod(&mut self, pod: &PodRef, now: SimTime, client: &mut dyn Client) {
        let Some(p) = client.cache().get_pod(&pod.0, &pod.1).cloned() else {
            return;
        };
        let node_name = pod_node_name(&p);
        let Some(entry) = self.nodes.get(node_name) else {
            return;
        };
        let Some(health) = entry.health.as_ref() else {
            return;
        };
        if !entry.exists {
            // Upstream requeues with a rate limit until the node is listed again.
            return;
        }
        let Some(saved) = health.saved_ready else {
            return;
        };
        if saved.status != CondStatus::True {
            let node_name = node_name.to_string();
            let _ = mark_pods_not_ready(std::slice::from_ref(pod), &node_name, now, client);
        }
    }
}

/// The node's `NodeNotReady` event (its Ready condition left True at this pass).
fn record_node_not_ready(name: &str, now: SimTime, client: &mut dyn Client) {
    let message = format!("Node {name} status is now: NodeNotReady");
    record_node_event(name, now, "NodeNotReady", message, client);
}

/// A Normal event of this controller about the node `name`.
fn record_node_event(
    name: &str,
    now: SimTime,
    reason: &'static str,
    message: String,
    client: &mut dyn Client,
) {
    client.record_event(EventRecord::normal(
        now,
        EVENT_SOURCE,
        "Node",
        "",
        name,
        reason,
        message,
    ));
}

/// [`try_update_node_health`], retried on a stale record up to `NODE_HEALTH_UPDATE_RETRY`
/// times; `None` when it did not succeed.
fn update_node_health(
    name: &str,
    entry: &mut NodeEntry,
    config: &NodeLifecycleConfig,
    start: Timestamp,
    now: SimTime,
    client: &mut dyn Client,
) -> Option<(CondStatus, Option<CondStatus>)> {
    for _ in 0..NODE_HEALTH_UPDATE_RETRY {
        match try_update_node_health(name, entry, config, start, now, client) {
            Ok(o) => return Some(o),
            Err(HealthError::Stale(node)) => entry.refresh_status(&node),
            Err(HealthError::Failed) => break,
        }
    }
    None
}

pub(super) enum HealthError {
    /// The store holds a newer version of the node than the controller's record.
    Stale(Arc<StoredNode>),
    /// The node is gone or the write failed.
    Failed,
}

/// Upstream `tryUpdateNodeHealth`: refreshes the health record from the node's Ready condition
/// and Lease and, past the grace period, sets the node's conditions to Unknown. Returns the
/// Ready status observed at the start and the current one (`None`: no Ready condition).
pub(super) fn try_update_node_health(
    name: &str,
    entry: &mut NodeEntry,
    config: &NodeLifecycleConfig,
    start: Timestamp,
    now: SimTime,
    client: &mut dyn Client,
) -> Result<(CondStatus, Option<CondStatus>), HealthError> {
    let (observed, grace) = match entry.ready {
        Some(r) => (r.status, config.node_monitor_grace_period),
        // Never posted: a synthetic Unknown dated at creation, with the startup grace.
        None => (CondStatus::Unknown, config.node_startup_grace_period),
    };
    refresh_health(entry, start, now);
    let health = entry.health.as_ref().expect("set by refresh_health");
    let current = entry.ready.map(|r| r.status);
    let probe = health.probe;
    if now <= probe + grace {
        return Ok((observed, current));
    }
    // Past the grace period. Only a change of Ready is written, as upstream.
    if current == Some(CondStatus::Unknown) {
        return Ok((observed, current));
    }
    let node = client
        .cache()
        .get_node(name)
        .cloned()
        .ok_or(HealthError::Failed)?;
    let rv: u64 = node
        .metadata
        .resource_version
        .as_deref()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if rv != entry.resource_version {
        return Err(HealthError::Stale(node));
    }
    let mut updated = StoredNode::clone(&node);
    let ts = client.clock().timestamp(now);
    let conditions = updated
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    set_conditions_unknown(conditions, node.metadata.creation_timestamp.as_ref(), &ts);
    let written = client
        .update_status(Object::Node(Arc::new(updated)))
        .map_err(|_| HealthError::Failed)?;
    if let Some(n) = written.as_node() {
        entry.refresh_status(n);
    }
    entry.health = Some(Health {
        probe,
        ready_transition: now,
        saved_ready: entry.ready,
        saved_lease: entry.lease,
    });
    Ok((observed, entry.ready.map(|r| r.status)))
}

/// The node's Lease as the cache holds it, as upstream's pass reads it from its Lease lister:
/// `simulate`'s node agents renew Leases without watch events (quiet writes), which only the
/// cache shows. A Lease the cache does not hold leaves what the watch events said (a client
/// whose cache lacks Leases, such as the controller's benchmark, feeds them as events).
/// `writes`: the cache's count of Lease writes now; the pass skips the read while the count
/// is the one of the entry's last read (no Lease changed since, and nothing else set
/// `lease`: the read would set it alike), so the Leases are read once per renewal round
/// rather than at every pass.
/// `reads` counts the reads. Whether it read.
#[inline]
fn refresh_lease(
    name: &str,
    entry: &mut NodeEntry,
    client: &dyn Client,
    writes: Option<u64>,
    reads: &mut u64,
) -> bool {
    if entry.lease_read.is_some() && entry.lease_read == writes {
        return false;
    }
    *reads += 1;
    entry.lease_read = writes;
    let cache = client.cache();
    let lease = cache.get_lease_hinted(NODE_LEASE_NAMESPACE, name, &mut entry.lease_slot);
    if let Some(l) = lease {
        entry.lease = Some(
            l.spec
                .as_ref()
                .and_then(|s| s.renew_time.as_ref())
                .map(|t| t.0),
        );
    }
    true
}

/// The first steps of the pass for every node (its zone's evictor when the zone lost its
/// state; the caller read its Lease), then for a node [`stays_ready`] accepts what the general steps
/// would do: count it ready and take it out of its zone's tainting queue
/// (`markNodeAsReachable` without NoExecute taints). Whether the node is done.
#[inline]
fn quick_pass(
    name: &str,
    entry: &mut NodeEntry,
    zones: &mut Zones,
    config: &NodeLifecycleConfig,
    now: SimTime,
    client: &mut dyn Client,
) -> bool {
    let rate = config.node_eviction_rate;
    // A known node in a zone that lost its state (it was empty at some pass).
    if zones.list[entry.zone].state.is_none() {
        zones.ensure_evictor(entry.zone, rate);
    }
    if !stays_ready(entry, config, now) {
        return false;
    }
    let z = &mut zones.list[entry.zone];
    if !entry.excluded {
        z.n_ready += 1;
    }
    match z.tainter.as_mut() {
        Some(tainter) => {
            tainter.remove(name);
        }
        None => mark_node_as_reachable(name, entry, zones, rate, now, client),
    }
    entry.retry = false;
    true
}

/// The pass's common case, decided without the general steps: a node whose Ready condition is
/// True and unchanged since the last pass saw it, without NoExecute taints, and within its
/// grace period once a renewed Lease moved its probe time (which is done here). The general
/// steps would count it ready, write nothing and mark nothing; the caller does the rest
/// (`markNodeAsReachable`). False leaves the node untouched for those steps.
#[inline]
fn stays_ready(entry: &mut NodeEntry, config: &NodeLifecycleConfig, now: SimTime) -> bool {
    let (Some(ready), Some(health)) = (entry.ready.as_ref(), entry.health.as_mut()) else {
        return false;
    };
    let unchanged = health
        .saved_ready
        .as_ref()
        .is_some_and(|saved| saved.heartbeat == ready.heartbeat);
    if ready.status != CondStatus::True
        || !unchanged
        || entry.has_unreachable_no_execute
        || entry.has_not_ready_no_execute
    {
        return false;
    }
    // As `refresh_health` with an unchanged Ready condition: a renewed lease is a heartbeat.
    note_lease(health, entry.lease, now);
    entry.steady_until = health.probe + config.node_monitor_grace_period;
    now <= entry.steady_until
}

/// A visit of a node marked steady at this epoch: the steady-down check for a silent node
/// already tainted unreachable, the steady check for the others; true (and counted) when the
/// mark holds and the node needs nothing more this pass.
#[inline]
fn steady_visit(
    entry: &mut NodeEntry,
    zones: &mut Zones,
    config: &NodeLifecycleConfig,
    lease_read: bool,
    now: SimTime,
    steady_visits: &mut u64,
    steady_down_visits: &mut u64,
) -> bool {
    let (held, visits) = if entry.steady_down {
        (
            steady_down_pass(entry, zones, lease_read),
            steady_down_visits,
        )
    } else {
        (
            steady_pass(entry, zones, config, lease_read, now),
            steady_visits,
        )
    };
    *visits += u64::from(held);
    held
}

/// A node the last pass found in the common case ([`quick_pass`]) with its record unchanged
/// since (the caller checked [`NodeEntry::steady`] and refreshed its Lease; `lease_read`:
/// it read the Lease, else `lease` is the one the last pass saw): its Ready condition,
/// taints, zone and exclusion are those [`stays_ready`] accepted, its zone kept its state, it
/// is in no tainting queue (the last pass took it out, and only its own general steps put it
/// back) and it has nothing to retry. So the common case's steps reduce to the Lease and the
/// grace period: a renewal the last pass did not see moves the probe time (and the deadline);
/// within the deadline the node counts as ready and is done. False: the node goes through
/// the common case's checks (which fail on the grace period) and the general steps.
#[inline]
fn steady_pass(
    entry: &mut NodeEntry,
    zones: &mut Zones,
    config: &NodeLifecycleConfig,
    lease_read: bool,
    now: SimTime,
) -> bool {
    if lease_read {
        let Some(health) = entry.health.as_mut() else {
            return false;
        };
        note_lease(health, entry.lease, now);
        entry.steady_until = health.probe + config.node_monitor_grace_period;
    }
    if now > entry.steady_until {
        return false;
    }
    if !entry.excluded {
        zones.list[entry.zone].n_ready += 1;
    }
    true
}

/// Whether the next pass's general steps, for a node left as this one is, would only count
/// it not ready in its zone, so that its visit can be the not-ready steady mark's
/// ([`steady_down_pass`]) while nothing changes its record. Called after the general steps.
/// Its Ready condition is Unknown (the health update never writes over an Unknown, within
/// the grace period or past it, and then returns Unknown as both the observed and the
/// current status), its health record saw this condition (so the next `refresh_health` can
/// only move the probe time, by a renewed Lease), it carries the unreachable NoExecute taint
/// and not the not-ready one (`processTaintBaseEviction` then re-adds it to its zone's
/// tainting queue, a no-op while it is in the queue's set), its zone has a state (no
/// evictor to create) and it has nothing to retry (no pods to mark).
///
/// Only this node's own general steps take it out of the set (`quick_pass`,
/// `markNodeAsReachable`, `markNodeForTainting` when it lacks the taint) or a change that
/// moves the controller's `steady_epoch` (a zone that lost its state gets a fresh queue; the
/// disruption modes); every change of its record clears the mark.
fn marks_steady_down(name: &str, entry: &NodeEntry, zones: &Zones) -> bool {
    let ready = match entry.ready {
        Some(r) if r.status == CondStatus::Unknown => r,
        _ => return false,
    };
    let seen = entry
        .health
        .as_ref()
        .and_then(|h| h.saved_ready)
        .is_some_and(|saved| saved.heartbeat == ready.heartbeat);
    let zone = &zones.list[entry.zone];
    seen && !entry.retry
        && entry.has_unreachable_no_execute
        && !entry.has_not_ready_no_execute
        && zone.state.is_some()
        && zone.tainter.as_ref().is_some_and(|t| t.contains(name))
}

/// A node with the not-ready steady mark ([`marks_steady_down`]; the caller checked it and
/// refreshed the Lease, `lease_read`: it read it): unless the Lease was renewed since the
/// last pass saw it (the general steps then move the probe time), the node counts as not
/// ready and is done. False: the general steps.
#[inline]
fn steady_down_pass(entry: &NodeEntry, zones: &mut Zones, lease_read: bool) -> bool {
    if lease_read {
        let Some(health) = entry.health.as_ref() else {
            return false;
        };
        if lease_renewed(health, entry.lease) {
            return false;
        }
    }
    if !entry.excluded {
        zones.list[entry.zone].n_not_ready += 1;
    }
    true
}

/// Refreshes the node's health record from its Ready condition and Lease: a new heartbeat or
/// a renewed Lease moves the probe time to `now`.
fn refresh_health(entry: &mut NodeEntry, start: Timestamp, now: SimTime) {
    let fresh = |saved_ready| Health {
        probe: now,
        ready_transition: now,
        saved_ready,
        saved_lease: None,
    };
    match (&mut entry.health, entry.ready) {
        (Some(h), None) => h.saved_ready = None,
        (None, None) => {
            let c = entry
                .creation
                .map(|t| SimTime::from_timestamp(t, start))
                .unwrap_or(SimTime::ZERO);
            entry.health = Some(Health {
                probe: c,
                ready_transition: c,
                saved_ready: None,
                saved_lease: None,
            });
        }
        (None, Some(r)) => entry.health = Some(fresh(Some(r))),
        (Some(h), Some(r)) => match h.saved_ready {
            None => *h = fresh(Some(r)),
            Some(saved) if saved.heartbeat != r.heartbeat => {
                let transition = if saved.transition != r.transition {
                    now
                } else {
                    h.ready_transition
                };
                *h = Health {
                    probe: now,
                    ready_transition: transition,
                    saved_ready: Some(r),
                    saved_lease: None,
                };
            }
            Some(_) => {}
        },
    }
    let health = entry.health.as_mut().expect("set above");
    // A renewed lease always counts as a heartbeat.
    note_lease(health, entry.lease, now);
}

/// A Lease renewed since the one last seen (or the first one seen) moves the probe time to
/// `now`.
fn note_lease(health: &mut Health, lease: Option<Option<Timestamp>>, now: SimTime) {
    if lease_renewed(health, lease) {
        health.saved_lease = lease;
        health.probe = now;
    }
}

/// Whether `lease` is a renewal the health record has not seen (the first one seen counts).
#[inline]
fn lease_renewed(health: &Health, lease: Option<Option<Timestamp>>) -> bool {
    let Some(renew) = lease else {
        return false;
    };
    match health.saved_lease {
        None => true,
        Some(saved) => matches!((saved, renew), (Some(s), Some(o)) if s < o),
    }
}

/// Sets each condition of [`CONDITIONS_SET_UNKNOWN`] to Unknown; one the node never posted is
/// added with its heartbeat at the node's creation.
fn set_conditions_unknown(conditions: &mut Vec<NodeCondition>, created: Option<&Time>, ts: &Time) {
    for type_ in CONDITIONS_SET_UNKNOWN {
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            None => conditions.push(NodeCondition {
                type_: type_.to_string(),
                status: "Unknown".to_string(),
                reason: Some(REASON_NODE_STATUS_NEVER_UPDATED.to_string()),
                message: Some(MESSAGE_NODE_STATUS_NEVER_UPDATED.to_string()),
                last_heartbeat_time: created.cloned(),
                last_transition_time: Some(ts.clone()),
            }),
            Some(c) => {
                if c.status != "Unknown" {
                    c.status = "Unknown".to_string();
                    c.reason = Some(REASON_NODE_STATUS_UNKNOWN.to_string());
                    c.message = Some(MESSAGE_NODE_STATUS_UNKNOWN.to_string());
                    c.last_transition_time = Some(ts.clone());
                }
            }
        }
    }
}

/// Upstream `MarkPodsNotReady`: sets each pod's Ready condition (if it has one) to False and
/// records `NodeNotReady` on it. Errors other than a vanished pod fail the call.
pub(super) fn mark_pods_not_ready(
    pods: &[PodRef],
    node_name: &str,
    now: SimTime,
    client: &mut dyn Client,
) -> Result<(), ()> {
    let mut failed = false;
    for (ns, name) in pods {
        let Some(pod) = client.cache().get_pod(ns, name).cloned() else {
            continue;
        };
        if pod_node_name(&pod) != node_name {
            continue;
        }
        let Some(ready) = pod.status().and_then(|s| s.condition("Ready")) else {
            continue;
        };
        let cond = PodCondition {
            status: "False".to_string(),
            ..ready
        };
        let mut updated = StoredPod::clone(&pod);
        let ts = client.clock().timestamp(now);
        if !updated.update_status(|status| update_pod_condition(status, cond, ts)) {
            continue;
        }
        // Upstream `UpdatePodStatus`: the status subresource, at the version read.
        match client.update_status(Object::Pod(Arc::new(updated))) {
            Err(ApiError::NotFound { .. }) => continue,
            Err(_) => failed = true,
            Ok(_) => {}
        }
        client.record_event(EventRecord::warning(
            now,
            EVENT_SOURCE,
            "Pod",
            ns,
            name,
            "NodeNotReady",
            "Node is not ready".to_string(),
        ));
    }
    if failed {
        Err(())
    } else {
        Ok(())
    }
}

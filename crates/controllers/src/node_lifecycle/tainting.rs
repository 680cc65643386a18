//! Tainting (upstream `doNoExecuteTaintingPass`, `processTaintBaseEviction`,
//! `doNoScheduleTaintingPass` and `reconcileNodeLabels`): the rate-limited
//! NoExecute taints of not-ready and unreachable nodes, the NoSchedule taints of
//! TaintNodesByCondition, and the writes that swap a node's taints.

use super::*;

impl NodeLifecycleController {
    /// Upstream `doNoExecuteTaintingPass`.
    pub(super) fn do_no_execute_tainting_pass(&mut self, now: SimTime, client: &mut dyn Client) {
        let Self { nodes, zones, .. } = self;
        let mut tainted_zones: Vec<usize> = Vec::new();
        for z in &mut zones.list {
            let Some(tainter) = z.tainter.as_mut() else {
                continue;
            };
            if tainter.is_empty() {
                continue;
            }
            tainter.try_process(now, |v| {
                let Some(entry) = nodes.get_mut(&v.value).filter(|e| e.exists) else {
                    return (true, SimDuration::ZERO);
                };
                let Some(ready) = entry.ready else {
                    return (false, TAINT_RETRY_NO_CONDITION);
                };
                // "unreachable" and "not-ready" mirror Ready and exclude each other.
                let (add, remove) = match ready.status {
                    CondStatus::False => (TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE),
                    CondStatus::Unknown => (TAINT_NODE_UNREACHABLE, TAINT_NODE_NOT_READY),
                    _ => return (true, SimDuration::ZERO),
                };
                match swap_node_taints(
                    client,
                    &v.value,
                    &[(add, "NoExecute")],
                    &[(remove, "NoExecute")],
                    now,
                ) {
                    Ok(node) => {
                        entry.refresh_status(&node);
                        tainted_zones.push(entry.zone);
                        (true, SimDuration::ZERO)
                    }
                    Err(_) => (false, SimDuration::ZERO),
                }
            });
        }
        for zone in tainted_zones {
            *zones.list[zone].evictions_total.get_or_insert(0) += 1;
        }
    }

    /// Upstream `doNoScheduleTaintingPass` and `reconcileNodeLabels` for one node.
    pub(super) fn process_node_update(
        &mut self,
        name: &str,
        now: SimTime,
        client: &mut dyn Client,
    ) {
        let Some(node) = client.cache().get_node(name).cloned() else {
            return;
        };
        let (to_add, to_remove) = no_schedule_taint_diff(&node);
        let mut clean = to_add.is_empty() && to_remove.is_empty();
        let node = if clean {
            node
        } else {
            let add: Vec<(&str, &str)> = to_add.iter().map(|k| (*k, "NoSchedule")).collect();
            let remove: Vec<(&str, &str)> = to_remove
                .iter()
                .map(|k| (k.as_str(), "NoSchedule"))
                .collect();
            if let Ok(n) = swap_node_taints(client, name, &add, &remove, now) {
                if let Some(e) = self.nodes.get_mut(name) {
                    e.refresh_status(&n);
                }
            }
            let Some(node) = client.cache().get_node(name).cloned() else {
                return;
            };
            node
        };
        let updates = label_reconciliation(&node);
        clean &= updates.is_empty();
        // Nothing written: the next version that changes only heartbeats needs no visit.
        if let Some(e) = self.nodes.get_mut(name) {
            e.reconciled = clean.then(|| parse_resource_version(&node.metadata));
        }
        if !updates.is_empty() {
            let mut n = StoredNode::clone(&node);
            let labels = n.metadata.labels.get_or_insert_with(BTreeMap::new);
            for (k, v) in updates {
                labels.insert(k.to_string(), v);
            }
            if let Ok(Object::Node(n)) = client.update(Object::Node(Arc::new(n))) {
                if let Some(e) = self.nodes.get_mut(name) {
                    e.refresh_status(&n);
                }
            }
        }
    }

    pub(super) fn next_taint_pass(&self) -> Option<SimTime> {
        let earliest = self
            .zones
            .list
            .iter()
            .filter_map(|z| z.tainter.as_ref()?.next_attempt_at())
            .min()?;
        let mut t = ceil_to_period(earliest.max(SimTime::ZERO), NODE_EVICTION_PERIOD);
        if let Some(last) = self.last_taint_pass {
            if t <= last {
                t = last + NODE_EVICTION_PERIOD;
            }
        }
        Some(t)
    }
}

/// Upstream `processTaintBaseEviction`, on the Ready status observed before this pass.
#[inline]
pub(super) fn process_taint_base_eviction(
    name: &str,
    entry: &mut NodeEntry,
    observed: CondStatus,
    zones: &mut Zones,
    rate: f32,
    now: SimTime,
    client: &mut dyn Client,
) {
    match observed {
        CondStatus::False => {
            if entry.has_unreachable_no_execute {
                // Swapped at once, without waiting for a token.
                swap_and_refresh(
                    client,
                    name,
                    entry,
                    (TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE),
                    now,
                );
            } else {
                mark_node_for_tainting(name, entry, CondStatus::False, zones, rate, now);
            }
        }
        CondStatus::Unknown => {
            if entry.has_not_ready_no_execute {
                swap_and_refresh(
                    client,
                    name,
                    entry,
                    (TAINT_NODE_UNREACHABLE, TAINT_NODE_NOT_READY),
                    now,
                );
            } else {
                mark_node_for_tainting(name, entry, CondStatus::Unknown, zones, rate, now);
            }
        }
        CondStatus::True => mark_node_as_reachable(name, entry, zones, rate, now, client),
        CondStatus::Other => {}
    }
}

pub(super) fn swap_and_refresh(
    client: &mut dyn Client,
    name: &str,
    entry: &mut NodeEntry,
    (add, remove): (&str, &str),
    now: SimTime,
) {
    if let Ok(n) = swap_node_taints(
        client,
        name,
        &[(add, "NoExecute")],
        &[(remove, "NoExecute")],
        now,
    ) {
        entry.refresh_status(&n);
    }
}

/// Upstream `markNodeForTainting`: queue the node in its zone (re-queue it if it lacks the
/// taint its status calls for, so a node that changed from False to Unknown is re-tainted).
pub(super) fn mark_node_for_tainting(
    name: &str,
    entry: &NodeEntry,
    status: CondStatus,
    zones: &mut Zones,
    rate: f32,
    now: SimTime,
) -> bool {
    let tainter = zones.tainter(entry.zone, rate);
    let lacks = match status {
        CondStatus::False => !entry.has_not_ready_no_execute,
        CondStatus::Unknown => !entry.has_unreachable_no_execute,
        _ => false,
    };
    if lacks {
        return tainter.requeue(name, &entry.uid, now);
    }
    tainter.add(name, &entry.uid, now)
}

/// Upstream `markNodeAsReachable`: remove both NoExecute taints and leave the zone queue.
#[inline]
pub(super) fn mark_node_as_reachable(
    name: &str,
    entry: &mut NodeEntry,
    zones: &mut Zones,
    rate: f32,
    now: SimTime,
    client: &mut dyn Client,
) {
    if entry.has_unreachable_no_execute || entry.has_not_ready_no_execute {
        let remove = [
            (TAINT_NODE_UNREACHABLE, "NoExecute"),
            (TAINT_NODE_NOT_READY, "NoExecute"),
        ];
        match swap_node_taints(client, name, &[], &remove, now) {
            Ok(n) => entry.refresh_status(&n),
            // Retried at the next pass.
            Err(_) => return,
        }
    }
    zones.tainter(entry.zone, rate).remove(name);
}

/// Upstream `SwapNodeControllerTaint`: adds (or refreshes) the taints `add` with timeAdded
/// = now, then removes the taints matching `remove` (key and effect). Writes only on change.
pub(super) fn swap_node_taints(
    client: &mut dyn Client,
    name: &str,
    add: &[(&str, &str)],
    remove: &[(&str, &str)],
    now: SimTime,
) -> Result<Arc<StoredNode>, ApiError> {
    let node = client
        .cache()
        .get_node(name)
        .cloned()
        .ok_or_else(|| ApiError::NotFound {
            key: kubeplane_api::ObjectKey::new(Kind::Node, "", name),
        })?;
    let ts = client.clock().timestamp(now);
    let mut updated = StoredNode::clone(&node);
    let spec = updated.spec.get_or_insert_with(Default::default);
    let mut taints = spec.taints.take().unwrap_or_default();
    let mut changed = false;
    for &(key, effect) in add {
        let t = Taint {
            key: key.to_string(),
            effect: effect.to_string(),
            value: None,
            time_added: Some(ts.clone()),
        };
        match taints
            .iter_mut()
            .find(|x| x.key == key && x.effect == effect)
        {
            Some(existing) => {
                if *existing != t {
                    *existing = t;
                    changed = true;
                }
            }
            None => {
                taints.push(t);
                changed = true;
            }
        }
    }
    let before = taints.len();
    taints.retain(|x| !remove.iter().any(|&(k, e)| x.key == k && x.effect == e));
    changed |= taints.len() != before;
    if !changed {
        return Ok(node);
    }
    spec.taints = (!taints.is_empty()).then_some(taints);
    match client.update(Object::Node(Arc::new(updated)))? {
        Object::Node(n) => Ok(n),
        _ => Ok(node),
    }
}

/// The NoSchedule taints TaintNodesByCondition wants, by key, in condition order.
pub(super) fn desired_no_schedule_taints(node: &Node) -> Vec<&'static str> {
    let mut keys = Vec::new();
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[]);
    for c in conditions {
        let key = match (c.type_.as_str(), c.status.as_str()) {
            ("Ready", "False") => TAINT_NODE_NOT_READY,
            ("Ready", "Unknown") => TAINT_NODE_UNREACHABLE,
            ("MemoryPressure", "True") => TAINT_NODE_MEMORY_PRESSURE,
            ("DiskPressure", "True") => TAINT_NODE_DISK_PRESSURE,
            ("NetworkUnavailable", "True") => TAINT_NODE_NETWORK_UNAVAILABLE,
            ("PIDPressure", "True") => TAINT_NODE_PID_PRESSURE,
            _ => continue,
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
        && !keys.contains(&TAINT_NODE_UNSCHEDULABLE)
    {
        keys.push(TAINT_NODE_UNSCHEDULABLE);
    }
    keys
}

/// The NoSchedule condition taints to add and to remove (upstream `TaintSetDiff` on the
/// NoSchedule taints whose key is one of the condition keys or unschedulable).
pub(super) fn no_schedule_taint_diff(node: &Node) -> (Vec<&'static str>, Vec<String>) {
    const MANAGED: [&str; 7] = [
        TAINT_NODE_NOT_READY,
        TAINT_NODE_UNREACHABLE,
        TAINT_NODE_MEMORY_PRESSURE,
        TAINT_NODE_DISK_PRESSURE,
        TAINT_NODE_NETWORK_UNAVAILABLE,
        TAINT_NODE_PID_PRESSURE,
        TAINT_NODE_UNSCHEDULABLE,
    ];
    let desired = desired_no_schedule_taints(node);
    let current: Vec<&str> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
        .iter()
        .filter(|t| t.effect == "NoSchedule" && MANAGED.contains(&t.key.as_str()))
        .map(|t| t.key.as_str())
        .collect();
    let add = desired
        .iter()
        .copied()
        .filter(|k| !current.contains(k))
        .collect();
    let remove = current
        .iter()
        .filter(|k| !desired.contains(k))
        .map(|k| k.to_string())
        .collect();
    (add, remove)
}

/// Upstream `reconcileNodeLabels`: the beta OS and arch labels follow the stable ones.
pub(super) fn label_reconciliation(node: &Node) -> Vec<(&'static str, String)> {
    const PAIRS: [(&str, &str); 2] = [
        ("kubernetes.io/os", "beta.kubernetes.io/os"),
        ("kubernetes.io/arch", "beta.kubernetes.io/arch"),
    ];
    let Some(labels) = node.metadata.labels.as_ref() else {
        return Vec::new();
    };
    PAIRS
        .iter()
        .filter_map(|&(primary, secondary)| {
            let value = labels.get(primary)?;
            match labels.get(secondary) {
                Some(v) if v == value => None,
                _ => Some((secondary, value.clone())),
            }
        })
        .collect()
}

/// The first multiple of `period` at or after `t` (t >= 0).
pub(super) fn ceil_to_period(t: SimTime, period: SimDuration) -> SimTime {
    let p = period.0.max(1);
    SimTime(t.0.div_euclid(p) * p + if t.0.rem_euclid(p) == 0 { 0 } else { p })
}

//! One sync of a DaemonSet (upstream `daemon_controller.go`: `syncDaemonSet`, `getDaemonPods`
//! with its claims, `manage`, `podsShouldBeOnNode`, `syncNodes` and the status).

use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::Node;
use kubeplane_api::{ApiError, Client, Kind, Object, ObjectKey};
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;

use super::backoff::Backoff;
use super::cache::{Cache, CachedDs};
use super::explain;
use super::pod_control::{
    adopt_pod, create_pod, delete_pod, event, recheck_daemon_set, release_pod,
};
use super::util::{
    allows_surge, create_pod_template, get_target_node_name, get_template_generation,
    is_pod_updated, strategy_type, DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY, STRATEGY_ROLLING_UPDATE,
};
use super::*;
use crate::controller_utils::{
    is_pod_available, is_pod_ready, ns_name, pod_labels, pod_node, pod_phase, Expectations, NsName,
    WorkQueue, SLOW_START_INITIAL_BATCH_SIZE,
};
use crate::explain::Explained;

/// A DaemonSet's claimed pods by the node they run on or are meant for (upstream
/// `nodeToDaemonPods`), nodes in name order.
pub(super) type NodeToDaemonPods = BTreeMap<String, Vec<Arc<StoredPod>>>;

/// A sync's view of the controller: the caches it reads, and apart from them the queue,
/// expectations, backoff and counters it updates.
pub(super) struct SyncCx<'a> {
    pub cache: &'a Cache,
    pub queue: &'a mut WorkQueue,
    pub expectations: &'a mut Expectations,
    pub backoff: &'a mut Backoff,
    pub metrics: &'a mut Metrics,
    /// The explanation records written so far (`--explain`).
    pub explained: &'a mut Explained,
    pub now: SimTime,
    /// `now` as an object timestamp.
    pub now_ts: jiff::Timestamp,
}

impl DaemonSetsController {
    /// Syncs one key ([`SyncCx::sync_daemon_set`]).
    pub(super) fn sync(
        &mut self,
        key: &NsName,
        now: SimTime,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        SyncCx {
            cache: &self.cache,
            queue: &mut self.queue,
            expectations: &mut self.expectations,
            backoff: &mut self.failed_pods_backoff,
            metrics: &mut self.metrics,
            explained: &mut self.explained,
            now,
            now_ts: client.clock().timestamp(now).0,
        }
        .sync_daemon_set(key, client)
    }
}

/// The selector `{}` (upstream compares it with an empty LabelSelector).
fn selects_everything(ds: &DaemonSet) -> bool {
    ds.spec.as_ref().is_some_and(|s| {
        s.selector
            .match_labels
            .as_ref()
            .is_none_or(BTreeMap::is_empty)
            && s.selector
                .match_expressions
                .as_ref()
                .is_none_or(Vec::is_empty)
    })
}

pub(super) fn min_ready_seconds(ds: &DaemonSet) -> i32 {
    ds.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

fn is_terminal(pod: &StoredPod) -> bool {
    matches!(pod_phase(pod), "Succeeded" | "Failed")
}

fn pod_name(pod: &StoredPod) -> &str {
    pod.metadata.name.as_deref().unwrap_or("")
}

/// Upstream `podByCreationTimestampAndPhase`: bound pods first, then the oldest, then by name.
pub(super) fn sort_by_creation_timestamp_and_phase(pods: &mut [Arc<StoredPod>]) {
    pods.sort_by(|a, b| {
        let unbound = |p: &StoredPod| pod_node(p).is_empty();
        unbound(a)
            .cmp(&unbound(b))
            .then_with(|| {
                let t = |p: &StoredPod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
                t(a).cmp(&t(b))
            })
            .then_with(|| pod_name(a).cmp(pod_name(b)))
    });
}

/// Groups claimed pods by their target node (upstream `getNodesToDaemonPods`); pods that are
/// terminal and being deleted count only with `include_deleted_terminal`.
pub(super) fn node_to_daemon_pods(
    claimed: &[Arc<StoredPod>],
    include_deleted_terminal: bool,
) -> NodeToDaemonPods {
    let mut out = NodeToDaemonPods::new();
    for pod in claimed {
        if !include_deleted_terminal
            && is_terminal(pod)
            && pod.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        if let Ok(node) = get_target_node_name(pod) {
            out.entry(node.to_string()).or_default().push(pod.clone());
        }
    }
    out
}

/// Joins a sync's errors as upstream's aggregate error prints them.
pub(super) fn aggregate(mut errors: Vec<String>) -> Result<(), String> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// The status counts of one DaemonSet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatusCounts {
    pub desired_number_scheduled: i32,
    pub current_number_scheduled: i32,
    pub number_misscheduled: i32,
    pub number_ready: i32,
    pub updated_number_scheduled: i32,
    pub number_available: i32,
    pub number_unavailable: i32,
}

impl<'a> SyncCx<'a> {
    fn event(
        &self,
        c: &mut dyn Client,
        ds: &CachedDs,
        warning: bool,
        reason: &'static str,
        m: String,
    ) {
        c.record_event(event(self.now, ds, warning, reason, m));
    }

    /// Upstream `syncDaemonSet`. An error requeues the key with backoff.
    fn sync_daemon_set(&mut self, key: &NsName, client: &mut dyn Client) -> Result<(), String> {
        self.metrics.syncs += 1;
        let cache: &'a Cache = self.cache;
        let Some(ds) = cache.daemon_sets.get(key) else {
            self.expectations.delete(key);
            return Ok(());
        };
        if selects_everything(&ds.ds) {
            let msg = "This daemon set is selecting all pods. A non-empty selector is required.";
            self.event(client, ds, true, REASON_SELECTING_ALL, msg.into());
            return Ok(());
        }
        // A DaemonSet being deleted: its history may be gone, so its status cannot be trusted.
        if ds.ds.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let (hash, old) = self
            .construct_history(ds, client)
            .map_err(|e| format!("failed to construct revisions of DaemonSet: {e}"))?;
        let claimed = self.get_daemon_pods(ds, client)?;
        let by_node = node_to_daemon_pods(&claimed, false);
        if !self.expectations.satisfied(key, self.now) {
            // Status only; observedGeneration stays, this generation was not processed.
            return self.update_daemon_set_status(ds, key, &by_node, &hash, false, client);
        }
        let result = self.update_daemon_set(ds, key, &claimed, &by_node, &hash, &old, client);
        let status = self.update_daemon_set_status(ds, key, &by_node, &hash, true, client);
        result.and(status)
    }

    /// Upstream `updateDaemonSet`: manage, then (when nothing is in flight) the update strategy,
    /// then the revision history.
    #[allow(clippy::too_many_arguments)]
    fn update_daemon_set(
        &mut self,
        ds: &CachedDs,
        key: &NsName,
        claimed: &[Arc<StoredPod>],
        by_node: &NodeToDaemonPods,
        hash: &str,
        old: &[Arc<k8s_openapi::api::apps::v1::ControllerRevision>],
        client: &mut dyn Client,
    ) -> Result<(), String> {
        self.manage(ds, key, by_node, hash, client)?;
        if self.expectations.satisfied(key, self.now)
            && strategy_type(&ds.ds) == STRATEGY_ROLLING_UPDATE
        {
            self.rolling_update(ds, key, by_node.clone(), hash, client)?;
        }
        self.cleanup_history(ds, claimed, old, client)
            .map_err(|e| format!("failed to clean up revisions of DaemonSet: {e}"))
    }

    // ----- claiming --------------------------------------------------------------------------

    /// Upstream `getDaemonPods`: the DaemonSet's own pods that match its selector (releasing
    /// those that stopped matching) and the orphans of its namespace that match, adopted.
    pub(super) fn get_daemon_pods(
        &mut self,
        ds: &CachedDs,
        client: &mut dyn Client,
    ) -> Result<Vec<Arc<StoredPod>>, String> {
        let selector = ds.selector.as_ref().map_err(Clone::clone)?;
        let (ns, _) = ns_name(&ds.ds.metadata);
        let mut claimed = Vec::new();
        let mut errors = Vec::new();
        for pod in self.cache.controlled_pods(ds.uid()) {
            if pod.metadata.namespace.as_deref().unwrap_or("default") != ns {
                continue;
            }
            if selector.matches(pod_labels(pod)) {
                claimed.push(pod.clone());
            } else if let Err(e) = release_pod(client, ds.uid(), pod) {
                errors.push(e.to_string());
            }
        }
        let mut can_adopt: Option<Result<(), String>> = None;
        for pod in self.cache.orphan_pods(&ns) {
            if pod.metadata.deletion_timestamp.is_some() || !selector.matches(pod_labels(pod)) {
                continue;
            }
            if let Err(e) = can_adopt.get_or_insert_with(|| recheck_daemon_set(client, ds)) {
                errors.push(format!(
                    "can't adopt Pod {ns}/{} ({}): {e}",
                    pod_name(pod),
                    pod.metadata.uid.as_deref().unwrap_or("")
                ));
                continue;
            }
            match adopt_pod(client, ds, pod) {
                Ok(true) => claimed.push(pod.clone()),
                Ok(false) => {}
                Err(e) => errors.push(e.to_string()),
            }
        }
        aggregate(errors).map(|()| claimed)
    }

    // ----- manage ----------------------------------------------------------------------------

    /// Upstream `manage`: which nodes need a pod and which pods must go, then `syncNodes`.
    fn manage(
        &mut self,
        ds: &CachedDs,
        key: &NsName,
        by_node: &NodeToDaemonPods,
        hash: &str,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let mut nodes_needing = Vec::new();
        let mut to_delete = Vec::new();
        for node in self.cache.nodes.values() {
            self.pods_should_be_on_node(
                node,
                by_node,
                ds,
                hash,
                (&mut nodes_needing, &mut to_delete),
                client,
            );
        }
        // Unbound pods meant for nodes that no longer exist: PodGC never sees them.
        for (node, pods) in by_node {
            if self.cache.nodes.contains_key(node) {
                continue;
            }
            let unbound = pods.iter().filter(|p| pod_node(p).is_empty());
            to_delete.extend(unbound.map(|p| pod_name(p).to_string()));
        }
        self.sync_nodes(ds, key, &to_delete, &nodes_needing, hash, client)
    }

    /// Upstream `podsShouldBeOnNode`: pushes the node to `out.0` when it needs a pod, and the
    /// names of the node's pods that must go to `out.1`.
    fn pods_should_be_on_node(
        &mut self,
        node: &Node,
        by_node: &NodeToDaemonPods,
        ds: &CachedDs,
        hash: &str,
        out: (&mut Vec<String>, &mut Vec<String>),
        client: &mut dyn Client,
    ) {
        let (nodes_needing, to_delete) = out;
        let name = node.metadata.name.as_deref().unwrap_or("");
        let (should_run, should_continue) = ds.view.node_should_run_daemon_pod(node);
        if client.explain() {
            self.explain_node(ds, node, should_run, should_continue, client);
        }
        let daemon_pods = by_node.get(name);
        match daemon_pods {
            None if should_run => nodes_needing.push(name.to_string()),
            Some(pods) if should_continue => {
                let mut running =
                    self.running_or_delete_finished(ds, name, pods, to_delete, client);
                if !allows_surge(&ds.ds) {
                    if running.len() > 1 {
                        sort_by_creation_timestamp_and_phase(&mut running);
                        to_delete.extend(running[1..].iter().map(|p| pod_name(p).to_string()));
                    }
                    return;
                }
                if running.len() <= 1 {
                    if running.is_empty() && should_run {
                        nodes_needing.push(name.to_string());
                    }
                    return;
                }
                self.prune_surge_pods(ds, hash, running, to_delete);
            }
            Some(pods) if !should_continue => {
                let live = pods
                    .iter()
                    .filter(|p| p.metadata.deletion_timestamp.is_none());
                to_delete.extend(live.map(|p| pod_name(p).to_string()));
            }
            _ => {}
        }
    }

    /// A `NodeSkipped` record when `node` does not run the set's pod (once per reason).
    fn explain_node(
        &mut self,
        ds: &CachedDs,
        node: &Node,
        should_run: bool,
        should_continue: bool,
        client: &mut dyn Client,
    ) {
        let key = ns_name(&ds.obj.metadata);
        let subject = format!("node/{}", node.metadata.name.as_deref().unwrap_or(""));
        if should_run {
            self.explained.clear(&key, &subject);
            return;
        }
        let r = explain::node_skipped(self.now, &key, &ds.ds, node, should_continue);
        self.explained.emit(client, &key, &subject, r);
    }

    /// The node's pods that are not being deleted and not finished; failed pods (outside their
    /// node's backoff) and succeeded ones are pushed to `to_delete` with their event.
    fn running_or_delete_finished(
        &mut self,
        ds: &CachedDs,
        node: &str,
        pods: &[Arc<StoredPod>],
        to_delete: &mut Vec<String>,
        client: &mut dyn Client,
    ) -> Vec<Arc<StoredPod>> {
        let mut running = Vec::new();
        for pod in pods {
            if pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
            match pod_phase(pod) {
                "Failed" => {
                    let observed = ds.ds.status.as_ref().and_then(|s| s.observed_generation);
                    let backoff_key = format!("{}/{}/{node}", ds.uid(), observed.unwrap_or(0));
                    if self
                        .backoff
                        .is_in_back_off_since_update(&backoff_key, self.now)
                    {
                        let delay = self.backoff.get(&backoff_key);
                        let key = ns_name(&ds.ds.metadata);
                        self.queue.add_after(key, self.now + delay);
                        continue;
                    }
                    self.backoff.next(&backoff_key, self.now);
                    let msg = format!(
                        "Found failed daemon pod {ns}/{} on node {node}, will try to kill it",
                        pod_name(pod)
                    );
                    self.event(client, ds, true, REASON_FAILED_DAEMON_POD, msg);
                    to_delete.push(pod_name(pod).to_string());
                }
                "Succeeded" => {
                    let msg = format!(
                        "Found succeeded daemon pod {ns}/{} on node {node}, will try to delete it",
                        pod_name(pod)
                    );
                    self.event(client, ds, false, REASON_SUCCEEDED_DAEMON_POD, msg);
                    to_delete.push(pod_name(pod).to_string());
                }
                _ => running.push(pod.clone()),
            }
        }
        running
    }

    /// With surge, a node keeps the oldest pod of the current revision and the oldest older one,
    /// and the older one only while the new one is not yet available (and the old one ready).
    fn prune_surge_pods(
        &self,
        ds: &CachedDs,
        hash: &str,
        mut running: Vec<Arc<StoredPod>>,
        to_delete: &mut Vec<String>,
    ) {
        sort_by_creation_timestamp_and_phase(&mut running);
        let mut oldest_new: Option<&Arc<StoredPod>> = None;
        let mut oldest_old: Option<&Arc<StoredPod>> = None;
        for pod in &running {
            let slot = if pod_labels(pod)
                .get(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY)
                .map(String::as_str)
                == Some(hash)
            {
                &mut oldest_new
            } else {
                &mut oldest_old
            };
            if slot.is_none() {
                *slot = Some(pod);
            } else {
                to_delete.push(pod_name(pod).to_string());
            }
        }
        if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
            if !is_pod_ready(old) || self.available(ds, new) {
                to_delete.push(pod_name(old).to_string());
            }
        }
    }

    /// Whether a pod counts as available at this sync's instant.
    pub(super) fn available(&self, ds: &CachedDs, pod: &StoredPod) -> bool {
        is_pod_available(pod, min_ready_seconds(&ds.ds), self.now_ts)
    }
}

impl SyncCx<'_> {
    // ----- syncNodes -------------------------------------------------------------------------

    /// Upstream `syncNodes`: deletes the named pods and creates a pod for each named node, at
    /// most [`BURST_REPLICAS`] of each, creates in slow-start batches. Expectations are set
    /// first, for exactly those writes.
    pub(super) fn sync_nodes(
        &mut self,
        ds: &CachedDs,
        key: &NsName,
        pods_to_delete: &[String],
        nodes_needing: &[String],
        hash: &str,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let create_diff = nodes_needing.len().min(BURST_REPLICAS);
        let delete_diff = pods_to_delete.len().min(BURST_REPLICAS);
        let pod_keys: Vec<String> = pods_to_delete[..delete_diff]
            .iter()
            .map(|n| format!("{}/{n}", key.0))
            .collect();
        self.expectations
            .expect(key, create_diff, pod_keys.clone(), self.now);
        let generation = get_template_generation(&ds.ds).ok().flatten();
        let template = ds
            .ds
            .spec
            .as_ref()
            .map(|s| create_pod_template(&s.template, generation, hash))
            .unwrap_or_default();
        let mut errors = Vec::new();
        let mut pos = 0;
        let mut batch = create_diff.min(SLOW_START_INITIAL_BATCH_SIZE);
        while pos < create_diff {
            let errors_before = errors.len();
            for node in &nodes_needing[pos..pos + batch] {
                match create_pod(client, ds, &template, node, self.now) {
                    Ok(()) => self.metrics.pods_created += 1,
                    // The namespace is being deleted: every later create would fail too.
                    Err(None) => {}
                    Err(Some(e)) => {
                        self.expectations.creation_observed(key);
                        errors.push(e);
                    }
                }
            }
            let skipped = create_diff - (pos + batch);
            if errors.len() > errors_before && skipped > 0 {
                // The pods never attempted will never be observed.
                for _ in 0..skipped {
                    self.expectations.creation_observed(key);
                }
                break;
            }
            pos += batch;
            batch = (2 * batch).min(create_diff - pos);
        }
        for (name, pod_key) in pods_to_delete[..delete_diff].iter().zip(&pod_keys) {
            match delete_pod(client, ds, name, self.now) {
                Ok(()) => self.metrics.pods_deleted += 1,
                Err(e) => {
                    self.expectations.deletion_observed(key, pod_key);
                    if !matches!(e, ApiError::NotFound { .. }) {
                        errors.push(e.to_string());
                    }
                }
            }
        }
        aggregate(errors)
    }

    // ----- status ----------------------------------------------------------------------------

    /// The status counts over the cached nodes (upstream `updateDaemonSetStatus`'s loop): for
    /// each node that should run the pod, the oldest of its pods decides readiness,
    /// availability and whether it is updated.
    pub(super) fn status_counts(
        &self,
        ds: &CachedDs,
        by_node: &NodeToDaemonPods,
        hash: &str,
    ) -> StatusCounts {
        let mut c = StatusCounts::default();
        let generation = get_template_generation(&ds.ds).ok().flatten();
        for node in self.cache.nodes.values() {
            let name = node.metadata.name.as_deref().unwrap_or("");
            let (should_run, _) = ds.view.node_should_run_daemon_pod(node);
            let pods = by_node.get(name).filter(|p| !p.is_empty());
            match (should_run, pods) {
                (true, None) => c.desired_number_scheduled += 1,
                (true, Some(pods)) => {
                    c.desired_number_scheduled += 1;
                    c.current_number_scheduled += 1;
                    let mut pods = pods.clone();
                    sort_by_creation_timestamp_and_phase(&mut pods);
                    let pod = &pods[0];
                    if is_pod_ready(pod) {
                        c.number_ready += 1;
                        if self.available(ds, pod) {
                            c.number_available += 1;
                        }
                    }
                    if is_pod_updated(pod, hash, generation) {
                        c.updated_number_scheduled += 1;
                    }
                }
                (false, Some(_)) => c.number_misscheduled += 1,
                (false, None) => {}
            }
        }
        c.number_unavailable = c.desired_number_scheduled - c.number_available;
        c
    }

    /// Upstream `updateDaemonSetStatus`: counts, stores them when they changed, and requeues
    /// after `minReadySeconds` while some ready pod is not yet available.
    fn update_daemon_set_status(
        &mut self,
        ds: &CachedDs,
        key: &NsName,
        by_node: &NodeToDaemonPods,
        hash: &str,
        update_observed_gen: bool,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let counts = self.status_counts(ds, by_node, hash);
        store_daemon_set_status(client, ds, counts, update_observed_gen).map_err(|e| {
            format!(
                "error storing status for daemon set {:?}: {e}",
                ds.ds.metadata.name.as_deref().unwrap_or("")
            )
        })?;
        let min_ready = min_ready_seconds(&ds.ds);
        if min_ready > 0 && counts.number_ready != counts.number_available {
            let at = self.now + SimDuration::from_secs(i64::from(min_ready));
            self.queue.add_after(key.clone(), at);
        }
        Ok(())
    }
}

/// The status with these counts (and, with `update_observed_gen`, the generation observed).
fn status_with(
    old: Option<&DaemonSetStatus>,
    c: StatusCounts,
    generation: Option<i64>,
) -> DaemonSetStatus {
    let mut s = old.cloned().unwrap_or_default();
    if let Some(g) = generation {
        s.observed_generation = Some(g);
    }
    s.desired_number_scheduled = c.desired_number_scheduled;
    s.current_number_scheduled = c.current_number_scheduled;
    s.number_misscheduled = c.number_misscheduled;
    s.number_ready = c.number_ready;
    // These three are `omitempty` upstream: zero is not written.
    let nonzero = |n: i32| (n != 0).then_some(n);
    s.updated_number_scheduled = nonzero(c.updated_number_scheduled);
    s.number_available = nonzero(c.number_available);
    s.number_unavailable = nonzero(c.number_unavailable);
    s
}

/// The counts a stored status reports.
pub(super) fn counts_of(s: &DaemonSetStatus) -> StatusCounts {
    StatusCounts {
        desired_number_scheduled: s.desired_number_scheduled,
        current_number_scheduled: s.current_number_scheduled,
        number_misscheduled: s.number_misscheduled,
        number_ready: s.number_ready,
        updated_number_scheduled: s.updated_number_scheduled.unwrap_or(0),
        number_available: s.number_available.unwrap_or(0),
        number_unavailable: s.number_unavailable.unwrap_or(0),
    }
}

/// Upstream `storeDaemonSetStatus`: nothing when the counts are unchanged and the generation
/// already observed; else `UpdateStatus`, retried once on a fresh GET.
fn store_daemon_set_status(
    client: &mut dyn Client,
    ds: &CachedDs,
    counts: StatusCounts,
    update_observed_gen: bool,
) -> Result<(), ApiError> {
    let generation = ds.ds.metadata.generation.unwrap_or(0);
    let status = ds.ds.status.as_ref();
    let observed = status.and_then(|s| s.observed_generation).unwrap_or(0);
    if status.map(counts_of).unwrap_or_default() == counts && observed >= generation {
        return Ok(());
    }
    let gen = update_observed_gen.then_some(generation);
    let mut base = ds.obj.clone();
    for attempt in 0..2 {
        let current: Option<DaemonSetStatus> = base
            .field("status")
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let mut obj = DynamicObject::clone(&base);
        let new_status = status_with(current.as_ref(), counts, gen);
        obj.fields.insert(
            "status".into(),
            serde_json::to_value(new_status).unwrap_or_default(),
        );
        match client.update_status(Object::Other(Arc::new(obj))) {
            Ok(_) => return Ok(()),
            Err(e) if attempt > 0 => return Err(e),
            Err(_) => {}
        }
        let (ns, name) = ns_name(&base.metadata);
        let key = ObjectKey::new(Kind::Other(daemon_set_type()), &ns, &name);
        match client.get(&key)? {
            Object::Other(fresh) => base = fresh,
            _ => unreachable!("a DaemonSet key answers a DaemonSet"),
        }
    }
    Ok(())
}

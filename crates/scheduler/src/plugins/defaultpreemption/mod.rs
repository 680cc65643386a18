//! DefaultPreemption (PostFilter, PreEnqueue): when a pod fits no node, find nodes where
//! removing lower-priority pods would make it fit, pick one, evict those pods and nominate the
//! pod to the node (upstream `plugins/defaultpreemption/` and `framework/preemption/`).
//!
//! With `SchedulerAsyncPreemption` (on by default in v1.34) the evictions happen after the
//! scheduling cycle (upstream: in a goroutine); meanwhile PreEnqueue keeps the preemptor out of
//! activeQ. In the simulator that goroutine finishes as soon as the cycle's failure handling is
//! done, before any watch event is delivered.

mod evaluator;
#[cfg(test)]
mod tests;
mod victims;
#[cfg(test)]
mod victims_tests;

use kubeplane_api::StoredPod;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::PodCondition;
use kubeplane_api::{ApiError, Client, DeleteOptions, Kind, ObjectKey};
use kubeplane_core::features::FeatureGates;
use kubeplane_core::version::changes;
use kubeplane_core::{EventRecord, SimTime};
use serde::Deserialize;

use crate::framework::{
    ActionType, ClusterEvent, ClusterEventWithHint, CycleState, EventResource, Plugin, PodInfo,
    PostFilterInput, PostFilterPlugin, PostFilterResult, PreEnqueuePlugin, QueueingHint, Status,
};
use crate::plugins::args::{parse_args, PluginArgsError};

pub use evaluator::{
    calculate_num_candidates, filter_pods_with_pdb_violation, more_important_pod,
    pick_one_node_for_preemption, pick_one_node_for_preemption_explained, Candidate, PdbInfo,
};
pub(crate) use victims::status_with_requests;

pub const NAME: &str = "DefaultPreemption";

/// The Filter plugins whose verdict depends on nothing the pods on the node change: they look
/// only at the node itself and at the pod.
pub(crate) const POD_INDEPENDENT_FILTERS: [&str; 4] = [
    crate::plugins::nodeunschedulable::NAME,
    crate::plugins::nodename::NAME,
    crate::plugins::tainttoleration::NAME,
    crate::plugins::nodeaffinity::NAME,
];

/// Every status message of the plugin starts with this.
pub const MESSAGE_PREFIX: &str = "preemption: ";
pub const REASON_NOT_ELIGIBLE_NEVER: &str = "not eligible due to preemptionPolicy=Never.";
pub const REASON_NOT_ELIGIBLE_TERMINATING: &str =
    "not eligible due to a terminating pod on the nominated node.";
pub const REASON_NO_VICTIMS: &str = "No preemption victims found for incoming pod";
pub const REASON_NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
/// PreEnqueue reason while the pod's victims are being evicted.
pub const REASON_WAITING: &str = "waiting for the preemption for this pod to be finished";

/// The event a victim gets.
pub const EVENT_PREEMPTED: &str = "Preempted";
/// The victim's condition type and reason.
pub const CONDITION_DISRUPTION_TARGET: &str = "DisruptionTarget";
pub const REASON_PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";

/// `DefaultPreemptionArgs` (kubescheduler.config.k8s.io/v1).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefaultPreemptionArgs {
    /// Dry-run at least this percentage of the potential nodes; default 10.
    #[serde(default)]
    pub min_candidate_nodes_percentage: Option<i32>,
    /// ... and at least this many; default 100.
    #[serde(default)]
    pub min_candidate_nodes_absolute: Option<i32>,
}

/// Preemption work left for after the cycle (async preemption).
struct PendingPreemption {
    preemptor: Arc<PodInfo>,
    node: String,
    victims: Vec<Arc<PodInfo>>,
    /// Lower-priority pods nominated to the node, whose nomination is cleared.
    lower_nominated: Vec<Arc<PodInfo>>,
}

pub struct DefaultPreemption {
    min_candidate_nodes_percentage: i32,
    min_candidate_nodes_absolute: i32,
    async_preemption: bool,
    /// Victims already terminating get no API calls (v1.34.0, v1.34.1 and from v1.35.0, not
    /// v1.34.2 to v1.34.7: [`changes::PREEMPTION_SKIPS_TERMINATING_VICTIMS`]).
    skip_terminating_victims: bool,
    /// UIDs of preemptors whose victims are being evicted (async): PreEnqueue holds them.
    preempting: Mutex<BTreeSet<String>>,
    pending: Mutex<Vec<PendingPreemption>>,
}

impl DefaultPreemption {
    /// Builds the plugin from its args, defaulted and validated as upstream
    /// (`ValidateDefaultPreemptionArgs`).
    pub fn new(
        args: Option<&serde_json::Value>,
        features: &FeatureGates,
    ) -> Result<DefaultPreemption, PluginArgsError> {
        let args: DefaultPreemptionArgs = parse_args(args)?;
        let pct = args.min_candidate_nodes_percentage.unwrap_or(10);
        let abs = args.min_candidate_nodes_absolute.unwrap_or(100);
        if !(0..=100).contains(&pct) {
            return Err(PluginArgsError::new(
                "minCandidateNodesPercentage",
                format!("Invalid value: {pct}: not in valid range [0, 100]"),
            ));
        }
        if abs < 0 {
            return Err(PluginArgsError::new(
                "minCandidateNodesAbsolute",
                format!("Invalid value: {abs}: not in valid range [0, inf)"),
            ));
        }
        if pct == 0 && abs == 0 {
            return Err(PluginArgsError::new(
                "minCandidateNodesPercentage",
                "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
            ));
        }
        Ok(DefaultPreemption {
            min_candidate_nodes_percentage: pct,
            min_candidate_nodes_absolute: abs,
            async_preemption: features.enabled("SchedulerAsyncPreemption"),
            skip_terminating_victims: features
                .version()
                .has(changes::PREEMPTION_SKIPS_TERMINATING_VICTIMS),
            preempting: Mutex::new(BTreeSet::new()),
            pending: Mutex::new(Vec::new()),
        })
    }

    /// How many candidates the dry runs look for among `n` potential nodes.
    pub fn num_candidates(&self, n: i32) -> i32 {
        calculate_num_candidates(
            n,
            self.min_candidate_nodes_percentage,
            self.min_candidate_nodes_absolute,
        )
    }

    /// Whether the pod's victims are still being evicted (async preemption).
    pub fn is_pod_running_preemption(&self, uid: &str) -> bool {
        self.preempting
            .lock()
            .expect("preempting lock")
            .contains(uid)
    }
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }
    fn events_to_register(&self) -> Option<Vec<ClusterEventWithHint>> {
        if !self.async_preemption {
            // PreEnqueue never rejects, so no event is needed.
            return Some(Vec::new());
        }
        // A preemptor gated by this plugin may leave unschedulablePods when an assigned pod
        // is deleted; whether it does is up to the plugins that rejected it, so the hint
        // itself always says QueueSkip.
        Some(vec![ClusterEventWithHint::with_hint(
            ClusterEvent::new(
                EventResource::AssignedPod,
                ActionType::DELETE,
                "AssignedPodDelete",
            ),
            |_, _, _| Ok(QueueingHint::QueueSkip),
        )])
    }
}

impl PreEnqueuePlugin for DefaultPreemption {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        if self.async_preemption && self.is_pod_running_preemption(pod.uid()) {
            return Status::unresolvable(REASON_WAITING);
        }
        Status::success()
    }
}

impl PostFilterPlugin for DefaultPreemption {
    fn post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        input: &PostFilterInput<'_>,
        client: &mut dyn Client,
    ) -> (Option<PostFilterResult>, Status) {
        let (result, status) = self.preempt(state, pod, input, client);
        if status.reasons.iter().any(|r| !r.is_empty()) {
            let msg = format!("{MESSAGE_PREFIX}{}", status.message());
            return (result, Status::new(status.code, msg));
        }
        (result, status)
    }

    fn finish_async_work(&self, now: SimTime, client: &mut dyn Client) -> Vec<String> {
        let pending = std::mem::take(&mut *self.pending.lock().expect("pending lock"));
        let mut activate = Vec::new();
        for p in pending {
            let mut failed = false;
            for np in &p.lower_nominated {
                if clear_nominated_node_name(client, np).is_err() {
                    failed = true;
                }
            }
            for v in &p.victims {
                if preempt_pod(now, client, &p.preemptor, v, &p.node).is_err() {
                    failed = true;
                    break;
                }
            }
            self.preempting
                .lock()
                .expect("preempting lock")
                .remove(p.preemptor.uid());
            if failed {
                // The preemptor may be stuck in unschedulablePods: retry it at once.
                activate.push(p.preemptor.key());
            }
        }
        activate
    }
}

/// Whether the pod is terminating because the scheduler preempted it: deletion requested and
/// its first DisruptionTarget condition True with reason PreemptionByScheduler.
pub fn pod_terminating_by_preemption(pod: &StoredPod) -> bool {
    if pod.metadata.deletion_timestamp.is_none() {
        return false;
    }
    pod.status()
        .and_then(|s| s.condition(CONDITION_DISRUPTION_TARGET))
        .is_some_and(|c| {
            c.status == "True" && c.reason.as_deref() == Some(REASON_PREEMPTION_BY_SCHEDULER)
        })
}

/// Evicts one victim (upstream `PreemptPod`): sets its DisruptionTarget condition, deletes it
/// (gracefully), and records the `Preempted` event. A victim that is already gone is skipped
/// without an event.
pub(crate) fn preempt_pod(
    now: SimTime,
    client: &mut dyn Client,
    preemptor: &PodInfo,
    victim: &PodInfo,
    node: &str,
) -> Result<(), ApiError> {
    let Some(current) = client
        .cache()
        .get_pod(victim.namespace(), victim.name())
        .cloned()
    else {
        return Ok(());
    };
    let message = format!(
        "{}: preempting to accommodate a higher priority pod",
        preemptor.scheduler_name()
    );
    let ts = client.clock().timestamp(now);
    let existing = current
        .status()
        .and_then(|s| s.condition(CONDITION_DISRUPTION_TARGET));
    let unchanged = existing.is_some_and(|c| {
        c.status == "True"
            && c.reason.as_deref() == Some(REASON_PREEMPTION_BY_SCHEDULER)
            && c.message.as_deref() == Some(message.as_str())
    });
    if !unchanged {
        // Upstream `PreemptPod`: the DisruptionTarget condition through a status patch with
        // the victim's UID as precondition, then the delete.
        let patched = client.patch_pod_status(
            victim.namespace(),
            victim.name(),
            current.metadata.uid.as_deref().unwrap_or(""),
            &mut |st| set_preemption_condition(st, &message, &ts),
        );
        match patched {
            Ok(_) => {}
            Err(ApiError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    let key = ObjectKey::new(Kind::Pod, victim.namespace(), victim.name());
    let opts = DeleteOptions {
        precondition_uid: current.metadata.uid.clone(),
        ..DeleteOptions::default()
    };
    match client.delete(&key, opts) {
        Ok(_) => {}
        Err(ApiError::NotFound { .. }) => return Ok(()),
        Err(e) => return Err(e),
    }
    client.record_event(EventRecord::normal(
        now,
        crate::DEFAULT_SCHEDULER_NAME,
        "Pod",
        victim.namespace(),
        victim.name(),
        EVENT_PREEMPTED,
        format!("Preempted by pod {} on node {}", preemptor.uid(), node),
    ));
    Ok(())
}

/// Sets `DisruptionTarget=True` for PreemptionByScheduler on a victim's status, keeping the
/// transition time of a condition that was already True.
fn set_preemption_condition(
    st: &mut k8s_openapi::api::core::v1::PodStatus,
    message: &str,
    ts: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) {
    let conditions = st.conditions.get_or_insert_with(Vec::new);
    let existing = conditions
        .iter()
        .position(|c| c.type_ == CONDITION_DISRUPTION_TARGET);
    let transition = match existing {
        Some(i) if conditions[i].status == "True" => conditions[i].last_transition_time.clone(),
        _ => Some(ts.clone()),
    };
    let condition = PodCondition {
        type_: CONDITION_DISRUPTION_TARGET.into(),
        status: "True".into(),
        reason: Some(REASON_PREEMPTION_BY_SCHEDULER.into()),
        message: Some(message.to_string()),
        last_transition_time: transition,
        last_probe_time: None,
        observed_generation: None,
    };
    match existing {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
}

/// Clears a pod's `status.nominatedNodeName` (nothing to do when it has none).
pub(crate) fn clear_nominated_node_name(
    client: &mut dyn Client,
    pod: &PodInfo,
) -> Result<(), ApiError> {
    let Some(current) = client.cache().get_pod(pod.namespace(), pod.name()).cloned() else {
        return Ok(());
    };
    let has = current
        .status()
        .and_then(|s| s.nominated_node_name())
        .is_some_and(|n| !n.is_empty());
    if !has {
        return Ok(());
    }
    client
        .patch_pod_status(
            pod.namespace(),
            pod.name(),
            current.metadata.uid.as_deref().unwrap_or(""),
            &mut |s| s.nominated_node_name = None,
        )
        .map(|_| ())
}

//! The failure handler (upstream `handleSchedulingFailure` and `updatePod` in
//! `schedule_one.go`): the pod goes back to the queue with the plugins that rejected it, a
//! `FailedScheduling` event, and a patch of its PodScheduled condition and nominated node,
//! made at once or queued in the API dispatcher behind `SchedulerAsyncAPICalls`.

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodCondition;
use kubeplane_api::Client;
use kubeplane_core::{EventRecord, SimTime};

use crate::api_dispatcher::{ApiCall, PodStatusPatchCall};
use crate::framework::{NominatingMode, PodInfo, QueuedPodInfo};
use crate::schedule_one::ScheduleError;
use crate::scheduler::Scheduler;

/// Events and conditions carry at most this many characters of a message.
const NOTE_LENGTH_LIMIT: usize = 1024;

/// Upstream `truncateMessage`: at most [`NOTE_LENGTH_LIMIT`] characters, with ` ...`.
fn truncate_message(msg: &str) -> String {
    if msg.len() <= NOTE_LENGTH_LIMIT {
        return msg.to_string();
    }
    let suffix = " ...";
    let mut end = NOTE_LENGTH_LIMIT - suffix.len();
    while !msg.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{}", &msg[..end], suffix)
}

impl Scheduler {
    /// The failure handler (upstream `handleSchedulingFailure`).
    pub(crate) fn handle_scheduling_failure(
        &mut self,
        now: SimTime,
        client: &mut dyn Client,
        mut qpi: QueuedPodInfo,
        err: ScheduleError,
        nominating: NominatingMode,
    ) {
        let reason = match &err {
            ScheduleError::Fit(_) | ScheduleError::NoNodes => "Unschedulable",
            ScheduleError::Internal(s) if s.is_rejected() => "Unschedulable",
            ScheduleError::Internal(_) => "SchedulerError",
        };
        if reason == "Unschedulable" {
            self.metrics.unschedulable += 1;
        } else {
            self.metrics.errors += 1;
        }
        if let ScheduleError::Fit(fit) = &err {
            qpi.unschedulable_plugins = fit.diagnosis.unschedulable_plugins.clone();
            qpi.pending_plugins = fit.diagnosis.pending_plugins.clone();
        }
        let message = err.message();
        let pod_key = qpi.pod_info.clone();
        let current = client
            .cache()
            .get_pod(pod_key.namespace(), pod_key.name())
            .cloned();
        let Some(current) = current.filter(|p| p.metadata.uid.as_deref() == Some(pod_key.uid()))
        else {
            self.queue.done(pod_key.uid());
            return;
        };
        if current.node_name().is_some_and(|n| !n.is_empty()) {
            self.queue.done(pod_key.uid());
            return;
        }
        qpi.pod_info = Arc::new(PodInfo::new(current.clone()));
        let refreshed = qpi.pod_info.clone();
        let cycle = self.queue.scheduling_cycle();
        let _ = self.queue.add_unschedulable_if_not_present(qpi, cycle, now);
        match &nominating {
            NominatingMode::Override(node) => {
                self.queue
                    .add_nominated_pod(refreshed.clone(), Some(node.clone()));
            }
            NominatingMode::Noop => self.queue.add_nominated_pod(refreshed.clone(), None),
        }
        client.record_event(EventRecord::warning(
            now,
            self.source,
            "Pod",
            refreshed.namespace(),
            refreshed.name(),
            "FailedScheduling",
            truncate_message(&message),
        ));
        self.patch_scheduled_condition(now, client, &current, reason, &message, &nominating);
    }

    /// Sets PodScheduled=False and the nominated node, unless nothing would change (upstream
    /// `updatePod`). Without the dispatcher the patch is made now; a failure is only logged
    /// upstream, and the pod is requeued either way.
    fn patch_scheduled_condition(
        &mut self,
        now: SimTime,
        client: &mut dyn Client,
        pod: &Arc<StoredPod>,
        reason: &str,
        message: &str,
        nominating: &NominatingMode,
    ) {
        let condition = PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            last_transition_time: None,
            last_probe_time: None,
            observed_generation: None,
        };
        let call = PodStatusPatchCall::new(
            pod,
            vec![condition],
            nominating.clone(),
            client.clock().timestamp(now),
        );
        match self.api_dispatcher.as_mut() {
            None => {
                let _ = call.execute(client);
            }
            // Upstream `PriorityQueue.PatchPodStatus`: nobody waits for the outcome.
            Some(d) => {
                let _ = d.queue.add(ApiCall::PodStatusPatch(Arc::new(call)), false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_truncated_with_an_ellipsis() {
        let long = "x".repeat(2000);
        let t = truncate_message(&long);
        assert_eq!(t.len(), NOTE_LENGTH_LIMIT);
        assert!(t.ends_with(" ..."));
    }
}

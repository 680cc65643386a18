//! The scheduler's metrics in Prometheus text format, with upstream's names: the attempts by
//! profile and result with their latency histogram ([`crate::attempts`]), the scheduler's
//! other counters and gauges (the pending pods by queue, `scheduler_pending_pods`), and
//! client-go's `leader_election_master_status`. The controller manager's: its controllers'
//! counters (upstream names) and the same leader gauge.

use kubeplane_api::Component;
use kubeplane_scheduler::Scheduler;

use crate::attempts::AttemptMetrics;

/// Renders every sample, each family once introduced with its type.
pub fn render(scheduler: &Scheduler, leading: bool, attempts: &AttemptMetrics) -> String {
    let mut out = String::new();
    attempts.render_counts(&mut out);
    attempts.render_durations(&mut out);
    // The scheduler's own samples include the pending pods by queue; its attempt counters
    // (by result only) are the ones above, by profile.
    let mut samples: Vec<(String, u64)> = scheduler
        .metrics()
        .into_iter()
        .filter(|(s, _)| !s.starts_with("scheduler_schedule_attempts_total"))
        .collect();
    samples.push((
        "leader_election_master_status{name=\"kube-scheduler\"}".into(),
        u64::from(leading),
    ));
    kubeplane_api::component::write_prometheus(&mut out, &samples);
    out
}

/// The controller manager's samples: its controllers' counters and the leader gauge of the
/// `kube-controller-manager` election.
pub fn render_controllers(mut samples: Vec<(String, u64)>, leading: bool) -> String {
    samples.push((
        "leader_election_master_status{name=\"kube-controller-manager\"}".into(),
        u64::from(leading),
    ));
    let mut out = String::new();
    kubeplane_api::component::write_prometheus(&mut out, &samples);
    out
}

#[cfg(test)]
mod tests {
    use kubeplane_core::features::FeatureGates;
    use kubeplane_scheduler::queue::SchedulingQueue;

    use super::*;

    #[test]
    fn every_family_is_typed_once_and_the_leader_status_is_a_gauge() {
        let setup = kubeplane_scheduler::config::resolve(None, &FeatureGates::default()).unwrap();
        let s = Scheduler::new(setup.frameworks, SchedulingQueue::new(setup.queue), 100, 0);
        let text = render(
            &s,
            true,
            &AttemptMetrics::new(vec!["default-scheduler".into()]),
        );
        assert_eq!(
            text.matches("# TYPE scheduler_schedule_attempts_total counter")
                .count(),
            1
        );
        assert!(text.contains(
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 0\n"
        ));
        assert_eq!(
            text.matches("# TYPE scheduler_scheduling_attempt_duration_seconds histogram\n")
                .count(),
            1
        );
        assert_eq!(
            text.matches("# TYPE scheduler_pending_pods gauge\n")
                .count(),
            1,
            "each family once: {text}"
        );
        assert!(text.contains("leader_election_master_status{name=\"kube-scheduler\"} 1\n"));
    }
}

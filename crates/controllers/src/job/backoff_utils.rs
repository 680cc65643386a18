//! The delay before a Job replaces failed pods (upstream `pkg/controller/job/backoff_utils.go`):
//! 10 s after the first failure since the last success, doubling with each further failure up
//! to 10 minutes, counted from the last failure's finish time.

use jiff::{SignedDuration, Timestamp};
use kubeplane_api::StoredPod;

/// Upstream `DefaultJobPodFailureBackOff`.
pub const DEFAULT_POD_FAILURE_BACKOFF: SignedDuration = SignedDuration::from_secs(10);
/// Upstream `MaxJobPodFailureBackOff` (the code's value; the user documentation says six
/// minutes).
pub const MAX_POD_FAILURE_BACKOFF: SignedDuration = SignedDuration::from_secs(600);

/// One Job's failures since its last success.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackoffRecord {
    pub failures_after_last_success: i32,
    pub last_failure_time: Option<Timestamp>,
}

impl BackoffRecord {
    /// The record after the newly finished pods (upstream `newBackoffRecord`).
    pub fn with_finished(self, succeeded: &[&StoredPod], failed: &[&StoredPod]) -> BackoffRecord {
        let mut failed_times: Vec<Timestamp> = failed.iter().map(|p| finished_time(p)).collect();
        failed_times.sort();
        let last_success = succeeded.iter().map(|p| finished_time(p)).max();
        match last_success {
            None => match failed_times.last() {
                None => self,
                Some(&last) => BackoffRecord {
                    failures_after_last_success: self.failures_after_last_success
                        + failed_times.len() as i32,
                    last_failure_time: Some(last),
                },
            },
            Some(success) => {
                let after: Vec<_> = failed_times.iter().filter(|&&t| t > success).collect();
                BackoffRecord {
                    failures_after_last_success: after.len() as i32,
                    last_failure_time: after.last().map(|t| **t),
                }
            }
        }
    }

    /// How long pod creation still waits at `now` (upstream `getRemainingTime`).
    pub fn remaining(&self, now: Timestamp) -> SignedDuration {
        let Some(last) = self.last_failure_time else {
            return SignedDuration::ZERO;
        };
        remaining_for_failures(self.failures_after_last_success, last, now)
    }
}

/// How long the replacement of an index's last failed pod still waits at `now` (upstream
/// `getRemainingTimePerIndex`): the backoff of the index's failures (counted and ignored) plus
/// that pod's own, from when it finished. Zero for an index without a failed pod.
pub fn remaining_for_index(last_failed: Option<&StoredPod>, now: Timestamp) -> SignedDuration {
    let Some(pod) = last_failed else {
        return SignedDuration::ZERO;
    };
    let failures = super::indexed_job_utils::index_absolute_failure_count(pod).saturating_add(1);
    remaining_for_failures(failures, finished_time(pod), now)
}

/// The backoff of `failures` consecutive failures, minus the time since the last one.
pub fn remaining_for_failures(failures: i32, last: Timestamp, now: Timestamp) -> SignedDuration {
    if failures <= 0 {
        return SignedDuration::ZERO;
    }
    let mut backoff = DEFAULT_POD_FAILURE_BACKOFF;
    for _ in 1..failures {
        backoff *= 2;
        if backoff >= MAX_POD_FAILURE_BACKOFF {
            backoff = MAX_POD_FAILURE_BACKOFF;
            break;
        }
    }
    let elapsed = now.duration_since(last);
    if backoff < elapsed {
        SignedDuration::ZERO
    } else {
        backoff - elapsed
    }
}

/// When a pod finished (upstream `getFinishedTime`): the latest container finish when every
/// container terminated, else the transition of a false Ready condition, else the deletion
/// timestamp minus the grace period, else the creation time.
pub fn finished_time(pod: &StoredPod) -> Timestamp {
    let status = pod.status_k8s();
    let status = status.as_ref();
    let containers = status
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or(&[]);
    let mut latest: Option<Timestamp> = None;
    let mut all = !containers.is_empty();
    for cs in containers {
        match cs
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.finished_at.as_ref())
        {
            Some(t) => latest = Some(latest.map_or(t.0, |l| l.max(t.0))),
            None => all = false,
        }
    }
    if all {
        if let Some(t) = latest {
            return t;
        }
    }
    let ready_false = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready" && c.status == "False"))
        .and_then(|c| c.last_transition_time.as_ref());
    if let Some(t) = ready_false {
        return t.0;
    }
    if let Some(d) = pod.metadata.deletion_timestamp.as_ref() {
        let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
        return d.0 - SignedDuration::from_secs(grace);
    }
    pod.metadata
        .creation_timestamp
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateTerminated, ContainerStatus, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kubeplane_core::testing::PodBuilder;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn finished_at(secs: i64) -> StoredPod {
        let mut pod: StoredPod = PodBuilder::new("p").obj().into();
        pod.set_status(Some(PodStatus {
            container_statuses: Some(vec![ContainerStatus {
                name: "c".into(),
                state: Some(ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        finished_at: Some(Time(t(secs))),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }));
        pod
    }

    #[test]
    fn the_backoff_record_counts_failures_after_the_last_success() {
        let (s5, f3, f7, f9) = (
            finished_at(5),
            finished_at(3),
            finished_at(7),
            finished_at(9),
        );
        let start = BackoffRecord {
            failures_after_last_success: 2,
            last_failure_time: Some(t(1)),
        };
        type Case<'a> = (
            &'a str,
            Vec<&'a StoredPod>,
            Vec<&'a StoredPod>,
            i32,
            Option<Timestamp>,
        );
        let cases: Vec<Case> = vec![
            (
                "Nothing new keeps the record",
                vec![],
                vec![],
                2,
                Some(t(1)),
            ),
            ("New failures add up", vec![], vec![&f9, &f3], 4, Some(t(9))),
            ("A success alone resets", vec![&s5], vec![], 0, None),
            (
                "Only failures after the success count",
                vec![&s5],
                vec![&f3, &f7, &f9],
                2,
                Some(t(9)),
            ),
            (
                "Failures before the success are forgotten",
                vec![&s5],
                vec![&f3],
                0,
                None,
            ),
        ];
        for (name, succeeded, failed, n, last) in cases {
            let got = start.with_finished(&succeeded, &failed);
            assert_eq!(got.failures_after_last_success, n, "{name}");
            assert_eq!(got.last_failure_time, last, "{name}");
        }
    }

    #[test]
    fn remaining_time_doubles_per_failure_up_to_ten_minutes() {
        let cases: &[(&str, i32, i64, i64)] = &[
            ("No failures", 0, 0, 0),
            ("One failure just now", 1, 0, 10),
            ("One failure 4s ago", 1, 4, 6),
            ("Two failures", 2, 0, 20),
            ("Three failures, 15s ago", 3, 15, 25),
            ("Backoff already over", 2, 30, 0),
            ("Capped at ten minutes", 12, 0, 600),
        ];
        for (name, failures, ago, want) in cases {
            let got = remaining_for_failures(*failures, t(0), t(*ago));
            assert_eq!(got, SignedDuration::from_secs(*want), "{name}");
        }
    }

    #[test]
    fn finish_time_falls_back_to_ready_deletion_then_creation() {
        assert_eq!(finished_time(&finished_at(42)), t(42));
        let pod: StoredPod = PodBuilder::new("p")
            .ready_condition("False", Some(t(7)))
            .obj()
            .into();
        assert_eq!(finished_time(&pod), t(7));
        let mut pod: StoredPod = PodBuilder::new("p").deleted_at(t(40)).obj().into();
        pod.metadata.deletion_grace_period_seconds = Some(30);
        assert_eq!(finished_time(&pod), t(10));
        let pod: StoredPod = PodBuilder::new("p").created(Some(t(2))).obj().into();
        assert_eq!(finished_time(&pod), t(2));
    }
}

//! CronJob helpers (upstream `pkg/controller/cronjob/utils.go`): the most recent unmet schedule
//! time and the count of missed ones, the next requeue, the Job made from the template, the
//! active list.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use serde_json::{json, Value};

use super::cron::{time_zone, Schedule};

/// The annotation with the Job's scheduled time (RFC 3339 in the CronJob's time zone).
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/// Upstream `nextScheduleDelta`: a requeue lands 100 ms after the scheduled time.
pub const NEXT_SCHEDULE_DELTA: SignedDuration = SignedDuration::from_millis(100);
/// More missed schedules than this are reported (`TooManyMissedTimes`).
pub const MANY_MISSED: i64 = 100;

/// How many schedules were missed since the earliest time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    None,
    Few,
    Many,
}

/// Upstream `mostRecentScheduleTime`: the earliest time considered (the last schedule time or
/// the creation time, moved up to `now - startingDeadlineSeconds` when asked), the most recent
/// activation at or before `now`, and how many were missed. An error for schedules whose two
/// next activations are less than a second apart (`31 2`, February 31st).
pub fn most_recent_schedule_time(
    cj: &CronJob,
    now: Timestamp,
    sched: &Schedule,
    include_deadline: bool,
) -> Result<(Timestamp, Option<Timestamp>, Missed), (Timestamp, String)> {
    let mut earliest = cj
        .status
        .as_ref()
        .and_then(|s| s.last_schedule_time.as_ref())
        .or(cj.metadata.creation_timestamp.as_ref())
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    let deadline = spec(cj).starting_deadline_seconds;
    if let (true, Some(secs)) = (include_deadline, deadline) {
        let d = now - SignedDuration::from_secs(secs);
        if d > earliest {
            earliest = d;
        }
    }
    let less_than_a_second = || {
        (
            earliest,
            "time difference between two schedules is less than 1 second".to_string(),
        )
    };
    let Some(t1) = sched.next(earliest) else {
        return Err(less_than_a_second());
    };
    let Some(t2) = sched.next(t1) else {
        return Err(less_than_a_second());
    };
    if now < t1 {
        return Ok((earliest, None, Missed::None));
    }
    if now < t2 {
        return Ok((earliest, Some(t1), Missed::None));
    }
    let between = (t2.duration_since(t1).as_millis() as f64 / 1000.0).round() as i64;
    if between < 1 {
        return Err(less_than_a_second());
    }
    let elapsed = now.duration_since(t1).as_secs();
    let missed = elapsed / between + 1;
    let potential = t1 + SignedDuration::from_secs((missed - 2) * between);
    let mut most_recent = None;
    let mut t = sched.next(potential);
    while let Some(x) = t.filter(|x| *x <= now) {
        most_recent = Some(x);
        t = sched.next(x);
    }
    let kind = if missed > MANY_MISSED {
        Missed::Many
    } else {
        Missed::Few
    };
    Ok((earliest, most_recent, kind))
}

/// Upstream `nextScheduleTimeDuration`: how long until the requeue after `now`.
pub fn next_schedule_delay(
    cj: &CronJob,
    now: Timestamp,
    sched: &Schedule,
) -> Option<SignedDuration> {
    let base = match most_recent_schedule_time(cj, now, sched, false) {
        Err(_) => now,
        Ok((_, Some(t), _)) => t,
        Ok((earliest, None, Missed::None)) => earliest,
        Ok((_, None, _)) => now,
    };
    let next = sched.next(base)?;
    Some(next.duration_since(now) + NEXT_SCHEDULE_DELTA)
}

/// The CronJob's spec with upstream's defaults (`concurrencyPolicy: Allow`, `suspend: false`,
/// history limits 3 and 1).
pub fn spec(cj: &CronJob) -> &CronJobSpec {
    cj.spec.as_ref().expect("defaulted CronJob has a spec")
}

pub fn set_defaults(cj: &mut CronJob) {
    let s = cj.spec.get_or_insert_with(Default::default);
    s.concurrency_policy.get_or_insert_with(|| "Allow".into());
    s.suspend.get_or_insert(false);
    s.successful_jobs_history_limit.get_or_insert(3);
    s.failed_jobs_history_limit.get_or_insert(1);
}

/// `<cronjob>-<scheduled time in minutes since the epoch>` (upstream `getJobName`).
pub fn job_name(cj_name: &str, scheduled: Timestamp) -> String {
    format!("{cj_name}-{}", scheduled.as_second().div_euclid(60))
}

/// The Job of one scheduled time (upstream `getJobFromTemplate2`): the template's labels and
/// annotations, the scheduled-timestamp annotation, the controller reference, the template's
/// spec. As a manifest, to be stored as a `Kind::Other` object.
pub fn job_from_template(cj: &CronJob, scheduled: Timestamp) -> Result<Value, String> {
    let s = spec(cj);
    let template = &s.job_template;
    let meta = template.metadata.clone().unwrap_or_default();
    let mut annotations: BTreeMap<String, String> = meta.annotations.unwrap_or_default();
    let tz = time_zone(s.time_zone.as_deref().unwrap_or(""))?;
    let local = scheduled.to_zoned(tz);
    annotations.insert(
        SCHEDULED_TIMESTAMP_ANNOTATION.into(),
        local
            .strftime("%Y-%m-%dT%H:%M:%S%:z")
            .to_string()
            .replace("+00:00", "Z"),
    );
    let name = cj.metadata.name.clone().unwrap_or_default();
    let owner = crate::controller_utils::new_controller_ref("batch/v1", "CronJob", &cj.metadata);
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(&name, scheduled),
            "namespace": cj.metadata.namespace.clone().unwrap_or_else(|| "default".into()),
            "annotations": annotations,
            "ownerReferences": [owner],
        },
        "spec": template.spec.clone().unwrap_or_default(),
    });
    if let Some(labels) = meta.labels.filter(|l| !l.is_empty()) {
        job["metadata"]["labels"] = json!(labels);
    }
    Ok(job)
}

/// The reference to a Job in `status.active` (upstream `getRef`).
pub fn job_ref(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        field_path: None,
    }
}

pub fn active(cj: &CronJob) -> &[ObjectReference] {
    cj.status
        .as_ref()
        .and_then(|s| s.active.as_deref())
        .unwrap_or(&[])
}

pub fn in_active_list(cj: &CronJob, uid: &str) -> bool {
    active(cj).iter().any(|r| r.uid.as_deref() == Some(uid))
}

pub fn delete_from_active_list(cj: &mut CronJob, uid: &str) {
    if let Some(list) = cj.status.as_mut().and_then(|s| s.active.as_mut()) {
        list.retain(|r| r.uid.as_deref() != Some(uid));
        if list.is_empty() {
            cj.status.as_mut().expect("has status").active = None;
        }
    }
}

/// Jobs with a start time first, earlier first, then by name (upstream `byJobStartTime`).
pub fn by_job_start_time(a: &Job, b: &Job) -> std::cmp::Ordering {
    let start = |j: &Job| {
        j.status
            .as_ref()
            .and_then(|s| s.start_time.as_ref())
            .map(|t| t.0)
    };
    match (start(a), start(b)) {
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (x, y) if x == y => a.metadata.name.cmp(&b.metadata.name),
        (x, y) => x.cmp(&y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cronjob::cron::parse_standard;
    use jiff::tz::TimeZone;
    use k8s_openapi::api::batch::v1::CronJobStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn cronjob(created: &str, last: Option<&str>, deadline: Option<i64>) -> CronJob {
        let mut cj = CronJob::default();
        cj.metadata.name = Some("cj".into());
        cj.metadata.creation_timestamp = Some(Time(ts(created)));
        cj.spec = Some(CronJobSpec {
            starting_deadline_seconds: deadline,
            ..Default::default()
        });
        cj.status = Some(CronJobStatus {
            last_schedule_time: last.map(|l| Time(ts(l))),
            ..Default::default()
        });
        set_defaults(&mut cj);
        cj
    }

    #[test]
    fn the_most_recent_schedule_time_is_found_as_upstream() {
        let hourly = parse_standard("0 * * * *", TimeZone::UTC).unwrap();
        let every_min = parse_standard("* * * * *", TimeZone::UTC).unwrap();
        type Case<'a> = (
            &'a str,
            &'a Schedule,
            CronJob,
            &'a str,
            Option<&'a str>,
            Missed,
        );
        let cases: Vec<Case> = vec![
            (
                "Before the first activation",
                &hourly,
                cronjob("2025-01-01T00:10:00Z", None, None),
                "2025-01-01T00:50:00Z",
                None,
                Missed::None,
            ),
            (
                "Exactly at the first activation",
                &hourly,
                cronjob("2025-01-01T00:10:00Z", None, None),
                "2025-01-01T01:00:00Z",
                Some("2025-01-01T01:00:00Z"),
                Missed::None,
            ),
            (
                "Two missed, the latest wins",
                &hourly,
                cronjob("2025-01-01T00:10:00Z", None, None),
                "2025-01-01T02:30:00Z",
                Some("2025-01-01T02:00:00Z"),
                Missed::Few,
            ),
            (
                "The last schedule time is the start",
                &hourly,
                cronjob("2025-01-01T00:10:00Z", Some("2025-01-01T05:00:00Z"), None),
                "2025-01-01T05:30:00Z",
                None,
                Missed::None,
            ),
            (
                "More than a hundred missed",
                &every_min,
                cronjob("2025-01-01T00:00:00Z", None, None),
                "2025-01-01T03:00:30Z",
                Some("2025-01-01T03:00:00Z"),
                Missed::Many,
            ),
            (
                "A starting deadline bounds the misses",
                &every_min,
                cronjob("2025-01-01T00:00:00Z", None, Some(200)),
                "2025-01-01T03:00:30Z",
                Some("2025-01-01T03:00:00Z"),
                Missed::Few,
            ),
        ];
        for (name, sched, cj, now, want, missed) in cases {
            let (_, got, m) = most_recent_schedule_time(&cj, ts(now), sched, true).unwrap();
            assert_eq!(got, want.map(ts), "{name}");
            assert_eq!(m, missed, "{name}");
        }
        let never = parse_standard("59 23 31 2 *", TimeZone::UTC).unwrap();
        let err = most_recent_schedule_time(
            &cronjob("2025-01-01T00:00:00Z", None, None),
            ts("2025-06-01T00:00:00Z"),
            &never,
            true,
        )
        .unwrap_err();
        assert_eq!(
            err.1,
            "time difference between two schedules is less than 1 second"
        );
    }

    #[test]
    fn the_requeue_is_the_next_activation_plus_100ms() {
        let hourly = parse_standard("0 * * * *", TimeZone::UTC).unwrap();
        let cj = cronjob("2025-01-01T00:10:00Z", None, None);
        let d = next_schedule_delay(&cj, ts("2025-01-01T00:20:00Z"), &hourly).unwrap();
        assert_eq!(d, SignedDuration::from_millis(40 * 60 * 1000 + 100));
    }

    #[test]
    fn jobs_are_named_by_minutes_since_the_epoch_and_annotated_with_the_scheduled_time() {
        let mut cj = cronjob("2025-01-01T00:00:00Z", None, None);
        assert_eq!(job_name("cj", ts("2025-01-01T00:01:00Z")), "cj-28928161");
        let job = job_from_template(&cj, ts("2025-01-01T00:01:00Z")).unwrap();
        assert_eq!(job["metadata"]["name"], "cj-28928161");
        assert_eq!(
            job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION],
            "2025-01-01T00:01:00Z"
        );
        assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
        cj.spec.as_mut().unwrap().time_zone = Some("Asia/Tokyo".into());
        let job = job_from_template(&cj, ts("2025-01-01T00:01:00Z")).unwrap();
        assert_eq!(
            job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION],
            "2025-01-01T09:01:00+09:00"
        );
    }
}

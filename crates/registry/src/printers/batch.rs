//! The batch group's printers (upstream `printJob`, `printCronJob`).

use k8s_openapi::api::batch::v1::{CronJob, Job, JobCondition};
use kubeplane_api::Object;

use super::descriptions as d;
use super::{
    age, container_cells, decode, format_label_selector, object_age, since, Column, Entry, Row,
    AGE, CONTAINERS, IMAGES, NAME,
};

/// The printer of a batch kind.
pub(super) fn printer(kind: &str) -> Option<Entry> {
    Some(match kind {
        "Job" => (JOB_COLUMNS, job_row),
        "CronJob" => (CRON_JOB_COLUMNS, cron_job_row),
        _ => return None,
    })
}

const JOB_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "Status of the job."),
    Column::new("Completions", "string", d::JOB_STATUS_SUCCEEDED),
    Column::new("Duration", "string", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", d::JOB_SPEC_SELECTOR).wide(),
];

/// Upstream `hasJobCondition`: the first condition of the type decides.
fn has_condition(conditions: &[JobCondition], type_: &str) -> bool {
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .is_some_and(|c| c.status == "True")
}

/// The job's STATUS: Complete, Failed, Terminating, Suspended, FailureTarget or Running,
/// in that precedence.
pub(super) fn job_status(job: &Job) -> &'static str {
    let conditions = job
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[]);
    if has_condition(conditions, "Complete") {
        "Complete"
    } else if has_condition(conditions, "Failed") {
        "Failed"
    } else if job.metadata.deletion_timestamp.is_some() {
        "Terminating"
    } else if has_condition(conditions, "Suspended") {
        "Suspended"
    } else if has_condition(conditions, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
}

/// COMPLETIONS: `succeeded/completions`, or `succeeded/1 of parallelism` for a work queue.
pub(super) fn job_completions(job: &Job) -> String {
    let spec = job.spec.clone().unwrap_or_default();
    let succeeded = job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0);
    match spec.completions {
        Some(c) => format!("{succeeded}/{c}"),
        None => match spec.parallelism.unwrap_or(0) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    }
}

fn job_row(object: &Object, now: jiff::Timestamp) -> Row {
    let job: Job = decode(object);
    let status = job.status.clone().unwrap_or_default();
    let duration = match (&status.start_time, &status.completion_time) {
        (None, _) => String::new(),
        (Some(start), None) => since(start.0, now),
        (Some(start), Some(done)) => since(start.0, done.0),
    };
    let spec = job.spec.clone().unwrap_or_default();
    let (containers, images) = container_cells(spec.template.spec.as_ref());
    Row::new(vec![
        object.name().into(),
        job_status(&job).into(),
        job_completions(&job).into(),
        duration.into(),
        object_age(object, now),
        containers,
        images,
        format_label_selector(spec.selector.as_ref()).into(),
    ])
}

const CRON_JOB_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Schedule", "string", d::CRON_JOB_SPEC_SCHEDULE),
    Column::new("Timezone", "string", d::CRON_JOB_SPEC_TIME_ZONE),
    Column::new("Suspend", "boolean", d::CRON_JOB_SPEC_SUSPEND),
    Column::new("Active", "integer", d::CRON_JOB_STATUS_ACTIVE),
    Column::new(
        "Last Schedule",
        "string",
        d::CRON_JOB_STATUS_LAST_SCHEDULE_TIME,
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", d::JOB_SPEC_SELECTOR).wide(),
];

fn cron_job_row(object: &Object, now: jiff::Timestamp) -> Row {
    let cj: CronJob = decode(object);
    let spec = cj.spec.unwrap_or_default();
    let status = cj.status.unwrap_or_default();
    let last = match &status.last_schedule_time {
        Some(t) => age(Some(t), now),
        None => "<none>".to_string(),
    };
    // Upstream `printBoolPtr`: a string cell even though the column says boolean.
    let suspend = match spec.suspend {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let job_spec = spec.job_template.spec.unwrap_or_default();
    let (containers, images) = container_cells(job_spec.template.spec.as_ref());
    Row::new(vec![
        object.name().into(),
        spec.schedule.into(),
        spec.time_zone
            .unwrap_or_else(|| "<none>".to_string())
            .into(),
        suspend.into(),
        status.active.map_or(0, |a| a.len()).into(),
        last.into(),
        object_age(object, now),
        containers,
        images,
        format_label_selector(job_spec.selector.as_ref()).into(),
    ])
}

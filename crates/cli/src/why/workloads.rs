//! The workload controllers' part of a pod's story: the `JobDecision`, `CronJobDecision`,
//! `DaemonSetDecision` and `StatefulSetDecision` records that concern the pod. A record
//! concerns it when it names the pod (an index's failed pod, the StatefulSet pod that is not
//! created yet or the one it waits for, the old pods a rollout keeps), or when it is about the
//! pod's owner and tells what happened to the pod: its Job's backoff while the pod was there
//! (or the backoff that delayed its creation), the Job's failure and TTL deletion, the
//! CronJob's deletion of that Job, its DaemonSet skipping the node the pod runs on.
//!
//! The owner is the pod's controller reference when the pod is still stored, else the
//! controller's `SuccessfulCreate` event naming the pod (upstream's messages), and the Job's
//! CronJob the CronJob's `SuccessfulCreate` event naming the Job. That event creating the pod is
//! a line of the story too.

use std::fmt::Write;

use serde_json::Value;

use crate::output::age::format_age_secs;
use crate::output::str_of as s;

/// What the workload records are matched against: the pod, its owner and where it ran.
pub struct Lineage {
    namespace: String,
    name: String,
    /// The controller that owns the pod: its kind and name.
    owner: Option<(String, String)>,
    /// The CronJob that owns the pod's Job.
    cronjob: Option<String>,
    /// The instants the owner created a pod of this name.
    created: Vec<f64>,
    /// The nodes the pod was bound to.
    nodes: Vec<String>,
}

impl Lineage {
    /// The lineage of `namespace/name` from the run's `records`, with `owner` (the controller
    /// reference of the stored pod, if it is) and `node` (where it is at the end).
    pub fn of(
        namespace: &str,
        name: &str,
        records: &[Value],
        owner: Option<(String, String)>,
        node: Option<&str>,
    ) -> Lineage {
        let mut l = Lineage {
            namespace: namespace.to_string(),
            name: name.to_string(),
            owner,
            cronjob: None,
            created: Vec::new(),
            nodes: node.into_iter().map(str::to_string).collect(),
        };
        for r in records.iter().filter(|r| s(r, "namespace") == namespace) {
            if let Some(kind) = l.created_by(r) {
                l.created.push(time(r));
                if l.owner.is_none() {
                    l.owner = Some((kind.to_string(), s(r, "name").to_string()));
                }
            }
            let scheduled = s(r, "kind") == "SchedulingAttempt"
                && s(r, "name") == name
                && s(r, "result") == "Scheduled";
            if scheduled && !l.nodes.iter().any(|n| n == s(r, "node")) {
                l.nodes.push(s(r, "node").to_string());
            }
        }
        if let Some(("Job", job)) = l.owner_ref() {
            let created = format!("Created job {job}");
            l.cronjob = records
                .iter()
                .find(|r| {
                    s(r, "kind") == "CronJob"
                        && s(r, "reason") == "SuccessfulCreate"
                        && s(r, "namespace") == namespace
                        && s(r, "message") == created
                })
                .map(|r| s(r, "name").to_string());
        }
        l
    }

    /// The controller kind when `r` is its event creating this pod.
    fn created_by<'a>(&self, r: &'a Value) -> Option<&'a str> {
        if s(r, "reason") != "SuccessfulCreate" || s(r, "type") != "Normal" {
            return None;
        }
        let (kind, message) = (s(r, "kind"), s(r, "message"));
        let named = match kind {
            "Job" | "DaemonSet" => message == format!("Created pod: {}", self.name),
            "StatefulSet" => {
                message
                    == format!(
                        "create Pod {} in StatefulSet {} successful",
                        self.name,
                        s(r, "name")
                    )
            }
            _ => false,
        };
        named.then_some(kind)
    }

    fn owner_ref(&self) -> Option<(&str, &str)> {
        self.owner.as_ref().map(|(k, n)| (k.as_str(), n.as_str()))
    }

    /// Whether `r` is about the pod's owner of `kind` (any StatefulSet of the namespace when
    /// the owner is unknown: those records name the pod itself).
    fn owned_by(&self, r: &Value, kind: &str) -> bool {
        match self.owner_ref() {
            Some((k, n)) => k == kind && n == s(r, "name"),
            None => kind == "StatefulSet",
        }
    }

    /// Whether `v` names this pod: `NAME` or `NAMESPACE/NAME`.
    fn is_me(&self, v: &str) -> bool {
        v == self.name || v.split_once('/') == Some((&self.namespace, &self.name))
    }

    fn named_in(&self, r: &Value, fields: &[&str]) -> bool {
        fields.iter().any(|f| match r.get(*f) {
            Some(Value::String(v)) => self.is_me(v),
            Some(Value::Array(list)) => {
                list.iter().filter_map(Value::as_str).any(|v| self.is_me(v))
            }
            _ => false,
        })
    }

    /// When the pod (by this name) was first created, if its owner's event says.
    fn first_created(&self) -> Option<f64> {
        self.created.iter().copied().reduce(f64::min)
    }

    /// Whether `r` came while the pod was there (at or after its creation; always when the
    /// creation is not known).
    fn after_creation(&self, r: &Value) -> bool {
        self.first_created().is_none_or(|c| time(r) >= c)
    }

    /// Whether `r`'s instant `at` is one at which the owner created this pod.
    fn created_at_end_of(&self, r: &Value) -> bool {
        let at = r.get("at").and_then(Value::as_f64);
        at.is_some_and(|at| self.created.contains(&at))
    }
}

fn time(r: &Value) -> f64 {
    r.get("time").and_then(Value::as_f64).unwrap_or(0.0)
}

/// The story line of `r` when it is a workload record that concerns the pod.
pub fn line(r: &Value, l: &Lineage) -> Option<String> {
    if s(r, "namespace") != l.namespace {
        return None;
    }
    if let Some(kind) = l.created_by(r) {
        return Some(format!(
            "{} {} ({kind} {}/{}): {}\n",
            s(r, "type"),
            s(r, "reason"),
            l.namespace,
            s(r, "name"),
            s(r, "message")
        ));
    }
    let (concerns, note) = match s(r, "kind") {
        "JobDecision" if l.owned_by(r, "Job") => job(r, l),
        "CronJobDecision" => (cronjob(r, l), None),
        "DaemonSetDecision" if l.owned_by(r, "DaemonSet") => daemonset(r, l),
        "StatefulSetDecision" if l.owned_by(r, "StatefulSet") => (
            l.named_in(r, &["pod", "waitingFor", "waiting", "outdated"]),
            None,
        ),
        _ => (false, None),
    };
    if !concerns {
        return None;
    }
    let kind = s(r, "kind").trim_end_matches("Decision");
    let mut out = format!(
        "{kind} {}/{} {} ({}): {}\n",
        l.namespace,
        s(r, "name"),
        s(r, "decision"),
        s(r, "reason"),
        s(r, "message")
    );
    if let Some(note) = note {
        let _ = writeln!(out, "{:10}{note}", "");
    }
    Some(out)
}

/// A Job record concerns the pod when it names it, when it is the backoff that delayed the
/// pod's creation (said in a note), or, naming no pod, when it came after the pod was created.
fn job(r: &Value, l: &Lineage) -> (bool, Option<String>) {
    let delayed = s(r, "decision") == "WaitBackoff" && l.created_at_end_of(r) && {
        // An index's backoff delays the retry of that index only.
        match r.get("index").and_then(Value::as_i64) {
            Some(ix) => l.name.starts_with(&format!("{}-{ix}-", s(r, "name"))),
            None => true,
        }
    };
    if delayed {
        let at = r.get("at").and_then(Value::as_f64).unwrap_or(0.0);
        let note = format!(
            "this pod was created when the backoff ended, at {}",
            format_age_secs(at)
        );
        return (true, Some(note));
    }
    if r.get("pod").is_some() {
        return (l.named_in(r, &["pod"]), None);
    }
    (l.after_creation(r), None)
}

/// A CronJob record concerns the pod when it deleted (or replaced) the pod's Job.
fn cronjob(r: &Value, l: &Lineage) -> bool {
    let job = l.owner_ref().filter(|(k, _)| *k == "Job").map(|(_, n)| n);
    l.cronjob.as_deref() == Some(s(r, "name")) && job.is_some_and(|j| s(r, "job") == j)
}

/// A DaemonSet record concerns the pod when it skips a node the pod ran on, or keeps the pod
/// waiting for its replacement in a rollout (said in a note: the message counts the pods).
fn daemonset(r: &Value, l: &Lineage) -> (bool, Option<String>) {
    match s(r, "decision") {
        "NodeSkipped" => (l.nodes.iter().any(|n| n == s(r, "node")), None),
        _ if l.named_in(r, &["waiting"]) => (
            true,
            Some("this pod is one of the old pods that wait".to_string()),
        ),
        _ => (false, None),
    }
}

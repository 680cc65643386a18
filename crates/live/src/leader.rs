//! Leader election with a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection`
//! package does it for kube-scheduler: try to acquire or renew every `retryPeriod`; another
//! holder's lease counts as expired when its record has not changed for `leaseDuration` of
//! this process's own time (clocks of different machines are never compared); a leader that
//! has not renewed within `renewDeadline` has lost the lease, and stops at once (upstream's
//! scheduler exits: "leaderelection lost").
//!
//! The configuration's `leaderElection` block (`leaderElect`, `leaseDuration`, `renewDeadline`,
//! `retryPeriod`, `resourceLock`, `resourceName`, `resourceNamespace`) with upstream's defaults:
//! 15 s, 10 s, 2 s, `leases`, `kube-system/kube-scheduler`.
//!
//! This file reads the wall clock: lease times are wall times, and expiry is measured on this
//! process's monotonic clock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use serde_json::Value;
use tokio::time::Instant;

/// The `leaderElection` block, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderElection {
    pub leader_elect: bool,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    pub namespace: String,
    pub name: String,
}

impl Default for LeaderElection {
    fn default() -> Self {
        LeaderElection {
            leader_elect: true,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            namespace: "kube-system".into(),
            name: "kube-scheduler".into(),
        }
    }
}

fn duration(block: &Value, field: &str, default: Duration) -> Result<Duration, String> {
    match block.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::String(s)) => kubeplane_core::duration::parse_duration(s)
            .map(|d| Duration::from_nanos(d.0.max(0) as u64))
            .map_err(|e| format!("leaderElection.{field}: {e}")),
        Some(v) => Err(format!("leaderElection.{field}: not a duration: {v}")),
    }
}

impl LeaderElection {
    /// Reads the configuration's block (absent: the defaults), validated as upstream's
    /// `ValidateLeaderElectionConfiguration` does.
    pub fn from_config(block: Option<&Value>) -> Result<LeaderElection, String> {
        let d = LeaderElection::default();
        let Some(block) = block.filter(|b| !b.is_null()) else {
            return Ok(d);
        };
        let text = |field: &str, default: &str| match block.get(field) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => default.to_string(),
        };
        let lock = text("resourceLock", "leases");
        if lock != "leases" {
            return Err(format!(
                "leaderElection.resourceLock: only \"leases\" is supported, not {lock:?}"
            ));
        }
        let le = LeaderElection {
            leader_elect: block
                .get("leaderElect")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            lease_duration: duration(block, "leaseDuration", d.lease_duration)?,
            renew_deadline: duration(block, "renewDeadline", d.renew_deadline)?,
            retry_period: duration(block, "retryPeriod", d.retry_period)?,
            namespace: text("resourceNamespace", &d.namespace),
            name: text("resourceName", &d.name),
        };
        le.validate()?;
        Ok(le)
    }

    /// Upstream's `ValidateLeaderElectionConfiguration` rules.
    pub fn validate(&self) -> Result<(), String> {
        if !self.leader_elect {
            return Ok(());
        }
        if self.lease_duration <= self.renew_deadline {
            return Err("leaderElection.leaseDuration: must be greater than renewDeadline".into());
        }
        if self.renew_deadline.is_zero() || self.retry_period.is_zero() {
            return Err("leaderElection: renewDeadline and retryPeriod must be positive".into());
        }
        if self.renew_deadline.as_secs_f64() <= 1.2 * self.retry_period.as_secs_f64() {
            return Err(
                "leaderElection.renewDeadline: must be greater than retryPeriod*JitterFactor"
                    .into(),
            );
        }
        Ok(())
    }
}

/// The identity this process holds the lease under: the host name and something unique to the
/// process (upstream adds a UUID).
pub fn identity() -> String {
    let host = crate::events::hostname();
    let nanos = Timestamp::now().as_nanosecond();
    format!("{host}_{:x}{:x}", std::process::id(), nanos & 0xffff_ffff)
}

/// What the elector last saw of the lease: its record and when (this process's time) it
/// changed.
struct Observed {
    record: Option<LeaseSpec>,
    at: Instant,
}

fn now_micro() -> MicroTime {
    MicroTime(Timestamp::now())
}

/// Upstream `tryAcquireOrRenew`: `Ok(true)` when this process holds the lease after the call.
async fn try_acquire_or_renew(
    api: &Api<Lease>,
    le: &LeaderElection,
    id: &str,
    observed: &mut Observed,
) -> Result<bool, kube::Error> {
    let secs = le.lease_duration.as_secs().max(1) as i32;
    let current = match api.get_opt(&le.name).await? {
        Some(l) => l,
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(le.name.clone()),
                    namespace: Some(le.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(id.to_string()),
                    lease_duration_seconds: Some(secs),
                    acquire_time: Some(now_micro()),
                    renew_time: Some(now_micro()),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            api.create(&PostParams::default(), &lease).await?;
            observed.record = lease.spec;
            observed.at = Instant::now();
            return Ok(true);
        }
    };
    let spec = current.spec.clone().unwrap_or_default();
    if observed.record.as_ref() != Some(&spec) {
        observed.record = Some(spec.clone());
        observed.at = Instant::now();
    }
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    let held_by_me = holder == id;
    let duration = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(secs).max(0) as u64);
    if !holder.is_empty() && !held_by_me && observed.at + duration > Instant::now() {
        return Ok(false);
    }
    let mut next = current.clone();
    let mut new_spec = spec.clone();
    new_spec.holder_identity = Some(id.to_string());
    new_spec.lease_duration_seconds = Some(secs);
    new_spec.renew_time = Some(now_micro());
    if !held_by_me {
        new_spec.acquire_time = Some(now_micro());
        new_spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
    }
    next.spec = Some(new_spec.clone());
    api.replace(&le.name, &PostParams::default(), &next).await?;
    observed.record = Some(new_spec);
    observed.at = Instant::now();
    Ok(true)
}

/// Campaigns until this process leads (setting `leading` and calling `on_change(true)`), then
/// renews until it fails to within the renew deadline; then clears `leading` at once, calls
/// `on_change(false)` and returns. Transport errors are retried every retry period.
pub async fn run(
    api: Api<Lease>,
    le: LeaderElection,
    id: String,
    leading: Arc<AtomicBool>,
    who: &'static str,
    on_change: impl Fn(bool),
) {
    let mut observed = Observed {
        record: None,
        at: Instant::now(),
    };
    loop {
        match try_acquire_or_renew(&api, &le, &id, &mut observed).await {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => eprintln!("{who}: leader election: {e}"),
        }
        tokio::time::sleep(le.retry_period).await;
    }
    leading.store(true, Ordering::SeqCst);
    eprintln!(
        "{who}: successfully acquired lease {}/{} as {id}",
        le.namespace, le.name
    );
    on_change(true);
    let mut renewed = Instant::now();
    loop {
        tokio::time::sleep(le.retry_period).await;
        let attempt = tokio::time::timeout(
            le.renew_deadline,
            try_acquire_or_renew(&api, &le, &id, &mut observed),
        )
        .await;
        match attempt {
            Ok(Ok(true)) => renewed = Instant::now(),
            Ok(Ok(false)) => break, // someone else holds it now
            Ok(Err(e)) => eprintln!("{who}: renewing the lease: {e}"),
            Err(_) => {}
        }
        if renewed.elapsed() > le.renew_deadline {
            break;
        }
    }
    leading.store(false, Ordering::SeqCst);
    on_change(false);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_block_is_read_with_upstreams_defaults_and_validated() {
        let cases: Vec<(&str, Option<Value>, Result<LeaderElection, &str>)> =
            vec![
            ("no block gives the defaults", None, Ok(LeaderElection::default())),
            (
                "named durations and lease replace the defaults",
                Some(json!({"leaseDuration": "4s", "renewDeadline": "3s", "retryPeriod": "500ms",
                    "resourceName": "kubeplane-live", "resourceNamespace": "default"})),
                Ok(LeaderElection {
                    lease_duration: Duration::from_secs(4),
                    renew_deadline: Duration::from_secs(3),
                    retry_period: Duration::from_millis(500),
                    name: "kubeplane-live".into(),
                    namespace: "default".into(),
                    ..LeaderElection::default()
                }),
            ),
            (
                "leaderElect false turns election off",
                Some(json!({"leaderElect": false})),
                Ok(LeaderElection {
                    leader_elect: false,
                    ..LeaderElection::default()
                }),
            ),
            (
                "a lease no longer than the renew deadline is refused",
                Some(json!({"leaseDuration": "10s"})),
                Err("leaderElection.leaseDuration: must be greater than renewDeadline"),
            ),
            (
                "another lock than leases is refused",
                Some(json!({"resourceLock": "endpoints"})),
                Err("leaderElection.resourceLock: only \"leases\" is supported, not \"endpoints\""),
            ),
        ];
        for (name, block, want) in cases {
            let got = LeaderElection::from_config(block.as_ref());
            assert_eq!(got, want.map_err(str::to_string), "{name}");
        }
    }
}

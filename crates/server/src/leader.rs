//! Leader election among the `kubeplane serve` processes that share one etcd cluster: every
//! one serves the API, and the one that holds the `coordination.k8s.io/v1` Lease
//! `kube-system/kubeplane-control-plane` runs the control plane (the scheduler, the
//! controllers and the simulated kubelets).
//!
//! The rules are client-go's `leaderelection` (as `crates/live/src/leader.rs` applies them for
//! the live scheduler): every `retryPeriod` a candidate reads the Lease and takes it when it is
//! free, its own, or expired: another holder's record counts as expired once it has not changed
//! for `leaseDuration` of this process's monotonic time (clocks of different machines are never
//! compared). A leader renews every `retryPeriod` and has lost the lease when it has not
//! renewed within `renewDeadline` of the start of its last successful renewal, or when it finds
//! another holder: its control plane then stops at once, and [`Leadership::gate`] refuses
//! every later write of it. Defaults are upstream's: 15 s, 10 s, 2 s.
//!
//! The Lease goes through the server's own registry: a create that fails when the Lease
//! exists, and an update whose precondition is the resourceVersion read, that is etcd's mod
//! revision of the Lease (kube-apiserver's update transaction): of two candidates that read
//! the same record, one update wins and the other gets a Conflict.
//!
//! Since `renewDeadline < leaseDuration` and both are measured from instants that come before
//! the renewal's commit (the leader's) and after it (a candidate's), a leader's gate closes at
//! least `leaseDuration - renewDeadline` before anyone else can take the lease.
//!
//! This file reads the wall clock (Lease times are wall times), the monotonic clock (expiry)
//! and the OS's random source (a process identity, and a salt for the names it generates).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kubeplane_api::{ApiError, Client, Kind, Object, ObjectKey};
use kubeplane_registry::{StorageClient, WriteGate};
use serde_json::{json, Value};

use crate::reflector::pause;

/// The election's parameters (kube-controller-manager's `--leader-elect-*` flags).
#[derive(Clone, Debug, PartialEq)]
pub struct Election {
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    pub namespace: String,
    pub name: String,
}

impl Default for Election {
    fn default() -> Self {
        Election {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            namespace: "kube-system".into(),
            name: "kubeplane-control-plane".into(),
        }
    }
}

impl Election {
    /// Upstream's `ValidateLeaderElectionConfiguration` rules.
    pub fn validate(&self) -> Result<(), String> {
        if self.lease_duration <= self.renew_deadline {
            return Err(
                "--leader-elect-lease-duration: must be greater than --leader-elect-renew-deadline"
                    .into(),
            );
        }
        if self.retry_period.is_zero() {
            return Err("--leader-elect-retry-period: must be greater than zero".into());
        }
        if self.renew_deadline.as_secs_f64() <= 1.2 * self.retry_period.as_secs_f64() {
            return Err(
                "--leader-elect-renew-deadline: must be greater than --leader-elect-retry-period*JitterFactor(1.2)"
                    .into(),
            );
        }
        Ok(())
    }
}

/// Whether this process leads, as its elector last found.
pub struct Leadership {
    pub election: Election,
    identity: String,
    /// While leading: when the last successful acquisition or renewal started.
    renewed: Mutex<Option<Instant>>,
}

impl Leadership {
    pub fn new(election: Election) -> Arc<Leadership> {
        Arc::new(Leadership {
            election,
            identity: identity(),
            renewed: Mutex::new(None),
        })
    }

    /// The holder identity this process takes the Lease under.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    fn renewed(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.renewed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether this process holds the lease now: it acquired or renewed it less than the renew
    /// deadline ago.
    pub fn leading(&self) -> bool {
        self.renewed()
            .is_some_and(|t| t.elapsed() < self.election.renew_deadline)
    }

    /// A write gate that refuses every write while this process does not lead.
    pub fn gate(self: &Arc<Leadership>) -> WriteGate {
        let me = self.clone();
        Arc::new(move || match me.leading() {
            true => Ok(()),
            false => Err(format!(
                "this server does not hold the lease {}/{}",
                me.election.namespace, me.election.name
            )),
        })
    }
}

/// This process's identity: the host name, the process id and a random part (upstream adds a
/// UUID).
fn identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}_{}_{:08x}", std::process::id(), salt() as u32)
}

/// A random number for this process (the servers that share an etcd must not draw the same
/// UIDs and generated names from the same seed).
pub fn salt() -> u64 {
    getrandom::u64().unwrap_or_else(|_| u64::from(std::process::id()))
}

/// The wall clock as a `MicroTime`.
fn now_micro() -> String {
    let now = jiff::Timestamp::now();
    let whole = jiff::Timestamp::from_second(now.as_second()).unwrap_or(now);
    format!(
        "{}.{:06}Z",
        whole.strftime("%Y-%m-%dT%H:%M:%S"),
        now.subsec_microsecond()
    )
}

/// What the elector last saw of the Lease's record and when (this process's time).
struct Observed {
    record: Option<Value>,
    at: Instant,
}

/// Upstream `tryAcquireOrRenew` through the registry: `Ok(true)` when this process holds the
/// lease after the call.
fn try_acquire_or_renew(
    client: &mut StorageClient,
    le: &Leadership,
    observed: &mut Observed,
) -> Result<bool, ApiError> {
    let e = &le.election;
    let secs = e.lease_duration.as_secs().max(1);
    let key = ObjectKey::new(Kind::Lease, &e.namespace, &e.name);
    let current = match client.get(&key) {
        Err(ApiError::NotFound { .. }) => {
            let now = now_micro();
            let spec = json!({"holderIdentity": le.identity, "leaseDurationSeconds": secs,
                "acquireTime": now, "renewTime": now, "leaseTransitions": 0});
            let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": e.name, "namespace": e.namespace}, "spec": spec});
            client.create(Object::from_json(&lease).map_err(internal)?)?;
            *observed = Observed {
                record: Some(spec),
                at: Instant::now(),
            };
            return Ok(true);
        }
        other => other?.to_json(),
    };
    let spec = current.get("spec").cloned().unwrap_or_else(|| json!({}));
    if observed.record.as_ref() != Some(&spec) {
        *observed = Observed {
            record: Some(spec.clone()),
            at: Instant::now(),
        };
    }
    let holder = spec["holderIdentity"].as_str().unwrap_or("");
    let mine = holder == le.identity;
    let duration = Duration::from_secs(spec["leaseDurationSeconds"].as_u64().unwrap_or(secs));
    if !holder.is_empty() && !mine && observed.at + duration > Instant::now() {
        return Ok(false);
    }
    let mut next = current.clone();
    let now = now_micro();
    next["spec"]["holderIdentity"] = json!(le.identity);
    next["spec"]["leaseDurationSeconds"] = json!(secs);
    next["spec"]["renewTime"] = json!(now);
    if !mine {
        next["spec"]["acquireTime"] = json!(now);
        let transitions = spec["leaseTransitions"].as_u64().unwrap_or(0);
        next["spec"]["leaseTransitions"] = json!(transitions + 1);
    }
    // The resourceVersion read is the update's precondition (etcd's mod revision).
    client.update(Object::from_json(&next).map_err(internal)?)?;
    *observed = Observed {
        record: next.get("spec").cloned(),
        at: Instant::now(),
    };
    Ok(true)
}

fn internal(message: String) -> ApiError {
    ApiError::Internal { message }
}

/// Campaigns, then renews, every retry period until the server stops (upstream's
/// `LeaderElector.Run`, which keeps campaigning after a loss instead of exiting): keeps
/// `leadership` up to date and says on stderr when this process acquires or loses the lease.
/// On a clean stop a leader gives the lease up (upstream's `ReleaseOnCancel`), so that another
/// server takes over without waiting for it to expire.
pub fn campaign(mut client: StorageClient, leadership: Arc<Leadership>, stopping: &AtomicBool) {
    let e = leadership.election.clone();
    let mut observed = Observed {
        record: None,
        at: Instant::now(),
    };
    let mut was_leading = false;
    loop {
        let started = Instant::now();
        match try_acquire_or_renew(&mut client, &leadership, &mut observed) {
            Ok(true) => *leadership.renewed() = Some(started),
            Ok(false) => *leadership.renewed() = None,
            Err(err) if was_leading => {
                eprintln!(
                    "kubeplane serve: renewing the lease {}/{}: {err}",
                    e.namespace, e.name
                )
            }
            Err(_) => {}
        }
        let leading = leadership.leading();
        if leading && !was_leading {
            eprintln!(
                "kubeplane serve: successfully acquired lease {}/{} as {}; running the control plane",
                e.namespace, e.name, leadership.identity
            );
        } else if !leading && was_leading {
            eprintln!(
                "kubeplane serve: leaderelection lost ({}/{}); the control plane stops",
                e.namespace, e.name
            );
        }
        was_leading = leading;
        if !pause(stopping, e.retry_period.saturating_sub(started.elapsed())) {
            break;
        }
    }
    if leadership.leading() {
        *leadership.renewed() = None;
        release(&mut client, &leadership);
    }
}

/// Gives the lease up: an empty holder and a one-second duration, as client-go's release.
fn release(client: &mut StorageClient, le: &Leadership) {
    let e = &le.election;
    let key = ObjectKey::new(Kind::Lease, &e.namespace, &e.name);
    let Ok(current) = client.get(&key) else {
        return;
    };
    let mut next = current.to_json();
    if next["spec"]["holderIdentity"].as_str() != Some(le.identity.as_str()) {
        return;
    }
    next["spec"]["holderIdentity"] = Value::Null;
    next["spec"]["leaseDurationSeconds"] = json!(1);
    next["spec"]["renewTime"] = json!(now_micro());
    if let Ok(obj) = Object::from_json(&next) {
        let _ = client.update(obj);
    }
}

#[cfg(test)]
mod tests;

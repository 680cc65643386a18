//! Whether etcd answers: after a call finds etcd unreachable or without quorum, the calls of the
//! next second fail at once with the same error instead of waiting for etcd again, and then one
//! call at a time asks etcd whether it is back.
//!
//! A server whose writes are serialized (the registry's write lock, the control plane writing
//! through the same registry) would otherwise queue every request behind etcd's own request
//! timeout (7 s with etcd's default election timeout) and answer none of them in a bounded
//! time. A call that fails at once was never sent, so it changed nothing.
//!
//! Also here: how a call failed ([`Failure`]), from the etcd client's error.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Why a call to etcd failed.
#[derive(Debug)]
pub(crate) enum Failure {
    Compacted,
    Future,
    /// No answer within the client's deadline: the request may have taken effect.
    TimedOut(String),
    /// etcd could not serve the request: no member reachable, no leader, or etcd's own
    /// "request timed out" while it has no quorum.
    Unreachable(String),
    Other(String),
}

/// gRPC status codes (`google.rpc.Code`) that say how a call failed.
const GRPC_CANCELLED: i32 = 1;
const GRPC_DEADLINE_EXCEEDED: i32 = 4;
const GRPC_UNAVAILABLE: i32 = 14;

pub(crate) fn failure(e: etcd_client::Error) -> Failure {
    let text = e.to_string();
    if text.contains("required revision has been compacted") {
        return Failure::Compacted;
    }
    if text.contains("required revision is a future revision") {
        return Failure::Future;
    }
    match &e {
        // tonic reports its own per-request timeout as Cancelled ("Timeout expired").
        // etcd's own words (`etcdserver: request timed out`, `etcdserver: no leader`), as
        // kube-apiserver's messages carry them.
        etcd_client::Error::GRpcStatus(s) => match s.code() as i32 {
            GRPC_DEADLINE_EXCEEDED | GRPC_CANCELLED => Failure::TimedOut(s.message().into()),
            GRPC_UNAVAILABLE if s.message() == "tcp connect error" => {
                Failure::Unreachable(format!("no member reachable: {text}"))
            }
            GRPC_UNAVAILABLE => Failure::Unreachable(s.message().into()),
            _ => Failure::Other(text),
        },
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => {
            Failure::Unreachable(format!("no member reachable: {text}"))
        }
        _ => Failure::Other(text),
    }
}

/// Whether a request failed before it reached a member (it changed nothing).
pub(crate) fn not_sent(e: &etcd_client::Error) -> bool {
    let text = format!("{e:?}");
    text.contains("tcp connect error") || text.contains("ConnectionRefused")
}

/// How long calls fail at once after etcd was found unavailable, before one asks again.
const PAUSE: Duration = Duration::from_secs(1);

/// What the last calls found.
#[derive(Default)]
pub(crate) struct Health {
    down: Mutex<Option<Down>>,
}

/// etcd was found unavailable.
struct Down {
    /// What it answered (or that it did not answer).
    message: String,
    /// It did not answer in time (504 Timeout), rather than refusing (503): calls that fail at
    /// once answer as the call that found it did.
    timed_out: bool,
    /// When the next call may ask etcd again.
    retry_at: Instant,
    /// A call is asking etcd now.
    probing: bool,
}

/// A call that may go to etcd, which must report what it found with [`Health::record`].
pub(crate) struct Admitted(());

impl Health {
    /// Whether a call may go to etcd now; else the failure it answers with, the one the last
    /// admitted call found.
    pub(crate) fn admit(&self) -> Result<Admitted, Failure> {
        let mut down = self.down.lock().unwrap_or_else(PoisonError::into_inner);
        match down.as_mut() {
            None => Ok(Admitted(())),
            Some(d) if d.probing || Instant::now() < d.retry_at => {
                let message = d.message.clone();
                Err(if d.timed_out {
                    Failure::TimedOut(message)
                } else {
                    Failure::Unreachable(message)
                })
            }
            Some(d) => {
                d.probing = true;
                Ok(Admitted(()))
            }
        }
    }

    /// Records how an admitted call failed, or `None` when it succeeded. etcd is unavailable
    /// after a call that timed out or found it unreachable; any other answer (even an error of
    /// the request's own) shows it serves.
    pub(crate) fn record(&self, _call: Admitted, failed: Option<&Failure>) {
        let mut down = self.down.lock().unwrap_or_else(PoisonError::into_inner);
        *down = match failed {
            Some(Failure::TimedOut(message)) => Some(Down::new(message, true)),
            Some(Failure::Unreachable(message)) => Some(Down::new(message, false)),
            _ => None,
        };
    }
}

impl Down {
    fn new(message: &str, timed_out: bool) -> Down {
        Down {
            message: message.to_string(),
            timed_out,
            retry_at: Instant::now() + PAUSE,
            probing: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_a_failure_calls_fail_at_once_until_one_asks_again_and_finds_etcd_back() {
        let health = Health::default();
        let first = health.admit().expect("etcd is presumed up");
        let found = Failure::Unreachable("etcdserver: request timed out".into());
        health.record(first, Some(&found));
        assert!(
            matches!(health.admit(), Err(Failure::Unreachable(m)) if m == "etcdserver: request timed out"),
            "a call within the pause fails at once"
        );
        std::thread::sleep(PAUSE + Duration::from_millis(50));
        let probe = health.admit().expect("after the pause one call asks etcd");
        assert!(health.admit().is_err(), "no second call while one asks");
        health.record(probe, None);
        assert!(
            health.admit().is_ok(),
            "etcd answered: calls go to it again"
        );
    }

    #[test]
    fn calls_refused_after_a_timeout_time_out_too_and_a_request_error_shows_etcd_serves() {
        let health = Health::default();
        let first = health.admit().expect("etcd is presumed up");
        health.record(first, Some(&Failure::TimedOut("Timeout expired".into())));
        assert!(
            matches!(health.admit(), Err(Failure::TimedOut(m)) if m == "Timeout expired"),
            "a timeout stays a timeout (504), not ServiceUnavailable (503)"
        );
        std::thread::sleep(PAUSE + Duration::from_millis(50));
        let probe = health.admit().expect("after the pause one call asks etcd");
        health.record(probe, Some(&Failure::Compacted));
        assert!(health.admit().is_ok(), "etcd answered the request");
    }
}

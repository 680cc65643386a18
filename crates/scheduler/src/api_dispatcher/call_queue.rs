//! The queue of API calls (upstream `backend/api_dispatcher/call_queue.go`): at most one call
//! per object is queued or running; a newer call for the same object is merged into the queued
//! one, overwrites it, or is skipped, by relevance and type; a call for an object whose call is
//! running waits until that one is finalized.

use kubeplane_api::StoredPod;
use std::collections::VecDeque;

use kubeplane_api::ApiError;
use rustc_hash::{FxHashMap, FxHashSet};

use super::api_calls::{ApiCall, ApiCallType};

/// Why a call ended without running, or how it failed (upstream `ErrCallSkipped`,
/// `ErrCallOverwritten`, or the API's error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The call was not made: it had no effect, or a more relevant call was queued.
    Skipped(&'static str),
    /// A newer call for the same object replaced it.
    Overwritten(&'static str),
    /// The API server refused it.
    Api(ApiError),
}

impl CallError {
    /// Upstream `IsUnexpectedError`: skipped and overwritten calls are normal outcomes.
    pub fn is_unexpected(&self) -> bool {
        matches!(self, CallError::Api(_))
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Skipped(why) => write!(f, "{why}: call skipped"),
            CallError::Overwritten(why) => write!(f, "{why}: call overwritten"),
            CallError::Api(e) => write!(f, "{e}"),
        }
    }
}

/// How a call that asked to be told ended (upstream's `onFinish` channel).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The object the call was for.
    pub uid: String,
    pub call_type: ApiCallType,
    pub result: Result<(), CallError>,
}

/// A call handed out to run. It owns everything it needs (it may run on another thread);
/// [`CallQueue::finalize`] takes it back with its result.
#[derive(Clone, Debug)]
pub struct InFlightCall {
    pub call: ApiCall,
    call_id: u64,
    notify: bool,
}

#[derive(Debug)]
struct QueuedCall {
    call: ApiCall,
    /// Tells this instance from a newer call for the same object that replaced it.
    call_id: u64,
    /// Whether its outcome is wanted as a [`Completion`].
    notify: bool,
    /// Whether a call for the object runs now (this one, or an older one it replaced).
    in_flight: bool,
}

#[derive(Debug, Default)]
pub struct CallQueue {
    /// The call of each object (by UID) that is queued or running.
    calls: FxHashMap<String, QueuedCall>,
    /// Objects whose call waits to run, first in first out.
    pending: VecDeque<String>,
    next_call_id: u64,
    /// Running calls that were already told they were overwritten (each call is told once).
    told: FxHashSet<u64>,
    /// Outcomes not yet taken.
    completions: VecDeque<Completion>,
}

impl CallQueue {
    /// Whether no call is queued or running and no outcome waits to be taken.
    pub fn is_idle(&self) -> bool {
        self.calls.is_empty() && self.completions.is_empty()
    }

    /// The number of objects with a call queued or running.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Hands a call's outcome to whoever queued it, unless it was told already.
    fn tell(&mut self, uid: String, call: &QueuedCall, result: Result<(), CallError>) {
        if call.notify && (self.told.is_empty() || !self.told.remove(&call.call_id)) {
            self.completions.push_back(Completion {
                uid,
                call_type: call.call.call_type(),
                result,
            });
        }
    }

    /// Adds a call (upstream `add`). `Err` when the call is not queued: it was skipped.
    pub fn add(&mut self, call: ApiCall, notify: bool) -> Result<(), CallError> {
        let new = QueuedCall {
            call,
            call_id: self.next_call_id,
            notify,
            in_flight: false,
        };
        self.next_call_id += 1;
        let uid = new.call.uid().to_string();
        let (new, old_present) = match self.calls.remove(&uid) {
            Some(old) => (self.merge(&uid, old, new)?, true),
            None => (new, false),
        };
        self.enqueue(uid, new, old_present)
    }

    /// Reconciles a new call with the one queued or running for the same object (upstream
    /// `merge`); puts the old one back when the new one is skipped.
    fn merge(
        &mut self,
        uid: &str,
        old: QueuedCall,
        mut new: QueuedCall,
    ) -> Result<QueuedCall, CallError> {
        let (old_type, new_type) = (old.call.call_type(), new.call.call_type());
        new.in_flight = old.in_flight;
        if new_type.relevance() < old_type.relevance() {
            let err =
                CallError::Skipped("a more relevant call is already enqueued for this object");
            self.tell(uid.to_string(), &new, Err(err.clone()));
            self.calls.insert(uid.to_string(), old);
            return Err(err);
        }
        if old_type != new_type {
            // A running call finishes first; the new one runs after it.
            if !old.in_flight {
                let why = "a more relevant call was enqueued for this object";
                self.tell(uid.to_string(), &old, Err(CallError::Overwritten(why)));
            }
            return Ok(new);
        }
        new.call.merge(&old.call);
        let why = "a call of the same type was enqueued for this object";
        self.tell(uid.to_string(), &old, Err(CallError::Overwritten(why)));
        if old.in_flight && old.notify {
            self.told.insert(old.call_id);
        }
        Ok(new)
    }

    /// Stores a call unless it has no effect (upstream `enqueue`).
    fn enqueue(
        &mut self,
        uid: String,
        call: QueuedCall,
        old_present: bool,
    ) -> Result<(), CallError> {
        if call.call.is_no_op() && !call.in_flight {
            if old_present {
                self.pending.retain(|u| *u != uid);
            }
            let err =
                CallError::Skipped("call does not need to be executed because it has no effect");
            self.tell(uid, &call, Err(err.clone()));
            return Err(err);
        }
        if !old_present {
            self.pending.push_back(uid.clone());
        }
        self.calls.insert(uid, call);
        Ok(())
    }

    /// The next call to run (upstream `pop`); [`CallQueue::finalize`] must follow.
    pub fn pop(&mut self) -> Option<InFlightCall> {
        let uid = self.pending.pop_front()?;
        let queued = self
            .calls
            .get_mut(&uid)
            .expect("a pending object has its call");
        queued.in_flight = true;
        queued.call.mark_executed();
        Some(InFlightCall {
            call: queued.call.clone(),
            call_id: queued.call_id,
            notify: queued.notify,
        })
    }

    /// Takes back a call that ran, with its result (upstream `finalize` and `sendOnFinish`):
    /// a newer call that arrived for the object meanwhile is queued now.
    pub fn finalize(&mut self, done: InFlightCall, result: Result<(), ApiError>) {
        let uid = match self.calls.remove_entry(done.call.uid()) {
            Some((uid, mut current)) => {
                if current.call_id != done.call_id {
                    current.in_flight = false;
                    self.pending.push_back(uid.clone());
                    self.calls.insert(uid.clone(), current);
                }
                uid
            }
            None => done.call.uid().to_string(),
        };
        let done = QueuedCall {
            call: done.call,
            call_id: done.call_id,
            notify: done.notify,
            in_flight: false,
        };
        self.tell(uid, &done, result.map_err(CallError::Api));
    }

    /// The next outcome to hand to whoever queued the call.
    pub fn take_completion(&mut self) -> Option<Completion> {
        self.completions.pop_front()
    }

    /// Two-way sync with a newer state of a pod (upstream `syncObject`): the queued call
    /// compares with it from now on, and the pod comes back with the call's changes applied
    /// (`None`: no call, or nothing to change). A call that has become a no-op is dropped.
    pub fn sync_object(&mut self, pod: &StoredPod) -> Option<StoredPod> {
        let uid = pod.metadata.uid.as_deref()?;
        let queued = self.calls.get_mut(uid)?;
        let synced = queued.call.sync(pod);
        if queued.call.is_no_op() && !queued.in_flight {
            let (uid, queued) = self.calls.remove_entry(uid).expect("just found");
            self.pending.retain(|u| *u != uid);
            let why = "call does not need to be executed because after sync it has no effect";
            self.tell(uid, &queued, Err(CallError::Skipped(why)));
        }
        synced
    }
}

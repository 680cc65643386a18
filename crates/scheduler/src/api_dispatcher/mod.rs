//! The API-call dispatcher behind the `SchedulerAsyncAPICalls` gate (upstream
//! `backend/api_dispatcher`): the scheduler queues its bindings and pod status patches here
//! instead of calling the API server, and a runtime runs them.
//!
//! - `api_calls.rs`: the call types (upstream `framework/api_calls`), their relevance, merging
//!   and no-op rules, and how each runs on a [`Client`](kubeplane_api::Client).
//! - `call_queue.rs`: one call per object, merging, overwriting, skipping, FIFO order.
//!
//! A call is handed out as an [`InFlightCall`] that owns what it needs, so a live runtime may
//! run it on another thread and hand the result back later; the scheduler then takes the
//! [`Completion`] (a binding's resumes its binding cycle). The simulator runs every call at
//! once, at the instant it was queued and in queue order (see [`ApiCallDrain`]).

pub mod api_calls;
pub mod call_queue;
#[cfg(test)]
mod tests;

pub use api_calls::{ApiCall, ApiCallType, PodBindingCall, PodRef, PodStatusPatchCall};
pub use call_queue::{CallError, CallQueue, Completion, InFlightCall};

use kubeplane_api::Client;

/// When the queued calls run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiCallDrain {
    /// The scheduler runs them itself, one after the other, right where upstream's dispatcher
    /// goroutines would pick them up (the simulator: calls take no virtual time).
    AtOnce,
    /// The runtime takes them with [`crate::Scheduler::pop_api_call`] and hands each result
    /// back with [`crate::Scheduler::finish_api_call`].
    ByRuntime,
}

/// The dispatcher: the call queue and the way it is drained.
#[derive(Debug)]
pub struct ApiDispatcher {
    pub queue: CallQueue,
    pub drain: ApiCallDrain,
}

impl ApiDispatcher {
    pub fn new(drain: ApiCallDrain) -> ApiDispatcher {
        ApiDispatcher {
            queue: CallQueue::default(),
            drain,
        }
    }

    /// Runs every queued call now, in order, each finalized with its result before the next
    /// one is popped (so a call queued behind a running one for the same object follows it).
    pub fn run_pending(&mut self, client: &mut dyn Client) {
        while let Some(call) = self.queue.pop() {
            let result = call.call.execute(client);
            self.queue.finalize(call, result);
        }
    }
}

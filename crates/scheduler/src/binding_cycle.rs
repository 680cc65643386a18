//! The binding cycle (upstream `bindingCycle` and `handleBindingCycleError` in
//! `schedule_one.go`): PreBind, Bind and PostBind of an assumed pod, and on failure Unreserve,
//! forgetting the assumed pod and requeueing it.
//!
//! Upstream runs it in a goroutine; here it runs right after the scheduling cycle. Without the
//! `SchedulerAsyncAPICalls` gate the Bind plugin's API call completes at once. Behind the
//! gate the binding is a call queued in the API dispatcher: the cycle waits as a
//! [`BindingCycle`] until the call's [`Completion`] comes back, then finishes (the `Scheduled`
//! event, PostBind) or takes the error path.

use std::sync::Arc;

use kubeplane_api::{ApiError, Client, Object};
use kubeplane_core::{EventRecord, SimTime};

use crate::api_dispatcher::{
    ApiCall, ApiCallDrain, ApiCallType, ApiDispatcher, CallError, Completion, InFlightCall,
    PodBindingCall, PodRef,
};
use crate::framework::events::labels as ev;
use crate::framework::runtime::bind_plugin_failure;
use crate::framework::{CycleState, EventObject, Framework, PodInfo};
use crate::framework::{QueuedPodInfo, Status};
use crate::schedule_one::ScheduleError;
use crate::scheduler::Scheduler;

/// An assumed pod between its scheduling cycle and the end of its binding.
pub(crate) struct BindingCycle {
    pub fwk: Arc<Framework>,
    pub state: CycleState,
    pub qpi: QueuedPodInfo,
    pub assumed: Arc<PodInfo>,
    pub host: String,
    /// The Bind plugin whose API call is queued (it names a failure of that call).
    pub bind_plugin: &'static str,
}

// Found by the assumed pod's UID in the scheduler's set of cycles.
crate::framework::types::keyed_by_pod_uid!(BindingCycle, assumed);

impl Scheduler {
    /// Upstream `bindingCycle`: PreBind, then Bind; the rest follows in
    /// [`Scheduler::finish_binding`], now or when a queued binding call completes. Upstream's
    /// first step with NominatedNodeNameForExpectation (v1.35: PreBindPreFlight, and a status
    /// patch nominating the chosen node when a pre-flight succeeds or Permit makes the pod
    /// wait) never acts here: no plugin of kubeplane's implements PreBind or a waiting Permit.
    pub(crate) fn binding_cycle(
        &mut self,
        now: SimTime,
        client: &mut dyn Client,
        mut cycle: BindingCycle,
    ) {
        // Failures from here on are errors, not unschedulability: the pod's in-flight events
        // can go.
        self.queue.done(cycle.assumed.uid());
        let fwk = cycle.fwk.clone();
        let (state, pod, host) = (&mut cycle.state, &cycle.assumed, cycle.host.as_str());
        let mut status = fwk.run_pre_bind_plugins(state, pod, host, client);
        if status.is_success() {
            status = match self.api_dispatcher.as_mut() {
                None => fwk.run_bind_plugins(state, pod, host, client),
                Some(dispatcher) => {
                    let mut queueing = QueueingClient {
                        inner: client,
                        dispatcher,
                        assumed: pod,
                        queued: false,
                    };
                    let status = fwk.run_bind_plugins(state, pod, host, &mut queueing);
                    if status.is_success() && queueing.queued {
                        cycle.bind_plugin = status.plugin;
                        self.binding_cycles.replace(cycle);
                        return;
                    }
                    status
                }
            };
        }
        self.finish_binding(now, client, cycle, status);
    }

    /// The end of a binding cycle: on success the `Scheduled` event and PostBind (upstream
    /// `finishBinding` and the end of `bindingCycle`), otherwise the error path.
    fn finish_binding(
        &mut self,
        now: SimTime,
        client: &mut dyn Client,
        mut cycle: BindingCycle,
        status: Status,
    ) {
        if !status.is_success() {
            self.handle_binding_cycle_error(now, client, cycle, status);
            return;
        }
        let pod = &cycle.assumed;
        client.record_event(EventRecord::normal(
            now,
            self.source,
            "Pod",
            pod.namespace(),
            pod.name(),
            "Scheduled",
            format!(
                "Successfully assigned {}/{} to {}",
                pod.namespace(),
                pod.name(),
                cycle.host
            ),
        ));
        self.metrics.scheduled += 1;
        cycle
            .fwk
            .run_post_bind_plugins(&mut cycle.state, &cycle.assumed, &cycle.host);
    }

    /// Upstream `handleBindingCycleError`: Unreserve, forget the assumed pod (for the other
    /// pods, as if it were deleted: they may fit now), and requeue it through the failure
    /// handler with its nomination cleared (kept in v1.34, [`Scheduler::failure_nominating`]).
    pub(crate) fn handle_binding_cycle_error(
        &mut self,
        now: SimTime,
        client: &mut dyn Client,
        mut cycle: BindingCycle,
        status: Status,
    ) {
        let (assumed, host) = (&cycle.assumed, cycle.host.as_str());
        cycle
            .fwk
            .run_reserve_plugins_unreserve(&mut cycle.state, assumed, host);
        let _ = self.cache.forget_pod(assumed.uid());
        let uid = assumed.uid().to_string();
        let not_self = move |p: &PodInfo| p.uid() != uid;
        self.queue.move_all_to_active_or_backoff_queue(
            ev::ASSIGNED_POD_DELETE,
            Some(EventObject::Pod(&assumed.pod)),
            None,
            Some(&not_self),
            now,
        );
        let status = if status.is_skip() {
            Status::error("no bind plugin bound the pod")
        } else {
            status
        };
        let mut qpi = cycle.qpi;
        qpi.unschedulable_plugins.clear();
        let nominating = self.failure_nominating();
        self.handle_scheduling_failure(
            now,
            client,
            qpi,
            ScheduleError::Internal(status),
            nominating,
        );
    }

    /// The outcome of a queued call the scheduler waits for: a binding's resumes its binding
    /// cycle. As upstream's `WaitOnFinish`, a skipped or overwritten call counts as done.
    fn handle_api_call_completion(&mut self, now: SimTime, client: &mut dyn Client, c: Completion) {
        if c.call_type != ApiCallType::PodBinding {
            return;
        }
        let Some(cycle) = self.binding_cycles.take(c.uid.as_str()) else {
            return;
        };
        let status = match c.result {
            Err(CallError::Api(e)) => bind_plugin_failure(cycle.bind_plugin, &e.to_string()),
            Ok(()) | Err(_) => Status::success(),
        };
        self.finish_binding(now, client, cycle, status);
    }

    /// Runs the queued calls (when the scheduler drains them itself) and handles the outcomes
    /// waiting for it, until nothing is left: a failed binding's error path queues a status
    /// patch, which runs here too.
    pub(crate) fn settle_api_calls(&mut self, now: SimTime, client: &mut dyn Client) {
        loop {
            let Some(dispatcher) = self.api_dispatcher.as_mut() else {
                return;
            };
            if dispatcher.drain == ApiCallDrain::AtOnce {
                dispatcher.run_pending(client);
            }
            match dispatcher.queue.take_completion() {
                Some(c) => self.handle_api_call_completion(now, client, c),
                None => return,
            }
        }
    }

    /// Turns the `SchedulerAsyncAPICalls` behaviour on (`Some`: bindings and status patches
    /// go through the API dispatcher, drained as said) or off (`None`: calls are made at once).
    pub fn set_async_api_calls(&mut self, drain: Option<ApiCallDrain>) {
        self.api_dispatcher = drain.map(ApiDispatcher::new);
    }

    /// The next queued API call for the runtime to run ([`ApiCallDrain::ByRuntime`]).
    pub fn pop_api_call(&mut self) -> Option<InFlightCall> {
        self.api_dispatcher.as_mut()?.queue.pop()
    }

    /// Hands back a call from [`Scheduler::pop_api_call`] with its result; the scheduler
    /// handles the outcome now (a failed binding takes the binding cycle's error path).
    pub fn finish_api_call(
        &mut self,
        now: SimTime,
        client: &mut dyn Client,
        call: InFlightCall,
        result: Result<(), ApiError>,
    ) {
        if let Some(dispatcher) = self.api_dispatcher.as_mut() {
            dispatcher.queue.finalize(call, result);
            self.settle_api_calls(now, client);
        }
    }
}

/// The client the Bind plugins get behind the dispatcher (upstream's `APICacher.BindPod`): a
/// binding is queued instead of made; everything else goes to the real client.
struct QueueingClient<'a> {
    inner: &'a mut dyn Client,
    dispatcher: &'a mut ApiDispatcher,
    assumed: &'a Arc<PodInfo>,
    /// Whether a binding was queued.
    queued: bool,
}

impl Client for QueueingClient<'_> {
    /// Queues the binding; the assumed pod stands for the bound one meanwhile. The real
    /// outcome reaches the binding cycle as a [`Completion`].
    fn bind(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
    ) -> Result<Object, ApiError> {
        let call = ApiCall::PodBinding(Arc::new(PodBindingCall {
            pod: PodRef {
                namespace: namespace.to_string(),
                name: name.to_string(),
                uid: uid.to_string(),
            },
            node: node.to_string(),
        }));
        // A skipped binding still reports its outcome, as a completion.
        let _ = self.dispatcher.queue.add(call, true);
        self.queued = true;
        Ok(Object::Pod(self.assumed.pod.clone()))
    }
    kubeplane_api::delegate_client!(inner: cache, clock, get, create, update, update_status,
        patch_pod_status, delete, evict, update_scale, record_event, explain, emit_record);
}

#[cfg(test)]
mod tests {
    use kubeplane_api::{Component, ObjectKey};
    use kubeplane_core::features::FeatureGates;
    use kubeplane_registry::testing::TestClient;

    use super::*;
    use crate::plugins::testing::{NodeBuilder, PodBuilder};
    use crate::queue::SchedulingQueue;
    use kubeplane_api::PodExt;

    fn scheduler(api_calls: Option<ApiCallDrain>) -> Scheduler {
        let setup = crate::config::resolve(None, &FeatureGates::default()).unwrap();
        let queue = SchedulingQueue::new(setup.queue);
        let mut s = Scheduler::new(
            setup.frameworks,
            queue,
            setup.percentage_of_nodes_to_score,
            1,
        );
        s.set_async_api_calls(api_calls);
        s
    }

    /// One node and one pending pod `p`, shown to the scheduler.
    fn cluster(sched: &mut Scheduler) -> TestClient {
        let mut client = TestClient::new(1);
        let node =
            NodeBuilder::new("n1").alloc(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]);
        client
            .create(Object::Node(Arc::new(node.obj().into())))
            .unwrap();
        let pod = PodBuilder::new("p").req(&[("cpu", "1")]).obj();
        client.create(Object::Pod(Arc::new(pod.into()))).unwrap();
        client.dispatch(&mut [sched]);
        client
    }

    fn stored_pod(client: &TestClient) -> Arc<kubeplane_api::StoredPod> {
        let obj = client
            .store
            .get(kubeplane_api::Kind::Pod, "default", "p")
            .unwrap();
        obj.as_pod().unwrap().clone()
    }

    fn node_name(client: &TestClient) -> Option<String> {
        stored_pod(client).node_name().map(str::to_string)
    }

    /// What the error path leaves behind: no assumed pod, the pod back in the queue, a
    /// `FailedScheduling` event worded as upstream's, and PodScheduled=False.
    fn assert_error_path(sched: &Scheduler, client: &TestClient, err: &ApiError, case: &str) {
        assert_eq!(node_name(client), None, "{case}: not bound");
        assert!(
            !sched.cache.is_assumed("uid-p"),
            "{case}: the assumed pod is forgotten"
        );
        let counts = sched.queue.pending_pods();
        assert_eq!(
            counts.active + counts.backoff,
            1,
            "{case}: the pod is requeued"
        );
        assert!(client.events_with_reason("Scheduled").is_empty(), "{case}");
        let failed = client.events_with_reason("FailedScheduling");
        let want = format!("running Bind plugin \"DefaultBinder\": {err}");
        assert_eq!(failed.len(), 1, "{case}");
        assert_eq!(failed[0].message(), want, "{case}");
        let status = stored_pod(client).status_k8s().unwrap();
        let cond = &status.conditions.unwrap()[0];
        assert_eq!(
            (
                cond.status.as_str(),
                cond.reason.as_deref(),
                cond.message.as_deref()
            ),
            ("False", Some("SchedulerError"), Some(want.as_str())),
            "{case}"
        );
        assert_eq!(
            (sched.metrics.scheduled, sched.metrics.errors),
            (0, 1),
            "{case}"
        );
    }

    /// A client whose `pods/binding` refuses every pod.
    struct RefusingBind<'a> {
        inner: &'a mut TestClient,
        error: ApiError,
    }

    impl Client for RefusingBind<'_> {
        fn bind(&mut self, _: &str, _: &str, _: &str, _: &str) -> Result<Object, ApiError> {
            Err(self.error.clone())
        }
        kubeplane_api::delegate_client!(inner: cache, clock, get, create, update,
            update_status, patch_pod_status, delete, evict, update_scale, record_event,
            explain, emit_record);
    }

    #[test]
    fn a_binding_the_api_server_refuses_takes_the_binding_cycles_error_path() {
        let key = ObjectKey::new(kubeplane_api::Kind::Pod, "default", "p");
        let errors = [
            ("conflict", ApiError::Conflict { key: key.clone() }),
            ("not found", ApiError::NotFound { key }),
        ];
        let modes = [
            ("synchronous calls", None),
            ("the dispatcher drained at once", Some(ApiCallDrain::AtOnce)),
        ];
        for (mode, api_calls) in modes {
            for (what, error) in &errors {
                let case = format!("{what} with {mode}");
                let mut sched = scheduler(api_calls);
                let mut client = cluster(&mut sched);
                let now = client.now;
                let mut refusing = RefusingBind {
                    inner: &mut client,
                    error: error.clone(),
                };
                sched.run(now, &mut refusing);
                assert!(sched.binding_cycles.is_empty(), "{case}: nothing waits");
                assert_error_path(&sched, &client, error, &case);
            }
        }
    }

    #[test]
    fn a_pod_update_that_makes_a_queued_status_patch_moot_drops_it() {
        let mut sched = scheduler(Some(ApiCallDrain::ByRuntime));
        let mut client = TestClient::new(1);
        let pod = PodBuilder::new("p").obj();
        client.create(Object::Pod(Arc::new(pod.into()))).unwrap();
        client.dispatch(&mut [&mut sched]);
        sched.run(client.now, &mut client);
        assert!(
            sched.api_dispatcher.as_ref().unwrap().queue.len() == 1,
            "a patch is queued"
        );
        let ts = client.clock().timestamp(client.now);
        client
            .patch_pod_status("default", "p", "uid-p", &mut |st| {
                st.conditions = Some(vec![k8s_openapi::api::core::v1::PodCondition {
                    type_: "PodScheduled".into(),
                    status: "False".into(),
                    reason: Some("Unschedulable".into()),
                    message: Some(crate::schedule_one::ERR_NO_NODES_AVAILABLE.into()),
                    last_transition_time: Some(ts.clone()),
                    ..Default::default()
                }]);
            })
            .unwrap();
        client.dispatch(&mut [&mut sched]);
        assert!(
            sched.pop_api_call().is_none(),
            "the update made the patch a no-op"
        );
    }

    #[test]
    fn a_runtime_may_run_a_queued_binding_later() {
        let mut sched = scheduler(Some(ApiCallDrain::ByRuntime));
        let mut client = cluster(&mut sched);
        let now = client.now;
        sched.run(now, &mut client);
        assert_eq!(node_name(&client), None, "the binding is only queued");
        assert!(
            sched.cache.is_assumed("uid-p"),
            "the pod stays assumed meanwhile"
        );
        assert!(client.events_with_reason("Scheduled").is_empty());
        let call = sched.pop_api_call().expect("the binding");
        assert_eq!(call.call.call_type(), ApiCallType::PodBinding);
        assert!(sched.pop_api_call().is_none(), "one call");
        let result = call.call.execute(&mut client);
        sched.finish_api_call(now, &mut client, call, result);
        assert_eq!(node_name(&client).as_deref(), Some("n1"));
        let scheduled = client.events_with_reason("Scheduled");
        assert_eq!(
            scheduled[0].message(),
            "Successfully assigned default/p to n1"
        );
        assert_eq!(sched.metrics.scheduled, 1);
        assert!(sched.binding_cycles.is_empty());
    }

    #[test]
    fn a_queued_binding_that_fails_later_takes_the_error_path() {
        let mut sched = scheduler(Some(ApiCallDrain::ByRuntime));
        let mut client = cluster(&mut sched);
        let now = client.now;
        sched.run(now, &mut client);
        let call = sched.pop_api_call().expect("the binding");
        let err = ApiError::NotFound {
            key: ObjectKey::new(kubeplane_api::Kind::Pod, "default", "p"),
        };
        sched.finish_api_call(now, &mut client, call, Err(err.clone()));
        assert!(
            !sched.cache.is_assumed("uid-p"),
            "the assumed pod is forgotten"
        );
        let patch = sched
            .pop_api_call()
            .expect("the status patch is queued too");
        assert_eq!(patch.call.call_type(), ApiCallType::PodStatusPatch);
        let result = patch.call.execute(&mut client);
        sched.finish_api_call(now, &mut client, patch, result);
        assert_error_path(&sched, &client, &err, "a binding that fails later");
    }
}

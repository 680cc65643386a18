//! Tests of the call queue's rules (merging, overwriting, skipping, one call per object in
//! flight) and of the calls run against the registry, with upstream's cases.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PodCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::StoredPod;
use kubeplane_api::{ApiError, Kind, Object};
use kubeplane_registry::testing::TestClient;

use super::*;
use crate::framework::NominatingMode;
use crate::plugins::testing::PodBuilder;

fn scheduled_false(reason: &str, message: &str) -> PodCondition {
    PodCondition {
        type_: "PodScheduled".into(),
        status: "False".into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        ..Default::default()
    }
}

fn time() -> Time {
    Time("2025-01-01T00:00:00Z".parse().unwrap())
}

fn patch(pod: &StoredPod, conditions: Vec<PodCondition>, nominating: NominatingMode) -> ApiCall {
    ApiCall::PodStatusPatch(Arc::new(PodStatusPatchCall::new(
        pod,
        conditions,
        nominating,
        time(),
    )))
}

fn binding(pod: &StoredPod, node: &str) -> ApiCall {
    ApiCall::PodBinding(Arc::new(PodBindingCall {
        pod: PodRef::of(pod),
        node: node.into(),
    }))
}

fn nominate(node: &str) -> NominatingMode {
    NominatingMode::Override(node.into())
}

fn pod(name: &str) -> StoredPod {
    PodBuilder::new(name).obj().into()
}

#[test]
fn a_newer_status_patch_is_merged_into_the_queued_one() {
    let p = pod("p");
    let mut q = CallQueue::default();
    let first = patch(
        &p,
        vec![scheduled_false("Unschedulable", "old")],
        nominate("n1"),
    );
    q.add(first, true).unwrap();
    let second = patch(
        &p,
        vec![scheduled_false("SchedulerError", "new")],
        NominatingMode::Noop,
    );
    q.add(second, false).unwrap();
    assert_eq!(q.len(), 1, "one call per object");
    let c = q.take_completion().expect("the older call is told");
    assert!(matches!(c.result, Err(CallError::Overwritten(_))));
    let call = q.pop().expect("the merged call");
    let ApiCall::PodStatusPatch(merged) = &call.call else {
        panic!("a status patch")
    };
    assert_eq!(
        merged.conditions,
        vec![scheduled_false("SchedulerError", "new")],
        "the newer condition of a type wins"
    );
    assert_eq!(
        merged.nominating,
        nominate("n1"),
        "a Noop takes the older nomination"
    );
    assert!(q.pop().is_none(), "nothing else is queued");
}

#[test]
fn merging_keeps_the_older_conditions_of_other_types() {
    let p = pod("p");
    let mut old = PodStatusPatchCall::new(
        &p,
        vec![
            scheduled_false("Unschedulable", "old"),
            PodCondition {
                type_: "DisruptionTarget".into(),
                status: "True".into(),
                ..Default::default()
            },
        ],
        NominatingMode::Noop,
        time(),
    );
    old.nominating = nominate("n1");
    let mut new = PodStatusPatchCall::new(
        &p,
        vec![scheduled_false("Unschedulable", "new")],
        nominate(""),
        time(),
    );
    new.merge(&old);
    let types: Vec<&str> = new.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["PodScheduled", "DisruptionTarget"]);
    assert_eq!(new.conditions[0].message.as_deref(), Some("new"));
    assert_eq!(
        new.nominating,
        nominate(""),
        "an Override of the newer call stays"
    );
}

#[test]
fn a_status_patch_that_changes_nothing_is_skipped() {
    let p: StoredPod = PodBuilder::new("p").nominated("n1").obj().into();
    let mut with_condition = p.clone();
    with_condition
        .update_status(|s| s.conditions = Some(vec![scheduled_false("Unschedulable", "msg")]));
    let cases = [
        (
            "the same condition and no nomination",
            &with_condition,
            NominatingMode::Noop,
            true,
        ),
        (
            "the same condition and the same nomination",
            &with_condition,
            nominate("n1"),
            true,
        ),
        (
            "the same condition and another nomination",
            &with_condition,
            nominate("n2"),
            false,
        ),
        ("no condition yet", &p, NominatingMode::Noop, false),
    ];
    for (name, pod, nominating, skipped) in cases {
        let mut q = CallQueue::default();
        let r = q.add(
            patch(
                pod,
                vec![scheduled_false("Unschedulable", "msg")],
                nominating,
            ),
            false,
        );
        assert_eq!(r.is_err(), skipped, "{name}");
        assert_eq!(q.is_empty(), skipped, "{name}");
    }
}

#[test]
fn a_binding_overwrites_a_queued_status_patch_and_keeps_its_place() {
    let (a, b) = (pod("a"), pod("b"));
    let mut q = CallQueue::default();
    q.add(
        patch(
            &a,
            vec![scheduled_false("Unschedulable", "m")],
            nominate(""),
        ),
        true,
    )
    .unwrap();
    q.add(
        patch(
            &b,
            vec![scheduled_false("Unschedulable", "m")],
            nominate(""),
        ),
        false,
    )
    .unwrap();
    q.add(binding(&a, "n1"), true).unwrap();
    let told = q.take_completion().expect("the patch is told");
    assert_eq!(told.call_type, ApiCallType::PodStatusPatch);
    assert!(matches!(told.result, Err(CallError::Overwritten(_))));
    let first = q.pop().unwrap();
    assert_eq!(
        first.call,
        binding(&a, "n1"),
        "the binding takes the patch's place"
    );
    let second = q.pop().unwrap();
    assert_eq!(second.call.uid(), "uid-b");
}

#[test]
fn a_status_patch_is_skipped_while_a_binding_is_queued() {
    let p = pod("p");
    let mut q = CallQueue::default();
    q.add(binding(&p, "n1"), true).unwrap();
    let r = q.add(
        patch(
            &p,
            vec![scheduled_false("Unschedulable", "m")],
            nominate(""),
        ),
        true,
    );
    assert!(matches!(r, Err(CallError::Skipped(_))));
    let told = q.take_completion().expect("the skipped patch is told");
    assert_eq!(told.call_type, ApiCallType::PodStatusPatch);
    assert_eq!(
        q.pop().unwrap().call,
        binding(&p, "n1"),
        "the binding stays"
    );
}

#[test]
fn a_call_for_an_object_whose_call_runs_waits_until_it_is_finalized() {
    let (p, other) = (pod("p"), pod("other"));
    let mut q = CallQueue::default();
    q.add(
        patch(
            &p,
            vec![scheduled_false("Unschedulable", "m")],
            nominate(""),
        ),
        true,
    )
    .unwrap();
    let running = q.pop().unwrap();
    q.add(binding(&p, "n1"), true).unwrap();
    assert!(
        q.take_completion().is_none(),
        "a running call is not overwritten"
    );
    q.add(binding(&other, "n2"), false).unwrap();
    assert_eq!(
        q.pop().unwrap().call.uid(),
        "uid-other",
        "p's binding waits"
    );
    assert!(q.pop().is_none(), "one call per object in flight");
    q.finalize(running, Ok(()));
    let done = q.take_completion().unwrap();
    assert_eq!(
        (done.call_type, done.result),
        (ApiCallType::PodStatusPatch, Ok(()))
    );
    assert_eq!(
        q.pop().unwrap().call,
        binding(&p, "n1"),
        "queued after the patch ran"
    );
}

#[test]
fn a_running_call_merged_into_a_newer_one_is_told_once() {
    let p = pod("p");
    let mut q = CallQueue::default();
    q.add(
        patch(
            &p,
            vec![scheduled_false("Unschedulable", "1")],
            nominate(""),
        ),
        true,
    )
    .unwrap();
    let running = q.pop().unwrap();
    q.add(
        patch(
            &p,
            vec![scheduled_false("Unschedulable", "2")],
            nominate(""),
        ),
        false,
    )
    .unwrap();
    let told = q.take_completion().unwrap();
    assert!(matches!(told.result, Err(CallError::Overwritten(_))));
    q.finalize(
        running,
        Err(ApiError::Internal {
            message: "x".into(),
        }),
    );
    assert!(
        q.take_completion().is_none(),
        "the result of an overwritten call is dropped"
    );
    let next = q.pop().expect("the newer patch runs after the running one");
    let ApiCall::PodStatusPatch(c) = &next.call else {
        panic!("a status patch")
    };
    assert_eq!(c.conditions[0].message.as_deref(), Some("2"));
}

#[test]
fn syncing_with_a_newer_pod_drops_a_patch_that_has_become_a_no_op() {
    let p = pod("p");
    let mut q = CallQueue::default();
    q.add(
        patch(
            &p,
            vec![scheduled_false("Unschedulable", "m")],
            nominate("n1"),
        ),
        true,
    )
    .unwrap();
    let mut newer = p.clone();
    newer.update_status(|s| s.nominated_node_name = Some("n1".into()));
    let synced = q
        .sync_object(&newer)
        .expect("the condition is still missing");
    let cond = &synced.status_k8s().unwrap().conditions.unwrap()[0];
    assert_eq!(
        cond.reason.as_deref(),
        Some("Unschedulable"),
        "the pod shows the patch"
    );
    assert_eq!(q.len(), 1);
    let mut newest = synced.clone();
    newest.update_status(|s| s.conditions = Some(vec![scheduled_false("Unschedulable", "m")]));
    assert!(q.sync_object(&newest).is_none(), "nothing left to change");
    assert!(q.is_empty(), "the no-op call is dropped");
    let told = q.take_completion().unwrap();
    assert!(matches!(told.result, Err(CallError::Skipped(_))));
}

#[test]
fn calls_run_against_the_api_server() {
    let mut client = TestClient::new(1);
    let created = client.create(Object::Pod(Arc::new(pod("p")))).unwrap();
    let stored = created.as_pod().unwrap().clone();
    let mut d = ApiDispatcher::new(ApiCallDrain::AtOnce);
    d.queue
        .add(
            patch(
                &stored,
                vec![scheduled_false("Unschedulable", "m")],
                nominate("n1"),
            ),
            false,
        )
        .unwrap();
    d.queue.add(binding(&pod("gone"), "n1"), true).unwrap();
    d.run_pending(&mut client);
    let p = client.store.get(Kind::Pod, "default", "p").unwrap();
    let status = p.as_pod().unwrap().status_k8s().unwrap();
    assert_eq!(status.nominated_node_name.as_deref(), Some("n1"));
    let cond = &status.conditions.unwrap()[0];
    assert_eq!(
        cond.last_transition_time,
        Some(time()),
        "the status changed now"
    );
    let done = d.queue.take_completion().unwrap();
    assert!(
        matches!(done.result, Err(CallError::Api(ref e)) if e.is_not_found()),
        "binding a missing pod fails: {done:?}"
    );
    assert!(d.queue.is_idle());
}

#[test]
fn a_queued_call_can_run_on_another_thread() {
    fn sendable<T: Send + 'static>() {}
    sendable::<InFlightCall>();
    sendable::<Completion>();
}

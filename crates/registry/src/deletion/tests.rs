//! Table tests of the deletion rules: each case is a stored object, the options of a delete,
//! and what the delete must do.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, NamespaceSpec, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::StoredDeployment;

use super::*;
use k8s_openapi::api::core::v1::Pod;

fn clock() -> Clock {
    Clock::new("2025-01-01T00:00:00Z".parse().unwrap())
}

fn meta(finalizers: &[&str]) -> ObjectMeta {
    ObjectMeta {
        name: Some("x".into()),
        namespace: Some("default".into()),
        uid: Some("u1".into()),
        resource_version: Some("7".into()),
        finalizers: (!finalizers.is_empty())
            .then(|| finalizers.iter().map(|f| f.to_string()).collect()),
        ..Default::default()
    }
}

fn deployment(finalizers: &[&str]) -> Object {
    let mut m = meta(finalizers);
    m.generation = Some(3);
    Object::Deployment(Arc::new(StoredDeployment::from_k8s(Deployment {
        metadata: m,
        ..Default::default()
    })))
}

fn pod(node: Option<&str>, finalizers: &[&str]) -> Object {
    Object::Pod(Arc::new(
        Pod {
            metadata: meta(finalizers),
            spec: Some(PodSpec {
                node_name: node.map(str::to_string),
                termination_grace_period_seconds: Some(30),
                ..Default::default()
            }),
            status: None,
        }
        .into(),
    ))
}

/// The object marked as being deleted at `at` (seconds) with this grace period.
fn deleting(mut obj: Object, at: i64, grace: i64) -> Object {
    let m = obj.meta_mut();
    m.deletion_timestamp = Some(clock().timestamp(SimTime::from_secs(at)));
    m.deletion_grace_period_seconds = Some(grace);
    obj
}

fn opts(policy: Option<PropagationPolicy>, grace: Option<i64>) -> DeleteOptions {
    DeleteOptions {
        propagation_policy: policy,
        grace_period_secs: grace,
        ..DeleteOptions::default()
    }
}

/// What a plan leaves, in a form a table can state.
#[derive(Debug, PartialEq)]
enum Outcome {
    Removed,
    Unchanged,
    /// deletionTimestamp (seconds), grace period, finalizers, generation.
    Marked(i64, i64, Vec<String>, Option<i64>),
}

fn outcome(plan: DeletePlan) -> Outcome {
    match plan {
        DeletePlan::Remove => Outcome::Removed,
        DeletePlan::Unchanged => Outcome::Unchanged,
        DeletePlan::Mark(o) => {
            let m = o.meta();
            let at = clock().instant(m.deletion_timestamp.as_ref().unwrap());
            Outcome::Marked(
                at.0 / 1_000_000_000,
                m.deletion_grace_period_seconds.unwrap(),
                m.finalizers.clone().unwrap_or_default(),
                m.generation,
            )
        }
    }
}

fn marked(at: i64, grace: i64, finalizers: &[&str], generation: Option<i64>) -> Outcome {
    let f = finalizers.iter().map(|f| f.to_string()).collect();
    Outcome::Marked(at, grace, f, generation)
}

const ORPHAN: Option<PropagationPolicy> = Some(PropagationPolicy::Orphan);
const FOREGROUND: Option<PropagationPolicy> = Some(PropagationPolicy::Foreground);
const BACKGROUND: Option<PropagationPolicy> = Some(PropagationPolicy::Background);

#[test]
fn deletes_follow_upstreams_rules() {
    let cases: Vec<(&str, Object, DeleteOptions, Outcome)> = vec![
        (
            "an object without finalizers deleted without a policy goes at once",
            deployment(&[]),
            opts(None, None),
            Outcome::Removed,
        ),
        (
            "a background delete of an object without finalizers goes at once",
            deployment(&[]),
            opts(BACKGROUND, None),
            Outcome::Removed,
        ),
        (
            "a foreground delete marks the object with foregroundDeletion and bumps its generation",
            deployment(&[]),
            opts(FOREGROUND, None),
            marked(10, 0, &["foregroundDeletion"], Some(4)),
        ),
        (
            "an orphan delete marks the object with the orphan finalizer",
            deployment(&[]),
            opts(ORPHAN, None),
            marked(10, 0, &["orphan"], Some(4)),
        ),
        (
            "an object with another party's finalizer is marked and keeps it",
            deployment(&["example.com/cleanup"]),
            opts(None, None),
            marked(10, 0, &["example.com/cleanup"], Some(4)),
        ),
        (
            "a foreground delete adds its finalizer after another party's",
            deployment(&["example.com/cleanup"]),
            opts(FOREGROUND, None),
            marked(10, 0, &["example.com/cleanup", "foregroundDeletion"], Some(4)),
        ),
        (
            "without a policy, the orphan finalizer already there stays",
            deployment(&["orphan"]),
            opts(None, None),
            marked(10, 0, &["orphan"], Some(4)),
        ),
        (
            "a background delete removes the orphan finalizer and so the object",
            deployment(&["orphan"]),
            opts(BACKGROUND, None),
            Outcome::Removed,
        ),
        (
            "an orphan delete of an object deleted in the foreground switches the finalizer and keeps the earlier timestamp",
            deleting(deployment(&["foregroundDeletion"]), 4, 0),
            opts(ORPHAN, None),
            marked(4, 0, &["orphan"], Some(3)),
        ),
        (
            "a second foreground delete changes nothing",
            deleting(deployment(&["foregroundDeletion"]), 4, 0),
            opts(FOREGROUND, None),
            Outcome::Unchanged,
        ),
        (
            "a plain delete of an object being deleted with another party's finalizer changes nothing",
            deleting(deployment(&["example.com/cleanup"]), 4, 0),
            opts(None, None),
            Outcome::Unchanged,
        ),
        (
            "a background delete of an object being deleted in the foreground removes it",
            deleting(deployment(&["foregroundDeletion"]), 4, 0),
            opts(BACKGROUND, None),
            Outcome::Removed,
        ),
        (
            "an unbound pod goes at once",
            pod(None, &[]),
            opts(None, None),
            Outcome::Removed,
        ),
        (
            "a bound pod terminates for its grace period",
            pod(Some("n1"), &[]),
            opts(None, None),
            marked(40, 30, &[], None),
        ),
        (
            "a bound pod deleted in the foreground terminates and gets the finalizer",
            pod(Some("n1"), &[]),
            opts(FOREGROUND, None),
            marked(40, 30, &["foregroundDeletion"], None),
        ),
        (
            "a terminating pod deleted again with a longer period changes nothing",
            deleting(pod(Some("n1"), &[]), 34, 30),
            opts(None, Some(60)),
            Outcome::Unchanged,
        ),
        (
            "a terminating pod's finalizers cannot be changed by a delete",
            deleting(pod(Some("n1"), &[]), 34, 30),
            opts(ORPHAN, None),
            Outcome::Unchanged,
        ),
        (
            "a shorter period moves the deadline by the difference",
            deleting(pod(Some("n1"), &[]), 34, 30),
            opts(None, Some(10)),
            marked(14, 10, &[], None),
        ),
        (
            "a terminating pod deleted with grace 0 goes",
            deleting(pod(Some("n1"), &[]), 34, 30),
            opts(None, Some(0)),
            Outcome::Removed,
        ),
        (
            "a pod with a finalizer deleted with grace 0 stays with grace 0",
            deleting(pod(Some("n1"), &["example.com/x"]), 34, 30),
            opts(None, Some(0)),
            marked(4, 0, &["example.com/x"], None),
        ),
        (
            "an unbound pod with a finalizer is marked, not removed",
            pod(None, &["example.com/x"]),
            opts(None, None),
            marked(10, 0, &["example.com/x"], None),
        ),
    ];
    for (name, stored, o, want) in cases {
        let got = plan_delete(&stored, &o, SimTime::from_secs(10), clock()).unwrap();
        assert_eq!(outcome(got), want, "{name}");
    }
}

#[test]
fn failed_preconditions_are_conflicts() {
    let d = deployment(&[]);
    for (name, o) in [
        (
            "another uid",
            DeleteOptions {
                precondition_uid: Some("u2".into()),
                ..DeleteOptions::default()
            },
        ),
        (
            "another resourceVersion",
            DeleteOptions {
                precondition_resource_version: Some("6".into()),
                ..DeleteOptions::default()
            },
        ),
    ] {
        let err = plan_delete(&d, &o, SimTime::ZERO, clock()).unwrap_err();
        assert!(err.is_conflict(), "{name}");
    }
}

fn namespace(spec_finalizers: Option<&[&str]>) -> Object {
    let mut m = meta(&[]);
    m.namespace = None;
    Object::Namespace(Arc::new(Namespace {
        metadata: m,
        spec: spec_finalizers.map(|f| NamespaceSpec {
            finalizers: Some(f.iter().map(|s| s.to_string()).collect()),
        }),
        status: None,
    }))
}

#[test]
fn a_namespaces_first_delete_starts_termination_and_later_ones_wait_for_its_finalizers() {
    let ns = namespace(None);
    let DeletePlan::Mark(first) =
        plan_delete(&ns, &opts(None, None), SimTime::from_secs(5), clock()).unwrap()
    else {
        panic!("the namespace must stay")
    };
    let Object::Namespace(n) = &first else {
        unreachable!()
    };
    assert_eq!(
        n.status.as_ref().unwrap().phase.as_deref(),
        Some("Terminating")
    );
    assert_eq!(
        n.spec.as_ref().unwrap().finalizers,
        Some(vec!["kubernetes".to_string()])
    );
    assert_eq!(n.metadata.finalizers, None);
    assert_eq!(n.metadata.deletion_grace_period_seconds, None);
    // Again: nothing changes while the namespace controller's finalizer is there.
    let again = plan_delete(&first, &opts(None, None), SimTime::from_secs(6), clock()).unwrap();
    assert_eq!(again, DeletePlan::Unchanged);
    // A foreground delete of a namespace carries the finalizer.
    let fg = plan_delete(&ns, &opts(FOREGROUND, None), SimTime::ZERO, clock()).unwrap();
    let DeletePlan::Mark(fg) = fg else { panic!() };
    assert_eq!(
        fg.meta().finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );
    // Finalized (spec.finalizers empty) and deleted again: it goes.
    let mut finalized = first.clone();
    let Object::Namespace(n) = &mut finalized else {
        unreachable!()
    };
    Arc::make_mut(n).spec = Some(NamespaceSpec {
        finalizers: Some(vec![]),
    });
    let last = plan_delete(
        &finalized,
        &opts(None, None),
        SimTime::from_secs(7),
        clock(),
    );
    assert_eq!(last.unwrap(), DeletePlan::Remove);
}

#[test]
fn updates_of_deleting_objects_follow_upstreams_rules() {
    let fg = deleting(deployment(&["foregroundDeletion"]), 4, 0);
    let cases: Vec<(&str, Object, Object, Result<bool, ()>)> = vec![
        (
            "removing the last finalizer of a deleting object removes it",
            fg.clone(),
            deleting(deployment(&[]), 4, 0),
            Ok(true),
        ),
        (
            "removing one of two finalizers keeps it",
            deleting(deployment(&["foregroundDeletion", "a.io/b"]), 4, 0),
            deleting(deployment(&["a.io/b"]), 4, 0),
            Ok(false),
        ),
        (
            "adding a finalizer to a deleting object is forbidden",
            fg.clone(),
            deleting(deployment(&["foregroundDeletion", "a.io/b"]), 4, 0),
            Err(()),
        ),
        (
            "adding a finalizer to an object not being deleted is allowed",
            deployment(&[]),
            deployment(&["a.io/b"]),
            Ok(false),
        ),
        (
            "an update of a pod in its grace period does not remove it",
            deleting(pod(Some("n1"), &[]), 34, 30),
            deleting(pod(Some("n1"), &[]), 34, 30),
            Ok(false),
        ),
        (
            "a terminating namespace keeps going while spec.finalizers is not empty",
            deleting(namespace(Some(&["kubernetes"])), 4, 0),
            deleting(namespace(Some(&["kubernetes"])), 4, 0),
            Ok(false),
        ),
        (
            "a terminating namespace whose kubernetes finalizer is removed goes",
            deleting(namespace(Some(&["kubernetes"])), 4, 0),
            deleting(namespace(Some(&[])), 4, 0),
            Ok(true),
        ),
    ];
    for (name, old, new, want) in cases {
        let got = check_update(&old, &new)
            .map(|()| should_delete_during_update(&old, &new))
            .map_err(|_| ());
        assert_eq!(got, want, "{name}");
    }
    let err = check_update(
        &fg,
        &deleting(deployment(&["b", "a", "foregroundDeletion"]), 4, 0),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Deployment default/x is invalid: metadata.finalizers: Forbidden: no new finalizers can \
         be added if the object is being deleted, found new finalizers []string{\"a\", \"b\"}"
    );
}

//! The API test suite: what every implementation of [`Client`] must do, as kube-apiserver does
//! it. The same cases run against the in-memory registry (`kubeplane-registry`'s tests) and,
//! as they come, against the HTTP server, etcd storage and a live cluster.
//!
//! Each case gets a fresh, empty client from the factory and panics with the case's name when
//! the implementation disagrees.

use crate::PodExt;
use crate::StoredPod;
use std::sync::Arc;

use crate::StoredDeployment;
use crate::StoredReplicaSet;
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStatus, ReplicaSet, ReplicaSetSpec,
};
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodSpec, PodStatus};
use k8s_openapi::api::policy::v1::{
    PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::{ApiError, Client, DeleteOptions, Kind, Object, ObjectKey, PropagationPolicy};

/// Makes a fresh client over an empty cluster.
pub type Factory<'a> = &'a dyn Fn() -> Box<dyn Client>;

/// One case of the suite: its name and its body.
pub type Case = (&'static str, fn(Factory));

/// Every case of the suite, by name.
pub const CASES: &[Case] = &[
    (
        "create fills in uid, resourceVersion and creationTimestamp",
        create_fills_in_metadata,
    ),
    (
        "a second create of a name is AlreadyExists",
        create_twice_is_already_exists,
    ),
    (
        "get reads the server, NotFound when absent",
        get_reads_the_server,
    ),
    (
        "an update with a stale resourceVersion is a Conflict",
        stale_update_conflicts,
    ),
    (
        "a main-resource update keeps the stored status",
        update_keeps_status,
    ),
    ("a status update keeps the spec", update_status_keeps_spec),
    (
        "a Deployment's spec change bumps its generation, its status does not",
        generation_follows_the_spec,
    ),
    (
        "a pod status patch needs the pod's UID",
        patch_pod_status_checks_the_uid,
    ),
    (
        "delete preconditions on UID and resourceVersion",
        delete_preconditions,
    ),
    (
        "a bound pod is deleted gracefully, an unbound one at once",
        graceful_delete,
    ),
    (
        "binding sets the node once, for the pod with that UID",
        binding,
    ),
    (
        "an eviction spends the pod's disruption budget, or is TooManyRequests",
        eviction_respects_the_budget,
    ),
    (
        "an eviction of a pod covered by two budgets is refused",
        eviction_with_two_budgets,
    ),
    (
        "a pending pod is evicted without a budget check",
        eviction_of_a_pending_pod,
    ),
    (
        "an object with a finalizer stays marked until an update removes the last one",
        finalizers_hold_a_deleted_object,
    ),
    (
        "foreground and orphan deletes add their finalizer, a background one switches it off",
        propagation_policies,
    ),
    (
        "an update may not add a finalizer to, or clear the deletionTimestamp of, a deleting object",
        deleting_objects_take_no_new_finalizers,
    ),
    (
        "a deleted Namespace is Terminating and refuses new content",
        namespace_termination,
    ),
    (
        "the scale subresource writes only spec.replicas, as a spec change",
        scale_writes_only_the_replicas,
    ),
    (
        "a scale update with a stale resourceVersion is a Conflict",
        scale_precondition,
    ),
    (
        "a built-in kind kubeplane only stores is kept with plain semantics",
        stored_only_kinds_have_plain_semantics,
    ),
];

/// Runs every case against clients from `make`.
pub fn run_all(make: Factory) {
    for (name, case) in CASES {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(make)));
        if let Err(e) = result {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("API suite case \"{name}\" failed: {msg}");
        }
    }
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        ..Default::default()
    }
}

fn pod(name: &str, node: Option<&str>) -> Object {
    Object::Pod(Arc::new(
        Pod {
            metadata: meta(name),
            spec: Some(PodSpec {
                node_name: node.map(str::to_string),
                containers: vec![k8s_openapi::api::core::v1::Container {
                    name: "c".into(),
                    image: Some("nginx".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
        .into(),
    ))
}

fn with_phase(obj: &Object, phase: &str) -> Object {
    let mut p = StoredPod::clone(obj.as_pod().expect("a pod"));
    p.set_status(Some(PodStatus {
        phase: Some(phase.into()),
        ..Default::default()
    }));
    Object::Pod(Arc::new(p))
}

fn phase(obj: &Object) -> Option<String> {
    obj.as_pod()?.phase().map(String::from)
}

fn rv(obj: &Object) -> u64 {
    obj.resource_version()
        .parse()
        .expect("a numeric resourceVersion")
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Kind::Pod, "default", name)
}

fn create_fills_in_metadata(make: Factory) {
    let mut c = make();
    let created = c.create(pod("a", None)).unwrap();
    assert!(!created.uid().is_empty());
    assert!(rv(&created) > 0);
    assert!(created.meta().creation_timestamp.is_some());
}

fn create_twice_is_already_exists(make: Factory) {
    let mut c = make();
    c.create(pod("a", None)).unwrap();
    let err = c.create(pod("a", None)).unwrap_err();
    assert!(matches!(err, ApiError::AlreadyExists { .. }), "{err}");
    assert_eq!(err.code(), 409);
}

fn get_reads_the_server(make: Factory) {
    let mut c = make();
    let created = c.create(pod("a", None)).unwrap();
    assert_eq!(c.get(&key("a")).unwrap().uid(), created.uid());
    assert!(c.get(&key("b")).unwrap_err().is_not_found());
}

fn stale_update_conflicts(make: Factory) {
    let mut c = make();
    let created = c.create(pod("a", None)).unwrap();
    let updated = c.update(created.clone()).unwrap();
    assert!(rv(&updated) > rv(&created));
    assert!(c.update(created).unwrap_err().is_conflict());
}

fn update_keeps_status(make: Factory) {
    let mut c = make();
    let created = c.create(pod("a", Some("n1"))).unwrap();
    c.update_status(with_phase(&created, "Running")).unwrap();
    let mut labelled = pod("a", Some("n1"));
    labelled.set_labels(Some([("k".to_string(), "v".to_string())].into()));
    let after = c.update(labelled).unwrap();
    assert_eq!(phase(&after).as_deref(), Some("Running"));
    assert!(after.labels().is_some());
}

fn update_status_keeps_spec(make: Factory) {
    let mut c = make();
    let created = c.create(pod("a", None)).unwrap();
    let mut changed = StoredPod::clone(with_phase(&created, "Running").as_pod().unwrap());
    changed.set_node_name(Some("n9".into()));
    let after = c.update_status(Object::Pod(Arc::new(changed))).unwrap();
    assert_eq!(phase(&after).as_deref(), Some("Running"));
    let node = after.as_pod().unwrap().node_name().map(str::to_string);
    assert_eq!(node, None);
}

fn generation_follows_the_spec(make: Factory) {
    let mut c = make();
    let d = |replicas: i32| {
        Object::Deployment(Arc::new(StoredDeployment::from_k8s(Deployment {
            metadata: meta("web"),
            spec: Some(web_deployment_spec(replicas)),
            ..Default::default()
        })))
    };
    let generation = |o: &Object| o.meta().generation;
    let created = c.create(d(1)).unwrap();
    assert_eq!(generation(&created), Some(1));
    let mut with_status = StoredDeployment::clone(match &created {
        Object::Deployment(d) => d,
        _ => unreachable!(),
    });
    with_status.status = Some(DeploymentStatus {
        replicas: Some(1),
        ..Default::default()
    });
    let after_status = c
        .update_status(Object::Deployment(Arc::new(with_status)))
        .unwrap();
    assert_eq!(generation(&after_status), Some(1));
    let scaled = c.update(d(3)).unwrap();
    assert_eq!(generation(&scaled), Some(2));
}

fn patch_pod_status_checks_the_uid(make: Factory) {
    let mut c = make();
    let created = c.create(pod("a", None)).unwrap();
    let uid = created.uid().to_string();
    let patched = c
        .patch_pod_status("default", "a", &uid, &mut |s| {
            s.phase = Some("Failed".into())
        })
        .unwrap();
    assert_eq!(phase(&patched).as_deref(), Some("Failed"));
    // A patch that changes nothing is not sent (upstream's PatchPodStatus returns early), so
    // the refused one carries a change.
    let err = c
        .patch_pod_status("default", "a", "another-uid", &mut |s| {
            s.phase = Some("Succeeded".into())
        })
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
}

fn delete_preconditions(make: Factory) {
    let mut c = make();
    let created = c.create(pod("a", None)).unwrap();
    let wrong_uid = DeleteOptions {
        precondition_uid: Some("another-uid".into()),
        ..DeleteOptions::default()
    };
    assert!(c.delete(&key("a"), wrong_uid).unwrap_err().is_conflict());
    let current = c.update(created.clone()).unwrap();
    let stale = DeleteOptions::exactly(&created);
    assert!(c.delete(&key("a"), stale).unwrap_err().is_conflict());
    assert!(c
        .delete(&key("a"), DeleteOptions::exactly(&current))
        .unwrap()
        .is_none());
    assert!(c.get(&key("a")).unwrap_err().is_not_found());
}

fn graceful_delete(make: Factory) {
    let mut c = make();
    c.create(pod("unbound", None)).unwrap();
    assert!(c
        .delete(&key("unbound"), DeleteOptions::default())
        .unwrap()
        .is_none());
    c.create(pod("bound", Some("n1"))).unwrap();
    let terminating = c
        .delete(&key("bound"), DeleteOptions::default())
        .unwrap()
        .expect("a bound pod stays until its grace period is over");
    assert!(terminating.meta().deletion_timestamp.is_some());
    assert_eq!(terminating.meta().deletion_grace_period_seconds, Some(30));
    assert!(c
        .delete(&key("bound"), DeleteOptions::now())
        .unwrap()
        .is_none());
}

fn binding(make: Factory) {
    let mut c = make();
    let created = c.create(pod("a", None)).unwrap();
    let err = c.bind("default", "a", "another-uid", "n1").unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let bound = c.bind("default", "a", created.uid(), "n1").unwrap();
    let node = |o: &Object| o.as_pod().unwrap().node_name().map(str::to_string);
    assert_eq!(node(&bound).as_deref(), Some("n1"));
    // The binding's answer is a Status on a real server: the condition is read back.
    let stored = c.get(&key("a")).unwrap();
    assert_eq!(node(&stored).as_deref(), Some("n1"));
    let scheduled = stored
        .as_pod()
        .unwrap()
        .status()
        .and_then(|s| s.condition_status("PodScheduled"))
        .map(String::from);
    assert_eq!(scheduled.as_deref(), Some("True"));
    assert!(c
        .bind("default", "a", created.uid(), "n2")
        .unwrap_err()
        .is_conflict());
}

/// A running, ready pod labelled `app=web`, bound to n1.
fn ready_web_pod(c: &mut dyn Client, name: &str) -> Object {
    let mut p = pod(name, Some("n1"));
    p.set_labels(Some([("app".to_string(), "web".to_string())].into()));
    let created = c.create(p).unwrap();
    let mut running = StoredPod::clone(created.as_pod().unwrap());
    running.set_status(Some(PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        }]),
        ..Default::default()
    }));
    c.update_status(Object::Pod(Arc::new(running))).unwrap()
}

/// A budget over `app=web` whose status allows `allowed` disruptions.
fn web_budget(c: &mut dyn Client, name: &str, allowed: i32) -> Object {
    let created = c
        .create(Object::PodDisruptionBudget(Arc::new(PodDisruptionBudget {
            metadata: meta(name),
            spec: Some(PodDisruptionBudgetSpec {
                selector: Some(LabelSelector {
                    match_labels: Some([("app".to_string(), "web".to_string())].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })))
        .unwrap();
    let mut pdb = match &created {
        Object::PodDisruptionBudget(p) => PodDisruptionBudget::clone(p),
        _ => unreachable!(),
    };
    pdb.status = Some(PodDisruptionBudgetStatus {
        current_healthy: 2,
        desired_healthy: 2 - allowed,
        disruptions_allowed: allowed,
        expected_pods: 2,
        observed_generation: pdb.metadata.generation,
        ..Default::default()
    });
    c.update_status(Object::PodDisruptionBudget(Arc::new(pdb)))
        .unwrap()
}

fn allowed(c: &mut dyn Client, name: &str) -> i32 {
    match c
        .get(&ObjectKey::new(Kind::PodDisruptionBudget, "default", name))
        .unwrap()
    {
        Object::PodDisruptionBudget(p) => p.status.as_ref().unwrap().disruptions_allowed,
        _ => unreachable!(),
    }
}

fn eviction_respects_the_budget(make: Factory) {
    let mut c = make();
    ready_web_pod(&mut *c, "a");
    ready_web_pod(&mut *c, "b");
    web_budget(&mut *c, "web", 1);
    c.evict("default", "a", DeleteOptions::default()).unwrap();
    assert_eq!(allowed(&mut *c, "web"), 0);
    let gone = c
        .get(&key("a"))
        .map(|p| p.meta().deletion_timestamp.is_some());
    assert!(
        gone.is_err() || gone == Ok(true),
        "the evicted pod is deleted"
    );
    let err = c
        .evict("default", "b", DeleteOptions::default())
        .unwrap_err();
    assert!(matches!(err, ApiError::TooManyRequests { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    let b = c.get(&key("b")).unwrap();
    assert!(
        b.meta().deletion_timestamp.is_none(),
        "a blocked eviction deletes nothing"
    );
}

fn eviction_with_two_budgets(make: Factory) {
    let mut c = make();
    ready_web_pod(&mut *c, "a");
    web_budget(&mut *c, "one", 1);
    web_budget(&mut *c, "two", 1);
    let err = c
        .evict("default", "a", DeleteOptions::default())
        .unwrap_err();
    assert_eq!(err.code(), 500, "{err}");
    assert_eq!(allowed(&mut *c, "one"), 1);
}

fn eviction_of_a_pending_pod(make: Factory) {
    let mut c = make();
    let mut p = pod("a", None);
    p.set_labels(Some([("app".to_string(), "web".to_string())].into()));
    let created = c.create(p).unwrap();
    let pending = with_phase(&created, "Pending");
    c.update_status(pending).unwrap();
    web_budget(&mut *c, "web", 0);
    c.evict("default", "a", DeleteOptions::default()).unwrap();
    assert!(c.get(&key("a")).unwrap_err().is_not_found());
    assert!(c
        .evict("default", "a", DeleteOptions::default())
        .unwrap_err()
        .is_not_found());
}

fn deployment(name: &str, finalizers: &[&str]) -> Object {
    let mut m = meta(name);
    m.finalizers =
        (!finalizers.is_empty()).then(|| finalizers.iter().map(|f| f.to_string()).collect());
    Object::Deployment(Arc::new(StoredDeployment::from_k8s(Deployment {
        metadata: m,
        spec: Some(web_deployment_spec(1)),
        ..Default::default()
    })))
}

fn deployment_key(name: &str) -> ObjectKey {
    ObjectKey::new(Kind::Deployment, "default", name)
}

fn finalizers_of(obj: &Object) -> Vec<String> {
    obj.meta().finalizers.clone().unwrap_or_default()
}

fn with_finalizers(obj: &Object, finalizers: &[&str]) -> Object {
    let mut obj = obj.clone();
    obj.meta_mut().finalizers =
        (!finalizers.is_empty()).then(|| finalizers.iter().map(|f| f.to_string()).collect());
    obj
}

fn policy(p: PropagationPolicy) -> DeleteOptions {
    DeleteOptions {
        propagation_policy: Some(p),
        ..DeleteOptions::default()
    }
}

fn finalizers_hold_a_deleted_object(make: Factory) {
    let mut c = make();
    c.create(deployment("web", &["example.com/a", "example.com/b"]))
        .unwrap();
    let marked = c
        .delete(&deployment_key("web"), DeleteOptions::default())
        .unwrap()
        .expect("an object with finalizers is not removed");
    assert!(marked.meta().deletion_timestamp.is_some());
    assert_eq!(marked.meta().deletion_grace_period_seconds, Some(0));
    // Deleting it again changes nothing.
    let again = c
        .delete(&deployment_key("web"), DeleteOptions::default())
        .unwrap()
        .expect("still there");
    assert_eq!(again.resource_version(), marked.resource_version());
    let one_left = c
        .update(with_finalizers(&marked, &["example.com/b"]))
        .unwrap();
    assert_eq!(finalizers_of(&one_left), ["example.com/b"]);
    assert!(c.get(&deployment_key("web")).is_ok());
    c.update(with_finalizers(&one_left, &[])).unwrap();
    assert!(c.get(&deployment_key("web")).unwrap_err().is_not_found());
}

fn propagation_policies(make: Factory) {
    let mut c = make();
    c.create(deployment("web", &[])).unwrap();
    let fg = c
        .delete(
            &deployment_key("web"),
            policy(PropagationPolicy::Foreground),
        )
        .unwrap()
        .expect("kept for the garbage collector");
    assert_eq!(finalizers_of(&fg), ["foregroundDeletion"]);
    let orphan = c
        .delete(&deployment_key("web"), policy(PropagationPolicy::Orphan))
        .unwrap()
        .expect("still kept");
    assert_eq!(finalizers_of(&orphan), ["orphan"]);
    assert_eq!(
        orphan.meta().deletion_timestamp,
        fg.meta().deletion_timestamp
    );
    let gone = c
        .delete(
            &deployment_key("web"),
            policy(PropagationPolicy::Background),
        )
        .unwrap();
    assert!(gone.is_none(), "no finalizer left: removed");
    c.create(deployment("api", &[])).unwrap();
    let gone = c
        .delete(
            &deployment_key("api"),
            policy(PropagationPolicy::Background),
        )
        .unwrap();
    assert!(gone.is_none());
}

fn deleting_objects_take_no_new_finalizers(make: Factory) {
    let mut c = make();
    c.create(deployment("web", &["example.com/a"])).unwrap();
    let marked = c
        .delete(&deployment_key("web"), DeleteOptions::default())
        .unwrap()
        .unwrap();
    let err = c
        .update(with_finalizers(
            &marked,
            &["example.com/a", "example.com/b"],
        ))
        .unwrap_err();
    assert!(
        matches!(err, ApiError::Invalid { .. }),
        "{err}: want Invalid"
    );
    assert!(
        err.to_string().contains("no new finalizers can be added"),
        "{err}"
    );
    let mut cleared = marked.clone();
    cleared.meta_mut().deletion_timestamp = None;
    let kept = c.update(cleared).unwrap();
    assert_eq!(
        kept.meta().deletion_timestamp,
        marked.meta().deletion_timestamp
    );
}

fn namespace_termination(make: Factory) {
    let mut c = make();
    let mut p = pod("a", Some("n1"));
    p.meta_mut().namespace = Some("team".into());
    c.create(p).unwrap();
    let ns = ObjectKey::new(Kind::Namespace, "", "team");
    let terminating = c
        .delete(&ns, DeleteOptions::default())
        .unwrap()
        .expect("a namespace waits for its contents");
    assert!(terminating.meta().deletion_timestamp.is_some());
    let Object::Namespace(n) = &terminating else {
        panic!("not a namespace")
    };
    let phase = n.status.as_ref().and_then(|s| s.phase.as_deref());
    assert_eq!(phase, Some("Terminating"));
    let spec_finalizers = n.spec.as_ref().and_then(|s| s.finalizers.clone());
    assert_eq!(spec_finalizers, Some(vec!["kubernetes".to_string()]));
    let mut late = pod("b", None);
    late.meta_mut().namespace = Some("team".into());
    let err = c.create(late).unwrap_err();
    assert!(matches!(err, ApiError::Forbidden { .. }), "{err}");
    assert!(
        err.to_string().contains(
            "unable to create new content in namespace team because it is being terminated"
        ),
        "{err}"
    );
    // What the namespace controller does at the end: the namespace goes with its finalizer.
    let mut finalized = k8s_openapi::api::core::v1::Namespace::clone(n);
    finalized.spec.as_mut().unwrap().finalizers = Some(vec![]);
    c.update(Object::Namespace(Arc::new(finalized))).unwrap();
    assert!(c.get(&ns).unwrap_err().is_not_found());
}

/// A valid Deployment spec: selector and template label `app: web`, one container.
fn web_deployment_spec(replicas: i32) -> DeploymentSpec {
    let labels = web_selector().match_labels;
    DeploymentSpec {
        replicas: Some(replicas),
        selector: web_selector(),
        template: k8s_openapi::api::core::v1::PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels,
                ..Default::default()
            }),
            spec: pod("t", None)
                .as_pod()
                .and_then(|p| p.spec.as_deref().cloned()),
        },
        ..Default::default()
    }
}

/// A valid ReplicaSet spec, with the Deployment's selector and template.
fn web_replica_set_spec(replicas: i32) -> ReplicaSetSpec {
    let d = web_deployment_spec(replicas);
    ReplicaSetSpec {
        replicas: d.replicas,
        selector: d.selector,
        template: Some(d.template),
        ..Default::default()
    }
}

fn web_selector() -> LabelSelector {
    LabelSelector {
        match_labels: Some([("app".to_string(), "web".to_string())].into()),
        ..Default::default()
    }
}

fn scale_writes_only_the_replicas(make: Factory) {
    let mut c = make();
    let mut m = meta("web");
    m.labels = Some([("team".to_string(), "a".to_string())].into());
    let created = c
        .create(Object::Deployment(Arc::new(StoredDeployment::from_k8s(
            Deployment {
                metadata: m,
                spec: Some(web_deployment_spec(1)),
                ..Default::default()
            },
        ))))
        .unwrap();
    let mut with_status = created.clone();
    if let Object::Deployment(d) = &mut with_status {
        Arc::make_mut(d).status = Some(DeploymentStatus {
            replicas: Some(1),
            ..Default::default()
        });
    }
    c.update_status(with_status).unwrap();
    let key = created.key();
    let scale = c.update_scale(&key, 3, None).unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(3));
    let status = scale.status.as_ref().unwrap();
    assert_eq!(status.replicas, 1, "the observed replicas are the status's");
    assert_eq!(status.selector.as_deref(), Some("app=web"));
    let Object::Deployment(d) = c.get(&key).unwrap() else {
        unreachable!()
    };
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(3));
    assert_eq!(d.metadata.generation, Some(2), "a spec change");
    assert_eq!(d.status.as_ref().unwrap().replicas, Some(1));
    assert_eq!(d.metadata.labels.as_ref().unwrap()["team"], "a");
    assert_eq!(scale.metadata.resource_version, d.metadata.resource_version);
    let rs = c
        .create(Object::ReplicaSet(Arc::new(StoredReplicaSet::from_k8s(
            ReplicaSet {
                metadata: meta("web-1"),
                spec: Some(web_replica_set_spec(2)),
                ..Default::default()
            },
        ))))
        .unwrap();
    let scale = c.update_scale(&rs.key(), 0, None).unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(0));
    let err = c.update_scale(&rs.key(), -1, None).unwrap_err();
    assert_eq!(err.code(), 422, "{err}");
    let pod_key = c.create(pod("a", None)).unwrap().key();
    assert!(c
        .update_scale(&pod_key, 1, None)
        .unwrap_err()
        .is_not_found());
    let missing = ObjectKey::new(Kind::ReplicaSet, "default", "missing");
    assert!(c
        .update_scale(&missing, 1, None)
        .unwrap_err()
        .is_not_found());
}

fn scale_precondition(make: Factory) {
    let mut c = make();
    let created = c
        .create(Object::ReplicaSet(Arc::new(StoredReplicaSet::from_k8s(
            ReplicaSet {
                metadata: meta("web"),
                spec: Some(web_replica_set_spec(1)),
                ..Default::default()
            },
        ))))
        .unwrap();
    let key = created.key();
    let first = c
        .update_scale(&key, 2, Some(created.resource_version()))
        .unwrap();
    let err = c
        .update_scale(&key, 3, Some(created.resource_version()))
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let current = first.metadata.resource_version.clone().unwrap();
    let second = c.update_scale(&key, 3, Some(&current)).unwrap();
    assert_eq!(second.spec.unwrap().replicas, Some(3));
}

fn dynamic(api_version: &str, kind: &str, name: &str, extra: serde_json::Value) -> Object {
    let t = crate::types::builtin(api_version, kind).expect("a built-in kind");
    let mut v = serde_json::json!({"apiVersion": api_version, "kind": kind,
                                   "metadata": {"name": name, "namespace": "default"}});
    if let (Some(m), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    Object::Other(Arc::new(
        crate::DynamicObject::from_value(t, &v).expect("a valid manifest"),
    ))
}

fn stored_only_kinds_have_plain_semantics(make: Factory) {
    let mut c = make();
    let cm = c
        .create(dynamic(
            "v1",
            "ConfigMap",
            "settings",
            serde_json::json!({"data": {"a": "1"}}),
        ))
        .unwrap();
    assert!(!cm.uid().is_empty() && !cm.resource_version().is_empty());
    let got = c.get(&cm.key()).unwrap();
    assert_eq!(got.to_json()["data"], serde_json::json!({"a": "1"}));
    // An update of a StatefulSet's main resource keeps the stored status and moves the
    // generation for a spec change; the status subresource writes only the status.
    let sts = c
        .create(dynamic(
            "apps/v1",
            "StatefulSet",
            "db",
            serde_json::json!({"spec": {"replicas": 1}, "status": {"replicas": 0}}),
        ))
        .unwrap();
    assert_eq!(sts.meta().generation, Some(1));
    let mut changed = dynamic(
        "apps/v1",
        "StatefulSet",
        "db",
        serde_json::json!({"spec": {"replicas": 3}, "status": {"replicas": 9}}),
    );
    changed.meta_mut().resource_version = Some(sts.resource_version().to_string());
    let updated = c.update(changed.clone()).unwrap();
    assert_eq!(updated.meta().generation, Some(2));
    assert_eq!(
        updated.to_json()["status"],
        serde_json::json!({"replicas": 0})
    );
    changed.meta_mut().resource_version = Some(updated.resource_version().to_string());
    let status = c.update_status(changed).unwrap();
    assert_eq!(
        status.to_json()["status"],
        serde_json::json!({"replicas": 9})
    );
    assert_eq!(status.to_json()["spec"], serde_json::json!({"replicas": 3}));
    assert!(c
        .delete(&cm.key(), DeleteOptions::default())
        .unwrap()
        .is_none());
    assert!(c.get(&cm.key()).unwrap_err().is_not_found());
}

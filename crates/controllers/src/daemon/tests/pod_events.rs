//! Which pod events the DaemonSet controller caches: a pod of another kind's controller is
//! neither cached nor handled, and becomes an adoption candidate once it is orphaned.

use super::*;

/// A pod of `default` labelled `app=other`, controlled by a ReplicaSet when `owned`.
fn pod(name: &str, owned: bool) -> Object {
    let mut meta = json!({"name": name, "namespace": "default", "labels": {"app": "other"}});
    if owned {
        meta["ownerReferences"] = json!([{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid",
            "controller": true,
        }]);
    }
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    });
    Object::Pod(Arc::new(
        serde_json::from_value::<kubeplane_api::StoredPod>(pod).unwrap(),
    ))
}

fn orphans(h: &Harness) -> Vec<String> {
    h.dsc
        .cache
        .orphan_pods("default")
        .into_iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

fn set_owned(h: &mut Harness, name: &str, owned: bool) {
    let Object::Pod(p) = pod(name, owned) else {
        unreachable!()
    };
    let mut p = StoredPod::clone(&p);
    p.metadata.uid = h
        .client
        .cache()
        .get_pod("default", name)
        .unwrap()
        .metadata
        .uid
        .clone();
    h.client.update(Object::Pod(Arc::new(p))).unwrap();
    h.settle();
}

#[test]
fn a_pod_is_an_orphan_candidate_only_while_no_controller_of_another_kind_holds_it() {
    let mut h = Harness::new(vec![], daemon_set_json(json!({})));
    h.client.create(pod("rs-pod", true)).unwrap();
    h.client.create(pod("bare", false)).unwrap();
    h.settle();
    assert_eq!(orphans(&h), ["bare"], "the ReplicaSet's pod is not cached");
    set_owned(&mut h, "rs-pod", false);
    assert_eq!(orphans(&h), ["bare", "rs-pod"], "orphaned: a candidate");
    set_owned(&mut h, "rs-pod", true);
    assert_eq!(orphans(&h), ["bare"], "adopted by the ReplicaSet again");
    h.client
        .delete(
            &ObjectKey::new(Kind::Pod, "default", "bare"),
            DeleteOptions::now(),
        )
        .unwrap();
    h.settle();
    assert!(orphans(&h).is_empty(), "a deleted pod leaves the cache");
}

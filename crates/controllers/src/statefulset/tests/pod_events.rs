//! Which pods the StatefulSet controller caches: its sets' pods and orphans (adoption
//! candidates), not the pods of another kind's controller, which no set claims.

use super::*;

/// A pod of `default` labelled `app=web`, controlled by a ReplicaSet when `owned`.
fn pod(name: &str, owned: bool, uid: Option<&str>) -> Object {
    let mut meta = json!({"name": name, "namespace": "default", "labels": {"app": "web"}});
    if owned {
        meta["ownerReferences"] = json!([{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid",
            "controller": true,
        }]);
    }
    if let Some(uid) = uid {
        meta["uid"] = json!(uid);
    }
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    });
    Object::Pod(Arc::new(
        serde_json::from_value::<kubeplane_api::StoredPod>(pod).unwrap(),
    ))
}

/// The cached pods' names, sorted (the cache is hashed).
fn cached(h: &Harness) -> Vec<String> {
    let mut names: Vec<String> = h
        .ssc
        .pods
        .values()
        .flat_map(|m| m.keys().cloned())
        .collect();
    names.sort();
    names
}

fn set_owned(h: &mut Harness, name: &str, owned: bool) {
    let uid = h
        .client
        .cache()
        .get_pod("default", name)
        .unwrap()
        .metadata
        .uid
        .clone();
    h.client.update(pod(name, owned, uid.as_deref())).unwrap();
    h.settle();
}

#[test]
fn only_orphans_and_the_sets_pods_are_cached_as_controller_references_change() {
    let mut h = Harness::new(&[]);
    h.client.create(pod("rs-pod", true, None)).unwrap();
    h.client.create(pod("bare", false, None)).unwrap();
    h.settle();
    assert_eq!(cached(&h), ["bare"], "the ReplicaSet's pod is not cached");
    set_owned(&mut h, "rs-pod", false);
    assert_eq!(
        cached(&h),
        ["bare", "rs-pod"],
        "orphaned: an adoption candidate"
    );
    set_owned(&mut h, "rs-pod", true);
    assert_eq!(cached(&h), ["bare"], "adopted by the ReplicaSet again");
    h.create(&set_manifest("web", 1, &[]));
    assert_eq!(cached(&h), ["bare", "web-0"], "the set's own pod is cached");
}

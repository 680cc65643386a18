//! The controller against a test API server: the cases of upstream's
//! `stateful_set_control_test.go` (scale up and down, replacement of deleted and failed pods,
//! rolling update with partition and maxUnavailable, OnDelete, history, rollback,
//! minReadySeconds) and the claims of `stateful_pod_control_test.go`.

use serde_json::{json, Value};

use super::{set_manifest, Harness};

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A set whose `replicas` pods were all created and made ready in order.
fn running(replicas: i32, extra: &[(&str, Value)], gates: &[(&str, bool)]) -> (Harness, Value) {
    let mut h = Harness::new(gates);
    let manifest = set_manifest("web", replicas, extra);
    h.create(&manifest);
    for i in 0..replicas {
        h.ready(&format!("web-{i}"));
    }
    (h, manifest)
}

fn with_image(manifest: &Value, image: &str) -> Value {
    let mut m = manifest.clone();
    m["spec"]["template"]["spec"]["containers"][0]["image"] = json!(image);
    m
}

fn deleted(h: &Harness) -> Vec<String> {
    h.messages("SuccessfulDelete")
}

#[test]
fn ordered_ready_creates_one_pod_at_a_time_after_the_previous_is_running_and_ready() {
    let mut h = Harness::new(&[]);
    h.create(&set_manifest("web", 3, &[]));
    assert_eq!(h.pod_names(), names(&["web-0"]));
    assert_eq!(
        h.messages("SuccessfulCreate"),
        names(&[
            "create Claim datadir-web-0 Pod web-0 in StatefulSet web success",
            "create Pod web-0 in StatefulSet web successful"
        ])
    );
    h.report("web-0", "Running", false);
    assert_eq!(h.pod_names(), names(&["web-0"]), "running but not ready");
    h.ready("web-0");
    assert_eq!(h.pod_names(), names(&["web-0", "web-1"]));
    h.ready("web-1");
    h.ready("web-2");
    let status = h.status("web");
    assert_eq!(status["replicas"], 3);
    assert_eq!(status["readyReplicas"], 3);
    assert_eq!(status["availableReplicas"], 3);
    assert_eq!(status["currentReplicas"], 3);
    assert_eq!(status["updatedReplicas"], 3);
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(status["collisionCount"], 0);
    assert_eq!(status["currentRevision"], status["updateRevision"]);
    let claims: Vec<Value> = h.objects_of("PersistentVolumeClaim");
    let claim_names: Vec<&str> = claims
        .iter()
        .map(|c| c["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        claim_names,
        ["datadir-web-0", "datadir-web-1", "datadir-web-2"]
    );
}

#[test]
fn parallel_creates_every_pod_at_once() {
    let mut h = Harness::new(&[]);
    h.create(&set_manifest(
        "web",
        3,
        &[("podManagementPolicy", json!("Parallel"))],
    ));
    assert_eq!(h.pod_names(), names(&["web-0", "web-1", "web-2"]));
}

#[test]
fn spec_ordinals_start_numbers_the_pods() {
    let mut h = Harness::new(&[]);
    h.create(&set_manifest(
        "web",
        2,
        &[("ordinals", json!({"start": 5}))],
    ));
    h.ready("web-5");
    assert_eq!(h.pod_names(), names(&["web-5", "web-6"]));
    assert_eq!(
        h.pod("web-6").labels().unwrap()["apps.kubernetes.io/pod-index"],
        "6"
    );
}

#[test]
fn scale_down_deletes_the_highest_ordinal_first() {
    let (mut h, manifest) = running(3, &[], &[]);
    let mut m = manifest.clone();
    m["spec"]["replicas"] = json!(1);
    h.apply(&m);
    assert_eq!(
        deleted(&h),
        names(&[
            "delete Pod web-2 in StatefulSet web successful",
            "delete Pod web-1 in StatefulSet web successful"
        ])
    );
    assert_eq!(h.pod_names(), names(&["web-0"]));
    assert_eq!(
        h.objects_of("PersistentVolumeClaim").len(),
        3,
        "claims are retained"
    );
}

#[test]
fn scale_down_waits_while_a_remaining_pod_is_unhealthy() {
    let (mut h, manifest) = running(3, &[], &[]);
    h.report("web-0", "Running", false);
    let mut m = manifest.clone();
    m["spec"]["replicas"] = json!(2);
    h.apply(&m);
    assert!(deleted(&h).is_empty());
    h.ready("web-0");
    assert_eq!(
        deleted(&h),
        names(&["delete Pod web-2 in StatefulSet web successful"])
    );
}

#[test]
fn a_deleted_pod_is_recreated_under_its_name() {
    let (mut h, _) = running(3, &[], &[]);
    let old_uid = h.pod("web-1").metadata.uid.clone();
    h.delete_pod("web-1");
    assert_eq!(h.pod_names(), names(&["web-0", "web-1", "web-2"]));
    assert_ne!(h.pod("web-1").metadata.uid, old_uid);
}

#[test]
fn failed_and_succeeded_pods_are_deleted_and_recreated() {
    for phase in ["Failed", "Succeeded"] {
        let (mut h, _) = running(2, &[], &[]);
        let old_uid = h.pod("web-1").metadata.uid.clone();
        h.report("web-1", phase, false);
        assert_eq!(
            deleted(&h),
            names(&["delete Pod web-1 in StatefulSet web successful"]),
            "{phase}"
        );
        assert_ne!(h.pod("web-1").metadata.uid, old_uid, "{phase}");
    }
}

#[test]
fn a_rolling_update_replaces_pods_from_the_highest_ordinal_one_ready_pod_at_a_time() {
    let (mut h, manifest) = running(3, &[], &[]);
    let before = h.status("web")["currentRevision"].clone();
    h.apply(&with_image(&manifest, "nginx:2"));
    assert_eq!(
        deleted(&h),
        names(&["delete Pod web-2 in StatefulSet web successful"])
    );
    let status = h.status("web");
    assert_eq!(status["currentRevision"], before);
    assert_ne!(status["updateRevision"], before);
    let update = status["updateRevision"].as_str().unwrap().to_string();
    assert_eq!(
        h.pod("web-2").labels().unwrap()["controller-revision-hash"],
        update
    );
    assert_eq!(deleted(&h).len(), 1, "web-1 waits for the new web-2");
    h.ready("web-2");
    h.ready("web-1");
    h.ready("web-0");
    assert_eq!(deleted(&h).len(), 3);
    assert!(deleted(&h)[1].contains("web-1") && deleted(&h)[2].contains("web-0"));
    let status = h.status("web");
    assert_eq!(status["currentRevision"], json!(update));
    assert_eq!(status["updatedReplicas"], 3);
    assert_eq!(h.objects_of("ControllerRevision").len(), 2);
}

#[test]
fn a_partition_keeps_the_lower_ordinals_at_the_current_revision() {
    let extra = [(
        "updateStrategy",
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}),
    )];
    let (mut h, manifest) = running(3, &extra, &[]);
    h.apply(&with_image(&manifest, "nginx:2"));
    h.ready("web-2");
    assert_eq!(
        deleted(&h),
        names(&["delete Pod web-2 in StatefulSet web successful"])
    );
    let status = h.status("web");
    assert_eq!(status["updatedReplicas"], 1);
    assert_eq!(status["currentReplicas"], 2);
    assert_ne!(status["currentRevision"], status["updateRevision"]);
    // A deleted pod below the partition comes back at the current revision.
    h.delete_pod("web-0");
    let labels = h.pod("web-0").labels().cloned().unwrap();
    assert_eq!(
        json!(labels["controller-revision-hash"]),
        status["currentRevision"]
    );
}

#[test]
fn on_delete_updates_a_pod_only_when_it_is_deleted() {
    let extra = [("updateStrategy", json!({"type": "OnDelete"}))];
    let (mut h, manifest) = running(2, &extra, &[]);
    h.apply(&with_image(&manifest, "nginx:2"));
    assert!(deleted(&h).is_empty());
    h.delete_pod("web-0");
    let status = h.status("web");
    let image = h.pod("web-0").spec.as_ref().unwrap().containers[0]
        .image
        .clone();
    assert_eq!(image.as_deref(), Some("nginx:2"));
    let labels = h.pod("web-0").labels().cloned().unwrap();
    assert_eq!(
        json!(labels["controller-revision-hash"]),
        status["updateRevision"]
    );
    let old = h.pod("web-1").spec.as_ref().unwrap().containers[0]
        .image
        .clone();
    assert_eq!(old.as_deref(), Some("nginx:1"));
}

#[test]
fn revisions_no_pod_uses_are_truncated_to_the_history_limit() {
    let extra = [
        ("updateStrategy", json!({"type": "OnDelete"})),
        ("revisionHistoryLimit", json!(0)),
    ];
    let (mut h, manifest) = running(1, &extra, &[]);
    h.apply(&with_image(&manifest, "nginx:2"));
    assert_eq!(
        h.objects_of("ControllerRevision").len(),
        2,
        "current and update are live"
    );
    h.apply(&with_image(&manifest, "nginx:3"));
    let revisions = h.objects_of("ControllerRevision");
    let numbers: Vec<i64> = revisions
        .iter()
        .map(|r| r["revision"].as_i64().unwrap())
        .collect();
    assert_eq!(
        revisions.len(),
        2,
        "the nginx:2 revision is gone: {numbers:?}"
    );
    assert!(numbers.contains(&1) && numbers.contains(&3));
}

#[test]
fn a_rollback_renumbers_the_earlier_revision_instead_of_creating_one() {
    let (mut h, manifest) = running(1, &[], &[]);
    let first = h.status("web")["currentRevision"].clone();
    h.apply(&with_image(&manifest, "nginx:2"));
    h.ready("web-0");
    h.apply(&manifest);
    h.ready("web-0");
    let revisions = h.objects_of("ControllerRevision");
    assert_eq!(revisions.len(), 2);
    let back = revisions
        .iter()
        .find(|r| r["metadata"]["name"] == first)
        .unwrap();
    assert_eq!(back["revision"], 3);
    assert_eq!(h.status("web")["currentRevision"], first);
}

#[test]
fn min_ready_seconds_holds_availability_and_the_next_pod() {
    let mut h = Harness::new(&[]);
    h.create(&set_manifest("web", 2, &[("minReadySeconds", json!(10))]));
    h.ready("web-0");
    assert_eq!(h.status("web")["availableReplicas"], 0);
    assert_eq!(
        h.pod_names(),
        names(&["web-0"]),
        "web-1 waits for web-0 to be available"
    );
    h.advance(10);
    assert_eq!(h.status("web")["availableReplicas"], 1);
    assert_eq!(h.pod_names(), names(&["web-0", "web-1"]));
}

#[test]
fn max_unavailable_counts_only_with_its_gate() {
    let extra = [(
        "updateStrategy",
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 2}}),
    )];
    for (gate, want) in [(false, 1), (true, 2)] {
        let (mut h, manifest) = running(3, &extra, &[("MaxUnavailableStatefulSet", gate)]);
        h.apply(&with_image(&manifest, "nginx:2"));
        assert_eq!(deleted(&h).len(), want, "gate {gate}");
    }
}

#[test]
fn when_scaled_delete_gives_a_condemned_pods_claim_to_the_pod() {
    let policy = json!({"whenScaled": "Delete", "whenDeleted": "Retain"});
    let (mut h, manifest) = running(2, &[("persistentVolumeClaimRetentionPolicy", policy)], &[]);
    let owners = |h: &Harness, claim: &str| -> Vec<String> {
        h.objects_of("PersistentVolumeClaim")
            .into_iter()
            .find(|c| c["metadata"]["name"] == claim)
            .map(|c| {
                c["metadata"]["ownerReferences"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .map(|r| {
                        format!(
                            "{}/{}",
                            r["kind"].as_str().unwrap(),
                            r["name"].as_str().unwrap()
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(owners(&h, "datadir-web-1").is_empty());
    let mut m = manifest.clone();
    m["spec"]["replicas"] = json!(1);
    h.apply(&m);
    assert_eq!(owners(&h, "datadir-web-1"), names(&["Pod/web-1"]));
    assert!(owners(&h, "datadir-web-0").is_empty());
}

#[test]
fn when_deleted_delete_gives_the_claims_to_the_set() {
    let policy = json!({"whenScaled": "Retain", "whenDeleted": "Delete"});
    let (h, _) = running(2, &[("persistentVolumeClaimRetentionPolicy", policy)], &[]);
    for claim in h.objects_of("PersistentVolumeClaim") {
        let refs = claim["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0]["kind"], "StatefulSet");
        assert_eq!(refs[0]["uid"], "uid-web");
    }
}

#[test]
fn a_claim_being_deleted_blocks_its_pod_with_a_failed_create() {
    let mut h = Harness::new(&[]);
    let t = kubeplane_api::types::builtin("v1", "PersistentVolumeClaim").unwrap();
    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "datadir-web-0", "namespace": "default",
                     "finalizers": ["kubernetes.io/pvc-protection"]},
        "spec": {"accessModes": ["ReadWriteOnce"]}});
    let obj = kubeplane_api::Object::Other(std::sync::Arc::new(
        kubeplane_api::DynamicObject::from_value(t, &claim).unwrap(),
    ));
    let key = obj.key();
    kubeplane_api::Client::create(&mut h.client, obj).unwrap();
    kubeplane_api::Client::delete(&mut h.client, &key, Default::default()).unwrap();
    h.create(&set_manifest("web", 1, &[]));
    assert!(h.pod_names().is_empty());
    let failed = h.messages("FailedCreate");
    assert_eq!(
        failed.first().map(String::as_str),
        Some(
            "create Pod web-0 in StatefulSet web failed error: pvc datadir-web-0 is being deleted"
        )
    );
}

#[test]
fn an_evicted_pod_is_recreated_under_its_name() {
    let (mut h, _) = running(2, &[], &[]);
    let old_uid = h.pod("web-0").metadata.uid.clone();
    kubeplane_api::Client::evict(&mut h.client, "default", "web-0", Default::default()).unwrap();
    h.settle();
    assert_eq!(h.pod_names(), names(&["web-0", "web-1"]));
    assert_ne!(h.pod("web-0").metadata.uid, old_uid);
    assert_eq!(
        h.messages("SuccessfulCreate")
            .iter()
            .filter(|m| m.starts_with("create Pod web-0"))
            .count(),
        2
    );
}

//! The upstream cases of `stateful_set_utils_test.go`: names and ordinals, identity and
//! storage, maxUnavailable, claim ownership under the retention policy, revisions.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubeplane_api::StoredPod;

use super::{set_manifest, typed_set};
use crate::statefulset::utils::*;

#[test]
fn pod_names_give_their_parent_and_ordinal() {
    type Case<'a> = (&'a str, &'a str, Option<(&'a str, i64)>);
    let cases: &[Case] = &[
        ("a set's pod", "web-1", Some(("web", 1))),
        ("a dashed set name", "my-web-12", Some(("my-web", 12))),
        ("a name without ordinal", "web", None),
        ("a name ending in a dash", "web-", None),
        ("letters after the dash", "web-x1", None),
        (
            "an ordinal beyond int32",
            "web-4294967296",
            Some(("web", -1)),
        ),
    ];
    for (name, pod, want) in cases {
        assert_eq!(parent_and_ordinal(pod), *want, "{name}");
    }
}

fn member(set: &StatefulSet, o: i64) -> StoredPod {
    new_pod(set, o, "web-rev")
}

#[test]
fn a_new_pod_has_the_identity_and_storage_of_its_ordinal() {
    let set = typed_set(set_manifest("web", 3, &[]));
    let pod = member(&set, 1);
    assert_eq!(pod.metadata.name.as_deref(), Some("web-1"));
    assert_eq!(pod_label(&pod, POD_NAME_LABEL), Some("web-1"));
    assert_eq!(pod_label(&pod, POD_INDEX_LABEL), Some("1"));
    assert_eq!(pod_label(&pod, REVISION_LABEL), Some("web-rev"));
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(spec.hostname.as_deref(), Some("web-1"));
    assert_eq!(spec.subdomain.as_deref(), Some("governingsvc"));
    let claim = spec.volumes.as_ref().unwrap()[0]
        .persistent_volume_claim
        .clone()
        .unwrap();
    assert_eq!(claim.claim_name, "datadir-web-1");
    assert!(identity_matches(&set, &pod));
    assert!(storage_matches(&set, &pod));
}

#[test]
fn identity_and_storage_stop_matching_when_a_pod_drifts() {
    let set = typed_set(set_manifest("web", 3, &[]));
    type Drift = fn(&mut StoredPod);
    let cases: &[(&str, Drift, bool, bool)] = &[
        (
            "another namespace",
            |p| p.metadata.namespace = Some("other".into()),
            false,
            true,
        ),
        (
            "no pod-name label",
            |p| {
                p.labels_mut().remove(POD_NAME_LABEL);
            },
            false,
            true,
        ),
        (
            "another parent",
            |p| p.metadata.name = Some("db-1".into()),
            false,
            true,
        ),
        ("no volumes", |p| p.spec_mut().volumes = None, true, false),
        (
            "another claim",
            |p| {
                let v = &mut p.spec_mut().volumes.as_mut().unwrap()[0];
                v.persistent_volume_claim.as_mut().unwrap().claim_name = "datadir-web-2".into();
            },
            true,
            false,
        ),
    ];
    for (name, drift, identity, storage) in cases {
        let mut pod = member(&set, 1);
        drift(&mut pod);
        assert_eq!(identity_matches(&set, &pod), *identity, "{name}: identity");
        assert_eq!(storage_matches(&set, &pod), *storage, "{name}: storage");
        if !*identity && ordinal(&pod) >= 0 {
            update_identity(&set, &mut pod);
            assert!(identity_matches(&set, &pod), "{name}: identity restored");
        }
        if !*storage {
            update_storage(&set, &mut pod);
            assert!(storage_matches(&set, &pod), "{name}: storage restored");
        }
    }
}

#[test]
fn claims_are_named_after_template_set_and_ordinal_with_the_selectors_labels() {
    let set = typed_set(set_manifest("web", 3, &[]));
    let claims = claims_for(&set, 2);
    assert_eq!(claims.len(), 1);
    let (template, claim) = &claims[0];
    assert_eq!(template, "datadir");
    assert_eq!(claim.metadata.name.as_deref(), Some("datadir-web-2"));
    assert_eq!(claim.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(
        claim
            .metadata
            .labels
            .as_ref()
            .unwrap()
            .get("app")
            .map(String::as_str),
        Some("web")
    );
}

#[test]
fn max_unavailable_is_scaled_rounded_down_and_at_least_one() {
    let int = |n| Some(IntOrString::Int(n));
    let pct = |s: &str| Some(IntOrString::String(s.into()));
    let cases = [
        ("unset", None, 10, 1),
        ("3 of 10", int(3), 10, 3),
        ("3 of none", int(3), 0, 3),
        ("0 of none", int(0), 0, 1),
        ("10% of 25", pct("10%"), 25, 2),
        ("100% of 5", pct("100%"), 5, 5),
        ("50% of 5", pct("50%"), 5, 2),
        ("10% of 5", pct("10%"), 5, 1),
        ("1% of none", pct("1%"), 0, 1),
        ("0% of none", pct("0%"), 0, 1),
    ];
    for (name, value, replicas, want) in cases {
        assert_eq!(
            max_unavailable(value.as_ref(), replicas),
            Ok(want),
            "{name}"
        );
    }
}

fn controller_ref(api_version: &str, kind: &str, name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn policy_set(name: &str, uid: &str, replicas: i32, scaled: &str, deleted: &str) -> StatefulSet {
    let mut set = typed_set(set_manifest(name, replicas, &[]));
    set.metadata.uid = Some(uid.into());
    let p = set
        .spec
        .as_mut()
        .unwrap()
        .persistent_volume_claim_retention_policy
        .as_mut()
        .unwrap();
    p.when_scaled = Some(scaled.into());
    p.when_deleted = Some(deleted.into());
    set
}

fn bare_pod(name: &str, uid: &str) -> StoredPod {
    let mut pod = StoredPod::default();
    pod.metadata.name = Some(name.into());
    pod.metadata.uid = Some(uid.into());
    pod
}

fn claim_with(refs: Vec<OwnerReference>) -> PersistentVolumeClaim {
    let mut claim = PersistentVolumeClaim::default();
    claim.metadata.name = Some("target-claim".into());
    claim.metadata.owner_references = Some(refs);
    claim
}

#[test]
fn a_claims_owners_are_up_to_date_exactly_when_the_policy_wants_them() {
    // (name, whenScaled, whenDeleted, needs pod ref, needs set ref, replicas, ordinal)
    let cases = [
        ("retain", RETAIN, RETAIN, false, false, 1, 0),
        ("on set delete", RETAIN, DELETE, false, true, 1, 0),
        (
            "on scale down only, condemned",
            DELETE,
            RETAIN,
            true,
            false,
            2,
            2,
        ),
        (
            "on scale down only, not condemned",
            DELETE,
            RETAIN,
            false,
            false,
            2,
            1,
        ),
        (
            "delete on both, condemned",
            DELETE,
            DELETE,
            true,
            false,
            2,
            2,
        ),
        (
            "delete on both, not condemned",
            DELETE,
            DELETE,
            false,
            true,
            2,
            1,
        ),
    ];
    for (name, scaled, deleted, needs_pod, needs_set, replicas, o) in cases {
        let set = policy_set("stateful-set", "ss-456", replicas, scaled, deleted);
        let pod = bare_pod(&format!("pod-{o}"), "pod-123");
        for variation in 0..8 {
            let (with_pod, with_set, others) =
                (variation & 1 != 0, variation & 2 != 0, variation & 4 != 0);
            let mut refs = Vec::new();
            if with_pod {
                refs.push(controller_ref("v1", "Pod", &format!("pod-{o}"), "pod-123"));
            }
            if with_set {
                refs.push(controller_ref(
                    "apps/v1",
                    "StatefulSet",
                    "stateful-set",
                    "ss-456",
                ));
            }
            if others {
                let mut r = controller_ref("v1", "Pod", "rand1", "rand1-uid");
                r.controller = None;
                refs.push(r);
            }
            let up_to_date = ClaimOwnership {
                set: &set,
                pod: &pod,
            }
            .up_to_date(&claim_with(refs));
            let want = with_pod == needs_pod && with_set == needs_set;
            assert_eq!(
                up_to_date, want,
                "{name}: pod={with_pod} set={with_set} others={others}"
            );
        }
    }
}

#[test]
fn stale_non_controller_and_unexpected_references_decide_the_edge_cases() {
    let pod_ref = |uid: &str, controller| {
        let mut r = controller_ref("v1", "Pod", "pod-1", uid);
        r.controller = controller;
        r
    };
    let set_ref = |uid: &str, controller| {
        let mut r = controller_ref("apps/v1", "StatefulSet", "stateful-set", uid);
        r.controller = controller;
        r
    };
    let cases = [
        (
            "normal controller, pod",
            vec![pod_ref("pod-123", Some(true))],
            DELETE,
            true,
        ),
        (
            "non-controller causes policy mismatch, pod",
            vec![pod_ref("pod-123", None)],
            DELETE,
            false,
        ),
        (
            "stale controller does not affect policy, pod",
            vec![pod_ref("pod-stale", Some(true))],
            DELETE,
            true,
        ),
        (
            "unexpected controller causes policy mismatch, pod",
            vec![
                pod_ref("pod-123", Some(true)),
                controller_ref("v1", "Pod", "Random", "random"),
            ],
            DELETE,
            false,
        ),
        (
            "normal controller, set",
            vec![set_ref("ss-456", Some(true))],
            RETAIN,
            true,
        ),
        (
            "stale controller ignored, set",
            vec![set_ref("set-stale", Some(true))],
            RETAIN,
            true,
        ),
        (
            "unexpected controller causes policy mismatch, set",
            vec![
                set_ref("ss-456", Some(true)),
                controller_ref("apps/v1", "StatefulSet", "Random", "random"),
            ],
            RETAIN,
            false,
        ),
    ];
    for (name, refs, scaled, want) in cases {
        // The pod cases delete on both (pod-1 of one replica is condemned); the set cases
        // delete with the set only.
        let set = policy_set("stateful-set", "ss-456", 1, scaled, DELETE);
        let pod = bare_pod("pod-1", "pod-123");
        let got = ClaimOwnership {
            set: &set,
            pod: &pod,
        }
        .up_to_date(&claim_with(refs));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn fixing_a_claim_leaves_the_wanted_owner_as_its_only_controller() {
    // (name, whenScaled, whenDeleted, condemned, needs pod ref, needs set ref, unexpected)
    let cases = [
        ("retain", RETAIN, RETAIN, false, false, false, false),
        ("delete with set", RETAIN, DELETE, false, false, true, false),
        (
            "delete with scaledown, not condemned",
            DELETE,
            RETAIN,
            false,
            false,
            false,
            false,
        ),
        (
            "delete on scaledown, condemned",
            DELETE,
            RETAIN,
            true,
            true,
            false,
            false,
        ),
        (
            "delete on both, not condemned",
            DELETE,
            DELETE,
            false,
            false,
            true,
            false,
        ),
        (
            "delete on both, condemned",
            DELETE,
            DELETE,
            true,
            true,
            false,
            false,
        ),
        (
            "unexpected controller",
            DELETE,
            DELETE,
            true,
            false,
            false,
            true,
        ),
    ];
    for (name, scaled, deleted, condemned, needs_pod, needs_set, unexpected) in cases {
        let set = policy_set("ss", "ss-123", 5, scaled, deleted);
        let pod = bare_pod(if condemned { "pod-8" } else { "pod-1" }, "pod-456");
        for variation in 0..4 {
            let mut refs = Vec::new();
            if variation & 1 != 0 {
                refs.push(controller_ref(
                    "v1",
                    "Pod",
                    pod.metadata.name.as_deref().unwrap(),
                    "pod-456",
                ));
            }
            if variation & 2 != 0 {
                refs.push(controller_ref("apps/v1", "StatefulSet", "ss", "ss-123"));
            }
            if unexpected {
                refs.push(controller_ref("custom/v1", "Unknown", "unknown", "xyz"));
            }
            let mut claim = claim_with(refs);
            ClaimOwnership {
                set: &set,
                pod: &pod,
            }
            .fix(&mut claim);
            let controls = |uid: &str| {
                claim
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|r| r.uid == uid && r.controller == Some(true))
            };
            assert_eq!(controls("pod-456"), needs_pod, "{name} ({variation}): pod");
            assert_eq!(controls("ss-123"), needs_set, "{name} ({variation}): set");
        }
    }
}

#[test]
fn a_set_reference_without_uid_is_stale_and_scrubbed() {
    let set = policy_set("sts", "123", 1, DELETE, DELETE);
    let pod = bare_pod("pod-0", "456");
    for controller in [Some(true), None] {
        let mut r = controller_ref("apps/v1", "StatefulSet", "sts", "");
        r.controller = controller;
        let mut claim = claim_with(vec![r]);
        ClaimOwnership {
            set: &set,
            pod: &pod,
        }
        .fix(&mut claim);
        assert_eq!(
            claim.metadata.owner_references, None,
            "controller {controller:?}"
        );
    }
    let mut other = controller_ref("someone", "else", "sts", "456x");
    other.controller = None;
    let mut claim = claim_with(vec![other.clone()]);
    ClaimOwnership {
        set: &set,
        pod: &pod,
    }
    .fix(&mut claim);
    let refs = claim.metadata.owner_references.unwrap();
    assert_eq!(
        refs[0], other,
        "a same-named reference of another kind is kept"
    );
    assert_eq!(
        (refs[1].kind.as_str(), refs[1].uid.as_str()),
        ("StatefulSet", "123")
    );
}

#[test]
fn a_revision_restores_the_template_it_recorded() {
    let set = typed_set(set_manifest("web", 3, &[]));
    let revision = new_revision(&set, 1, 0);
    let mut changed = set.clone();
    changed
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .containers[0]
        .image = Some("nginx:2".into());
    assert!(!equal_revision(&revision, &new_revision(&changed, 2, 0)));
    let restored = apply_revision(&changed, &revision);
    assert_eq!(
        restored.spec.as_ref().unwrap().template,
        set.spec.as_ref().unwrap().template
    );
    assert!(equal_revision(&revision, &new_revision(&restored, 3, 0)));
    let name = revision.metadata.name.clone().unwrap();
    let hash = &revision.metadata.labels.as_ref().unwrap()[REVISION_HASH_LABEL];
    assert_eq!(name, format!("web-{hash}"));
    assert_eq!(revision.revision, 1);
}

#[test]
fn the_collision_count_changes_the_hash_and_long_names_are_cut() {
    let set = typed_set(set_manifest("web", 1, &[]));
    let data = revision_patch(&set);
    assert_ne!(hash_revision(&data, 0), hash_revision(&data, 1));
    let keys: Vec<&String> = data["spec"]["template"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        keys,
        ["$patch", "metadata", "spec"],
        "keys sorted as Go's map encoding sorts them"
    );
    assert_eq!(fnv32(b""), 0x811c_9dc5);
    assert_eq!(fnv32(b"a"), 0x050c_5d7e);
    let long = "x".repeat(300);
    assert_eq!(revision_name(&long, "h").len(), 223 + 2);
}

#[test]
fn a_revision_written_by_a_real_api_server_equals_the_one_computed_from_its_template() {
    let set = typed_set(set_manifest("web", 1, &[]));
    let mut dumped = new_revision(&set, 1, 0);
    let template = |r: &mut k8s_openapi::api::apps::v1::ControllerRevision| {
        r.data.as_mut().unwrap().0["spec"]["template"].clone()
    };
    let mut t = template(&mut dumped);
    t["metadata"]["creationTimestamp"] = serde_json::Value::Null;
    dumped.data.as_mut().unwrap().0["spec"]["template"] = t.clone();
    assert!(equal_revision(&dumped, &new_revision(&set, 2, 0)));
    t["spec"]["containers"][0]["image"] = "nginx:2".into();
    dumped.data.as_mut().unwrap().0["spec"]["template"] = t;
    assert!(!equal_revision(&dumped, &new_revision(&set, 2, 0)));
}

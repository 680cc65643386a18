//! Table tests of the Deployment helpers.

use super::*;
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, ReplicaSet, ReplicaSetSpec, ReplicaSetStatus,
    RollingUpdateDeployment,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::StoredDeployment;
use kubeplane_api::StoredReplicaSet;

fn deployment(replicas: i32, surge: IntOrString, unavailable: IntOrString) -> StoredDeployment {
    StoredDeployment::from_k8s(Deployment {
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            strategy: Some(DeploymentStrategy {
                type_: Some(STRATEGY_ROLLING_UPDATE.into()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(surge),
                    max_unavailable: Some(unavailable),
                }),
            }),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn pct(s: &str) -> IntOrString {
    IntOrString::String(s.into())
}

fn rs(
    name: &str,
    replicas: i32,
    max_annotation: Option<i32>,
    created_secs: i64,
) -> Arc<StoredReplicaSet> {
    let mut ann = BTreeMap::new();
    if let Some(m) = max_annotation {
        ann.insert(MAX_REPLICAS_ANNOTATION.to_string(), m.to_string());
    }
    Arc::new(StoredReplicaSet::from_k8s(ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: Some(ann),
            creation_timestamp: Some(Time(
                Timestamp::from_second(1_700_000_000 + created_secs).unwrap(),
            )),
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            ..Default::default()
        }),
        status: Some(ReplicaSetStatus::default()),
    }))
}

#[test]
fn fenceposts_round_surge_up_and_unavailable_down() {
    // Upstream deployment_util_test TestResolveFenceposts.
    let cases = [
        (IntOrString::Int(0), IntOrString::Int(0), 0, (0, 1)),
        (IntOrString::Int(39), IntOrString::Int(1), 10, (39, 1)),
        (pct("39%"), pct("39%"), 10, (4, 3)),
        (pct("25%"), pct("25%"), 4, (1, 1)),
        (pct("25%"), pct("25%"), 10, (3, 2)),
        (pct("0%"), pct("1%"), 10, (0, 1)),
        (pct("0%"), pct("0%"), 10, (0, 1)),
        (pct("1%"), pct("0%"), 10, (1, 0)),
        (pct("50%"), pct("0%"), 0, (0, 1)),
    ];
    for (s, u, desired, want) in cases {
        assert_eq!(
            resolve_fenceposts(&s, &u, desired),
            Ok(want),
            "{s:?} {u:?} {desired}"
        );
    }
    assert!(resolve_fenceposts(&pct("abc"), &pct("1%"), 10).is_err());
    assert!(resolve_fenceposts(&IntOrString::String("5".into()), &pct("1%"), 10).is_err());
}

#[test]
fn max_unavailable_is_capped_by_the_replicas_and_zero_for_recreate() {
    // Upstream TestMaxUnavailable.
    assert_eq!(
        max_unavailable(&deployment(10, IntOrString::Int(1), IntOrString::Int(5))),
        5
    );
    assert_eq!(
        max_unavailable(&deployment(10, IntOrString::Int(1), IntOrString::Int(25))),
        10
    );
    assert_eq!(max_unavailable(&deployment(10, pct("100%"), pct("50%"))), 5);
    assert_eq!(
        max_unavailable(&deployment(0, IntOrString::Int(1), IntOrString::Int(5))),
        0
    );
    let mut recreate = deployment(10, IntOrString::Int(1), IntOrString::Int(5));
    recreate
        .spec
        .as_mut()
        .unwrap()
        .strategy
        .as_mut()
        .unwrap()
        .type_ = Some(STRATEGY_RECREATE.into());
    assert_eq!(max_unavailable(&recreate), 0);
    assert_eq!(max_surge(&recreate), 0);
    // Defaults: 25% and 25%.
    let d = StoredDeployment::from_k8s(Deployment {
        spec: Some(DeploymentSpec {
            replicas: Some(10),
            ..Default::default()
        }),
        ..Default::default()
    });
    assert_eq!((max_surge(&d), max_unavailable(&d)), (3, 2));
}

#[test]
fn validation_rejects_both_fenceposts_zero() {
    let d = deployment(3, IntOrString::Int(0), pct("0%"));
    let err = validate_rolling_update(&d).unwrap_err();
    assert!(err.contains("may not be 0 when `maxSurge` is 0"), "{err}");
    assert!(
        validate_rolling_update(&deployment(3, IntOrString::Int(1), IntOrString::Int(0))).is_ok()
    );
    assert!(validate_rolling_update(&deployment(3, IntOrString::Int(1), pct("101%"))).is_err());
}

#[test]
fn proportions_follow_the_worked_examples() {
    // {3, 2} with max 5, scaled to 10 (maxSurge 0) -> {6, 4}.
    let d = deployment(10, IntOrString::Int(0), IntOrString::Int(1));
    let a = rs("a", 3, Some(5), 0);
    let b = rs("b", 2, Some(5), 1);
    assert_eq!(get_replica_set_fraction(&a, &d), 3);
    assert_eq!(get_replica_set_fraction(&b, &d), 2);
    assert_eq!(get_proportion(&a, &d, 5, 0), 3);
    assert_eq!(get_proportion(&b, &d, 5, 3), 2);
    // {6, 4} with max 10, scaled to 5 -> {3, 2}.
    let d = deployment(5, IntOrString::Int(0), IntOrString::Int(1));
    let a = rs("a", 6, Some(10), 0);
    let b = rs("b", 4, Some(10), 1);
    assert_eq!(get_proportion(&a, &d, -5, 0), -3);
    assert_eq!(get_proportion(&b, &d, -5, -3), -2);
    // {1, 1, 1} with max 3, scaled to 4: each fraction round(1.33) - 1 = 0.
    let d = deployment(4, IntOrString::Int(0), IntOrString::Int(1));
    assert_eq!(get_replica_set_fraction(&rs("a", 1, Some(3), 0), &d), 0);
    // Scaling to zero takes everything.
    let d = deployment(0, IntOrString::Int(0), IntOrString::Int(1));
    assert_eq!(get_replica_set_fraction(&rs("a", 7, Some(3), 0), &d), -7);
    // A zero-sized ReplicaSet or nothing to add gets nothing.
    let d = deployment(4, IntOrString::Int(0), IntOrString::Int(1));
    assert_eq!(get_proportion(&rs("a", 0, Some(3), 0), &d, 3, 0), 0);
    assert_eq!(get_proportion(&rs("a", 2, Some(3), 0), &d, 3, 3), 0);
}

#[test]
fn size_sorts_break_ties_by_age() {
    let old = rs("old", 3, None, 0);
    let new = rs("new", 3, None, 10);
    let big = rs("big", 5, None, 5);
    let mut v = [old.clone(), new.clone(), big.clone()];
    v.sort_by(|a, b| by_size_newer(a, b));
    assert_eq!(
        v.iter().map(|r| name(r)).collect::<Vec<_>>(),
        ["big", "new", "old"]
    );
    v.sort_by(|a, b| by_size_older(a, b));
    assert_eq!(
        v.iter().map(|r| name(r)).collect::<Vec<_>>(),
        ["big", "old", "new"]
    );
}

#[test]
fn new_rs_replicas_respect_the_surge() {
    let d = deployment(10, pct("25%"), pct("25%"));
    let old = rs("old", 10, None, 0);
    let new = rs("new", 0, None, 1);
    let all = vec![old.clone(), new.clone()];
    // maxSurge 3: the new ReplicaSet may start with 3.
    assert_eq!(new_rs_new_replicas(&d, &all, &new), Ok(3));
    let new3 = rs("new", 3, None, 1);
    assert_eq!(new_rs_new_replicas(&d, &[old, new3.clone()], &new3), Ok(3));
}

#[test]
fn the_template_hash_is_stable_safe_and_sensitive_to_collisions() {
    let t = PodTemplateSpec::default();
    let h = compute_hash(&t, None);
    assert_eq!(h, compute_hash(&t, None));
    assert!(h.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    assert_ne!(h, compute_hash(&t, Some(1)));
    assert_eq!(safe_encode_string("0123456789"), "456789bcdf");
    assert_eq!(fnv32a(b""), 0x811c_9dc5);
    assert_eq!(fnv32a(b"a"), 0xe40c_292c);
}

#[test]
fn templates_compare_equal_ignoring_the_hash_label() {
    let mut a = PodTemplateSpec::default();
    let mut b = a.clone();
    b.metadata = Some(ObjectMeta {
        labels: Some([(POD_TEMPLATE_HASH_LABEL.to_string(), "abc".to_string())].into()),
        ..Default::default()
    });
    assert!(equal_ignore_hash(&a, &b));
    a.metadata = Some(ObjectMeta {
        labels: Some([("app".to_string(), "web".to_string())].into()),
        ..Default::default()
    });
    assert!(!equal_ignore_hash(&a, &b));
}

#[test]
fn templates_equal_field_by_field_or_only_semantically_compare_equal() {
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    let with = |labels: &[(&str, &str)], tolerations: Option<Vec<_>>| PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("nginx".into()),
                ..Default::default()
            }],
            tolerations,
            ..Default::default()
        }),
    };
    let hash = POD_TEMPLATE_HASH_LABEL;
    let cases = [
        (
            "the same template with and without the hash label",
            with(&[("app", "web"), (hash, "abc")], None),
            with(&[("app", "web")], None),
            true,
        ),
        (
            "a nil toleration list and an empty one",
            with(&[("app", "web"), (hash, "abc")], None),
            with(&[("app", "web")], Some(vec![])),
            true,
        ),
        (
            "another label differs",
            with(&[("app", "web"), (hash, "abc")], None),
            with(&[("app", "db"), (hash, "abc")], None),
            false,
        ),
    ];
    let annotated = |mut t: PodTemplateSpec| {
        if let Some(m) = t.metadata.as_mut() {
            m.annotations = Some([("a".to_string(), "1".to_string())].into());
        }
        t
    };
    let renamed = |mut t: PodTemplateSpec| {
        if let Some(m) = t.metadata.as_mut() {
            m.generate_name = Some("x-".into());
        }
        t
    };
    let cases = cases.into_iter().chain([
        (
            "an annotation differs besides the hash label",
            annotated(with(&[("app", "web"), (hash, "abc")], None)),
            with(&[("app", "web")], None),
            false,
        ),
        (
            "the same annotations, the hash label on one",
            annotated(with(&[("app", "web"), (hash, "abc")], None)),
            annotated(with(&[("app", "web")], None)),
            true,
        ),
        (
            "another metadata field differs",
            renamed(with(&[("app", "web")], None)),
            with(&[("app", "web")], None),
            false,
        ),
        (
            "no metadata and metadata with only the hash label",
            PodTemplateSpec {
                metadata: None,
                ..with(&[], None)
            },
            with(&[(hash, "abc")], None),
            true,
        ),
    ]);
    for (case, a, b, want) in cases {
        assert_eq!(equal_ignore_hash(&a, &b), want, "{case}");
        assert_eq!(equal_ignore_hash(&b, &a), want, "{case} (swapped)");
    }
}

#[test]
fn revision_annotations_keep_a_history_of_superseded_revisions() {
    let d = deployment(3, IntOrString::Int(1), IntOrString::Int(0));
    let mut r = StoredReplicaSet::clone(&rs("a", 3, None, 0));
    assert!(set_new_replica_set_annotations(&d, &mut r, 1, false));
    assert_eq!(revision(&r), Ok(1));
    assert!(!set_new_replica_set_annotations(&d, &mut r, 1, true));
    assert!(set_new_replica_set_annotations(&d, &mut r, 3, true));
    assert_eq!(revision(&r), Ok(3));
    let ann = r.metadata.annotations.as_ref().unwrap();
    assert_eq!(ann[REVISION_HISTORY_ANNOTATION], "1");
    assert_eq!(ann[DESIRED_REPLICAS_ANNOTATION], "3");
    assert_eq!(ann[MAX_REPLICAS_ANNOTATION], "4");
}

#[test]
fn setting_a_condition_keeps_the_transition_time_of_an_unchanged_status() {
    let t0 = Time(Timestamp::from_second(0).unwrap());
    let t1 = Time(Timestamp::from_second(10).unwrap());
    let mut s = DeploymentStatus::default();
    set_condition(
        &mut s,
        new_condition(
            CONDITION_PROGRESSING,
            "True",
            REASON_NEW_RS_CREATED,
            "a".into(),
            &t0,
        ),
    );
    set_condition(
        &mut s,
        new_condition(
            CONDITION_AVAILABLE,
            "True",
            REASON_MIN_AVAILABLE,
            "b".into(),
            &t0,
        ),
    );
    set_condition(
        &mut s,
        new_condition(
            CONDITION_PROGRESSING,
            "True",
            REASON_RS_UPDATED,
            "c".into(),
            &t1,
        ),
    );
    let c = get_condition(&s, CONDITION_PROGRESSING).unwrap();
    assert_eq!(c.reason.as_deref(), Some(REASON_RS_UPDATED));
    assert_eq!(c.last_transition_time, Some(t0));
    assert_eq!(c.last_update_time, Some(t1));
    // The replaced condition moved to the end.
    assert_eq!(
        s.conditions.as_ref().unwrap()[1].type_,
        CONDITION_PROGRESSING
    );
}

#[test]
fn terminating_replica_counts_follow_the_upstream_cases() {
    // Upstream TestGetReplicaCountForReplicaSets (deployment_util_test.go), its terminating
    // column.
    let rs = |observed: i64, terminating: Option<i32>| {
        Arc::new(StoredReplicaSet::from_k8s(ReplicaSet {
            status: Some(ReplicaSetStatus {
                observed_generation: (observed != 0).then_some(observed),
                terminating_replicas: terminating,
                ..Default::default()
            }),
            ..Default::default()
        }))
    };
    let rs1 = rs(1, Some(3));
    let rs2 = rs(0, Some(1));
    let unsynced = rs(0, None);
    let dropped = rs(1, None);
    let cases = [
        ("scaling down one ReplicaSet", vec![rs1.clone()], Some(3)),
        ("scaling down two", vec![rs1.clone(), rs2.clone()], Some(4)),
        (
            "an unsynced ReplicaSet counts nothing",
            vec![unsynced.clone()],
            Some(0),
        ),
        (
            "two scaling down and an unsynced one scaling up",
            vec![rs1.clone(), rs2.clone(), unsynced.clone()],
            Some(4),
        ),
        (
            "a synced ReplicaSet without the field is unknown",
            vec![dropped.clone()],
            None,
        ),
        (
            "one unknown ReplicaSet makes the whole sum unknown",
            vec![rs1, rs2, unsynced, dropped],
            None,
        ),
    ];
    for (name, rss, want) in cases {
        assert_eq!(terminating_replica_count(&rss), want, "{name}");
    }
}

#[test]
fn the_new_replica_set_is_the_oldest_with_the_template_and_the_old_ones_are_the_rest() {
    let mut d = deployment(3, IntOrString::Int(1), IntOrString::Int(0));
    let template = |image: &str| PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        }),
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            containers: vec![k8s_openapi::api::core::v1::Container {
                name: "c".into(),
                image: Some(image.into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
    };
    d.spec.as_mut().unwrap().template = template("v2").into();
    let with = |name: &str, created: i64, image: &str| {
        let mut r = StoredReplicaSet::clone(&rs(name, 1, None, created));
        r.metadata.uid = Some(format!("uid-{name}"));
        let mut t = template(image);
        let labels = t.metadata.as_mut().unwrap().labels.as_mut().unwrap();
        labels.insert(POD_TEMPLATE_HASH_LABEL.into(), name.into());
        r.spec.as_mut().unwrap().template = Some(t.into());
        Arc::new(r)
    };
    let list = vec![
        with("late", 30, "v2"),
        with("old", 10, "v1"),
        with("first", 20, "v2"),
        Arc::new(StoredReplicaSet::clone(&rs("bare", 0, None, 5))),
    ];
    let new_rs = find_new_replica_set(&d, &list).expect("a ReplicaSet with the template");
    assert_eq!(new_rs.metadata.name.as_deref(), Some("first"));
    let names = |l: Vec<Arc<StoredReplicaSet>>| -> Vec<String> {
        l.iter().map(|r| r.metadata.name.clone().unwrap()).collect()
    };
    assert_eq!(
        names(find_old_replica_sets(&d, &list)),
        ["late", "old", "bare"]
    );
    assert_eq!(
        names(old_replica_sets(Some(new_rs.as_ref()), &list)),
        ["late", "old", "bare"]
    );
    // Without a ReplicaSet of the template every one is old.
    d.spec.as_mut().unwrap().template = template("v3").into();
    assert!(find_new_replica_set(&d, &list).is_none());
    assert_eq!(names(old_replica_sets(None, &list)).len(), 4);
}

#[test]
fn the_unchanged_annotations_check_agrees_with_setting_them() {
    // Deployment annotations: none, one copied, one the controller owns (never copied).
    let d_annotations: [Option<&[(&str, &str)]>; 3] = [
        None,
        Some(&[("team", "a")]),
        Some(&[("team", "a"), (REVISION_ANNOTATION, "9")]),
    ];
    // ReplicaSet annotations: none, empty, the copy present or different, revisions missing,
    // empty, malformed, lower, equal and higher.
    let rs_annotations: [Option<&[(&str, &str)]>; 9] = [
        None,
        Some(&[]),
        Some(&[(REVISION_ANNOTATION, "2")]),
        Some(&[("team", "a"), (REVISION_ANNOTATION, "2")]),
        Some(&[("team", "b"), (REVISION_ANNOTATION, "3")]),
        Some(&[("team", "a"), (REVISION_ANNOTATION, "")]),
        Some(&[("team", "a"), (REVISION_ANNOTATION, "x")]),
        Some(&[(REVISION_ANNOTATION, "x")]),
        Some(&[("team", "a"), (REVISION_ANNOTATION, "1")]),
    ];
    let map = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let mut unchanged_seen = 0;
    for da in d_annotations {
        let mut d = deployment(3, IntOrString::Int(1), IntOrString::Int(0));
        d.metadata.annotations = da.map(map);
        for ra in rs_annotations {
            for new_revision in [-1, 0, 1, 2, 3] {
                let mut r = StoredReplicaSet::clone(&rs("a", 3, None, 0));
                r.metadata.annotations = ra.map(map);
                let unchanged = new_replica_set_annotations_unchanged(&d, &r, new_revision);
                let before = r.metadata.annotations.clone().unwrap_or_default();
                let mut copy = r.clone();
                let changed = set_new_replica_set_annotations(&d, &mut copy, new_revision, true);
                let after = copy.metadata.annotations.clone().unwrap_or_default();
                let case = format!("{da:?} {ra:?} revision {new_revision}");
                if unchanged {
                    unchanged_seen += 1;
                    assert!(
                        !changed,
                        "{case}: reported unchanged, but setting changed them"
                    );
                    assert_eq!(before, after, "{case}: reported unchanged");
                } else {
                    assert!(
                        changed || before != after,
                        "{case}: reported a change, but setting changed nothing"
                    );
                }
            }
        }
    }
    assert!(unchanged_seen > 10, "the table covers the common case");
}

fn image_template(image: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        }),
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            containers: vec![k8s_openapi::api::core::v1::Container {
                name: "c".into(),
                image: Some(image.into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
    }
}

#[test]
fn template_verdicts_are_reused_only_for_the_same_versions() {
    let mut d = deployment(3, IntOrString::Int(1), IntOrString::Int(0));
    d.spec.as_mut().unwrap().template = image_template("v2").into();
    let d = Arc::new(d);
    let with = |name: &str, created: i64, image: &str| {
        let mut r = StoredReplicaSet::clone(&rs(name, 1, None, created));
        r.metadata.uid = Some(format!("uid-{name}"));
        let mut t = image_template(image);
        let labels = t.metadata.as_mut().unwrap().labels.as_mut().unwrap();
        labels.insert(POD_TEMPLATE_HASH_LABEL.into(), name.into());
        r.spec.as_mut().unwrap().template = Some(t.into());
        Arc::new(r)
    };
    let (v1, v2) = (with("one", 10, "v1"), with("two", 20, "v2"));
    let mut verdicts = TemplateVerdicts::default();
    assert!(verdicts.equal(&d, &v2));
    assert!(!verdicts.equal(&d, &v1));
    assert_eq!(verdicts.len(), 2);
    // Asked again about the same versions: answered from the table.
    assert!(verdicts.equal(&d, &v2));
    assert!(!verdicts.equal(&d, &v1));
    assert_eq!(verdicts.len(), 2);

    // The Deployment changed through its only strong reference: with the table's Weak beside
    // it, `make_mut` moves it, so the old verdicts do not answer for the new version.
    let mut changed = d.clone();
    drop(d);
    Arc::make_mut(&mut changed).spec.as_mut().unwrap().template = image_template("v1").into();
    assert!(!verdicts.equal(&changed, &v2));
    assert!(verdicts.equal(&changed, &v1));
    assert_eq!(verdicts.len(), 4);

    // A new version of a ReplicaSet (its template changed) gets a verdict of its own.
    let mut v2_changed = StoredReplicaSet::clone(&v2);
    v2_changed.spec.as_mut().unwrap().template = Some(image_template("v1").into());
    let v2_changed = Arc::new(v2_changed);
    assert!(verdicts.equal(&changed, &v2_changed));

    // Finding the new ReplicaSet through the table agrees with finding it directly.
    let list = vec![v2.clone(), v1.clone(), v2_changed.clone()];
    let uid = |r: Option<Arc<StoredReplicaSet>>| r.and_then(|r| r.metadata.uid.clone());
    assert_eq!(
        uid(find_new_replica_set_by(&list, |r| verdicts.equal(&changed, r))),
        uid(find_new_replica_set(&changed, &list))
    );
    assert_eq!(
        uid(find_new_replica_set(&changed, &list)).as_deref(),
        Some("uid-one")
    );
    verdicts.clear();
    assert!(verdicts.is_empty());
}

#[test]
fn the_available_condition_is_built_only_when_it_changes_and_as_set_condition_sets_it() {
    use crate::deployment::sync::set_available_condition;
    let t0 = Time(Timestamp::from_second(0).unwrap());
    let t1 = Time(Timestamp::from_second(10).unwrap());
    let priors: Vec<Option<(&str, &str)>> = vec![
        None,
        Some(("True", REASON_MIN_AVAILABLE)),
        Some(("False", REASON_MIN_UNAVAILABLE)),
        Some(("True", "SomethingElse")),
        Some(("False", REASON_MIN_AVAILABLE)),
    ];
    let wanted = [
        (
            "True",
            REASON_MIN_AVAILABLE,
            "Deployment has minimum availability.",
        ),
        (
            "False",
            REASON_MIN_UNAVAILABLE,
            "Deployment does not have minimum availability.",
        ),
    ];
    for prior in &priors {
        for (status, reason, message) in wanted {
            let mut start = DeploymentStatus::default();
            set_condition(
                &mut start,
                new_condition(
                    CONDITION_PROGRESSING,
                    "True",
                    REASON_NEW_RS_CREATED,
                    "p".into(),
                    &t0,
                ),
            );
            if let Some((s, r)) = prior {
                set_condition(
                    &mut start,
                    new_condition(CONDITION_AVAILABLE, s, r, "old message".into(), &t0),
                );
            }
            let mut want = start.clone();
            set_condition(
                &mut want,
                new_condition(CONDITION_AVAILABLE, status, reason, message.into(), &t1),
            );
            let mut got = start.clone();
            set_available_condition(&mut got, status, reason, message, &t1);
            assert_eq!(got, want, "prior {prior:?}, set {status} {reason}");
        }
    }
}

//! Tests of the backoff and of the relist's difference.

use std::sync::Arc;

use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::Cache;

use super::*;

fn class(name: &str, rv: u64) -> Object {
    Object::PriorityClass(Arc::new(PriorityClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            resource_version: Some(rv.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }))
}

#[test]
fn each_wait_is_its_step_plus_up_to_as_much_again_and_the_steps_double_up_to_thirty_seconds() {
    let mut b = Backoff::new(7);
    let t0 = Duration::from_secs(1000);
    let steps = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0];
    for (i, step) in steps.into_iter().enumerate() {
        let wait = b.next(t0 + Duration::from_secs(i as u64)).as_secs_f64();
        assert!(
            wait >= step && wait <= 2.0 * step,
            "wait {i}: {wait} outside [{step}, {}]",
            2.0 * step
        );
    }
}

#[test]
fn the_jitter_comes_from_the_seed() {
    let t0 = Duration::from_secs(1000);
    let waits = |seed| {
        let mut b = Backoff::new(seed);
        (0..4)
            .map(|i| b.next(t0 + Duration::from_secs(i)))
            .collect::<Vec<_>>()
    };
    assert_eq!(waits(1), waits(1));
    assert_ne!(waits(1), waits(2));
}

#[test]
fn a_failure_two_minutes_after_the_last_wait_starts_again_from_800_ms() {
    let mut b = Backoff::new(3);
    let t0 = Duration::from_secs(1000);
    for i in 0..5 {
        b.next(t0 + Duration::from_secs(i));
    }
    let soon = b.next(t0 + Duration::from_secs(60));
    assert!(soon >= Duration::from_secs(30), "{soon:?}");
    let later = b.next(t0 + Duration::from_secs(60 + 121));
    assert!(later <= Duration::from_millis(1600), "{later:?}");
}

#[test]
fn pause_ends_early_when_the_server_stops() {
    let stopping = AtomicBool::new(true);
    assert!(!pause(&stopping, Duration::from_secs(3600)));
    let running = AtomicBool::new(false);
    assert!(pause(&running, Duration::from_millis(30)));
}

fn summary(events: &[WatchEvent]) -> Vec<(EventType, String, Option<String>, u64)> {
    events
        .iter()
        .map(|e| {
            (
                e.type_,
                e.object.name().to_string(),
                e.old.as_ref().map(|o| o.resource_version().to_string()),
                e.resource_version,
            )
        })
        .collect()
}

#[test]
fn the_first_list_adds_every_object_with_its_own_resource_version() {
    let mut inf = Informer::new();
    let mut seen = BTreeSet::new();
    let events = relist(&mut inf, &mut seen, vec![class("a", 3), class("b", 5)], 9);
    assert_eq!(
        summary(&events),
        vec![
            (EventType::Added, "a".into(), None, 3),
            (EventType::Added, "b".into(), None, 5),
        ]
    );
    assert_eq!(seen, BTreeSet::from([Kind::PriorityClass]));
}

#[test]
fn a_relist_modifies_the_objects_still_there_and_deletes_the_vanished_ones() {
    let mut inf = Informer::new();
    let mut seen = BTreeSet::new();
    relist(&mut inf, &mut seen, vec![class("a", 3), class("b", 5)], 9);
    let events = relist(
        &mut inf,
        &mut seen,
        vec![class("b", 12), class("c", 13)],
        14,
    );
    assert_eq!(
        summary(&events),
        vec![
            (EventType::Modified, "b".into(), Some("5".into()), 12),
            (EventType::Added, "c".into(), None, 13),
            (EventType::Deleted, "a".into(), Some("3".into()), 14),
        ]
    );
    let names: Vec<&str> = inf.list(Kind::PriorityClass).map(Object::name).collect();
    assert_eq!(names, vec!["b", "c"]);
}

#[test]
fn a_kind_missing_from_the_relist_has_all_its_objects_deleted() {
    let mut inf = Informer::new();
    let mut seen = BTreeSet::new();
    relist(&mut inf, &mut seen, vec![class("a", 3)], 3);
    let events = relist(&mut inf, &mut seen, Vec::new(), 8);
    assert_eq!(
        summary(&events),
        vec![(EventType::Deleted, "a".into(), Some("3".into()), 8)]
    );
    assert_eq!(inf.list(Kind::PriorityClass).count(), 0);
}

//! Tests of the create paths the handlers share with PATCH: a dry-run create (POST or an
//! apply that creates) admits and validates without writing, refuses a taken name, and every
//! write records its field manager.

use std::sync::Arc;

use jiff::Timestamp;
use kubeplane_core::version::KubeVersion;
use serde_json::json;

use super::*;
use crate::clock::{ClockMode, ServerClock};
use crate::request::{parse_path, Target};

fn state() -> Arc<State> {
    let clock = ServerClock::start(Timestamp::UNIX_EPOCH, ClockMode::Virtual { speed: 1.0 });
    let client = StorageClient::new(1, clock.api_clock(), 1024);
    State::new(
        client,
        clock,
        "token".into(),
        KubeVersion::default(),
        "127.0.0.1:0".into(),
    )
}

fn request(path: &str) -> ResourceRequest {
    match parse_path(path, &crate::crds::CustomResources::default()) {
        Ok(Target::Resource(r)) => r,
        other => panic!("{path}: {other:?}"),
    }
}

fn class(name: &str) -> Value {
    json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": name}, "value": 10})
}

fn refused(r: Result<Reply>) -> StatusError {
    match r {
        Ok(r) => panic!("answered {}", r.code),
        Err(e) => e,
    }
}

fn body(r: &Reply) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

fn managers(v: &Value) -> Vec<(String, String)> {
    v.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or("").to_string(),
                e["operation"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

const CLASSES: &str = "/apis/scheduling.k8s.io/v1/priorityclasses";

#[test]
fn a_dry_run_create_answers_the_admitted_object_and_writes_nothing() {
    let state = state();
    let q = Query::parse(Some("dryRun=All&fieldManager=tester"));
    let before = state.current_revision();
    let Ok(r) = create(&state, &request(CLASSES), &q, &class("high")) else {
        panic!("refused")
    };
    assert_eq!(r.code, 201);
    let v = body(&r);
    assert_eq!(v.pointer("/metadata/name"), Some(&json!("high")));
    assert_eq!(managers(&v), vec![("tester".into(), "Update".into())]);
    assert_eq!(state.current_revision(), before, "a dry run must not write");
}

#[test]
fn a_dry_run_create_is_validated_and_refuses_a_taken_name() {
    let state = state();
    let dry = Query::parse(Some("dryRun=All"));
    let mut too_high = class("too-high");
    too_high["value"] = json!(2_000_000_000);
    let invalid = refused(create(&state, &request(CLASSES), &dry, &too_high));
    assert_eq!(invalid.code, 422, "{}", invalid.message);
    assert!(create(
        &state,
        &request(CLASSES),
        &Query::default(),
        &class("taken")
    )
    .is_ok());
    let taken = refused(create(&state, &request(CLASSES), &dry, &class("taken")));
    assert_eq!((taken.code, taken.reason), (409, "AlreadyExists"));
}

#[test]
fn a_dry_run_apply_that_would_create_answers_201_with_the_appliers_entry_and_writes_nothing() {
    let state = state();
    let q = Query::parse(Some("dryRun=All&fieldManager=applier"));
    let before = state.current_revision();
    let req = request(&format!("{CLASSES}/new"));
    let yaml = serde_json::to_vec(&class("new")).unwrap();
    let r = crate::patch::patch(&state, &req, &q, "application/apply-patch+yaml", &yaml).unwrap();
    assert_eq!(r.code, 201);
    assert_eq!(
        managers(&body(&r)),
        vec![("applier".into(), "Apply".into())]
    );
    assert_eq!(state.current_revision(), before, "a dry run must not write");
    let q = Query::parse(Some("fieldManager=applier"));
    let r = crate::patch::patch(&state, &req, &q, "application/apply-patch+yaml", &yaml).unwrap();
    assert_eq!(r.code, 201);
    assert!(state.current_revision() > before);
}

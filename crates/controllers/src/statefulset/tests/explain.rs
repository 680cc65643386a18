//! The StatefulSet controller's explanation records: why the next ordinal waits, why a
//! rolling update waits, and why an update stopped.

use serde_json::{json, Value};

use super::{set_manifest, Harness};

fn records<'a>(h: &'a Harness, decision: &str) -> Vec<&'a Value> {
    h.client
        .records
        .iter()
        .filter(|r| r["kind"] == "StatefulSetDecision" && r["decision"] == decision)
        .collect()
}

fn field<'a>(rs: &[&'a Value], name: &str) -> Vec<&'a str> {
    rs.iter().map(|r| r[name].as_str().unwrap()).collect()
}

fn running(replicas: i32, extra: &[(&str, Value)]) -> (Harness, Value) {
    let mut h = Harness::new(&[]);
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

#[test]
fn ordered_ready_says_which_pod_the_next_ordinal_waits_for_once_per_wait() {
    let mut h = Harness::new(&[]);
    h.create(&set_manifest("web", 3, &[]));
    h.advance(60);
    let waits = records(&h, "WaitingForPod");
    assert_eq!(field(&waits, "pod"), ["web-1"]);
    assert_eq!(field(&waits, "waitingFor"), ["web-0"]);
    assert_eq!(waits[0]["reason"], "OrderedReady");
    assert_eq!(
        waits[0]["message"],
        "pod web-1 is not created until pod web-0 is Running and Ready (podManagementPolicy \
         OrderedReady); it is Pending"
    );
    h.report("web-0", "Running", false);
    h.ready("web-0");
    h.ready("web-1");
    h.ready("web-2");
    let waits = records(&h, "WaitingForPod");
    assert_eq!(field(&waits, "pod"), ["web-1", "web-1", "web-2"]);
    assert!(waits[1]["message"]
        .as_str()
        .unwrap()
        .ends_with("it is Running, not Ready"));
    assert_eq!(field(&waits, "waitingFor"), ["web-0", "web-0", "web-1"]);
}

#[test]
fn parallel_pod_management_waits_for_nothing() {
    let mut h = Harness::new(&[]);
    h.create(&set_manifest(
        "web",
        3,
        &[("podManagementPolicy", json!("Parallel"))],
    ));
    assert_eq!(h.pod_names(), ["web-0", "web-1", "web-2"]);
    assert!(records(&h, "WaitingForPod").is_empty());
}

#[test]
fn a_rolling_update_says_which_unready_pod_holds_the_next_one() {
    let (mut h, manifest) = running(3, &[]);
    h.apply(&with_image(&manifest, "nginx:2"));
    let waits = records(&h, "RolloutWaiting");
    assert_eq!(field(&waits, "pod"), ["web-1"]);
    assert_eq!(field(&waits, "waitingFor"), ["web-2"]);
    assert_eq!(waits[0]["reason"], "PodUnavailable");
    h.ready("web-2");
    h.ready("web-1");
    h.ready("web-0");
    let waits = records(&h, "RolloutWaiting");
    assert_eq!(field(&waits, "pod"), ["web-1", "web-0"]);
    assert!(
        records(&h, "UpdateStopped").is_empty(),
        "the update finished"
    );
}

#[test]
fn an_update_that_stops_at_the_partition_names_the_pods_it_keeps() {
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}});
    let (mut h, manifest) = running(3, &[("updateStrategy", strategy)]);
    h.apply(&with_image(&manifest, "nginx:2"));
    assert!(
        records(&h, "UpdateStopped").is_empty(),
        "web-2 is being updated"
    );
    h.ready("web-2");
    h.advance(60);
    let stopped = records(&h, "UpdateStopped");
    assert_eq!(stopped.len(), 1);
    let r = stopped[0];
    assert_eq!(r["reason"], "Partition");
    assert_eq!(r["partition"], 2);
    assert_eq!(r["outdated"], json!(["web-0", "web-1"]));
    assert_eq!(r["updateRevision"], h.status("web")["updateRevision"]);
    assert!(r["message"]
        .as_str()
        .unwrap()
        .starts_with("the update stopped at partition 2: the pods below it keep their revision"));
    assert!(r["message"].as_str().unwrap().contains("(web-0, web-1)"));
}

#[test]
fn on_delete_names_the_pods_that_keep_their_revision() {
    let (mut h, manifest) = running(2, &[("updateStrategy", json!({"type": "OnDelete"}))]);
    h.apply(&with_image(&manifest, "nginx:2"));
    let stopped = records(&h, "UpdateStopped");
    assert_eq!(field(&stopped, "reason"), ["OnDelete"]);
    assert_eq!(stopped[0]["outdated"], json!(["web-0", "web-1"]));
    h.delete_pod("web-1");
    h.ready("web-1");
    let stopped = records(&h, "UpdateStopped");
    assert_eq!(stopped.len(), 2);
    assert_eq!(stopped[1]["outdated"], json!(["web-0"]));
}

//! The DaemonSet controller's explanation records: why a node has no daemon pod, and why a
//! rolling update waits.

use super::*;

fn records<'a>(h: &'a Harness, decision: &str) -> Vec<&'a Value> {
    h.client
        .records
        .iter()
        .filter(|r| r["kind"] == "DaemonSetDecision" && r["decision"] == decision)
        .collect()
}

fn node_with_taint(name: &str, key: &str, value: &str, effect: &str) -> Node {
    let mut n = node(name, &[("agent", "yes")], &[]);
    n.spec.as_mut().unwrap().taints = Some(vec![Taint {
        key: key.into(),
        value: Some(value.into()),
        effect: effect.into(),
        ..Default::default()
    }]);
    n
}

#[test]
fn each_node_without_a_daemon_pod_is_explained_once_with_its_reason() {
    let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]}]}]}}});
    let ds = daemon_set_json(json!({"template": {"spec": {
        "nodeSelector": {"agent": "yes"}, "affinity": affinity}}}));
    let fits = node("fits", &[("agent", "yes"), ("zone", "a")], &[]);
    let no_label = node("no-label", &[("zone", "a")], &[]);
    let wrong_zone = node("wrong-zone", &[("agent", "yes"), ("zone", "b")], &[]);
    let mut tainted = node_with_taint("tainted", "dedicated", "db", "NoSchedule");
    tainted
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("zone".into(), "a".into());
    let mut h = Harness::new(vec![fits, no_label, wrong_zone, tainted], ds);
    h.advance(60);
    let skipped = records(&h, "NodeSkipped");
    let by_node: Vec<(&str, &str)> = skipped
        .iter()
        .map(|r| (r["node"].as_str().unwrap(), r["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        by_node,
        [
            ("no-label", "NodeSelectorMismatch"),
            ("tainted", "UntoleratedTaint"),
            ("wrong-zone", "NodeAffinityMismatch"),
        ],
        "one record per node and reason, however many syncs ran"
    );
    let taint = skipped[1];
    assert_eq!(taint["taint"], "dedicated=db:NoSchedule");
    assert_eq!(
        taint["message"],
        "node tainted gets no daemon pod: the pod does not tolerate its taint \
         dedicated=db:NoSchedule (a daemon pod already there stays: the taint is NoSchedule)"
    );
    assert_eq!(
        (taint["namespace"].as_str(), taint["name"].as_str()),
        (Some("default"), Some("foo"))
    );
    assert_eq!(h.target_nodes(), ["fits"]);
}

#[test]
fn a_node_whose_reason_changes_is_explained_again() {
    let ds = daemon_set_json(json!({"template": {"spec": {"nodeSelector": {"agent": "yes"}}}}));
    let mut h = Harness::new(vec![node("n1", &[], &[])], ds);
    assert_eq!(records(&h, "NodeSkipped").len(), 1);
    // Labelled in, and tainted with a NoSchedule taint the pod does not tolerate. (The
    // controller syncs on a node update only when the node's fit changes, as upstream's
    // `updateNode`; the record follows the syncs.)
    let n = node_with_taint("n1", "maintenance", "now", "NoSchedule");
    let cur = h.client.cache().get_node("n1").unwrap().clone();
    let mut n = n;
    n.metadata.resource_version = cur.metadata.resource_version.clone();
    h.client.update(Object::Node(Arc::new(n.into()))).unwrap();
    h.settle();
    let skipped = records(&h, "NodeSkipped");
    assert_eq!(skipped.len(), 2);
    assert_eq!(skipped[1]["reason"], "UntoleratedTaint");
    assert_eq!(
        skipped[1]["message"],
        "node n1 gets no daemon pod: the pod does not tolerate its taint maintenance=now:NoSchedule \
         (a daemon pod already there stays: the taint is NoSchedule)"
    );
}

#[test]
fn a_rolling_update_held_by_max_unavailable_says_which_old_pods_wait() {
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}});
    let mut h = Harness::new(
        nodes(5),
        daemon_set_json(json!({"updateStrategy": strategy})),
    );
    h.run_all();
    assert!(
        records(&h, "RolloutWaiting").is_empty(),
        "nothing to roll out yet"
    );
    h.apply_ds(v2(strategy));
    let waiting = records(&h, "RolloutWaiting");
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let r = waiting[0];
    assert_eq!(r["reason"], "MaxUnavailable");
    assert_eq!(
        (r["unavailable"].as_i64(), r["maxUnavailable"].as_i64()),
        (Some(2), Some(2))
    );
    assert_eq!(
        r["waiting"].as_array().unwrap().len(),
        3,
        "five nodes, two being replaced"
    );
    assert_eq!(
        r["message"],
        "3 old pod(s) wait for their replacement: 2 of 5 node(s) have no available daemon pod \
         and maxUnavailable is 2; an old pod is deleted once a new one is available"
    );
    h.run_all();
    h.run_all();
    h.run_all();
    assert_eq!(images(&h), ["foo/bar:v2"; 5]);
    let waiting = records(&h, "RolloutWaiting");
    let left: Vec<usize> = waiting
        .iter()
        .map(|r| r["waiting"].as_array().unwrap().len())
        .collect();
    assert_eq!(left, [3, 1], "a record each time the waiting pods change");
}

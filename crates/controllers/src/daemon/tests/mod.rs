//! Tests of the DaemonSet controller, after upstream's `daemon_controller_test.go` and
//! `update_test.go`: the controller runs over a [`TestClient`] (no scheduler: pods stay unbound
//! unless a test binds them), with case names as sentences.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, NodeSpec, PodCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubeplane_api::{
    Client, Component, DeleteOptions, DynamicObject, Kind, Object, ObjectKey, PodExt, StoredPod,
};
use kubeplane_core::time::SimDuration;
use kubeplane_registry::testing::TestClient;
use serde_json::{json, Value};

use super::util::{get_target_node_name, DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY};
use super::*;
use crate::controller_utils::pod_labels;

// ----- builders ---------------------------------------------------------------------------------

fn node(name: &str, labels: &[(&str, &str)], taints: &[(&str, &str)]) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: (!taints.is_empty()).then(|| {
                taints
                    .iter()
                    .map(|(k, e)| Taint {
                        key: k.to_string(),
                        effect: e.to_string(),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }),
        status: None,
    }
}

/// The DaemonSet `foo` of `default` selecting `name=simple-daemon` (upstream's
/// `newDaemonSet`), with `extra` merged into its spec.
fn daemon_set_json(extra: Value) -> Value {
    let mut ds = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "foo", "namespace": "default", "generation": 1},
        "spec": {
            "selector": {"matchLabels": {"name": "simple-daemon"}},
            "template": {
                "metadata": {"labels": {"name": "simple-daemon"}},
                "spec": {"containers": [{"name": "foo", "image": "foo/bar"}]}
            }
        }
    });
    merge(&mut ds["spec"], extra);
    ds
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

fn ds_object(v: &Value) -> Object {
    Object::Other(Arc::new(
        DynamicObject::from_value(daemon_set_type(), v).unwrap(),
    ))
}

struct Harness {
    client: TestClient,
    dsc: DaemonSetsController,
}

impl Harness {
    fn new(nodes: Vec<Node>, ds: Value) -> Harness {
        let mut client = TestClient::new(1);
        for n in nodes {
            client.create(Object::Node(Arc::new(n.into()))).unwrap();
        }
        client.create(ds_object(&ds)).unwrap();
        let mut h = Harness {
            client,
            dsc: DaemonSetsController::new(),
        };
        h.settle();
        h
    }

    fn settle(&mut self) {
        self.client.settle(&mut [&mut self.dsc]);
    }

    fn advance(&mut self, secs: i64) {
        let until = self.client.now + SimDuration::from_secs(secs);
        self.client.run_until(until, &mut [&mut self.dsc]);
    }

    fn pods(&self) -> Vec<Arc<StoredPod>> {
        let mut pods: Vec<Arc<StoredPod>> = self
            .client
            .cache()
            .list(Kind::Pod)
            .filter_map(|o| o.as_pod().cloned())
            .collect();
        pods.sort_by_key(|p| p.metadata.name.clone());
        pods
    }

    fn target_nodes(&self) -> Vec<String> {
        let mut nodes: Vec<String> = self
            .pods()
            .iter()
            .map(|p| get_target_node_name(p).unwrap().to_string())
            .collect();
        nodes.sort();
        nodes
    }

    fn daemon_set(&self) -> DaemonSet {
        let o = self
            .client
            .cache()
            .get(Kind::Other(daemon_set_type()), "default", "foo")
            .unwrap();
        serde_json::from_value(o.to_json()).unwrap()
    }

    fn apply_ds(&mut self, ds: Value) {
        let cur = self
            .client
            .cache()
            .get(Kind::Other(daemon_set_type()), "default", "foo")
            .unwrap()
            .clone();
        let mut obj = ds_object(&ds);
        obj.meta_mut().resource_version = Some(cur.resource_version().to_string());
        obj.meta_mut().uid = Some(cur.uid().to_string());
        self.client.update(obj).unwrap();
        self.settle();
    }

    /// What the kubelets would do: terminating pods finish, then every pod is bound to its
    /// target node and Running and Ready now.
    fn run_all(&mut self) {
        for pod in self.pods() {
            if pod.metadata.deletion_timestamp.is_some() {
                let key =
                    ObjectKey::new(Kind::Pod, "default", pod.metadata.name.as_deref().unwrap());
                self.client.delete(&key, DeleteOptions::now()).unwrap();
            }
        }
        self.settle();
        let now = self.client.clock().timestamp(self.client.now);
        for pod in self.pods() {
            if pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            self.set_pod(&pod, |p| {
                let node = get_target_node_name(p).unwrap().to_string();
                p.set_node_name(Some(node));
            });
            let pod = self.pod(pod.metadata.name.as_deref().unwrap());
            self.set_status(&pod, "Running", Some(now.clone()));
        }
        self.settle();
    }

    fn pod(&self, name: &str) -> Arc<StoredPod> {
        self.client
            .cache()
            .get_pod("default", name)
            .unwrap()
            .clone()
    }

    fn set_pod(&mut self, pod: &StoredPod, f: impl FnOnce(&mut StoredPod)) {
        let mut p = pod.clone();
        f(&mut p);
        self.client.update(Object::Pod(Arc::new(p))).unwrap();
    }

    fn set_status(&mut self, pod: &StoredPod, phase: &str, ready_since: Option<Time>) {
        let mut p = pod.clone();
        p.update_status(|st| {
            st.phase = Some(phase.into());
            st.conditions = ready_since.map(|t| {
                vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(t),
                    ..Default::default()
                }]
            });
        });
        self.client.update_status(Object::Pod(Arc::new(p))).unwrap();
    }

    fn events(&self, reason: &str) -> Vec<String> {
        self.client
            .events_with_reason(reason)
            .iter()
            .map(|e| e.message().to_string())
            .collect()
    }
}

fn nodes(n: usize) -> Vec<Node> {
    (0..n)
        .map(|i| node(&format!("node-{i}"), &[], &[]))
        .collect()
}

// ----- placement ------------------------------------------------------------------------------

#[test]
fn a_daemon_set_launches_one_pod_per_node_pinned_by_a_node_affinity_term() {
    let h = Harness::new(nodes(5), daemon_set_json(json!({})));
    assert_eq!(
        h.target_nodes(),
        ["node-0", "node-1", "node-2", "node-3", "node-4"]
    );
    for pod in h.pods() {
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("foo-"));
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.node_name, None, "the scheduler binds it");
        let terms = &spec
            .affinity
            .as_ref()
            .unwrap()
            .node_affinity
            .as_ref()
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .unwrap()
            .node_selector_terms;
        assert_eq!(terms.len(), 1);
        let field = &terms[0].match_fields.as_ref().unwrap()[0];
        assert_eq!(
            (field.key.as_str(), field.operator.as_str()),
            ("metadata.name", "In")
        );
        assert!(pod_labels(&pod).contains_key(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY));
        assert_eq!(pod_labels(&pod)["name"], "simple-daemon");
    }
    let created = h.events(REASON_SUCCESSFUL_CREATE);
    assert_eq!(created.len(), 5);
    assert!(created.iter().all(|m| m.starts_with("Created pod: foo-")));
}

#[test]
fn daemon_pods_tolerate_node_problems_forever_and_host_network_pods_the_network_taint() {
    let tol_keys = |h: &Harness| -> Vec<(String, String, Option<i64>)> {
        let pod = h.pods()[0].clone();
        pod.spec
            .as_ref()
            .unwrap()
            .tolerations
            .clone()
            .unwrap()
            .into_iter()
            .map(|t| (t.key.unwrap(), t.effect.unwrap(), t.toleration_seconds))
            .collect()
    };
    let h = Harness::new(nodes(1), daemon_set_json(json!({})));
    let want = |k: &str, e: &str| (k.to_string(), e.to_string(), None);
    assert_eq!(
        tol_keys(&h),
        vec![
            want("node.kubernetes.io/not-ready", "NoExecute"),
            want("node.kubernetes.io/unreachable", "NoExecute"),
            want("node.kubernetes.io/disk-pressure", "NoSchedule"),
            want("node.kubernetes.io/memory-pressure", "NoSchedule"),
            want("node.kubernetes.io/pid-pressure", "NoSchedule"),
            want("node.kubernetes.io/unschedulable", "NoSchedule"),
        ]
    );
    let host = daemon_set_json(json!({"template": {"spec": {"hostNetwork": true,
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                         "effect": "NoExecute", "tolerationSeconds": 300}]}}}));
    let h = Harness::new(nodes(1), host);
    let tols = tol_keys(&h);
    assert_eq!(
        tols.len(),
        7,
        "the user's not-ready toleration is replaced, not doubled"
    );
    assert_eq!(tols[0], want("node.kubernetes.io/not-ready", "NoExecute"));
    assert_eq!(
        tols[6],
        want("node.kubernetes.io/network-unavailable", "NoSchedule")
    );
}

#[test]
fn node_should_run_daemon_pod_follows_node_name_selector_affinity_and_taints() {
    let ds = |extra: Value| {
        let v = daemon_set_json(extra);
        DaemonPodView::new(&serde_json::from_value::<DaemonSet>(v).unwrap())
    };
    let cases: Vec<(&str, DaemonPodView, Node, (bool, bool))> = vec![
        (
            "a plain node runs the pod",
            ds(json!({})),
            node("n", &[], &[]),
            (true, true),
        ),
        (
            "a template nodeName naming another node excludes it",
            ds(json!({"template": {"spec": {"nodeName": "other"}}})),
            node("n", &[], &[]),
            (false, false),
        ),
        (
            "a nodeSelector the node's labels miss excludes it",
            ds(json!({"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}})),
            node("n", &[("disk", "hdd")], &[]),
            (false, false),
        ),
        (
            "a nodeSelector the labels satisfy admits it",
            ds(json!({"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}})),
            node("n", &[("disk", "ssd")], &[]),
            (true, true),
        ),
        (
            "a required node affinity the node fails excludes it",
            ds(json!({"template": {"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
            ]}}}}}})),
            node("n", &[("zone", "b")], &[]),
            (false, false),
        ),
        (
            "an untolerated NoSchedule taint keeps new pods off but lets a running one stay",
            ds(json!({})),
            node("n", &[], &[("dedicated", "NoSchedule")]),
            (false, true),
        ),
        (
            "an untolerated NoExecute taint excludes the node entirely",
            ds(json!({})),
            node("n", &[], &[("dedicated", "NoExecute")]),
            (false, false),
        ),
        (
            "a PreferNoSchedule taint changes nothing",
            ds(json!({})),
            node("n", &[], &[("dedicated", "PreferNoSchedule")]),
            (true, true),
        ),
        (
            "pressure, unschedulable and not-ready taints are tolerated by every daemon pod",
            ds(json!({})),
            node(
                "n",
                &[],
                &[
                    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                    ("node.kubernetes.io/unschedulable", "NoSchedule"),
                    ("node.kubernetes.io/not-ready", "NoExecute"),
                ],
            ),
            (true, true),
        ),
        (
            "network-unavailable is tolerated only with hostNetwork",
            ds(json!({})),
            node(
                "n",
                &[],
                &[("node.kubernetes.io/network-unavailable", "NoSchedule")],
            ),
            (false, true),
        ),
        (
            "a hostNetwork pod tolerates network-unavailable",
            ds(json!({"template": {"spec": {"hostNetwork": true}}})),
            node(
                "n",
                &[],
                &[("node.kubernetes.io/network-unavailable", "NoSchedule")],
            ),
            (true, true),
        ),
    ];
    for (name, view, n, want) in cases {
        assert_eq!(view.node_should_run_daemon_pod(&n), want, "{name}");
    }
}

#[test]
fn a_node_added_later_gets_its_pod_and_a_node_relabelled_out_of_the_selector_loses_it() {
    let ds = daemon_set_json(json!({"template": {"spec": {"nodeSelector": {"agent": "yes"}}}}));
    let mut h = Harness::new(vec![node("a", &[("agent", "yes")], &[])], ds);
    assert_eq!(h.target_nodes(), ["a"]);
    h.client
        .create(Object::Node(Arc::new(
            node("b", &[("agent", "yes")], &[]).into(),
        )))
        .unwrap();
    h.client
        .create(Object::Node(Arc::new(node("c", &[], &[]).into())))
        .unwrap();
    h.settle();
    assert_eq!(h.target_nodes(), ["a", "b"]);
    let mut a = Node::clone(h.client.cache().get_node("a").unwrap());
    a.metadata.labels = None;
    h.client.update(Object::Node(Arc::new(a.into()))).unwrap();
    h.settle();
    assert_eq!(h.target_nodes(), ["b"]);
    assert_eq!(h.events(REASON_SUCCESSFUL_DELETE).len(), 1);
}

#[test]
fn an_empty_selector_is_refused_with_a_selecting_all_event_and_no_pods() {
    let mut ds = daemon_set_json(json!({}));
    ds["spec"]["selector"] = json!({});
    let h = Harness::new(nodes(2), ds);
    assert!(h.pods().is_empty());
    assert_eq!(
        h.events(REASON_SELECTING_ALL)[0],
        "This daemon set is selecting all pods. A non-empty selector is required."
    );
}

// ----- bursts and expectations -----------------------------------------------------------------

#[test]
fn one_sync_creates_at_most_250_pods_and_waits_to_observe_them_before_the_rest() {
    let mut client = TestClient::new(1);
    for n in nodes(300) {
        client.create(Object::Node(Arc::new(n.into()))).unwrap();
    }
    client
        .create(ds_object(&daemon_set_json(json!({}))))
        .unwrap();
    let mut dsc = DaemonSetsController::new();
    client.dispatch(&mut [&mut dsc]);
    dsc.run(client.now, &mut client);
    let key = ("default".to_string(), "foo".to_string());
    assert_eq!(
        client.events_with_reason(REASON_SUCCESSFUL_CREATE).len(),
        250
    );
    assert_eq!(dsc.expectations().get(&key).unwrap().add, 250);
    // Nothing more until the creates are observed.
    dsc.sync(&key, client.now, &mut client).unwrap();
    assert_eq!(
        client.events_with_reason(REASON_SUCCESSFUL_CREATE).len(),
        250
    );
    client.settle(&mut [&mut dsc]);
    assert_eq!(
        client.events_with_reason(REASON_SUCCESSFUL_CREATE).len(),
        300
    );
    assert!(dsc.expectations().satisfied(&key, client.now));
}

// ----- pods already there ------------------------------------------------------------------------

#[test]
fn of_several_pods_on_one_node_the_oldest_stays_and_the_others_are_deleted() {
    let mut h = Harness::new(nodes(1), daemon_set_json(json!({})));
    let first = h.pods()[0].clone();
    // A second pod for the same node, created later (a copy under another name).
    let mut dup = StoredPod::clone(&first);
    dup.metadata.name = Some("foo-zzz".into());
    dup.metadata.generate_name = None;
    dup.metadata.uid = None;
    dup.metadata.resource_version = None;
    h.client.now = h.client.now + SimDuration::from_secs(5);
    dup.metadata.creation_timestamp = Some(h.client.clock().timestamp(h.client.now));
    h.client.create(Object::Pod(Arc::new(dup))).unwrap();
    h.settle();
    let names: Vec<String> = h
        .pods()
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, [first.metadata.name.clone().unwrap()]);
    assert_eq!(h.events(REASON_SUCCESSFUL_DELETE), ["Deleted pod: foo-zzz"]);
}

#[test]
fn a_matching_orphan_is_adopted_instead_of_creating_a_pod() {
    let mut client = TestClient::new(1);
    client
        .create(Object::Node(Arc::new(node("node-0", &[], &[]).into())))
        .unwrap();
    let orphan = kubeplane_core::testing::PodBuilder::new("orphan")
        .label("name", "simple-daemon")
        .node("node-0")
        .obj();
    client.create(Object::Pod(Arc::new(orphan.into()))).unwrap();
    client
        .create(ds_object(&daemon_set_json(json!({}))))
        .unwrap();
    let mut dsc = DaemonSetsController::new();
    client.settle(&mut [&mut dsc]);
    assert!(client
        .events_with_reason(REASON_SUCCESSFUL_CREATE)
        .is_empty());
    let pod = client.cache().get_pod("default", "orphan").unwrap();
    let owner = crate::controller_utils::pod_controller(pod).unwrap();
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("DaemonSet", "foo")
    );
}

// ----- failed pods -------------------------------------------------------------------------------

#[test]
fn a_failed_daemon_pod_is_deleted_and_recreated_with_a_doubling_backoff_per_node() {
    let mut h = Harness::new(nodes(1), daemon_set_json(json!({})));
    let fail = |h: &mut Harness| {
        let pod = h.pods()[0].clone();
        h.set_status(&pod, "Failed", None);
        h.settle();
    };
    fail(&mut h);
    let warnings = h.events(REASON_FAILED_DAEMON_POD);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].starts_with("Found failed daemon pod default/foo-"));
    assert!(warnings[0].ends_with("on node node-0, will try to kill it"));
    assert_eq!(h.pods().len(), 1, "deleted and recreated at once");
    assert_eq!(h.events(REASON_SUCCESSFUL_CREATE).len(), 2);
    // It fails again within the 1 s backoff: it stays until the backoff ends.
    fail(&mut h);
    assert_eq!(h.events(REASON_FAILED_DAEMON_POD).len(), 1);
    h.advance(1);
    assert_eq!(h.events(REASON_FAILED_DAEMON_POD).len(), 2);
    // The next failure waits 2 s.
    fail(&mut h);
    h.advance(1);
    assert_eq!(h.events(REASON_FAILED_DAEMON_POD).len(), 2);
    h.advance(1);
    assert_eq!(h.events(REASON_FAILED_DAEMON_POD).len(), 3);
}

// ----- status --------------------------------------------------------------------------------------

#[test]
fn status_counts_scheduled_ready_available_and_misscheduled_pods_and_the_generation() {
    let ds = daemon_set_json(json!({"minReadySeconds": 10,
        "template": {"spec": {"nodeSelector": {"agent": "yes"}}}}));
    let n = |name: &str| node(name, &[("agent", "yes")], &[]);
    let mut h = Harness::new(vec![n("a"), n("b"), n("c")], ds);
    let st = h.daemon_set().status.unwrap();
    assert_eq!(
        (
            st.desired_number_scheduled,
            st.current_number_scheduled,
            st.number_ready
        ),
        (3, 3, 0)
    );
    assert_eq!(st.number_unavailable, Some(3));
    assert_eq!(st.observed_generation, Some(1));
    h.run_all();
    let st = h.daemon_set().status.unwrap();
    assert_eq!((st.number_ready, st.number_available), (3, None));
    assert_eq!(st.updated_number_scheduled, Some(3));
    h.advance(10);
    let st = h.daemon_set().status.unwrap();
    assert_eq!(
        (st.number_available, st.number_unavailable),
        (Some(3), None)
    );
    // Node c leaves the selector while its pod is still there (a NoSchedule taint it does
    // not tolerate keeps the pod: misscheduled is for pods on nodes that should not run one).
    let mut c = Node::clone(h.client.cache().get_node("c").unwrap());
    c.spec.as_mut().unwrap().taints = Some(vec![Taint {
        key: "x".into(),
        effect: "NoSchedule".into(),
        ..Default::default()
    }]);
    h.client.update(Object::Node(Arc::new(c.into()))).unwrap();
    h.settle();
    let st = h.daemon_set().status.unwrap();
    assert_eq!(
        (
            st.desired_number_scheduled,
            st.current_number_scheduled,
            st.number_misscheduled
        ),
        (2, 2, 1)
    );
}

// ----- updates -----------------------------------------------------------------------------------

fn v2(strategy: Value) -> Value {
    daemon_set_json(json!({
        "updateStrategy": strategy,
        "template": {"spec": {"containers": [{"name": "foo", "image": "foo/bar:v2"}]}}
    }))
}

fn images(h: &Harness) -> Vec<String> {
    h.pods()
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| {
            p.spec.as_ref().unwrap().containers[0]
                .image
                .clone()
                .unwrap()
        })
        .collect()
}

#[test]
fn a_rolling_update_replaces_at_most_max_unavailable_pods_at_a_time() {
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}});
    let mut h = Harness::new(
        nodes(5),
        daemon_set_json(json!({"updateStrategy": strategy})),
    );
    h.run_all();
    h.apply_ds(v2(strategy));
    // Two old pods go; they are recreated from v2 once they have terminated.
    assert_eq!(h.events(REASON_SUCCESSFUL_DELETE).len(), 2);
    assert_eq!(images(&h), ["foo/bar"; 3]);
    h.settle();
    assert_eq!(h.events(REASON_SUCCESSFUL_DELETE).len(), 2);
    // Their replacements become available: two more old pods go.
    h.run_all();
    let new = images(&h).iter().filter(|i| i.ends_with(":v2")).count();
    assert_eq!(new, 2);
    assert_eq!(h.events(REASON_SUCCESSFUL_DELETE).len(), 4);
    h.run_all();
    h.run_all();
    assert_eq!(images(&h), ["foo/bar:v2"; 5]);
    assert_eq!(h.events(REASON_SUCCESSFUL_DELETE).len(), 5);
    let st = h.daemon_set().status.unwrap();
    assert_eq!(st.updated_number_scheduled, Some(5));
    assert_eq!(st.observed_generation, Some(2));
}

#[test]
fn with_max_surge_a_new_pod_starts_beside_the_old_one_which_goes_once_the_new_is_available() {
    let strategy =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}});
    let mut h = Harness::new(
        nodes(2),
        daemon_set_json(json!({"updateStrategy": strategy})),
    );
    h.run_all();
    h.apply_ds(v2(strategy));
    assert_eq!(h.pods().len(), 3, "one surge pod");
    assert!(h.events(REASON_SUCCESSFUL_DELETE).is_empty());
    h.run_all();
    assert_eq!(h.events(REASON_SUCCESSFUL_DELETE).len(), 1);
    h.run_all();
    h.run_all();
    assert_eq!(images(&h), ["foo/bar:v2", "foo/bar:v2"]);
}

#[test]
fn on_delete_leaves_old_pods_until_someone_deletes_them() {
    let strategy = json!({"type": "OnDelete"});
    let mut h = Harness::new(
        nodes(2),
        daemon_set_json(json!({"updateStrategy": strategy})),
    );
    h.run_all();
    h.apply_ds(v2(strategy));
    assert!(h.events(REASON_SUCCESSFUL_DELETE).is_empty());
    assert_eq!(images(&h), ["foo/bar", "foo/bar"]);
    let name = h.pods()[0].metadata.name.clone().unwrap();
    let key = ObjectKey::new(Kind::Pod, "default", &name);
    h.client.delete(&key, DeleteOptions::now()).unwrap();
    h.settle();
    let mut imgs = images(&h);
    imgs.sort();
    assert_eq!(imgs, ["foo/bar", "foo/bar:v2"]);
}

#[test]
fn each_template_gets_a_controller_revision_named_after_its_hash() {
    let strategy = json!({"type": "OnDelete"});
    let mut h = Harness::new(
        nodes(1),
        daemon_set_json(json!({"updateStrategy": strategy})),
    );
    let revisions = |h: &Harness| -> BTreeMap<i64, String> {
        h.client
            .cache()
            .list(Kind::Other(controller_revision_type()))
            .map(|o| {
                let v = o.to_json();
                (v["revision"].as_i64().unwrap(), o.name().to_string())
            })
            .collect()
    };
    let first = revisions(&h);
    assert_eq!(first.len(), 1);
    let hash = pod_labels(&h.pods()[0])[DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY].clone();
    assert_eq!(first[&1], format!("foo-{hash}"));
    h.apply_ds(v2(strategy.clone()));
    let second = revisions(&h);
    assert_eq!(second.len(), 2);
    assert_ne!(second[&2], first[&1]);
    // Back to the first template: its revision is reused and renumbered 3.
    h.apply_ds(daemon_set_json(json!({"updateStrategy": strategy})));
    let third = revisions(&h);
    assert_eq!(third.len(), 2);
    assert_eq!(third[&3], first[&1]);
}

fn syncs(dsc: &DaemonSetsController) -> u64 {
    dsc.metrics()
        .iter()
        .find(|(n, _)| n.starts_with("workqueue_adds_total"))
        .map_or(0, |(_, v)| *v)
}

#[test]
fn a_binding_to_the_pods_own_node_does_not_sync_but_readiness_does() {
    let mut h = Harness::new(nodes(1), daemon_set_json(json!({})));
    let before = syncs(&h.dsc);
    let pod = h.pods()[0].clone();
    h.set_pod(&pod, |p| p.set_node_name(Some("node-0".into())));
    h.settle();
    assert_eq!(
        syncs(&h.dsc),
        before,
        "the binding changes nothing a sync reads"
    );
    let pod = h.pods()[0].clone();
    let now = h.client.clock().timestamp(h.client.now);
    h.set_status(&pod, "Running", Some(now));
    h.settle();
    assert!(syncs(&h.dsc) > before);
    assert_eq!(h.daemon_set().status.unwrap().number_ready, 1);
}

mod explain;
mod one_sync;
mod pod_events;

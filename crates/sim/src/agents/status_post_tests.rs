//! A node agent's status post that renews only heartbeats marks its node
//! (`StoredNode::heartbeats_of`), and the marks give every watcher the verdict the fields give:
//! against the previous version and against the version a run of such posts started from.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, NodeCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::{only_heartbeats_changed, only_heartbeats_changed_by_fields, StoredNode};
use kubeplane_core::SimTime;
use kubeplane_registry::testing::TestClient;
use kubeplane_store::{Client, Component, EventType, Kind, Object};

use crate::agents::NodeAgents;

fn node(name: &str) -> Object {
    Object::Node(Arc::new(StoredNode::from(Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    })))
}

/// The node as stored, copied.
fn stored(client: &TestClient, name: &str) -> StoredNode {
    let obj = client.store.get(Kind::Node, "", name).expect("stored");
    StoredNode::clone(obj.as_node().expect("a node"))
}

/// What other writers do at an instant, between the agents' posts.
fn interfere(client: &mut TestClient, agents: &mut NodeAgents, secs: u64) {
    let now = SimTime::from_secs(secs);
    match secs {
        1000 => agents.set_node_condition("n1", "MemoryPressure", "True", None, now),
        // The node lifecycle controller's kind of write: Ready Unknown on n2.
        2000 => {
            let mut n = stored(client, "n2");
            let cs = n.status.as_mut().unwrap().conditions.as_mut().unwrap();
            let ready: &mut NodeCondition = cs.iter_mut().find(|c| c.type_ == "Ready").unwrap();
            ready.status = "Unknown".into();
            client.update_status(Object::Node(Arc::new(n))).unwrap();
        }
        // A label on n1 through the main resource.
        3000 => {
            let mut n = stored(client, "n1");
            n.metadata.labels = Some([("disk".to_string(), "ssd".to_string())].into());
            client.update(Object::Node(Arc::new(n))).unwrap();
        }
        4000 => agents.set_node_condition("n1", "MemoryPressure", "False", None, now),
        _ => {}
    }
}

#[test]
fn heartbeat_marks_give_the_verdicts_of_the_fields() {
    let mut client = TestClient::new(1);
    let mut agents = NodeAgents::new(None);
    for name in ["n1", "n2"] {
        client.create(node(name)).unwrap();
    }
    // Per node, the version a watcher like the scheduler's cache holds: replaced only by an
    // update that is not heartbeats only.
    let mut held: BTreeMap<String, Arc<StoredNode>> = BTreeMap::new();
    let (mut by_mark, mut other) = (0, 0);
    for secs in (0..=6000).step_by(10) {
        let now = SimTime::from_secs(secs);
        client.now = now;
        interfere(&mut client, &mut agents, secs);
        loop {
            for ev in client.store.take_events() {
                if ev.object.kind() == Kind::Node && ev.type_ == EventType::Modified {
                    let new = ev.object.as_node().unwrap();
                    let old = ev.old.as_ref().and_then(Object::as_node).unwrap();
                    let verdict = only_heartbeats_changed(old, new);
                    assert_eq!(
                        verdict,
                        only_heartbeats_changed_by_fields(old, new),
                        "{secs}"
                    );
                    if verdict && new.heartbeats_of.is_some() {
                        by_mark += 1;
                    } else {
                        other += 1;
                    }
                    let h = held
                        .entry(ev.object.name().to_string())
                        .or_insert(old.clone());
                    let against_held = only_heartbeats_changed(h, new);
                    assert_eq!(against_held, only_heartbeats_changed_by_fields(h, new));
                    if !against_held {
                        *h = new.clone();
                    }
                }
                agents.observe(&ev, now);
            }
            if agents.next_wakeup().is_none_or(|t| t > now) {
                break;
            }
            agents.run(now, &mut client);
        }
    }
    // 21 posts a node; the first, the changes and the posts after them are not heartbeats.
    assert!(by_mark >= 30, "{by_mark} verdicts by mark");
    assert!(other >= 5, "{other} other updates");
}

#[test]
fn a_copy_has_no_mark_and_the_mark_is_not_compared() {
    let mut n = StoredNode::from(Node::default());
    n.heartbeats_of = Some(7);
    assert_eq!(n.clone().heartbeats_of, None);
    assert_eq!(n.clone(), n);
    assert_eq!(format!("{:?}", n.clone()), format!("{n:?}"));
}

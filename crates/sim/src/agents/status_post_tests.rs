//! A node agent's status post that renews only heartbeats marks its node
//! (`StoredNode::heartbeats_of`), and the marks give every watcher the verdict the fields give:
//! against the previous version and against the version a run of such posts started from.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, NodeCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubeplane_api::{only_heartbeats_changed, only_heartbeats_changed_by_fields, StoredNode};
use kubeplane_core::SimTime;
use kubeplane_registry::testing::TestClient;
use kubeplane_store::{Client, Component, EventType, Kind, Object};

use crate::agents::{NodeAgents, Posts};

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
fn interfere(client: &mut TestClient, agents: &mut NodeAgents, secs: i64) {
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
    // Per node, the addresses of its versions; a post that edits the version before the last
    // one stores at that address.
    let mut addresses: BTreeMap<String, Vec<*const StoredNode>> = BTreeMap::new();
    let mut reused = 0;
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
                    let seen = addresses.entry(ev.object.name().to_string()).or_default();
                    let at = Arc::as_ptr(new);
                    reused += usize::from(seen.len() >= 2 && seen[seen.len() - 2] == at);
                    seen.push(at);
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
    assert!(
        reused >= 20,
        "{reused} posts edited the version before the last"
    );
}

#[test]
fn a_post_edits_the_version_before_the_last_only_when_alone_with_it_and_heartbeats_apart() {
    let version = |rv: &str, heartbeat: &str, status: &str| {
        let mut n = StoredNode::from(Node::default());
        n.metadata.resource_version = Some(rv.into());
        n.status = Some(Default::default());
        n.status.as_mut().unwrap().conditions = Some(vec![NodeCondition {
            type_: "Ready".into(),
            status: status.into(),
            last_heartbeat_time: Some(Time(heartbeat.parse().unwrap())),
            ..Default::default()
        }]);
        n
    };
    let root = version("5", "2025-01-01T00:00:00Z", "True");
    let mut base = version("9", "2025-01-01T00:10:00Z", "True");
    base.heartbeats_of = Some(5);
    // Alone with it, heartbeats apart: the spare itself, with the base's heartbeats.
    let spare = Arc::new(root.clone());
    let address = Arc::as_ptr(&spare);
    let mut posts = Posts {
        last: None,
        spare: Some(spare),
    };
    let copy = posts.copy_of(&base);
    assert_eq!(Arc::as_ptr(&copy), address);
    let mut want = base.clone();
    want.metadata.resource_version = Some("5".into());
    assert_eq!(*copy, want);
    // Shared: a clone.
    let shared = Arc::new(root.clone());
    posts.spare = Some(shared.clone());
    assert_ne!(Arc::as_ptr(&posts.copy_of(&base)), Arc::as_ptr(&shared));
    // Another Ready status (at another version than the base's mark names): a clone of the
    // base.
    posts.spare = Some(Arc::new(version("6", "2025-01-01T00:00:00Z", "False")));
    let copy = posts.copy_of(&base);
    assert_eq!(copy.metadata.resource_version.as_deref(), Some("9"));
    assert_eq!(*copy, base);
    assert!(posts.spare.is_none());
}

#[test]
fn a_copy_has_no_mark_and_the_mark_is_not_compared() {
    let mut n = StoredNode::from(Node::default());
    n.heartbeats_of = Some(7);
    assert_eq!(n.clone().heartbeats_of, None);
    assert_eq!(n.clone(), n);
    assert_eq!(format!("{:?}", n.clone()), format!("{n:?}"));
}

//! Tests of the node agents' pod entries: the index, the shared keys and node names.

use super::*;

fn bound(ns: &str, name: &str, node: &str) -> WatchEvent {
    let mut pod = StoredPod::default();
    pod.metadata.namespace = Some(ns.into());
    pod.metadata.name = Some(name.into());
    pod.metadata.uid = Some(format!("uid-{name}"));
    pod.set_node_name(Some(node.into()));
    WatchEvent {
        type_: EventType::Added,
        object: Object::Pod(Arc::new(pod)),
        old: None,
        resource_version: 1,
    }
}

#[test]
fn tracked_pods_share_their_key_with_the_index_and_their_node_name_with_each_other() {
    let mut agents = NodeAgents::new(Some(SimDuration::from_secs(1)));
    for (name, node) in [("a", "n1"), ("b", "n1"), ("c", "n2")] {
        agents.observe(&bound("ns", name, node), SimTime::ZERO);
    }
    fn entry<'a>(agents: &'a NodeAgents, key: &str) -> &'a PodEntry {
        let (k, &i) = agents.pod_index.get_key_value(key).unwrap();
        assert!(Arc::ptr_eq(k, &agents.pods[i].key));
        &agents.pods[i]
    }
    let (a, b) = (entry(&agents, "ns/a"), entry(&agents, "ns/b"));
    let c = entry(&agents, "ns/c");
    assert_eq!(a.namespace_name(), ("ns", "a"));
    assert_eq!(&*b.uid, "uid-b");
    assert!(Arc::ptr_eq(&a.node, &b.node));
    assert_eq!((&*a.node, &*c.node), ("n1", "n2"));
    assert_eq!(agents.node_names.len(), 2);
    // Untracked and tracked again: the entry is reused with the new pod's key.
    let mut gone = bound("ns", "a", "n1");
    gone.type_ = EventType::Deleted;
    agents.observe(&gone, SimTime::ZERO);
    agents.observe(&bound("other", "d", "n2"), SimTime::ZERO);
    assert_eq!(agents.pods.len(), 3);
    assert_eq!(entry(&agents, "other/d").namespace_name(), ("other", "d"));
    assert!(!agents.pod_index.contains_key("ns/a"));
}

//! The pods of a ReplicaSet share one label map and one controller reference across creation
//! batches and syncs (`pod_control::SharedMeta`), while the template's labels stay the same.

use super::*;

/// Whether every pod holds the very same label map and owner references as the first.
fn all_share(pods: &[Arc<StoredPod>]) -> (bool, bool) {
    let first = &pods[0];
    let labels = pods
        .iter()
        .all(|p| std::ptr::eq(p.labels().unwrap(), first.labels().unwrap()));
    let owners = pods.iter().all(|p| {
        std::ptr::eq(
            p.owner_references().unwrap(),
            first.owner_references().unwrap(),
        )
    });
    (labels, owners)
}

#[test]
fn pods_of_all_batches_and_a_replacement_share_labels_and_controller_reference() {
    let mut client = TestClient::new(3);
    let mut rsc = ReplicaSetController::new();
    create(&mut client, rs_object(replica_set("web", 10, "web")));
    settle(&mut client, &mut rsc);
    // Slow start: batches of 1, 2, 4 and 3 pods, four creation calls.
    let pods = pods_of(&client, "web");
    assert_eq!(pods.len(), 10);
    assert_eq!(all_share(&pods), (true, true));

    let victim = pods[3].metadata.name.clone().unwrap();
    let key = ObjectKey::new(Kind::Pod, "default", &victim);
    client.delete(&key, DeleteOptions::default()).unwrap();
    settle(&mut client, &mut rsc);
    let active = active_pods_of(&client, "web");
    assert_eq!(active.len(), 10);
    assert!(active
        .iter()
        .all(|p| p.metadata.name.as_deref() != Some(&*victim)));
    assert_eq!(all_share(&active), (true, true));
}

#[test]
fn a_changed_template_label_gives_the_new_pods_their_own_labels() {
    let mut client = TestClient::new(3);
    let mut rsc = ReplicaSetController::new();
    create(&mut client, rs_object(replica_set("web", 2, "web")));
    settle(&mut client, &mut rsc);
    let before = pods_of(&client, "web");

    let mut rs = StoredReplicaSet::clone(&get_rs(&client, "web"));
    let spec = rs.spec.as_mut().unwrap();
    spec.replicas = Some(3);
    let template = spec.template.as_mut().unwrap().metadata.as_mut().unwrap();
    template
        .labels
        .as_mut()
        .unwrap()
        .insert("extra".into(), "1".into());
    client.update(rs_object(rs)).unwrap();
    settle(&mut client, &mut rsc);

    let pods = pods_of(&client, "web");
    let new: Vec<_> = pods
        .iter()
        .filter(|p| !before.iter().any(|b| b.metadata.name == p.metadata.name))
        .collect();
    assert_eq!(new.len(), 1);
    assert_eq!(
        new[0].labels().unwrap().get("extra").map(String::as_str),
        Some("1")
    );
    assert!(!std::ptr::eq(
        new[0].labels().unwrap(),
        before[0].labels().unwrap()
    ));
    assert!(before[0].labels().unwrap().get("extra").is_none());
    // The controller reference did not change: still shared.
    assert!(std::ptr::eq(
        new[0].owner_references().unwrap(),
        before[0].owner_references().unwrap()
    ));
}

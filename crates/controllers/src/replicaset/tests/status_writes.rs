//! The status write: the cached version it starts from stays as it was, and a write that
//! conflicts is retried on a fresh read.

use super::*;
use kubeplane_api::StoredReplicaSet;

fn status(replicas: i32) -> ReplicaSetStatus {
    ReplicaSetStatus {
        replicas,
        ..Default::default()
    }
}

#[test]
fn a_status_write_leaves_the_cached_version_as_it_was() {
    let mut client = TestClient::new(1);
    create(&mut client, rs_object(replica_set("web", 3, "web")));
    let cached = get_rs(&client, "web");
    let before = StoredReplicaSet::clone(&cached);
    let written =
        status::update_replica_set_status(&mut client, &cached, status(2), false).unwrap();
    assert_eq!(
        *cached, before,
        "the cached version is shared, not written into"
    );
    assert_eq!(written.status.as_ref().map(|s| s.replicas), Some(2));
    assert_ne!(
        written.metadata.resource_version, cached.metadata.resource_version,
        "the written version is the store's"
    );
    assert_eq!(written.spec, cached.spec);
    assert_eq!(get_rs(&client, "web").status, written.status);
}

#[test]
fn a_conflicting_status_write_is_retried_on_the_fresh_version() {
    let mut client = TestClient::new(1);
    create(&mut client, rs_object(replica_set("web", 3, "web")));
    let stale = get_rs(&client, "web");
    let before = StoredReplicaSet::clone(&stale);
    set_replicas(&mut client, "web", 5);
    let written = status::update_replica_set_status(&mut client, &stale, status(4), false).unwrap();
    assert_eq!(*stale, before, "the stale version is not written into");
    assert_eq!(written.status.as_ref().map(|s| s.replicas), Some(4));
    assert_eq!(
        spec_replicas(&written),
        5,
        "the retry starts from the fresh read"
    );
    assert_eq!(get_rs(&client, "web").status, written.status);
}

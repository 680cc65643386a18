//! The API test suite of `kubeplane-api` against both clients of the registry (over the
//! simulator's store and over `kubeplane-storage`), and what only the in-process
//! implementation promises (its cache is the store itself).

use kubeplane_api::{Client, Clock, Kind, ObjectKey};
use kubeplane_registry::testing::TestClient;
use kubeplane_registry::StorageClient;

#[test]
fn the_in_memory_registry_passes_the_api_suite() {
    kubeplane_api::suite::run_all(&|| Box::new(TestClient::new(1)));
}

#[test]
fn the_registry_over_kubeplane_storage_passes_the_api_suite() {
    kubeplane_api::suite::run_all(&|| Box::new(storage_client()));
}

fn storage_client() -> StorageClient {
    let clock = Clock::new("2025-01-01T00:00:00Z".parse().unwrap());
    StorageClient::new(1, clock, 1000)
}

#[test]
fn every_case_of_the_suite_has_a_distinct_name() {
    let mut names: Vec<&str> = kubeplane_api::suite::CASES.iter().map(|c| c.0).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), kubeplane_api::suite::CASES.len());
}

#[test]
fn the_in_process_cache_shows_each_write_at_once() {
    let mut c = TestClient::new(1);
    let pod = kubeplane_api::Object::Pod(std::sync::Arc::new(kubeplane_api::StoredPod::from(
        k8s_openapi::api::core::v1::Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("a".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            ..Default::default()
        },
    )));
    let created = c.create(pod).unwrap();
    let key = ObjectKey::new(Kind::Pod, "default", "a");
    let cached = c.cache().get_key(&key).cloned().expect("cached");
    assert_eq!(cached.resource_version(), created.resource_version());
    assert_eq!(c.cache().list(Kind::Pod).count(), 1);
}

/// A client that writes a main-resource update to the status subresource instead: the suite
/// must catch it.
struct StatusOnlyUpdates(TestClient);

impl Client for StatusOnlyUpdates {
    fn update(
        &mut self,
        obj: kubeplane_api::Object,
    ) -> Result<kubeplane_api::Object, kubeplane_api::ApiError> {
        self.0.update_status(obj)
    }
    fn explain(&self) -> bool {
        false
    }
    kubeplane_api::delegate_client!(0: cache, clock, get, create, update_status,
        patch_pod_status, delete, evict, bind, update_scale, record_event, emit_record);
}

#[test]
#[should_panic(expected = "a main-resource update keeps the stored status")]
fn the_suite_catches_an_implementation_that_writes_status_on_update() {
    kubeplane_api::suite::run_all(&|| Box::new(StatusOnlyUpdates(TestClient::new(1))));
}

//! A [`Client`] over an owned [`Store`] with a settable clock, for unit tests of components.
//! Its API calls go through the same [`ApiClient`] as the simulator's (without admission:
//! tests build their pods complete).

use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::PodStatus;
use kubeplane_api::{
    ApiError, Cache, Client, Clock, Component, DeleteOptions, Object, ObjectKey, WatchEvent,
};
use kubeplane_core::{EventRecord, SimTime};
use kubeplane_store::Store;

use crate::client::{ApiClient, Sink};

pub struct TestClient {
    pub store: Store,
    pub now: SimTime,
    /// Every event recorded so far.
    pub events: Vec<EventRecord>,
    /// Every explanation record emitted so far.
    pub records: Vec<serde_json::Value>,
    pub explain: bool,
}

impl TestClient {
    pub fn new(seed: u64) -> TestClient {
        TestClient {
            store: Store::new(
                seed,
                "2025-01-01T00:00:00Z".parse().expect("valid timestamp"),
            ),
            now: SimTime::ZERO,
            events: Vec::new(),
            records: Vec::new(),
            explain: true,
        }
    }

    /// Feeds every pending watch event to the components, in order, and returns them.
    pub fn dispatch(&mut self, components: &mut [&mut dyn Component]) -> Vec<WatchEvent> {
        let events = self.store.take_events();
        for ev in &events {
            for c in components.iter_mut() {
                c.observe(ev, self.now);
            }
        }
        events
    }

    /// Dispatches events and runs every component that has work due now, until none has.
    /// Panics after 100,000 rounds (a component that never settles is a bug in a test).
    pub fn settle(&mut self, components: &mut [&mut dyn Component]) {
        for _ in 0..100_000 {
            self.dispatch(components);
            let mut ran = false;
            for c in components.iter_mut() {
                if c.next_wakeup().is_some_and(|t| t <= self.now) {
                    c.run(self.now, self);
                    ran = true;
                }
            }
            if !ran && !self.store.has_events() {
                return;
            }
        }
        panic!("components did not settle at {}", self.now);
    }

    /// Advances the clock to each wakeup in turn until `until`, settling at every instant.
    pub fn run_until(&mut self, until: SimTime, components: &mut [&mut dyn Component]) {
        self.settle(components);
        loop {
            let next = components
                .iter()
                .filter_map(|c| c.next_wakeup())
                .filter(|&t| t > self.now)
                .min();
            match next {
                Some(t) if t <= until => {
                    self.now = t;
                    self.settle(components);
                }
                _ => break,
            }
        }
        self.now = until;
        self.settle(components);
    }

    pub fn events_with_reason(&self, reason: &str) -> Vec<&EventRecord> {
        self.events
            .iter()
            .filter(|e| e.reason() == reason)
            .collect()
    }
}

/// A sink that drops every event and record (for tests of the API calls themselves).
pub struct Discard;

impl Sink for Discard {
    fn event(&mut self, _: EventRecord) {}
    fn record(&mut self, _: serde_json::Value) {}
}

/// The events and records a [`TestClient`] keeps.
struct Kept<'a> {
    events: &'a mut Vec<EventRecord>,
    records: &'a mut Vec<serde_json::Value>,
}

impl Sink for Kept<'_> {
    fn event(&mut self, ev: EventRecord) {
        self.events.push(ev);
    }
    fn record(&mut self, record: serde_json::Value) {
        self.records.push(record);
    }
}

impl TestClient {
    /// Runs `f` with the API client of the current instant.
    fn with_api<T>(&mut self, f: impl FnOnce(&mut ApiClient<'_>) -> T) -> T {
        let mut sink = Kept {
            events: &mut self.events,
            records: &mut self.records,
        };
        let mut api = ApiClient {
            store: &mut self.store,
            now: self.now,
            sink: &mut sink,
            explain: self.explain,
            admission: false,
            binding: Default::default(),
        };
        f(&mut api)
    }
}

impl Client for TestClient {
    fn cache(&self) -> &dyn Cache {
        &self.store
    }
    fn clock(&self) -> Clock {
        self.store.clock()
    }
    fn get(&mut self, key: &ObjectKey) -> Result<Object, ApiError> {
        self.with_api(|api| api.get(key))
    }
    fn create(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.with_api(|api| api.create(obj))
    }
    fn update(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.with_api(|api| api.update(obj))
    }
    fn update_status(&mut self, obj: Object) -> Result<Object, ApiError> {
        self.with_api(|api| api.update_status(obj))
    }
    fn patch_pod_status(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        patch: &mut dyn FnMut(&mut PodStatus),
    ) -> Result<Object, ApiError> {
        self.with_api(|api| api.patch_pod_status(namespace, name, uid, patch))
    }
    fn delete(&mut self, key: &ObjectKey, opts: DeleteOptions) -> Result<Option<Object>, ApiError> {
        self.with_api(|api| api.delete(key, opts))
    }
    fn evict(&mut self, namespace: &str, name: &str, opts: DeleteOptions) -> Result<(), ApiError> {
        self.with_api(|api| api.evict(namespace, name, opts))
    }
    fn bind(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
    ) -> Result<Object, ApiError> {
        self.with_api(|api| api.bind(namespace, name, uid, node))
    }
    fn update_scale(
        &mut self,
        key: &ObjectKey,
        replicas: i32,
        resource_version: Option<&str>,
    ) -> Result<Scale, ApiError> {
        self.with_api(|api| api.update_scale(key, replicas, resource_version))
    }
    fn record_event(&mut self, ev: EventRecord) {
        self.events.push(ev);
    }
    fn explain(&self) -> bool {
        self.explain
    }
    fn emit_record(&mut self, record: serde_json::Value) {
        self.records.push(record);
    }
}

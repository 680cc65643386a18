//! Tests of the control plane's list and watch: a relist after the watch fell behind brings
//! the components' caches to the stored state, and a failing storage is retried with backoff
//! until the server stops.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use jiff::Timestamp;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::{DeleteOptions, ObjectKey};
use kubeplane_core::features::FeatureGates;
use kubeplane_storage::{Key, ListPage, Revision, Versioned};

use super::*;
use crate::clock::ClockMode;

/// What a component was told: every event, and the cache the events build (a PriorityClass's
/// description holds a number).
#[derive(Default)]
struct Seen {
    events: Vec<(EventType, String, Option<i32>)>,
    cache: BTreeMap<String, i32>,
}

/// A component that records what it observes.
struct Recorder(Arc<Mutex<Seen>>);

fn value(obj: &Object) -> i32 {
    match obj {
        Object::PriorityClass(pc) => pc
            .description
            .as_deref()
            .and_then(|d| d.parse().ok())
            .unwrap_or(-1),
        _ => -1,
    }
}

impl Component for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }

    fn observe(&mut self, ev: &WatchEvent, _now: SimTime) {
        if ev.object.kind() != Kind::PriorityClass {
            return;
        }
        let mut seen = self.0.lock().unwrap();
        let name = ev.object.name().to_string();
        seen.events
            .push((ev.type_, name.clone(), ev.old.as_ref().map(value)));
        match ev.type_ {
            EventType::Deleted => seen.cache.remove(&name),
            _ => seen.cache.insert(name, value(&ev.object)),
        };
    }

    fn run(&mut self, _now: SimTime, _client: &mut dyn Client) {}

    fn next_wakeup(&self) -> Option<SimTime> {
        None
    }
}

fn clock() -> ServerClock {
    ServerClock::start(Timestamp::UNIX_EPOCH, ClockMode::Virtual { speed: 1.0 })
}

fn control_plane(client: StorageClient) -> (ControlPlane, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let scheduler =
        kubeplane_sim::engine::build_scheduler(&[], &FeatureGates::default(), 1).unwrap();
    let cp = ControlPlane::new(
        client,
        scheduler,
        vec![Box::new(Recorder(seen.clone()))],
        Vec::new(),
        NodeAgents::new(None),
    );
    (cp, seen)
}

fn class(name: &str, value: i32) -> Object {
    Object::PriorityClass(Arc::new(PriorityClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        description: Some(value.to_string()),
        ..Default::default()
    }))
}

fn events(seen: &Mutex<Seen>) -> Vec<(EventType, String, Option<i32>)> {
    std::mem::take(&mut seen.lock().unwrap().events)
}

#[test]
fn a_relist_after_the_watch_fell_behind_delivers_the_deletions_and_modifications_it_missed() {
    let clock = clock();
    let mut writer = StorageClient::new(1, clock.api_clock(), 1024);
    for (name, v) in [("gone", 1), ("changed", 2), ("same", 3)] {
        writer.create(class(name, v)).unwrap();
    }
    let (mut cp, seen) = control_plane(writer.handle());
    let stopping = AtomicBool::new(false);
    let mut cursor = cp
        .list_and_watch(writer.storage(), &clock, &stopping)
        .unwrap();
    assert_eq!(seen.lock().unwrap().cache.len(), 3);
    events(&seen);

    // While the watch is broken: one object deleted, one modified, and the log compacted
    // past the cursor (upstream's 410 Expired).
    let key = ObjectKey::new(Kind::PriorityClass, "", "gone");
    writer.delete(&key, DeleteOptions::default()).unwrap();
    let key = ObjectKey::new(Kind::PriorityClass, "", "changed");
    let Object::PriorityClass(mut pc) = writer.get(&key).unwrap() else {
        unreachable!()
    };
    Arc::make_mut(&mut pc).description = Some("20".into());
    writer.update(Object::PriorityClass(pc)).unwrap();
    let storage = writer.storage();
    storage.compact(storage.current_revision()).unwrap();

    cp.settle(clock.now(), cursor.as_mut());
    assert!(cp.behind, "the cursor must report that it fell behind");
    assert!(events(&seen).is_empty());
    cursor = cp
        .list_and_watch(writer.storage(), &clock, &stopping)
        .unwrap();
    let got = events(&seen);
    assert_eq!(
        got,
        vec![
            (EventType::Modified, "changed".into(), Some(2)),
            (EventType::Modified, "same".into(), Some(3)),
            (EventType::Deleted, "gone".into(), Some(1)),
        ]
    );
    let cache = seen.lock().unwrap().cache.clone();
    assert_eq!(
        cache,
        BTreeMap::from([("changed".into(), 20), ("same".into(), 3)])
    );

    // The new watch goes on from the list's revision.
    writer.create(class("later", 4)).unwrap();
    cp.settle(clock.now(), cursor.as_mut());
    assert_eq!(
        events(&seen),
        vec![(EventType::Added, "later".into(), None)]
    );
}

/// A storage whose lists and watches fail (the storage unavailable), counting the lists.
#[derive(Default)]
struct Unavailable {
    lists: AtomicUsize,
}

fn unavailable() -> StorageError {
    StorageError::Unavailable {
        message: "test".into(),
    }
}

impl Storage<Object> for Unavailable {
    fn current_revision(&self) -> Revision {
        0
    }
    fn oldest_revision(&self) -> Revision {
        0
    }
    fn get(&self, _: &Key, _: Option<Revision>) -> Result<Option<Versioned<Object>>, StorageError> {
        Err(unavailable())
    }
    fn list(&self, _: &Prefix, _: &ListOptions) -> Result<ListPage<Object>, StorageError> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        Err(unavailable())
    }
    fn create(&self, _: &Key, _: Object) -> Result<Arc<Event<Object>>, StorageError> {
        Err(unavailable())
    }
    fn update(
        &self,
        _: &Key,
        _: Object,
        _: Option<Revision>,
    ) -> Result<Arc<Event<Object>>, StorageError> {
        Err(unavailable())
    }
    fn delete(&self, _: &Key, _: Option<Revision>) -> Result<Arc<Event<Object>>, StorageError> {
        Err(unavailable())
    }
    fn watch(
        &self,
        _: &Prefix,
        _: Option<Revision>,
    ) -> Result<Box<dyn Watcher<Object>>, StorageError> {
        Err(unavailable())
    }
    fn compact(&self, _: Revision) -> Result<(), StorageError> {
        Ok(())
    }
}

#[test]
fn a_failing_list_is_retried_after_a_backoff_and_stopping_the_server_ends_the_retries() {
    let clock = clock();
    let (mut cp, _) = control_plane(StorageClient::new(1, clock.api_clock(), 16));
    let storage = Arc::new(Unavailable::default());
    let stopping = Arc::new(AtomicBool::new(false));
    let (done, ended) = std::sync::mpsc::channel();
    let (s, stop) = (storage.clone(), stopping.clone());
    std::thread::spawn(move || {
        let cursor = cp.list_and_watch(s.as_ref(), &clock, &stop);
        let _ = done.send(cursor.is_none());
    });
    // The first retry comes no sooner than 800 ms after the first attempt.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        storage.lists.load(Ordering::SeqCst),
        1,
        "the list must not spin"
    );
    stopping.store(true, Ordering::Relaxed);
    let gave_up = ended
        .recv_timeout(Duration::from_millis(500))
        .expect("the loop must end promptly once the server stops");
    assert!(gave_up, "a stopped loop returns no watch");
    assert_eq!(storage.lists.load(Ordering::SeqCst), 1);
}

//! An informer's local cache: what a runtime that watches a remote API server (the coming
//! `kubeplane serve` clients, a live cluster through kube-rs) keeps for its components.
//!
//! [`Informer::apply`] takes a watch event as the server sends it (no old object) and returns
//! it with the old object filled in from the cache, the way client-go's handlers receive
//! `OnUpdate(old, new)` and `OnDelete(old)`. [`Informer::replace`] is a relist (after a watch
//! expired with 410 Gone, or at start): like client-go's `DeltaFIFO.Replace`, every listed
//! object is delivered again (Added when new, Modified with its old version when known, also
//! when unchanged: a resync), and every cached object missing from the list is delivered as
//! Deleted with its last known state (upstream's `DeletedFinalStateUnknown`). Components thus
//! handle a relist with the code that handles events.
//!
//! The informer is a [`Cache`]: objects of each kind ordered by namespace then name.

use std::collections::BTreeMap;

use crate::client::Cache;
use crate::object::{Kind, Object};
use crate::watch::{EventType, WatchEvent};

/// The objects of each kind the runtime has seen, by namespace then name.
#[derive(Default, Clone, Debug)]
pub struct Informer {
    kinds: BTreeMap<Kind, BTreeMap<(String, String), Object>>,
    /// The resourceVersion of the last event or list applied.
    resource_version: u64,
}

fn key_of(obj: &Object) -> (String, String) {
    (obj.namespace().to_string(), obj.name().to_string())
}

impl Informer {
    pub fn new() -> Informer {
        Informer::default()
    }

    /// The resourceVersion to watch from after what was applied so far.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// Applies one event as the server sent it and returns it with `old` filled in from the
    /// cache (a Modified or Deleted event of an object the cache does not hold gets none).
    pub fn apply(&mut self, mut ev: WatchEvent) -> WatchEvent {
        let objects = self.kinds.entry(ev.object.kind()).or_default();
        let key = key_of(&ev.object);
        ev.old = match ev.type_ {
            EventType::Added | EventType::Modified => objects.insert(key, ev.object.clone()),
            EventType::Deleted => objects.remove(&key),
        };
        if ev.type_ == EventType::Modified && ev.old.is_none() {
            // Upstream's informer cannot tell a missed add from an update: it is an add.
            ev.type_ = EventType::Added;
        }
        self.resource_version = self.resource_version.max(ev.resource_version);
        ev
    }

    /// Replaces everything cached of `kind` with `list`, read at `resource_version`, and
    /// returns the events that bring a component from the old state to the new one: the listed
    /// objects in list order (Added or Modified), then the vanished ones (Deleted) in key order.
    pub fn replace(
        &mut self,
        kind: Kind,
        list: Vec<Object>,
        resource_version: u64,
    ) -> Vec<WatchEvent> {
        let mut old = std::mem::take(self.kinds.entry(kind).or_default());
        let mut events = Vec::with_capacity(list.len());
        let mut fresh = BTreeMap::new();
        for obj in list {
            let key = key_of(&obj);
            let previous = old.remove(&key);
            let type_ = if previous.is_some() {
                EventType::Modified
            } else {
                EventType::Added
            };
            fresh.insert(key, obj.clone());
            events.push(WatchEvent {
                type_,
                object: obj,
                old: previous,
                resource_version,
            });
        }
        for (_, gone) in old {
            events.push(WatchEvent {
                type_: EventType::Deleted,
                object: gone.clone(),
                old: Some(gone),
                resource_version,
            });
        }
        self.kinds.insert(kind, fresh);
        self.resource_version = self.resource_version.max(resource_version);
        events
    }
}

impl Cache for Informer {
    fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<&Object> {
        let ns = if kind.is_namespaced() { namespace } else { "" };
        self.kinds
            .get(&kind)?
            .get(&(ns.to_string(), name.to_string()))
    }

    fn list<'a>(&'a self, kind: Kind) -> Box<dyn Iterator<Item = &'a Object> + 'a> {
        match self.kinds.get(&kind) {
            Some(objects) => Box::new(objects.values()),
            None => Box::new(std::iter::empty()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn pod(name: &str, rv: u64) -> Object {
        Object::Pod(Arc::new(
            Pod {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    namespace: Some("default".into()),
                    resource_version: Some(rv.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            }
            .into(),
        ))
    }

    fn event(type_: EventType, object: Object, rv: u64) -> WatchEvent {
        WatchEvent {
            type_,
            object,
            old: None,
            resource_version: rv,
        }
    }

    #[test]
    fn applied_events_get_their_old_object_from_the_cache() {
        let mut inf = Informer::new();
        let added = inf.apply(event(EventType::Added, pod("a", 1), 1));
        assert!(added.old.is_none());
        let modified = inf.apply(event(EventType::Modified, pod("a", 2), 2));
        assert_eq!(modified.old.unwrap().resource_version(), "1");
        let deleted = inf.apply(event(EventType::Deleted, pod("a", 2), 3));
        assert_eq!(deleted.old.unwrap().resource_version(), "2");
        assert!(inf.get(Kind::Pod, "default", "a").is_none());
        assert_eq!(inf.resource_version(), 3);
    }

    #[test]
    fn an_update_of_an_object_never_seen_is_delivered_as_an_add() {
        let mut inf = Informer::new();
        let ev = inf.apply(event(EventType::Modified, pod("a", 5), 5));
        assert_eq!(ev.type_, EventType::Added);
        assert!(ev.old.is_none());
    }

    #[test]
    fn a_relist_delivers_every_listed_object_and_deletes_the_vanished_ones() {
        let mut inf = Informer::new();
        inf.apply(event(EventType::Added, pod("a", 1), 1));
        inf.apply(event(EventType::Added, pod("b", 2), 2));
        // While the watch was down: b was deleted, c created, a unchanged.
        let events = inf.replace(Kind::Pod, vec![pod("a", 1), pod("c", 7)], 9);
        let summary: Vec<(EventType, &str, Option<&str>)> = events
            .iter()
            .map(|e| (e.type_, e.object.name(), e.old.as_ref().map(Object::name)))
            .collect();
        assert_eq!(
            summary,
            vec![
                (EventType::Modified, "a", Some("a")),
                (EventType::Added, "c", None),
                (EventType::Deleted, "b", Some("b")),
            ]
        );
        let names: Vec<&str> = inf.list(Kind::Pod).map(Object::name).collect();
        assert_eq!(names, vec!["a", "c"]);
        assert_eq!(inf.resource_version(), 9);
    }

    #[test]
    fn a_relist_of_one_kind_leaves_the_others_alone() {
        let mut inf = Informer::new();
        inf.apply(event(EventType::Added, pod("a", 1), 1));
        let events = inf.replace(Kind::Node, Vec::new(), 4);
        assert!(events.is_empty());
        assert!(inf.get_pod("default", "a").is_some());
    }
}

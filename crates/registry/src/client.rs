//! [`ApiClient`]: the [`Client`] over the simulator's store, and the registry's operations
//! over any [`Backend`] (the store here, `kubeplane-storage` in
//! [`crate::storage_client`]): each looks the stored object up once, applies the kind's
//! strategy ([`crate::strategy`]) and writes with the backend's plain operations.

use kubeplane_api::StoredPod;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::PodStatus;
use kubeplane_api::{
    ApiError, Cache, Client, Clock, DeleteOptions, Kind, Object, ObjectKey, SlotHint,
};
use kubeplane_core::{EventRecord, SimTime};
use kubeplane_store::{NameSource, Prepared, Store};

use crate::deletion::DeletePlan;
use crate::strategy::{self, pod::BindError, pod::BindFeatures};

/// Where the events and explanation records of a run go.
pub trait Sink {
    fn event(&mut self, ev: EventRecord);
    fn record(&mut self, record: serde_json::Value);
}

/// The plain operations of versioned storage the registry's rules run over: lookups, writes
/// with the storage's resourceVersion and optimistic concurrency, and the seeded source of
/// UIDs and generated names. The registry never writes but through these.
pub trait Backend {
    /// The stored object, if any.
    fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<Object>;

    /// The cluster clock (object timestamps of virtual instants).
    fn clock(&self) -> Clock;

    /// A name from `prefix` and the seeded source.
    fn draw_name(&mut self, prefix: &str) -> String;

    /// A number from the seeded source (the Service allocators').
    fn draw(&mut self) -> u64;

    /// The stored objects of one kind, in every namespace.
    fn list(&self, kind: Kind) -> Vec<Object>;

    /// Stores a new object (AlreadyExists when taken); `fill` runs once the key is known to
    /// be free, with the seeded source.
    fn create_with(
        &mut self,
        obj: Object,
        fill: impl FnOnce(&mut Object, &mut NameSource),
    ) -> Result<Object, ApiError>;

    /// Replaces the object of `obj`'s key after `prepare` adjusted `obj` against the stored
    /// one, or removes the stored object when `prepare` says so; a stale resourceVersion or
    /// another UID on `obj` is a Conflict, before `prepare`.
    fn update(
        &mut self,
        obj: Object,
        prepare: impl FnOnce(&Object, &mut Object) -> Result<Prepared, ApiError>,
    ) -> Result<Object, ApiError>;

    /// Replaces a stored object with what `f` makes of it.
    fn update_with(
        &mut self,
        kind: Kind,
        namespace: &str,
        name: &str,
        f: impl FnOnce(&Object) -> Result<Object, ApiError>,
    ) -> Result<Object, ApiError>;

    /// Removes an object; returns its last state.
    fn delete(&mut self, key: &ObjectKey) -> Result<Object, ApiError>;
}

impl Backend for Store {
    fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<Object> {
        Store::get(self, kind, namespace, name).cloned()
    }
    fn clock(&self) -> Clock {
        Store::clock(self)
    }
    fn draw_name(&mut self, prefix: &str) -> String {
        self.names().generate_name(prefix)
    }
    fn draw(&mut self) -> u64 {
        self.names().draw()
    }
    fn list(&self, kind: Kind) -> Vec<Object> {
        Store::list(self, kind).cloned().collect()
    }
    fn create_with(
        &mut self,
        obj: Object,
        fill: impl FnOnce(&mut Object, &mut NameSource),
    ) -> Result<Object, ApiError> {
        Store::create_with(self, obj, fill)
    }
    fn update(
        &mut self,
        obj: Object,
        prepare: impl FnOnce(&Object, &mut Object) -> Result<Prepared, ApiError>,
    ) -> Result<Object, ApiError> {
        Store::update(self, obj, prepare)
    }
    fn update_with(
        &mut self,
        kind: Kind,
        namespace: &str,
        name: &str,
        f: impl FnOnce(&Object) -> Result<Object, ApiError>,
    ) -> Result<Object, ApiError> {
        Store::update_with(self, kind, namespace, name, f)
    }
    fn delete(&mut self, key: &ObjectKey) -> Result<Object, ApiError> {
        Store::delete(self, key)
    }
}

/// Creates an object (after admission): a name from generateName, the namespace (created
/// when it does not exist yet), the create strategy, and a UID from the seeded source.
pub fn create(b: &mut impl Backend, mut obj: Object, now: SimTime) -> Result<Object, ApiError> {
    let kind = obj.kind();
    if let Some(prefix) = strategy::generate_name_prefix(&obj)? {
        let mut name = b.draw_name(&prefix);
        while b.get(kind, obj.namespace(), &name).is_some() {
            name = b.draw_name(&prefix);
        }
        obj.meta_mut().name = Some(name);
    }
    strategy::set_namespace(&mut obj);
    if kind.is_namespaced() {
        match b.get(Kind::Namespace, "", obj.namespace()) {
            None => {
                create(b, strategy::namespace::implicit(obj.namespace()), now)?;
            }
            Some(ns) => crate::admission::namespace_lifecycle::check_create(&obj, Some(&ns))?,
        }
    }
    strategy::before_create(&mut obj, b.clock().timestamp(now));
    allocate(b, &mut obj)?;
    b.create_with(obj, |o, names| {
        if o.uid().is_empty() {
            o.meta_mut().uid = Some(names.uid());
        }
    })
}

/// A Service's cluster IP and node ports (those it does not name), against what the other
/// stored Services hold; `draws` are numbers from the seeded source drawn beforehand (an
/// update's allocation runs inside the backend's update), and the seeded source itself when
/// they run out or none are given.
fn allocate_in(
    obj: &mut Object,
    taken: &strategy::service::Taken,
    draw: &mut dyn FnMut(u64) -> u64,
) -> Result<(), ApiError> {
    match obj {
        Object::Other(o) if strategy::service::is_service(o) => {
            strategy::service::allocate(Arc::make_mut(o), taken, draw)
        }
        _ => Ok(()),
    }
}

/// What the stored Services other than `obj` hold, when `obj` is a Service.
fn taken_by_others(b: &impl Backend, obj: &Object) -> Option<strategy::service::Taken> {
    let Object::Other(o) = obj else {
        return None;
    };
    if !strategy::service::is_service(o) {
        return None;
    }
    let services = b.list(obj.kind());
    let others = services.iter().filter_map(|s| match s {
        Object::Other(s)
            if s.metadata.name != o.metadata.name
                || s.metadata.namespace != o.metadata.namespace =>
        {
            Some(&**s)
        }
        _ => None,
    });
    Some(strategy::service::Taken::of(others))
}

/// [`allocate_in`] for a create, drawing from the backend's seeded source.
fn allocate(b: &mut impl Backend, obj: &mut Object) -> Result<(), ApiError> {
    let Some(taken) = taken_by_others(b, obj) else {
        return Ok(());
    };
    allocate_in(obj, &taken, &mut |n| b.draw() % n.max(1))
}

/// Replaces the main resource (the kind's update strategy keeps the stored status).
pub fn update(b: &mut impl Backend, obj: Object) -> Result<Object, ApiError> {
    update_as(b, obj, Validate::No, strategy::prepare_for_update)
}

/// [`update`] with the API server's update validation first (`validation::validate_update`).
pub fn update_validated(b: &mut impl Backend, obj: Object) -> Result<Object, ApiError> {
    update_as(b, obj, Validate::Yes, strategy::prepare_for_update)
}

/// Replaces the status subresource (the kind's status strategy keeps the rest).
pub fn update_status(b: &mut impl Backend, obj: Object) -> Result<Object, ApiError> {
    update_as(b, obj, Validate::No, strategy::prepare_for_status_update)
}

/// Whether an update is validated as the API server validates it.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Validate {
    Yes,
    No,
}

/// An update in one lookup of the stored object: validation, the deletion rules of an update
/// (no new finalizers on a deleting object; upstream's `ShouldDeleteDuringUpdate`: an update
/// that leaves a deleting object with no finalizers and grace period 0 removes it, and the
/// call returns the removed object, the watch showing a Deleted event), then the kind's
/// strategy.
fn update_as(
    b: &mut impl Backend,
    obj: Object,
    validate: Validate,
    prepare: fn(&Object, &mut Object) -> Result<(), ApiError>,
) -> Result<Object, ApiError> {
    // A Service whose type now wants a cluster IP or node ports gets them: what the other
    // Services hold and a few seeded numbers are read before the update.
    let taken = taken_by_others(b, &obj);
    let mut draws: Vec<u64> = match taken {
        Some(_) => (0..8).map(|_| b.draw()).collect(),
        None => Vec::new(),
    };
    b.update(obj, |old, new| {
        if validate == Validate::Yes {
            crate::validation::check_update(Some(old), new)?;
        }
        if old.meta().deletion_timestamp.is_some() {
            crate::deletion::check_update(old, new)?;
            if crate::deletion::should_delete_during_update(old, new) {
                return Ok(Prepared::Remove);
            }
        }
        prepare(old, new)?;
        if let Some(taken) = &taken {
            allocate_in(new, taken, &mut |n| draws.pop().unwrap_or(0) % n.max(1))?;
        }
        Ok(Prepared::Write)
    })
}

/// Upstream's PatchPodStatus: `patch` applied to the current pod's status, the pod's UID as
/// the precondition, no resourceVersion precondition.
pub fn patch_pod_status(
    b: &mut impl Backend,
    namespace: &str,
    name: &str,
    uid: &str,
    patch: &mut dyn FnMut(&mut PodStatus),
) -> Result<Object, ApiError> {
    patch_pod_status_then(b, namespace, name, uid, patch, |_, new| new)
}

/// [`patch_pod_status`], with `then` given the current and the patched pod before the write
/// (a client that records managedFields records them there).
pub fn patch_pod_status_then(
    b: &mut impl Backend,
    namespace: &str,
    name: &str,
    uid: &str,
    patch: &mut dyn FnMut(&mut PodStatus),
    then: impl FnOnce(&Object, Object) -> Object,
) -> Result<Object, ApiError> {
    b.update_with(Kind::Pod, namespace, name, |current| {
        let Object::Pod(pod) = current else {
            unreachable!("the pod bucket holds pods")
        };
        if !uid.is_empty() && pod.metadata.uid.as_deref() != Some(uid) {
            // The pod was deleted and created again.
            return Err(ApiError::Conflict { key: current.key() });
        }
        let mut p = StoredPod::clone(pod);
        p.update_status(patch);
        // Only the status changed: the status strategy and `BeforeUpdate` have nothing to keep
        // (the spec, ownerReferences, uid and timestamps are the current ones).
        Ok(then(current, Object::Pod(Arc::new(p))))
    })
}

/// A delete: what [`crate::deletion::plan_delete`] decides (preconditions, graceful pod
/// deletion, finalizers and propagation, Namespace termination).
pub fn delete(
    b: &mut impl Backend,
    key: &ObjectKey,
    opts: &DeleteOptions,
    now: SimTime,
) -> Result<Option<Object>, ApiError> {
    let Some(old) = b.get(key.kind, &key.namespace, &key.name) else {
        return Err(ApiError::NotFound { key: key.clone() });
    };
    match crate::deletion::plan_delete(&old, opts, now, b.clock())? {
        DeletePlan::Remove => b.delete(key).map(|_| None),
        DeletePlan::Mark(marked) => b
            .update_with(key.kind, &key.namespace, &key.name, |_| Ok(marked))
            .map(Some),
        DeletePlan::Unchanged => Ok(Some(old)),
    }
}

/// The pods/binding subresource: with PodTopologyLabelsAdmission, admission first gives the
/// binding the node's topology labels, then the pod strategy's binding.
pub fn bind(
    b: &mut impl Backend,
    namespace: &str,
    name: &str,
    uid: &str,
    node: &str,
    now: SimTime,
    features: BindFeatures,
) -> Result<Object, ApiError> {
    let ts = b.clock().timestamp(now);
    let labels = if features.topology_labels {
        crate::admission::pod_topology_labels::topology_labels_for(b, node)
    } else {
        Default::default()
    };
    b.update_with(Kind::Pod, namespace, name, |current| {
        let Object::Pod(pod) = current else {
            unreachable!("the pod bucket holds pods")
        };
        match strategy::pod::bind(pod, uid, node, ts, features, &labels) {
            Ok(p) => Ok(Object::Pod(Arc::new(p))),
            Err(BindError::Conflict) => Err(ApiError::Conflict { key: current.key() }),
            Err(BindError::Invalid(message)) => Err(ApiError::Invalid {
                key: current.key(),
                message: message.into(),
            }),
        }
    })
}

/// The scale subresource: `spec.replicas` of a Deployment or ReplicaSet, through the main
/// resource's update strategy (a spec change: the generation moves, the status is kept).
pub fn update_scale(
    b: &mut impl Backend,
    key: &ObjectKey,
    replicas: i32,
    resource_version: Option<&str>,
) -> Result<Scale, ApiError> {
    update_scale_then(b, key, replicas, resource_version, |_, new| new)
}

/// [`update_scale`], with `then` given the current and the scaled object before the write.
pub fn update_scale_then(
    b: &mut impl Backend,
    key: &ObjectKey,
    replicas: i32,
    resource_version: Option<&str>,
    then: impl FnOnce(&Object, Object) -> Object,
) -> Result<Scale, ApiError> {
    if !strategy::scale::has_scale(key.kind) {
        return Err(ApiError::NotFound { key: key.clone() });
    }
    strategy::scale::validate_replicas(key, replicas)?;
    let updated = b.update_with(key.kind, &key.namespace, &key.name, |old| {
        if resource_version.is_some_and(|rv| rv != old.resource_version()) {
            return Err(ApiError::Conflict { key: key.clone() });
        }
        let mut new = strategy::scale::with_replicas(old, replicas)
            .ok_or_else(|| ApiError::NotFound { key: key.clone() })?;
        strategy::prepare_for_update(old, &mut new)?;
        Ok(then(old, new))
    })?;
    strategy::scale::scale_of(&updated).ok_or_else(|| ApiError::NotFound { key: key.clone() })
}

/// A client of the in-process API at one instant: the store, the registry's rules, and the
/// sink for events and records.
pub struct ApiClient<'a> {
    pub store: &'a mut Store,
    pub now: SimTime,
    pub sink: &'a mut dyn Sink,
    pub explain: bool,
    /// Whether writes go through admission and validation (component unit tests build their
    /// pods complete and turn it off).
    pub admission: bool,
    /// What a binding does besides setting the node, by the run's feature gates.
    pub binding: BindFeatures,
}

impl Client for ApiClient<'_> {
    fn cache(&self) -> &dyn Cache {
        self.store
    }

    fn clock(&self) -> Clock {
        self.store.clock()
    }

    fn get(&mut self, key: &ObjectKey) -> Result<Object, ApiError> {
        self.store
            .get_key(key)
            .cloned()
            .ok_or_else(|| ApiError::NotFound { key: key.clone() })
    }

    fn create(&mut self, obj: Object) -> Result<Object, ApiError> {
        let obj = if self.admission {
            crate::validation::admit_and_validate_create(obj, self.store)?
        } else {
            obj
        };
        let obj = if self.binding.topology_labels {
            crate::admission::pod_topology_labels::admit_created_pod(self.store, obj)
        } else {
            obj
        };
        create(self.store, obj, self.now)
    }

    fn update(&mut self, obj: Object) -> Result<Object, ApiError> {
        if self.admission {
            update_validated(self.store, obj)
        } else {
            update(self.store, obj)
        }
    }

    fn update_status(&mut self, obj: Object) -> Result<Object, ApiError> {
        update_status(self.store, obj)
    }

    fn patch_pod_status(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        patch: &mut dyn FnMut(&mut PodStatus),
    ) -> Result<Object, ApiError> {
        patch_pod_status(self.store, namespace, name, uid, patch)
    }

    fn delete(&mut self, key: &ObjectKey, opts: DeleteOptions) -> Result<Option<Object>, ApiError> {
        if self.admission {
            crate::admission::namespace_lifecycle::check_delete(key)?;
        }
        delete(self.store, key, &opts, self.now)
    }

    fn evict(&mut self, namespace: &str, name: &str, opts: DeleteOptions) -> Result<(), ApiError> {
        let now = self.now;
        crate::eviction::evict(self, now, namespace, name, opts)
    }

    fn bind(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
    ) -> Result<Object, ApiError> {
        bind(
            self.store,
            namespace,
            name,
            uid,
            node,
            self.now,
            self.binding,
        )
    }

    fn update_scale(
        &mut self,
        key: &ObjectKey,
        replicas: i32,
        resource_version: Option<&str>,
    ) -> Result<Scale, ApiError> {
        update_scale(self.store, key, replicas, resource_version)
    }

    fn record_event(&mut self, ev: EventRecord) {
        self.sink.event(ev);
    }

    fn explain(&self) -> bool {
        self.explain
    }

    fn emit_record(&mut self, record: serde_json::Value) {
        self.sink.record(record);
    }

    fn renew_lease_quietly(
        &mut self,
        namespace: &str,
        name: &str,
        renew: Timestamp,
        resource_version: u64,
        hint: &mut SlotHint,
    ) -> Option<Result<u64, ApiError>> {
        Some(renew_lease_quietly(
            self.store,
            namespace,
            name,
            renew,
            resource_version,
            hint,
        ))
    }
}

/// [`Client::renew_lease_quietly`] over the store: the stored Lease, if still at
/// `resource_version`, gets the new renewTime in place. What an update of that version with
/// only renewTime changed would store (a Lease has no status, no generation, and a renewTime
/// is always valid), without the watch event. `hint`: where the Lease was last found.
pub fn renew_lease_quietly(
    store: &mut Store,
    namespace: &str,
    name: &str,
    renew: Timestamp,
    resource_version: u64,
    hint: &mut SlotHint,
) -> Result<u64, ApiError> {
    store.renew_lease_quietly(namespace, name, hint, resource_version, renew)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kubeplane_api::PodExt;

    use crate::testing::Discard;

    fn pod(name: &str) -> Object {
        Object::Pod(Arc::new(
            Pod {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    namespace: Some("default".into()),
                    ..Default::default()
                },
                // A pod the API server's validation accepts.
                spec: Some(k8s_openapi::api::core::v1::PodSpec {
                    containers: vec![k8s_openapi::api::core::v1::Container {
                        name: "c".into(),
                        image: Some("pause".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                ..Default::default()
            }
            .into(),
        ))
    }

    /// Runs `f` with an admitting client over an empty store.
    fn with_api(f: impl FnOnce(&mut ApiClient<'_>)) {
        let mut store = Store::new(1, jiff::Timestamp::UNIX_EPOCH);
        let mut sink = Discard;
        f(&mut ApiClient {
            store: &mut store,
            now: SimTime::ZERO,
            sink: &mut sink,
            explain: false,
            admission: true,
            binding: Default::default(),
        });
    }

    #[test]
    fn a_pod_status_patch_applies_to_the_current_version_of_the_pod_with_that_uid() {
        with_api(|api| {
            let created = api.create(pod("p")).unwrap();
            let uid = created.uid().to_string();
            // A write after the caller's read: the patch still applies, to the newer version.
            let mut labelled = created.clone();
            labelled.set_labels(Some([("a".to_string(), "b".to_string())].into()));
            api.update(labelled).unwrap();
            let patched = api
                .patch_pod_status("default", "p", &uid, &mut |s| {
                    s.phase = Some("Failed".into())
                })
                .unwrap();
            let p = patched.as_pod().unwrap();
            assert_eq!(p.phase(), Some("Failed"));
            assert!(p.labels().is_some(), "the newer version was patched");
            // Another pod of the same name (another UID) is not patched.
            let err = api
                .patch_pod_status("default", "p", "other-uid", &mut |_| {})
                .unwrap_err();
            assert!(err.is_conflict());
            let missing = api
                .patch_pod_status("default", "q", &uid, &mut |_| {})
                .unwrap_err();
            assert!(missing.is_not_found());
        });
    }

    #[test]
    fn creates_go_through_admission() {
        with_api(|api| {
            let created = api.create(pod("p")).unwrap();
            let spec = created.as_pod().unwrap().spec.clone().unwrap();
            // Priority resolved, DefaultTolerationSeconds applied.
            assert_eq!(spec.priority, Some(0));
            assert_eq!(spec.tolerations.as_ref().map(|t| t.len()), Some(2));
        });
    }

    fn bound(name: &str, node: &str) -> Object {
        let mut p = StoredPod::clone(pod(name).as_pod().unwrap());
        p.set_node_name(Some(node.into()));
        Object::Pod(Arc::new(p))
    }

    #[test]
    fn a_create_in_a_missing_namespace_creates_it_labelled_with_its_name_first() {
        with_api(|api| {
            let created = api.create(pod("p")).unwrap();
            let ns = api
                .get(&ObjectKey::new(Kind::Namespace, "", "default"))
                .unwrap();
            assert_eq!(ns.resource_version(), "1");
            assert_eq!(created.resource_version(), "2");
            let label = &ns.meta().labels.as_ref().unwrap()["kubernetes.io/metadata.name"];
            assert_eq!(label, "default");
            assert!(!ns.uid().is_empty() && ns.uid() != created.uid());
            assert!(created.meta().creation_timestamp.is_some());
        });
    }

    #[test]
    fn a_name_is_generated_from_the_seed_and_a_nameless_object_without_a_prefix_is_invalid() {
        let generated = |seed| {
            let mut store = Store::new(seed, jiff::Timestamp::UNIX_EPOCH);
            let mut o = pod("");
            o.meta_mut().generate_name = Some("web-".into());
            create(&mut store, o, SimTime::ZERO).unwrap()
        };
        assert_eq!(generated(1).name(), generated(1).name());
        assert_ne!(generated(1).name(), generated(2).name());
        assert!(generated(1).name().starts_with("web-"));
        with_api(|api| {
            let err = api.create(pod("")).unwrap_err();
            assert_eq!(err.code(), 422);
            assert!(!api.store.has_events(), "nothing was written");
        });
    }

    #[test]
    fn a_graceful_delete_sets_the_deadline_and_only_a_shorter_grace_period_moves_it() {
        with_api(|api| {
            api.now = SimTime::from_secs(5);
            api.create(bound("a", "n1")).unwrap();
            let key = ObjectKey::new(Kind::Pod, "default", "a");
            let clock = api.store.clock();
            let deadline = |o: &Object| {
                let meta = o.meta();
                let at = clock.instant(meta.deletion_timestamp.as_ref().unwrap());
                (at, meta.deletion_grace_period_seconds)
            };
            let first = api.delete(&key, DeleteOptions::default()).unwrap().unwrap();
            assert_eq!(deadline(&first), (SimTime::from_secs(35), Some(30)));
            let longer = DeleteOptions {
                grace_period_secs: Some(60),
                ..DeleteOptions::default()
            };
            let same = api.delete(&key, longer).unwrap().unwrap();
            assert_eq!(
                same.resource_version(),
                first.resource_version(),
                "no write"
            );
            let shorter = DeleteOptions {
                grace_period_secs: Some(10),
                ..DeleteOptions::default()
            };
            let moved = api.delete(&key, shorter).unwrap().unwrap();
            assert_eq!(deadline(&moved), (SimTime::from_secs(15), Some(10)));
            // An update that sets no deletionTimestamp keeps the stored one.
            let mut relabelled = bound("a", "n1");
            relabelled.set_labels(Some([("x".to_string(), "y".to_string())].into()));
            let kept = api.update(relabelled).unwrap();
            assert_eq!(deadline(&kept), (SimTime::from_secs(15), Some(10)));
            assert!(api.delete(&key, DeleteOptions::now()).unwrap().is_none());
            assert!(api.get(&key).unwrap_err().is_not_found());
        });
    }

    #[test]
    fn an_update_may_not_move_a_bound_pod_and_keeps_its_uid_and_creation_timestamp() {
        with_api(|api| {
            let created = api.create(bound("a", "n1")).unwrap();
            let err = api.update(bound("a", "n2")).unwrap_err();
            assert_eq!(err.code(), 422, "{err}");
            let mut p = StoredPod::clone(bound("a", "n1").as_pod().unwrap());
            p.metadata.creation_timestamp = None;
            let after = api.update(Object::Pod(Arc::new(p))).unwrap();
            assert_eq!(after.uid(), created.uid());
            assert_eq!(
                after.meta().creation_timestamp,
                created.meta().creation_timestamp
            );
        });
    }

    #[test]
    fn a_quiet_renewal_sets_renew_time_and_version_only_at_the_agents_version() {
        use k8s_openapi::api::coordination::v1::Lease;
        let mut store = Store::new(1, "2025-01-01T00:00:00Z".parse().unwrap());
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some("n1".into()),
                namespace: Some("kube-node-lease".into()),
                ..Default::default()
            },
            spec: None,
        };
        let created = store.create(Object::Lease(Arc::new(lease))).unwrap();
        let mut hint = SlotHint::default();
        let t: Timestamp = "2025-01-01T00:00:10Z".parse().unwrap();
        let stale = renew_lease_quietly(&mut store, "kube-node-lease", "n1", t, 2, &mut hint);
        assert!(stale.unwrap_err().is_conflict());
        let rv = renew_lease_quietly(&mut store, "kube-node-lease", "n1", t, 1, &mut hint);
        assert_eq!(rv, Ok(2));
        let stored = store.get(Kind::Lease, "kube-node-lease", "n1").unwrap();
        let Object::Lease(l) = stored else {
            panic!("a Lease");
        };
        assert_eq!(l.metadata.resource_version.as_deref(), Some("2"));
        let renewed = l.spec.as_ref().and_then(|s| s.renew_time.as_ref());
        assert_eq!(renewed.map(|m| m.0), Some(t));
        assert_eq!(
            created.resource_version(),
            "1",
            "the created version is untouched"
        );
        let mut other = SlotHint::default();
        let gone = renew_lease_quietly(&mut store, "kube-node-lease", "n2", t, 2, &mut other);
        assert!(gone.unwrap_err().is_not_found());
    }
}

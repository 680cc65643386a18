//! The cache, the API calls and the clock a component is given.

use crate::StoredPod;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_core::{EventRecord, SimTime};

use crate::error::ApiError;
use crate::object::{Kind, Object, ObjectKey};

/// What upstream components read through listers: the objects of each kind as the runtime's
/// informers last saw them. Never behind the watch events the component has been shown.
pub trait Cache {
    fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<&Object>;

    /// Every object of a kind, ordered by namespace then name.
    fn list<'a>(&'a self, kind: Kind) -> Box<dyn Iterator<Item = &'a Object> + 'a>;

    fn get_key(&self, key: &ObjectKey) -> Option<&Object> {
        self.get(key.kind, &key.namespace, &key.name)
    }

    fn get_pod(&self, namespace: &str, name: &str) -> Option<&Arc<StoredPod>> {
        self.get(Kind::Pod, namespace, name)
            .and_then(Object::as_pod)
    }

    fn get_node(&self, name: &str) -> Option<&Arc<crate::StoredNode>> {
        self.get(Kind::Node, "", name).and_then(Object::as_node)
    }

    /// [`Cache::get`] for a reader that looks the same key up again and again (the node
    /// lifecycle monitor, a node's Lease at every pass): `hint` remembers where the object
    /// was found, and a cache that keeps objects in slots (the store) checks that slot's key
    /// before hashing the key. Any cache may ignore it (the default).
    fn get_hinted(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
        hint: &mut SlotHint,
    ) -> Option<&Object> {
        let _ = hint;
        self.get(kind, namespace, name)
    }

    /// [`Cache::get_hinted`] for a Lease, typed (the node lifecycle monitor reads every node's
    /// Lease at every pass). A cache may find the Leases without the kind's generic lookup
    /// (the store does); the answer must be [`Cache::get_hinted`]'s.
    fn get_lease_hinted(
        &self,
        namespace: &str,
        name: &str,
        hint: &mut SlotHint,
    ) -> Option<&Arc<Lease>> {
        match self.get_hinted(Kind::Lease, namespace, name, hint)? {
            Object::Lease(l) => Some(l),
            _ => None,
        }
    }

    /// A count that changes whenever any Lease the cache holds is written (created, replaced,
    /// renewed quietly, removed), so that a reader who saw every Lease at one count knows
    /// they are unchanged while the count is; `None` (the default) when the cache cannot tell.
    fn lease_writes(&self) -> Option<u64> {
        None
    }
}

/// Where a cache last found an object (see [`Cache::get_hinted`]), in terms only the cache
/// that set it understands (the store: a slot and how many times it had been emptied, so a
/// hint taken before the object was removed no longer matches). A hint belongs to one key
/// of one kind: pass it only with the key it was taken for.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SlotHint(pub Option<(usize, u64)>);

/// The cluster's clock as components see it: virtual instants ([`SimTime`], nanoseconds since
/// the run's start) and the object timestamps they correspond to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Clock {
    start: Timestamp,
}

impl Clock {
    /// A clock whose instant zero is `start`.
    pub fn new(start: Timestamp) -> Clock {
        Clock { start }
    }

    /// The timestamp of instant zero.
    pub fn start(&self) -> Timestamp {
        self.start
    }

    /// The object timestamp of a virtual instant.
    pub fn timestamp(&self, now: SimTime) -> Time {
        Time(now.to_timestamp(self.start))
    }

    /// The virtual instant of an object timestamp.
    pub fn instant(&self, t: &Time) -> SimTime {
        SimTime::from_timestamp(t.0, self.start)
    }
}

/// Options of a delete, like the API's DeleteOptions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Overrides the pod's terminationGracePeriodSeconds; `Some(0)` removes a pod at once.
    pub grace_period_secs: Option<i64>,
    /// Only delete the object if its UID is this one (`preconditions.uid`).
    pub precondition_uid: Option<String>,
    /// Only delete the object if its resourceVersion is this one
    /// (`preconditions.resourceVersion`).
    pub precondition_resource_version: Option<String>,
    /// `propagationPolicy`: what happens to the object's dependents. `None` leaves it to the
    /// object's finalizers and its kind's default (background for every kind kubeplane stores).
    pub propagation_policy: Option<PropagationPolicy>,
}

/// `DeleteOptions.propagationPolicy` (upstream `metav1.DeletionPropagation`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PropagationPolicy {
    /// The dependents are kept and lose their ownerReference to the object: the object gets the
    /// `orphan` finalizer, which the garbage collector removes once it has orphaned them.
    Orphan,
    /// The object goes at once; the garbage collector deletes the dependents afterwards.
    Background,
    /// The object gets the `foregroundDeletion` finalizer and stays until the garbage
    /// collector has deleted the dependents that block its deletion.
    Foreground,
}

impl PropagationPolicy {
    /// Upstream's spelling (`Orphan`, `Background`, `Foreground`).
    pub fn as_str(self) -> &'static str {
        match self {
            PropagationPolicy::Orphan => "Orphan",
            PropagationPolicy::Background => "Background",
            PropagationPolicy::Foreground => "Foreground",
        }
    }

    /// Parses upstream's spelling.
    pub fn parse(s: &str) -> Option<PropagationPolicy> {
        match s {
            "Orphan" => Some(PropagationPolicy::Orphan),
            "Background" => Some(PropagationPolicy::Background),
            "Foreground" => Some(PropagationPolicy::Foreground),
            _ => None,
        }
    }
}

impl DeleteOptions {
    /// A delete with grace period 0: the object is gone at once.
    pub fn now() -> Self {
        DeleteOptions {
            grace_period_secs: Some(0),
            ..DeleteOptions::default()
        }
    }

    /// A delete of exactly this version of an object (UID and resourceVersion preconditions).
    pub fn exactly(obj: &Object) -> Self {
        DeleteOptions {
            precondition_uid: Some(obj.uid().to_string()).filter(|u| !u.is_empty()),
            precondition_resource_version: Some(obj.resource_version().to_string())
                .filter(|rv| !rv.is_empty()),
            ..DeleteOptions::default()
        }
    }
}

/// How a component reads through its cache and talks to the API server. Writes take effect on
/// the server at once; their watch events reach every component (the writer included) after
/// its `run` returns, through the runtime's informers.
pub trait Client {
    /// The lister view (upstream's informer caches).
    fn cache(&self) -> &dyn Cache;

    /// The cluster clock.
    fn clock(&self) -> Clock;

    /// An uncached GET, for the places where upstream reads the server rather than a lister.
    fn get(&mut self, key: &ObjectKey) -> Result<Object, ApiError>;

    fn create(&mut self, obj: Object) -> Result<Object, ApiError>;

    /// Replaces the main resource. A non-empty resourceVersion on `obj` is a precondition. As
    /// on a real API server, `.status` of a kind with a status subresource is not written here:
    /// the stored status is kept.
    fn update(&mut self, obj: Object) -> Result<Object, ApiError>;

    /// Replaces the status subresource: only `.status` is written (and, as upstream's status
    /// strategies do, the rest of the object is kept as stored). A non-empty resourceVersion on
    /// `obj` is a precondition.
    fn update_status(&mut self, obj: Object) -> Result<Object, ApiError>;

    /// Patches a pod's status as upstream's `PatchPodStatus` does: the change `patch` makes is
    /// applied to the pod's current status, with the pod's UID as the precondition.
    fn patch_pod_status(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        patch: &mut dyn FnMut(&mut PodStatus),
    ) -> Result<Object, ApiError>;

    /// Graceful delete: a bound pod becomes Terminating; an object with finalizers (or that the
    /// propagation policy gives one) gets a deletionTimestamp and stays until they are removed; a
    /// Namespace becomes Terminating; anything else disappears at once. Returns the object as it
    /// is after the call (`None` when it is gone).
    fn delete(&mut self, key: &ObjectKey, opts: DeleteOptions) -> Result<Option<Object>, ApiError>;

    /// The pods/eviction subresource: deletes the pod with `opts` if its PodDisruptionBudget
    /// allows; [`ApiError::TooManyRequests`] when it does not (retry later).
    fn evict(&mut self, namespace: &str, name: &str, opts: DeleteOptions) -> Result<(), ApiError>;

    /// The pods/binding subresource: sets spec.nodeName and the PodScheduled condition of the
    /// pod with this UID.
    fn bind(
        &mut self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
    ) -> Result<Object, ApiError>;

    /// The scale subresource of a Deployment or ReplicaSet (autoscaling/v1 `Scale`, as
    /// `kubectl scale` uses it): sets `spec.replicas` and nothing else, as a spec change (the
    /// generation moves). `resource_version`, when given, is a precondition (Conflict when
    /// stale). NotFound for a kind without the subresource; Invalid for a negative count.
    /// Returns the Scale after the update.
    fn update_scale(
        &mut self,
        key: &ObjectKey,
        replicas: i32,
        resource_version: Option<&str>,
    ) -> Result<Scale, ApiError>;

    /// Records a Kubernetes event.
    fn record_event(&mut self, ev: EventRecord);

    /// Whether explanation records are wanted (components skip building them otherwise).
    fn explain(&self) -> bool;

    /// Emits an explanation record (`SchedulingAttempt`, `EvictionDecision`, ...).
    fn emit_record(&mut self, record: serde_json::Value);

    /// A quiet Lease renewal (`simulate`'s node agents only): sets `spec.renewTime` of the
    /// stored Lease in place, with a new resourceVersion (returned) but no watch event, when
    /// the stored Lease is still at `resource_version` (Conflict otherwise, NotFound when
    /// gone). Readers see it through the cache (the node lifecycle controller reads Leases
    /// there, as upstream's lister). `None`: this client has no such write (a real API server:
    /// the default), and the caller updates the Lease. `hint` as for [`Cache::get_hinted`]:
    /// the agent renews the same Lease every 10 s.
    fn renew_lease_quietly(
        &mut self,
        _namespace: &str,
        _name: &str,
        _renew: Timestamp,
        _resource_version: u64,
        _hint: &mut SlotHint,
    ) -> Option<Result<u64, ApiError>> {
        None
    }
}

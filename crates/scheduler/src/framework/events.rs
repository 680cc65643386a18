//! Cluster events and queueing hints (upstream `framework.ClusterEvent`, `ActionType`,
//! `QueueingHintFn`): how the queue decides which parked pods a change might help.

use kubeplane_api::StoredPod;
use std::fmt;
use std::ops::{BitAnd, BitOr};
use std::sync::Arc;

use kubeplane_api::StoredNode;

/// The kind of object an event is about. `AssignedPod` and `UnscheduledPod` are the scheduler's
/// internal split of `Pod`; a plugin registering for `Pod` receives both.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventResource {
    Pod,
    AssignedPod,
    UnscheduledPod,
    Node,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    CsiNode,
    WildCard,
}

impl EventResource {
    pub fn as_str(self) -> &'static str {
        match self {
            EventResource::Pod => "Pod",
            EventResource::AssignedPod => "AssignedPod",
            EventResource::UnscheduledPod => "UnschedulablePod",
            EventResource::Node => "Node",
            EventResource::PersistentVolumeClaim => "PersistentVolumeClaim",
            EventResource::PersistentVolume => "PersistentVolume",
            EventResource::StorageClass => "StorageClass",
            EventResource::CsiNode => "CSINode",
            EventResource::WildCard => "*",
        }
    }
}

/// A bit set of actions (upstream `ActionType`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActionType(pub u32);

impl ActionType {
    pub const ADD: ActionType = ActionType(1 << 0);
    pub const DELETE: ActionType = ActionType(1 << 1);
    pub const UPDATE_NODE_ALLOCATABLE: ActionType = ActionType(1 << 2);
    pub const UPDATE_NODE_LABEL: ActionType = ActionType(1 << 3);
    pub const UPDATE_NODE_TAINT: ActionType = ActionType(1 << 4);
    pub const UPDATE_NODE_CONDITION: ActionType = ActionType(1 << 5);
    pub const UPDATE_NODE_ANNOTATION: ActionType = ActionType(1 << 6);
    pub const UPDATE_POD_LABEL: ActionType = ActionType(1 << 7);
    pub const UPDATE_POD_SCALE_DOWN: ActionType = ActionType(1 << 8);
    pub const UPDATE_POD_TOLERATION: ActionType = ActionType(1 << 9);
    pub const UPDATE_POD_SCHEDULING_GATES_ELIMINATED: ActionType = ActionType(1 << 10);
    pub const UPDATE_POD_GENERATED_RESOURCE_CLAIM: ActionType = ActionType(1 << 11);
    /// Any other update, when none of the specific update kinds applies.
    pub const UPDATE_OTHER: ActionType = ActionType(1 << 12);
    /// `status.declaredFeatures` of a Node changed (upstream `UpdateNodeDeclaredFeature`, with
    /// the NodeDeclaredFeatures plugin from v1.35).
    pub const UPDATE_NODE_DECLARED_FEATURE: ActionType = ActionType(1 << 13);
    /// Every kind of update.
    pub const UPDATE: ActionType = ActionType(
        Self::UPDATE_NODE_ALLOCATABLE.0
            | Self::UPDATE_NODE_LABEL.0
            | Self::UPDATE_NODE_TAINT.0
            | Self::UPDATE_NODE_CONDITION.0
            | Self::UPDATE_NODE_ANNOTATION.0
            | Self::UPDATE_POD_LABEL.0
            | Self::UPDATE_POD_SCALE_DOWN.0
            | Self::UPDATE_POD_TOLERATION.0
            | Self::UPDATE_POD_SCHEDULING_GATES_ELIMINATED.0
            | Self::UPDATE_POD_GENERATED_RESOURCE_CLAIM.0
            | Self::UPDATE_OTHER.0
            | Self::UPDATE_NODE_DECLARED_FEATURE.0,
    );
    pub const ALL: ActionType = ActionType(Self::ADD.0 | Self::DELETE.0 | Self::UPDATE.0);

    pub fn intersects(self, other: ActionType) -> bool {
        self.0 & other.0 != 0
    }
}

impl BitOr for ActionType {
    type Output = ActionType;
    fn bitor(self, o: ActionType) -> ActionType {
        ActionType(self.0 | o.0)
    }
}

impl BitAnd for ActionType {
    type Output = ActionType;
    fn bitand(self, o: ActionType) -> ActionType {
        ActionType(self.0 & o.0)
    }
}

/// A change in the cluster that might make a pod schedulable.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClusterEvent {
    pub resource: EventResource,
    pub action: ActionType,
    /// A name for logs and metrics (`NodeAdd`, `AssignedPodDelete`, `UnschedulableTimeout`, ...).
    pub label: &'static str,
}

impl ClusterEvent {
    pub const fn new(resource: EventResource, action: ActionType, label: &'static str) -> Self {
        ClusterEvent {
            resource,
            action,
            label,
        }
    }

    pub fn is_wildcard(&self) -> bool {
        self.resource == EventResource::WildCard && self.action == ActionType::ALL
    }
}

impl fmt::Display for ClusterEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label)
    }
}

pub mod labels {
    //! The well-known events.
    use super::{ActionType as A, ClusterEvent as E, EventResource as R};
    pub const NODE_ADD: E = E::new(R::Node, A::ADD, "NodeAdd");
    pub const NODE_DELETE: E = E::new(R::Node, A::DELETE, "NodeDelete");
    pub const ASSIGNED_POD_ADD: E = E::new(R::AssignedPod, A::ADD, "AssignedPodAdd");
    pub const ASSIGNED_POD_DELETE: E = E::new(R::AssignedPod, A::DELETE, "AssignedPodDelete");
    pub const UNSCHEDULED_POD_ADD: E = E::new(R::UnscheduledPod, A::ADD, "UnschedulablePodAdd");
    pub const UNSCHEDULED_POD_DELETE: E =
        E::new(R::UnscheduledPod, A::DELETE, "UnschedulablePodDelete");
    pub const UNSCHEDULABLE_TIMEOUT: E = E::new(R::WildCard, A::ALL, "UnschedulableTimeout");
    pub const FORCE_ACTIVATE: E = E::new(R::WildCard, A::ALL, "ForceActivate");
    pub const WILDCARD: E = E::new(R::WildCard, A::ALL, "WildCardEvent");
}

/// What a plugin's queueing hint says about a pod and an event.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueueingHint {
    /// The event may make the pod schedulable: move it out of unschedulablePods.
    Queue,
    /// The event cannot help the pod.
    QueueSkip,
}

/// The object an event carries (old or new version).
#[derive(Copy, Clone, Debug)]
pub enum EventObject<'a> {
    Pod(&'a StoredPod),
    Node(&'a StoredNode),
}

impl<'a> EventObject<'a> {
    pub fn as_pod(self) -> Option<&'a StoredPod> {
        match self {
            EventObject::Pod(p) => Some(p),
            _ => None,
        }
    }
    pub fn as_node(self) -> Option<&'a StoredNode> {
        match self {
            EventObject::Node(n) => Some(n),
            _ => None,
        }
    }
}

/// A queueing hint: `(pod waiting, old object, new object)`. An error counts as Queue.
pub type QueueingHintFn = Arc<
    dyn Fn(
            &StoredPod,
            Option<EventObject<'_>>,
            Option<EventObject<'_>>,
        ) -> Result<QueueingHint, String>
        + Send
        + Sync,
>;

/// An event a plugin registers for, with an optional hint (none means always Queue).
#[derive(Clone)]
pub struct ClusterEventWithHint {
    pub event: ClusterEvent,
    pub hint: Option<QueueingHintFn>,
}

impl ClusterEventWithHint {
    pub fn new(event: ClusterEvent) -> Self {
        ClusterEventWithHint { event, hint: None }
    }
    pub fn with_hint(
        event: ClusterEvent,
        hint: impl Fn(
                &StoredPod,
                Option<EventObject<'_>>,
                Option<EventObject<'_>>,
            ) -> Result<QueueingHint, String>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        ClusterEventWithHint {
            event,
            hint: Some(Arc::new(hint)),
        }
    }
}

impl fmt::Debug for ClusterEventWithHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterEventWithHint")
            .field("event", &self.event)
            .field("hint", &self.hint.is_some())
            .finish()
    }
}

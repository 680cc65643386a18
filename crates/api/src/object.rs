//! The object kinds kubeplane stores, as one enum over shared immutable k8s-openapi objects.

use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The kinds of object the store holds. The order is the order of `--final-state` output.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Namespace,
    Node,
    PriorityClass,
    Deployment,
    ReplicaSet,
    PodDisruptionBudget,
    Pod,
    Lease,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Namespace,
        Kind::Node,
        Kind::PriorityClass,
        Kind::Deployment,
        Kind::ReplicaSet,
        Kind::PodDisruptionBudget,
        Kind::Pod,
        Kind::Lease,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Namespace => "Namespace",
            Kind::Node => "Node",
            Kind::PriorityClass => "PriorityClass",
            Kind::Deployment => "Deployment",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::Pod => "Pod",
            Kind::Lease => "Lease",
        }
    }

    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Namespace | Kind::Node | Kind::Pod => "v1",
            Kind::Deployment | Kind::ReplicaSet => "apps/v1",
            Kind::PriorityClass => "scheduling.k8s.io/v1",
            Kind::PodDisruptionBudget => "policy/v1",
            Kind::Lease => "coordination.k8s.io/v1",
        }
    }

    pub fn is_namespaced(self) -> bool {
        !matches!(self, Kind::Namespace | Kind::Node | Kind::PriorityClass)
    }

    /// Parses a kind name as users write it (`Pod`, `pod`, `pods`, `rs`, ...).
    pub fn parse(s: &str) -> Option<Kind> {
        let k = match s.to_ascii_lowercase().as_str() {
            "namespace" | "namespaces" | "ns" => Kind::Namespace,
            "node" | "nodes" | "no" => Kind::Node,
            "priorityclass" | "priorityclasses" | "pc" => Kind::PriorityClass,
            "deployment" | "deployments" | "deploy" => Kind::Deployment,
            "replicaset" | "replicasets" | "rs" => Kind::ReplicaSet,
            "poddisruptionbudget" | "poddisruptionbudgets" | "pdb" => Kind::PodDisruptionBudget,
            "pod" | "pods" | "po" => Kind::Pod,
            "lease" | "leases" => Kind::Lease,
            _ => return None,
        };
        Some(k)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Identity of a stored object: kind, namespace ("" for cluster-scoped kinds) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(kind: Kind, namespace: &str, name: &str) -> Self {
        let namespace = if kind.is_namespaced() { namespace } else { "" };
        ObjectKey {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// A stored object. Objects are immutable once stored; writers build a new one and replace it.
#[derive(Clone, Debug, PartialEq)]
pub enum Object {
    Namespace(Arc<Namespace>),
    Node(Arc<Node>),
    PriorityClass(Arc<PriorityClass>),
    Deployment(Arc<Deployment>),
    ReplicaSet(Arc<ReplicaSet>),
    PodDisruptionBudget(Arc<PodDisruptionBudget>),
    Pod(Arc<Pod>),
    Lease(Arc<Lease>),
}

macro_rules! each_object {
    ($self:expr, $o:ident => $body:expr) => {
        match $self {
            Object::Namespace($o) => $body,
            Object::Node($o) => $body,
            Object::PriorityClass($o) => $body,
            Object::Deployment($o) => $body,
            Object::ReplicaSet($o) => $body,
            Object::PodDisruptionBudget($o) => $body,
            Object::Pod($o) => $body,
            Object::Lease($o) => $body,
        }
    };
}

impl Object {
    pub fn kind(&self) -> Kind {
        match self {
            Object::Namespace(_) => Kind::Namespace,
            Object::Node(_) => Kind::Node,
            Object::PriorityClass(_) => Kind::PriorityClass,
            Object::Deployment(_) => Kind::Deployment,
            Object::ReplicaSet(_) => Kind::ReplicaSet,
            Object::PodDisruptionBudget(_) => Kind::PodDisruptionBudget,
            Object::Pod(_) => Kind::Pod,
            Object::Lease(_) => Kind::Lease,
        }
    }

    pub fn meta(&self) -> &ObjectMeta {
        each_object!(self, o => &o.metadata)
    }

    /// A mutable view of the metadata; clones the object if it is shared.
    pub fn meta_mut(&mut self) -> &mut ObjectMeta {
        each_object!(self, o => &mut Arc::make_mut(o).metadata)
    }

    pub fn name(&self) -> &str {
        self.meta().name.as_deref().unwrap_or("")
    }

    pub fn namespace(&self) -> &str {
        if self.kind().is_namespaced() {
            self.meta().namespace.as_deref().unwrap_or("default")
        } else {
            ""
        }
    }

    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(self.kind(), self.namespace(), self.name())
    }

    pub fn resource_version(&self) -> &str {
        self.meta().resource_version.as_deref().unwrap_or("")
    }

    pub fn uid(&self) -> &str {
        self.meta().uid.as_deref().unwrap_or("")
    }

    pub fn as_pod(&self) -> Option<&Arc<Pod>> {
        match self {
            Object::Pod(p) => Some(p),
            _ => None,
        }
    }

    pub fn as_node(&self) -> Option<&Arc<Node>> {
        match self {
            Object::Node(n) => Some(n),
            _ => None,
        }
    }

    /// The object as a JSON value with apiVersion and kind set (for `--final-state`).
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = each_object!(self, o => serde_json::to_value(o.as_ref()))
            .unwrap_or(serde_json::Value::Null);
        if let serde_json::Value::Object(map) = &mut v {
            let mut out = serde_json::Map::new();
            out.insert("apiVersion".into(), self.kind().api_version().into());
            out.insert("kind".into(), self.kind().as_str().into());
            for (k, val) in std::mem::take(map) {
                if k != "apiVersion" && k != "kind" {
                    out.insert(k, val);
                }
            }
            *map = out;
        }
        v
    }
}

//! The object kinds kubeplane stores, as one enum over shared immutable k8s-openapi objects,
//! plus [`Object::Other`] for every other built-in kind and for custom resources (see
//! [`crate::types`]), kept as JSON.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

use crate::deployment::StoredDeployment;
use crate::node::StoredNode;
use crate::pod::StoredPod;
use crate::replica_set::StoredReplicaSet;
use crate::types::{self, ResourceType};

/// The kinds of object the store holds: the kinds kubeplane simulates, in the order of
/// `--final-state` output, then [`Kind::Other`] for the built-in kinds it only stores.
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
    /// A built-in kind, or a custom resource's kind, that kubeplane stores with plain API
    /// semantics and does not simulate.
    Other(&'static ResourceType),
}

impl Kind {
    /// The kinds kubeplane simulates (every other kind is [`Kind::Other`]).
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
            Kind::Other(t) => t.kind,
        }
    }

    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Namespace | Kind::Node | Kind::Pod => "v1",
            Kind::Deployment | Kind::ReplicaSet => "apps/v1",
            Kind::PriorityClass => "scheduling.k8s.io/v1",
            Kind::PodDisruptionBudget => "policy/v1",
            Kind::Lease => "coordination.k8s.io/v1",
            Kind::Other(t) => t.api_version,
        }
    }

    /// How many built-in kinds there are: the simulated ones and the built-in table's.
    pub fn count() -> usize {
        Kind::ALL.len() + types::BUILTIN.len()
    }

    /// A dense index of a built-in kind, below [`Kind::count`]: the simulated kinds in
    /// [`Kind::ALL`] order, then the built-in table's entries in its order (for per-kind
    /// arrays). `None` for a custom resource's kind, whose types are made at run time: per-kind
    /// storage keeps those in a map ordered by the type (group, version, kind), so the order
    /// does not depend on when a type was first seen.
    #[inline]
    pub fn index(self) -> Option<usize> {
        Some(match self {
            Kind::Namespace => 0,
            Kind::Node => 1,
            Kind::PriorityClass => 2,
            Kind::Deployment => 3,
            Kind::ReplicaSet => 4,
            Kind::PodDisruptionBudget => 5,
            Kind::Pod => 6,
            Kind::Lease => 7,
            Kind::Other(t) => Kind::ALL.len() + types::builtin_index(t)?,
        })
    }

    /// The API group ("" for the core group).
    pub fn group(self) -> &'static str {
        match self.api_version().rsplit_once('/') {
            Some((group, _)) => group,
            None => "",
        }
    }

    /// The plural resource name of the URL path (`pods`, `deployments`).
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Namespace => "namespaces",
            Kind::Node => "nodes",
            Kind::PriorityClass => "priorityclasses",
            Kind::Deployment => "deployments",
            Kind::ReplicaSet => "replicasets",
            Kind::PodDisruptionBudget => "poddisruptionbudgets",
            Kind::Pod => "pods",
            Kind::Lease => "leases",
            Kind::Other(t) => t.plural,
        }
    }

    /// The resource as upstream's error messages name it: `pods`, `deployments.apps`.
    pub fn group_resource(self) -> String {
        match self.group() {
            "" => self.plural().to_string(),
            group => format!("{}.{group}", self.plural()),
        }
    }

    pub fn is_namespaced(self) -> bool {
        match self {
            Kind::Namespace | Kind::Node | Kind::PriorityClass => false,
            Kind::Other(t) => t.namespaced,
            _ => true,
        }
    }

    /// Whether kubeplane simulates this kind (it is not [`Kind::Other`]).
    pub fn is_modelled(self) -> bool {
        !matches!(self, Kind::Other(_))
    }

    /// The kind a manifest's `apiVersion` and `kind` name, if kubeplane stores it.
    pub fn from_manifest(api_version: &str, kind: &str) -> Option<Kind> {
        if let Some(k) = Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind && k.api_version() == api_version)
        {
            return Some(k);
        }
        types::builtin(api_version, kind).map(Kind::Other)
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
            _ => return types::builtin_by_name(s).map(Kind::Other),
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
    /// A Node: k8s-openapi's type plus the later releases' fields kubeplane reads
    /// ([`StoredNode`]).
    Node(Arc<StoredNode>),
    PriorityClass(Arc<PriorityClass>),
    /// A Deployment with its template's spec shared by `Arc` ([`StoredDeployment`]).
    Deployment(Arc<StoredDeployment>),
    /// A ReplicaSet with its template's spec shared by `Arc` ([`StoredReplicaSet`]).
    ReplicaSet(Arc<StoredReplicaSet>),
    PodDisruptionBudget(Arc<PodDisruptionBudget>),
    /// A Pod in its stored form: the spec shared by `Arc`, `nodeName` outside it
    /// ([`StoredPod`]).
    Pod(Arc<StoredPod>),
    Lease(Arc<Lease>),
    Other(Arc<DynamicObject>),
}

/// An object of a kind kubeplane does not simulate: its metadata typed, everything else kept
/// as the JSON it was written as, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicObject {
    pub type_: &'static ResourceType,
    /// The `apiVersion` it was written with (`autoscaling/v1` or `autoscaling/v2` for a
    /// HorizontalPodAutoscaler; kubeplane converts no versions).
    pub api_version: String,
    pub metadata: ObjectMeta,
    /// Every other top-level field (`spec`, `data`, `rules`, `status`, ...).
    pub fields: Map<String, Value>,
}

impl DynamicObject {
    /// Reads a manifest of a built-in kind: `metadata` must decode as ObjectMeta.
    pub fn from_value(type_: &'static ResourceType, value: &Value) -> serde_json::Result<Self> {
        let mut fields = value.as_object().cloned().unwrap_or_default();
        let api_version = match fields.remove("apiVersion") {
            Some(Value::String(s)) => s,
            _ => type_.api_version.to_string(),
        };
        fields.remove("kind");
        let metadata = match fields.remove("metadata") {
            Some(m) => serde_json::from_value(m)?,
            None => ObjectMeta::default(),
        };
        Ok(DynamicObject {
            type_,
            api_version,
            metadata,
            fields,
        })
    }

    /// A top-level field (`spec`, `status`, ...).
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.fields.get(name)
    }
}

impl serde::Serialize for DynamicObject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.fields.len() + 3))?;
        map.serialize_entry("apiVersion", &self.api_version)?;
        map.serialize_entry("kind", self.type_.kind)?;
        map.serialize_entry("metadata", &self.metadata)?;
        for (k, v) in &self.fields {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
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
            Object::Other($o) => $body,
        }
    };
}

impl Object {
    /// The object a JSON document with `apiVersion` and `kind` describes (what
    /// [`Object::to_json`] writes, or an API server returns), of a kind kubeplane stores.
    /// Nothing is validated or defaulted.
    pub fn from_json(value: &Value) -> Result<Object, String> {
        let field = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        let kind = Kind::from_manifest(api_version, kind)
            .ok_or_else(|| format!("unsupported kind {kind:?} of apiVersion {api_version:?}"))?;
        fn typed<T: serde::de::DeserializeOwned>(value: &Value) -> Result<Arc<T>, String> {
            T::deserialize(value)
                .map(Arc::new)
                .map_err(|e| e.to_string())
        }
        Ok(match kind {
            Kind::Namespace => Object::Namespace(typed::<Namespace>(value)?),
            Kind::Node => Object::Node(typed::<StoredNode>(value)?),
            Kind::PriorityClass => Object::PriorityClass(typed::<PriorityClass>(value)?),
            Kind::Deployment => Object::Deployment(typed::<StoredDeployment>(value)?),
            Kind::ReplicaSet => Object::ReplicaSet(typed::<StoredReplicaSet>(value)?),
            Kind::PodDisruptionBudget => {
                Object::PodDisruptionBudget(typed::<PodDisruptionBudget>(value)?)
            }
            Kind::Pod => Object::Pod(typed::<StoredPod>(value)?),
            Kind::Lease => Object::Lease(typed::<Lease>(value)?),
            Kind::Other(t) => Object::Other(Arc::new(
                DynamicObject::from_value(t, value).map_err(|e| e.to_string())?,
            )),
        })
    }

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
            Object::Other(o) => Kind::Other(o.type_),
        }
    }

    /// The metadata. A pod's has no labels and ownerReferences (its stored form keeps them
    /// outside, shared: [`crate::pod_meta`]): read those through [`Object::labels`] and
    /// [`Object::owner_references`].
    pub fn meta(&self) -> &ObjectMeta {
        each_object!(self, o => &o.metadata)
    }

    /// A mutable view of the metadata; clones the object if it is shared. A pod's labels and
    /// ownerReferences are not in it: write them through [`Object::set_labels`] and
    /// [`Object::set_owner_references`].
    pub fn meta_mut(&mut self) -> &mut ObjectMeta {
        each_object!(self, o => &mut Arc::make_mut(o).metadata)
    }

    /// `metadata.labels`, for every kind.
    pub fn labels(&self) -> Option<&BTreeMap<String, String>> {
        match self {
            Object::Pod(p) => p.labels(),
            _ => self.meta().labels.as_ref(),
        }
    }

    /// `metadata.ownerReferences`, for every kind.
    pub fn owner_references(&self) -> Option<&Vec<OwnerReference>> {
        match self {
            Object::Pod(p) => p.owner_references(),
            _ => self.meta().owner_references.as_ref(),
        }
    }

    /// Replaces `metadata.labels` (clones the object if it is shared).
    pub fn set_labels(&mut self, labels: Option<BTreeMap<String, String>>) {
        match self {
            Object::Pod(p) => Arc::make_mut(p).set_labels(labels),
            _ => self.meta_mut().labels = labels,
        }
    }

    /// Replaces `metadata.ownerReferences` (clones the object if it is shared).
    pub fn set_owner_references(&mut self, refs: Option<Vec<OwnerReference>>) {
        match self {
            Object::Pod(p) => Arc::make_mut(p).set_owner_references(refs),
            _ => self.meta_mut().owner_references = refs,
        }
    }

    /// Edits `metadata.ownerReferences` in place (clones the object, and a pod's shared list,
    /// if they are shared); `None` when the object has none (nothing is cloned then).
    pub fn owner_references_mut(&mut self) -> Option<&mut Vec<OwnerReference>> {
        self.owner_references()?;
        Some(match self {
            Object::Pod(p) => Arc::make_mut(p).owner_references_mut(),
            _ => self.meta_mut().owner_references.as_mut()?,
        })
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

    pub fn as_pod(&self) -> Option<&Arc<StoredPod>> {
        match self {
            Object::Pod(p) => Some(p),
            _ => None,
        }
    }

    pub fn as_node(&self) -> Option<&Arc<StoredNode>> {
        match self {
            Object::Node(n) => Some(n),
            _ => None,
        }
    }

    /// Writes the object as JSON, apiVersion and kind first (k8s-openapi's serializers write
    /// them), without building a `Value` first: what an API server's list responses do per item.
    pub fn to_writer<W: std::io::Write>(&self, w: W) -> serde_json::Result<()> {
        each_object!(self, o => serde_json::to_writer(w, o.as_ref()))
    }

    /// The object as a JSON value with apiVersion and kind set (for `--final-state`).
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = each_object!(self, o => serde_json::to_value(o.as_ref()))
            .unwrap_or(serde_json::Value::Null);
        if let serde_json::Value::Object(map) = &mut v {
            let mut out = serde_json::Map::new();
            let api_version = match self {
                Object::Other(o) => o.api_version.as_str(),
                _ => self.kind().api_version(),
            };
            out.insert("apiVersion".into(), api_version.into());
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

//! Storage keys and key prefixes.
//!
//! A key names one object: its resource (a type such as `pods` or `apps/deployments`, opaque to
//! storage), its namespace (`""` for cluster-scoped objects) and its name. Keys order by
//! resource, then namespace, then name, so the objects of a resource, or of a resource in one
//! namespace, are one contiguous range of an ordered map: listing them costs a lookup plus the
//! range, not a scan.

use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

/// The name of one stored object. Cloning is three reference-count increments, because a key
/// is copied into every event and every version of the object.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    resource: Arc<str>,
    namespace: Arc<str>,
    name: Arc<str>,
}

impl Key {
    /// A namespaced object's key.
    pub fn new(resource: &str, namespace: &str, name: &str) -> Key {
        Key {
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// A cluster-scoped object's key: its namespace is empty.
    pub fn cluster(resource: &str, name: &str) -> Key {
        Key::new(resource, "", name)
    }

    pub fn resource(&self) -> &str {
        &self.resource
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for Key {
    /// `resource/namespace/name`, or `resource/name` for a cluster-scoped key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{}/{}", self.resource, self.name)
        } else {
            write!(f, "{}/{}/{}", self.resource, self.namespace, self.name)
        }
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

/// A set of keys that is one contiguous range in key order: what a list or a watch covers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Prefix {
    /// Every key.
    All,
    /// Every key of one resource, in all namespaces.
    Resource(Arc<str>),
    /// Every key of one resource in one namespace (`""`: the cluster-scoped ones).
    Namespace(Arc<str>, Arc<str>),
}

impl Prefix {
    pub fn resource(resource: &str) -> Prefix {
        Prefix::Resource(resource.into())
    }

    pub fn namespace(resource: &str, namespace: &str) -> Prefix {
        Prefix::Namespace(resource.into(), namespace.into())
    }

    /// Whether `key` is in the range.
    pub fn contains(&self, key: &Key) -> bool {
        match self {
            Prefix::All => true,
            Prefix::Resource(r) => key.resource == *r,
            Prefix::Namespace(r, ns) => key.resource == *r && key.namespace == *ns,
        }
    }

    /// The first key of the range, if it has one: the empty string sorts first, so the key with
    /// an empty namespace and name precedes every other key of the range.
    pub(crate) fn lower_bound(&self) -> Option<Key> {
        match self {
            Prefix::All => None,
            Prefix::Resource(r) => Some(Key {
                resource: r.clone(),
                namespace: "".into(),
                name: "".into(),
            }),
            Prefix::Namespace(r, ns) => Some(Key {
                resource: r.clone(),
                namespace: ns.clone(),
                name: "".into(),
            }),
        }
    }

    /// Where a list of the range starts when it continues after `after`: just after it when it
    /// lies at or past the range's start, else at the start (an `after` past the range's end
    /// yields an empty page, because the first key found is outside the range).
    pub(crate) fn start_after(&self, after: Option<&Key>) -> Bound<Key> {
        let lower = self.lower_bound();
        match (after, lower) {
            (Some(a), Some(l)) if a.cmp(&l) == Ordering::Less => Bound::Included(l),
            (Some(a), _) => Bound::Excluded(a.clone()),
            (None, Some(l)) => Bound::Included(l),
            (None, None) => Bound::Unbounded,
        }
    }
}

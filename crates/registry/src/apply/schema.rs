//! What server-side apply needs to know of a field, from the merge metadata of
//! [`crate::patch::meta`] (upstream's OpenAPI extensions), in structured-merge-diff's terms:
//! granular structs and maps (merged and owned field by field), atomic values (owned whole),
//! associative lists (items owned by their list-map keys), sets (items owned by value) and
//! atomic lists.
//!
//! As upstream's OpenAPI-to-schema conversion does, a list without `x-kubernetes-list-type` is
//! associative on its `x-kubernetes-patch-merge-key` when its patch strategy is `merge`, a set
//! when it merges without a key, and atomic otherwise. A field the metadata does not know (the
//! table holds only the fields that carry metadata or lead to it, and a custom resource has
//! none) is a granular map when it holds an object and atomic otherwise.

use crate::patch::meta::{Field, Shape, TypeDef};

/// The shape of one node of an object for apply.
#[derive(Clone, Copy, Debug)]
pub enum Node {
    /// A struct or map merged field by field; its fields' metadata when known.
    Granular(Option<&'static TypeDef>),
    /// A map whose values all have this node (`matchLabels`, `resources.limits`).
    Map(Option<&'static TypeDef>, bool),
    /// Owned and replaced whole: a scalar, an atomic struct or map, an atomic list.
    Atomic,
    /// A list of maps whose items are identified by these keys; the items' type.
    Associative(&'static [&'static str], Option<&'static TypeDef>),
    /// A list of primitives whose items are identified by their value.
    Set,
}

/// The node a value of this type is (granular unless the type is atomic).
pub fn of_type(ty: Option<&'static TypeDef>) -> Node {
    match ty {
        Some(t) if t.atomic => Node::Atomic,
        ty => Node::Granular(ty),
    }
}

/// The node of the field `name` of a granular node of type `ty`.
pub fn field(ty: Option<&'static TypeDef>, name: &str) -> Node {
    match ty.and_then(|t| t.field(name)) {
        None => Node::Granular(None),
        Some(f) => of_field(f),
    }
}

fn of_field(f: &'static Field) -> Node {
    match f.shape {
        Shape::Value if f.map_type == Some("atomic") => Node::Atomic,
        Shape::Value => of_type(f.ty()),
        Shape::Map if f.map_type == Some("atomic") => Node::Atomic,
        Shape::Map => Node::Map(f.ty(), f.ty().is_some_and(|t| t.atomic)),
        Shape::List => match f.list_type {
            Some("map") => Node::Associative(f.list_map_keys, f.ty()),
            Some("set") => Node::Set,
            Some(_) => Node::Atomic,
            None if f.has_strategy("merge") => match f.patch_merge_key {
                Some(_) => Node::Associative(f.patch_merge_key.as_slice(), f.ty()),
                None => Node::Set,
            },
            None => Node::Atomic,
        },
    }
}

/// The node of the child `name` of a granular node.
pub fn child(node: Node, name: &str) -> Node {
    match node {
        Node::Granular(ty) => field(ty, name),
        Node::Map(_, true) => Node::Atomic,
        Node::Map(ty, false) => of_type(ty),
        _ => Node::Atomic,
    }
}

/// The node of an item of an associative list.
pub fn item(node: Node) -> Node {
    match node {
        Node::Associative(_, ty) => of_type(ty),
        _ => Node::Atomic,
    }
}

/// Whether a value under this node is merged and owned part by part.
pub fn is_granular(node: Node, v: &serde_json::Value) -> bool {
    match node {
        Node::Granular(_) | Node::Map(..) => v.is_object(),
        Node::Associative(..) | Node::Set => v.is_array(),
        Node::Atomic => false,
    }
}

/// The default of a list-map key the applied item leaves out (upstream's schema defaults a
/// port's `protocol` to `TCP`, and structured-merge-diff uses key defaults).
pub fn key_default(key: &str) -> Option<serde_json::Value> {
    (key == "protocol").then(|| "TCP".into())
}

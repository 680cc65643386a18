//! The merge metadata of the built-in kinds' fields, as upstream's API schema declares it:
//! `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` (what a strategic merge
//! patch merges, and on which key), `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and
//! `x-kubernetes-map-type` (what server-side apply needs). The data is [`meta_table`], generated
//! from upstream's `swagger.json` by `scripts/gen_patch_meta.py`; this module reads it.
//!
//! A type or field missing from the table carries no metadata: its maps merge key by key and
//! its lists are replaced whole, as upstream does for fields without struct tags.
//!
//! [`meta_table`]: super::meta_table

use kubeplane_api::Kind;

use super::meta_table::{KINDS, TYPES};

/// How a field holds its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// The field's value is one of the type.
    Value,
    /// A list whose items are of the type (or primitives).
    List,
    /// A map whose values are of the type.
    Map,
}

/// One field of a type with its patch and apply metadata.
#[derive(Debug, PartialEq, Eq)]
pub struct Field {
    /// The JSON name.
    pub name: &'static str,
    pub shape: Shape,
    ty: Option<&'static str>,
    /// `x-kubernetes-patch-strategy`: `merge`, `replace`, `retainKeys` or `merge,retainKeys`.
    pub patch_strategy: Option<&'static str>,
    /// `x-kubernetes-patch-merge-key`: the key a merged list of maps matches its items on.
    pub patch_merge_key: Option<&'static str>,
    /// `x-kubernetes-list-type`: `atomic`, `set` or `map`.
    pub list_type: Option<&'static str>,
    /// `x-kubernetes-list-map-keys`: the keys of a `map` list.
    pub list_map_keys: &'static [&'static str],
    /// `x-kubernetes-map-type` of a map field: `atomic` or `granular`.
    pub map_type: Option<&'static str>,
}

impl Field {
    /// A table row (the generated table's constructor).
    #[allow(clippy::too_many_arguments)]
    pub(super) const fn new(
        name: &'static str,
        shape: Shape,
        ty: Option<&'static str>,
        patch_strategy: Option<&'static str>,
        patch_merge_key: Option<&'static str>,
        list_type: Option<&'static str>,
        list_map_keys: &'static [&'static str],
        map_type: Option<&'static str>,
    ) -> Field {
        Field {
            name,
            shape,
            ty,
            patch_strategy,
            patch_merge_key,
            list_type,
            list_map_keys,
            map_type,
        }
    }

    /// The type of the field's value, list items or map values, when it has metadata.
    pub fn ty(&self) -> Option<&'static TypeDef> {
        self.ty.and_then(type_def)
    }

    /// Whether the patch strategy lists `strategy` (`merge`, `replace`, `retainKeys`).
    pub fn has_strategy(&self, strategy: &str) -> bool {
        self.patch_strategy
            .is_some_and(|s| s.split(',').any(|one| one == strategy))
    }
}

/// One API type (an OpenAPI definition) with the fields that carry metadata or lead to it.
#[derive(Debug, PartialEq, Eq)]
pub struct TypeDef {
    /// The definition name (`io.k8s.api.core.v1.PodSpec`).
    pub name: &'static str,
    /// `x-kubernetes-map-type: atomic` on the type: server-side apply owns it whole.
    pub atomic: bool,
    /// Sorted by name.
    pub fields: &'static [Field],
}

impl TypeDef {
    /// The field's metadata, if it has any.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        let fields: &'static [Field] = self.fields;
        fields
            .binary_search_by(|f| f.name.cmp(name))
            .ok()
            .map(|i| &fields[i])
    }
}

/// The root type of one kind.
#[derive(Debug)]
pub struct KindRoot {
    pub api_version: &'static str,
    pub kind: &'static str,
    ty: &'static str,
}

impl KindRoot {
    pub(super) const fn new(
        api_version: &'static str,
        kind: &'static str,
        ty: &'static str,
    ) -> Self {
        KindRoot {
            api_version,
            kind,
            ty,
        }
    }
}

/// The type named by an OpenAPI definition name, if it has metadata.
pub fn type_def(name: &str) -> Option<&'static TypeDef> {
    TYPES
        .binary_search_by(|t| t.name.cmp(name))
        .ok()
        .map(|i| &TYPES[i])
}

/// The root type of the kind an `apiVersion` and `kind` name, if upstream's schema has it
/// (a custom resource has none).
pub fn root(api_version: &str, kind: &str) -> Option<&'static TypeDef> {
    KINDS
        .iter()
        .find(|k| k.api_version == api_version && k.kind == kind)
        .and_then(|k| type_def(k.ty))
}

/// The root type of a stored kind.
pub fn for_kind(kind: Kind) -> Option<&'static TypeDef> {
    root(kind.api_version(), kind.as_str())
}

//! Strategic merge patch (`application/strategic-merge-patch+json`), written by hand: no Rust
//! crate implements it. The rules are upstream's (apimachinery's `strategicpatch` package, as
//! the API server applies it in `StrategicMergeMapPatch`: parallel deletion lists merged,
//! unmatched nulls ignored):
//!
//! - maps merge key by key; `null` deletes a key; a value of another type replaces;
//! - a list whose field has patch strategy `merge` merges: lists of maps match items on the
//!   field's patch merge key (an unmatched item is added), lists of primitives are unioned;
//!   any other list is replaced whole, and so is a map whose strategy is `replace`;
//! - directives: `$patch: replace` (a map or list replaced by the patch's content),
//!   `$patch: delete` (a map emptied, or the list item with that merge key removed),
//!   `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` (the order kubectl apply
//!   wants), `$retainKeys` (keys missing from the list are cleared, for `retainKeys` unions);
//! - the merged list's order: see [`order`].
//!
//! The merge-key metadata comes from [`super::meta`]. Values the patch adds or replaces whole
//! lose their nulls and directives here (upstream leaves the directive keys to the typed
//! decoding, which drops them as unknown fields; the result is the same).

mod errors;
mod order;

pub(crate) use errors::SmpError;

use serde_json::{Map, Value};

use super::meta::{Field, Shape, TypeDef};
use errors::{BAD_PRIMITIVE_LIST, BAD_RETAIN_KEYS, BAD_SET_ELEMENT_ORDER, GO_SLICE, MERGE_IN_LIST};
use order::{element_kind, ElementKind};

pub(crate) const DIRECTIVE_MARKER: &str = "$patch";
const DELETE: &str = "delete";
const REPLACE: &str = "replace";
const MERGE: &str = "merge";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

type Object = Map<String, Value>;

/// Where the merge is in the schema.
#[derive(Clone, Copy, Debug)]
enum Schema {
    /// No metadata: maps merge, lists are replaced.
    Unknown,
    /// An object of this type.
    Struct(&'static TypeDef),
    /// A map whose values are of this type.
    MapOf(&'static TypeDef),
}

impl Schema {
    /// The field's metadata (if any) and the schema of its value (of its items, for a list).
    fn lookup(self, key: &str) -> (Option<&'static Field>, Schema) {
        match self {
            Schema::Struct(t) => match t.field(key) {
                Some(f) => {
                    let sub = match (f.shape, f.ty()) {
                        (Shape::Map, Some(t)) => Schema::MapOf(t),
                        (_, Some(t)) => Schema::Struct(t),
                        (_, None) => Schema::Unknown,
                    };
                    (Some(f), sub)
                }
                None => (None, Schema::Unknown),
            },
            Schema::MapOf(t) => (None, Schema::Struct(t)),
            Schema::Unknown => (None, Schema::Unknown),
        }
    }
}

/// The field's patch strategy other than `retainKeys` (`extractRetainKeysPatchStrategy`).
fn strategy(field: Option<&Field>) -> &'static str {
    match field {
        Some(f) if f.has_strategy(MERGE) => MERGE,
        Some(f) if f.has_strategy(REPLACE) => REPLACE,
        _ => "",
    }
}

fn merge_key(field: Option<&Field>) -> &'static str {
    field.and_then(|f| f.patch_merge_key).unwrap_or("")
}

/// Applies `patch` to `original`, an object of the type `root`.
pub(crate) fn merge(
    original: Object,
    patch: Object,
    root: &'static TypeDef,
) -> Result<Object, SmpError> {
    merge_map(original, patch, Schema::Struct(root))
}

/// `mergeMap`.
fn merge_map(mut original: Object, mut patch: Object, schema: Schema) -> Result<Object, SmpError> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
        return match directive.as_str() {
            Some(REPLACE) => {
                patch.shift_remove(DIRECTIVE_MARKER);
                Ok(clean_map(patch))
            }
            Some(DELETE) => Ok(Object::new()),
            _ => Err(SmpError::bad_patch_type(directive, &patch)),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_ordered_lists(&mut original, &mut patch, schema)?;
    for (key, patch_value) in patch {
        let (key, delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            (extract_key(&key, DELETE_FROM_PRIMITIVE_LIST)?, true)
        } else {
            (key, false)
        };
        if patch_value.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let keep = match original.get_mut(&key) {
            None if delete_list => true,
            None => match clean(patch_value) {
                Some(v) => {
                    original.insert(key, v);
                    continue;
                }
                None => false,
            },
            Some(slot) => merge_value(slot, patch_value, &key, schema, delete_list)?,
        };
        if !keep {
            original.shift_remove(&key);
        }
    }
    Ok(original)
}

/// Merges one field's patch value into its live value in place; false when the field goes.
fn merge_value(
    slot: &mut Value,
    patch_value: Value,
    key: &str,
    schema: Schema,
    delete_list: bool,
) -> Result<bool, SmpError> {
    let (field, sub) = schema.lookup(key);
    if errors::go_type(Some(slot)) != errors::go_type(Some(&patch_value)) {
        // A deletion list for a field of another type deletes nothing.
        return Ok(delete_list || replace_with(slot, patch_value));
    }
    match (slot, patch_value) {
        (Value::Object(live), Value::Object(patch)) => {
            *live = if strategy(field) == REPLACE {
                clean_map(patch)
            } else {
                merge_map(std::mem::take(live), patch, sub)?
            };
        }
        (Value::Array(live), Value::Array(patch)) => {
            *live = merge_list_field(std::mem::take(live), patch, field, sub, delete_list)?.0;
        }
        (slot, patch) => return Ok(replace_with(slot, patch)),
    }
    Ok(true)
}

/// Puts the patch's value in the slot; false when the value is itself a directive (the field
/// goes).
fn replace_with(slot: &mut Value, patch_value: Value) -> bool {
    match clean(patch_value) {
        Some(v) => {
            *slot = v;
            true
        }
        None => false,
    }
}

/// A merged list, and the live list as the caller's Go slice sees it afterwards (see
/// [`LiveView`]).
type Merged = (Vec<Value>, Vec<Value>);

/// `mergeSliceHandler`: lists with patch strategy `merge` (and deletion lists) merge, the
/// others are replaced.
fn merge_list_field(
    live: Vec<Value>,
    patch: Vec<Value>,
    field: Option<&Field>,
    item_schema: Schema,
    delete_list: bool,
) -> Result<Merged, SmpError> {
    if strategy(field) == MERGE || delete_list {
        merge_list(live, patch, item_schema, merge_key(field), delete_list)
    } else {
        Ok((clean_list(patch), live))
    }
}

/// `mergeSlice`.
fn merge_list(
    live: Vec<Value>,
    patch: Vec<Value>,
    item_schema: Schema,
    merge_key: &str,
    delete_list: bool,
) -> Result<Merged, SmpError> {
    if live.is_empty() && patch.is_empty() {
        return Ok((Vec::new(), live));
    }
    let kind = element_kind(&[&live, &patch])?;
    let (merged, patch_order, server_order, view) = match kind {
        ElementKind::Primitive if delete_list => {
            let kept = live
                .iter()
                .filter(|v| !patch.contains(v))
                .cloned()
                .collect();
            return Ok((kept, live));
        }
        ElementKind::Primitive => {
            let mut merged: Vec<Value> = Vec::with_capacity(live.len() + patch.len());
            for v in live.iter().chain(&patch) {
                if !merged.contains(v) {
                    merged.push(v.clone());
                }
            }
            (merged, patch, live.clone(), live)
        }
        ElementKind::Map if merge_key.is_empty() => {
            return Err(SmpError::Other(
                "cannot merge lists without merge key for struct".into(),
            ));
        }
        ElementKind::Map => {
            let mut view = LiveView::new(live);
            let (live, patch) = apply_list_directives(&mut view, patch, merge_key)?;
            let merged = merge_items(live.clone(), &patch, merge_key, item_schema)?;
            view.appended(&merged[live.len()..]);
            (merged, patch, live, view.backing)
        }
    };
    let (named, rest) = order::partition(merged, &patch_order, merge_key)?;
    let merged =
        order::normalize_element_order(named, rest, &patch_order, &server_order, merge_key, kind)?;
    Ok((merged, view))
}

/// The live list of maps as upstream's caller still sees it after the merge. Go's merge
/// deletes items by shifting the slice's shared array in place and appends new items into
/// the room that frees, so `$setElementOrder`'s ordering (which looks items up in the live
/// list) sees the merged list's first items, then stale ones. Upstream's expected orders
/// (patch_test.go's "add map and delete map from merging list") follow from it, so it is
/// reproduced: `backing` is that array, `len` the merged list's length within it.
struct LiveView {
    backing: Vec<Value>,
    len: Option<usize>,
}

impl LiveView {
    fn new(live: Vec<Value>) -> Self {
        let len = Some(live.len());
        LiveView { backing: live, len }
    }

    /// Removes the item at `i` as Go's `append(s[:i], s[i+1:]...)` does.
    fn delete(&mut self, i: usize) {
        if let Some(len) = self.len.as_mut() {
            for j in i..*len - 1 {
                self.backing[j] = self.backing[j + 1].clone();
            }
            *len -= 1;
        }
    }

    fn live(&self) -> Vec<Value> {
        self.backing[..self.len.unwrap_or(0)].to_vec()
    }

    /// After `$patch: replace` the merge works on a new list: the live array changes no more.
    fn detach(&mut self) {
        self.len = None;
    }

    /// Items appended to the merged list land in the live array while there is room.
    fn appended(&mut self, items: &[Value]) {
        let Some(len) = self.len else { return };
        for (slot, item) in self.backing.iter_mut().skip(len).zip(items) {
            *slot = item.clone();
        }
    }
}

/// `mergeSliceWithSpecialElements`: applies the `$patch` items of a list of maps; returns the
/// live list after deletions (or the patch's items, for `$patch: replace`) and the patch's
/// other items.
fn apply_list_directives(
    view: &mut LiveView,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut rest = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Some(directive) = item.get(DIRECTIVE_MARKER) else {
            rest.push(item);
            continue;
        };
        let map = item.as_object().expect("a list of maps");
        match directive.as_str() {
            Some(DELETE) => {
                let Some(value) = map.get(merge_key) else {
                    return Err(SmpError::no_merge_key(map, merge_key));
                };
                while let Some(i) = order::find_by_key(&view.live(), merge_key, value)? {
                    view.delete(i);
                }
            }
            // Later `$patch` items are still applied, and pruned.
            Some(REPLACE) => replace = true,
            Some(MERGE) => return Err(SmpError::Other(MERGE_IN_LIST.into())),
            _ => return Err(SmpError::bad_patch_type(directive, map)),
        }
    }
    if replace {
        view.detach();
        return Ok((clean_list(rest), Vec::new()));
    }
    Ok((view.live(), rest))
}

/// `mergeSliceWithoutSpecialElements`: each patch item merges into the live item with its
/// merge key, or is added at the end.
fn merge_items(
    mut live: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    item_schema: Schema,
) -> Result<Vec<Value>, SmpError> {
    for item in patch {
        let map = item.as_object().expect("a list of maps");
        let Some(value) = map.get(merge_key) else {
            return Err(SmpError::no_merge_key(map, merge_key));
        };
        match order::find_by_key(&live, merge_key, value)? {
            Some(i) => {
                let Value::Object(found) = std::mem::take(&mut live[i]) else {
                    unreachable!("find_by_key finds maps");
                };
                live[i] = Value::Object(merge_map(found, map.clone(), item_schema)?);
            }
            None => live.extend(clean(item.clone())),
        }
    }
    Ok(live)
}

/// `applyRetainKeysDirective`: clears the live keys `$retainKeys` does not list, after checking
/// that the patch sets no key outside it.
fn apply_retain_keys(original: &mut Object, patch: &mut Object) -> Result<(), SmpError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(SmpError::bad_request(BAD_RETAIN_KEYS));
    };
    let retained = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    let outside = patch.iter().any(|(k, v)| {
        !v.is_null()
            && !k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            && !k.starts_with(SET_ELEMENT_ORDER)
            && !retained(k)
    });
    if outside {
        return Err(SmpError::bad_request(BAD_RETAIN_KEYS));
    }
    original.retain(|k, _| retained(k));
    Ok(())
}

/// `mergePatchIntoOriginal`: merges each list that has a `$setElementOrder/<field>` directive
/// and orders it: the directive's order first, then the live order for items only the live
/// object has.
fn merge_ordered_lists(
    original: &mut Object,
    patch: &mut Object,
    schema: Schema,
) -> Result<(), SmpError> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in keys {
        let order = match patch.shift_remove(&key) {
            Some(Value::Array(order)) => order,
            other => return Err(SmpError::bad_arg_type(GO_SLICE, other.as_ref())),
        };
        let field_key = extract_key(&key, SET_ELEMENT_ORDER)?;
        let live = list_at(original, &field_key)?;
        let patch_list = list_at(patch, &field_key)?;
        let (field, sub) = schema.lookup(&field_key);
        let merge_key = merge_key(field);
        order::validate_with_set_order(patch_list.unwrap_or(&[]), &order, merge_key)?;
        let (merged, view) = match (live, patch_list) {
            (Some(l), None) => (l.to_vec(), l.to_vec()),
            (None, Some(p)) => (clean_list(p.to_vec()), Vec::new()),
            (Some(l), Some(p)) => merge_list_field(l.to_vec(), p.to_vec(), field, sub, false)?,
            (None, None) => continue,
        };
        let kind = element_kind(&[live.unwrap_or(&[]), patch_list.unwrap_or(&[])])?;
        let (named, rest) = order::partition(merged, &order, merge_key)?;
        let both = order::normalize_element_order(named, rest, &order, &view, merge_key, kind)?;
        original.insert(field_key.clone(), Value::Array(both));
        patch.shift_remove(&field_key);
    }
    Ok(())
}

/// The list at `key`, if there is one; another value there is an error.
fn list_at<'a>(map: &'a Object, key: &str) -> Result<Option<&'a [Value]>, SmpError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items)),
        Some(other) => Err(SmpError::bad_arg_type(GO_SLICE, Some(other))),
    }
}

/// The field a `$deleteFromPrimitiveList/<field>` or `$setElementOrder/<field>` key names.
fn extract_key(key: &str, prefix: &str) -> Result<String, SmpError> {
    match key.split_once('/') {
        Some((p, field)) if p == prefix => Ok(field.to_string()),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST => Err(SmpError::bad_request(BAD_PRIMITIVE_LIST)),
        _ => Err(SmpError::bad_request(BAD_SET_ELEMENT_ORDER)),
    }
}

/// A value the patch adds or puts in whole, without its null fields and its directives
/// (`discardNullValuesFromPatch`, `removeDirectives`); None when the value is itself a
/// `$patch` map.
fn clean(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) if map.contains_key(DIRECTIVE_MARKER) => None,
        Value::Object(map) => Some(Value::Object(clean_map(map))),
        Value::Array(items) => Some(Value::Array(clean_list(items))),
        other => Some(other),
    }
}

fn clean_map(map: Object) -> Object {
    map.into_iter()
        .filter(|(k, v)| !v.is_null() && !is_directive_key(k))
        .filter_map(|(k, v)| clean(v).map(|v| (k, v)))
        .collect()
}

fn clean_list(items: Vec<Value>) -> Vec<Value> {
    items.into_iter().filter_map(clean).collect()
}

fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

//! The order of a merged list (upstream's "preserve order in strategic merge patch" design):
//! the items the patch names keep the patch's order (or `$setElementOrder`'s), the items only
//! the live object has keep the live order, and the two are interleaved by the live order
//! where both are known, patch items first where they are not (a new item lands in front).

use serde_json::Value;

use super::errors::{SmpError, GO_MAP, NO_ELEMENTS, NO_LIST_OF_LISTS};
use super::DIRECTIVE_MARKER;

/// What a list holds, as far as ordering and matching care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ElementKind {
    /// Maps, matched by their merge key.
    Map,
    /// Primitives, matched by value.
    Primitive,
}

/// The kind of the items of all the lists, which must agree (`sliceElementType`).
pub(super) fn element_kind(lists: &[&[Value]]) -> Result<ElementKind, SmpError> {
    let mut first: Option<&Value> = None;
    for item in lists.iter().flat_map(|l| l.iter()) {
        match first {
            None => {
                if item.is_array() {
                    return Err(SmpError::Unprocessable(NO_LIST_OF_LISTS.into()));
                }
                first = Some(item);
            }
            Some(f) if super::errors::go_type(Some(f)) != super::errors::go_type(Some(item)) => {
                let all: Vec<String> = lists.iter().map(|l| super::errors::go_list(l)).collect();
                return Err(SmpError::Other(format!(
                    "list element types are not identical: [{}]",
                    all.join(" ")
                )));
            }
            Some(_) => {}
        }
    }
    match first {
        None => Err(SmpError::Other(NO_ELEMENTS.into())),
        Some(Value::Object(_)) => Ok(ElementKind::Map),
        Some(_) => Ok(ElementKind::Primitive),
    }
}

/// The value an item is matched on: its merge key's value for maps, itself otherwise.
fn match_value<'a>(item: &'a Value, merge_key: &str, kind: ElementKind) -> Option<&'a Value> {
    match kind {
        ElementKind::Map => item.as_object().and_then(|m| m.get(merge_key)),
        ElementKind::Primitive => Some(item),
    }
}

fn index(list: &[Value], item: &Value, merge_key: &str, kind: ElementKind) -> Option<usize> {
    let wanted = match_value(item, merge_key, kind);
    list.iter()
        .position(|v| match_value(v, merge_key, kind) == wanted)
}

/// Splits `items` into those `by` names (by merge key, or by value for primitives) and the
/// rest (`partitionMapsByPresentInList`, `partitionPrimitivesByPresentInList`).
pub(super) fn partition(
    items: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut named = Vec::new();
    let mut rest = Vec::new();
    for item in items {
        let found = if merge_key.is_empty() {
            by.contains(&item)
        } else {
            let Some(map) = item.as_object() else {
                return Err(SmpError::bad_arg_type(GO_MAP, Some(&item)));
            };
            let Some(value) = map.get(merge_key) else {
                return Err(SmpError::no_merge_key(map, merge_key));
            };
            find_by_key(by, merge_key, value)?.is_some()
        };
        if found {
            named.push(item);
        } else {
            rest.push(item);
        }
    }
    Ok((named, rest))
}

/// The index of the map in `list` whose `key` is `value` (`findMapInSliceBasedOnKeyValue`).
pub(super) fn find_by_key(
    list: &[Value],
    key: &str,
    value: &Value,
) -> Result<Option<usize>, SmpError> {
    for (i, item) in list.iter().enumerate() {
        let Some(map) = item.as_object() else {
            return Err(SmpError::Other(format!("value for key {i} is not a map")));
        };
        if map.get(key) == Some(value) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Orders the patch's items by `patch_order` and the live object's own items by
/// `server_order`, then interleaves them (`normalizeElementOrder`).
pub(super) fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: ElementKind,
) -> Result<Vec<Value>, SmpError> {
    let patch_items = sort_by_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = sort_by_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted(
        server_only,
        patch_items,
        server_order,
        merge_key,
        kind,
    ))
}

/// `normalizeSliceOrder`: every map must carry the merge key; `$patch: delete` items go last.
fn sort_by_order(
    items: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: ElementKind,
) -> Result<Vec<Value>, SmpError> {
    let mut deletes = Vec::new();
    let mut items = items;
    if kind == ElementKind::Map {
        for item in items.iter().chain(order) {
            let Some(map) = item.as_object() else {
                return Err(SmpError::bad_arg_type(GO_MAP, Some(item)));
            };
            if !map.contains_key(merge_key) {
                return Err(SmpError::no_merge_key(map, merge_key));
            }
        }
        let (keep, delete): (Vec<Value>, Vec<Value>) =
            items.into_iter().partition(|v| !is_delete_directive(v));
        items = keep;
        deletes = delete;
    }
    items.sort_by_key(|v| index(order, v, merge_key, kind).unwrap_or(usize::MAX));
    items.extend(deletes);
    Ok(items)
}

fn is_delete_directive(v: &Value) -> bool {
    v.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some("delete")
}

/// `mergeSortedSlice`: a live-only item goes before a patch item when the live order puts it
/// first; when either is unknown to the live order the patch item goes first.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: ElementKind,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    while let (Some(l), Some(r)) = (left.peek(), right.peek()) {
        let li = index(server_order, l, merge_key, kind);
        let ri = index(server_order, r, merge_key, kind);
        let take_left = matches!((li, ri), (Some(a), Some(b)) if a < b);
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out.extend(left);
    out.extend(right);
    out
}

/// `validatePatchWithSetOrderList`: the patch list's items (deletions aside) must appear in
/// the `$setElementOrder` list, in the same relative order.
pub(super) fn validate_with_set_order(
    patch_list: &[Value],
    order: &[Value],
    merge_key: &str,
) -> Result<(), SmpError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let mut non_delete = Vec::new();
    for item in patch_list {
        if !merge_key.is_empty() {
            if !item.is_object() {
                return Err(SmpError::bad_arg_type(GO_MAP, Some(item)));
            }
            if is_delete_directive(item) {
                continue;
            }
        }
        non_delete.push(item);
    }
    let (mut pi, mut oi) = (0, 0);
    while pi < non_delete.len() && oi < order.len() {
        if non_delete[pi].get(DIRECTIVE_MARKER).is_some() {
            pi += 1;
            continue;
        }
        if same_merge_value(non_delete[pi], &order[oi], merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(SmpError::Other(format!(
            "the order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}",
            super::errors::go_list(patch_list),
            super::errors::go_list(order)
        )));
    }
    Ok(())
}

/// `mergeKeyValueEqual`.
fn same_merge_value(a: &Value, b: &Value, merge_key: &str) -> Result<bool, SmpError> {
    if merge_key.is_empty() {
        return Ok(a == b);
    }
    let mut values = [None, None];
    for (slot, item) in values.iter_mut().zip([a, b]) {
        let Some(map) = item.as_object() else {
            return Err(SmpError::bad_arg_type(GO_MAP, Some(item)));
        };
        let Some(v) = map.get(merge_key) else {
            return Err(SmpError::no_merge_key(map, merge_key));
        };
        *slot = Some(v);
    }
    Ok(values[0] == values[1])
}

//! Walks over objects with their apply schema ([`super::schema`]), as structured-merge-diff's
//! `typed` package: the field set an object sets (`ToFieldSet`), the fields two versions of an
//! object add, change and remove (`Compare`), the merge of an applied configuration into the
//! live object (`Merge`), and the removal of fields by path (`RemoveItems`).

use serde_json::{Map, Value};

use super::fieldpath::{Path, PathElement, Set};
use super::schema::{self, Node};

/// The element an item of a list has in paths: its key values in an associative list (a key
/// the item leaves out takes its schema default), its value in a set, else its position.
fn element_of(item: &Value, node: Node, index: usize) -> PathElement {
    match (node, item) {
        (Node::Associative(keys, _), Value::Object(m)) => {
            let fields: Vec<(&str, Value)> = keys
                .iter()
                .filter_map(|k| {
                    m.get(*k)
                        .cloned()
                        .or_else(|| schema::key_default(k))
                        .map(|v| (*k, v))
                })
                .collect();
            PathElement::key(&fields)
        }
        (Node::Set, v) => PathElement::value(v),
        _ => PathElement::Index(index),
    }
}

/// The list's items with their path elements.
fn items(list: &[Value], node: Node) -> Vec<(PathElement, &Value)> {
    list.iter()
        .enumerate()
        .map(|(i, v)| (element_of(v, node, i), v))
        .collect()
}

/// The fields an object sets: every leaf (a scalar, null, an empty map, an atomic value), every
/// list item and every map key; not the structs on the way to them.
pub fn field_set(v: &Value, node: Node) -> Set {
    let mut set = Set::new();
    collect(v, node, &mut Vec::new(), &mut set);
    set
}

fn collect(v: &Value, node: Node, at: &mut Path, set: &mut Set) {
    if !schema::is_granular(node, v) {
        if !at.is_empty() {
            set.insert(at.clone());
        }
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                at.push(PathElement::Field(k.clone()));
                collect(c, schema::child(node, k), at, set);
                let empty = c.is_null() || c.as_object().is_some_and(Map::is_empty);
                if empty || matches!(node, Node::Map(..)) {
                    set.insert(at.clone());
                }
                at.pop();
            }
        }
        Value::Array(list) => {
            for (pe, item) in items(list, node) {
                at.push(pe);
                set.insert(at.clone());
                if matches!(node, Node::Associative(..)) {
                    collect(item, schema::item(node), at, set);
                }
                at.pop();
            }
        }
        _ => {}
    }
}

/// What changed from one version of an object to another.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

/// The fields `new` adds, modifies and removes relative to `old`: a leaf is modified when its
/// value differs; a struct, map, list item or set item that appears or disappears is added or
/// removed itself, with all it holds.
pub fn compare(old: &Value, new: &Value, node: Node) -> Comparison {
    let mut c = Comparison::default();
    walk_compare(Some(old), Some(new), node, &mut Vec::new(), &mut c);
    c
}

fn same_shape(a: &Value, b: &Value) -> bool {
    (a.is_object() && b.is_object()) || (a.is_array() && b.is_array())
}

fn walk_compare(
    old: Option<&Value>,
    new: Option<&Value>,
    node: Node,
    at: &mut Path,
    c: &mut Comparison,
) {
    let granular = |v: Option<&Value>| v.is_some_and(|v| schema::is_granular(node, v));
    match (old, new) {
        (None, None) => return,
        (Some(o), Some(n)) if granular(old) && granular(new) && same_shape(o, n) => {}
        (Some(o), Some(n)) => {
            if o != n && !at.is_empty() {
                c.modified.insert(at.clone());
            }
            return;
        }
        (None, Some(_)) => {
            c.added.insert(at.clone());
            if !granular(new) {
                return;
            }
        }
        (Some(_), None) => {
            c.removed.insert(at.clone());
            if !granular(old) {
                return;
            }
        }
    }
    compare_children(old, new, node, at, c);
}

fn compare_children(
    old: Option<&Value>,
    new: Option<&Value>,
    node: Node,
    at: &mut Path,
    c: &mut Comparison,
) {
    if old.is_some_and(Value::is_object) || new.is_some_and(Value::is_object) {
        let empty = Map::new();
        let o = old.and_then(Value::as_object).unwrap_or(&empty);
        let n = new.and_then(Value::as_object).unwrap_or(&empty);
        let keys = o.keys().chain(n.keys().filter(|k| !o.contains_key(*k)));
        for k in keys {
            at.push(PathElement::Field(k.clone()));
            walk_compare(o.get(k), n.get(k), schema::child(node, k), at, c);
            at.pop();
        }
        return;
    }
    let o = old
        .and_then(Value::as_array)
        .map(|l| items(l, node))
        .unwrap_or_default();
    let n = new
        .and_then(Value::as_array)
        .map(|l| items(l, node))
        .unwrap_or_default();
    let item = schema::item(node);
    let pes = o
        .iter()
        .map(|(p, _)| p)
        .chain(n.iter().map(|(p, _)| p).filter(|p| find(&o, p).is_none()));
    for pe in pes.cloned().collect::<Vec<_>>() {
        at.push(pe.clone());
        match (find(&o, &pe), find(&n, &pe)) {
            (Some(a), Some(b)) if matches!(node, Node::Associative(..)) => {
                walk_compare(Some(a), Some(b), item, at, c)
            }
            (Some(_), Some(_)) => {}
            (a, b) => {
                let node = if matches!(node, Node::Associative(..)) {
                    item
                } else {
                    Node::Atomic
                };
                walk_compare(a, b, node, at, c)
            }
        }
        at.pop();
    }
}

fn find<'v>(list: &[(PathElement, &'v Value)], pe: &PathElement) -> Option<&'v Value> {
    list.iter().find(|(p, _)| p == pe).map(|(_, v)| *v)
}

/// The live object with the applied configuration merged in: the configuration's leaves and
/// atomic values replace the live ones, maps merge key by key, associative lists item by item
/// on their keys (a new item goes at the end), sets keep the live items and add the new ones.
pub fn merge(live: &Value, config: &Value, node: Node) -> Value {
    let granular = schema::is_granular(node, live) && schema::is_granular(node, config);
    if !granular || !same_shape(live, config) {
        return config.clone();
    }
    if let (Value::Object(l), Value::Object(c)) = (live, config) {
        let mut out = l.clone();
        for (k, v) in c {
            let merged = match l.get(k) {
                Some(lv) => merge(lv, v, schema::child(node, k)),
                None => v.clone(),
            };
            out.insert(k.clone(), merged);
        }
        return Value::Object(out);
    }
    let (Value::Array(l), Value::Array(c)) = (live, config) else {
        return config.clone();
    };
    let mut out = l.clone();
    let mut keys: Vec<PathElement> = items(l, node).into_iter().map(|(p, _)| p).collect();
    for (pe, v) in items(c, node) {
        match keys.iter().position(|p| *p == pe) {
            Some(i) if matches!(node, Node::Associative(..)) => {
                out[i] = merge(&out[i], v, schema::item(node));
            }
            Some(_) => {}
            None => {
                keys.push(pe);
                out.push(v.clone());
            }
        }
    }
    Value::Array(out)
}

/// Removes the field, list item or set item at `path` (and all it holds), if it is there.
pub fn remove(v: &mut Value, path: &[PathElement], node: Node) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match (v, first) {
        (Value::Object(m), PathElement::Field(k)) => {
            if rest.is_empty() {
                m.shift_remove(k);
            } else if let Some(c) = m.get_mut(k) {
                remove(c, rest, schema::child(node, k));
            }
        }
        (Value::Array(list), pe) => {
            let at = items(list, node).iter().position(|(p, _)| p == pe);
            match at {
                Some(i) if rest.is_empty() => {
                    list.remove(i);
                }
                Some(i) => remove(&mut list[i], rest, schema::item(node)),
                None => {}
            }
        }
        _ => {}
    }
}

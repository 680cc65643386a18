//! Field paths and field sets, as structured-merge-diff's `fieldpath` package has them: a path
//! is a list of elements (a struct or map field, the key of an associative list item, the
//! value of a set item, an index), a set is a set of paths, and a set is stored in managedFields
//! in the FieldsV1 encoding (`f:name`, `k:{"name":"c"}`, `v:"x"`, `i:0`, and `.` for a node
//! that is itself a member as well as the parent of other members).

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

/// One step of a path. The variant order is upstream's (`PathElement.Less`: field names, then
/// keys, then values, then indexes); keys and values are held as their JSON text (a key's
/// fields sorted by name), which is what FieldsV1 writes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// `f:name`: a field of a struct or a key of a map.
    Field(String),
    /// `k:{"name":"c"}`: the item of an associative list with these list-map key values.
    Key(String),
    /// `v:"x"`: the item of a set (a list of primitives) with this value.
    Value(String),
    /// `i:0`: an item of a list by position (upstream's atomic lists never need it).
    Index(usize),
}

impl PathElement {
    /// The key element of an associative list item with these key fields and values.
    pub fn key(fields: &[(&str, Value)]) -> PathElement {
        let mut sorted: Vec<&(&str, Value)> = fields.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        let mut m = Map::new();
        for (k, v) in sorted {
            m.insert((*k).to_string(), v.clone());
        }
        PathElement::Key(Value::Object(m).to_string())
    }

    /// The value element of a set item.
    pub fn value(v: &Value) -> PathElement {
        PathElement::Value(v.to_string())
    }

    /// The FieldsV1 key of this element.
    fn encode(&self) -> String {
        match self {
            PathElement::Field(f) => format!("f:{f}"),
            PathElement::Key(k) => format!("k:{k}"),
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// The element a FieldsV1 key names.
    fn decode(s: &str) -> Option<PathElement> {
        let (prefix, rest) = s.split_at_checked(2)?;
        match prefix {
            "f:" => Some(PathElement::Field(rest.to_string())),
            "k:" => {
                let Value::Object(m) = serde_json::from_str::<Value>(rest).ok()? else {
                    return None;
                };
                let fields: Vec<(&str, Value)> =
                    m.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
                Some(PathElement::key(&fields))
            }
            "v:" => serde_json::from_str::<Value>(rest)
                .ok()
                .map(|v| PathElement::value(&v)),
            "i:" => rest.parse().ok().map(PathElement::Index),
            _ => None,
        }
    }
}

/// Upstream's `PathElement.String()`: `.name`, `[name="c",port=80]`, `[="x"]`, `[0]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(k) => {
                let m: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
                let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={v}]"),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the root of an object.
pub type Path = Vec<PathElement>;

/// A path as upstream prints it in conflicts (`.spec.replicas`).
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of paths.
pub type Set = BTreeSet<Path>;

/// Whether `set` holds `path` or a path below it.
pub fn has_prefix(set: &Set, path: &[PathElement]) -> bool {
    set.range(path.to_vec()..)
        .next()
        .is_some_and(|p| p.starts_with(path))
}

/// The FieldsV1 document of a set: each element a key, `{}` for a member without children,
/// and `.` (first) for a member that has children. The set iterates in upstream's element
/// order with a member before what lies below it, so the document is built in its order.
pub fn to_fields_v1(set: &Set) -> Value {
    let mut root = Map::new();
    for path in set {
        insert(&mut root, path);
    }
    collapse(&mut root);
    Value::Object(root)
}

fn insert(node: &mut Map<String, Value>, path: &[PathElement]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let child = node
        .entry(first.encode())
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(child) = child else {
        return;
    };
    if rest.is_empty() {
        child.insert(".".to_string(), Value::Object(Map::new()));
    } else {
        insert(child, rest);
    }
}

/// A member without children is written as `{}` (not `{".": {}}`).
fn collapse(node: &mut Map<String, Value>) {
    for (k, v) in node.iter_mut() {
        if let Value::Object(child) = v {
            if k != "." && child.len() == 1 && child.contains_key(".") {
                child.clear();
            } else {
                collapse(child);
            }
        }
    }
}

/// The set a FieldsV1 document encodes; `None` when it is not one.
pub fn from_fields_v1(v: &Value) -> Option<Set> {
    let mut set = Set::new();
    let Value::Object(m) = v else {
        return None;
    };
    read(m, &mut Vec::new(), &mut set)?;
    Some(set)
}

fn read(node: &Map<String, Value>, at: &mut Path, set: &mut Set) -> Option<()> {
    for (k, v) in node {
        if k == "." {
            if !at.is_empty() {
                set.insert(at.clone());
            }
            continue;
        }
        let Value::Object(child) = v else {
            return None;
        };
        at.push(PathElement::decode(k)?);
        if child.is_empty() {
            set.insert(at.clone());
        } else {
            read(child, at, set)?;
        }
        at.pop();
    }
    Some(())
}

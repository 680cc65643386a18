//! Server-side printing: the `meta.k8s.io/v1` Table a kube-apiserver answers when kubectl asks
//! for `application/json;as=Table;v=v1;g=meta.k8s.io` (upstream
//! `pkg/printers/internalversion/printers.go` behind `pkg/printers/storage`, and
//! `rest.DefaultTableConvertor` for kinds without a printer).
//!
//! Pure functions of the stored objects and the current time, no I/O. As upstream's storage
//! convertor does, every row carries the wide cells too (`GenerateOptions{Wide: true}`):
//! kubectl drops the columns of priority above 0 unless asked for `-o wide`. A row's `object`
//! is what `includeObject` asks for (`Metadata`, kubectl's default, gives a
//! `PartialObjectMetadata`), as the API server's `asTable` handler sets it.
//!
//! One module per API group, as upstream's printers are grouped: `core` (and `pod` for the
//! pod's STATUS rules), `apps`, `batch`, `networking` (with discovery, admission webhooks and
//! RuntimeClass), `other` (Ingress, policy, scheduling, coordination, rbac, autoscaling,
//! events.k8s.io).

mod apps;
mod batch;
mod core;
pub mod descriptions;
mod networking;
mod other;
mod pod;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kubeplane_api::{Kind, Object};
use kubeplane_core::duration::human_duration;
use kubeplane_core::time::SimDuration;
use serde_json::{json, Map, Value};

use descriptions as d;

/// What a row's `object` holds (`?includeObject=`; upstream `metav1.IncludeObjectPolicy`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object: `"object": null`.
    None,
    /// A `PartialObjectMetadata` with the object's whole metadata (the default).
    #[default]
    Metadata,
    /// The whole object, with its `apiVersion` and `kind`.
    Object,
}

impl IncludeObject {
    /// Parses the query parameter (`None`, `Metadata`, `Object`; empty is the default).
    pub fn parse(s: &str) -> Option<IncludeObject> {
        match s {
            "None" => Some(IncludeObject::None),
            "" | "Metadata" => Some(IncludeObject::Metadata),
            "Object" => Some(IncludeObject::Object),
            _ => None,
        }
    }
}

/// The request's table options (upstream `metav1.TableOptions` plus the negotiated version).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableOptions {
    /// `?includeObject=`.
    pub include_object: IncludeObject,
    /// `?noHeaders=true` (a watch after its first event): no `columnDefinitions`.
    pub no_headers: bool,
    /// The Table's `apiVersion`, `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`: the one the Accept
    /// header negotiated. A `PartialObjectMetadata` row object carries the same.
    pub api_version: &'static str,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            include_object: IncludeObject::Metadata,
            no_headers: false,
            api_version: "meta.k8s.io/v1",
        }
    }
}

/// One column definition (upstream `metav1.TableColumnDefinition`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The header as upstream writes it (`Name`, `Nominated Node`); kubectl upper-cases it.
    pub name: &'static str,
    /// `string`, `integer`, `boolean`, `date`.
    pub type_: &'static str,
    /// `name` for the object's name column, else empty.
    pub format: &'static str,
    pub description: &'static str,
    /// 0 for the default columns, 1 for the `-o wide` ones.
    pub priority: i32,
}

impl Column {
    /// A priority-0 column.
    pub const fn new(name: &'static str, type_: &'static str, description: &'static str) -> Self {
        Column {
            name,
            type_,
            format: "",
            description,
            priority: 0,
        }
    }

    /// The same column shown only by `-o wide` (priority 1).
    pub const fn wide(self) -> Self {
        Column {
            priority: 1,
            ..self
        }
    }

    /// The same column with format `name`.
    pub const fn name_format(self) -> Self {
        Column {
            format: "name",
            ..self
        }
    }

    fn to_json(self) -> Value {
        json!({
            "name": self.name,
            "type": self.type_,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// The `Name` column every printer starts with.
pub(crate) const NAME: Column = Column::new("Name", "string", d::META_NAME).name_format();
/// The `Age` column.
pub(crate) const AGE: Column = Column::new("Age", "string", d::META_CREATION_TIMESTAMP);
/// The wide `Containers` and `Images` columns of the workload kinds.
pub(crate) const CONTAINERS: Column = Column::new(
    "Containers",
    "string",
    "Names of each container in the template.",
)
.wide();
pub(crate) const IMAGES: Column = Column::new(
    "Images",
    "string",
    "Images referenced by each container in the template.",
)
.wide();

/// The default table convertor's columns (upstream `rest.DefaultTableConvertor`).
const DEFAULT_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Created At", "date", d::META_CREATION_TIMESTAMP),
];

/// One printed row: its cells and, for a finished pod, its `conditions`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub cells: Vec<Value>,
    /// Upstream `TableRowCondition`s (only pods set them: `Completed` when Succeeded or Failed).
    pub conditions: Option<Value>,
}

impl Row {
    pub(crate) fn new(cells: Vec<Value>) -> Row {
        Row {
            cells,
            conditions: None,
        }
    }
}

/// How one object becomes a row, at `now`.
type RowFn = fn(&Object, jiff::Timestamp) -> Row;

/// A kind's printer: its columns and its row function.
type Entry = (&'static [Column], RowFn);

/// A printer: the columns of a kind and how one object of it becomes a row.
struct Printer {
    columns: &'static [Column],
    row: RowFn,
}

/// The printer of a kind, or `None` for kinds printed by the default convertor.
fn printer(kind: Kind) -> Option<Printer> {
    let (columns, row): Entry = match kind {
        Kind::Pod => (pod::COLUMNS, pod::row),
        Kind::Node => (core::NODE_COLUMNS, core::node_row),
        Kind::Namespace => (core::NAMESPACE_COLUMNS, core::namespace_row),
        Kind::Deployment => (apps::DEPLOYMENT_COLUMNS, apps::deployment_row),
        Kind::ReplicaSet => (apps::REPLICA_SET_COLUMNS, apps::replica_set_row),
        Kind::PodDisruptionBudget => (other::PDB_COLUMNS, other::pdb_row),
        Kind::PriorityClass => (other::PRIORITY_CLASS_COLUMNS, other::priority_class_row),
        Kind::Lease => (other::LEASE_COLUMNS, other::lease_row),
        Kind::Other(t) => match (t.group, t.kind) {
            ("", _) => core::printer(t.kind)?,
            ("apps", _) => apps::printer(t.kind)?,
            ("batch", _) => batch::printer(t.kind)?,
            _ => {
                other::printer(t.group, t.kind).or_else(|| networking::printer(t.group, t.kind))?
            }
        },
    };
    Some(Printer { columns, row })
}

/// The column definitions of a kind as upstream prints them (the wide ones included).
pub fn column_definitions(kind: Kind) -> &'static [Column] {
    printer(kind).map_or(DEFAULT_COLUMNS, |p| p.columns)
}

/// The cells (and conditions) of one object's row, at `now`.
pub fn row(object: &Object, now: jiff::Timestamp) -> Row {
    match printer(object.kind()) {
        Some(p) => (p.row)(object, now),
        None => default_row(object),
    }
}

/// A complete `Table` of `objects` (all of kind `kind`), rows in the given order.
/// `metadata` is left empty: the caller sets the list's `resourceVersion` and `continue`
/// (and `remainingItemCount`) as it would on the list.
pub fn table(
    kind: Kind,
    objects: &[&Object],
    now: jiff::Timestamp,
    options: &TableOptions,
) -> Value {
    let columns = column_definitions(kind);
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| row_json(o, row(o, now), options))
        .collect();
    let mut out = Map::new();
    out.insert("kind".into(), "Table".into());
    out.insert("apiVersion".into(), options.api_version.into());
    out.insert("metadata".into(), Value::Object(Map::new()));
    if !options.no_headers {
        let defs = columns.iter().map(|c| c.to_json()).collect();
        out.insert("columnDefinitions".into(), Value::Array(defs));
    }
    out.insert("rows".into(), Value::Array(rows));
    Value::Object(out)
}

/// The one-row `Table` of a single object (a GET, or one watch event's object), with the
/// object's `resourceVersion` in `metadata` as upstream's convertor sets it.
pub fn table_for_object(object: &Object, now: jiff::Timestamp, options: &TableOptions) -> Value {
    let mut t = table(object.kind(), &[object], now, options);
    let rv = object.resource_version();
    if !rv.is_empty() {
        t["metadata"] = json!({ "resourceVersion": rv });
    }
    t
}

/// A row as JSON: `cells`, `conditions` when set, and `object` per `includeObject`.
fn row_json(object: &Object, row: Row, options: &TableOptions) -> Value {
    let mut out = Map::new();
    out.insert("cells".into(), Value::Array(row.cells));
    if let Some(c) = row.conditions {
        out.insert("conditions".into(), c);
    }
    let obj = match options.include_object {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => object.to_json(),
        IncludeObject::Metadata => {
            // A pod's labels and ownerReferences are kept outside its `meta()`.
            let metadata = match object {
                Object::Pod(p) => serde_json::to_value(p.metadata_k8s()),
                _ => serde_json::to_value(object.meta()),
            };
            json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": options.api_version,
                "metadata": metadata.unwrap_or(Value::Null),
            })
        }
    };
    out.insert("object".into(), obj);
    Value::Object(out)
}

/// The default convertor's row: the name and the creation time in RFC 3339 (UTC, seconds).
fn default_row(object: &Object) -> Row {
    let created = object
        .meta()
        .creation_timestamp
        .as_ref()
        .map_or("0001-01-01T00:00:00Z".to_string(), |t| rfc3339(t.0));
    Row::new(vec![object.name().into(), created.into()])
}

/// A timestamp as Go's `time.RFC3339` writes a UTC time: whole seconds, `Z`.
fn rfc3339(ts: jiff::Timestamp) -> String {
    let secs = jiff::Timestamp::from_second(ts.as_second()).unwrap_or(ts);
    secs.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Upstream `translateTimestampSince`: `<unknown>` without a time, else the human age.
pub(crate) fn age(ts: Option<&Time>, now: jiff::Timestamp) -> String {
    match ts {
        None => "<unknown>".to_string(),
        Some(t) => since(t.0, now),
    }
}

/// The human duration from `then` to `now`.
pub(crate) fn since(then: jiff::Timestamp, now: jiff::Timestamp) -> String {
    let nanos = now
        .as_duration()
        .saturating_sub(then.as_duration())
        .as_nanos();
    human_duration(SimDuration(
        nanos.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    ))
}

/// The object's age cell.
pub(crate) fn object_age(object: &Object, now: jiff::Timestamp) -> Value {
    age(object.meta().creation_timestamp.as_ref(), now).into()
}

/// Upstream `labels.FormatLabels`: `k=v,k2=v2` sorted by key, `<none>` when empty.
pub(crate) fn format_labels(labels: Option<&BTreeMap<String, String>>) -> String {
    let joined = labels
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    if joined.is_empty() {
        "<none>".to_string()
    } else {
        joined
    }
}

/// Upstream `metav1.FormatLabelSelector`: the selector's string, `<none>` when it is empty
/// (or absent), `<error>` when it does not compile.
pub(crate) fn format_label_selector(sel: Option<&LabelSelector>) -> String {
    let s = match sel {
        None => String::new(),
        Some(sel) => match kubeplane_core::labels::from_label_selector(sel) {
            Ok(s) => s.to_string(),
            Err(_) => return "<error>".to_string(),
        },
    };
    if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    }
}

/// Upstream `layoutContainerCells`: container names and images, comma-separated.
pub(crate) fn container_cells(
    spec: Option<&k8s_openapi::api::core::v1::PodSpec>,
) -> (Value, Value) {
    let containers = spec.map(|s| s.containers.as_slice()).unwrap_or(&[]);
    let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    let images: Vec<&str> = containers
        .iter()
        .map(|c| c.image.as_deref().unwrap_or(""))
        .collect();
    (names.join(",").into(), images.join(",").into())
}

/// Decodes a stored [`Object::Other`] into its k8s-openapi type (printing reads it once).
/// A document that does not decode prints as the type's zero value, as an empty Go struct
/// would, rather than failing the whole list.
pub(crate) fn decode<T: serde::de::DeserializeOwned + Default>(object: &Object) -> T {
    serde_json::from_value(object.to_json()).unwrap_or_default()
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_kinds;
#[cfg(test)]
mod tests_more;
#[cfg(test)]
mod tests_rows;

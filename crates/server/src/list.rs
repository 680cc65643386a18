//! LIST as kube-apiserver serves it: label and field selectors, `limit`/`continue` pages read
//! at the first page's revision, and the resourceVersion / resourceVersionMatch rules (unset:
//! the current state; `0`: any state, served as the current one; `N` with `Exact`: the state at
//! N; `N` otherwise: at least N), with 410 `Expired` for a compacted revision.

use base64::Engine;
use kubeplane_api::{Kind, Object};
use kubeplane_core::labels::{self, Selector};
use kubeplane_registry::storage_client::resource;
use kubeplane_storage::{Key, ListOptions, Prefix, StorageError};
use serde_json::json;

use crate::fields::FieldSelector;
use crate::request::{Query, ResourceRequest};
use crate::state::State;
use crate::status::StatusError;

/// The filters of a list or watch.
pub struct Filter {
    pub labels: Option<Selector>,
    pub fields: FieldSelector,
}

impl Filter {
    pub fn from_query(q: &Query, kind: Kind) -> Result<Filter, StatusError> {
        let labels = match q.get("labelSelector") {
            Some(s) => Some(labels::parse(s).map_err(|e| {
                StatusError::bad_request(format!("unable to parse requirement: {e}"))
            })?),
            None => None,
        };
        let fields = match q.get("fieldSelector") {
            Some(s) => FieldSelector::parse(s, kind)?,
            None => FieldSelector::default(),
        };
        Ok(Filter { labels, fields })
    }

    pub fn matches(&self, obj: &Object) -> bool {
        let labels_ok = match &self.labels {
            Some(sel) => {
                let empty = Default::default();
                sel.matches(obj.labels().unwrap_or(&empty))
            }
            None => true,
        };
        labels_ok && self.fields.matches(obj)
    }
}

/// The storage prefix of a request's collection.
pub fn prefix(req: &ResourceRequest) -> Prefix {
    if req.kind.is_namespaced() && !req.namespace.is_empty() {
        Prefix::namespace(resource(req.kind), &req.namespace)
    } else {
        Prefix::resource(resource(req.kind))
    }
}

/// A `continue` token: the revision of the first page and the last key returned.
fn encode_continue(revision: u64, key: &Key) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": format!("{}/{}", key.namespace(), key.name())});
    base64::engine::general_purpose::URL_SAFE.encode(token.to_string())
}

fn decode_continue(token: &str, kind: Kind) -> Result<(u64, Key), StatusError> {
    let bad = || {
        StatusError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    };
    let bytes = base64::engine::general_purpose::URL_SAFE
        .decode(token)
        .map_err(|_| bad())?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    let rv = v["rv"].as_u64().ok_or_else(bad)?;
    let start = v["start"].as_str().ok_or_else(bad)?;
    let (ns, name) = start.split_once('/').ok_or_else(bad)?;
    let key = if kind.is_namespaced() {
        Key::new(resource(kind), ns, name)
    } else {
        Key::cluster(resource(kind), name)
    };
    Ok((rv, key))
}

const EXPIRED_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// A resourceVersion the storage has not reached (upstream waits a little, then says so).
pub fn too_large(requested: u64, current: u64) -> StatusError {
    StatusError::new(
        504,
        "Timeout",
        format!("Too large resource version: {requested}, current: {current}"),
    )
}

/// The revision a list reads at.
fn read_revision(state: &State, q: &Query) -> Result<Option<u64>, StatusError> {
    let rv = q.get("resourceVersion");
    let rv_match = q.get("resourceVersionMatch");
    if rv_match.is_some() && rv.is_none() {
        return Err(StatusError::invalid_list(
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    let Some(rv) = rv else { return Ok(None) };
    let n: u64 = rv
        .parse()
        .map_err(|_| StatusError::bad_request(format!("invalid resource version: {rv:?}")))?;
    match rv_match {
        Some("Exact") => {
            if n == 0 {
                return Err(StatusError::invalid_list("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
            }
            Ok(Some(n))
        }
        None | Some("NotOlderThan") => {
            let current = state.current_revision();
            if n > current {
                return Err(too_large(n, current));
            }
            Ok(None)
        }
        Some(other) => Err(StatusError::invalid_list(&format!(
            "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
        ))),
    }
}

/// The matching objects of one page, the revision they were read at and the continue token.
pub struct Page {
    pub items: Vec<Object>,
    pub revision: u64,
    pub continue_token: Option<String>,
}

/// Where a list reads: the revision, and the key to continue after.
fn start(state: &State, kind: Kind, q: &Query) -> Result<(Option<u64>, Option<Key>), StatusError> {
    let Some(token) = q.get("continue") else {
        return Ok((read_revision(state, q)?, None));
    };
    if q.get("resourceVersion").is_some() {
        return Err(StatusError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    let (rv, key) = decode_continue(token, kind)?;
    Ok((Some(rv), Some(key)))
}

/// Reads one page of a list request.
pub fn list(state: &State, req: &ResourceRequest, q: &Query) -> Result<Page, StatusError> {
    let filter = Filter::from_query(q, req.kind)?;
    let limit = q.number("limit")?.filter(|&n| n > 0).map(|n| n as usize);
    let (at, mut after) = start(state, req.kind, q)?;
    let prefix = prefix(req);
    let storage = state.storage();
    let mut items = Vec::new();
    let mut revision = at;
    let chunk = limit.map(|l| l.max(500)).unwrap_or(0);
    loop {
        let opts = ListOptions {
            at: revision,
            limit: chunk,
            continue_after: after.clone(),
        };
        let page = storage.list(&prefix, &opts).map_err(|e| match e {
            StorageError::Gone { .. } if q.get("continue").is_some() => {
                StatusError::new(410, "Expired", EXPIRED_CONTINUE)
            }
            StorageError::Gone { requested, oldest } => StatusError::new(
                410,
                "Expired",
                format!("too old resource version: {requested} ({oldest})"),
            ),
            StorageError::FutureRevision { requested, current } => too_large(requested, current),
            other => StatusError::from(other),
        })?;
        revision = Some(page.revision);
        let mut last_key = None;
        for (key, v) in page.items {
            if limit.is_some_and(|l| items.len() >= l) {
                // A full page with items after it: continue after the last returned one.
                let last: &Key = last_key.as_ref().expect("a full page has a last item");
                return Ok(Page {
                    items,
                    revision: page.revision,
                    continue_token: Some(encode_continue(page.revision, last)),
                });
            }
            if filter.matches(&v.value) {
                items.push(v.value);
            }
            last_key = Some(key);
        }
        match page.continue_after {
            Some(k) if limit.is_some() => {
                if limit.is_some_and(|l| items.len() >= l) {
                    return Ok(Page {
                        items,
                        revision: page.revision,
                        continue_token: Some(encode_continue(page.revision, &k)),
                    });
                }
                after = Some(k);
            }
            _ => {
                return Ok(Page {
                    items,
                    revision: page.revision,
                    continue_token: None,
                });
            }
        }
    }
}

/// The JSON body of a list response, written item by item.
pub fn body(kind: Kind, page: &Page) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + page.items.len() * 1024);
    let head = json!({
        "kind": format!("{}List", kind.as_str()),
        "apiVersion": kind.api_version(),
        "metadata": match &page.continue_token {
            Some(c) => json!({"resourceVersion": page.revision.to_string(), "continue": c}),
            None => json!({"resourceVersion": page.revision.to_string()}),
        },
    })
    .to_string();
    out.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
    out.extend_from_slice(b",\"items\":[");
    for (i, o) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = o.to_writer(&mut out);
    }
    out.extend_from_slice(b"]}");
    out
}

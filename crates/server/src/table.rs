//! `as=Table` responses: when a client's Accept header asks for a `meta.k8s.io` Table (kubectl
//! get does, for `v1` and `v1beta1`), lists, gets and watch events are printed by the
//! registry's printers (upstream's columns) instead of returned as objects.

use kubeplane_api::Object;
use kubeplane_registry::printers::{self, IncludeObject, TableOptions};
use serde_json::Value;

use crate::list::Page;
use crate::request::{Query, ResourceRequest};
use crate::status::StatusError;

/// The Table options an Accept header and query ask for; `None` when no Table is wanted.
pub fn requested(accept: &str, q: &Query) -> Result<Option<TableOptions>, StatusError> {
    let Some(first) = accept
        .split(',')
        .map(str::trim)
        .find(|t| t.contains("as=Table") && t.contains("g=meta.k8s.io"))
    else {
        return Ok(None);
    };
    let api_version = if first.contains("v=v1beta1") {
        "meta.k8s.io/v1beta1"
    } else {
        "meta.k8s.io/v1"
    };
    let include_object = match q.get("includeObject") {
        None => IncludeObject::Metadata,
        Some(s) => IncludeObject::parse(s).ok_or_else(|| {
            StatusError::bad_request(format!(
                "includeObject: Unsupported value: {s:?}: supported values: \"None\", \"Metadata\", \"Object\""
            ))
        })?,
    };
    Ok(Some(TableOptions {
        include_object,
        no_headers: q.flag("noHeaders"),
        api_version,
    }))
}

/// The Table of a list page, with the page's resourceVersion and continue token (a custom
/// resource's with its definition's columns).
pub fn of_page(
    req: &ResourceRequest,
    page: &Page,
    now: jiff::Timestamp,
    opts: &TableOptions,
) -> Value {
    let refs: Vec<&Object> = page.items.iter().collect();
    let mut t = match &req.custom {
        Some(s) => crate::crds::columns::table(s, &req.version, &refs, now, opts),
        None => printers::table(req.kind, &refs, now, opts),
    };
    t["metadata"]["resourceVersion"] = page.revision.to_string().into();
    if let Some(c) = &page.continue_token {
        t["metadata"]["continue"] = c.clone().into();
    }
    t
}

/// The one-row Table of an object.
pub fn of_object(
    req: &ResourceRequest,
    obj: &Object,
    now: jiff::Timestamp,
    opts: &TableOptions,
) -> Value {
    match &req.custom {
        Some(s) => {
            let mut t = crate::crds::columns::table(s, &req.version, &[obj], now, opts);
            let rv = obj.resource_version();
            if !rv.is_empty() {
                t["metadata"] = serde_json::json!({ "resourceVersion": rv });
            }
            t
        }
        None => printers::table_for_object(obj, now, opts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectls_accept_header_asks_for_a_v1_table() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        let opts = requested(accept, &Query::default()).unwrap().unwrap();
        assert_eq!(opts.api_version, "meta.k8s.io/v1");
        assert!(requested("application/json", &Query::default())
            .unwrap()
            .is_none());
        let q = Query::parse(Some("includeObject=Bogus"));
        assert_eq!(requested(accept, &q).unwrap_err().code, 400);
    }
}

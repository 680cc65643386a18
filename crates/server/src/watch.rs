//! WATCH as kube-apiserver serves it: a stream of `{"type": ..., "object": ...}` lines from a
//! resourceVersion (unset or `0`: the current objects first, as ADDED events; `N`: every change
//! after N), label and field selectors with the ADDED/DELETED transitions of objects that start
//! or stop matching, BOOKMARK events when the client allows them (and the `initial-events-end`
//! bookmark of `sendInitialEvents`), `timeoutSeconds`, a 410 `ERROR` event when the client
//! asks for, or falls behind, a compacted revision, and a 500 one when the storage fails
//! (the initial list, or etcd unreachable).
//!
//! Each watch is one thread over a storage cursor, writing into a channel the response body
//! reads; it ends when the client goes, the timeout passes or the server stops.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kubeplane_api::Object;
use kubeplane_storage::{EventKind, ListOptions, StorageError};
use serde_json::json;
use tokio::sync::mpsc;

use crate::list::{prefix, Filter};
use crate::request::{Query, ResourceRequest};
use crate::state::State;
use crate::status::StatusError;

/// How often an idle watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(5);

/// What a watch line's object is rendered as.
pub type Render = Arc<dyn Fn(&Object) -> serde_json::Value + Send + Sync>;

struct Watch {
    state: Arc<State>,
    req: ResourceRequest,
    filter: Filter,
    bookmarks: bool,
    initial: InitialEvents,
    from: Option<u64>,
    deadline: Instant,
    render: Render,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum InitialEvents {
    None,
    /// Legacy: unset or `0` resourceVersion sends the current state first.
    Legacy,
    /// `sendInitialEvents=true`: the current state, then a bookmark marking its end.
    WithEndBookmark,
}

/// Starts a watch; the receiver yields the response body's chunks.
pub fn start(
    state: Arc<State>,
    req: ResourceRequest,
    q: &Query,
    render: Render,
) -> Result<mpsc::Receiver<Bytes>, StatusError> {
    let mut filter = Filter::from_query(q, req.kind)?;
    if let Some(name) = &req.name {
        // A watch on an object's path is a watch of the collection for that name.
        if req.subresource.is_some() {
            return Err(StatusError::not_found_path());
        }
        filter.fields.0.push(crate::fields::Term {
            field: "metadata.name".into(),
            value: name.clone(),
            equal: true,
        });
    }
    let (initial, from) = initial_events(q)?;
    let timeout = q
        .number("timeoutSeconds")?
        .filter(|&s| s > 0)
        .unwrap_or(1800);
    let watch = Watch {
        state,
        req,
        filter,
        bookmarks: q.flag("allowWatchBookmarks"),
        initial,
        from,
        deadline: Instant::now() + Duration::from_secs(timeout as u64),
        render,
    };
    let (tx, rx) = mpsc::channel(256);
    std::thread::Builder::new()
        .name("watch".into())
        .spawn(move || watch.run(tx))
        .map_err(|e| StatusError::new(500, "InternalError", e.to_string()))?;
    Ok(rx)
}

/// What a watch sends first and where it starts, by `resourceVersion`, `resourceVersionMatch`
/// and `sendInitialEvents` (upstream's `validateWatchOptions` rules).
fn initial_events(q: &Query) -> Result<(InitialEvents, Option<u64>), StatusError> {
    let rv =
        match q.get("resourceVersion") {
            None => None,
            Some(n) => Some(n.parse::<u64>().map_err(|_| {
                StatusError::bad_request(format!("invalid resource version: {n:?}"))
            })?),
        };
    let rv_match = q.get("resourceVersionMatch");
    match q.get("sendInitialEvents") {
        Some(send) => {
            if rv_match != Some("NotOlderThan") {
                return Err(StatusError::invalid_list("resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
            }
            if send == "true" {
                Ok((InitialEvents::WithEndBookmark, None))
            } else {
                Ok((InitialEvents::None, rv.filter(|&n| n > 0)))
            }
        }
        None if rv_match.is_some() => Err(StatusError::invalid_list(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        )),
        None => match rv {
            None | Some(0) => Ok((InitialEvents::Legacy, None)),
            Some(n) => Ok((InitialEvents::None, Some(n))),
        },
    }
}

fn line(type_: &str, object: serde_json::Value) -> Bytes {
    let mut s = json!({"type": type_, "object": object}).to_string();
    s.push('\n');
    Bytes::from(s)
}

fn expired(requested: u64, oldest: u64) -> Bytes {
    let status = StatusError::new(
        410,
        "Expired",
        format!("too old resource version: {requested} ({oldest})"),
    );
    line("ERROR", status.body())
}

/// The ERROR event of a watch whose storage failed, as upstream's etcd3 watcher sends it: a
/// compacted revision is a 410 Expired, a revision not reached yet "Too large resource
/// version", anything else (etcd unreachable, no quorum) `NewInternalError`'s 500. The watch
/// ends after it; the client lists and watches again.
fn failed(e: StorageError) -> Bytes {
    match e {
        StorageError::Gone { requested, oldest } => expired(requested, oldest),
        StorageError::FutureRevision { requested, current } => {
            line("ERROR", crate::list::too_large(requested, current).body())
        }
        other => {
            let message = other.to_string();
            let status = StatusError {
                details: Some(json!({"causes": [{"message": message}]})),
                ..StatusError::new(
                    500,
                    "InternalError",
                    format!("Internal error occurred: {message}"),
                )
            };
            line("ERROR", status.body())
        }
    }
}

impl Watch {
    fn bookmark(&self, revision: u64, end_of_initial: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": revision.to_string()});
        if end_of_initial {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        line(
            "BOOKMARK",
            json!({"kind": self.req.kind.as_str(), "apiVersion": self.req.kind.api_version(), "metadata": meta}),
        )
    }

    fn run(self, tx: mpsc::Sender<Bytes>) {
        let storage = self.state.storage();
        let prefix = prefix(&self.req);
        let mut from = self.from;
        if self.initial != InitialEvents::None {
            let page = match storage.list(&prefix, &ListOptions::default()) {
                Ok(p) => p,
                Err(e) => {
                    let _ = tx.blocking_send(failed(e));
                    return;
                }
            };
            for (_, v) in &page.items {
                if self.filter.matches(&v.value)
                    && tx
                        .blocking_send(line("ADDED", (self.render)(&v.value)))
                        .is_err()
                {
                    return;
                }
            }
            if self.initial == InitialEvents::WithEndBookmark
                && tx
                    .blocking_send(self.bookmark(page.revision, true))
                    .is_err()
            {
                return;
            }
            from = Some(page.revision);
        }
        let mut cursor = match storage.watch(&prefix, from) {
            Ok(c) => c,
            Err(e) => {
                let _ = tx.blocking_send(failed(e));
                return;
            }
        };
        let mut last_bookmark = Instant::now();
        while !self.state.is_stopping() && Instant::now() < self.deadline && !tx.is_closed() {
            match cursor.wait_next(Duration::from_millis(250)) {
                Ok(Some(ev)) => {
                    if let Some(chunk) = self.event_line(&ev) {
                        if tx.blocking_send(chunk).is_err() {
                            return;
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = tx.blocking_send(failed(e));
                    return;
                }
            }
            if self.bookmarks && last_bookmark.elapsed() >= BOOKMARK_EVERY {
                last_bookmark = Instant::now();
                if tx
                    .blocking_send(self.bookmark(cursor.position(), false))
                    .is_err()
                {
                    return;
                }
            }
        }
    }

    /// The line of one storage event for this watch's filter, if it concerns it: an object
    /// that starts matching is ADDED, one that stops matching DELETED.
    fn event_line(&self, ev: &kubeplane_storage::Event<Object>) -> Option<Bytes> {
        let now_matches = ev
            .current
            .as_ref()
            .is_some_and(|v| self.filter.matches(&v.value));
        let was_matching = ev
            .prev
            .as_ref()
            .is_some_and(|v| self.filter.matches(&v.value));
        let (type_, obj) = match (ev.kind, was_matching, now_matches) {
            (EventKind::Added, _, true) => ("ADDED", ev.current.as_ref()?.value.clone()),
            (EventKind::Modified, true, true) => ("MODIFIED", ev.current.as_ref()?.value.clone()),
            (EventKind::Modified, false, true) => ("ADDED", ev.current.as_ref()?.value.clone()),
            (EventKind::Modified, true, false) | (EventKind::Deleted, true, _) => {
                // The last state, at the event's revision, as upstream's watch cache sends it.
                let mut o = ev.prev.as_ref()?.value.clone();
                o.meta_mut().resource_version = Some(ev.revision.to_string());
                ("DELETED", o)
            }
            _ => return None,
        };
        Some(line(type_, (self.render)(&obj)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_storage_ends_a_watch_with_upstreams_error_event() {
        let cases = [
            (
                "a compacted revision is 410 Expired",
                StorageError::Gone {
                    requested: 3,
                    oldest: 9,
                },
                410,
                "Expired",
                "too old resource version: 3 (9)",
            ),
            (
                "an unreachable etcd is NewInternalError's 500",
                StorageError::Unreachable {
                    message: "etcdserver: no leader".into(),
                },
                500,
                "InternalError",
                "Internal error occurred: etcdserver: no leader",
            ),
        ];
        for (name, error, code, reason, message) in cases {
            let event: serde_json::Value = serde_json::from_slice(&failed(error)).unwrap();
            assert_eq!(event["type"], "ERROR", "{name}");
            assert_eq!(event["object"]["kind"], "Status", "{name}");
            assert_eq!(event["object"]["code"], code, "{name}");
            assert_eq!(event["object"]["reason"], reason, "{name}");
            assert_eq!(event["object"]["message"], message, "{name}");
        }
    }
}

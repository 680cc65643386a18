//! What every controller's explanation records (`--explain`) share: the common record shape
//! ([`record`]: `time`, `kind`, the object's `namespace` and `name`, `controller`, `decision`,
//! `reason`, a one-line `message`; each controller adds the facts behind it), and
//! [`Explained`], which writes a decision that holds over many syncs once, and again only when
//! it changes.

use std::collections::BTreeMap;

use kubeplane_api::Client;
use kubeplane_core::SimTime;
use serde_json::{json, Value};

use crate::controller_utils::NsName;

/// The last message written per object and subject (a node, a pod, the rollout), so that a
/// decision that holds over many syncs is written once.
#[derive(Debug, Default)]
pub(crate) struct Explained {
    last: BTreeMap<(NsName, String), String>,
}

impl Explained {
    /// Writes `record` unless `subject` of `key` last had the same `message`.
    pub(crate) fn emit(
        &mut self,
        client: &mut dyn Client,
        key: &NsName,
        subject: &str,
        record: Value,
    ) {
        if !client.explain() {
            return;
        }
        let message = record["message"].as_str().unwrap_or_default().to_string();
        let k = (key.clone(), subject.to_string());
        if self.last.get(&k) == Some(&message) {
            return;
        }
        self.last.insert(k, message);
        client.emit_record(record);
    }

    /// The decision about `subject` no longer holds: the next one is written again.
    pub(crate) fn clear(&mut self, key: &NsName, subject: &str) {
        if !self.last.is_empty() {
            self.last.remove(&(key.clone(), subject.to_string()));
        }
    }

    /// Forgets a deleted object.
    pub(crate) fn forget(&mut self, key: &NsName) {
        self.last.retain(|(k, _), _| k != key);
    }
}

/// A record of `kind` about the object `key`, in the shape every controller's records share.
pub(crate) fn record(
    kind: &str,
    controller: &str,
    now: SimTime,
    key: &NsName,
    decision: &str,
    reason: &str,
    message: String,
) -> Value {
    json!({
        "time": now.as_secs_f64(),
        "kind": kind,
        "namespace": key.0,
        "name": key.1,
        "controller": controller,
        "decision": decision,
        "reason": reason,
        "message": message,
    })
}

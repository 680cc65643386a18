//! The patch of a pod's status the scheduler sends (upstream `PatchPodStatus` in
//! `pkg/scheduler/util`): the two-way strategic merge patch from the status the scheduler saw
//! to the one it wants, sent to `pods/status`, with the pod's UID as a precondition
//! (`metadata.uid` in the patch: a pod recreated under the same name refuses it with 409).
//!
//! Conditions merge by `type` (the patch carries each added or changed condition whole, and
//! `$patch: delete` for a removed one); any other status field that changed is sent whole, or
//! `null` when it was removed. The scheduler only writes conditions and `nominatedNodeName`.

use k8s_openapi::api::core::v1::PodStatus;
use serde_json::{json, Map, Value};

/// The strategic merge patch that turns `old` into `new`, with `uid` as the precondition;
/// `None` when nothing changes.
pub fn status_patch(uid: &str, old: &PodStatus, new: &PodStatus) -> Option<Value> {
    let old = as_map(serde_json::to_value(old).unwrap_or_default());
    let new = as_map(serde_json::to_value(new).unwrap_or_default());
    let mut status = Map::new();
    for (key, value) in &new {
        if key == "conditions" {
            if let Some(patch) = conditions_patch(old.get(key), value) {
                status.insert(key.clone(), patch);
            }
        } else if old.get(key) != Some(value) {
            status.insert(key.clone(), value.clone());
        }
    }
    for key in old.keys() {
        if !new.contains_key(key) {
            status.insert(key.clone(), Value::Null);
        }
    }
    if status.is_empty() {
        return None;
    }
    let mut patch = json!({"status": status});
    if !uid.is_empty() {
        patch["metadata"] = json!({"uid": uid});
    }
    Some(patch)
}

fn as_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn condition_type(c: &Value) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The list of condition changes (merge key `type`), `None` when there is none.
fn conditions_patch(old: Option<&Value>, new: &Value) -> Option<Value> {
    let empty = Vec::new();
    let old = old.and_then(Value::as_array).unwrap_or(&empty);
    let new = new.as_array().unwrap_or(&empty);
    let mut items: Vec<Value> = new.iter().filter(|c| !old.contains(c)).cloned().collect();
    for gone in old {
        let t = condition_type(gone);
        if !new.iter().any(|c| condition_type(c) == t) {
            items.push(json!({"type": t, "$patch": "delete"}));
        }
    }
    (!items.is_empty()).then_some(Value::Array(items))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodCondition;

    use super::*;

    fn condition(type_: &str, status: &str, reason: &str) -> PodCondition {
        PodCondition {
            type_: type_.into(),
            status: status.into(),
            reason: Some(reason.into()).filter(|r: &String| !r.is_empty()),
            ..Default::default()
        }
    }

    fn status(conditions: Vec<PodCondition>, nominated: Option<&str>) -> PodStatus {
        PodStatus {
            conditions: Some(conditions),
            nominated_node_name: nominated.map(str::to_string),
            phase: Some("Pending".into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_changed_condition_is_sent_whole_and_the_unchanged_ones_are_left_out() {
        let old = status(vec![condition("Ready", "False", "")], None);
        let new = status(
            vec![
                condition("Ready", "False", ""),
                condition("PodScheduled", "False", "Unschedulable"),
            ],
            None,
        );
        let patch = status_patch("u1", &old, &new).unwrap();
        assert_eq!(
            patch,
            json!({
                "metadata": {"uid": "u1"},
                "status": {"conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
                ]},
            })
        );
    }

    #[test]
    fn a_nomination_set_or_cleared_is_sent_and_nothing_changed_is_no_patch() {
        let old = status(vec![], None);
        let new = status(vec![], Some("n1"));
        let patch = status_patch("u1", &old, &new).unwrap();
        assert_eq!(patch["status"], json!({"nominatedNodeName": "n1"}));
        let cleared = status_patch("u1", &new, &old).unwrap();
        assert_eq!(cleared["status"], json!({"nominatedNodeName": null}));
        assert_eq!(status_patch("u1", &old, &old), None);
    }

    #[test]
    fn a_removed_condition_is_deleted_by_its_merge_key() {
        let old = status(vec![condition("DisruptionTarget", "True", "x")], None);
        let new = status(vec![], None);
        let patch = status_patch("", &old, &new).unwrap();
        assert_eq!(
            patch,
            json!({"status": {"conditions": [{"type": "DisruptionTarget", "$patch": "delete"}]}})
        );
    }
}

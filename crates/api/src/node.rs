//! The Node as kubeplane stores it: k8s-openapi's v1.34 `Node` plus the Node fields of later
//! releases that those types lack and kubeplane reads. Today that is `status.declaredFeatures`
//! (the features a kubelet declares, v1.35 alpha, v1.36 beta and on, v1.37 GA), which the
//! scheduler's NodeDeclaredFeatures plugin matches against a pod's inferred requirements.
//!
//! [`StoredNode`] dereferences to the k8s-openapi `Node`, so code reads and edits every other
//! field as before. It reads and writes the extra fields in their upstream place of the JSON
//! (`status.declaredFeatures`), and a node without them serializes exactly as the plain
//! k8s-openapi type does.

use std::ops::{Deref, DerefMut};

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::Error as _;
use serde_json::Value;

/// A Node with the fields of later releases that k8s-openapi's v1.34 `Node` lacks.
#[derive(Default)]
pub struct StoredNode {
    pub node: Node,
    /// `status.declaredFeatures`: the features the node's kubelet declares (upstream keeps it
    /// sorted and without duplicates, `+listType=set`). `None` when the manifest has none.
    pub declared_features: Option<Vec<String>>,
    /// Not part of the object (never serialized, compared or cloned): `Some(r)` when its
    /// writer knows that this node differs from the version with resourceVersion `r` at most
    /// in what [`only_heartbeats_changed`] allows (the conditions' heartbeats and the
    /// resourceVersion). A node agent's status post that renews only heartbeats sets it to
    /// its base's mark, or to its base's version when the base has none, so that every
    /// version of a run of such posts names the version the run started from; watchers then
    /// compare two of them by the mark instead of field by field. A clone starts without it
    /// (whoever edits a copy makes a new root), and the write path clears it where it
    /// changes a marked node (`registry` node strategy). Resource versions are never reused,
    /// so a mark cannot name another version.
    pub heartbeats_of: Option<u64>,
}

impl Clone for StoredNode {
    /// A copy without the heartbeat mark (see [`StoredNode::heartbeats_of`]).
    fn clone(&self) -> Self {
        StoredNode {
            node: self.node.clone(),
            declared_features: self.declared_features.clone(),
            heartbeats_of: None,
        }
    }
}

impl PartialEq for StoredNode {
    /// The node's fields; the heartbeat mark is not one.
    fn eq(&self, other: &Self) -> bool {
        self.node == other.node && self.declared_features == other.declared_features
    }
}

impl std::fmt::Debug for StoredNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredNode")
            .field("node", &self.node)
            .field("declared_features", &self.declared_features)
            .finish()
    }
}

impl StoredNode {
    /// The node's declared features (empty when it declares none).
    pub fn declared_features(&self) -> &[String] {
        self.declared_features.as_deref().unwrap_or(&[])
    }
}

/// Whether `new` differs from `old` at most in what a node agent's periodic status post
/// renews when nothing else changed: each condition's `lastHeartbeatTime`, and the
/// resourceVersion. Everything else (the conditions' types, statuses, reasons, messages,
/// transition times and order, the spec, every other status field, the rest of the metadata,
/// the declared features) must be equal. Watchers whose view of a node reads neither of those
/// (the scheduler, the controllers' NoSchedule taint and label reconciliation) can skip such
/// an update; upstream's scheduler finds no scheduling property change in it either
/// (`NodeSchedulingPropertiesChange` compares condition statuses, not heartbeats).
///
/// Two versions whose heartbeat marks ([`StoredNode::heartbeats_of`]) name one version, or
/// one of which is the version the other's mark names, both differ from that version only so:
/// the answer is known without comparing their fields.
#[inline]
pub fn only_heartbeats_changed(old: &StoredNode, new: &StoredNode) -> bool {
    if let Some(root) = new.heartbeats_of {
        if old.heartbeats_of == Some(root) || version_of(old) == Some(root) {
            return true;
        }
    }
    only_heartbeats_changed_by_fields(old, new)
}

/// The number of a node's resourceVersion, when it is one.
fn version_of(node: &StoredNode) -> Option<u64> {
    node.metadata.resource_version.as_deref()?.parse().ok()
}

/// The heartbeat mark a node agent's post gives a copy of `base` in which it changed nothing
/// but the conditions' heartbeats and the resourceVersion: `base`'s own mark, else `base`'s
/// version (`None` when it has neither).
pub fn heartbeats_mark_of(base: &StoredNode) -> Option<u64> {
    base.heartbeats_of.or_else(|| version_of(base))
}

/// [`only_heartbeats_changed`] field by field, without the heartbeat marks.
pub fn only_heartbeats_changed_by_fields(old: &StoredNode, new: &StoredNode) -> bool {
    old.declared_features == new.declared_features
        && old.spec == new.spec
        && status_equal_but_heartbeats(old.status.as_ref(), new.status.as_ref())
        && meta_equal_but_version(&old.metadata, &new.metadata)
}

fn status_equal_but_heartbeats(old: Option<&NodeStatus>, new: Option<&NodeStatus>) -> bool {
    let (old, new) = match (old, new) {
        (None, None) => return true,
        (Some(o), Some(n)) => (o, n),
        _ => return false,
    };
    // Every field named, so that a field added to the type is not silently skipped.
    let NodeStatus {
        addresses,
        allocatable,
        capacity,
        conditions,
        config,
        daemon_endpoints,
        features,
        images,
        node_info,
        phase,
        runtime_handlers,
        volumes_attached,
        volumes_in_use,
    } = old;
    conditions_equal_but_heartbeats(conditions.as_deref(), new.conditions.as_deref())
        && *allocatable == new.allocatable
        && *capacity == new.capacity
        && *addresses == new.addresses
        && *node_info == new.node_info
        && *images == new.images
        && *config == new.config
        && *daemon_endpoints == new.daemon_endpoints
        && *features == new.features
        && *phase == new.phase
        && *runtime_handlers == new.runtime_handlers
        && *volumes_attached == new.volumes_attached
        && *volumes_in_use == new.volumes_in_use
}

fn conditions_equal_but_heartbeats(
    old: Option<&[NodeCondition]>,
    new: Option<&[NodeCondition]>,
) -> bool {
    let (old, new) = match (old, new) {
        (None, None) => return true,
        (Some(o), Some(n)) if o.len() == n.len() => (o, n),
        _ => return false,
    };
    old.iter().zip(new).all(|(o, n)| {
        let NodeCondition {
            last_heartbeat_time: _,
            last_transition_time,
            message,
            reason,
            status,
            type_,
        } = o;
        *type_ == n.type_
            && *status == n.status
            && *last_transition_time == n.last_transition_time
            && *reason == n.reason
            && *message == n.message
    })
}

fn meta_equal_but_version(old: &ObjectMeta, new: &ObjectMeta) -> bool {
    let ObjectMeta {
        annotations,
        creation_timestamp,
        deletion_grace_period_seconds,
        deletion_timestamp,
        finalizers,
        generate_name,
        generation,
        labels,
        managed_fields,
        name,
        namespace,
        owner_references,
        resource_version: _,
        self_link,
        uid,
    } = old;
    *name == new.name
        && *uid == new.uid
        && *labels == new.labels
        && *annotations == new.annotations
        && *creation_timestamp == new.creation_timestamp
        && *deletion_timestamp == new.deletion_timestamp
        && *deletion_grace_period_seconds == new.deletion_grace_period_seconds
        && *finalizers == new.finalizers
        && *generate_name == new.generate_name
        && *generation == new.generation
        && *managed_fields == new.managed_fields
        && *namespace == new.namespace
        && *owner_references == new.owner_references
        && *self_link == new.self_link
}

impl From<Node> for StoredNode {
    fn from(node: Node) -> Self {
        StoredNode {
            node,
            declared_features: None,
            heartbeats_of: None,
        }
    }
}

impl Deref for StoredNode {
    type Target = Node;
    fn deref(&self) -> &Node {
        &self.node
    }
}

impl DerefMut for StoredNode {
    fn deref_mut(&mut self) -> &mut Node {
        &mut self.node
    }
}

impl serde::Serialize for StoredNode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(features) = &self.declared_features else {
            return self.node.serialize(s);
        };
        let mut v = serde_json::to_value(&self.node).map_err(serde::ser::Error::custom)?;
        if let Value::Object(map) = &mut v {
            let status = map
                .entry("status")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(status) = status {
                status.insert("declaredFeatures".into(), features.clone().into());
            }
        }
        v.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for StoredNode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let declared_features = match value.pointer("/status/declaredFeatures") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                Vec::<String>::deserialize(v)
                    .map_err(|e| D::Error::custom(format!("status.declaredFeatures: {e}")))?,
            ),
        };
        let node = Node::deserialize(value).map_err(D::Error::custom)?;
        Ok(StoredNode {
            node,
            declared_features,
            heartbeats_of: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_node_without_declared_features_reads_and_writes_as_the_plain_type() {
        let manifest = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}});
        let stored: StoredNode = serde_json::from_value(manifest.clone()).unwrap();
        let plain: Node = serde_json::from_value(manifest).unwrap();
        assert_eq!(stored.declared_features, None);
        assert_eq!(
            serde_json::to_string(&stored).unwrap(),
            serde_json::to_string(&plain).unwrap()
        );
    }

    #[test]
    fn declared_features_are_kept_in_status() {
        let manifest = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"declaredFeatures": ["A", "B"]}});
        let stored: StoredNode = serde_json::from_value(manifest).unwrap();
        assert_eq!(stored.declared_features(), ["A", "B"]);
        let back = serde_json::to_value(&stored).unwrap();
        assert_eq!(back["status"]["declaredFeatures"], json!(["A", "B"]));
        let again: StoredNode = serde_json::from_value(back).unwrap();
        assert_eq!(again, stored);
    }

    #[test]
    fn declared_features_without_other_status_still_have_a_status() {
        let node = StoredNode {
            node: Node::default(),
            declared_features: Some(vec!["A".into()]),
            heartbeats_of: None,
        };
        let v = serde_json::to_value(&node).unwrap();
        assert_eq!(v["status"], json!({"declaredFeatures": ["A"]}));
    }

    fn posted(heartbeat: &str, rv: &str) -> StoredNode {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "uid": "u1", "resourceVersion": rv,
                "labels": {"zone": "a"}},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "4"},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
                     "lastHeartbeatTime": heartbeat, "lastTransitionTime": "2024-01-01T00:00:00Z"},
                    {"type": "Ready", "status": "True", "reason": "KubeletReady",
                     "lastHeartbeatTime": heartbeat, "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}))
        .unwrap()
    }

    #[test]
    fn a_status_post_that_renews_only_heartbeats_is_recognised() {
        let old = posted("2024-01-01T00:00:00Z", "7");
        let new = posted("2024-01-01T00:05:00Z", "9");
        assert!(only_heartbeats_changed(&old, &new));
        assert!(only_heartbeats_changed(&old, &old));
    }

    #[test]
    fn any_other_change_is_not_a_heartbeat() {
        let old = posted("2024-01-01T00:00:00Z", "7");
        let base = posted("2024-01-01T00:05:00Z", "9");
        type Edit = fn(&mut StoredNode);
        let edits: Vec<(&str, Edit)> = vec![
            ("Ready's status", |n| {
                n.status.as_mut().unwrap().conditions.as_mut().unwrap()[1].status = "False".into()
            }),
            ("a transition", |n| {
                let c = &mut n.status.as_mut().unwrap().conditions.as_mut().unwrap()[0];
                c.last_transition_time = c.last_heartbeat_time.clone();
            }),
            ("a reason", |n| {
                n.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].reason = None
            }),
            ("a condition added", |n| {
                let cs = n.status.as_mut().unwrap().conditions.as_mut().unwrap();
                let mut c = cs[0].clone();
                c.type_ = "DiskPressure".into();
                cs.push(c);
            }),
            ("the conditions' order", |n| {
                n.status
                    .as_mut()
                    .unwrap()
                    .conditions
                    .as_mut()
                    .unwrap()
                    .reverse()
            }),
            ("a label", |n| {
                n.metadata
                    .labels
                    .as_mut()
                    .unwrap()
                    .insert("disk".into(), "ssd".into());
            }),
            ("an annotation", |n| {
                n.metadata.annotations = Some([("a".to_string(), "b".to_string())].into());
            }),
            ("the taints", |n| n.spec.as_mut().unwrap().taints = None),
            ("unschedulable", |n| {
                n.spec.as_mut().unwrap().unschedulable = Some(true)
            }),
            ("allocatable", |n| {
                n.status.as_mut().unwrap().allocatable = None;
            }),
            ("declared features", |n| {
                n.declared_features = Some(vec!["A".into()])
            }),
            ("the uid", |n| n.metadata.uid = Some("u2".into())),
            ("deletion", |n| {
                let t = n.status.as_ref().unwrap().conditions.as_ref().unwrap()[0]
                    .last_heartbeat_time
                    .clone();
                n.metadata.deletion_timestamp = t;
            }),
        ];
        for (what, edit) in edits {
            let mut new = base.clone();
            edit(&mut new);
            assert!(!only_heartbeats_changed(&old, &new), "{what}");
            assert!(!only_heartbeats_changed(&new, &old), "{what}, backwards");
        }
    }

    #[test]
    fn marks_naming_one_version_answer_without_the_fields() {
        let root = posted("2024-01-01T00:00:00Z", "7");
        let mut a = posted("2024-01-01T00:05:00Z", "9");
        let mut b = posted("2024-01-01T00:10:00Z", "12");
        assert_eq!(heartbeats_mark_of(&root), Some(7));
        a.heartbeats_of = heartbeats_mark_of(&root);
        b.heartbeats_of = heartbeats_mark_of(&a);
        assert_eq!(b.heartbeats_of, Some(7));
        // The mark decides: a (wrongly) marked node with another label still passes, which
        // shows that the fields were not compared.
        let mut relabelled = a.clone();
        relabelled.metadata.labels = None;
        assert!(
            !only_heartbeats_changed(&root, &relabelled),
            "a copy loses the mark"
        );
        relabelled.heartbeats_of = Some(7);
        assert!(only_heartbeats_changed(&root, &relabelled));
        assert!(only_heartbeats_changed(&a, &relabelled));
        // Marks naming another version, or none, fall back to the fields.
        let mut other = posted("2024-01-01T00:10:00Z", "12");
        other.heartbeats_of = Some(8);
        assert!(only_heartbeats_changed(&a, &other));
        other.metadata.labels = None;
        assert!(!only_heartbeats_changed(&a, &other));
        let unmarked = relabelled.clone();
        assert!(
            !only_heartbeats_changed(&b, &unmarked),
            "the old one's mark alone"
        );
    }

    #[test]
    fn declared_features_that_are_not_strings_are_an_error() {
        let manifest = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"declaredFeatures": [1]}});
        let err = serde_json::from_value::<StoredNode>(manifest).unwrap_err();
        assert!(err.to_string().contains("status.declaredFeatures"), "{err}");
    }
}

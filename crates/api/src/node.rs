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

use k8s_openapi::api::core::v1::Node;
use serde::de::Error as _;
use serde_json::Value;

/// A Node with the fields of later releases that k8s-openapi's v1.34 `Node` lacks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoredNode {
    pub node: Node,
    /// `status.declaredFeatures`: the features the node's kubelet declares (upstream keeps it
    /// sorted and without duplicates, `+listType=set`). `None` when the manifest has none.
    pub declared_features: Option<Vec<String>>,
}

impl StoredNode {
    /// The node's declared features (empty when it declares none).
    pub fn declared_features(&self) -> &[String] {
        self.declared_features.as_deref().unwrap_or(&[])
    }
}

impl From<Node> for StoredNode {
    fn from(node: Node) -> Self {
        StoredNode {
            node,
            declared_features: None,
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
        };
        let v = serde_json::to_value(&node).unwrap();
        assert_eq!(v["status"], json!({"declaredFeatures": ["A"]}));
    }

    #[test]
    fn declared_features_that_are_not_strings_are_an_error() {
        let manifest = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"declaredFeatures": [1]}});
        let err = serde_json::from_value::<StoredNode>(manifest).unwrap_err();
        assert!(err.to_string().contains("status.declaredFeatures"), "{err}");
    }
}

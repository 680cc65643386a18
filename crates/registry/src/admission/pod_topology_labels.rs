//! The PodTopologyLabels admission plugin (upstream
//! `plugin/pkg/admission/podtopologylabels/admission.go`, gate PodTopologyLabelsAdmission,
//! beta and on from v1.35.0): a `pods/binding` to a node takes the node's
//! `topology.kubernetes.io/zone` and `topology.kubernetes.io/region` labels, which the binding
//! then writes onto the pod over any value the pod had (upstream `storage.go`'s copy of the
//! binding's labels overwrites). A node that does not exist or lacks the labels gives none.
//! A pod created with `spec.nodeName` already set gets them the same way (the plugin's
//! handler covers creates of the `pods` resource too).

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;

use crate::client::Backend;
use kubeplane_api::{Kind, Object};

/// The node labels the plugin copies (its default configuration in kube-apiserver).
pub const TOPOLOGY_LABELS: [&str; 2] = [
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// The topology labels of a node: those of [`TOPOLOGY_LABELS`] it carries.
pub fn topology_labels_of(node: &Node) -> BTreeMap<String, String> {
    let Some(labels) = node.metadata.labels.as_ref() else {
        return BTreeMap::new();
    };
    TOPOLOGY_LABELS
        .iter()
        .filter_map(|k| labels.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect()
}

/// The topology labels of the node named `node` in `b`; none when there is no such node.
pub fn topology_labels_for(b: &impl Backend, node: &str) -> BTreeMap<String, String> {
    match b.get(Kind::Node, "", node) {
        Some(Object::Node(n)) => topology_labels_of(&n),
        _ => BTreeMap::new(),
    }
}

/// A pod created with `spec.nodeName` set gets its node's topology labels, over its own
/// values (upstream's `admitPod`); other objects and unbound pods pass unchanged.
pub fn admit_created_pod(b: &impl Backend, obj: Object) -> Object {
    let Object::Pod(pod) = &obj else {
        return obj;
    };
    let node = pod.node_name();
    let labels = match node {
        Some(n) if !n.is_empty() => topology_labels_for(b, n),
        _ => return obj,
    };
    if labels.is_empty() {
        return obj;
    }
    let mut p = StoredPod::clone(pod);
    copy_labels_overwriting(&mut p, &labels);
    Object::Pod(std::sync::Arc::new(p))
}

/// Writes `labels` onto the pod's labels, replacing the values of keys it already has.
pub fn copy_labels_overwriting(pod: &mut StoredPod, labels: &BTreeMap<String, String>) {
    if labels.is_empty() {
        return;
    }
    let own = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    for (k, v) in labels {
        own.insert(k.clone(), v.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labelled(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn only_the_zone_and_region_labels_of_the_node_are_taken() {
        let cases = [
            (
                "a node with zone, region and other labels gives zone and region",
                vec![
                    ("topology.kubernetes.io/zone", "z1"),
                    ("topology.kubernetes.io/region", "r1"),
                    ("kubernetes.io/hostname", "n1"),
                    ("topology.kubernetes.io/rack", "k1"),
                ],
                vec![
                    ("topology.kubernetes.io/region", "r1"),
                    ("topology.kubernetes.io/zone", "z1"),
                ],
            ),
            (
                "a node with only a zone gives the zone",
                vec![("topology.kubernetes.io/zone", "z1")],
                vec![("topology.kubernetes.io/zone", "z1")],
            ),
            (
                "the alpha keys under topology.k8s.io are not copied",
                vec![
                    ("topology.k8s.io/zone", "z1"),
                    ("failure-domain.beta.kubernetes.io/zone", "z1"),
                ],
                vec![],
            ),
            ("a node without labels gives none", vec![], vec![]),
        ];
        for (name, node_labels, want) in cases {
            let mut node = Node::default();
            if !node_labels.is_empty() {
                node.metadata.labels = Some(labelled(&node_labels));
            }
            assert_eq!(topology_labels_of(&node), labelled(&want), "{name}");
        }
    }

    #[test]
    fn the_copied_labels_replace_the_pods_values_and_keep_its_other_labels() {
        let cases = [
            (
                "a pod without labels gets them",
                None,
                vec![("topology.kubernetes.io/zone", "z1")],
            ),
            (
                "a pod's own zone label is replaced by the node's",
                Some(vec![("topology.kubernetes.io/zone", "mine"), ("app", "a")]),
                vec![("app", "a"), ("topology.kubernetes.io/zone", "z1")],
            ),
        ];
        for (name, own, want) in cases {
            let mut pod = StoredPod::default();
            pod.metadata.labels = own.map(|o| labelled(&o));
            copy_labels_overwriting(
                &mut pod,
                &labelled(&[("topology.kubernetes.io/zone", "z1")]),
            );
            assert_eq!(pod.metadata.labels, Some(labelled(&want)), "{name}");
        }
        let mut bare = StoredPod::default();
        copy_labels_overwriting(&mut bare, &BTreeMap::new());
        assert_eq!(bare.metadata.labels, None, "no labels, no empty map");
    }
}

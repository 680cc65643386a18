//! The PodTopologyLabels admission plugin (upstream
//! `plugin/pkg/admission/podtopologylabels/admission.go`, gate PodTopologyLabelsAdmission,
//! beta and on from v1.35.0): a `pods/binding` to a node takes the node's
//! `topology.kubernetes.io/zone` and `topology.kubernetes.io/region` labels, which the binding
//! then writes onto the pod over any value the pod had (upstream `storage.go`'s copy of the
//! binding's labels overwrites). A node that does not exist or lacks the labels gives none.
//! A pod created with `spec.nodeName` already set gets them the same way (the plugin's
//! handler covers creates of the `pods` resource too).

use kubeplane_api::pod_meta::Labels;
use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

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

/// Writes `labels` onto the pod's labels, replacing the values of keys it already has. Labels
/// shared with other pods (a template version's) become the map made last time from the same
/// labels and the same `labels` (see [`overwritten`]), so that the pods of one template
/// version bound in one zone share one label map.
pub fn copy_labels_overwriting(pod: &mut StoredPod, labels: &BTreeMap<String, String>) {
    if labels.is_empty() {
        return;
    }
    let own = pod.labels();
    if own.is_some_and(|own| labels.iter().all(|(k, v)| own.get(k) == Some(v))) {
        // Nothing changes: the labels stay shared.
        return;
    }
    if let Some(base) = pod.shared_labels().filter(|l| Arc::strong_count(l) > 1) {
        let made = overwritten(base, labels);
        pod.set_shared_labels(Some(made));
        return;
    }
    let own = pod.labels_mut();
    for (k, v) in labels {
        own.insert(k.clone(), v.clone());
    }
}

/// How many base label maps [`overwritten`] remembers (it forgets them all when full).
const OVERWRITTEN_KEPT: usize = 4096;

/// By the address of a shared label map: the map (held, so that its address is not reused
/// while it is remembered) and the maps made from it, each with the labels written over it.
type Overwritten = HashMap<usize, (Arc<Labels>, Vec<(Labels, Arc<Labels>)>)>;

thread_local! {
    static OVERWRITTEN: RefCell<Overwritten> = RefCell::new(HashMap::new());
}

/// `base` with `labels` written over it: the map made last time from the same two if it is
/// remembered, else a new one (then remembered). The maps are never changed in place while
/// they are shared, so a remembered one is exactly what a new one would be.
fn overwritten(base: &Arc<Labels>, labels: &Labels) -> Arc<Labels> {
    OVERWRITTEN.with(|memo| {
        let mut memo = memo.borrow_mut();
        let key = Arc::as_ptr(base) as usize;
        if let Some((_, made)) = memo.get(&key) {
            if let Some((_, m)) = made.iter().find(|(written, _)| written == labels) {
                return Arc::clone(m);
            }
        } else if memo.len() >= OVERWRITTEN_KEPT {
            memo.clear();
        }
        let mut map = Labels::clone(base);
        for (k, v) in labels {
            map.insert(k.clone(), v.clone());
        }
        let map = Arc::new(map);
        let (_, made) = memo
            .entry(key)
            .or_insert_with(|| (Arc::clone(base), Vec::new()));
        made.push((labels.clone(), Arc::clone(&map)));
        map
    })
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
            pod.set_labels(own.map(|o| labelled(&o)));
            copy_labels_overwriting(
                &mut pod,
                &labelled(&[("topology.kubernetes.io/zone", "z1")]),
            );
            assert_eq!(pod.labels(), Some(&labelled(&want)), "{name}");
        }
        let mut bare = StoredPod::default();
        copy_labels_overwriting(&mut bare, &BTreeMap::new());
        assert_eq!(bare.labels(), None, "no labels, no empty map");
    }

    #[test]
    fn the_pods_of_one_template_bound_in_one_zone_share_one_label_map() {
        let template = Arc::new(labelled(&[("app", "a")]));
        let pod = || {
            let mut p = StoredPod::default();
            p.set_shared_labels(Some(Arc::clone(&template)));
            p
        };
        let zone = |z: &str| labelled(&[("topology.kubernetes.io/zone", z)]);
        let (mut a, mut b, mut c) = (pod(), pod(), pod());
        copy_labels_overwriting(&mut a, &zone("z1"));
        copy_labels_overwriting(&mut b, &zone("z1"));
        copy_labels_overwriting(&mut c, &zone("z2"));
        let want = labelled(&[("app", "a"), ("topology.kubernetes.io/zone", "z1")]);
        assert_eq!(a.labels(), Some(&want));
        assert!(Arc::ptr_eq(
            a.shared_labels().unwrap(),
            b.shared_labels().unwrap()
        ));
        assert_eq!(c.labels().unwrap()["topology.kubernetes.io/zone"], "z2");
        assert_eq!(
            *template,
            labelled(&[("app", "a")]),
            "the template's map is untouched"
        );
        let before = Arc::as_ptr(a.shared_labels().unwrap());
        copy_labels_overwriting(&mut a, &zone("z1"));
        assert_eq!(
            Arc::as_ptr(a.shared_labels().unwrap()),
            before,
            "nothing to write"
        );
        a.labels_mut().insert("own".into(), "x".into());
        assert!(
            !b.labels().unwrap().contains_key("own"),
            "a write copies the shared map"
        );
    }
}

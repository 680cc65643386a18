//! What the API server does to an object on create before it is stored: the admission plugins
//! kube-apiserver enables by default that matter to scheduling, and the pod strategy's defaults.

pub mod default_toleration_seconds;
pub mod namespace_lifecycle;
pub mod pod_topology_labels;
pub mod priority;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodSpec;
use kubeplane_api::{ApiError, Cache, Kind, Object, ObjectKey, StoredPod};

pub use default_toleration_seconds::default_toleration_seconds;
pub use priority::{admit_priority, apply_match_label_keys, SYSTEM_PRIORITY_CLASSES};

/// Runs the create-time admission chain on `obj` (only pods are changed): Priority, then
/// DefaultTolerationSeconds, then the pod strategy's matchLabelKeys merge.
pub fn admit_create(obj: Object, cache: &dyn Cache) -> Result<Object, ApiError> {
    let Object::Pod(mut pod) = obj else {
        return Ok(obj);
    };
    // A spec shared with its maker (a controller's template) is copied by the first change;
    // the specs admitted for one controller are then shared (see `share_defaulted`).
    let from_template = pod.spec.as_ref().is_some_and(|s| Arc::strong_count(s) > 1);
    // Changed in place when the caller handed over the only reference (the pod is not moved
    // out of its allocation and into a new one).
    let p = Arc::make_mut(&mut pod);
    if let Err(message) = admit_priority(p, cache) {
        return Err(ApiError::Invalid {
            key: ObjectKey::new(
                Kind::Pod,
                p.metadata.namespace.as_deref().unwrap_or("default"),
                p.metadata.name.as_deref().unwrap_or(""),
            ),
            message,
        });
    }
    default_toleration_seconds(p);
    apply_match_label_keys(p);
    share_defaulted(from_template, p);
    Ok(Object::Pod(pod))
}

/// How many controllers' admitted specs [`share_defaulted`] remembers. When full, it forgets
/// those no pod uses any more, and everything when that frees less than half.
const DEFAULTED_KEPT: usize = 16384;

/// The admitted spec last made for each controller, by the controller's UID. Only the admitted
/// spec is held (the pods share it anyway): the maker's spec is not, so that a controller
/// need not keep its template's spec between creations for the pods to share one.
type Defaulted = HashMap<String, Arc<PodSpec>>;

thread_local! {
    static DEFAULTED: RefCell<Defaulted> = RefCell::new(HashMap::new());
}

/// When the pod's spec was shared with its maker (`from_template`: a controller's template),
/// the pod takes the spec admitted last time for the same controller if it is equal, so that
/// every pod a controller creates from one template version shares one admitted spec (also
/// across its creation batches, each of which has a spec of its own); the spec is left as it
/// is otherwise, and for a pod without a controller. Sharing only: the pod's contents do not
/// change, whatever the memo holds.
fn share_defaulted(from_template: bool, pod: &mut StoredPod) {
    if !from_template {
        return;
    }
    // The UID is copied: the accessor borrows the whole pod, whose spec is written below.
    let Some(controller_uid) = pod
        .owner_references()
        .into_iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
    else {
        return;
    };
    // `admitted` is the maker's spec itself when admission changed nothing: the memo then
    // shares it between batches all the same.
    let Some(admitted) = pod.spec.as_mut() else {
        return;
    };
    DEFAULTED.with(|memo| {
        let mut memo = memo.borrow_mut();
        match memo.get(controller_uid.as_str()) {
            Some(earlier) if **earlier == **admitted => *admitted = Arc::clone(earlier),
            Some(_) => {
                // The template changed: its pods share the new admitted spec from now on.
                if let Some(kept) = memo.get_mut(controller_uid.as_str()) {
                    *kept = Arc::clone(admitted);
                }
            }
            None => {
                if memo.len() >= DEFAULTED_KEPT {
                    memo.retain(|_, spec| Arc::strong_count(spec) > 1);
                    if memo.len() >= DEFAULTED_KEPT / 2 {
                        memo.clear();
                    }
                }
                memo.insert(controller_uid, Arc::clone(admitted));
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use kubeplane_api::{Client, Object, PodExt, StoredPod};
    use kubeplane_core::SimTime;
    use kubeplane_store::Store;

    use crate::client::ApiClient;
    use crate::testing::Discard;

    /// A pod made from a controller's template (`controller`: its UID), as the ReplicaSet
    /// controller makes one, with the template's spec shared.
    fn from_template(name: &str, template: &Arc<PodSpec>) -> Object {
        made_by(name, template, Some("rs-uid-1"))
    }

    fn made_by(name: &str, template: &Arc<PodSpec>, controller: Option<&str>) -> Object {
        let owner_references = controller.map(|uid| {
            vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: "rs".into(),
                uid: uid.into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]
        });
        let meta = ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            owner_references,
            ..Default::default()
        };
        let pod = StoredPod::with_shared_spec(meta, Some(Arc::clone(template)), None, None);
        Object::Pod(Arc::new(pod))
    }

    fn spec_of(o: &Object) -> Arc<PodSpec> {
        Arc::clone(o.as_pod().unwrap().spec.as_ref().unwrap())
    }

    #[test]
    fn the_pods_of_one_template_share_one_admitted_spec_after_creation_and_binding() {
        let template = Arc::new(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("pause".into()),
                ..Default::default()
            }],
            ..Default::default()
        });
        let mut store = Store::new(1, jiff::Timestamp::UNIX_EPOCH);
        let mut sink = Discard;
        let mut api = ApiClient {
            store: &mut store,
            now: SimTime::ZERO,
            sink: &mut sink,
            explain: false,
            admission: true,
            binding: Default::default(),
        };
        let a = api.create(from_template("a", &template)).unwrap();
        let b = api.create(from_template("b", &template)).unwrap();
        let (sa, sb) = (spec_of(&a), spec_of(&b));
        assert!(!Arc::ptr_eq(&sa, &template), "admission changed the spec");
        assert_eq!(sa.priority, Some(0));
        assert_eq!(sa.tolerations.as_ref().map(Vec::len), Some(2));
        assert!(Arc::ptr_eq(&sa, &sb), "one admitted spec for both pods");
        let a = api.bind("default", "a", a.uid(), "n1").unwrap();
        let b = api.bind("default", "b", b.uid(), "n2").unwrap();
        assert!(Arc::ptr_eq(&spec_of(&a), &sa), "binding keeps the spec");
        assert!(Arc::ptr_eq(&spec_of(&b), &sa));
        assert_eq!(a.as_pod().unwrap().node_name(), Some("n1"));
        assert_eq!(b.as_pod().unwrap().node_name(), Some("n2"));
        // Another template's pods get their own spec.
        let other = Arc::new(PodSpec {
            priority_class_name: Some("system-node-critical".into()),
            ..PodSpec::clone(&template)
        });
        let c = api.create(from_template("c", &other)).unwrap();
        assert!(!Arc::ptr_eq(&spec_of(&c), &sa));
        assert_eq!(spec_of(&c).priority, Some(2_000_001_000));
        // A later batch from the same template has a spec of its own (the controller keeps
        // none between batches): its pods still share the admitted one.
        let batch = Arc::new(PodSpec::clone(&other));
        let d = api.create(from_template("d", &batch)).unwrap();
        assert!(
            Arc::ptr_eq(&spec_of(&d), &spec_of(&c)),
            "one admitted spec across batches"
        );
        // Another controller's pods, and a pod without a controller, do not take it.
        let e = api.create(made_by("e", &batch, Some("rs-uid-2"))).unwrap();
        let f = api.create(made_by("f", &batch, None)).unwrap();
        assert!(!Arc::ptr_eq(&spec_of(&e), &spec_of(&c)));
        assert!(!Arc::ptr_eq(&spec_of(&f), &spec_of(&c)));
        assert_eq!(*spec_of(&e), *spec_of(&c));
        assert_eq!(*spec_of(&f), *spec_of(&c));
    }

    #[test]
    fn a_spec_admission_leaves_unchanged_is_kept() {
        let template = Arc::new(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("pause".into()),
                ..Default::default()
            }],
            priority: Some(0),
            // Tolerates every taint, so DefaultTolerationSeconds adds none.
            tolerations: Some(vec![kubeplane_core::testing::toleration(
                "", "Exists", "", "", None,
            )]),
            ..Default::default()
        });
        let store = Store::new(1, jiff::Timestamp::UNIX_EPOCH);
        let admitted = super::admit_create(from_template("a", &template), &store).unwrap();
        assert!(Arc::ptr_eq(&spec_of(&admitted), &template));
    }
}

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
    // the copies made from one input spec are then shared (see `share_defaulted`).
    let input = pod.spec.clone().filter(|s| Arc::strong_count(s) > 2);
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
    share_defaulted(input, p);
    Ok(Object::Pod(pod))
}

/// How many input specs [`share_defaulted`] remembers (it forgets them all when full).
const DEFAULTED_KEPT: usize = 4096;

/// The admitted spec last made from each input spec, by the input's address; the input is
/// held so that its address is not reused while it is remembered.
type Defaulted = HashMap<usize, (Arc<PodSpec>, Arc<PodSpec>)>;

thread_local! {
    static DEFAULTED: RefCell<Defaulted> = RefCell::new(HashMap::new());
}

/// When admission changed a spec shared with its maker (`input`), the pod takes the spec
/// admitted last time from the same input if it is equal, so that every pod created from one
/// template version shares one admitted spec; the spec is left as it is otherwise. Sharing
/// only: the pod's contents do not change.
fn share_defaulted(input: Option<Arc<PodSpec>>, pod: &mut StoredPod) {
    let (Some(input), Some(admitted)) = (input, pod.spec.as_mut()) else {
        return;
    };
    if Arc::ptr_eq(&input, admitted) {
        return;
    }
    DEFAULTED.with(|memo| {
        let mut memo = memo.borrow_mut();
        let key = Arc::as_ptr(&input) as usize;
        match memo.get(&key) {
            Some((_, earlier)) if **earlier == **admitted => *admitted = Arc::clone(earlier),
            _ => {
                if memo.len() >= DEFAULTED_KEPT {
                    memo.clear();
                }
                memo.insert(key, (input, Arc::clone(admitted)));
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kubeplane_api::{Client, Object, PodExt, StoredPod};
    use kubeplane_core::SimTime;
    use kubeplane_store::Store;

    use crate::client::ApiClient;
    use crate::testing::Discard;

    fn from_template(name: &str, template: &Arc<PodSpec>) -> Object {
        let meta = ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
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

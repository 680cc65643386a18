//! Where the Job, DaemonSet and StatefulSet controllers file the pods they watch: under their
//! controller's UID or as orphans by namespace and name, in two-level maps updated in place
//! (most pod events replace a pod that is already filed, and need no new key).

use std::collections::BTreeMap;

use kubeplane_api::StoredPod;
use rustc_hash::FxHashMap;

/// Where a controller of `kind` files a pod it watches: `Some(Some(uid))` under the UID of its
/// controller of that kind, `Some(None)` as an orphan (an adoption candidate), `None` nowhere
/// (another kind's controller: upstream's handlers ignore such a pod).
pub fn filed_under<'a>(pod: &'a StoredPod, kind: &str) -> Option<Option<&'a str>> {
    match crate::controller_utils::pod_controller(pod) {
        None => Some(None),
        Some(r) if r.kind == kind => Some(Some(r.uid.as_str())),
        Some(_) => None,
    }
}

/// `put` and `take` of a two-level map of one map type (the ordered `BTreeMap` of the Job's
/// owned pods, the hashed ones of the Job's orphans and of the DaemonSet and StatefulSet
/// controllers): the same code over either.
macro_rules! nested_map_fns {
    ($put:ident, $take:ident, $map:ident) => {
        /// Puts `value` at `outer`, `inner` of a two-level map and returns what was there,
        /// allocating the keys only when the entry is new (most pod events update a pod that
        /// is already there).
        pub fn $put<V>(
            map: &mut $map<String, $map<String, V>>,
            outer: &str,
            inner: &str,
            value: V,
        ) -> Option<V> {
            let Some(m) = map.get_mut(outer) else {
                map.insert(
                    outer.to_string(),
                    $map::from_iter([(inner.to_string(), value)]),
                );
                return None;
            };
            match m.get_mut(inner) {
                Some(slot) => Some(std::mem::replace(slot, value)),
                None => m.insert(inner.to_string(), value),
            }
        }

        /// Removes `outer`, `inner` from a two-level map, and `outer` when it is left empty.
        pub fn $take<V>(
            map: &mut $map<String, $map<String, V>>,
            outer: &str,
            inner: &str,
        ) -> Option<V> {
            let m = map.get_mut(outer)?;
            let v = m.remove(inner);
            if m.is_empty() {
                map.remove(outer);
            }
            v
        }
    };
}

nested_map_fns!(put_nested, take_nested, BTreeMap);
nested_map_fns!(put_hashed, take_hashed, FxHashMap);

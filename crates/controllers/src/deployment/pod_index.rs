//! The controller's pods by controller UID (upstream's pod informer indexed by controller, as
//! `getPodMapForDeployment` reads it).

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use kubeplane_api::StoredPod;
use rustc_hash::FxHashSet;

/// A pod in the index, found by its UID. The set holds the pod itself and reads the UID from
/// it: no copy of the UID per pod (a `String` key of 36 bytes and its map entry, about 80
/// bytes per pod).
#[derive(Clone, Debug)]
pub(super) struct ByUid(pub(super) Arc<StoredPod>);

impl ByUid {
    fn uid(&self) -> &str {
        self.0.metadata.uid.as_deref().unwrap_or_default()
    }
}

/// Hashed as the UID's `str` is (what [`Borrow`] requires), so the set places its pods where a
/// map keyed by the UID `String` placed them.
impl Hash for ByUid {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.uid().hash(state)
    }
}

impl PartialEq for ByUid {
    fn eq(&self, other: &Self) -> bool {
        self.uid() == other.uid()
    }
}

impl Eq for ByUid {}

impl Borrow<str> for ByUid {
    fn borrow(&self) -> &str {
        self.uid()
    }
}

/// The pods of one controller, by UID.
pub(super) type PodsByUid = FxHashSet<ByUid>;

#[cfg(test)]
mod tests {
    use super::*;
    use kubeplane_core::testing::PodBuilder;

    fn pod(name: &str, uid: &str, rv: &str) -> Arc<StoredPod> {
        let mut p: StoredPod = PodBuilder::new(name).obj().into();
        p.metadata.uid = Some(uid.into());
        p.metadata.resource_version = Some(rv.into());
        Arc::new(p)
    }

    #[test]
    fn the_set_finds_a_pod_by_its_uid_and_replaces_its_version() {
        let mut set = PodsByUid::default();
        assert!(set.replace(ByUid(pod("a", "u1", "1"))).is_none());
        assert!(set.replace(ByUid(pod("b", "u2", "2"))).is_none());
        let newer = pod("a", "u1", "3");
        let old = set
            .replace(ByUid(newer.clone()))
            .expect("the version before");
        assert_eq!(old.0.metadata.resource_version.as_deref(), Some("1"));
        assert_eq!(set.len(), 2);
        assert!(Arc::ptr_eq(&set.get("u1").unwrap().0, &newer));
        assert!(set.remove("u2") && !set.contains("u2"));
    }
}

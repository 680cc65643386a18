//! What kubeplane reads of a stored pod through accessors rather than through k8s-openapi's
//! field layout, so that the stored pod form can change without every reader changing with it
//! (issue 19's stored pod form; docs/performance/session-17.md, "the stored pod form, a plan
//! in steps").
//!
//! Today [`PodExt`] is implemented for k8s-openapi's `Pod`. The stored form to come keeps the
//! spec shared between the pods of one template and `spec.nodeName` outside it, so that a read
//! of `spec.node_name` on a stored pod would see nothing: every read of a pod's node goes
//! through [`PodExt::node_name`] (the tidy test forbids the field read outside this file and
//! the JSON edges).

use k8s_openapi::api::core::v1::Pod;

/// Accessors of a pod that do not depend on how its spec is stored.
pub trait PodExt {
    /// `spec.nodeName` as written: `None` when unset, `Some("")` when set to the empty string
    /// (callers that treat the empty name as unbound filter it themselves, as upstream does).
    fn node_name(&self) -> Option<&str>;

    /// Sets `spec.nodeName` (creating an empty spec when the pod has none).
    fn set_node_name(&mut self, node: Option<String>);
}

impl PodExt for Pod {
    #[inline]
    fn node_name(&self) -> Option<&str> {
        self.spec.as_ref().and_then(|s| s.node_name.as_deref())
    }

    fn set_node_name(&mut self, node: Option<String>) {
        self.spec.get_or_insert_with(Default::default).node_name = node;
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodSpec;

    use super::*;

    #[test]
    fn node_name_reads_and_writes_spec_node_name() {
        let mut pod = Pod::default();
        assert_eq!(pod.node_name(), None);
        pod.set_node_name(Some("n1".into()));
        assert_eq!(pod.node_name(), Some("n1"));
        assert_eq!(pod.spec.as_ref().unwrap().node_name.as_deref(), Some("n1"));
        pod.spec = Some(PodSpec {
            node_name: Some(String::new()),
            ..Default::default()
        });
        assert_eq!(
            pod.node_name(),
            Some(""),
            "the empty name is kept as written"
        );
        pod.set_node_name(None);
        assert_eq!(pod.node_name(), None);
        assert!(pod.spec.is_some());
    }
}

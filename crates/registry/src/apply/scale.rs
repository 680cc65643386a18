//! managedFields of a write through the `scale` subresource, as upstream's `ScaleHandler`
//! (`k8s.io/apimachinery/pkg/util/managedfields/scalehandler.go`) carries them between the
//! object and its autoscaling/v1 Scale:
//!
//! 1. the Scale's managers are the object's entries that own the replicas path, each now owning
//!    the Scale's `spec.replicas` (`ToSubresource`);
//! 2. the Scale write is an `Update` by the request's manager with subresource `scale` at
//!    `autoscaling/v1`: when the replicas change it takes `spec.replicas` from every other
//!    manager; a Scale whose object nobody tracks records nothing (upstream's skip of untracked
//!    objects, which sees a Scale without managers even when the object has other entries);
//! 3. back on the object (`ToParent`): an entry that lost the field in the Scale loses the
//!    replicas path (and goes when it owned nothing else), and the writer's entry owns the
//!    replicas path at the object's API version with subresource `scale`. Its time is the one
//!    the object's entries hold for that manager identifier, which a Scale identifier (at
//!    `autoscaling/v1`) never matches: the entry has no `time`.

use super::fieldpath::Path;
use super::managed::{Entry, Operation};
use super::Writer;

/// The object's entries after `writer` wrote its replicas through the scale subresource;
/// `changed` tells whether the write changed the replica count, `replicas` is the object's
/// replicas path (`spec.replicas`).
pub fn update(parent: Vec<Entry>, replicas: &Path, changed: bool, writer: &Writer) -> Vec<Entry> {
    let tracked = parent.iter().any(|e| e.fields.contains(replicas));
    if !changed || !tracked {
        return parent;
    }
    let mut out: Vec<Entry> = parent
        .into_iter()
        .filter_map(|mut e| {
            e.fields.remove(replicas);
            (!e.fields.is_empty()).then_some(e)
        })
        .collect();
    out.push(Entry {
        manager: writer.manager.to_string(),
        operation: Operation::Update,
        api_version: writer.api_version.to_string(),
        time: None,
        subresource: "scale".to_string(),
        fields: [replicas.clone()].into_iter().collect(),
    });
    out
}

/// The replicas path of the kinds with a scale subresource.
pub fn replicas_path() -> Path {
    use super::fieldpath::PathElement::Field;
    vec![Field("spec".into()), Field("replicas".into())]
}

#[cfg(test)]
mod tests {
    use super::super::fieldpath::{from_fields_v1, to_fields_v1};
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, op: Operation, subresource: &str, fields: serde_json::Value) -> Entry {
        Entry {
            manager: manager.into(),
            operation: op,
            api_version: "apps/v1".into(),
            time: Some("2026-01-01T00:00:00Z".into()),
            subresource: subresource.into(),
            fields: from_fields_v1(&fields).expect("fields"),
        }
    }

    fn writer() -> Writer<'static> {
        Writer {
            manager: "kubectl",
            api_version: "apps/v1",
            subresource: Some("scale"),
            time: "2026-01-01T00:01:00Z",
        }
    }

    fn fields(e: &Entry) -> serde_json::Value {
        to_fields_v1(&e.fields)
    }

    #[test]
    fn a_scale_that_changes_replicas_takes_them_from_their_owner_into_an_entry_with_subresource_scale(
    ) {
        let parent = vec![entry(
            "kubectl-client-side-apply",
            Operation::Update,
            "",
            json!({"f:spec": {"f:replicas": {}, "f:selector": {}}}),
        )];
        let out = update(parent, &replicas_path(), true, &writer());
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].manager, "kubectl-client-side-apply");
        assert_eq!(fields(&out[0]), json!({"f:spec": {"f:selector": {}}}));
        assert_eq!(out[1].manager, "kubectl");
        assert_eq!(out[1].operation, Operation::Update);
        assert_eq!(out[1].subresource, "scale");
        assert_eq!(out[1].api_version, "apps/v1");
        assert_eq!(out[1].time, None);
        assert_eq!(fields(&out[1]), json!({"f:spec": {"f:replicas": {}}}));
    }

    #[test]
    fn an_owner_left_with_nothing_goes_and_a_second_scale_replaces_the_first_scale_entry() {
        let parent = vec![
            entry(
                "apply",
                Operation::Apply,
                "",
                json!({"f:spec": {"f:replicas": {}}}),
            ),
            entry(
                "other",
                Operation::Update,
                "",
                json!({"f:metadata": {"f:labels": {}}}),
            ),
        ];
        let once = update(parent, &replicas_path(), true, &writer());
        let names: Vec<&str> = once.iter().map(|e| e.manager.as_str()).collect();
        assert_eq!(names, ["other", "kubectl"]);
        let hpa = Writer {
            manager: "horizontal-pod-autoscaler",
            ..writer()
        };
        let twice = update(once, &replicas_path(), true, &hpa);
        let names: Vec<&str> = twice.iter().map(|e| e.manager.as_str()).collect();
        assert_eq!(names, ["other", "horizontal-pod-autoscaler"]);
    }

    #[test]
    fn a_scale_to_the_same_count_or_of_an_object_nobody_owns_replicas_of_records_nothing() {
        let parent = vec![entry(
            "apply",
            Operation::Apply,
            "",
            json!({"f:spec": {"f:replicas": {}}}),
        )];
        assert_eq!(
            update(parent.clone(), &replicas_path(), false, &writer()),
            parent
        );
        let unowned = vec![entry(
            "apply",
            Operation::Apply,
            "",
            json!({"f:spec": {"f:selector": {}}}),
        )];
        assert_eq!(
            update(unowned.clone(), &replicas_path(), true, &writer()),
            unowned
        );
        assert_eq!(
            update(Vec::new(), &replicas_path(), true, &writer()),
            Vec::<Entry>::new()
        );
    }
}

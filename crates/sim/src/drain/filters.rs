//! kubectl drain's pod filters (upstream `k8s.io/kubectl/pkg/drain/filters.go`): which pods
//! of the node are deleted, which are skipped, which are skipped with a warning and which
//! stop the drain with an error. Pure functions of the pod, the options and whether the pod's
//! DaemonSet exists (kubectl GETs it).
//!
//! The filters run in kubectl's order (deleted-too-long, DaemonSet, mirror, local storage,
//! no controller); the first that says "do not delete" ends the chain, and the pod keeps the
//! last status it was given (so the local-storage warning is dropped by the filter after it,
//! as upstream's TODO notes).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubeplane_api::StoredPod;

use super::DrainOptions;

/// Upstream `corev1.MirrorPodAnnotationKey`.
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

pub const DAEMON_SET_FATAL: &str = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)";
pub const DAEMON_SET_WARNING: &str = "ignoring DaemonSet-managed Pods";
pub const LOCAL_STORAGE_FATAL: &str =
    "Pods with local storage (use --delete-emptydir-data to override)";
pub const LOCAL_STORAGE_WARNING: &str = "deleting Pods with local storage";
pub const UNMANAGED_FATAL: &str = "Pods that declare no controller (use --force to override)";
pub const UNMANAGED_WARNING: &str = "deleting Pods that declare no controller";

/// Upstream `PodDeleteStatus` reasons.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    Okay,
    Skip,
    Warning,
    Error,
}

/// What the filters say of one pod (upstream `PodDeleteStatus`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub delete: bool,
    pub reason: Reason,
    pub message: String,
}

impl Status {
    fn okay() -> Status {
        Status {
            delete: true,
            reason: Reason::Okay,
            message: String::new(),
        }
    }

    fn skip() -> Status {
        Status {
            delete: false,
            reason: Reason::Skip,
            message: String::new(),
        }
    }

    fn warning(delete: bool, message: &str) -> Status {
        Status {
            delete,
            reason: Reason::Warning,
            message: message.to_string(),
        }
    }

    fn error(message: &str) -> Status {
        Status {
            delete: false,
            reason: Reason::Error,
            message: message.to_string(),
        }
    }
}

/// The pod's controller reference (upstream `metav1.GetControllerOf`).
pub fn controller_of(pod: &StoredPod) -> Option<&OwnerReference> {
    pod.owner_references()?
        .iter()
        .find(|r| r.controller == Some(true))
}

fn finished(pod: &StoredPod) -> bool {
    matches!(pod.phase(), Some("Succeeded" | "Failed"))
}

fn daemon_set_filter(
    pod: &StoredPod,
    opts: &DrainOptions,
    daemon_set_exists: &mut dyn FnMut(&str, &str) -> bool,
) -> Status {
    // Upstream `isControllerRefDaemonSet`: the kind and the group version both.
    let Some(r) =
        controller_of(pod).filter(|r| r.kind == "DaemonSet" && r.api_version == "apps/v1")
    else {
        return Status::okay();
    };
    if finished(pod) {
        return Status::okay();
    }
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    if !daemon_set_exists(namespace, &r.name) {
        // kubectl's GET answers NotFound: an orphan goes with --force, with the error as the
        // warning.
        let message = format!("daemonsets.apps {:?} not found", r.name);
        return if opts.force {
            Status::warning(true, &message)
        } else {
            Status::error(&message)
        };
    }
    if !opts.ignore_daemon_sets {
        return Status::error(DAEMON_SET_FATAL);
    }
    Status::warning(false, DAEMON_SET_WARNING)
}

fn mirror_pod_filter(pod: &StoredPod) -> Status {
    let mirror = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MIRROR_POD_ANNOTATION));
    if mirror {
        Status::skip()
    } else {
        Status::okay()
    }
}

fn local_storage_filter(pod: &StoredPod, opts: &DrainOptions) -> Status {
    let empty_dir = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .is_some_and(|v| v.iter().any(|v| v.empty_dir.is_some()));
    if !empty_dir || finished(pod) {
        return Status::okay();
    }
    if !opts.delete_empty_dir_data {
        return Status::error(LOCAL_STORAGE_FATAL);
    }
    Status::warning(true, LOCAL_STORAGE_WARNING)
}

fn unreplicated_filter(pod: &StoredPod, opts: &DrainOptions) -> Status {
    if finished(pod) || controller_of(pod).is_some() {
        return Status::okay();
    }
    if opts.force {
        Status::warning(true, UNMANAGED_WARNING)
    } else {
        Status::error(UNMANAGED_FATAL)
    }
}

/// Runs the filters over one pod, in kubectl's order, stopping at the first that does not
/// delete it. `daemon_set_exists(namespace, name)` is kubectl's GET of the pod's DaemonSet.
/// (The first filter, which skips pods deleted longer ago than
/// `--skip-wait-for-delete-timeout`, always passes: that option is not offered.)
pub fn filter_pod(
    pod: &StoredPod,
    opts: &DrainOptions,
    daemon_set_exists: &mut dyn FnMut(&str, &str) -> bool,
) -> Status {
    let mut status = daemon_set_filter(pod, opts, daemon_set_exists);
    if !status.delete {
        return status;
    }
    for filter in [mirror_pod_filter(pod), local_storage_filter(pod, opts)] {
        status = filter;
        if !status.delete {
            return status;
        }
    }
    unreplicated_filter(pod, opts)
}

/// Groups `(message, pod)` pairs by message, in order of first appearance, as
/// `message: ns/a, ns/b` (upstream groups them in a Go map, in no fixed order).
pub fn grouped(items: &[(String, String)]) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (message, pod) in items {
        match groups.iter_mut().find(|(m, _)| m == message) {
            Some((_, pods)) => pods.push(pod.clone()),
            None => groups.push((message.clone(), vec![pod.clone()])),
        }
    }
    groups
}

/// The filters' errors as kubectl reports them: `cannot delete MESSAGE: ns/a, ns/b` per
/// message (upstream `PodDeleteList.errors`; an empty message reads "unexpected error").
pub fn errors(refused: &[(String, String)]) -> Vec<String> {
    grouped(refused)
        .into_iter()
        .map(|(message, pods)| {
            let message = if message.is_empty() {
                "unexpected error".to_string()
            } else {
                message
            };
            format!("cannot delete {message}: {}", pods.join(", "))
        })
        .collect()
}

/// The filters' warnings as kubectl prints them (upstream `PodDeleteList.Warnings`):
/// `message: ns/a, ns/b; message2: ns/c`.
pub fn warnings(warned: &[(String, String)]) -> String {
    grouped(warned)
        .into_iter()
        .map(|(message, pods)| format!("{message}: {}", pods.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Several errors as one (upstream `utilerrors.NewAggregate(...).Error()`): the message alone
/// for one, `[a, b]` for more, each distinct message once.
pub fn aggregate(errors: &[String]) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for e in errors {
        if !distinct.contains(&e.as_str()) {
            distinct.push(e);
        }
    }
    match distinct.as_slice() {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, Pod, PodSpec, PodStatus, Volume};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn owner(kind: &str, api_version: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: "owner".into(),
            uid: "uid-owner".into(),
            controller: Some(controller),
            ..Default::default()
        }
    }

    struct PodSpecOf {
        owner: Option<OwnerReference>,
        mirror: bool,
        empty_dir: bool,
        phase: &'static str,
    }

    const RUNNING: PodSpecOf = PodSpecOf {
        owner: None,
        mirror: false,
        empty_dir: false,
        phase: "Running",
    };

    fn pod(p: PodSpecOf) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("bar".into()),
                namespace: Some("default".into()),
                owner_references: p.owner.map(|o| vec![o]),
                annotations: p
                    .mirror
                    .then(|| [(MIRROR_POD_ANNOTATION.to_string(), String::new())].into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: Some("node".into()),
                volumes: p.empty_dir.then(|| {
                    vec![Volume {
                        name: "scratch".into(),
                        empty_dir: Some(EmptyDirVolumeSource::default()),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some(p.phase.into()),
                ..Default::default()
            }),
        }
    }

    fn daemon_set() -> Option<OwnerReference> {
        Some(owner("DaemonSet", "apps/v1", true))
    }

    fn replica_set() -> Option<OwnerReference> {
        Some(owner("ReplicaSet", "apps/v1", true))
    }

    /// Cases from kubectl's drain_test.go (`TestDrain`) and filters_test.go.
    #[test]
    fn each_pod_gets_kubectls_verdict() {
        type Case = (&'static str, PodSpecOf, DrainOptions, bool, Status);
        let opts = DrainOptions::default;
        let with = |f: fn(&mut DrainOptions)| {
            let mut o = DrainOptions::default();
            f(&mut o);
            o
        };
        let error = Status::error;
        let cases: Vec<Case> = vec![
            (
                "A pod with a ReplicaSet controller is deleted",
                PodSpecOf { owner: replica_set(), ..RUNNING },
                opts(),
                true,
                Status::okay(),
            ),
            (
                "A DaemonSet pod without --ignore-daemonsets is an error",
                PodSpecOf { owner: daemon_set(), ..RUNNING },
                opts(),
                true,
                error(DAEMON_SET_FATAL),
            ),
            (
                "A DaemonSet pod with --ignore-daemonsets is skipped with a warning",
                PodSpecOf { owner: daemon_set(), ..RUNNING },
                with(|o| o.ignore_daemon_sets = true),
                true,
                Status::warning(false, DAEMON_SET_WARNING),
            ),
            (
                "A DaemonSet pod whose DaemonSet is gone is an error naming the lookup",
                PodSpecOf { owner: daemon_set(), ..RUNNING },
                with(|o| o.ignore_daemon_sets = true),
                false,
                error("daemonsets.apps \"owner\" not found"),
            ),
            (
                "An orphaned DaemonSet pod is deleted under --force, its warning dropped by the filters after it",
                PodSpecOf { owner: daemon_set(), ..RUNNING },
                with(|o| o.force = true),
                false,
                Status::okay(),
            ),
            (
                "A DaemonSet pod with emptyDir under --ignore-daemonsets is skipped with the DaemonSet warning",
                PodSpecOf { owner: daemon_set(), empty_dir: true, ..RUNNING },
                with(|o| o.ignore_daemon_sets = true),
                true,
                Status::warning(false, DAEMON_SET_WARNING),
            ),
            (
                "A Job pod with local storage is deleted under --force and --delete-emptydir-data",
                PodSpecOf { owner: Some(owner("Job", "batch/v1", true)), empty_dir: true, ..RUNNING },
                with(|o| { o.force = true; o.delete_empty_dir_data = true }),
                true,
                Status::okay(),
            ),
            (
                "A finished DaemonSet pod is deleted",
                PodSpecOf { owner: daemon_set(), phase: "Succeeded", ..RUNNING },
                opts(),
                true,
                Status::okay(),
            ),
            (
                "A DaemonSet reference of another group version is not a DaemonSet pod",
                PodSpecOf { owner: Some(owner("DaemonSet", "extensions/v1beta1", true)), ..RUNNING },
                opts(),
                true,
                Status::okay(),
            ),
            (
                "A mirror pod is skipped without a warning",
                PodSpecOf { mirror: true, ..RUNNING },
                opts(),
                true,
                Status::skip(),
            ),
            (
                "A pod with emptyDir is an error without --delete-emptydir-data",
                PodSpecOf { owner: replica_set(), empty_dir: true, ..RUNNING },
                opts(),
                true,
                error(LOCAL_STORAGE_FATAL),
            ),
            (
                "A pod with emptyDir is deleted under --delete-emptydir-data and its warning is dropped",
                PodSpecOf { owner: replica_set(), empty_dir: true, ..RUNNING },
                with(|o| o.delete_empty_dir_data = true),
                true,
                Status::okay(),
            ),
            (
                "A bare pod with emptyDir reports the local storage error first",
                PodSpecOf { empty_dir: true, ..RUNNING },
                opts(),
                true,
                error(LOCAL_STORAGE_FATAL),
            ),
            (
                "A failed pod with emptyDir and no controller is deleted",
                PodSpecOf { empty_dir: true, phase: "Failed", ..RUNNING },
                opts(),
                true,
                Status::okay(),
            ),
            (
                "A bare pod is an error without --force",
                RUNNING,
                opts(),
                true,
                error(UNMANAGED_FATAL),
            ),
            (
                "A bare pod is deleted with a warning under --force",
                RUNNING,
                with(|o| o.force = true),
                true,
                Status::warning(true, UNMANAGED_WARNING),
            ),
            (
                "A succeeded bare pod is deleted",
                PodSpecOf { phase: "Succeeded", ..RUNNING },
                opts(),
                true,
                Status::okay(),
            ),
            (
                "An owner reference that is not a controller does not count as one",
                PodSpecOf { owner: Some(owner("ReplicaSet", "apps/v1", false)), ..RUNNING },
                opts(),
                true,
                error(UNMANAGED_FATAL),
            ),
        ];
        for (name, spec, o, exists, want) in cases {
            let mut looked_up = Vec::new();
            let got = filter_pod(&pod(spec).into(), &o, &mut |ns, n| {
                looked_up.push(format!("{ns}/{n}"));
                exists
            });
            assert_eq!(got, want, "{name}");
            assert!(looked_up.len() <= 1, "{name}: one GET at most");
        }
    }

    #[test]
    fn errors_and_warnings_group_pods_by_message_in_order_of_appearance() {
        let items = vec![
            (UNMANAGED_FATAL.to_string(), "default/a".to_string()),
            (DAEMON_SET_FATAL.to_string(), "kube-system/ds-1".to_string()),
            (UNMANAGED_FATAL.to_string(), "shop/b".to_string()),
        ];
        assert_eq!(
            errors(&items),
            vec![
                "cannot delete Pods that declare no controller (use --force to override): default/a, shop/b",
                "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): kube-system/ds-1",
            ]
        );
        assert_eq!(
            warnings(&items[..2]),
            "Pods that declare no controller (use --force to override): default/a; \
             DaemonSet-managed Pods (use --ignore-daemonsets to ignore): kube-system/ds-1"
        );
    }

    #[test]
    fn an_aggregate_of_one_error_is_that_error_and_of_several_a_bracketed_list() {
        assert_eq!(aggregate(&["a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into(), "a".into()]), "[a, b]");
    }
}

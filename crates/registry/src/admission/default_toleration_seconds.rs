//! The `DefaultTolerationSeconds` admission plugin of kube-apiserver (on by default).
//!
//! Every pod that has no toleration for `node.kubernetes.io/not-ready:NoExecute` (or for
//! `node.kubernetes.io/unreachable:NoExecute`) gets one, operator `Exists`, tolerating the taint
//! for 300 s (the apiserver flags `--default-not-ready-toleration-seconds` and
//! `--default-unreachable-toleration-seconds`). This is why pods on a node that stops reporting
//! are deleted about five minutes after the node controller taints it.
//!
//! The "already has one" test is upstream's, and deliberately loose: any toleration whose key is
//! the taint's key or empty, and whose effect is NoExecute or empty, counts. Its operator, value
//! and tolerationSeconds are not looked at.

use k8s_openapi::api::core::v1::Toleration;
use kubeplane_api::StoredPod;

use kubeplane_core::taints::{TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE};

/// The admission plugin's name in kube-apiserver.
pub const PLUGIN_NAME: &str = "DefaultTolerationSeconds";

/// Upstream default of `--default-not-ready-toleration-seconds`.
pub const DEFAULT_NOT_READY_TOLERATION_SECONDS: i64 = 300;
/// Upstream default of `--default-unreachable-toleration-seconds`.
pub const DEFAULT_UNREACHABLE_TOLERATION_SECONDS: i64 = 300;

/// Applies DefaultTolerationSeconds with the default 300 s to a pod being created (upstream also
/// runs it on update).
pub fn default_toleration_seconds(pod: &mut StoredPod) {
    default_toleration_seconds_with(
        pod,
        DEFAULT_NOT_READY_TOLERATION_SECONDS,
        DEFAULT_UNREACHABLE_TOLERATION_SECONDS,
    );
}

/// DefaultTolerationSeconds with explicit durations (the two apiserver flags).
pub fn default_toleration_seconds_with(
    pod: &mut StoredPod,
    not_ready_secs: i64,
    unreachable_secs: i64,
) {
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[]);
    let covers = |t: &Toleration, key: &str| {
        let t_key = t.key.as_deref().unwrap_or("");
        let t_effect = t.effect.as_deref().unwrap_or("");
        (t_key == key || t_key.is_empty()) && (t_effect == "NoExecute" || t_effect.is_empty())
    };
    let has_not_ready = tolerations.iter().any(|t| covers(t, TAINT_NODE_NOT_READY));
    let has_unreachable = tolerations
        .iter()
        .any(|t| covers(t, TAINT_NODE_UNREACHABLE));
    if has_not_ready && has_unreachable {
        return;
    }
    let added = |key: &str, secs: i64| Toleration {
        key: Some(key.to_string()),
        operator: Some("Exists".to_string()),
        effect: Some("NoExecute".to_string()),
        toleration_seconds: Some(secs),
        value: None,
    };
    let list = pod.spec_mut().tolerations.get_or_insert_with(Vec::new);
    if !has_not_ready {
        list.push(added(TAINT_NODE_NOT_READY, not_ready_secs));
    }
    if !has_unreachable {
        list.push(added(TAINT_NODE_UNREACHABLE, unreachable_secs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::core::v1::PodSpec;

    use kubeplane_core::testing::toleration as tol;

    fn pod(tolerations: Vec<Toleration>) -> StoredPod {
        Pod {
            spec: Some(PodSpec {
                tolerations: (!tolerations.is_empty()).then_some(tolerations),
                ..Default::default()
            }),
            ..Default::default()
        }
        .into()
    }

    fn not_ready(secs: i64) -> Toleration {
        tol(TAINT_NODE_NOT_READY, "Exists", "", "NoExecute", Some(secs))
    }

    fn unreachable(secs: i64) -> Toleration {
        tol(
            TAINT_NODE_UNREACHABLE,
            "Exists",
            "",
            "NoExecute",
            Some(secs),
        )
    }

    /// Upstream `TestForgivenessAdmission`, case by case.
    #[test]
    fn forgiveness_admission_adds_only_the_missing_default_tolerations() {
        let foo = tol("foo", "Equal", "bar", "NoSchedule", Some(700));
        let unreachable_any_effect = tol(TAINT_NODE_UNREACHABLE, "Exists", "", "", Some(700));
        let wildcard = tol("", "Exists", "", "", Some(700));
        let cases: Vec<(&str, Vec<Toleration>, Vec<Toleration>)> = vec![
            (
                "a pod without tolerations gets both 300 s tolerations",
                vec![],
                vec![not_ready(300), unreachable(300)],
            ),
            (
                "unrelated tolerations are kept and both defaults are appended",
                vec![foo.clone()],
                vec![foo, not_ready(300), unreachable(300)],
            ),
            (
                "a not-ready toleration already present gets only unreachable",
                vec![not_ready(700)],
                vec![not_ready(700), unreachable(300)],
            ),
            (
                "an unreachable toleration already present gets only not-ready",
                vec![unreachable(700)],
                vec![unreachable(700), not_ready(300)],
            ),
            (
                "both present: unchanged",
                vec![not_ready(700), unreachable(700)],
                vec![not_ready(700), unreachable(700)],
            ),
            (
                "an unreachable toleration with an empty effect counts as present",
                vec![unreachable_any_effect.clone()],
                vec![unreachable_any_effect, not_ready(300)],
            ),
            (
                "a wildcard toleration (empty key, Exists) leaves the pod unchanged",
                vec![wildcard.clone()],
                vec![wildcard],
            ),
        ];
        for (name, given, want) in cases {
            let mut p = pod(given);
            default_toleration_seconds(&mut p);
            let got = p.spec().unwrap().tolerations.clone().unwrap_or_default();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn a_pod_without_a_spec_gets_one() {
        let mut p = StoredPod::default();
        default_toleration_seconds(&mut p);
        assert_eq!(
            p.spec().unwrap().tolerations.clone().unwrap(),
            vec![not_ready(300), unreachable(300)]
        );
    }

    #[test]
    fn the_operator_and_value_of_an_existing_toleration_are_not_examined() {
        // Equal with a value never tolerates the value-less NLC taint, but upstream only looks
        // at the key and the effect.
        let odd = tol(TAINT_NODE_NOT_READY, "Equal", "x", "NoExecute", None);
        let mut p = pod(vec![odd.clone()]);
        default_toleration_seconds(&mut p);
        assert_eq!(
            p.spec().unwrap().tolerations.clone().unwrap(),
            vec![odd, unreachable(300)]
        );
    }
}

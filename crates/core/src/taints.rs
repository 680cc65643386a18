//! Taints and tolerations: upstream `Toleration.ToleratesTaint` (k8s.io/api/core/v1) and the
//! helpers the scheduler's TaintToleration plugin and the taint-eviction controller build on.
//!
//! The matcher is upstream's, not the API validation rules: an empty toleration key matches
//! every key whatever the operator (validation only allows that with `Exists`, but a matcher
//! that re-checked it would disagree with upstream on objects that bypassed validation).
//!
//! Kubernetes v1.34 has no numeric `Gt`/`Lt` toleration operators (they arrive as an alpha
//! feature in v1.35, KEP-5471). Like any other unknown operator they tolerate nothing here.

use k8s_openapi::api::core::v1::{Taint, Toleration};

pub const EFFECT_NO_SCHEDULE: &str = "NoSchedule";
pub const EFFECT_PREFER_NO_SCHEDULE: &str = "PreferNoSchedule";
pub const EFFECT_NO_EXECUTE: &str = "NoExecute";

/// The well-known taint keys (upstream `k8s.io/api/core/v1` well_known_taints.go), defined once
/// here for the scheduler, the controllers and admission.
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
pub const TAINT_NODE_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
pub const TAINT_NODE_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
pub const TAINT_NODE_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
pub const TAINT_NODE_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
pub const TAINT_NODE_OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

pub const OPERATOR_EXISTS: &str = "Exists";
pub const OPERATOR_EQUAL: &str = "Equal";

/// Whether `t` tolerates `taint`:
/// 1. a non-empty toleration effect must equal the taint's effect (empty matches all effects);
/// 2. a non-empty toleration key must equal the taint's key (empty matches all keys);
/// 3. operator `Exists` matches any value; `Equal` or empty requires equal values, an absent
///    value counting as `""`; any other operator (including v1.35's `Gt`/`Lt`) never matches.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect = t.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or("") {
        "" | OPERATOR_EQUAL => {
            t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        OPERATOR_EXISTS => true,
        _ => false,
    }
}

/// Whether any of `tols` tolerates `taint` (upstream `TolerationsTolerateTaint`).
pub fn tolerates_any(tols: &[Toleration], taint: &Taint) -> bool {
    tols.iter().any(|t| tolerates(t, taint))
}

/// The first taint, in node order, that passes `effect_filter` and that no toleration
/// tolerates (upstream `FindMatchingUntoleratedTaint`). The scheduler's Filter passes a filter
/// for NoSchedule and NoExecute and reports this taint in its message.
pub fn find_untolerated_taint<'a>(
    taints: &'a [Taint],
    tols: &[Toleration],
    effect_filter: impl Fn(&Taint) -> bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .find(|taint| effect_filter(taint) && !tolerates_any(tols, taint))
}

/// TaintToleration's raw Score: the number of PreferNoSchedule taints not tolerated by the
/// pod's tolerations whose effect is empty or PreferNoSchedule (a NoSchedule toleration does
/// not soften a PreferNoSchedule taint, as upstream `getAllTolerationPreferNoSchedule`).
pub fn count_intolerable_prefer_no_schedule(taints: &[Taint], tols: &[Toleration]) -> i64 {
    let prefer: Vec<Toleration> = tols
        .iter()
        .filter(|t| {
            matches!(
                t.effect.as_deref(),
                None | Some("") | Some(EFFECT_PREFER_NO_SCHEDULE)
            )
        })
        .cloned()
        .collect();
    taints
        .iter()
        .filter(|taint| taint.effect == EFFECT_PREFER_NO_SCHEDULE && !tolerates_any(&prefer, taint))
        .count() as i64
}

/// For each taint in order, the first toleration that tolerates it (upstream
/// `GetMatchingTolerations`); `None` if some taint is not tolerated. No taints gives
/// `Some(vec![])`. A toleration may appear more than once. The taint-eviction controller takes
/// the minimum `tolerationSeconds` over this list.
pub fn matching_tolerations<'a>(
    taints: &[Taint],
    tols: &'a [Toleration],
) -> Option<Vec<&'a Toleration>> {
    taints
        .iter()
        .map(|taint| tols.iter().find(|t| tolerates(t, taint)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: if value.is_empty() {
                None
            } else {
                Some(value.into())
            },
            effect: effect.into(),
            time_added: None,
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
        crate::testing::toleration(key, op, value, effect, None)
    }

    /// Upstream `TestTolerationToleratesTaint` (controllers.md 4.3), plus the matcher rules.
    #[test]
    fn tolerations_tolerate_taints_as_upstream() {
        let cases: Vec<(&str, Toleration, Taint, bool)> = vec![
            (
                "Exists with the same key and effect tolerates a taint without a value",
                tol("foo", "Exists", "", "NoSchedule"),
                taint("foo", "", "NoSchedule"),
                true,
            ),
            (
                "Exists tolerates a taint with a value",
                tol("foo", "Exists", "", "NoSchedule"),
                taint("foo", "bar", "NoSchedule"),
                true,
            ),
            (
                "an empty key with Exists tolerates every key",
                tol("", "Exists", "", "NoSchedule"),
                taint("foo", "bar", "NoSchedule"),
                true,
            ),
            (
                "Equal with the same value tolerates",
                tol("foo", "Equal", "bar", "NoSchedule"),
                taint("foo", "bar", "NoSchedule"),
                true,
            ),
            (
                "Equal with a different value does not tolerate",
                tol("foo", "Equal", "baz", "NoSchedule"),
                taint("foo", "bar", "NoSchedule"),
                false,
            ),
            (
                "the same key and value with a different effect does not tolerate",
                tol("foo", "Equal", "bar", "NoExecute"),
                taint("foo", "bar", "NoSchedule"),
                false,
            ),
            (
                "an empty operator means Equal",
                tol("foo", "", "bar", "NoSchedule"),
                taint("foo", "bar", "NoSchedule"),
                true,
            ),
            (
                "an empty effect tolerates every effect",
                tol("foo", "Equal", "bar", ""),
                taint("foo", "bar", "NoExecute"),
                true,
            ),
            (
                "an absent value equals an absent taint value",
                tol("foo", "Equal", "", "NoSchedule"),
                taint("foo", "", "NoSchedule"),
                true,
            ),
            (
                "a different key does not tolerate",
                tol("other", "Exists", "", ""),
                taint("foo", "bar", "NoSchedule"),
                false,
            ),
            (
                "an empty key with Equal matches any key with an equal value as upstream's matcher does",
                tol("", "Equal", "bar", ""),
                taint("foo", "bar", "NoSchedule"),
                true,
            ),
            (
                "Gt does not exist in v1.34 and tolerates nothing",
                tol("foo", "Gt", "750", "NoSchedule"),
                taint("foo", "950", "NoSchedule"),
                false,
            ),
            (
                "Lt does not exist in v1.34 and tolerates nothing",
                tol("foo", "Lt", "950", "NoSchedule"),
                taint("foo", "800", "NoSchedule"),
                false,
            ),
            (
                "an unknown operator tolerates nothing",
                tol("foo", "Matches", "bar", "NoSchedule"),
                taint("foo", "bar", "NoSchedule"),
                false,
            ),
        ];
        for (case, t, ta, want) in cases {
            assert_eq!(tolerates(&t, &ta), want, "{case}");
        }
    }

    #[test]
    fn the_first_untolerated_taint_passing_the_filter_is_found() {
        let taints = vec![
            taint("soft", "", EFFECT_PREFER_NO_SCHEDULE),
            taint("dedicated", "user1", EFFECT_NO_SCHEDULE),
            taint("gone", "", EFFECT_NO_EXECUTE),
        ];
        let hard = |t: &Taint| t.effect == EFFECT_NO_SCHEDULE || t.effect == EFFECT_NO_EXECUTE;
        let cases: Vec<(&str, Vec<Toleration>, Option<&str>)> = vec![
            (
                "a pod without tolerations is stopped by the first hard taint",
                vec![],
                Some("dedicated"),
            ),
            (
                "tolerating the first hard taint exposes the next",
                vec![tol("dedicated", "Equal", "user1", "")],
                Some("gone"),
            ),
            (
                "PreferNoSchedule taints are skipped by the filter",
                vec![
                    tol("dedicated", "Exists", "", ""),
                    tol("gone", "Exists", "", ""),
                ],
                None,
            ),
            (
                "an empty Exists toleration tolerates everything",
                vec![tol("", "Exists", "", "")],
                None,
            ),
        ];
        for (case, tols, want) in cases {
            let got = find_untolerated_taint(&taints, &tols, hard).map(|t| t.key.as_str());
            assert_eq!(got, want, "{case}");
        }
    }

    /// Scheduler spec 12.3 TaintToleration facts 1-3 (raw scores before normalization).
    #[test]
    fn the_more_intolerable_prefer_no_schedule_taints_a_node_has_the_higher_its_raw_count() {
        let pod_tols = vec![tol("foo", "Equal", "bar", EFFECT_PREFER_NO_SCHEDULE)];
        let cases: Vec<(&str, Vec<Toleration>, Vec<Taint>, i64)> = vec![
            (
                "a tolerated PreferNoSchedule taint counts nothing",
                pod_tols.clone(),
                vec![taint("foo", "bar", EFFECT_PREFER_NO_SCHEDULE)],
                0,
            ),
            (
                "a PreferNoSchedule taint with another value counts one",
                pod_tols.clone(),
                vec![taint("foo", "blah", EFFECT_PREFER_NO_SCHEDULE)],
                1,
            ),
            (
                "two untolerated PreferNoSchedule taints count two",
                vec![tol("foo", "Equal", "bar", "")],
                vec![
                    taint("cpu-type", "arm64", EFFECT_PREFER_NO_SCHEDULE),
                    taint("disk-type", "ssd", EFFECT_PREFER_NO_SCHEDULE),
                ],
                2,
            ),
            (
                "an untolerated NoSchedule taint does not count",
                vec![],
                vec![taint("cpu-type", "arm64", EFFECT_NO_SCHEDULE)],
                0,
            ),
            (
                "a NoSchedule toleration does not soften a PreferNoSchedule taint",
                vec![tol("foo", "Exists", "", EFFECT_NO_SCHEDULE)],
                vec![taint("foo", "bar", EFFECT_PREFER_NO_SCHEDULE)],
                1,
            ),
        ];
        for (case, tols, taints, want) in cases {
            assert_eq!(
                count_intolerable_prefer_no_schedule(&taints, &tols),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn matching_tolerations_pairs_each_taint_with_its_first_toleration() {
        let taints = vec![
            taint("a", "", EFFECT_NO_EXECUTE),
            taint("b", "", EFFECT_NO_EXECUTE),
        ];
        let tols = vec![tol("a", "Exists", "", ""), tol("", "Exists", "", "")];
        let used = matching_tolerations(&taints, &tols).unwrap();
        assert_eq!(used, vec![&tols[0], &tols[1]]);
        assert_eq!(matching_tolerations(&[], &tols), Some(vec![]));
        assert_eq!(matching_tolerations(&taints, &tols[..1]), None);
        assert_eq!(matching_tolerations(&taints, &[]), None);
    }
}

//! A Job's pod failure policy (upstream `pkg/controller/job/pod_failure_policy.go`): the first
//! rule matching a failed pod's container exit codes or conditions decides whether the Job
//! fails at once (FailJob), the failure is not counted (Ignore), counted (Count), or fails the
//! pod's index (FailIndex).

use k8s_openapi::api::batch::v1::{PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement};
use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};
use kubeplane_api::StoredPod;

/// What a pod failure policy says about one failed pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyMatch {
    /// The Job failure message of a FailJob rule.
    pub fail_job_message: Option<String>,
    /// Whether the failure counts towards `backoffLimit` (not for Ignore rules).
    pub count_failed: bool,
    /// The action of the matching rule.
    pub action: Option<String>,
}

/// Matches a failed pod against the rules, in order (upstream `matchPodFailurePolicy`).
pub fn match_pod_failure_policy(policy: Option<&PodFailurePolicy>, pod: &StoredPod) -> PolicyMatch {
    let no_match = PolicyMatch {
        fail_job_message: None,
        count_failed: true,
        action: None,
    };
    let Some(policy) = policy else {
        return no_match;
    };
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let status = pod.status_k8s();
    for (index, rule) in policy.rules.iter().enumerate() {
        let message = if let Some(req) = rule.on_exit_codes.as_ref() {
            let Some(cs) = match_on_exit_codes(status.as_ref(), req) else {
                continue;
            };
            let code = cs
                .state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .map_or(0, |t| t.exit_code);
            format!(
                "Container {} for pod {ns}/{name} failed with exit code {code} matching {} rule at index {index}",
                cs.name, rule.action
            )
        } else if let Some(patterns) = rule.on_pod_conditions.as_ref() {
            let conditions = status
                .as_ref()
                .and_then(|s| s.conditions.as_deref())
                .unwrap_or(&[]);
            let Some(cond) = conditions.iter().find(|c| {
                patterns
                    .iter()
                    .any(|p| p.type_ == c.type_ && p.status == c.status)
            }) else {
                continue;
            };
            format!(
                "Pod {ns}/{name} has condition {} matching {} rule at index {index}",
                cond.type_, rule.action
            )
        } else {
            continue;
        };
        let action = Some(rule.action.clone());
        return match rule.action.as_str() {
            "Ignore" => PolicyMatch {
                fail_job_message: None,
                count_failed: false,
                action,
            },
            "FailJob" => PolicyMatch {
                fail_job_message: Some(message),
                count_failed: true,
                action,
            },
            // Count, FailIndex.
            _ => PolicyMatch {
                fail_job_message: None,
                count_failed: true,
                action,
            },
        };
    }
    no_match
}

/// The first terminated container (regular, then init) with a non-zero exit code the
/// requirement accepts.
fn match_on_exit_codes<'a>(
    status: Option<&'a PodStatus>,
    req: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<&'a ContainerStatus> {
    let status = status?;
    let lists = [
        status.container_statuses.as_deref().unwrap_or(&[]),
        status.init_container_statuses.as_deref().unwrap_or(&[]),
    ];
    lists.into_iter().flatten().find(|cs| {
        let Some(t) = cs.state.as_ref().and_then(|s| s.terminated.as_ref()) else {
            return false;
        };
        if req.container_name.as_ref().is_some_and(|n| *n != cs.name) || t.exit_code == 0 {
            return false;
        }
        match req.operator.as_str() {
            "In" => req.values.contains(&t.exit_code),
            "NotIn" => !req.values.contains(&t.exit_code),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{
        PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
    };
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateTerminated, PodCondition, PodStatus,
    };
    use kubeplane_core::testing::PodBuilder;

    fn failed_pod(exit_codes: &[(&str, i32)], conditions: &[(&str, &str)]) -> StoredPod {
        let mut pod: StoredPod = PodBuilder::new("p").namespace("ns").obj().into();
        pod.set_status(Some(PodStatus {
            phase: Some("Failed".into()),
            container_statuses: Some(
                exit_codes
                    .iter()
                    .map(|(n, code)| ContainerStatus {
                        name: n.to_string(),
                        state: Some(ContainerState {
                            terminated: Some(ContainerStateTerminated {
                                exit_code: *code,
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    })
                    .collect(),
            ),
            conditions: Some(
                conditions
                    .iter()
                    .map(|(t, s)| PodCondition {
                        type_: t.to_string(),
                        status: s.to_string(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }));
        pod
    }

    fn exit_rule(
        action: &str,
        container: Option<&str>,
        op: &str,
        values: &[i32],
    ) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action: action.into(),
            on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                container_name: container.map(Into::into),
                operator: op.into(),
                values: values.to_vec(),
            }),
            on_pod_conditions: None,
        }
    }

    fn cond_rule(action: &str, type_: &str) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action: action.into(),
            on_exit_codes: None,
            on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                type_: type_.into(),
                status: "True".into(),
            }]),
        }
    }

    #[test]
    fn rules_match_as_upstream() {
        type Case<'a> = (
            &'a str,
            Vec<PodFailurePolicyRule>,
            StoredPod,
            Option<&'a str>,
            bool,
            Option<&'a str>,
        );
        let cases: Vec<Case> = vec![
            (
                "FailJob on an exit code in the list",
                vec![exit_rule("FailJob", None, "In", &[1, 2, 3])],
                failed_pod(&[("main", 2)], &[]),
                Some("Container main for pod ns/p failed with exit code 2 matching FailJob rule at index 0"),
                true,
                Some("FailJob"),
            ),
            (
                "Ignore on a disruption condition is not counted",
                vec![cond_rule("Ignore", "DisruptionTarget")],
                failed_pod(&[("main", 137)], &[("DisruptionTarget", "True")]),
                None,
                false,
                Some("Ignore"),
            ),
            (
                "Count matches but counts",
                vec![exit_rule("Count", None, "NotIn", &[5])],
                failed_pod(&[("main", 1)], &[]),
                None,
                true,
                Some("Count"),
            ),
            (
                "NotIn does not match a listed code",
                vec![exit_rule("FailJob", None, "NotIn", &[1])],
                failed_pod(&[("main", 1)], &[]),
                None,
                true,
                None,
            ),
            (
                "Exit code 0 never matches",
                vec![exit_rule("FailJob", None, "NotIn", &[1])],
                failed_pod(&[("main", 0)], &[]),
                None,
                true,
                None,
            ),
            (
                "A rule for another container does not match",
                vec![exit_rule("FailJob", Some("sidecar"), "In", &[1])],
                failed_pod(&[("main", 1)], &[]),
                None,
                true,
                None,
            ),
            (
                "The first matching rule wins",
                vec![
                    cond_rule("Ignore", "DisruptionTarget"),
                    exit_rule("FailJob", None, "In", &[42]),
                ],
                failed_pod(&[("main", 42)], &[]),
                Some("Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"),
                true,
                Some("FailJob"),
            ),
            (
                "FailJob on a condition names the condition",
                vec![cond_rule("FailJob", "ConfigIssue")],
                failed_pod(&[], &[("ConfigIssue", "True")]),
                Some("Pod ns/p has condition ConfigIssue matching FailJob rule at index 0"),
                true,
                Some("FailJob"),
            ),
        ];
        for (name, rules, pod, msg, count, action) in cases {
            let policy = PodFailurePolicy { rules };
            let got = match_pod_failure_policy(Some(&policy), &pod);
            assert_eq!(got.fail_job_message.as_deref(), msg, "{name}");
            assert_eq!(got.count_failed, count, "{name}");
            assert_eq!(got.action.as_deref(), action, "{name}");
        }
    }
}

//! A Job's success policy (upstream `pkg/controller/job/success_policy.go`): an Indexed Job
//! succeeds early when the succeeded indexes meet one of its rules.

use k8s_openapi::api::batch::v1::SuccessPolicy;

use super::indexed_job_utils::OrderedIntervals;

/// The message of the SuccessCriteriaMet condition when a rule is met (`Matched rules at index
/// N`), upstream `matchSuccessPolicy`.
pub fn match_success_policy(
    policy: Option<&SuccessPolicy>,
    completions: i64,
    succeeded: &OrderedIntervals,
) -> Option<String> {
    let policy = policy?;
    if succeeded.0.is_empty() {
        return None;
    }
    for (index, rule) in policy.rules.iter().enumerate() {
        let met = match rule.succeeded_indexes.as_deref() {
            Some(s) => {
                let required = OrderedIntervals::parse(s, completions);
                if required.0.is_empty() {
                    continue;
                }
                let contained = overlap(&required, succeeded);
                contained == required.total()
                    || rule
                        .succeeded_count
                        .is_some_and(|n| contained >= i64::from(n))
            }
            None => rule
                .succeeded_count
                .is_some_and(|n| succeeded.total() >= i64::from(n)),
        };
        if met {
            return Some(format!("Matched rules at index {index}"));
        }
    }
    None
}

/// How many indexes of `a` are also in `b`.
fn overlap(a: &OrderedIntervals, b: &OrderedIntervals) -> i64 {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.0.len() && j < b.0.len() {
        let (x, y) = (a.0[i], b.0[j]);
        n += (x.last.min(y.last) - x.first.max(y.first) + 1).max(0);
        if y.last < x.last {
            j += 1;
        } else if y.last > x.last {
            i += 1;
        } else {
            i += 1;
            j += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::SuccessPolicyRule;

    fn rule(indexes: Option<&str>, count: Option<i32>) -> SuccessPolicyRule {
        SuccessPolicyRule {
            succeeded_indexes: indexes.map(Into::into),
            succeeded_count: count,
        }
    }

    #[test]
    fn success_policy_rules_match_as_upstream() {
        let cases: &[(&str, Vec<SuccessPolicyRule>, &str, Option<&str>)] = &[
            ("No succeeded indexes", vec![rule(None, Some(1))], "", None),
            (
                "Only succeededCount, met",
                vec![rule(None, Some(2))],
                "0,3",
                Some("Matched rules at index 0"),
            ),
            (
                "Only succeededCount, not met",
                vec![rule(None, Some(3))],
                "0,3",
                None,
            ),
            (
                "All listed indexes succeeded",
                vec![rule(Some("1-3"), None)],
                "0-4",
                Some("Matched rules at index 0"),
            ),
            (
                "One listed index missing",
                vec![rule(Some("1-3"), None)],
                "1,3",
                None,
            ),
            (
                "Enough of the listed indexes",
                vec![rule(Some("0-5"), Some(2))],
                "1,3",
                Some("Matched rules at index 0"),
            ),
            (
                "The second rule matches",
                vec![rule(Some("7"), None), rule(Some("0,1"), None)],
                "0,1",
                Some("Matched rules at index 1"),
            ),
            (
                "Unparsable indexes are skipped",
                vec![rule(Some("x"), Some(1))],
                "0",
                None,
            ),
        ];
        for (name, rules, succeeded, want) in cases {
            let policy = SuccessPolicy {
                rules: rules.clone(),
            };
            let got =
                match_success_policy(Some(&policy), 10, &OrderedIntervals::parse(succeeded, 10));
            assert_eq!(got.as_deref(), *want, "{name}");
        }
    }
}

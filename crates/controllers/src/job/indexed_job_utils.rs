//! Indexed Jobs (upstream `pkg/controller/job/indexed_job_utils.go`): completion indexes on
//! pods, the ordered intervals of `status.completedIndexes`, the first pending indexes and the
//! pods with repeated or invalid indexes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, Pod, PodTemplateSpec};

/// The annotation (and, with PodIndexLabel, label) with a pod's completion index.
pub const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// The environment variable an Indexed Job's containers read their index from.
pub const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// Upstream `names.MaxGeneratedNameLength` (63 minus the 5 random characters).
const MAX_GENERATED_NAME_LENGTH: usize = 58;

/// An inclusive range of indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    pub first: i64,
    pub last: i64,
}

/// Disjoint, non-adjacent intervals in increasing order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrderedIntervals(pub Vec<Interval>);

impl OrderedIntervals {
    /// The intervals with `new` (increasing) merged in.
    pub fn with_ordered_indexes(&self, new: &[i64]) -> OrderedIntervals {
        let mut out: Vec<Interval> = Vec::new();
        let mut push = |iv: Interval| match out.last_mut() {
            Some(last) if iv.first <= last.last + 1 => last.last = last.last.max(iv.last),
            _ => out.push(iv),
        };
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() || j < new.len() {
            if j >= new.len() || (i < self.0.len() && self.0[i].first < new[j]) {
                push(self.0[i]);
                i += 1;
            } else {
                push(Interval {
                    first: new[j],
                    last: new[j],
                });
                j += 1;
            }
        }
        OrderedIntervals(out)
    }

    /// How many indexes the intervals hold.
    pub fn total(&self) -> i64 {
        self.0.iter().map(|iv| iv.last - iv.first + 1).sum()
    }

    pub fn has(&self, ix: i64) -> bool {
        let pos = self.0.partition_point(|iv| iv.last < ix);
        self.0.get(pos).is_some_and(|iv| iv.first <= ix)
    }

    /// Parses `status.completedIndexes` (or a success policy's `succeededIndexes`), keeping
    /// indexes below `completions`; corrupt intervals are skipped.
    pub fn parse(s: &str, completions: i64) -> OrderedIntervals {
        let mut out: Vec<Interval> = Vec::new();
        if s.is_empty() {
            return OrderedIntervals(out);
        }
        for part in s.split(',') {
            let mut limits = part.split('-');
            let Some(Ok(first)) = limits.next().map(str::parse::<i64>) else {
                continue;
            };
            if first >= completions {
                break;
            }
            let last = match limits.next() {
                Some(l) => match l.parse::<i64>() {
                    Ok(l) => l.min(completions - 1),
                    Err(_) => continue,
                },
                None => first,
            };
            match out.last_mut() {
                Some(prev) if prev.last == first - 1 => prev.last = last,
                _ => out.push(Interval { first, last }),
            }
        }
        OrderedIntervals(out)
    }
}

/// `1,3-5,7`: two adjacent indexes are written with a comma.
impl fmt::Display for OrderedIntervals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, iv) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", iv.first)?;
            if iv.last == iv.first + 1 {
                write!(f, ",{}", iv.last)?;
            } else if iv.last > iv.first {
                write!(f, "-{}", iv.last)?;
            }
        }
        Ok(())
    }
}

/// A pod's completion index: the annotation as a non-negative integer.
pub fn completion_index(pod: &Pod) -> Option<i64> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(COMPLETION_INDEX_ANNOTATION)?
        .parse::<i64>()
        .ok()
        .filter(|&i| i >= 0)
}

/// The first `count` indexes below `completions` neither succeeded nor held by an active pod.
pub fn first_pending_indexes(
    active: &[&Pod],
    succeeded: &OrderedIntervals,
    count: usize,
    completions: i64,
) -> Vec<i64> {
    let held: BTreeSet<i64> = active.iter().filter_map(|p| completion_index(p)).collect();
    let held: Vec<i64> = held.into_iter().collect();
    let non_pending = succeeded.with_ordered_indexes(&held);
    let mut out = Vec::with_capacity(count);
    let mut candidate = 0;
    for iv in &non_pending.0 {
        while candidate < completions && out.len() < count && candidate < iv.first {
            out.push(candidate);
            candidate += 1;
        }
        candidate = candidate.max(iv.last + 1);
    }
    while candidate < completions && out.len() < count {
        out.push(candidate);
        candidate += 1;
    }
    out
}

/// Active pods to remove whatever the counts say: pods without an index or with one at or above
/// `completions`, and all but one pod of each repeated index (the one kept is the one ranked
/// last for deletion by `rank`). Returns (to remove, the rest).
pub fn duplicated_index_pods<'a>(
    pods: &[&'a Pod],
    completions: i64,
    rank: impl Fn(&mut Vec<&'a Pod>),
) -> (Vec<&'a Pod>, Vec<&'a Pod>) {
    let mut by_index: BTreeMap<i64, Vec<&'a Pod>> = BTreeMap::new();
    let mut rm = Vec::new();
    for p in pods {
        match completion_index(p) {
            Some(ix) if ix < completions => by_index.entry(ix).or_default().push(p),
            _ => rm.push(*p),
        }
    }
    let mut left = Vec::new();
    for (_, mut same) in by_index {
        if same.len() > 1 {
            rank(&mut same);
        }
        let keep = same.pop().expect("non-empty");
        rm.extend(same);
        left.push(keep);
    }
    (rm, left)
}

/// The template of an Indexed Job's pod for one index: the annotation, the label, the
/// hostname `<job>-<index>`, and `JOB_COMPLETION_INDEX` in every container.
pub fn indexed_template(template: &mut PodTemplateSpec, job_name: &str, index: i64) {
    let meta = template.metadata.get_or_insert_with(Default::default);
    meta.annotations
        .get_or_insert_with(Default::default)
        .insert(COMPLETION_INDEX_ANNOTATION.into(), index.to_string());
    meta.labels
        .get_or_insert_with(Default::default)
        .insert(COMPLETION_INDEX_ANNOTATION.into(), index.to_string());
    if let Some(spec) = template.spec.as_mut() {
        spec.hostname = Some(format!("{job_name}-{index}"));
        let containers = spec
            .init_containers
            .iter_mut()
            .flatten()
            .chain(spec.containers.iter_mut());
        for c in containers {
            let env = c.env.get_or_insert_with(Vec::new);
            if env.iter().any(|e| e.name == COMPLETION_INDEX_ENV) {
                continue;
            }
            env.push(EnvVar {
                name: COMPLETION_INDEX_ENV.into(),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path: format!("metadata.labels['{COMPLETION_INDEX_ANNOTATION}']"),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
    }
}

/// `<job>-<index>-`, the job name shortened to keep the prefix within the generated-name limit.
pub fn generate_name_with_index(job_name: &str, index: i64) -> String {
    let suffix = format!("-{index}-");
    let prefix = format!("{job_name}{suffix}");
    if prefix.len() <= MAX_GENERATED_NAME_LENGTH {
        return prefix;
    }
    let keep = MAX_GENERATED_NAME_LENGTH - suffix.len();
    format!("{}{suffix}", &prefix[..keep])
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeplane_core::testing::PodBuilder;

    /// Intervals as (first, last) pairs.
    type Ivs<'a> = &'a [(i64, i64)];

    fn iv(list: Ivs) -> OrderedIntervals {
        OrderedIntervals(
            list.iter()
                .map(|&(first, last)| Interval { first, last })
                .collect(),
        )
    }

    #[test]
    fn completed_indexes_print_as_upstream() {
        let cases: &[(&str, Ivs, &str)] = &[
            ("Empty", &[], ""),
            ("One index", &[(3, 3)], "3"),
            ("Two adjacent indexes use a comma", &[(3, 4)], "3,4"),
            (
                "A longer run uses a dash",
                &[(0, 2), (5, 5), (7, 9)],
                "0-2,5,7-9",
            ),
        ];
        for (name, list, want) in cases {
            assert_eq!(iv(list).to_string(), *want, "{name}");
        }
    }

    #[test]
    fn completed_indexes_parse_and_merge_as_upstream() {
        let cases: &[(&str, &str, i64, Ivs)] = &[
            ("Empty string", "", 5, &[]),
            ("Adjacent singles merge", "0,1,2", 5, &[(0, 2)]),
            ("Ranges cut at completions", "1-3,5-9", 7, &[(1, 3), (5, 6)]),
            ("Indexes past completions are dropped", "1,8", 5, &[(1, 1)]),
            (
                "Corrupt intervals are skipped",
                "a,2,3-b,4",
                10,
                &[(2, 2), (4, 4)],
            ),
        ];
        for (name, s, completions, want) in cases {
            assert_eq!(OrderedIntervals::parse(s, *completions), iv(want), "{name}");
        }
    }

    #[test]
    fn new_indexes_merge_into_the_intervals() {
        let cases: &[(&str, Ivs, &[i64], Ivs)] = &[
            ("Nothing new", &[(0, 2)], &[], &[(0, 2)]),
            ("Into an empty list", &[], &[1, 2, 5], &[(1, 2), (5, 5)]),
            ("Bridging two intervals", &[(0, 1), (3, 4)], &[2], &[(0, 4)]),
            (
                "Before and after",
                &[(3, 4)],
                &[0, 7],
                &[(0, 0), (3, 4), (7, 7)],
            ),
        ];
        for (name, old, new, want) in cases {
            let got = iv(old).with_ordered_indexes(new);
            assert_eq!(got, iv(want), "{name}");
            assert_eq!(got.total(), iv(want).total(), "{name}");
        }
        assert!(iv(&[(0, 2), (5, 6)]).has(6));
        assert!(!iv(&[(0, 2), (5, 6)]).has(3));
    }

    fn indexed(name: &str, ix: &str) -> Pod {
        PodBuilder::new(name)
            .annotation(COMPLETION_INDEX_ANNOTATION, ix)
            .obj()
    }

    #[test]
    fn first_pending_indexes_skip_succeeded_and_active_ones() {
        let a = indexed("a", "1");
        let b = indexed("b", "4");
        let active = vec![&a, &b];
        let cases: &[(&str, Ivs, usize, i64, &[i64])] = &[
            ("Nothing held", &[], 3, 10, &[0, 2, 3]),
            (
                "Succeeded indexes are skipped",
                &[(0, 0), (2, 3)],
                3,
                10,
                &[5, 6, 7],
            ),
            ("Limited by completions", &[(0, 0)], 5, 4, &[2, 3]),
            ("Zero asked", &[], 0, 10, &[]),
        ];
        for (name, succeeded, count, completions, want) in cases {
            let got = first_pending_indexes(&active, &iv(succeeded), *count, *completions);
            assert_eq!(got, *want, "{name}");
        }
    }

    #[test]
    fn repeated_and_invalid_indexes_are_removed() {
        let p0 = indexed("p0", "0");
        let p0b = indexed("p0b", "0");
        let p9 = indexed("p9", "9");
        let bad = indexed("bad", "x");
        let p1 = indexed("p1", "1");
        let pods = vec![&p0, &p0b, &p9, &bad, &p1];
        let (rm, left) = duplicated_index_pods(&pods, 3, |_| {});
        let names = |v: &[&Pod]| {
            v.iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&rm), ["p9", "bad", "p0"]);
        assert_eq!(names(&left), ["p0b", "p1"]);
    }

    #[test]
    fn long_job_names_are_cut_before_the_index() {
        assert_eq!(generate_name_with_index("pi", 3), "pi-3-");
        let long = "a".repeat(60);
        let got = generate_name_with_index(&long, 12);
        assert_eq!(got.len(), MAX_GENERATED_NAME_LENGTH);
        assert!(got.ends_with("-12-"));
    }
}

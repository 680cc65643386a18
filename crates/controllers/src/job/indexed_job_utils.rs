//! Indexed Jobs (upstream `pkg/controller/job/indexed_job_utils.go`): completion indexes on
//! pods, the ordered intervals of `status.completedIndexes` and `status.failedIndexes`, the
//! first pending indexes, the pods with repeated or invalid indexes, and `backoffLimitPerIndex`:
//! per-index failure counts carried from a failed pod to its replacement in the
//! `batch.kubernetes.io/job-index-failure-count` annotation, failed indexes, and the failed pod
//! of each index kept (its tracking finalizer stays) until its replacement exists.

use kubeplane_api::StoredPod;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, PodTemplateSpec};

use super::backoff_utils::finished_time;
use super::pod_failure_policy::match_pod_failure_policy;
use super::tracking::is_pod_failed;
use super::util::spec;

/// The annotation (and, with PodIndexLabel, label) with a pod's completion index.
pub const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// The annotation with the failures counted against `backoffLimitPerIndex` before this pod
/// (upstream `JobIndexFailureCountAnnotation`).
pub const INDEX_FAILURE_COUNT_ANNOTATION: &str = "batch.kubernetes.io/job-index-failure-count";
/// The annotation with the failures of the index an Ignore rule did not count (upstream
/// `JobIndexIgnoredFailureCountAnnotation`); absent while there are none.
pub const INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: &str =
    "batch.kubernetes.io/job-index-ignored-failure-count";
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

    /// These intervals and `other` in one list (upstream `merge`).
    pub fn merge(&self, other: &OrderedIntervals) -> OrderedIntervals {
        let mut out: Vec<Interval> = Vec::new();
        let mut all: Vec<Interval> = self.0.iter().chain(&other.0).copied().collect();
        all.sort_by_key(|iv| iv.first);
        for iv in all {
            match out.last_mut() {
                Some(last) if iv.first <= last.last + 1 => last.last = last.last.max(iv.last),
                _ => out.push(iv),
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
pub fn completion_index(pod: &StoredPod) -> Option<i64> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(COMPLETION_INDEX_ANNOTATION)?
        .parse::<i64>()
        .ok()
        .filter(|&i| i >= 0)
}

/// The first `count` indexes below `completions` neither succeeded, failed (with
/// `backoffLimitPerIndex`) nor held by an active pod.
pub fn first_pending_indexes(
    active: &[&StoredPod],
    succeeded: &OrderedIntervals,
    failed: Option<&OrderedIntervals>,
    count: usize,
    completions: i64,
) -> Vec<i64> {
    let held: BTreeSet<i64> = active.iter().filter_map(|p| completion_index(p)).collect();
    let held: Vec<i64> = held.into_iter().collect();
    let mut non_pending = succeeded.with_ordered_indexes(&held);
    if let Some(failed) = failed {
        non_pending = non_pending.merge(failed);
    }
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
    pods: &[&'a StoredPod],
    completions: i64,
    rank: impl Fn(&mut Vec<&'a StoredPod>),
) -> (Vec<&'a StoredPod>, Vec<&'a StoredPod>) {
    let mut by_index: BTreeMap<i64, Vec<&'a StoredPod>> = BTreeMap::new();
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

/// Whether the Job limits failures per index (`spec.backoffLimitPerIndex`, GA in 1.33).
pub fn has_backoff_limit_per_index(job: &Job) -> bool {
    spec(job).backoff_limit_per_index.is_some()
}

/// An annotation's value as a count: 0 when absent, not a number, negative or past `i32`
/// (upstream `parseInt32`).
fn count_annotation(pod: &StoredPod, key: &str) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|v| (0..=i64::from(i32::MAX)).contains(v))
        .map_or(0, |v| v as i32)
}

/// The failures of the pod's index counted before it (upstream `getIndexFailureCount`).
pub fn index_failure_count(pod: &StoredPod) -> i32 {
    count_annotation(pod, INDEX_FAILURE_COUNT_ANNOTATION)
}

/// Counted and ignored failures of the pod's index before it (upstream
/// `getIndexAbsoluteFailureCount`).
pub fn index_absolute_failure_count(pod: &StoredPod) -> i32 {
    index_failure_count(pod).saturating_add(count_annotation(
        pod,
        INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
    ))
}

/// Why a failed pod fails its index (upstream `isIndexFailed`): a FailIndex rule matched, or
/// its failure counts and the index had already failed `backoffLimitPerIndex` times.
pub fn index_failed_by(job: &Job, pod: &StoredPod) -> Option<IndexFailure> {
    if !is_pod_failed(pod, job) {
        return None;
    }
    let m = match_pod_failure_policy(spec(job).pod_failure_policy.as_ref(), pod);
    if m.action.as_deref() == Some("FailIndex") {
        return Some(IndexFailure::FailIndexRule);
    }
    let limit = spec(job).backoff_limit_per_index.unwrap_or(0);
    (m.count_failed && index_failure_count(pod) >= limit).then_some(IndexFailure::BackoffLimit)
}

/// What failed an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexFailure {
    /// A pod failure policy rule with action FailIndex matched.
    FailIndexRule,
    /// The index failed more than `backoffLimitPerIndex` times.
    BackoffLimit,
}

/// The failed indexes (upstream `calculateFailedIndexes`): those of `status.failedIndexes` and
/// the indexes of pods not counted yet (they have the tracking finalizer) that fail their index.
/// Also returns the newly failed indexes with the pod that failed each and why.
pub fn failed_indexes(
    job: &Job,
    pods: &[Arc<StoredPod>],
    completions: i64,
    has_finalizer: impl Fn(&StoredPod) -> bool,
) -> (OrderedIntervals, Vec<(i64, Arc<StoredPod>, IndexFailure)>) {
    let stored = job
        .status
        .as_ref()
        .and_then(|s| s.failed_indexes.as_deref());
    let prev = OrderedIntervals::parse(stored.unwrap_or(""), completions);
    let mut new: BTreeMap<i64, (Arc<StoredPod>, IndexFailure)> = BTreeMap::new();
    for p in pods {
        let Some(ix) = completion_index(p).filter(|&ix| ix < completions) else {
            continue;
        };
        if !has_finalizer(p) || new.contains_key(&ix) {
            continue;
        }
        if let Some(why) = index_failed_by(job, p) {
            new.insert(ix, (p.clone(), why));
        }
    }
    let indexes: Vec<i64> = new.keys().copied().collect();
    let all = prev.with_ordered_indexes(&indexes);
    let fresh = new
        .into_iter()
        .filter(|(ix, _)| !prev.has(*ix))
        .map(|(ix, (p, why))| (ix, p, why))
        .collect();
    (all, fresh)
}

/// The last failed pod of each index that is neither succeeded, failed nor running again
/// (upstream `getPodsWithDelayedDeletionPerIndex`): its tracking finalizer stays until the
/// replacement is created with the index's failure count. `valid` are the pods with the
/// finalizer and a valid index, not counted yet.
pub fn pods_with_delayed_deletion(
    job: &Job,
    valid: &[&Arc<StoredPod>],
    active: &[Arc<StoredPod>],
    succeeded: &OrderedIntervals,
    failed: &OrderedIntervals,
) -> BTreeMap<i64, Arc<StoredPod>> {
    let active: BTreeSet<i64> = active.iter().filter_map(|p| completion_index(p)).collect();
    let mut out: BTreeMap<i64, Arc<StoredPod>> = BTreeMap::new();
    for p in valid.iter().filter(|p| is_pod_failed(p, job)) {
        let Some(ix) = completion_index(p) else {
            continue;
        };
        if succeeded.has(ix) || failed.has(ix) || active.contains(&ix) {
            continue;
        }
        let newer = out.get(&ix).is_none_or(|last| {
            index_absolute_failure_count(last) <= index_absolute_failure_count(p)
                && finished_time(p) >= finished_time(last)
        });
        if newer {
            out.insert(ix, Arc::clone(p));
        }
    }
    out
}

/// The failure counts of the pod replacing `replaced` in its index (upstream
/// `getNewIndexFailureCounts`): its counts plus its own failure, counted or ignored by the pod
/// failure policy. (0, 0) for an index's first pod.
pub fn new_index_failure_counts(job: &Job, replaced: Option<&StoredPod>) -> (i32, i32) {
    let Some(pod) = replaced else {
        return (0, 0);
    };
    let (mut counted, mut ignored) = (
        index_failure_count(pod),
        count_annotation(pod, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION),
    );
    if match_pod_failure_policy(spec(job).pod_failure_policy.as_ref(), pod).count_failed {
        counted = counted.saturating_add(1);
    } else {
        ignored = ignored.saturating_add(1);
    }
    (counted, ignored)
}

/// Writes the index failure counts of the pod replacing `replaced` into a pod template.
pub fn add_index_failure_count_annotations(
    template: &mut PodTemplateSpec,
    job: &Job,
    replaced: Option<&StoredPod>,
) {
    let (counted, ignored) = new_index_failure_counts(job, replaced);
    let annotations = template
        .metadata
        .get_or_insert_with(Default::default)
        .annotations
        .get_or_insert_with(Default::default);
    annotations.insert(INDEX_FAILURE_COUNT_ANNOTATION.into(), counted.to_string());
    if ignored > 0 {
        annotations.insert(
            INDEX_IGNORED_FAILURE_COUNT_ANNOTATION.into(),
            ignored.to_string(),
        );
    }
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

    fn indexed(name: &str, ix: &str) -> StoredPod {
        PodBuilder::new(name)
            .annotation(COMPLETION_INDEX_ANNOTATION, ix)
            .obj()
            .into()
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
            let got = first_pending_indexes(&active, &iv(succeeded), None, *count, *completions);
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
        let names = |v: &[&StoredPod]| {
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

    #[test]
    fn index_failure_counts_parse_as_upstream() {
        let cases: &[(&str, Option<&str>, i32)] = &[
            ("No annotation", None, 0),
            ("A valid value", Some("2"), 2),
            ("The largest int32", Some("2147483647"), i32::MAX),
            ("Too large a value", Some("2147483648"), 0),
            ("A negative value", Some("-1"), 0),
            ("Not a number", Some("abc"), 0),
        ];
        for (name, value, want) in cases {
            let mut b = PodBuilder::new("p");
            if let Some(v) = value {
                b = b.annotation(INDEX_FAILURE_COUNT_ANNOTATION, v);
            }
            assert_eq!(index_failure_count(&b.obj().into()), *want, "{name}");
        }
    }

    #[test]
    fn failed_indexes_merge_with_succeeded_and_active_ones() {
        let cases: &[(&str, Ivs, Ivs, Ivs)] = &[
            ("Into nothing", &[], &[(1, 2)], &[(1, 2)]),
            ("Adjacent intervals join", &[(0, 1)], &[(2, 3)], &[(0, 3)]),
            (
                "Interleaved",
                &[(0, 0), (4, 5)],
                &[(2, 2), (7, 8)],
                &[(0, 0), (2, 2), (4, 5), (7, 8)],
            ),
            ("Overlapping", &[(0, 4)], &[(2, 6)], &[(0, 6)]),
        ];
        for (name, a, b, want) in cases {
            assert_eq!(iv(a).merge(&iv(b)), iv(want), "{name}");
        }
        let a = indexed("a", "1");
        let got = first_pending_indexes(&[&a], &iv(&[(0, 0)]), Some(&iv(&[(2, 3)])), 3, 6);
        assert_eq!(got, [4, 5], "Failed indexes are not pending");
    }

    #[test]
    fn a_replacement_counts_the_failure_of_the_pod_it_replaces() {
        use k8s_openapi::api::batch::v1::JobSpec;
        let job = Job {
            spec: Some(JobSpec {
                backoff_limit_per_index: Some(2),
                ..Default::default()
            }),
            ..Default::default()
        };
        let first: StoredPod = PodBuilder::new("p").phase("Failed").obj().into();
        let later: StoredPod = PodBuilder::new("p")
            .phase("Failed")
            .annotation(INDEX_FAILURE_COUNT_ANNOTATION, "1")
            .annotation(INDEX_IGNORED_FAILURE_COUNT_ANNOTATION, "2")
            .obj()
            .into();
        let cases: &[(&str, Option<&StoredPod>, (i32, i32))] = &[
            ("The first pod of an index", None, (0, 0)),
            ("Replacing a first failure", Some(&first), (1, 0)),
            ("Ignored failures are carried", Some(&later), (2, 2)),
        ];
        for (name, replaced, want) in cases {
            assert_eq!(new_index_failure_counts(&job, *replaced), *want, "{name}");
        }
        assert_eq!(index_absolute_failure_count(&later), 3);
        assert_eq!(
            index_failed_by(&job, &later),
            None,
            "1 failure before it is within the limit"
        );
        let at_limit: StoredPod = PodBuilder::new("p")
            .phase("Failed")
            .annotation(INDEX_FAILURE_COUNT_ANNOTATION, "2")
            .obj()
            .into();
        assert_eq!(
            index_failed_by(&job, &at_limit),
            Some(IndexFailure::BackoffLimit)
        );
    }
}

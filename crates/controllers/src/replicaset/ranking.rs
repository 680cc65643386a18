//! Which pods a ReplicaSet deletes first when it scales down: upstream `getPodsToDelete` with the
//! `ActivePodsWithRanks` comparator (`pkg/controller/controller_utils.go`), as of v1.34, where
//! `LogarithmicScaleDown` is GA and always on.
//!
//! The comparator, first separating rule wins ("deleted first" in brackets):
//!
//! 1. one pod unassigned [the unassigned one];
//! 2. phase Pending < Unknown < Running [lower];
//! 3. Ready differs [the not-ready one];
//! 4. with the `PodDeletionCost` gate, deletion costs differ [the lower cost];
//! 5. ranks (active related pods on the pod's node) differ [the higher rank];
//! 6. both ready and ready times differ [the more recently ready, compared in log2 buckets of
//!    the time since; equal buckets are decided by UID and nothing later is consulted];
//! 7. max container restarts differ [more restarts];
//! 8. creation times differ [the newer, in log2 buckets, UID for equal buckets].

use kubeplane_api::{CompactTime, StoredPod};
use rustc_hash::FxHashMap;
use std::cmp::Ordering;
use std::sync::Arc;

use jiff::Timestamp;
use serde_json::{json, Value};

use crate::controller_utils::{
    deletion_cost, is_pod_active, is_pod_ready, max_container_restarts, pod_node, pod_phase,
    pod_phase_ordinal, pod_ready_time,
};

/// Everything the comparator looks at, computed once per pod; the strings are borrowed from
/// the pod (a scale-down ranks thousands of pods, several times over).
#[derive(Clone, Debug)]
pub struct PodSortKey<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub node: &'a str,
    pub phase: &'a str,
    pub phase_ordinal: u8,
    pub ready: bool,
    /// The parsed deletion cost (0 when missing or invalid).
    pub deletion_cost: i32,
    /// Active related pods on the same node (upstream's "rank").
    pub pods_on_node: usize,
    /// `lastTransitionTime` of a True Ready condition; `None` is Go's zero time.
    pub ready_time: Option<Timestamp>,
    pub restarts: i32,
    /// `None` is Go's zero time.
    pub created: Option<Timestamp>,
}

impl<'a> PodSortKey<'a> {
    pub fn new(pod: &'a StoredPod, pods_on_node: usize) -> PodSortKey<'a> {
        PodSortKey::with_facts(pod, &SortFacts::of(pod), pods_on_node)
    }

    /// The key of a pod whose [`SortFacts`] were computed before.
    pub fn with_facts(
        pod: &'a StoredPod,
        facts: &SortFacts,
        pods_on_node: usize,
    ) -> PodSortKey<'a> {
        PodSortKey {
            namespace: pod.metadata.namespace.as_deref().unwrap_or_default(),
            name: pod.metadata.name.as_deref().unwrap_or_default(),
            uid: pod.metadata.uid.as_deref().unwrap_or_default(),
            node: pod_node(pod),
            phase: pod_phase(pod),
            phase_ordinal: facts.phase_ordinal,
            ready: facts.ready,
            deletion_cost: facts.deletion_cost,
            pods_on_node,
            ready_time: facts.ready_time(),
            restarts: facts.restarts,
            created: facts.created(),
        }
    }
}

/// What the comparator reads of a pod apart from its names and rank: the fields of
/// [`PodSortKey`] that take looking through conditions, annotations and container statuses.
/// A controller can compute them once per pod version instead of once per scale-down.
///
/// The ReplicaSet controller's cache keeps one per cached pod, so the two times are held in
/// 12 bytes each ([`CompactTime`]): 36 bytes where two `Option<Timestamp>` made 64, and the
/// cached record fits 64 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortFacts {
    pub phase_ordinal: u8,
    /// [`is_pod_ready`].
    pub ready: bool,
    /// The parsed deletion cost (0 when missing or invalid).
    pub deletion_cost: i32,
    /// [`pod_ready_time`]: `lastTransitionTime` of a True Ready condition.
    ready_time: CompactTime,
    pub restarts: i32,
    /// `None` is Go's zero time.
    created: CompactTime,
}

impl SortFacts {
    pub fn of(pod: &StoredPod) -> SortFacts {
        let ready = is_pod_ready(pod);
        SortFacts {
            phase_ordinal: pod_phase_ordinal(pod_phase(pod)),
            ready,
            deletion_cost: deletion_cost(pod.metadata.annotations.as_ref()).unwrap_or(0),
            ready_time: CompactTime::new(if ready { pod_ready_time(pod) } else { None }),
            restarts: max_container_restarts(pod),
            created: CompactTime::new(pod.metadata.creation_timestamp.as_ref().map(|t| t.0)),
        }
    }

    /// [`pod_ready_time`] when ready, else `None`.
    pub fn ready_time(&self) -> Option<Timestamp> {
        self.ready_time.get()
    }

    /// `metadata.creationTimestamp`.
    pub fn created(&self) -> Option<Timestamp> {
        self.created.get()
    }
}

/// A pod to rank, with its [`SortFacts`] if the caller computed them before.
pub trait Candidate {
    fn pod(&self) -> &StoredPod;

    fn facts(&self) -> SortFacts {
        SortFacts::of(self.pod())
    }
}

impl Candidate for Arc<StoredPod> {
    fn pod(&self) -> &StoredPod {
        self
    }
}

impl<T: Candidate> Candidate for &T {
    fn pod(&self) -> &StoredPod {
        (**self).pod()
    }

    fn facts(&self) -> SortFacts {
        (**self).facts()
    }
}

/// The comparator's context: the instant of the sort and the gates it honours.
#[derive(Copy, Clone, Debug)]
pub struct RankContext {
    /// Upstream `ActivePodsWithRanks.Now`; `None` is Go's zero time (plain mode).
    pub now: Option<Timestamp>,
    pub pod_deletion_cost: bool,
}

/// `floor(log2(now - t))` in nanoseconds, -1 when `t` is not before `now` (upstream
/// `logarithmicRankDiff` computes this with float64 `math.Log2` and truncation).
pub fn log2_bucket(t: Timestamp, now: Timestamp) -> i64 {
    let d = now.as_nanosecond() - t.as_nanosecond();
    if d > 0 {
        (d as f64).log2() as i64
    } else {
        -1
    }
}

/// The rule that separated two pods, described from the point of view of the pod that goes
/// first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rule<'a> {
    Unassigned,
    Phase(&'a str, &'a str),
    NotReady,
    DeletionCost(i32, i32),
    PodsOnNode(usize, usize),
    ReadyTimeZero,
    ReadyMoreRecently(Option<(i64, i64)>),
    ReadyBucketUid(i64, &'a str, &'a str),
    Restarts(i32, i32),
    CreatedZero,
    CreatedMoreRecently(Option<(i64, i64)>),
    CreatedBucketUid(i64, &'a str, &'a str),
}

impl std::fmt::Display for Rule<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let phase = |p: &str| {
            if p.is_empty() {
                "\"\"".to_string()
            } else {
                p.to_string()
            }
        };
        match self {
            Rule::Unassigned => write!(f, "unassigned"),
            Rule::Phase(a, b) => write!(f, "phase {} < {}", phase(a), phase(b)),
            Rule::NotReady => write!(f, "not ready"),
            Rule::DeletionCost(a, b) => write!(f, "pod-deletion-cost {a} < {b}"),
            Rule::PodsOnNode(a, b) => write!(f, "more related pods on its node ({a} > {b})"),
            Rule::ReadyTimeZero => write!(f, "ready without a transition time"),
            Rule::ReadyMoreRecently(None) => write!(f, "ready more recently"),
            Rule::ReadyMoreRecently(Some((a, b))) => {
                write!(f, "ready more recently (log2 bucket {a} < {b})")
            }
            Rule::ReadyBucketUid(k, a, b) => {
                write!(f, "same ready-time log2 bucket {k}, uid {a} < {b}")
            }
            Rule::Restarts(a, b) => write!(f, "more restarts ({a} > {b})"),
            Rule::CreatedZero => write!(f, "no creation timestamp"),
            Rule::CreatedMoreRecently(None) => write!(f, "created more recently"),
            Rule::CreatedMoreRecently(Some((a, b))) => {
                write!(f, "created more recently (log2 bucket {a} < {b})")
            }
            Rule::CreatedBucketUid(k, a, b) => {
                write!(f, "same creation log2 bucket {k}, uid {a} < {b}")
            }
        }
    }
}

/// Which of two pods goes first, and by which rule. `Less` means `a` is deleted before `b`.
/// `Equal` means no rule separates them (upstream `Less` is false both ways).
pub fn compare<'a>(
    a: &PodSortKey<'a>,
    b: &PodSortKey<'a>,
    ctx: &RankContext,
) -> (Ordering, Option<Rule<'a>>) {
    use Ordering::{Equal, Greater, Less};
    let decided =
        |a_first: bool, rule: Rule<'a>| (if a_first { Less } else { Greater }, Some(rule));
    // 1. Unassigned < assigned.
    if a.node.is_empty() != b.node.is_empty() {
        return decided(a.node.is_empty(), Rule::Unassigned);
    }
    // 2. Pending < Unknown < Running.
    if a.phase_ordinal != b.phase_ordinal {
        let a_first = a.phase_ordinal < b.phase_ordinal;
        let (x, y) = if a_first { (a, b) } else { (b, a) };
        return decided(a_first, Rule::Phase(x.phase, y.phase));
    }
    // 3. Not ready < ready.
    if a.ready != b.ready {
        return decided(!a.ready, Rule::NotReady);
    }
    // 4. Lower pod-deletion-cost < higher.
    if ctx.pod_deletion_cost && a.deletion_cost != b.deletion_cost {
        let a_first = a.deletion_cost < b.deletion_cost;
        let (x, y) = if a_first { (a, b) } else { (b, a) };
        return decided(
            a_first,
            Rule::DeletionCost(x.deletion_cost, y.deletion_cost),
        );
    }
    // 5. Doubled up < not doubled up.
    if a.pods_on_node != b.pods_on_node {
        let a_first = a.pods_on_node > b.pods_on_node;
        let (x, y) = if a_first { (a, b) } else { (b, a) };
        return decided(a_first, Rule::PodsOnNode(x.pods_on_node, y.pods_on_node));
    }
    // 6. Been ready for empty time < less time < more time.
    if a.ready && b.ready && a.ready_time != b.ready_time {
        if let Some(r) = time_rule(a, b, a.ready_time, b.ready_time, ctx, true) {
            return r;
        }
    }
    // 7. Higher restart counts < lower.
    if a.restarts != b.restarts {
        let a_first = a.restarts > b.restarts;
        let (x, y) = if a_first { (a, b) } else { (b, a) };
        return decided(a_first, Rule::Restarts(x.restarts, y.restarts));
    }
    // 8. Empty creation time < newer < older.
    if a.created != b.created {
        if let Some(r) = time_rule(a, b, a.created, b.created, ctx, false) {
            return r;
        }
    }
    (Equal, None)
}

/// Rules 6 and 8 for two different timestamps. `None` when the UIDs are equal too (upstream
/// `Less` is false both ways and the comparison ends there).
fn time_rule<'a>(
    a: &PodSortKey<'a>,
    b: &PodSortKey<'a>,
    ta: Option<Timestamp>,
    tb: Option<Timestamp>,
    ctx: &RankContext,
    ready: bool,
) -> Option<(Ordering, Option<Rule<'a>>)> {
    use Ordering::{Equal, Greater, Less};
    let decided =
        |a_first: bool, rule: Rule<'a>| (if a_first { Less } else { Greater }, Some(rule));
    let zero_rule = if ready {
        Rule::ReadyTimeZero
    } else {
        Rule::CreatedZero
    };
    let recent = |buckets| {
        if ready {
            Rule::ReadyMoreRecently(buckets)
        } else {
            Rule::CreatedMoreRecently(buckets)
        }
    };
    let (Some(ta), Some(tb)) = (ta, tb) else {
        // afterOrZero: a zero time goes first.
        return Some(decided(ta.is_none(), zero_rule));
    };
    let Some(now) = ctx.now else {
        return Some(decided(ta > tb, recent(None)));
    };
    let (ka, kb) = (log2_bucket(ta, now), log2_bucket(tb, now));
    if ka == kb {
        // Upstream returns `UID_i < UID_j` here and never consults a later rule.
        return match a.uid.cmp(b.uid) {
            Equal => Some((Equal, None)),
            o => {
                let a_first = o == Less;
                let (x, y) = if a_first { (a, b) } else { (b, a) };
                let rule = if ready {
                    Rule::ReadyBucketUid(ka, x.uid, y.uid)
                } else {
                    Rule::CreatedBucketUid(ka, x.uid, y.uid)
                };
                Some(decided(a_first, rule))
            }
        };
    }
    let a_first = ka < kb;
    let pair = if a_first { (ka, kb) } else { (kb, ka) };
    Some(decided(a_first, recent(Some(pair))))
}

/// Upstream `Less(i, j)`.
pub fn less(a: &PodSortKey, b: &PodSortKey, ctx: &RankContext) -> bool {
    compare(a, b, ctx).0 == Ordering::Less
}

/// A stable merge sort driven by a `less` function. Unlike `slice::sort_by` it never panics when
/// `less` is not a strict weak order, which the upstream comparator is not in every case (the
/// UID tie-break of rule 6 can contradict rule 7 for a third pod).
pub fn merge_sort_by_less<T: Copy>(v: &mut Vec<T>, less: &impl Fn(&T, &T) -> bool) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let mut src = std::mem::take(v);
    let mut dst = src.clone();
    let mut width = 1;
    while width < n {
        merge_pass(&src, &mut dst, width, less);
        std::mem::swap(&mut src, &mut dst);
        width *= 2;
    }
    *v = src;
}

fn merge_pass<T: Copy>(src: &[T], dst: &mut [T], width: usize, less: &impl Fn(&T, &T) -> bool) {
    let n = src.len();
    let mut start = 0;
    while start < n {
        let mid = (start + width).min(n);
        let end = (start + 2 * width).min(n);
        let (mut i, mut j) = (start, mid);
        for slot in &mut dst[start..end] {
            // Take from the right run only when it is strictly less: stability.
            if j < end && (i >= mid || less(&src[j], &src[i])) {
                *slot = src[j];
                j += 1;
            } else {
                *slot = src[i];
                i += 1;
            }
        }
        start = end;
    }
}

/// The outcome of a scale-down choice, with what `--explain` reports about it.
#[derive(Clone, Debug)]
pub struct ScaleDownChoice<'a> {
    /// The pods to delete, first to go first.
    pub victims: Vec<&'a StoredPod>,
    /// Whether the candidates were sorted (false when every pod goes).
    pub sorted: bool,
    /// The candidates' sort keys in input order. Only `--explain` and tests read them in the
    /// order of the choice, so that order is kept as indices rather than a reordered copy.
    keys: Vec<PodSortKey<'a>>,
    /// Indices into `keys`, in the order the choice put the candidates.
    order: Vec<usize>,
}

impl<'a> ScaleDownChoice<'a> {
    /// Every candidate in the order the choice put them (input order when all go).
    pub fn ordered(&self) -> impl Iterator<Item = &PodSortKey<'a>> + '_ {
        self.order.iter().filter_map(|&i| self.keys.get(i))
    }
}

/// Active related pods per node name (the empty name included).
pub type PodsOnNode<'a> = FxHashMap<&'a str, usize>;

/// Counts active related pods per node name (the empty name included).
pub fn pods_per_node<'a>(related: impl IntoIterator<Item = &'a StoredPod>) -> PodsOnNode<'a> {
    let mut counts = PodsOnNode::default();
    for p in related {
        if is_pod_active(p) {
            *counts.entry(pod_node(p)).or_insert(0) += 1;
        }
    }
    counts
}

/// Upstream `getPodsToDelete(filtered, related, diff)`: when fewer than all pods go, rank them by
/// active related pods on the same node and sort; otherwise keep the input order.
pub fn get_pods_to_delete<'a>(
    filtered: &'a [Arc<StoredPod>],
    related: &[Arc<StoredPod>],
    diff: usize,
    ctx: &RankContext,
) -> ScaleDownChoice<'a> {
    let counts = pods_per_node(related.iter().map(|p| p.as_ref()));
    get_pods_to_delete_with_counts(filtered, &counts, diff, ctx)
}

/// [`get_pods_to_delete`] given what it reads of the related pods: the active ones per node name
/// ([`pods_per_node`]). A controller can count them without gathering the related pods.
pub fn get_pods_to_delete_with_counts<'a, P: Candidate>(
    filtered: &'a [P],
    pods_on_node: &PodsOnNode<'_>,
    diff: usize,
    ctx: &RankContext,
) -> ScaleDownChoice<'a> {
    let diff = diff.min(filtered.len());
    let keys: Vec<PodSortKey<'a>> = filtered
        .iter()
        .map(|p| {
            let pod = p.pod();
            let rank = pods_on_node.get(pod_node(pod)).copied().unwrap_or(0);
            PodSortKey::with_facts(pod, &p.facts(), rank)
        })
        .collect();
    let mut order: Vec<usize> = (0..keys.len()).collect();
    let sorted = diff < keys.len();
    if sorted {
        merge_sort_by_less(&mut order, &|&a, &b| less(&keys[a], &keys[b], ctx));
    }
    ScaleDownChoice {
        victims: order[..diff]
            .iter()
            .filter_map(|&i| filtered.get(i))
            .map(Candidate::pod)
            .collect(),
        sorted,
        keys,
        order,
    }
}

fn ts_json(t: Option<Timestamp>) -> Value {
    match t {
        Some(t) => Value::String(
            jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", t).unwrap_or_else(|_| t.to_string()),
        ),
        None => Value::Null,
    }
}

/// The `ScaleDownDecision` explanation record of one choice.
pub fn explain_record(
    time_secs: f64,
    namespace: &str,
    name: &str,
    choice: &ScaleDownChoice,
    n_victims: usize,
    ctx: &RankContext,
) -> Value {
    let key = |k: &PodSortKey| format!("{}/{}", k.namespace, k.name);
    let bucket = |t: Option<Timestamp>| match (t, ctx.now) {
        (Some(t), Some(now)) => json!(log2_bucket(t, now)),
        _ => Value::Null,
    };
    let ordered: Vec<&PodSortKey> = choice.ordered().collect();
    let n_victims = n_victims.min(ordered.len());
    let candidates: Vec<Value> = ordered
        .iter()
        .enumerate()
        .map(|(i, k)| {
            json!({
                "pod": key(k),
                "node": if k.node.is_empty() { Value::Null } else { json!(k.node) },
                "rank": i,
                "phase": k.phase,
                "ready": k.ready,
                "deletionCost": k.deletion_cost,
                "podsOnNode": k.pods_on_node,
                "readyTime": ts_json(k.ready_time),
                "readyBucket": bucket(k.ready_time),
                "restarts": k.restarts,
                "creationTimestamp": ts_json(k.created),
                "creationBucket": bucket(k.created),
                "uid": k.uid,
            })
        })
        .collect();
    let victims: Vec<Value> = ordered[..n_victims].iter().map(|k| json!(key(k))).collect();
    let mut why = serde_json::Map::new();
    let survivor = ordered.get(n_victims).copied();
    for &v in &ordered[..n_victims] {
        let reason = match survivor {
            None => "every pod is deleted (input order, no sort)".to_string(),
            Some(s) => match compare(v, s, ctx) {
                (Ordering::Less, Some(rule)) => rule.to_string(),
                _ => format!(
                    "no rule puts {} after {}; placed by sort order",
                    key(v),
                    key(s)
                ),
            },
        };
        why.insert(key(v), Value::String(reason));
    }
    json!({
        "time": time_secs,
        "kind": "ScaleDownDecision",
        "namespace": namespace,
        "name": name,
        "podDeletionCost": ctx.pod_deletion_cost,
        "sorted": choice.sorted,
        "candidates": candidates,
        "victims": victims,
        "firstSurvivor": survivor.map(|s| json!(key(s))).unwrap_or(Value::Null),
        "why": Value::Object(why),
    })
}

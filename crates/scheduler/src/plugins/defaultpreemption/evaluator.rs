//! The preemption evaluator (upstream `framework/preemption/preemption.go` and the
//! DefaultPreemption methods it calls): eligibility, candidates by dry run, victim selection
//! with PodDisruptionBudgets, the choice of one node, and the evictions.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kubeplane_api::{Client, Kind, Object};
use kubeplane_core::labels::{from_optional, Selector};

use crate::framework::{
    Code, CycleState, NodeInfo, NominatingMode, PodInfo, PostFilterInput, PostFilterResult,
    PreemptionCandidateTrace, PreemptionTrace, Status,
};
use crate::schedule_one::{Diagnosis, FitError};

use super::victims::VictimSearch;
use super::{
    clear_nominated_node_name, pod_terminating_by_preemption, preempt_pod, DefaultPreemption,
    PendingPreemption, REASON_NOT_ELIGIBLE_NEVER, REASON_NOT_ELIGIBLE_TERMINATING,
    REASON_NOT_HELPFUL,
};

/// A node where the preemptor would fit after evicting `victims`.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The node's place in the snapshot's node list.
    pub place: usize,
    /// Most important first.
    pub victims: Vec<Arc<PodInfo>>,
    pub num_pdb_violations: i64,
}

/// A PodDisruptionBudget as preemption reads it.
#[derive(Clone, Debug)]
pub struct PdbInfo {
    pub namespace: String,
    /// `None` when the selector does not parse (it then matches no pod).
    pub selector: Option<Selector>,
    pub disruptions_allowed: i32,
    /// `status.disruptedPods`: pods already counted as disrupted.
    pub disrupted_pods: BTreeSet<String>,
}

impl PdbInfo {
    pub fn from_pdb(pdb: &PodDisruptionBudget) -> PdbInfo {
        let status = pdb.status.as_ref();
        PdbInfo {
            namespace: pdb
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            selector: from_optional(pdb.spec.as_ref().and_then(|s| s.selector.as_ref())).ok(),
            disruptions_allowed: status.map_or(0, |s| s.disruptions_allowed),
            disrupted_pods: status
                .and_then(|s| s.disrupted_pods.as_ref())
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
        }
    }
}

/// How many candidates to find among `n` potential nodes: `n × percentage / 100`, at least
/// `absolute`, at most `n` (upstream `calculateNumCandidates`).
pub fn calculate_num_candidates(n: i32, percentage: i32, absolute: i32) -> i32 {
    let mut c = n * percentage / 100;
    if c < absolute {
        c = absolute;
    }
    if c > n {
        c = n;
    }
    c
}

/// The pod's start time (`status.startTime`), or `now` for a pod that has not started.
fn start_time(pod: &PodInfo, now: jiff::Timestamp) -> jiff::Timestamp {
    pod.start_time().unwrap_or(now)
}

/// Whether `a` is more important than `b`: higher priority, or equal priority and started
/// earlier (upstream `MoreImportantPod`).
pub fn more_important_pod(a: &PodInfo, b: &PodInfo, now: jiff::Timestamp) -> bool {
    if a.priority != b.priority {
        return a.priority > b.priority;
    }
    start_time(a, now) < start_time(b, now)
}

/// Sorts by decreasing importance; equal pods keep their order. One comparison of (priority
/// descending, start time ascending) orders as [`more_important_pod`] both ways would.
pub(super) fn sort_by_importance<P: AsRef<PodInfo>>(pods: &mut [P], now: jiff::Timestamp) {
    pods.sort_by(|a, b| importance_order(a.as_ref(), b.as_ref(), now));
}

/// `Less` when `a` is more important than `b` ([`more_important_pod`]), `Greater` when `b`
/// is, else `Equal`.
fn importance_order(a: &PodInfo, b: &PodInfo, now: jiff::Timestamp) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| start_time(a, now).cmp(&start_time(b, now)))
}

/// Splits pods (in order) into those whose eviction would exceed a PodDisruptionBudget
/// (counting the earlier pods' evictions) and the others (upstream
/// `filterPodsWithPDBViolation`). A budget with an empty selector matches nothing.
pub fn filter_pods_with_pdb_violation(
    pods: &[Arc<PodInfo>],
    pdbs: &[PdbInfo],
) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let pods: Vec<&Arc<PodInfo>> = pods.iter().collect();
    let (violating, non_violating) = split_by_pdb(&pods, pdbs);
    let owned = |v: Vec<&Arc<PodInfo>>| v.into_iter().cloned().collect();
    (owned(violating), owned(non_violating))
}

/// [`filter_pods_with_pdb_violation`] on references.
pub(super) fn split_by_pdb<'p>(
    pods: &[&'p Arc<PodInfo>],
    pdbs: &[PdbInfo],
) -> (Vec<&'p Arc<PodInfo>>, Vec<&'p Arc<PodInfo>>) {
    let mut violating = Vec::new();
    let mut non_violating = Vec::new();
    if pdbs.is_empty() {
        non_violating.extend_from_slice(pods);
        return (violating, non_violating);
    }
    let mut allowed: Vec<i32> = pdbs.iter().map(|p| p.disruptions_allowed).collect();
    for &pod in pods {
        let mut violated = false;
        if !pod.labels().is_empty() {
            for (i, pdb) in pdbs.iter().enumerate() {
                if pdb.namespace != pod.namespace() {
                    continue;
                }
                let Some(sel) = &pdb.selector else { continue };
                if sel.is_empty() || !sel.matches(pod.labels()) {
                    continue;
                }
                if pdb.disrupted_pods.contains(pod.name()) {
                    continue;
                }
                allowed[i] -= 1;
                if allowed[i] < 0 {
                    violated = true;
                }
            }
        }
        if violated {
            violating.push(pod);
        } else {
            non_violating.push(pod);
        }
    }
    (violating, non_violating)
}

/// The earliest start time among the victims with the highest priority.
fn earliest_start_time_of_highest(victims: &[Arc<PodInfo>], now: jiff::Timestamp) -> i128 {
    let Some(first) = victims.first() else {
        return i128::MIN;
    };
    let mut earliest = start_time(first, now);
    let mut max_priority = first.priority;
    for p in victims {
        if p.priority == max_priority {
            let t = start_time(p, now);
            if t < earliest {
                earliest = t;
            }
        } else if p.priority > max_priority {
            max_priority = p.priority;
            earliest = start_time(p, now);
        }
    }
    earliest.as_nanosecond()
}

/// Picks one candidate (upstream `pickOneNodeForPreemption`): fewest PDB violations, then the
/// lowest highest-priority victim, the smallest sum of priorities (each offset by 2³¹), the
/// fewest victims, the latest earliest start time of the highest-priority victims; then the
/// first remaining. Returns the index of the chosen candidate.
pub fn pick_one_node_for_preemption(
    candidates: &[Candidate],
    now: jiff::Timestamp,
) -> Option<usize> {
    pick_one_node_for_preemption_explained(candidates, now).map(|(i, _)| i)
}

/// The criteria of [`pick_one_node_for_preemption`], in order, as the explain record names them.
pub const PICK_ONE_CRITERIA: [&str; 5] = [
    "fewest PodDisruptionBudget violations",
    "lowest priority of its most important victim",
    "smallest sum of victim priorities",
    "fewest victims",
    "latest start time of its most important victims",
];

/// [`pick_one_node_for_preemption`] with the reason the chosen candidate won: the criterion
/// that left it alone, or that every criterion tied and it was found first.
pub fn pick_one_node_for_preemption_explained(
    candidates: &[Candidate],
    now: jiff::Timestamp,
) -> Option<(usize, String)> {
    if candidates.is_empty() {
        return None;
    }
    if candidates.len() == 1 {
        return Some((0, "the only candidate".to_string()));
    }
    let mut remaining: Vec<usize> = (0..candidates.len()).collect();
    for k in 0..PICK_ONE_CRITERIA.len() {
        let selected = match k {
            0 => best_of(&remaining, candidates, |c| -(c.num_pdb_violations as i128)),
            1 => best_of(&remaining, candidates, |c| {
                -(c.victims.first().map_or(0, |p| p.priority) as i128)
            }),
            2 => best_of(&remaining, candidates, |c| {
                -c.victims
                    .iter()
                    .map(|p| p.priority as i128 + (i32::MAX as i128 + 1))
                    .sum::<i128>()
            }),
            3 => best_of(&remaining, candidates, |c| -(c.victims.len() as i128)),
            _ => best_of(&remaining, candidates, |c| {
                earliest_start_time_of_highest(&c.victims, now)
            }),
        };
        if selected.len() == 1 {
            let tied = if k == 0 {
                String::new()
            } else {
                format!(
                    " (tied with {} other(s) on: {})",
                    remaining.len() - 1,
                    PICK_ONE_CRITERIA[..k].join(", ")
                )
            };
            return Some((selected[0], format!("{}{tied}", PICK_ONE_CRITERIA[k])));
        }
        remaining = selected;
    }
    remaining.first().map(|&i| {
        (
            i,
            format!(
                "tied with {} other(s) on every criterion; the first candidate found",
                remaining.len() - 1
            ),
        )
    })
}

/// The candidates of `remaining` (in order) with the highest `score`.
fn best_of(
    remaining: &[usize],
    candidates: &[Candidate],
    score: impl Fn(&Candidate) -> i128,
) -> Vec<usize> {
    let mut best = i128::MIN;
    let mut selected = Vec::new();
    for &i in remaining {
        let s = score(&candidates[i]);
        if s > best {
            best = s;
            selected.clear();
        }
        if s == best {
            selected.push(i);
        }
    }
    selected
}

/// What a dry run on one node found.
enum DryRun {
    Candidate(Candidate),
    Failed(Status),
}

impl DefaultPreemption {
    /// Upstream `Evaluator.Preempt`, before the "preemption: " prefix.
    pub(super) fn preempt(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        input: &PostFilterInput<'_>,
        client: &mut dyn Client,
    ) -> (Option<PostFilterResult>, Status) {
        // 0) The latest version of the preemptor.
        let Some(latest) = client.cache().get_pod(pod.namespace(), pod.name()).cloned() else {
            return (
                None,
                Status::error(format!("pods {:?} not found", pod.name())),
            );
        };
        let preemptor = Arc::new(PodInfo::new(latest));
        let now = client.clock().timestamp(input.now).0;

        // 1) Eligibility.
        if let Some(msg) = self.not_eligible_reason(&preemptor, input) {
            return (None, Status::unschedulable(msg));
        }

        // 2) Candidates.
        let snapshot = input.snapshot;
        let all = snapshot.num_nodes();
        if all == 0 {
            return (None, Status::error("no nodes available"));
        }
        let unschedulable = |place: usize| {
            let s = input.statuses.get(place).unwrap_or(input.absent_status);
            s.code == Code::Unschedulable
        };
        let potential: Vec<usize> = (0..all).filter(|&place| unschedulable(place)).collect();
        let mut node_statuses = crate::framework::NodeToStatus::default();
        let mut candidates = Vec::new();
        let mut errors = Vec::new();
        if !potential.is_empty() {
            let pdbs: Vec<PdbInfo> = client
                .cache()
                .list(Kind::PodDisruptionBudget)
                .filter_map(|o| match o {
                    Object::PodDisruptionBudget(p) => Some(PdbInfo::from_pdb(p)),
                    _ => None,
                })
                .collect();
            let n = potential.len() as i32;
            let offset = (input.random % potential.len() as u64) as usize;
            let num_candidates = self.num_candidates(n) as usize;
            let mut non_violating: Vec<Candidate> = Vec::new();
            let mut violating: Vec<Candidate> = Vec::new();
            let fwk = input.framework;
            let mut search = VictimSearch::new(fwk, state, &preemptor, &pdbs, now);
            for i in 0..potential.len() {
                let place = potential[(offset + i) % potential.len()];
                let node = &snapshot.node_infos[place];
                match Self::dry_run(&mut search, place, node, input) {
                    DryRun::Candidate(c) => {
                        let list = if c.num_pdb_violations == 0 {
                            &mut non_violating
                        } else {
                            &mut violating
                        };
                        if list.len() < num_candidates {
                            list.push(c);
                        }
                        if !non_violating.is_empty()
                            && non_violating.len() + violating.len() >= num_candidates
                        {
                            break;
                        }
                    }
                    DryRun::Failed(s) => {
                        if s.code == Code::Error {
                            errors.push(s.message());
                        }
                        node_statuses.insert(place, s);
                    }
                }
            }
            candidates = non_violating;
            candidates.extend(violating);
        }
        if let Some(trace) = input.preemption_trace {
            *trace.borrow_mut() = Some(PreemptionTrace {
                candidates: candidates
                    .iter()
                    .map(|c| PreemptionCandidateTrace {
                        node: snapshot.node_infos[c.place].name.clone(),
                        victims: c.victims.iter().map(|v| v.key()).collect(),
                        pdb_violations: c.num_pdb_violations,
                    })
                    .collect(),
                chosen: None,
                why: None,
            });
        }
        if !errors.is_empty() && candidates.is_empty() {
            let msg = if errors.len() == 1 {
                errors.remove(0)
            } else {
                format!("[{}]", errors.join(", "))
            };
            return (None, Status::error(msg));
        }
        if candidates.is_empty() {
            let fit = FitError {
                num_all_nodes: all,
                diagnosis: Diagnosis {
                    node_to_status: node_statuses,
                    absent_status: Some(Status::unresolvable(REASON_NOT_HELPFUL)),
                    ..Default::default()
                },
            };
            // Clears the pod's nomination, if it has one.
            return (
                Some(PostFilterResult {
                    nominating: NominatingMode::Override(String::new()),
                }),
                Status::unschedulable(fit.message()),
            );
        }

        // 4) The best candidate.
        let (best, why) =
            pick_one_node_for_preemption_explained(&candidates, now).unwrap_or((0, String::new()));
        let chosen = candidates.swap_remove(best);
        let chosen_node = &snapshot.node_infos[chosen.place].name;
        if let Some(trace) = input.preemption_trace {
            if let Some(t) = trace.borrow_mut().as_mut() {
                t.chosen = Some(chosen_node.clone());
                t.why = Some(why);
            }
        }

        // 5) Evict the victims and clear lower-priority nominations to the node.
        let lower_nominated: Vec<Arc<PodInfo>> = (input.nominated_pods)(chosen_node)
            .into_iter()
            .filter(|p| p.priority < preemptor.priority)
            .collect();
        let victims: Vec<Arc<PodInfo>> = chosen
            .victims
            .iter()
            .filter(|v| !(self.skip_terminating_victims && v.is_terminating()))
            .cloned()
            .collect();
        if self.async_preemption {
            if !victims.is_empty() {
                self.preempting
                    .lock()
                    .expect("preempting lock")
                    .insert(preemptor.uid().to_string());
                self.pending
                    .lock()
                    .expect("pending lock")
                    .push(PendingPreemption {
                        preemptor: preemptor.clone(),
                        node: chosen_node.clone(),
                        victims,
                        lower_nominated,
                    });
            }
        } else {
            for v in &victims {
                if let Err(e) = preempt_pod(input.now, client, &preemptor, v, chosen_node) {
                    return (None, Status::error(e.to_string()));
                }
            }
            // Not critical: a failure is ignored, as upstream.
            for np in &lower_nominated {
                let _ = clear_nominated_node_name(client, np);
            }
        }
        (
            Some(PostFilterResult {
                nominating: NominatingMode::Override(chosen_node.clone()),
            }),
            Status::success(),
        )
    }

    /// Why the pod may not preempt (upstream `PodEligibleToPreemptOthers`), or `None`.
    fn not_eligible_reason(
        &self,
        pod: &PodInfo,
        input: &PostFilterInput<'_>,
    ) -> Option<&'static str> {
        if pod.spec().preemption_policy.as_deref() == Some("Never") {
            return Some(REASON_NOT_ELIGIBLE_NEVER);
        }
        let nominated = pod.nominated_node_name()?;
        let status = input
            .snapshot
            .index
            .get(nominated)
            .and_then(|&place| input.statuses.get(place))
            .unwrap_or(input.absent_status);
        // Filters say the nominated node cannot work anyway: preempt again.
        if status.code == Code::UnschedulableAndUnresolvable {
            return None;
        }
        let node = input.snapshot.get(nominated)?;
        let terminating = node
            .pods
            .iter()
            .any(|p| p.priority < pod.priority && pod_terminating_by_preemption(&p.pod));
        terminating.then_some(REASON_NOT_ELIGIBLE_TERMINATING)
    }

    /// Dry-runs preemption on the node at `place`.
    fn dry_run(
        search: &mut VictimSearch<'_>,
        place: usize,
        node: &NodeInfo,
        input: &PostFilterInput<'_>,
    ) -> DryRun {
        let nominated = (input.nominated_pods)(&node.name);
        // The filter pass's own status on the node (not the absent nodes' one).
        let failed = input.statuses.get(place);
        match search.select_victims(node, &nominated, failed) {
            Ok((victims, violations)) if !victims.is_empty() => DryRun::Candidate(Candidate {
                place,
                victims,
                num_pdb_violations: violations,
            }),
            Ok(_) => DryRun::Failed(Status::error(format!(
                "expected at least one victim pod on node {:?}",
                node.name
            ))),
            Err(s) => DryRun::Failed(s),
        }
    }
}

//! Victim selection on one node (upstream `SelectVictimsOnNode`), done in one of two ways
//! that give the same answer.
//!
//! The general way dry-runs on a copy of the NodeInfo and of the cycle state, telling the
//! PreFilter extensions (PodTopologySpread, InterPodAffinity) about every pod it removes or
//! adds back, and re-runs every Filter plugin after each step.
//!
//! The direct way applies when no PreFilter extension runs in the cycle (the usual case: those
//! two plugins skip pods without constraints). The cycle state is then never changed by a dry
//! run, so it is read in place instead of copied; the node is copied into one scratch NodeInfo
//! reused from node to node; and once every Filter plugin passed with all lower-priority pods
//! removed, the reprieve steps re-run only the plugins whose verdict can depend on the pods on
//! the node: NodeUnschedulable, NodeName, TaintToleration and NodeAffinity look only at the
//! node itself and at the pod, which the reprieve steps do not change.
//!
//! When NodeResourcesFit is the only Filter plugin whose verdict depends on the pods (no host
//! ports: NodePorts skips), and no pod of at least the preemptor's priority is nominated to
//! the node, the direct way touches no NodeInfo at all: NodeResourcesFit reads the pods only
//! through the sum of their requests and their number
//! ([`FilterPlugin::passes_with_requests`]), so removing and adding back victims is
//! arithmetic on one `Resources`, done in the order the scratch NodeInfo would do it (the
//! sums saturate, so the order is kept). When the pod checks no scalar resource, that
//! arithmetic is on three `i64`s (cpu, memory, ephemeral-storage: [`SumsCheck`], read once per
//! search) with the same saturating steps. The pod-independent plugins run once on the node
//! itself. A node where the pod does not fit with all lower-priority pods removed takes the
//! scratch NodeInfo, for the exact status.
//!
//! That status, with every lower-priority pod removed (and the nominated pods of at least the
//! preemptor's priority added for the first of the two passes), is also found by arithmetic
//! when NodeResourcesFit is the only plugin whose verdict depends on the pods: the same sums,
//! each plugin in order, the first failure's code, plugin and message
//! ([`status_with_requests`], which the filter pass uses for a node's nominated pods). A node
//! that fails there, whether or not pods are nominated to it, takes no copy; only a node that
//! passes with relevant nominated pods takes the scratch NodeInfo for its reprieve steps.

use std::sync::Arc;

use kubeplane_core::resources::Resources;

use crate::framework::Status;
use crate::framework::{
    run_filters, CycleState, FilterPlugin, Framework, NodeInfo, PodInfo, SumsCheck,
};

use super::evaluator::{sort_by_importance, split_by_pdb, PdbInfo};
use super::{POD_INDEPENDENT_FILTERS, REASON_NO_VICTIMS};

type Filter<'a> = (&'static str, &'a dyn FilterPlugin);

/// The Filter plugins of the direct way, listed once per preemption.
struct Direct<'a> {
    /// Every Filter plugin of the cycle, in order.
    all: Vec<Filter<'a>>,
    /// The same, each with whether it looks only at the node and at the pod.
    flagged: Vec<(Filter<'a>, bool)>,
    /// Those that re-run in the reprieve steps (their verdict can depend on the pods).
    dependent: Vec<Filter<'a>>,
    /// When `dependent` is one plugin that judges by cpu, memory and ephemeral-storage sums
    /// for this pod: its check, read once per search.
    sums: Option<SumsCheck>,
}

/// Victims (most important first) and how many of them violate a PodDisruptionBudget, or the
/// status with which the node failed.
pub(super) type Victims = Result<(Vec<Arc<PodInfo>>, i64), Status>;

/// What the dry runs of one preemption attempt share.
pub(super) struct VictimSearch<'a> {
    fwk: &'a Framework,
    state: &'a CycleState,
    pod: &'a PodInfo,
    pdbs: &'a [PdbInfo],
    now: jiff::Timestamp,
    /// For the direct way: the cycle's Filter plugins. `None`: the general way.
    direct: Option<Direct<'a>>,
    /// The node being dry-run (direct way), and a second one for the nominated pods' pass.
    scratch: NodeInfo,
    with_nominated: NodeInfo,
    /// The requests of the pods on the node being dry-run by arithmetic.
    requested: Resources,
    /// The same with the relevant nominated pods added.
    with_nominated_requested: Resources,
    /// How many nodes were dry-run by arithmetic.
    pub(super) by_requests: usize,
    /// How many of those on three sums ([`VictimSearch::by_sums`]).
    pub(super) by_sums: usize,
    /// How many nodes failed by arithmetic with every lower-priority pod removed.
    pub(super) failed_by_requests: usize,
}

impl<'a> VictimSearch<'a> {
    pub(super) fn new(
        fwk: &'a Framework,
        state: &'a CycleState,
        pod: &'a PodInfo,
        pdbs: &'a [PdbInfo],
        now: jiff::Timestamp,
    ) -> VictimSearch<'a> {
        let mut search = VictimSearch::general(fwk, state, pod, pdbs, now);
        if !fwk.has_active_pre_filter_extensions(state) {
            let all = fwk.active_filters(state);
            let dependent: Vec<Filter<'a>> = all
                .iter()
                .filter(|(name, _)| !POD_INDEPENDENT_FILTERS.contains(name))
                .copied()
                .collect();
            let sums = match dependent.as_slice() {
                [(_, f)] => f.sums_check(state, pod),
                _ => None,
            };
            let flagged = all
                .iter()
                .map(|&(name, f)| ((name, f), POD_INDEPENDENT_FILTERS.contains(&name)))
                .collect();
            search.direct = Some(Direct {
                all,
                flagged,
                dependent,
                sums,
            });
        }
        search
    }

    /// A search that always takes the general way.
    pub(super) fn general(
        fwk: &'a Framework,
        state: &'a CycleState,
        pod: &'a PodInfo,
        pdbs: &'a [PdbInfo],
        now: jiff::Timestamp,
    ) -> VictimSearch<'a> {
        VictimSearch {
            fwk,
            state,
            pod,
            pdbs,
            now,
            direct: None,
            scratch: NodeInfo::default(),
            with_nominated: NodeInfo::default(),
            requested: Resources::default(),
            with_nominated_requested: Resources::default(),
            by_requests: 0,
            by_sums: 0,
            failed_by_requests: 0,
        }
    }

    /// Whether this search takes the direct way.
    #[cfg(test)]
    pub(super) fn is_direct(&self) -> bool {
        self.direct.is_some()
    }

    /// The fewest lower-priority pods to evict from `node` for the pod to fit (upstream
    /// `SelectVictimsOnNode`): remove every lower-priority pod; if the pod fits then, add them
    /// back one by one, most important first (those whose eviction would violate a
    /// PodDisruptionBudget before the others), keeping out only those without which it does
    /// not fit. `nominated` are the pods nominated to the node; `failed`, when known, the status
    /// with which the cycle's filter pass failed it: the Filter plugins before its plugin
    /// passed the node, so those of them that look only at the node and at the pod need not
    /// run again.
    pub(super) fn select_victims(
        &mut self,
        node: &NodeInfo,
        nominated: &[Arc<PodInfo>],
        failed: Option<&Status>,
    ) -> Victims {
        let pod = self.pod;
        let mut potential: Vec<&Arc<PodInfo>> = node
            .pods
            .iter()
            .filter(|p| p.priority < pod.priority)
            .collect();
        let relevant: Vec<Arc<PodInfo>> = nominated
            .iter()
            .filter(|np| np.priority >= pod.priority && np.uid() != pod.uid())
            .cloned()
            .collect();
        match self.direct.take() {
            Some(filters) => {
                // How many of the filters are known to pass the node, if independent.
                let known = failed
                    .and_then(|s| filters.all.iter().position(|(name, _)| *name == s.plugin))
                    .unwrap_or(0);
                let found = self.direct(&filters, node, &mut potential, &relevant, known);
                self.direct = Some(filters);
                found
            }
            None => self.general_way(node, &mut potential, nominated),
        }
    }

    /// The general way, on copies of the node and of the cycle state.
    fn general_way(
        &self,
        node: &NodeInfo,
        potential: &mut [&Arc<PodInfo>],
        nominated: &[Arc<PodInfo>],
    ) -> Victims {
        let (fwk, pod) = (self.fwk, self.pod);
        let mut node = node.clone();
        let mut state = self.state.clone();
        let state = &mut state;
        for p in potential.iter() {
            remove_pod(fwk, state, pod, p, &mut node)?;
        }
        if potential.is_empty() {
            return Err(Status::unresolvable(REASON_NO_VICTIMS));
        }
        let s = fwk.run_filter_plugins_with_nominated_pods(state, pod, &node, nominated);
        if !s.is_success() {
            return Err(s);
        }
        let mut reprieve = |p: &Arc<PodInfo>| -> Result<bool, Status> {
            node.add_pod(p.clone());
            let s = fwk.run_pre_filter_extension_add_pod(state, pod, p, &node);
            if !s.is_success() {
                return Err(s);
            }
            let fits = fwk
                .run_filter_plugins_with_nominated_pods(state, pod, &node, nominated)
                .is_success();
            if !fits {
                remove_pod(fwk, state, pod, p, &mut node)?;
            }
            Ok(fits)
        };
        reprieve_in_order(potential, self.pdbs, self.now, &mut reprieve)
    }

    /// The direct way: by arithmetic when the sums tell the status with every lower-priority
    /// pod removed and it is a failure, or a success without relevant nominated pods (then the
    /// reprieve steps too); otherwise on the scratch NodeInfo. The pod-independent filters
    /// among the first `known` pass the node.
    fn direct(
        &mut self,
        filters: &Direct<'a>,
        node: &NodeInfo,
        potential: &mut [&Arc<PodInfo>],
        relevant: &[Arc<PodInfo>],
        known: usize,
    ) -> Victims {
        if potential.is_empty() {
            return Err(Status::unresolvable(REASON_NO_VICTIMS));
        }
        if let (true, Some(check)) = (relevant.is_empty(), filters.sums) {
            if let Some(found) = self.by_sums(check, &filters.flagged, node, potential, known) {
                return found;
            }
        }
        self.requested.clone_from(&node.requested);
        for p in potential.iter() {
            self.requested.sub(p.requests());
        }
        if relevant.is_empty() && filters.sums.is_none() {
            if let Some(found) = self.by_requests(filters, node, potential, known) {
                return found;
            }
        }
        let removed = potential.len();
        if let Some(s) = self.all_removed(&filters.flagged, node, removed, relevant, known) {
            if !s.is_success() {
                self.failed_by_requests += 1;
                return Err(s);
            }
        }
        self.direct_way(filters, node, potential, relevant)
    }

    /// The status of the filters on `node` with `removed` lower-priority pods removed (their
    /// requests already subtracted in `self.requested`), by arithmetic: first with `relevant`
    /// (the nominated pods of at least the pod's priority) added, then, if that passed,
    /// without them, as [`filter_with_nominated`] on the scratch NodeInfo. `None` when a
    /// plugin cannot judge by requests. The pod-independent filters among the first `known`
    /// pass the node.
    fn all_removed(
        &mut self,
        flagged: &[(Filter<'a>, bool)],
        node: &NodeInfo,
        removed: usize,
        relevant: &[Arc<PodInfo>],
        known: usize,
    ) -> Option<Status> {
        let (state, pod) = (self.state, self.pod);
        let requested = &self.requested;
        let num_pods = node.pods.len() - removed;
        if !relevant.is_empty() {
            let with = &mut self.with_nominated_requested;
            with.clone_from(requested);
            for np in relevant {
                with.add(np.requests());
            }
            let n = num_pods + relevant.len();
            let s = status_with_requests(flagged, state, pod, node, with, n, known)?;
            if !s.is_success() {
                return Some(s);
            }
        }
        status_with_requests(flagged, state, pod, node, requested, num_pods, known)
    }

    /// The direct way: the scratch NodeInfo, the cycle state read in place.
    fn direct_way(
        &mut self,
        Direct { all, dependent, .. }: &Direct<'a>,
        node: &NodeInfo,
        potential: &mut [&Arc<PodInfo>],
        relevant: &[Arc<PodInfo>],
    ) -> Victims {
        let (state, pod) = (self.state, self.pod);
        copy_node_into(&mut self.scratch, node);
        for p in potential.iter() {
            self.scratch.remove_pod(p.uid());
        }
        let (scratch, with) = (&mut self.scratch, &mut self.with_nominated);
        let s = filter_with_nominated(all, state, pod, scratch, with, relevant);
        if !s.is_success() {
            return Err(s);
        }
        let mut reprieve = |p: &Arc<PodInfo>| -> Result<bool, Status> {
            scratch.add_pod(p.clone());
            let fits =
                filter_with_nominated(dependent, state, pod, scratch, with, relevant).is_success();
            if !fits {
                scratch.remove_pod(p.uid());
            }
            Ok(fits)
        };
        reprieve_in_order(potential, self.pdbs, self.now, &mut reprieve)
    }

    /// [`VictimSearch::by_requests`] on three `i64` sums (cpu, memory, ephemeral-storage) when
    /// the only dependent plugin judges by them (`check`): the same saturating additions and
    /// subtractions in the same order, so the same verdicts. `None` when the pod does not fit
    /// with every pod of `potential` removed. The pod-independent filters among the first
    /// `known` pass the node.
    fn by_sums(
        &mut self,
        check: SumsCheck,
        flagged: &[(Filter<'a>, bool)],
        node: &NodeInfo,
        potential: &mut [&Arc<PodInfo>],
        known: usize,
    ) -> Option<Victims> {
        let (state, pod) = (self.state, self.pod);
        let alloc = &node.allocatable;
        let mut used = SumsCheck::sums_of(&node.requested);
        for p in potential.iter() {
            let r = SumsCheck::sums_of(p.requests());
            used = [0, 1, 2].map(|i| used[i].saturating_sub(r[i]));
        }
        let mut num_pods = node.pods.len() - potential.len();
        if !check.passes(alloc, &used, num_pods) {
            return None;
        }
        // The plugins that do not depend on the pods pass on the node itself.
        if !independent_pass(&flagged[known.min(flagged.len())..], state, pod, node) {
            return None;
        }
        self.by_requests += 1;
        self.by_sums += 1;
        let mut reprieve = |p: &Arc<PodInfo>| -> Result<bool, Status> {
            let r = SumsCheck::sums_of(p.requests());
            let added = [0, 1, 2].map(|i| used[i].saturating_add(r[i]));
            let fits = check.passes(alloc, &added, num_pods + 1);
            if fits {
                used = added;
                num_pods += 1;
            } else {
                // As `Resources::sub` after `add`: saturation may not undo exactly.
                used = [0, 1, 2].map(|i| added[i].saturating_sub(r[i]));
            }
            Ok(fits)
        };
        Some(reprieve_in_order(
            potential,
            self.pdbs,
            self.now,
            &mut reprieve,
        ))
    }

    /// The direct way by arithmetic on the requests (`self.requested`: the node's with every
    /// pod of `potential` removed), for a node with lower-priority pods and no relevant
    /// nominated pods; `None` when it does not apply (a dependent plugin that cannot judge by
    /// requests) or the pod does not fit with all of them removed (then
    /// [`VictimSearch::all_removed`] gives the status, with `self.requested` untouched). The
    /// pod-independent filters among the first `known` pass the node.
    fn by_requests(
        &mut self,
        Direct {
            dependent, flagged, ..
        }: &Direct<'a>,
        node: &NodeInfo,
        potential: &mut [&Arc<PodInfo>],
        known: usize,
    ) -> Option<Victims> {
        let (state, pod) = (self.state, self.pod);
        let requested = &mut self.requested;
        let mut num_pods = node.pods.len() - potential.len();
        let passes = |requested: &Resources, num_pods: usize| -> Option<bool> {
            let mut all_pass = true;
            for (_, f) in dependent {
                all_pass &= f.passes_with_requests(state, pod, node, requested, num_pods)?;
            }
            Some(all_pass)
        };
        if !passes(requested, num_pods)? {
            return None;
        }
        // Every plugin passes with the victims removed (those that do not depend on the pods
        // pass on the node itself), whatever their order.
        if !independent_pass(&flagged[known.min(flagged.len())..], state, pod, node) {
            return None;
        }
        self.by_requests += 1;
        let mut reprieve = |p: &Arc<PodInfo>| -> Result<bool, Status> {
            requested.add(p.requests());
            num_pods += 1;
            let fits = passes(requested, num_pods).unwrap_or(false);
            if !fits {
                requested.sub(p.requests());
                num_pods -= 1;
            }
            Ok(fits)
        };
        Some(reprieve_in_order(
            potential,
            self.pdbs,
            self.now,
            &mut reprieve,
        ))
    }
}

/// Whether the plugins of `flagged` that look only at the node and at the pod pass `node`.
fn independent_pass(
    flagged: &[(Filter<'_>, bool)],
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
) -> bool {
    flagged
        .iter()
        .filter(|(_, independent)| *independent)
        .all(|((_, f), _)| f.filter(state, pod, node).is_success())
}

/// The status [`crate::framework::run_filters`] would give with `filters` (each with whether
/// it looks only at the node) on `node` were its pods' requests `requested` and their number
/// `num_pods`: the pod-independent plugins on the node itself, the others through
/// [`crate::framework::FilterPlugin::filter_with_requests`]. `None` when one of those cannot
/// judge by requests. The pod-independent plugins among the first `known` are known to pass on
/// the node (the caller knows the node's own verdict) and do not run.
pub(crate) fn status_with_requests(
    filters: &[(Filter<'_>, bool)],
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    requested: &Resources,
    num_pods: usize,
    known: usize,
) -> Option<Status> {
    for (i, &((name, f), on_node_only)) in filters.iter().enumerate() {
        let s = match on_node_only {
            true if i < known => continue,
            true => f.filter(state, pod, node),
            false => f.filter_with_requests(state, pod, node, requested, num_pods)?,
        };
        if !s.is_success() {
            return Some(s.of_filter(name));
        }
    }
    Some(Status::success())
}

/// Sorts the potential victims by importance, then offers each back to the node (`reprieve`
/// says whether the pod still fits with it), those whose eviction would violate a budget
/// first; returns those that could not come back, most important first, and how many of them
/// violate a budget.
fn reprieve_in_order(
    potential: &mut [&Arc<PodInfo>],
    pdbs: &[PdbInfo],
    now: jiff::Timestamp,
    reprieve: &mut dyn FnMut(&Arc<PodInfo>) -> Result<bool, Status>,
) -> Victims {
    sort_by_importance(potential, now);
    // Without budgets nothing violates one: no split to build.
    let split;
    let (violating, non_violating): (&[&Arc<PodInfo>], &[&Arc<PodInfo>]) = if pdbs.is_empty() {
        (&[], potential)
    } else {
        split = split_by_pdb(potential, pdbs);
        (&split.0, &split.1)
    };
    let mut victims: Vec<Arc<PodInfo>> = Vec::new();
    let mut num_violating = 0;
    for p in violating.iter().copied() {
        if !reprieve(p)? {
            victims.push(p.clone());
            num_violating += 1;
        }
    }
    for p in non_violating.iter().copied() {
        if !reprieve(p)? {
            victims.push(p.clone());
        }
    }
    if !violating.is_empty() && !non_violating.is_empty() {
        sort_by_importance(&mut victims, now);
    }
    Ok((victims, num_violating))
}

/// [`Framework::run_filter_plugins_with_nominated_pods`] with the given plugins, and a second
/// scratch NodeInfo for the pass with the nominated pods of at least the pod's priority.
fn filter_with_nominated(
    filters: &[Filter<'_>],
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    with: &mut NodeInfo,
    relevant: &[Arc<PodInfo>],
) -> Status {
    if !relevant.is_empty() {
        copy_node_into(with, node);
        for np in relevant {
            with.add_pod(Arc::clone(np));
        }
        let s = run_filters(filters, state, pod, with);
        if !s.is_success() {
            return s;
        }
    }
    run_filters(filters, state, pod, node)
}

fn remove_pod(
    fwk: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    victim: &PodInfo,
    node: &mut NodeInfo,
) -> Result<(), Status> {
    node.remove_pod(victim.uid());
    let s = fwk.run_pre_filter_extension_remove_pod(state, pod, victim, node);
    if s.is_success() {
        Ok(())
    } else {
        Err(s)
    }
}

/// Makes `dst` a copy of `src`, reusing `dst`'s allocations. Every field is named, so a new
/// field of NodeInfo cannot be forgotten here.
fn copy_node_into(dst: &mut NodeInfo, src: &NodeInfo) {
    let NodeInfo {
        name,
        node,
        allocatable,
        requested,
        non_zero_requested,
        pods,
        used_ports,
        images,
        unschedulable,
        taints,
        n_pods_with_affinity,
        n_pods_with_required_anti_affinity,
        generation,
        id,
        label_ids,
    } = src;
    dst.name.clone_from(name);
    dst.node.clone_from(node);
    dst.allocatable.clone_from(allocatable);
    dst.requested.clone_from(requested);
    dst.non_zero_requested.clone_from(non_zero_requested);
    dst.pods.clone_from(pods);
    dst.used_ports.clone_from(used_ports);
    dst.images.clone_from(images);
    dst.unschedulable = *unschedulable;
    dst.taints.clone_from(taints);
    dst.n_pods_with_affinity = *n_pods_with_affinity;
    dst.n_pods_with_required_anti_affinity = *n_pods_with_required_anti_affinity;
    dst.generation = *generation;
    dst.id = *id;
    dst.label_ids.clone_from(label_ids);
}

//! PodTopologySpread PreScore, Score and NormalizeScore (upstream
//! `podtopologyspread/scoring.go`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Toleration;
use kubeplane_core::nodeaffinity::RequiredNodeAffinity;

use crate::cache::Snapshot;
use crate::framework::{
    CycleState, NodeInfo, PodInfo, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::plugins::helper::FxHashMap;
use crate::plugins::memo::NodeMemo;

use super::score_counts::{CountKey, ScoreCounts, NO_VALUE};
use super::soft_defaults::{replica_set_of, SoftDefaults};

use super::{
    count_pods_match_selector, node_labels_match_constraints, Constraint, PodTopologySpread,
    LABEL_HOSTNAME, SCHEDULE_ANYWAY,
};

pub(crate) static PRE_SCORE_KEY: crate::framework::StateKey =
    crate::framework::StateKey::new("PreScorePodTopologySpread");

/// What PreScore computes for Score.
#[derive(Clone, Debug, Default)]
pub(crate) struct PreScoreState {
    /// Shared with the counts' key ([`CountKey`]), which keeps them across cycles.
    pub constraints: Arc<[Constraint]>,
    /// Whether nodes must have every topology key (else they are ignored: score 0).
    pub require_all: bool,
    /// Per filtered node, in the order PreScore saw them (the order of Score and
    /// NormalizeScore): whether it is ignored.
    pub ignored: Vec<bool>,
    /// Per constraint (hostname constraints excluded): topology value → matching pods.
    pub topology_value_to_pod_counts: Vec<FxHashMap<String, i64>>,
    /// Per constraint: `ln(number of domains among the filtered nodes + 2)`.
    pub topology_normalizing_weight: Vec<f64>,
    /// Per filtered node, in PreScore's order: its address and raw score, computed by
    /// PreScore so that scoring a run of nodes (see [`ScorePlugin::score_nodes`]) is a copy.
    pub(crate) raw: Vec<(usize, i64)>,
}

/// One node's entry for one memo key: what the node is for the constraints (its domains,
/// whether its pods count), not its pods, which [`ScoreCounts`] counts.
#[derive(Debug)]
pub(crate) struct NodeEntry {
    /// The address of the NodeInfo it was computed from (the memo holds a `Weak` of that
    /// NodeInfo, so the address is not reused meanwhile).
    addr: usize,
    /// The node's [`NodeInfo::id`].
    id: u32,
    /// Whether the node has every constraint's topology key.
    all_keys: bool,
    /// Per constraint.
    cells: Box<[EntryCell]>,
}

/// One constraint's part of a [`NodeEntry`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct EntryCell {
    /// The id of the node's domain (its value, or "" without one, see [`DomainIds`]);
    /// unused for hostname constraints.
    pub id: u32,
    /// Whether the node has a value for the topology key.
    pub has_value: bool,
    /// Whether the node's pods count (it has a Node and passes the constraint's inclusion
    /// policies).
    pub counted: bool,
}

impl EntryCell {
    const EMPTY: EntryCell = EntryCell {
        id: 0,
        has_value: false,
        counted: false,
    };
}

fn node_address(node: &NodeInfo) -> usize {
    node as *const NodeInfo as usize
}

/// Dense ids of topology values, so that PreScore and Score index domains instead of hashing
/// strings. The memo's entries hold ids; both are reset together when it grows too large.
#[derive(Debug, Default)]
pub(crate) struct DomainIds {
    ids: FxHashMap<String, u32>,
    /// By id.
    names: Vec<String>,
}

impl DomainIds {
    /// Past this many ids the memo and the ids start over.
    const LIMIT: usize = 1 << 16;

    fn id(&mut self, value: &str) -> u32 {
        if let Some(&id) = self.ids.get(value) {
            return id;
        }
        let id = self.ids.len() as u32;
        self.ids.insert(value.to_string(), id);
        self.names.push(value.to_string());
        id
    }
}

/// What the PreScore memo's entries are valid for: everything a node's entry depends on
/// besides the node itself (not the namespace or the selectors: the entries hold no counts).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ScoreMemoKey {
    /// Per constraint: its topology key and inclusion policies (node affinity, taints).
    constraints: Vec<(String, bool, bool)>,
    required: RequiredNodeAffinity,
    /// Only when some constraint honors taints.
    tolerations: Vec<Toleration>,
}

/// The nodes' entries in arrays indexed by node id, which PreScore reads for every filtered
/// node of every cycle.
#[derive(Default)]
pub(crate) struct ScoreAgg {
    /// Constraints per entry: the stride of `cells` (fixed by the memo key).
    stride: usize,
    /// By node id: the address of the NodeInfo whose entry `cells` holds (0 for none), and
    /// whether that node has every key.
    heads: Vec<(usize, bool)>,
    /// By node id × stride + constraint.
    cells: Vec<EntryCell>,
}

impl ScoreAgg {
    /// How many nodes have an entry.
    #[cfg(test)]
    pub(crate) fn entries_len(&self) -> usize {
        self.heads.iter().filter(|h| h.0 != 0).count()
    }

    /// Whether the node of `e` has every key, and its cells: from the dense arrays when they
    /// hold this entry (they hold one per id).
    pub(super) fn cells_of<'a>(&'a self, e: &'a NodeEntry) -> (bool, &'a [EntryCell]) {
        let id = e.id as usize;
        match self.heads.get(id) {
            Some(&(addr, all_keys)) if addr == e.addr => (
                all_keys,
                &self.cells[id * self.stride..(id + 1) * self.stride],
            ),
            _ => (e.all_keys, &e.cells),
        }
    }

    /// The entry of `node` (whether it has every key, and its cells), unless the memo does
    /// not hold this NodeInfo.
    fn lookup(&self, node: &NodeInfo) -> Option<(bool, &[EntryCell])> {
        let id = node.id as usize;
        match self.heads.get(id) {
            Some(&(addr, all_keys)) if addr == node_address(node) => Some((
                all_keys,
                &self.cells[id * self.stride..(id + 1) * self.stride],
            )),
            _ => None,
        }
    }

    fn apply(&mut self, e: &NodeEntry, sign: i64) {
        let (n, id) = (e.cells.len(), e.id as usize);
        self.stride = n;
        if sign > 0 {
            if self.heads.len() <= id {
                self.heads.resize(id + 1, (0, false));
                self.cells.resize((id + 1) * n, EntryCell::EMPTY);
            }
            self.heads[id] = (e.addr, e.all_keys);
            self.cells[id * n..(id + 1) * n].copy_from_slice(&e.cells);
        } else if self.heads.get(id).is_some_and(|h| h.0 == e.addr) {
            // Only this NodeInfo's entry goes: the slot may hold another one with the same id
            // (NodeInfos built outside the cache all have id 0).
            self.heads[id] = (0, false);
        }
    }
}

pub(crate) type ScoreMemo = NodeMemo<ScoreMemoKey, NodeEntry, ScoreAgg>;

/// What PreScore keeps across cycles: the nodes' entries, and the matching pods that follow
/// them.
#[derive(Default)]
pub(crate) struct ScoreMemos {
    pub(crate) entries: ScoreMemo,
    pub(crate) counts: ScoreCounts,
    /// The default constraints of the last ReplicaSet's pods.
    pub(crate) defaults: SoftDefaults,
}

/// One node's entry.
fn node_entry(
    pod: &PodInfo,
    constraints: &[Constraint],
    required: &RequiredNodeAffinity,
    node: &NodeInfo,
    domains: &mut DomainIds,
) -> NodeEntry {
    let labels = node.labels();
    let cells = constraints
        .iter()
        .map(|c| (c, labels.get(&c.topology_key)))
        .map(|(c, v)| EntryCell {
            id: if c.topology_key == LABEL_HOSTNAME {
                u32::MAX
            } else {
                domains.id(v.map_or("", String::as_str))
            },
            has_value: v.is_some(),
            counted: node
                .node
                .as_ref()
                .is_some_and(|n| c.matches_node_inclusion_policies(pod.spec(), n, required)),
        })
        .collect();
    NodeEntry {
        addr: node_address(node),
        id: node.id,
        all_keys: node_labels_match_constraints(labels, constraints),
        cells,
    }
}

/// The weight of a topology with `size` domains.
pub(crate) fn topology_normalizing_weight(size: usize) -> f64 {
    ((size + 2) as f64).ln()
}

/// A domain's contribution: `count × weight + (maxSkew − 1)`.
fn score_for_count(count: i64, max_skew: i32, weight: f64) -> f64 {
    count as f64 * weight + (max_skew - 1) as f64
}

impl PodTopologySpread {
    /// The pod's soft constraints (its own or the defaults) and whether they are its own, or
    /// PreScore's error. The defaults of a ReplicaSet's pods are kept in `defaults` for the
    /// next pod of the same ReplicaSet.
    pub(super) fn soft_constraints(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
        defaults: &mut SoftDefaults,
    ) -> Result<(Arc<[Constraint]>, bool), Status> {
        let has_own = pod
            .spec()
            .topology_spread_constraints
            .as_ref()
            .is_some_and(|c| !c.is_empty());
        let reusable = match has_own || !self.defaults_per_replica_set() {
            true => None,
            false => replica_set_of(pod),
        };
        if let Some(kept) = reusable.and_then(|rs| defaults.get(snapshot, rs)) {
            return Ok((kept, false));
        }
        match self.constraints(&pod.pod, SCHEDULE_ANYWAY, Some(snapshot)) {
            Ok(c) => {
                let c: Arc<[Constraint]> = c.into();
                if let Some(rs) = reusable {
                    defaults.keep(snapshot, rs, &c);
                }
                Ok((c, has_own))
            }
            Err(e) => {
                let what = if has_own {
                    "obtaining pod's soft topology spread constraints"
                } else {
                    "setting default soft topology spread constraints"
                };
                Err(Status::error(format!(
                    "calculating preScoreState: {what}: {e}"
                )))
            }
        }
    }
}

/// The key of the nodes' entries: what a node is for these constraints depends on.
fn score_memo_key(
    pod: &PodInfo,
    constraints: &[Constraint],
    required: &RequiredNodeAffinity,
) -> ScoreMemoKey {
    ScoreMemoKey {
        tolerations: if constraints.iter().any(|c| c.honor_node_taints) {
            pod.tolerations().to_vec()
        } else {
            Vec::new()
        },
        constraints: constraints
            .iter()
            .map(|c| {
                (
                    c.topology_key.clone(),
                    c.honor_node_affinity,
                    c.honor_node_taints,
                )
            })
            .collect(),
        required: required.clone(),
    }
}

/// What PreScore reads to go through the filtered nodes (upstream `initPreScoreState`'s loop
/// over them), the memos just brought up to date with the snapshot.
struct Tally<'a> {
    pod: &'a PodInfo,
    constraints: &'a [Constraint],
    required: &'a RequiredNodeAffinity,
    /// Per constraint: whether its topology key is the hostname label.
    hostname: &'a [bool],
    require_all: bool,
    memo: &'a ScoreMemo,
    counts: &'a ScoreCounts,
    /// The filtered nodes' places in the snapshot, when the cycle state has them.
    places: Option<&'a [usize]>,
}

/// What PreScore's one pass over the filtered nodes keeps for their raw scores.
#[derive(Default)]
struct Tallied {
    /// Per constraint × filtered node (a constraint's nodes in a column, so that
    /// [`raw_scores`] adds a column in one straight loop): the node's own count (hostname
    /// constraints), its domain id (other constraints), or [`NO_VALUE`] when the constraint
    /// does not count on the node (it has no value for the topology key, or it is ignored).
    cols: Vec<i64>,
    /// Per constraint: domain id → the domain's count, for the domains of the nodes not
    /// ignored (hostname constraints: none).
    totals: Vec<Vec<Option<i64>>>,
    /// Per constraint: how many domains `totals` holds.
    sizes: Vec<usize>,
    /// How many filtered nodes are ignored.
    n_ignored: usize,
}

impl Tallied {
    /// Empty columns for `n_constraints` constraints and `n` filtered nodes.
    fn new(n_constraints: usize, n: usize) -> Tallied {
        Tallied {
            cols: vec![NO_VALUE; n * n_constraints],
            totals: vec![Vec::new(); n_constraints],
            sizes: vec![0; n_constraints],
            n_ignored: 0,
        }
    }
}

/// Records the count of domain `id` of constraint `i` the first time a filtered node not
/// ignored is in it (domains of no filtered node do not matter).
fn see_domain(
    totals: &mut Vec<Option<i64>>,
    size: &mut usize,
    (i, id): (usize, usize),
    counts: &ScoreCounts,
    names: &[String],
    by_value: &mut FxHashMap<String, i64>,
) {
    if totals.len() <= id {
        totals.resize(id + 1, None);
    }
    if totals[id].is_none() {
        let total = counts.domain_total(i, id);
        totals[id] = Some(total);
        by_value.insert(names[id].clone(), total);
        *size += 1;
    }
}

impl Tally<'_> {
    /// Goes through the filtered nodes once: whether each is ignored (`s.ignored`), what its
    /// raw score reads (`Tallied::cols`), and the counts of the domains they are in
    /// (`Tallied::totals`, `s.topology_value_to_pod_counts`).
    fn run(&self, nodes: &[&NodeInfo], domains: &mut DomainIds, s: &mut PreScoreState) -> Tallied {
        match self.places {
            Some(places) => self.run_by_place(nodes, places, domains, s),
            None => self.run_by_node(nodes, domains, s),
        }
    }

    /// [`Self::run`] with the filtered nodes' places: a column at a time, each cell copied
    /// from the place's in the counts' [`PlaceCols`](super::score_counts::PlaceCols) (which
    /// follow the memo just updated, so every place has its entry there).
    fn run_by_place(
        &self,
        nodes: &[&NodeInfo],
        places: &[usize],
        domains: &DomainIds,
        s: &mut PreScoreState,
    ) -> Tallied {
        debug_assert!(nodes.iter().zip(places).all(|(&node, &p)| self
            .memo
            .contribution(p)
            .is_some_and(|(info, _)| std::ptr::eq(info, node))));
        let by_place = &self.counts.by_place;
        let n = places.len();
        let mut t = Tallied::new(self.constraints.len(), n);
        s.ignored.clear();
        s.ignored
            .extend(places.iter().map(|&p| by_place.ignored()[p]));
        t.n_ignored = s.ignored.iter().filter(|&&ignored| ignored).count();
        // `chunks_exact_mut(0)` panics; no node, no column to fill.
        let cols = t.cols.chunks_exact_mut(n.max(1));
        let per_constraint = (cols.zip(&mut t.totals).zip(&mut t.sizes)).zip(
            self.hostname
                .iter()
                .zip(&mut s.topology_value_to_pod_counts),
        );
        for (i, (((col, totals), size), (&hostname, by_value))) in per_constraint.enumerate() {
            let (ids, values) = by_place.column(i);
            if hostname {
                for (slot, &p) in col.iter_mut().zip(places) {
                    if values[p] != NO_VALUE {
                        *slot = self.counts.at(p, i);
                    }
                }
                continue;
            }
            for ((slot, &p), &ignored) in col.iter_mut().zip(places).zip(&s.ignored) {
                *slot = values[p];
                if !ignored {
                    let at = (i, ids[p] as usize);
                    see_domain(totals, size, at, self.counts, &domains.names, by_value);
                }
            }
        }
        t
    }

    /// [`Self::run`] without the filtered nodes' places: node by node, each node's entry
    /// found in the memo by its NodeInfo or computed afresh, and hostname counts counted
    /// from its pods.
    fn run_by_node(
        &self,
        nodes: &[&NodeInfo],
        domains: &mut DomainIds,
        s: &mut PreScoreState,
    ) -> Tallied {
        let n = nodes.len();
        let mut t = Tallied::new(self.constraints.len(), n);
        s.ignored.resize(n, false);
        let mut fresh;
        for (j, (&node, ignored)) in nodes.iter().zip(&mut s.ignored).enumerate() {
            let (all_keys, entry_cells) = match self.memo.agg.lookup(node) {
                Some(e) => e,
                None => {
                    fresh = node_entry(self.pod, self.constraints, self.required, node, domains);
                    (fresh.all_keys, &fresh.cells[..])
                }
            };
            if self.require_all && !all_keys {
                *ignored = true;
                t.n_ignored += 1;
                continue;
            }
            // `n` is at least 1 here: this is the `j`th of the `n` nodes.
            let cols = t.cols.chunks_exact_mut(n);
            let cells = self.hostname.iter().zip(entry_cells).zip(cols).enumerate();
            for (i, ((&is_hostname, cell), col)) in cells {
                if is_hostname {
                    if cell.has_value {
                        col[j] = self.host_count(node, i);
                    }
                    continue;
                }
                if cell.has_value {
                    col[j] = i64::from(cell.id);
                }
                let at = (i, cell.id as usize);
                let by_value = &mut s.topology_value_to_pod_counts[i];
                see_domain(
                    &mut t.totals[i],
                    &mut t.sizes[i],
                    at,
                    self.counts,
                    &domains.names,
                    by_value,
                );
            }
        }
        t
    }

    /// The `i`th (hostname) constraint's count on `node`, counted from its pods.
    fn host_count(&self, node: &NodeInfo, i: usize) -> i64 {
        count_pods_match_selector(
            &node.pods,
            &self.constraints[i].selector,
            self.pod.namespace(),
        ) as i64
    }
}

impl PreScoreState {
    /// A state to fill for `n_constraints` constraints and `n_nodes` filtered nodes.
    fn new(n_constraints: usize, require_all: bool, n_nodes: usize) -> PreScoreState {
        PreScoreState {
            topology_value_to_pod_counts: vec![FxHashMap::default(); n_constraints],
            require_all,
            ignored: Vec::with_capacity(n_nodes),
            ..Default::default()
        }
    }
}

/// Per constraint, the weight of its topology: of `domains[i]` domains among the filtered
/// nodes, or of `counted_nodes` (the filtered nodes not ignored) for the hostname.
fn normalizing_weights(
    constraints: &[Constraint],
    domains: &[usize],
    counted_nodes: usize,
) -> Vec<f64> {
    constraints
        .iter()
        .zip(domains)
        .map(|(c, &size)| match c.topology_key == LABEL_HOSTNAME {
            true => topology_normalizing_weight(counted_nodes),
            false => topology_normalizing_weight(size),
        })
        .collect()
}

/// The filtered nodes' raw scores from their columns, in PreScore's order. Each node's terms
/// are the ones [`score_for_count`] gives and are added in the constraints' order as before
/// (a column at a time), so the sums round as they did. A cell without a value adds `+0.0`,
/// which leaves any sum that starts at `+0.0` as it was (only `-0.0 + -0.0` is `-0.0`), so
/// the loops need no branch for it.
fn raw_scores(
    nodes: &[&NodeInfo],
    s: &PreScoreState,
    constraints: &[Constraint],
    hostname: &[bool],
    t: &Tallied,
) -> Vec<(usize, i64)> {
    let n = nodes.len();
    let mut sums = vec![0.0; n];
    // `chunks_exact(0)` panics; no node, no column to add.
    let cols = t.cols.chunks_exact(n.max(1));
    let columns = constraints
        .iter()
        .zip(&t.totals)
        .zip(&s.topology_normalizing_weight)
        .zip(hostname)
        .zip(cols);
    for ((((c, totals), &weight), &hostname), col) in columns {
        let skew = (c.max_skew - 1) as f64;
        if hostname {
            add_host_terms(&mut sums, col, weight, skew);
            continue;
        }
        // By domain id + 1: [`NO_VALUE`] reads the leading `+0.0`.
        let by_domain: Vec<f64> = std::iter::once(0.0)
            .chain(
                totals
                    .iter()
                    .map(|total| score_for_count(total.unwrap_or(0), c.max_skew, weight)),
            )
            .collect();
        add_domain_terms(&mut sums, col, &by_domain);
    }
    nodes
        .iter()
        .zip(&sums)
        .map(|(node, &sum)| (node_address(node), round_half_away(sum)))
        .collect()
}

/// Adds a hostname column's terms, `count × weight + (maxSkew − 1)` as [`score_for_count`]
/// computes them, to the sums.
fn add_host_terms(sums: &mut [f64], col: &[i64], weight: f64, skew: f64) {
    assert_eq!(sums.len(), col.len());
    for (sum, &v) in sums.iter_mut().zip(col) {
        let term = v as f64 * weight + skew;
        *sum += if v == NO_VALUE { 0.0 } else { term };
    }
}

/// Adds a domain column's terms, read from `by_domain` at the domain id + 1, to the sums.
fn add_domain_terms(sums: &mut [f64], col: &[i64], by_domain: &[f64]) {
    assert_eq!(sums.len(), col.len());
    for (sum, &v) in sums.iter_mut().zip(col) {
        *sum += by_domain[(v + 1) as usize];
    }
}

/// `x.round() as i64` (half away from zero, saturating, NaN to 0) without the call to libm's
/// `round` that the baseline x86-64 target makes for `f64::round`: the truncation is exact
/// and so is `x − trunc(x)`.
pub(super) fn round_half_away(x: f64) -> i64 {
    let whole = x as i64;
    let frac = x - whole as f64;
    if frac >= 0.5 {
        whole.saturating_add(1)
    } else if frac <= -0.5 {
        whole.saturating_sub(1)
    } else {
        whole
    }
}

impl PreScorePlugin for PodTopologySpread {
    /// Counts the matching pods per domain of the filtered nodes over the snapshot's nodes
    /// (upstream `initPreScoreState`), reusing the entries of unchanged nodes from earlier
    /// cycles (see [`crate::plugins::memo`]).
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        if snapshot.node_infos.is_empty() {
            return Status::skip();
        }
        let mut guard = self.score_memo.lock().expect("memo lock");
        let (constraints, has_own) = match self.soft_constraints(pod, snapshot, &mut guard.defaults)
        {
            Ok(c) => c,
            Err(status) => return status,
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        // Only user-given or non-system constraints require nodes to have every key, so nodes
        // without a zone label still spread by hostname under the system defaults.
        let require_all = has_own || !self.system_defaulted;
        let required = RequiredNodeAffinity::from_pod(pod.spec());
        let key = score_memo_key(pod, &constraints, &required);
        let mut domains = self.score_domains.lock().expect("domains lock");
        if domains.ids.len() > DomainIds::LIMIT {
            guard.entries = ScoreMemo::default();
            guard.counts = ScoreCounts::default();
            *domains = DomainIds::default();
        }
        let domains = &mut *domains;
        let hostname: Vec<bool> = constraints
            .iter()
            .map(|c| c.topology_key == LABEL_HOSTNAME)
            .collect();
        let memos = &mut *guard;
        memos.entries.update(
            key,
            snapshot,
            |n| node_entry(pod, &constraints, &required, n, domains),
            |agg, e, sign| agg.apply(e, sign),
        );
        let count_key = CountKey {
            namespace: pod.namespace().to_string(),
            constraints,
            require_all,
        };
        memos.counts.update(count_key, &memos.entries, snapshot);
        let constraints = &memos.counts.key().expect("just updated").constraints;
        let mut s = PreScoreState::new(constraints.len(), require_all, nodes.len());
        let places = &state.node_places;
        let tally = Tally {
            pod,
            constraints,
            required: &required,
            hostname: &hostname,
            require_all,
            memo: &memos.entries,
            counts: &memos.counts,
            places: (places.len() == nodes.len()).then_some(places.as_slice()),
        };
        let t = tally.run(nodes, domains, &mut s);
        s.topology_normalizing_weight =
            normalizing_weights(constraints, &t.sizes, nodes.len() - t.n_ignored);
        s.raw = raw_scores(nodes, &s, constraints, &hostname, &t);
        s.constraints = Arc::clone(constraints);
        drop(guard);
        state.write(&PRE_SCORE_KEY, s);
        Status::success()
    }
}

fn read_pre_score_state(state: &CycleState) -> Result<&PreScoreState, Status> {
    state
        .read::<PreScoreState>(&PRE_SCORE_KEY)
        .ok_or_else(|| Status::error(format!("error reading {PRE_SCORE_KEY:?} from cycleState")))
}

impl ScorePlugin for PodTopologySpread {
    /// The sum over constraints of the node's domain score, rounded; ignored nodes score 0.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(score_node(read_pre_score_state(state)?, pod, node))
    }

    /// The scores PreScore computed for these nodes (any node it did not see is scored as
    /// [`Self::score`] does).
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        first: usize,
        out: &mut [i64],
    ) -> Result<(), (usize, Status)> {
        let s = read_pre_score_state(state).map_err(|e| (0, e))?;
        let mut raw = s.raw.get(first..).unwrap_or_default().iter();
        for (node, cell) in nodes.iter().zip(out.iter_mut()) {
            *cell = match raw.next() {
                Some(&(addr, score)) if addr == node_address(node) => score,
                _ => score_node(s, pod, node),
            };
        }
        Ok(())
    }

    /// Fewer matching pods is better: `100 × (max + min − score) / max` over the nodes that
    /// are not ignored; ignored nodes get 0; all 100 when the highest score is 0.
    fn normalize_score(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) -> Status {
        let Some(s) = state.read::<PreScoreState>(&PRE_SCORE_KEY) else {
            return Status::error(format!("error reading {PRE_SCORE_KEY:?} from cycleState"));
        };
        // The nodes PreScore saw have a flag each; any node past them is not ignored.
        let seen = s.ignored.len().min(scores.len());
        let ignored = &s.ignored[..seen];
        let (flagged, rest) = scores.split_at_mut(seen);
        let (mut min, mut max) = (i64::MAX, 0);
        for (&score, &ignored) in flagged.iter().zip(ignored) {
            if !ignored {
                (min, max) = (min.min(score), max.max(score));
            }
        }
        for &score in rest.iter() {
            (min, max) = (min.min(score), max.max(score));
        }
        let normalized = |score: i64| match max {
            0 => MAX_NODE_SCORE,
            _ => MAX_NODE_SCORE * (max + min - score) / max,
        };
        for (score, &ignored) in flagged.iter_mut().zip(ignored) {
            *score = if ignored { 0 } else { normalized(*score) };
        }
        for score in rest {
            *score = normalized(*score);
        }
        Status::success()
    }
}

/// One node's raw score from the PreScore state.
fn score_node(s: &PreScoreState, pod: &PodInfo, node: &NodeInfo) -> i64 {
    let mut score = 0.0;
    let labels = node.labels();
    if s.require_all && !node_labels_match_constraints(labels, &s.constraints) {
        return 0;
    }
    for (i, c) in s.constraints.iter().enumerate() {
        let Some(value) = labels.get(&c.topology_key) else {
            continue;
        };
        let count = if c.topology_key == LABEL_HOSTNAME {
            count_pods_match_selector(&node.pods, &c.selector, pod.namespace()) as i64
        } else {
            s.topology_value_to_pod_counts[i]
                .get(value.as_str())
                .copied()
                .unwrap_or(0)
        };
        score += score_for_count(count, c.max_skew, s.topology_normalizing_weight[i]);
    }
    score.round() as i64
}

//! The seed sweep (issue 13 §2), after TigerBeetle's VOPR: every seed generates a small random
//! cluster (nodes in zones, ReplicaSets and Deployments with priorities, tolerations with
//! `tolerationSeconds` and PodDisruptionBudgets) and random steps (NoExecute taints and their
//! removal, node down and up, cordon, scale, high-priority pods), writes it as a scenario file,
//! runs it through the real parser and simulator, and checks invariants after every instant
//! (`Simulation::run_observed`) and at the end:
//!
//! 1. **No node is over-committed**: the requests of the pods bound to a node that have not
//!    terminated (Terminating pods included: they hold their resources) fit its allocatable.
//! 2. **NoExecute deadlines** (`docs/taint-eviction.md`): a model of the taint-eviction
//!    controller over the settled state of each instant. A pod on a node with an untolerated
//!    NoExecute taint is due at once; otherwise its deadline is fixed when it first becomes
//!    finitely tolerated (the instant the controller sees the taint or the binding, plus the
//!    smallest `tolerationSeconds` used, the default tolerations of DefaultTolerationSeconds
//!    included, since they are in the stored pod), never moves while all taints stay
//!    tolerated, and is cancelled when the node has no NoExecute taint left or the pod
//!    tolerates them all for ever. Checked both ways: a pod still not Terminating after its
//!    deadline outlived it; a `TaintManagerEviction` "Marking for deletion" before it is
//!    early. Deletion is graceful, so a marked pod may stay Terminating for its grace period
//!    (for ever on a node that is down): being marked is what the deadline bounds. A pod
//!    created and evicted within one instant (two steps at one instant settle one after the
//!    other) is never seen settled, and its eviction is not judged.
//! 3. **Preemption never evicts a pod of equal or higher priority** (the `Preempted` events).
//! 4. **PodDisruptionBudgets**: kubeplane has no eviction API, and none of its deletions is one
//!    upstream makes PDB-aware (taint eviction, scale-down, node lifecycle), except preemption,
//!    which respects PDBs only best-effort: upstream's guarantee is that among the candidate
//!    nodes it chooses one with the fewest PDB violations (pickOneNodeForPreemption's first
//!    rule). That is what is checked, from the `SchedulingAttempt` explain records.
//! 5. **ReplicaSets converge**: at the end each ReplicaSet has exactly `spec.replicas` active
//!    pods and each Deployment's ReplicaSet its replicas; and no pod stays pending for a minute
//!    while a node has room for it (Ready, schedulable, taints tolerated, requests free after
//!    the bound pods and the pods nominated to it with at least its priority).
//!
//! `cargo test -p kubeplane-sim --test seed_sweep` runs seeds 0..1000 (`KUBEPLANE_SEEDS=N`
//! for more); `KUBEPLANE_SEED=1234 cargo test -p kubeplane-sim --test seed_sweep --
//! --nocapture` replays one seed and prints its scenario. A failing seed prints that command
//! and the scenario YAML, which `kubeplane simulate --explain FILE` also runs.

use kubeplane_api::{PodExt, StoredPod};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use k8s_openapi::api::core::v1::{Node, Taint};
use kubeplane_core::resources::{from_resource_list, pod_requests, Resources};
use kubeplane_core::taints::{find_untolerated_taint, matching_tolerations};
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;
use kubeplane_sim::scenario::parse_files;
use kubeplane_sim::{Record, RunOptions, Simulation};
use kubeplane_store::{Kind, Object, Store};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const DEFAULT_SEEDS: u64 = 1000;
/// How long a pod may stay pending while a node has room for it (the scheduler's backoff is at
/// most 10 s, and every change that frees room is a cluster event that requeues it).
const PENDING_WITH_ROOM_MAX: SimDuration = SimDuration(60 * 1_000_000_000);
/// The steps end this long before the scenario does, so that the cluster can settle.
const QUIET_SECS: u64 = 90;

// ---- The generator ----

const CPUS: &[&str] = &["100m", "250m", "500m", "1"];

fn pick<'a>(rng: &mut ChaCha8Rng, options: &[&'a str]) -> &'a str {
    options[rng.random_range(0..options.len())]
}

/// A pod spec's fields, indented for a template (6 spaces) or a Pod (2 spaces).
fn pod_spec(rng: &mut ChaCha8Rng, indent: &str, priority: &str) -> String {
    let mut s = String::new();
    if !priority.is_empty() {
        let _ = writeln!(s, "{indent}priorityClassName: {priority}");
    }
    let _ = writeln!(
        s,
        "{indent}terminationGracePeriodSeconds: {}",
        pick(rng, &["0", "10", "30"])
    );
    match rng.random_range(0..4) {
        0 => {}
        1 => {
            let _ = writeln!(
                s,
                "{indent}tolerations: [{{key: maint, operator: Exists, effect: NoExecute}}]"
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "{indent}tolerations: [{{key: maint, operator: Exists, effect: NoExecute, tolerationSeconds: {}}}]",
                // Not 0: a pod that tolerates a NoExecute taint for 0 s is scheduled onto the
                // tainted node, evicted at once and replaced at once, for ever at one instant (a
                // livelock upstream too; the round budget ends it as one).
                pick(rng, &["1", "20", "45", "120"])
            );
        }
    }
    let _ = writeln!(
        s,
        "{indent}containers: [{{name: app, image: nginx, resources: {{requests: {{cpu: {}, memory: 256Mi}}}}}}]",
        pick(rng, CPUS)
    );
    s
}

struct Generated {
    yaml: String,
    workloads: Vec<(&'static str, String)>,
    nodes: Vec<String>,
}

fn objects(rng: &mut ChaCha8Rng) -> Generated {
    let mut y = String::new();
    y.push_str("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 10\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n");
    let n_zones = rng.random_range(1..=3);
    let nodes: Vec<String> = (0..rng.random_range(2..=5))
        .map(|i| format!("n{i}"))
        .collect();
    for (i, n) in nodes.iter().enumerate() {
        let cpu = pick(rng, &["2", "4"]);
        let _ = write!(
            y,
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {n}, labels: {{kubernetes.io/hostname: {n}, topology.kubernetes.io/zone: z{}}}}}\nstatus:\n  capacity: {{cpu: \"{cpu}\", memory: 8Gi, pods: \"110\"}}\n  allocatable: {{cpu: \"{cpu}\", memory: 8Gi, pods: \"110\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n",
            i % n_zones
        );
    }
    let mut workloads = Vec::new();
    for i in 0..rng.random_range(1..=3) {
        let kind = pick(rng, &["ReplicaSet", "Deployment"]);
        let name = format!("w{i}");
        let replicas = rng.random_range(1..=6);
        let priority = pick(rng, &["", "low", "high"]);
        let _ = write!(
            y,
            "---\napiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: {name}}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n{}",
            pod_spec(rng, "      ", priority)
        );
        if rng.random_bool(0.4) {
            let budget = if rng.random_bool(0.5) {
                format!("minAvailable: {}", rng.random_range(1..=replicas))
            } else {
                "maxUnavailable: 1".to_string()
            };
            let _ = write!(y, "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: {name}}}\nspec: {{{budget}, selector: {{matchLabels: {{app: {name}}}}}}}\n");
        }
        workloads.push((kind, name));
    }
    Generated {
        yaml: y,
        workloads,
        nodes,
    }
}

fn step(rng: &mut ChaCha8Rng, g: &Generated, i: usize) -> String {
    let node = &g.nodes[rng.random_range(0..g.nodes.len())];
    let (kind, name) = &g.workloads[rng.random_range(0..g.workloads.len())];
    match rng.random_range(0..9) {
        0 | 1 => format!(
            "taint: {{node: {node}, key: maint, value: v{}, effect: NoExecute}}",
            rng.random_range(0..2)
        ),
        2 => format!("untaint: {{node: {node}, key: maint}}"),
        3 => format!("nodeDown: {{node: {node}}}"),
        4 => format!("nodeUp: {{node: {node}}}"),
        5 => format!("cordon: {{node: {node}}}"),
        6 => format!("uncordon: {{node: {node}}}"),
        7 => format!(
            "scale: {{kind: {kind}, name: {name}, replicas: {}}}",
            rng.random_range(0..=8)
        ),
        _ => {
            let priority = pick(rng, &["high", "high", "low"]);
            let spec = pod_spec(rng, "        ", priority);
            format!("apply:\n      apiVersion: v1\n      kind: Pod\n      metadata: {{name: burst-{i}}}\n      spec:\n{}", spec.trim_end())
        }
    }
}

/// The scenario file of a seed.
fn generate(seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let g = objects(&mut rng);
    let duration = rng.random_range(3..=5) * 60;
    let mut times: Vec<u64> = (0..rng.random_range(2..=8))
        .map(|_| 5 * rng.random_range(1..=(duration - QUIET_SECS) / 5))
        .collect();
    times.sort();
    // One step per instant: steps at one instant settle one after another, and the checks see
    // only the settled state at the end of an instant (a taint added and removed at one
    // instant evicts the pods that do not tolerate it, unseen).
    times.dedup();
    let mut steps = String::new();
    for (i, at) in times.iter().enumerate() {
        let _ = write!(steps, "  - at: {at}s\n    {}\n", step(&mut rng, &g, i));
    }
    format!(
        "{}---\napiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {{name: seed-{seed}}}\nspec:\n  duration: {duration}s\n  seed: {seed}\n  steps:\n{steps}",
        g.yaml
    )
}

// ---- The invariants ----

fn key(p: &StoredPod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or_default(),
        p.metadata.name.as_deref().unwrap_or_default()
    )
}

fn uid(p: &StoredPod) -> String {
    p.metadata.uid.clone().unwrap_or_default()
}

fn node_name(p: &StoredPod) -> Option<&str> {
    p.node_name()
}

fn terminated(p: &StoredPod) -> bool {
    matches!(p.phase(), Some("Succeeded" | "Failed"))
}

fn requests(p: &StoredPod) -> Resources {
    p.spec
        .as_ref()
        .and_then(|s| pod_requests(s).ok())
        .unwrap_or_default()
}

fn allocatable(n: &Node) -> Resources {
    n.status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| from_resource_list(a).ok())
        .unwrap_or_default()
}

fn fits(used: &Resources, extra: &Resources, alloc: &Resources) -> bool {
    used.milli_cpu + extra.milli_cpu <= alloc.milli_cpu
        && used.memory + extra.memory <= alloc.memory
}

fn no_execute_taints(n: &Node) -> Vec<Taint> {
    n.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|ts| {
            ts.iter()
                .filter(|t| t.effect == "NoExecute")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// What the taint-eviction model says about a bound pod at an instant.
enum Verdict {
    /// No NoExecute taint, or all tolerated for ever: no deadline.
    Stay,
    /// An untolerated taint: due now.
    Now,
    /// Tolerated for this many seconds, counted from when the controller saw it: the smallest
    /// and the largest `tolerationSeconds` used. The controller may have seen the taints one
    /// at a time within the instant (a step and the node lifecycle controller at one instant
    /// settle one after the other), and a deadline never moves, so any of them may be the one.
    For(i64, i64),
}

fn verdict(pod: &StoredPod, node: &Node) -> Verdict {
    let taints = no_execute_taints(node);
    if taints.is_empty() {
        return Verdict::Stay;
    }
    let tols = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.clone())
        .unwrap_or_default();
    match matching_tolerations(&taints, &tols) {
        None => Verdict::Now,
        Some(used) => {
            let seconds = || used.iter().filter_map(|t| t.toleration_seconds);
            match (seconds().min(), seconds().max()) {
                (Some(min), Some(max)) => Verdict::For(min, max),
                _ => Verdict::Stay,
            }
        }
    }
}

#[derive(Default)]
struct Checker {
    /// The model's eviction deadline of each pod (by UID) that has one: the earliest and the
    /// latest instant it may be.
    deadlines: HashMap<String, (SimTime, SimTime)>,
    /// The last deadline the model gave each pod (by namespace/name), kept after it is gone: a
    /// pod with no grace period is gone by the end of the instant it is evicted at.
    last_deadline: HashMap<String, SimTime>,
    /// The pods of the previous instant, to judge those gone since.
    last_pods: HashMap<String, std::sync::Arc<StoredPod>>,
    /// `(instant, namespace/name)` at which the model allows a taint eviction.
    allowed_evictions: BTreeSet<(SimTime, String)>,
    priority_by_uid: HashMap<String, i32>,
    priority_by_key: HashMap<String, i32>,
    /// Since when each pending pod (by UID) has had a node with room for it.
    pending_with_room: HashMap<String, SimTime>,
    violations: Vec<String>,
}

fn at(t: SimTime) -> String {
    kubeplane_core::duration::format_duration(t - SimTime::ZERO)
}

impl Checker {
    fn observe(&mut self, store: &Store, now: SimTime) {
        let mut used: BTreeMap<String, Resources> = BTreeMap::new();
        for p in store.pods() {
            let prio = p.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
            self.priority_by_uid.insert(uid(p), prio);
            self.priority_by_key.insert(key(p), prio);
            if let (Some(n), false) = (node_name(p), terminated(p)) {
                used.entry(n.to_string()).or_default().add(&requests(p));
            }
        }
        for n in store.nodes() {
            let name = n.metadata.name.clone().unwrap_or_default();
            let u = used.get(&name).cloned().unwrap_or_default();
            if !fits(&u, &Resources::default(), &allocatable(n)) {
                self.violations.push(format!(
                    "{}: node {name} is over-committed: requests cpu {}m memory {} > allocatable",
                    at(now),
                    u.milli_cpu,
                    u.memory
                ));
            }
        }
        self.check_no_execute(store, now);
        self.check_pending(store, now, &used);
    }

    fn check_no_execute(&mut self, store: &Store, now: SimTime) {
        // A pod evicted and removed within this instant (no grace period) was due now if the
        // node's taints now are not all tolerated by it.
        for (k, p) in std::mem::take(&mut self.last_pods) {
            let (ns, name) = k.split_once('/').unwrap_or_default();
            let gone = store.get_pod(ns, name).is_none_or(|q| uid(q) != uid(&p));
            let node = node_name(&p).and_then(|n| store.get_node(n));
            if gone && node.is_some_and(|n| matches!(verdict(&p, n), Verdict::Now)) {
                self.allowed_evictions.insert((now, k));
            }
        }
        let mut deadlines = HashMap::new();
        for p in store.pods() {
            let Some(node) = node_name(p).and_then(|n| store.get_node(n)) else {
                continue;
            };
            let prev = self.deadlines.get(&uid(p)).copied();
            let secs = |s: i64| SimDuration(s.max(0) * 1_000_000_000);
            let (due_now, next) = match verdict(p, node) {
                Verdict::Stay => (false, None),
                Verdict::Now => (true, prev),
                Verdict::For(min, max) => (
                    false,
                    Some(prev.unwrap_or((now + secs(min), now + secs(max)))),
                ),
            };
            // Eviction is allowed from the earliest deadline on, and due by the latest. A
            // deadline that falls at the instant of a change fires first (rule 2.4).
            let allowed = due_now
                || prev.is_some_and(|(d, _)| d <= now)
                || next.is_some_and(|(d, _)| d <= now);
            let due = due_now
                || prev.is_some_and(|(_, d)| d <= now)
                || next.is_some_and(|(_, d)| d <= now);
            if allowed {
                self.allowed_evictions.insert((now, key(p)));
            }
            if due && p.metadata.deletion_timestamp.is_none() {
                self.violations.push(format!(
                    "{}: pod {} on node {} outlived its NoExecute deadline ({})",
                    at(now),
                    key(p),
                    node_name(p).unwrap_or_default(),
                    match (due_now, prev.or(next)) {
                        (true, _) => "an untolerated taint".to_string(),
                        (false, Some((_, d))) => format!("due at {}", at(d)),
                        (false, None) => "?".to_string(),
                    }
                ));
            }
            if let Some(d) = next {
                deadlines.insert(uid(p), d);
                self.last_deadline.insert(key(p), d.0);
            } else {
                self.last_deadline.remove(&key(p));
            }
            self.last_pods.insert(key(p), p.clone());
        }
        self.deadlines = deadlines;
    }

    fn check_pending(&mut self, store: &Store, now: SimTime, used: &BTreeMap<String, Resources>) {
        let mut still = HashMap::new();
        for p in store.pods() {
            if node_name(p).is_some() || p.metadata.deletion_timestamp.is_some() || terminated(p) {
                continue;
            }
            let Some(node) = store.nodes().find(|n| has_room(store, n, p, used)) else {
                continue;
            };
            let since = self.pending_with_room.get(&uid(p)).copied().unwrap_or(now);
            if now - since >= PENDING_WITH_ROOM_MAX {
                self.violations.push(format!(
                    "{}: pod {} has been pending since {} while node {} has room for it",
                    at(now),
                    key(p),
                    at(since),
                    node.metadata.name.as_deref().unwrap_or_default()
                ));
            } else {
                still.insert(uid(p), since);
            }
        }
        self.pending_with_room = still;
    }
}

/// Whether `pod` could be bound to `node` now: Ready, schedulable, its NoSchedule and
/// NoExecute taints tolerated, and room left after the bound pods and the pods nominated to it
/// with at least the pod's priority.
fn has_room(
    store: &Store,
    node: &Node,
    pod: &StoredPod,
    used: &BTreeMap<String, Resources>,
) -> bool {
    let name = node.metadata.name.as_deref().unwrap_or_default();
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let spec = node.spec.clone().unwrap_or_default();
    let tols = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.clone())
        .unwrap_or_default();
    let taints = spec.taints.unwrap_or_default();
    if !ready
        || spec.unschedulable == Some(true)
        || find_untolerated_taint(&taints, &tols, |t| t.effect != "PreferNoSchedule").is_some()
    {
        return false;
    }
    let prio = pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
    let mut u = used.get(name).cloned().unwrap_or_default();
    for other in store.pods() {
        let nominated = other.status().and_then(|s| s.nominated_node_name());
        let other_prio = other.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
        if nominated == Some(name) && uid(other) != uid(pod) && other_prio >= prio {
            u.add(&requests(other));
        }
    }
    fits(&u, &requests(pod), &allocatable(node))
}

/// The checks on the records of the whole run: taint evictions, preemption victims and the
/// PDB rule of preemption.
fn check_records(c: &mut Checker, records: &[Record]) {
    for r in records {
        let v = r.to_json();
        let reason = v["reason"].as_str().unwrap_or_default();
        let message = v["message"].as_str().unwrap_or_default();
        let object = format!(
            "{}/{}",
            v["namespace"].as_str().unwrap_or_default(),
            v["name"].as_str().unwrap_or_default()
        );
        let time =
            SimTime::ZERO + SimDuration((v["time"].as_f64().unwrap_or(0.0) * 1e9).round() as i64);
        if reason == "TaintManagerEviction"
            && message.starts_with("Marking for deletion")
            // A pod created and gone within one instant (steps at the same instant settle one
            // after another) was never seen settled: the model cannot judge it.
            && c.priority_by_key.contains_key(&object)
            && !c.allowed_evictions.contains(&(time, object.clone()))
            && c.last_deadline.get(&object).is_none_or(|&d| d > time)
        {
            c.violations.push(format!(
                "{}: pod {object} was marked for deletion before its NoExecute deadline",
                at(time)
            ));
        }
        if reason == "Preempted" {
            let preemptor = message
                .strip_prefix("Preempted by pod ")
                .and_then(|m| m.split(' ').next())
                .unwrap_or_default();
            let victim = c.priority_by_key.get(&object).copied();
            let by = c.priority_by_uid.get(preemptor).copied();
            // A victim never seen settled (created and preempted within one instant) is not judged.
            if victim.zip(by).is_some_and(|(v, b)| v >= b) || (victim.is_some() && by.is_none()) {
                c.violations.push(format!(
                    "{}: pod {object} (priority {victim:?}) was preempted by pod {preemptor} (priority {by:?})",
                    at(time)
                ));
            }
        }
        if v["kind"] == "SchedulingAttempt" {
            check_preemption_pdbs(c, &v, &object, time);
        }
    }
}

fn check_preemption_pdbs(c: &mut Checker, v: &serde_json::Value, pod: &str, time: SimTime) {
    let Some(p) = v.get("preemption") else {
        return;
    };
    let Some(chosen) = p["chosen"].as_str() else {
        return;
    };
    let candidates = p["candidates"].as_array().cloned().unwrap_or_default();
    let violations = |c: &serde_json::Value| c["pdbViolations"].as_i64().unwrap_or(0);
    let fewest = candidates.iter().map(violations).min().unwrap_or(0);
    let chosen_violations = candidates
        .iter()
        .find(|c| c["node"] == chosen)
        .map(violations);
    if chosen_violations != Some(fewest) {
        c.violations.push(format!(
            "{}: preemption for {pod} chose node {chosen} with {chosen_violations:?} PDB violations, but a candidate has {fewest}",
            at(time)
        ));
    }
}

/// At the end: every ReplicaSet has its replicas, every Deployment's ReplicaSets add up to it.
fn check_replicas(c: &mut Checker, store: &Store) {
    let mut rs_replicas: HashMap<String, i32> = HashMap::new();
    for o in store.list(Kind::ReplicaSet) {
        let Object::ReplicaSet(rs) = o else { continue };
        let want = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let rs_uid = rs.metadata.uid.clone().unwrap_or_default();
        let active = store
            .pods()
            .filter(|p| {
                p.metadata.deletion_timestamp.is_none()
                    && !terminated(p)
                    && p.owner_references()
                        .into_iter()
                        .flatten()
                        .any(|r| r.uid == rs_uid && r.controller == Some(true))
            })
            .count() as i32;
        if active != want {
            c.violations.push(format!(
                "end: ReplicaSet {} has {active} active pods, spec.replicas {want}",
                o.name()
            ));
        }
        for r in rs.metadata.owner_references.iter().flatten() {
            *rs_replicas.entry(r.uid.clone()).or_default() += want;
        }
    }
    for o in store.list(Kind::Deployment) {
        let Object::Deployment(d) = o else { continue };
        let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let have = rs_replicas
            .get(d.metadata.uid.as_deref().unwrap_or_default())
            .copied()
            .unwrap_or(0);
        if have != want {
            c.violations.push(format!(
                "end: Deployment {}'s ReplicaSets have {have} replicas, spec.replicas {want}",
                o.name()
            ));
        }
    }
}

/// Runs one seed; returns its violations (empty when every invariant held).
fn run_seed(seed: u64, yaml: &str) -> Vec<String> {
    let files = vec![(format!("seed-{seed}.yaml"), yaml.to_string())];
    let input = match parse_files(&files) {
        Ok(i) => i,
        Err(e) => return vec![format!("the generated scenario does not parse: {e}")],
    };
    let opts = RunOptions {
        explain: true,
        ..RunOptions::default()
    };
    let mut sim = match Simulation::new(input, &opts) {
        Ok(s) => s,
        Err(e) => return vec![format!("the generated scenario does not start: {e}")],
    };
    let mut checker = Checker::default();
    let result = sim.run_observed(&mut |store, now, _| checker.observe(store, now));
    if let Err(e) = result {
        checker.violations.push(format!("the run failed: {e}"));
    }
    let records = sim.take_records();
    check_records(&mut checker, &records);
    check_replicas(&mut checker, &sim.store);
    checker.violations
}

fn report(seed: u64, yaml: &str, violations: &[String]) -> String {
    format!(
        "seed {seed}: {} invariant violation(s):\n  {}\nreplay: KUBEPLANE_SEED={seed} cargo test -p kubeplane-sim --test seed_sweep -- --nocapture\nscenario (save as seed-{seed}.yaml, run `kubeplane simulate --explain seed-{seed}.yaml`):\n{yaml}",
        violations.len(),
        violations.join("\n  ")
    )
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn every_seed_keeps_the_invariants() {
    let seeds: Vec<u64> = match env_u64("KUBEPLANE_SEED") {
        Some(seed) => vec![seed],
        None => (0..env_u64("KUBEPLANE_SEEDS").unwrap_or(DEFAULT_SEEDS)).collect(),
    };
    let mut failures = Vec::new();
    for &seed in &seeds {
        let yaml = generate(seed);
        if seeds.len() == 1 {
            println!("{yaml}");
        }
        let violations = run_seed(seed, &yaml);
        if !violations.is_empty() {
            eprintln!("{}", report(seed, &yaml, &violations));
            failures.push(seed);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} seeds broke an invariant: {failures:?} (each is printed above with its replay command)",
        failures.len(),
        seeds.len()
    );
}

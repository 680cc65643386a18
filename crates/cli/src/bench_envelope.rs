//! The `envelope` workload of `kubeplane bench` (issue 19): 5000 nodes in three zones, 10,000
//! namespaces each with one Deployment of 15 replicas (150,000 pods), created at once and run
//! until every pod is scheduled and Ready; then a day of virtual time with node agents
//! renewing Leases, during which every node of one zone stops reporting (`nodeDown` steps, as
//! the node lifecycle scenarios model an outage). The node lifecycle controller, taint
//! eviction and the ReplicaSets decide what follows, as they would upstream; the workload
//! reports what happened and checks it.

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::time::Instant;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_controllers::controller_utils::is_pod_ready;
use kubeplane_core::time::SimDuration;
use kubeplane_core::version::KubeVersion;
use kubeplane_core::SimTime;
use kubeplane_sim::scenario::{Scenario, Step, StepAction};
use kubeplane_sim::workloads;
use kubeplane_sim::{RunOptions, Simulation};
use kubeplane_store::{Object, Store};

use crate::bench_support::{figure, label, param, peak_memory_mib};

/// The zones the nodes are spread over in turn; the last one goes down.
pub const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// The taint the node lifecycle controller puts on a node whose agent stopped reporting.
const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";
/// Phase 1 must be over within this much virtual time; the day of phase 2 starts after it.
const PHASE_1_ALLOWANCE: SimDuration = SimDuration(60_000_000_000);

/// The envelope's sizes (the full size divided by `--scale-down`).
#[derive(Clone, Copy, Debug)]
pub struct Envelope {
    pub nodes: usize,
    pub namespaces: usize,
    pub replicas: i32,
    /// Hours into the day of phase 2 at which the last zone goes down.
    pub outage_hour: i64,
    pub hours: i64,
}

impl Envelope {
    /// The full envelope divided by `s`: nodes and namespaces shrink, each Deployment keeps
    /// its 15 replicas.
    pub fn scaled_down(s: usize) -> Envelope {
        Envelope {
            nodes: (5000 / s).max(ZONES.len()),
            namespaces: (10000 / s).max(1),
            replicas: 15,
            outage_hour: 2,
            hours: 24,
        }
    }

    fn pods(&self) -> usize {
        self.namespaces * self.replicas as usize
    }

    /// The virtual instant the day of phase 2 ends (the end of the run).
    fn end(&self) -> SimTime {
        SimTime::ZERO + PHASE_1_ALLOWANCE + SimDuration::from_secs(self.hours * 3600)
    }

    fn outage_at(&self) -> SimTime {
        SimTime::ZERO + PHASE_1_ALLOWANCE + SimDuration::from_secs(self.outage_hour * 3600)
    }
}

/// Node `i`'s name and zone (as `workloads::zoned_nodes` names and labels them).
fn node_zone(i: usize) -> (String, &'static str) {
    (format!("node-{i}"), ZONES[i % ZONES.len()])
}

/// A Deployment `web` of `replicas` pods requesting 50m cpu and 128Mi memory: with a third of
/// the nodes gone, 45 pods on a 4-cpu, 32Gi, 110-pod node still fit.
fn small_deployment(namespace: &str, replicas: i32) -> Object {
    let Object::Deployment(mut d) = workloads::deployment(namespace, "web", replicas) else {
        unreachable!("workloads::deployment builds a Deployment")
    };
    let deployment = std::sync::Arc::make_mut(&mut d);
    let containers = deployment
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
        .map(|s| std::sync::Arc::make_mut(s).containers.iter_mut());
    for c in containers.into_iter().flatten() {
        let requests: std::collections::BTreeMap<String, Quantity> =
            [("cpu", "50m"), ("memory", "128Mi")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                .collect();
        if let Some(r) = c.resources.as_mut() {
            r.requests = Some(requests.clone());
            r.limits = Some(requests);
        }
    }
    Object::Deployment(d)
}

fn namespace(name: &str) -> Object {
    Object::Namespace(std::sync::Arc::new(Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }))
}

/// The initial objects: the zoned nodes, then per namespace the namespace and its Deployment.
fn objects(e: &Envelope) -> Vec<Object> {
    let mut objects = workloads::zoned_nodes(e.nodes, &ZONES);
    for i in 0..e.namespaces {
        let ns = format!("ns-{i}");
        objects.push(namespace(&ns));
        objects.push(small_deployment(&ns, e.replicas));
    }
    objects
}

/// The scenario: the day, and a `nodeDown` step for every node of the last zone at the
/// outage hour.
fn scenario(version: KubeVersion, e: &Envelope) -> Scenario {
    let down = ZONES[ZONES.len() - 1];
    let steps = (0..e.nodes)
        .map(node_zone)
        .filter(|(_, zone)| *zone == down)
        .enumerate()
        .map(|(index, (node, _))| Step {
            at: e.outage_at(),
            index,
            action: StepAction::NodeDown { node },
        })
        .collect();
    Scenario {
        duration: Some(e.end() - SimTime::ZERO),
        steps,
        ..Scenario::for_version(Some(version))
    }
}

fn node_name(p: &StoredPod) -> Option<&str> {
    p.node_name()
}

/// Pods not being deleted that are bound and Ready.
fn ready_pods(store: &Store) -> usize {
    store
        .pods()
        .filter(|p| p.metadata.deletion_timestamp.is_none() && is_pod_ready(p))
        .count()
}

/// What the run left: counted from the store, the events and the counters.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Nodes of the downed zone whose Ready condition is no longer True.
    pub zone_nodes_not_ready: usize,
    /// Nodes of the downed zone carrying the unreachable NoExecute taint.
    pub zone_nodes_tainted: usize,
    pub zone_nodes: usize,
    /// Pods on the downed zone's nodes that are being deleted (evicted, the agent cannot
    /// confirm).
    pub pods_terminating_in_zone: usize,
    /// Pods not being deleted: all of them, the Ready ones, and those in the downed zone.
    pub pods_live: usize,
    pub pods_live_ready: usize,
    pub pods_live_in_zone: usize,
    /// `TaintManagerEviction` events (pods the taint-eviction controller deleted).
    pub evictions: usize,
    /// `Scheduled` events past the first placement of every pod (the replacements).
    pub rescheduled: usize,
    pub node_not_ready_events: usize,
    /// Seconds after the outage of the first and the last `TaintManagerEviction`.
    pub evictions_from: f64,
    pub evictions_to: f64,
}

fn outcome(sim: &Simulation, e: &Envelope) -> Outcome {
    let down = ZONES[ZONES.len() - 1];
    let in_zone = |node: Option<&str>| {
        node.and_then(|n| n.strip_prefix("node-"))
            .and_then(|i| i.parse::<usize>().ok())
            .is_some_and(|i| node_zone(i).1 == down)
    };
    let mut o = Outcome::default();
    for n in sim.store.nodes() {
        if n.metadata.labels.as_ref().and_then(|l| l.get(ZONE_LABEL)) != Some(&down.to_string()) {
            continue;
        }
        o.zone_nodes += 1;
        let status = n.status.as_ref();
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        o.zone_nodes_not_ready += usize::from(!ready);
        let tainted = n
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .is_some_and(|ts| {
                ts.iter()
                    .any(|t| t.key == UNREACHABLE_TAINT && t.effect == "NoExecute")
            });
        o.zone_nodes_tainted += usize::from(tainted);
    }
    for p in sim.store.pods() {
        let zone = in_zone(node_name(p));
        if p.metadata.deletion_timestamp.is_some() {
            o.pods_terminating_in_zone += usize::from(zone);
            continue;
        }
        o.pods_live += 1;
        o.pods_live_ready += usize::from(is_pod_ready(p));
        o.pods_live_in_zone += usize::from(zone);
    }
    let count = |reason: &str| sim.events().iter().filter(|e| e.reason() == reason).count();
    o.evictions = count("TaintManagerEviction");
    o.rescheduled = count("Scheduled").saturating_sub(e.pods());
    o.node_not_ready_events = count("NodeNotReady");
    let after_outage = |ev: &std::sync::Arc<kubeplane_core::event::EventRecord>| {
        (ev.time() - e.outage_at()).as_secs_f64()
    };
    let mut evictions = sim
        .events()
        .iter()
        .filter(|ev| ev.reason() == "TaintManagerEviction");
    o.evictions_from = evictions.next().map_or(0.0, after_outage);
    o.evictions_to = evictions.next_back().map_or(o.evictions_from, after_outage);
    o
}

/// The end of phase 1: its wall seconds, the virtual instant every pod was Ready, and the
/// process's peak memory then (MiB).
#[derive(Clone, Copy, Debug)]
struct Phase1 {
    wall: f64,
    at: SimTime,
    peak_mib: f64,
}

/// Runs the envelope and returns phase 1 (`None` when not every pod was Ready within its
/// allowance), the wall seconds of phase 2, and the simulation at its end.
fn run_envelope(
    version: KubeVersion,
    e: &Envelope,
) -> Result<(Option<Phase1>, f64, Simulation), String> {
    let expected = e.pods();
    let started = Instant::now();
    let mut sim = Simulation::new(
        workloads::input(objects(e), scenario(version, e)),
        &RunOptions::default(),
    )
    .map_err(|err| err.to_string())?;
    let allowance = SimTime::ZERO + PHASE_1_ALLOWANCE;
    let mut phase_1: Option<Phase1> = None;
    rayon::scope(|_| {
        sim.run_observed(&mut |store, now, _| {
            if phase_1.is_none() && now <= allowance && ready_pods(store) == expected {
                phase_1 = Some(Phase1 {
                    wall: started.elapsed().as_secs_f64(),
                    at: now,
                    peak_mib: peak_memory_mib().unwrap_or(0.0),
                });
            }
        })
    })
    .map_err(|err| err.to_string())?;
    let wall = started.elapsed().as_secs_f64();
    let phase_2 = wall - phase_1.map_or(wall, |p| p.wall);
    Ok((phase_1, phase_2, sim))
}

/// The `envelope` workload: prints and records its figures and checks its outcome.
pub fn envelope(version: KubeVersion, e: Envelope, metrics: bool) -> Result<(), String> {
    let (phase_1, phase_2, sim) = run_envelope(version, &e)?;
    let o = outcome(&sim, &e);
    let pods = e.pods();
    let name = format!(
        "Envelope/{}Nodes_{}Namespaces_{}Pods_{}h_ZoneOutage",
        e.nodes, e.namespaces, pods, e.hours
    );
    label(&name);
    param("nodes", e.nodes);
    param("zones", ZONES.len());
    param("namespaces", e.namespaces);
    param("pods", pods);
    param("virtual_hours", e.hours);
    param("outage_hour", e.outage_hour);
    let p1 = phase_1.unwrap_or(Phase1 {
        wall: f64::NAN,
        at: SimTime::ZERO,
        peak_mib: 0.0,
    });
    let p1_wall = p1.wall;
    figure("all scheduled and ready", p1_wall, "s");
    figure("throughput", pods as f64 / p1_wall, "pods/s");
    figure("24 h with a zone outage", phase_2, "s");
    figure("peak memory when all were ready", p1.peak_mib, "MiB");
    println!(
        "{name}: phase 1 {p1_wall:.2} s wall ({:.0} pods/s, all Ready at {:.0} s virtual, peak memory then {:.0} MiB); {} h with {} of {} nodes down from hour {}: {phase_2:.2} s wall; {} zone nodes NotReady, {} tainted unreachable, {} pods evicted ({:.0} s to {:.0} s after the outage), {} rescheduled, {} terminating in the zone, {}/{} pods live and Ready; peak memory {:.0} MiB",
        pods as f64 / p1_wall,
        p1.at.as_secs_f64(),
        p1.peak_mib,
        e.hours,
        o.zone_nodes,
        e.nodes,
        e.outage_hour,
        o.zone_nodes_not_ready,
        o.zone_nodes_tainted,
        o.evictions,
        o.evictions_from,
        o.evictions_to,
        o.rescheduled,
        o.pods_terminating_in_zone,
        o.pods_live_ready,
        pods,
        peak_memory_mib().unwrap_or(0.0)
    );
    record_outcome(&o);
    if metrics {
        for (name, value) in sim.metrics() {
            println!("  {name} {value}");
        }
        let mut reasons: std::collections::BTreeMap<&str, usize> = Default::default();
        for ev in sim.events() {
            *reasons.entry(ev.reason()).or_default() += 1;
        }
        for (reason, n) in reasons {
            println!("  events{{reason=\"{reason}\"}} {n}");
        }
    }
    check(&e, phase_1.is_some(), &o)
}

/// The outcome's counts, as parameters of the record (they are results, not figures to
/// compare: `bench --json` readers and the tests check them).
fn record_outcome(o: &Outcome) {
    param("zone_nodes", o.zone_nodes);
    param("zone_nodes_not_ready", o.zone_nodes_not_ready);
    param("zone_nodes_tainted", o.zone_nodes_tainted);
    param("pods_evicted", o.evictions);
    param("evictions_from_s_after_outage", o.evictions_from);
    param("evictions_to_s_after_outage", o.evictions_to);
    param("pods_rescheduled", o.rescheduled);
    param("pods_terminating_in_zone", o.pods_terminating_in_zone);
    param("pods_live", o.pods_live);
    param("pods_live_ready", o.pods_live_ready);
    param("pods_live_in_zone", o.pods_live_in_zone);
}

/// Every pod Ready in phase 1; at the end every node of the zone NotReady and tainted, and
/// every Deployment back at full strength outside it.
fn check(e: &Envelope, phase_1_done: bool, o: &Outcome) -> Result<(), String> {
    let pods = e.pods();
    if !phase_1_done {
        return Err(format!(
            "envelope: not all {pods} pods were Ready within {} s of virtual time",
            PHASE_1_ALLOWANCE.as_secs_f64()
        ));
    }
    if o.zone_nodes_not_ready != o.zone_nodes || o.zone_nodes_tainted != o.zone_nodes {
        return Err(format!(
            "envelope: of the {} nodes of the downed zone {} are NotReady and {} tainted",
            o.zone_nodes, o.zone_nodes_not_ready, o.zone_nodes_tainted
        ));
    }
    if o.pods_live != pods || o.pods_live_ready != pods || o.pods_live_in_zone != 0 {
        return Err(format!(
            "envelope: at the end {} pods are live ({} Ready, {} in the downed zone), expected {pods} Ready outside it",
            o.pods_live, o.pods_live_ready, o.pods_live_in_zone
        ));
    }
    Ok(())
}

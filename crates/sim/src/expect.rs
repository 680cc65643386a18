//! Checking a scenario's assertions against the store and the recorded events.
//!
//! [`evaluate`] is a pure function of the state it is given: the engine calls it after
//! everything due at the assertion's time has happened. The message of an [`Outcome`] is the
//! assertion in the form a person reads (`pod default/p1 node=n2`) and, on failure, what was
//! found instead (`: found node=n1`).

use kubeplane_api::PodExt;
use kubeplane_api::StoredPod;
use std::fmt;
use std::sync::Arc;

use kubeplane_core::{EventRecord, SimTime};
use kubeplane_store::{Kind, Object, Store};

use crate::scenario::{
    Assertion, EventAssertion, PodAssertion, PodsAssertion, ReplicaSetAssertion,
};

/// The result of checking one assertion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub passed: bool,
    /// The assertion and, on failure, what was found.
    pub message: String,
}

impl Outcome {
    fn pass(a: &impl fmt::Display) -> Outcome {
        Outcome {
            passed: true,
            message: a.to_string(),
        }
    }

    fn fail(a: &impl fmt::Display, found: impl fmt::Display) -> Outcome {
        Outcome {
            passed: false,
            message: format!("{a}: found {found}"),
        }
    }
}

/// Checks an assertion at `now`. Only events recorded at or before `now` count.
pub fn evaluate(
    a: &Assertion,
    store: &Store,
    events: &[Arc<EventRecord>],
    now: SimTime,
) -> Outcome {
    match a {
        Assertion::Pod(p) => pod(p, store),
        Assertion::Pods(p) => pods(p, store),
        Assertion::Event(e) => event(e, events, now),
        Assertion::ReplicaSet(r) => replica_set(r, store),
    }
}

// ---------------------------------------------------------------------------------------------
// what a pod looks like to an assertion

/// `spec.nodeName`, if bound.
fn bound_node(p: &StoredPod) -> Option<&str> {
    p.node_name().filter(|n| !n.is_empty())
}

/// `status.phase`; a pod without one is Pending, as the API server makes it on creation.
fn phase(p: &StoredPod) -> &str {
    p.phase().filter(|s| !s.is_empty()).unwrap_or("Pending")
}

fn is_ready(p: &StoredPod) -> bool {
    p.status()
        .is_some_and(|s| s.any_condition(|t, st| t == "Ready" && st == "True"))
}

fn nominated_node(p: &StoredPod) -> Option<&str> {
    p.status()
        .and_then(|s| s.nominated_node_name())
        .filter(|n| !n.is_empty())
}

fn opt_node(n: Option<&str>) -> &str {
    n.unwrap_or("null")
}

fn pod(a: &PodAssertion, store: &Store) -> Outcome {
    let Some(p) = store.get_pod(&a.namespace, &a.name) else {
        return if a.exists == Some(false) {
            Outcome::pass(a)
        } else {
            Outcome::fail(a, "no such pod")
        };
    };
    if a.exists == Some(false) {
        return Outcome::fail(
            a,
            format_args!(
                "the pod exists (node={}, phase={}{})",
                opt_node(bound_node(p)),
                phase(p),
                if p.metadata.deletion_timestamp.is_some() {
                    ", terminating"
                } else {
                    ""
                }
            ),
        );
    }
    let mut found = Vec::new();
    let node = bound_node(p);
    if let Some(want) = &a.node {
        if want.as_deref() != node {
            found.push(format!("node={}", opt_node(node)));
        }
    }
    if let Some(any) = &a.node_in {
        if !node.is_some_and(|n| any.iter().any(|w| w == n)) {
            found.push(format!("node={}", opt_node(node)));
        }
    }
    if let Some(want) = &a.phase {
        if want != phase(p) {
            found.push(format!("phase={}", phase(p)));
        }
    }
    if let Some(want) = a.ready {
        if want != is_ready(p) {
            found.push(format!("ready={}", is_ready(p)));
        }
    }
    let terminating = p.metadata.deletion_timestamp.is_some();
    if let Some(want) = a.terminating {
        if want != terminating {
            found.push(format!("terminating={terminating}"));
        }
    }
    if let Some(want) = &a.nominated_node {
        if want.as_deref() != nominated_node(p) {
            found.push(format!("nominatedNode={}", opt_node(nominated_node(p))));
        }
    }
    found.dedup();
    if found.is_empty() {
        Outcome::pass(a)
    } else {
        Outcome::fail(a, found.join(", "))
    }
}

impl fmt::Display for PodAssertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pod {}/{}", self.namespace, self.name)?;
        if let Some(e) = self.exists {
            write!(f, " exists={e}")?;
        }
        if let Some(n) = &self.node {
            write!(f, " node={}", opt_node(n.as_deref()))?;
        }
        if let Some(any) = &self.node_in {
            write!(f, " nodeIn=[{}]", any.join(","))?;
        }
        if let Some(p) = &self.phase {
            write!(f, " phase={p}")?;
        }
        if let Some(r) = self.ready {
            write!(f, " ready={r}")?;
        }
        if let Some(t) = self.terminating {
            write!(f, " terminating={t}")?;
        }
        if let Some(n) = &self.nominated_node {
            write!(f, " nominatedNode={}", opt_node(n.as_deref()))?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------

fn pods(a: &PodsAssertion, store: &Store) -> Outcome {
    let empty = Default::default();
    let matching: Vec<String> = store
        .pods()
        .filter(|p| {
            let ns = p.metadata.namespace.as_deref().unwrap_or("default");
            a.namespace.as_deref().is_none_or(|want| want == ns)
                && a.selector
                    .as_ref()
                    .is_none_or(|s| s.selector.matches(p.labels().unwrap_or(&empty)))
                && a.node
                    .as_ref()
                    .is_none_or(|want| want.as_deref() == bound_node(p))
                && a.phase.as_deref().is_none_or(|want| want == phase(p))
        })
        .map(|p| {
            format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap_or("default"),
                p.metadata.name.as_deref().unwrap_or("")
            )
        })
        .collect();
    if matching.len() == a.count {
        return Outcome::pass(a);
    }
    const SHOWN: usize = 5;
    let mut found = matching.len().to_string();
    if !matching.is_empty() {
        let more = if matching.len() > SHOWN { ", ..." } else { "" };
        let shown: Vec<&str> = matching.iter().take(SHOWN).map(String::as_str).collect();
        found.push_str(&format!(" ({}{more})", shown.join(", ")));
    }
    Outcome::fail(a, found)
}

impl fmt::Display for PodsAssertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("pods")?;
        if let Some(ns) = &self.namespace {
            write!(f, " namespace={ns}")?;
        }
        if let Some(s) = &self.selector {
            write!(f, " selector={:?}", s.text)?;
        }
        if let Some(n) = &self.node {
            write!(f, " node={}", opt_node(n.as_deref()))?;
        }
        if let Some(p) = &self.phase {
            write!(f, " phase={p}")?;
        }
        write!(f, " count={}", self.count)
    }
}

// ---------------------------------------------------------------------------------------------

fn event_matches(a: &EventAssertion, e: &EventRecord) -> bool {
    a.reason.as_deref().is_none_or(|r| r == e.reason())
        && a.kind.as_deref().is_none_or(|k| k == e.kind())
        && a.object.as_ref().is_none_or(|o| {
            o.name == e.name()
                && match &o.namespace {
                    Some(ns) => *ns == e.namespace(),
                    // `name` alone: the default namespace, or a cluster-scoped object.
                    None => e.namespace().is_empty() || e.namespace() == "default",
                }
        })
        && a.message_contains
            .iter()
            .all(|s| e.message().contains(s.as_str()))
}

fn event(a: &EventAssertion, events: &[Arc<EventRecord>], now: SimTime) -> Outcome {
    let matching: Vec<&EventRecord> = events
        .iter()
        .map(|e| &**e)
        .filter(|e| e.time() <= now && event_matches(a, e))
        .collect();
    let n = matching.len();
    let mut problems = Vec::new();
    match a.count {
        Some(c) if c != n => problems.push(format!("count={n}")),
        None if n == 0 => problems.push("none".to_string()),
        _ => {}
    }
    if let Some(want) = a.first_at {
        match matching.first() {
            Some(first) => {
                let off = (first.time().0 - want.0).unsigned_abs();
                if off > a.tolerance.0.unsigned_abs() {
                    problems.push(format!("firstAt={}", first.time()));
                }
            }
            None if a.count.is_some() => problems.push("none".to_string()),
            None => {}
        }
    }
    if problems.is_empty() {
        return Outcome::pass(a);
    }
    let mut found = problems.join(", ");
    if n == 0 {
        found.push_str(&near_misses(a, events, now));
    }
    Outcome::fail(a, found)
}

/// A hint when nothing matched: up to three events with the same reason.
fn near_misses(a: &EventAssertion, events: &[Arc<EventRecord>], now: SimTime) -> String {
    let Some(reason) = &a.reason else {
        return String::new();
    };
    let same: Vec<String> = events
        .iter()
        .filter(|e| e.time() <= now && e.reason() == *reason)
        .take(3)
        .map(|e| {
            let obj = if e.namespace().is_empty() {
                e.name().to_string()
            } else {
                format!("{}/{}", e.namespace(), e.name())
            };
            format!("{} {} {obj}: {}", e.time(), e.kind(), e.message())
        })
        .collect();
    if same.is_empty() {
        format!(" (no {reason} events at all)")
    } else {
        format!(" (other {reason} events: {})", same.join("; "))
    }
}

impl fmt::Display for EventAssertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("event")?;
        if let Some(r) = &self.reason {
            write!(f, " reason={r}")?;
        }
        if let Some(k) = &self.kind {
            write!(f, " kind={k}")?;
        }
        if let Some(o) = &self.object {
            write!(f, " object={o}")?;
        }
        for m in &self.message_contains {
            write!(f, " messageContains={m:?}")?;
        }
        match self.count {
            Some(c) => write!(f, " count={c}")?,
            None => f.write_str(" count>=1")?,
        }
        if let Some(t) = self.first_at {
            write!(f, " firstAt={t}")?;
            if self.tolerance.0 != 0 {
                write!(f, "±{}s", self.tolerance.as_secs_f64())?;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------

fn replica_set(a: &ReplicaSetAssertion, store: &Store) -> Outcome {
    let rs = match store.get(Kind::ReplicaSet, &a.namespace, &a.name) {
        Some(Object::ReplicaSet(rs)) => rs,
        _ => {
            return if a.exists == Some(false) {
                Outcome::pass(a)
            } else {
                Outcome::fail(a, "no such ReplicaSet")
            }
        }
    };
    if a.exists == Some(false) {
        return Outcome::fail(a, "the ReplicaSet exists");
    }
    let status = rs.status.as_ref();
    let replicas = status.map_or(0, |s| s.replicas);
    let ready = status.and_then(|s| s.ready_replicas).unwrap_or(0);
    let available = status.and_then(|s| s.available_replicas).unwrap_or(0);
    let mut found = Vec::new();
    if a.replicas.is_some_and(|w| w != replicas) {
        found.push(format!("replicas={replicas}"));
    }
    if a.ready_replicas.is_some_and(|w| w != ready) {
        found.push(format!("readyReplicas={ready}"));
    }
    if a.available_replicas.is_some_and(|w| w != available) {
        found.push(format!("availableReplicas={available}"));
    }
    if found.is_empty() {
        Outcome::pass(a)
    } else {
        Outcome::fail(a, found.join(", "))
    }
}

impl fmt::Display for ReplicaSetAssertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "replicaSet {}/{}", self.namespace, self.name)?;
        if let Some(e) = self.exists {
            write!(f, " exists={e}")?;
        }
        if let Some(r) = self.replicas {
            write!(f, " replicas={r}")?;
        }
        if let Some(r) = self.ready_replicas {
            write!(f, " readyReplicas={r}")?;
        }
        if let Some(r) = self.available_replicas {
            write!(f, " availableReplicas={r}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Assertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Assertion::Pod(a) => a.fmt(f),
            Assertion::Pods(a) => a.fmt(f),
            Assertion::Event(a) => a.fmt(f),
            Assertion::ReplicaSet(a) => a.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use kubeplane_core::EventRecord;

    use super::*;
    use crate::scenario::{parse_files, StepAction};

    const STATE: &str = "
apiVersion: v1
kind: Pod
metadata: {name: bound, labels: {app: web}}
spec: {nodeName: n1, containers: [{name: c, image: x}]}
status:
  phase: Running
  conditions: [{type: Ready, status: 'True'}]
---
apiVersion: v1
kind: Pod
metadata: {name: pending, labels: {app: web}}
spec: {containers: [{name: c, image: x}]}
status: {nominatedNodeName: n3}
---
apiVersion: v1
kind: Pod
metadata: {name: leaving, namespace: other, deletionTimestamp: '2025-01-01T00:00:05Z'}
spec: {nodeName: n2, containers: [{name: c, image: x}]}
status: {phase: Running}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: x}]}
status: {replicas: 2, readyReplicas: 1}
";

    fn store() -> Store {
        let input = parse_files(&[("state.yaml".into(), STATE.into())]).unwrap();
        let mut store = Store::new(0, input.scenario.start_time);
        for o in input.objects {
            kubeplane_registry::client::create(&mut store, o.object, SimTime::ZERO).unwrap();
        }
        store
    }

    fn events() -> Vec<Arc<EventRecord>> {
        let ev = |secs, kind, ns: &str, name: &str, reason: &'static str, message: &str| {
            Arc::new(EventRecord::normal(
                SimTime::from_secs(secs),
                "test",
                kind,
                ns,
                name,
                reason,
                message.to_string(),
            ))
        };
        vec![
            ev(
                0,
                "Pod",
                "default",
                "bound",
                "Scheduled",
                "Successfully assigned default/bound to n1",
            ),
            ev(
                30,
                "Pod",
                "default",
                "bound",
                "TaintManagerEviction",
                "Marking for deletion Pod default/bound",
            ),
            ev(
                40,
                "Node",
                "",
                "n1",
                "NodeNotReady",
                "Node n1 status is now: NodeNotReady",
            ),
            ev(
                90,
                "Pod",
                "default",
                "bound",
                "TaintManagerEviction",
                "Marking for deletion Pod default/bound",
            ),
        ]
    }

    /// The assertions of one `expect` step written in scenario syntax.
    fn assertions(yaml: &str) -> Vec<Assertion> {
        let doc = format!(
            "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 0s\n    expect:\n{}",
            yaml.lines().map(|l| format!("    {l}\n")).collect::<String>()
        );
        let input = parse_files(&[("t.yaml".into(), doc)]).unwrap();
        match input.scenario.steps.into_iter().next().map(|s| s.action) {
            Some(StepAction::Expect(list)) => list,
            _ => panic!("no expect step"),
        }
    }

    /// Checks each `(assertion, passes, message)` at t=60s.
    fn check(cases: &[(&str, bool, &str)]) {
        let store = store();
        let events = events();
        for (yaml, passes, message) in cases {
            let a = &assertions(yaml)[0];
            let o = evaluate(a, &store, &events, SimTime::from_secs(60));
            assert_eq!(o.passed, *passes, "{yaml}: {}", o.message);
            assert_eq!(o.message, *message, "{yaml}");
        }
    }

    #[test]
    fn pod_assertions_check_every_given_field_and_say_what_was_found() {
        check(&[
            ("- pod: bound", true, "pod default/bound"),
            ("- pod: default/bound\n  node: n1\n  phase: Running\n  ready: true", true, "pod default/bound node=n1 phase=Running ready=true"),
            ("- pod: bound\n  node: n2", false, "pod default/bound node=n2: found node=n1"),
            ("- pod: bound\n  nodeIn: [n2, n3]", false, "pod default/bound nodeIn=[n2,n3]: found node=n1"),
            ("- pod: bound\n  nodeIn: [n1, n3]", true, "pod default/bound nodeIn=[n1,n3]"),
            ("- pod: pending\n  node: null\n  phase: Pending\n  ready: false\n  nominatedNode: n3", true, "pod default/pending node=null phase=Pending ready=false nominatedNode=n3"),
            ("- pod: pending\n  node: n1", false, "pod default/pending node=n1: found node=null"),
            ("- pod: bound\n  nominatedNode: null", true, "pod default/bound nominatedNode=null"),
            ("- pod: other/leaving\n  terminating: true\n  exists: true", true, "pod other/leaving exists=true terminating=true"),
            ("- pod: other/leaving\n  terminating: false\n  ready: true", false, "pod other/leaving ready=true terminating=false: found ready=false, terminating=true"),
            ("- pod: other/leaving\n  exists: false", false, "pod other/leaving exists=false: found the pod exists (node=n2, phase=Running, terminating)"),
            ("- pod: gone\n  exists: false", true, "pod default/gone exists=false"),
            ("- pod: gone\n  node: null", false, "pod default/gone node=null: found no such pod"),
        ]);
    }

    #[test]
    fn pods_assertions_count_the_pods_every_filter_selects() {
        check(&[
            ("- pods: {}\n  count: 3", true, "pods count=3"),
            (
                "- pods: {namespace: default, selector: app=web}\n  count: 2",
                true,
                "pods namespace=default selector=\"app=web\" count=2",
            ),
            (
                "- pods: {selector: app=web, node: null}\n  count: 1",
                true,
                "pods selector=\"app=web\" node=null count=1",
            ),
            (
                "- pods: {phase: Running}\n  count: 1",
                false,
                "pods phase=Running count=1: found 2 (default/bound, other/leaving)",
            ),
            (
                "- pods: {node: n9}\n  count: 1",
                false,
                "pods node=n9 count=1: found 0",
            ),
        ]);
    }

    #[test]
    fn event_assertions_count_matching_events_up_to_now() {
        check(&[
            ("- event: {reason: Scheduled, object: default/bound}", true, "event reason=Scheduled object=default/bound count>=1"),
            ("- event: {reason: TaintManagerEviction, object: bound, messageContains: Marking for deletion}\n  count: 1", true, "event reason=TaintManagerEviction object=bound messageContains=\"Marking for deletion\" count=1"),
            ("- event: {reason: TaintManagerEviction}\n  firstAt: 30s", true, "event reason=TaintManagerEviction count>=1 firstAt=30s"),
            ("- event: {reason: TaintManagerEviction}\n  firstAt: 29s", false, "event reason=TaintManagerEviction count>=1 firstAt=29s: found firstAt=30s"),
            ("- event: {reason: TaintManagerEviction}\n  firstAt: 29s\n  tolerance: 1s", true, "event reason=TaintManagerEviction count>=1 firstAt=29s±1s"),
            ("- event: {reason: NodeNotReady, object: n1, kind: Node}", true, "event reason=NodeNotReady kind=Node object=n1 count>=1"),
            ("- event: {reason: Scheduled, object: other/bound}", false, "event reason=Scheduled object=other/bound count>=1: found none (other Scheduled events: 0s Pod default/bound: Successfully assigned default/bound to n1)"),
            ("- event: {reason: Preempted}\n  count: 0", true, "event reason=Preempted count=0"),
            ("- event: {reason: Preempted}", false, "event reason=Preempted count>=1: found none (no Preempted events at all)"),
            ("- event: {reason: Scheduled, messageContains: [assigned, to n2]}", false, "event reason=Scheduled messageContains=\"assigned\" messageContains=\"to n2\" count>=1: found none (other Scheduled events: 0s Pod default/bound: Successfully assigned default/bound to n1)"),
        ]);
    }

    #[test]
    fn events_after_the_assertion_time_do_not_count() {
        let a = &assertions("- event: {reason: TaintManagerEviction}\n  count: 2")[0];
        let (store, events) = (store(), events());
        assert!(!evaluate(a, &store, &events, SimTime::from_secs(60)).passed);
        assert!(evaluate(a, &store, &events, SimTime::from_secs(90)).passed);
    }

    #[test]
    fn replica_set_assertions_compare_the_status() {
        check(&[
            (
                "- replicaSet: web\n  replicas: 2\n  readyReplicas: 1\n  availableReplicas: 0",
                true,
                "replicaSet default/web replicas=2 readyReplicas=1 availableReplicas=0",
            ),
            (
                "- replicaSet: default/web\n  replicas: 3",
                false,
                "replicaSet default/web replicas=3: found replicas=2",
            ),
            (
                "- replicaSet: web\n  exists: false",
                false,
                "replicaSet default/web exists=false: found the ReplicaSet exists",
            ),
            (
                "- replicaSet: db",
                false,
                "replicaSet default/db: found no such ReplicaSet",
            ),
            (
                "- replicaSet: db\n  exists: false",
                true,
                "replicaSet default/db exists=false",
            ),
        ]);
    }
}

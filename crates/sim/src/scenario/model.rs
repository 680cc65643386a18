//! The parsed scenario: what the simulator runs, with every reference resolved and every value
//! validated. Nothing here can fail any more; failures belong to [`super::parse`].

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::Taint;
use kubeplane_api::PropagationPolicy;
use kubeplane_core::features::FeatureGates;
use kubeplane_core::labels::Selector;
use kubeplane_core::time::SimDuration;
use kubeplane_core::version::KubeVersion;
use kubeplane_core::SimTime;
use kubeplane_store::{Object, ObjectKey};

/// Where a document came from, for messages.
///
/// `doc_index` is 0-based within its file and counts every YAML document, empty ones included;
/// messages print it 1-based (`document 3` is the third document of the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The file's display name (`-` for standard input).
    pub file: String,
    /// 0-based index of the YAML document in its file.
    pub doc_index: usize,
    /// For an item of a `v1` List: its 0-based index in `items`.
    pub item: Option<usize>,
    pub kind: String,
    /// The object's namespace as given (`""` when absent or cluster-scoped).
    pub namespace: String,
    /// `metadata.name` (or `generateName` when there is no name).
    pub name: String,
}

impl Source {
    /// The 1-based document number messages print.
    pub fn doc_number(&self) -> usize {
        self.doc_index + 1
    }

    /// `Kind ns/name`, `Kind name`, or just `Kind` when there is no name.
    pub fn what(&self) -> String {
        describe(&self.kind, &self.namespace, &self.name)
    }
}

impl fmt::Display for Source {
    /// `file: document 3 (Pod default/web-0)`, with `, items[2]` for a List item.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {}", self.file, self.doc_number())?;
        if let Some(i) = self.item {
            write!(f, ", items[{i}]")?;
        }
        let what = self.what();
        if !what.is_empty() {
            write!(f, " ({what})")?;
        }
        Ok(())
    }
}

/// `Kind ns/name`, `Kind name`, `Kind` or just the name, from what is known.
pub(crate) fn describe(kind: &str, namespace: &str, name: &str) -> String {
    let object = match (namespace.is_empty(), name.is_empty()) {
        (_, true) => String::new(),
        (true, false) => name.to_string(),
        (false, false) => format!("{namespace}/{name}"),
    };
    [kind, object.as_str()]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// An object of the initial state with the document it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct SourcedObject {
    pub source: Source,
    pub object: Object,
}

/// Everything the input files say.
#[derive(Clone, Debug)]
pub struct Input {
    /// The objects that exist at t=0, in file order (a `v1` List expands in order).
    pub objects: Vec<SourcedObject>,
    /// `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration documents, as given.
    pub scheduler_configs: Vec<(Source, serde_json::Value)>,
    /// The Scenario document, or the defaults when there is none.
    pub scenario: Scenario,
    pub scenario_source: Option<Source>,
}

/// The default virtual wall-clock time of t=0.
pub const DEFAULT_START_TIME: &str = "2025-01-01T00:00:00Z";

/// The default time a bound pod takes to become Running and Ready.
pub const DEFAULT_POD_STARTUP_LATENCY: SimDuration = SimDuration(1_000_000_000);

/// A `kubeplane.io/v1alpha1` Scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// `metadata.name`; without one, the first input file's name without directory and
    /// extension (`stdin` for `-`).
    pub name: String,
    /// The virtual wall-clock time of t=0: `spec.startTime`; without it the latest timestamp
    /// in the input's objects when that is later than [`DEFAULT_START_TIME`] (a cluster dump's
    /// pods keep their ages and nothing lies in the future), else [`DEFAULT_START_TIME`].
    pub start_time: jiff::Timestamp,
    /// Whether `spec.startTime` was given.
    pub start_time_given: bool,
    /// How long to run; `None` runs until nothing is pending (the runtime caps it).
    pub duration: Option<SimDuration>,
    pub seed: u64,
    /// Bound & Pending -> Running+Ready after this long; `None` ("never") keeps pods as they are.
    pub pod_startup_latency: Option<SimDuration>,
    /// The Kubernetes release the run follows: `--kubernetes-version`, else
    /// `spec.kubernetesVersion`, else [`kubeplane_core::version::DEFAULT`].
    pub kubernetes_version: KubeVersion,
    /// That release's defaults with the scenario's overrides applied.
    pub feature_gates: FeatureGates,
    /// Sorted by `at`, then by position in the file.
    pub steps: Vec<Step>,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            name: String::new(),
            start_time: DEFAULT_START_TIME
                .parse()
                .expect("the default start time parses"),
            start_time_given: false,
            duration: None,
            seed: 0,
            pod_startup_latency: Some(DEFAULT_POD_STARTUP_LATENCY),
            kubernetes_version: KubeVersion::default(),
            feature_gates: FeatureGates::default(),
            steps: Vec::new(),
        }
    }
}

impl Scenario {
    /// The defaults for a Kubernetes release (`None`: the default release).
    pub fn for_version(version: Option<KubeVersion>) -> Self {
        let version = version.unwrap_or_default();
        Scenario {
            kubernetes_version: version,
            feature_gates: FeatureGates::for_version(version),
            ..Scenario::default()
        }
    }
}

/// One step of the scenario.
#[derive(Clone, Debug)]
pub struct Step {
    pub at: SimTime,
    /// 0-based position of the step in `spec.steps`. An `apply` of a List becomes one step per
    /// item, all with the same index.
    pub index: usize,
    pub action: StepAction,
}

/// What a step does. Namespaces are resolved (`default` when not given).
#[derive(Clone, Debug)]
pub enum StepAction {
    /// Create, or replace the object of the same kind/namespace/name.
    Apply(Object),
    /// Graceful delete, like `kubectl delete`.
    Delete {
        key: ObjectKey,
        grace_period_secs: Option<i64>,
        /// `propagationPolicy` (`kubectl delete --cascade=...`); `None`: the object's default.
        propagation_policy: Option<PropagationPolicy>,
    },
    /// Add a taint, replacing one with the same key and effect.
    Taint {
        node: String,
        taint: Taint,
    },
    /// Remove the taints with that key (and effect, if given).
    Untaint {
        node: String,
        key: String,
        effect: Option<String>,
    },
    Cordon {
        node: String,
    },
    Uncordon {
        node: String,
    },
    /// Set `spec.replicas` of a ReplicaSet or Deployment.
    Scale {
        key: ObjectKey,
        replicas: i32,
    },
    Annotate {
        key: ObjectKey,
        set: BTreeMap<String, String>,
        remove: Vec<String>,
    },
    Label {
        key: ObjectKey,
        set: BTreeMap<String, String>,
        remove: Vec<String>,
    },
    /// The node's agent stops reporting status.
    NodeDown {
        node: String,
    },
    /// The node's agent resumes reporting status.
    NodeUp {
        node: String,
    },
    /// The node's agent reports this condition (type is one of the five node conditions,
    /// status one of True, False, Unknown).
    NodeCondition {
        node: String,
        type_: String,
        status: String,
        reason: Option<String>,
    },
    /// The node agent reports a new pod status; at least one of the fields is set.
    PodStatus {
        namespace: String,
        name: String,
        phase: Option<String>,
        ready: Option<bool>,
        restart_count: Option<i32>,
        /// The containers exited with this code: the pod turns Succeeded (0) or Failed, as
        /// the `kubeplane.io/exit-code` annotation ends it.
        exit_code: Option<i32>,
    },
    /// `kubectl drain`: cordon the node, then evict its pods as kubectl does, over virtual
    /// time (see [`crate::drain`]).
    Drain(crate::drain::DrainOptions),
    /// Checked after everything due at the step's time has happened.
    Expect(Vec<Assertion>),
}

impl StepAction {
    /// The action's name as written in the scenario (`apply`, `nodeDown`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            StepAction::Apply(_) => "apply",
            StepAction::Delete { .. } => "delete",
            StepAction::Taint { .. } => "taint",
            StepAction::Untaint { .. } => "untaint",
            StepAction::Cordon { .. } => "cordon",
            StepAction::Uncordon { .. } => "uncordon",
            StepAction::Scale { .. } => "scale",
            StepAction::Annotate { .. } => "annotate",
            StepAction::Label { .. } => "label",
            StepAction::NodeDown { .. } => "nodeDown",
            StepAction::NodeUp { .. } => "nodeUp",
            StepAction::NodeCondition { .. } => "nodeCondition",
            StepAction::PodStatus { .. } => "podStatus",
            StepAction::Drain(_) => "drain",
            StepAction::Expect(_) => "expect",
        }
    }
}

/// One checked statement about the state or the event history. Every field given is checked;
/// `None` means "not given". `Display` renders the assertion as a person would read it.
#[derive(Clone, Debug)]
pub enum Assertion {
    Pod(PodAssertion),
    Pods(PodsAssertion),
    Event(EventAssertion),
    ReplicaSet(ReplicaSetAssertion),
}

/// `- pod: ns/name` and its fields. With no field given, the pod must exist.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodAssertion {
    pub namespace: String,
    pub name: String,
    /// `false`: the pod is gone.
    pub exists: Option<bool>,
    /// `Some(None)` (`node: null`): not bound; `Some(Some(n))`: bound to `n`.
    pub node: Option<Option<String>>,
    /// Bound to one of these.
    pub node_in: Option<Vec<String>>,
    /// `status.phase` (a pod without one is Pending).
    pub phase: Option<String>,
    /// The Ready condition is True.
    pub ready: Option<bool>,
    /// `deletionTimestamp` is set.
    pub terminating: Option<bool>,
    /// `Some(None)` (`nominatedNode: null`): no nominated node.
    pub nominated_node: Option<Option<String>>,
}

/// A label selector as written (`app=web`) and compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedSelector {
    pub text: String,
    pub selector: Selector,
}

/// `- pods: {namespace?, selector?, node?, phase?}` with `count`: how many pods match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodsAssertion {
    /// `None`: every namespace.
    pub namespace: Option<String>,
    pub selector: Option<ParsedSelector>,
    /// `Some(None)` (`node: null`): unbound pods only.
    pub node: Option<Option<String>>,
    pub phase: Option<String>,
    pub count: usize,
}

/// A reference to an object by `namespace/name` or just `name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    /// `None` when written without a namespace: matches namespace `default` and cluster-scoped
    /// objects (Nodes) alike.
    pub namespace: Option<String>,
    pub name: String,
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// `- event: {reason?, object?, kind?, messageContains?}` with `count?`, `firstAt?`,
/// `tolerance?`: the events recorded up to the assertion's time that match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventAssertion {
    pub reason: Option<String>,
    pub object: Option<ObjectRef>,
    /// The involved object's kind (`Pod`, `Node`, ...).
    pub kind: Option<String>,
    /// Every string must occur in the message.
    pub message_contains: Vec<String>,
    /// Exactly this many; `None`: at least one.
    pub count: Option<usize>,
    /// The first matching event happened at this time, within `tolerance`.
    pub first_at: Option<SimTime>,
    pub tolerance: SimDuration,
}

/// `- replicaSet: ns/name` with any of `replicas`, `readyReplicas`, `availableReplicas`
/// (compared with the status). With no field given, the ReplicaSet must exist.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicaSetAssertion {
    pub namespace: String,
    pub name: String,
    pub exists: Option<bool>,
    pub replicas: Option<i32>,
    pub ready_replicas: Option<i32>,
    pub available_replicas: Option<i32>,
}

/// Why the input is invalid: the file, the document, the field and what was expected.
///
/// `doc` is the 0-based document index (as [`Source::doc_index`]) and `Kind ns/name` of the
/// document; `Display` prints the index 1-based. `field` is a path like
/// `spec.containers[0].resources.requests.cpu`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub file: String,
    pub doc: Option<(usize, String)>,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for InputError {
    /// One line: `scenario.yaml: document 3 (Pod default/web-0): spec.containers[0].image: ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some((idx, what)) = &self.doc {
            write!(f, ": document {}", idx + 1)?;
            if !what.is_empty() {
                write!(f, " ({what})")?;
            }
        }
        if let Some(field) = &self.field {
            write!(f, ": {field}")?;
        }
        // One line, whatever the underlying error printed.
        write!(f, ": {}", self.message.trim().replace('\n', " "))
    }
}

impl std::error::Error for InputError {}

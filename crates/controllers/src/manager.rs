//! The controller manager: which controllers run, listed once for every runtime, in the order
//! they run at each instant, with kube-controller-manager's names for them and its
//! `--controllers` selection (`*`, `foo`, `-foo`; upstream `IsControllerEnabled`).

use kubeplane_api::Component;
use kubeplane_core::features::FeatureGates;

use crate::cronjob::CronJobController;
use crate::daemon::DaemonSetsController;
use crate::deployment::DeploymentController;
use crate::disruption::DisruptionController;
use crate::garbage_collector::GarbageCollector;
use crate::job::JobController;
use crate::namespace::NamespaceController;
use crate::node_lifecycle::{NodeLifecycleConfig, NodeLifecycleController};
use crate::pod_gc::{PodGcController, DEFAULT_TERMINATED_POD_THRESHOLD};
use crate::replicaset::ReplicaSetController;
use crate::statefulset::StatefulSetController;
use crate::taint_eviction::TaintEvictionController;
use crate::ttl_after_finished::TtlAfterFinishedController;

/// A controller kubeplane implements: upstream's name (`cmd/kube-controller-manager/names`),
/// its older alias, and whether it runs periodically for as long as the cluster exists.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub periodic: bool,
}

const fn d(name: &'static str, alias: Option<&'static str>) -> Descriptor {
    Descriptor {
        name,
        alias,
        periodic: false,
    }
}

/// Every controller kubeplane implements, in the order they run at each instant (the periodic
/// node lifecycle controller runs before the others).
pub const CONTROLLERS: [Descriptor; 13] = [
    Descriptor {
        name: "node-lifecycle-controller",
        alias: Some("nodelifecycle"),
        periodic: true,
    },
    d("taint-eviction-controller", None),
    d("deployment-controller", Some("deployment")),
    d("replicaset-controller", Some("replicaset")),
    d("statefulset-controller", Some("statefulset")),
    d("daemonset-controller", Some("daemonset")),
    d("disruption-controller", Some("disruption")),
    d("garbage-collector-controller", Some("garbagecollector")),
    d("pod-garbage-collector-controller", Some("podgc")),
    d("namespace-controller", Some("namespace")),
    d("job-controller", Some("job")),
    d("cronjob-controller", Some("cronjob")),
    d("ttl-after-finished-controller", Some("ttl-after-finished")),
];

/// kube-controller-manager's other controllers: accepted in a selection (a command line
/// written for kube-controller-manager stays valid) and not run.
pub const NOT_IMPLEMENTED: [&str; 30] = [
    "serviceaccount-token-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "endpointslice-mirroring-controller",
    "replicationcontroller-controller",
    "resourcequota-controller",
    "serviceaccount-controller",
    "horizontal-pod-autoscaler-controller",
    "certificatesigningrequest-signing-controller",
    "certificatesigningrequest-approving-controller",
    "certificatesigningrequest-cleaner-controller",
    "ttl-controller",
    "bootstrap-signer-controller",
    "token-cleaner-controller",
    "node-ipam-controller",
    "persistentvolume-binder-controller",
    "persistentvolume-attach-detach-controller",
    "persistentvolume-expander-controller",
    "clusterrole-aggregation-controller",
    "persistentvolumeclaim-protection-controller",
    "persistentvolume-protection-controller",
    "root-ca-certificate-publisher-controller",
    "ephemeral-volume-controller",
    "storageversion-garbage-collector-controller",
    "resourceclaim-controller",
    "legacy-serviceaccount-token-cleaner-controller",
    "validatingadmissionpolicy-status-controller",
    "service-cidr-controller",
    "storage-version-migrator-controller",
    "selinux-warning-controller",
];

/// The controllers' settings that kube-controller-manager's flags set.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub node_lifecycle: NodeLifecycleConfig,
    /// `--terminated-pod-gc-threshold`.
    pub terminated_pod_gc_threshold: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            node_lifecycle: NodeLifecycleConfig::default(),
            terminated_pod_gc_threshold: DEFAULT_TERMINATED_POD_THRESHOLD,
        }
    }
}

/// A `--controllers` list: canonical names, each maybe prefixed with `-`, and `*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    items: Vec<String>,
}

impl Default for Selection {
    /// `*`: every controller (none of kubeplane's is off by default upstream).
    fn default() -> Self {
        Selection {
            items: vec!["*".into()],
        }
    }
}

fn canonical(name: &str) -> Option<&'static str> {
    CONTROLLERS
        .iter()
        .find(|c| c.name == name || c.alias == Some(name))
        .map(|c| c.name)
        .or_else(|| NOT_IMPLEMENTED.iter().copied().find(|n| *n == name))
}

impl Selection {
    /// Reads the items of `--controllers` (empty items are skipped; no item at all runs no
    /// controller, as upstream). Aliases become the canonical names. An unknown name is an
    /// error with upstream's message; `-*` (kubeplane's) turns every controller off.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<Selection, String> {
        let mut out = Vec::new();
        for item in items.iter().map(|s| s.as_ref().trim()) {
            if item.is_empty() {
                continue;
            }
            if item == "*" || item == "-*" {
                out.push(item.to_string());
                continue;
            }
            let (minus, name) = match item.strip_prefix('-') {
                Some(n) => ("-", n),
                None => ("", item),
            };
            let Some(name) = canonical(name) else {
                return Err(format!("{name:?} is not in the list of known controllers"));
            };
            out.push(format!("{minus}{name}"));
        }
        Ok(Selection { items: out })
    }

    /// Whether a controller runs: the first item naming it (`foo` or `-foo`) decides; else
    /// it runs when the list has `*` (and no later `-*`, kubeplane's "none but those named").
    pub fn enabled(&self, name: &str) -> bool {
        let mut star = false;
        for item in &self.items {
            match item.strip_prefix('-') {
                Some("*") => star = false,
                Some(n) if n == name => return false,
                None if item == "*" => star = true,
                None if item == name => return true,
                _ => {}
            }
        }
        star
    }

    /// kube-controller-manager's controllers the selection names explicitly that kubeplane
    /// does not implement (for a note at start).
    pub fn not_implemented(&self) -> Vec<&str> {
        self.items
            .iter()
            .map(String::as_str)
            .filter(|i| NOT_IMPLEMENTED.contains(i))
            .collect()
    }
}

/// The controller of a descriptor's name.
fn build(
    name: &str,
    features: &FeatureGates,
    settings: &Settings,
) -> Option<Box<dyn Component + Send>> {
    Some(match name {
        "node-lifecycle-controller" => Box::new(NodeLifecycleController::new(
            settings.node_lifecycle.clone(),
        )),
        "taint-eviction-controller" => Box::new(TaintEvictionController::new()),
        "deployment-controller" => Box::new(DeploymentController::with_features(features)),
        "replicaset-controller" => Box::new(ReplicaSetController::with_features(features.clone())),
        "statefulset-controller" => Box::new(StatefulSetController::with_features(features)),
        "daemonset-controller" => Box::new(DaemonSetsController::new()),
        "disruption-controller" => Box::new(DisruptionController::new()),
        "garbage-collector-controller" => Box::new(GarbageCollector::new()),
        "pod-garbage-collector-controller" => {
            Box::new(PodGcController::new(settings.terminated_pod_gc_threshold))
        }
        "namespace-controller" => Box::new(NamespaceController::new()),
        "job-controller" => Box::new(JobController::new()),
        "cronjob-controller" => Box::new(CronJobController::new()),
        "ttl-after-finished-controller" => Box::new(TtlAfterFinishedController::new()),
        _ => return None,
    })
}

/// The selected controllers with their names: the periodic ones and the others, each in
/// [`CONTROLLERS`] order.
#[allow(clippy::type_complexity)]
pub fn selected(
    features: &FeatureGates,
    settings: &Settings,
    selection: &Selection,
) -> (
    Vec<(&'static str, Box<dyn Component + Send>)>,
    Vec<(&'static str, Box<dyn Component + Send>)>,
) {
    let mut periodic = Vec::new();
    let mut others = Vec::new();
    for c in CONTROLLERS.iter().filter(|c| selection.enabled(c.name)) {
        let Some(built) = build(c.name, features, settings) else {
            continue;
        };
        if c.periodic {
            periodic.push((c.name, built));
        } else {
            others.push((c.name, built));
        }
    }
    (periodic, others)
}

fn unnamed(list: Vec<(&'static str, Box<dyn Component + Send>)>) -> Vec<Box<dyn Component + Send>> {
    list.into_iter().map(|(_, c)| c).collect()
}

/// Controllers whose timers are pending work (a run without `duration` waits for them). PodGC
/// is one: it only wakes while something is collectable.
pub fn controllers(features: &FeatureGates) -> Vec<Box<dyn Component + Send>> {
    unnamed(selected(features, &Settings::default(), &Selection::default()).1)
}

/// Controllers that run periodically for as long as the cluster exists.
pub fn periodic_controllers(features: &FeatureGates) -> Vec<Box<dyn Component + Send>> {
    unnamed(selected(features, &Settings::default(), &Selection::default()).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_follows_upstreams_first_match_rule_with_aliases() {
        let cases: &[(&str, &[&str], &str, bool)] = &[
            (
                "the star runs every controller",
                &["*"],
                "replicaset-controller",
                true,
            ),
            (
                "a minus item before the star turns one off",
                &["-replicaset-controller", "*"],
                "replicaset-controller",
                false,
            ),
            (
                "a minus item after the star turns one off too",
                &["*", "-replicaset"],
                "replicaset-controller",
                false,
            ),
            (
                "the first item naming a controller decides",
                &["podgc", "-podgc"],
                "pod-garbage-collector-controller",
                true,
            ),
            (
                "a list without the star runs only what it names",
                &["deployment"],
                "replicaset-controller",
                false,
            ),
            (
                "a list without the star runs what it names",
                &["deployment"],
                "deployment-controller",
                true,
            ),
            (
                "an empty list runs nothing",
                &[],
                "namespace-controller",
                false,
            ),
            (
                "minus star runs nothing",
                &["-*"],
                "namespace-controller",
                false,
            ),
            (
                "minus star after the star turns it off",
                &["*", "-*"],
                "job-controller",
                false,
            ),
            (
                "minus star keeps what is named",
                &["-*", "job"],
                "job-controller",
                true,
            ),
        ];
        for (name, items, controller, want) in cases {
            let s = Selection::parse(items).unwrap();
            assert_eq!(s.enabled(controller), *want, "{name}");
        }
    }

    #[test]
    fn an_unknown_name_is_refused_with_upstreams_message_and_upstreams_others_are_accepted() {
        let err = Selection::parse(&["*", "-nonsense"]).unwrap_err();
        assert_eq!(err, "\"nonsense\" is not in the list of known controllers");
        let s = Selection::parse(&["*", "bootstrap-signer-controller"]).unwrap();
        assert_eq!(s.not_implemented(), vec!["bootstrap-signer-controller"]);
        assert!(s.enabled("garbage-collector-controller"));
    }

    #[test]
    fn the_default_selection_builds_every_controller_in_the_runtimes_order() {
        let f = FeatureGates::default();
        let (periodic, others) = selected(&f, &Settings::default(), &Selection::default());
        assert_eq!(periodic.len(), 1);
        assert_eq!(others.len(), CONTROLLERS.len() - 1);
        let names: Vec<&str> = others.iter().map(|(_, c)| c.name()).collect();
        let sim: Vec<&str> = controllers(&f).iter().map(|c| c.name()).collect();
        assert_eq!(names, sim);
        assert_eq!(sim[0], "taint-eviction-controller");
    }
}

/// Which controllers observe which simulated kinds (the engine's dispatch table).
#[cfg(test)]
mod dispatch_tests {
    use super::*;
    use kubeplane_api::{EventType, Kind, Object, WatchEvent};
    use kubeplane_core::SimTime;

    /// An object of each simulated kind, in the namespace `default`.
    fn object_of(kind: Kind) -> Object {
        let ns = if kind.is_namespaced() { "default" } else { "" };
        let mut value = serde_json::json!({
            "apiVersion": kind.api_version(),
            "kind": kind.as_str(),
            "metadata": {"name": "x", "uid": "u1", "resourceVersion": "1"},
        });
        if !ns.is_empty() {
            value["metadata"]["namespace"] = ns.into();
        }
        Object::from_json(&value).expect("a valid object")
    }

    #[test]
    fn a_controller_that_does_not_observe_a_kind_gets_no_work_from_its_events() {
        for mut c in controllers(&FeatureGates::default())
            .into_iter()
            .chain(periodic_controllers(&FeatureGates::default()))
        {
            let before = (c.next_wakeup(), c.metrics());
            let ignored: Vec<Kind> = Kind::ALL.into_iter().filter(|&k| !c.observes(k)).collect();
            for kind in ignored {
                let obj = object_of(kind);
                for type_ in [EventType::Added, EventType::Modified, EventType::Deleted] {
                    let old = (type_ != EventType::Added).then(|| obj.clone());
                    let ev = WatchEvent {
                        type_,
                        object: obj.clone(),
                        old,
                        resource_version: 2,
                    };
                    c.observe(&ev, SimTime::from_secs(5));
                }
                assert_eq!(
                    (c.next_wakeup(), c.metrics()),
                    before,
                    "{} after events of a {}",
                    c.name(),
                    kind.as_str()
                );
            }
        }
    }

    #[test]
    fn the_garbage_collector_and_the_node_lifecycle_controller_observe_leases() {
        let observing: Vec<&str> = controllers(&FeatureGates::default())
            .iter()
            .chain(periodic_controllers(&FeatureGates::default()).iter())
            .filter(|c| c.observes(Kind::Lease))
            .map(|c| c.name())
            .collect();
        assert_eq!(
            observing,
            [
                "garbage-collector",
                "namespace-controller",
                "node-lifecycle-controller"
            ]
        );
    }
}

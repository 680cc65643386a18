//! One-line what-ifs: `simulate cluster.yaml --at 1m --taint n3:dedicated=db:NoExecute -n shop
//! --scale deployment/web=20 --node-down n4` turns each flag into a scenario step, so a quick
//! question needs no Scenario document.
//!
//! Flags apply in the order given: each step happens at the time of the last `--at` before it
//! (0 when there is none), and a `KIND/NAME` reference lives in the namespace of the last
//! `-n`/`--namespace` before it (`default` when there is none). clap keeps each flag's values
//! apart, so `main` hands over every what-if flag with its position on the command line.
//!
//! `--drain NODE` is `kubectl drain NODE`; its options (`--force`, `--timeout`, ...) are
//! kubectl's flags of the same names and apply to every `--drain` of the command line.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Taint;
use kubeplane_api::{Kind, ObjectKey};
use kubeplane_core::duration::parse_duration;
use kubeplane_core::time::SimDuration;
use kubeplane_core::SimTime;
use kubeplane_sim::drain::DrainOptions;
use kubeplane_sim::scenario::{Input, Step, StepAction};

/// The what-if flags, by clap argument id, as the command line names them.
pub const FLAGS: [(&str, &str); 11] = [
    ("at", "--at"),
    ("namespace", "--namespace"),
    ("taint", "--taint"),
    ("untaint", "--untaint"),
    ("cordon", "--cordon"),
    ("uncordon", "--uncordon"),
    ("node_down", "--node-down"),
    ("node_up", "--node-up"),
    ("scale", "--scale"),
    ("delete", "--delete"),
    ("drain", "--drain"),
];

/// The options of `--drain`, as given (kubectl drain's flags).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrainFlags {
    pub ignore_daemonsets: bool,
    pub delete_emptydir_data: bool,
    pub force: bool,
    pub grace_period: Option<i64>,
    pub timeout: Option<String>,
    pub pod_selector: Option<String>,
    pub disable_eviction: bool,
}

impl DrainFlags {
    /// The first option given, by its flag.
    fn first_given(&self) -> Option<&'static str> {
        [
            (self.ignore_daemonsets, "--ignore-daemonsets"),
            (self.delete_emptydir_data, "--delete-emptydir-data"),
            (self.force, "--force"),
            (self.grace_period.is_some(), "--grace-period"),
            (self.timeout.is_some(), "--timeout"),
            (self.pod_selector.is_some(), "--pod-selector"),
            (self.disable_eviction, "--disable-eviction"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// The drain of `node` with these options (kubectl's defaults for those not given).
    fn options(&self, node: &str) -> Result<DrainOptions, String> {
        let timeout = match &self.timeout {
            Some(t) => parse_duration(t).map_err(|e| format!("--timeout {t}: {e}"))?,
            None => Default::default(),
        };
        let pod_selector = self.pod_selector.clone().unwrap_or_default();
        if kubeplane_core::labels::parse(&pod_selector).is_err() {
            return Err("--pod-selector=<pod_selector> must be a valid label selector".into());
        }
        Ok(DrainOptions {
            node: node.to_string(),
            ignore_daemon_sets: self.ignore_daemonsets,
            delete_empty_dir_data: self.delete_emptydir_data,
            force: self.force,
            grace_period_seconds: self.grace_period.unwrap_or(-1),
            timeout,
            pod_selector,
            disable_eviction: self.disable_eviction,
        })
    }
}

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// One what-if flag as given: its clap id and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flag {
    pub id: &'static str,
    pub value: String,
}

fn flag_name(id: &str) -> &'static str {
    FLAGS
        .iter()
        .find(|(i, _)| *i == id)
        .map(|(_, n)| *n)
        .unwrap_or("--?")
}

/// Adds the flags' steps to the input, after the Scenario's own steps of the same instant.
/// Errors name the flag and value; a step after the end of the run (`until`, else the
/// Scenario's `spec.duration`) is one, as a Scenario's own step there is.
pub fn add_steps(
    input: &mut Input,
    flags: &[Flag],
    drain: &DrainFlags,
    until: Option<SimDuration>,
) -> Result<(), String> {
    if let Some(flag) = drain.first_given() {
        if !flags.iter().any(|f| f.id == "drain") {
            return Err(format!(
                "{flag} is an option of --drain, which is not given"
            ));
        }
    }
    let mut at = SimTime::ZERO;
    let mut namespace = "default".to_string();
    let nodes = known_nodes(input);
    let mut index = input.scenario.steps.len();
    for flag in flags {
        let err = |msg: String| format!("{} {}: {msg}", flag_name(flag.id), flag.value);
        let action = match flag.id {
            "at" => {
                let d = parse_duration(&flag.value).map_err(|e| err(e.to_string()))?;
                at = SimTime::ZERO + d;
                continue;
            }
            "namespace" => {
                namespace.clone_from(&flag.value);
                continue;
            }
            "taint" => taint(&flag.value).map_err(err)?,
            "untaint" => untaint(&flag.value).map_err(err)?,
            "scale" => scale(&flag.value, &namespace).map_err(err)?,
            "delete" => delete(&flag.value, &namespace).map_err(err)?,
            "drain" => StepAction::Drain(drain.options(&flag.value)?),
            id => node_action(id, &flag.value),
        };
        if let Some(node) = action_node(&action) {
            if !nodes.contains(node) {
                return Err(err(format!("no node {node} in the input")));
            }
        }
        if let Some(end) = until.or(input.scenario.duration) {
            if at > SimTime::ZERO + end {
                let end = kubeplane_core::duration::format_duration(end);
                let (source, hint) = match until {
                    Some(_) => ("--until", "a later --until"),
                    None => ("the Scenario's spec.duration", "--until"),
                };
                return Err(err(format!(
                    "at {at}, after the end of the run ({source} {end}): the step would never \
                     run; give {hint}"
                )));
            }
        }
        input.scenario.steps.push(Step { at, index, action });
        index += 1;
    }
    // Stable: the Scenario's steps stay first among those of one instant.
    input.scenario.steps.sort_by_key(|s| s.at);
    Ok(())
}

/// The nodes of the initial state and of the Scenario's `apply` steps.
fn known_nodes(input: &Input) -> BTreeSet<String> {
    let initial = input.objects.iter().map(|o| &o.object);
    let applied = input.scenario.steps.iter().filter_map(|s| match &s.action {
        StepAction::Apply(o) => Some(o),
        _ => None,
    });
    initial
        .chain(applied)
        .filter(|o| o.kind() == Kind::Node)
        .map(|o| o.name().to_string())
        .collect()
}

fn action_node(action: &StepAction) -> Option<&str> {
    match action {
        StepAction::Taint { node, .. }
        | StepAction::Untaint { node, .. }
        | StepAction::Cordon { node }
        | StepAction::Uncordon { node }
        | StepAction::NodeDown { node }
        | StepAction::NodeUp { node } => Some(node),
        StepAction::Drain(opts) => Some(&opts.node),
        _ => None,
    }
}

fn node_action(id: &str, node: &str) -> StepAction {
    let node = node.to_string();
    match id {
        "cordon" => StepAction::Cordon { node },
        "uncordon" => StepAction::Uncordon { node },
        "node_down" => StepAction::NodeDown { node },
        _ => StepAction::NodeUp { node },
    }
}

fn check_effect(effect: &str) -> Result<(), String> {
    if EFFECTS.contains(&effect) {
        Ok(())
    } else {
        Err(format!(
            "unsupported effect {effect:?} (expected one of: {})",
            EFFECTS.join(", ")
        ))
    }
}

/// `NODE:KEY[=VALUE]:EFFECT`.
fn taint(value: &str) -> Result<StepAction, String> {
    let usage = || "expected NODE:KEY[=VALUE]:EFFECT".to_string();
    let (node, rest) = value.split_once(':').ok_or_else(usage)?;
    let (kv, effect) = rest.rsplit_once(':').ok_or_else(usage)?;
    check_effect(effect)?;
    let (key, val) = match kv.split_once('=') {
        Some((k, v)) => (k, Some(v.to_string())),
        None => (kv, None),
    };
    if node.is_empty() || key.is_empty() {
        return Err(usage());
    }
    Ok(StepAction::Taint {
        node: node.to_string(),
        taint: Taint {
            key: key.to_string(),
            value: val,
            effect: effect.to_string(),
            time_added: None,
        },
    })
}

/// `NODE:KEY[:EFFECT]`.
fn untaint(value: &str) -> Result<StepAction, String> {
    let usage = || "expected NODE:KEY[:EFFECT]".to_string();
    let (node, rest) = value.split_once(':').ok_or_else(usage)?;
    let (key, effect) = match rest.rsplit_once(':') {
        Some((k, e)) => {
            check_effect(e)?;
            (k, Some(e.to_string()))
        }
        None => (rest, None),
    };
    if node.is_empty() || key.is_empty() {
        return Err(usage());
    }
    Ok(StepAction::Untaint {
        node: node.to_string(),
        key: key.to_string(),
        effect,
    })
}

/// `KIND/NAME` in `namespace` (cluster-scoped kinds ignore it).
fn reference(value: &str, namespace: &str) -> Result<ObjectKey, String> {
    let (kind, name) = value
        .split_once('/')
        .ok_or_else(|| "expected KIND/NAME".to_string())?;
    let kind = Kind::parse(kind).ok_or_else(|| format!("unknown kind {kind:?}"))?;
    if name.is_empty() {
        return Err("expected KIND/NAME".into());
    }
    Ok(ObjectKey::new(kind, namespace, name))
}

/// `KIND/NAME=N` for a Deployment, ReplicaSet or StatefulSet (the kinds a scenario's `scale`
/// step takes: the StatefulSet through its scale subresource).
fn scale(value: &str, namespace: &str) -> Result<StepAction, String> {
    let (target, n) = value
        .rsplit_once('=')
        .ok_or_else(|| "expected KIND/NAME=REPLICAS".to_string())?;
    let key = reference(target, namespace)?;
    let scalable = matches!(key.kind, Kind::Deployment | Kind::ReplicaSet)
        || Some(key.kind) == Kind::parse("StatefulSet");
    if !scalable {
        return Err(format!(
            "cannot scale a {} (only a deployment, replicaset or statefulset)",
            key.kind
        ));
    }
    let replicas: i32 = n
        .parse()
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| format!("replicas {n:?} is not a non-negative integer"))?;
    Ok(StepAction::Scale { key, replicas })
}

fn delete(value: &str, namespace: &str) -> Result<StepAction, String> {
    Ok(StepAction::Delete {
        key: reference(value, namespace)?,
        grace_period_secs: None,
        propagation_policy: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(list: &[(&'static str, &str)]) -> Vec<Flag> {
        list.iter()
            .map(|(id, v)| Flag {
                id,
                value: v.to_string(),
            })
            .collect()
    }

    fn input() -> Input {
        let yaml = "apiVersion: v1\nkind: Node\nmetadata: {name: n3}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n4}\n";
        kubeplane_sim::scenario::parse_files_for(&[("c.yaml".into(), yaml.into())], None).unwrap()
    }

    #[test]
    fn scale_takes_a_statefulset_by_any_of_kubectls_names() {
        let statefulset = Kind::parse("StatefulSet").unwrap();
        for name in [
            "statefulset/web=5",
            "sts/web=5",
            "statefulsets/web=5",
            "StatefulSet/web=5",
        ] {
            match scale(name, "shop").unwrap() {
                StepAction::Scale { key, replicas } => {
                    assert_eq!(key, ObjectKey::new(statefulset, "shop", "web"), "{name}");
                    assert_eq!(replicas, 5, "{name}");
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        for (value, kind) in [
            ("daemonset/agent=2", "DaemonSet"),
            ("job/pi=2", "Job"),
            ("pod/x=1", "Pod"),
        ] {
            let err = scale(value, "default").unwrap_err();
            assert_eq!(
                err,
                format!("cannot scale a {kind} (only a deployment, replicaset or statefulset)"),
                "{value}"
            );
        }
    }

    #[test]
    fn steps_take_the_time_and_namespace_given_before_them() {
        let mut i = input();
        add_steps(
            &mut i,
            &flags(&[
                ("cordon", "n3"),
                ("at", "1m"),
                ("taint", "n3:dedicated=db:NoExecute"),
                ("namespace", "shop"),
                ("scale", "deploy/web=20"),
                ("at", "30s"),
                ("delete", "pod/web-0"),
            ]),
            &DrainFlags::default(),
            None,
        )
        .unwrap();
        let got: Vec<(f64, String)> = i
            .scenario
            .steps
            .iter()
            .map(|s| {
                (
                    (s.at - SimTime::ZERO).as_secs_f64(),
                    format!("{:?}", s.action),
                )
            })
            .collect();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].0, 0.0);
        assert!(got[0].1.starts_with("Cordon"));
        assert_eq!(got[1].0, 30.0);
        assert!(got[1].1.contains("namespace: \"shop\"") && got[1].1.contains("web-0"));
        assert_eq!(got[2].0, 60.0);
        assert!(got[2].1.contains("dedicated") && got[2].1.contains("NoExecute"));
        assert!(got[3].1.contains("Deployment") && got[3].1.contains("replicas: 20"));
    }

    #[test]
    fn bad_values_name_the_flag_and_what_was_expected() {
        for (flag, value, says) in [
            (
                "taint",
                "n3:key:NoFreeze",
                "--taint n3:key:NoFreeze: unsupported effect \"NoFreeze\"",
            ),
            (
                "taint",
                "n3",
                "--taint n3: expected NODE:KEY[=VALUE]:EFFECT",
            ),
            (
                "untaint",
                "n3:key:Bogus",
                "--untaint n3:key:Bogus: unsupported effect",
            ),
            (
                "scale",
                "pod/web=2",
                "--scale pod/web=2: cannot scale a Pod",
            ),
            ("scale", "deploy/web=-1", "not a non-negative integer"),
            ("delete", "frob/x", "--delete frob/x: unknown kind \"frob\""),
            ("cordon", "n9", "--cordon n9: no node n9 in the input"),
            ("at", "soon", "--at soon: "),
        ] {
            let err = add_steps(
                &mut input(),
                &flags(&[(flag, value)]),
                &DrainFlags::default(),
                None,
            )
            .unwrap_err();
            assert!(err.contains(says), "{flag} {value}: {err}");
        }
    }

    #[test]
    fn a_step_after_the_end_of_the_run_is_an_error_unless_until_reaches_it() {
        let after = flags(&[("at", "100s"), ("cordon", "n3")]);
        let mut i = input();
        i.scenario.duration = Some(SimDuration::from_secs(90));
        let err = add_steps(&mut i, &after, &DrainFlags::default(), None).unwrap_err();
        assert!(
            err.starts_with("--cordon n3: at 100s, after the end of the run (the Scenario's spec.duration 1m30s)"),
            "{err}"
        );
        let short = Some(SimDuration::from_secs(60));
        let err = add_steps(&mut input(), &after, &DrainFlags::default(), short).unwrap_err();
        assert!(
            err.contains("(--until 1m0s)") && err.ends_with("give a later --until"),
            "{err}"
        );
        let long = Some(SimDuration::from_secs(120));
        add_steps(&mut i, &after, &DrainFlags::default(), long).unwrap();
        assert_eq!(i.scenario.steps.len(), 1);
    }

    #[test]
    fn drain_takes_kubectls_defaults_and_the_options_given() {
        let mut i = input();
        add_steps(
            &mut i,
            &flags(&[("at", "1m"), ("drain", "n3")]),
            &DrainFlags::default(),
            None,
        )
        .unwrap();
        let step = &i.scenario.steps[0];
        assert_eq!(step.at, SimTime::from_secs(60));
        let StepAction::Drain(opts) = &step.action else {
            panic!("a drain step: {:?}", step.action)
        };
        let kubectl_defaults = DrainOptions {
            node: "n3".into(),
            ..DrainOptions::default()
        };
        assert_eq!(*opts, kubectl_defaults);
        assert_eq!(opts.grace_period_seconds, -1);
        let given = DrainFlags {
            ignore_daemonsets: true,
            force: true,
            grace_period: Some(0),
            timeout: Some("2m".into()),
            pod_selector: Some("app=web".into()),
            ..DrainFlags::default()
        };
        let mut i = input();
        add_steps(&mut i, &flags(&[("drain", "n4")]), &given, None).unwrap();
        let StepAction::Drain(opts) = &i.scenario.steps[0].action else {
            panic!("a drain step")
        };
        assert!(opts.ignore_daemon_sets && opts.force && !opts.delete_empty_dir_data);
        assert_eq!(opts.grace_period_seconds, 0);
        assert_eq!(
            opts.timeout,
            kubeplane_core::time::SimDuration::from_secs(120)
        );
        assert_eq!(opts.pod_selector, "app=web");
    }

    #[test]
    fn untaint_takes_an_optional_effect_and_keys_may_have_a_prefix() {
        let mut i = input();
        add_steps(
            &mut i,
            &flags(&[
                ("untaint", "n4:example.com/gpu"),
                ("untaint", "n4:example.com/gpu:NoSchedule"),
            ]),
            &DrainFlags::default(),
            None,
        )
        .unwrap();
        let shown: Vec<String> = i
            .scenario
            .steps
            .iter()
            .map(|s| format!("{:?}", s.action))
            .collect();
        assert!(
            shown[0].contains("key: \"example.com/gpu\", effect: None"),
            "{}",
            shown[0]
        );
        assert!(
            shown[1].contains("effect: Some(\"NoSchedule\")"),
            "{}",
            shown[1]
        );
    }
}

//! From the Scenario document to the model: the spec (version, start, duration, seed) and the
//! steps, each checked as the API server or kubectl would check the action it stands for.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use kubeplane_api::PropagationPolicy;
use kubeplane_core::labels::is_qualified_name;
use kubeplane_core::time::SimDuration;
use kubeplane_core::version::KubeVersion;
use kubeplane_core::SimTime;
use kubeplane_registry::validation::{
    check_replicas, check_taint, check_taint_effect, validate_annotations_size, validate_labels,
};
use kubeplane_store::{Kind, ObjectKey};
use serde_json::Value;

use super::crds::Crds;
use super::expectations::parse_assertion;
use super::model::*;
use super::objects::{join, FieldError};
use super::parse::manifest;
use super::raw::*;

pub(super) fn parse_scenario(
    v: &Value,
    version: Option<KubeVersion>,
    crds: &Crds,
) -> Result<Scenario, FieldError> {
    let mut body = v.clone();
    if let Value::Object(m) = &mut body {
        m.remove("apiVersion");
        m.remove("kind");
    }
    let doc: ScenarioDoc = de(&body, "")?;
    let mut s = Scenario {
        name: doc.metadata.and_then(|m| m.name).unwrap_or_default(),
        ..Scenario::default()
    };
    let Some(spec) = doc.spec else {
        return Ok(Scenario {
            name: s.name,
            ..Scenario::for_version(version)
        });
    };
    (s.kubernetes_version, s.feature_gates) = super::version::resolve(
        spec.kubernetes_version.as_ref(),
        spec.feature_gates.as_ref(),
        version,
    )?;
    if let Some(t) = spec.start_time {
        s.start_time_given = true;
        s.start_time = t.trim().parse().map_err(|e| {
            FieldError::at(
                "spec.startTime",
                format!(
                    "invalid timestamp {t:?} ({e}); expected an RFC 3339 time like 2025-01-01T00:00:00Z"
                ),
            )
        })?;
    }
    s.duration = spec.duration.map(|d| d.0);
    s.seed = spec.seed.unwrap_or(0);
    if let Some(l) = spec.pod_startup_latency {
        s.pod_startup_latency = l.0;
    }
    s.steps = parse_steps(spec.steps.unwrap_or_default(), s.duration, crds)?;
    // Stable: steps due at the same time keep their order in the file.
    s.steps.sort_by_key(|step| step.at);
    Ok(s)
}

/// The steps, in the order of the file; none may be due after the end of the scenario.
fn parse_steps(
    raw_steps: Vec<StepRaw>,
    duration: Option<SimDuration>,
    crds: &Crds,
) -> Result<Vec<Step>, FieldError> {
    let mut steps = Vec::new();
    for (i, raw) in raw_steps.into_iter().enumerate() {
        let path = format!("spec.steps[{i}]");
        let Some(at) = raw.at else {
            return Err(FieldError::at(
                join(&path, "at"),
                "Required value: when the step happens (a duration since t=0, like 30s)",
            ));
        };
        let at = SimTime(at.0 .0);
        if let Some(duration) = duration.filter(|&d| at > SimTime::ZERO + d) {
            let show = |d: SimDuration| kubeplane_core::duration::format_duration(d);
            return Err(FieldError::at(
                join(&path, "at"),
                format!(
                    "Invalid value: \"{}\": after the end of the scenario (spec.duration {}): the step would never run",
                    show(at - SimTime::ZERO),
                    show(duration)
                ),
            ));
        }
        for action in step_actions(raw, &path, crds)? {
            steps.push(Step {
                at,
                index: i,
                action,
            });
        }
    }
    Ok(steps)
}

/// `namespace/name` or `name` (namespace `default`).
pub(super) fn pod_ref(s: &str, path: &str) -> Result<(String, String), FieldError> {
    let r = object_ref(s, path)?;
    Ok((r.namespace.unwrap_or_else(|| "default".into()), r.name))
}

pub(super) fn object_ref(s: &str, path: &str) -> Result<ObjectRef, FieldError> {
    let bad = || {
        FieldError::at(
            path,
            format!("invalid reference {s:?}: expected namespace/name or name"),
        )
    };
    let parts: Vec<&str> = s.trim().split('/').collect();
    match parts.as_slice() {
        [name] if !name.is_empty() => Ok(ObjectRef {
            namespace: None,
            name: name.to_string(),
        }),
        [ns, name] if !ns.is_empty() && !name.is_empty() => Ok(ObjectRef {
            namespace: Some(ns.to_string()),
            name: name.to_string(),
        }),
        _ => Err(bad()),
    }
}

pub(super) const PHASES: [&str; 5] = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];

pub(super) fn check_phase(phase: &str, path: &str) -> Result<(), FieldError> {
    if PHASES.contains(&phase) {
        Ok(())
    } else {
        Err(FieldError::at(
            path,
            format!(
                "Unsupported value: {phase:?}: supported values: {}",
                PHASES.join(", ")
            ),
        ))
    }
}

pub(super) fn non_empty(s: &str, path: &str) -> Result<(), FieldError> {
    if s.trim().is_empty() {
        Err(FieldError::at(path, "Required value"))
    } else {
        Ok(())
    }
}

/// The key of an object a step refers to by kind, name and namespace.
pub(super) fn step_key(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    path: &str,
    allowed: &[Kind],
) -> Result<ObjectKey, FieldError> {
    let k = Kind::parse(kind.trim()).filter(|k| allowed.contains(k));
    let Some(k) = k else {
        let names: Vec<&str> = allowed.iter().map(|k| k.as_str()).collect();
        return Err(FieldError::at(
            join(path, "kind"),
            format!(
                "Unsupported value: {kind:?}: supported values: {}",
                names.join(", ")
            ),
        ));
    };
    non_empty(name, &join(path, "name"))?;
    let ns = namespace.filter(|ns| !ns.is_empty()).unwrap_or("default");
    Ok(ObjectKey::new(k, ns, name))
}

/// The kinds a `delete`, `annotate` or `label` step names: the modelled kinds and the
/// workloads whose controllers kubeplane runs (stored as `Kind::Other`).
pub(super) fn user_kinds() -> Vec<Kind> {
    let mut kinds = vec![
        Kind::Namespace,
        Kind::Node,
        Kind::PriorityClass,
        Kind::Deployment,
        Kind::ReplicaSet,
        Kind::PodDisruptionBudget,
        Kind::Pod,
    ];
    kinds.extend(WORKLOADS.iter().filter_map(|k| Kind::parse(k)));
    kinds
}

/// The workload kinds kubeplane stores as `Kind::Other` and runs controllers for.
const WORKLOADS: [&str; 4] = ["DaemonSet", "StatefulSet", "Job", "CronJob"];

/// The kinds a `scale` step names: those with the scale subresource.
fn scalable_kinds() -> Vec<Kind> {
    let mut kinds = vec![Kind::ReplicaSet, Kind::Deployment];
    kinds.extend(Kind::parse("StatefulSet"));
    kinds
}

pub(super) const NODE_CONDITIONS: [&str; 5] = [
    "Ready",
    "MemoryPressure",
    "DiskPressure",
    "PIDPressure",
    "NetworkUnavailable",
];

/// A step that stands for one action.
fn one(a: StepAction) -> Result<Vec<StepAction>, FieldError> {
    Ok(vec![a])
}

/// A step has exactly one action.
fn one_action(raw: &StepRaw, path: &str) -> Result<(), FieldError> {
    let given: Vec<&str> = [
        ("apply", raw.apply.is_some()),
        ("delete", raw.delete.is_some()),
        ("taint", raw.taint.is_some()),
        ("untaint", raw.untaint.is_some()),
        ("cordon", raw.cordon.is_some()),
        ("uncordon", raw.uncordon.is_some()),
        ("scale", raw.scale.is_some()),
        ("annotate", raw.annotate.is_some()),
        ("label", raw.label.is_some()),
        ("nodeDown", raw.node_down.is_some()),
        ("nodeUp", raw.node_up.is_some()),
        ("nodeCondition", raw.node_condition.is_some()),
        ("podStatus", raw.pod_status.is_some()),
        ("drain", raw.drain.is_some()),
        ("expect", raw.expect.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, present)| present.then_some(name))
    .collect();
    match given.as_slice() {
        [_] => {}
        [] => {
            return Err(FieldError::at(
                path,
                format!("a step needs an action (one of {ACTIONS})"),
            ))
        }
        many => {
            return Err(FieldError::at(
                path,
                format!(
                    "a step has exactly one action, found {}; write one step per action",
                    many.join(" and ")
                ),
            ))
        }
    }
    Ok(())
}

pub(super) fn step_actions(
    raw: StepRaw,
    path: &str,
    crds: &Crds,
) -> Result<Vec<StepAction>, FieldError> {
    one_action(&raw, path)?;
    if let Some(v) = raw.apply {
        return apply_action(v, path, crds);
    }
    if let Some(d) = raw.delete {
        return delete_action(d, path);
    }
    if let Some(t) = raw.taint {
        return taint_action(t, path);
    }
    if let Some(u) = raw.untaint {
        return untaint_action(u, path);
    }
    let node_action = |n: NodeRaw, name: &str| -> Result<String, FieldError> {
        non_empty(&n.node, &format!("{path}.{name}.node"))?;
        Ok(n.node)
    };
    if let Some(n) = raw.cordon {
        return one(StepAction::Cordon {
            node: node_action(n, "cordon")?,
        });
    }
    if let Some(n) = raw.uncordon {
        return one(StepAction::Uncordon {
            node: node_action(n, "uncordon")?,
        });
    }
    if let Some(n) = raw.node_down {
        return one(StepAction::NodeDown {
            node: node_action(n, "nodeDown")?,
        });
    }
    if let Some(n) = raw.node_up {
        return one(StepAction::NodeUp {
            node: node_action(n, "nodeUp")?,
        });
    }
    if let Some(s) = raw.scale {
        return scale_action(s, path);
    }
    for (name, edit) in [("annotate", raw.annotate), ("label", raw.label)] {
        if let Some(m) = edit {
            return meta_edit_action(name, m, path);
        }
    }
    if let Some(c) = raw.node_condition {
        return node_condition_action(c, path);
    }
    if let Some(s) = raw.pod_status {
        return pod_status_action(s, path);
    }
    if let Some(d) = raw.drain {
        return drain_action(d, path);
    }
    let p = join(path, "expect");
    let mut assertions = Vec::new();
    for (j, a) in raw.expect.unwrap_or_default().iter().enumerate() {
        assertions.push(parse_assertion(a, &format!("{p}[{j}]"))?);
    }
    one(StepAction::Expect(assertions))
}

fn apply_action(v: Value, path: &str, crds: &Crds) -> Result<Vec<StepAction>, FieldError> {
    let p = join(path, "apply");
    if let Some(kind @ ("Scenario" | "KubeSchedulerConfiguration")) =
        v.get("kind").and_then(Value::as_str)
    {
        return Err(FieldError::at(
            join(&p, "kind"),
            format!("apply takes a Kubernetes object, not a {kind}"),
        ));
    }
    let objects = manifest(&v, crds).map_err(|e| e.within(&p))?;
    for (item, o) in &objects {
        if o.name().is_empty() {
            let at = item.map(|i| format!("items[{i}].")).unwrap_or_default();
            return Err(FieldError::at(
                format!("{p}.{at}metadata.name"),
                "Required value: an applied object needs a name (generateName is only for the initial state)",
            ));
        }
    }
    Ok(objects
        .into_iter()
        .map(|(_, o)| StepAction::Apply(o))
        .collect())
}

fn delete_action(d: DeleteRaw, path: &str) -> Result<Vec<StepAction>, FieldError> {
    let p = join(path, "delete");
    let key = step_key(&d.kind, &d.name, d.namespace.as_deref(), &p, &user_kinds())?;
    if let Some(g) = d.grace_period_seconds.filter(|g| *g < 0) {
        return Err(FieldError::at(
            join(&p, "gracePeriodSeconds"),
            format!("Invalid value: {g}: must be greater than or equal to 0"),
        ));
    }
    let propagation_policy = match d.propagation_policy.as_deref() {
        None => None,
        Some(policy) => Some(PropagationPolicy::parse(policy).ok_or_else(|| {
            FieldError::at(
                join(&p, "propagationPolicy"),
                format!(
                    "Unsupported value: {policy:?}: supported values: \"Foreground\", \
                     \"Background\", \"Orphan\""
                ),
            )
        })?),
    };
    one(StepAction::Delete {
        key,
        grace_period_secs: d.grace_period_seconds,
        propagation_policy,
    })
}

fn taint_action(t: TaintRaw, path: &str) -> Result<Vec<StepAction>, FieldError> {
    let p = join(path, "taint");
    non_empty(&t.node, &join(&p, "node"))?;
    check_taint(&t.key, t.value.as_deref(), &t.effect, &p)?;
    one(StepAction::Taint {
        node: t.node,
        taint: Taint {
            key: t.key,
            value: t.value,
            effect: t.effect,
            time_added: None,
        },
    })
}

fn untaint_action(u: UntaintRaw, path: &str) -> Result<Vec<StepAction>, FieldError> {
    let p = join(path, "untaint");
    non_empty(&u.node, &join(&p, "node"))?;
    non_empty(&u.key, &join(&p, "key"))?;
    if let Some(e) = &u.effect {
        check_taint_effect(e, &join(&p, "effect"))?;
    }
    one(StepAction::Untaint {
        node: u.node,
        key: u.key,
        effect: u.effect,
    })
}

fn scale_action(s: ScaleRaw, path: &str) -> Result<Vec<StepAction>, FieldError> {
    let p = join(path, "scale");
    let key = step_key(
        &s.kind,
        &s.name,
        s.namespace.as_deref(),
        &p,
        &scalable_kinds(),
    )?;
    check_replicas(Some(s.replicas), &join(&p, "replicas"))?;
    one(StepAction::Scale {
        key,
        replicas: s.replicas,
    })
}

fn node_condition_action(c: NodeConditionRaw, path: &str) -> Result<Vec<StepAction>, FieldError> {
    let p = join(path, "nodeCondition");
    non_empty(&c.node, &join(&p, "node"))?;
    if !NODE_CONDITIONS.contains(&c.type_.as_str()) {
        return Err(FieldError::at(
            join(&p, "type"),
            format!(
                "Unsupported value: {:?}: supported values: {}",
                c.type_,
                NODE_CONDITIONS.join(", ")
            ),
        ));
    }
    if !matches!(c.status.as_str(), "True" | "False" | "Unknown") {
        return Err(FieldError::at(
            join(&p, "status"),
            format!(
                "Unsupported value: {:?}: supported values: True, False, Unknown (quote them: 'True')",
                c.status
            ),
        ));
    }
    one(StepAction::NodeCondition {
        node: c.node,
        type_: c.type_,
        status: c.status,
        reason: c.reason,
    })
}

fn pod_status_action(s: PodStatusRaw, path: &str) -> Result<Vec<StepAction>, FieldError> {
    let p = join(path, "podStatus");
    let (namespace, name) = pod_ref(&s.pod, &join(&p, "pod"))?;
    if let Some(ph) = &s.phase {
        check_phase(ph, &join(&p, "phase"))?;
    }
    if let Some(rc) = s.restart_count.filter(|rc| *rc < 0) {
        return Err(FieldError::at(
            join(&p, "restartCount"),
            format!("Invalid value: {rc}: must be greater than or equal to 0"),
        ));
    }
    if let (Some(code), Some(ph)) = (s.exit_code, &s.phase) {
        let implied = if code == 0 { "Succeeded" } else { "Failed" };
        if ph != implied {
            return Err(FieldError::at(
                join(&p, "phase"),
                format!("Invalid value: {ph:?}: exitCode {code} ends the pod {implied}"),
            ));
        }
    }
    if s.phase.is_none() && s.ready.is_none() && s.restart_count.is_none() && s.exit_code.is_none()
    {
        return Err(FieldError::at(
            p,
            "Required value: one of phase, ready, restartCount or exitCode",
        ));
    }
    one(StepAction::PodStatus {
        namespace,
        name,
        phase: s.phase,
        ready: s.ready,
        restart_count: s.restart_count,
        exit_code: s.exit_code,
    })
}

/// `annotate` or `label` (`name`): keys and values as `kubectl annotate` and `kubectl label`
/// check them.
fn meta_edit_action(name: &str, m: MetaEditRaw, path: &str) -> Result<Vec<StepAction>, FieldError> {
    let p = join(path, name);
    let key = step_key(&m.kind, &m.name, m.namespace.as_deref(), &p, &user_kinds())?;
    let set: BTreeMap<String, String> = m.set.into_iter().map(|(k, v)| (k, v.0)).collect();
    if name == "label" {
        validate_labels(Some(&set), &join(&p, "set"))?;
    } else {
        validate_annotations_size(Some(&set), &join(&p, "set"))?;
    }
    for (field, keys) in [
        ("set", set.keys().collect::<Vec<_>>()),
        ("remove", m.remove.iter().collect()),
    ] {
        for k in keys {
            is_qualified_name(k).map_err(|e| {
                FieldError::at(join(&p, field), format!("Invalid value: {k:?}: {e}"))
            })?;
        }
    }
    let (set, remove) = (set, m.remove);
    one(if name == "label" {
        StepAction::Label { key, set, remove }
    } else {
        StepAction::Annotate { key, set, remove }
    })
}

/// `drain`: kubectl drain's options, checked as kubectl checks its flags.
fn drain_action(d: DrainRaw, path: &str) -> Result<Vec<StepAction>, FieldError> {
    let p = join(path, "drain");
    non_empty(&d.node, &join(&p, "node"))?;
    let pod_selector = d.pod_selector.unwrap_or_default();
    if let Err(e) = kubeplane_core::labels::parse(&pod_selector) {
        return Err(FieldError::at(
            join(&p, "podSelector"),
            format!("Invalid value: {pod_selector:?}: must be a valid label selector ({e})"),
        ));
    }
    one(StepAction::Drain(crate::drain::DrainOptions {
        node: d.node,
        ignore_daemon_sets: d.ignore_daemon_sets,
        delete_empty_dir_data: d.delete_empty_dir_data,
        force: d.force,
        grace_period_seconds: d.grace_period_seconds.unwrap_or(-1),
        timeout: d.timeout.map_or(SimDuration::ZERO, |t| t.0),
        pod_selector,
        disable_eviction: d.disable_eviction,
    }))
}

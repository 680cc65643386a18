//! The scenario's step verbs (`apply`, `delete`, `taint`, `cordon`, `scale`, `podStatus`,
//! `drain`, ...) as changes made through a component's [`Client`] and the node agents, so that
//! the simulator and `kubeplane serve` apply a Scenario's steps by the same rules.

use kubeplane_api::StoredPod;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ContainerStatus, NodeSpec, PodCondition, PodStatus, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubeplane_api::StoredNode;
use kubeplane_core::SimTime;
use kubeplane_store::{Client, DeleteOptions, Object, ObjectKey};

use crate::agents::NodeAgents;
use crate::drain::Drains;
use crate::scenario::StepAction;

/// What a step changes: the cluster through a client, the simulated kubelets, the drains in
/// progress.
pub struct Target<'a> {
    pub client: &'a mut dyn Client,
    pub agents: &'a mut NodeAgents,
    pub drains: &'a mut Drains,
}

/// A client call's outcome as a step reports it.
fn done<T>(r: Result<T, kubeplane_store::ApiError>) -> Result<(), String> {
    r.map(|_| ()).map_err(|e| e.to_string())
}

impl Target<'_> {
    fn exists(&self, key: &ObjectKey) -> Result<(), String> {
        match self.client.cache().get_key(key) {
            Some(_) => Ok(()),
            None => Err(format!("{key} not found")),
        }
    }

    /// Replaces the main resource of an object, as `kubectl apply` or `edit` would (its status
    /// is the server's), or with `status` its status, as its node agent would.
    fn write(&mut self, mut obj: Object, status: bool) -> Result<(), String> {
        obj.meta_mut().resource_version = None;
        if status {
            done(self.client.update_status(obj))
        } else {
            done(self.client.update(obj))
        }
    }

    /// Changes a node's spec as `edit` makes it.
    fn edit_node(
        &mut self,
        name: &str,
        edit: impl FnOnce(&mut NodeSpec) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut n = self
            .client
            .cache()
            .get_node(name)
            .map(|n| StoredNode::clone(n))
            .ok_or_else(|| format!("node {name} not found"))?;
        edit(n.spec.get_or_insert_with(Default::default))?;
        self.write(Object::Node(Arc::new(n)), false)
    }

    fn node_exists(&self, name: &str) -> Result<(), String> {
        match self.client.cache().get_node(name) {
            Some(_) => Ok(()),
            None => Err(format!("node {name} not found")),
        }
    }

    /// Applies one step action at `now` through the client the components use.
    pub fn apply(&mut self, action: &StepAction, now: SimTime) -> Result<(), String> {
        match action {
            StepAction::Apply(obj) if self.exists(&obj.key()).is_ok() => {
                self.write(obj.clone(), false)
            }
            StepAction::Apply(obj) => done(self.client.create(obj.clone())),
            StepAction::Delete {
                key,
                grace_period_secs,
                propagation_policy,
            } => {
                self.exists(key)?;
                let opts = DeleteOptions {
                    grace_period_secs: *grace_period_secs,
                    propagation_policy: *propagation_policy,
                    ..DeleteOptions::default()
                };
                // The garbage collector deletes the dependents once it sees the owner gone
                // (background), or before it goes (foreground), or orphans them.
                done(self.client.delete(key, opts))
            }
            StepAction::Taint { node, taint } => self.taint(node, taint),
            StepAction::Untaint { node, key, effect } => self.untaint(node, key, effect.as_ref()),
            StepAction::Cordon { node } | StepAction::Uncordon { node } => {
                let cordon = matches!(action, StepAction::Cordon { .. });
                self.edit_node(node, |spec| {
                    spec.unschedulable = cordon.then_some(true);
                    Ok(())
                })
            }
            StepAction::Scale { key, replicas } => {
                // `kubectl scale`: the scale subresource, without a resourceVersion
                // precondition (the step's parser admits only kinds that have one).
                self.exists(key)?;
                done(self.client.update_scale(key, *replicas, None))
            }
            StepAction::Annotate { key, set, remove } | StepAction::Label { key, set, remove } => {
                let labels = matches!(action, StepAction::Label { .. });
                self.edit_metadata(key, labels, set, remove)
            }
            StepAction::NodeDown { .. }
            | StepAction::NodeUp { .. }
            | StepAction::NodeCondition { .. } => self.node_agent(action, now),
            StepAction::PodStatus { .. } => self.pod_status(action, now),
            StepAction::Drain(opts) => self.drains.start(opts.clone(), now, self.client),
            StepAction::Expect(_) => Ok(()),
        }
    }

    /// `taint`: a taint with the same key and effect is replaced, as `kubectl taint` does.
    fn taint(&mut self, node: &str, taint: &Taint) -> Result<(), String> {
        self.edit_node(node, |spec| {
            let taints = spec.taints.get_or_insert_with(Vec::new);
            match taints
                .iter_mut()
                .find(|t| t.key == taint.key && t.effect == taint.effect)
            {
                Some(t) => *t = taint.clone(),
                None => taints.push(taint.clone()),
            }
            Ok(())
        })
    }

    /// `untaint`: every taint with the key (and the effect, when given) goes.
    fn untaint(&mut self, node: &str, key: &str, effect: Option<&String>) -> Result<(), String> {
        self.edit_node(node, |spec| {
            let taints = spec.taints.get_or_insert_with(Vec::new);
            let before = taints.len();
            taints.retain(|t| !(t.key == key && effect.is_none_or(|e| *e == t.effect)));
            if taints.len() == before {
                return Err(format!("node {node} has no taint with key {key}"));
            }
            if taints.is_empty() {
                spec.taints = None;
            }
            Ok(())
        })
    }

    /// `node-down`, `node-up` and `node-condition`: the node's simulated kubelet changes.
    fn node_agent(&mut self, action: &StepAction, now: SimTime) -> Result<(), String> {
        match action {
            StepAction::NodeDown { node } => {
                self.node_exists(node)?;
                self.agents.set_node_down(node);
            }
            StepAction::NodeUp { node } => {
                self.node_exists(node)?;
                self.agents.set_node_up(node, now);
            }
            StepAction::NodeCondition {
                node,
                type_,
                status,
                reason,
            } => {
                self.node_exists(node)?;
                self.agents
                    .set_node_condition(node, type_, status, reason.clone(), now);
            }
            _ => unreachable!("node_agent is called for node agent steps only"),
        }
        Ok(())
    }

    /// `annotate` and `label`: keys removed, then keys set.
    fn edit_metadata(
        &mut self,
        key: &ObjectKey,
        labels: bool,
        set: &BTreeMap<String, String>,
        remove: &[String],
    ) -> Result<(), String> {
        let mut obj = self
            .client
            .cache()
            .get_key(key)
            .cloned()
            .ok_or_else(|| format!("{key} not found"))?;
        let meta = obj.meta_mut();
        let map = if labels {
            meta.labels.get_or_insert_with(Default::default)
        } else {
            meta.annotations.get_or_insert_with(Default::default)
        };
        for k in remove {
            map.remove(k);
        }
        for (k, v) in set {
            map.insert(k.clone(), v.clone());
        }
        self.write(obj, false)
    }

    /// `podStatus`: the node agent reports the phase, readiness, restarts or exit code given.
    fn pod_status(&mut self, action: &StepAction, now: SimTime) -> Result<(), String> {
        let StepAction::PodStatus {
            namespace,
            name,
            phase,
            ready,
            restart_count,
            exit_code,
        } = action
        else {
            return Ok(());
        };
        let pod = self
            .client
            .cache()
            .get_pod(namespace, name)
            .cloned()
            .ok_or_else(|| format!("pod {namespace}/{name} not found"))?;
        if let Some(r) = ready {
            self.agents.set_pod_ready_report(namespace, name, *r);
        }
        let mut p = StoredPod::clone(&pod);
        let ts = self.client.clock().timestamp(now);
        let containers: Vec<String> = p
            .spec
            .as_ref()
            .map(|s| s.containers.iter().map(|c| c.name.clone()).collect())
            .unwrap_or_default();
        p.update_status(|status| {
            if let Some(phase) = phase {
                status.phase = Some(phase.clone());
            }
            if let Some(ready) = ready {
                set_ready_conditions(status, *ready, &ts);
            }
            if ready.is_some() || restart_count.is_some() {
                set_container_statuses(status, &containers, *ready, *restart_count);
            }
        });
        if let Some(code) = exit_code {
            // The containers exit now, as the kubelet reports a run that ended.
            p = crate::agents::finished_pod(&p, *code, &ts);
        }
        self.write(Object::Pod(Arc::new(p)), true)
    }
}

/// The Ready and ContainersReady conditions as `ready` says, their transition time moved only
/// when they change.
fn set_ready_conditions(status: &mut PodStatus, ready: bool, ts: &Time) {
    let value = if ready { "True" } else { "False" };
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    for type_ in ["Ready", "ContainersReady"] {
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            Some(c) => {
                if c.status != value {
                    c.status = value.to_string();
                    c.last_transition_time = Some(ts.clone());
                }
            }
            None => conditions.push(PodCondition {
                type_: type_.to_string(),
                status: value.to_string(),
                last_transition_time: Some(ts.clone()),
                ..Default::default()
            }),
        }
    }
}

/// A status for every container, with the readiness and restart count given.
fn set_container_statuses(
    status: &mut PodStatus,
    containers: &[String],
    ready: Option<bool>,
    restart_count: Option<i32>,
) {
    let statuses = status.container_statuses.get_or_insert_with(Vec::new);
    for c in containers {
        if !statuses.iter().any(|s| s.name == *c) {
            statuses.push(ContainerStatus {
                name: c.clone(),
                ..Default::default()
            });
        }
    }
    for s in statuses.iter_mut() {
        if let Some(r) = ready {
            s.ready = r;
        }
        if let Some(n) = restart_count {
            s.restart_count = n;
        }
    }
}

//! The scenario's step verbs (`apply`, `delete`, `taint`, `cordon`, `scale`, `podStatus`,
//! `drain`, ...) as changes made through a component's [`Client`] and the node agents, so that
//! the simulator and `kubeplane serve` apply a Scenario's steps by the same rules.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ContainerStatus, Node, Pod, PodCondition};
use kubeplane_core::SimTime;
use kubeplane_store::{Client, DeleteOptions, Object};

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

impl Target<'_> {
    fn node(&self, name: &str) -> Result<Node, String> {
        self.client
            .cache()
            .get_node(name)
            .map(|n| Node::clone(n))
            .ok_or_else(|| format!("node {name} not found"))
    }

    /// Replaces the main resource of an object, as `kubectl apply` or `edit` would (its status
    /// is the server's).
    fn put(&mut self, obj: Object) -> Result<(), String> {
        let mut obj = obj;
        obj.meta_mut().resource_version = None;
        self.client
            .update(obj)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Replaces the status of an object, as its node agent would.
    fn put_status(&mut self, obj: Object) -> Result<(), String> {
        let mut obj = obj;
        obj.meta_mut().resource_version = None;
        self.client
            .update_status(obj)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Applies one step action at `now` through the client the components use.
    pub fn apply(&mut self, action: &StepAction, now: SimTime) -> Result<(), String> {
        match action {
            StepAction::Apply(obj) => {
                if self.client.cache().get_key(&obj.key()).is_some() {
                    self.put(obj.clone())
                } else {
                    self.client
                        .create(obj.clone())
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }
            }
            StepAction::Delete {
                key,
                grace_period_secs,
                propagation_policy,
            } => {
                if self.client.cache().get_key(key).is_none() {
                    return Err(format!("{key} not found"));
                }
                let opts = DeleteOptions {
                    grace_period_secs: *grace_period_secs,
                    propagation_policy: *propagation_policy,
                    ..DeleteOptions::default()
                };
                // The garbage collector deletes the dependents once it sees the owner gone
                // (background), or before it goes (foreground), or orphans them.
                self.client
                    .delete(key, opts)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
            StepAction::Taint { node, taint } => {
                let mut n = self.node(node)?;
                let spec = n.spec.get_or_insert_with(Default::default);
                let taints = spec.taints.get_or_insert_with(Vec::new);
                match taints
                    .iter_mut()
                    .find(|t| t.key == taint.key && t.effect == taint.effect)
                {
                    Some(t) => *t = taint.clone(),
                    None => taints.push(taint.clone()),
                }
                self.put(Object::Node(Arc::new(n)))
            }
            StepAction::Untaint { node, key, effect } => {
                let mut n = self.node(node)?;
                let spec = n.spec.get_or_insert_with(Default::default);
                let taints = spec.taints.get_or_insert_with(Vec::new);
                let before = taints.len();
                taints
                    .retain(|t| !(t.key == *key && effect.as_ref().is_none_or(|e| *e == t.effect)));
                if taints.len() == before {
                    return Err(format!("node {node} has no taint with key {key}"));
                }
                if taints.is_empty() {
                    spec.taints = None;
                }
                self.put(Object::Node(Arc::new(n)))
            }
            StepAction::Cordon { node } | StepAction::Uncordon { node } => {
                let mut n = self.node(node)?;
                let cordon = matches!(action, StepAction::Cordon { .. });
                n.spec.get_or_insert_with(Default::default).unschedulable = cordon.then_some(true);
                self.put(Object::Node(Arc::new(n)))
            }
            StepAction::Scale { key, replicas } => {
                // `kubectl scale`: the scale subresource, without a resourceVersion
                // precondition.
                match self.client.cache().get_key(key) {
                    None => return Err(format!("{key} not found")),
                    Some(o) if kubeplane_registry::strategy::scale::has_scale(o.kind()) => {}
                    Some(other) => return Err(format!("cannot scale a {}", other.kind())),
                }
                self.client
                    .update_scale(key, *replicas, None)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
            StepAction::Annotate { key, set, remove } | StepAction::Label { key, set, remove } => {
                let mut obj = self
                    .client
                    .cache()
                    .get_key(key)
                    .cloned()
                    .ok_or_else(|| format!("{key} not found"))?;
                let labels = matches!(action, StepAction::Label { .. });
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
                self.put(obj)
            }
            StepAction::NodeDown { node } => {
                self.node(node)?;
                self.agents.set_node_down(node);
                Ok(())
            }
            StepAction::NodeUp { node } => {
                self.node(node)?;
                self.agents.set_node_up(node, now);
                Ok(())
            }
            StepAction::NodeCondition {
                node,
                type_,
                status,
                reason,
            } => {
                self.node(node)?;
                self.agents
                    .set_node_condition(node, type_, status, reason.clone(), now);
                Ok(())
            }
            StepAction::PodStatus {
                namespace,
                name,
                phase,
                ready,
                restart_count,
                exit_code,
            } => {
                let pod = self
                    .client
                    .cache()
                    .get_pod(namespace, name)
                    .cloned()
                    .ok_or_else(|| format!("pod {namespace}/{name} not found"))?;
                if let Some(r) = ready {
                    self.agents.set_pod_ready_report(namespace, name, *r);
                }
                let mut p = Pod::clone(&pod);
                let ts = self.client.clock().timestamp(now);
                let containers: Vec<String> = p
                    .spec
                    .as_ref()
                    .map(|s| s.containers.iter().map(|c| c.name.clone()).collect())
                    .unwrap_or_default();
                let status = p.status.get_or_insert_with(Default::default);
                if let Some(phase) = phase {
                    status.phase = Some(phase.clone());
                }
                if let Some(ready) = ready {
                    let value = if *ready { "True" } else { "False" };
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
                if ready.is_some() || restart_count.is_some() {
                    let statuses = status.container_statuses.get_or_insert_with(Vec::new);
                    for c in &containers {
                        if !statuses.iter().any(|s| s.name == *c) {
                            statuses.push(ContainerStatus {
                                name: c.clone(),
                                ..Default::default()
                            });
                        }
                    }
                    for s in statuses.iter_mut() {
                        if let Some(r) = ready {
                            s.ready = *r;
                        }
                        if let Some(n) = restart_count {
                            s.restart_count = *n;
                        }
                    }
                }
                if let Some(code) = exit_code {
                    // The containers exit now, as the kubelet reports a run that ended.
                    p = crate::agents::finished_pod(&p, *code, &ts);
                }
                self.put_status(Object::Pod(Arc::new(p)))
            }
            StepAction::Drain(opts) => self.drains.start(opts.clone(), now, self.client),
            StepAction::Expect(_) => Ok(()),
        }
    }
}

//! Rolling updates and revision history (upstream `pkg/controller/daemon/update.go`).
//!
//! A rolling update without surge deletes old pods while at most `maxUnavailable` nodes lack an
//! available pod, and `manage` recreates them from the new template; with `maxSurge` it
//! creates a new pod beside an old one on up to `maxSurge` nodes and deletes the old pod once
//! the new one is available. The DaemonSet's template revisions are ControllerRevisions named
//! `<ds>-<hash>` whose `data` is the template patch; the current one's hash labels new pods.

use kubeplane_api::StoredPod;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kubeplane_api::{ApiError, Client, DeleteOptions, DynamicObject, Kind, Object, ObjectKey};
use serde_json::{json, Value};

use super::cache::CachedDs;
use super::sync::{NodeToDaemonPods, SyncCx};
use super::util::{
    get_template_generation, is_pod_updated, surge_count, unavailable_count,
    DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY,
};
use super::{controller_revision_type, daemon_set_type, API_VERSION, KIND};
use crate::controller_utils::{labels, new_controller_ref, ns_name, pod_labels, NsName};
use crate::deployment::util::hash::compute_hash;

/// A node's pod of the current revision and its older one, either possibly absent.
pub type NewAndOld<'p> = (Option<&'p Arc<StoredPod>>, Option<&'p Arc<StoredPod>>);

/// Upstream `findUpdatedPodsOnNode`: the node's new and old pod that are not being deleted;
/// `None` when there is more than one of either (the manage loop prunes those first).
pub fn find_updated_pods_on_node<'p>(
    ds: &DaemonSet,
    pods: &'p [Arc<StoredPod>],
    hash: &str,
) -> Option<NewAndOld<'p>> {
    let generation = get_template_generation(ds).ok().flatten();
    let (mut new, mut old) = (None, None);
    for pod in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let slot = if is_pod_updated(pod, hash, generation) {
            &mut new
        } else {
            &mut old
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(pod);
    }
    Some((new, old))
}

fn name_of(pod: &StoredPod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

/// The available old pods a rolling update without surge leaves in place, and how many of
/// the nodes' daemon pods are unavailable.
struct Waiting {
    old: Vec<String>,
    unavailable: i32,
}

/// What the surge branch of a rolling update decided.
#[derive(Default)]
struct SurgePlan {
    old_pods_to_delete: Vec<String>,
    should_not_run_pods_to_delete: Vec<String>,
    candidate_new_nodes: Vec<String>,
    allowed_new_nodes: Vec<String>,
    num_surge: i32,
    num_available: i32,
}

impl SyncCx<'_> {
    /// Upstream `updatedDesiredNodeCounts`: `(maxSurge, maxUnavailable, desiredNumberScheduled)`,
    /// with an empty entry in `by_node` for every node that should run a pod and has none.
    fn updated_desired_node_counts(
        &self,
        ds: &CachedDs,
        by_node: &mut NodeToDaemonPods,
    ) -> Result<(i32, i32, i32), String> {
        let mut desired = 0;
        for (name, node) in &self.cache.nodes {
            if !ds.view.node_should_run_daemon_pod(node).0 {
                continue;
            }
            desired += 1;
            by_node.entry(name.clone()).or_default();
        }
        let mut max_unavailable = unavailable_count(&ds.ds, desired)
            .map_err(|e| format!("invalid value for MaxUnavailable: {e}"))?;
        let max_surge =
            surge_count(&ds.ds, desired).map_err(|e| format!("invalid value for MaxSurge: {e}"))?;
        // An impossible configuration falls back to one unavailable pod.
        if desired > 0 && max_unavailable == 0 && max_surge == 0 {
            max_unavailable = 1;
        }
        Ok((max_surge, max_unavailable, desired))
    }

    /// Upstream `rollingUpdate`: the old pods to delete, or (with surge) the nodes to get a new
    /// pod beside the old one, within the strategy's limits. Nodes are visited in name order.
    pub(super) fn rolling_update(
        &mut self,
        ds: &CachedDs,
        key: &NsName,
        mut by_node: NodeToDaemonPods,
        hash: &str,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let (max_surge, max_unavailable, desired) = self
            .updated_desired_node_counts(ds, &mut by_node)
            .map_err(|e| format!("couldn't get unavailable numbers: {e}"))?;
        if max_surge == 0 {
            let (to_delete, waiting) =
                self.unavailable_replacements(ds, &by_node, hash, max_unavailable);
            if waiting.old.is_empty() {
                self.explained.clear(key, "rollout");
            } else if client.explain() {
                let r = super::explain::rollout_waiting(
                    self.now,
                    key,
                    desired,
                    waiting.unavailable,
                    max_unavailable,
                    &waiting.old,
                );
                self.explained.emit(client, key, "rollout", r);
            }
            return self.sync_nodes(ds, key, &to_delete, &[], hash, client);
        }
        let mut plan = self.surge_plan(ds, &by_node, hash, max_surge)?;
        // With surge the owner expects full availability: a pod on a node that no longer fits
        // goes only once enough pods elsewhere are available.
        let deletable = (plan.num_available - desired).max(0) as usize;
        let n = deletable.min(plan.should_not_run_pods_to_delete.len());
        let moved: Vec<String> = plan.should_not_run_pods_to_delete.drain(..n).collect();
        plan.old_pods_to_delete.extend(moved);
        let remaining = (max_surge - plan.num_surge).max(0) as usize;
        let remaining = remaining.min(plan.candidate_new_nodes.len());
        let mut new_nodes = plan.allowed_new_nodes;
        new_nodes.extend(plan.candidate_new_nodes.drain(..remaining));
        self.sync_nodes(ds, key, &plan.old_pods_to_delete, &new_nodes, hash, client)
    }

    /// The non-surge branch: old pods that are unavailable always go; available old pods go
    /// while fewer than `maxUnavailable` nodes are unavailable. Also the available old pods
    /// that stay because the limit is reached.
    fn unavailable_replacements(
        &self,
        ds: &CachedDs,
        by_node: &NodeToDaemonPods,
        hash: &str,
        max_unavailable: i32,
    ) -> (Vec<String>, Waiting) {
        let mut num_unavailable = 0;
        let mut allowed = Vec::new();
        let mut candidates = Vec::new();
        let mut held = Vec::new();
        for pods in by_node.values() {
            let Some((new, old)) = find_updated_pods_on_node(&ds.ds, pods, hash) else {
                num_unavailable += 1;
                continue;
            };
            match (new, old) {
                (None, None) | (Some(_), Some(_)) => num_unavailable += 1,
                (Some(new), None) => {
                    if !self.available(ds, new) {
                        num_unavailable += 1;
                    }
                }
                (None, Some(old)) => {
                    if !self.available(ds, old) {
                        allowed.push(name_of(old));
                        num_unavailable += 1;
                    } else if num_unavailable < max_unavailable {
                        candidates.push(name_of(old));
                    } else {
                        held.push(name_of(old));
                    }
                }
            }
        }
        let remaining = (max_unavailable - num_unavailable).max(0) as usize;
        let taken = remaining.min(candidates.len());
        let mut candidates = candidates.into_iter();
        allowed.extend(candidates.by_ref().take(remaining));
        let mut old: Vec<String> = candidates.chain(held).collect();
        old.sort();
        // The available old pods deleted now are unavailable from now on.
        let waiting = Waiting {
            old,
            unavailable: num_unavailable + taken as i32,
        };
        (allowed, waiting)
    }

    /// The surge branch's pass over the nodes.
    fn surge_plan(
        &self,
        ds: &CachedDs,
        by_node: &NodeToDaemonPods,
        hash: &str,
        max_surge: i32,
    ) -> Result<SurgePlan, String> {
        let mut p = SurgePlan::default();
        for (node_name, pods) in by_node {
            let Some((new, old)) = find_updated_pods_on_node(&ds.ds, pods, hash) else {
                p.num_surge += 1;
                continue;
            };
            if let Some(counted) = old.or(new) {
                if self.available(ds, counted) {
                    p.num_available += 1;
                }
            }
            let Some(old) = old else { continue };
            let should_run = || -> Result<bool, String> {
                let node = self.cache.nodes.get(node_name).ok_or_else(|| {
                    format!("couldn't get node for nodeName {node_name:?}: node {node_name:?} not found")
                })?;
                Ok(ds.view.node_should_run_daemon_pod(node).0)
            };
            match new {
                None if !self.available(ds, old) => {
                    if should_run()? {
                        p.allowed_new_nodes.push(node_name.clone());
                    } else {
                        p.old_pods_to_delete.push(name_of(old));
                    }
                }
                None => {
                    if !should_run()? {
                        p.should_not_run_pods_to_delete.push(name_of(old));
                    } else if p.num_surge < max_surge {
                        p.candidate_new_nodes.push(node_name.clone());
                    }
                }
                Some(new) if !self.available(ds, new) => p.num_surge += 1,
                Some(_) => p.old_pods_to_delete.push(name_of(old)),
            }
        }
        Ok(p)
    }

    // ----- history ---------------------------------------------------------------------------

    /// Upstream `constructHistory`: the hash of the current revision (created when missing,
    /// its revision number raised above the old ones when needed) and the old revisions.
    pub(super) fn construct_history(
        &mut self,
        ds: &CachedDs,
        client: &mut dyn Client,
    ) -> Result<(String, Vec<Arc<ControllerRevision>>), String> {
        let patch = get_patch(&ds.ds);
        let mut current = Vec::new();
        let mut old = Vec::new();
        for mut history in self.cache.controlled_histories(ds) {
            if !labels(&history.metadata).contains_key(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY) {
                // The unique label is the revision's name, so no hash can collide.
                let mut h = ControllerRevision::clone(&history);
                let name = h.metadata.name.clone().unwrap_or_default();
                h.metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY.into(), name);
                history = Arc::new(write_revision(client, &h, false)?);
            }
            if history.data.as_ref().map(|d| &d.0) == Some(&patch) {
                current.push(history);
            } else {
                old.push(history);
            }
        }
        let curr_revision = old.iter().map(|h| h.revision).max().unwrap_or(0) + 1;
        let cur = match current.len() {
            0 => self.snapshot(ds, curr_revision, patch, client)?,
            _ => {
                let keep = dedup_cur_histories(client, current)?;
                if keep.revision < curr_revision {
                    let mut h = ControllerRevision::clone(&keep);
                    h.revision = curr_revision;
                    write_revision(client, &h, false)?;
                }
                keep
            }
        };
        let hash = labels(&cur.metadata)
            .get(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY)
            .cloned()
            .unwrap_or_default();
        Ok((hash, old))
    }

    /// Upstream `snapshot`: creates the revision `<ds>-<hash>`. A revision of that name with
    /// another template is a hash collision: `status.collisionCount` is raised and the sync
    /// fails, to retry with the new hash.
    fn snapshot(
        &mut self,
        ds: &CachedDs,
        revision: i64,
        patch: Value,
        client: &mut dyn Client,
    ) -> Result<Arc<ControllerRevision>, String> {
        let spec = ds.ds.spec.clone().unwrap_or_default();
        let collision_count = ds.ds.status.as_ref().and_then(|s| s.collision_count);
        let hash = compute_hash(&spec.template, collision_count);
        let (ns, ds_name) = ns_name(&ds.ds.metadata);
        let name = format!("{ds_name}-{hash}");
        let mut cr_labels = spec
            .template
            .metadata
            .and_then(|m| m.labels)
            .unwrap_or_default();
        cr_labels.insert(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY.into(), hash);
        let history = ControllerRevision {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ns.clone()),
                labels: Some(cr_labels),
                annotations: ds.ds.metadata.annotations.clone(),
                owner_references: Some(vec![new_controller_ref(
                    API_VERSION,
                    KIND,
                    &ds.ds.metadata,
                )]),
                ..Default::default()
            },
            data: Some(RawExtension(patch.clone())),
            revision,
        };
        let err = match write_revision(client, &history, true) {
            Ok(created) => return Ok(Arc::new(created)),
            Err(e) => e,
        };
        if !err.contains("already exists") {
            return Err(err);
        }
        let key = ObjectKey::new(Kind::Other(controller_revision_type()), &ns, &name);
        let existing = client.get(&key).map_err(|e| e.to_string())?;
        let existing: ControllerRevision = from_object(&existing)?;
        if existing.data.as_ref().map(|d| &d.0) == Some(&patch) {
            return Ok(Arc::new(existing));
        }
        self.bump_collision_count(ds, collision_count, client)?;
        Err(err)
    }

    fn bump_collision_count(
        &mut self,
        ds: &CachedDs,
        seen: Option<i32>,
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let (ns, name) = ns_name(&ds.ds.metadata);
        let key = ObjectKey::new(Kind::Other(daemon_set_type()), &ns, &name);
        let Object::Other(fresh) = client.get(&key).map_err(|e| e.to_string())? else {
            return Err(format!("{key} is not a DaemonSet"));
        };
        let fresh_ds: DaemonSet = from_object(&Object::Other(fresh.clone()))?;
        let current = fresh_ds.status.as_ref().and_then(|s| s.collision_count);
        if current != seen {
            return Err(format!(
                "found a stale collision count ({seen:?}, expected {current:?}) of DaemonSet {name:?} while processing; will retry until it is updated"
            ));
        }
        let mut obj = DynamicObject::clone(&fresh);
        let mut status = fresh_ds.status.unwrap_or_default();
        status.collision_count = Some(current.unwrap_or(0) + 1);
        obj.fields.insert(
            "status".into(),
            serde_json::to_value(status).unwrap_or_default(),
        );
        client
            .update_status(Object::Other(Arc::new(obj)))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Upstream `cleanupHistory`: beyond `revisionHistoryLimit` (default 10), deletes the oldest
    /// old revisions that no pod (deleted terminal ones included) still carries.
    pub(super) fn cleanup_history(
        &mut self,
        ds: &CachedDs,
        claimed: &[Arc<StoredPod>],
        old: &[Arc<ControllerRevision>],
        client: &mut dyn Client,
    ) -> Result<(), String> {
        let to_keep = ds
            .ds
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10);
        let mut to_kill = old.len() as i64 - i64::from(to_keep);
        if to_kill <= 0 {
            return Ok(());
        }
        let live: std::collections::BTreeSet<&str> = claimed
            .iter()
            .filter_map(|p| pod_labels(p).get(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY))
            .map(String::as_str)
            .collect();
        let mut old: Vec<&Arc<ControllerRevision>> = old.iter().collect();
        old.sort_by_key(|h| h.revision);
        for history in old {
            if to_kill <= 0 {
                break;
            }
            let hash = labels(&history.metadata).get(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY);
            if hash.is_some_and(|h| live.contains(h.as_str())) {
                continue;
            }
            delete_revision(client, history)?;
            to_kill -= 1;
        }
        Ok(())
    }
}

/// Upstream `dedupCurHistories`: keeps the current revision with the highest number and deletes
/// the others. (Upstream first relabels pods carrying a deleted duplicate's hash; kubeplane
/// does not, see docs/daemonset.md.)
fn dedup_cur_histories(
    client: &mut dyn Client,
    mut current: Vec<Arc<ControllerRevision>>,
) -> Result<Arc<ControllerRevision>, String> {
    current.sort_by_key(|h| h.revision);
    let keep = current.pop().expect("at least one current revision");
    for dup in &current {
        delete_revision(client, dup)?;
    }
    Ok(keep)
}

/// Upstream `getPatch`: `{"spec":{"template":<template>,"$patch":"replace"}}` with the
/// `$patch` directive inside the template, the data a revision stores.
pub fn get_patch(ds: &DaemonSet) -> Value {
    let template = ds
        .spec
        .as_ref()
        .map(|s| serde_json::to_value(&s.template).unwrap_or_default())
        .unwrap_or_else(|| json!({}));
    let mut template = match template {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    template.insert("$patch".into(), Value::String("replace".into()));
    json!({ "spec": { "template": Value::Object(template) } })
}

fn from_object<T: serde::de::DeserializeOwned>(obj: &Object) -> Result<T, String> {
    serde_json::from_value(obj.to_json()).map_err(|e| e.to_string())
}

/// Creates (`create`) or updates a ControllerRevision and reads the stored one back.
fn write_revision(
    client: &mut dyn Client,
    cr: &ControllerRevision,
    create: bool,
) -> Result<ControllerRevision, String> {
    let value = serde_json::to_value(cr).map_err(|e| e.to_string())?;
    let obj =
        DynamicObject::from_value(controller_revision_type(), &value).map_err(|e| e.to_string())?;
    let obj = Object::Other(Arc::new(obj));
    let written = if create {
        client.create(obj)
    } else {
        client.update(obj)
    };
    from_object(&written.map_err(|e: ApiError| e.to_string())?)
}

fn delete_revision(client: &mut dyn Client, cr: &ControllerRevision) -> Result<(), String> {
    let (ns, name) = ns_name(&cr.metadata);
    let key = ObjectKey::new(Kind::Other(controller_revision_type()), &ns, &name);
    match client.delete(&key, DeleteOptions::default()) {
        Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

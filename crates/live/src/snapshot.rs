//! `kubeplane snapshot`: the scheduling-relevant state of a live cluster as a `simulate` input.
//!
//! Every kind is read with paged lists (`limit` and `continue`, as `kubectl get --chunk-size`
//! reads), through kube-rs's typed APIs: an object is decoded into the k8s-openapi type
//! kubeplane simulates (fields that release's schema does not have are dropped, so a newer
//! cluster's objects still load) and written back as JSON. Only GETs are sent: a snapshot never
//! writes to the cluster.
//!
//! What does not matter to a simulation is stripped (`managedFields`, `resourceVersion`,
//! `selfLink`, the `kubectl.kubernetes.io/last-applied-configuration` annotation); what
//! `simulate` links or reads is kept: `uid` (ownerReferences name their owner by UID, and the
//! controllers adopt only the dependents whose controller reference carries their owner's UID),
//! `generation`, timestamps, and the status of everything (a running pod's phase, `nodeName`,
//! conditions and `startTime` keep it bound and Ready). Pods that have finished (`Succeeded` or
//! `Failed`) are left out, as the scheduler's own pod informer leaves them out: they take no
//! room on a node (a Job's `status` still counts them).
//!
//! The order is fixed: kinds in [`RESOURCES`] order (owners before what they own, pods last),
//! each kind's objects by namespace, then name.

use std::fmt::Debug;
use std::path::Path;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, ListParams};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::LiveError;

/// The annotation `kubectl apply` keeps its last request in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The namespace of the nodes' heartbeat Leases.
const NODE_LEASES: &str = "kube-node-lease";

/// The resources a snapshot reads, in the order it writes them: `(plural as kubectl names it,
/// kind)`.
pub const RESOURCES: [(&str, &str); 12] = [
    ("namespaces", "Namespace"),
    ("priorityclasses", "PriorityClass"),
    ("nodes", "Node"),
    ("leases", "Lease"),
    ("poddisruptionbudgets", "PodDisruptionBudget"),
    ("deployments", "Deployment"),
    ("replicasets", "ReplicaSet"),
    ("statefulsets", "StatefulSet"),
    ("daemonsets", "DaemonSet"),
    ("cronjobs", "CronJob"),
    ("jobs", "Job"),
    ("pods", "Pod"),
];

/// A cluster's state, ready to write.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The API server's URL.
    pub server: String,
    /// Every object kept, in the output order.
    pub objects: Vec<Value>,
    /// How many objects of each resource were kept, in [`RESOURCES`] order (resources the
    /// server does not serve are absent).
    pub counts: Vec<(&'static str, usize)>,
    /// Resources the server does not serve (404 on their list).
    pub not_served: Vec<&'static str>,
    /// Finished pods left out.
    pub finished_pods: usize,
}

/// What a snapshot reports while it reads: a resource's plural and the objects listed so far
/// (`false`), or, once its list is complete, the objects kept (`true`).
pub type Progress<'a> = &'a mut dyn FnMut(&str, usize, bool);

/// Reads the cluster of a kubeconfig (its current context; none: the inferred configuration).
/// An unreadable or unusable kubeconfig, or no configuration at all, is [`LiveError::Input`]; a server that cannot be reached or refuses a list is
/// [`LiveError::Runtime`], with one message naming the server and what failed.
pub fn take(
    kubeconfig: Option<&Path>,
    chunk_size: u32,
    progress: Progress,
) -> Result<Snapshot, LiveError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LiveError::Runtime(e.to_string()))?;
    rt.block_on(async {
        let (client, server) = connect(kubeconfig).await?;
        let mut snap = Snapshot {
            server,
            ..Snapshot::default()
        };
        let mut r = Reader {
            client,
            chunk_size,
            snap: &mut snap,
            progress,
        };
        r.all().await?;
        Ok(snap)
    })
}

/// The kube-rs client of a kubeconfig (or of the inferred configuration) and its server's URL.
async fn connect(path: Option<&Path>) -> Result<(kube::Client, String), LiveError> {
    let cfg = crate::kube_config(path).await.map_err(LiveError::Input)?;
    let server = cfg.cluster_url.to_string();
    let client = kube::Client::try_from(cfg).map_err(|e| {
        LiveError::Input(match path {
            Some(path) => format!("{}: {e}", path.display()),
            None => e.to_string(),
        })
    })?;
    Ok((client, server))
}

struct Reader<'a, 'p> {
    client: kube::Client,
    chunk_size: u32,
    snap: &'a mut Snapshot,
    progress: Progress<'p>,
}

impl Reader<'_, '_> {
    /// Reads every resource of [`RESOURCES`], in order.
    async fn all(&mut self) -> Result<(), LiveError> {
        let c = self.client.clone();
        self.read(0, Api::<Namespace>::all(c.clone())).await?;
        self.read(1, Api::<PriorityClass>::all(c.clone())).await?;
        self.read(2, Api::<Node>::all(c.clone())).await?;
        self.read(3, Api::<Lease>::namespaced(c.clone(), NODE_LEASES))
            .await?;
        self.read(4, Api::<PodDisruptionBudget>::all(c.clone()))
            .await?;
        self.read(5, Api::<Deployment>::all(c.clone())).await?;
        self.read(6, Api::<ReplicaSet>::all(c.clone())).await?;
        self.read(7, Api::<StatefulSet>::all(c.clone())).await?;
        self.read(8, Api::<DaemonSet>::all(c.clone())).await?;
        self.read(9, Api::<CronJob>::all(c.clone())).await?;
        self.read(10, Api::<Job>::all(c.clone())).await?;
        self.read(11, Api::<Pod>::all(c)).await
    }

    /// Lists one resource page by page and keeps its objects, stripped and sorted.
    async fn read<K>(&mut self, idx: usize, api: Api<K>) -> Result<(), LiveError>
    where
        K: kube::Resource<DynamicType = ()> + k8s_openapi::Resource,
        K: Clone + DeserializeOwned + Serialize + Debug,
    {
        let (plural, kind) = RESOURCES[idx];
        let Some(items) = self.list(plural, &api).await? else {
            self.snap.not_served.push(plural);
            return Ok(());
        };
        let mut objects = Vec::with_capacity(items.len());
        for item in &items {
            let mut v = serde_json::to_value(item).map_err(|e| {
                LiveError::Runtime(format!("{plural}: cannot encode an object: {e}"))
            })?;
            if kind == "Pod" && is_finished(&v) {
                self.snap.finished_pods += 1;
                continue;
            }
            set_type(&mut v, <K as k8s_openapi::Resource>::API_VERSION, kind);
            strip(&mut v);
            objects.push(v);
        }
        objects.sort_by_cached_key(|o| (meta_str(o, "namespace"), meta_str(o, "name")));
        (self.progress)(plural, objects.len(), true);
        self.snap.counts.push((plural, objects.len()));
        self.snap.objects.extend(objects);
        Ok(())
    }

    /// Every object of a resource, `chunk_size` a page; `None` when the server does not serve
    /// the resource. A continue token that expired (410) starts the list again, twice at most.
    async fn list<K>(&mut self, plural: &str, api: &Api<K>) -> Result<Option<Vec<K>>, LiveError>
    where
        K: kube::Resource + Clone + DeserializeOwned + Debug,
    {
        let mut restarts = 0;
        let mut items = Vec::new();
        let mut lp = ListParams::default().limit(self.chunk_size);
        loop {
            match api.list(&lp).await {
                Ok(page) => {
                    items.extend(page.items);
                    match page.metadata.continue_.filter(|c| !c.is_empty()) {
                        Some(token) => {
                            (self.progress)(plural, items.len(), false);
                            lp.continue_token = Some(token);
                        }
                        None => break,
                    }
                }
                Err(kube::Error::Api(s)) if s.code == 404 && lp.continue_token.is_none() => {
                    return Ok(None)
                }
                Err(kube::Error::Api(s)) if s.code == 410 && restarts < 2 => {
                    restarts += 1;
                    items.clear();
                    lp.continue_token = None;
                }
                Err(e) => return Err(self.failure(plural, e)),
            }
        }
        Ok(Some(items))
    }

    /// One message for a failed list, naming the server and what to check.
    fn failure(&self, plural: &str, e: kube::Error) -> LiveError {
        let server = &self.snap.server;
        LiveError::Runtime(match e {
            kube::Error::Api(s) if s.code == 401 => format!(
                "{server} refused the kubeconfig's credentials (401 Unauthorized) when listing \
                 {plural}: {}",
                s.message
            ),
            kube::Error::Api(s) if s.code == 403 => format!(
                "{server} forbids listing {plural} to the kubeconfig's user (403 Forbidden; a \
                 snapshot needs get and list on every kind it reads): {}",
                s.message
            ),
            kube::Error::Api(s) => format!(
                "{server}: listing {plural} failed: {} ({} {})",
                s.message, s.code, s.reason
            ),
            other => format!("cannot reach the API server at {server} (listing {plural}): {other}"),
        })
    }
}

/// Whether a pod has finished (phase `Succeeded` or `Failed`).
fn is_finished(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

/// Puts `apiVersion` and `kind` first (a list's items may lack them).
fn set_type(obj: &mut Value, api_version: &str, kind: &str) {
    let Value::Object(map) = obj else { return };
    let mut out = serde_json::Map::with_capacity(map.len() + 2);
    out.insert("apiVersion".into(), api_version.into());
    out.insert("kind".into(), kind.into());
    for (k, v) in std::mem::take(map) {
        if k != "apiVersion" && k != "kind" {
            out.insert(k, v);
        }
    }
    *map = out;
}

fn meta_str(obj: &Value, field: &str) -> String {
    obj["metadata"][field].as_str().unwrap_or("").to_string()
}

/// Removes what a simulation does not read: `managedFields`, `resourceVersion`, `selfLink` and
/// the last-applied annotation (the annotations map goes when nothing else is in it).
pub fn strip(obj: &mut Value) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for field in ["managedFields", "resourceVersion", "selfLink"] {
        meta.remove(field);
    }
    if let Some(Value::Object(ann)) = meta.get_mut("annotations") {
        ann.remove(LAST_APPLIED);
        if ann.is_empty() {
            meta.remove("annotations");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stripping_keeps_uids_owners_and_status_and_drops_what_a_simulation_does_not_read() {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "web-1", "namespace": "shop", "uid": "u-1", "generation": 1,
                "resourceVersion": "981", "selfLink": "/api/v1/x",
                "managedFields": [{"manager": "kubectl"}],
                "annotations": {LAST_APPLIED: "{}", "team": "a"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "web-5d", "uid": "rs-1", "controller": true}],
            },
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"},
        });
        strip(&mut pod);
        let meta = &pod["metadata"];
        for gone in ["resourceVersion", "selfLink", "managedFields"] {
            assert!(meta.get(gone).is_none(), "{gone} is stripped");
        }
        assert_eq!(meta["annotations"], json!({"team": "a"}));
        assert_eq!(meta["uid"], "u-1");
        assert_eq!(meta["ownerReferences"][0]["uid"], "rs-1");
        assert_eq!(pod["spec"]["nodeName"], "n1");
        assert_eq!(pod["status"]["startTime"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn an_annotations_map_holding_only_the_last_applied_one_goes() {
        let mut o = json!({"metadata": {"name": "a", "annotations": {LAST_APPLIED: "{}"}}});
        strip(&mut o);
        assert_eq!(o, json!({"metadata": {"name": "a"}}));
    }

    #[test]
    fn finished_pods_are_the_succeeded_and_failed_ones() {
        let cases = [
            ("a running pod has not finished", "Running", false),
            ("a pending pod has not finished", "Pending", false),
            ("a succeeded pod has finished", "Succeeded", true),
            ("a failed pod has finished", "Failed", true),
        ];
        for (name, phase, want) in cases {
            assert_eq!(
                is_finished(&json!({"status": {"phase": phase}})),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn the_type_fields_come_first_whatever_the_list_gave() {
        let mut o = json!({"metadata": {"name": "a"}, "kind": "Wrong"});
        set_type(&mut o, "v1", "Node");
        let keys: Vec<&String> = o.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["apiVersion", "kind", "metadata"]);
        assert_eq!(o["kind"], "Node");
    }

    #[test]
    fn owners_come_before_what_they_own_and_pods_last() {
        let pos = |k: &str| RESOURCES.iter().position(|(_, kind)| *kind == k).unwrap();
        assert!(pos("Deployment") < pos("ReplicaSet"));
        assert!(pos("ReplicaSet") < pos("Pod"));
        assert!(pos("CronJob") < pos("Job"));
        assert_eq!(pos("Pod"), RESOURCES.len() - 1);
    }
}

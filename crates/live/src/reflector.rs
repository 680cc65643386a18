//! Reflectors: one kube-rs watcher per kind the scheduler's informers need, feeding the
//! scheduling loop the events the components consume.
//!
//! A watcher lists, then watches from the list's resourceVersion with bookmarks
//! (`allowWatchBookmarks`: the watch resumes from the last bookmark, not from an old list);
//! on 410 Gone it lists again, and on any other failure (the API server went away) it backs
//! off and retries (kube-rs's default backoff), never ending. A complete list (from its `Init`
//! to its `InitDone`) reaches the loop as one relist, which the loop's
//! [`Informer`](kubeplane_api::Informer) turns into Added, Modified (with the old object) and
//! Deleted events, as client-go's `DeltaFIFO.Replace` does; a watched change reaches it as
//! Modified or Deleted, and the informer supplies the old object from its store (an update of
//! an object it does not hold becomes an add).
//!
//! The controller manager's reflectors ([`start_kinds`]) are dynamic ones, one per kind its
//! controllers read, with every object (no field selector); a kind the server does not serve
//! (404 on the first list) counts as listed and empty, and is tried again with backoff.

use std::fmt::Debug;
use std::sync::mpsc::Sender;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::core::DynamicObject;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Api;
use kubeplane_api::{EventType, Kind, Object, WatchEvent};
use serde::de::DeserializeOwned;

use crate::convert::resource_version;
use crate::runtime::Msg;

/// The kinds the scheduler's informers watch: pods (not finished ones, as upstream's pod
/// informer selects them), nodes, namespaces (InterPodAffinity's namespaceSelector),
/// ReplicaSets (PodTopologySpread's default constraints) and PodDisruptionBudgets
/// (preemption).
pub const KINDS: [Kind; 5] = [
    Kind::Pod,
    Kind::Node,
    Kind::Namespace,
    Kind::ReplicaSet,
    Kind::PodDisruptionBudget,
];

/// Upstream's field selector of the scheduler's pod informer.
const POD_SELECTOR: &str = "status.phase!=Succeeded,status.phase!=Failed";

fn event(type_: EventType, object: Object) -> Msg {
    let resource_version = resource_version(&object);
    Msg::Event(WatchEvent {
        type_,
        object,
        old: None,
        resource_version,
    })
}

/// Who the scheduler's reflectors are on stderr.
const WHO: &str = "kubeplane scheduler";

/// Starts a reflector for every kind in [`KINDS`] on the runtime.
pub fn start(runtime: &tokio::runtime::Handle, client: &kube::Client, tx: &Sender<Msg>) {
    let all = watcher::Config::default();
    let pods = all.clone().fields(POD_SELECTOR);
    let c = || client.clone();
    runtime.spawn(reflect::<Pod>(
        Api::all(c()),
        pods,
        Kind::Pod,
        |o| Some(Object::Pod(Arc::new(o.into()))),
        tx.clone(),
        WHO,
    ));
    runtime.spawn(reflect::<Node>(
        Api::all(c()),
        all.clone(),
        Kind::Node,
        |o| Some(Object::Node(Arc::new(o.into()))),
        tx.clone(),
        WHO,
    ));
    runtime.spawn(reflect::<Namespace>(
        Api::all(c()),
        all.clone(),
        Kind::Namespace,
        |o| Some(Object::Namespace(Arc::new(o))),
        tx.clone(),
        WHO,
    ));
    runtime.spawn(reflect::<ReplicaSet>(
        Api::all(c()),
        all.clone(),
        Kind::ReplicaSet,
        |o| Some(Object::ReplicaSet(Arc::new(o.into()))),
        tx.clone(),
        WHO,
    ));
    runtime.spawn(reflect::<PodDisruptionBudget>(
        Api::all(c()),
        all,
        Kind::PodDisruptionBudget,
        |o| Some(Object::PodDisruptionBudget(Arc::new(o))),
        tx.clone(),
        WHO,
    ));
}

/// A dynamic object from a watch as kubeplane's object of `kind` (list items carry no
/// `apiVersion` and `kind`: they are the kind's).
fn dynamic_object(kind: Kind, o: DynamicObject) -> Option<Object> {
    let mut value = serde_json::to_value(o).ok()?;
    value["apiVersion"] = kind.api_version().into();
    value["kind"] = kind.as_str().into();
    Object::from_json(&value).ok()
}

/// Whether a watcher error is the server saying it does not serve the resource.
fn not_served(e: &watcher::Error) -> bool {
    matches!(e, watcher::Error::InitialListFailed(kube::Error::Api(s)) if s.code == 404)
}

/// Watches one kind until the loop goes away: its lists become relists, its changes events
/// (without old objects: the loop's informer has them); an object `wrap` cannot read is
/// skipped, a kind the server does not serve (404) is an empty list, said once on stderr,
/// and other failures are retried with kube-rs's backoff, said on stderr now and then.
async fn reflect<K>(
    api: Api<K>,
    config: watcher::Config,
    kind: Kind,
    wrap: impl Fn(K) -> Option<Object> + Send + 'static,
    tx: Sender<Msg>,
    who: &'static str,
) where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    let mut stream = watcher::watcher(api, config).default_backoff().boxed();
    let mut listed: Vec<Object> = Vec::new();
    let (mut failures, mut told_missing) = (0u64, false);
    while let Some(item) = stream.next().await {
        let msg = match item {
            Ok(Event::Init) => {
                listed.clear();
                continue;
            }
            Ok(Event::InitApply(o)) => {
                listed.extend(wrap(o));
                continue;
            }
            Ok(Event::InitDone) => {
                failures = 0;
                Msg::Relist(kind, std::mem::take(&mut listed))
            }
            Ok(Event::Apply(o)) => match wrap(o) {
                Some(o) => event(EventType::Modified, o),
                None => continue,
            },
            Ok(Event::Delete(o)) => match wrap(o) {
                Some(o) => event(EventType::Deleted, o),
                None => continue,
            },
            Err(e) if not_served(&e) => {
                if std::mem::replace(&mut told_missing, true) {
                    continue;
                }
                eprintln!(
                    "{who}: the server does not serve {}; treated as empty",
                    kind.plural()
                );
                Msg::Relist(kind, Vec::new())
            }
            Err(e) => {
                failures += 1;
                if failures <= 3 || failures.is_power_of_two() {
                    eprintln!(
                        "{who}: watching {}: {e} (retrying with backoff)",
                        kind.plural()
                    );
                }
                continue;
            }
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
}

/// Starts a dynamic reflector for every kind in `kinds` on the runtime; `who` names the
/// component in log lines.
pub fn start_kinds(
    runtime: &tokio::runtime::Handle,
    client: &kube::Client,
    kinds: &[Kind],
    tx: &Sender<Msg>,
    who: &'static str,
) {
    for kind in kinds {
        let kind = *kind;
        let api: Api<DynamicObject> =
            Api::all_with(client.clone(), &crate::convert::api_resource(kind));
        let wrap = move |o| dynamic_object(kind, o);
        let config = watcher::Config::default();
        runtime.spawn(reflect(api, config, kind, wrap, tx.clone(), who));
    }
}

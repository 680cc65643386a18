//! Tests of the Deployment controller with the ReplicaSet controller and a fake node agent that
//! makes pods ready after a seeded delay.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, ReplicaSet, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{Container, PodCondition, PodSpec, PodStatus, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubeplane_api::StoredDeployment;
use kubeplane_api::StoredReplicaSet;
use kubeplane_api::{Client, Component, EventType, Kind, Object, StoredPod, WatchEvent};
use kubeplane_core::features::FeatureGates;
use kubeplane_core::time::SimDuration;
use kubeplane_core::version::{v1, KubeVersion};
use kubeplane_core::{EventRecord, SimTime};
use kubeplane_registry::testing::TestClient;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::util::*;
use super::*;
use crate::controller_utils::{is_pod_active, is_pod_ready, pod_controller};
use crate::replicaset::ReplicaSetController;

mod invariants;
mod terminating;

// ----- a fake node agent ------------------------------------------------------------------------

/// Makes every new pod Running and Ready after a delay drawn from `delay_secs`.
struct FakeKubelet {
    rng: ChaCha8Rng,
    delay_secs: (i64, i64),
    due: BTreeSet<(SimTime, String)>,
    enabled: bool,
}

impl FakeKubelet {
    fn new(seed: u64, delay_secs: (i64, i64)) -> Self {
        FakeKubelet {
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0xfeed),
            delay_secs,
            due: BTreeSet::new(),
            enabled: true,
        }
    }
}

impl Component for FakeKubelet {
    fn name(&self) -> &'static str {
        "fake-kubelet"
    }
    fn observe(&mut self, ev: &WatchEvent, now: SimTime) {
        if !self.enabled || ev.type_ != EventType::Added {
            return;
        }
        if let Object::Pod(p) = &ev.object {
            if !is_pod_ready(p) {
                let d = self.rng.random_range(self.delay_secs.0..=self.delay_secs.1);
                self.due.insert((
                    now + SimDuration::from_secs(d),
                    p.metadata.name.clone().unwrap(),
                ));
            }
        }
    }
    fn run(&mut self, now: SimTime, client: &mut dyn Client) {
        while let Some((t, _)) = self.due.first() {
            if *t > now {
                break;
            }
            let (_, name) = self.due.pop_first().unwrap();
            let Some(pod) = client.cache().get_pod("default", &name).cloned() else {
                continue;
            };
            if !is_pod_active(&pod) {
                continue;
            }
            let mut p = StoredPod::clone(&pod);
            p.set_status(Some(PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(client.clock().timestamp(now)),
                    ..Default::default()
                }]),
                ..Default::default()
            }));
            client.update_status(Object::Pod(Arc::new(p))).unwrap();
        }
    }
    fn next_wakeup(&self) -> Option<SimTime> {
        self.due.first().map(|(t, _)| *t)
    }
}

// ----- builders ---------------------------------------------------------------------------------

fn template(image: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c0".into(),
                image: Some(image.into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
    }
}

fn rolling(surge: IntOrString, unavailable: IntOrString) -> DeploymentStrategy {
    DeploymentStrategy {
        type_: Some(STRATEGY_ROLLING_UPDATE.into()),
        rolling_update: Some(RollingUpdateDeployment {
            max_surge: Some(surge),
            max_unavailable: Some(unavailable),
        }),
    }
}

fn recreate() -> DeploymentStrategy {
    DeploymentStrategy {
        type_: Some(STRATEGY_RECREATE.into()),
        rolling_update: None,
    }
}

fn deployment(replicas: i32, strategy: DeploymentStrategy, image: &str) -> StoredDeployment {
    StoredDeployment::from_k8s(Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some([("app".to_string(), "web".to_string())].into()),
                ..Default::default()
            },
            strategy: Some(strategy),
            template: template(image),
            ..Default::default()
        }),
        status: None,
    })
}

struct World {
    /// Run the Deployment controller before the ReplicaSet controller in each round.
    deployment_first: bool,
    client: TestClient,
    dc: DeploymentController,
    rsc: ReplicaSetController,
    kubelet: FakeKubelet,
}

impl World {
    fn new(seed: u64, delay_secs: (i64, i64)) -> Self {
        World {
            deployment_first: false,
            client: TestClient::new(seed),
            dc: DeploymentController::new(),
            rsc: ReplicaSetController::new(),
            kubelet: FakeKubelet::new(seed, delay_secs),
        }
    }

    /// Both controllers with the feature gates of a release.
    fn at_version(seed: u64, delay_secs: (i64, i64), version: KubeVersion) -> Self {
        let features = FeatureGates::for_version(version);
        World {
            dc: DeploymentController::with_features(&features),
            rsc: ReplicaSetController::with_features(features),
            ..World::new(seed, delay_secs)
        }
    }

    fn settle(&mut self) {
        if self.deployment_first {
            self.client
                .settle(&mut [&mut self.dc, &mut self.rsc, &mut self.kubelet]);
        } else {
            self.client
                .settle(&mut [&mut self.rsc, &mut self.dc, &mut self.kubelet]);
        }
    }

    fn run_until(&mut self, secs: i64) {
        let until = SimTime::from_secs(secs);
        self.settle();
        while let Some(t) = self.next_instant().filter(|&t| t <= until) {
            self.client.now = t;
            self.settle();
        }
        self.client.now = until;
        self.settle();
    }

    /// The next instant any component has work after now, if any.
    fn next_instant(&self) -> Option<SimTime> {
        [
            self.rsc.next_wakeup(),
            self.dc.next_wakeup(),
            self.kubelet.next_wakeup(),
        ]
        .into_iter()
        .flatten()
        .filter(|&t| t > self.client.now)
        .min()
    }

    fn create(&mut self, d: StoredDeployment) {
        let now = self.client.now;
        kubeplane_registry::client::create(
            &mut self.client.store,
            Object::Deployment(Arc::new(d)),
            now,
        )
        .unwrap();
    }

    fn deployment(&self) -> Arc<StoredDeployment> {
        match self.client.store.get(Kind::Deployment, "default", "web") {
            Some(Object::Deployment(d)) => d.clone(),
            _ => panic!("no deployment"),
        }
    }

    fn edit(&mut self, f: impl FnOnce(&mut StoredDeployment)) {
        let mut d = StoredDeployment::clone(&self.deployment());
        f(&mut d);
        kubeplane_registry::client::update(&mut self.client.store, Object::Deployment(Arc::new(d)))
            .unwrap();
    }

    fn set_image(&mut self, image: &str) {
        self.edit(|d| d.spec.as_mut().unwrap().template = template(image).into());
    }

    fn replica_sets(&self) -> Vec<Arc<StoredReplicaSet>> {
        let mut v: Vec<Arc<StoredReplicaSet>> = self
            .client
            .store
            .list(Kind::ReplicaSet)
            .filter_map(|o| match o {
                Object::ReplicaSet(rs) => Some(rs.clone()),
                _ => None,
            })
            .collect();
        v.sort_by(|a, b| by_creation_timestamp(a, b));
        v
    }

    fn rs_for_image(&self, image: &str) -> Option<Arc<StoredReplicaSet>> {
        self.replica_sets()
            .into_iter()
            .find(|rs| equal_ignore_hash(&rs_template(rs), &template(image)))
    }

    fn active_pods(&self) -> Vec<Arc<StoredPod>> {
        self.client
            .store
            .pods()
            .filter(|p| is_pod_active(p))
            .cloned()
            .collect()
    }

    fn events(&self, reason: &str) -> Vec<&EventRecord> {
        self.client.events_with_reason(reason)
    }

    fn condition(&self, type_: &str) -> Option<k8s_openapi::api::apps::v1::DeploymentCondition> {
        let d = self.deployment();
        get_condition(d.status.as_ref()?, type_).cloned()
    }
}

fn name(rs: &StoredReplicaSet) -> String {
    rs.metadata.name.clone().unwrap()
}

// ----- behaviour --------------------------------------------------------------------------------

#[test]
fn a_new_deployment_gets_a_hashed_replica_set_and_reports_progress() {
    let mut w = World::new(1, (1, 1));
    w.create(deployment(
        3,
        rolling(
            IntOrString::String("25%".into()),
            IntOrString::String("25%".into()),
        ),
        "v1",
    ));
    w.settle();
    let rss = w.replica_sets();
    assert_eq!(rss.len(), 1);
    let rs = &rss[0];
    let hash = rs.metadata.labels.as_ref().unwrap()[POD_TEMPLATE_HASH_LABEL].clone();
    assert_eq!(name(rs), format!("web-{hash}"));
    assert_eq!(hash, compute_hash(&template("v1"), None));
    assert_eq!(
        rs.spec
            .as_ref()
            .unwrap()
            .selector
            .match_labels
            .as_ref()
            .unwrap()[POD_TEMPLATE_HASH_LABEL],
        hash
    );
    let ann = rs.metadata.annotations.as_ref().unwrap();
    assert_eq!(ann[REVISION_ANNOTATION], "1");
    assert_eq!(ann[DESIRED_REPLICAS_ANNOTATION], "3");
    assert_eq!(ann[MAX_REPLICAS_ANNOTATION], "4");
    let scaling = w.events(REASON_SCALING_REPLICA_SET);
    assert_eq!(scaling.len(), 1);
    assert_eq!(
        scaling[0].message(),
        format!("Scaled up replica set web-{hash} from 0 to 3")
    );
    assert_eq!(
        (scaling[0].kind(), scaling[0].source()),
        ("Deployment", CONTROLLER_NAME)
    );
    assert_eq!(
        w.condition(CONDITION_PROGRESSING)
            .unwrap()
            .reason
            .as_deref(),
        Some(REASON_RS_UPDATED)
    );
    assert_eq!(w.condition(CONDITION_AVAILABLE).unwrap().status, "False");
    // Pods carry the hash label; once ready the rollout completes.
    assert!(w
        .active_pods()
        .iter()
        .all(|p| p.labels().unwrap()[POD_TEMPLATE_HASH_LABEL] == hash));
    w.run_until(5);
    let d = w.deployment();
    let s = d.status.as_ref().unwrap();
    assert_eq!(
        (s.replicas, s.updated_replicas, s.available_replicas),
        (Some(3), Some(3), Some(3))
    );
    assert_eq!(
        d.metadata.annotations.as_ref().unwrap()[REVISION_ANNOTATION],
        "1"
    );
    let progressing = w.condition(CONDITION_PROGRESSING).unwrap();
    assert_eq!(progressing.reason.as_deref(), Some(REASON_NEW_RS_AVAILABLE));
    assert_eq!(
        progressing.message.as_deref(),
        Some(format!("ReplicaSet \"web-{hash}\" has successfully progressed.").as_str())
    );
    let available = w.condition(CONDITION_AVAILABLE).unwrap();
    assert_eq!(
        (
            available.status.as_str(),
            available.reason.as_deref(),
            available.message.as_deref()
        ),
        (
            "True",
            Some(REASON_MIN_AVAILABLE),
            Some("Deployment has minimum availability.")
        )
    );
}

#[test]
fn a_rolling_update_surges_then_scales_the_old_replica_set_down() {
    let mut w = World::new(2, (1, 1));
    w.create(deployment(
        3,
        rolling(IntOrString::Int(1), IntOrString::Int(0)),
        "v1",
    ));
    w.run_until(5);
    let old = w.rs_for_image("v1").unwrap();
    w.client.events.clear();
    w.set_image("v2");
    w.run_until(60);
    let new = w.rs_for_image("v2").unwrap();
    let old_name = name(&old);
    let new_name = name(&new);
    let messages: Vec<String> = w
        .events(REASON_SCALING_REPLICA_SET)
        .iter()
        .map(|e| e.message().to_string())
        .collect();
    assert_eq!(
        messages,
        [
            format!("Scaled up replica set {new_name} from 0 to 1"),
            format!("Scaled down replica set {old_name} from 3 to 2"),
            format!("Scaled up replica set {new_name} from 1 to 2"),
            format!("Scaled down replica set {old_name} from 2 to 1"),
            format!("Scaled up replica set {new_name} from 2 to 3"),
            format!("Scaled down replica set {old_name} from 1 to 0"),
        ]
    );
    assert_eq!(
        new.metadata.annotations.as_ref().unwrap()[REVISION_ANNOTATION],
        "2"
    );
    assert_eq!(rs_replicas(&w.rs_for_image("v1").unwrap()), 0);
    assert_eq!(w.active_pods().len(), 3);
    assert_eq!(
        w.deployment().metadata.annotations.as_ref().unwrap()[REVISION_ANNOTATION],
        "2"
    );
    assert_eq!(
        w.condition(CONDITION_PROGRESSING)
            .unwrap()
            .reason
            .as_deref(),
        Some(REASON_NEW_RS_AVAILABLE)
    );
}

#[test]
fn recreate_removes_every_old_pod_before_creating_new_ones() {
    let mut w = World::new(3, (1, 2));
    w.create(deployment(3, recreate(), "v1"));
    w.run_until(5);
    let old_uid = w.rs_for_image("v1").unwrap().metadata.uid.clone();
    w.set_image("v2");
    w.settle();
    while let Some(t) = w.next_instant() {
        if t > SimTime::from_secs(60) {
            break;
        }
        w.client.now = t;
        w.settle();
        let pods = w.active_pods();
        let old = pods
            .iter()
            .filter(|p| pod_controller(p).map(|r| Some(&r.uid)) == Some(old_uid.as_ref()))
            .count();
        assert!(
            old == 0 || old == pods.len(),
            "old and new pods never run together"
        );
    }
    let messages: Vec<String> = w
        .events(REASON_SCALING_REPLICA_SET)
        .iter()
        .map(|e| e.message().to_string())
        .collect();
    let old_name = name(&w.rs_for_image("v1").unwrap());
    let new_name = name(&w.rs_for_image("v2").unwrap());
    assert_eq!(
        messages[1..],
        [
            format!("Scaled down replica set {old_name} from 3 to 0"),
            format!("Scaled up replica set {new_name} from 0 to 3"),
        ]
    );
    assert_eq!(w.active_pods().len(), 3);
}

#[test]
fn a_paused_deployment_scales_proportionally_and_does_not_roll_out() {
    // {3, 2} with max-replicas 5 scaled to 10 (maxSurge 0) -> {6, 4} (spec 3.11).
    let mut w = World::new(4, (1, 1));
    let mut d = deployment(5, rolling(IntOrString::Int(0), IntOrString::Int(1)), "v1");
    d.spec.as_mut().unwrap().paused = Some(true);
    w.create(d);
    w.settle();
    assert!(
        w.replica_sets().is_empty(),
        "a paused deployment creates no replica set"
    );
    let owner = w.deployment();
    let mk = |image: &str, replicas: i32, revision: &str, w: &mut World| {
        let hash = compute_hash(&template(image), None);
        let mut t = template(image);
        t.metadata
            .as_mut()
            .unwrap()
            .labels
            .as_mut()
            .unwrap()
            .insert(POD_TEMPLATE_HASH_LABEL.into(), hash.clone());
        let rs = StoredReplicaSet::from_k8s(ReplicaSet {
            metadata: ObjectMeta {
                name: Some(format!("web-{hash}")),
                namespace: Some("default".into()),
                labels: t.metadata.as_ref().unwrap().labels.clone(),
                owner_references: Some(vec![new_controller_ref(
                    API_VERSION,
                    KIND,
                    &owner.metadata,
                )]),
                annotations: Some(
                    [
                        (REVISION_ANNOTATION.to_string(), revision.to_string()),
                        (DESIRED_REPLICAS_ANNOTATION.to_string(), "5".to_string()),
                        (MAX_REPLICAS_ANNOTATION.to_string(), "5".to_string()),
                    ]
                    .into(),
                ),
                ..Default::default()
            },
            spec: Some(k8s_openapi::api::apps::v1::ReplicaSetSpec {
                replicas: Some(replicas),
                selector: LabelSelector {
                    match_labels: t.metadata.as_ref().unwrap().labels.clone(),
                    ..Default::default()
                },
                template: Some(t),
                ..Default::default()
            }),
            status: None,
        });
        let now = w.client.now;
        kubeplane_registry::client::create(
            &mut w.client.store,
            Object::ReplicaSet(Arc::new(rs)),
            now,
        )
        .unwrap();
    };
    mk("v0", 3, "1", &mut w);
    w.client.now = SimTime::from_secs(1);
    mk("v1", 2, "2", &mut w);
    w.run_until(10);
    w.client.events.clear();
    w.edit(|d| d.spec.as_mut().unwrap().replicas = Some(10));
    w.run_until(20);
    let sizes: Vec<i32> = w.replica_sets().iter().map(|rs| rs_replicas(rs)).collect();
    assert_eq!(sizes, [6, 4]);
    let messages: Vec<String> = w
        .events(REASON_SCALING_REPLICA_SET)
        .iter()
        .map(|e| e.message().to_string())
        .collect();
    assert_eq!(messages.len(), 2);
    assert!(
        messages[0].ends_with("from 3 to 6") && messages[1].ends_with("from 2 to 4"),
        "{messages:?}"
    );
    for rs in w.replica_sets() {
        assert_eq!(desired_replicas_annotation(&rs), Some(10));
        assert_eq!(max_replicas_annotation(&rs), Some(10));
    }
    // A template change while paused does nothing; resuming rolls out.
    w.set_image("v2");
    w.run_until(30);
    assert!(w.rs_for_image("v2").is_none());
    assert_eq!(
        w.condition(CONDITION_PROGRESSING)
            .unwrap()
            .reason
            .as_deref(),
        Some(REASON_PAUSED)
    );
    w.edit(|d| d.spec.as_mut().unwrap().paused = Some(false));
    w.run_until(200);
    assert_eq!(rs_replicas(&w.rs_for_image("v2").unwrap()), 10);
    assert_eq!(w.active_pods().len(), 10);
}

#[test]
fn a_stuck_rollout_exceeds_its_progress_deadline_one_second_after_it() {
    let mut w = World::new(5, (1, 1));
    w.kubelet.enabled = false;
    let mut d = deployment(2, rolling(IntOrString::Int(1), IntOrString::Int(0)), "v1");
    d.spec.as_mut().unwrap().progress_deadline_seconds = Some(30);
    w.create(d);
    w.run_until(30);
    assert_eq!(w.condition(CONDITION_PROGRESSING).unwrap().status, "True");
    w.run_until(31);
    let c = w.condition(CONDITION_PROGRESSING).unwrap();
    let rs = name(&w.replica_sets()[0]);
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref(), c.message.as_deref()),
        (
            "False",
            Some(REASON_TIMED_OUT),
            Some(format!("ReplicaSet \"{rs}\" has timed out progressing.").as_str())
        )
    );
    assert_eq!(
        w.client.store.instant(c.last_update_time.as_ref().unwrap()),
        SimTime::from_secs(31)
    );
}

#[test]
fn old_replica_sets_beyond_the_revision_history_limit_are_deleted() {
    let mut w = World::new(6, (1, 1));
    let mut d = deployment(2, rolling(IntOrString::Int(1), IntOrString::Int(0)), "v1");
    d.spec.as_mut().unwrap().revision_history_limit = Some(1);
    w.create(d);
    w.run_until(10);
    for (i, image) in ["v2", "v3", "v4"].iter().enumerate() {
        w.set_image(image);
        w.run_until(30 * (i as i64 + 1) + 10);
    }
    let rss = w.replica_sets();
    let revisions: Vec<i64> = rss.iter().map(|rs| revision(rs).unwrap()).collect();
    assert_eq!(revisions, [3, 4], "the newest old one is kept");
    // Rolling back to the template of revision 3 re-uses its ReplicaSet as revision 5.
    w.set_image("v3");
    w.run_until(200);
    let back = w.rs_for_image("v3").unwrap();
    assert_eq!(revision(&back), Ok(5));
    assert_eq!(
        back.metadata.annotations.as_ref().unwrap()[REVISION_HISTORY_ANNOTATION],
        "3"
    );
    assert_eq!(rs_replicas(&back), 2);
}

#[test]
fn a_deployment_selecting_everything_only_gets_a_warning() {
    let mut w = World::new(7, (1, 1));
    let mut d = deployment(2, recreate(), "v1");
    d.spec.as_mut().unwrap().selector = LabelSelector::default();
    w.create(d);
    w.settle();
    // Recorded on each sync: the first, and the one its own status write triggers.
    let ev = w.events(REASON_SELECTING_ALL);
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[0].type_(), "Warning");
    assert_eq!(
        ev[0].message(),
        "This deployment is selecting all pods. A non-empty selector is required."
    );
    assert!(w.replica_sets().is_empty());
    assert_eq!(
        w.deployment().status.as_ref().unwrap().observed_generation,
        Some(1)
    );
}

#[test]
fn a_rollback_makes_the_old_replica_set_new_again_with_the_next_revision() {
    let mut w = World::new(7, (1, 1));
    w.create(deployment(
        2,
        rolling(IntOrString::Int(1), IntOrString::Int(0)),
        "v1",
    ));
    w.run_until(5);
    w.set_image("v2");
    w.run_until(60);
    let v1 = w.rs_for_image("v1").unwrap();
    w.edit(|d| {
        d.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert("team".into(), "blue".into());
        d.spec.as_mut().unwrap().template = template("v1").into();
    });
    w.run_until(120);
    // The existing ReplicaSet is the new one again: its annotations are patched (the
    // Deployment's, the next revision, the one it replaces in the history), its template
    // and identity are not.
    let back = w.rs_for_image("v1").unwrap();
    assert_eq!(back.metadata.uid, v1.metadata.uid);
    let ann = back.metadata.annotations.as_ref().unwrap();
    assert_eq!(ann[REVISION_ANNOTATION], "3");
    assert_eq!(ann[REVISION_HISTORY_ANNOTATION], "1");
    assert_eq!(ann["team"], "blue");
    assert_eq!(rs_template(&back), rs_template(&v1));
    assert_eq!(rs_replicas(&back), 2);
    assert_eq!(rs_replicas(&w.rs_for_image("v2").unwrap()), 0);
    assert_eq!(
        w.deployment().metadata.annotations.as_ref().unwrap()[REVISION_ANNOTATION],
        "3"
    );
}

#[test]
fn a_sync_copies_its_deployment_only_to_change_it() {
    let d: DeploymentRef = Arc::new(StoredDeployment::from_k8s(Deployment {
        metadata: ObjectMeta {
            annotations: Some([(REVISION_ANNOTATION.to_string(), "2".to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    }));
    let mut shared = d.clone();
    assert!(!set_revision(&mut shared, "2"));
    assert!(
        Arc::ptr_eq(&shared, &d),
        "an unchanged revision copies nothing"
    );
    assert!(set_revision(&mut shared, "3"));
    assert!(
        !Arc::ptr_eq(&shared, &d),
        "a change is made on the sync's own copy"
    );
    let revision_of = |d: &StoredDeployment| {
        d.metadata.annotations.as_ref().unwrap()[REVISION_ANNOTATION].clone()
    };
    assert_eq!(
        revision_of(&d),
        "2",
        "the cached version is not written into"
    );
    assert_eq!(revision_of(&shared), "3");
    // A Deployment without annotations gets the map, as set_deployment_revision does.
    let mut bare: DeploymentRef = Arc::new(StoredDeployment::default());
    let kept = bare.clone();
    assert!(set_revision(&mut bare, "1"));
    assert_eq!(revision_of(&bare), "1");
    assert!(kept.metadata.annotations.is_none());
    assert_eq!(*status_or_empty(&kept), DeploymentStatus::default());
}

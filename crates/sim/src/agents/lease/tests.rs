//! Quiet Lease renewals leave the store exactly as full updates would: the same objects, the
//! same resourceVersions (other writes interleaved), only without the renewals' watch events;
//! a Lease someone else wrote or deleted is handled as before.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeplane_api::{delegate_client, SlotHint};
use kubeplane_core::SimTime;
use kubeplane_registry::testing::TestClient;
use kubeplane_store::{ApiError, Client, Component, DeleteOptions, Kind, Object, ObjectKey};

use crate::agents::{NodeAgents, NODE_LEASE_NAMESPACE};

/// A test client with the in-process API's quiet Lease renewals.
struct Quiet(TestClient);

impl Client for Quiet {
    fn renew_lease_quietly(
        &mut self,
        namespace: &str,
        name: &str,
        renew: jiff::Timestamp,
        resource_version: u64,
        hint: &mut SlotHint,
    ) -> Option<Result<u64, ApiError>> {
        Some(kubeplane_registry::client::renew_lease_quietly(
            &mut self.0.store,
            namespace,
            name,
            renew,
            resource_version,
            hint,
        ))
    }
    delegate_client!(0: cache, clock, get, create, update, update_status, patch_pod_status,
        delete, evict, bind, update_scale, record_event, explain, emit_record);
}

/// What a run leaves: the stored objects, the Lease watch events, the renewals counted.
#[derive(Debug, PartialEq)]
struct Outcome {
    objects: Vec<serde_json::Value>,
    lease_events: usize,
    renewed: u64,
}

fn object(kind: &str, name: &str) -> Object {
    let meta = ObjectMeta {
        name: Some(name.into()),
        namespace: (kind == "Pod").then(|| "default".into()),
        ..Default::default()
    };
    match kind {
        "Node" => Object::Node(Arc::new(
            Node {
                metadata: meta,
                ..Default::default()
            }
            .into(),
        )),
        _ => Object::Pod(Arc::new(
            Pod {
                metadata: meta,
                ..Default::default()
            }
            .into(),
        )),
    }
}

/// Two nodes' agents for 60 s, a pod created every 15 s between their renewals, and
/// `interfere` at 35 s; `quiet`: the agents renew quietly.
fn run(quiet: bool, interfere: fn(&mut TestClient)) -> Outcome {
    let mut client = Quiet(TestClient::new(1));
    let mut agents = NodeAgents::new(None);
    if quiet {
        agents = agents.with_quiet_renewals();
    }
    for name in ["n1", "n2"] {
        client.create(object("Node", name)).unwrap();
    }
    let mut lease_events = 0;
    for secs in (0..=60).step_by(5) {
        let now = SimTime::from_secs(secs);
        client.0.now = now;
        if secs % 15 == 0 {
            client.create(object("Pod", &format!("p{secs}"))).unwrap();
        }
        if secs == 35 {
            interfere(&mut client.0);
        }
        loop {
            for ev in client.0.store.take_events() {
                lease_events += usize::from(ev.object.kind() == Kind::Lease);
                agents.observe(&ev, now);
            }
            if agents.next_wakeup().is_none_or(|t| t > now) {
                break;
            }
            agents.run(now, &mut client);
        }
    }
    Outcome {
        objects: client.0.store.all().map(Object::to_json).collect(),
        lease_events,
        renewed: agents.leases_renewed,
    }
}

/// A case: what it is, what happens at 35 s, the Lease watch events of the quiet run.
type Case = (&'static str, fn(&mut TestClient), usize);

fn lease_key() -> ObjectKey {
    ObjectKey::new(Kind::Lease, NODE_LEASE_NAMESPACE, "n1")
}

#[test]
fn quiet_renewals_leave_the_store_and_resource_versions_as_full_updates_do() {
    let cases: [Case; 4] = [
        ("nobody else writes the Leases", |_| {}, 2),
        (
            "someone else writes a Lease: the next renewal is a full update of the agent's copy",
            |c| {
                let mut l = c.get(&lease_key()).unwrap();
                l.meta_mut().labels = Some([("k".to_string(), "v".to_string())].into());
                l.meta_mut().resource_version = None;
                c.update(l).unwrap();
            },
            2 + 1 + 1,
        ),
        (
            "a Lease is deleted: the agent creates it again at its next renewal",
            |c| {
                c.delete(&lease_key(), DeleteOptions::default()).unwrap();
            },
            2 + 1 + 1,
        ),
        (
            "a Lease is deleted and another takes its place in the store: the agent's remembered \
             slot holds another key, and the agent creates its Lease again",
            |c| {
                c.delete(&lease_key(), DeleteOptions::default()).unwrap();
                let mut other = c.get(&ObjectKey::new(Kind::Lease, NODE_LEASE_NAMESPACE, "n2"));
                let other = other.as_mut().unwrap();
                other.meta_mut().name = Some("other".into());
                other.meta_mut().resource_version = None;
                other.meta_mut().uid = None;
                c.create(other.clone()).unwrap();
            },
            2 + 1 + 1 + 1,
        ),
    ];
    for (case, interfere, quiet_lease_events) in cases {
        let full = run(false, interfere);
        let quiet = run(true, interfere);
        assert_eq!(full.objects, quiet.objects, "{case}");
        assert_eq!(full.renewed, quiet.renewed, "{case}");
        assert_eq!(quiet.lease_events, quiet_lease_events, "{case}");
        assert!(full.lease_events > 10, "{case}: {}", full.lease_events);
    }
}

#[test]
fn the_renew_time_kept_for_an_instant_is_that_instants_under_that_clock() {
    let mut agents = NodeAgents::new(None);
    let start: jiff::Timestamp = "2025-01-01T00:00:00Z".parse().unwrap();
    let later: jiff::Timestamp = "2025-06-01T00:00:00Z".parse().unwrap();
    let at = |secs: i64, from: jiff::Timestamp| SimTime::from_secs(secs).to_timestamp(from);
    for (secs, from) in [
        (0, start),
        (0, start),
        (10, start),
        (10, later),
        (5, later),
        (10, start),
    ] {
        let now = SimTime::from_secs(secs);
        assert_eq!(agents.renew_time(now, from), at(secs, from), "{secs} s");
    }
}

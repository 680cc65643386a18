//! The Deployment's `status.terminatingReplicas` (DeploymentReplicaSetTerminatingReplicas).

use super::*;
use kubeplane_api::StoredReplicaSet;

// ----- status.terminatingReplicas (DeploymentReplicaSetTerminatingReplicas) --------------------

/// A ReplicaSet whose status reports `terminating` and was written at `observed` generation.
fn rs_with_status(
    name: &str,
    observed: Option<i64>,
    terminating: Option<i32>,
) -> Arc<StoredReplicaSet> {
    Arc::new(StoredReplicaSet::from_k8s(ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: None,
        status: Some(k8s_openapi::api::apps::v1::ReplicaSetStatus {
            observed_generation: observed,
            terminating_replicas: terminating,
            ..Default::default()
        }),
    }))
}

/// A case name, the release, the Deployment's ReplicaSets and the terminating replicas its
/// status reports.
type Case = (
    &'static str,
    KubeVersion,
    Vec<Arc<StoredReplicaSet>>,
    Option<i32>,
);

#[test]
fn the_deployment_status_sums_its_replica_sets_terminating_replicas_when_the_gate_is_on() {
    let d = deployment(
        3,
        rolling(IntOrString::Int(1), IntOrString::Int(0)),
        "nginx:1",
    );
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2025-01-01T00:00:00Z".parse().unwrap(),
    );
    let cases: [Case; 4] = [
        (
            "from v1.35 the terminating replicas of every ReplicaSet are summed",
            v1(35, 0),
            vec![
                rs_with_status("a", Some(1), Some(2)),
                rs_with_status("b", Some(1), Some(1)),
            ],
            Some(3),
        ),
        (
            "a ReplicaSet its controller never synced is left out of the sum",
            v1(35, 0),
            vec![
                rs_with_status("a", Some(1), Some(2)),
                rs_with_status("new", None, None),
            ],
            Some(2),
        ),
        (
            "a synced ReplicaSet that reports no terminating replicas makes the sum unknown",
            v1(35, 0),
            vec![
                rs_with_status("a", Some(1), Some(2)),
                rs_with_status("old", Some(1), None),
            ],
            None,
        ),
        (
            "before v1.35 the gate is off and the field stays unset",
            v1(34, 7),
            vec![rs_with_status("a", Some(1), Some(2))],
            None,
        ),
    ];
    for (name, version, rss, want) in cases {
        let dc = DeploymentController::with_features(&FeatureGates::for_version(version));
        let status = dc.calculate_status(&rss, rss.first(), &d, &now);
        assert_eq!(status.terminating_replicas, want, "{name}");
    }
}

#[test]
fn a_settled_deployment_reports_zero_terminating_replicas_from_v1_35_only() {
    for (version, want) in [(v1(35, 0), Some(0)), (v1(34, 7), None)] {
        let mut w = World::at_version(3, (1, 5), version);
        w.create(deployment(
            3,
            rolling(IntOrString::Int(1), IntOrString::Int(0)),
            "nginx:1",
        ));
        w.run_until(60);
        let status = w.deployment().status.clone().unwrap();
        assert_eq!(status.available_replicas, Some(3), "{version}");
        assert_eq!(status.terminating_replicas, want, "{version}");
    }
}

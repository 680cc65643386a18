//! Whole-simulator tests: determinism, the examples, and the benchmark workloads at small size.

use kubeplane_api::PodExt;
use std::path::PathBuf;

use kubeplane_sim::scenario::{parse_files, Scenario};
use kubeplane_sim::{workloads, RunOptions, Simulation};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the files and returns the jsonl output and the number of failed expectations.
fn run(files: &[(String, String)], opts: &RunOptions) -> (String, usize, usize) {
    let input = parse_files(files).expect("the scenario parses");
    let mut sim = Simulation::new(input, opts).expect("the simulation starts");
    sim.run(&mut |_, _| {}).expect("the simulation runs");
    let mut out = String::new();
    for r in sim.take_records() {
        out.push_str(&serde_json::to_string(&r.to_json()).unwrap());
        out.push('\n');
    }
    (out, sim.n_failed, sim.n_passed)
}

fn read(rel: &str) -> (String, String) {
    let path = repo_root().join(rel);
    (
        rel.to_string(),
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
}

/// A scenario with many random choices: generated names, UIDs and score ties.
const NON_TRIVIAL: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 12
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, conditions: [{type: Ready, status: "True"}]}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, conditions: [{type: Ready, status: "True"}]}}
- {apiVersion: v1, kind: Node, metadata: {name: n3}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, conditions: [{type: Ready, status: "True"}]}}
---
apiVersion: kubeplane.io/v1alpha1
kind: Scenario
metadata: {name: determinism}
spec:
  duration: 20m
  steps:
  - at: 30s
    taint: {node: n2, key: maintenance, effect: NoExecute}
  - at: 2m
    scale: {kind: Deployment, name: web, replicas: 5}
  - at: 3m
    nodeDown: {node: n3}
  - at: 15m
    expect:
    # 5 replicas, plus the 3 pods evicted from the unreachable node n3 at 545s, which stay
    # Terminating because their node agent is down.
    - pods: {selector: app=web}
      count: 8
"#;

#[test]
fn the_same_input_and_seed_give_byte_identical_output() {
    let files = vec![("determinism.yaml".to_string(), NON_TRIVIAL.to_string())];
    let (a, failed, _) = run(&files, &RunOptions::default());
    let (b, _, _) = run(&files, &RunOptions::default());
    assert_eq!(failed, 0, "{a}");
    assert!(a.lines().count() > 50, "a non-trivial run: {a}");
    assert_eq!(a, b);
}

/// A busy cluster for comparing the scheduler with and without reused node-local results:
/// replicas with identical specs, host ports, preferred affinity, images, taints of every
/// effect, cordons, a node changing zone, nodes coming and going, and preemption (nominated
/// pods).
fn busy_cluster() -> String {
    let mut y = String::new();
    for i in 0..12 {
        let images = if i % 2 == 0 {
            r#", images: [{names: ["nginx:1.25"], sizeBytes: 600000000}]"#
        } else {
            ""
        };
        y.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{i}, labels: {{kubernetes.io/hostname: n{i}, topology.kubernetes.io/zone: z{}, disk: {}}}}}\nstatus: {{allocatable: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}, conditions: [{{type: Ready, status: \"True\"}}]{images}}}\n",
            i % 3,
            if i % 4 == 0 { "ssd" } else { "hdd" },
        ));
    }
    y.push_str(
        r#"---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 30
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "nginx:1.25", resources: {requests: {cpu: 300m, memory: 256Mi}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ported}
spec:
  replicas: 6
  selector: {matchLabels: {app: ported}}
  template:
    metadata: {labels: {app: ported}}
    spec:
      tolerations: [{key: soft, operator: Exists, effect: PreferNoSchedule}]
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - {weight: 10, preference: {matchExpressions: [{key: disk, operator: In, values: [ssd]}]}}
      containers: [{name: app, image: redis, ports: [{containerPort: 80, hostPort: 8080}], resources: {requests: {cpu: 200m}}}]
---
apiVersion: kubeplane.io/v1alpha1
kind: Scenario
metadata: {name: busy}
spec:
  duration: 8m
  steps:
  - {at: 20s, taint: {node: n1, key: soft, effect: PreferNoSchedule}}
  - {at: 20s, taint: {node: n2, key: hard, effect: NoSchedule}}
  - {at: 30s, cordon: {node: n3}}
  - {at: 40s, scale: {kind: Deployment, name: web, replicas: 60}}
  - {at: 50s, label: {kind: Node, name: n4, set: {topology.kubernetes.io/zone: z9}}}
  - {at: 60s, uncordon: {node: n3}}
  - {at: 70s, untaint: {node: n2, key: hard}}
  - {at: 80s, scale: {kind: Deployment, name: ported, replicas: 14}}
  - at: 90s
    apply:
      apiVersion: v1
      kind: Node
      metadata: {name: n12, labels: {kubernetes.io/hostname: n12, topology.kubernetes.io/zone: z0, disk: ssd}}
      status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}, conditions: [{type: Ready, status: "True"}], images: [{names: ["redis:latest"], sizeBytes: 300000000}]}
  - {at: 100s, scale: {kind: Deployment, name: web, replicas: 80}}
  - {at: 2m, delete: {kind: Node, name: n5}}
  - at: 3m
    apply:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: urgent}
      spec:
        replicas: 8
        selector: {matchLabels: {app: urgent}}
        template:
          metadata: {labels: {app: urgent}}
          spec:
            priorityClassName: high
            containers: [{name: app, image: "nginx:1.25", resources: {requests: {cpu: "3500m"}}}]
  - {at: 4m, nodeDown: {node: n7}}
  - {at: 5m, scale: {kind: Deployment, name: web, replicas: 40}}
"#,
    );
    y
}

#[test]
fn reusing_node_local_results_changes_nothing() {
    let mut files = vec![("busy.yaml".to_string(), busy_cluster())];
    let opts = |recompute| RunOptions {
        explain: true,
        recompute_node_local: recompute,
        ..Default::default()
    };
    let (a, _, _) = run(&files, &opts(false));
    let (b, _, _) = run(&files, &opts(true));
    // The reuse happens, and only when asked for.
    let reused = |recompute| {
        let input = parse_files(&files).expect("the scenario parses");
        let mut sim = Simulation::new(input, &opts(recompute)).expect("starts");
        sim.run(&mut |_, _| {}).expect("runs");
        let m = sim.metrics();
        let get = |name: &str| m.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        (
            get("kubeplane_scheduler_node_local_filters_reused_total").unwrap(),
            get("kubeplane_scheduler_node_local_scores_reused_total").unwrap(),
        )
    };
    let (filters, scores) = reused(false);
    assert!(filters > 100 && scores > 100, "{filters} {scores}");
    assert_eq!(reused(true), (0, 0));
    assert!(a.contains("\"Preempted\""), "the scenario preempts: {a}");
    assert!(
        a.lines()
            .filter(|l| l.contains("SchedulingAttempt"))
            .count()
            > 120
    );
    assert_eq!(a, b);
    // The examples too.
    for entry in std::fs::read_dir(repo_root().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let rel = format!("examples/{}", path.file_name().unwrap().to_string_lossy());
            files = vec![read(&rel)];
            assert_eq!(
                run(&files, &opts(false)).0,
                run(&files, &opts(true)).0,
                "{rel}"
            );
        }
    }
}

#[test]
fn another_seed_changes_the_random_choices() {
    let files = vec![("determinism.yaml".to_string(), NON_TRIVIAL.to_string())];
    let (a, _, _) = run(&files, &RunOptions::default());
    let (b, _, _) = run(
        &files,
        &RunOptions {
            seed: Some(42),
            ..Default::default()
        },
    );
    // Generated pod names derive from the seed.
    assert_ne!(a, b);
}

#[test]
fn every_example_holds_its_expectations() {
    let dir = repo_root().join("examples");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let rel = format!("examples/{}", path.file_name().unwrap().to_string_lossy());
            let (out, failed, passed) = run(&[read(&rel)], &RunOptions::default());
            assert_eq!(failed, 0, "{rel}:\n{out}");
            // what-if.yaml is a cluster without a Scenario, for one-line what-ifs.
            assert!(
                passed > 0 || rel == "examples/what-if.yaml",
                "{rel} checks something"
            );
            n += 1;
        }
    }
    assert!(n >= 2);
}

#[test]
fn scheduling_basic_at_small_size_schedules_every_pod_within_capacity() {
    // The benchmark's workload, 100 times smaller: 50 nodes, 10 init pods, 100 measured pods.
    let mut objects = workloads::nodes(50);
    objects.extend(workloads::pods("sched-0", "init", 10));
    let scenario = Scenario {
        pod_startup_latency: None,
        ..Scenario::default()
    };
    let mut sim =
        Simulation::new(workloads::input(objects, scenario), &RunOptions::default()).unwrap();
    sim.settle_now().unwrap();
    sim.create_objects(workloads::pods("sched-1", "pod", 100))
        .unwrap();
    sim.settle_now().unwrap();
    let scheduled = sim
        .events()
        .iter()
        .filter(|e| e.reason() == "Scheduled")
        .count();
    assert_eq!(scheduled, 110);
    // LeastAllocated and BalancedAllocation spread identical pods: no node gets more than
    // its share plus one.
    let mut per_node = std::collections::BTreeMap::<String, usize>::new();
    for p in sim.store.pods() {
        let node = p.node_name().unwrap().to_string();
        *per_node.entry(node).or_default() += 1;
    }
    assert_eq!(per_node.len(), 50);
    assert!(per_node.values().all(|&n| n <= 3), "{per_node:?}");
}

#[test]
fn a_day_of_heartbeats_renews_every_lease_every_ten_seconds() {
    let mut objects = workloads::nodes(3);
    objects.extend(workloads::bound_pods("default", 3, 2));
    let scenario = Scenario {
        duration: Some(kubeplane_core::time::SimDuration::from_secs(3600)),
        ..Scenario::default()
    };
    let mut sim =
        Simulation::new(workloads::input(objects, scenario), &RunOptions::default()).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    let renewals = sim
        .metrics()
        .into_iter()
        .find(|(n, _)| n == "kubelet_node_lease_renewals_total")
        .unwrap()
        .1;
    assert_eq!(renewals, 3 * 361);
    // Healthy nodes are never tainted.
    assert!(sim.store.nodes().all(|n| n
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_none_or(|t| t.is_empty())));
}

#[test]
fn the_number_of_threads_does_not_change_where_pods_land() {
    // 300 nodes: windows of filtering and scoring are large enough to run in parallel.
    let run_in = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut objects = workloads::nodes(300);
            objects.extend(workloads::pods("default", "p", 400));
            let scenario = Scenario {
                pod_startup_latency: None,
                ..Scenario::default()
            };
            let mut sim =
                Simulation::new(workloads::input(objects, scenario), &RunOptions::default())
                    .unwrap();
            sim.settle_now().unwrap();
            sim.take_records()
                .iter()
                .map(|r| r.to_json().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        })
    };
    let one = run_in(1);
    assert_eq!(one.matches("\"Scheduled\"").count(), 400);
    assert_eq!(one, run_in(4));
}

#[test]
fn every_regression_scenario_holds_its_expectations() {
    // tests/scenarios/*.yaml: upstream regressions and timelines as whole-simulator runs.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            let (out, failed, passed) = run(&[(name.clone(), text)], &RunOptions::default());
            assert_eq!(failed, 0, "{name}:\n{out}");
            assert!(passed > 0, "{name} checks something");
            n += 1;
        }
    }
    assert!(n >= 3);
}

/// A 10-replica Deployment rolled to a new template with the default 25% maxSurge (3) and
/// maxUnavailable (2).
const ROLLOUT: &str = r#"
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}, conditions: [{type: Ready, status: "True"}]}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}, conditions: [{type: Ready, status: "True"}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 10
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "nginx:1.26", resources: {requests: {cpu: 100m}}}]
---
apiVersion: kubeplane.io/v1alpha1
kind: Scenario
metadata: {name: rollout-bounds}
spec:
  duration: 5m
  podStartupLatency: 3s
  steps:
  - at: 30s
    apply:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web}
      spec:
        replicas: 10
        selector: {matchLabels: {app: web}}
        template:
          metadata: {labels: {app: web}}
          spec:
            containers: [{name: app, image: "nginx:1.27", resources: {requests: {cpu: 100m}}}]
  - at: 5m
    expect:
    - pods: {selector: app=web, phase: Running}
      count: 10
"#;

#[test]
fn a_rolling_update_keeps_the_surge_and_unavailability_bounds_at_every_instant() {
    let input = parse_files(&[("rollout.yaml".into(), ROLLOUT.into())]).unwrap();
    let mut sim = Simulation::new(input, &RunOptions::default()).unwrap();
    let (max_surge, max_unavailable) = (3, 2);
    let mut rolled = false;
    let mut max_total = 0;
    let mut min_available = usize::MAX;
    sim.run_observed(&mut |store, now, _| {
        let pods: Vec<_> = store
            .pods()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        let available = pods
            .iter()
            .filter(|p| {
                p.status()
                    .is_some_and(|s| s.any_condition(|t, st| t == "Ready" && st == "True"))
            })
            .count();
        if now >= kubeplane_core::SimTime::from_secs(30) {
            rolled = true;
            max_total = max_total.max(pods.len());
            min_available = min_available.min(available);
            assert!(
                pods.len() <= 10 + max_surge,
                "at {now}: {} pods",
                pods.len()
            );
            assert!(
                available >= 10 - max_unavailable,
                "at {now}: {available} available"
            );
        }
    })
    .unwrap();
    assert!(rolled);
    assert_eq!(sim.n_failed, 0);
    // The rollout used its room: it surged and went below full availability.
    assert_eq!(max_total, 10 + max_surge);
    assert_eq!(min_available, 10 - max_unavailable);
    let images: std::collections::BTreeSet<String> = sim
        .store
        .pods()
        .flat_map(|p| {
            p.spec
                .as_ref()
                .unwrap()
                .containers
                .iter()
                .map(|c| c.image.clone().unwrap())
        })
        .collect();
    assert_eq!(images, ["nginx:1.27".to_string()].into());
}

/// The livelock's rounds get slower as Terminating pods pile up; with the budget's base at
/// 10,000 rounds it stops in about half a second in a release build.
#[test]
fn an_evict_recreate_livelock_whose_pods_linger_terminating_still_ends_as_a_livelock() {
    let files = vec![read(
        "crates/sim/tests/repros/livelock-grace30-untolerated.yaml",
    )];
    let input = parse_files(&files).expect("the scenario parses");
    let mut sim = Simulation::new(input, &RunOptions::default()).expect("the simulation starts");
    let err = sim
        .run(&mut |_, _| {})
        .expect_err("the instant does not settle");
    let message = err.to_string();
    assert!(message.contains("did not settle at t=0s"), "{message}");
    // The Terminating pods left behind do not raise the budget: it stops after about
    // BASE_ROUNDS_PER_INSTANT rounds, plus 16 per pod not being deleted.
    assert!(
        sim.store.count(kubeplane_store::Kind::Pod) < 20_000,
        "{message}"
    );
}

#[test]
fn a_foreground_delete_keeps_the_deployment_until_its_replicaset_and_pods_are_gone_and_an_orphan_delete_keeps_them(
) {
    use kubeplane_store::{Kind, Object};
    let file = read("crates/sim/tests/scenarios/foreground-and-orphan-deletion.yaml");
    let input = parse_files(&[file]).unwrap();
    let mut sim = Simulation::new(input, &RunOptions::default()).unwrap();
    let rs = |store: &kubeplane_store::Store, app: &str| -> Option<Object> {
        store
            .list(Kind::ReplicaSet)
            .find(|o| o.name().starts_with(app))
            .cloned()
    };
    let mut web_deleted_at = None;
    let mut rs_gone_at = None;
    sim.run_observed(&mut |store, now, _| {
        let deployment = store.get(Kind::Deployment, "default", "web");
        let replica_set = rs(store, "web-");
        if let Some(d) = deployment {
            if d.meta().deletion_timestamp.is_some() {
                web_deleted_at.get_or_insert(now);
                assert_eq!(
                    d.meta().finalizers.as_deref(),
                    Some(&["foregroundDeletion".to_string()][..])
                );
            }
        }
        if web_deleted_at.is_some() && replica_set.is_none() && rs_gone_at.is_none() {
            rs_gone_at = Some(now);
        }
        // The Deployment outlives its ReplicaSet and pods.
        if replica_set.is_some()
            || store
                .pods()
                .any(|p| p.metadata.name.as_deref().unwrap_or("").starts_with("web-"))
        {
            assert!(
                deployment.is_some(),
                "web went before its dependents at {now:?}"
            );
        }
    })
    .unwrap();
    assert_eq!(sim.n_failed, 0);
    let deleted = web_deleted_at.expect("web was deleted in the foreground");
    let gone = rs_gone_at.expect("its ReplicaSet went");
    assert!(
        gone.0 - deleted.0 >= 5_000_000_000,
        "the pods' 5 s grace period was waited for"
    );
    let store = &sim.store;
    assert!(store.get(Kind::Deployment, "default", "web").is_none());
    assert!(store.get(Kind::Deployment, "default", "api").is_none());
    let api = rs(store, "api-").expect("orphaned, kept");
    assert_eq!(api.owner_references(), None);
    assert_eq!(
        store
            .pods()
            .filter(|p| p.metadata.name.as_deref().unwrap_or("").starts_with("api-"))
            .count(),
        2
    );
}

/// A namespace with a Deployment and a pod that terminates for 5 s, deleted at 10 s; a pod
/// applied in it at 12 s.
const NAMESPACE_TERMINATION: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 5
      containers: [{name: c, image: nginx}]
---
apiVersion: kubeplane.io/v1alpha1
kind: Scenario
metadata: {name: namespace-termination}
spec:
  duration: 30s
  steps:
  - at: 10s
    delete: {kind: Namespace, name: team}
  - at: 12s
    apply: {apiVersion: v1, kind: Pod, metadata: {name: late, namespace: team}, spec: {containers: [{name: c, image: nginx}]}}
  - at: 12s
    expect:
    - pods: {namespace: team}
      count: 2
  - at: 16s
    expect:
    - pods: {namespace: team}
      count: 0
"#;

#[test]
fn a_deleted_namespace_is_terminating_until_its_pods_are_gone_and_refuses_new_ones() {
    use kubeplane_store::{Kind, Object};
    let input = parse_files(&[("ns.yaml".into(), NAMESPACE_TERMINATION.into())]).unwrap();
    let mut sim = Simulation::new(input, &RunOptions::default()).unwrap();
    let mut terminating = Vec::new();
    sim.run_observed(&mut |store, now, _| {
        if let Some(Object::Namespace(n)) = store.get(Kind::Namespace, "", "team") {
            let phase = n.status.as_ref().and_then(|s| s.phase.clone());
            if phase.as_deref() == Some("Terminating") {
                terminating.push(now.0 / 1_000_000_000);
            }
        }
    })
    .unwrap();
    let out: Vec<String> = sim
        .take_records()
        .iter()
        .map(|r| r.to_json().to_string())
        .collect();
    assert_eq!(sim.n_failed, 0, "{out:#?}");
    // Terminating from the delete until the pods' grace period is over, then gone.
    assert_eq!(terminating.first(), Some(&10));
    assert!(
        terminating.iter().all(|t| (10..=15).contains(t)),
        "{terminating:?}"
    );
    assert!(sim.store.get(Kind::Namespace, "", "team").is_none());
    let refused = out
        .iter()
        .find(|r| r.contains("late"))
        .expect("the late pod's step failed");
    assert!(
        refused.contains(
            "unable to create new content in namespace team because it is being terminated"
        ),
        "{refused}"
    );
}

//! `scale` and `delete` steps on the workloads kubeplane stores as `Kind::Other`: a StatefulSet
//! is scaled through its scale subresource, and a deleted DaemonSet, StatefulSet, Job or
//! CronJob takes its dependents with it through the garbage collector (or leaves them, with
//! `propagationPolicy: Orphan`), as `kubectl scale` and `kubectl delete` do.

use kubeplane_api::Kind;
use kubeplane_sim::scenario::parse_files;
use kubeplane_sim::{RunOptions, Simulation};

const NODES: &str = "apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: \"8\", memory: 16Gi, pods: \"110\"}, conditions: [{type: Ready, status: \"True\"}]}}
- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: \"8\", memory: 16Gi, pods: \"110\"}, conditions: [{type: Ready, status: \"True\"}]}}
";

const POD_SPEC: &str = "{terminationGracePeriodSeconds: 0, containers: [{name: c, image: nginx}]}";

fn daemon_set() -> String {
    format!(
        "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent, namespace: default}}\nspec:\n  selector: {{matchLabels: {{app: agent}}}}\n  template:\n    metadata: {{labels: {{app: agent}}}}\n    spec: {POD_SPEC}\n"
    )
}

fn stateful_set(replicas: i32) -> String {
    format!(
        "---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: db, namespace: default}}\nspec:\n  replicas: {replicas}\n  serviceName: db\n  selector: {{matchLabels: {{app: db}}}}\n  template:\n    metadata: {{labels: {{app: db}}}}\n    spec: {POD_SPEC}\n"
    )
}

fn job() -> String {
    "---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: batch, namespace: default}\nspec:\n  parallelism: 2\n  completions: 2\n  template:\n    metadata: {labels: {app: batch}}\n    spec: {restartPolicy: Never, terminationGracePeriodSeconds: 0, containers: [{name: c, image: busybox}]}\n".to_string()
}

fn cron_job() -> String {
    "---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: default}\nspec:\n  schedule: \"* * * * *\"\n  jobTemplate:\n    spec:\n      template:\n        metadata: {labels: {app: nightly}}\n        spec: {restartPolicy: Never, terminationGracePeriodSeconds: 0, containers: [{name: c, image: busybox}]}\n".to_string()
}

/// Runs the objects with these steps (YAML list items) and returns the finished simulation.
fn run(objects: &str, duration: &str, steps: &str) -> Simulation {
    let text = format!(
        "{NODES}{objects}---\napiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {{name: t}}\nspec:\n  duration: {duration}\n  steps:\n{steps}"
    );
    let input = parse_files(&[("t.yaml".into(), text)]).expect("parses");
    let mut sim = Simulation::new(input, &RunOptions::default()).expect("starts");
    sim.run(&mut |_, _| {}).expect("runs");
    sim
}

fn exists(sim: &Simulation, kind: &str, name: &str) -> bool {
    sim.store
        .get(Kind::parse(kind).unwrap(), "default", name)
        .is_some()
}

fn owned_pods(sim: &Simulation, app: &str) -> Vec<(String, usize)> {
    let mut pods: Vec<(String, usize)> = sim
        .store
        .pods()
        .filter(|p| p.labels().and_then(|l| l.get("app")).map(String::as_str) == Some(app))
        .map(|p| {
            let owners = p.owner_references().map_or(0, Vec::len);
            (p.metadata.name.clone().unwrap(), owners)
        })
        .collect();
    pods.sort();
    pods
}

#[test]
fn a_scale_step_scales_a_stateful_set_through_its_scale_subresource() {
    let steps = "  - at: 10s
    expect: [{pods: {selector: app=db, phase: Running}, count: 3}]
  - at: 11s
    scale: {kind: StatefulSet, name: db, replicas: 1}
  - at: 30s
    expect:
    - {pods: {selector: app=db}, count: 1}
    - {pod: default/db-0, phase: Running}
  - at: 31s
    scale: {kind: sts, name: db, replicas: 2}
  - at: 50s
    expect: [{pod: default/db-1, phase: Running, ready: true}]
";
    let sim = run(&stateful_set(3), "1m", steps);
    assert_eq!((sim.n_failed, sim.n_passed), (0, 4));
    let set = sim
        .store
        .get(Kind::parse("StatefulSet").unwrap(), "default", "db")
        .unwrap();
    assert_eq!(set.to_json()["spec"]["replicas"], 2);
}

#[test]
fn a_delete_step_takes_each_workload_and_its_pods_through_the_garbage_collector() {
    let cases = [
        ("DaemonSet", "agent", daemon_set()),
        ("StatefulSet", "db", stateful_set(2)),
        ("Job", "batch", job()),
    ];
    for (kind, name, objects) in cases {
        let app = name;
        let steps = format!(
            "  - at: 10s\n    expect: [{{pods: {{selector: app={app}, phase: Running}}, count: 2}}]\n  - at: 11s\n    delete: {{kind: {kind}, name: {name}}}\n  - at: 30s\n    expect: [{{pods: {{selector: app={app}}}, count: 0}}]\n"
        );
        let sim = run(&objects, "1m", &steps);
        assert_eq!((sim.n_failed, sim.n_passed), (0, 2), "{kind}");
        assert!(!exists(&sim, kind, name), "{kind}: gone");
        assert!(
            owned_pods(&sim, app).is_empty(),
            "{kind}: its pods are gone"
        );
    }
}

#[test]
fn an_orphaning_delete_step_leaves_the_pods_without_their_owner() {
    let steps = "  - at: 11s
    delete: {kind: DaemonSet, name: agent, propagationPolicy: Orphan}
  - at: 30s
    expect: [{pods: {selector: app=agent, phase: Running}, count: 2}]
";
    let sim = run(&daemon_set(), "1m", steps);
    assert_eq!((sim.n_failed, sim.n_passed), (0, 1));
    assert!(!exists(&sim, "DaemonSet", "agent"));
    let owners: Vec<usize> = owned_pods(&sim, "agent")
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    assert_eq!(owners, [0, 0], "both pods stay, without an owner reference");
}

#[test]
fn a_deleted_cron_job_takes_its_jobs_and_their_pods() {
    let steps = "  - at: 70s
    expect: [{pods: {selector: app=nightly, phase: Running}, count: 1}]
  - at: 71s
    delete: {kind: CronJob, name: nightly}
  - at: 3m
    expect: [{pods: {selector: app=nightly}, count: 0}]
";
    let sim = run(&cron_job(), "3m", steps);
    assert_eq!((sim.n_failed, sim.n_passed), (0, 2));
    assert!(!exists(&sim, "CronJob", "nightly"));
    assert_eq!(
        sim.store.list(Kind::parse("Job").unwrap()).count(),
        0,
        "its Job went too"
    );
}

#[test]
fn scale_takes_only_kinds_with_a_scale_subresource() {
    let text = format!(
        "{NODES}{}---\napiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {{name: t}}\nspec:\n  steps:\n  - at: 1s\n    scale: {{kind: DaemonSet, name: agent, replicas: 2}}\n",
        daemon_set()
    );
    let err = parse_files(&[("t.yaml".into(), text)])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("spec.steps[0].scale.kind: Unsupported value: \"DaemonSet\": supported values: ReplicaSet, Deployment, StatefulSet"),
        "{err}"
    );
}

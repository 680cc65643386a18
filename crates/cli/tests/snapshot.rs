//! `kubeplane snapshot` against `kubeplane serve`: a served cluster with a Deployment, read in
//! pages, gives a `simulate` input that keeps every running pod on its node (the finished pod
//! left out) and answers a drain what-if; the snapshot sends no write to the server; an unreachable server, a token
//! the server refuses and an unreadable kubeconfig each give one clear message and their exit
//! status; without --kubeconfig, $KUBECONFIG or ~/.kube/config is read, and with neither (and
//! no in-cluster service) the commands exit 2 saying so.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::Value;
use support::serve::Served;
use support::stderr;

/// Six pods of 1 CPU on three nodes of 4 CPUs, a budget that lets one go at a time, and a pod
/// that finishes after a second.
const WORKLOAD: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: nginx
        resources: {requests: {cpu: '1'}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: v1
kind: Pod
metadata:
  name: done
  namespace: default
  annotations: {kubeplane.io/run-duration: 1s}
spec:
  restartPolicy: Never
  containers: [{name: c, image: busybox}]
";

/// The cluster's scheduler configuration, added to the snapshot.
const SCHEDULER: &str = "\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
";

fn kubeplane_in(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the kubeplane binary runs")
}

/// `apiserver_request_total` of the server, summed by verb.
fn requests_by_verb(rt: &tokio::runtime::Runtime, client: &kube::Client) -> BTreeMap<String, u64> {
    let req = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = rt.block_on(client.request_text(req)).expect("/metrics");
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let verb = rest
            .split("verb=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let n: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        *out.entry(verb.to_string()).or_default() += n;
    }
    out
}

fn writes(counts: &BTreeMap<String, u64>) -> u64 {
    ["POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION"]
        .iter()
        .map(|v| counts.get(*v).copied().unwrap_or(0))
        .sum()
}

/// The documents of a YAML stream, as JSON.
fn documents(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// Pod name → node name of the pods in a final state (`--final-state x.json`).
fn placements(path: &Path) -> BTreeMap<String, Option<String>> {
    let objects: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    objects
        .iter()
        .filter(|o| o["kind"] == "Pod")
        .map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap().to_string();
            (name, o["spec"]["nodeName"].as_str().map(str::to_string))
        })
        .collect()
}

#[test]
fn a_snapshot_of_a_served_cluster_simulates_as_it_runs_and_answers_a_drain() {
    let dir = tempfile::tempdir().unwrap();
    let workload = dir.path().join("web.yaml");
    std::fs::write(&workload, WORKLOAD).unwrap();
    let server = Served::start(
        dir.path(),
        "127.0.0.1:0",
        &[],
        &[workload.to_str().unwrap()],
        false,
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(server.client());
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let list = rt.block_on(pods.list(&ListParams::default())).unwrap();
        let phase = |want: &str| {
            list.items
                .iter()
                .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(want))
                .count()
        };
        let (running, succeeded) = (phase("Running"), phase("Succeeded"));
        if running == 6 && succeeded == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the six pods run ({running} do) and one has succeeded ({succeeded})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    std::fs::write(dir.path().join("scheduler.yaml"), SCHEDULER).unwrap();
    let before = requests_by_verb(&rt, &client);
    let snap = dir.path().join("snap.yaml");
    let kubeconfig = server.kubeconfig.to_str().unwrap();
    let out = kubeplane_in(
        dir.path(),
        &[
            "snapshot",
            "--kubeconfig",
            kubeconfig,
            "-o",
            "snap.yaml",
            "--chunk-size",
            "2",
            "--scheduler-config",
            "scheduler.yaml",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("kubeplane snapshot: pods: 6\n")
            && stderr(&out).contains("finished pods left out: 1"),
        "{}",
        stderr(&out)
    );
    let after = requests_by_verb(&rt, &client);
    assert_eq!(
        writes(&after),
        writes(&before),
        "no write: {before:?} → {after:?}"
    );
    // Six pods in pages of two, three nodes in two pages, and one page of each other kind.
    let lists = after["LIST"] - before["LIST"];
    assert!(lists >= 3 + 2 + 10, "paged lists: {lists}");

    let text = std::fs::read_to_string(&snap).unwrap();
    let docs = documents(&text);
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    let first = |k: &str| kinds.iter().position(|x| *x == k).unwrap();
    assert!(first("Node") < first("Deployment") && first("ReplicaSet") < first("Pod"));
    assert_eq!(kinds.last(), Some(&"KubeSchedulerConfiguration"));
    let snap_pods: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "Pod").collect();
    assert_eq!(snap_pods.len(), 6);
    let names: Vec<&str> = snap_pods
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "by name: {names:?}");
    for p in &snap_pods {
        let meta = &p["metadata"];
        assert!(meta.get("managedFields").is_none() && meta.get("resourceVersion").is_none());
        assert!(meta["uid"].is_string() && meta["ownerReferences"][0]["uid"].is_string());
        assert_eq!(p["status"]["phase"], "Running");
    }
    let served: BTreeMap<String, Option<String>> = snap_pods
        .iter()
        .map(|p| {
            let name = p["metadata"]["name"].as_str().unwrap().to_string();
            (name, p["spec"]["nodeName"].as_str().map(str::to_string))
        })
        .collect();
    assert!(served.values().all(Option::is_some));

    // As it is: nothing moves, nothing is created or deleted.
    let out = kubeplane_in(
        dir.path(),
        &[
            "simulate",
            "--output",
            "jsonl",
            "--until",
            "2m",
            "--final-state",
            "same.json",
            "snap.yaml",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = support::stdout(&out);
    for reason in [
        "\"Scheduled\"",
        "SuccessfulCreate",
        "SuccessfulDelete",
        "Killing",
    ] {
        assert!(!text.contains(reason), "{reason} at rest:\n{text}");
    }
    assert_eq!(placements(&dir.path().join("same.json")), served);

    // Drain the node of the first pod: its pods go (one at a time, as the budget allows), and
    // their replacements run on the two other nodes.
    let drained = served.values().next().unwrap().clone().unwrap();
    let on_drained = served
        .values()
        .filter(|n| n.as_deref() == Some(&drained))
        .count();
    assert!(on_drained > 0);
    let out = kubeplane_in(
        dir.path(),
        &[
            "simulate",
            "--output",
            "jsonl",
            "--until",
            "10m",
            "--final-state",
            "drained.json",
            "snap.yaml",
            "--drain",
            &drained,
            "--ignore-daemonsets",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        support::stdout(&out).contains("\"reason\":\"Drained\""),
        "{}",
        support::stdout(&out)
    );
    let end = placements(&dir.path().join("drained.json"));
    assert_eq!(end.len(), 6, "{end:?}");
    assert!(
        end.values()
            .all(|n| n.is_some() && n.as_deref() != Some(&drained)),
        "{end:?}"
    );
    let kept = end.keys().filter(|k| served.contains_key(*k)).count();
    assert_eq!(kept, 6 - on_drained, "the pods elsewhere stay: {end:?}");
}

#[test]
fn unreachable_refused_and_unreadable_clusters_each_give_one_message_and_their_status() {
    let dir = tempfile::tempdir().unwrap();
    let server = Served::start(dir.path(), "127.0.0.1:0", &[], &[], false);
    let good = std::fs::read_to_string(&server.kubeconfig).unwrap();
    let mut kc: Value = serde_yaml_ng::from_str(&good).unwrap();

    kc["users"][0]["user"]["token"] = "not-the-token".into();
    std::fs::write(
        dir.path().join("bad-token"),
        serde_json::to_string(&kc).unwrap(),
    )
    .unwrap();
    let out = kubeplane_in(dir.path(), &["snapshot", "--kubeconfig", "bad-token"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("refused the kubeconfig's credentials (401 Unauthorized)"));
    assert!(out.stdout.is_empty());

    drop(server);
    let out = kubeplane_in(
        dir.path(),
        &["snapshot", "--kubeconfig", "kubeconfig", "-o", "x.yaml"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot reach the API server at https://127.0.0.1:"));
    assert!(
        !dir.path().join("x.yaml").exists(),
        "no file after a failure"
    );

    std::fs::write(
        dir.path().join("bad-scheduler.yaml"),
        "percentageOfNodesToScore: x\n",
    )
    .unwrap();
    let out = kubeplane_in(
        dir.path(),
        &[
            "snapshot",
            "--kubeconfig",
            "kubeconfig",
            "--scheduler-config",
            "bad-scheduler.yaml",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bad-scheduler.yaml"),
        "{}",
        stderr(&out)
    );

    std::fs::write(dir.path().join("garbage"), "clusters: 7\n").unwrap();
    let out = kubeplane_in(dir.path(), &["snapshot", "--kubeconfig", "garbage"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("error: garbage: "),
        "{}",
        stderr(&out)
    );
    let out = kubeplane_in(dir.path(), &["snapshot", "--kubeconfig", "missing"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--kubeconfig missing: "));
}

/// `kubeplane COMMAND ARGS` in `dir` with the environment kube-rs infers a configuration from
/// set as given: `KUBECONFIG` (or unset), `HOME`, and never an in-cluster service.
fn kubeplane_env(dir: &Path, kubeconfig: Option<&Path>, args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kubeplane"));
    cmd.args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT");
    match kubeconfig {
        Some(path) => cmd.env("KUBECONFIG", path),
        None => cmd.env_remove("KUBECONFIG"),
    };
    cmd.output().expect("the kubeplane binary runs")
}

#[test]
fn without_kubeconfig_the_commands_take_kubeconfig_then_home_and_else_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let server = Served::start(dir.path(), "127.0.0.1:0", &[], &[], false);
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".kube")).unwrap();

    let out = kubeplane_env(&home, Some(&server.kubeconfig), &["snapshot", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("# kubeplane snapshot of https://127.0.0.1:"),
        "{text}"
    );
    assert!(
        documents(&text).iter().any(|d| d["kind"] == "Node"),
        "{text}"
    );

    std::fs::copy(&server.kubeconfig, home.join(".kube/config")).unwrap();
    let out = kubeplane_env(&home, None, &["snapshot", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(documents(&String::from_utf8(out.stdout).unwrap())
        .iter()
        .any(|d| d["kind"] == "Node"));
    std::fs::remove_file(home.join(".kube/config")).unwrap();

    for args in [
        &["snapshot"][..],
        &["scheduler", "--secure-port", "0"],
        &["controller-manager", "--secure-port", "0"],
    ] {
        let out = kubeplane_env(&home, None, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("error: no --kubeconfig given and no configuration found in $KUBECONFIG, ~/.kube/config, or the in-cluster service account"),
            "{args:?}: {err}"
        );
        assert!(err.contains(".kube/config"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let out = kubeplane_env(
        &home,
        Some(&server.kubeconfig),
        &["scheduler", "--kubeconfig", "missing"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--kubeconfig missing: "),
        "an explicit file wins"
    );
}

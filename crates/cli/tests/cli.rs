//! The `kubeplane` binary as a user meets it: help and version, `--kubernetes-version`,
//! completions, the man page, `bench --list` and unknown benchmark names, the table's times and
//! explanation lines, and `--output json` with its summary.

mod support;

use serde_json::Value;
use support::{examples, kubeplane, stderr, stdout};

#[test]
fn version_names_the_kubernetes_release_it_follows() {
    let out = kubeplane(&["--version"]);
    assert!(out.status.success());
    let default = kubeplane_core::version::DEFAULT;
    let text = stdout(&out);
    assert!(
        text.contains(&format!("follows Kubernetes {default} by default")),
        "{text}"
    );
    let first = kubeplane_core::version::v1(34, 0);
    let last = kubeplane_core::version::SUPPORTED.last().unwrap();
    assert!(text.contains(&format!("takes {first} to {last}")), "{text}");
}

#[test]
fn an_unsupported_kubernetes_version_exits_2_naming_the_supported_ones() {
    let file = example("kubernetes-version.yaml");
    for (version, says) in [
        ("1.33", "unsupported Kubernetes version \"1.33\""),
        ("1.38.0", "unsupported Kubernetes version \"1.38.0\""),
        ("v1.34.99", "unsupported Kubernetes version \"v1.34.99\""),
        ("1.34.0-rc.1", "invalid Kubernetes version \"1.34.0-rc.1\""),
    ] {
        let out = kubeplane(&["simulate", "--kubernetes-version", version, &file]);
        assert_eq!(out.status.code(), Some(2), "{version}");
        assert!(out.stdout.is_empty(), "nothing may run");
        let err = stderr(&out);
        assert!(err.contains("--kubernetes-version"), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(err.contains("v1.34.0 to v1.34.7"), "{err}");
    }
}

/// The first FailedScheduling message of a JSONL run and its exit status.
fn failed_scheduling(args: &[&str]) -> (Option<i32>, String) {
    let out = kubeplane(args);
    let message = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["reason"] == "FailedScheduling")
        .map(|r| r["message"].as_str().unwrap().to_string())
        .unwrap_or_default();
    (out.status.code(), message)
}

#[test]
fn the_kubernetes_version_flag_overrides_the_scenarios_and_changes_the_taint_reason() {
    let file = example("kubernetes-version.yaml");
    let run = |extra: &[&str]| {
        let mut args = vec!["simulate", "--output", "jsonl", &file];
        args.extend_from_slice(extra);
        failed_scheduling(&args)
    };
    let generic =
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s).";
    let named = "0/3 nodes are available: 1 Insufficient cpu, \
                 1 node(s) had untolerated taint {dedicated: db}, \
                 1 node(s) had untolerated taint {gpu: true}.";
    // The Scenario says 1.37; its expectation holds.
    let (code, message) = run(&[]);
    assert_eq!(code, Some(0));
    assert!(message.starts_with(generic), "{message}");
    for version in ["1.34.2", "v1.35.0", "1.36"] {
        let (code, message) = run(&["--kubernetes-version", version]);
        assert_eq!(code, Some(0), "{version}");
        assert!(message.starts_with(generic), "{version}: {message}");
    }
    for version in ["1.34.0", "v1.34.1"] {
        let (code, message) = run(&["--kubernetes-version", version]);
        assert_eq!(code, Some(1), "{version}: the Scenario's expectation fails");
        assert!(message.starts_with(named), "{version}: {message}");
    }
}

#[test]
fn help_names_every_component_it_runs() {
    let help = stdout(&kubeplane(&["--help"]));
    for component in [
        "kube-scheduler",
        "preemption",
        "taint-eviction controller",
        "node lifecycle controller",
        "ReplicaSet controller",
        "Deployment controller",
        "disruption controller",
        "DaemonSet controller",
        "StatefulSet controller",
        "Job and CronJob controllers",
        "garbage collector",
        "pod GC",
        "namespace",
        "TTL-after-finished",
        "kubelets",
    ] {
        assert!(
            help.contains(component),
            "--help lacks {component}:\n{help}"
        );
    }
}

#[test]
fn completions_know_the_subcommands_and_flags() {
    for shell in ["bash", "zsh", "fish"] {
        let out = kubeplane(&["completion", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        for word in [
            "simulate",
            "bench",
            "completion",
            "schema",
            "explain",
            "list",
        ] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    assert_eq!(kubeplane(&["completion", "tcsh"]).status.code(), Some(2));
}

#[test]
fn the_man_page_is_roff_with_a_section_per_subcommand() {
    let out = kubeplane(&["man"]);
    assert!(out.status.success());
    let page = stdout(&out);
    assert!(page.contains(".TH kubeplane 1"), "{page}");
    for section in [
        "KUBEPLANE SIMULATE",
        "KUBEPLANE BENCH",
        "KUBEPLANE SERVE",
        "KUBEPLANE SCHEMA",
    ] {
        assert!(page.contains(section), "the man page lacks {section}");
    }
    assert!(page.contains("\\-\\-explain"));
}

const BENCHMARKS: [&str; 22] = [
    "serve-api",
    "serve-api-durable",
    "serve-pods",
    "serve-api-etcd",
    "serve-pods-etcd",
    "serve-watch",
    "serve-list",
    "scheduling-basic-10k",
    "scheduling-basic-50k",
    "heartbeats-24h",
    "noexecute-eviction",
    "node-monitor-24h",
    "daemonset-5000",
    "deployment-scale",
    "jobs-1000",
    "envelope",
    "preemption-basic",
    "preemption-basic-5000",
    "preemption-async",
    "topology-spreading",
    "pod-anti-affinity",
    "pod-affinity",
];

#[test]
fn bench_list_names_each_workload_on_one_line() {
    let out = kubeplane(&["bench", "--list"]);
    assert!(out.status.success());
    let listed: Vec<String> = stdout(&out)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect();
    assert_eq!(listed, BENCHMARKS);
}

#[test]
fn an_unknown_benchmark_name_exits_2_naming_the_valid_ones() {
    let out = kubeplane(&["bench", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing may run");
    let err = stderr(&out);
    assert!(err.contains("nosuch"), "{err}");
    for name in BENCHMARKS {
        assert!(err.contains(name), "the error lacks {name}: {err}");
    }
}

#[test]
fn bench_refuses_an_unsupported_kubernetes_version_before_running_anything() {
    let out = kubeplane(&["bench", "--kubernetes-version", "1.33", "jobs-1000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing may run");
    let err = stderr(&out);
    assert!(
        err.contains("--kubernetes-version") && err.contains("unsupported Kubernetes version"),
        "{err}"
    );
}

#[test]
fn bench_follows_the_kubernetes_version_it_is_given_and_names_it() {
    for (flag, release) in [
        (None, "v1.34.1"),
        (Some("1.37"), "v1.37.0"),
        (Some("v1.35.2"), "v1.35.2"),
    ] {
        let mut args = vec!["bench", "--scale-down", "100", "jobs-1000"];
        if let Some(v) = flag {
            args.extend(["--kubernetes-version", v]);
        }
        let out = kubeplane(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let first = stdout(&out).lines().next().unwrap_or("").to_string();
        assert_eq!(
            first,
            format!("Kubernetes {release} (the release the simulated components follow)")
        );
    }
}

/// Writes a scenario to a temporary file named after the test and returns its path.
fn temp_scenario(name: &str, text: &str) -> String {
    let path =
        std::env::temp_dir().join(format!("kubeplane-cli-{}-{name}.yaml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn the_table_shows_times_as_exact_ages() {
    let file = temp_scenario(
        "ages",
        "apiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nspec:\n  duration: 2401h\n  steps:\n  \
         - at: 90s\n    expect: [{pods: {}, count: 0}]\n  - at: 2h\n    expect: [{pods: {}, count: 0}]\n  \
         - at: 8640365s\n    expect: [{pods: {}, count: 0}]\n",
    );
    let out = kubeplane(&["simulate", "--output", "table", &file]);
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "{}", stderr(&out));
    let times: Vec<String> = stdout(&out)
        .lines()
        .filter(|l| l.contains("ExpectationPassed"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(times, ["1m30s", "2h0m0s", "100d0h6m5s"]);
}

fn example(name: &str) -> String {
    examples()
        .into_iter()
        .find(|p| p.file_name().is_some_and(|f| f == name))
        .unwrap_or_else(|| panic!("no example {name}"))
        .display()
        .to_string()
}

#[test]
fn explanation_records_read_as_one_line_in_the_table() {
    let out = kubeplane(&[
        "simulate",
        "--output",
        "table",
        "--explain",
        &example("priority-preemption.yaml"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    let attempts: Vec<&str> = table
        .lines()
        .filter(|l| l.contains("SchedulingAttempt"))
        .collect();
    assert!(!attempts.is_empty());
    for line in &attempts {
        assert!(!line.contains('{'), "raw JSON in the table: {line}");
    }
    assert!(
        attempts[0].contains("attempt 1: Unschedulable: 0/2 nodes are available")
            && attempts[0].contains("preempting default/batch-1, default/batch-2 on a"),
        "{}",
        attempts[0]
    );
}

#[test]
fn the_table_closes_with_a_summary() {
    let out = kubeplane(&[
        "simulate",
        "--output",
        "table",
        &example("priority-preemption.yaml"),
    ]);
    let table = stdout(&out);
    // The summary follows the last blank line.
    let summary: Vec<&str> = table.rsplit("\n\n").next().unwrap().lines().collect();
    assert!(
        summary[0].starts_with("OK: 9 expectation(s) held, 0 failed"),
        "{table}"
    );
    assert_eq!(
        summary[1],
        "pods: 1 scheduled, 0 pending, 0 evicted, 2 preempted, 0 deleted"
    );
    // The two batch pods on a were preempted for critical; web-1 and web-2 stayed on b.
    assert_eq!(summary[2], "pods per node, start → end: a 2 → 1");
    assert_eq!(summary.len(), 3, "{table}");
}

/// The summary's counts, computed here from jsonl records.
fn counts_from_records(records: &[Value]) -> Value {
    let n = |f: &dyn Fn(&Value) -> bool| records.iter().filter(|r| f(r)).count();
    let is = |r: &Value, kind: &str, reason: &str| r["kind"] == kind && r["reason"] == reason;
    serde_json::json!({
        "expectations": {
            "passed": n(&|r| is(r, "Expectation", "ExpectationPassed")),
            "failed": n(&|r| is(r, "Expectation", "ExpectationFailed")),
        },
        "stepsFailed": n(&|r| r["kind"] == "StepFailed"),
        "scheduled": n(&|r| is(r, "Pod", "Scheduled")),
        "evicted": n(&|r| is(r, "Pod", "TaintManagerEviction")
            && r["message"].as_str().unwrap().starts_with("Marking for deletion")),
        "preempted": n(&|r| is(r, "Pod", "Preempted")),
        "deleted": n(&|r| is(r, "ReplicaSet", "SuccessfulDelete")),
    })
}

#[test]
fn json_output_is_one_document_whose_summary_matches_the_records() {
    for file in examples() {
        let file = file.display().to_string();
        let state =
            std::env::temp_dir().join(format!("kubeplane-cli-{}-state.json", std::process::id()));
        let state_arg = state.display().to_string();
        let json = kubeplane(&[
            "simulate",
            "--output",
            "json",
            "--explain",
            "--final-state",
            &state_arg,
            &file,
        ]);
        let jsonl = kubeplane(&["simulate", "--output", "jsonl", "--explain", &file]);
        assert_eq!(json.status.code(), jsonl.status.code(), "{file}");
        let doc: Value = serde_json::from_slice(&json.stdout).expect("one JSON document");
        let records: Vec<Value> = stdout(&jsonl)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(doc["records"].as_array().unwrap(), &records, "{file}");
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(
            keys.last().unwrap().as_str(),
            "summary",
            "the summary comes last"
        );
        let summary = &doc["summary"];
        let want = counts_from_records(&records);
        assert_eq!(summary["expectations"], want["expectations"], "{file}");
        assert_eq!(summary["stepsFailed"], want["stepsFailed"], "{file}");
        for k in ["scheduled", "evicted", "preempted", "deleted"] {
            assert_eq!(summary["pods"][k], want[k], "{file}: {k}");
        }
        // Pending: the pods at the end bound to no node and not being deleted.
        let objects: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
        let pending = objects
            .iter()
            .filter(|o| o["kind"] == "Pod")
            .filter(|o| o["spec"]["nodeName"].is_null())
            .filter(|o| o["metadata"]["deletionTimestamp"].is_null())
            .count();
        assert_eq!(summary["pods"]["pending"], pending, "{file}");
        let _ = std::fs::remove_file(&state);
    }
}

#[test]
fn jsonl_has_no_summary_and_quiet_runs_print_nothing_on_stderr() {
    let file = example("scheduling.yaml");
    let out = kubeplane(&["simulate", "--quiet", "--output", "jsonl", &file]);
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    for line in stdout(&out).lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        assert_ne!(r["kind"], "Summary");
    }
}

#[test]
fn a_directory_of_manifests_runs_like_the_files_named_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus:\n  allocatable:\n    cpu: \"4\"\n    memory: 8Gi\n    pods: \"110\"\n";
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p1\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
    std::fs::create_dir(dir.path().join("apps")).unwrap();
    std::fs::write(dir.path().join("10-node.yaml"), node).unwrap();
    std::fs::write(dir.path().join("apps/pod.yml"), pod).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a manifest").unwrap();
    let d = dir.path().display().to_string();
    let files = [
        dir.path().join("10-node.yaml").display().to_string(),
        dir.path().join("apps/pod.yml").display().to_string(),
    ];
    let by_files = kubeplane(&["simulate", "--output", "jsonl", &files[0], &files[1]]);
    let by_dir = kubeplane(&["simulate", "--output", "jsonl", "-R", &d]);
    assert!(by_dir.status.success(), "{}", stderr(&by_dir));
    assert_eq!(stdout(&by_dir), stdout(&by_files));
    assert!(
        stdout(&by_dir).contains("\"Scheduled\""),
        "{}",
        stdout(&by_dir)
    );
    // Without -R the subdirectory's pod is not read.
    let flat = kubeplane(&["simulate", "--output", "jsonl", &d]);
    assert!(flat.status.success(), "{}", stderr(&flat));
    assert!(
        !stdout(&flat).contains("\"Scheduled\""),
        "{}",
        stdout(&flat)
    );
}

#[test]
fn one_line_what_ifs_become_steps_and_the_summary_says_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    let node = |n: &str| {
        format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {n}}}\nstatus: {{allocatable: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}}}\n---\n")
    };
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  replicas: 4\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - {name: c, image: nginx, resources: {requests: {cpu: \"1\"}}}\n";
    std::fs::write(&cluster, node("n1") + &node("n2") + deployment).unwrap();
    let file = cluster.display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["simulate", "--output", "json", "--until", "20m", &file];
        args.extend_from_slice(extra);
        let out = kubeplane(&args);
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
        doc
    };
    // Without what-ifs the replicas spread over both nodes.
    let plain = run(&[]);
    let changed = |doc: &Value| doc["summary"]["nodesChanged"].to_string();
    assert_eq!(
        changed(&plain),
        r#"[{"node":"n1","podsAtStart":0,"podsAtEnd":2},{"node":"n2","podsAtStart":0,"podsAtEnd":2}]"#
    );
    // At 1m n1 gets a NoExecute taint (its pods go to n2), then in shop the Deployment grows
    // to 6: n2 holds four, two stay pending with the scheduler's reason.
    let what_if = run(&[
        "--at",
        "1m",
        "--taint",
        "n1:maintenance=true:NoExecute",
        "-n",
        "shop",
        "--scale",
        "deployment/web=6",
    ]);
    assert_eq!(
        changed(&what_if),
        r#"[{"node":"n2","podsAtStart":0,"podsAtEnd":4}]"#
    );
    let pending = what_if["summary"]["pendingPods"].as_array().unwrap();
    assert_eq!(pending.len(), 2, "{pending:?}");
    let why = pending[0]["lastFailedScheduling"].as_str().unwrap();
    assert!(
        why.contains("1 node(s) had untolerated taint {maintenance: true}"),
        "{why}"
    );
    assert_eq!(what_if["summary"]["pods"]["evicted"], 2);
    // A reference to a node that does not exist is an input error naming the flag.
    let out = kubeplane(&["simulate", &file, "--cordon", "n9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--cordon n9: no node n9 in the input"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn scale_what_if_takes_a_statefulset_and_refuses_a_kind_that_cannot_scale() {
    let file = example("statefulset.yaml");
    // The example scales web down to 2 and ends at 90s; run on to 2m, and `--scale sts/web=4`
    // at 100s brings it back to 4, OrderedReady: web-2, then web-3.
    for kind in ["statefulset", "sts", "statefulsets"] {
        let target = format!("{kind}/web=4");
        let out = kubeplane(&[
            "simulate", "--output", "jsonl", &file, "--until", "2m", "--at", "100s", "--scale",
            &target,
        ]);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        let text = stdout(&out);
        for pod in ["web-2", "web-3"] {
            let created = format!("create Pod {pod} in StatefulSet web successful");
            let after = text
                .lines()
                .filter(|l| l.contains(&created))
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .any(|r| r["time"].as_f64().unwrap_or(0.0) >= 100.0);
            assert!(after, "{kind}: no {created:?} after 100s in:\n{text}");
        }
    }
    let out = kubeplane(&["simulate", &file, "--scale", "daemonset/web=2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "--scale daemonset/web=2: cannot scale a DaemonSet (only a deployment, replicaset or \
             statefulset)"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn drain_evicts_a_nodes_pods_as_kubectl_drain_and_says_how_it_went() {
    let file = example("drain.yaml");
    let run = |extra: &[&str]| {
        let mut args = vec!["simulate", "--output", "json", &file, "--at", "1m"];
        args.extend_from_slice(extra);
        let out = kubeplane(&args);
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()
    };
    let drain_record = |doc: &Value| -> Value {
        doc["records"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == "DrainResult")
            .cloned()
            .expect("a DrainResult record")
    };
    // Without --force the bare pod stops the drain: nothing is evicted.
    let refused = run(&["--drain", "n1"]);
    let r = drain_record(&refused);
    assert_eq!(r["reason"], "DrainFailed");
    assert_eq!(r["refused"][0]["pod"], "default/debug");
    assert_eq!(
        r["refused"][0]["message"],
        "Pods that declare no controller (use --force to override)"
    );
    assert!(r["evicted"].as_array().unwrap().is_empty());
    // With --force every pod goes; the budget holds the second web pod for one retry.
    let drained = run(&["--drain", "n1", "--force"]);
    let r = drain_record(&drained);
    assert_eq!(r["reason"], "Drained", "{r}");
    assert_eq!(r["evicted"].as_array().unwrap().len(), 3);
    assert_eq!(
        r["warnings"],
        "deleting Pods that declare no controller: default/debug"
    );
    let blocked: Vec<&Value> = r["evicted"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["budget"] == "web")
        .collect();
    assert_eq!(blocked.len(), 1, "{r}");
    assert_eq!(blocked[0]["blockedSince"], 60.0);
    let summary = &drained["summary"]["drains"][0];
    assert_eq!(summary["node"], "n1");
    assert_eq!(summary["result"], "Drained");
    assert_eq!(
        drained["summary"]["nodesChanged"][0],
        serde_json::json!({"node": "n1", "podsAtStart": 1, "podsAtEnd": 0})
    );
    // The table says it in a row and in the summary.
    let table = kubeplane(&[
        "simulate", "--output", "table", &file, "--at", "1m", "--drain", "n1", "--force",
    ]);
    let text = stdout(&table);
    assert!(
        text.contains("Node n1") && text.contains("Drained"),
        "{text}"
    );
    assert!(text.contains("drain n1 (1m0s → "), "{text}");
    // A timeout shorter than the budget's hold ends the drain as kubectl's would.
    let timed_out = run(&[
        "--drain",
        "n1",
        "--force",
        "--timeout",
        "2s",
        "--grace-period",
        "0",
    ]);
    let r = drain_record(&timed_out);
    assert_eq!(r["reason"], "DrainTimedOut", "{r}");
    assert_eq!(r["finished"], 65.0);
    // Input errors exit 2 naming the flag.
    for (args, says) in [
        (vec!["--drain", "n9"], "--drain n9: no node n9 in the input"),
        (
            vec!["--force"],
            "--force is an option of --drain, which is not given",
        ),
        (
            vec!["--drain", "n1", "--timeout", "soon"],
            "--timeout soon: ",
        ),
        (
            vec!["--drain", "n1", "--pod-selector", "a in"],
            "--pod-selector=<pod_selector> must be a valid label selector",
        ),
    ] {
        let mut all = vec!["simulate", file.as_str()];
        all.extend(args.iter().copied());
        let out = kubeplane(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

//! The repros of issue 13: §2 ("no hang, no panic, whatever the input"), minimised inputs on
//! which `kubeplane simulate` hung, panicked, took unbounded memory or accepted what upstream
//! rejects; and §1 ("changes at one virtual instant"), where steps sharing an instant were
//! handled one by one. Each runs the built binary and checks its exit status and what it says. The small
//! inputs are copies of `shared/repros/` in `crates/sim/tests/repros/`; the large ones are
//! generated here. The time limits only guard against hangs; they are no performance checks.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run of the binary gave.
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../sim/tests/repros")
        .join(name)
}

/// Runs `kubeplane` with the arguments (and `stdin` on its standard input), killing it after
/// `limit`: a run that takes that long fails the test as a hang.
fn kubeplane(args: &[&str], stdin: Option<&str>, limit: Duration) -> Outcome {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubeplane starts");
    let mut input = child.stdin.take().expect("stdin");
    let text = stdin.unwrap_or("").to_string();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(text.as_bytes());
    });
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kubeplane {args:?} did not finish within {limit:?} (a hang)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = writer.join();
    Outcome {
        code: status.code().expect("exited, not killed by a signal"),
        stdout: out_reader.join().expect("stdout reader"),
        stderr: err_reader.join().expect("stderr reader"),
        elapsed: started.elapsed(),
    }
}

fn simulate_file(path: &str, limit: Duration) -> Outcome {
    kubeplane(&["simulate", "--output", "jsonl", path], None, limit)
}

fn simulate_stdin(input: &str, limit: Duration) -> Outcome {
    kubeplane(&["simulate", "--output", "jsonl", "-"], Some(input), limit)
}

const MINUTE: Duration = Duration::from_secs(60);

#[test]
fn a_pod_evicted_and_recreated_for_ever_at_one_instant_stops_with_the_busy_components_named() {
    let path = fixture("livelock-grace0-toleration0.yaml");
    let o = simulate_file(path.to_str().unwrap(), MINUTE);
    assert_eq!(o.code, 1, "stderr: {}", o.stderr);
    assert!(
        o.stderr.contains("did not settle at t=10s"),
        "stderr: {}",
        o.stderr
    );
    for component in [
        "taint-eviction-controller",
        "replicaset-controller",
        "scheduler",
    ] {
        assert!(o.stderr.contains(component), "stderr: {}", o.stderr);
    }
    // The records made before the guard fired are printed, and there are boundedly many.
    assert!(o.stdout.contains("TaintManagerEviction"));
    assert!(o.stdout.lines().count() < 1_000_000);
}

#[test]
fn three_taint_steps_at_one_instant_are_one_change_and_evict_by_the_shortest_toleration() {
    // Upstream evaluates the node once with its three taints: key2's 600 s is the minimum, so
    // the pod goes at 60 s + 600 s, not at key1's 3660 s (as when each step was handled alone).
    let path = fixture("same-instant-taints.yaml");
    let o = kubeplane(
        &[
            "simulate",
            "--output",
            "jsonl",
            "--explain",
            path.to_str().unwrap(),
        ],
        None,
        MINUTE,
    );
    assert_eq!(o.code, 0, "stdout: {}\nstderr: {}", o.stdout, o.stderr);
    let lines =
        |needle: &str| -> Vec<&str> { o.stdout.lines().filter(|l| l.contains(needle)).collect() };
    let marked = lines("Marking for deletion Pod default/p");
    assert_eq!(marked.len(), 1, "{}", o.stdout);
    assert!(marked[0].starts_with("{\"time\":660.0,"), "{}", marked[0]);
    assert!(lines("Cancelling deletion").is_empty(), "{}", o.stdout);
    let decisions = lines("\"kind\":\"EvictionDecision\"");
    assert_eq!(decisions.len(), 1, "one evaluation at 60 s: {}", o.stdout);
    assert!(decisions[0].contains("\"at\":660.0"), "{}", decisions[0]);
    assert!(
        decisions[0].contains("\"key3:NoExecute\""),
        "the final taints: {}",
        decisions[0]
    );
    assert_eq!(lines("ExpectationPassed").len(), 1, "{}", o.stdout);
}

#[test]
fn a_replica_set_far_larger_than_its_node_schedules_what_fits_and_ends() {
    // The repro asks for 100,000 replicas; an unoptimised test build runs a tenth of them.
    let replicas = if cfg!(debug_assertions) {
        10_000
    } else {
        100_000
    };
    let text = std::fs::read_to_string(fixture("replicas-100k-quadratic.yaml")).unwrap();
    let text = text.replace("replicas: 100000", &format!("replicas: {replicas}"));
    let o = simulate_stdin(&text, 5 * MINUTE);
    assert_eq!(o.code, 0, "stderr: {}", o.stderr);
    let count = |reason: &str| {
        o.stdout
            .lines()
            .filter(|l| l.contains(&format!("\"reason\":\"{reason}\"")))
            .count()
    };
    assert_eq!(count("Scheduled"), 110, "the node holds 110 pods");
    assert_eq!(count("SuccessfulCreate"), replicas);
    assert!(count("FailedScheduling") >= replicas - 110);
    eprintln!("{replicas} replicas: {:?}", o.elapsed);
}

#[test]
fn deeply_nested_flow_sequences_fail_at_once_naming_the_place() {
    // The repro: 200 KB of '[' (the parser used to take 39 s before giving up at depth 128).
    let text = format!("a: {}\n", "[".repeat(100_000));
    let o = simulate_stdin(&text, MINUTE);
    assert_eq!(o.code, 2, "stderr: {}", o.stderr);
    assert!(
        o.stderr
            .contains("-: document 1: invalid YAML: flow collections"),
        "stderr: {}",
        o.stderr
    );
    assert!(o.stderr.contains("at line 1 column 104"), "{}", o.stderr);
    assert!(o.elapsed < Duration::from_secs(20), "took {:?}", o.elapsed);
}

#[test]
fn a_duplicate_mapping_key_is_an_input_error_naming_the_key() {
    let path = fixture("duplicate-yaml-key.yaml");
    let o = simulate_file(path.to_str().unwrap(), MINUTE);
    assert_eq!(o.code, 2, "stderr: {}", o.stderr);
    assert!(
        o.stderr.contains(
            "duplicate-yaml-key.yaml: document 2: metadata.name: Duplicate value: key \"name\" already set in map"
        ),
        "stderr: {}",
        o.stderr
    );
    assert!(o.stdout.is_empty(), "nothing runs: {}", o.stdout);
}

#[test]
fn an_input_without_objects_or_scenario_is_an_input_error() {
    let path = fixture("empty-input.yaml");
    let o = simulate_file(path.to_str().unwrap(), MINUTE);
    assert_eq!(o.code, 2, "stderr: {}", o.stderr);
    assert!(
        o.stderr
            .contains("empty-input.yaml: no objects passed to simulate"),
        "stderr: {}",
        o.stderr
    );
    for text in [String::new(), "---\n".repeat(1_000_000)] {
        let o = simulate_stdin(&text, MINUTE);
        assert_eq!(o.code, 2, "stderr: {}", o.stderr);
        assert!(
            o.stderr.contains("-: no objects passed to simulate"),
            "stderr: {}",
            o.stderr
        );
    }
}

#[test]
fn an_expectation_after_the_scenario_duration_is_an_input_error() {
    let path = fixture("expect-after-duration.yaml");
    let o = simulate_file(path.to_str().unwrap(), MINUTE);
    assert_eq!(o.code, 2, "stderr: {}", o.stderr);
    assert!(
        o.stderr.contains(
            "document 2 (Scenario s): spec.steps[0].at: Invalid value: \"2m0s\": after the end of the scenario (spec.duration 1m0s)"
        ),
        "stderr: {}",
        o.stderr
    );
}

#[test]
fn expectations_after_an_until_shorter_than_the_steps_fail_as_not_checked() {
    let example =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/node-failure.yaml");
    let example = example.to_str().unwrap();
    let full = kubeplane(&["simulate", "--output", "jsonl", example], None, MINUTE);
    assert_eq!(full.code, 0, "the example passes: {}", full.stderr);
    let o = kubeplane(
        &["simulate", "--output", "jsonl", "--until", "30s", example],
        None,
        MINUTE,
    );
    assert_eq!(o.code, 1, "stderr: {}", o.stderr);
    let unchecked: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.contains("ExpectationFailed") && l.contains("not checked: expectation"))
        .collect();
    assert!(!unchecked.is_empty(), "stdout: {}", o.stdout);
    assert!(
        unchecked[0].contains("after the run ended at 30s"),
        "{}",
        unchecked[0]
    );
    assert!(!o.stdout.contains("ExpectationPassed"));
}

#[test]
fn an_annotation_of_300_kib_is_an_input_error_with_upstreams_message() {
    // The repro's Pod, generated (its file is 300 KiB).
    let text = format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: n1}}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    big: \"{}\"\nspec:\n  containers: [{{name: app, image: nginx}}]\n",
        "x".repeat(300 * 1024)
    );
    let o = simulate_stdin(&text, MINUTE);
    assert_eq!(o.code, 2, "stderr: {}", o.stderr);
    assert!(
        o.stderr.contains(
            "-: document 2 (Pod default/p): metadata.annotations: Too long: must have at most 262144 bytes"
        ),
        "stderr: {}",
        o.stderr
    );
}

#[test]
fn replica_counts_beyond_150000_are_input_errors_not_runs_of_unbounded_memory() {
    let text = std::fs::read_to_string(fixture("replicas-100k-quadratic.yaml")).unwrap();
    for replicas in ["150001", "1000000", "2147483647"] {
        let o = simulate_stdin(
            &text.replace("replicas: 100000", &format!("replicas: {replicas}")),
            MINUTE,
        );
        assert_eq!(o.code, 2, "stderr: {}", o.stderr);
        assert!(
            o.stderr.contains(&format!(
                "-: document 2 (ReplicaSet default/web): spec.replicas: Invalid value: {replicas}: must be less than or equal to 150000"
            )),
            "stderr: {}",
            o.stderr
        );
    }
}

#[test]
fn a_scheduler_config_file_is_read_as_strictly_as_the_input() {
    let dir = std::env::temp_dir().join(format!("kubeplane-repros-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scheduling.yaml");
    let cases = [
        (
            "dup.yaml",
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nkind: KubeSchedulerConfiguration\n".to_string(),
            "dup.yaml: kind: Duplicate value: key \"kind\" already set in map",
        ),
        (
            "deep.yaml",
            format!("a: {}\n", "[".repeat(100_000)),
            "deep.yaml: invalid YAML: flow collections ('[' and '{') nested more than 100 levels deep",
        ),
    ];
    for (name, text, message) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let o = kubeplane(
            &[
                "simulate",
                "--output",
                "jsonl",
                "--scheduler-config",
                path.to_str().unwrap(),
                example.to_str().unwrap(),
            ],
            None,
            MINUTE,
        );
        assert_eq!(o.code, 2, "stderr: {}", o.stderr);
        assert!(o.stderr.contains(message), "stderr: {}", o.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

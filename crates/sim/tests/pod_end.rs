//! The simulated kubelets end pods annotated `kubeplane.io/run-duration` with the exit code of
//! `kubeplane.io/exit-code`, as a kubelet reports terminated containers.

use kubeplane_sim::scenario::parse_files;
use kubeplane_sim::{RunOptions, Simulation};

const NODE: &str = "apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}
  conditions: [{type: Ready, status: \"True\"}]
";

fn pod(name: &str, policy: &str, annotations: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, annotations: {{{annotations}}}}}\nspec:\n  restartPolicy: {policy}\n  containers: [{{name: c, image: busybox}}]\n"
    )
}

#[test]
fn pods_end_after_their_run_duration_as_the_restart_policy_says() {
    let mut text = NODE.to_string();
    let run = "kubeplane.io/run-duration: 10s";
    text += &pod("ok", "Never", run);
    text += &pod(
        "fails",
        "Never",
        &format!("{run}, kubeplane.io/exit-code: \"3\""),
    );
    text += &pod(
        "retries",
        "OnFailure",
        &format!("{run}, kubeplane.io/exit-code: \"1\""),
    );
    text += &pod("done-on-failure", "OnFailure", run);
    text += &pod("forever", "Never", "");
    text += "---\napiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {name: t}\nspec: {duration: 35s}\n";
    let input = parse_files(&[("t.yaml".into(), text)]).expect("parses");
    let mut sim = Simulation::new(input, &RunOptions::default()).expect("starts");
    sim.run(&mut |_, _| {}).expect("runs");
    let get = |name: &str| {
        sim.store
            .pods()
            .find(|p| p.metadata.name.as_deref() == Some(name))
            .map(|p| kubeplane_api::StoredPod::clone(p))
            .unwrap()
    };
    let phase = |name: &str| get(name).phase().unwrap().to_string();
    let container =
        |name: &str| get(name).status_k8s().unwrap().container_statuses.unwrap()[0].clone();
    let cases: &[(&str, &str)] = &[
        ("ok", "Succeeded"),
        ("fails", "Failed"),
        ("retries", "Running"),
        ("done-on-failure", "Succeeded"),
        ("forever", "Running"),
    ];
    for (name, want) in cases {
        assert_eq!(phase(name), *want, "{name}");
    }
    let t = container("fails").state.unwrap().terminated.unwrap();
    assert_eq!((t.exit_code, t.reason.as_deref()), (3, Some("Error")));
    let t = container("ok").state.unwrap().terminated.unwrap();
    assert_eq!((t.exit_code, t.reason.as_deref()), (0, Some("Completed")));
    // Started at 1 s, ended at 11 s.
    assert_eq!(t.finished_at.unwrap().0.to_string(), "2025-01-01T00:00:11Z");
    let ready = get("ok").status_k8s().unwrap().conditions.unwrap();
    let ready = ready.iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("False", Some("PodCompleted"))
    );
    // OnFailure with exit code 1 restarts at 11, 21 and 31 s.
    let r = container("retries");
    assert_eq!(r.restart_count, 3);
    assert_eq!(r.last_state.unwrap().terminated.unwrap().exit_code, 1);
}

#[test]
fn a_pod_status_step_with_an_exit_code_ends_the_containers_at_its_time() {
    let mut text = NODE.to_string();
    text += &pod("crashes", "Never", "");
    text += &pod("finishes", "Never", "");
    text += "---\napiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {name: t}\nspec:\n  duration: 30s\n  steps:\n  - at: 10s\n    podStatus: {pod: crashes, exitCode: 137}\n  - at: 10s\n    podStatus: {pod: finishes, exitCode: 0}\n";
    let input = parse_files(&[("t.yaml".into(), text)]).expect("parses");
    let mut sim = Simulation::new(input, &RunOptions::default()).expect("starts");
    sim.run(&mut |_, _| {}).expect("runs");
    let status = |name: &str| {
        sim.store
            .pods()
            .find(|p| p.metadata.name.as_deref() == Some(name))
            .and_then(|p| p.status_k8s())
            .unwrap()
    };
    for (name, phase, code) in [("crashes", "Failed", 137), ("finishes", "Succeeded", 0)] {
        let s = status(name);
        assert_eq!(s.phase.as_deref(), Some(phase), "{name}");
        let term = s.container_statuses.unwrap()[0]
            .state
            .clone()
            .and_then(|st| st.terminated)
            .expect("a terminated container");
        assert_eq!(term.exit_code, code, "{name}");
    }
}

#[test]
fn an_exit_code_that_contradicts_the_phase_given_is_an_input_error() {
    let text = format!(
        "{NODE}{}---\napiVersion: kubeplane.io/v1alpha1\nkind: Scenario\nmetadata: {{name: t}}\nspec:\n  steps:\n  - at: 1s\n    podStatus: {{pod: p, phase: Succeeded, exitCode: 1}}\n",
        pod("p", "Never", "")
    );
    let err = parse_files(&[("t.yaml".into(), text)])
        .expect_err("an input error")
        .to_string();
    assert!(err.contains("exitCode 1 ends the pod Failed"), "{err}");
}

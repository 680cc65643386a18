//! The manifests of deploy/ against `kubeplane serve`: every object of every file is accepted
//! by server-side apply; the scheduler's ConfigMap holds a configuration kubeplane decodes;
//! run with the Deployments' own arguments (the in-cluster parts replaced by the served
//! cluster's kubeconfig and a loopback port), the scheduler and the controller manager answer
//! their probes' paths over HTTPS, take the Leases the manifests give them RBAC for, and the
//! scheduler binds a pod that names `kubeplane-scheduler`; every `system:` role the manifests
//! bind is one of upstream's bootstrap roles, and every controller kubeplane runs has its role
//! bound. Run as a pod runs them (no kubeconfig: the API server from `KUBERNETES_SERVICE_HOST`
//! and `KUBERNETES_SERVICE_PORT`, the service account's token, CA and namespace at the path the
//! kubelet mounts them, in a mount namespace of the test's own), they do the same.

mod support;

use kubeplane_api::PodExt;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{pinned_kind, Scope};
use serde_json::Value;
use support::process::{free_port, wait_for, Proc};
use support::serve::Served;

/// The bootstrap ClusterRoles of upstream's RBAC policy that the manifests may bind, from
/// kubernetes/kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/
/// cluster-roles.yaml (`system:kube-scheduler`, `system:volume-scheduler`,
/// `system:kube-controller-manager`) and controller-role-bindings.yaml (the
/// `system:controller:` roles, as of the commit read in session 10).
const UPSTREAM_BOOTSTRAP_ROLES: &[&str] = &[
    "system:kube-scheduler",
    "system:volume-scheduler",
    "system:kube-controller-manager",
    "system:controller:attachdetach-controller",
    "system:controller:certificate-controller",
    "system:controller:clusterrole-aggregation-controller",
    "system:controller:cronjob-controller",
    "system:controller:daemon-set-controller",
    "system:controller:deployment-controller",
    "system:controller:disruption-controller",
    "system:controller:endpoint-controller",
    "system:controller:endpointslice-controller",
    "system:controller:endpointslicemirroring-controller",
    "system:controller:ephemeral-volume-controller",
    "system:controller:expand-controller",
    "system:controller:generic-garbage-collector",
    "system:controller:horizontal-pod-autoscaler",
    "system:controller:job-controller",
    "system:controller:legacy-service-account-token-cleaner",
    "system:controller:namespace-controller",
    "system:controller:node-controller",
    "system:controller:persistent-volume-binder",
    "system:controller:pod-garbage-collector",
    "system:controller:podcheckpoint-controller",
    "system:controller:pv-protection-controller",
    "system:controller:pvc-protection-controller",
    "system:controller:replicaset-controller",
    "system:controller:replication-controller",
    "system:controller:resource-claim-controller",
    "system:controller:resourcequota-controller",
    "system:controller:root-ca-cert-publisher",
    "system:controller:route-controller",
    "system:controller:selinux-warning-controller",
    "system:controller:service-account-controller",
    "system:controller:service-cidrs-controller",
    "system:controller:service-controller",
    "system:controller:statefulset-controller",
    "system:controller:ttl-after-finished-controller",
    "system:controller:ttl-controller",
    "system:controller:validatingadmissionpolicy-status-controller",
    "system:controller:volumeattributesclass-protection-controller",
];

/// The role of each controller kubeplane runs (kube-controller-manager's controller name, then
/// the ClusterRole its service account is bound to upstream; the taint-eviction controller has
/// none upstream, so the manifest writes its rules out).
const CONTROLLER_ROLES: &[(&str, &str)] = &[
    (
        "node-lifecycle-controller",
        "system:controller:node-controller",
    ),
    (
        "taint-eviction-controller",
        "kubeplane:controller:taint-eviction-controller",
    ),
    (
        "deployment-controller",
        "system:controller:deployment-controller",
    ),
    (
        "replicaset-controller",
        "system:controller:replicaset-controller",
    ),
    (
        "statefulset-controller",
        "system:controller:statefulset-controller",
    ),
    (
        "daemonset-controller",
        "system:controller:daemon-set-controller",
    ),
    (
        "disruption-controller",
        "system:controller:disruption-controller",
    ),
    (
        "garbage-collector-controller",
        "system:controller:generic-garbage-collector",
    ),
    (
        "pod-garbage-collector-controller",
        "system:controller:pod-garbage-collector",
    ),
    (
        "namespace-controller",
        "system:controller:namespace-controller",
    ),
    ("job-controller", "system:controller:job-controller"),
    ("cronjob-controller", "system:controller:cronjob-controller"),
    (
        "ttl-after-finished-controller",
        "system:controller:ttl-after-finished-controller",
    ),
];

/// Every document of every deploy/*.yaml file, with its file's name.
fn manifests() -> Vec<(String, Value)> {
    let dir = support::repo_root().join("deploy");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("deploy/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 2,
        "the scheduler's and the controller manager's"
    );
    let mut out = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v: Value = serde::Deserialize::deserialize(doc).expect("a YAML document");
            if !v.is_null() {
                out.push((name.clone(), v));
            }
        }
    }
    out
}

/// The one document of this kind and name.
fn find<'a>(docs: &'a [(String, Value)], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .map(|(_, d)| d)
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in deploy/"))
}

/// Server-side applies an object (its resource found by discovery), then reads it back.
async fn apply(client: &kube::Client, doc: &Value) -> Result<(), String> {
    let (group, version) = match doc["apiVersion"].as_str().unwrap().split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", doc["apiVersion"].as_str().unwrap()),
    };
    let gvk = GroupVersionKind::gvk(group, version, doc["kind"].as_str().unwrap());
    let (ar, caps) = pinned_kind(client, &gvk)
        .await
        .map_err(|e| format!("discovery: {e}"))?;
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Cluster => Api::all_with(client.clone(), &ar),
        Scope::Namespaced => {
            let ns = doc["metadata"]["namespace"]
                .as_str()
                .ok_or("no namespace")?;
            Api::namespaced_with(client.clone(), ns, &ar)
        }
    };
    let name = doc["metadata"]["name"].as_str().unwrap();
    let pp = PatchParams::apply("kubeplane-deploy-test").force();
    api.patch(name, &pp, &Patch::Apply(doc))
        .await
        .map_err(|e| format!("apply: {e}"))?;
    api.get(name).await.map_err(|e| format!("read back: {e}"))?;
    Ok(())
}

/// The container arguments of a Deployment of deploy/.
fn container_args(docs: &[(String, Value)], name: &str) -> Vec<String> {
    let d = find(docs, "Deployment", name);
    let args = &d["spec"]["template"]["spec"]["containers"][0]["args"];
    args.as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// A Deployment's arguments with the health port on `port` of the loopback, no token file, and
/// the configuration from `config`.
fn local_args(args: &[String], port: u16, config: Option<&Path>) -> Vec<String> {
    let mut local: Vec<String> = Vec::new();
    for a in args {
        match a.split_once('=') {
            Some(("--secure-port", _)) => local.push(format!("--secure-port={port}")),
            Some(("--bind-address", _)) => local.push("--bind-address=127.0.0.1".into()),
            Some(("--authentication-token-file", _)) => {}
            Some(("--config", _)) => {
                local.push(format!("--config={}", config.unwrap().display()));
            }
            _ => local.push(a.clone()),
        }
    }
    local
}

/// A Deployment's arguments run on this machine: the cluster from `kubeconfig` instead of the
/// service account, the port on the loopback, no token file, the configuration from `config`.
fn run_as_deployed(args: &[String], kubeconfig: &Path, config: Option<&Path>) -> (Proc, u16) {
    let port = free_port();
    let local = local_args(args, port, config);
    let child = Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .args(&local)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stderr(Stdio::null())
        .spawn()
        .expect("kubeplane starts");
    (Proc(child), port)
}

/// Waits until both components hold the Leases the manifests give them RBAC for.
fn wait_for_leases(rt: &tokio::runtime::Runtime, client: &kube::Client) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    for name in ["kubeplane-scheduler", "kubeplane-controller-manager"] {
        wait_for(&format!("the Lease {name} is held"), 30, || {
            let lease = rt.block_on(leases.get_opt(name)).unwrap();
            lease
                .and_then(|l| l.spec?.holder_identity)
                .is_some_and(|h| !h.is_empty())
        });
    }
}

#[test]
fn every_manifest_is_accepted_and_the_components_run_with_the_deployments_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let server = Served::start(dir.path(), "127.0.0.1:0", &[], &[], false);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(server.client());
    let docs = manifests();
    for (file, doc) in &docs {
        let what = format!("{file}: {} {}", doc["kind"], doc["metadata"]["name"]);
        rt.block_on(apply(&client, doc))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }

    let cm = find(&docs, "ConfigMap", "kubeplane-scheduler-config");
    let text = cm["data"]["scheduler-config.yaml"].as_str().unwrap();
    let value: Value = serde_yaml_ng::from_str(text).unwrap();
    let config =
        kubeplane_scheduler::config::decode(&value).expect("a configuration kubeplane decodes");
    let profiles = config.profiles.expect("profiles");
    assert_eq!(
        profiles[0].scheduler_name.as_deref(),
        Some("kubeplane-scheduler")
    );
    let config_file = dir.path().join("scheduler-config.yaml");
    std::fs::write(&config_file, text).unwrap();

    let kubeconfig = server.kubeconfig.clone();
    let (_scheduler, sport) = run_as_deployed(
        &container_args(&docs, "kubeplane-scheduler"),
        &kubeconfig,
        Some(&config_file),
    );
    let (_kcm, kport) = run_as_deployed(
        &container_args(&docs, "kubeplane-controller-manager"),
        &kubeconfig,
        None,
    );
    for port in [sport, kport] {
        wait_for("the probes' paths answer over HTTPS", 30, || {
            support::https::get_as(port, "/healthz", None).is_some_and(|(c, _)| c == 200)
                && support::https::get_as(port, "/readyz", None).is_some_and(|(c, _)| c == 200)
        });
    }
    wait_for_leases(&rt, &client);
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "second"},
        "spec": {"schedulerName": "kubeplane-scheduler",
            "containers": [{"name": "c", "image": "nginx"}]}}))
    .unwrap();
    rt.block_on(pods.create(&PostParams::default(), &pod))
        .unwrap();
    wait_for(
        "kubeplane-scheduler binds the pod that names it",
        30,
        || {
            let p = rt.block_on(pods.get("second")).unwrap();
            p.spec.and_then(|s| s.node_name).is_some()
        },
    );
}

/// Whether this process may make a private mount namespace (`unshare --mount`, as root).
fn can_unshare_mounts() -> bool {
    Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A Deployment's arguments run as its container runs them: no kubeconfig anywhere (an empty
/// home, no `KUBECONFIG`), the API server from the service environment variables, and the
/// service account's files (`sa_dir`) mounted at `/var/run/secrets/kubernetes.io/
/// serviceaccount` in a private mount namespace (a tmpfs over `/run` in it, so nothing is left
/// on this machine). Only the health port, its address and its token file are local.
fn run_in_pod(args: &[String], sa_dir: &Path, api_port: u16, config: Option<&Path>) -> (Proc, u16) {
    let port = free_port();
    let home = sa_dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let local = local_args(args, port, config);
    let mount = "mount -t tmpfs tmpfs /run \
        && mkdir -p /run/secrets/kubernetes.io/serviceaccount \
        && mount --bind \"$SA\" /run/secrets/kubernetes.io/serviceaccount \
        && exec \"$@\"";
    let child = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            mount,
            "sh",
        ])
        .arg(env!("CARGO_BIN_EXE_kubeplane"))
        .args(&local)
        .env("SA", sa_dir.join("serviceaccount"))
        .env("HOME", &home)
        .env_remove("KUBECONFIG")
        .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        .env("KUBERNETES_SERVICE_PORT", api_port.to_string())
        .stderr(Stdio::null())
        .spawn()
        .expect("unshare starts");
    (Proc(child), port)
}

/// The port of the API server a kubeconfig names.
fn server_port(kubeconfig: &Path) -> u16 {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let server = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server:"))
        .expect("a server");
    let port = server.trim().trim_matches('"').rsplit(':').next().unwrap();
    port.trim_end_matches('/').parse().expect("a port")
}

#[test]
fn in_a_pod_the_components_find_the_cluster_through_the_service_account() {
    if !can_unshare_mounts() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root and must run this test"
        );
        eprintln!("skipped: no private mount namespace here (needs root and unshare)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_arg = format!("--data-dir={}", data.display());
    let server = Served::start(
        dir.path(),
        "127.0.0.1:0",
        // No components of its own: the pods are made and bound only by the two "in the pod".
        &[
            std::ffi::OsStr::new(&data_arg),
            std::ffi::OsStr::new("--api-only"),
        ],
        &[],
        false,
    );
    let sa = dir.path().join("serviceaccount");
    std::fs::create_dir_all(&sa).unwrap();
    std::fs::copy(data.join("pki/ca.crt"), sa.join("ca.crt")).unwrap();
    std::fs::copy(data.join("pki/admin.token"), sa.join("token")).unwrap();
    std::fs::write(sa.join("namespace"), "kube-system").unwrap();
    let api_port = server_port(&server.kubeconfig);

    let docs = manifests();
    let cm = find(&docs, "ConfigMap", "kubeplane-scheduler-config");
    let config_file = dir.path().join("scheduler-config.yaml");
    std::fs::write(
        &config_file,
        cm["data"]["scheduler-config.yaml"].as_str().unwrap(),
    )
    .unwrap();
    let (_scheduler, sport) = run_in_pod(
        &container_args(&docs, "kubeplane-scheduler"),
        dir.path(),
        api_port,
        Some(&config_file),
    );
    let (_kcm, kport) = run_in_pod(
        &container_args(&docs, "kubeplane-controller-manager"),
        dir.path(),
        api_port,
        None,
    );
    for port in [sport, kport] {
        wait_for("the probes' paths answer over HTTPS", 30, || {
            support::https::get_as(port, "/readyz", None).is_some_and(|(c, _)| c == 200)
        });
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(server.client());
    wait_for_leases(&rt, &client);
    // The controller manager's ReplicaSet controller makes the pods, the scheduler binds them.
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), "default");
    let mut deployment = support::serve::deployment("in-pod", 2);
    let spec = deployment
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap();
    spec.scheduler_name = Some("kubeplane-scheduler".into());
    rt.block_on(deployments.create(&PostParams::default(), &deployment))
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client, "default");
    wait_for("two pods of the Deployment, both bound", 60, || {
        let list = rt.block_on(pods.list(&Default::default())).unwrap();
        let bound = list
            .items
            .iter()
            .filter(|p| {
                p.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("in-pod-"))
            })
            .filter(|p| p.node_name().is_some())
            .count();
        bound == 2
    });
}

#[test]
fn the_manifests_bind_upstreams_bootstrap_roles_and_a_role_for_every_controller() {
    let docs = manifests();
    let defined: BTreeSet<&str> = docs
        .iter()
        .filter(|(_, d)| d["kind"] == "ClusterRole" || d["kind"] == "Role")
        .filter_map(|(_, d)| d["metadata"]["name"].as_str())
        .collect();
    let mut bound: BTreeSet<(String, String)> = BTreeSet::new();
    for (file, d) in &docs {
        if d["kind"] != "ClusterRoleBinding" && d["kind"] != "RoleBinding" {
            continue;
        }
        let role = d["roleRef"]["name"].as_str().unwrap();
        assert!(
            UPSTREAM_BOOTSTRAP_ROLES.contains(&role) || defined.contains(role),
            "{file}: {role} is neither an upstream bootstrap role nor defined in deploy/"
        );
        assert!(
            !role.starts_with("system:") || UPSTREAM_BOOTSTRAP_ROLES.contains(&role),
            "{file}: {role}"
        );
        let sa = d["subjects"][0]["name"].as_str().unwrap();
        bound.insert((sa.to_string(), role.to_string()));
    }
    let has = |sa: &str, role: &str| bound.contains(&(sa.to_string(), role.to_string()));
    for role in ["system:kube-scheduler", "system:volume-scheduler"] {
        assert!(has("kubeplane-scheduler", role), "{role}");
    }
    assert!(has(
        "kubeplane-controller-manager",
        "system:kube-controller-manager"
    ));

    // The controllers `kubeplane controller-manager` runs, as it lists them before it
    // connects (no configuration anywhere: it stops there with status 2).
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .args(["controller-manager", "--secure-port=0"])
        .env("HOME", home.path())
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("kubeplane controller-manager: controllers: "))
        .expect("the list of controllers");
    for controller in line.split(", ") {
        let role = CONTROLLER_ROLES
            .iter()
            .find(|(c, _)| *c == controller)
            .unwrap_or_else(|| panic!("{controller}: no role known for it"))
            .1;
        assert!(
            has("kubeplane-controller-manager", role),
            "{controller}: {role} is not bound"
        );
    }
}

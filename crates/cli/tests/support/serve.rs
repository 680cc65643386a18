//! `kubeplane serve` as a child process for the tests that talk to it over HTTPS: started on a
//! loopback port with its kubeconfig written in the test's directory, killed (SIGKILL) when
//! dropped, and a kube-rs client for its kubeconfig.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};

use super::repo_root;

/// A running `kubeplane serve`.
pub struct Served {
    child: Option<Child>,
    pub kubeconfig: PathBuf,
}

impl Served {
    /// `kubeplane serve --listen LISTEN --kubeconfig-out DIR/kubeconfig ARGS...
    /// tests/serve/cluster.yaml FILES...` (FILES relative to the repository's root), once it
    /// has written its kubeconfig. A kubeconfig left by an earlier server in `dir` is removed
    /// first. With `keep_stderr`, [`Served::stop`] returns what it printed.
    pub fn start(
        dir: &Path,
        listen: &str,
        args: &[&OsStr],
        files: &[&str],
        keep_stderr: bool,
    ) -> Served {
        let kubeconfig = dir.join("kubeconfig");
        let _ = std::fs::remove_file(&kubeconfig);
        let root = repo_root();
        let child = Command::new(env!("CARGO_BIN_EXE_kubeplane"))
            .args(["serve", "--listen", listen, "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(args)
            .arg(root.join("tests/serve/cluster.yaml"))
            .args(files.iter().map(|f| root.join(f)))
            .stderr(if keep_stderr {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .spawn()
            .expect("kubeplane serve starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !kubeconfig.exists() {
            assert!(Instant::now() < deadline, "the server wrote no kubeconfig");
            std::thread::sleep(Duration::from_millis(50));
        }
        Served {
            child: Some(child),
            kubeconfig,
        }
    }

    /// A kube-rs client of the admin kubeconfig.
    pub async fn client(&self) -> kube::Client {
        client(&self.kubeconfig).await
    }

    /// A kube-rs client of the admin kubeconfig that does not retry a 429, 503 or 504 (kube-rs
    /// retries them by default), so that a test sees them.
    pub async fn client_without_retries(&self) -> kube::Client {
        client_without_retries_of(&self.kubeconfig).await
    }

    /// Whether the server process is still running (it has not exited or crashed).
    pub fn is_running(&mut self) -> bool {
        let child = self.child.as_mut().expect("a started server");
        matches!(child.try_wait(), Ok(None))
    }

    /// Kills the server and returns its output.
    pub fn stop(mut self) -> Output {
        let mut child = self.child.take().expect("a running server");
        let _ = child.kill();
        child.wait_with_output().expect("the server's output")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A kube-rs client of a kubeconfig.
pub async fn client(kubeconfig: &Path) -> kube::Client {
    kube::Client::try_from(config(kubeconfig).await).expect("a client")
}

/// A kube-rs client of a kubeconfig that does not retry a 429, 503 or 504.
pub async fn client_without_retries_of(kubeconfig: &Path) -> kube::Client {
    let mut cfg = config(kubeconfig).await;
    cfg.default_retry = false;
    kube::Client::try_from(cfg).expect("a client")
}

/// The kube-rs configuration of a kubeconfig.
async fn config(kubeconfig: &Path) -> kube::Config {
    let kc = Kubeconfig::read_from(kubeconfig).expect("a kubeconfig");
    kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("the kubeconfig is usable")
}

/// A Deployment of `replicas` nginx pods labelled `app: NAME`.
pub fn deployment(name: &str, replicas: i32) -> k8s_openapi::api::apps::v1::Deployment {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    }))
    .unwrap()
}

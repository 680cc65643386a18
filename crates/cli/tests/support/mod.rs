//! Helpers shared by the CLI's integration tests: running the built binary, finding the
//! scenario files, and a small JSON Schema validator.

#![allow(dead_code)] // Each test crate uses a different part.

pub mod https;
pub mod process;
pub mod serve;
pub mod validator;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the built `kubeplane` with these arguments, from the repository's root.
pub fn kubeplane(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubeplane"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("the kubeplane binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `examples/*.yaml`, sorted.
pub fn examples() -> Vec<PathBuf> {
    yaml_files_in(&repo_root().join("examples"))
}

/// The shared conformance scenarios (`../shared/conformance/scenarios/*/*.yaml`), when the
/// shared folder is beside the repository.
pub fn conformance_scenarios() -> Vec<PathBuf> {
    let dir = repo_root().join("../shared/conformance/scenarios");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs.iter().flat_map(|d| yaml_files_in(d)).collect()
}

fn yaml_files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

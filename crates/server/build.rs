//! Compiles the vendored upstream `generated.proto` files (proto/, see its README) into one
//! protobuf descriptor set that `src/proto.rs` decodes request bodies with. Needs `protoc`
//! (the `PROTOC` environment variable, or `protoc` on the PATH), as the etcd client's build does.

use std::path::{Path, PathBuf};
use std::process::Command;

fn proto_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).expect("crates/server/proto");
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            proto_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
}

fn main() {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).join("proto");
    let out = Path::new(&std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("k8s.desc");
    let mut files = Vec::new();
    proto_files(&root, &mut files);
    files.sort();
    println!("cargo:rerun-if-changed=proto");
    println!("cargo:rerun-if-env-changed=PROTOC");
    let protoc = std::env::var_os("PROTOC").unwrap_or_else(|| "protoc".into());
    let output = Command::new(&protoc)
        .arg("--include_imports")
        .arg("-I")
        .arg(&root)
        .arg("-o")
        .arg(&out)
        .args(&files)
        .output()
        .unwrap_or_else(|e| panic!("running {protoc:?} (install protobuf-compiler): {e}"));
    assert!(
        output.status.success(),
        "protoc failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

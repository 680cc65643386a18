//! The admin kubeconfig `--kubeconfig-out` writes: the server's URL, its CA and the admin
//! bearer token, in the form kubectl, client-go, the Python client and kube-rs read.

use std::net::SocketAddr;
use std::path::Path;

use base64::Engine;
use serde_json::json;

use crate::tls::Credentials;

/// The `host:port` a client on this machine reaches a listen address at (a wildcard address
/// is reached on loopback).
pub fn client_address(bound: SocketAddr) -> String {
    let ip = bound.ip();
    let host = if ip.is_unspecified() {
        if ip.is_ipv4() {
            "127.0.0.1".to_string()
        } else {
            "[::1]".to_string()
        }
    } else if ip.is_ipv6() {
        format!("[{ip}]")
    } else {
        ip.to_string()
    };
    format!("{host}:{}", bound.port())
}

/// The kubeconfig document.
pub fn document(address: &str, creds: &Credentials) -> serde_json::Value {
    let ca = base64::engine::general_purpose::STANDARD.encode(creds.ca_cert.as_bytes());
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubeplane", "cluster": {"server": format!("https://{address}"), "certificate-authority-data": ca}}],
        "users": [{"name": "kubeplane-admin", "user": {"token": creds.token}}],
        "contexts": [{"name": "kubeplane", "context": {"cluster": "kubeplane", "user": "kubeplane-admin", "namespace": "default"}}],
        "current-context": "kubeplane",
        "preferences": {},
    })
}

/// Writes the kubeconfig (owner-readable only: it holds the token), atomically.
pub fn write(path: &Path, address: &str, creds: &Credentials) -> std::io::Result<()> {
    let text =
        serde_yaml_ng::to_string(&document(address, creds)).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("tmp");
    {
        use std::io::Write;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(tmp, path)
}

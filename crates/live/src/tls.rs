//! The serving certificate of the scheduler's port: the `--tls-cert-file` and
//! `--tls-private-key-file` pair when given, else, as kube-scheduler does without them, a
//! self-signed certificate made at start (rcgen) for `localhost`, the loopback addresses, the
//! host's name and the bind address, kept in memory only. Served with rustls (HTTP/1.1).
//!
//! `kubeplane serve`'s `tls.rs` makes a CA and certificates it signs, kept on disk, and
//! verifies client certificates; this needs none of that, so the two share only rcgen and
//! rustls.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Where the serving certificate comes from.
#[derive(Debug, Clone, Default)]
pub struct TlsFiles {
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// The names a self-signed certificate covers for a port bound to `bind`.
fn names(bind: IpAddr) -> Vec<String> {
    let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    let host = crate::events::hostname();
    for n in [host, bind.to_string()] {
        if !n.is_empty() && !bind_is_any(&n) && !names.contains(&n) {
            names.push(n);
        }
    }
    names
}

fn bind_is_any(name: &str) -> bool {
    name.parse::<IpAddr>().is_ok_and(|ip| ip.is_unspecified())
}

/// The certificate chain and key (PEM) to serve.
fn pem_pair(files: &TlsFiles, bind: IpAddr) -> Result<(String, String), String> {
    match (&files.cert, &files.key) {
        (Some(cert), Some(key)) => {
            let read = |p: &PathBuf, flag: &str| {
                std::fs::read_to_string(p).map_err(|e| format!("{flag} {}: {e}", p.display()))
            };
            Ok((
                read(cert, "--tls-cert-file")?,
                read(key, "--tls-private-key-file")?,
            ))
        }
        (None, None) => {
            let ck = rcgen::generate_simple_self_signed(names(bind))
                .map_err(|e| format!("generating a self-signed certificate: {e}"))?;
            Ok((ck.cert.pem(), ck.key_pair.serialize_pem()))
        }
        _ => Err("--tls-cert-file and --tls-private-key-file go together".into()),
    }
}

/// The rustls configuration of the port.
pub fn server_config(files: &TlsFiles, bind: IpAddr) -> Result<Arc<rustls::ServerConfig>, String> {
    let (cert, key) = pem_pair(files, bind)?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the serving certificate: {e}"))?;
    if certs.is_empty() {
        return Err("the serving certificate file holds no certificate".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
        .map_err(|e| format!("the serving key: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("the serving certificate and key: {e}"))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_certificate_names_loopback_and_a_specific_bind_address_only() {
        let n = names("10.1.2.3".parse().unwrap());
        assert!(n.iter().any(|x| x == "localhost") && n.iter().any(|x| x == "10.1.2.3"));
        let n = names("0.0.0.0".parse().unwrap());
        assert!(!n.iter().any(|x| x == "0.0.0.0"));
        assert!(server_config(&TlsFiles::default(), "127.0.0.1".parse().unwrap()).is_ok());
    }

    #[test]
    fn a_certificate_without_its_key_is_refused_naming_both_flags() {
        let files = TlsFiles {
            cert: Some("c.pem".into()),
            key: None,
        };
        let err = server_config(&files, "127.0.0.1".parse().unwrap()).unwrap_err();
        assert!(
            err.contains("--tls-cert-file and --tls-private-key-file"),
            "{err}"
        );
    }
}

//! An HTTPS client for the health and metrics port of `kubeplane scheduler` and `kubeplane
//! controller-manager` (a self-signed certificate, an optional bearer token).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// Accepts any server certificate: the scheduler's is self-signed, made at its start.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &rustls::pki_types::CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(m, c, d, algs)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &rustls::pki_types::CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(m, c, d, algs)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// An HTTPS GET of one of a component's endpoints on loopback, with `Authorization: Bearer TOKEN` when a
/// token is given: the status code and the body.
pub fn get_as(port: u16, path: &str, token: Option<&str>) -> Option<(u16, String)> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .ok()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").ok()?;
    let tls = rustls::ClientConnection::new(Arc::new(cfg), name).ok()?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut conn = rustls::StreamOwned::new(tls, tcp);
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n"));
    let auth = auth.unwrap_or_default();
    write!(conn, "GET {path} HTTP/1.1\r\nHost: localhost\r\n{auth}\r\n").ok()?;
    let mut reply = Vec::new();
    // The server closes after its reply; a missing close_notify is not an error here.
    let _ = conn.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let code = reply.split_whitespace().nth(1)?.parse().ok()?;
    let body = reply.split_once("\r\n\r\n")?.1.to_string();
    Some((code, body))
}

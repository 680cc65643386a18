//! The server's credentials: a CA, a serving certificate it signs (for `localhost`, the
//! loopback addresses and the listen address), and the admin bearer token, generated with
//! rcgen on first start and kept in `--data-dir` (or in memory without one); the rustls
//! configuration that serves them with ALPN `h2` and `http/1.1` and accepts client
//! certificates signed by the CA.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

/// PEM-encoded credentials.
#[derive(Clone, Debug)]
pub struct Credentials {
    pub ca_cert: String,
    pub ca_key: String,
    pub serving_cert: String,
    pub serving_key: String,
    pub token: String,
    /// An admin client certificate and key signed by the CA (for users and tools that prefer
    /// certificates to the token).
    pub client_cert: String,
    pub client_key: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("TLS configuration: {0}")]
    Rustls(String),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError + '_ {
    move |source| TlsError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A random admin token (32 bytes from the OS, URL-safe base64).
fn new_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS has a random source");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The names a serving certificate for `hosts` covers: the loopback names, the in-cluster
/// service names, and the hosts.
fn serving_names(hosts: &[String]) -> Vec<String> {
    let mut names: Vec<String> = vec![
        "localhost".into(),
        "127.0.0.1".into(),
        "::1".into(),
        "kubernetes".into(),
        "kubernetes.default".into(),
    ];
    for h in hosts {
        if !names.contains(h) {
            names.push(h.clone());
        }
    }
    names
}

/// The CA's certificate parameters: the same each time, so a kept CA key signs new
/// certificates under the same issuer name.
fn ca_params() -> Result<CertificateParams, TlsError> {
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "kubeplane-ca");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::CrlSign,
    ];
    Ok(ca)
}

/// A serving certificate (PEM) and its key for `names`, signed by the CA.
fn sign_serving(
    names: &[String],
    ca_cert: &rcgen::Certificate,
    ca_key: &KeyPair,
) -> Result<(String, String), TlsError> {
    let serving_key = KeyPair::generate()?;
    let mut serving = CertificateParams::new(names.to_vec())?;
    serving
        .distinguished_name
        .push(DnType::CommonName, "kubeplane-apiserver");
    let serving_cert = serving.signed_by(&serving_key, ca_cert, ca_key)?;
    Ok((serving_cert.pem(), serving_key.serialize_pem()))
}

/// New credentials for a server reachable at `hosts` (names or IP addresses).
pub fn generate(hosts: &[String]) -> Result<Credentials, TlsError> {
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params()?.self_signed(&ca_key)?;
    let (serving_cert, serving_key) = sign_serving(&serving_names(hosts), &ca_cert, &ca_key)?;
    let client_key = KeyPair::generate()?;
    let mut client = CertificateParams::new(Vec::<String>::new())?;
    client
        .distinguished_name
        .push(DnType::CommonName, "kubeplane-admin");
    client
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    let client_cert = client.signed_by(&client_key, &ca_cert, &ca_key)?;
    Ok(Credentials {
        ca_cert: ca_cert.pem(),
        ca_key: ca_key.serialize_pem(),
        serving_cert,
        serving_key,
        token: new_token(),
        client_cert: client_cert.pem(),
        client_key: client_key.serialize_pem(),
    })
}

/// The names the kept serving certificate covers, one per line.
const NAMES_FILE: &str = "apiserver.names";

const FILES: [&str; 7] = [
    "ca.crt",
    "ca.key",
    "apiserver.crt",
    "apiserver.key",
    "admin.token",
    "admin.crt",
    "admin.key",
];

/// The credentials kept in `dir`, generated and written there on first use (keys and token
/// readable by the owner only).
pub fn load_or_generate(dir: &Path, hosts: &[String]) -> Result<Credentials, TlsError> {
    let pki = dir.join("pki");
    let names_file = pki.join(NAMES_FILE);
    if FILES.iter().all(|f| pki.join(f).exists()) {
        let read = |f: &str| std::fs::read_to_string(pki.join(f)).map_err(io_err(&pki.join(f)));
        let mut creds = Credentials {
            ca_cert: read(FILES[0])?,
            ca_key: read(FILES[1])?,
            serving_cert: read(FILES[2])?,
            serving_key: read(FILES[3])?,
            token: read(FILES[4])?.trim().to_string(),
            client_cert: read(FILES[5])?,
            client_key: read(FILES[6])?,
        };
        // A restart on another address: a new serving certificate from the same CA, so the
        // kubeconfigs already handed out keep working.
        let names = serving_names(hosts);
        let covered = std::fs::read_to_string(&names_file).unwrap_or_default();
        if !names.iter().all(|n| covered.lines().any(|l| l == n)) {
            let ca_key = KeyPair::from_pem(&creds.ca_key)?;
            let ca = ca_params()?.self_signed(&ca_key)?;
            let (cert, key) = sign_serving(&names, &ca, &ca_key)?;
            write_private(&pki.join(FILES[2]), &cert)?;
            write_private(&pki.join(FILES[3]), &key)?;
            write_private(&names_file, &(names.join("\n") + "\n"))?;
            (creds.serving_cert, creds.serving_key) = (cert, key);
        }
        return Ok(creds);
    }
    let creds = generate(hosts)?;
    std::fs::create_dir_all(&pki).map_err(io_err(&pki))?;
    write_private(&names_file, &(serving_names(hosts).join("\n") + "\n"))?;
    let contents = [
        &creds.ca_cert,
        &creds.ca_key,
        &creds.serving_cert,
        &creds.serving_key,
        &creds.token,
        &creds.client_cert,
        &creds.client_key,
    ];
    for (f, c) in FILES.iter().zip(contents) {
        write_private(&pki.join(f), c)?;
    }
    Ok(creds)
}

fn write_private(path: &Path, contents: &str) -> Result<(), TlsError> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path).map_err(io_err(path))?;
    f.write_all(contents.as_bytes()).map_err(io_err(path))?;
    f.sync_all().map_err(io_err(path))
}

/// The rustls server configuration: the serving certificate, ALPN h2 and http/1.1, and client
/// certificates signed by the CA accepted (but not required: a bearer token also works).
pub fn server_config(creds: &Credentials) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let rustls_err = |e: &dyn std::fmt::Display| TlsError::Rustls(e.to_string());
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(creds.serving_cert.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| rustls_err(&e))?;
    let key =
        PrivateKeyDer::from_pem_slice(creds.serving_key.as_bytes()).map_err(|e| rustls_err(&e))?;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(creds.ca_cert.as_bytes()) {
        roots
            .add(c.map_err(|e| rustls_err(&e))?)
            .map_err(|e| rustls_err(&e))?;
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| rustls_err(&e))?;
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| rustls_err(&e))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| rustls_err(&e))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// Whether `host` is an IP address (for the certificate's names).
pub fn is_ip(host: &str) -> bool {
    host.parse::<IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_credentials_make_a_server_configuration_with_h2_and_http1() {
        let creds = generate(&["10.0.0.1".into()]).unwrap();
        assert!(creds.ca_cert.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(creds.token.len() >= 40);
        let cfg = server_config(&creds).unwrap();
        assert_eq!(
            cfg.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(creds.client_cert.starts_with("-----BEGIN CERTIFICATE-----"));
    }

    #[test]
    fn credentials_are_kept_in_the_data_directory_and_read_back() {
        let dir = std::env::temp_dir().join(format!("kubeplane-tls-{}", std::process::id()));
        let a = load_or_generate(&dir, &[]).unwrap();
        let b = load_or_generate(&dir, &[]).unwrap();
        assert_eq!(a.token, b.token);
        assert_eq!(a.ca_cert, b.ca_cert);
        assert_eq!(
            a.serving_cert, b.serving_cert,
            "same address, same certificate"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_restart_on_another_address_gets_a_serving_certificate_from_the_same_ca() {
        let dir = std::env::temp_dir().join(format!("kubeplane-tls-moved-{}", std::process::id()));
        let a = load_or_generate(&dir, &[]).unwrap();
        let b = load_or_generate(&dir, &["10.1.2.3".to_string()]).unwrap();
        assert_eq!((&a.token, &a.ca_cert), (&b.token, &b.ca_cert));
        assert_ne!(a.serving_cert, b.serving_cert);
        // The new certificate verifies against the kept CA for the new address.
        let roots = {
            let mut r = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(b.ca_cert.as_bytes()) {
                r.add(c.unwrap()).unwrap();
            }
            Arc::new(r)
        };
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            roots,
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();
        let cert = CertificateDer::from_pem_slice(b.serving_cert.as_bytes()).unwrap();
        let name = rustls::pki_types::ServerName::try_from("10.1.2.3").unwrap();
        let now = rustls::pki_types::UnixTime::now();
        use rustls::client::danger::ServerCertVerifier;
        verifier
            .verify_server_cert(&cert, &[], &name, &[], now)
            .expect("the new serving certificate names the new address under the kept CA");
        let c = load_or_generate(&dir, &["10.1.2.3".to_string()]).unwrap();
        assert_eq!(
            b.serving_cert, c.serving_cert,
            "kept once it covers the address"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

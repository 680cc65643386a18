//! `/healthz`, `/readyz` and `/metrics` on the scheduler's own port (`--bind-address`,
//! `--secure-port`), over HTTPS as kube-scheduler serves them (the certificate of
//! [`crate::tls`]), HTTP/1.1, one request per connection, loopback by default.
//!
//! `/healthz` answers `ok` while the process runs; `/readyz` answers `ok` once every reflector
//! has listed (upstream waits for the informers' caches to sync), 500 before; `/metrics` is the
//! Prometheus text the scheduling loop last published.
//!
//! Access: the paths of `--authorization-always-allow-paths` (upstream's default: `/healthz`,
//! `/readyz`, `/livez`) are open to anyone; every other path needs `Authorization: Bearer
//! TOKEN` with a token of `--authentication-token-file` (upstream asks the API server through
//! TokenReview and SubjectAccessReview instead). A request without a token is anonymous and
//! forbidden (403), one with a token that is not in the file unauthorized (401), as upstream
//! answers them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the endpoints report, published by the scheduling loop.
#[derive(Debug, Default)]
pub struct Health {
    /// Every reflector has listed once.
    pub synced: AtomicBool,
    /// The metrics in Prometheus text format.
    pub metrics: Mutex<String>,
}

/// Who may read what.
#[derive(Debug, Clone)]
pub struct Access {
    /// The bearer tokens accepted (none: only the open paths can be read).
    pub tokens: Vec<String>,
    /// Paths open without authentication: exact, or a prefix when ending in `*`.
    pub always_allow: Vec<String>,
}

/// Upstream's `--authorization-always-allow-paths` default.
pub const ALWAYS_ALLOW: [&str; 3] = ["/healthz", "/readyz", "/livez"];

impl Default for Access {
    fn default() -> Access {
        Access {
            tokens: Vec::new(),
            always_allow: ALWAYS_ALLOW.iter().map(|p| p.to_string()).collect(),
        }
    }
}

impl Access {
    /// The tokens of a token file: one a line, or kube-apiserver's `--token-auth-file` CSV
    /// (`token,user,uid[,"groups"]`: its first field); blank lines and `#` comments skipped.
    pub fn parse_tokens(text: &str) -> Vec<String> {
        text.lines()
            .map(|l| l.split(',').next().unwrap_or("").trim())
            .filter(|t| !t.is_empty() && !t.starts_with('#'))
            .map(str::to_string)
            .collect()
    }

    fn is_open(&self, path: &str) -> bool {
        self.always_allow.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => p == path,
        })
    }

    /// `None` when the request may go on, else the status line and body of the refusal.
    fn check(&self, path: &str, authorization: Option<&str>) -> Option<(&'static str, String)> {
        if self.is_open(path) {
            return None;
        }
        let token = authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .map(str::trim);
        match token {
            None => Some((
                "403 Forbidden",
                format!("forbidden: User \"system:anonymous\" cannot get path \"{path}\"\n"),
            )),
            Some(t) if self.tokens.iter().any(|k| same(k.as_bytes(), t.as_bytes())) => None,
            Some(_) => Some(("401 Unauthorized", "Unauthorized\n".into())),
        }
    }
}

/// Compares two secrets in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The status line, content type and body of a request path.
fn respond(health: &Health, path: &str) -> (&'static str, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    match path {
        "/healthz" | "/livez" => ("200 OK", TEXT, "ok".into()),
        "/readyz" if health.synced.load(Ordering::SeqCst) => ("200 OK", TEXT, "ok".into()),
        "/readyz" => (
            "500 Internal Server Error",
            TEXT,
            "[-]informer-sync failed: not synced yet\nreadyz check failed".into(),
        ),
        "/metrics" => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            health.metrics.lock().map(|m| m.clone()).unwrap_or_default(),
        ),
        _ => ("404 Not Found", TEXT, "404 page not found\n".into()),
    }
}

/// The reply to a request's head (request line and headers).
fn reply(health: &Health, access: &Access, head: &str) -> String {
    let path = head.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split('?').next().unwrap_or("");
    let authorization = head.lines().skip(1).find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("authorization")
            .then(|| value.trim())
    });
    let (status, content_type, body) = match access.check(path, authorization) {
        Some((status, body)) => (status, "text/plain; charset=utf-8", body),
        None => respond(health, path),
    };
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

async fn answer<S: AsyncRead + AsyncWrite + Unpin>(
    mut conn: S,
    health: Arc<Health>,
    access: Arc<Access>,
) {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let text = reply(&health, &access, &String::from_utf8_lossy(&buf));
    let _ = conn.write_all(text.as_bytes()).await;
    let _ = conn.shutdown().await;
}

/// Serves the endpoints over TLS until the runtime stops.
/// Serves `/healthz`, `/readyz` and `/metrics` on `addr` (when given) over HTTPS on `rt`,
/// with `tls`'s certificate and `access`'s rules; `who` names the component on stderr. A
/// certificate that cannot be made or an address that cannot be bound is an input error.
pub fn start(
    rt: &tokio::runtime::Runtime,
    addr: Option<std::net::SocketAddr>,
    tls: &crate::tls::TlsFiles,
    access: &Access,
    health: &Arc<Health>,
    who: &str,
) -> Result<(), crate::LiveError> {
    let Some(addr) = addr else {
        return Ok(());
    };
    let tls = crate::tls::server_config(tls, addr.ip()).map_err(crate::LiveError::Input)?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(|e| {
            crate::LiveError::Input(format!("--bind-address/--secure-port {addr}: {e}"))
        })?;
    eprintln!("{who}: serving /healthz, /readyz and /metrics on https://{addr}");
    rt.spawn(serve(
        listener,
        tls,
        health.clone(),
        Arc::new(access.clone()),
    ));
    Ok(())
}

pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    health: Arc<Health>,
    access: Arc<Access>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    loop {
        if let Ok((conn, _)) = listener.accept().await {
            let (acceptor, health, access) = (acceptor.clone(), health.clone(), access.clone());
            tokio::spawn(async move {
                let handshake =
                    tokio::time::timeout(std::time::Duration::from_secs(10), acceptor.accept(conn));
                if let Ok(Ok(stream)) = handshake.await {
                    answer(stream, health, access).await;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(h: &Health, a: &Access, path: &str, token: Option<&str>) -> String {
        let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n"));
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\n{}\r\n",
            auth.unwrap_or_default()
        );
        reply(h, a, &head)
    }

    #[test]
    fn readyz_fails_until_the_reflectors_have_listed_and_healthz_always_answers() {
        let (h, a) = (Health::default(), Access::default());
        assert!(get(&h, &a, "/healthz", None).starts_with("HTTP/1.1 200 OK"));
        assert!(get(&h, &a, "/readyz", None).starts_with("HTTP/1.1 500 "));
        h.synced.store(true, Ordering::SeqCst);
        assert!(get(&h, &a, "/readyz?verbose", None).starts_with("HTTP/1.1 200 OK"));
    }

    #[test]
    fn metrics_need_a_token_of_the_file_and_the_open_paths_do_not() {
        let h = Health::default();
        *h.metrics.lock().unwrap() = "m 1\n".into();
        let a = Access {
            tokens: Access::parse_tokens("# admins\ns3cret,alice,1\n\nother\n"),
            ..Access::default()
        };
        assert_eq!(a.tokens, ["s3cret", "other"]);
        let cases = [
            (
                "an anonymous request for the metrics is forbidden",
                "/metrics",
                None,
                "403 Forbidden",
            ),
            (
                "a token not in the file is unauthorized",
                "/metrics",
                Some("s3cre"),
                "401 Unauthorized",
            ),
            (
                "a token of the file reads the metrics",
                "/metrics",
                Some("s3cret"),
                "200 OK",
            ),
            ("the health check is open", "/healthz", None, "200 OK"),
            (
                "an unknown path is refused before it is looked up",
                "/other",
                None,
                "403 Forbidden",
            ),
            (
                "an unknown path with a token is not found",
                "/other",
                Some("other"),
                "404 Not Found",
            ),
        ];
        for (name, path, token, want) in cases {
            let r = get(&h, &a, path, token);
            assert!(
                r.starts_with(&format!("HTTP/1.1 {want}\r\n")),
                "{name}: {r}"
            );
        }
        assert!(get(&h, &a, "/metrics", Some("s3cret")).ends_with("\r\n\r\nm 1\n"));
        let open = Access {
            always_allow: vec!["/healthz".into(), "/metr*".into()],
            ..Access::default()
        };
        assert!(
            get(&h, &open, "/metrics", None).starts_with("HTTP/1.1 200 OK"),
            "a prefix opens"
        );
    }
}

//! `/healthz`, `/readyz` and `/metrics` on the scheduler's own port (`--bind-address`,
//! `--secure-port`). Plain HTTP/1.1, one request per connection: a first version (upstream
//! serves HTTPS with delegated authentication and authorization), so it binds to loopback by
//! default.
//!
//! `/healthz` answers `ok` while the process runs; `/readyz` answers `ok` once every reflector
//! has listed (upstream waits for the informers' caches to sync), 500 before; `/metrics` is the
//! Prometheus text the scheduling loop last published.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the endpoints report, published by the scheduling loop.
#[derive(Debug, Default)]
pub struct Health {
    /// Every reflector has listed once.
    pub synced: AtomicBool,
    /// The metrics in Prometheus text format.
    pub metrics: Mutex<String>,
}

/// The status line, content type and body of a request path.
fn respond(health: &Health, path: &str) -> (&'static str, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    match path.split('?').next().unwrap_or("") {
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

async fn answer(mut conn: tokio::net::TcpStream, health: Arc<Health>) {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let path = head.split_whitespace().nth(1).unwrap_or("/");
    let (status, content_type, body) = respond(&health, path);
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(reply.as_bytes()).await;
    let _ = conn.shutdown().await;
}

/// Serves the endpoints until the runtime stops.
pub async fn serve(listener: TcpListener, health: Arc<Health>) {
    loop {
        if let Ok((conn, _)) = listener.accept().await {
            tokio::spawn(answer(conn, health.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readyz_fails_until_the_reflectors_have_listed_and_healthz_always_answers() {
        let h = Health::default();
        assert_eq!(respond(&h, "/healthz").0, "200 OK");
        assert_eq!(respond(&h, "/readyz").0, "500 Internal Server Error");
        h.synced.store(true, Ordering::SeqCst);
        assert_eq!(respond(&h, "/readyz?verbose").0, "200 OK");
        *h.metrics.lock().unwrap() = "m 1\n".into();
        assert_eq!(respond(&h, "/metrics").2, "m 1\n");
        assert_eq!(respond(&h, "/other").0, "404 Not Found");
    }
}

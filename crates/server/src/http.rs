//! The HTTPS front: the accept loop (TLS with ALPN, HTTP/1.1 and HTTP/2 on one port),
//! authentication (the admin bearer token, or a client certificate signed by the server's CA;
//! the health endpoints and `/version` are open, as upstream's default RBAC leaves them),
//! routing to discovery, OpenAPI, metrics and the resource handlers, and graceful shutdown.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsAcceptor;

use crate::handlers::{self, Reply};
use crate::request::{parse_path, Query, ResourceRequest, Target};
use crate::state::State;
use crate::status::StatusError;

type Body = BoxBody<Bytes, Infallible>;

/// kube-apiserver's limit on a request body (3 MiB).
const MAX_BODY: usize = 3 * 1024 * 1024;

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

/// A response body fed by a watch's channel.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}

fn respond(code: u16, content_type: &str, body: Body, warnings: &[String]) -> Response<Body> {
    let mut r = Response::builder()
        .status(code)
        .header("Content-Type", content_type)
        .header("Cache-Control", "no-cache, private");
    for w in warnings {
        r = r.header("Warning", format!("299 - {:?}", w));
    }
    r.body(body).unwrap_or_else(|_| Response::new(full("")))
}

fn status_response(e: &StatusError) -> Response<Body> {
    respond(e.code, "application/json", full(e.body().to_string()), &[])
}

fn json_response(code: u16, v: &Value) -> Response<Body> {
    respond(code, "application/json", full(v.to_string()), &[])
}

fn authenticated(state: &State, req: &Request<Incoming>, client_cert: bool) -> bool {
    if client_cert {
        return true;
    }
    let Some(h) = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some((scheme, token)) = h.split_once(' ') else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return false;
    }
    constant_time_eq(token.trim().as_bytes(), state.token.as_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Serves one request.
async fn handle(
    state: Arc<State>,
    client_cert: bool,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    let open = matches!(
        path.as_str(),
        "/readyz" | "/livez" | "/healthz" | "/version"
    ) || path.starts_with("/readyz/")
        || path.starts_with("/livez/")
        || path.starts_with("/healthz/");
    if open {
        return Ok(match path.as_str() {
            "/version" => json_response(200, &crate::discovery::version(state.version)),
            _ => respond(200, "text/plain; charset=utf-8", full("ok"), &[]),
        });
    }
    if !authenticated(&state, &req, client_cert) {
        return Ok(status_response(&StatusError::unauthorized()));
    }
    let method = req.method().clone();
    let user_agent = req
        .headers()
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let query = Query::parse(req.uri().query()).with_user_agent(user_agent);
    let accept = req
        .headers()
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return Ok(status_response(&StatusError::new(
                413,
                "RequestEntityTooLarge",
                "Request entity too large: limit is 3145728",
            )))
        }
    };
    let call = Call {
        method,
        path,
        query,
        content_type,
        accept,
        body,
    };
    let response = route(state.clone(), call).await;
    Ok(response)
}

/// What a request asks, once authenticated and read.
struct Call {
    method: Method,
    path: String,
    query: Query,
    content_type: String,
    accept: String,
    body: Bytes,
}

async fn route(state: Arc<State>, call: Call) -> Response<Body> {
    let (method, path, query) = (&call.method, call.path.as_str(), &call.query);
    match path {
        "/metrics" => {
            return respond(
                200,
                "text/plain; version=0.0.4",
                full(state.metrics_text()),
                &[],
            )
        }
        "/openapi/v3" => return json_response(200, &crate::crds::openapi::index(&state.crds)),
        "/openapi/v2" if crate::openapi_v2::wants_protobuf(&call.accept) => {
            let body = full(crate::openapi_v2::protobuf().clone());
            return respond(200, crate::openapi_v2::PROTOBUF, body, &[]);
        }
        "/openapi/v2" => {
            let body = full(crate::openapi_v2::json_text().clone());
            return respond(200, "application/json", body, &[]);
        }
        _ => {}
    }
    if let Some(gv) = path.strip_prefix("/openapi/v3/") {
        let found = crate::openapi::group_version_text(gv)
            .or_else(|| crate::crds::openapi::document_text(&state.crds, gv));
        return match found {
            Some(doc) => respond(200, "application/json", full(doc), &[]),
            None => status_response(&StatusError::not_found_path()),
        };
    }
    let target = match target(&state, path).await {
        Ok(t) => t,
        Err(e) => return status_response(&e),
    };
    let req = match target {
        Target::Discovery(segs) => {
            let root = segs.len() == 1;
            if let Some(v) = crate::aggregated::requested(&call.accept).filter(|_| root) {
                let doc = crate::aggregated::served(segs[0] == "api", v, &state.crds);
                let ct = crate::aggregated::content_type(v);
                return respond(200, &ct, full(doc), &[]);
            }
            return match crate::discovery::document(&segs, &state.address, &state.crds) {
                Ok(d) => json_response(200, &d),
                Err(e) => status_response(&e),
            };
        }
        Target::Resource(r) => r,
    };
    let verb = verb_of(method, &req, query);
    let resource = req.kind.plural();
    let table = match crate::table::requested(&call.accept, query) {
        Ok(t) => t,
        Err(e) => return status_response(&e),
    };
    if verb == "watch" {
        let render: crate::watch::Render = match table {
            Some(opts) => {
                let st = state.clone();
                let r = req.clone();
                Arc::new(move |o| crate::table::of_object(&r, o, st.clock.timestamp(), &opts))
            }
            None => Arc::new(|o| o.to_json()),
        };
        let render = if req.converts() {
            let (from, to) = (req.kind.api_version(), req.api_version());
            Arc::new(move |o: &kubeplane_api::Object| {
                let mut v = render(o);
                crate::crds::convert_value(&mut v, from, &to);
                v
            })
        } else {
            render
        };
        return match crate::watch::start(state.clone(), req, query, render) {
            Ok(rx) => {
                state.count_request("WATCH", resource, 200);
                respond(200, "application/json", ChannelBody(rx).boxed(), &[])
            }
            Err(e) => status_response(&e),
        };
    }
    let st = state.clone();
    let task = tokio::task::spawn_blocking(move || dispatch_converted(&st, &call, &req, table));
    // A request that runs past the timeout gets a 504; its handler finishes in the background
    // (upstream's post-timeout activity): a write may still take effect.
    let reply = match tokio::time::timeout(state.request_timeout(), task).await {
        Ok(Ok(r)) => r,
        Ok(Err(_)) => Err(StatusError::new(
            500,
            "InternalError",
            "the request handler failed",
        )),
        Err(_) => Err(StatusError::request_timeout()),
    };
    match reply {
        Ok(r) => {
            state.count_request(verb, resource, r.code);
            respond(r.code, "application/json", full(r.body), &r.warnings)
        }
        Err(e) => {
            state.count_request(verb, resource, e.code);
            status_response(&e)
        }
    }
}

/// What a path names; a path under `/apis` that names nothing known reads the stored
/// definitions again first (one another server sharing etcd stored, say).
async fn target(state: &Arc<State>, path: &str) -> Result<Target, StatusError> {
    match parse_path(path, &state.crds) {
        Err(_) if path.starts_with("/apis/") => {
            let st = state.clone();
            let _ = tokio::task::spawn_blocking(move || crate::crds::refresh(&st)).await;
            parse_path(path, &state.crds)
        }
        found => found,
    }
}

/// [`dispatch`], then for custom resources: the served types rebuilt after a write of a
/// definition or a custom resource, and the reply's `apiVersion`s rewritten for a client of
/// another served version.
fn dispatch_converted(
    state: &State,
    call: &Call,
    req: &ResourceRequest,
    table: Option<kubeplane_registry::printers::TableOptions>,
) -> Result<Reply, StatusError> {
    let reply = dispatch(state, call, req, table);
    let custom = req.custom.is_some() || req.kind == crate::crds::crd_kind();
    if custom && call.method != Method::GET && reply.is_ok() {
        crate::crds::refresh(state);
    }
    reply.map(|mut r| {
        if req.converts() {
            r.body = crate::crds::convert_body(r.body, req.kind.api_version(), &req.api_version());
        }
        r
    })
}

fn verb_of(method: &Method, req: &ResourceRequest, q: &Query) -> &'static str {
    match (method.as_str(), req.name.is_some()) {
        ("GET", false) if q.flag("watch") => "watch",
        ("GET", true) if q.flag("watch") => "watch",
        ("GET", false) => "LIST",
        ("GET", true) => "GET",
        ("POST", _) => "POST",
        ("PUT", _) => "PUT",
        ("PATCH", _) => "PATCH",
        ("DELETE", true) => "DELETE",
        ("DELETE", false) => "DELETECOLLECTION",
        _ => "OTHER",
    }
}

fn dispatch(
    state: &State,
    call: &Call,
    req: &ResourceRequest,
    table: Option<kubeplane_registry::printers::TableOptions>,
) -> Result<Reply, StatusError> {
    let (method, q, content_type, body) = (
        &call.method,
        &call.query,
        call.content_type.as_str(),
        &call.body[..],
    );
    let parsed = || handlers::parse_body(body, content_type);
    let optional = || {
        if body.iter().all(u8::is_ascii_whitespace) {
            Ok(None)
        } else {
            handlers::parse_body(body, content_type).map(Some)
        }
    };
    match (method.as_str(), req.name.is_some()) {
        ("GET", true) => match table {
            Some(opts) if req.subresource.is_none() => {
                let obj = handlers::read(state, &handlers::key_of(req)?)?;
                let t = crate::table::of_object(req, &obj, state.clock.timestamp(), &opts);
                Ok(Reply::json(200, &t))
            }
            _ => handlers::get(state, req),
        },
        ("GET", false) => match table {
            Some(opts) => {
                let page = crate::list::list(state, req, q)?;
                let t = crate::table::of_page(req, &page, state.clock.timestamp(), &opts);
                Ok(Reply::json(200, &t))
            }
            None => handlers::list(state, req, q),
        },
        ("POST", _) if req.custom.as_ref().is_some_and(|c| c.terminating) => Err(StatusError::new(
            405,
            "MethodNotAllowed",
            "create not allowed while custom resource definition is terminating",
        )),
        ("POST", _) => handlers::create(state, req, q, &parsed()?),
        ("PUT", true) => handlers::update(state, req, q, &parsed()?),
        ("PATCH", true) => crate::patch::patch(state, req, q, content_type, body),
        ("DELETE", true) if req.kind == crate::crds::crd_kind() && req.subresource.is_none() => {
            let body = optional()?;
            if !handlers::is_dry_run(body.as_ref(), q)? {
                crate::crds::before_delete(state, &handlers::key_of(req)?)?;
            }
            handlers::delete(state, req, q, body.as_ref())
        }
        ("DELETE", true) => handlers::delete(state, req, q, optional()?.as_ref()),
        ("DELETE", false) => handlers::delete_collection(state, req, q, optional()?.as_ref()),
        (m, _) => Err(StatusError::method_not_allowed(m, req.kind.as_str())),
    }
}

/// Accepts connections until `shutdown` turns true, then lets in-flight requests finish (at
/// most `grace`).
pub async fn serve(
    listener: TcpListener,
    tls: TlsAcceptor,
    state: Arc<State>,
    mut shutdown: watch::Receiver<bool>,
    grace: Duration,
) {
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((tcp, _)) = accepted else {
                    // Out of descriptors, say: wait a little instead of spinning.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let tls = tls.clone();
                let state = state.clone();
                let mut stop = shutdown.clone();
                tasks.spawn(async move {
                    let Ok(Ok(stream)) = tokio::time::timeout(Duration::from_secs(10), tls.accept(tcp)).await else { return };
                    let client_cert = stream.get_ref().1.peer_certificates().is_some_and(|c| !c.is_empty());
                    let service = hyper::service::service_fn(move |req| handle(state.clone(), client_cert, req));
                    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = async { let _ = stop.wait_for(|s| *s).await; } => {
                            conn.as_mut().graceful_shutdown();
                            let _ = conn.await;
                        }
                    }
                });
            }
            _ = async { let _ = shutdown.wait_for(|s| *s).await; } => break,
        }
        while tasks.try_join_next().is_some() {}
    }
    // Watches end now, so graceful shutdown does not wait for them.
    state
        .stopping
        .store(true, std::sync::atomic::Ordering::Relaxed);
    drop(listener);
    let _ = tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
}

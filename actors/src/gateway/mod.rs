//! The HTTP gateway: sleuth for the clients that speak HTTP, the OpenAI chat API or SSE rather than NATS.
//! `sleuth serve --embedded` runs it over every stage in one process; `--stages gateway` (part of `all`) over a
//! deployment on NATS. Routes: `ask.rs` (the gateway's own API), `openai.rs` (chat completions and models),
//! `mcp.rs` (the MCP server at `/mcp`, and on stdio for `sleuth mcp`).
//! Callers are identified by API key (`auth.rs`) as the same tenants as the NATS side, so a tenant sees only its
//! own requests whichever way it came in.

mod ask;
pub mod auth;
mod cite;
pub mod engine;
mod error;
mod lanes;
mod listen;
pub mod mcp;
mod openai;
mod openapi;
mod run;

use std::{net::SocketAddr, sync::Arc};

use anyhow::Context;
use axum::{
    Router,
    extract::DefaultBodyLimit,
    http::{HeaderMap, StatusCode},
    routing::{get, post},
};
use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService, streamable_http_server::session::local::LocalSessionManager,
};
use sleuth_messages::{ErrorKind, Principal};
use tokio::task::JoinHandle;

use crate::telemetry::TraceHeaders;
use engine::Engine;
use error::ApiError;
use run::{StreamCounts, StreamSlot};

/// What every handler shares.
pub struct App {
    engine: Arc<Engine>,
    keys: auth::Keys,
    streams: Arc<StreamCounts>,
}

impl App {
    /// The caller's principal, or 401.
    fn caller(&self, headers: &HeaderMap) -> Result<Option<Principal>, ApiError> {
        self.keys.principal(headers).map_err(|auth::Refused(why)| ApiError::unauthorized(why))
    }

    /// A slot for one more open stream of `by`, or 429.
    fn stream_slot(&self, by: Option<&Principal>) -> Result<StreamSlot, ApiError> {
        let max = self.engine.config().gateway.max_streams_per_principal;
        self.streams.acquire(by, max).ok_or_else(|| {
            let message =
                format!("{max} event streams are open for this caller already (gateway.max_streams_per_principal)");
            ApiError::new(StatusCode::TOO_MANY_REQUESTS, ErrorKind::Overloaded, message)
        })
    }

    /// The trace context of the handler's span: the request's root `sleuth.ask` becomes its child.
    fn trace(&self) -> TraceHeaders {
        crate::telemetry::context::of_span(&tracing::Span::current(), &TraceHeaders::default())
    }
}

/// The shared state of a gateway over `engine`.
pub fn app(engine: Arc<Engine>, keys: auth::Keys) -> Arc<App> {
    Arc::new(App { engine, keys, streams: Arc::default() })
}

/// The gateway's routes.
pub fn router(app: Arc<App>) -> Router {
    let limit = app.engine.config().gateway.max_body_bytes;
    let mcp_app = app.clone();
    let mut config = StreamableHttpServerConfig::default();
    config.max_request_body_bytes = limit;
    if app.keys.required() {
        // The Host check guards a keyless server on loopback against DNS rebinding; with keys, they guard it,
        // and a gateway behind a Service or an ingress is reached under names of its own.
        config.allowed_hosts.clear();
    }
    let mcp = StreamableHttpService::new(
        move || Ok(mcp::SleuthMcp::new(mcp_app.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mcp = Router::new().fallback_service(mcp).layer(axum::middleware::from_fn_with_state(app.clone(), mcp_caller));
    Router::new()
        .nest("/mcp", mcp)
        .route("/", get(page))
        .route("/openapi.json", get(openapi_json))
        .route("/v1/ask", post(ask::ask))
        .route("/v1/requests/{id}", get(ask::status).delete(ask::cancel))
        .route("/v1/search", post(lanes::search))
        .route("/v1/hydrate", post(lanes::hydrate))
        .route("/v1/documents", post(lanes::add_documents))
        .route("/v1/documents/{id}", axum::routing::delete(lanes::delete_document))
        .route("/v1/chat/completions", post(openai::chat))
        .route("/v1/models", get(openai::models))
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn(http_span))
        .with_state(app)
}

/// The key check in front of `/mcp`: 401 without an accepted key, else the caller in the request's extensions,
/// where the MCP tools find it; a session's close answered 204.
async fn mcp_caller(
    axum::extract::State(app): axum::extract::State<Arc<App>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match app.caller(request.headers()) {
        Ok(by) => {
            request.extensions_mut().insert(mcp::Caller(by));
            let closes = request.method() == axum::http::Method::DELETE;
            let mut response = next.run(request).await;
            // A session's close is done when answered: 204, which MCP clients read as success (the SDK answers
            // 202, which the official Python client logs as "Session termination failed: 202").
            if closes && response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::NO_CONTENT;
            }
            response
        }
        Err(e) => e.into_response(),
    }
}

/// Serves MCP over stdin and stdout (`sleuth mcp`) until the client closes them. The caller is the local user:
/// the deployment's own account.
pub async fn serve_stdio(engine: Arc<Engine>) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let keys = auth::Keys::load(&Default::default(), SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let server = mcp::SleuthMcp::new(app(engine, keys));
    let running = server.serve(rmcp::transport::stdio()).await.context("cannot start MCP on stdio")?;
    running.waiting().await.context("MCP on stdio stopped")?;
    Ok(())
}

/// `GET /`: a page to ask a question and watch the loop (no build step: the file is in the binary).
async fn page() -> axum::response::Html<&'static str> {
    axum::response::Html(include_str!("page.html"))
}

/// `GET /openapi.json`.
async fn openapi_json(axum::extract::State(app): axum::extract::State<Arc<App>>) -> axum::Json<serde_json::Value> {
    axum::Json(openapi::document(app.keys.required()))
}

/// One server span per HTTP request (HTTP semantic conventions), parent of the request's `sleuth.ask`.
async fn http_span(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use tracing::Instrument;
    let (method, path) = (request.method().to_string(), request.uri().path().to_string());
    let span = tracing::info_span!(
        "gateway",
        otel.name = format!("{method} {path}"),
        otel.kind = "server",
        http.request.method = %method,
        url.path = %path,
        http.response.status_code = tracing::field::Empty,
    );
    let started = std::time::Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    span.record("http.response.status_code", status);
    crate::telemetry::metrics::gateway_request(path, status, started.elapsed().as_secs_f64());
    response
}

/// Binds `gateway.http_addr` and serves the gateway over `engine` until the task is aborted.
pub async fn serve(engine: Arc<Engine>) -> anyhow::Result<(SocketAddr, JoinHandle<()>)> {
    let wanted = engine.config().gateway.http_addr.clone();
    let addr: SocketAddr = wanted
        .parse()
        .with_context(|| format!("gateway.http_addr {wanted:?} is not an address such as 127.0.0.1:8080"))?;
    let keys = auth::Keys::load(&engine.config().gateway, addr)?;
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("the gateway cannot listen on {addr} (set SLEUTH__GATEWAY__HTTP_ADDR to another address)")
    })?;
    let addr = listener.local_addr()?;
    let idle = std::time::Duration::from_millis(engine.config().gateway.idle_timeout_ms.max(1));
    let app = router(app(engine, keys));
    let task = tokio::spawn(listen::serve(listener, app, idle));
    Ok((addr, task))
}

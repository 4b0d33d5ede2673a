//! The `gateway` section: where the HTTP gateway (`sleuth serve --embedded`, or the `gateway` stage) listens, the
//! API keys it accepts and the tenant each one acts as, and its limits on what a client may send.

use serde::{Deserialize, Serialize};

/// One API key: its SHA-256 (hex; the key itself is never stored) and the tenant a request made with it belongs
/// to, the same principal a NATS account of that name is (`deploy/nats/accounts.conf`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    pub sha256: String,
    pub tenant: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// Where the gateway listens. On a loopback address with no keys configured it needs no key; anywhere else
    /// it refuses to start without keys. Port 0 picks a free port (logged at start-up).
    pub http_addr: String,
    /// The accepted API keys (`Authorization: Bearer <key>` or `X-API-Key: <key>`).
    pub api_keys: Vec<ApiKey>,
    /// Serve without keys on an address other than loopback: for a gateway that is reachable only through a
    /// proxy or a port published on the host's loopback (docker-compose). Ignored once a key is configured.
    pub allow_without_keys: bool,
    /// A file of more keys, one `<sha256 hex> <tenant>` per line (`#` starts a comment), e.g. a mounted secret.
    pub api_keys_file: Option<std::path::PathBuf>,
    /// Tenants whose keys may add and delete documents (`POST`/`DELETE /v1/documents`). Documents are shared by
    /// every tenant until per-document access exists, so by default only the deployment's own caller (no key, on
    /// loopback) may change them.
    pub ingest_tenants: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Event streams (SSE) one principal may hold open at once.
    pub max_streams_per_principal: usize,
    /// How long a connection may take to send a complete request head, including the wait for the next request
    /// on a kept-alive connection: past it the connection is closed, so idle and slow clients hold no sockets.
    pub idle_timeout_ms: u64,
    /// The model name `/v1/models` lists and chat completions answer as.
    pub model_name: String,
    /// A trace UI's address for one trace, `{trace_id}` standing for the id, e.g.
    /// `http://localhost:16686/trace/{trace_id}` (Jaeger): the page links each request to its trace.
    pub trace_url: Option<String>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            http_addr: "127.0.0.1:8080".into(),
            api_keys: Vec::new(),
            allow_without_keys: false,
            api_keys_file: None,
            ingest_tenants: Vec::new(),
            max_body_bytes: 256 * 1024,
            max_streams_per_principal: 16,
            idle_timeout_ms: 20_000,
            model_name: "sleuth".into(),
            trace_url: None,
        }
    }
}

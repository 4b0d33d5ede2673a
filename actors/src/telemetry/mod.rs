//! Observability: structured logs, one OpenTelemetry trace per request across every process (W3C Trace Context
//! on the bus, OTLP export), Prometheus metrics with health endpoints, and the clock.
//!
//! With no OTLP endpoint configured, no OpenTelemetry layer is installed at all: spans stay local to the log
//! output, and the trace context a request arrived with is passed along unchanged.

pub mod context;
pub mod http;
pub mod metrics;
mod otel;
pub mod scope;

use std::io::IsTerminal;

use tracing_subscriber::{EnvFilter, Layer, filter::filter_fn, fmt, layer::SubscriberExt, util::SubscriberInitExt};

pub use context::{TraceHeaders, exporting};
pub use otel::{new_root, record_root};
pub use scope::Scope;

use crate::config::{OtlpProtocol, TelemetryConfig};

/// Installed telemetry; flush it with [`Telemetry::shutdown`] before the process exits.
pub struct Telemetry {
    otel: Option<otel::Otel>,
}

/// Installs logging and, when an OTLP endpoint is configured, span export. `RUST_LOG` overrides the log level
/// (`default_level`: `warn` for the CLI, `info` for serve); it does not change which spans are exported.
/// Must run inside the Tokio runtime.
pub fn init(default_level: &str, service_name: &str, config: &TelemetryConfig) -> anyhow::Result<Telemetry> {
    // qdrant-edge logs internal notices at warn level that mean nothing to a sleuth user.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("{default_level},qdrant_edge=error")));
    let terminal = std::io::stderr().is_terminal();
    let logs = fmt::layer().with_writer(std::io::stderr);
    let logs = if terminal { logs.boxed() } else { logs.json().flatten_event(true).boxed() }.with_filter(filter);
    CAPTURE_CONTENT.store(config.capture_content, std::sync::atomic::Ordering::Relaxed);
    let Some(endpoint) = config.otlp_endpoint.as_deref() else {
        let _ = tracing_subscriber::registry().with(logs).try_init();
        return Ok(Telemetry { otel: None });
    };
    let (otel, tracer) = otel::start(config, endpoint, service_name)?;
    // sleuth's own spans only (the HTTP, gRPC and database clients underneath open spans of their own that would
    // bury the loop's), and of its log lines only warnings and errors, as span events: every info line as an
    // event would cost more than the span it sits in.
    let exported = filter_fn(|meta| {
        meta.target().starts_with("sleuth") && (meta.is_span() || *meta.level() <= tracing::Level::WARN)
    });
    let export = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        // Nothing reads OpenTelemetry's own current context (`span.context()` is what sleuth injects), and
        // activating it on every poll of every instrumented future is the costliest part of a span.
        .with_context_activation(false)
        .with_tracked_inactivity(false)
        .with_threads(false)
        .with_level(false)
        .with_target(false)
        .with_filter(exported);
    let _ = tracing_subscriber::registry().with(logs).with(export).try_init();
    tracing::info!(
        endpoint = %otel.endpoint,
        protocol = otel.protocol.as_str(),
        service_name,
        "exporting spans to {} over OTLP/{} as {service_name}",
        otel.endpoint,
        if otel.protocol == OtlpProtocol::Grpc { "gRPC" } else { "HTTP" },
    );
    Ok(Telemetry { otel: Some(otel) })
}

impl Telemetry {
    /// Exports the spans still buffered. Bounded: a dead collector cannot hold the exit up for long.
    pub fn shutdown(self) {
        if let Some(otel) = self.otel {
            otel.shutdown();
        }
    }
}

static CAPTURE_CONTENT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `gen_ai` spans record prompts and completions (`telemetry.capture_content`).
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Marks `span` failed: status error with the message, and an `exception` event (OTel's exception conventions).
pub fn record_error(span: &tracing::Span, error: &dyn std::fmt::Display) {
    use opentelemetry::{KeyValue, trace::Status};
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let message = error.to_string();
    span.set_status(Status::error(message.clone()));
    span.add_event(
        "exception",
        vec![KeyValue::new("exception.type", "sleuth::Error"), KeyValue::new("exception.message", message)],
    );
}

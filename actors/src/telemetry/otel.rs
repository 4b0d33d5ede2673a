//! The OpenTelemetry pipeline: an OTLP span exporter (gRPC or HTTP/protobuf) behind a batch processor, the
//! sampler and the resource; and the root span `sleuth.ask` of a request that arrived without a trace, which is
//! recorded when the request ends by whichever process ends it.

use std::{
    borrow::Cow,
    sync::{Arc, OnceLock},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::Context as _;
use opentelemetry::{
    InstrumentationScope, KeyValue,
    trace::{SpanContext, SpanId, SpanKind, Status, TracerProvider as _},
};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::{
    Resource,
    error::OTelSdkResult,
    trace::{
        BatchSpanProcessor, Sampler, SamplingDecision, SdkTracerProvider, ShouldSample, Span, SpanData, SpanEvents,
        SpanLinks, SpanProcessor, Tracer,
    },
};
use sleuth_messages::{LoopState, Outcome};

use super::context::{self, TraceHeaders};
use crate::config::{OtlpProtocol, TelemetryConfig};

/// The running pipeline of this process.
pub struct Otel {
    provider: SdkTracerProvider,
    pub endpoint: String,
    pub protocol: OtlpProtocol,
}

/// What recording a request's root span needs, outside any tracing span.
struct Roots {
    processor: Arc<BatchSpanProcessor>,
    sampler: Sampler,
    scope: InstrumentationScope,
}

static ROOTS: OnceLock<Roots> = OnceLock::new();

/// Lets the provider own the batch processor while the root recorder keeps a handle on it.
#[derive(Debug)]
struct Shared(Arc<BatchSpanProcessor>);

impl SpanProcessor for Shared {
    fn on_start(&self, span: &mut Span, cx: &opentelemetry::Context) {
        self.0.on_start(span, cx)
    }
    fn on_end(&self, span: SpanData) {
        self.0.on_end(span)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
}

fn sampler(config: &TelemetryConfig) -> Sampler {
    let ratio = config.sampler_arg.unwrap_or(1.0);
    match config.sampler.as_deref().unwrap_or("parentbased_always_on") {
        "always_on" => Sampler::AlwaysOn,
        "always_off" => Sampler::AlwaysOff,
        "traceidratio" => Sampler::TraceIdRatioBased(ratio),
        "parentbased_always_off" => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
        "parentbased_traceidratio" => Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio))),
        _ => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
    }
}

/// Builds the exporter and provider. Must run inside the Tokio runtime (the gRPC client needs its reactor).
pub fn start(config: &TelemetryConfig, endpoint: &str, service_name: &str) -> anyhow::Result<(Otel, Tracer)> {
    let protocol = config.otlp_protocol.unwrap_or(OtlpProtocol::Grpc);
    let exporter = match protocol {
        OtlpProtocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .build()
            .with_context(|| format!("cannot build the OTLP/gRPC exporter for {endpoint}"))?,
        OtlpProtocol::HttpProtobuf => {
            let url = if endpoint.trim_end_matches('/').ends_with("/v1/traces") {
                endpoint.to_string()
            } else {
                format!("{}/v1/traces", endpoint.trim_end_matches('/'))
            };
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(url)
                .build()
                .with_context(|| format!("cannot build the OTLP/HTTP exporter for {endpoint}"))?
        }
    };
    let sampler = sampler(config);
    // The builder's detectors read OTEL_RESOURCE_ATTRIBUTES; the service name is ours (it already fell back
    // to OTEL_SERVICE_NAME in the configuration).
    let resource = Resource::builder().with_service_name(service_name.to_string()).build();
    // The provider hands its resource to the processors it owns; this one is shared, so it gets it here.
    let mut processor = BatchSpanProcessor::builder(exporter).build();
    processor.set_resource(&resource);
    let processor = Arc::new(processor);
    let provider = SdkTracerProvider::builder()
        .with_span_processor(Shared(processor.clone()))
        .with_sampler(sampler.clone())
        .with_resource(resource)
        .build();
    let scope = InstrumentationScope::builder("sleuth").with_version(env!("CARGO_PKG_VERSION")).build();
    let tracer = provider.tracer_with_scope(scope.clone());
    let _ = ROOTS.set(Roots { processor, sampler, scope });
    context::set_exporting();
    Ok((Otel { provider, endpoint: endpoint.to_string(), protocol }, tracer))
}

impl Otel {
    /// Exports what is buffered and stops the exporter (bounded, so shutdown cannot hang on a dead collector).
    pub fn shutdown(self) {
        if let Err(e) = self.provider.force_flush() {
            eprintln!("warning: cannot flush spans to {}: {e}", self.endpoint);
        }
        let _ = self.provider.shutdown_with_timeout(Duration::from_secs(5));
    }
}

/// A root context for a request that arrived without one, sampled by the configured sampler. Without span
/// export every root is marked sampled, so a downstream process that exports keeps the trace.
pub fn new_root() -> TraceHeaders {
    let (trace_id, span_id) = context::new_ids();
    let sampled = ROOTS.get().is_none_or(|roots| {
        let decision = roots.sampler.should_sample(None, trace_id, "sleuth.ask", &SpanKind::Server, &[], &[]);
        decision.decision == SamplingDecision::RecordAndSample
    });
    context::root(trace_id, span_id, sampled)
}

/// Records the root span `sleuth.ask` of a request whose root no client recorded: from its creation to its end,
/// with the ids intake gave it. Call once, after the request's end was committed.
pub fn record_root(state: &LoopState) {
    let Some(roots) = ROOTS.get() else { return };
    if !state.records_root_span {
        return;
    }
    let headers = TraceHeaders {
        traceparent: state.traceparent.clone(),
        tracestate: state.tracestate.clone(),
        baggage: state.baggage.clone(),
    };
    let Some(sc) = context::span_context(&headers).filter(SpanContext::is_sampled) else { return };
    let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
    let (reason, status) = match &state.outcome {
        Some(Outcome::Answer(a)) => (a.termination_reason.as_str().to_string(), Status::Unset),
        Some(Outcome::Error(e)) => (format!("error: {:?}", e.kind), Status::error(e.message.clone())),
        None => ("unknown".to_string(), Status::Unset),
    };
    let span = SpanData {
        span_context: SpanContext::new(sc.trace_id(), sc.span_id(), sc.trace_flags(), false, sc.trace_state().clone()),
        parent_span_id: SpanId::INVALID,
        parent_span_is_remote: false,
        span_kind: SpanKind::Server,
        name: Cow::Borrowed("sleuth.ask"),
        start_time: at(state.created_ms),
        end_time: state.finished_ms.map(at).unwrap_or_else(SystemTime::now),
        attributes: root_attributes(state, reason),
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status,
        instrumentation_scope: roots.scope.clone(),
    };
    roots.processor.on_end(span);
}

/// What the root span says about a request: its id, last turn, route and why it ended.
pub fn root_attributes(state: &LoopState, reason: String) -> Vec<KeyValue> {
    vec![
        KeyValue::new("sleuth.request_id", state.request_id.to_string()),
        KeyValue::new("sleuth.turn", i64::from(state.turn)),
        KeyValue::new("sleuth.stage", "ask"),
        KeyValue::new("sleuth.route", format!("{:?}", state.analysis.route).to_lowercase()),
        KeyValue::new("sleuth.termination_reason", reason),
    ]
}

//! W3C Trace Context on the bus: [`TraceHeaders`] carries `traceparent`, `tracestate` and `baggage` between
//! processes (NATS headers, the in-process bus, the loop state), and the OpenTelemetry propagator reads and
//! writes them. The Injector/Extractor over `async_nats::HeaderMap` is the only hand-written part.

use std::sync::LazyLock;

use async_nats::HeaderMap;
use opentelemetry::{
    Context,
    propagation::{Extractor, Injector, TextMapCompositePropagator, TextMapPropagator},
    trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState},
};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use tracing_opentelemetry::OpenTelemetrySpanExt;

pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";
pub const BAGGAGE: &str = "baggage";

/// The propagation fields of one message. Empty when the sender had no trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceHeaders {
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub baggage: Option<String>,
}

impl TraceHeaders {
    pub fn is_empty(&self) -> bool {
        self.traceparent.is_none()
    }

    /// Reads the three fields from NATS headers. A field longer than W3C Trace Context and Baggage let it be
    /// (traceparent 55 characters in version 00, so 128 leaves room; tracestate 512; baggage 8192) is dropped: the
    /// headers are copied into the request's loop state, which must stay loadable whatever a sender attaches.
    pub fn from_nats(headers: Option<&HeaderMap>) -> TraceHeaders {
        let Some(headers) = headers else { return TraceHeaders::default() };
        let get = |name: &str| headers.get(name).map(|v| v.as_str());
        TraceHeaders::given(get(TRACEPARENT), get(TRACESTATE), get(BAGGAGE))
    }

    /// The three fields as a caller gave them (NATS headers, an MCP request's `_meta`), each dropped when empty or
    /// longer than W3C lets it be (see [`TraceHeaders::from_nats`]).
    pub fn given(traceparent: Option<&str>, tracestate: Option<&str>, baggage: Option<&str>) -> TraceHeaders {
        let get = |name: &str, value: Option<&str>, max: usize| {
            let value = value.filter(|v| !v.is_empty())?;
            if value.len() > max {
                tracing::warn!(header = name, bytes = value.len(), max, "trace header too long, dropped");
                return None;
            }
            Some(value.to_string())
        };
        TraceHeaders {
            traceparent: get(TRACEPARENT, traceparent, 128),
            tracestate: get(TRACESTATE, tracestate, 512),
            baggage: get(BAGGAGE, baggage, 8192),
        }
    }

    /// Writes the fields that are set into NATS headers.
    pub fn to_nats(&self, headers: &mut HeaderMap) {
        for (name, value) in self.fields() {
            headers.insert(name, value);
        }
    }

    fn fields(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [(TRACEPARENT, &self.traceparent), (TRACESTATE, &self.tracestate), (BAGGAGE, &self.baggage)]
            .into_iter()
            .filter_map(|(name, value)| value.as_deref().map(|v| (name, v)))
    }

    /// The trace id, when the headers carry a valid `traceparent`.
    pub fn trace_id(&self) -> Option<TraceId> {
        let cx = extract(self);
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid().then(|| sc.trace_id())
    }
}

/// The loop state keeps its request's root context in the machine's own plain type.
impl From<TraceHeaders> for sleuth_core::machine::RootTrace {
    fn from(t: TraceHeaders) -> Self {
        sleuth_core::machine::RootTrace { traceparent: t.traceparent, tracestate: t.tracestate, baggage: t.baggage }
    }
}

/// The context of a request's root span, as its state keeps it.
pub fn root_trace(state: &sleuth_messages::LoopState) -> TraceHeaders {
    TraceHeaders {
        traceparent: state.traceparent.clone(),
        tracestate: state.tracestate.clone(),
        baggage: state.baggage.clone(),
    }
}

impl Extractor for TraceHeaders {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            TRACEPARENT => self.traceparent.as_deref(),
            TRACESTATE => self.tracestate.as_deref(),
            BAGGAGE => self.baggage.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        self.fields().map(|(name, _)| name).collect()
    }
}

impl Injector for TraceHeaders {
    fn set(&mut self, key: &str, value: String) {
        match key {
            TRACEPARENT => self.traceparent = Some(value),
            TRACESTATE => self.tracestate = Some(value).filter(|v| !v.is_empty()),
            BAGGAGE => self.baggage = Some(value).filter(|v| !v.is_empty()),
            _ => {}
        }
    }
}

fn propagator() -> &'static TextMapCompositePropagator {
    static PROPAGATOR: LazyLock<TextMapCompositePropagator> = LazyLock::new(|| {
        TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ])
    });
    &PROPAGATOR
}

/// The remote context the headers describe (empty when they carry none).
pub fn extract(headers: &TraceHeaders) -> Context {
    propagator().extract(headers)
}

/// The headers that make a receiver's span a child of `cx`.
pub fn inject(cx: &Context) -> TraceHeaders {
    let mut headers = TraceHeaders::default();
    propagator().inject_context(cx, &mut headers);
    headers
}

/// Set once this process exports spans (`otel.rs` installs the pipeline): only then do spans carry contexts of
/// their own to propagate.
static EXPORTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True when spans are exported from this process.
pub fn exporting() -> bool {
    EXPORTING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Records that this process exports spans from now on.
pub fn set_exporting() {
    EXPORTING.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The headers that make a receiver's span a child of `span`. Without span export the span has no context of
/// its own, and the headers it was started from (`inherited`) pass through unchanged, so a trace that started
/// upstream survives a hop through a process that does not export.
pub fn of_span(span: &tracing::Span, inherited: &TraceHeaders) -> TraceHeaders {
    if !exporting() {
        return inherited.clone();
    }
    let cx = span.context();
    if cx.span().span_context().is_valid() { inject(&cx) } else { inherited.clone() }
}

/// Makes `span` a child of the remote context in `headers`, if they carry one.
pub fn set_parent(span: &tracing::Span, headers: &TraceHeaders) {
    if exporting() && !headers.is_empty() {
        let _ = span.set_parent(extract(headers));
    }
}

/// Fresh ids for a request's root span.
pub fn new_ids() -> (TraceId, SpanId) {
    (
        TraceId::from_bytes(rand::random::<u128>().max(1).to_be_bytes()),
        SpanId::from_bytes(rand::random::<u64>().max(1).to_be_bytes()),
    )
}

/// The headers of a root span with these ids: what a request that arrived without a trace is parented to.
pub fn root(trace_id: TraceId, span_id: SpanId, sampled: bool) -> TraceHeaders {
    let flags = if sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
    let sc = SpanContext::new(trace_id, span_id, flags, true, TraceState::default());
    inject(&Context::new().with_remote_span_context(sc))
}

/// The span context the headers carry, if valid.
pub fn span_context(headers: &TraceHeaders) -> Option<SpanContext> {
    let cx = extract(headers);
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| sc.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_through_nats() {
        let headers = TraceHeaders {
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            tracestate: Some("vendor=x".into()),
            baggage: Some("tenant=acme".into()),
        };
        let mut map = HeaderMap::new();
        headers.to_nats(&mut map);
        assert_eq!(TraceHeaders::from_nats(Some(&map)), headers);
        assert_eq!(TraceHeaders::from_nats(None), TraceHeaders::default());
    }

    #[test]
    fn oversized_trace_headers_are_dropped_not_stored() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let mut map = HeaderMap::new();
        map.insert(TRACEPARENT, parent);
        map.insert(TRACESTATE, "v=x".repeat(200).as_str());
        map.insert(BAGGAGE, format!("k={}", "x".repeat(2 * 1024 * 1024)).as_str());
        let headers = TraceHeaders::from_nats(Some(&map));
        assert_eq!(headers.traceparent.as_deref(), Some(parent), "the trace itself is kept");
        assert_eq!((headers.tracestate, headers.baggage), (None, None));
    }

    #[test]
    fn extract_then_inject_keeps_the_context_and_baggage() {
        let headers = TraceHeaders {
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            tracestate: Some("vendor=x".into()),
            baggage: Some("tenant=acme".into()),
        };
        let again = inject(&extract(&headers));
        assert_eq!(again, headers);
        assert_eq!(headers.trace_id().map(|t| t.to_string()).as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
    }

    #[test]
    fn new_roots_are_valid_and_distinct() {
        let ((t1, s1), (t2, s2)) = (new_ids(), new_ids());
        let (a, b) = (root(t1, s1, true), root(t2, s2, false));
        let (sa, sb) = (span_context(&a).unwrap(), span_context(&b).unwrap());
        assert_ne!(sa.trace_id(), sb.trace_id());
        assert!(sa.is_sampled() && !sb.is_sampled());
        assert!(a.traceparent.unwrap().ends_with("-01"));
    }

    #[test]
    fn garbage_headers_extract_to_nothing() {
        let headers = TraceHeaders { traceparent: Some("not a traceparent".into()), ..Default::default() };
        assert!(span_context(&headers).is_none());
        assert!(headers.trace_id().is_none());
    }
}

//! An OTLP/gRPC trace collector for tests: a tonic server implementing opentelemetry-proto's `TraceService`, the
//! protocol Jaeger's port 4317 speaks. It keeps every span it receives, with its process's `service.name`.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use opentelemetry_proto::tonic::{
    collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
        trace_service_server::{TraceService, TraceServiceServer},
    },
    common::v1::{AnyValue, KeyValue, any_value::Value},
};
use tokio::sync::oneshot;

/// One received span, flattened: ids in hex, attributes as strings.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    pub service: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: BTreeMap<String, String>,
    /// 0 unset, 1 ok, 2 error.
    pub status_code: i32,
    pub events: Vec<String>,
}

impl ReceivedSpan {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

#[derive(Default, Clone)]
struct Store {
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    /// Spans received per service, kept or not.
    counts: Arc<Mutex<BTreeMap<String, usize>>>,
    /// Only count (a long benchmark would otherwise hold every span in memory).
    count_only: bool,
}

fn text(value: &Option<AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attributes(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    kvs.iter().map(|kv| (kv.key.clone(), text(&kv.value))).collect()
}

#[tonic::async_trait]
impl TraceService for Store {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        for resource_spans in request.into_inner().resource_spans {
            let resource = resource_spans.resource.map(|r| attributes(&r.attributes)).unwrap_or_default();
            let service = resource.get("service.name").cloned().unwrap_or_default();
            for scope_spans in resource_spans.scope_spans {
                *counts.entry(service.clone()).or_default() += scope_spans.spans.len();
                if self.count_only {
                    continue;
                }
                for span in scope_spans.spans {
                    spans.push(ReceivedSpan {
                        service: service.clone(),
                        trace_id: hex::encode(&span.trace_id),
                        span_id: hex::encode(&span.span_id),
                        parent_span_id: hex::encode(&span.parent_span_id),
                        name: span.name.clone(),
                        start_ns: span.start_time_unix_nano,
                        end_ns: span.end_time_unix_nano,
                        attributes: attributes(&span.attributes),
                        status_code: span.status.map(|s| s.code).unwrap_or(0),
                        events: span.events.iter().map(|e| e.name.clone()).collect(),
                    });
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

/// A running collector on a random port. Dropping it stops the server.
pub struct Collector {
    /// `http://127.0.0.1:<port>`: what `OTEL_EXPORTER_OTLP_ENDPOINT` is set to.
    pub endpoint: String,
    store: Store,
    _stop: oneshot::Sender<()>,
}

impl Collector {
    pub async fn start() -> Collector {
        Collector::start_on("127.0.0.1:0").await
    }

    /// A collector on a given address, e.g. `127.0.0.1:4317`.
    pub async fn start_on(addr: &str) -> Collector {
        Collector::serve(addr, Store::default()).await
    }

    /// A collector that only counts what it receives, per service.
    pub async fn counting_on(addr: &str) -> Collector {
        Collector::serve(addr, Store { count_only: true, ..Store::default() }).await
    }

    async fn serve(addr: &str, store: Store) -> Collector {
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap_or_else(|e| panic!("cannot bind {addr}: {e}"));
        let endpoint = format!("http://{}", listener.local_addr().expect("collector address"));
        let (stop, stopped) = oneshot::channel::<()>();
        let service = TraceServiceServer::new(store.clone());
        tokio::spawn(async move {
            let incoming = tonic::transport::server::TcpIncoming::from(listener);
            let served = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await;
            if let Err(e) = served {
                eprintln!("the test OTLP collector stopped: {e}");
            }
        });
        Collector { endpoint, store, _stop: stop }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.store.spans.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Spans received per service.
    pub fn counts(&self) -> BTreeMap<String, usize> {
        self.store.counts.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The spans of one request (by `sleuth.request_id`) and of its trace, once `ready` holds of them or
    /// `within` has passed.
    pub async fn trace_of(
        &self,
        request_id: &str,
        within: Duration,
        ready: impl Fn(&[ReceivedSpan]) -> bool,
    ) -> Vec<ReceivedSpan> {
        let until = Instant::now() + within;
        loop {
            let spans = self.spans();
            let traces: Vec<String> = spans
                .iter()
                .filter(|s| s.attr("sleuth.request_id") == Some(request_id))
                .map(|s| s.trace_id.clone())
                .collect();
            let trace: Vec<ReceivedSpan> = spans.into_iter().filter(|s| traces.contains(&s.trace_id)).collect();
            if ready(&trace) || Instant::now() > until {
                return trace;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

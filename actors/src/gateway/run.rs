//! [`Run`]: one request the gateway started, its events as they arrive and its final reply. Dropping a run
//! before its reply (the client went away) cancels the request, so the loop stops spending on nobody.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use sleuth_messages::{AskReply, AskRequest, ErrorResponse, Event, Principal};
use tokio::{sync::mpsc, task::JoinHandle};
use uuid::Uuid;

use super::engine::Engine;
use crate::telemetry::TraceHeaders;

pub struct Run {
    pub request_id: Uuid,
    pub events: mpsc::UnboundedReceiver<Event>,
    reply: Option<JoinHandle<Result<AskReply, ErrorResponse>>>,
    cancel: CancelOnDrop,
}

/// Cancels the request when dropped before `done`.
struct CancelOnDrop {
    engine: Arc<Engine>,
    request_id: Uuid,
    done: AtomicBool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.done.load(Ordering::SeqCst) {
            return;
        }
        let (engine, request_id) = (self.engine.clone(), self.request_id);
        tracing::info!(%request_id, "the client went away before the answer: cancelling the request");
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = engine.cancel(request_id).await {
                    tracing::warn!(%request_id, error = %e, "cannot cancel the abandoned request");
                }
            });
        }
    }
}

impl Run {
    /// Starts `request` on behalf of `by`.
    pub fn start(engine: &Arc<Engine>, mut request: AskRequest, by: Option<Principal>, trace: TraceHeaders) -> Run {
        let request_id = *request.request_id.get_or_insert_with(Uuid::now_v7);
        let (tx, events) = mpsc::unbounded_channel();
        let task_engine = engine.clone();
        // In the caller's span (the HTTP request's), so the request's `sleuth.ask` is its child.
        let ask = async move { task_engine.ask(request, by, &trace, Some(tx)).await };
        let reply = tokio::spawn(tracing::Instrument::instrument(ask, tracing::Span::current()));
        let cancel = CancelOnDrop { engine: engine.clone(), request_id, done: AtomicBool::new(false) };
        Run { request_id, events, reply: Some(reply), cancel }
    }

    /// The request ended (its final event was seen): dropping the run no longer cancels it.
    pub fn finished(&self) {
        self.cancel.done.store(true, Ordering::SeqCst);
    }

    /// Waits for the final reply.
    pub async fn reply(&mut self) -> Result<AskReply, ErrorResponse> {
        let Some(handle) = self.reply.take() else {
            return Err(ErrorResponse::new(sleuth_messages::ErrorKind::Internal, "the reply was already taken"));
        };
        let reply = handle.await.unwrap_or_else(|e| {
            Err(ErrorResponse::new(sleuth_messages::ErrorKind::Internal, format!("the request's task failed: {e}")))
        });
        self.finished();
        reply
    }
}

/// Open event streams per principal, bounded by `gateway.max_streams_per_principal`.
#[derive(Default)]
pub struct StreamCounts {
    open: Mutex<HashMap<String, usize>>,
}

/// One open stream, given back when dropped.
pub struct StreamSlot {
    counts: Arc<StreamCounts>,
    key: String,
}

impl StreamCounts {
    /// A slot for one more stream of `by`, or `None` when it holds `max` already.
    pub fn acquire(self: &Arc<Self>, by: Option<&Principal>, max: usize) -> Option<StreamSlot> {
        let key = by.map_or_else(String::new, |p| p.tenant.clone());
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(key.clone()).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        crate::telemetry::metrics::gateway_stream(true);
        Some(StreamSlot { counts: self.clone(), key })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.counts.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.key);
            }
        }
        crate::telemetry::metrics::gateway_stream(false);
    }
}

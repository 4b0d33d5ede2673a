//! NATS endpoints: every stage registers as a NATS micro service (`nats micro ls`), and the intake service
//! answers `sleuth.v1.ask`. A bad request gets a typed `ErrorResponse` in the request's own encoding.

use std::sync::Arc;

use async_nats::service::{Service, ServiceExt};
use bytes::Bytes;
use futures::StreamExt;
use sleuth_messages::{AskReply, AskRequest, Encoding, ReplyTo, Stage, codec, subjects::Subjects};

use crate::{
    retrieval::cache::RetrievalCache,
    runtime::{NodeContext, Stats},
    stages::intake,
    telemetry::TraceHeaders,
};

pub fn service_name(stage: Stage) -> String {
    format!("sleuth-{stage}")
}

/// Registers `stage` as a NATS micro service so `nats micro ls/stats` show it, with a `status` endpoint on
/// `<prefix>.status.<stage>`. Its stats data, and the status endpoint's answer, are the runtime's counters for
/// the stage (the same ones `/metrics` exports) and, on the retrieve stage, the retrieval cache's. The returned
/// task answers the status endpoint until the service stops.
pub async fn register_service(
    client: &async_nats::Client,
    subjects: &Subjects,
    stage: Stage,
    stats: Arc<Stats>,
    cache: Option<Arc<RetrievalCache>>,
) -> anyhow::Result<(Service, tokio::task::JoinHandle<()>)> {
    let status = move || {
        let mut data = serde_json::json!({ "counters": stats.of_stage(stage) });
        if let Some(cache) = &cache {
            data["retrieval_cache"] = serde_json::to_value(cache.stats()).unwrap_or_default();
        }
        data
    };
    let data = status.clone();
    let service = client
        .service_builder()
        .description(format!("sleuth {stage} stage"))
        .stats_handler(move |_endpoint, _stats| data())
        .start(service_name(stage), env!("CARGO_PKG_VERSION"))
        .await
        .map_err(|e| anyhow::anyhow!("cannot register the {stage} service: {e}"))?;
    let mut endpoint = service
        .endpoint_builder()
        .name("status")
        .add(subjects.status(stage))
        .await
        .map_err(|e| anyhow::anyhow!("cannot add the {stage} status endpoint: {e}"))?;
    let task = tokio::spawn(async move {
        while let Some(request) = endpoint.next().await {
            let body = serde_json::to_vec(&status()).unwrap_or_default();
            if let Err(e) = request.respond(Ok(Bytes::from(body))).await {
                tracing::debug!(error = %e, "cannot answer a status request");
            }
        }
    });
    Ok((service, task))
}

/// The `ask` endpoint on the intake service, load-balanced over intake replicas by its queue group.
pub async fn ask_endpoint(
    service: &Service,
    ctx: &NodeContext,
) -> anyhow::Result<async_nats::service::endpoint::Endpoint> {
    service
        .endpoint_builder()
        .name("ask")
        .add(ctx.config.subjects().ask())
        .await
        .map_err(|e| anyhow::anyhow!("cannot add the ask endpoint: {e}"))
}

/// Accepts one question. The answer is published later to the request's reply inbox by whichever replica
/// finishes the loop; only an invalid request is answered here. Intake's [`crate::runtime::responder`] pool
/// calls it for every request to `sleuth.v1.ask`.
pub async fn answer_ask(ctx: Arc<NodeContext>, request: async_nats::service::Request) {
    let payload = &request.message.payload;
    let encoding = Encoding::detect(payload);
    let trace = TraceHeaders::from_nats(request.message.headers.as_ref());
    let reply = request.message.reply.as_ref().map(|s| ReplyTo { subject: s.to_string(), encoding });
    let outcome = match codec::decode::<AskRequest>(payload) {
        Ok((ask, _)) => intake::submit(&ctx, ask, reply, &trace).await.map(|_| ()),
        Err(e) => Err(e.into()),
    };
    if let Err(error) = outcome {
        tracing::warn!(error = %error, "rejected ask request");
        let body = codec::encode(&AskReply::error(error), encoding).unwrap_or_default();
        if let Err(e) = request.respond(Ok(Bytes::from(body))).await {
            tracing::warn!(error = %e, "cannot answer rejected request");
        }
    }
}

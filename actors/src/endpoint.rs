//! NATS endpoints: every stage registers as a NATS micro service (`nats micro ls`), and the intake service
//! answers `sleuth.v1.ask`. A bad request gets a typed `ErrorResponse` in the request's own encoding.

use std::sync::Arc;

use async_nats::service::{Service, ServiceExt};
use bytes::Bytes;
use futures::StreamExt;
use sleuth_messages::{AskReply, AskRequest, Encoding, ReplyTo, Stage, codec};

use crate::{bus::nats::TRACEPARENT, retrieval::cache::RetrievalCache, runtime::NodeContext, stages::intake};

pub fn service_name(stage: Stage) -> String {
    format!("sleuth-{stage}")
}

/// Registers `stage` as a NATS micro service so `nats micro ls/stats` show it. With a retrieval cache, its
/// counters are the service's custom stats (`nats micro stats sleuth-retrieve`).
pub async fn register_service(
    client: &async_nats::Client,
    stage: Stage,
    cache: Option<Arc<RetrievalCache>>,
) -> anyhow::Result<Service> {
    let mut builder = client.service_builder().description(format!("sleuth {stage} stage"));
    if let Some(cache) = cache {
        builder = builder.stats_handler(move |_endpoint, _stats| {
            serde_json::json!({ "retrieval_cache": serde_json::to_value(cache.stats()).unwrap_or_default() })
        });
    }
    builder
        .start(service_name(stage), env!("CARGO_PKG_VERSION"))
        .await
        .map_err(|e| anyhow::anyhow!("cannot register the {stage} service: {e}"))
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

/// Accepts questions until the endpoint closes. The answer is published later to the request's reply inbox
/// by whichever replica finishes the loop; only invalid requests are answered here.
pub async fn serve_ask(ctx: Arc<NodeContext>, mut endpoint: async_nats::service::endpoint::Endpoint) {
    while let Some(request) = endpoint.next().await {
        let payload = &request.message.payload;
        let encoding = Encoding::detect(payload);
        let traceparent =
            request.message.headers.as_ref().and_then(|h| h.get(TRACEPARENT)).map(|v| v.as_str().to_string());
        let reply = request.message.reply.as_ref().map(|s| ReplyTo { subject: s.to_string(), encoding });
        let outcome = match codec::decode::<AskRequest>(payload) {
            Ok((ask, _)) => intake::submit(&ctx, ask, reply, traceparent).await.map(|_| ()),
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
}

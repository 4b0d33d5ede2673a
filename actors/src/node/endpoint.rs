//! NATS endpoints: every stage registers as a NATS micro service (`nats micro ls`), the intake service answers
//! `sleuth.v1.ask`, and the graph service its lanes (`lanes.rs`). A bad request gets a typed `ErrorResponse` in
//! the request's own encoding.

use std::sync::Arc;

use async_nats::service::{Service, ServiceExt};
use bytes::Bytes;
use futures::StreamExt;
use sleuth_messages::{
    AskReply, AskRequest, Encoding, ErrorKind, ErrorResponse, ReplyTo, Stage, codec, subjects::Subjects,
};

use crate::{graph::GraphStore, retrieval::cache::RetrievalCache, telemetry::TraceHeaders};
use crate::{
    graph::lanes,
    runtime::{NodeContext, Stats, intake, responder::ResponderArgs},
};

pub fn service_name(stage: Stage) -> String {
    format!("sleuth-{stage}")
}

/// The NATS endpoints of `stages` in this process: each stage's micro service and status task, intake's `ask`
/// endpoint and the graph's `search` and `hydrate` lanes (with `graph` opened), each with the responders that
/// answer it.
pub async fn register_all(
    client: &async_nats::Client,
    ctx: &Arc<NodeContext>,
    stages: &[Stage],
    cache: Option<Arc<RetrievalCache>>,
    graph: Option<&Arc<dyn GraphStore>>,
) -> anyhow::Result<(Vec<Service>, Vec<tokio::task::JoinHandle<()>>, Vec<ResponderArgs>)> {
    let mut services = Vec::new();
    let mut status_tasks = Vec::new();
    let mut responders = Vec::new();
    for stage in stages {
        let cache = if *stage == Stage::Retrieve { cache.clone() } else { None };
        let (service, status) =
            register_service(client, &ctx.subjects, *stage, ctx.stats.clone(), cache, &ctx.config.nats.inbox_prefixes)
                .await?;
        status_tasks.push(status);
        if *stage == Stage::Intake {
            let ask = ask_endpoint(&service, ctx).await?;
            let answer_ctx = ctx.clone();
            responders.push(ResponderArgs::new(ctx.clone(), Stage::Intake, "ask", ask, move |request| {
                answer_ask(answer_ctx.clone(), request)
            }));
        }
        if *stage == Stage::Graph
            && let Some(store) = graph
        {
            let (search, hydrate) = lanes::endpoints(&service, ctx.subjects.search(), ctx.subjects.hydrate()).await?;
            let groups = Arc::new(ctx.config.tenants.groups.clone());
            let (on, by) = (store.clone(), groups.clone());
            responders.push(ResponderArgs::new(ctx.clone(), Stage::Graph, "search", search, move |request| {
                lanes::answer(on.clone(), by.clone(), lanes::search, request)
            }));
            let (on, by) = (store.clone(), groups);
            responders.push(ResponderArgs::new(ctx.clone(), Stage::Graph, "hydrate", hydrate, move |request| {
                lanes::answer(on.clone(), by.clone(), lanes::hydrate, request)
            }));
        }
        services.push(service);
    }
    Ok((services, status_tasks, responders))
}

/// Registers `stage` as a NATS micro service so `nats micro ls/stats` show it, with a `status` endpoint on
/// `<prefix>.status.<stage>`. Its stats data, and the status endpoint's answer, are the runtime's counters for
/// the stage (the same ones `/metrics` exports) and, on the retrieve stage, the retrieval cache's. The returned
/// task answers the status endpoint until the service stops, requests whose reply subject is an inbox only.
pub async fn register_service(
    client: &async_nats::Client,
    subjects: &Subjects,
    stage: Stage,
    stats: Arc<Stats>,
    cache: Option<Arc<RetrievalCache>>,
    inbox_prefixes: &[String],
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
    let inboxes = inbox_prefixes.to_vec();
    let task = tokio::spawn(async move {
        while let Some(request) = endpoint.next().await {
            if !request.message.reply.as_deref().is_some_and(|r| crate::nats_client::is_inbox(r, &inboxes)) {
                tracing::warn!(%stage, reply = ?request.message.reply, "status request dropped: its reply subject is not an inbox (nats.inbox_prefixes)");
                continue;
            }
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
    let outcome =
        match (codec::decode::<AskRequest>(payload), crate::nats_client::requester(request.message.headers.as_ref())) {
            (Ok((ask, _)), Ok(by)) => intake::submit(&ctx, ask, reply, &trace, by).await.map(|_| ()),
            (Err(e), _) => Err(e.into()),
            (_, Err(why)) => Err(ErrorResponse::new(ErrorKind::InvalidInput, why)),
        };
    if let Err(error) = outcome {
        tracing::warn!(error = %error, "rejected ask request");
        let body = codec::encode(&AskReply::error(error), encoding).unwrap_or_default();
        if let Err(e) = request.respond(Ok(Bytes::from(body))).await {
            tracing::warn!(error = %e, "cannot answer rejected request");
        }
    }
}

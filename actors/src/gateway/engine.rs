//! [`Engine`]: what the gateway asks. Embedded, the stages of this process through its in-memory bus; on a
//! cluster, `sleuth.v1.ask` over NATS like any client, with the authenticated tenant as the request's owner.

use std::{sync::Arc, time::Duration};

use sleuth_messages::{
    AskReply, AskRequest, EntitiesReply, ErrorKind, ErrorResponse, Event, Hit, HydrateRequest, JsonMap, LoopState,
    Principal, SearchRequest, subjects::Subjects,
};
use tokio::sync::{OnceCell, mpsc};

use crate::{
    access::Access,
    client,
    config::Config,
    index::PayloadFilter,
    node::Node,
    retrieval::Retriever,
    store::{IndexGeneration, StateStore, nats_loops::LoopStream},
    telemetry::TraceHeaders,
};

/// Where the gateway's requests go.
pub enum Engine {
    /// Every stage in this process (`sleuth serve --embedded`).
    Embedded(Arc<Node>),
    /// A deployment on NATS (`sleuth serve --stages gateway`).
    Nats(Box<NatsEngine>),
}

pub struct NatsEngine {
    client: async_nats::Client,
    config: Arc<Config>,
    subjects: Subjects,
    /// The loop bucket's state store, made on the first status read.
    loops: OnceCell<LoopStream>,
    /// The index, opened on the first `search` or `fetch` (MCP).
    index: OnceCell<Arc<Retriever>>,
}

fn unavailable(e: impl std::fmt::Display) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Unavailable, e.to_string())
}

impl Engine {
    /// The engine of a deployment on NATS, connected as the configured user.
    pub async fn nats(config: Arc<Config>) -> anyhow::Result<Engine> {
        let url = config.nats.url.clone().ok_or_else(|| anyhow::anyhow!("the gateway stage needs a NATS URL"))?;
        let client = crate::nats_client::connect(&url, "sleuth gateway").await?;
        let subjects = config.subjects();
        Ok(Engine::Nats(Box::new(NatsEngine {
            client,
            config,
            subjects,
            loops: OnceCell::new(),
            index: OnceCell::new(),
        })))
    }

    pub fn config(&self) -> &Config {
        match self {
            Engine::Embedded(node) => &node.ctx.config,
            Engine::Nats(nats) => &nats.config,
        }
    }

    /// Asks `request` on behalf of `by` and waits for the final reply; every event (the final one included) is
    /// sent to `events` as it happens.
    pub async fn ask(
        &self,
        request: AskRequest,
        by: Option<Principal>,
        trace: &TraceHeaders,
        events: Option<mpsc::UnboundedSender<Event>>,
    ) -> Result<AskReply, ErrorResponse> {
        let mut forward = |e: &Event| {
            if let Some(tx) = &events {
                let _ = tx.send(e.clone());
            }
        };
        match self {
            Engine::Embedded(node) => node.ask_as(request, by, Some(&mut forward)).await,
            Engine::Nats(nats) => {
                let budget = request.timeout_ms.unwrap_or(nats.config.loop_.timeout_ms);
                let timeout = Duration::from_millis(budget.min(nats.config.loop_.max_timeout_ms) + 5_000);
                let request_id = request.request_id;
                let reply = client::ask_as(
                    &nats.client,
                    &nats.subjects,
                    request,
                    timeout,
                    Some(&mut forward),
                    trace,
                    by.as_ref(),
                )
                .await;
                reply.map_err(|e| {
                    let error = unavailable(format!("{e:#}"));
                    match request_id {
                        Some(id) => error.for_request(id),
                        None => error,
                    }
                })
            }
        }
    }

    /// A request's stored loop state, `None` when there is none (never was, or expired).
    pub async fn state(&self, request_id: uuid::Uuid) -> Result<Option<LoopState>, ErrorResponse> {
        let store: &dyn StateStore = match self {
            Engine::Embedded(node) => node.ctx.store.as_ref(),
            Engine::Nats(nats) => {
                nats.loops
                    .get_or_try_init(|| async { LoopStream::new(&nats.client, &nats.config).map_err(unavailable) })
                    .await?
            }
        };
        Ok(store.load(request_id).await.map_err(unavailable)?.map(|(state, _)| std::sync::Arc::unwrap_or_clone(state)))
    }

    /// Cancels a request; the caller has checked that its requester may.
    pub async fn cancel(&self, request_id: uuid::Uuid) -> Result<(), ErrorResponse> {
        match self {
            Engine::Embedded(node) => node.cancel(request_id).await.map_err(unavailable),
            Engine::Nats(nats) => {
                let subject = nats.subjects.cancel(request_id);
                nats.client.publish(subject, Default::default()).await.map_err(unavailable)?;
                nats.client.flush().await.map_err(unavailable)
            }
        }
    }

    /// The index: this process's when embedded, else opened from the configuration on first use.
    async fn index(&self) -> Result<&Arc<Retriever>, ErrorResponse> {
        match self {
            Engine::Embedded(node) => {
                node.retriever.as_ref().ok_or_else(|| unavailable("this process has no index open"))
            }
            Engine::Nats(nats) => {
                nats.index
                    .get_or_try_init(|| async {
                        // The index as it is: loading the demo data is the serving stages' business.
                        let retriever = Retriever::open(&nats.config).await;
                        retriever.map(Arc::new).map_err(|e| unavailable(format!("cannot open the index: {e:#}")))
                    })
                    .await
            }
        }
    }

    /// What `by` may read (`None`: the deployment's own caller, shared documents only).
    fn access(&self, by: Option<&Principal>) -> Access {
        Access::of(by, &self.config().tenants.groups)
    }

    /// The passages that best match `query` among those `by` may read, best first (one retrieval pass, no loop).
    pub async fn search(&self, query: &str, limit: usize, by: Option<&Principal>) -> Result<Vec<Hit>, ErrorResponse> {
        let index = self.index().await?;
        let filter = PayloadFilter::default().readable_by(&self.access(by));
        index.search(query, &filter, limit).await.map_err(|e| unavailable(format!("{e:#}")))
    }

    /// A document's chunks in order; empty when there is no such document, or `by` may not read it.
    pub async fn document(&self, doc_id: &str, by: Option<&Principal>) -> Result<Vec<Hit>, ErrorResponse> {
        let index = self.index().await?;
        let mut filter = JsonMap::new();
        filter.insert("doc_id".into(), doc_id.into());
        let filter = index.parse_filter(&filter).map_err(|e| ErrorResponse::new(ErrorKind::InvalidInput, e))?;
        let filter = filter.readable_by(&self.access(by));
        index.fetch(&filter, 1_000).await.map_err(|e| unavailable(format!("{e:#}")))
    }

    /// The readers of document `doc_id` as stored (whoever may read it), `None` when there is no such document.
    pub async fn stored_readers(&self, doc_id: &str) -> Result<Option<Vec<String>>, ErrorResponse> {
        let index = self.index().await?;
        let state = index.index.doc_state(doc_id).await.map_err(|e| unavailable(format!("{e:#}")))?;
        Ok(state.map(|s| s.readers))
    }

    /// The typeahead lane (`sleuth.v1.search`): entities by name or alias prefix, of those `by` may read.
    pub async fn search_entities(
        &self,
        request: SearchRequest,
        by: Option<&Principal>,
    ) -> Result<EntitiesReply, ErrorResponse> {
        match self {
            Engine::Embedded(node) => Ok(client::entities_reply(match &node.graph {
                Some(graph) => crate::graph::lanes::search(graph.clone(), request, self.access(by)).await,
                None => Err(unavailable("this process has no graph open")),
            })),
            Engine::Nats(nats) => nats.lane(nats.subjects.search(), &request, by).await,
        }
    }

    /// The hydrate lane (`sleuth.v1.hydrate`): entities by id, unknown ids (and those `by` may not read) left out.
    pub async fn hydrate(
        &self,
        request: HydrateRequest,
        by: Option<&Principal>,
    ) -> Result<EntitiesReply, ErrorResponse> {
        match self {
            Engine::Embedded(node) => Ok(client::entities_reply(match &node.graph {
                Some(graph) => crate::graph::lanes::hydrate(graph.clone(), request, self.access(by)).await,
                None => Err(unavailable("this process has no graph open")),
            })),
            Engine::Nats(nats) => nats.lane(nats.subjects.hydrate(), &request, by).await,
        }
    }

    /// Adds (or replaces) documents in the index, then moves the index generation so every retrieval cache of
    /// the deployment forgets what the old index answered.
    pub async fn ingest(&self, docs: Vec<crate::ingest::Document>) -> Result<String, ErrorResponse> {
        let index = self.index().await?;
        let summary = crate::ingest::ingest(index, docs, false).await.map_err(|e| unavailable(format!("{e:#}")))?;
        self.index_changed().await?;
        Ok(summary.to_string())
    }

    /// Deletes documents by id; how many of them were in the index.
    pub async fn delete_documents(&self, ids: &[String]) -> Result<usize, ErrorResponse> {
        let index = self.index().await?;
        let existed = crate::ingest::target::delete(index, ids).await.map_err(|e| unavailable(format!("{e:#}")))?;
        self.index_changed().await?;
        Ok(existed)
    }

    async fn index_changed(&self) -> Result<(), ErrorResponse> {
        match self {
            Engine::Embedded(node) => node.ctx.generation.bump().await.map(|_| ()).map_err(unavailable),
            Engine::Nats(nats) => {
                let js = async_nats::jetstream::new(nats.client.clone());
                let generation = IndexGeneration::on_nats(&js, &nats.subjects, nats.config.nats.replicas)
                    .await
                    .map_err(unavailable)?;
                generation.bump().await.map(|_| ()).map_err(unavailable)
            }
        }
    }
}

impl NatsEngine {
    /// A request to one of the fast lanes, answered by a graph stage.
    async fn lane<T: serde::Serialize>(
        &self,
        subject: String,
        request: &T,
        by: Option<&Principal>,
    ) -> Result<EntitiesReply, ErrorResponse> {
        client::lane(&self.client, subject, request, by).await.map_err(|e| unavailable(format!("{e:#}")))
    }
}

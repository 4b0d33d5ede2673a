//! Retrieve: executes a `qdrant_search` action with the hybrid [`Retriever`] (dense + BM25, RRF, rerank), and the
//! `database_stats` tool. `entity_type` picks the collection: documents, or the entity collection restricted to
//! that type (entity resolution). Filters are typed payload filters; an `id` filter without a query is an ID
//! lookup. A question with literal constraints searches BM25 only, exact matches first. Searches without
//! filters go through the [`RetrievalCache`], keyed by what the requester may read. Every search, fetch and count
//! is restricted to the documents and entities the request's owner may read (`crate::access`). An invalid intent
//! becomes a failed action result that the planner can react to, not a crash.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use async_trait::async_trait;
use sleuth_messages::{
    Action, ActionResult, DATABASE_STATS_ID, ErrorKind, ErrorResponse, Hit, JsonMap, LoopState, RetrievalResult,
    SearchIntent, Stage, WorkItem,
};

use super::StageLogic;
use crate::{
    access::Access,
    guard,
    index::PayloadFilter,
    machine,
    retrieval::{Found, Retriever, cache::RetrievalCache},
    store::IndexGeneration,
    telemetry,
};

pub struct Retrieve {
    pub retriever: Arc<Retriever>,
    /// Hits per search when the intent does not say.
    pub top_k: u32,
    cache: Option<Arc<RetrievalCache>>,
    generation: Arc<IndexGeneration>,
    /// `tenants.groups`: with the request's owner, what its searches may read.
    groups: BTreeMap<String, Vec<String>>,
}

#[async_trait]
impl StageLogic for Retrieve {
    fn stage(&self) -> Stage {
        Stage::Retrieve
    }

    async fn apply(&self, state: &LoopState, item: &WorkItem) -> anyhow::Result<LoopState> {
        let slot = item.envelope.step;
        let started = Instant::now();
        let access = Access::of(state.owner.as_ref(), &self.groups);
        let result = match machine::current_action(state, slot) {
            Some(Action::QdrantSearch { search_intent }) => {
                let max = state.caps.max_hits_per_search.max(1);
                // No search outlives the request: past its deadline the action is recorded as timed out.
                let remaining = Duration::from_millis(state.deadline_ms.saturating_sub(telemetry::now_ms()));
                let search = self.execute(search_intent, &state.analysis.literal_terms, max, &access);
                match tokio::time::timeout(remaining, search).await {
                    Ok(Ok(result)) => ActionResult::Retrieval(result),
                    Ok(Err(Failure::Invalid(message))) => {
                        ActionResult::Failed(ErrorResponse::new(ErrorKind::InvalidInput, message))
                    }
                    // The index is down (retries spent or circuit open): recorded, and the loop goes on without it.
                    Ok(Err(Failure::Backend(err))) => match guard::unavailable(&err) {
                        Some(down) => {
                            ActionResult::Failed(ErrorResponse::new(ErrorKind::Unavailable, down.to_string()))
                        }
                        None => return Err(err),
                    },
                    Err(_) => ActionResult::Failed(ErrorResponse::new(
                        ErrorKind::Timeout,
                        "the request's deadline passed during the search",
                    )),
                }
            }
            Some(Action::DatabaseStats {}) => match self.database_stats(&access).await {
                Ok(stats) => ActionResult::Retrieval(stats),
                Err(err) => match guard::unavailable(&err) {
                    Some(down) => ActionResult::Failed(ErrorResponse::new(ErrorKind::Unavailable, down.to_string())),
                    None => return Err(err),
                },
            },
            _ => anyhow::bail!("slot {slot} of turn {} is not a qdrant_search or database_stats", state.turn),
        };
        tracing::info!(request_id = %state.request_id, turn = state.turn, slot, hits = result.hit_count(), "retrieved");
        Ok(machine::apply_outcome(state, slot, result, started.elapsed().as_millis() as u64)?)
    }
}

enum Failure {
    /// The intent itself is wrong: recorded as a failed action.
    Invalid(String),
    /// The index failed: the message is retried.
    Backend(anyhow::Error),
}

impl Retrieve {
    pub fn new(
        retriever: Arc<Retriever>,
        top_k: u32,
        cache: Option<Arc<RetrievalCache>>,
        generation: Arc<IndexGeneration>,
    ) -> Retrieve {
        Retrieve { retriever, top_k, cache, generation, groups: BTreeMap::new() }
    }

    /// The reader groups of `tenants.groups`, for the requests' access.
    pub fn reading_for(mut self, groups: BTreeMap<String, Vec<String>>) -> Retrieve {
        self.groups = groups;
        self
    }

    async fn execute(
        &self,
        intent: &SearchIntent,
        literals: &[String],
        max: u32,
        access: &Access,
    ) -> Result<RetrievalResult, Failure> {
        let r = &self.retriever;
        let documents = intent.entity_type.is_document();
        let filter = if documents {
            r.parse_filter(&intent.filters)
        } else {
            r.parse_entity_filter(&intent.entity_type, &intent.filters)
        }
        .map_err(Failure::Invalid)?
        .readable_by(access);
        let limit = intent.limit.unwrap_or(self.top_k).clamp(1, max) as usize;
        let query = intent.query.as_deref().map(str::trim).filter(|q| !q.is_empty());
        // An entity search's filter always holds its type, so "nothing to search for" is judged on the intent.
        if query.is_none() && intent.filters.is_empty() {
            return Err(Failure::Invalid("a search intent needs a query or a filter".into()));
        }
        let exact: &[String] = if documents { literals } else { &[] };
        let cached = self.cached(intent, limit, exact, access).await;
        if let Some((_, _, Some(hits))) = &cached {
            return Ok(result(hits.clone(), true));
        }
        let found = match (query, documents) {
            (Some(query), true) if !exact.is_empty() => r.search_exact(query, exact, &filter, limit).await.map(found),
            (Some(query), true) => r.search_found(query, &filter, limit).await,
            (Some(query), false) => r.search_entities(query, &filter, limit).await,
            (None, true) => r.fetch(&filter, limit).await.map(found),
            (None, false) => r.fetch_entities(&filter, limit).await.map(found),
        }
        .map_err(Failure::Backend)?;
        // A degraded search (BM25 only) is not cached: the full one comes back with the embeddings.
        if let (Some(cache), Some((key, generation, None)), None) = (&self.cache, cached, &found.degraded) {
            cache.put(key, generation, found.hits.clone());
        }
        let mut out = result(found.hits, false);
        out.degraded.extend(found.degraded);
        Ok(out)
    }

    /// The cache key, the index generation and the cached hits, when this search may use the cache. A store
    /// that cannot say the generation turns the cache off for this search rather than risk stale hits.
    async fn cached(
        &self,
        intent: &SearchIntent,
        limit: usize,
        exact: &[String],
        access: &Access,
    ) -> Option<(String, u64, Option<Vec<Hit>>)> {
        let cache = self.cache.as_ref()?;
        let key = cache.key(intent, limit, exact, access)?;
        let generation = match self.generation.current().await {
            Ok(g) => g,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the index generation: retrieval cache bypassed");
                return None;
            }
        };
        let hits = cache.get(&key, generation);
        Some((key, generation, hits))
    }

    /// The `database_stats` tool: one card saying what the corpus and the graph hold, of what `access` may read.
    async fn database_stats(&self, access: &Access) -> anyhow::Result<RetrievalResult> {
        let r = &self.retriever;
        let readable = PayloadFilter::default().readable_by(access);
        let chunks = r.index.count(&readable).await?;
        let entities = r.entities.count(&readable).await?;
        let mut metadata = JsonMap::new();
        metadata.insert("chunks".into(), chunks.into());
        metadata.insert("entity_names_indexed".into(), entities.into());
        let mut text = String::new();
        match &r.graph {
            Some(graph) => {
                let stats = graph.stats(access).await?;
                let documents = stats.entities_by_type.get("document").copied().unwrap_or(0);
                let by_type: Vec<String> = stats
                    .entities_by_type
                    .iter()
                    .filter(|(t, _)| *t != "document")
                    .map(|(t, n)| format!("{n} {t}"))
                    .collect();
                let edges: u64 = stats.edges_by_relation.values().sum();
                text.push_str(&format!("The corpus holds {documents} documents in {chunks} indexed chunks. "));
                let total: u64 = stats.entities_by_type.iter().filter(|(t, _)| *t != "document").map(|(_, n)| n).sum();
                text.push_str(&format!(
                    "The entity graph holds {total} entities ({}) and {edges} edges. ",
                    by_type.join(", ")
                ));
                metadata.insert("documents".into(), documents.into());
                metadata.insert("entities_by_type".into(), serde_json::to_value(&stats.entities_by_type)?);
                metadata.insert("edges_by_relation".into(), serde_json::to_value(&stats.edges_by_relation)?);
            }
            None => text.push_str(&format!("The corpus holds {chunks} indexed chunks. ")),
        }
        text.push_str(&format!("The collections are documents ({chunks} chunks) and entities ({entities} names)."));
        let hit = Hit {
            id: DATABASE_STATS_ID.into(),
            doc_id: DATABASE_STATS_ID.into(),
            title: "Database statistics".into(),
            text,
            score: 1.0,
            metadata,
        };
        Ok(result(vec![hit], false))
    }
}

fn found(hits: Vec<Hit>) -> Found {
    Found { hits, degraded: None }
}

fn result(hits: Vec<Hit>, from_cache: bool) -> RetrievalResult {
    RetrievalResult {
        summary: summarize(&hits),
        count: hits.len() as u32,
        raw_data: hits,
        from_cache,
        degraded: Vec::new(),
    }
}

fn summarize(hits: &[Hit]) -> String {
    if hits.is_empty() {
        return "no results".into();
    }
    hits.iter().map(|h| format!("{} ({:.2})", h.title, h.score)).collect::<Vec<_>>().join("; ")
}

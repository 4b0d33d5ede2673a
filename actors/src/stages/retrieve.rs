//! Retrieve: executes a `qdrant_search` action with the hybrid [`Retriever`] (dense + BM25, RRF, rerank).
//! `entity_type` picks the collection: documents, or the entity collection restricted to that type (entity
//! resolution). Filters are typed payload filters; an `id` filter without a query is an ID lookup. An invalid
//! intent becomes a failed action result that the planner can react to, not a crash.

use std::{sync::Arc, time::Instant};

use async_trait::async_trait;
use sleuth_messages::{
    Action, ActionResult, EntityType, ErrorKind, ErrorResponse, Hit, LoopState, RetrievalResult, SearchIntent, Stage,
    WorkItem,
};

use super::StageLogic;
use crate::{machine, retrieval::Retriever};

pub struct Retrieve {
    pub retriever: Arc<Retriever>,
    /// Hits per search when the intent does not say.
    pub top_k: u32,
}

#[async_trait]
impl StageLogic for Retrieve {
    fn stage(&self) -> Stage {
        Stage::Retrieve
    }

    async fn apply(&self, state: &LoopState, item: &WorkItem) -> anyhow::Result<LoopState> {
        let slot = item.envelope.step;
        let Some(Action::QdrantSearch { search_intent }) = machine::current_action(state, slot) else {
            anyhow::bail!("slot {slot} of turn {} is not a qdrant_search", state.turn);
        };
        let started = Instant::now();
        let max = state.caps.max_hits_per_search.max(1);
        let result = match self.execute(search_intent, max).await {
            Ok(result) => ActionResult::Retrieval(result),
            Err(Failure::Invalid(message)) => {
                ActionResult::Failed(ErrorResponse::new(ErrorKind::InvalidInput, message))
            }
            Err(Failure::Backend(err)) => return Err(err),
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
    async fn execute(&self, intent: &SearchIntent, max: u32) -> Result<RetrievalResult, Failure> {
        let r = &self.retriever;
        let documents = intent.entity_type == EntityType::Document;
        let filter = if documents { r.parse_filter(&intent.filters) } else { r.parse_entity_filter(intent.entity_type, &intent.filters) }
            .map_err(Failure::Invalid)?;
        let limit = intent.limit.unwrap_or(self.top_k).clamp(1, max) as usize;
        let query = intent.query.as_deref().map(str::trim).filter(|q| !q.is_empty());
        // An entity search's filter always holds its type, so "nothing to search for" is judged on the intent.
        if query.is_none() && intent.filters.is_empty() {
            return Err(Failure::Invalid("a search intent needs a query or a filter".into()));
        }
        let hits = match (query, documents) {
            (Some(query), true) => r.search(query, &filter, limit).await,
            (Some(query), false) => r.search_entities(query, &filter, limit).await,
            (None, true) => r.fetch(&filter, limit).await,
            (None, false) => r.fetch_entities(&filter, limit).await,
        }
        .map_err(Failure::Backend)?;
        Ok(RetrievalResult { summary: summarize(&hits), count: hits.len() as u32, raw_data: hits })
    }
}

fn summarize(hits: &[Hit]) -> String {
    if hits.is_empty() {
        return "no results".into();
    }
    hits.iter().map(|h| format!("{} ({:.2})", h.title, h.score)).collect::<Vec<_>>().join("; ")
}

//! What the executors return: [`RetrievalResult`] and [`GraphResult`] cards (seed 000 §2 B, B2).

use serde::{Deserialize, Serialize};

use crate::{JsonMap, intent::EntityRef};

/// The id of the card the `database_stats` tool writes (the documents, chunks, entities and edges a requester may
/// read): the retrieve stage writes it, the grader and synthesizer recognise it.
pub const DATABASE_STATS_ID: &str = "sleuth:database_stats";

/// One retrieved passage. `id` is the chunk's id, `doc_id` the document it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub id: String,
    pub doc_id: String,
    pub title: String,
    pub text: String,
    #[serde(deserialize_with = "crate::finite::f32")]
    pub score: f32,
    #[serde(default, skip_serializing_if = "JsonMap::is_empty")]
    pub metadata: JsonMap,
}

/// The vector index's answer to one search intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievalResult {
    /// Human-readable summary of the hits, for logs and LLM context.
    pub summary: String,
    pub raw_data: Vec<Hit>,
    pub count: u32,
    /// Served by the retrieval cache rather than the index.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_cache: bool,
    /// A backend failed and the search ran without it (embeddings down: BM25 only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<crate::Degradation>,
}

/// An ordered chain of nodes and the relations between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphPath {
    pub nodes: Vec<EntityRef>,
    pub rels: Vec<String>,
}

/// The graph stage's answer to one graph intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphResult {
    pub summary: String,
    #[serde(default)]
    pub paths: Vec<GraphPath>,
    #[serde(default)]
    pub node_ids: Vec<EntityRef>,
    pub count: u32,
    #[serde(default, skip_serializing_if = "JsonMap::is_empty")]
    pub meta: JsonMap,
    /// What the traversal found, as citable statements: one per path ("Monkey D. Luffy appears alongside
    /// Nami") and one per reached entity with the edge that reached it. They become cards like search hits;
    /// `doc_id` is the entity the statement is about, `metadata.entity_type` its type. Document links
    /// (`mentions`) produce none: the documents themselves are the evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Hit>,
}

/// The retrieval cache's counters, as `nats micro stats sleuth-retrieve` and `sleuth eval` show them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheStats {
    pub entries: u64,
    pub capacity: u64,
    pub ttl_s: u64,
    pub hits: u64,
    pub misses: u64,
    /// Lookups skipped because the search had filters (or no query).
    pub bypassed: u64,
    /// Times the index generation moved and the cache was emptied.
    pub invalidations: u64,
    pub generation: u64,
}

impl CacheStats {
    pub fn hit_rate(&self) -> f64 {
        let lookups = self.hits + self.misses;
        if lookups == 0 { 0.0 } else { self.hits as f64 / lookups as f64 }
    }
}

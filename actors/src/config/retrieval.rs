//! The `retrieval` and `embedder` sections: which index serves searches and how it fuses and reranks, and which
//! embedder makes the dense vectors.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which vector index backend serves the retrieve stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexBackend {
    /// Qdrant's engine in-process (qdrant-edge), under the data directory.
    Edge,
    /// A Qdrant server over gRPC at `retrieval.qdrant_url`.
    Qdrant,
}

/// How fused candidates are reranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RerankKind {
    /// Keep the RRF order.
    None,
    /// The feature reranker (`retrieval/rerank.rs`).
    Features,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetrievalConfig {
    /// Hits per search when the intent does not say.
    pub top_k: u32,
    /// Ingest the bundled demo corpus when the embedded index is empty.
    pub demo_corpus: bool,
    /// Tokens per chunk (of the embedding model's tokenizer) and overlap between chunks at ingestion.
    pub chunk_tokens: usize,
    pub chunk_overlap_tokens: usize,
    pub backend: IndexBackend,
    /// gRPC URL of the Qdrant server when `backend = "qdrant"`, e.g. http://localhost:6334.
    pub qdrant_url: Option<String>,
    /// Environment variable holding the Qdrant API key, if any.
    pub qdrant_api_key_env: String,
    pub collection: String,
    /// The Qdrant collection of entity names and aliases, for entity resolution (in-process: `index/entities`).
    pub entity_collection: String,
    /// RRF constant in Qdrant's formula 1 / (k + rank), rank from 0: Qdrant's default is 2; the paper's 60 is 61.
    pub rrf_k: u32,
    /// Candidates each lane contributes to fusion, and that the reranker sees.
    pub prefetch_limit: usize,
    /// Minimum cosine similarity for dense candidates.
    pub dense_threshold: Option<f32>,
    pub rerank: RerankKind,
    pub rerank_weights: FeatureWeights,
    /// Extra filterable fields, stored under `metadata.<name>` and indexed at start-up: keyword, integer, float, bool.
    pub filter_fields: std::collections::BTreeMap<String, FieldType>,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        RetrievalConfig {
            top_k: 8,
            demo_corpus: true,
            chunk_tokens: 200,
            chunk_overlap_tokens: 40,
            backend: IndexBackend::Edge,
            qdrant_url: None,
            qdrant_api_key_env: "QDRANT_API_KEY".into(),
            collection: "sleuth_documents".into(),
            entity_collection: "sleuth_entities".into(),
            rrf_k: 61,
            prefetch_limit: 200,
            dense_threshold: None,
            rerank: RerankKind::Features,
            rerank_weights: Default::default(),
            filter_fields: Default::default(),
        }
    }
}

/// Which embedder makes the dense vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// all-MiniLM-L6-v2 on candle, from `embedder.model_dir` (fetched on first use).
    Local,
    /// The `/embeddings` endpoint of an OpenAI-compatible server at `embedder.base_url`.
    Openai,
    /// No dense lane: BM25 only.
    None,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbedderConfig {
    pub kind: EmbedderKind,
    /// Where the local model lives; default `$XDG_CACHE_HOME/sleuth/models/all-MiniLM-L6-v2`.
    pub model_dir: Option<PathBuf>,
    /// Fetch the local model on first use when it is missing.
    pub auto_pull: bool,
    /// Vectors kept in the content-hash cache.
    pub cache_entries: usize,
    /// OpenAI-compatible endpoint, e.g. http://localhost:8000/v1.
    pub base_url: Option<String>,
    pub model: String,
    /// Environment variable holding the API key.
    pub api_key_env: String,
    /// Vector length (384 for all-MiniLM-L6-v2).
    pub dim: usize,
    /// Texts per request to the endpoint.
    pub batch: usize,
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        EmbedderConfig {
            kind: EmbedderKind::Local,
            model_dir: None,
            auto_pull: true,
            cache_entries: 10_000,
            base_url: None,
            model: "text-embedding-3-small".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            dim: 384,
            batch: 64,
        }
    }
}

/// Weights of the feature reranker's features (`retrieval/rerank.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FeatureWeights {
    pub fused: f32,
    pub dense: f32,
    pub title: f32,
    pub bridge: f32,
    pub link: f32,
}

impl Default for FeatureWeights {
    fn default() -> Self {
        FeatureWeights { fused: 1.0, dense: 1.0, title: 1.5, bridge: 0.6, link: 0.6 }
    }
}

/// The type of a filterable payload field; each gets a payload index of the same type at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    Keyword,
    Integer,
    Float,
    Bool,
}

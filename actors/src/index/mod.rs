//! The vector index behind the retrieve stage: the [`VectorIndex`] trait, its typed [`HitFilter`], and the
//! embedded qdrant-edge backend. The Qdrant server backend and dense vectors arrive with the retrieval issue.

mod edge;

pub use edge::EdgeIndex;

use async_trait::async_trait;
use sleuth_messages::{Hit, JsonMap};

/// One chunk of a document, as stored in the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub doc_id: String,
    /// Position of the chunk within its document.
    pub index: u32,
    /// How many chunks the document has.
    pub of: u32,
    pub title: String,
    pub text: String,
    /// Hash of the document's whole content, so unchanged documents are skipped on re-ingestion.
    pub doc_hash: String,
    pub metadata: JsonMap,
}

impl Chunk {
    /// Stable id of the chunk: `<doc_id>#<index>`.
    pub fn id(&self) -> String {
        format!("{}#{}", self.doc_id, self.index)
    }
}

/// Payload filters a search intent may carry. Anything else is rejected with a message naming the field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HitFilter {
    /// Restrict to these documents (`id` or `doc_id` in the intent).
    pub doc_ids: Vec<String>,
}

impl HitFilter {
    pub const FIELDS: &'static [&'static str] = &["id", "doc_id"];

    pub fn is_empty(&self) -> bool {
        self.doc_ids.is_empty()
    }

    /// Parses `SearchIntent.filters`. Values must be a string or an array of strings.
    pub fn parse(filters: &JsonMap) -> Result<HitFilter, String> {
        let mut filter = HitFilter::default();
        for (key, value) in filters {
            if !Self::FIELDS.contains(&key.as_str()) {
                return Err(format!("unknown filter field '{key}', allowed: {}", Self::FIELDS.join(", ")));
            }
            let ids = match value {
                serde_json::Value::String(s) => vec![s.clone()],
                serde_json::Value::Array(items) => items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string).ok_or_else(|| format!("filter '{key}' must hold strings")))
                    .collect::<Result<_, _>>()?,
                _ => return Err(format!("filter '{key}' must be a string or an array of strings")),
            };
            filter.doc_ids.extend(ids);
        }
        Ok(filter)
    }
}

/// What ingestion did with one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upserted {
    Unchanged,
    Inserted,
    Replaced,
}

#[async_trait]
pub trait VectorIndex: Send + Sync + 'static {
    /// Best `limit` chunks for `query`, restricted by `filter`.
    async fn search(&self, query: &str, filter: &HitFilter, limit: usize) -> anyhow::Result<Vec<Hit>>;
    /// The chunks of the given documents, in document order.
    async fn fetch(&self, filter: &HitFilter, limit: usize) -> anyhow::Result<Vec<Hit>>;
    /// Stores one document's chunks, replacing its old ones; does nothing when its hash is unchanged.
    async fn upsert_document(&self, chunks: Vec<Chunk>) -> anyhow::Result<Upserted>;
    /// Makes writes durable.
    async fn flush(&self) -> anyhow::Result<()>;
    async fn count(&self) -> anyhow::Result<usize>;
}

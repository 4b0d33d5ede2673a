//! What the index stores: a document's chunks as points (their ids, vectors and payload), what a search returns,
//! and how a stored payload reads back as a hit or as what is stored for a document. Both backends write and read
//! the same points.

use serde_json::{Value, json};
use sleuth_messages::{Hit, JsonMap};
use uuid::Uuid;

use super::{READERS, SparseVector};

/// Namespace for chunk point ids (UUIDv5 of `<doc_id>#<index>`).
const POINT_NAMESPACE: Uuid = Uuid::from_u128(0x5e1e_7f00_0000_4000_8000_0000_0000_0001);

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
    /// Who may read the chunk (`access::Ownership::readers`): empty when it is shared with everyone.
    pub readers: Vec<String>,
}

impl Chunk {
    /// Stable id of the chunk: `<doc_id>#<index>`.
    pub fn id(&self) -> String {
        format!("{}#{}", self.doc_id, self.index)
    }

    /// The point id of the chunk.
    pub fn point_id(&self) -> Uuid {
        point_uuid(&self.id())
    }

    /// What the sparse and dense lanes see: the title, then the text.
    pub fn embedding_text(&self) -> String {
        format!("{}\n{}", self.title, self.text)
    }
}

pub fn point_uuid(chunk_id: &str) -> Uuid {
    Uuid::new_v5(&POINT_NAMESPACE, chunk_id.as_bytes())
}

/// A chunk ready to store: its vectors, and the id of the embedder that made the dense one (`""` for none).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub chunk: Chunk,
    pub dense: Option<Vec<f32>>,
    pub sparse: SparseVector,
    pub embedder: String,
}

impl Point {
    pub fn payload(&self) -> Value {
        let c = &self.chunk;
        json!({
            "chunk_id": c.id(), "doc_id": c.doc_id, "chunk": c.index, "of": c.of, "title": c.title, "text": c.text,
            "doc_hash": c.doc_hash, "embedder": self.embedder, "metadata": c.metadata, READERS: c.readers,
        })
    }
}

/// The distinct documents these points belong to, sorted.
pub fn doc_ids_of(points: &[Point]) -> Vec<String> {
    let mut ids: Vec<String> = points.iter().map(|p| p.chunk.doc_id.clone()).collect();
    ids.sort();
    ids.dedup();
    ids
}

/// What the index holds for one document: enough to decide whether re-ingestion has anything to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocState {
    pub doc_hash: String,
    pub of: u32,
    pub embedder: String,
    /// Who may read it (empty: shared).
    pub readers: Vec<String>,
}

/// A search result with the dense vector of its chunk when the plan asked for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub hit: Hit,
    pub dense: Option<Vec<f32>>,
}

/// Rebuilds a [`Hit`] from a stored payload (as JSON).
pub fn hit_from_payload(map: &serde_json::Map<String, Value>, score: f32) -> Option<Hit> {
    let get = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_string);
    let metadata: JsonMap = map
        .get("metadata")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    Some(Hit {
        id: get("chunk_id")?,
        doc_id: get("doc_id")?,
        title: get("title")?,
        text: get("text")?,
        score,
        metadata,
    })
}

/// Reads a [`DocState`] from the payload of a document's first chunk.
pub fn doc_state_from_payload(map: &serde_json::Map<String, Value>) -> Option<DocState> {
    Some(DocState {
        doc_hash: map.get("doc_hash")?.as_str()?.to_string(),
        of: map.get("of")?.as_u64()? as u32,
        embedder: map.get("embedder").and_then(Value::as_str).unwrap_or("").to_string(),
        readers: map
            .get(READERS)
            .and_then(Value::as_array)
            .map(|keys| keys.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default(),
    })
}

/// Sorts hits of whole documents into reading order: by document, then chunk position.
pub fn document_order(hits: &mut [Hit]) {
    hits.sort_by(|a, b| (&a.doc_id, a.id.len(), &a.id).cmp(&(&b.doc_id, b.id.len(), &b.id)));
}

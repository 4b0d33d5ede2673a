//! What the executors return: [`RetrievalResult`] and [`GraphResult`] cards (seed 000 §2 B, B2).

use serde::{Deserialize, Serialize};

use crate::{intent::EntityRef, JsonMap};

/// One retrieved passage. `id` is the chunk's id, `doc_id` the document it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub id: String,
    pub doc_id: String,
    pub title: String,
    pub text: String,
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

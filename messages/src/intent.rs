//! What the planner asks the executors to do: [`SearchIntent`] for the vector index, [`GraphIntent`] for the graph (seed 000 §2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonMap;

/// The collection an intent targets. Documents are passages; the others are the entity graph's node types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntityType {
    Document,
    Anime,
    Manga,
    Character,
    Episode,
}

impl EntityType {
    pub const ALL: [EntityType; 5] =
        [EntityType::Document, EntityType::Anime, EntityType::Manga, EntityType::Character, EntityType::Episode];

    /// The type named `name` (its `as_str` form), if any.
    pub fn parse(name: &str) -> Option<EntityType> {
        EntityType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EntityType::Document => "document",
            EntityType::Anime => "anime",
            EntityType::Manga => "manga",
            EntityType::Character => "character",
            EntityType::Episode => "episode",
        }
    }
}

/// A canonical reference to one entity; `id` is its UUID (or document id for documents).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct EntityRef {
    pub entity_type: EntityType,
    pub id: String,
}

/// Structured instruction for the retrieve stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchIntent {
    /// Short operational reason, for logs; never chain-of-thought.
    pub rationale: String,
    pub entity_type: EntityType,
    /// Text to search for; `None` when the intent is a pure ID lookup through `filters.id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_query: Option<String>,
    /// Payload filters, e.g. `{"id": ["doc-1"]}`; validated by the retrieve stage, never passed through blindly.
    #[serde(default, skip_serializing_if = "JsonMap::is_empty")]
    pub filters: JsonMap,
    /// How many hits to return; the retrieve stage clamps it to its own maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

impl SearchIntent {
    /// A text search over the document collection, with no filters and the executor's default limit.
    pub fn documents(rationale: impl Into<String>, query: impl Into<String>) -> SearchIntent {
        SearchIntent {
            rationale: rationale.into(),
            entity_type: EntityType::Document,
            query: Some(query.into()),
            image_query: None,
            filters: JsonMap::new(),
            limit: None,
        }
    }
}

/// The bounded graph primitives (seed 000 §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GraphQueryType {
    Neighbors,
    KHop,
    Path,
    Compare,
}

/// Safety limits a graph intent asks for; the graph stage clamps them to its own hard caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GraphLimits {
    #[serde(default = "GraphLimits::default_max_results")]
    pub max_results: u32,
    #[serde(default = "GraphLimits::default_max_fanout_per_hop")]
    pub max_fanout_per_hop: u32,
}

impl GraphLimits {
    fn default_max_results() -> u32 {
        50
    }
    fn default_max_fanout_per_hop() -> u32 {
        50
    }
}

impl Default for GraphLimits {
    fn default() -> Self {
        GraphLimits { max_results: 50, max_fanout_per_hop: 50 }
    }
}

/// Structured instruction for the graph stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GraphIntent {
    pub rationale: String,
    pub query_type: GraphQueryType,
    pub start: EntityRef,
    /// Required for `path` and `compare`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<EntityRef>,
    #[serde(default = "GraphIntent::default_max_hops")]
    pub max_hops: u32,
    /// Relations to traverse; must come from the configured allowlist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edge_types: Vec<String>,
    #[serde(default, skip_serializing_if = "JsonMap::is_empty")]
    pub filters: JsonMap,
    #[serde(default)]
    pub limits: GraphLimits,
}

impl GraphIntent {
    fn default_max_hops() -> u32 {
        3
    }
}

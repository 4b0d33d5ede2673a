//! What the planner asks the executors to do: [`SearchIntent`] for the vector index, [`GraphIntent`] for the graph (seed 000 §2).

use std::{borrow::Cow, fmt};

use schemars::{
    JsonSchema,
    r#gen::SchemaGenerator,
    schema::{InstanceType, Metadata, Schema, SchemaObject, StringValidation},
};
use serde::{Deserialize, Serialize};

use crate::JsonMap;

/// The collection an intent targets: `document` for passages, else one of the entity graph's node types as the
/// ingested graph names them ("anime", "city", "person"). Open, so a deployment's graph brings its own types; a
/// lowercase identifier (`[a-z][a-z0-9_]*`, at most [`EntityType::MAX_LEN`] bytes), checked when decoded. On the
/// wire it is the bare string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EntityType(Cow<'static, str>);

impl EntityType {
    /// Passages of the document collection.
    pub const DOCUMENT: EntityType = EntityType(Cow::Borrowed("document"));
    /// Longest type name accepted, in bytes.
    pub const MAX_LEN: usize = 32;

    /// The type named `name`, if `name` is a lowercase identifier.
    pub fn parse(name: &str) -> Option<EntityType> {
        let mut chars = name.chars();
        let valid = name.len() <= Self::MAX_LEN
            && chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        valid.then(|| EntityType(Cow::Owned(name.to_string())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_document(&self) -> bool {
        *self == EntityType::DOCUMENT
    }
}

impl fmt::Display for EntityType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for EntityType {
    type Error = String;

    fn try_from(name: String) -> Result<EntityType, String> {
        EntityType::parse(&name)
            .ok_or_else(|| format!("invalid entity type {name:?}: expected a lowercase identifier of at most 32 bytes"))
    }
}

impl From<EntityType> for String {
    fn from(t: EntityType) -> String {
        t.0.into_owned()
    }
}

impl JsonSchema for EntityType {
    fn schema_name() -> String {
        "EntityType".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        SchemaObject {
            metadata: Some(Box::new(Metadata {
                description: Some("\"document\", or one of the entity graph's types".into()),
                ..Default::default()
            })),
            instance_type: Some(InstanceType::String.into()),
            string: Some(Box::new(StringValidation {
                max_length: Some(Self::MAX_LEN as u32),
                pattern: Some("^[a-z][a-z0-9_]*$".into()),
                ..Default::default()
            })),
            ..Default::default()
        }
        .into()
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
            entity_type: EntityType::DOCUMENT,
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

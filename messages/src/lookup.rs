//! The lanes beside the loop (seed 000 §1.1): [`SearchRequest`] is typeahead over entity names
//! (`sleuth.v1.search`), [`HydrateRequest`] fetches many entities by id in one query (`sleuth.v1.hydrate`), the
//! batched loader a backend needs. Both answer with an [`EntitiesReply`] and never enter the agent loop.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{JsonMap, error::ErrorResponse, intent::EntityRef, intent::EntityType};

/// Longest typeahead text accepted, in characters.
pub const MAX_SEARCH_CHARS: usize = 200;
/// Most ids one hydration may ask for.
pub const MAX_HYDRATE_IDS: usize = 1_000;

/// Typeahead: entities whose name or alias starts with (or resembles) `text`, most popular first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchRequest {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity_type: Option<EntityType>,
    /// At most this many (default 10, clamped to 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// Batched lookup by id; unknown ids are left out of the reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HydrateRequest {
    pub ids: Vec<EntityRef>,
}

/// One entity as the lanes return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EntityRecord {
    pub entity: EntityRef,
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    #[serde(default)]
    #[serde(deserialize_with = "crate::finite::f64")]
    pub popularity: f64,
    #[serde(default, skip_serializing_if = "JsonMap::is_empty")]
    pub attributes: JsonMap,
}

/// The answer of either lane: the entities, or why the request was refused.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct EntitiesReply {
    #[serde(default)]
    pub entities: Vec<EntityRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorResponse>,
}

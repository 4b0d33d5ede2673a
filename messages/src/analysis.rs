//! The question as it enters ([`AskRequest`]) and as intake understood it ([`QueryAnalysis`]; seed 001 §1, seed 003 §3).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::step::ClarifyingQuestion;

/// What a client sends to `sleuth.v1.ask`. Only `query` is required, so `{"query":"..."}` works from the `nats` CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AskRequest {
    pub query: String,
    /// A client-chosen id (UUIDv7 recommended). Re-sending the same id does not start a second request,
    /// and lets a client subscribe to the request's events before sending it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<uuid::Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Overrides the route's turn cap; clamped to the server's maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Overrides the default time budget, in milliseconds; clamped to the server's maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Absent means the current version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u16>,
    /// The conversation so far as the client keeps it, oldest first (a chat client sends its whole history with
    /// each turn). When given, a follow-up is resolved against it, whether or not sleuth saw those turns; at most
    /// [`MAX_HISTORY_TURNS`] of at most [`MAX_HISTORY_TURN_BYTES`] each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<PriorTurn>,
}

/// Most turns an [`AskRequest`]'s history may hold; a client keeps the most recent ones.
pub const MAX_HISTORY_TURNS: usize = 32;
/// Longest turn of a history, in bytes.
pub const MAX_HISTORY_TURN_BYTES: usize = 8192;

/// One earlier message of a conversation: what the user asked, or what was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PriorTurn {
    pub role: TurnRole,
    pub content: String,
}

/// Who wrote a [`PriorTurn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnRole {
    User,
    Assistant,
}

impl PriorTurn {
    pub fn user(content: impl Into<String>) -> PriorTurn {
        PriorTurn { role: TurnRole::User, content: content.into() }
    }

    pub fn assistant(content: impl Into<String>) -> PriorTurn {
        PriorTurn { role: TurnRole::Assistant, content: content.into() }
    }
}

impl AskRequest {
    pub fn new(query: impl Into<String>) -> AskRequest {
        AskRequest {
            query: query.into(),
            request_id: None,
            conversation_id: None,
            max_turns: None,
            timeout_ms: None,
            schema_version: None,
            history: Vec::new(),
        }
    }
}

/// The classifier's query types (seed 001).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueryType {
    Factual,
    Relational,
    Comparative,
    Exploratory,
    Procedural,
    Analytical,
    Unknown,
}

/// Which path a question takes (seed 001 routing thresholds 0.35 / 0.55).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    Fast,
    Enhanced,
    Agent,
    Clarify,
}

/// Every factor of the complexity score, so a routing decision can be explained (seed 001 §1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComplexityScore {
    #[serde(deserialize_with = "crate::finite::f32")]
    pub score: f32,
    #[serde(deserialize_with = "crate::finite::f32")]
    pub query_type: f32,
    #[serde(deserialize_with = "crate::finite::f32")]
    pub entity_count: f32,
    #[serde(deserialize_with = "crate::finite::f32")]
    pub subquestion_count: f32,
    #[serde(deserialize_with = "crate::finite::f32")]
    pub keyword_matches: f32,
    #[serde(deserialize_with = "crate::finite::f32")]
    pub low_confidence: f32,
    pub reason: String,
    /// The overrides that raised the score or the route, e.g. `database_meta`, `ambiguous`, `multi_hop_relation`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
}

/// How much each retriever counts for a question (seed 001 §3): the document index and the entity graph. A
/// retriever under [`RetrieverWeights::SKIP_BELOW`] is not run; a retriever whose results come back with low
/// confidence hands [`RetrieverWeights::SHIFT`] of its weight to the other.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RetrieverWeights {
    #[serde(deserialize_with = "crate::finite::f32")]
    pub vector: f32,
    #[serde(deserialize_with = "crate::finite::f32")]
    pub graph: f32,
}

impl RetrieverWeights {
    pub const SKIP_BELOW: f32 = 0.15;
    pub const SHIFT: f32 = 0.3;

    pub fn runs_vector(&self) -> bool {
        self.vector >= Self::SKIP_BELOW
    }

    pub fn runs_graph(&self) -> bool {
        self.graph >= Self::SKIP_BELOW
    }

    /// The document index came back weak: lean on the graph.
    pub fn shifted_to_graph(self) -> RetrieverWeights {
        RetrieverWeights { vector: (self.vector - Self::SHIFT).max(0.0), graph: (self.graph + Self::SHIFT).min(1.0) }
    }

    /// The graph came back weak: lean on the document index.
    pub fn shifted_to_vector(self) -> RetrieverWeights {
        RetrieverWeights { vector: (self.vector + Self::SHIFT).min(1.0), graph: (self.graph - Self::SHIFT).max(0.0) }
    }
}

impl Default for RetrieverWeights {
    /// Seed 001's row for an unknown query type.
    fn default() -> Self {
        RetrieverWeights { vector: 0.6, graph: 0.4 }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueryAnalysis {
    /// The query after normalisation (white space, control characters).
    pub normalized: String,
    /// The query the planner searches with.
    pub rewritten: String,
    pub query_type: QueryType,
    #[serde(deserialize_with = "crate::finite::f32")]
    pub confidence: f32,
    /// Candidate entity names, in order of appearance.
    #[serde(default)]
    pub entities: Vec<String>,
    /// Quoted strings and other literals that must match exactly.
    #[serde(default)]
    pub literal_terms: Vec<String>,
    /// Content words of the question (no stop words), lowercase.
    #[serde(default)]
    pub keywords: Vec<String>,
    #[serde(default)]
    pub subquestions: Vec<String>,
    pub complexity: ComplexityScore,
    pub route: Route,
    #[serde(default)]
    pub weights: RetrieverWeights,
    /// A database meta-question ("how many documents?"), answered by the `database_stats` action.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub meta_question: bool,
    /// What to ask the user back on the clarify route: one to three questions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clarifying_questions: Vec<ClarifyingQuestion>,
    /// How the conversation's earlier turns changed the question, e.g. `his → Lothair II's`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved: Vec<String>,
    /// How many links the question chains before its answer, read by intake from its structure: "Where was the
    /// director of film X born?" has one, "the county of the city where X was born" two, a question about what it
    /// names none. Absent in states written before intake recorded it (readers then read it from `rewritten`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_links: Option<u32>,
}

/// What an LLM rewriter returns for a conversation's follow-up: the question on its own, and its parts when it
/// asks several things.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueryRewrite {
    pub rewritten: String,
    #[serde(default)]
    #[schemars(length(max = 4))]
    pub subquestions: Vec<String>,
}

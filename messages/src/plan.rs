//! [`PlannerState`]: the planner's contract for a whole request, emitted once (seed 003 §2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::step::ClarifyingQuestion;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    DirectAnswer,
    RetrieveThenAnswer,
    ClarifyThenRetrieve,
    DeferOrRefuse,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RoundPurpose {
    Recall,
    Precision,
    Verification,
    GapFilling,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalModeType {
    Bm25,
    Vector,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RetrievalMode {
    #[serde(rename = "type")]
    pub mode: RetrievalModeType,
    pub k: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::finite::option_f32")]
    pub alpha: Option<f32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RoundFilters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc_types: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domains: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_range: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rerank {
    pub enabled: bool,
    pub model: String,
    pub rerank_top_k: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RetrievalRound {
    pub round_id: u32,
    pub purpose: RoundPurpose,
    pub query_variants: Vec<String>,
    pub retrieval_modes: Vec<RetrievalMode>,
    #[serde(default)]
    pub filters: RoundFilters,
    pub use_hyde: bool,
    pub rrf: bool,
    pub rerank: Rerank,
    pub max_docs: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LiteralConstraints {
    pub must_preserve_terms: Vec<String>,
    pub must_match_exactly: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AcceptanceCriteria {
    pub min_independent_sources: u32,
    pub require_authoritative_source: bool,
    pub must_cover_entities: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_answer_subquestions: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StopConditions {
    pub max_rounds: u32,
    pub max_total_docs: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::finite::option_f32")]
    pub confidence_threshold: Option<f32>,
    pub no_new_information_rounds: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AnswerRequirements {
    pub format: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation_style: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Budget {
    pub max_tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sensitivity {
    Public,
    Internal,
    Confidential,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Safety {
    pub sensitivity: Sensitivity,
    pub pii_allowed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlannerMeta {
    pub planner_version: String,
    pub rationale_tags: Vec<String>,
}

/// The planner's plan for the request: how to search, when to stop and what counts as success.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlannerState {
    pub goal: String,
    pub strategy: Strategy,
    #[serde(default)]
    pub clarifying_questions: Vec<ClarifyingQuestion>,
    #[schemars(length(max = 3))]
    pub retrieval_rounds: Vec<RetrievalRound>,
    pub literal_constraints: LiteralConstraints,
    pub acceptance_criteria: AcceptanceCriteria,
    pub stop_conditions: StopConditions,
    pub answer_requirements: AnswerRequirements,
    pub budget: Budget,
    pub safety: Safety,
    pub planner_meta: PlannerMeta,
}

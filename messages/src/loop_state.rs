//! [`LoopState`]: one request's durable record, stored in the `sleuth_loops` KV bucket (carried by the work that
//! commits it) and updated with compare-and-swap.
//!
//! It is a wire type because it is serialised into the store; the transitions that change it live in the
//! actors crate (`machine/`), as plain functions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{
    analysis::{AskRequest, ComplexityScore, QueryAnalysis, Route},
    codec::Encoding,
    error::ErrorResponse,
    plan::PlannerState,
    report::SufficiencyReport,
    response::{AgentResponse, TerminationReason},
    result::{GraphResult, Hit, RetrievalResult},
    step::NextStep,
};

/// Where the final answer goes besides the events stream: the requester's reply inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyTo {
    pub subject: String,
    pub encoding: Encoding,
}

/// The caps in force for this request, fixed at intake so every replica enforces the same ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caps {
    pub max_turns: u32,
    pub no_new_information_rounds: u32,
    pub max_zero_result_steps: u32,
    /// Most hits one search may return.
    pub max_hits_per_search: u32,
    pub token_budget: u32,
}

/// Counters that must survive redelivery and restarts, which is why they live in the state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Consecutive turns whose actions all returned nothing.
    pub zero_result_steps: u32,
    /// Consecutive turns that added no new card.
    pub no_new_information_rounds: u32,
    /// LLM tokens (input and output) spent on this request, retries and repairs included.
    pub tokens_used: u32,
    /// Work messages that arrived after their effect was already recorded.
    pub duplicates_skipped: u32,
    /// Agent steps that fell back to the deterministic agent because the LLM was unavailable, kept giving
    /// invalid output or the token budget was spent. Non-zero marks the answer degraded. Absent when zero, so
    /// states without an LLM encode exactly as before.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub llm_fallbacks: u32,
    /// LLM completions this request received (repairs and the rewriter's included), and the tokens they took in
    /// and gave out; `tokens_used` is what the budget counts. Absent when zero, like `llm_fallbacks`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub llm_calls: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub llm_input_tokens: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub llm_output_tokens: u32,
    /// Replies sent back to the model because they were not valid JSON or broke the schema or its rules.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub llm_repairs: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Where the loop is. `next_messages` in the actors crate derives what to publish from this alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Waiting for the planner to decide turn `turn`.
    Planning,
    /// Waiting for the executors; `pending` are the action slots not yet recorded.
    Acting { pending: Vec<u32> },
    /// Waiting for the grader to judge turn `turn`.
    Grading,
    /// Waiting for the synthesizer.
    Synthesizing,
    /// Finished; `outcome` is set.
    Done,
}

/// The result of one action slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionResult {
    Retrieval(RetrievalResult),
    Graph(GraphResult),
    /// The executor could not run the action (invalid intent, backend error); the loop continues without it.
    Failed(ErrorResponse),
}

impl ActionResult {
    pub fn hit_count(&self) -> usize {
        match self {
            ActionResult::Retrieval(r) => r.raw_data.len(),
            ActionResult::Graph(g) => g.count as usize,
            ActionResult::Failed(_) => 0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionOutcome {
    pub slot: u32,
    pub result: ActionResult,
    /// How many of the hits became new cards.
    pub new_cards: u32,
    pub elapsed_ms: u64,
}

/// Everything that happened in one turn, appended as it happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    pub turn: u32,
    pub step: NextStep,
    #[serde(default)]
    pub outcomes: Vec<ActionOutcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<SufficiencyReport>,
}

/// A retrieved passage as evidence, numbered in order of arrival. Citations refer to `n`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Card {
    pub n: u32,
    pub turn: u32,
    pub hit: Hit,
    /// The state grew past its budget and this card, far down the ranking, became a handle: `hit.text` is only
    /// its opening (a prefix of the passage), and the whole passage stays in the index under `hit.id`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub compacted: bool,
}

impl Card {
    pub fn new(n: u32, turn: u32, hit: Hit) -> Card {
        Card { n, turn, hit, compacted: false }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Answer(AgentResponse),
    Error(ErrorResponse),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopState {
    pub schema_version: u16,
    pub request_id: Uuid,
    pub request: AskRequest,
    pub analysis: QueryAnalysis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlannerState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<ReplyTo>,
    /// Who asked, as the NATS server vouched for it at intake (`principal.rs`); absent for the deployment's own
    /// account. Only its tenant (or the deployment) may cancel the request or re-send its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<crate::Principal>,
    /// W3C trace context of the request's root span (`sleuth.ask`): the parent of whatever acts on the state
    /// without a message of its own (the deadline watchdog, cancellation, dead letters), and of a hop whose
    /// message lost its headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baggage: Option<String>,
    /// The request arrived without a trace, so intake made up the root span's ids and no client records it:
    /// whoever ends the request records `sleuth.ask` from `created_ms` to `finished_ms`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub records_root_span: bool,
    pub created_ms: u64,
    pub deadline_ms: u64,
    pub caps: Caps,
    /// The current turn (1-based).
    pub turn: u32,
    pub phase: Phase,
    /// Why retrieval stopped, set when the loop enters `Synthesizing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<TerminationReason>,
    #[serde(default)]
    pub turns: Vec<TurnRecord>,
    #[serde(default)]
    pub cards: Vec<Card>,
    #[serde(default)]
    pub counters: Counters,
    /// Backends that failed during the request, each with its fallback, at most one per backend.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<crate::Degradation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_ms: Option<u64>,
}

/// One turn, summarised for clients: what was done and what the grader said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnBrief {
    pub turn: u32,
    pub rationale: String,
    pub actions: Vec<String>,
    pub hits: u32,
    pub new_cards: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sufficient: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grader: Option<String>,
}

/// The reply to `sleuth.v1.ask` and the payload of the `final` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AskReply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<Uuid>,
    pub outcome: Outcome,
    #[serde(default)]
    pub turns: Vec<TurnBrief>,
    #[serde(default)]
    pub elapsed_ms: u64,
    /// The route intake chose, and why (seed 001's debuggable score).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<Route>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complexity: Option<ComplexityScore>,
    /// What the LLM cost the request; absent when no model was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmSpend>,
}

/// A request's LLM spend as the client sees it: completions, tokens, and how many replies had to be repaired or
/// were replaced by the deterministic agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LlmSpend {
    pub calls: u32,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub repairs: u32,
    pub fallbacks: u32,
}

impl LlmSpend {
    /// The spend recorded in `counters`, or `None` when no model was asked and none was missed.
    pub fn of(counters: &Counters) -> Option<LlmSpend> {
        (counters.llm_calls > 0 || counters.llm_fallbacks > 0).then_some(LlmSpend {
            calls: counters.llm_calls,
            input_tokens: counters.llm_input_tokens,
            output_tokens: counters.llm_output_tokens,
            repairs: counters.llm_repairs,
            fallbacks: counters.llm_fallbacks,
        })
    }
}

impl AskReply {
    pub fn error(err: ErrorResponse) -> AskReply {
        AskReply {
            request_id: err.request_id,
            outcome: Outcome::Error(err),
            turns: Vec::new(),
            elapsed_ms: 0,
            route: None,
            complexity: None,
            llm: None,
        }
    }
}

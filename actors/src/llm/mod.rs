//! The LLM behind the planner, grader and synthesizer: one OpenAI-compatible chat client ([`LlmClient`]) with
//! bounded retries, a circuit breaker and a fallback provider, and [`structured`] replies that are parsed,
//! checked and repaired before any stage sees them.
//!
//! Nothing here decides what the loop does. A stage asks for a typed value (a `NextStep`, a
//! `SufficiencyReport`, ...) and gets either that value, already validated, or an [`LlmError`] that tells it
//! whether to fall back to its deterministic twin.

pub mod agent;
mod chat;
pub mod client;
pub mod context;
pub mod modes;
pub mod prompts;
pub mod schema;
pub mod structured;

pub use crate::guard::Breaker;
pub use agent::LlmAgent;
pub use chat::{Agent, ChatMessage, Usage};
pub use client::{ChatReply, LlmClient};
pub use schema::SchemaSpec;
pub use structured::{Structured, StructuredSpec};

/// Why an LLM call gave no usable value. Every variant means: use the deterministic agent and say so.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The circuit is open after repeated failures; no call was made.
    #[error("the LLM circuit is open after repeated failures")]
    CircuitOpen,
    /// 429s, 5xx, timeouts or refused connections outlasted the retries (and the fallback provider).
    #[error("the LLM is unavailable: {0}")]
    Unavailable(String),
    /// The server refused the request itself (a 4xx other than 408/429, or a body that is not a completion).
    #[error("the LLM rejected the request: {0}")]
    Rejected(String),
    /// The reply still broke the schema or its rules after every repair.
    #[error("the LLM's reply stayed invalid after {attempts} attempts: {last}")]
    Invalid { attempts: u32, last: String },
}

//! The LLM behind the planner, grader and synthesizer: one OpenAI-compatible chat client ([`LlmClient`]) with
//! bounded retries, a circuit breaker and a fallback provider, and [`structured`] replies that are parsed,
//! checked and repaired before any stage sees them.
//!
//! Nothing here decides what the loop does. A stage asks for a typed value (a `NextStep`, a
//! `SufficiencyReport`, ...) and gets either that value, already validated, or an [`LlmError`] that tells it
//! whether to fall back to its deterministic twin.

pub mod agent;
pub mod client;
pub mod context;
pub mod modes;
pub mod prompts;
pub mod schema;
pub mod structured;

use serde::Serialize;

pub use crate::guard::Breaker;
pub use agent::LlmAgent;
pub use client::{ChatReply, LlmClient};
pub use schema::SchemaSpec;
pub use structured::{Structured, StructuredSpec};

/// Which agent is calling: picks the per-agent model, temperature, token and time limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Planner,
    Grader,
    Synthesizer,
}

impl Agent {
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Planner => "planner",
            Agent::Grader => "grader",
            Agent::Synthesizer => "synthesizer",
        }
    }
}

/// One chat message as the OpenAI wire format has it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatMessage {
    pub role: &'static str,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage { role: "system", content: content.into() }
    }

    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage { role: "user", content: content.into() }
    }

    pub fn assistant(content: impl Into<String>) -> ChatMessage {
        ChatMessage { role: "assistant", content: content.into() }
    }
}

/// Tokens the server reported, summed over every call of one ask (retries and repairs included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Calls that reached the server and came back with a completion.
    pub calls: u32,
    /// Replies sent back for repair (not valid JSON, off the schema, or breaking a rule).
    pub repairs: u32,
}

impl Usage {
    pub fn total(&self) -> u32 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.calls = self.calls.saturating_add(other.calls);
        self.repairs = self.repairs.saturating_add(other.repairs);
    }

    /// Adds this spend to a request's counters: the budget's `tokens_used` and the figures its reply reports.
    pub fn charge_to(&self, counters: &mut sleuth_messages::Counters) {
        counters.tokens_used = counters.tokens_used.saturating_add(self.total());
        counters.llm_calls = counters.llm_calls.saturating_add(self.calls);
        counters.llm_input_tokens = counters.llm_input_tokens.saturating_add(self.input_tokens);
        counters.llm_output_tokens = counters.llm_output_tokens.saturating_add(self.output_tokens);
        counters.llm_repairs = counters.llm_repairs.saturating_add(self.repairs);
    }
}

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

//! What one chat exchange is made of: the agent that asks, the messages in the OpenAI wire format, and the tokens
//! the server reported for it.

use serde::Serialize;

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

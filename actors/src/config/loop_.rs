//! The `loop` section: the caps every request runs under (turns, time, tokens, size).

use serde::{Deserialize, Serialize};

/// The caps of a request's loop, enforced by the runtime.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoopConfig {
    /// Turn cap of the enhanced route; the fast route takes one pass by construction.
    pub max_turns_standard: u32,
    /// Turn cap of the agent route, and the most any request may ask for.
    pub max_turns_deep: u32,
    pub no_new_information_rounds: u32,
    pub max_zero_result_steps: u32,
    pub max_hits_per_search: u32,
    /// LLM tokens (input and output) one request may spend; 0 means no budget. The deterministic agents spend
    /// none.
    pub token_budget: u32,
    /// Default time budget of a request.
    pub timeout_ms: u64,
    /// Upper bound for a request's own `timeout_ms`.
    pub max_timeout_ms: u64,
    /// Longest accepted question, in bytes.
    pub max_query_bytes: usize,
    /// How long past its deadline a request may go unanswered before the deadline watchdog answers it from what
    /// was gathered (when the stage holding it is down, or too slow).
    pub deadline_grace_ms: u64,
}

impl LoopConfig {
    /// The caps this configuration sets, as the loop's state machine takes them.
    pub fn tiers(&self) -> sleuth_core::machine::Tiers {
        sleuth_core::machine::Tiers {
            max_turns_standard: self.max_turns_standard,
            max_turns_deep: self.max_turns_deep,
            no_new_information_rounds: self.no_new_information_rounds,
            max_zero_result_steps: self.max_zero_result_steps,
            max_hits_per_search: self.max_hits_per_search,
            token_budget: self.token_budget,
        }
    }
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            max_turns_standard: 5,
            max_turns_deep: 10,
            no_new_information_rounds: 2,
            max_zero_result_steps: 3,
            max_hits_per_search: 8,
            token_budget: 100_000,
            timeout_ms: 60_000,
            max_timeout_ms: 300_000,
            max_query_bytes: 4096,
            deadline_grace_ms: 300,
        }
    }
}

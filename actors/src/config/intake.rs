//! The `intake` section: conversations, routing, admission and the retrieval cache.

use serde::{Deserialize, Serialize};

/// Intake: conversations, routing and the retrieval cache (seed 001 §1–2).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IntakeConfig {
    /// How long an idle conversation's turns are kept (the `sleuth_conversations` bucket's TTL).
    pub conversation_ttl_s: u64,
    /// Turns kept per conversation.
    pub conversation_turns: usize,
    /// Send every question down this route instead of the scored one (`sleuth eval --route agent` compares
    /// routing against agent-for-everything). Meta-questions and clarifications keep their own.
    pub force_route: Option<sleuth_messages::Route>,
    /// Retrieval cache entries per retrieve-stage process; 0 turns the cache off.
    pub cache_entries: usize,
    pub cache_ttl_s: u64,
    /// Intake refuses a request with `overloaded` when at least this many work items wait for a planner and,
    /// at the rate planners take work, the request could not start within its time budget. 0 admits everything.
    pub admission_min_backlog: u64,
}

impl Default for IntakeConfig {
    fn default() -> Self {
        IntakeConfig {
            conversation_ttl_s: 1800,
            conversation_turns: 10,
            force_route: None,
            cache_entries: 50,
            cache_ttl_s: 300,
            admission_min_backlog: 64,
        }
    }
}

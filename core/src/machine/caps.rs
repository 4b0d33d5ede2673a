//! The caps that end a loop, enforced in code whatever the planner or model wants.

use sleuth_messages::{Caps, LoopState, Route, TerminationReason};

/// The caps for a new request: the route's turn tier (fast and clarify one pass, enhanced `max_turns_standard`,
/// agent `max_turns_deep`), then the request's own override, clamped to the configured maximum. The fast route
/// stays one pass whatever the request asks: more turns is what the other routes are for.
/// The caps a deployment sets (its `[loop]` configuration): the turn tiers and the per-request limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiers {
    /// Turn cap of the enhanced route.
    pub max_turns_standard: u32,
    /// Turn cap of the agent route, and the most any request may ask for.
    pub max_turns_deep: u32,
    pub no_new_information_rounds: u32,
    pub max_zero_result_steps: u32,
    pub max_hits_per_search: u32,
    /// LLM tokens one request may spend; 0 means no budget.
    pub token_budget: u32,
}

impl Default for Tiers {
    /// The seeds' tiers: standard 5 turns, deep 10.
    fn default() -> Self {
        Tiers {
            max_turns_standard: 5,
            max_turns_deep: 10,
            no_new_information_rounds: 2,
            max_zero_result_steps: 3,
            max_hits_per_search: 8,
            token_budget: 100_000,
        }
    }
}

pub fn caps_for(config: &Tiers, route: Route, requested_turns: Option<u32>) -> Caps {
    let max_turns = match route {
        Route::Fast | Route::Clarify => 1,
        Route::Enhanced => requested_turns.unwrap_or(config.max_turns_standard),
        Route::Agent => requested_turns.unwrap_or(config.max_turns_deep),
    }
    .clamp(1, config.max_turns_deep.max(1));
    Caps {
        max_turns,
        no_new_information_rounds: config.no_new_information_rounds,
        max_zero_result_steps: config.max_zero_result_steps,
        max_hits_per_search: config.max_hits_per_search,
        token_budget: config.token_budget,
    }
}

/// True when the request's token budget (if it has one) is spent.
pub fn budget_spent(state: &LoopState) -> bool {
    state.caps.token_budget > 0 && state.counters.tokens_used >= state.caps.token_budget
}

/// The first cap that the state has reached, in order of precedence, after a turn was graded.
pub fn cap_reached(state: &LoopState, now_ms: u64) -> Option<TerminationReason> {
    if now_ms >= state.deadline_ms {
        return Some(TerminationReason::Deadline);
    }
    if state.counters.zero_result_steps >= state.caps.max_zero_result_steps {
        return Some(TerminationReason::NotFound);
    }
    if state.counters.no_new_information_rounds >= state.caps.no_new_information_rounds {
        // Nothing new because nothing was ever found is "not found", not a plateau.
        let reason =
            if state.cards.is_empty() { TerminationReason::NotFound } else { TerminationReason::NoNewInformation };
        return Some(reason);
    }
    if budget_spent(state) {
        return Some(TerminationReason::Budget);
    }
    if state.turn >= state.caps.max_turns {
        return Some(TerminationReason::NoMatchAfterMaxTurns);
    }
    None
}

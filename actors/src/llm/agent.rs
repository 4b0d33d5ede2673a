//! [`LlmAgent`]: what the LLM-backed planner, grader and synthesizer share: the client, one structured ask over a
//! request's rendered context, and charging what the ask cost to the request's counters in the KV state, so a
//! redelivered or resumed request does not start its budget over.

use std::{sync::Arc, time::Duration};

use sleuth_messages::{Backend, Degradation, LoopState};

use super::{
    Agent, ChatMessage, LlmClient, LlmError, Usage, context,
    schema::schema_of,
    structured::{self, Structured, StructuredSpec},
};
use crate::{machine::budget_spent, telemetry};

#[derive(Clone)]
pub struct LlmAgent {
    pub client: Arc<LlmClient>,
    pub max_repairs: u32,
}

impl LlmAgent {
    /// Asks for a `T` with `prompt` as the system message and the request's context as the user message.
    /// `None` when the request's token budget is spent: the caller uses its deterministic twin.
    pub async fn ask<T: StructuredSpec>(
        &self,
        agent: Agent,
        prompt: &str,
        state: &LoopState,
        extra: &(dyn Fn(&T) -> Result<(), String> + Sync),
    ) -> Option<Structured<T>> {
        let ctx = context::render(state);
        if ctx.compacted {
            tracing::info!(request_id = %state.request_id, agent = agent.as_str(), "context compacted");
        }
        self.ask_with(agent, prompt, ctx.text, schema_of::<T>(), state, extra).await
    }

    /// Asks for a `T` with `prompt` as the system message, `user` as the user message and `schema` (`T`'s own or
    /// a narrower one made for the request) as the reply's form. `None` when the token budget is spent.
    pub async fn ask_with<T: StructuredSpec>(
        &self,
        agent: Agent,
        prompt: &str,
        user: String,
        schema: serde_json::Value,
        state: &LoopState,
        extra: &(dyn Fn(&T) -> Result<(), String> + Sync),
    ) -> Option<Structured<T>> {
        if budget_spent(state) {
            tracing::info!(request_id = %state.request_id, agent = agent.as_str(), "token budget spent: deterministic agent");
            return None;
        }
        let messages = vec![ChatMessage::system(prompt), ChatMessage::user(user)];
        // No call outlives the request, and the planner and grader take at most half of what is left: a slow model
        // leaves the deterministic twin time to search and the synthesizer time to write from what was found.
        let remaining = Duration::from_millis(state.deadline_ms.saturating_sub(telemetry::now_ms()));
        let allowed = match agent {
            Agent::Synthesizer => remaining,
            Agent::Planner | Agent::Grader => remaining / 2,
        };
        let ask = structured::ask_in::<T>(&self.client, agent, messages, schema, self.max_repairs, extra);
        let out = tokio::time::timeout(allowed, ask).await.unwrap_or_else(|_| Structured {
            result: Err(LlmError::Unavailable(format!(
                "no usable reply within {} ms, the {} share of the request's time",
                allowed.as_millis(),
                if allowed == remaining { "whole" } else { "half" }
            ))),
            usage: Usage::default(),
            repairs: Vec::new(),
        });
        if let Err(e) = &out.result {
            tracing::warn!(request_id = %state.request_id, agent = agent.as_str(), error = %e, "LLM gave no usable reply: deterministic agent");
        }
        Some(out)
    }
}

/// `state` with an agent's spend added, before its transition, so the caps see it: tokens, calls and repairs
/// always, and a fallback, with why, when the agent had to use its deterministic twin.
pub fn charge(state: &LoopState, usage: Usage, fell_back: Option<&str>) -> LoopState {
    let mut next = state.clone();
    usage.charge_to(&mut next.counters);
    if let Some(why) = fell_back {
        next.counters.llm_fallbacks = next.counters.llm_fallbacks.saturating_add(1);
        sleuth_messages::degraded::record(&mut next.degraded, Degradation::new(Backend::Llm, why));
    }
    next
}

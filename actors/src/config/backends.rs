//! The `backends` section: how calls to a Qdrant server, an embedding endpoint and the graph are retried and when
//! their circuit breakers open (the LLM has its own, under `llm`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackendsConfig {
    /// Retries of one failed call, after the first attempt.
    pub retries: u32,
    /// First backoff; doubled per retry, plus up to as much again of jitter, capped at `backoff_max_ms`. A
    /// `Retry-After` from an HTTP endpoint replaces it, within the same cap.
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    /// Longest one attempt may take before it counts as failed.
    pub attempt_timeout_ms: u64,
    /// A backend's circuit opens after this many calls in a row failed (retries spent) ...
    pub breaker_failures: u32,
    /// ... and keeps calls out this long before one probe goes through. Meanwhile the loop uses the fallback.
    pub breaker_cooldown_ms: u64,
}

impl Default for BackendsConfig {
    fn default() -> Self {
        BackendsConfig {
            retries: 2,
            backoff_base_ms: 50,
            backoff_max_ms: 1_000,
            attempt_timeout_ms: 5_000,
            breaker_failures: 3,
            breaker_cooldown_ms: 5_000,
        }
    }
}

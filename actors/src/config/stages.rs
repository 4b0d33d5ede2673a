//! The `stages` and `debug` sections: workers per stage and draining, and the knobs tests and demos use.

use serde::{Deserialize, Serialize};

/// How this process runs its stages.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StagesConfig {
    /// Workers per stage in this process.
    pub workers: usize,
    /// On SIGTERM, how long the deliveries in hand may take to finish before the process exits anyway (what is
    /// unfinished is redelivered to another replica). Keep it under the orchestrator's grace period.
    pub shutdown_grace_ms: u64,
    /// A delivery in hand this long means its worker hangs: `/healthz` fails, so the orchestrator restarts the
    /// process (and the delivery goes to another replica). Keep it over `loop.max_timeout_ms`, the longest a
    /// request's calls may take.
    pub hung_after_ms: u64,
}

impl Default for StagesConfig {
    fn default() -> Self {
        StagesConfig { workers: 2, shutdown_grace_ms: 20_000, hung_after_ms: 600_000 }
    }
}

/// Knobs for tests and demos; never needed in production.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebugConfig {
    /// Every stage in this process sleeps this long before its work (to make crash tests land mid-request).
    pub stage_delay_ms: u64,
    /// 0: off. T > 0: the planner, retrieve, graph, grader and synthesizer of this process do null work (one
    /// trivial card per turn, sufficient from turn T on) around the real runtime (`sleuth bench --null-backends`).
    pub null_work_turns: u32,
}

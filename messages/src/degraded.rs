//! [`Degradation`]: a backend that failed while a request ran, and what the loop used instead (seed 002's error
//! tiers). Recorded in the loop state as it happens and copied into the answer, so a degraded answer says so.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The backends a request depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// The vector index (qdrant-edge or a Qdrant server).
    Index,
    /// The embedding model or endpoint.
    Embeddings,
    /// The entity graph (PostgreSQL or SQLite).
    Graph,
    /// The LLM behind the planner, grader, synthesizer or rewriter.
    Llm,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Index => "index",
            Backend::Embeddings => "embeddings",
            Backend::Graph => "graph",
            Backend::Llm => "llm",
        }
    }

    /// What the loop does without this backend.
    pub fn fallback(self) -> &'static str {
        match self {
            Backend::Index => "the other lanes; an answer with no evidence abstains",
            Backend::Embeddings => "BM25 only",
            Backend::Graph => "document search",
            Backend::Llm => "the deterministic agents",
        }
    }
}

/// Most degradations one request records: one per backend is what matters, the bound keeps the state small.
pub const MAX_DEGRADATIONS: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Degradation {
    pub backend: Backend,
    /// Why: the backend's last error, or that its circuit is open.
    pub reason: String,
    /// What was used instead.
    pub fallback: String,
}

impl Degradation {
    pub fn new(backend: Backend, reason: impl Into<String>) -> Degradation {
        let mut reason: String = reason.into();
        if reason.len() > 300 {
            let cut = (0..=300).rev().find(|i| reason.is_char_boundary(*i)).unwrap_or(0);
            reason.truncate(cut);
            reason.push('…');
        }
        Degradation { backend, reason, fallback: backend.fallback().to_string() }
    }
}

/// Adds `d` to `list` unless that backend is already there (the first reason stands), within the bound.
pub fn record(list: &mut Vec<Degradation>, d: Degradation) {
    if list.len() < MAX_DEGRADATIONS && !list.iter().any(|x| x.backend == d.backend) {
        list.push(d);
    }
}

impl std::fmt::Display for Degradation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} unavailable ({}); used {}", self.backend.as_str(), self.reason, self.fallback)
    }
}

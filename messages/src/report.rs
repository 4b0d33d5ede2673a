//! The grader's verdict on the evidence: [`SufficiencyReport`] (seed 000 §B3, seed 002 §5.2, seed 003 acceptance criteria).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One deterministic acceptance check and whether it passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckOutcome {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SufficiencyReport {
    pub sufficient: bool,
    #[serde(deserialize_with = "crate::finite::f32")]
    pub confidence: f32,
    pub rationale: String,
    /// What is missing, in words: for logs and the UI.
    #[serde(default)]
    pub gaps: Vec<String>,
    /// Named things the evidence does not cover yet (entities, literals).
    #[serde(default)]
    pub missing: Vec<String>,
    /// Queries the grader suggests; the planner decides.
    #[serde(default)]
    pub new_queries: Vec<String>,
    /// The deterministic checks that produced this verdict.
    #[serde(default)]
    pub checks: Vec<CheckOutcome>,
    /// True when the latest turn added no card that was not already known.
    #[serde(default)]
    pub no_new_information: bool,
}

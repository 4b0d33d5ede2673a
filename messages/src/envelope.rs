//! The [`Envelope`] every work message carries, the [`Stage`]s, and the [`WorkItem`] a stage consumes.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The protocol version this build writes and accepts.
pub const SCHEMA_VERSION: u16 = 1;

/// A stage of the loop. Each has its own work subject, consumer and actor file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Intake,
    Planner,
    Retrieve,
    Graph,
    Grader,
    Synthesizer,
}

impl Stage {
    pub const ALL: [Stage; 6] =
        [Stage::Intake, Stage::Planner, Stage::Retrieve, Stage::Graph, Stage::Grader, Stage::Synthesizer];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Intake => "intake",
            Stage::Planner => "planner",
            Stage::Retrieve => "retrieve",
            Stage::Graph => "graph",
            Stage::Grader => "grader",
            Stage::Synthesizer => "synthesizer",
        }
    }

    pub fn parse(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Routing and bookkeeping shared by every work message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub schema_version: u16,
    /// UUIDv7, so ids sort by creation time.
    pub request_id: Uuid,
    /// The loop turn this message belongs to (1-based; 0 before planning).
    pub turn: u32,
    /// The action slot within the turn (0 or 1 for parallel actions, 0 otherwise).
    pub step: u32,
    /// Unix milliseconds after which the request must wind down.
    pub deadline_ms: u64,
    /// How many times this message has been delivered, as far as the bus knows.
    pub attempt: u32,
}

/// One unit of work for one stage. What the stage does is derived from the loop state; this only says where to look.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkItem {
    pub envelope: Envelope,
    pub stage: Stage,
}

impl WorkItem {
    /// `Nats-Msg-Id`: `<request_id>:<turn>:<step>:<stage>`, so a re-publish of the same work is deduplicated.
    pub fn msg_id(&self) -> String {
        format!("{}:{}:{}:{}", self.envelope.request_id, self.envelope.turn, self.envelope.step, self.stage)
    }
}

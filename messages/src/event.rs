//! Progress [`Event`]s published to `sleuth.v1.events.<request_id>`, ending with exactly one `final`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{analysis::QueryAnalysis, loop_state::AskReply, report::SufficiencyReport, step::NextStep};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Accepted,
    Planned,
    Retrieved,
    Graded,
    Final,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Accepted => "accepted",
            EventKind::Planned => "planned",
            EventKind::Retrieved => "retrieved",
            EventKind::Graded => "graded",
            EventKind::Final => "final",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventBody {
    Accepted(QueryAnalysis),
    Planned(NextStep),
    /// Cards known after the turn's actions, and how many are new.
    Retrieved {
        cards: u32,
        new_cards: u32,
    },
    Graded(SufficiencyReport),
    Final(AskReply),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    pub request_id: Uuid,
    pub turn: u32,
    pub kind: EventKind,
    pub body: EventBody,
}

impl Event {
    /// `Nats-Msg-Id` for this event: one per (request, turn, kind), so a re-publish is deduplicated.
    pub fn msg_id(&self) -> String {
        format!("{}:{}:0:event.{}", self.request_id, self.turn, self.kind.as_str())
    }
}

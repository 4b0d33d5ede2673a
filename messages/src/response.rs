//! The final answer: [`AgentResponse`] with checked [`Citation`]s and its [`TerminationReason`] (seed 000 §2 C, seed 002 §11).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{JsonMap, intent::EntityRef};

/// Why the loop stopped. Every answer carries one, so a capped run is never mistaken for a confident one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TerminationReason {
    /// The grader judged the evidence sufficient.
    Sufficient,
    /// The planner had nothing left to try.
    PlannerFinal,
    /// `max_turns` was reached before the evidence was sufficient.
    NoMatchAfterMaxTurns,
    /// The request's deadline passed.
    Deadline,
    /// `no_new_information_rounds` consecutive turns added nothing.
    NoNewInformation,
    /// Three steps in a row returned nothing.
    NotFound,
    /// The token budget ran out.
    Budget,
    /// The planner asked the user a question instead of answering.
    Clarification,
    /// The request was cancelled.
    Cancelled,
    /// The fast route: one retrieval pass, then the answer, with no grading loop (seed 001's simple path).
    SinglePass,
}

impl TerminationReason {
    pub fn as_str(self) -> &'static str {
        match self {
            TerminationReason::Sufficient => "sufficient",
            TerminationReason::PlannerFinal => "planner_final",
            TerminationReason::NoMatchAfterMaxTurns => "no_match_after_max_turns",
            TerminationReason::Deadline => "deadline",
            TerminationReason::NoNewInformation => "no_new_information",
            TerminationReason::NotFound => "not_found",
            TerminationReason::Budget => "budget",
            TerminationReason::Clarification => "clarification",
            TerminationReason::Cancelled => "cancelled",
            TerminationReason::SinglePass => "single_pass",
        }
    }

    /// True when the loop stopped because of a cap rather than because it was done.
    pub fn is_cap(self) -> bool {
        !matches!(
            self,
            TerminationReason::Sufficient
                | TerminationReason::PlannerFinal
                | TerminationReason::Clarification
                | TerminationReason::SinglePass
        )
    }
}

/// What a question asks for, and so what shape its short answer has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    Person,
    Place,
    Date,
    Number,
    /// Yes or no.
    YesNo,
    /// One of the things the question named ("X or Y?").
    Choice,
    /// A named thing of another kind: a film, a company, an award.
    Entity,
    /// A short phrase: a cause, a reason, a description.
    Phrase,
}

impl AnswerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerKind::Person => "person",
            AnswerKind::Place => "place",
            AnswerKind::Date => "date",
            AnswerKind::Number => "number",
            AnswerKind::YesNo => "yes_no",
            AnswerKind::Choice => "choice",
            AnswerKind::Entity => "entity",
            AnswerKind::Phrase => "phrase",
        }
    }
}

/// The short answer a reply leads with: `text` as read from the evidence, and the `[n]` of the response's
/// citations that support it (never empty: an answer nothing supports is not given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShortAnswer {
    pub text: String,
    pub kind: AnswerKind,
    pub citations: Vec<u32>,
}

/// `[n]` in the answer is the `n`-th source it cites, numbered by first appearance; `card` is the number of the
/// loop state's card it names. Both are checked, never trusted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Citation {
    pub n: u32,
    pub hit_id: String,
    pub doc_id: String,
    pub title: String,
    /// The card's number in the loop state (0 in answers written before citations were renumbered).
    #[serde(default)]
    pub card: u32,
    /// The section of the document the passage is in (the heading it falls under), when the document has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// The page the passage starts on (1-based), for paged documents (PDF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
}

impl Citation {
    /// Where the passage is, as a reader would name it: "Title › Section, p. 12".
    pub fn place(&self) -> String {
        let mut place = self.title.clone();
        if let Some(section) = self.section.as_deref().filter(|s| *s != self.title) {
            place.push_str(" › ");
            place.push_str(section);
        }
        if let Some(page) = self.page {
            place.push_str(&format!(", p. {page}"));
        }
        place
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentResponse {
    /// The whole reply: the short answer first when there is one, then its supporting sentences, each cited.
    pub answer: String,
    /// The answer itself (an entity, a date, a number, yes or no, or a short phrase) and the citations that support
    /// it. Absent when the loop abstained, asked back, or found nothing it could read an answer from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_answer: Option<ShortAnswer>,
    #[serde(default)]
    pub source_entities: Vec<EntityRef>,
    #[serde(default)]
    pub result_entities: Vec<EntityRef>,
    #[serde(default, skip_serializing_if = "JsonMap::is_empty")]
    pub evidence: JsonMap,
    #[serde(default)]
    pub citations: Vec<Citation>,
    #[serde(deserialize_with = "crate::finite::f32")]
    pub confidence: f32,
    pub termination_reason: TerminationReason,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The backends that failed while the request ran and what was used instead. Empty for a full answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<crate::Degradation>,
}

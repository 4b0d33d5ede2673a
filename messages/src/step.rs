//! The planner's decision for one turn: a [`NextStep`] with one or two independent [`Action`]s (seed 000 §2 A3, seed 001 §4).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::intent::{GraphIntent, SearchIntent};

/// A step may fan out into at most this many parallel actions (seed 001: "compare X and Y").
pub const MAX_PARALLEL_ACTIONS: usize = 2;

/// One bounded action. The intent is part of the variant, so "qdrant_search without a search intent"
/// cannot be represented once decoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    QdrantSearch {
        search_intent: SearchIntent,
    },
    PgGraph {
        graph_intent: GraphIntent,
    },
    Clarify {
        questions: Vec<ClarifyingQuestion>,
    },
    /// The `database_stats` tool: how many documents, chunks and entities (by type) the corpus holds. Answers
    /// database meta-questions, which document retrieval cannot.
    DatabaseStats {},
    /// Stop retrieving and synthesize from the evidence gathered so far.
    Final {},
}

/// The action's name, for logs, metrics and validation messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    QdrantSearch,
    PgGraph,
    Clarify,
    DatabaseStats,
    Final,
}

impl Action {
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::QdrantSearch { .. } => ActionKind::QdrantSearch,
            Action::PgGraph { .. } => ActionKind::PgGraph,
            Action::Clarify { .. } => ActionKind::Clarify,
            Action::DatabaseStats {} => ActionKind::DatabaseStats,
            Action::Final {} => ActionKind::Final,
        }
    }

    /// A one-line description for the CLI and events, e.g. `qdrant_search "Luffy"`.
    pub fn describe(&self) -> String {
        match self {
            Action::QdrantSearch { search_intent: i } => {
                // An entity search over several types names them all: "character|episode|manga".
                let types = match i.filters.get("entity_type").and_then(|t| t.as_array()) {
                    Some(types) if !i.entity_type.is_document() => {
                        types.iter().filter_map(|t| t.as_str()).collect::<Vec<_>>().join("|")
                    }
                    _ => i.entity_type.to_string(),
                };
                format!("qdrant_search {types} {:?}", i.query.as_deref().unwrap_or("<by id>"))
            }
            Action::PgGraph { graph_intent } => {
                format!("pg_graph {:?} from {}", graph_intent.query_type, graph_intent.start.id)
            }
            Action::Clarify { questions } => format!("clarify ({} questions)", questions.len()),
            Action::DatabaseStats {} => "database_stats".to_string(),
            Action::Final {} => "final".to_string(),
        }
    }
}

impl ActionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::QdrantSearch => "qdrant_search",
            ActionKind::PgGraph => "pg_graph",
            ActionKind::Clarify => "clarify",
            ActionKind::DatabaseStats => "database_stats",
            ActionKind::Final => "final",
        }
    }
}

/// A question back to the user (seed 003 clarification).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClarifyingQuestion {
    pub question: String,
    pub reason: String,
    pub blocking: bool,
}

/// The planner's output for one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NextStep {
    pub rationale: String,
    /// One action, or two run in parallel (the schema says so too, for servers that constrain decoding by it).
    #[schemars(length(min = 1, max = 2))]
    pub actions: Vec<Action>,
}

impl NextStep {
    pub fn single(rationale: impl Into<String>, action: Action) -> NextStep {
        NextStep { rationale: rationale.into(), actions: vec![action] }
    }

    /// Structural checks that serde cannot express: 1..=2 actions, and `final`/`clarify` stand alone.
    pub fn validate(&self) -> Result<(), String> {
        if self.actions.is_empty() {
            return Err("next step has no action".into());
        }
        if self.actions.len() > MAX_PARALLEL_ACTIONS {
            return Err(format!(
                "next step has {} actions, at most {MAX_PARALLEL_ACTIONS} may run in parallel",
                self.actions.len()
            ));
        }
        let terminal = self.actions.iter().any(|a| matches!(a.kind(), ActionKind::Final | ActionKind::Clarify));
        if terminal && self.actions.len() > 1 {
            return Err("final and clarify must be the only action of their step".into());
        }
        Ok(())
    }

    /// True when this step ends retrieval (final or clarify).
    pub fn is_terminal(&self) -> bool {
        self.actions.iter().any(|a| matches!(a.kind(), ActionKind::Final | ActionKind::Clarify))
    }
}

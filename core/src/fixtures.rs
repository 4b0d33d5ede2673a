//! Test fixtures the stages' and the machine's unit tests share: a fresh request's state, a bare report.

use sleuth_messages::{AskRequest, LoopState, SufficiencyReport};

use crate::{analysis as intake, entity_types::EntityTypes, machine};

/// The entity types of the demo graph (`actors/data/demo_graph`).
pub fn demo_types() -> EntityTypes {
    EntityTypes::new(["anime", "character", "episode", "manga"])
}

/// The state of a new request for `question`, analysed by intake with the demo graph's entity types, with the
/// default caps and no deadline.
pub fn state_for(question: &str) -> LoopState {
    let analysis = intake::analyze(question, &demo_types());
    machine::new_state(machine::NewRequest {
        request_id: uuid::Uuid::now_v7(),
        request: AskRequest::new(question),
        caps: machine::caps_for(&machine::Tiers::default(), analysis.route, None),
        analysis,
        now_ms: 0,
        deadline_ms: u64::MAX,
        reply: None,
        trace: Default::default(),
        records_root_span: false,
    })
}

/// A report with no checks, gaps or suggestions.
pub fn report(sufficient: bool) -> SufficiencyReport {
    SufficiencyReport {
        sufficient,
        confidence: 0.5,
        rationale: String::new(),
        gaps: vec![],
        missing: vec![],
        new_queries: vec![],
        checks: vec![],
        no_new_information: false,
    }
}

/// A card numbered `n`, retrieved on `turn`, from document `doc_id`.
pub fn card(n: u32, turn: u32, doc_id: &str, title: &str, text: &str) -> sleuth_messages::Card {
    let hit = sleuth_messages::Hit {
        id: format!("{doc_id}#0"),
        doc_id: doc_id.into(),
        title: title.into(),
        text: text.into(),
        score: 1.0,
        metadata: Default::default(),
    };
    sleuth_messages::Card::new(n, turn, hit)
}

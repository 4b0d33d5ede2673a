//! The null stages of `sleuth bench --null-backends` (`debug.null_work_turns` = T): the real runtime (bus, state
//! store, compare-and-swap, handler) around trivial work, so a run measures the orchestration alone (issue 16).
//! Plan: one search; retrieve: one card `c<turn>` of 200 × "x"; grade: sufficient from turn T on; synthesize:
//! the card ids, joined.

use async_trait::async_trait;
use sleuth_messages::{
    Action, ActionResult, AgentResponse, Hit, LoopState, NextStep, RetrievalResult, SearchIntent, Stage,
    SufficiencyReport, TerminationReason, WorkItem,
};

use crate::stages::StageLogic;
use crate::{machine, telemetry};

/// One stage's null work; `turns` is T, the turn from which the grader calls the evidence sufficient.
pub struct NullWork {
    pub stage: Stage,
    pub turns: u32,
}

#[async_trait]
impl StageLogic for NullWork {
    fn stage(&self) -> Stage {
        self.stage
    }

    async fn apply(&self, state: &LoopState, item: &WorkItem) -> anyhow::Result<LoopState> {
        let now = telemetry::now_ms();
        Ok(match self.stage {
            Stage::Planner => {
                let search = SearchIntent::documents("null work", "x");
                let step = NextStep {
                    rationale: "null work".into(),
                    actions: vec![Action::QdrantSearch { search_intent: search }],
                };
                machine::apply_plan(state, step, None)?
            }
            Stage::Retrieve | Stage::Graph => {
                let id = format!("c{}", state.turn);
                let hit = Hit {
                    id: id.clone(),
                    doc_id: id.clone(),
                    title: id,
                    text: "x".repeat(200),
                    score: 1.0,
                    metadata: Default::default(),
                };
                let result = RetrievalResult {
                    summary: String::new(),
                    count: 1,
                    raw_data: vec![hit],
                    from_cache: false,
                    degraded: Vec::new(),
                };
                machine::apply_outcome(state, item.envelope.step, ActionResult::Retrieval(result), 0)?
            }
            Stage::Grader => {
                let report = SufficiencyReport {
                    sufficient: state.turn >= self.turns,
                    confidence: 1.0,
                    rationale: "null work".into(),
                    gaps: vec![],
                    missing: vec![],
                    new_queries: vec![],
                    checks: vec![],
                    no_new_information: false,
                };
                machine::apply_report(state, report, now)?
            }
            Stage::Synthesizer => {
                let ids: Vec<&str> = state.cards.iter().map(|c| c.hit.id.as_str()).collect();
                let response = AgentResponse {
                    answer: ids.join(" "),
                    short_answer: None,
                    source_entities: vec![],
                    result_entities: vec![],
                    evidence: Default::default(),
                    citations: vec![],
                    confidence: 1.0,
                    termination_reason: state.stop_reason.unwrap_or(TerminationReason::Sufficient),
                    warnings: vec![],
                    degraded: vec![],
                };
                machine::apply_response(state, response, now)?
            }
            Stage::Intake => anyhow::bail!("intake has no null work"),
        })
    }
}

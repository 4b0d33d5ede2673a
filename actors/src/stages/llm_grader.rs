//! LLM grader: the deterministic acceptance checks run first, then the LLM's `SufficiencyReport` (seed 002 §5.2:
//! confidence, gaps, missing, new queries and reformulations). The evidence is sufficient only when both say so,
//! and a sufficient verdict is binding: the loop goes straight to synthesis. When the LLM gives no usable report,
//! the deterministic grader's verdict stands.

use async_trait::async_trait;
use sleuth_messages::{CheckOutcome, LoopState, Route, Stage, SufficiencyReport, WorkItem};

use super::{StageLogic, grader::Grader};
use crate::{
    llm::{Agent, LlmAgent, Usage, agent::charge, prompts},
    machine, telemetry,
};

/// Most queries the grader may suggest for the next turn.
const MAX_NEW_QUERIES: usize = 3;

pub struct LlmGrader {
    pub llm: LlmAgent,
    pub fallback: Grader,
}

#[async_trait]
impl StageLogic for LlmGrader {
    fn stage(&self) -> Stage {
        Stage::Grader
    }

    async fn apply(&self, state: &LoopState, item: &WorkItem) -> anyhow::Result<LoopState> {
        // Only the agent route grades with the LLM; the enhanced route is a deterministic pipeline.
        if state.analysis.route != Route::Agent || state.analysis.meta_question {
            return self.fallback.apply(state, item).await;
        }
        // The graph checks hold the deterministic planner to its own procedure; an LLM planner chooses its own,
        // so it is held to the acceptance checks alone, unless it has already handed over to the deterministic one.
        let checks = if state.counters.llm_fallbacks > 0 { self.fallback.clone() } else { Grader::default() };
        let mut report = checks.report(state);
        let mut usage = Usage::default();
        let mut fell_back: Option<String> = None;
        if let Some(out) = self
            .llm
            .ask::<SufficiencyReport>(
                Agent::Grader,
                prompts::REFLECT,
                &with_checks(state, &report),
                &|_: &SufficiencyReport| Ok(()),
            )
            .await
        {
            usage = out.usage;
            match out.result {
                Ok(judged) => merge(&mut report, judged),
                Err(e) => fell_back = Some(e.to_string()),
            }
        }
        tracing::info!(request_id = %state.request_id, turn = state.turn, sufficient = report.sufficient, tokens = usage.total(), fell_back = fell_back.is_some(), missing = ?report.missing, "graded");
        if fell_back.is_some() {
            crate::telemetry::metrics::llm_fallback("grader");
        }
        Ok(machine::apply_report(&charge(state, usage, fell_back.as_deref()), report, telemetry::now_ms())?)
    }
}

/// The state the LLM sees: this turn's deterministic checks attached as a provisional report, so the context
/// lists them.
fn with_checks(state: &LoopState, report: &SufficiencyReport) -> LoopState {
    let mut shown = state.clone();
    if let Some(turn) = shown.turns.last_mut() {
        turn.report = Some(report.clone());
    }
    shown
}

/// The deterministic verdict and the LLM's, combined: sufficient only if both agree.
fn merge(report: &mut SufficiencyReport, judged: SufficiencyReport) {
    let checks_passed = report.sufficient;
    report.checks.push(CheckOutcome {
        name: "llm_sufficiency".into(),
        passed: judged.sufficient,
        detail: format!("confidence {:.2}: {}", judged.confidence, judged.rationale),
    });
    report.sufficient = checks_passed && judged.sufficient;
    report.confidence = judged.confidence;
    if checks_passed || report.rationale.is_empty() {
        report.rationale = judged.rationale;
    }
    for gap in judged.gaps {
        if !report.gaps.contains(&gap) {
            report.gaps.push(gap);
        }
    }
    for missing in judged.missing {
        if !report.missing.iter().any(|m| m.eq_ignore_ascii_case(&missing)) {
            report.missing.push(missing);
        }
    }
    for query in judged.new_queries.into_iter().filter(|q| !q.trim().is_empty()) {
        if report.new_queries.len() < MAX_NEW_QUERIES
            && !report.new_queries.iter().any(|q2| q2.eq_ignore_ascii_case(&query))
        {
            report.new_queries.push(query);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::report;

    #[test]
    fn failed_checks_outvote_a_sufficient_llm_and_an_insufficient_llm_is_binding() {
        let mut failed = report(false);
        failed.rationale = "failed: entities_covered".into();
        let mut llm = report(true);
        llm.confidence = 0.9;
        merge(&mut failed, llm);
        assert!(!failed.sufficient);
        assert_eq!(failed.rationale, "failed: entities_covered");

        let mut passed = report(true);
        let mut llm = report(false);
        llm.gaps = vec!["the studio is not named".into()];
        llm.new_queries = vec!["One Piece studio".into()];
        merge(&mut passed, llm);
        assert!(!passed.sufficient);
        assert_eq!(passed.new_queries, vec!["One Piece studio".to_string()]);
        assert!(passed.checks.iter().any(|c| c.name == "llm_sufficiency" && !c.passed));
    }
}

//! The synthesizer stage: the deterministic, extractive answer (`sleuth_core::agents::synthesizer`) written on a
//! delivery and recorded with the time it was finished.

use async_trait::async_trait;
pub use sleuth_core::agents::synthesizer::*;
use sleuth_messages::{LoopState, Stage, WorkItem};

use super::StageLogic;
use crate::{machine, telemetry};

#[async_trait]
impl StageLogic for Synthesizer {
    fn stage(&self) -> Stage {
        Stage::Synthesizer
    }

    async fn apply(&self, state: &LoopState, _item: &WorkItem) -> anyhow::Result<LoopState> {
        let response = synthesize(state, &self.types.get());
        tracing::info!(request_id = %state.request_id, citations = response.citations.len(), reason = response.termination_reason.as_str(), "synthesized");
        Ok(machine::apply_response(state, response, telemetry::now_ms())?)
    }
}

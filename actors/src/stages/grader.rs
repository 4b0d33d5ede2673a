//! The grader stage: the deterministic grader's acceptance checks (`sleuth_core::agents::grader`) run on a
//! delivery, at the time it is handled (a cap on time is checked against the clock).

use async_trait::async_trait;
pub use sleuth_core::agents::grader::*;
use sleuth_messages::{LoopState, Stage, WorkItem};

use super::StageLogic;
use crate::{machine, telemetry};

#[async_trait]
impl StageLogic for Grader {
    fn stage(&self) -> Stage {
        Stage::Grader
    }

    async fn apply(&self, state: &LoopState, _item: &WorkItem) -> anyhow::Result<LoopState> {
        let report = self.report(state);
        tracing::info!(request_id = %state.request_id, turn = state.turn, sufficient = report.sufficient, missing = ?report.missing, "graded");
        Ok(machine::apply_report(state, report, telemetry::now_ms())?)
    }
}

//! The planner stage: the deterministic planner's decisions (`sleuth_core::agents::planner`) run on a delivery. The
//! first turn also writes the request's plan.

use async_trait::async_trait;
pub use sleuth_core::agents::planner::*;
use sleuth_messages::{LoopState, Stage, WorkItem};

use super::StageLogic;
use crate::machine;

#[async_trait]
impl StageLogic for Planner {
    fn stage(&self) -> Stage {
        Stage::Planner
    }

    async fn apply(&self, state: &LoopState, _item: &WorkItem) -> anyhow::Result<LoopState> {
        let plan = state.plan.is_none().then(|| initial_plan(state, &self.types.get()));
        let step = self.step(state);
        tracing::info!(request_id = %state.request_id, turn = state.turn, actions = ?step.actions.iter().map(|a| a.describe()).collect::<Vec<_>>(), "planned");
        Ok(machine::apply_plan(state, step, plan)?)
    }
}

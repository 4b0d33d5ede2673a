//! The stages of the loop, one file each. A stage's logic is a [`StageLogic`]: given the loop state and the work
//! item, compute the next state. The runtime (`runtime/handler.rs`) does everything else: loading, CAS, publishing.

pub mod bridge;
pub mod coverage;
pub mod entity_answer;
#[cfg(test)]
pub mod fixtures;
pub mod grader;
pub mod graph;
pub mod graph_evidence;
pub mod intake;
pub mod llm_grader;
pub mod llm_planner;
pub mod llm_synthesizer;
pub mod null;
pub mod planner;
pub mod ranking;
pub mod resolve;
pub mod retrieve;
pub mod synthesizer;

use async_trait::async_trait;
use sleuth_messages::{LoopState, Stage, WorkItem};

#[async_trait]
pub trait StageLogic: Send + Sync + 'static {
    fn stage(&self) -> Stage;

    /// Does this stage's work for `item` and returns the state to commit. Only called when
    /// `machine::expects(state, item)` holds. May be called more than once for the same item
    /// (redelivery, CAS conflict), so it must not have effects outside the returned state.
    async fn apply(&self, state: &LoopState, item: &WorkItem) -> anyhow::Result<LoopState>;
}

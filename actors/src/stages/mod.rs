//! The stages of the loop, one file each (the LLM twin of a deterministic stage beside it). A stage's logic is a
//! [`StageLogic`]: given the loop state and the work item, compute the next state. The runtime
//! (`runtime/handler.rs`) does everything else: loading, CAS, publishing. `intake/` is the entry stage's analysis
//! (its I/O is `runtime/intake.rs`). The deterministic planner, grader and synthesizer decide in sleuth-core
//! (`sleuth_core::agents`, re-exported as `deterministic` with what they share); their files here run them.

pub use sleuth_core::agents as deterministic;
pub mod grader;
pub mod graph;
pub mod intake;
pub mod llm_grader;
pub mod llm_planner;
pub mod llm_synthesizer;
pub mod planner;
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

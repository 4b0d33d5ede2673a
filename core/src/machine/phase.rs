//! Where a request's loop is: which stage it waits on, which action a slot holds, and whether a work item still
//! applies to the state (a redelivered or stale one does not).

use sleuth_messages::{Action, LoopState, Phase, Stage, TerminationReason, WorkItem};

/// The stage that executes an action, or `None` for actions that end retrieval.
pub fn executor_of(action: &Action) -> Option<Stage> {
    match action {
        Action::QdrantSearch { .. } | Action::DatabaseStats {} => Some(Stage::Retrieve),
        Action::PgGraph { .. } => Some(Stage::Graph),
        Action::Clarify { .. } | Action::Final {} => None,
    }
}

/// Does `item` still have work to do against `state`? `false` means it is a duplicate or stale: its effect is
/// already recorded, and the stage should only re-publish [`next_messages`] and ack.
pub fn expects(state: &LoopState, item: &WorkItem) -> bool {
    if item.envelope.turn != state.turn {
        return false;
    }
    match (&state.phase, item.stage) {
        (Phase::Planning, Stage::Planner) => true,
        (Phase::Acting { pending }, stage) => {
            let slot = item.envelope.step;
            pending.contains(&slot) && current_action(state, slot).and_then(executor_of) == Some(stage)
        }
        (Phase::Grading, Stage::Grader) => true,
        (Phase::Synthesizing, Stage::Synthesizer) => true,
        _ => false,
    }
}

/// Could `item`'s own commit have left the request in `state`? Then what `state` calls for is this stage's to
/// (re-)publish: a delivery that finds its work already applied re-publishes only in that case, to cover a
/// crash between its first commit and its publishing. Later phases were published by whoever reached them.
/// What it re-publishes is still only what [`may_send`] lets it send: an executor that finds a sibling slot of
/// its turn pending leaves that slot's work to the planner (each stage's NATS user is allowed only its own).
pub fn published_by(state: &LoopState, item: &WorkItem) -> bool {
    let turn = item.envelope.turn;
    let ended_by_deadline = state.stop_reason == Some(TerminationReason::Deadline);
    match (item.stage, &state.phase) {
        // Any stage may find the deadline passed and send the request to synthesis.
        (_, Phase::Synthesizing) if ended_by_deadline => true,
        (Stage::Planner, Phase::Acting { .. } | Phase::Synthesizing) => state.turn == turn,
        (Stage::Retrieve | Stage::Graph, Phase::Acting { .. } | Phase::Grading | Phase::Synthesizing) => {
            state.turn == turn
        }
        (Stage::Grader, Phase::Planning) => state.turn == turn + 1,
        (Stage::Grader, Phase::Synthesizing) => state.turn == turn,
        (Stage::Synthesizer, Phase::Done) => true,
        _ => false,
    }
}

/// The stage the request is waiting for, or `None` once it is done.
pub fn waiting_on(state: &LoopState) -> Option<Stage> {
    match &state.phase {
        Phase::Planning => Some(Stage::Planner),
        Phase::Acting { pending } => {
            pending.first().and_then(|slot| current_action(state, *slot)).and_then(executor_of)
        }
        Phase::Grading => Some(Stage::Grader),
        Phase::Synthesizing => Some(Stage::Synthesizer),
        Phase::Done => None,
    }
}

/// The action in slot `slot` of the current turn.
pub fn current_action(state: &LoopState, slot: u32) -> Option<&Action> {
    state.turns.last().filter(|t| t.turn == state.turn)?.step.actions.get(slot as usize)
}
